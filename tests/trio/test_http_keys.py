"""The issuer's key set as the token verifier keeps it: fetched once, kept, fetched again on an
unknown `kid` or when old, and never more than once per refresh interval, even when it fails. And
the tokens it keeps: a signature that verified is not checked again under the same key set, but the
claims are, every time. Faults come through the verifier's public `fetch` seam; time is a mock
clock (and a wall clock the test sets), moved by the test."""

from __future__ import annotations

import base64
import json
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import trio
from joserfc.jwk import ECKey, KeySet

from mcp_suite.protocol.authz import TokenRejectedError
from mcp_suite.runtime.http_auth import (
    JwksFetcher,
    KeysUnavailableError,
    TokenVerifier,
    TokenVerifierStatistics,
)
from mcp_suite.settings import Settings
from tests.support.issuer import TestIssuer

RESOURCE = "http://127.0.0.1/mcp"


class Keys:
    """A fetch function over a key list the test changes; counts its calls; fails when told."""

    def __init__(self, *keys: ECKey) -> None:
        self.keys: list[Any] = list(keys)
        self.calls = 0
        self.failing = False
        self.asked: list[tuple[str, float, int]] = []

    def __call__(self, url: str, timeout_s: float, max_bytes: int) -> dict[str, Any]:
        self.calls += 1
        self.asked.append((url, timeout_s, max_bytes))
        if self.failing:
            raise OSError("connection refused")
        return dict(KeySet(self.keys).as_dict(private=False))


