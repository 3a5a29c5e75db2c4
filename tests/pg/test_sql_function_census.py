"""The function allow-list against the PostgreSQL releases the harness can start (the embedded 18 and
Debian's 15): every function PostgreSQL ships is classified in policy/functions.tsv, so a new
release's functions fail here until someone reviews them, and no allowed name breaks a rule of the
list (an identifier or internal type, a type's input or output, volatility) unless it was reviewed
one by one."""

from __future__ import annotations

import tempfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.tools.sql.engine.denylist import VOLATILE_VALUES, denied_reason
from mcp_suite.tools.sql.engine.policy import allowlist
from mcp_suite.tools.sql.engine.policy.catalogue import READABLE_PG_FUNCTIONS, function_reason
from tests.support.devdb.tls import ssl_pg_bin
from tests.support.function_census import Overload, census, hazard

pytestmark = pytest.mark.pg


@pytest.fixture(scope="module")
def debian_cluster() -> Iterator[Cluster]:
    """Debian's PostgreSQL (15 on this distribution), beside the harness's embedded 18."""
    cluster = Cluster.create(Path(tempfile.mkdtemp(prefix="mcp-suite-census-")), pg_bin=ssl_pg_bin())
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture(scope="module", params=["embedded", "debian"])
def shipped(request: pytest.FixtureRequest, demo_cluster: Cluster) -> tuple[int, list[Overload]]:
    cluster = demo_cluster if request.param == "embedded" else request.getfixturevalue("debian_cluster")
    with psycopg.connect(cluster.admin_dsn) as conn:
        row = conn.execute("SHOW server_version_num").fetchone()
        assert row is not None
        return int(row[0]) // 10000, census(conn)


def _allowed(name: str) -> bool:
    entry = allowlist.classified(name)
    return entry is not None and entry[0] == "allow"


def _by_name(overloads: list[Overload]) -> dict[str, list[Overload]]:
    names: dict[str, list[Overload]] = defaultdict(list)
    for overload in overloads:
        names[overload.name].append(overload)
    return names


def test_the_harness_starts_two_major_versions(demo_cluster: Cluster, debian_cluster: Cluster) -> None:
    versions = set()
    for cluster in (demo_cluster, debian_cluster):
        with psycopg.connect(cluster.admin_dsn) as conn:
            row = conn.execute("SHOW server_version_num").fetchone()
            assert row is not None
            versions.add(int(row[0]) // 10000)
    assert len(versions) == 2, versions


def test_every_function_postgresql_ships_is_classified(shipped: tuple[int, list[Overload]]) -> None:
    version, overloads = shipped
    unclassified = sorted({o.name for o in overloads if allowlist.classified(o.name) is None})
    assert unclassified == [], (
        f"PostgreSQL {version} ships functions functions.tsv does not classify; review them "
        f"(python -m tests.support.function_census DSN drafts their lines): {unclassified}"
    )


def test_no_allowed_function_takes_or_returns_an_identifier_or_internal_type(
    shipped: tuple[int, list[Overload]],
) -> None:
    _, overloads = shipped
    broken = []
    for name, group in _by_name(overloads).items():
        if not _allowed(name):
            continue
        for overload in group:
            found = hazard(overload)
            reviewed = found == "identifier" and name in allowlist.REVIEWED_IDENTIFIER_FUNCTIONS
            if found is not None and not reviewed:
                broken.append(f"{name}({', '.join(overload.arguments)}) -> {overload.result}: {found}")
    assert broken == []


def test_no_allowed_function_is_volatile_unless_reviewed(shipped: tuple[int, list[Overload]]) -> None:
    _, overloads = shipped
    reviewed = VOLATILE_VALUES | READABLE_PG_FUNCTIONS.keys()
    volatile = sorted(
        {o.name for o in overloads if o.volatility == "v" and _allowed(o.name) and o.name not in reviewed}
    )
    assert volatile == []


def test_the_refusals_other_rules_word_are_refused_by_those_rules(
    shipped: tuple[int, list[Overload]],
) -> None:
    _, overloads = shipped
    for name in {o.name for o in overloads}:
        entry = allowlist.classified(name)
        assert entry is not None
        verdict, why = entry
        if why == "denied":
            assert denied_reason(name) is not None, name
        elif why == "catalogue":
            assert function_reason(name) is not None, name
        elif verdict == "refuse":
            assert why in allowlist.REASONS, (name, why)
