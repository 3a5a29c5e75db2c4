"""What the demo's service account can reach: the search bit of every directory on a path, and root's
cache directory (`/var/cache/mcp-suite`) for what it cannot reach where it is.

PostgreSQL refuses to run as root, so as root the cluster runs as `mcp-devdb` (`process.py`); a
checkout in /root or a private temporary directory is out of that account's reach. This module only
checks and names directories (it creates root's cache); copying the binaries is `binaries.py`'s job.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Final

from mcp_suite.demo.process import SERVICE_USER, DevDbError, service_account

__all__ = ["ROOT_CACHE_DIR", "blocked_ancestor", "check_reachable", "reachable_cluster_dir", "root_cache"]

# Root's cache for the demo: what the service account must reach when root works in a private tree.
ROOT_CACHE_DIR: Final = Path("/var/cache/mcp-suite")


def blocked_ancestor(path: Path, account: tuple[int, int] | None) -> Path | None:
    """The first existing directory on the way to `path` the account cannot search, or None.

    Checks the search (x) bit of `path` and every existing ancestor for the account: owner, group
    or other. None when we run as ourselves (`account` None).
    """
    if account is None:
        return None
    uid, gid = account
    for parent in [path, *path.parents]:
        try:
            st = parent.stat()
        except FileNotFoundError:
            continue
        if st.st_uid == uid:
            allowed = st.st_mode & stat.S_IXUSR
        elif st.st_gid == gid:
            allowed = st.st_mode & stat.S_IXGRP
        else:
            allowed = st.st_mode & stat.S_IXOTH
        if not allowed:
            return parent
    return None


def check_reachable(path: Path, account: tuple[int, int] | None, what: str, fix: str) -> None:
    """Refuse early, with a fix, when the service account cannot traverse to `path`.

    PostgreSQL would otherwise fail later with a bare "permission denied" in its log.
    """
    blocked = blocked_ancestor(path, account)
    if blocked is not None:
        raise DevDbError(
            f"the {what} is below a directory the {SERVICE_USER!r} account cannot enter ({blocked}); {fix}"
        )


def root_cache() -> Path:
    """Root's own cache directory for the demo: owned by root, searchable by all, writable by root only.

    Security: refuses a path that is a symlink, not a directory, or writable by anyone but root.
    """
    try:
        ROOT_CACHE_DIR.mkdir(mode=0o711, parents=True, exist_ok=True)
        st = ROOT_CACHE_DIR.lstat()
    except OSError as exc:
        raise DevDbError(f"could not create {ROOT_CACHE_DIR}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise DevDbError(f"{ROOT_CACHE_DIR} must be a directory owned by root and writable by root only")
    if st.st_mode & 0o777 != 0o711:
        ROOT_CACHE_DIR.chmod(0o711)
    return ROOT_CACHE_DIR


def reachable_cluster_dir(base: Path) -> Path:
    """`base`, or, when root's service account cannot reach it, a directory of its own in root's cache.

    The directory is named after `base`, so each checkout keeps one demo cluster of its own.
    """
    base = base.absolute()
    if blocked_ancestor(base.parent, service_account()) is None:
        return base
    digest = hashlib.sha256(os.fsencode(base)).hexdigest()[:12]
    return root_cache() / f"devdb-{digest}"
