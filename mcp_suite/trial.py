"""`mcp-suite try-http`: the team endpoint on this machine, with an issuer of its own, for a trial.

Owns the trial's issuer: a signing key made for this process alone (never written anywhere), the
key set the server checks tokens against (handed to it directly: no key-set URL is fetched), and
the token for every scope the server serves. It refuses any address but loopback, so the token,
which any process of this machine could read from the terminal, reaches nothing beyond it.
No I/O: the CLI prints the token and serves (docs/operations/remote.md, "Trying it").
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from joserfc import jwt
from joserfc.jwk import ECKey, KeySet

from mcp_suite.settings import LOOPBACK_HOSTS, Settings, SettingsError

__all__ = ["TRIAL_SUBJECT", "TRIAL_TOKEN_S", "Trial", "open_trial"]

TRIAL_SUBJECT: Final = "trial"
# A trial's token lasts a working day; a new run makes a new key, and every older token is void.
TRIAL_TOKEN_S: Final = 8 * 3_600
_KID: Final = "trial"


@dataclass(frozen=True, slots=True)
class Trial:
    """The settings to serve with (the trial's issuer in place), the key-set fetcher that hands the
    server the trial's public key, and `mint` for the token."""

    settings: Settings
    fetch: Callable[[str, float, int], dict[str, Any]]
    _key: ECKey = dataclasses.field(repr=False)

    def mint(self, scopes: Iterable[str], *, now: float | None = None) -> str:
        """A token for `scopes` (the scopes of what is served), its audience the endpoint, valid
        for TRIAL_TOKEN_S."""
        issued = int(time.time() if now is None else now)
        claims = {
            "iss": self.settings.http_issuer,
            "aud": self.settings.http_resource_uri,
            "sub": TRIAL_SUBJECT,
            "scope": " ".join(dict.fromkeys(scopes)),
            "iat": issued,
            "exp": issued + TRIAL_TOKEN_S,
        }
        return jwt.encode({"alg": "ES256", "kid": _KID, "typ": "at+jwt"}, claims, self._key)


def open_trial(settings: Settings) -> Trial:
    """A trial of `settings`' endpoint: a fresh key and the issuer `http://<host>:<port>/trial`.

    Raises `SettingsError` for an address that is not loopback, or port 0 (the token names the
    endpoint, so its port must be known before the server listens).
    """
    if settings.http_host not in LOOPBACK_HOSTS:
        raise SettingsError(
            f"try-http serves loopback only (MCP_HTTP_HOST is {settings.http_host!r}): use 127.0.0.1, "
            "::1 or localhost; a shared endpoint takes an issuer of its own (MCP_HTTP_ISSUER)"
        )
    if settings.http_port == 0:
        raise SettingsError("try-http needs a port of its own (MCP_HTTP_PORT is 0): its token names it")
    host = f"[{settings.http_host}]" if ":" in settings.http_host else settings.http_host
    origin = f"http://{host}:{settings.http_port}"
    issuer = origin + "/trial"
    key = ECKey.generate_key("P-256", parameters={"kid": _KID, "use": "sig", "alg": "ES256"})
    public: dict[str, Any] = dict(KeySet([key]).as_dict(private=False))

    def fetch(_url: str, _timeout_s: float, _max_bytes: int) -> dict[str, Any]:
        return public

    served = dataclasses.replace(
        settings,
        http_auth="jwt",
        http_resource_uri=origin + settings.http_path,
        http_issuer=issuer,
        # Never fetched (`fetch` answers): named so the settings read as a complete issuer.
        http_jwks_url=issuer + "/jwks.json",
    )
    return Trial(settings=served, fetch=fetch, _key=key)
