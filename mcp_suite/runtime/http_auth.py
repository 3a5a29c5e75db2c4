"""Bearer tokens of the HTTP transport: the issuer's key set (fetched, cached, refreshed) and the
signature check (joserfc); the claims are decided by `protocol.authz.check_claims`.

Limits: the key set is fetched with a timeout and a size cap, holds at most `MAX_KEYS` keys, is
kept `MCP_HTTP_JWKS_MAX_AGE_S` and fetched again on an unknown `kid` at most once per
`MCP_HTTP_JWKS_REFRESH_MIN_S` (counted from the end of the last fetch). One fetch at a time, in a
task of the verifier's nursery, never on a request's path: a token whose key is cached is checked
at once, whatever is being fetched; a request that needs the fetch (no keys yet, an unknown `kid`)
waits for it at most `MCP_HTTP_JWKS_WAIT_S`. The fetch's thread is never abandoned: it ends by its
own deadline, and the next fetch starts only after it has. The signatures of the last
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
from dataclasses import dataclass
from typing import Any, Final

import trio
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from mcp_suite.protocol.authz import Identity, TokenRejectedError, check_claims
from mcp_suite.runtime.log_sink import logger
from mcp_suite.settings import Settings

__all__ = [
    "ALGORITHMS",
    "MAX_KEYS",
    "KeysUnavailableError",
    "TokenVerifier",
    "TokenVerifierStatistics",
    "fetch_jwks",
]

# Asymmetric signatures only: the resource server holds no secret of the issuer.
ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")
MAX_KEYS: Final = 32

JwksFetcher = Callable[[str, float, int], dict[str, Any]]


class KeysUnavailableError(Exception):
    """The issuer's key set could not be fetched and none is cached: no token can be checked."""


