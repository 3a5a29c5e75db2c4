"""`read_only_sql`: thin async glue (docs/tools/). args → policy → executor in a worker thread → result.

`open_read_only_sql(settings)` audits the role (refusing to start, exit 78, when it could do more than
read) and yields the tool, `sql_schema` (`tools/sql_schema/`) and `explain_sql` (`tools/explain_sql/`,
through this tool's own policy call and execution path, `_vet_and_run`, then its hidden-rows
check), all on the same executor and threads, and the `postgres://<db>/schema` resource (served by
`sql_schema`'s code). The executor, its pool and the policy are built by the warm-up after the
handshake (or the first call), and the pool is closed on exit. A cancelled or timed-out call
cancels its query inside PostgreSQL and waits (shielded, bounded) for the connection to come back
clean before `trio.Cancelled` propagates. Database worker threads are limited to the pool size.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
import trio

import mcp_suite.tools.explain_sql.tool as explain_tool
from mcp_suite.lazy import Lazy
from mcp_suite.offload import run_in_db_thread
from mcp_suite.problems import ProblemError
from mcp_suite.protocol.mcp import EncodedResult
from mcp_suite.settings import Settings
from mcp_suite.tools.base import (
    ResourceSpec,
    StartupRefusedError,
    StartupUnavailableError,
    Toolset,
    ToolSpec,
)
from mcp_suite.tools.read_only_sql.availability import Availability
from mcp_suite.tools.read_only_sql.naming import schema_uri
from mcp_suite.tools.read_only_sql.role_audit.connect import TlsRefusedError, audit_role, connection_failure
from mcp_suite.tools.read_only_sql.role_audit.finding import format_findings, refusals
from mcp_suite.tools.read_only_sql.role_audit.reaudit import AuditGate, audit_once, serve_reaudit
from mcp_suite.tools.read_only_sql.statement_log import log_statement
from mcp_suite.tools.read_only_sql.ticket import CallTicket
from mcp_suite.tools.sql_schema import tool as schema_tool

if TYPE_CHECKING:
    from mcp_suite.tools.explain_sql.models import ExplainSqlArgs, ExplainSqlResult
    from mcp_suite.tools.read_only_sql.executor import Executor, ExplainMode, QueryResult
    from mcp_suite.tools.read_only_sql.models import ReadOnlySqlArgs, ReadOnlySqlResult
    from mcp_suite.tools.read_only_sql.policy import QueryPolicy
    from mcp_suite.tools.read_only_sql.role_audit.finding import Finding
    from mcp_suite.tools.sql_schema.models import SqlSchemaArgs, SqlSchemaResult

__all__ = ["open_read_only_sql"]

log = logging.getLogger(__name__)

T = TypeVar("T")

TOOL_NAME = "read_only_sql"

GUIDANCE = (
    "PostgreSQL: sql_schema shows the tables and columns the role may read, then read_only_sql "
    "runs one query at a time; explain_sql shows a query's plan."
)
DESCRIPTION = (
    "Run ONE read-only SQL query (SELECT, VALUES, UNION/INTERSECT/EXCEPT; PostgreSQL dialect) and "
    "get its columns and rows as JSON. Find tables and columns with sql_schema first. Writes, "
    "DDL, several statements, bind parameters and functions with side effects are refused. At "
    "most `max_rows` rows are returned (`truncated` says more existed); size and time are capped."
)


@contextlib.contextmanager
def open_read_only_sql(settings: Settings, *, guard_hidden_rows: bool = True) -> Iterator[Toolset | None]:
    """Audit the role, yield the tool and the schema resource; close the pool on exit.

    `guard_hidden_rows=False` serves `explain_sql` without its hidden-rows check: only the test that
    proves the check's worth (the oracle it closes) passes it; the registry never does.

    Raises StartupRefusedError (exit 78) when the role could do more than read. A database that
    cannot be connected to at start-up (down, or refusing the role) is not fatal: the log says why,
    calls get -32603 until a connection succeeds, and the audit then runs before the first query.
    The executor and its pool (and the SQL policy) are not needed to answer `initialize`: the
    warm-up after the handshake, or the first call, builds them.
    """
    if settings.sql_dsn is None:
        yield None
        return
    dsn = settings.sql_dsn.get_secret_value()
    availability = Availability(max_backoff_s=settings.sql_reconnect_max_s)
    gate = AuditGate()
    audited = _audit_at_start(dsn, settings, availability, gate)
    database = Lazy(
        functools.partial(
            _open_executor, settings, dsn, audited=audited, availability=availability, gate=gate
        )
    )
    if settings.sql_allow_catalogue:
        log.warning(
            "read_only_sql: MCP_SQL_ALLOW_CATALOGUE is true: queries read pg_catalog unfiltered "
            "(other objects' names, definitions and comments, role names, other sessions' queries, "
            "the server's address)"
        )
    policy = Lazy(
        functools.partial(_build_policy, settings.sql_policy_cache_size, settings.sql_allow_catalogue)
    )
    # Built on first use, inside `trio.run`: it must belong to the running trio loop.
    db_limiter = trio.CapacityLimiter(settings.sql_pool_max_size)
    grace = settings.sql_cancel_grace_s

    async def call(args: ReadOnlySqlArgs) -> EncodedResult:
        started, outcome, rows = time.perf_counter(), "error", None
        try:
            # The policy runs in the worker thread too: an uncached verdict costs milliseconds of
            # parsing that must not stall the event loop (pings, other calls).
            result = await run_in_db_thread(
                functools.partial(_vet_and_run, database, policy, args.sql, args.max_rows),
                CallTicket(cancel_timeout_s=grace),
                limiter=db_limiter,
                cancel_grace_s=grace,
            )
            outcome, rows = "ok", len(result.rows)
        except ProblemError as exc:
            outcome = exc.slug
            raise
        except trio.Cancelled:
            outcome = "cancelled"
            raise
        finally:
            log_statement(tool=TOOL_NAME, sql=args.sql, outcome=outcome, started=started, rows=rows)
        from mcp_suite.tools.read_only_sql.models import result_json  # loaded with the models

        columns = [(c.name, c.type) for c in result.columns]
        return EncodedResult(
            result_json(columns, result.rows_json, row_count=len(result.rows), truncated=result.truncated)
        )

    async def explain(args: ExplainSqlArgs) -> ExplainSqlResult:
        # read_only_sql's own path: the same policy verdict and rewrite, the same execution.
        output = await run_in_db_thread(
            functools.partial(
                _vet_and_explain,
                database,
                policy,
                args.sql,
                args.max_rows,
                analyze=args.analyze,
                guard_hidden_rows=guard_hidden_rows,
            ),
            CallTicket(cancel_timeout_s=grace),
            limiter=db_limiter,
            cancel_grace_s=grace,
        )
        return explain_tool.result_of(output, analyze=args.analyze)

    def models() -> tuple[type[ReadOnlySqlArgs], type[ReadOnlySqlResult]]:
        from mcp_suite.tools.read_only_sql.models import ReadOnlySqlResult, make_args_model

        return make_args_model(settings.sql_max_rows), ReadOnlySqlResult

    async def read_schema() -> str:
        schema = await run_in_db_thread(
            functools.partial(
                _read_schema,
                database,
                max_objects=settings.sql_schema_max_tables,
                max_bytes=settings.sql_max_result_bytes,
                comment_chars=settings.sql_schema_max_comment_chars,
            ),
            CallTicket(cancel_timeout_s=grace),
            limiter=db_limiter,
            cancel_grace_s=grace,
        )
        return json.dumps(schema, ensure_ascii=True, separators=(",", ":"))

    async def describe(args: SqlSchemaArgs) -> SqlSchemaResult:
        return await run_in_db_thread(
            functools.partial(
                _describe,
                database,
                args,
                max_bytes=settings.sql_max_result_bytes,
                comment_chars=settings.sql_schema_max_comment_chars,
            ),
            CallTicket(cancel_timeout_s=grace),
            limiter=db_limiter,
            cancel_grace_s=grace,
        )

    uri = schema_uri(dsn)
    tool = ToolSpec(
        name=TOOL_NAME,
        title="Read-only SQL",
        description=DESCRIPTION,
        models=Lazy(models),
        call=call,
    )
    schema_spec = ToolSpec(
        name=schema_tool.TOOL_NAME,
        title=schema_tool.TITLE,
        description=schema_tool.DESCRIPTION,
        models=Lazy(schema_tool.models),
        call=describe,
    )
    explain_spec = ToolSpec(
        name=explain_tool.TOOL_NAME,
        title=explain_tool.TITLE,
        description=explain_tool.DESCRIPTION,
        models=Lazy(functools.partial(explain_tool.models, settings.sql_max_rows)),
        call=explain,
    )
    resource = ResourceSpec(
        uri=uri,
        name="schema",
        title="Database schema",
        description=(
            "The tables and columns the read_only_sql role can query (JSON, as sql_schema): the first"
            " page; pass its next_cursor to sql_schema as cursor for the rest."
        ),
        mime_type="application/json",
        read=read_schema,
    )
    reaudit = functools.partial(
        serve_reaudit,
        gate,
        functools.partial(_reaudit, dsn, settings, database),
        interval_s=settings.sql_reaudit_interval_s,
    )
    try:
        # The pool connects in the background while the policy's parsers load; then the type names.
        warm_up = (database.get, policy.get, functools.partial(_preload_type_names, database, audited))
        yield Toolset(
            tools=(schema_spec, tool, explain_spec),
            resources=(resource,),
            warm_up=warm_up,
            guidance=GUIDANCE,
            background=(reaudit,),
        )
    finally:
        executor = database.close()
        if executor is not None:
            executor.close()


def _open_executor(
    settings: Settings, dsn: str, *, audited: bool, availability: Availability, gate: AuditGate
) -> Executor:
    """The executor, its pool open (connections come in the background); blocking.

    Built on first need (the warm-up, or the first call): the executor module brings psycopg_pool
    and the type loaders, and opening the pool starts its threads and a connection, none of which
    is needed to answer `initialize`.
    """
    from mcp_suite.tools.read_only_sql.executor import Executor  # deferred on purpose

    executor = Executor(settings, dsn, availability=availability, gate=gate)
    if audited:
        executor.mark_audited()
    executor.open()
    return executor


def _reaudit(dsn: str, settings: Settings, database: Lazy[Executor]) -> list[Finding] | None:
    """One re-audit (blocking, in its worker thread): the whole role audit on its own connection,
    and, when the executor exists, its definer guard's catalogue refreshed on the same one."""
    try:
        executor = database.get() if database.built else None  # never built here: off the warm-up
    except RuntimeError:  # the tool closed under an abandoned re-audit (shutdown)
        executor = None
    return audit_once(dsn, settings, refresh=executor.definers.refresh if executor is not None else None)


