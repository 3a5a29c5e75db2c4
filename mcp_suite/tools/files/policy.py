"""Pure path and content decisions for `sandbox_fs_read` (docs/tools/sandbox_fs_read.md): no I/O happens here.

Owns: splitting the caller's path into components (and refusing absolute paths, NUL bytes,
backslashes, lone surrogates and a trailing `/`), the refusal reasons the walk reports and the problem
each becomes, the UTF-8 cut/decode of what was read, and the cut that keeps a reply's text within
`max_bytes` as sent (JSON-escaped). Must not import trio, os-level I/O, psycopg
or psutil (an import-linter contract checks this); `fdwalk.py` alone touches the filesystem.
"""

from __future__ import annotations

import enum
import re
from typing import Final

from mcp_suite.problems import (
    AccessDeniedError,
    InvalidArgumentsError,
    NotFoundError,
    ProblemError,
    UnsupportedContentError,
    echo,
)
from mcp_suite.protocol.jsonrpc import compact_json

__all__ = [
    "MAX_SYMLINK_HOPS",
    "PATH_PARAM",
    "Refusal",
    "RefusedError",
    "cut_to_whole_character",
    "decode_text",
    "display_path",
    "fit_sent_bytes",
    "has_lone_surrogate",
    "sent_bytes",
    "split_caller_path",
    "split_directory_path",
]

PATH_PARAM: Final = "relative_path"

# Linux gives up after 40 symbolic links in one lookup (MAXSYMLINKS); the resolver does the same,
# so a loop (a -> b -> a) or a long chain ends as `access-denied`, never as a spin.
MAX_SYMLINK_HOPS: Final = 40


class Refusal(enum.Enum):
    """Why a path or a file was refused. Each value is (problem class, caller-facing reason)."""

    ABSOLUTE = (AccessDeniedError, "is absolute; give a path relative to the sandbox root")
    NUL_BYTE = (AccessDeniedError, "contains a NUL byte")
    BACKSLASH = (AccessDeniedError, "contains a backslash; separate components with '/'")
    BAD_UNICODE = (InvalidArgumentsError, "is not valid Unicode (lone surrogate)")
    TRAILING_SLASH = (
        AccessDeniedError,
        "ends in '/', which names a directory; list it with sandbox_fs_list",
    )
    ROOT_ITSELF = (
        AccessDeniedError,
        "names the sandbox root directory; list it with sandbox_fs_list",
    )
    OUTSIDE_ROOT = (AccessDeniedError, "resolves outside the sandbox root")
    SYMLINK_LOOP = (AccessDeniedError, "follows too many symbolic links (a loop or a long chain)")
    CHANGED = (AccessDeniedError, "changed while it was being opened (a component became a link)")
    DIRECTORY = (AccessDeniedError, "is a directory; list it with sandbox_fs_list")
    NOT_DIRECTORY = (AccessDeniedError, "is not a directory; read a file with sandbox_fs_read")
    NOT_REGULAR = (AccessDeniedError, "is not a regular file (a FIFO, socket or device)")
    NO_PERMISSION = (AccessDeniedError, "cannot be read by the server (permission denied)")
    HARD_LINK = (
        AccessDeniedError,
        "is a file with more than one hard link; such files are refused by configuration",
    )
    MISSING = (
        NotFoundError,
        "does not exist inside the sandbox root; sandbox_fs_list shows what does",
    )
    NOT_UTF8 = (UnsupportedContentError, "is not UTF-8 text")

    @property
    def problem_class(self) -> type[ProblemError]:
        cls: type[ProblemError] = self.value[0]
        return cls

    @property
    def reason(self) -> str:
        text: str = self.value[1]
        return text

    # Refusals that follow from where the path leads (not from its spelling). Their detail never
    # echoes the caller's text: a path such as `../../etc/passwd` would otherwise come back as an
    # absolute host path inside the problem (docs/wire.md).
    @property
    def echoes_path(self) -> bool:
        return self not in _SILENT

    def problem(self, display: str) -> ProblemError:
        """The problem for this refusal; `display` is the caller's path, echoed only when safe."""
        if self.echoes_path and display:
            detail = f"The path {echo(display)!r} {self.reason}."
        else:
            detail = f"The path {self.reason}."
        return self.problem_class(detail, invalid_params=(PATH_PARAM,))


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_SILENT: Final = frozenset(
    {
        Refusal.ABSOLUTE,
        Refusal.NUL_BYTE,
        Refusal.BACKSLASH,
        Refusal.BAD_UNICODE,
        Refusal.OUTSIDE_ROOT,
    }
)


