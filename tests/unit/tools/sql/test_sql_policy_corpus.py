"""The table-driven corpus of the SQL policy (tests/support/sql_corpus.py) through the public `vet`.

The same table drives the database-backed tests (tests/pg/test_sql_policy_db.py): allowed queries are
run on the demo database in both their original and regenerated forms, and every case goes through
the real server.
"""

from __future__ import annotations

import pytest

from mcp_suite.problems import ProblemError
from mcp_suite.tools.sql.engine.policy import QueryPolicy, VettedQuery
from tests.support.sql_corpus import ATTACKS, CORPUS, DENIED_SPELLINGS, HONEST, MAX_ROWS, Case, assert_safe


def _ids(cases: tuple[Case, ...]) -> list[str]:
    return [case.why for case in cases]


def test_corpus_has_the_size_the_issue_asks_for() -> None:
    assert len(HONEST) >= 40
    assert len(HONEST) + len(ATTACKS) >= 150
    assert len({case.sql for case in CORPUS}) == len(CORPUS), "duplicate corpus entries"


@pytest.fixture(scope="module")
def policy() -> QueryPolicy:
    return QueryPolicy(cache_size=0)


@pytest.mark.parametrize("case", HONEST, ids=_ids(HONEST))
def test_honest_query_is_allowed_with_an_outer_limit(policy: QueryPolicy, case: Case) -> None:
    vetted = policy.vet(case.sql, max_rows=MAX_ROWS)
    assert isinstance(vetted, VettedQuery)
    assert_safe(vetted, MAX_ROWS)  # checked again by pglast's own AST and visitor
    # The text that runs holds the caller's statement, and is itself accepted.
    assert vetted.sql.startswith("SELECT * FROM (\n")
    assert policy.vet(vetted.sql, max_rows=MAX_ROWS).limit == MAX_ROWS + 1


@pytest.mark.parametrize("case", ATTACKS + DENIED_SPELLINGS, ids=_ids(ATTACKS + DENIED_SPELLINGS))
def test_attack_is_refused_with_the_expected_problem(policy: QueryPolicy, case: Case) -> None:
    with pytest.raises(ProblemError) as caught:
        policy.vet(case.sql, max_rows=MAX_ROWS)
    problem = caught.value
    assert type(problem) is case.problem, problem.detail
    assert problem.metadata.get("rule") == case.rule, problem.detail
    assert problem.invalid_params == ("sql",)
    assert 0 < len(problem.detail) <= 400
