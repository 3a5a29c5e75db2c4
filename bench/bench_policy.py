"""The SQL policy (docs/performance.md): a typical 250-character analytical query, median over 10,000 runs.

Figures: the whole policy uncached (both parsers' readings, the walks, the allow-lists, the text that
runs read and proven again; target <= 3 ms) against a floor of one bare sqlglot parse in the same run; cached
(target <= 20 us); and sqlglotc (the mypyc-compiled sqlglot, which replaces sqlglot's modules in place
when installed) against pure sqlglot, measured in a child process that imports a copy of sqlglot with
the compiled modules left out.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import sqlglot
from pglast import parser as pg_parser

from bench.common import Figure, median_seconds
from mcp_suite.tools.sql.engine.policy import QueryPolicy, allowlist, vet_sql
from mcp_suite.tools.sql.engine.policy.postgres_walk import check_postgres

RUNS = 10_000
PURE_RUNS = 1_000

QUERY = (
    "SELECT section, editor_id, count(*) AS pages, round(avg(words), 1) AS avg_words, "
    "sum(words) FILTER (WHERE words > 500) AS long_words, rank() OVER (ORDER BY sum(words) DESC) "
    "FROM docs.pages WHERE slug LIKE 'page-%' GROUP BY 1, 2 ORDER BY 6 LIMIT 20"
)

_CHILD = textwrap.dedent(
    """
    import json, sys
    import sqlglot, sqlglot.parser
    from bench.common import median_seconds
    from mcp_suite.tools.sql.engine.policy import vet_sql
    query, runs = sys.argv[1], int(sys.argv[2])
    parse = median_seconds(lambda: sqlglot.parse_one(query, read="postgres"), runs)
    whole = median_seconds(lambda: vet_sql(query, max_rows=50), runs)
    compiled = not sqlglot.parser.__file__.endswith(".py")
    json.dump({"parse": parse, "whole": whole, "compiled": compiled}, sys.stdout)
    """
)


def _compiled() -> bool:
    return not str(sqlglot.parser.__file__).endswith(".py")


def _pure_sqlglot_figures(repo: Path) -> dict[str, float] | None:
    """Parse and whole-policy medians with pure sqlglot, in a child process (None if unavailable)."""
    source = Path(sqlglot.__file__).parent
    with tempfile.TemporaryDirectory(prefix="bench-pure-sqlglot-") as tmp:
        shutil.copytree(source, Path(tmp) / "sqlglot", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        env = {"PYTHONPATH": f"{tmp}:{repo}", "PYTHONDONTWRITEBYTECODE": "1"}
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, QUERY, str(PURE_RUNS)],
            capture_output=True,
            env=env,
            timeout=600,
            check=False,
        )
    if done.returncode != 0:
        return None
    result: dict[str, float] = json.loads(done.stdout)
    return None if result.get("compiled") else result


def run() -> list[Figure]:
    assert len(QUERY) >= 240, len(QUERY)
    vet_sql(QUERY, max_rows=50)  # warm imports and dialect tables
    parse_floor = median_seconds(lambda: sqlglot.parse_one(QUERY, read="postgres"), RUNS)
    pglast_floor = median_seconds(lambda: pg_parser.parse_sql_json(QUERY), RUNS)
    uncached = median_seconds(lambda: vet_sql(QUERY, max_rows=50), RUNS)
    policy = QueryPolicy(cache_size=1024)
    policy.vet(QUERY, max_rows=50)
    cached = median_seconds(lambda: policy.vet(QUERY, max_rows=50), RUNS)
    facts = check_postgres(QUERY, executed=False)
    calls = [(parts[-2] if len(parts) > 1 else "", parts[-1]) for parts in facts.calls]
    types = [(parts[-2] if len(parts) > 1 else "", parts[-1]) for parts in facts.named_types]

    def allow_lists() -> None:
        for schema, name in calls:
            allowlist.function_verdict(schema, name, allow_catalogue=False)
        for schema, name in types:
            allowlist.type_verdict(schema, name, allow_catalogue=False)

    allow_lists_s = median_seconds(allow_lists, RUNS)
    build = "sqlglotc" if _compiled() else "pure sqlglot"
    figures = [
        Figure(
            f"policy uncached, {len(QUERY)}-char query ({build})",
            uncached * 1e3,
            "ms",
            target="<= 3 ms",
            ok=uncached <= 3e-3,
            floor=parse_floor * 1e3,
            note="floor: one bare sqlglot parse",
        ),
        Figure(
            "policy cached (LRU hit)",
            cached * 1e6,
            "us",
            target="<= 20 us",
            ok=cached <= 20e-6,
        ),
        Figure("  stage: sqlglot parse", parse_floor * 1e3, "ms"),
        Figure(
            f"  stage: allow-lists ({len(calls)} functions, {len(types)} types named)",
            allow_lists_s * 1e6,
            "us",
            note=f"{allow_lists_s / uncached:.2%} of the uncached policy; no catalogue read",
        ),
        Figure("  stage: pglast parse (JSON)", pglast_floor * 1e3, "ms"),
    ]
    repo = Path(__file__).resolve().parents[1]
    pure = _pure_sqlglot_figures(repo) if _compiled() else None
    if pure is not None:
        figures += [
            Figure(
                f"  pure sqlglot parse ({PURE_RUNS:,} runs, child process)",
                pure["parse"] * 1e3,
                "ms",
                note=f"sqlglotc is x{pure['parse'] / parse_floor:.1f} faster",
            ),
            Figure(
                f"  pure sqlglot whole policy ({PURE_RUNS:,} runs)",
                pure["whole"] * 1e3,
                "ms",
                note=f"sqlglotc is x{pure['whole'] / uncached:.1f} faster; the 3 ms target is for sqlglotc",
            ),
        ]
    else:
        figures.append(
            Figure("  pure sqlglot comparison", 0.0, "ms", note="not measured (no sqlglotc build)")
        )
    return figures
