"""A token issuer made in the test: its own signing keys, its JWKS served on loopback by a stdlib
HTTP server in a thread, and tokens signed on demand (with any claim wrong on purpose)."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from joserfc import jwt
from joserfc.jwk import ECKey, KeySet

__all__ = ["TestIssuer", "free_port", "open_issuer"]


def free_port() -> int:
    """A loopback port free right now (the server that takes it is started right after)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TestIssuer:
    __test__ = False  # not a test class

    def __init__(self, port: int, *, issuer: str | None = None) -> None:
        """An issuer on loopback `port`, or named `issuer` where its JWKS is served elsewhere (the
        container smoke test serves it from a container, as `http://issuer:8080`)."""
        self.key = ECKey.generate_key("P-256", parameters={"kid": "k1", "use": "sig", "alg": "ES256"})
        self.published: list[ECKey] = [self.key]
        self.issuer = issuer or f"http://127.0.0.1:{port}"
        self.jwks_url = f"{self.issuer}/jwks.json"
        self.fetches = 0
        # Asked for the key set (counted as the request arrives), and a gate the test may close:
        # the key set is sent only once it is open (an issuer that is slow for as long as the test says).
        self.asked = 0
        self.gate = threading.Event()
        self.gate.set()

    def jwks(self) -> bytes:
        self.fetches += 1
        return json.dumps(KeySet(list(self.published)).as_dict(private=False)).encode()

    def token(
        self,
        audience: str,
        *,
        sub: str = "alice",
        scope: str = "metrics:read",
        expires_in: float = 300,
        key: ECKey | None = None,
        **claims: Any,
    ) -> str:
        key = key or self.key
        now = int(time.time())
        payload = {"iss": self.issuer, "aud": audience, "sub": sub, "scope": scope, "iat": now}
        payload["exp"] = int(now + expires_in)
        payload.update(claims)
        header = {"alg": "ES256", "kid": key.kid or "k1", "typ": "at+jwt"}
        return jwt.encode(header, payload, key)


@contextmanager
def open_issuer() -> Iterator[TestIssuer]:
    """An issuer whose JWKS is served on a loopback port until the block ends."""
    holder: dict[str, TestIssuer] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/jwks.json":
                self.send_error(404)
                return
            holder["issuer"].asked += 1
            holder["issuer"].gate.wait(30)
            body = holder["issuer"].jwks()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # the stdlib's signature
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    issuer = TestIssuer(int(server.server_address[1]))
    holder["issuer"] = issuer
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