def _preload_type_names(database: Lazy[Executor], audited: bool) -> None:
    """Every type name, read once on the pool's first connection (after a passed audit)."""
    if not audited:
        return
    try:
        database.get().preload_type_names()
    except psycopg.Error:
        # Not fatal: a call looks up the names it meets (the database may be back by then).
        log.info("read_only_sql: type names not preloaded (the database did not answer)")


def _build_policy(cache_size: int, allow_catalogue: bool) -> QueryPolicy:
    """The SQL policy, imported off the start-up path (built by a `Lazy`).

    sqlglot and pglast are the largest imports of the server (bench_sql's all-tools cold start),
    and answering `initialize` does not need them. Building it is the tool's warm-up
    step: the session runs it in a worker thread right after the handshake; a call that needs the
    policy before that is done waits for it (in its worker thread), so no call is ever vetted by
    anything less.
    """
    from mcp_suite.tools.read_only_sql.policy import QueryPolicy, vet_sql  # deferred on purpose

    return QueryPolicy(cache_size=cache_size, vet=functools.partial(vet_sql, allow_catalogue=allow_catalogue))


def _vet_and_run(
    database: Lazy[Executor],
    policy: Lazy[QueryPolicy],
    sql: str,
    max_rows: int,
    ticket: CallTicket,
    *,
    explain: ExplainMode | None = None,
) -> QueryResult:
    vetted = policy.get().vet(sql, max_rows=max_rows)
    return database.get().run_vetted(vetted, max_rows=max_rows, ticket=ticket, explain=explain)


