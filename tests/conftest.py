"""Shared test configuration: Hypothesis profiles, hermetic environment, the fixtures every layer uses.

Hermetic: no test reaches beyond loopback (pytest-socket, `addopts` in pyproject.toml: Python sockets
may connect to 127.0.0.1, ::1 and Unix sockets only; every database DSN names 127.0.0.1), and the
`MCP_*` and libpq `PG*` variables of the caller's environment are cleared before the run and again
around every test, so no setting and no database of the developer's leaks in.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.register_profile("dev", max_examples=100, deadline=None)
# `make mutate` runs the guarding tests once per mutant: fewer examples, still the same ones each time.
settings.register_profile(
    "mutation",
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

pytest_plugins = ["tests.pgfixtures"]

# PG_BIN is ours (where the PostgreSQL binaries are), not libpq's: it is kept.
_KEPT = frozenset({"PG_BIN"})


def _foreign_variables() -> list[str]:
    return [name for name in os.environ if name.startswith(("MCP_", "PG")) and name not in _KEPT]


def _clear_foreign_variables() -> None:
    for name in _foreign_variables():
        del os.environ[name]


def pytest_configure(config: pytest.Config) -> None:
    _clear_foreign_variables()


@pytest.fixture(autouse=True)
def _hermetic_environment() -> Iterator[None]:
    _clear_foreign_variables()
    yield
    _clear_foreign_variables()