class WallClock:
    """The verifier's wall clock (a token's `exp` and `nbf`), set by the test."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def said(caplog: pytest.LogCaptureFixture) -> Callable[[], list[str]]:
    """What the verifier has logged so far (from INFO up), in order."""
    caplog.set_level(logging.INFO, logger="mcp_suite")
    return lambda: [record.getMessage() for record in caplog.records if record.name == "mcp_suite"]


def _verifier(
    nursery: trio.Nursery,
    fetch: JwksFetcher,
    issuer: TestIssuer,
    wall_clock: WallClock | None = None,
    **overrides: Any,
) -> TokenVerifier:
    settings = Settings(
        http_resource_uri=RESOURCE,
        http_issuer=issuer.issuer,
        http_jwks_url=issuer.jwks_url,
        **{"http_jwks_refresh_min_s": 30, "http_jwks_max_age_s": 3_600, **overrides},
    )
    return TokenVerifier(settings, nursery, fetch=fetch, wall_clock=wall_clock or time.time)


@pytest.fixture
def issuer() -> TestIssuer:
    return TestIssuer(1)  # signs only: its keys reach the verifier through the fetch seam


async def test_keys_are_fetched_once_and_kept(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    keys = Keys(issuer.key)
    verifier = _verifier(nursery, keys, issuer)
    for _ in range(3):
        assert (await verifier.verify(issuer.token(RESOURCE))).subject == "alice"
    assert keys.calls == 1
    mock_clock.jump(3_601)  # past the maximum age: fetched again, not waited for
    await verifier.verify(issuer.token(RESOURCE))
    await verifier.wait_fetched()
    assert keys.calls == 2


async def test_an_unknown_kid_refetches_at_most_once_per_interval(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    rotated = ECKey.generate_key("P-256", parameters={"kid": "k2"})
    keys = Keys(issuer.key)
    verifier = _verifier(nursery, keys, issuer)
    await verifier.verify(issuer.token(RESOURCE))
    keys.keys.append(rotated)
    with pytest.raises(TokenRejectedError):
        await verifier.verify(issuer.token(RESOURCE, key=rotated))  # within the interval: no fetch
    assert keys.calls == 1
    mock_clock.jump(30)
    assert (await verifier.verify(issuer.token(RESOURCE, key=rotated))).subject == "alice"
    assert keys.calls == 2


async def test_keys_that_cannot_be_fetched_are_tried_once_per_interval_and_never_pass(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    keys = Keys(issuer.key)
    keys.failing = True
    verifier = _verifier(nursery, keys, issuer)
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
    await verifier.wait_fetched()
    assert keys.calls == 3
    assert (await verifier.verify(issuer.token(RESOURCE))).subject == "alice"


async def test_a_key_set_holds_at_most_32_keys(
    nursery: trio.Nursery,
    issuer: TestIssuer,
    mock_clock: trio.testing.MockClock,
    said: Callable[[], list[str]],
) -> None:
    many = [ECKey.generate_key("P-256", parameters={"kid": f"x{i}"}) for i in range(40)]
    keys = Keys(*many, issuer.key)  # the issuer's key is the 41st: not kept
    verifier = _verifier(nursery, keys, issuer)
    with pytest.raises(TokenRejectedError):
        await verifier.verify(issuer.token(RESOURCE))
    assert (await verifier.verify(issuer.token(RESOURCE, key=many[0]))).subject == "alice"
    assert said() == [
        "the issuer's key set holds 41 keys; the first 32 are used",
        "the issuer's key set: 32 key(s)",
    ]


async def test_a_key_set_of_exactly_32_keys_is_kept_whole_without_a_warning(
    nursery: trio.Nursery,
    issuer: TestIssuer,
    mock_clock: trio.testing.MockClock,
    said: Callable[[], list[str]],
) -> None:
    many = [ECKey.generate_key("P-256", parameters={"kid": f"x{i}"}) for i in range(31)]
    verifier = _verifier(nursery, Keys(*many, issuer.key), issuer)  # the issuer's key is the 32nd: kept
    assert (await verifier.verify(issuer.token(RESOURCE))).subject == "alice"
    assert said() == ["the issuer's key set: 32 key(s)"]


async def test_a_token_that_is_no_jwt_or_uses_no_asymmetric_algorithm_is_rejected(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    from joserfc import jwt
    from joserfc.jwk import OctKey

    verifier = _verifier(nursery, Keys(issuer.key), issuer)
    for token in ("not-a-jwt", "a.b.c", "é.é.é"):
        # The reason is the client's (the challenge's error_description): said exactly.
        with pytest.raises(TokenRejectedError, match=r"^the token is not a signed JWT$"):
            await verifier.verify(token)
    secret = OctKey.generate_key(256, parameters={"kid": "k1"})
    claims = {"iss": issuer.issuer, "aud": RESOURCE, "sub": "x", "exp": 4_000_000_000}
    hs256 = jwt.encode({"alg": "HS256", "kid": "k1"}, claims, secret)
    with pytest.raises(TokenRejectedError):
        await verifier.verify(hs256)


async def test_a_verified_signature_is_not_checked_again_but_the_claims_are(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    wall = WallClock()
    verifier = _verifier(nursery, Keys(issuer.key), issuer, wall)
    token = issuer.token(RESOURCE, expires_in=60)
    for _ in range(3):
        assert (await verifier.verify(token)).subject == "alice"
    assert verifier.statistics().signature_checks == 1
    # Past its expiry (and the leeway), the kept token is refused like any other, and dropped.
    wall.now += 60 + 30 + 1
    with pytest.raises(TokenRejectedError, match="expired"):
        await verifier.verify(token)
    with pytest.raises(TokenRejectedError, match="expired"):
        await verifier.verify(token)
    assert verifier.statistics().signature_checks == 2  # no longer kept: its signature was checked again


async def test_a_forged_copy_of_a_kept_token_is_still_refused(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    verifier = _verifier(nursery, Keys(issuer.key), issuer)
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
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    keys = Keys(issuer.key)
    verifier = _verifier(nursery, keys, issuer)
    token = issuer.token(RESOURCE)
    await verifier.verify(token)
    # The issuer withdraws the key (rotated out); once the key set is fetched again, the token it
    # signed is refused, though its signature verified before.
    rotated = ECKey.generate_key("P-256", parameters={"kid": "k2"})
    keys.keys = [rotated]
    mock_clock.jump(3_601)
    # Until the new key set has arrived the kept one answers (no request waits for a fetch)...
    assert (await verifier.verify(token)).subject == "alice"
    await verifier.wait_fetched()
    # ...and from then on the token it signed is refused.
    with pytest.raises(TokenRejectedError, match="signature"):
        await verifier.verify(token)
    assert keys.calls == 2
    assert (await verifier.verify(issuer.token(RESOURCE, key=rotated))).subject == "alice"


async def test_the_cache_keeps_the_most_recently_used_tokens_up_to_its_size(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    verifier = _verifier(nursery, Keys(issuer.key), issuer, http_token_cache_size=2)
    a, b, c = (issuer.token(RESOURCE, sub=name) for name in ("a", "b", "c"))
    for token in (a, b, a, c):  # c pushes out b, the least recently used
        await verifier.verify(token)
    assert verifier.statistics().signature_checks == 3
    await verifier.verify(a)
    assert verifier.statistics().signature_checks == 3
    assert (await verifier.verify(b)).subject == "b"
    assert verifier.statistics().signature_checks == 4


async def test_a_cache_of_size_0_checks_every_signature(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    verifier = _verifier(nursery, Keys(issuer.key), issuer, http_token_cache_size=0)
    token = issuer.token(RESOURCE)
    for _ in range(3):
        await verifier.verify(token)
    assert verifier.statistics().signature_checks == 3


def _unsigned(header: dict[str, Any], claims: dict[str, Any]) -> str:
    """A compact JWS of `header` and `claims` with a signature of nothing: what a forger sends."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part(header)}.{part(claims)}.AAAA"


