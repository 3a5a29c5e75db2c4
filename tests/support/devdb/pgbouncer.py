"""A throwaway PgBouncer in transaction pooling mode in front of a devdb cluster (tests and bench).

The binary is Debian's `pgbouncer` (`$PGBOUNCER`, else found on PATH or in /usr/sbin; `make test`
installs the package when it is missing). It listens on 127.0.0.1 only, on a free port, with no Unix
socket; clients and the pooler both authenticate with scram-sha-256 from a private userlist. When
this process is root it runs as the cluster's non-root service account (PgBouncer refuses root).
The process is stopped when the object is closed and when this process exits. Test harness only: outside
the installed package.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

from mcp_suite.demo.cluster import HOST, Cluster, free_port
from mcp_suite.demo.process import DevDbError, service_account, start_service, stop_escalating

__all__ = ["PgBouncer", "find_pgbouncer", "open_pgbouncer"]

_READY_TIMEOUT_S: Final = 15.0
_STOP_TIMEOUT_S: Final = 10.0


def find_pgbouncer() -> Path:
    """The pgbouncer executable: `$PGBOUNCER`, else PATH, else /usr/sbin (Debian's place)."""
    override = os.environ.get("PGBOUNCER")
    found = override or shutil.which(
        "pgbouncer", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"])
    )
    if not found or not Path(found).is_file():
        raise DevDbError(
            "pgbouncer not found: install Debian's pgbouncer package (make test does) or set PGBOUNCER"
        )
    return Path(found)


def _quote(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'


class PgBouncer:
    """One running PgBouncer: `port`, `dsn(user, password)`, `admin_dsn` for its console, `close()`."""

    def __init__(
        self, cluster: Cluster, base: Path, port: int, proc: subprocess.Popen[bytes], admin_password: str
    ) -> None:
        self._cluster = cluster
        self.base = base
        self.port = port
        self._proc = proc
        self._admin_password = admin_password
        self._lock = threading.Lock()

    def dsn(self, user: str, password: str, dbname: str) -> str:
        """The cluster's DSN for `user`, pointed at PgBouncer instead."""
        from psycopg.conninfo import make_conninfo

        return make_conninfo(self._cluster.dsn(user, password, dbname), port=self.port)

    @property
    def admin_dsn(self) -> str:
        """The PgBouncer console (`SHOW POOLS`, `SHOW SERVERS`...): simple-query only."""
        return self.dsn("pgbouncer_admin", self._admin_password, "pgbouncer")

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return (self.base / "pgbouncer.log").read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def is_running(self) -> bool:
        return self._proc.poll() is None

    def close(self) -> None:
        """SIGINT (safe shutdown: wait for transactions), then SIGTERM, then kill; remove the dir."""
        with self._lock:
            stop_escalating(
                self._proc, ((signal.SIGINT, _STOP_TIMEOUT_S), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0))
            )
            shutil.rmtree(self.base, ignore_errors=True)


def _config(
    cluster: Cluster,
    base: Path,
    port: int,
    *,
    pool_size: int,
    server_idle_timeout_s: int,
    extra: Mapping[str, str],
) -> str:
    settings = {
        "listen_addr": HOST,
        "listen_port": str(port),
        "unix_socket_dir": "",
        "auth_type": "scram-sha-256",
        "auth_file": str(base / "userlist.txt"),
        "pool_mode": "transaction",
        "default_pool_size": str(pool_size),
        # No backend is kept for idle clients: a hundred idle editors must not pin a hundred.
        "min_pool_size": "0",
        "reserve_pool_size": "0",
        "server_idle_timeout": str(server_idle_timeout_s),
        "max_client_conn": "500",
        "admin_users": "pgbouncer_admin",
        "logfile": str(base / "pgbouncer.log"),
        "pidfile": str(base / "pgbouncer.pid"),
        "server_tls_sslmode": "disable",
        **extra,
    }
    lines = [
        "[databases]",
        f"{cluster.dbname} = host={HOST} port={cluster.port} dbname={cluster.dbname}",
        "[pgbouncer]",
        *(f"{key} = {value}" for key, value in settings.items()),
    ]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def open_pgbouncer(
    cluster: Cluster,
    users: Mapping[str, str],
    *,
    pool_size: int = 8,
    server_idle_timeout_s: int = 600,
    extra: Mapping[str, str] | None = None,
) -> Iterator[PgBouncer]:
    """PgBouncer (transaction pooling, `pool_size` backends per user and database, none kept idle
    beyond `server_idle_timeout_s`) in front of `cluster`, for the `users` given (name -> password).

    Cancellation: none; start-up is bounded by a 15 s readiness timeout.
    """
    import secrets

    account = service_account()
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-pgbouncer-"))
    admin_password = secrets.token_urlsafe(18)
    port = free_port()
    try:
        userlist = {**users, "pgbouncer_admin": admin_password}
        (base / "userlist.txt").write_text(
            "".join(f"{_quote(name)} {_quote(password)}\n" for name, password in userlist.items())
        )
        (base / "pgbouncer.ini").write_text(
            _config(
                cluster,
                base,
                port,
                pool_size=pool_size,
                server_idle_timeout_s=server_idle_timeout_s,
                extra=extra or {},
            )
        )
        for path in (base / "userlist.txt", base / "pgbouncer.ini"):
            path.chmod(0o600)
        if account is not None:
            for path in (base, base / "userlist.txt", base / "pgbouncer.ini"):
                os.chown(path, *account)
        proc = start_service([str(find_pgbouncer()), "-q", str(base / "pgbouncer.ini")], cwd=base)
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
    bouncer = PgBouncer(cluster, base, port, proc, admin_password)
    try:
        _wait_listening(bouncer)
        yield bouncer
    finally:
        bouncer.close()


def _wait_listening(bouncer: PgBouncer) -> None:
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while True:
        if not bouncer.is_running():
            raise DevDbError(f"pgbouncer exited during start-up:\n{bouncer.log_tail()}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(1.0)
            if sock.connect_ex((HOST, bouncer.port)) == 0:
                return
        if time.monotonic() > deadline:
            raise DevDbError("pgbouncer did not start listening in time")
        time.sleep(0.01)
