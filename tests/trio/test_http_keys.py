"""The issuer's key set as the token verifier keeps it: fetched once, kept, fetched again on an
unknown `kid` or when old, and never more than once per refresh interval, even when it fails. And
the tokens it keeps: a signature that verified is not checked again under the same key set, but the
claims are, every time. Faults come through the verifier's public `fetch` seam; time is a mock
clock (and a wall clock the test sets), moved by the test."""

from __future__ import annotations

import time
from typing import Any

import pytest
import trio
from joserfc.jwk import ECKey, KeySet

from mcp_suite.protocol.authz import TokenRejectedError
from mcp_suite.runtime.http_auth import KeysUnavailableError, TokenVerifier
from mcp_suite.settings import Settings
from tests.support.issuer import TestIssuer

RESOURCE = "http://127.0.0.1/mcp"


class Keys:
    """A fetch function over a key list the test changes; counts its calls; fails when told."""

    def __init__(self, *keys: ECKey) -> None:
        self.keys: list[Any] = list(keys)
        self.calls = 0
        self.failing = False

    def __call__(self, url: str, timeout_s: float, max_bytes: int) -> dict[str, Any]:
        self.calls += 1
        if self.failing:
            raise OSError("connection refused")
        return dict(KeySet(self.keys).as_dict(private=False))


