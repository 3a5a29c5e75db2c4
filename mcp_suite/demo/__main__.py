"""`python -m mcp_suite.demo serve -- <server argv>` (`make run`, `mcp-suite demo`) and `destroy`.

`serve` takes the session's demo cluster (`session.py`: the shared one under `.cache/devdb`, or a
throwaway one when another session serves it), writes the configuration file of its two databases
(`sources_file.py`), runs the server as a child with stdio inherited and MCP_CONFIG plus
MCP_SAFE_DATA_DIR set, and stops its cluster when the child exits. `destroy` removes the demo
cluster (only our directory) and its lock file. Stdout belongs to the child server in `serve`; our
own messages go to stderr. Imports no test tool (the SDK tour of `make demo` is in tests/support/devdb).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.places import default_cache_dir
from mcp_suite.demo.process import DevDbError
from mcp_suite.demo.session import lock_path, locked, log, open_session_cluster, server_env
from mcp_suite.runtime.log_sink import configure_logging, shutdown_logging
from mcp_suite.settings import SettingsError

_CHILD_STOP_S = 10.0  # how long `serve` waits for the child after forwarding a signal


def _child_death_signal() -> None:  # runs in the forked child before exec
    # If this process dies (even SIGKILL), the server gets SIGTERM and drains (docs/wire.md).
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)


def serve(argv: Sequence[str]) -> int:
    """Run `argv` as the MCP server with the demo database; returns the child's exit status."""
    if not argv:
        log.error("usage: python -m mcp_suite.demo serve -- <server command...>")
        return 2
    with open_session_cluster() as cluster:
        child = subprocess.Popen(  # noqa: S603  # the developer's own command line
            list(argv),
            env=server_env(cluster),
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


def destroy() -> int:
    """Remove the demo cluster wherever it lives (`default_cache_dir`), then its lock file."""
    base = default_cache_dir().absolute()
    lock = lock_path(base)
    if not base.exists() and not lock.exists():
        log.info("no demo cluster to remove (%s)", base)
        return 0
    with locked(lock):  # not while a session is starting it
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
    parser = argparse.ArgumentParser(prog="python -m mcp_suite.demo")
    parser.add_argument("command", choices=("serve", "destroy"))
    parser.add_argument("server", nargs=argparse.REMAINDER, help="serve: -- <server command>")
    args = parser.parse_args(argv)
    server = list(args.server)
    if server and server[0] == "--":
        server = server[1:]
    if args.command == "serve":
        return run_logged(serve, server)
    return run_logged(destroy)


def run_logged(command: Callable[..., int], *args: Any) -> int:
    """`command(*args)` with the demo's logging, and its failures as one line and an exit status.

    Also `make demo`'s (the SDK tour in the test harness): one way to report for every demo command.
    """
    # JSON lines, like the server's: under `make run` both write to the client's stderr.
    configure_logging("INFO")
    try:
        return command(*args)
    except DevDbError as exc:
        log.error("%s", exc)  # a one-line reason for the developer, no traceback
        return os.EX_UNAVAILABLE  # the demo database could not be created, started or used
    except SettingsError as exc:  # a per-source MCP_SQL_* variable the demo's file was to carry
        log.error("invalid configuration: %s", exc)  # one line, as the server's
        return os.EX_CONFIG
    finally:
        shutdown_logging()


if __name__ == "__main__":
    raise SystemExit(main())
