"""`Lazy`, the one way the server builds something on first use: once, retried after a failure, closable."""

from __future__ import annotations

import pytest

from mcp_suite.lazy import Lazy


def test_a_build_that_fails_is_tried_again_by_the_next_use() -> None:
    attempts: list[int] = []

    def build() -> int:
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("not yet")
        return 42

    value = Lazy(build)
    with pytest.raises(OSError, match="not yet"):
        value.get()
    assert not value.built
    assert value.get() == 42
    assert value.get() == 42
    assert len(attempts) == 2


def test_close_hands_back_what_was_built_and_stops_later_builds() -> None:
    built = Lazy(lambda: ["resource"])
    resource = built.get()
    assert built.close() is resource
    assert not built.built
    with pytest.raises(RuntimeError):
        built.get()
    never = Lazy(lambda: ["resource"])
    assert never.close() is None  # nothing was built: nothing to release
    with pytest.raises(RuntimeError):
        never.get()
