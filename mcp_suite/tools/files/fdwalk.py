"""The directory-fd walk: the ONLY module in mcp-suite that opens a path a caller chose.

It serves both `sandbox_fs_read` (`read_file`) and `sandbox_fs_list` (`list_directory`).

Three steps, each assuming the one before it failed:
1. `resolve`: canonical containment. The caller's components are resolved against the root the way
   the kernel would (every symlink followed, at most 40), but only names placed inside the root are
   looked at: the moment the path leaves the root it is refused, whether or not it exists there.
   (A directory swapped for a link during this step can misdirect an lstat; step 2 catches it.)
2. `_open_leaf`: the canonical components are opened again one at a time with `openat` relative to
   a directory fd, `O_NOFOLLOW` on every one, so a directory swapped for a link after step 1 fails.
3. `fstat` on the open descriptor: regular files only; at most `max_bytes + 1` bytes are read.
A listing opens the directory the same way (steps 1 and 2, `O_DIRECTORY` at the leaf) and goes
down into subdirectories only by name, relative to the open parent, `O_NOFOLLOW` again: a link is
listed as a link and never followed.
Blocking: call from a worker thread. Every descriptor it opens is closed before it returns.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from mcp_suite.protocol.sanitize import allowed_in_arguments
from mcp_suite.talk import current as current_talk
from mcp_suite.tools.files.policy import (
    MAX_SYMLINK_HOPS,
    Refusal,
    RefusedError,
)

__all__ = [
    "DirEntry",
    "FileRead",
    "Listing",
    "RootDir",
    "list_directory",
    "open_root",
    "read_at_most",
    "read_file",
    "resolve",
]

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOCTTY: a terminal never becomes ours.
_LEAF_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW | os.O_CLOEXEC

# lstat errors that mean "this name does not exist here" (too long names cannot exist either).
_ABSENT: Final = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG})
# openat/fstat errors that mean the tree changed under us or the object is not a plain file.
_REFUSED_ON_OPEN: Final = {
    errno.ELOOP: Refusal.CHANGED,  # O_NOFOLLOW met a symlink that step 1 did not see
    errno.EMLINK: Refusal.CHANGED,  # the same, as some BSDs report it
    errno.ENOTDIR: Refusal.CHANGED,  # a directory became something else
    errno.ENXIO: Refusal.NOT_REGULAR,  # a Unix socket (or a FIFO without a reader)
    errno.ENODEV: Refusal.NOT_REGULAR,
    errno.EOPNOTSUPP: Refusal.NOT_REGULAR,
    errno.EISDIR: Refusal.DIRECTORY,
    errno.EACCES: Refusal.NO_PERMISSION,
    errno.EPERM: Refusal.NO_PERMISSION,
    errno.ENOENT: Refusal.MISSING,
    errno.ENAMETOOLONG: Refusal.MISSING,
}
_READ_CHUNK: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class RootDir:
    """The sandbox root: a directory fd held open while the tool serves, and its canonical path.

    Security: `parts` (the absolute path's components) is used only to recognise absolute symlink
    targets that point back into the root; it never leaves this module.
    """

    fd: int
    parts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FileRead:
    size: int  # st_size of the open descriptor
    data: bytes  # at most max_bytes
    truncated: bool  # the file holds more than max_bytes


EntryKind = Literal["file", "directory", "symlink", "other"]


@dataclass(frozen=True, slots=True)
class DirEntry:
    name: str  # relative to the listed directory, '/' between components
    kind: EntryKind
    size: int | None  # st_size of a regular file; None for anything else


@dataclass(frozen=True, slots=True)
class Listing:
    entries: tuple[DirEntry, ...]
    truncated: bool  # more entries existed than were returned (or a directory could not be opened)


@contextlib.contextmanager
def open_root(path: Path) -> Iterator[RootDir]:
    """Open the configured root once; the walk starts at this fd for every call.

    Raises `OSError` if it is not an existing directory and `ValueError` if it is `/` itself.
    """
    canonical = os.path.realpath(path, strict=True)
    parts = tuple(part for part in canonical.split("/") if part)
    if not parts:
        raise ValueError("the sandbox root must not be the file system root '/'")
    fd = os.open(canonical, _DIR_FLAGS)
    try:
        yield RootDir(fd=fd, parts=parts)
    finally:
        os.close(fd)


def resolve(root: RootDir, parts: tuple[str, ...]) -> tuple[tuple[str, ...], int]:
    """Step 1: the canonical components (relative to the root) of `parts`, and the leaf's st_mode.

    Follows symlinks like `os.path.realpath` (physical `..` after a link, lexical `..` after a
    missing name; at most `MAX_SYMLINK_HOPS` links), but:
    - the caller's own `..` may never climb above the root (not even to come back);
    - a link target may pass through the root's own ancestors only on the way back into the root,
      and must end inside it;
    - nothing outside the root is ever stat'ed or read, so `access-denied` for a path outside the root
      says nothing about what exists there.
    Raises `RefusedError`: OUTSIDE_ROOT, SYMLINK_LOOP, MISSING (inside the root), ROOT_ITSELF.
    """
    inside = list(root.parts)
    base = len(inside)
    pos = list(inside)  # absolute components of where we are
    # The st_mode of each component of pos[base:]; 0 for a name that does not exist. After one
    # missing name every further name is missing too, until `..` pops it (lexically, as realpath
    # does); nothing is looked up meanwhile, and if the path ends there the answer is not-found.
    modes: list[int] = []
    # Components still to consume, last first; None marks the end of a link's target.
    stack: list[str | None] = list(reversed(parts))
    in_links = 0  # link targets being consumed
    hops = 0

    while stack:
        name = stack.pop()
        if name is None:
            in_links -= 1
            if pos[:base] != inside:
                raise RefusedError(Refusal.OUTSIDE_ROOT)  # a link that ends outside the root
            continue
        if name == "..":
            if len(pos) <= base and in_links == 0:
                raise RefusedError(Refusal.OUTSIDE_ROOT)  # the caller climbs above the root
            if len(pos) > base:
                modes.pop()
            if pos:
                pos.pop()
            continue
        if pos[:base] != inside:
            # Above the root inside a link target: only the root's own ancestors, going down.
            if len(pos) < base and pos == inside[: len(pos)] and inside[len(pos)] == name:
                pos.append(name)
                continue
            raise RefusedError(Refusal.OUTSIDE_ROOT)
        pos.append(name)
        if modes and modes[-1] == 0:
            modes.append(0)
            continue
        relative = "/".join(pos[base:])
        try:
            info = os.lstat(relative, dir_fd=root.fd)
        except OSError as exc:
            if exc.errno in _ABSENT:  # ENOTDIR too: "file.txt/x" does not exist
                modes.append(0)
                continue
            refusal = _REFUSED_ON_OPEN.get(exc.errno or 0)
            if refusal is None:
                raise
            raise RefusedError(refusal) from None
        if not stat.S_ISLNK(info.st_mode):
            modes.append(info.st_mode)
            continue
        hops += 1
        if hops > MAX_SYMLINK_HOPS:
            raise RefusedError(Refusal.SYMLINK_LOOP)
        try:
            target = os.readlink(relative, dir_fd=root.fd)
        except OSError:
            raise RefusedError(Refusal.CHANGED) from None  # the link went away meanwhile
        pos.pop()
        if target.startswith("/"):
            pos, modes = [], []
        stack.append(None)
        stack.extend(reversed([part for part in target.split("/") if part not in ("", ".")]))
        in_links += 1

    if not modes:
        raise RefusedError(Refusal.ROOT_ITSELF)
    if modes[-1] == 0:
        raise RefusedError(Refusal.MISSING)
    return tuple(pos[base:]), modes[-1]


def _open_leaf(root: RootDir, canonical: tuple[str, ...], flags: int = _LEAF_FLAGS) -> int:
    """Step 2: openat one component at a time, O_NOFOLLOW on each; return the leaf's fd.

    With no components (the root itself), a new descriptor of the root directory."""
    if not canonical:
        return os.open(".", _DIR_FLAGS, dir_fd=root.fd)
    current = root.fd
    try:
        for name in canonical[:-1]:
            child = os.open(name, _DIR_FLAGS, dir_fd=current)
            if current != root.fd:
                os.close(current)
            current = child
        return os.open(canonical[-1], flags, dir_fd=current)
    finally:
        if current != root.fd:
            os.close(current)


def read_at_most(fd: int, limit: int) -> bytes:
    """At most `limit` bytes from `fd`'s offset, in reads of at most 1 MiB: fewer only at end of file."""
    chunks: list[bytes] = []
    got = 0
    talk = current_talk()
    while got < limit:
        chunk = os.read(fd, min(limit - got, _READ_CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
        talk.note(bytes_read=got)  # for the call's progress reports (when asked for)
    return b"".join(chunks)


def read_file(root: RootDir, parts: tuple[str, ...], max_bytes: int, *, allow_hard_links: bool) -> FileRead:
    """Read at most `max_bytes` of the regular file `parts` names below `root` (steps 1-3).

    Raises `RefusedError` for every refusal (outside, loop, missing, directory, FIFO, socket,
    device, a component swapped for a link, a hard-linked file unless allowed); other `OSError`s
    (EIO, EMFILE) propagate and become an internal error.
    Limits: reads max_bytes + 1 bytes at most (the extra byte only says `truncated`).
    Security: a FIFO cannot block the thread (O_NONBLOCK, and it is refused before any read); a
    device is refused by lstat before it is opened, and by fstat if it appears in a race.
    """
    canonical, mode = resolve(root, parts)
    if stat.S_ISDIR(mode):
        raise RefusedError(Refusal.DIRECTORY)
    if not stat.S_ISREG(mode):
        raise RefusedError(Refusal.NOT_REGULAR)
    try:
        fd = _open_leaf(root, canonical)
    except OSError as exc:
        refusal = _REFUSED_ON_OPEN.get(exc.errno or 0)
        if refusal is None:
            raise
        raise RefusedError(refusal) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise RefusedError(Refusal.DIRECTORY)
        if not stat.S_ISREG(info.st_mode):
            raise RefusedError(Refusal.NOT_REGULAR)
        if info.st_nlink > 1 and not allow_hard_links:
            raise RefusedError(Refusal.HARD_LINK)
        data = read_at_most(fd, max_bytes + 1)
    finally:
        os.close(fd)
    truncated = len(data) > max_bytes
    return FileRead(size=info.st_size, data=data[:max_bytes], truncated=truncated)


def _kind(mode: int) -> EntryKind:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def _open_below(top: int, relative: tuple[str, ...]) -> int | None:
    """A subdirectory of the open directory `top`, opened name by name with O_NOFOLLOW; None when
    one of the names is no longer a directory (it was removed, or swapped for a link)."""
    current = top
    try:
        for name in relative:
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=current)
            except OSError as exc:
                if exc.errno in _REFUSED_ON_OPEN:
                    return None
                raise
            if current != top:
                os.close(current)
            current = child
        result, current = current, top
        return result
    finally:
        if current != top:
            os.close(current)


def list_directory(
    root: RootDir,
    parts: tuple[str, ...],
    *,
    max_entries: int,
    depth: int,
    allow_hard_links: bool,
) -> Listing:
    """The entries of the directory `parts` names below `root`, `depth` levels down (1: only its
    own entries), breadth first, each directory's names in sorted order.

    Symbolic links are listed as links (never followed, no target shown); sizes are given for
    regular files only, and not for a file with more than one hard link unless those are allowed
    (it may be the same file as one outside the root). Names that are not valid UTF-8 are left out.
    Raises `RefusedError` as `read_file` does, and NOT_DIRECTORY when `parts` is not a directory.
    Limits: at most `max_entries + 1` names are looked at in all (the extra one only says
    `truncated`), and at most `depth` levels; a directory that vanishes meanwhile is skipped.
    Security: a subdirectory is entered only through its name in the open parent, `O_NOFOLLOW`, so
    the listing never leaves the root, even when the tree changes under it.
    """
    try:
        canonical, mode = resolve(root, parts)
    except RefusedError as exc:
        if exc.refusal is not Refusal.ROOT_ITSELF:
            raise
        canonical, mode = (), stat.S_IFDIR
    if not stat.S_ISDIR(mode):
        raise RefusedError(Refusal.NOT_DIRECTORY)
    try:
        top = _open_leaf(root, canonical, _DIR_FLAGS)
    except OSError as exc:
        refusal = _REFUSED_ON_OPEN.get(exc.errno or 0)
        if refusal is None:
            raise
        raise RefusedError(refusal) from None
    entries: list[DirEntry] = []
    try:
        pending: list[tuple[str, ...]] = [()]  # directories still to list, relative to `top`
        for _ in range(depth):
            below: list[tuple[str, ...]] = []  # listed on the next level, if there is one
            for relative in pending:
                fd = top if not relative else _open_below(top, relative)
                if fd is None:
                    continue
                try:
                    found = _scan(fd, max_entries + 1 - len(entries), allow_hard_links=allow_hard_links)
                finally:
                    if fd != top:
                        os.close(fd)
                for name, kind, size in found:
                    entries.append(DirEntry("/".join((*relative, name)), kind, size))
                    if kind == "directory":
                        below.append((*relative, name))
                if len(entries) > max_entries:
                    return Listing(tuple(entries[:max_entries]), truncated=True)
            pending = below
    finally:
        os.close(top)
    return Listing(tuple(entries), truncated=False)


def _scan(fd: int, room: int, *, allow_hard_links: bool) -> list[tuple[str, EntryKind, int | None]]:
    """At most `room` entries of the open directory `fd`, sorted by name (the listing asks for one
    more than it returns: that one says `truncated`).

    `os.scandir` on a descriptor works on a duplicate of it and stats relative to it (fstatat,
    no symlink followed)."""
    found: list[tuple[str, EntryKind, int | None]] = []
    with os.scandir(fd) as scan:
        for entry in scan:
            name = entry.name
            if not allowed_in_arguments(name):
                # Not UTF-8 (a lone surrogate, from surrogateescape), or a control or bidi character
                # the sanitizer refuses in every argument: no caller could name it, nor read it, and
                # a control byte would cost 13 bytes of the reply (docs/tools/sandbox_fs_list.md).
                continue
            if len(found) >= room:
                break
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed while we listed
            kind = _kind(info.st_mode)
            size = None
            if kind == "file" and (allow_hard_links or info.st_nlink <= 1):
                size = info.st_size
            found.append((name, kind, size))
    found.sort(key=lambda item: item[0].encode("utf-8"))
    return found