def _vet_and_explain(
    database: Lazy[Executor],
    policy: Lazy[QueryPolicy],
    sql: str,
    max_rows: int,
    ticket: CallTicket,
    *,
    analyze: bool,
    guard_hidden_rows: bool,
) -> Any:
    """EXPLAIN's JSON for `explain_sql`, refused when the plan reads rows the role may not select.

    Security: the check reads the plan PostgreSQL made (views expanded, every scan and index), so
    it judges what runs, not what the query names; it comes after the EXPLAIN, so an `analyze` of
    a refused plan has run (as read_only_sql would run the same query) but none of its figures
    leave this function.
    """
    result = _vet_and_run(database, policy, sql, max_rows, ticket, explain="analyze" if analyze else "plan")
    output, too_deep = explain_tool.plan_document(explain_tool.output_of(result))
    if guard_hidden_rows:
        explain_tool.check_hidden_rows(database.get(), output, ticket, analyze=analyze)
    # Only after the hidden-rows check: a plan's depth follows the plan chosen, and that choice
    # comes from statistics, so refusing a deep plan first would tell about hidden rows.
    if too_deep:
        raise explain_tool.too_deep_refusal()
    return output


def _read_schema(
    database: Lazy[Executor], ticket: CallTicket, *, max_objects: int, max_bytes: int, comment_chars: int
) -> dict[str, Any]:
    # The first page of the unfiltered listing; `next_cursor` continues it through `sql_schema`
    # (a resource read takes no cursor: docs/tools/sql_schema.md, "The schema resource").
    return schema_tool.read_dict(
        database.get(), ticket, max_objects=max_objects, max_bytes=max_bytes, comment_chars=comment_chars
    )


