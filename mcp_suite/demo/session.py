"""The demo cluster of one session (`mcp-suite demo`, `make run`, `make demo`): the shared one in the
cache directory (`places.py`), started if it is not, re-made when its seed is older, or a throwaway
one of this session's own when another session serves the shared one. A lock beside the directory
makes "is it running? start it" one decision. Also the environment the session's server gets.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from mcp_suite.demo.cluster import MARKER_NAME, Cluster
from mcp_suite.demo.places import checkout, default_cache_dir, example_folder
from mcp_suite.demo.process import DevDbError
from mcp_suite.demo.seed import seed_digest
from mcp_suite.demo.sources_file import server_environ

__all__ = ["lock_path", "locked", "open_demo_cluster", "open_session_cluster", "server_env"]

# The demo's own lines (`make run`, `make demo`, `mcp-suite demo`) all come from one logger.
log = logging.getLogger("mcp_suite.demo")


def server_env(cluster: Cluster) -> dict[str, str]:
    """The environment of the session's server: ours, with `MCP_CONFIG` naming the demo's sources
    file (`sources_file.py`) and `MCP_SAFE_DATA_DIR` the example folder."""
    env = server_environ(cluster, os.environ)
    safe = example_folder()
    if safe is not None:
        env["MCP_SAFE_DATA_DIR"] = str(safe)
    return env


@contextlib.contextmanager
def open_session_cluster() -> Iterator[Cluster]:
    """The demo cluster, running, for one session; what this session started is stopped afterwards.

    The first session starts the cluster in the cache directory. A session that finds it already
    serving another one gets a throwaway cluster of its own (seeded the same, removed at its end),
    so no session's exit ever stops the database under another. A lock beside the directory makes
    "is it running? start it" one decision when clients start two sessions at once.
    """
    started_at = time.perf_counter()
    base = default_cache_dir().absolute()
    base.parent.mkdir(parents=True, exist_ok=True)
    # One line per step on stderr: a first run creates the cluster, which takes seconds.
    fresh = not (base / MARKER_NAME).is_file()
    if fresh:
        log.info("creating the demo PostgreSQL in %s (once: initdb and the seed take seconds)", base)
    else:
        log.info("starting the demo PostgreSQL in %s", base)
    with locked(lock_path(base)):
        cluster, started_here = open_demo_cluster(base)
        if not started_here:
            cluster = Cluster.create(Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-session-")))
    own = cluster.base != base
    remove = "`mcp-suite demo destroy`"
    if checkout() is not None:
        remove = "`make clean`, or `.venv/bin/mcp-suite demo destroy`"
    log.info(
        "demo PostgreSQL %s on %s:%s (%.2f s); %s",
        f"of this session in {cluster.base} (the shared one serves another)" if own else "started",
        cluster.host,
        cluster.port,
        time.perf_counter() - started_at,
        "removed at the end of the session" if own else f"its files: {base} (remove them: {remove})",
    )
    try:
        yield cluster
    finally:
        if own:
            cluster.destroy()
        else:
            cluster.stop()
        log.info("demo PostgreSQL stopped")


def lock_path(base: Path) -> Path:
    """The lock beside the cluster's directory (inside it, `destroy` could not hold it to the end)."""
    return base.parent / f"{base.name}.lock"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if absent); the holder may unlink it.

    A process that waited while `destroy` removed the file would hold a lock on a name that no
    longer exists: the lock counts only when `path` still names the locked file, else it retries.
    """
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released when the fd is closed
            try:
                current = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                continue
            locked = os.fstat(fd)
            if (current.st_dev, current.st_ino) != (locked.st_dev, locked.st_ino):
                continue
            yield
            return
        finally:
            os.close(fd)


def open_demo_cluster(base: Path | None = None) -> tuple[Cluster, bool]:
    """The demo cluster in `base` (default `.cache/devdb` at the repo root), running.

    Returns (cluster, started_here): a cluster another process is already serving is reused and
    must not be stopped by us; otherwise it is started (created first when the directory is absent
    or empty) and the caller stops it.
    """
    base = (base or default_cache_dir()).absolute()
    if base.exists() and (base / MARKER_NAME).is_file():
        cluster = Cluster.open_existing(base)
        if cluster.running_elsewhere():
            return cluster, False
        if cluster.seed_digest == seed_digest():
            cluster.start()
            return cluster, True
        # Seeded from an older seed.sql: the demo would not show what the docs say. The cluster
        # is a throwaway of ours, so it is made again.
        log.info("the demo seed has changed since this cluster was made; making it again")
        cluster.destroy()
    return _create_demo_cluster(base), True


def _create_demo_cluster(base: Path) -> Cluster:
    if base.exists() and any(base.iterdir()):
        raise DevDbError("refusing to use a non-empty directory that mcp_suite.demo did not create")
    return Cluster.create(base)
