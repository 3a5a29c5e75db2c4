"""One throwaway PostgreSQL cluster in a directory of its own: initdb, start, stop, destroy
(docs/tools/read_only_sql.md).

The cluster listens on 127.0.0.1 only, on a free port, with no Unix socket and scram-sha-256
passwords; when this process is root the server runs as the non-root service account (`process.py`).
The directory holds a marker file; a directory without it is never reused nor deleted. A server this
process started is stopped when the process exits (atexit, and the kernel's parent-death signal).
The binaries are `binaries.py`'s, the seed `seed.py`'s, the choice of directory `session.py`'s.
Never imported by the server itself.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mcp_suite.demo.binaries import find_pg_bin, reachable_pg_bin
from mcp_suite.demo.process import DevDbError, run_service, service_account, start_service, stop_escalating
from mcp_suite.demo.reach import ROOT_CACHE_DIR, check_reachable
from mcp_suite.demo.seed import (
    ADMIN_USER,
    DEMO_DB,
    OPS_DB,
    OPS_READER_USER,
    READER_USER,
    seed_cluster,
    seed_digest,
)

__all__ = ["HOST", "MARKER_NAME", "Cluster", "free_port"]

log = logging.getLogger(__name__)

MARKER_NAME: Final = ".mcp-suite-devdb"
_MARKER_TEXT: Final = (
    "Created by mcp_suite.demo: a throwaway PostgreSQL cluster.\n"
    "mcp_suite.demo reuses and deletes only directories holding this file.\n"
)
_STATE_NAME: Final = "devdb.json"
_DATA_NAME: Final = "pgdata"
_LOG_NAME: Final = "postgres.log"
HOST: Final = "127.0.0.1"

_READY_TIMEOUT_S: Final = 30.0
_STOP_TIMEOUT_S: Final = 15.0

# Appended to postgresql.conf: a throwaway cluster trades durability for start-up speed.
_SERVER_CONF: Final = """
# --- mcp_suite.demo (throwaway cluster) ---
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
password_encryption = 'scram-sha-256'
max_connections = 40
shared_buffers = 16MB
fsync = off
synchronous_commit = off
full_page_writes = off
wal_level = minimal
max_wal_senders = 0
autovacuum = off
jit = off
huge_pages = off
timezone = 'UTC'
log_timezone = 'UTC'
"""

# Loopback TCP with a password, nothing else (no Unix socket, no trust, no replication).
_PG_HBA: Final = """# mcp_suite.demo: loopback TCP with scram-sha-256 only
host    all    all    127.0.0.1/32    scram-sha-256
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As PostgreSQL binds: SO_REUSEADDR, so our own connections in TIME_WAIT after a stop do
        # not move the cluster to another port on restart.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


_LIVE: weakref.WeakSet[Cluster] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


def _stop_all_at_exit() -> None:
    with _LIVE_LOCK:
        clusters = list(_LIVE)
    for cluster in clusters:
        with contextlib.suppress(Exception):
            cluster.stop()


atexit.register(_stop_all_at_exit)


@dataclass(frozen=True, slots=True)
class _State:
    admin_password: str
    reader_password: str
    port: int
    seeded: bool
    seed_digest: str = ""  # of the seed files it was seeded with ("" before digests were kept)
    # mcp_ops_reader's ("" in a state file from before the second database: its digest differs,
    # so the demo makes that cluster again)
    ops_reader_password: str = ""

    def dump(self) -> dict[str, Any]:
        return {
            "admin_password": self.admin_password,
            "reader_password": self.reader_password,
            "port": self.port,
            "seeded": self.seeded,
            "seed_digest": self.seed_digest,
            "ops_reader_password": self.ops_reader_password,
        }