async def test_the_key_set_is_asked_at_its_url_within_the_settings_bounds_and_counted(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    keys = Keys(issuer.key)
    verifier = _verifier(nursery, keys, issuer, http_jwks_timeout_s=3.5, http_jwks_max_bytes=12_345)
    assert verifier.statistics().fetches == 0
    await verifier.verify(issuer.token(RESOURCE))
    mock_clock.jump(3_600)
    await verifier.verify(issuer.token(RESOURCE))
    await verifier.wait_fetched()
    assert keys.asked == [(issuer.jwks_url, 3.5, 12_345)] * 2
    assert verifier.statistics().fetches == keys.calls == 2


async def test_known_keys_are_kept_until_their_maximum_age_exactly(
    nursery: trio.Nursery,
    issuer: TestIssuer,
    mock_clock: trio.testing.MockClock,
    said: Callable[[], list[str]],
) -> None:
    second = ECKey.generate_key("P-256", parameters={"kid": "k2"})
    keys = Keys(issuer.key, second)
    verifier = _verifier(nursery, keys, issuer)
    await verifier.verify(issuer.token(RESOURCE))
    mock_clock.jump(30)  # a refresh would be allowed, but every kid is known: none
    await verifier.verify(issuer.token(RESOURCE))
    await verifier.verify(issuer.token(RESOURCE, key=second))
    mock_clock.jump(3_600 - 30 - 0.5)
    await verifier.verify(issuer.token(RESOURCE))
    assert keys.calls == 1
    mock_clock.jump(0.5)  # the maximum age, exactly
    await verifier.verify(issuer.token(RESOURCE))
    await verifier.wait_fetched()
    assert keys.calls == 2
    assert said() == ["the issuer's key set: 2 key(s)"] * 2


async def test_with_no_keys_yet_a_token_without_a_kid_asks_again_after_the_interval(
    nursery: trio.Nursery,
    issuer: TestIssuer,
    mock_clock: trio.testing.MockClock,
    said: Callable[[], list[str]],
) -> None:
    from joserfc import jwt

    keys = Keys(issuer.key)
    keys.failing = True
    verifier = _verifier(nursery, keys, issuer)
    claims = {"iss": issuer.issuer, "aud": RESOURCE, "sub": "bob", "exp": int(time.time()) + 300}
    no_kid = jwt.encode({"alg": "ES256"}, claims, issuer.key)
    with pytest.raises(KeysUnavailableError, match=r"^the issuer's key set cannot be fetched$"):
        await verifier.verify(no_kid)
    mock_clock.jump(30)
    keys.failing = False
    assert (await verifier.verify(no_kid)).subject == "bob"
    assert keys.calls == 2
    assert said() == [
        "the issuer's key set could not be fetched: OSError",
        "the issuer's key set: 1 key(s)",
    ]


async def test_a_kid_that_is_no_string_is_no_unknown_kid_and_asks_for_nothing(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    keys = Keys(issuer.key)
    verifier = _verifier(nursery, keys, issuer)
    await verifier.verify(issuer.token(RESOURCE))
    mock_clock.jump(30)
    claims = {"iss": issuer.issuer, "aud": RESOURCE, "sub": "x", "exp": 4_000_000_000}
    for kid in (7, None, ["k9"], {"k": "k9"}):
        with pytest.raises(TokenRejectedError):
            await verifier.verify(_unsigned({"alg": "ES256", "kid": kid}, claims))
    assert keys.calls == 1
    with pytest.raises(TokenRejectedError, match="signature"):  # a string the set lacks: asked
        await verifier.verify(_unsigned({"alg": "ES256", "kid": "k9"}, claims))
    assert keys.calls == 2


async def test_a_shared_secret_published_in_the_key_set_signs_nothing(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    """An issuer that lists a symmetric key in its JWKS has published the secret: a token signed
    with it (HS256) must not pass, though the key is in the set and the signature checks out."""
    from joserfc import jwt
    from joserfc.jwk import OctKey

    secret = OctKey.generate_key(256, parameters={"kid": "shared"})

    def published(url: str, timeout_s: float, max_bytes: int) -> dict[str, Any]:
        return {"keys": [issuer.key.as_dict(private=False), secret.as_dict(private=True)]}

    verifier = _verifier(nursery, published, issuer)
    claims = {"iss": issuer.issuer, "aud": RESOURCE, "sub": "mallory", "exp": 4_000_000_000}
    for alg in ("HS256", "HS512"):
        forged = jwt.encode({"alg": alg, "kid": "shared"}, claims, secret, algorithms=[alg])
        with pytest.raises(TokenRejectedError, match=r"^the token's signature does not verify \("):
            await verifier.verify(forged)
    assert (await verifier.verify(issuer.token(RESOURCE))).subject == "alice"


async def test_a_cache_of_size_1_keeps_one_token(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    verifier = _verifier(nursery, Keys(issuer.key), issuer, http_token_cache_size=1)
    a, b = issuer.token(RESOURCE, sub="a"), issuer.token(RESOURCE, sub="b")
    for token in (a, a, b, b, a):
        await verifier.verify(token)
    assert verifier.statistics().signature_checks == 3


class HangingKeys(Keys):
    """A fetch that hangs until the test lets it go (or 30 s pass), then fails."""

    def __init__(self, *keys: ECKey) -> None:
        super().__init__(*keys)
        self.hang = False
        self.entered = threading.Event()
        self.go = threading.Event()
        self.returned = threading.Event()

    def __call__(self, url: str, timeout_s: float, max_bytes: int) -> dict[str, Any]:
        if not self.hang:
            return super().__call__(url, timeout_s, max_bytes)
        self.calls += 1
        self.entered.set()
        try:
            self.go.wait(timeout=30)
            raise OSError("the issuer never answered")
        finally:
            self.returned.set()


async def test_a_request_that_needs_a_fetch_waits_for_it_a_bounded_time_and_no_thread_is_left(
    nursery: trio.Nursery, issuer: TestIssuer, autojump_clock: trio.testing.MockClock
) -> None:
    with trio.fail_after(60):
        keys = HangingKeys(issuer.key)
        keys.hang = True
        verifier = _verifier(nursery, keys, issuer, http_jwks_timeout_s=4.0, http_jwks_wait_s=1.5)
        started = trio.current_time()
        try:
            # The clock stands still until the fetch's thread has entered the fetch (in real time,
            # which a loaded machine stretches); then it jumps through the request's wait.
            autojump_clock.autojump_threshold = math.inf

            async def first_request() -> None:
                with pytest.raises(
                    KeysUnavailableError, match=r"^the issuer's key set did not arrive in time$"
                ):
                    await verifier.verify(issuer.token(RESOURCE))

            async with trio.open_nursery() as requests:
                requests.start_soon(first_request)
                await trio.to_thread.run_sync(keys.entered.wait)
                autojump_clock.autojump_threshold = 0
            # Given up on after the wait, while the fetch's thread has not returned.
            assert trio.current_time() - started == 1.5
            assert not keys.returned.is_set()
            # The fetch still runs: another request joins it (no second fetch, no second thread).
            with pytest.raises(KeysUnavailableError):
                await verifier.verify(issuer.token(RESOURCE))
            assert keys.calls == 1
            assert verifier.statistics().fetching
        finally:
            keys.go.set()
        # The fetch's task ends only when its thread has returned: none is left behind. The thread
        # returns in real time: the clock must not jump to the test's own deadline meanwhile (it
        # would when the loop goes idle before the thread's result is in, as on a loaded machine).
        autojump_clock.autojump_threshold = math.inf
        await verifier.wait_fetched()
        assert keys.returned.is_set()
        assert not verifier.statistics().fetching


async def test_a_token_whose_key_is_cached_is_verified_while_a_fetch_hangs(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    """An unknown `kid` (anyone can send one) starts a fetch that hangs: the tokens whose keys are
    cached are verified meanwhile, kept ones and new ones alike; the unknown `kid` waits for the
    fetch alone."""
    with trio.fail_after(10_000):
        keys = HangingKeys(issuer.key)
        verifier = _verifier(nursery, keys, issuer)
        kept = issuer.token(RESOURCE, sub="kept")
        await verifier.verify(kept)
        mock_clock.jump(30)
        keys.hang = True
        stranger = ECKey.generate_key("P-256", parameters={"kid": "k9"})
        answers: list[str] = []

        async def unknown_kid() -> None:
            with pytest.raises(TokenRejectedError, match="signature"):
                await verifier.verify(issuer.token(RESOURCE, key=stranger))
            answers.append("unknown kid")

        try:
            async with trio.open_nursery() as requests:
                requests.start_soon(unknown_kid)
                await trio.to_thread.run_sync(keys.entered.wait)  # the fetch hangs
                assert (await verifier.verify(kept)).subject == "kept"
                assert (await verifier.verify(issuer.token(RESOURCE, sub="new"))).subject == "new"
                answers.append("cached keys")
                assert verifier.statistics().fetching
                keys.go.set()  # the fetch fails: the unknown kid is checked against the keys kept
        finally:
            keys.go.set()
        assert answers == ["cached keys", "unknown kid"]
        assert keys.calls == 2


async def test_fetches_are_one_at_a_time_and_the_interval_counts_from_the_end_of_the_last(
    nursery: trio.Nursery, issuer: TestIssuer, mock_clock: trio.testing.MockClock
) -> None:
    keys = HangingKeys(issuer.key)
    verifier = _verifier(nursery, keys, issuer)
    with trio.fail_after(10_000):  # virtual seconds: the test jumps 7,230 of them
        await verifier.wait_fetched()  # none in progress: at once
        kept = issuer.token(RESOURCE, sub="kept")
        await verifier.verify(kept)
        mock_clock.jump(3_600)
        keys.hang = True
        try:
            await verifier.verify(kept)  # the keys are old: a fetch starts, not waited for
            await trio.to_thread.run_sync(keys.entered.wait)
            # Old keys and a fetch in progress: no second fetch.
            assert (await verifier.verify(issuer.token(RESOURCE, sub="new"))).subject == "new"
            assert keys.calls == 2
            # Longer than the refresh interval and the keys' maximum age, while the fetch hangs:
            # still no second fetch.
            mock_clock.jump(3_600)
            assert (await verifier.verify(kept)).subject == "kept"
            assert keys.calls == 2
        finally:
            keys.go.set()
        await verifier.wait_fetched()
        keys.hang = False
        stranger = ECKey.generate_key("P-256", parameters={"kid": "k9"})
        # The interval counts from the end of the last fetch: none yet for an unknown kid.
        with pytest.raises(TokenRejectedError, match="signature"):
            await verifier.verify(issuer.token(RESOURCE, key=stranger))
        assert keys.calls == 2
        mock_clock.jump(30)
        with pytest.raises(TokenRejectedError, match="signature"):
            await verifier.verify(issuer.token(RESOURCE, key=stranger))
        assert keys.calls == 3
        assert verifier.statistics() == TokenVerifierStatistics(fetches=3, signature_checks=4, fetching=False)
