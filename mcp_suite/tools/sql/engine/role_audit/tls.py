"""Why a DSN that demands a verified server certificate could not connect, if TLS is the reason.

libpq reports a refused certificate only as text (and names the host in it). When the start-up
connection fails and the DSN's `sslmode` is `verify-ca` or `verify-full`, `tls_refusal` finds out by
structure instead: the root certificate file is missing, or Python's own TLS handshake against the
server, with the same root and host name, raises `ssl.SSLCertVerificationError`. A certificate
refused is a configuration error that waiting will not fix, so the server refuses to start. The
message never holds any part of the DSN (no host, port, user, database or file name).
Sync socket and ssl I/O only; imported on that failure path alone.
"""

from __future__ import annotations

import os
import socket
import ssl
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from psycopg.conninfo import conninfo_to_dict

__all__ = ["tls_refusal"]

_VERIFYING: Final = frozenset({"verify-ca", "verify-full"})
_SSL_REQUEST: Final = struct.pack("!ii", 8, 80877103)  # the protocol's SSLRequest message
_ENV: Final = {
    "sslmode": "PGSSLMODE",
    "sslrootcert": "PGSSLROOTCERT",
    "host": "PGHOST",
    "hostaddr": "PGHOSTADDR",
    "port": "PGPORT",
}
# OpenSSL's verify results (x509_vfy.h) that mean "this certificate is not for that host".
_NAME_MISMATCH: Final = frozenset({62, 64})  # X509_V_ERR_HOSTNAME_MISMATCH, _IP_ADDRESS_MISMATCH
_EXPIRED: Final = frozenset({9, 10})  # X509_V_ERR_CERT_NOT_YET_VALID, _CERT_HAS_EXPIRED


def _param(params: Mapping[str, object], key: str) -> str:
    value = params.get(key) or os.environ.get(_ENV[key]) or ""
    return str(value)


def _prefix(mode: str, source: str) -> str:
    return f"read_only_sql: the database server's TLS certificate was refused (sslmode={mode} in {source}): "


def tls_refusal(dsn: str, *, timeout_s: float) -> str | None:
    """The operator's message when TLS verification is why `dsn` cannot connect, else None.

    Limits: one TCP connection and one handshake, each bounded by `timeout_s`.
    Security: the message names the cause and the fix, never the DSN's values.
    """
    params = conninfo_to_dict(dsn)
    mode = _param(params, "sslmode")
    source = "MCP_SQL_DSN" if params.get("sslmode") else _ENV["sslmode"]  # the setting to fix
    if mode not in _VERIFYING:
        return None
    root = _param(params, "sslrootcert") or str(Path.home() / ".postgresql" / "root.crt")
    if root != "system" and not Path(root).is_file():
        return _prefix(mode, source) + (
            "the root certificate file (sslrootcert, default ~/.postgresql/root.crt) does not exist."
            " Give the CA certificate that signed the server's certificate in sslrootcert."
        )
    host = _param(params, "host").split(",")[0]
    address = _param(params, "hostaddr").split(",")[0] or host
    port_text = _param(params, "port").split(",")[0] or "5432"
    if not host or host.startswith("/") or not port_text.isdigit():
        return None  # a Unix socket never uses TLS; a malformed port is libpq's to report
    try:
        context = ssl.create_default_context(cafile=None if root == "system" else root)
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT  # as lenient as libpq's OpenSSL defaults
        context.check_hostname = mode == "verify-full"
        with socket.create_connection((address, int(port_text)), timeout=timeout_s) as raw:
            raw.sendall(_SSL_REQUEST)
            if raw.recv(1) != b"S":
                return None  # the server does not speak TLS: libpq's own message says so
            with context.wrap_socket(raw, server_hostname=host):
                return None  # verified: something else failed
    except ssl.SSLCertVerificationError as exc:
        return _prefix(mode, source) + _reason(exc.verify_code)
    except (OSError, ValueError):
        return None  # unreachable, an unreadable root file, no TLS: not a refused certificate


def _reason(code: int) -> str:
    if code in _NAME_MISMATCH:
        return (
            "the certificate is not issued for the host name in MCP_SQL_DSN. Connect by a name the"
            " certificate lists, or have the server's certificate list the name you use."
        )
    if code in _EXPIRED:
        return "the certificate has expired or is not yet valid. Renew the server's certificate."
    return (
        "the certificate is not signed by the root certificate in sslrootcert. Give the CA"
        " certificate that signed the server's certificate."
    )