class Cluster:
    """One throwaway cluster in `base` (marker, state, log and `pgdata/`).

    `admin_dsn` is the bootstrap superuser, `reader_dsn` the seeded `mcp_reader` (database
    mcp_demo), `ops_reader_dsn` the seeded `mcp_ops_reader` (database mcp_ops); all over TCP on
    127.0.0.1 with a password. Use `create()` or `open_existing()`; `start()`/`stop()` may be called
    again (the restart test does), and the port is kept across restarts when it is still free.
    """

    def __init__(self, base: Path, state: _State, *, pg_bin: Path | None = None) -> None:
        self.base = base
        self._state = state
        self._account = service_account()
        self._pg_bin = pg_bin
        self._bin: Path | None = None  # found on first use: removing a cluster needs no binaries
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.RLock()

    # --- construction --------------------------------------------------------------------------
    @classmethod
    def create(cls, base: Path, *, pg_bin: Path | None = None) -> Cluster:
        """Create, start and seed a new cluster in `base` (absent or an empty directory).

        On any failure the server is stopped and the directory (which then holds our marker) is
        removed. The cluster is left running on success.
        """
        base = base.absolute()
        if base.exists():
            if not base.is_dir() or base.is_symlink() or any(base.iterdir()):
                raise DevDbError("refusing to create a cluster in a non-empty directory")
        else:
            base.mkdir(parents=True, mode=0o700)
        # Traversable, not listable, by the service account (it owns only pgdata/).
        base.chmod(0o711)
        (base / MARKER_NAME).write_text(_MARKER_TEXT)
        state = _State(
            admin_password=secrets.token_urlsafe(24),
            reader_password=secrets.token_urlsafe(24),
            port=free_port(),
            seeded=False,
            ops_reader_password=secrets.token_urlsafe(24),
        )
        cluster = cls(base, state, pg_bin=pg_bin)
        try:
            check_reachable(
                base.parent,
                cluster._account,
                "cluster directory",
                "set MCP_DEVDB_DIR to a directory under /tmp, unset it (the default moves to "
                f"{ROOT_CACHE_DIR}), or make its parents searchable",
            )
            check_reachable(
                cluster.bin_dir,
                cluster._account,
                "PostgreSQL binary directory",
                "set PG_BIN to a copy the account can read, or make its parents searchable",
            )
            cluster._write_state()
            cluster._initdb()
            cluster.start()
            seed_cluster(cluster)
            cluster._state = dataclasses.replace(
                state, port=cluster.port, seeded=True, seed_digest=seed_digest()
            )
            cluster._write_state()
        except BaseException:
            with contextlib.suppress(Exception):
                cluster.stop()
            with contextlib.suppress(Exception):
                cluster.destroy()
            raise
        return cluster

    @classmethod
    def open_existing(cls, base: Path, *, pg_bin: Path | None = None) -> Cluster:
        """A cluster this module created earlier in `base` (not started by this call)."""
        base = base.absolute()
        if not (base / MARKER_NAME).is_file():
            raise DevDbError("refusing to use a directory that mcp_suite.demo did not create")
        try:
            raw = json.loads((base / _STATE_NAME).read_text())
            state = _State(
                admin_password=str(raw["admin_password"]),
                reader_password=str(raw["reader_password"]),
                port=int(raw["port"]),
                seeded=bool(raw["seeded"]),
                seed_digest=str(raw.get("seed_digest", "")),
                ops_reader_password=str(raw.get("ops_reader_password", "")),
            )
        except (OSError, ValueError, KeyError, TypeError):
            raise DevDbError("the cluster's state file is missing or damaged") from None
        if not state.seeded:
            raise DevDbError("the cluster in this directory was never fully created")
        return cls(base, state, pg_bin=pg_bin)

    # --- connection facts ----------------------------------------------------------------------
    @property
    def seed_digest(self) -> str:
        return self._state.seed_digest

    @property
    def host(self) -> str:
        return HOST

    @property
    def port(self) -> int:
        return self._state.port

    @property
    def dbname(self) -> str:
        return DEMO_DB

    @property
    def data_dir(self) -> Path:
        return self.base / _DATA_NAME

    @property
    def bin_dir(self) -> Path:
        """Where the server's binaries run from (a reachable copy when root needs one; a standby too)."""
        if self._bin is None:
            self._bin = reachable_pg_bin(self._pg_bin or find_pg_bin(), self._account)
        return self._bin

    def dsn(self, user: str, password: str | None, dbname: str | None = None) -> str:
        """A key/value DSN for `user` on this cluster (loopback TCP, short timeout); with the
        password, unless it is None (a configuration file names a password file instead)."""
        from psycopg.conninfo import make_conninfo

        secret = {} if password is None else {"password": password}
        return make_conninfo(
            host=HOST,
            port=self.port,
            dbname=dbname or DEMO_DB,
            user=user,
            connect_timeout=5,
            sslmode="disable",
            **secret,
        )

    @property
    def admin_dsn(self) -> str:
        return self.dsn(ADMIN_USER, self._state.admin_password)

    @property
    def admin_password(self) -> str:
        return self._state.admin_password

    @property
    def reader_dsn(self) -> str:
        return self.dsn(READER_USER, self._state.reader_password)

    @property
    def reader_password(self) -> str:
        return self._state.reader_password

    @property
    def ops_reader_dsn(self) -> str:
        return self.dsn(OPS_READER_USER, self._state.ops_reader_password, OPS_DB)

    @property
    def ops_reader_password(self) -> str:
        return self._state.ops_reader_password

    # --- lifecycle -----------------------------------------------------------------------------
    def _write_state(self) -> None:
        path = self.base / _STATE_NAME
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(self._state.dump(), fh)

    def _run_as_service(self, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
        return run_service(argv, cwd=self.base)

    def _initdb(self) -> None:
        data = self.data_dir
        data.mkdir(mode=0o700)
        pwfile = self.base / "initdb.pw"
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(self._state.admin_password + "\n")
        try:
            if self._account is not None:
                os.chown(data, *self._account)
                os.chown(pwfile, *self._account)
            result = self._run_as_service(
                [
                    str(self.bin_dir / "initdb"),
                    "--pgdata",
                    str(data),
                    "--username",
                    ADMIN_USER,
                    f"--pwfile={pwfile}",
                    "--auth=scram-sha-256",
                    "--encoding=UTF8",
                    "--locale=C",
                    "--no-sync",
                    "--no-instructions",
                ]
            )
        finally:
            pwfile.unlink(missing_ok=True)
        if result.returncode != 0:
            log.error("initdb failed:\n%s", result.stderr.decode(errors="replace")[-2000:])
            raise DevDbError("initdb failed (details on stderr)")
        with (data / "postgresql.conf").open("a") as fh:
            fh.write(_SERVER_CONF)
        (data / "pg_hba.conf").write_text(_PG_HBA)

    def _postmaster_pid(self) -> tuple[int, int, str] | None:
        """(pid, port, status) from postmaster.pid, or None when absent or incomplete."""
        try:
            lines = (self.data_dir / "postmaster.pid").read_text().splitlines()
        except (FileNotFoundError, PermissionError):
            return None
        if len(lines) < 8:
            return None
        try:
            return int(lines[0]), int(lines[3]), lines[7].strip()
        except ValueError:
            return None

    def running_elsewhere(self) -> bool:
        """True when a server started by another process is serving this data directory."""
        info = self._postmaster_pid()
        if info is None or self._proc is not None:
            return False
        pid, port, status = info
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        if status == "ready":
            self._state = dataclasses.replace(self._state, port=port)
            return True
        return False

    def is_running(self) -> bool:
        with self._lock:
            return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the server (as this process's child) and wait until it accepts connections.

        Cancellation: none; bounded by a 30 s readiness timeout, after which the server is killed.
        """
        with self._lock:
            if self.is_running():
                return
            port = self._state.port if _port_is_free(self._state.port) else free_port()
            self._state = dataclasses.replace(self._state, port=port)
            self._write_state()
            logfile = open(self.base / _LOG_NAME, "ab")  # noqa: SIM115  # handed to the child
            try:
                argv = [str(self.bin_dir / "postgres"), "-D", str(self.data_dir), "-c", f"port={port}"]
                self._proc = start_service(argv, cwd=self.base, output=logfile)
            finally:
                logfile.close()
            with _LIVE_LOCK:
                _LIVE.add(self)
            try:
                self._wait_ready(port)
            except BaseException:
                self.stop()
                raise

    def _wait_ready(self, port: int) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while True:
            if self._proc.poll() is not None:
                log.error("postgres exited during start-up:\n%s", self.log_tail())
                raise DevDbError("the PostgreSQL server exited during start-up (log on stderr)")
            info = self._postmaster_pid()
            if info is not None and info == (self._proc.pid, port, "ready"):
                return
            if time.monotonic() > deadline:
                raise DevDbError("the PostgreSQL server did not become ready in time")
            time.sleep(0.005)

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return (self.base / _LOG_NAME).read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server this object started: fast shutdown, then immediate, then kill."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            stop_escalating(
                proc, ((signal.SIGINT, _STOP_TIMEOUT_S), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0))
            )
            self._proc = None
            with _LIVE_LOCK:
                _LIVE.discard(self)

    def destroy(self) -> None:
        """Stop the server and remove the directory; refuses a directory without our marker."""
        self.stop()
        if not (self.base / MARKER_NAME).is_file() or self.base.is_symlink():
            raise DevDbError("refusing to delete a directory that mcp_suite.demo did not create")
        shutil.rmtree(self.base)
