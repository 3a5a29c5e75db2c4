"""A primary that can stream, and a hot standby made from it with `pg_basebackup -R` (tests only).

The demo cluster trades durability for speed (`wal_level = minimal`, no WAL senders), so
`open_primary()` creates a cluster of its own and turns on what replication needs (`wal_level =
replica`, WAL senders, a `replication` line in pg_hba for the bootstrap superuser), then restarts
it. `open_standby(primary)` copies it with `pg_basebackup -R` (which writes `standby.signal` and
`primary_conninfo`) and starts the copy as a streaming hot standby on another free port. Both run
as the cluster's service account when this process is root, and are stopped and removed on exit.
Test harness only: outside the installed package.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from mcp_suite.demo.cluster import HOST, Cluster, free_port
from mcp_suite.demo.process import (
    DevDbError,
    child_env,
    run_service,
    service_account,
    start_service,
    stop_escalating,
)
from mcp_suite.demo.seed import ADMIN_USER

__all__ = ["Standby", "open_primary", "open_standby"]

_READY_TIMEOUT_S: Final = 30.0
# Fast shutdown, then immediate, then kill.
_STOP_STEPS: Final = ((signal.SIGINT, 15.0), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0))

_REPLICATION_HBA: Final = "host    replication    {user}    127.0.0.1/32    scram-sha-256\n"


@contextlib.contextmanager
def open_primary() -> Iterator[Cluster]:
    """A fresh, seeded cluster that can feed streaming replicas (destroyed on exit)."""
    import psycopg

    cluster = Cluster.create(Path(tempfile.mkdtemp(prefix="mcp-suite-primary-")))
    try:
        with psycopg.connect(cluster.admin_dsn, autocommit=True) as conn:
            for statement in (
                "ALTER SYSTEM SET wal_level = replica",
                "ALTER SYSTEM SET max_wal_senders = 4",
                "ALTER SYSTEM SET wal_keep_size = '64MB'",
            ):
                conn.execute(statement)
        with (cluster.data_dir / "pg_hba.conf").open("a") as fh:
            fh.write(_REPLICATION_HBA.format(user=ADMIN_USER))
        cluster.stop()
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()


class Standby:
    """A running hot standby: `dsn(user, password)`, `wait_replayed(primary)`, `stop()`."""

    def __init__(self, base: Path, port: int, proc: subprocess.Popen[bytes]) -> None:
        self.base = base
        self.port = port
        self._proc = proc
        self._lock = threading.Lock()

    @property
    def data_dir(self) -> Path:
        return self.base / "pgdata"

    def with_port(self, dsn: str) -> str:
        """`dsn` (of the primary) pointed at this standby instead."""
        return make_conninfo(dsn, host=HOST, port=self.port)

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return (self.base / "postgres.log").read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def wait_replayed(self, primary: Cluster, timeout_s: float = 15.0) -> None:
        """Block until the standby has replayed everything the primary has written so far."""
        import psycopg

        with psycopg.connect(primary.admin_dsn, autocommit=True) as conn:
            row = conn.execute("SELECT pg_catalog.pg_current_wal_insert_lsn()::text").fetchone()
        target = str(row[0]) if row else "0/0"
        deadline = time.monotonic() + timeout_s
        with psycopg.connect(self.with_port(primary.admin_dsn), autocommit=True) as conn:
            while True:
                done = conn.execute(
                    "SELECT pg_catalog.pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)
                ).fetchone()
                if done == (True,):
                    return
                if time.monotonic() > deadline:
                    raise DevDbError(f"the standby did not catch up in time:\n{self.log_tail()}")
                time.sleep(0.01)

    def stop(self) -> None:
        with self._lock:
            stop_escalating(self._proc, _STOP_STEPS)


def _run(argv: list[str], cwd: Path, env: Mapping[str, str]) -> None:
    result = run_service(argv, cwd=cwd, env=env)
    if result.returncode != 0:
        raise DevDbError(f"{Path(argv[0]).name} failed:\n{result.stderr.decode(errors='replace')[-2000:]}")


@contextlib.contextmanager
def open_standby(primary: Cluster, settings: Mapping[str, str] | None = None) -> Iterator[Standby]:
    """A streaming hot standby of `primary`, running and accepting read-only sessions.

    `settings` are extra `postgres -c` options (for example `max_standby_streaming_delay`).
    Cancellation: none; bounded by a 30 s readiness timeout.
    """
    account = service_account()
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-standby-"))
    base.chmod(0o711)
    data = base / "pgdata"
    data.mkdir(mode=0o700)
    if account is not None:
        os.chown(data, *account)
    pg_bin = primary.bin_dir
    admin = conninfo_to_dict(primary.admin_dsn)
    env = {**child_env(), "PGPASSWORD": str(admin["password"])}
    proc: subprocess.Popen[bytes] | None = None
    try:
        _run(
            [
                str(pg_bin / "pg_basebackup"),
                "-D",
                str(data),
                "-R",
                "-X",
                "stream",
                "--no-sync",
                "-h",
                HOST,
                "-p",
                str(primary.port),
                "-U",
                ADMIN_USER,
                "-w",
            ],
            base,
            env,
        )
        port = free_port()
        argv = [str(pg_bin / "postgres"), "-D", str(data), "-c", f"port={port}", "-c", "hot_standby=on"]
        for key, value in (settings or {}).items():
            argv += ["-c", f"{key}={value}"]
        with open(base / "postgres.log", "ab") as logfile:  # the child keeps its own descriptor
            proc = start_service(argv, cwd=base, output=logfile)
        standby = Standby(base, port, proc)
        _wait_standby(standby, proc)
        yield standby
    finally:
        if proc is not None:
            stop_escalating(proc, _STOP_STEPS)
        shutil.rmtree(base, ignore_errors=True)


def _wait_standby(standby: Standby, proc: subprocess.Popen[bytes]) -> None:
    """Until postmaster.pid says the server accepts (read-only) connections."""
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise DevDbError(f"the standby exited during start-up:\n{standby.log_tail()}")
        with contextlib.suppress(OSError):
            lines = (standby.data_dir / "postmaster.pid").read_text().splitlines()
            if len(lines) >= 8 and lines[7].strip() in {"standby", "ready"}:
                return
        if time.monotonic() > deadline:
            raise DevDbError(f"the standby did not accept connections in time:\n{standby.log_tail()}")
        time.sleep(0.01)