class RefusedError(Exception):
    """Raised by the walk (and here) with a `Refusal`; the tool turns it into the problem."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.name)
        self.refusal = refusal


def split_caller_path(raw: str) -> tuple[str, ...]:
    """The caller's path as components: `''` and `'.'` dropped, `'..'` kept for the resolver.

    Percent-encodings are not decoded (`%2e%2e` is a file name like any other), `//` inside the path
    collapses as POSIX does. Raises `RefusedError` for: an absolute path, a NUL byte, a backslash,
    a lone surrogate (it would become an arbitrary byte through surrogateescape), a trailing `/`, and
    a path naming the root itself.
    Security: the result may still contain `'..'`; containment is decided by the resolver, which
    follows links and never lets the caller climb above the root.
    """
    _check_spelling(raw)
    if raw.endswith("/"):
        raise RefusedError(Refusal.TRAILING_SLASH)
    parts = _components(raw)
    if not parts:
        raise RefusedError(Refusal.ROOT_ITSELF)
    return parts


def split_directory_path(raw: str) -> tuple[str, ...]:
    """A directory's path as components, like `split_caller_path`, except that a trailing `/` is
    allowed and `''`, `'.'` or `'./'` name the root itself (the empty tuple)."""
    _check_spelling(raw)
    return _components(raw)


def _check_spelling(raw: str) -> None:
    if "\x00" in raw:
        raise RefusedError(Refusal.NUL_BYTE)
    if raw.startswith("/"):
        raise RefusedError(Refusal.ABSOLUTE)
    if "\\" in raw:
        raise RefusedError(Refusal.BACKSLASH)
    if has_lone_surrogate(raw):
        raise RefusedError(Refusal.BAD_UNICODE)


def has_lone_surrogate(text: str) -> bool:
    """True for text that is not valid Unicode: a file name that is not UTF-8 reads back from the
    OS this way (surrogateescape)."""
    return not text.isascii() and _LONE_SURROGATE.search(text) is not None


def _components(raw: str) -> tuple[str, ...]:
    return tuple(part for part in raw.split("/") if part not in ("", "."))


def display_path(raw: str) -> str:
    """What problems may echo of the caller's path: its normalised relative form, or `''`.

    Nothing is echoed for a path with `'..'`, a NUL byte, a backslash or a lone surrogate: what it
    spells could be a host path (`a/../../etc/passwd`), and the caller knows what it sent.
    """
    if (
        raw.startswith("/")
        or any(ch in raw for ch in "\x00\\")
        or any("\ud800" <= ch <= "\udfff" for ch in raw)
    ):
        return ""
    parts = [part for part in raw.split("/") if part not in ("", ".")]
    if ".." in parts:
        return ""
    return "/".join(parts) + ("/" if parts and raw.endswith("/") else "")


def _sequence_length(lead: int) -> int:
    if lead < 0x80:
        return 1
    if lead >> 5 == 0b110:
        return 2
    if lead >> 4 == 0b1110:
        return 3
    if lead >> 3 == 0b11110:
        return 4
    return 1  # a stray continuation or an invalid lead byte: the strict decoder rejects it


def cut_to_whole_character(data: bytes) -> bytes:
    """`data` without a trailing, incomplete UTF-8 sequence (at most 3 bytes are dropped)."""
    end = len(data)
    start = end - 1
    # Walk back over at most 3 continuation bytes to the byte that starts the last sequence.
    while start >= 0 and end - start < 4 and data[start] & 0xC0 == 0x80:
        start -= 1
    if start < 0:
        return data
    if end - start < _sequence_length(data[start]):
        return data[:start]
    return data


def decode_text(data: bytes, *, truncated: bool) -> str:
    """Strict UTF-8 text of what was read (docs/tools/sandbox_fs_read.md).

    When the read was cut at `max_bytes`, a character split by the cut is dropped first; a file
    that itself ends inside a character is not UTF-8. Raises `RefusedError(NOT_UTF8)`.
    """
    if truncated:
        data = cut_to_whole_character(data)
    try:
        return data.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        raise RefusedError(Refusal.NOT_UTF8) from None


# What one character of the content costs as sent: the reply carries it in ASCII-only JSON, where
# an ASCII character is one byte, or two (a newline, a quote), or six (another control character,
# DEL); any other character of the Basic Multilingual Plane is six and one beyond it twelve (an
# escaped surrogate pair).
_ASCII_SENT: Final = tuple(len(compact_json(chr(code))) - 2 for code in range(128))
# Characters measured at once (by the byte count or the C encoder); the chunk that does not fit is
# then walked one character at a time.
_FIT_CHUNK: Final = 8_192


# ASCII bytes JSON writes as themselves, and those it writes as two bytes (\", \\, \n, \t, \r).
_ONE_BYTE: Final = bytes(code for code in range(0x20, 0x7F) if code not in b'"\\')
_TWO_BYTES: Final = b'"\\\n\t\r'


def sent_bytes(text: str) -> int:
    """The bytes `text` takes inside a JSON string on the wire (ASCII-only, compact)."""
    if text.isascii():
        # Most files: two byte-deletions count the escapes without writing them, several times
        # cheaper than the encoder on every read; any other control character takes its path.
        data = text.encode("ascii")
        doubled = data.translate(None, _ONE_BYTE)
        if not doubled.translate(None, _TWO_BYTES):
            return len(data) + len(doubled)
    return len(compact_json(text)) - 2


def _char_sent_bytes(char: str) -> int:
    code = ord(char)
    if code < 128:
        return _ASCII_SENT[code]
    return 6 if code < 0x10000 else 12


def fit_sent_bytes(text: str, budget: int) -> tuple[str, bool]:
    """The longest prefix of `text` that takes at most `budget` bytes as sent, and whether it is
    shorter than `text` (docs/tools/sandbox_fs_read.md, "Reply size").

    `max_bytes` counts what the reply carries, not what the disk holds: a quote, a backslash or a
    control character, escaped, counts two or six bytes, a non-ASCII character six or twelve, so no
    content makes a reply more than a fixed multiple of `max_bytes`.
    Limits: the text is measured a chunk at a time (never escaped whole: 16 MiB of control bytes
    would be 96 MB), then at most `_FIT_CHUNK` characters one by one.
    """
    used = 0
    start = 0
    while start < len(text):
        chunk = text[start : start + _FIT_CHUNK]
        size = sent_bytes(chunk)
        if used + size > budget:
            break
        used += size
        start += len(chunk)
    else:
        return text, False
    index = 0
    while True:  # the chunk does not fit, so one of its characters is the first that does not
        used += _char_sent_bytes(chunk[index])
        if used > budget:
            return text[: start + index], True
        index += 1
