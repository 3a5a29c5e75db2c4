"""The policy's half of issue 40, item 4, without a database: `vet_sql` accepts every everyday query
of tests/support/corpus.py (tests/pg/test_sql_corpus.py compares their answers with PostgreSQL's).

A refusal of ordinary work is a defect, not a documented limit: each refused query fails by name,
with the rule and the detail the caller would read.
"""

from __future__ import annotations

import pytest

from mcp_suite.problems import ProblemError
from mcp_suite.tools.sql.engine.policy import VettedQuery, vet_sql
from tests.support.corpus import MAX_ROWS, QUERIES, TRUNCATIONS, CorpusQuery, Truncation


def vetted(sql: str, max_rows: int) -> VettedQuery:
    try:
        return vet_sql(sql, max_rows=max_rows)
    except ProblemError as problem:
        rule = problem.metadata.get("rule")
        pytest.fail(f"vet_sql refused it ({problem.slug}, rule {rule}): {problem.detail}", pytrace=False)


def test_the_corpus_has_the_size_the_issue_asks_for() -> None:
    assert len(QUERIES) >= 150
    assert len({q.name for q in QUERIES}) == len(QUERIES)
    assert len({q.sql for q in QUERIES}) == len(QUERIES)
    assert len({t.name for t in TRUNCATIONS}) == len(TRUNCATIONS)


@pytest.mark.parametrize("query", QUERIES, ids=[q.name for q in QUERIES])
def test_vet_sql_accepts_an_everyday_query(query: CorpusQuery) -> None:
    assert vetted(query.sql, MAX_ROWS).limit <= MAX_ROWS + 1


@pytest.mark.parametrize("case", TRUNCATIONS, ids=[t.name for t in TRUNCATIONS])
def test_vet_sql_accepts_a_query_answered_with_a_small_max_rows(case: Truncation) -> None:
    assert vetted(case.sql, case.max_rows).limit <= case.max_rows + 1
