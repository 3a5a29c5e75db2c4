"""The issuer's key set as the token verifier keeps it: fetched once, kept, fetched again on an
unknown `kid` or when old, and never more than once per refresh interval, even when it fails.
Faults come through the verifier's public `fetch` seam; time is a mock clock, moved by the test."""

from __future__ import annotations

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


def _verifier(fetch: Keys, issuer: TestIssuer, **overrides: Any) -> TokenVerifier:
    settings = Settings(
        http_resource_uri=RESOURCE,
        http_issuer=issuer.issuer,
        http_jwks_url=issuer.jwks_url,
        **{"http_jwks_refresh_min_s": 30, "http_jwks_max_age_s": 3_600, **overrides},
    )
    return TokenVerifier(settings, fetch=fetch)


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
