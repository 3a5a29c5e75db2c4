"""The census of PostgreSQL's own functions, and the rules that drafted their classification.

`census(conn)` reads every function of `pg_catalog` and `information_schema` that PostgreSQL itself
ships (an extension's functions are not PostgreSQL's, bar plpgsql's), with what the classification
looks at: its kind, volatility, argument and result types, and whether it is a type's input or output
function. tests/pg/test_sql_function_census.py runs it on each PostgreSQL the harness can start and
fails when a name is not in the reviewed file (`mcp_suite/tools/sql/engine/policy/functions.tsv`) or
when an allowed name breaks a rule of the allow-list (an identifier or internal type, volatility).

`draft(censuses)` applies the rules that drafted that file; the file was then read name by name and
is the reference, not these rules. To add the names of a new PostgreSQL release, run
`python -m tests.support.function_census ADMIN_DSN...` (one superuser DSN per version): it prints the
names no line of the file classifies yet, drafted, for review.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import psycopg

from mcp_suite.tools.sql.engine.denylist import VOLATILE_VALUES, denied_reason
from mcp_suite.tools.sql.engine.policy import allowlist
from mcp_suite.tools.sql.engine.policy.catalogue import READABLE_PG_FUNCTIONS, function_reason

__all__ = ["CENSUS_SQL", "Overload", "census", "draft", "hazard"]

CENSUS_SQL: Final = """
WITH io AS (
  SELECT unnest(ARRAY[typinput, typoutput, typreceive, typsend, typmodin, typmodout, typanalyze,
                      typsubscript])::oid AS f FROM pg_catalog.pg_type
), extension_owned AS (
  SELECT d.objid AS f, e.extname FROM pg_catalog.pg_depend d
  JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
  WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.deptype = 'e'
)
SELECT n.nspname::text, p.proname::text, p.prokind::text, p.provolatile::text,
  p.prorettype::pg_catalog.regtype::text,
  ARRAY(SELECT t::pg_catalog.regtype::text
        FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) AS t),
  p.oid IN (SELECT f FROM io)
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname IN ('pg_catalog', 'information_schema')
  AND NOT EXISTS (SELECT FROM extension_owned x WHERE x.f = p.oid AND x.extname <> 'plpgsql')
