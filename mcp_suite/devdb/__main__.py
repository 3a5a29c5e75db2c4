"""`python -m mcp_suite.devdb serve -- <server argv>` and `python -m mcp_suite.devdb demo`.

`serve` starts the demo cluster under `.cache/devdb` (a session that finds it serving another
gets a throwaway one of its own), writes the configuration file of its two databases in the
cluster's directory (`sources_file.py`: the sources `docs` and `ops`, each read by its own audited
role, the passwords in files of mode 0600), runs the server as a child with stdio inherited and
MCP_CONFIG plus MCP_SAFE_DATA_DIR set, and stops its cluster when the child exits. `demo`
drives the real server through the official `mcp` SDK client and prints a table of outcomes.
`destroy` removes the demo cluster (only our directory) and its lock file. Each run logs where the
cluster lives: as root in a private checkout that is root's cache, outside the checkout.
Development tooling: stdout belongs to the child server in `serve`; our own messages go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

from mcp_suite.devdb.cluster import (
    MARKER_NAME,
    Cluster,
    DevDbError,
    checkout,
    default_cache_dir,
    example_folder,
    open_demo_cluster,
)
from mcp_suite.devdb.sources_file import server_environ
from mcp_suite.runtime.log_sink import configure_logging, shutdown_logging
from mcp_suite.settings import SettingsError

log = logging.getLogger("mcp_suite.devdb")

_CHILD_STOP_S = 10.0  # how long `serve` waits for the child after forwarding a signal


def _server_env(cluster: Cluster) -> dict[str, str]:
    env = server_environ(cluster, os.environ)
    safe = example_folder()
    if safe is not None:
        env["MCP_SAFE_DATA_DIR"] = str(safe)
    return env


@contextlib.contextmanager
def _demo_cluster() -> Iterator[Cluster]:
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
    with _locked(_lock_path(base)):
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


def _lock_path(base: Path) -> Path:
    """The lock beside the cluster's directory (inside it, `destroy` could not hold it to the end)."""
    return base.parent / f"{base.name}.lock"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
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


def _child_death_signal() -> None:  # runs in the forked child before exec
    # If this process dies (even SIGKILL), the server gets SIGTERM and drains (docs/wire.md).
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)


def serve(argv: Sequence[str]) -> int:
    """Run `argv` as the MCP server with the demo database; returns the child's exit status."""
    if not argv:
        log.error("usage: python -m mcp_suite.devdb serve -- <server command...>")
        return 2
    with _demo_cluster() as cluster:
        child = subprocess.Popen(  # noqa: S603  # the developer's own command line
            list(argv),
            env=_server_env(cluster),
            preexec_fn=_child_death_signal,  # only calls prctl
        )

        def forward(signum: int, _frame: FrameType | None) -> None:
            # Ctrl-C reaches the child from the terminal itself; SIGTERM/SIGHUP sent to us only
            # are passed on, so the server drains and the cluster is stopped after it.
            if signum != signal.SIGINT:
                with contextlib.suppress(ProcessLookupError):
                    child.send_signal(signum)

        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, forward)
        try:
            status = child.wait()
        finally:
            if child.poll() is None:
                child.terminate()
                try:
                    child.wait(timeout=_CHILD_STOP_S)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
    return status if status >= 0 else 128 - status


# --- demo ------------------------------------------------------------------------------------


def demo() -> int:
    """Every tool through the SDK client (`mcp_suite.devdb.demo`); 1 when a step was UNEXPECTED."""
    import anyio

    from mcp_suite.devdb.demo import print_table, run_steps

    with _demo_cluster() as cluster:
        env = _server_env(cluster)
        env.setdefault("MCP_LOG_LEVEL", "WARNING")
        rows = anyio.run(run_steps, env, checkout() or Path.home())
    print_table(rows, sys.stdout)
    return 0 if all(as_expected for _, as_expected, _ in rows) else 1


def destroy() -> int:
    """Remove the demo cluster wherever it lives (`default_cache_dir`), then its lock file."""
    base = default_cache_dir().absolute()
    lock = _lock_path(base)
    if not base.exists() and not lock.exists():
        log.info("no demo cluster to remove (%s)", base)
        return 0
    with _locked(lock):  # not while a session is starting it
        if base.exists():
            cluster = Cluster.open_existing(base)
            if cluster.running_elsewhere():
                log.error("the demo cluster in %s is in use by another process; stop it first", base)
                return 1
            cluster.destroy()
        lock.unlink()  # under the lock: a waiting session sees the name gone and takes a new one
    log.info("removed %s and %s", base, lock.name)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    # JSON lines, like the server's: under `make run` both write to the client's stderr.
    configure_logging("INFO")
    try:
        return _main(argv)
    finally:
        shutdown_logging()


def _main(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcp_suite.devdb")
    parser.add_argument("command", choices=("serve", "demo", "destroy"))
    parser.add_argument("server", nargs=argparse.REMAINDER, help="serve: -- <server command>")
    args = parser.parse_args(argv)
    server = list(args.server)
    if server and server[0] == "--":
        server = server[1:]
    try:
        if args.command == "serve":
            return serve(server)
        if args.command == "demo":
            return demo()
        return destroy()
    except DevDbError as exc:
        log.error("%s", exc)  # noqa: TRY400  # a one-line reason for the developer, no traceback
        return os.EX_UNAVAILABLE  # the demo database could not be created, started or used
    except SettingsError as exc:  # a per-source MCP_SQL_* variable the demo's file was to carry
        log.error("invalid configuration: %s", exc)  # noqa: TRY400  # one line, as the server's
        return os.EX_CONFIG


if __name__ == "__main__":
    raise SystemExit(main())