def _describe(
    database: Lazy[Executor], args: SqlSchemaArgs, ticket: CallTicket, *, max_bytes: int, comment_chars: int
) -> SqlSchemaResult:
    executor = database.get()
    return schema_tool.read_sync(executor, args, ticket, max_bytes=max_bytes, comment_chars=comment_chars)


def _audit_at_start(dsn: str, settings: Settings, availability: Availability, gate: AuditGate) -> bool:
    """The start-up role audit (blocking, bounded by the connect timeout).

    True when the role passed; False when no connection could be made (the executor then audits
    before the first query); raises StartupRefusedError when the role could do more, or when the
    server's TLS certificate is refused (sslmode verify-ca / verify-full), and
    StartupUnavailableError when no connection could be made and the operator requires one.
    """
    try:
        findings = audit_role(dsn, settings)
    except TlsRefusedError as exc:
        raise StartupRefusedError(str(exc)) from None
    except psycopg.OperationalError as exc:
        if settings.sql_require_database:
            raise StartupUnavailableError(
                f"no connection to the database ({connection_failure(exc)}) and "
                "MCP_SQL_REQUIRE_DATABASE is true"
            ) from None
        # Down, or up but refusing this role (a wrong password, a missing database): the log says
        # which, since the fix differs; calls get database-unavailable, and the role audit runs
        # before the first query.
        availability.failed(exc, at_start=True)
        return False
    if refusals(findings):
        raise StartupRefusedError(format_findings(findings))
    gate.record(findings)  # logs the warnings: the risks the operator accepted, and the others
    return True
