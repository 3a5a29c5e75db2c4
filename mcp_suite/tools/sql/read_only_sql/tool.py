"""`read_only_sql`: thin async glue (docs/tools/). args → the engine's policy and executor in a
worker thread → result.

`open_read_only_sql(settings)` opens one `SqlEngine` per source (`mcp_suite.sources`;
`sql/engine/engine.py`: the role audit at start-up, the executor, the policy, the database threads)
and yields the SQL toolset on them (`sql/engine/router.py` picks a call's engine): `sql_schema`
(`tools/sql/sql_schema/`), this tool, `explain_sql` (`tools/sql/explain_sql/`) and a schema resource per
source (served by `sql_schema`'s code). Executors, pools and policies are built by the warm-up
after the handshake (or the first call), and the pools are closed on exit.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

import trio

import mcp_suite.tools.sql.explain_sql.tool as explain_tool
from mcp_suite.caller import current_caller
from mcp_suite.lazy import Lazy
from mcp_suite.problems import ProblemError
from mcp_suite.protocol.mcp import EncodedResult
from mcp_suite.settings import Settings
from mcp_suite.sources import Source, load_sources
from mcp_suite.tools.base import StartupRefusedError, StartupUnavailableError, Toolset, ToolSpec
from mcp_suite.tools.sql import SCOPE
from mcp_suite.tools.sql.engine.engine import SqlEngine, open_engine
from mcp_suite.tools.sql.engine.naming import schema_uri
from mcp_suite.tools.sql.engine.router import SqlSources, with_source
from mcp_suite.tools.sql.read_only_sql.statement_log import log_statement
from mcp_suite.tools.sql.sql_schema import tool as schema_tool

if TYPE_CHECKING:
    from mcp_suite.tools.sql.read_only_sql.models import ReadOnlySqlArgs, ReadOnlySqlResult

__all__ = ["open_read_only_sql", "spec"]

log = logging.getLogger(__name__)

TOOL_NAME = "read_only_sql"

GUIDANCE = (
    "PostgreSQL: sql_schema shows the tables and columns the role may read, then read_only_sql "
    "runs one query at a time; explain_sql shows a query's plan."
)
# What it runs and what a result carries (output schemas are not shown to the model); the order of
# use is the instructions' (GUIDANCE), each limit is told by the refusal or hint that meets it.
DESCRIPTION = (
    "Run one read-only PostgreSQL query: SELECT, VALUES or a set operation, literals inline (no $1 "
    "parameters). Returns columns [{name, type}], rows (arrays in column order), row_count and "
    "truncated; a truncated result's hint says how to read on."
)


@contextlib.contextmanager
def open_read_only_sql(settings: Settings, *, guard_hidden_rows: bool = True) -> Iterator[Toolset | None]:
    """Open an engine per source, yield the SQL tools and a schema resource per source; close the
    pools on exit.

    `guard_hidden_rows=False` serves `explain_sql` without its hidden-rows check: only the test that
    proves the check's worth (the oracle it closes) passes it; the registry never does.

    Raises `SettingsError` for an invalid configuration file, and, for the one source of
    `MCP_SQL_DSN`, StartupRefusedError (exit 78) when the role could do more than read
    (`open_engine`). With a file, a source whose start is refused refuses only its own calls.
    """
    sources = load_sources(settings)
    if not sources:
        yield None
        return
    named = settings.config_file is not None
    with contextlib.ExitStack() as stack:
        engines: dict[str, SqlEngine] = {}
        refused: dict[str, str] = {}
        for source in sources:
            engine = _open_source(source, named=named, refused=refused)
            if engine is not None:
                stack.callback(engine.close)
                engines[source.name] = engine
        if named:
            log.info(
                "read_only_sql: sources served: %s; not served: %s",
                ", ".join(engines) or "(none)",
                ", ".join(refused) or "(none)",
            )
        router = SqlSources(engines, refused, named=named, order=tuple(s.name for s in sources))
        yield Toolset(
            tools=(
                schema_tool.spec(router),
                spec(router),
                explain_tool.spec(router, guard_hidden_rows=guard_hidden_rows),
            ),
            resources=tuple(
                schema_tool.resource(engine, f"postgres://{name}/schema" if named else schema_uri(dsn), name)
                for name, engine in engines.items()
                for dsn in (engine.dsn,)
            ),
            warm_up=tuple(step for engine in engines.values() for step in engine.warm_up),
            guidance=_guidance(sources, named=named),
            background=tuple(engine.serve_reaudit for engine in engines.values()),
            states=router.states,
        )


def _open_source(source: Source, *, named: bool, refused: dict[str, str]) -> SqlEngine | None:
    """The source's engine; with a configuration file, None (and why, in `refused`) for a source
    whose start is refused for a reason no re-audit lifts, while the others serve."""
    try:
        dsn = source.dsn.get_secret_value()
        return open_engine(source.settings, dsn, refuse_at_start=not named, identity=source.identity)
    except (StartupRefusedError, StartupUnavailableError) as exc:
        if not named:
            raise
        log.critical("read_only_sql: the source %r is not served: %s", source.name, exc)
        refused[source.name] = "its start was refused (the server's log says why)"
        return None


def _guidance(sources: tuple[Source, ...], *, named: bool) -> str:
    if not named:
        return GUIDANCE
    listed = "; ".join(f"{source.name}: {source.description}" for source in sources)
    return f"{GUIDANCE} Each takes source, one of: {listed}."


def spec(sources: SqlSources) -> ToolSpec:
    """The tool on the sources' engines."""

    async def call(args: ReadOnlySqlArgs) -> EncodedResult:
        name, engine = sources.pick(getattr(args, "source", None))
        max_rows = sources.max_rows(name, engine, args)
        started, outcome, rows, role = time.perf_counter(), "error", None, None
        try:
            role = engine.role_for(current_caller.get())  # None without an identity map
            result = await engine.run_blocking(
                lambda ticket: engine.vet_and_run(args.sql, max_rows, ticket, role=role)
            )
            outcome, rows = "ok", len(result.rows)
        except ProblemError as exc:
            outcome = exc.slug
            sources.name_problem(name, exc)
            raise
        except trio.Cancelled:
            outcome = "cancelled"
            raise
        finally:
            log_statement(
                tool=TOOL_NAME,
                sql=args.sql,
                outcome=outcome,
                started=started,
                rows=rows,
                source=name if sources.named else None,
                role=role.role if role is not None else None,
            )
        from mcp_suite.tools.sql.engine.result import invisible_report, may_hide
        from mcp_suite.tools.sql.read_only_sql.models import result_json, truncation_hint  # with the models

        columns = [(c.name, c.type) for c in result.columns]
        row_count = len(result.rows)
        hint = None
        if result.truncated:
            settings = engine.settings
            hint = truncation_hint(
                row_count,
                cut_at_bytes=result.cut_at_bytes,
                max_rows_limit=settings.sql_max_rows,
                max_bytes=settings.sql_max_result_bytes,
            )
        # Values are returned as stored; those hiding characters are counted (json_rows kept room).
        invisible = invisible_report(result.rows, result.columns) if may_hide(result.rows_json) else None
        return EncodedResult(
            result_json(
                columns,
                result.rows_json,
                row_count=row_count,
                truncated=result.truncated,
                hint=hint,
                invisible=invisible,
            )
        )

    def models() -> tuple[type[ReadOnlySqlArgs], type[ReadOnlySqlResult]]:
        from mcp_suite.tools.sql.read_only_sql.models import ReadOnlySqlResult, make_args_model

        arguments = with_source(make_args_model(sources.max_rows_limit), sources)
        return cast("type[ReadOnlySqlArgs]", arguments), ReadOnlySqlResult

    return ToolSpec(
        name=TOOL_NAME,
        title="Read-only SQL",
        description=DESCRIPTION,
        models=Lazy(models),
        call=call,
        scope=SCOPE,
        untrusted=True,  # database values
    )