def fetch_jwks(
    url: str, timeout_s: float, max_bytes: int, *, clock: Callable[[], float] = time.monotonic
) -> dict[str, Any]:
    """Blocking: GET the key set at `url`, at most `max_bytes`, within `timeout_s` per read and the
    whole body within `timeout_s` of the answer's headers (a peer that sends a byte now and then
    does not keep the thread: `TimeoutError`)."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310  # http(s) only: settings
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310  # as above
        deadline = clock() + timeout_s
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = response.read1(max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if clock() > deadline:
                raise TimeoutError(f"the key set did not arrive within {timeout_s:g} s")
        data = b"".join(chunks)
    if len(data) > max_bytes:
        raise ValueError(f"the key set is larger than {max_bytes} bytes")
    document = json.loads(data)
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("the key set is not a JWKS document")  # noqa: TRY004  # a bad document, as json's
    return document


@dataclass(frozen=True, slots=True)
class TokenVerifierStatistics:
    """What `TokenVerifier.statistics()` returns: key-set fetches started, signatures checked, and
    whether a fetch is in progress now."""

    fetches: int
    signature_checks: int
    fetching: bool


class TokenVerifier:
    """Verifies bearer JWTs for one resource against one issuer's key set; its fetches run in
    `nursery` (the server's)."""

    def __init__(
        self,
        settings: Settings,
        nursery: trio.Nursery,
        *,
        fetch: JwksFetcher = fetch_jwks,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        assert settings.http_issuer is not None
        assert settings.http_resource_uri is not None
        assert settings.http_jwks_url is not None
        self._settings = settings
        self._nursery = nursery
        self._issuer = settings.http_issuer
        self._audience = settings.http_resource_uri
        self._url = settings.http_jwks_url
        self._fetch = fetch
        self._keys: KeySet | None = None
        self._kids: frozenset[str] = frozenset()
        self._fetched_at = -float("inf")  # trio clock: when the last fetch ended
        self._asked_at = -float("inf")  # trio clock: when the last fetch started
        self._fetched: trio.Event | None = None  # set when the fetch in progress ends; None: none
        self._wall_clock = wall_clock
        # Tokens whose signature the current key set verified, least recently used first: token ->
        # its claims. Emptied whenever the key set is replaced.
        self._verified: collections.OrderedDict[str, Mapping[str, Any]] = collections.OrderedDict()
        self._fetches = 0
        self._signature_checks = 0

    def statistics(self) -> TokenVerifierStatistics:
        return TokenVerifierStatistics(
            fetches=self._fetches, signature_checks=self._signature_checks, fetching=self._fetched is not None
        )

    async def wait_fetched(self) -> None:
        """Return once no fetch is in progress (at once when none is)."""
        if self._fetched is None:
            await trio.lowlevel.checkpoint()
            return
        await self._fetched.wait()

    async def verify(self, token: str) -> Identity:
        """Who the token names, or `TokenRejectedError` (401); `KeysUnavailableError` (503).

        Limits: waits for a key-set fetch only when the token's key is not cached, and then at
        most MCP_HTTP_JWKS_WAIT_S.
        """
        cached = self._verified.get(token)
        if cached is not None:
            self._refresh_when_old()
            self._verified.move_to_end(token)
            await trio.lowlevel.checkpoint()
            return self._check_claims(token, cached)
        try:
            header = jws.extract_compact(token.encode("ascii")).protected
        except (JoseError, ValueError, UnicodeError) as exc:
            raise TokenRejectedError("the token is not a signed JWT") from exc
        kid = header.get("kid")
        kid = kid if isinstance(kid, str) else None
        keys = await self._key_set(kid)
        self._signature_checks += 1
        try:
            verified = jwt.decode(token, keys, algorithms=list(ALGORITHMS))
        except JoseError as exc:
            raise TokenRejectedError(f"the token's signature does not verify ({exc.error})") from exc
        identity = self._check_claims(token, verified.claims)
        size = self._settings.http_token_cache_size
        if size > 0:  # `keys` is the current key set: nothing was awaited since `_key_set`
            self._verified[token] = verified.claims
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

    def _refresh_when_old(self) -> None:
        """Start a fetch when the cached key set has reached its maximum age (not waited for)."""
        if trio.current_time() - self._asked_at >= self._settings.http_jwks_max_age_s:
            self._start_fetch()

    def _start_fetch(self) -> None:
        if self._fetched is None:
            self._fetched = trio.Event()
            self._asked_at = trio.current_time()
            self._fetches += 1
            self._nursery.start_soon(self._refresh)

    async def _key_set(self, kid: str | None) -> KeySet:
        """The key set to check a token naming `kid` against: the cached one at once when it holds
        `kid` (or the token names none); else after a fetch, waited for at most MCP_HTTP_JWKS_WAIT_S."""
        settings = self._settings
        if self._keys is not None and (kid is None or kid in self._kids):
            self._refresh_when_old()
            await trio.lowlevel.checkpoint()
            return self._keys
        # No keys yet, or a kid they lack (a key rotation, or anyone's made-up kid): a fetch, but
        # at most one per interval after the last one ended, so that unauthenticated requests
        # cannot keep the issuer (and a thread) busy.
        if (
            self._fetched is None
            and trio.current_time() - self._fetched_at >= settings.http_jwks_refresh_min_s
        ):
            self._start_fetch()
        fetched = self._fetched
        if fetched is not None:
            with trio.move_on_after(settings.http_jwks_wait_s):
                await fetched.wait()
            if not fetched.is_set():
                raise KeysUnavailableError("the issuer's key set did not arrive in time")
        else:
            await trio.lowlevel.checkpoint()
        if self._keys is None:
            raise KeysUnavailableError("the issuer's key set cannot be fetched")
        return self._keys

    async def _refresh(self) -> None:  # noqa: ASYNC910  # the fetch in a thread is awaited, unless it failed before
        """One fetch, in the verifier's nursery. Cancellation: the thread is not abandoned (it
        ends by the fetch's own deadline), so no fetch outlives this task."""
        settings = self._settings
        try:
            try:
                document = await trio.to_thread.run_sync(
                    self._fetch, self._url, settings.http_jwks_timeout_s, settings.http_jwks_max_bytes
                )
                keys = [key for key in document["keys"] if isinstance(key, dict)]
                key_set = KeySet.import_key_set({"keys": keys[:MAX_KEYS]})
            except Exception as exc:  # noqa: BLE001  # any failure keeps the old keys; the server serves on
                # Kept: the keys fetched before, if any (they are still the issuer's).
                logger.warning("the issuer's key set could not be fetched: %s", type(exc).__name__)
            else:
                self._replace_keys(keys, key_set)
        finally:
            # A failed fetch waits out the refresh interval too.
            self._fetched_at = trio.current_time()
            fetched, self._fetched = self._fetched, None
            assert fetched is not None
            fetched.set()

    def _replace_keys(self, keys: list[dict[str, Any]], key_set: KeySet) -> None:
        if len(keys) > MAX_KEYS:
            logger.warning("the issuer's key set holds %d keys; the first %d are used", len(keys), MAX_KEYS)
            keys = keys[:MAX_KEYS]
        self._keys = key_set
        self._verified.clear()  # what the old key set verified is checked again against the new one
        self._kids = frozenset(str(key["kid"]) for key in keys if "kid" in key)
        logger.info("the issuer's key set: %d key(s)", len(keys))
