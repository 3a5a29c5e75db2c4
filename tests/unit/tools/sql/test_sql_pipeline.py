"""The SQL policy's pipeline: the caller's text goes through the parsers it is given, sqlglot never
writes the text that runs, and the cache keeps at most its bound of verdicts. Faults are injected
through `vet_sql`'s parameters."""

from __future__ import annotations

from typing import Any

import pytest
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.tokenizer_core import Token

from mcp_suite.problems import ProblemError
from mcp_suite.tools.sql.engine.policy import QueryPolicy, VettedQuery, vet_sql


class _Refuses(Postgres):
    """The postgres dialect whose tokenizer fails on a text holding `needle` (sqlglot's own
    dialect reads every text of these tests), and whose generator may write `writes` instead."""

    needle = "\x01"
    writes: str | None = None

    def tokenize(self, sql: str, dialect: Any = None) -> list[Token]:
        if self.needle in sql:
            raise KeyError("tokenizer bug")
        return super().tokenize(sql)

    def generate(self, expression: exp.Expr, copy: bool = True, **opts: Any) -> str:
        if self.writes is not None:
            return self.writes
        return super().generate(expression, copy, **opts)


def _dialect(needle: str = "\x01", writes: str | None = None) -> _Refuses:
    dialect = _Refuses()
    dialect.needle = needle
    dialect.writes = writes
    return dialect


def _refusal(sql: str, dialect: Postgres) -> ProblemError:
    with pytest.raises(ProblemError) as caught:
        vet_sql(sql, max_rows=10, dialect=dialect)
    return caught.value


def _wrapped(sql: str) -> str:
    return f"SELECT * FROM (\n{sql}\n) AS q LIMIT 11"


def test_the_caller_s_text_is_read_by_the_dialect_given() -> None:
    assert vet_sql("SELECT 1", max_rows=10, dialect=_dialect()).sql == _wrapped("SELECT 1")
    # a dialect that cannot tokenize the caller's text leaves PostgreSQL's reading alone
    assert vet_sql("SELECT  1", max_rows=10, dialect=_dialect(needle="  ")).sql == _wrapped("SELECT  1")
    assert _refusal("SELECT  pg_sleep(1)", _dialect(needle="  ")).metadata["rule"] == "denied-function"


def test_sqlglot_reads_only_the_caller_s_text_never_the_wrapper() -> None:
    # The wrapper is PostgreSQL's to read: a dialect that fails on it is never asked.
    assert vet_sql("SELECT 1", max_rows=10, dialect=_dialect(needle="LIMIT 11")).sql == _wrapped("SELECT 1")


def test_a_text_sqlglot_cannot_read_runs_as_postgresql_reads_it() -> None:
    # sqlglot cannot read ORDER BY ... USING: PostgreSQL's reading stands alone
    sql = "SELECT 1 FROM t ORDER BY 1 USING <"
    assert vet_sql(sql, max_rows=10, dialect=_dialect()).sql == _wrapped(sql)


def test_what_sqlglot_would_write_never_runs() -> None:
    dialect = _dialect(writes="SELECT a FROM t LIMIT 11 QUALIFY a")
    vetted = vet_sql("SELECT a FROM t", max_rows=10, dialect=dialect)
    assert vetted == VettedQuery(sql=_wrapped("SELECT a FROM t"), limit=11)


class _Counting:
    """An uncached policy that counts its calls and accepts everything."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, sql: str, *, max_rows: int) -> VettedQuery:
        self.calls += 1
        return VettedQuery(sql=sql, limit=max_rows + 1)


def test_the_cache_keeps_1024_verdicts_by_default() -> None:
    counting = _Counting()
    policy = QueryPolicy(vet=counting)
    for number in range(1025):
        policy.vet(f"SELECT {number}", max_rows=1)
    policy.vet("SELECT 1024", max_rows=1)
    policy.vet("SELECT 1", max_rows=1)
    assert counting.calls == 1025  # both still cached
    policy.vet("SELECT 0", max_rows=1)
    assert counting.calls == 1026  # the oldest went


def test_a_negative_cache_size_is_a_programming_error_in_plain_words() -> None:
    with pytest.raises(ValueError, match=r"^cache_size must be >= 0$"):
        QueryPolicy(cache_size=-1)