class WallClock:
    """The verifier's wall clock (a token's `exp` and `nbf`), set by the test."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def _verifier(
    fetch: Keys, issuer: TestIssuer, wall_clock: WallClock | None = None, **overrides: Any
) -> TokenVerifier:
    settings = Settings(
        http_resource_uri=RESOURCE,
        http_issuer=issuer.issuer,
        http_jwks_url=issuer.jwks_url,
        **{"http_jwks_refresh_min_s": 30, "http_jwks_max_age_s": 3_600, **overrides},
    )
    return TokenVerifier(settings, fetch=fetch, wall_clock=wall_clock or time.time)


@pytest.fixture
def issuer() -> TestIssuer:
    return TestIssuer(1)  # signs only: its keys reach the verifier through the fetch seam


async def test_keys_are_fetched_once_and_kept(issuer: TestIssuer, mock_clock: trio.testing.MockClock) -> None:
    keys = Keys(issuer.key)
    verifier = _verifier(keys, issuer)
    for _ in range(3):
        assert (await verifier.verify(issuer.token(RESOURCE))).subject == "alice"
    assert keys.calls == 1
    mock_clock.jump(3_601)  # past the maximum age
    await verifier.verify(issuer.token(RESOURCE))
    assert keys.calls == 2


async def test_an_unknown_kid_refetches_at_most_once_per_interval(
    issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    rotated = ECKey.generate_key("P-256", parameters={"kid": "k2"})
    keys = Keys(issuer.key)
    verifier = _verifier(keys, issuer)
    await verifier.verify(issuer.token(RESOURCE))
    keys.keys.append(rotated)
    with pytest.raises(TokenRejectedError):
        await verifier.verify(issuer.token(RESOURCE, key=rotated))  # within the interval: no fetch
    assert keys.calls == 1
    mock_clock.jump(30)
    assert (await verifier.verify(issuer.token(RESOURCE, key=rotated))).subject == "alice"
    assert keys.calls == 2


async def test_keys_that_cannot_be_fetched_are_tried_once_per_interval_and_never_pass(
    issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    keys = Keys(issuer.key)
    keys.failing = True
    verifier = _verifier(keys, issuer)
    for _ in range(5):
        with pytest.raises(KeysUnavailableError):
            await verifier.verify(issuer.token(RESOURCE))
    assert keys.calls == 1
    mock_clock.jump(30)
    keys.failing = False
    assert (await verifier.verify(issuer.token(RESOURCE))).subject == "alice"
    assert keys.calls == 2
    # Once fetched, a failed refresh keeps the keys it had.
    keys.failing = True
    mock_clock.jump(3_601)
    assert (await verifier.verify(issuer.token(RESOURCE))).subject == "alice"
    assert keys.calls == 3


async def test_a_key_set_holds_at_most_32_keys(
    issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    many = [ECKey.generate_key("P-256", parameters={"kid": f"x{i}"}) for i in range(40)]
    keys = Keys(*many, issuer.key)  # the issuer's key is the 41st: not kept
    verifier = _verifier(keys, issuer)
    with pytest.raises(TokenRejectedError):
        await verifier.verify(issuer.token(RESOURCE))
    assert (await verifier.verify(issuer.token(RESOURCE, key=many[0]))).subject == "alice"


async def test_a_token_that_is_no_jwt_or_uses_no_asymmetric_algorithm_is_rejected(
    issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    from joserfc import jwt
    from joserfc.jwk import OctKey

    verifier = _verifier(Keys(issuer.key), issuer)
    for token in ("not-a-jwt", "a.b.c", "é.é.é"):
        with pytest.raises(TokenRejectedError):
            await verifier.verify(token)
    secret = OctKey.generate_key(256, parameters={"kid": "k1"})
    claims = {"iss": issuer.issuer, "aud": RESOURCE, "sub": "x", "exp": 4_000_000_000}
    hs256 = jwt.encode({"alg": "HS256", "kid": "k1"}, claims, secret)
    with pytest.raises(TokenRejectedError):
        await verifier.verify(hs256)


async def test_a_verified_signature_is_not_checked_again_but_the_claims_are(
    issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    wall = WallClock()
    verifier = _verifier(Keys(issuer.key), issuer, wall)
    token = issuer.token(RESOURCE, expires_in=60)
    for _ in range(3):
        assert (await verifier.verify(token)).subject == "alice"
    assert verifier.signature_checks == 1
    # Past its expiry (and the leeway), the kept token is refused like any other, and dropped.
    wall.now += 60 + 30 + 1
    with pytest.raises(TokenRejectedError, match="expired"):
        await verifier.verify(token)
    with pytest.raises(TokenRejectedError, match="expired"):
        await verifier.verify(token)
    assert verifier.signature_checks == 2  # no longer kept: its signature was checked again


async def test_a_forged_copy_of_a_kept_token_is_still_refused(
    issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    verifier = _verifier(Keys(issuer.key), issuer)
    token = issuer.token(RESOURCE)
    await verifier.verify(token)
    head, payload, signature = token.split(".")
    forged = f"{head}.{payload}.{signature[:-4]}AAAA"
    with pytest.raises(TokenRejectedError, match="signature"):
        await verifier.verify(forged)
    other = ECKey.generate_key("P-256", parameters={"kid": "k1"})  # same kid, not the issuer's key
    with pytest.raises(TokenRejectedError, match="signature"):
        await verifier.verify(issuer.token(RESOURCE, key=other))


async def test_a_new_key_set_checks_every_kept_token_again(
    issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    keys = Keys(issuer.key)
    verifier = _verifier(keys, issuer)
    token = issuer.token(RESOURCE)
    await verifier.verify(token)
    # The issuer withdraws the key (rotated out); once the key set is fetched again, the token it
    # signed is refused, though its signature verified before.
    rotated = ECKey.generate_key("P-256", parameters={"kid": "k2"})
    keys.keys = [rotated]
    mock_clock.jump(3_601)
    with pytest.raises(TokenRejectedError, match="signature"):
        await verifier.verify(token)
    assert keys.calls == 2
    assert (await verifier.verify(issuer.token(RESOURCE, key=rotated))).subject == "alice"


async def test_the_cache_keeps_the_most_recently_used_tokens_up_to_its_size(
    issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    verifier = _verifier(Keys(issuer.key), issuer, http_token_cache_size=2)
    a, b, c = (issuer.token(RESOURCE, sub=name) for name in ("a", "b", "c"))
    for token in (a, b, a, c):  # c pushes out b, the least recently used
        await verifier.verify(token)
    assert verifier.signature_checks == 3
    await verifier.verify(a)
    assert verifier.signature_checks == 3
    assert (await verifier.verify(b)).subject == "b"
    assert verifier.signature_checks == 4


async def test_a_cache_of_size_0_checks_every_signature(
    issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    verifier = _verifier(Keys(issuer.key), issuer, http_token_cache_size=0)
    token = issuer.token(RESOURCE)
    for _ in range(3):
        await verifier.verify(token)
    assert verifier.signature_checks == 3
