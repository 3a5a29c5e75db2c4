"""`tls_refusal` off the happy path: when it must say nothing (not verifying, a Unix socket, a server
without TLS, nobody listening) and what it says about a missing root file, from the DSN or from
libpq's environment variables, without naming any part of the DSN. The refused certificates
themselves are proven against a real TLS cluster (tests/pg/test_deploy_tls.py)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_suite.tools.sql.engine.role_audit.tls import tls_refusal
from tests.support.devdb.tls import CertificateAuthority


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return CertificateAuthority().write_root(tmp_path / "root.crt")


@pytest.fixture
def no_tls_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server that answers the SSLRequest with 'N' (no TLS here), as PostgreSQL with ssl=off;
    yields its port and what it received."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    received: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            received.append(conn.recv(8))
            conn.sendall(b"N")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port, received
    listener.close()
    thread.join(timeout=5)


def test_without_verification_there_is_never_a_refusal(tmp_path: Path) -> None:
    for mode in ("disable", "allow", "prefer", "require"):
        dsn = f"host=127.0.0.1 port=1 sslmode={mode} sslrootcert={tmp_path / 'missing.crt'}"
        assert tls_refusal(dsn, timeout_s=1) is None


def test_a_missing_root_file_is_named_by_its_role_not_its_path(tmp_path: Path) -> None:
    missing = tmp_path / "secret-dir" / "ca.pem"
    message = tls_refusal(f"host=db.example port=5432 sslmode=verify-full sslrootcert={missing}", timeout_s=1)
    assert message is not None
    assert "does not exist" in message
    assert "sslmode=verify-full in MCP_SQL_DSN" in message  # the setting to fix, by name
    for part in ("secret-dir", "ca.pem", "db.example", "5432"):
        assert part not in message


def test_libpq_environment_variables_count(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PGSSLMODE", "verify-ca")
    monkeypatch.setenv("PGSSLROOTCERT", str(tmp_path / "nowhere.crt"))
    message = tls_refusal("host=127.0.0.1 port=1", timeout_s=1)
    assert message is not None
    assert "sslmode=verify-ca in PGSSLMODE" in message  # not in MCP_SQL_DSN: the variable is named


def test_a_unix_socket_is_not_a_tls_matter(root: Path) -> None:
    assert tls_refusal(f"host=/run/postgresql sslmode=verify-full sslrootcert={root}", timeout_s=1) is None


def test_nobody_listening_is_not_a_refusal(root: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        port = placeholder.getsockname()[1]
    dsn = f"host=127.0.0.1 port={port} sslmode=verify-full sslrootcert={root}"
    assert tls_refusal(dsn, timeout_s=1) is None


def test_a_server_without_tls_is_libpqs_to_report(root: Path, no_tls_server: tuple[int, list[bytes]]) -> None:
    port, received = no_tls_server
    dsn = f"host=127.0.0.1 port={port} sslmode=verify-full sslrootcert={root}"
    assert tls_refusal(dsn, timeout_s=2) is None
    assert received == [b"\x00\x00\x00\x08\x04\xd2\x16\x2f"]  # the SSLRequest, then it gave up
