"""Bearer tokens of the HTTP transport: the issuer's key set (fetched, cached, refreshed) and the
signature check (joserfc); the claims are decided by `protocol.authz.check_claims`.

Limits: the key set is fetched with a timeout and a size cap, holds at most `MAX_KEYS` keys, is
kept `MCP_HTTP_JWKS_MAX_AGE_S` and fetched again on an unknown `kid` at most once per
`MCP_HTTP_JWKS_REFRESH_MIN_S`; one fetch at a time. The signatures of the last
`MCP_HTTP_TOKEN_CACHE_SIZE` tokens that verified are not checked again while the key set is the one
that verified them (a token is the same bytes, so its signature checks the same); their claims are
(expiry, audience, issuer), on every request. Security: the token is never logged nor passed on;
only asymmetric algorithms are accepted (never `none`, never a shared secret).
"""

from __future__ import annotations

import collections
import json
import time
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any, Final

import trio
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from mcp_suite.protocol.authz import Identity, TokenRejectedError, check_claims
from mcp_suite.runtime.request_log import logger
from mcp_suite.settings import Settings

__all__ = ["ALGORITHMS", "MAX_KEYS", "KeysUnavailableError", "TokenVerifier", "fetch_jwks"]

# Asymmetric signatures only: the resource server holds no secret of the issuer.
ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")
MAX_KEYS: Final = 32

JwksFetcher = Callable[[str, float, int], dict[str, Any]]


class KeysUnavailableError(Exception):
    """The issuer's key set could not be fetched and none is cached: no token can be checked."""


def fetch_jwks(url: str, timeout_s: float, max_bytes: int) -> dict[str, Any]:
    """Blocking: GET the key set at `url`, at most `max_bytes`, within `timeout_s` per read."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310  # http(s) only: settings
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310  # as above
        data = response.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"the key set is larger than {max_bytes} bytes")
    document = json.loads(data)
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("the key set is not a JWKS document")  # noqa: TRY004  # a bad document, as json's
    return document


class TokenVerifier:
    """Verifies bearer JWTs for one resource against one issuer's key set."""

    def __init__(
        self,
        settings: Settings,
        *,
        fetch: JwksFetcher = fetch_jwks,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        assert settings.http_issuer is not None
        assert settings.http_resource_uri is not None
        assert settings.http_jwks_url is not None
        self._settings = settings
        self._issuer = settings.http_issuer
        self._audience = settings.http_resource_uri
        self._url = settings.http_jwks_url
        self._fetch = fetch
        self._keys: KeySet | None = None
        self._kids: frozenset[str] = frozenset()
        self._fetched_at = -float("inf")  # trio clock
        self._lock = trio.Lock()
        self._wall_clock = wall_clock
        # Tokens whose signature verified, least recently used first: token -> (the key set that
        # verified it, its kid, its claims). Emptied whenever the key set is replaced.
        self._verified: collections.OrderedDict[str, tuple[KeySet, str | None, Mapping[str, Any]]] = (
            collections.OrderedDict()
        )
        self.fetches = 0
        self.signature_checks = 0

    async def verify(self, token: str) -> Identity:
        """Who the token names, or `TokenRejectedError` (401); `KeysUnavailableError` (503)."""
        cached = self._verified.get(token)
        if cached is not None:
            keys, kid, claims = cached
            # The same refresh rules as a first check; a refresh replaces the key set (and empties
            # the cache), so the signature is then checked again below.
            if await self._key_set(kid) is keys:
                if token in self._verified:  # not pushed out by other tokens meanwhile
                    self._verified.move_to_end(token)
                return self._check_claims(token, claims)
        try:
            header = jws.extract_compact(token.encode("ascii")).protected
        except (JoseError, ValueError, UnicodeError) as exc:
            raise TokenRejectedError("the token is not a signed JWT") from exc
        kid = header.get("kid")
        kid = kid if isinstance(kid, str) else None
        keys = await self._key_set(kid)
        self.signature_checks += 1
        try:
            verified = jwt.decode(token, keys, algorithms=list(ALGORITHMS))
        except JoseError as exc:
            raise TokenRejectedError(f"the token's signature does not verify ({exc.error})") from exc
        identity = self._check_claims(token, verified.claims)
        size = self._settings.http_token_cache_size
        if size > 0:
            self._verified[token] = (keys, kid, verified.claims)
            while len(self._verified) > size:
                self._verified.popitem(last=False)
        return identity

    def _check_claims(self, token: str, claims: Mapping[str, Any]) -> Identity:
        try:
            return check_claims(
                claims,
                issuer=self._issuer,
                audience=self._audience,
                now=self._wall_clock(),
                leeway_s=self._settings.http_clock_leeway_s,
            )
        except TokenRejectedError:
            self._verified.pop(token, None)  # expired (or never valid): not kept
            raise

    async def _key_set(self, kid: str | None) -> KeySet:
        async with self._lock:
            now = trio.current_time()
            age = now - self._fetched_at
            due = age >= self._settings.http_jwks_refresh_min_s
            if self._keys is None:
                refresh = due  # none yet: try again, but not on every request
            else:
                expired = age >= self._settings.http_jwks_max_age_s
                refresh = expired or (kid is not None and kid not in self._kids and due)
            if refresh:
                await self._refresh(now)
            else:
                await trio.lowlevel.checkpoint()
            if self._keys is None:
                raise KeysUnavailableError("the issuer's key set cannot be fetched")
            return self._keys

    async def _refresh(self, now: float) -> None:
        settings = self._settings
        self._fetched_at = now  # a failed fetch waits out the refresh interval too
        self.fetches += 1
        try:
            with trio.fail_after(settings.http_jwks_timeout_s * 2):
                document = await trio.to_thread.run_sync(
                    self._fetch,
                    self._url,
                    settings.http_jwks_timeout_s,
                    settings.http_jwks_max_bytes,
                    abandon_on_cancel=True,
                )
            keys = [key for key in document["keys"] if isinstance(key, dict)]
            key_set = KeySet.import_key_set({"keys": keys[:MAX_KEYS]})
        except (OSError, ValueError, KeyError, JoseError, trio.TooSlowError) as exc:
            # Kept: the keys fetched before, if any (they are still the issuer's).
            logger.warning("the issuer's key set could not be fetched: %s", type(exc).__name__)
            return  # noqa: ASYNC910  # the fetch in a thread was awaited (or was cancelled there)
        if len(keys) > MAX_KEYS:
            logger.warning("the issuer's key set holds %d keys; the first %d are used", len(keys), MAX_KEYS)
            keys = keys[:MAX_KEYS]
        self._keys = key_set
        self._verified.clear()  # what the old key set verified is checked again against the new one
        self._kids = frozenset(str(key["kid"]) for key in keys if "kid" in key)
        logger.info("the issuer's key set: %d key(s)", len(keys))
