"""The SQL policy's refusals, exactly: each query and the problem it becomes (its class, so its code,
the detail, `invalid_params` and the metadata). A caller (or a model) fixes its query from these words.

Most are reached through `vet_sql`; the sqlglot walk's own words, which a caller sees only where
PostgreSQL's walk has a gap, are reached by giving the walk a tree with the construct smuggled in;
the proof that the text that runs is the caller's, by giving it texts that are not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres

from mcp_suite.problems import InvalidArgumentsError, ProblemError, QueryViolationError
from mcp_suite.tools.sql.engine.policy import QueryPolicy, VettedQuery, refusals, sqlglot_walk, vet_sql
from mcp_suite.tools.sql.engine.policy.postgres_walk import check_postgres
from mcp_suite.tools.sql.engine.policy.rewrite import check_wrapped, wrap

SEND = "Send one SELECT (or VALUES / UNION / INTERSECT / EXCEPT) statement"
ONLY = "Only SELECT, VALUES and set operations are allowed"
UNSUPPORTED = (
    "The query uses syntax the validator does not support. Rewrite that part in plain PostgreSQL "
    "syntax: a function call instead of special syntax, or VALUES with ORDER BY / LIMIT wrapped in "
    "a subquery (FROM (VALUES ...) AS v(x))."
)
TOO_DEEP = (
    "The query is nested too deeply to be checked; flatten it (fewer nested parentheses, brackets, "
    "NOTs, CASEs or casts, at most 64 array subscripts), for example with a CTE (WITH ...)."
)
LIMIT_REWRITE = (
    "The query's row limit could not be applied safely; put the LIMIT on the outermost SELECT, "
    "or wrap the query: SELECT * FROM (<query>) AS q."
)
NOT_ALLOWED = "The query is not allowed:"
DATA_MODIFYING = NOT_ALLOWED + " data-modifying statements ({}) are not allowed, also not inside a CTE."
INTO = NOT_ALLOWED + " SELECT ... INTO creates a table; remove the INTO clause."
LOCK = NOT_ALLOWED + " row locks (FOR UPDATE / FOR SHARE) are not allowed; remove them."
BIND = NOT_ALLOWED + " bind parameters ({}) are not supported; write the values inline as literals."
BAD = InvalidArgumentsError
VIOLATION = QueryViolationError
LONG_DENIED = "binary_upgrade_" + "x" * 80  # a denied family's member, longer than a name is echoed
UPGRADE = "it is for pg_upgrade only and changes catalogue state"
LONG_SYNTAX = "SELECT 'x' || '" + "y" * 300  # PostgreSQL's message quotes the text near the fault


def _root(kind: str, fix: str) -> tuple[type[ProblemError], str, dict[str, str]]:
    shown = kind.removesuffix("Stmt")
    return VIOLATION, f"{ONLY}, not {shown} statements. {fix}.", {"rule": "root-not-select", "node": kind}


def _modifying(kind: str, shown: str) -> tuple[type[ProblemError], str, dict[str, str]]:
    return VIOLATION, DATA_MODIFYING.format(shown), {"rule": "data-modifying", "node": kind}


# (sql, problem class, detail, metadata); every one is against `sql`
REFUSALS: list[tuple[Any, type[ProblemError], str, dict[str, str]]] = [
    (5, BAD, "sql must be a string holding one SELECT statement.", {"rule": "type"}),
    (" \n\t", BAD, f"The query is empty. {SEND}.", {"rule": "empty"}),
    (
        "SELECT 1" + " " * 10_000,
        BAD,
        "The query has 10,008 characters; at most 10,000 are allowed.",
        {"rule": "too-long"},
    ),
    ("SELECT 1\x00", BAD, "The query contains a NUL character; remove it.", {"rule": "nul"}),
    ("SELECT " + "(" * 300 + "1" + ")" * 300, BAD, TOO_DEEP, {"rule": "too-deep"}),
    (
        "SELEC 1",
        BAD,
        f'PostgreSQL cannot parse the query: syntax error at or near "SELEC". Fix the syntax; s{SEND[1:]}.',
        {"rule": "syntax"},
    ),
    (
        LONG_SYNTAX,
        BAD,
        # PostgreSQL's message is echoed to 160 characters at most, the last one an ellipsis
        "PostgreSQL cannot parse the query: unterminated quoted string at or near \"'"
        + "y" * (160 - len("unterminated quoted string at or near \"'") - 1)
        + f"…. Fix the syntax; s{SEND[1:]}.",
        {"rule": "syntax"},
    ),
    (";", BAD, f"The query holds no statement, only comments or semicolons. {SEND}.", {"rule": "empty"}),
    (
        "SELECT 1; SELECT 2; SELECT 3",
        VIOLATION,
        "The query holds 3 statements; only one is allowed. Remove the extra statements (and the "
        "semicolons between them).",
        {"rule": "multiple-statements"},
    ),
    # a statement that is not a query: its kind, and the fix for it
    (
        "EXPLAIN SELECT 1",
        *_root("ExplainStmt", "EXPLAIN is not run as a query; send the SELECT itself to explain_sql"),
    ),
    (
        "BEGIN",
        *_root(
            "TransactionStmt",
            "transaction control is not needed (every call is one read-only transaction); "
            "send only the SELECT",
        ),
    ),
    (
        "SET work_mem = '1MB'",
        *_root("VariableSetStmt", "SET / RESET are not allowed; settings are fixed by the server"),
    ),
    (
        "SHOW work_mem",
        *_root("VariableShowStmt", "SHOW is not available; use current_setting('name') in a SELECT"),
    ),
    ("COPY t TO STDOUT", *_root("CopyStmt", "COPY is not allowed; use a SELECT")),
    ("DO $$ BEGIN END $$", *_root("DoStmt", "DO blocks are not allowed; use a SELECT")),
    ("CALL p()", *_root("CallStmt", "CALL is not allowed; use a SELECT")),
    (
        "DECLARE c CURSOR FOR SELECT 1",
        *_root("DeclareCursorStmt", "cursors are not allowed; use a SELECT"),
    ),
    ("CREATE TABLE x (a int)", *_root("CreateStmt", SEND)),  # no fix of its own
    ("LISTEN ch", *_root("ListenStmt", SEND)),
    # what the query does, named by PostgreSQL's node
    ("INSERT INTO t VALUES (1)", *_modifying("InsertStmt", "INSERT")),
    ("UPDATE t SET a = 1", *_modifying("UpdateStmt", "UPDATE")),
    ("MERGE INTO t USING u ON true WHEN MATCHED THEN DELETE", *_modifying("MergeStmt", "MERGE")),
    ("WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", *_modifying("DeleteStmt", "DELETE")),
    ("SELECT 1 INTO t", VIOLATION, INTO, {"rule": "select-into", "node": "IntoClause"}),
    ("SELECT 1 FROM t FOR UPDATE", VIOLATION, LOCK, {"rule": "row-lock", "node": "LockingClause"}),
    ("SELECT $1", VIOLATION, BIND.format("$1"), {"rule": "bind-parameter", "node": "ParamRef"}),
    (
        "SELECT merge_action()",  # a node kind outside the allowlist, named
        VIOLATION,
        f"The query contains a construct that is not allowed (MergeSupportFunc). {SEND} that only reads.",
        {"rule": "forbidden-node", "node": "MergeSupportFunc"},
    ),
    (
        "SELECT pg_catalog.pg_sleep(1)",
        VIOLATION,
        "The function pg_catalog.pg_sleep() is not allowed: it only waits, holding a connection. "
        "Remove it from the query.",
        {"rule": "denied-function", "function": "pg_catalog.pg_sleep"},
    ),
    (
        f"SELECT {LONG_DENIED}()",
        VIOLATION,
        # PostgreSQL cuts a name to 63 bytes, as it would to look the function up
        f"The function {LONG_DENIED[:63]}() is not allowed: {UPGRADE}. Remove it from the query.",
        {"rule": "denied-function", "function": LONG_DENIED[:63]},
    ),
    (
        "SELECT pg_catalog.lpad('x', 2000000)",
        VIOLATION,
        "lpad() with a length of 2,000,000 would build a huge value in the server's memory; use a "
        "length of at most 1,000,000.",
        {"rule": "oversized-value", "function": "lpad"},
    ),
]


@pytest.mark.parametrize(("sql", "kind", "detail", "metadata"), REFUSALS)
def test_each_refusal_has_its_exact_problem(
    sql: Any, kind: type[ProblemError], detail: str, metadata: dict[str, str]
) -> None:
    with pytest.raises(ProblemError) as caught:
        vet_sql(sql, max_rows=10)
    assert type(caught.value) is kind
    assert caught.value.detail == detail
    assert caught.value.invalid_params == ("sql",)
    assert caught.value.metadata == metadata


@pytest.mark.parametrize("max_rows", [0, -1, True, 2.0, "5"])
def test_a_bad_max_rows_is_refused_against_max_rows(max_rows: Any) -> None:
    with pytest.raises(ProblemError) as caught:
        vet_sql("SELECT 1", max_rows=max_rows)
    assert type(caught.value) is InvalidArgumentsError
    assert caught.value.detail == "max_rows must be a positive integer."
    assert caught.value.invalid_params == ("max_rows",)
    assert caught.value.metadata == {}


# --- the sqlglot walk's own words ----------------------------------------------------------------


def _smuggled(child: exp.Expr) -> exp.Expr:
    tree = sqlglot.parse_one("SELECT 1", read="postgres")
    tree.set("where", child)
    return tree


def _parsed(sql: str) -> exp.Expr:
    return sqlglot.parse_one(sql, read="postgres")


COMMAND = "The query is not allowed: {} is a command the validator cannot inspect. " + SEND + "."
CONSTRUCT = "The query is not allowed: it contains a {} construct. " + SEND + " that only reads."

# (the tree the walk is given, detail, rule); every one a QueryViolationError against `sql`
SQLGLOT_REFUSALS: list[tuple[exp.Expr, str, str | dict[str, str]]] = [
    # sqlglot keeps the whole name: it is echoed to 64 characters at most, the last one an ellipsis
    (
        _parsed(f"SELECT {LONG_DENIED}()"),
        f"The function {LONG_DENIED[:63]}…() is not allowed: {UPGRADE}. Remove it from the query.",
        {"rule": "denied-function", "function": f"{LONG_DENIED[:63]}…"},
    ),
    (_parsed("DELETE FROM t"), f"{ONLY}. {SEND}.", "root-not-select"),
    (_smuggled(_parsed("UPDATE t SET a = 1")), DATA_MODIFYING.format("UPDATE"), "data-modifying"),
    (_smuggled(_parsed("SELECT 1 INTO t")), INTO, "select-into"),
    (_smuggled(_parsed("SELECT 1 FROM t FOR UPDATE")), LOCK, "row-lock"),
    (_smuggled(_parsed("SELECT :name")), BIND.format("$1, %s, :name, ?"), "bind-parameter"),
    (_smuggled(_parsed("VACUUM t")), COMMAND.format("VACUUM"), "opaque-command"),
    # a command's name is echoed to 32 characters at most, the last one an ellipsis
    (_smuggled(exp.Command(this="vacuum" * 7)), COMMAND.format("VACUUM" * 5 + "V…"), "opaque-command"),
    (_smuggled(_parsed("GRANT SELECT ON t TO r")), CONSTRUCT.format("GRANT"), "forbidden-node"),
]


@pytest.mark.parametrize(("tree", "detail", "rule"), SQLGLOT_REFUSALS)
def test_each_refusal_of_the_sqlglot_walk_has_its_exact_problem(
    tree: exp.Expr, detail: str, rule: str | dict[str, str]
) -> None:
    with pytest.raises(ProblemError) as caught:
        sqlglot_walk.check_sqlglot(tree)
    assert type(caught.value) is QueryViolationError
    assert caught.value.detail == detail
    assert caught.value.invalid_params == ("sql",)
    assert caught.value.metadata == (rule if isinstance(rule, dict) else {"rule": rule})


def test_sqlglot_counting_more_statements_than_postgres_is_refused_in_its_own_words() -> None:
    with pytest.raises(ProblemError) as caught:
        sqlglot_walk.parse_sqlglot("SELECT 1; SELECT 2")
    assert type(caught.value) is QueryViolationError
    assert caught.value.detail == (
        "The query holds 2 statements as read by the validator; only one is allowed. Remove "
        "semicolons and any text after the statement."
    )
    assert caught.value.invalid_params == ("sql",)
    assert caught.value.metadata == {"rule": "multiple-statements"}


# --- the text that runs: the caller's statement, unchanged, inside the outer LIMIT ------------------

CALLER = "VALUES (1) ORDER BY 1"
# Texts that are not `SELECT * FROM (<CALLER>) AS q LIMIT 11`, each refused as a failed rewrite.
NOT_THE_WRAPPER = [
    "SELECT * FROM (\nVALUES (1) ORDER BY 1\n) AS q",  # the outer LIMIT is gone
    "SELECT * FROM (\nVALUES (1) ORDER BY 1\n) AS q LIMIT 10",  # another one than applied
    "SELECT * FROM (\nVALUES (2) ORDER BY 1\n) AS q LIMIT 11",  # another statement inside
    "SELECT * FROM (\nVALUES  (1) ORDER BY 1\n) AS q LIMIT 11",  # the same, moved
    "SELECT * FROM (\nVALUES (1) ORDER BY 1\n) AS q WHERE true LIMIT 11",  # a clause added
    "SELECT * FROM (\nVALUES (1) ORDER BY 1\n) AS r LIMIT 11",  # another alias
    "SELECT 1 FROM (\nVALUES (1) ORDER BY 1\n) AS q LIMIT 11",  # another target list
    "SELECT * FROM (\nVALUES (1) ORDER BY 1\n) AS q, t LIMIT 11",  # another relation
    "SELECT * FROM t LIMIT 11",  # no subquery at all
]


def test_the_text_that_runs_is_the_caller_s_own_inside_the_limit() -> None:
    executed, shift = wrap(f" ;/* x */ {CALLER}; -- y", 11)
    assert executed == f"SELECT * FROM (\n{CALLER}\n) AS q LIMIT 11"
    original = check_postgres(f" ;/* x */ {CALLER}; -- y", executed=False).root
    check_wrapped(check_postgres(executed, executed=True).root, original, 11, shift)


@pytest.mark.parametrize("executed", NOT_THE_WRAPPER)
def test_a_text_that_is_not_the_caller_s_inside_the_limit_is_refused(executed: str) -> None:
    _, shift = wrap(CALLER, 11)
    original = check_postgres(CALLER, executed=False).root
    with pytest.raises(ProblemError) as caught:
        check_wrapped(check_postgres(executed, executed=True).root, original, 11, shift)
    assert type(caught.value) is BAD
    assert caught.value.detail == LIMIT_REWRITE
    assert caught.value.invalid_params == ("sql",)
    assert caught.value.metadata == {"rule": "limit-rewrite"}


class _GeneratorBug(Postgres):
    """The postgres dialect whose generator fails with a foreign exception."""

    def generate(self, expression: exp.Expr, copy: bool = True, **opts: Any) -> str:
        raise KeyError("sqlglot bug")


def test_sqlglot_never_writes_the_text_that_runs() -> None:
    vetted = vet_sql("SELECT a FROM t LIMIT 500", max_rows=10, dialect=_GeneratorBug())
    assert vetted == VettedQuery(sql="SELECT * FROM (\nSELECT a FROM t LIMIT 500\n) AS q LIMIT 11", limit=11)


# --- the cache ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sql", "kind", "detail", "metadata"), REFUSALS[:3] + REFUSALS[-4:])
def test_a_cached_refusal_is_the_same_problem_each_time(
    sql: Any, kind: type[ProblemError], detail: str, metadata: dict[str, str]
) -> None:
    policy = QueryPolicy(cache_size=4)
    for _ in range(3):
        with pytest.raises(ProblemError) as caught:
            policy.vet(sql, max_rows=10)
        assert type(caught.value) is kind
        assert caught.value.detail == detail
        assert caught.value.invalid_params == ("sql",)
        assert caught.value.metadata == metadata


# Each refusal of names as PostgreSQL resolves them and of work it cannot interrupt (issue 51), built
# as the walk builds it, in its whole words: class, detail, invalid_params and metadata.
WHOLE_REFUSALS = [
    (
        lambda: refusals.unsupported(),
        InvalidArgumentsError,
        UNSUPPORTED,
        {"rule": "unsupported-syntax"},
    ),
    (
        lambda: refusals.unlisted_function("pg_catalog.lo_import", "writes"),
        QueryViolationError,
        "The function pg_catalog.lo_import() is not allowed: it writes. Remove it from the query; "
        "docs/tools/read_only_sql.md lists the families of functions a query may call.",
        {"rule": "function-allow-list", "function": "pg_catalog.lo_import"},
    ),
    (
        lambda: refusals.unlisted_type("pg_catalog.regclass", "names objects by number"),
        QueryViolationError,
        "The type pg_catalog.regclass is not allowed: it names objects by number. Cast to an ordinary "
        "type, or name a table or column type the role may read: sql_schema lists them.",
        {"rule": "type-allow-list", "type": "pg_catalog.regclass"},
    ),
    (
        lambda: refusals.attribute_call("pg_typeof", "reads the catalogue"),
        QueryViolationError,
        "The query is not allowed: .pg_typeof in attribute notation (x.pg_typeof, (x).pg_typeof) is, "
        "where pg_typeof is not a column, PostgreSQL's call pg_typeof(x), and pg_typeof reads the "
        "catalogue. Name the column without its qualifier, or rename it in a subquery "
        "(SELECT ... AS other_name).",
        {"rule": "attribute-call", "function": "pg_typeof"},
    ),
    (
        lambda: refusals.built_operand("@> over an aggregate"),
        QueryViolationError,
        "The query is not allowed: @> over an aggregate. A value the query builds can be hundreds of "
        "MB, and PostgreSQL does not interrupt this work on one value until it ends, so it keeps the "
        "backend busy past the statement timeout. Apply it to stored columns and literals (filter "
        "rows rather than build one large value), or the operator may allow it for this source "
        "(MCP_SQL_ALLOW_UNINTERRUPTIBLE).",
        {"rule": "uninterruptible", "object": "@> over an aggregate"},
    ),
    (
        lambda: refusals.newer_syntax("JsonTable", 170000, 150007),
        QueryViolationError,
        "The query is not allowed: it uses SQL/JSON syntax (JsonTable) that PostgreSQL reads as such "
        "from version 17 on; this server is version 15, which reads the same words as a call of "
        "whatever function of that name its search path finds. Use the json/jsonb functions instead "
        "(json_build_object, jsonb_path_exists, ...).",
        {"rule": "newer-syntax", "node": "JsonTable"},
    ),
    (
        lambda: refusals.identifier_by_value("to_tsvector"),
        QueryViolationError,
        "The function to_tsvector() is not allowed with that first argument: its text search "
        "configuration (or dictionary) must be written as a string literal, such as "
        "to_tsvector('english', ...); a number or a computed value there picks one in any schema, "
        "whatever the role's privileges.",
        {"rule": "identifier-argument", "function": "to_tsvector"},
    ),
]


@pytest.mark.parametrize(("build", "kind", "detail", "metadata"), WHOLE_REFUSALS)
def test_each_refusal_of_a_resolved_name_or_of_uninterruptible_work_is_worded_whole(
    build: Callable[[], ProblemError], kind: type[ProblemError], detail: str, metadata: dict[str, Any]
) -> None:
    problem = build()  # built inside the test, as the walk builds it at a call
    assert type(problem) is kind
    assert problem.detail == detail
    assert problem.invalid_params == ("sql",)
    assert problem.metadata == metadata