ORDER BY 1, 2
"""


@dataclass(frozen=True, slots=True)
class Overload:
    """One function of the census (one overload of a name)."""

    schema: str
    name: str
    kind: str  # f, a, w, p
    volatility: str  # i, s, v
    result: str
    arguments: tuple[str, ...]
    type_io: bool

    @property
    def types(self) -> frozenset[str]:
        return frozenset((self.result, *self.arguments))


def census(conn: psycopg.Connection[Any]) -> list[Overload]:
    """Every function PostgreSQL ships in `pg_catalog` and `information_schema` (blocking)."""
    return [
        Overload(schema, name, kind, volatility, result, tuple(arguments), bool(type_io))
        for schema, name, kind, volatility, result, arguments, type_io in conn.execute(CENSUS_SQL)
    ]


def hazard(overload: Overload) -> str | None:
    """The structural reason an overload may not be reached, as a reason key of `allowlist`, or None."""
    bare = {name.removesuffix("[]") for name in overload.types}
    if bare & allowlist.INTERNAL_TYPES:
        return "internal"
    if bare & allowlist.IDENTIFIER_TYPES:
        return "identifier"
    if overload.type_io:
        return "type-io"
    return None


# The families of allowed names, by the first type family an overload names (in this order).
_FAMILY_OF_TYPES: Final[tuple[tuple[str, frozenset[str]], ...]] = (
    ("json", frozenset({"json", "jsonb", "jsonpath"})),
    ("text-search", frozenset({"tsvector", "tsquery", "gtsvector", "regconfig"})),
    ("xml", frozenset({"xml"})),
    ("uuid", frozenset({"uuid"})),
    ("network", frozenset({"inet", "cidr", "macaddr", "macaddr8"})),
    (
        "geometric",
        frozenset({"point", "lseg", "line", "box", "path", "polygon", "circle"}),
    ),
    ("bit-strings", frozenset({"bit", "bit varying"})),
    ("money", frozenset({"money"})),
    (
        "ranges",
        frozenset(
            {
                "anyrange",
                "anymultirange",
                "anycompatiblerange",
                "anycompatiblemultirange",
                *(
                    f"{kind}{suffix}"
                    for kind in ("int4", "int8", "num", "ts", "tstz", "date")
                    for suffix in ("range", "multirange")
                ),
            }
        ),
    ),
    (
        "date-time",
        frozenset(
            {
                "date",
                "time without time zone",
                "time with time zone",
                "timestamp without time zone",
                "timestamp with time zone",
                "interval",
            }
        ),
    ),
    ("arrays", frozenset({"anyarray", "anycompatiblearray", "anynonarray"})),
    ("binary-strings", frozenset({"bytea"})),
    ("enums", frozenset({"anyenum"})),
    (
        "math",
        frozenset({"smallint", "integer", "bigint", "numeric", "real", "double precision"}),
    ),
    ("text", frozenset({"text", "character varying", "character", "name", '"char"', "cstring"})),
    ("boolean", frozenset({"boolean"})),
)


def _family(overloads: Iterable[Overload]) -> str:
    kinds = {o.kind for o in overloads}
    if kinds == {"a"}:
        return "aggregates"
    if kinds == {"w"}:
        return "window"
    types = set().union(*(o.types for o in overloads))
    for family, members in _FAMILY_OF_TYPES:
        if types & members:
            return family
    if any(t.endswith("[]") for t in types):
        return "arrays"
    return "values"


def draft(censuses: Mapping[int, Iterable[Overload]]) -> dict[str, tuple[str, str, tuple[int, ...]]]:
    """name -> (verdict, family or reason key, versions) by the drafting rules (see the module)."""
    by_name: dict[str, list[Overload]] = defaultdict(list)
    versions: dict[str, set[int]] = defaultdict(set)
    for version, overloads in censuses.items():
        for overload in overloads:
            by_name[overload.name].append(overload)
            versions[overload.name].add(version)
    drafted: dict[str, tuple[str, str, tuple[int, ...]]] = {}
    for name, overloads in sorted(by_name.items()):
        seen = tuple(sorted(versions[name]))
        verdict = _draft_one(name, overloads)
        drafted[name] = (*verdict, seen)
    return drafted


def _draft_one(name: str, overloads: list[Overload]) -> tuple[str, str]:
    if name in allowlist.REVIEWED_IDENTIFIER_FUNCTIONS:
        return "allow", _family(o for o in overloads if hazard(o) is None)
    if denied_reason(name) is not None:
        return "refuse", "denied"
    if function_reason(name) is not None or any(o.schema == "information_schema" for o in overloads):
        return "refuse", "catalogue"
    hazards = [h for h in map(hazard, overloads) if h is not None]
    if hazards:
        return "refuse", hazards[0]
    if name in allowlist.STATE_FUNCTIONS:
        return "refuse", "state"
    reviewed = VOLATILE_VALUES | READABLE_PG_FUNCTIONS.keys()
    if any(o.volatility == "v" for o in overloads) and name not in reviewed:
        return "refuse", "state"
    return "allow", _family(overloads)


def main(argv: list[str]) -> int:
    """Print, drafted, the names of the given servers that the reviewed file does not classify."""
    censuses: dict[int, list[Overload]] = {}
    for dsn in argv:
        with psycopg.connect(dsn) as conn:
            version = int(str(conn.execute("SHOW server_version_num").fetchone()[0])) // 10000  # type: ignore[index]  # SHOW returns a row
            censuses[version] = census(conn)
    for name, (verdict, why, seen) in draft(censuses).items():
        if allowlist.classified(name) is None:
            sys.stdout.write(allowlist.format_line(name, verdict, why, seen) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
