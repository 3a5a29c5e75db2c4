"""read_only_sql over TLS: a cluster with ssl=on and a certificate from a CA the test makes.

`sslmode=verify-full` with `sslrootcert` serves; a certificate for another host name, a root
certificate that is missing, or one from another CA stops the server at start-up (exit 78) with a
message that names the cause and no part of the DSN.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from mcp_suite.demo.cluster import Cluster
from mcp_suite.tools.sql.engine.naming import APPLICATION_NAME
from tests.support.client import ServerProcess
from tests.support.deploy import check_role, with_params
from tests.support.devdb.tls import CertificateAuthority, enable_tls, ssl_pg_bin

pytestmark = pytest.mark.pg

SERVER_NAME = "db.mcp-suite.test"  # the only name the server's certificate lists
EXIT_REFUSED = 78


@dataclass(frozen=True)
class TlsCluster:
    cluster: Cluster
    root: Path  # the CA that signed the server's certificate
    other_root: Path  # a CA that did not

    def dsn(self, **params: str) -> str:
        base = {
            "host": SERVER_NAME,
            "hostaddr": "127.0.0.1",  # no name resolution: the name is only checked against the cert
            "sslmode": "verify-full",
            "sslrootcert": str(self.root),
        }
        return with_params(self.cluster.reader_dsn, **{**base, **params})


@pytest.fixture(scope="module")
def tls_cluster() -> Iterator[TlsCluster]:
    roots = Path(tempfile.mkdtemp(prefix="mcp-suite-tls-"))
    cluster = Cluster.create(Path(tempfile.mkdtemp(prefix="mcp-suite-tls-devdb-")), pg_bin=ssl_pg_bin())
    try:
        authority = CertificateAuthority()
        enable_tls(cluster, authority.issue([SERVER_NAME]))
        yield TlsCluster(
            cluster,
            authority.write_root(roots / "root.crt"),
            CertificateAuthority("another CA").write_root(roots / "other-root.crt"),
        )
    finally:
        cluster.destroy()
        shutil.rmtree(roots)


def serve(dsn: str) -> ServerProcess:
    return ServerProcess(env={"MCP_SQL_DSN": dsn, "MCP_METRICS_ENABLED": "false"})


def test_verify_full_with_the_ca_serves_over_tls(tls_cluster: TlsCluster) -> None:
    with serve(tls_cluster.dsn()) as server:
        server.initialize()
        result = server.call_tool("read_only_sql", {"sql": "SELECT count(*) FROM docs.pages"})
        assert result["structuredContent"]["rows"] == [[30]]
        with psycopg.connect(tls_cluster.cluster.admin_dsn, autocommit=True) as admin:
            sessions = admin.execute(
                "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)"
                " WHERE a.application_name = %s",
                (APPLICATION_NAME,),
            ).fetchall()
        assert server.stop() == 0
    assert sessions
    assert all(ssl for (ssl,) in sessions)


def assert_refused_naming_no_dsn_part(dsn: str, cause: str) -> None:
    with serve(dsn) as server:
        assert server.wait(timeout=30) == EXIT_REFUSED
    text = server.stderr_text()
    assert "refusing to start" in text
    assert cause in text
    for key, value in conninfo_to_dict(dsn).items():
        if key not in {"sslmode", "connect_timeout"}:
            assert str(value) not in text, key


def test_a_certificate_for_another_host_name_is_refused_at_start_up(tls_cluster: TlsCluster) -> None:
    assert_refused_naming_no_dsn_part(
        tls_cluster.dsn(host="wrong-name.mcp-suite.test"), "not issued for the host name"
    )


def test_a_missing_root_certificate_is_refused_at_start_up(tls_cluster: TlsCluster) -> None:
    missing = tls_cluster.root.parent / "no-such-dir" / "root.crt"
    assert_refused_naming_no_dsn_part(tls_cluster.dsn(sslrootcert=str(missing)), "does not exist")


def test_a_certificate_from_another_ca_is_refused_at_start_up(tls_cluster: TlsCluster) -> None:
    assert_refused_naming_no_dsn_part(
        tls_cluster.dsn(sslrootcert=str(tls_cluster.other_root)), "not signed by the root certificate"
    )


def test_without_verification_a_down_server_is_not_a_tls_refusal(tls_cluster: TlsCluster) -> None:
    # sslmode=require does not verify: a failed connection is "unavailable", the server starts.
    with serve(tls_cluster.dsn(sslmode="require", port="1")) as server:
        server.initialize()
        assert server.stop() == 0
    assert "at start-up" in server.stderr_text()
    assert "calls get database-unavailable" in server.stderr_text()


def test_check_role_refuses_the_same_certificate_the_same_way(tls_cluster: TlsCluster) -> None:
    dsn = tls_cluster.dsn(host="wrong-name.mcp-suite.test")
    refused = check_role(dsn)
    assert refused.returncode == EXIT_REFUSED
    assert refused.stdout == ""  # a refusal to audit is a JSON line on stderr, like the CLI's others
    (line,) = (json.loads(text) for text in refused.stderr.splitlines())
    assert (line["level"], line["exit_status"]) == ("critical", EXIT_REFUSED)
    assert "not issued for the host name" in line["msg"]
    assert "wrong-name" not in refused.stdout + refused.stderr
    assert check_role(tls_cluster.dsn()).returncode == 0
