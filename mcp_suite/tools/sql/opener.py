"""The SQL family's opener: `open_sql(settings)` opens one `SqlEngine` per source
(`sql/sources.py`; `sql/engine/engine.py`: the role audit at start-up, the executor, the policy,
the database threads) and yields the family's toolset on them (`sql/engine/router.py` picks a call's
engine): `sql_schema`, `read_only_sql`, `explain_sql`, a schema resource per source, and each
source's curated tools (`sql/curated/`), judged here at start-up.

The only module that names the three tools; it imports their faces, which import no sibling.
Executors, pools and policies are built by the warm-up after the handshake (or the first call),
and the pools are closed on exit.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Collection, Hashable, Iterator
from typing import Final

from psycopg.conninfo import conninfo_to_dict

from mcp_suite.settings import Settings
from mcp_suite.tools.base import SourceState, StartupRefusedError, StartupUnavailableError, Toolset
from mcp_suite.tools.sql.curated import faces as curated_faces
from mcp_suite.tools.sql.engine.engine import SqlEngine, open_engine
from mcp_suite.tools.sql.engine.naming import log_prefix, schema_uri
from mcp_suite.tools.sql.engine.role_audit.reaudit import AuditGate
from mcp_suite.tools.sql.engine.router import SqlSources
from mcp_suite.tools.sql.explain_sql import tool as explain_tool
from mcp_suite.tools.sql.read_only_sql import tool as read_tool
from mcp_suite.tools.sql.sources import Source, load_sources
from mcp_suite.tools.sql.sql_schema import tool as schema_tool

__all__ = ["GUIDANCE", "open_sql"]

log = logging.getLogger(__name__)

GUIDANCE: Final = (
    "PostgreSQL: sql_schema shows the tables and columns the role may read, then read_only_sql "
    "runs one query at a time; explain_sql shows a query's plan."
)


@contextlib.contextmanager
def open_sql(
    settings: Settings, *, guard_hidden_rows: bool = True, stdio: bool = False
) -> Iterator[Toolset | None]:
    """Open an engine per source, yield the SQL tools and a schema resource per source; close the
    pools on exit.

    `guard_hidden_rows=False` serves `explain_sql` without its hidden-rows check: only the test that
    proves the check's worth (the oracle it closes) passes it; the registry never does.

    `stdio`: served over stdio, where no caller is verified. A source with an identity map reads
    only as the role each verified caller maps to (its login role reads nothing itself), so it is
    not offered there: not opened, not in the tools' `source`, the instructions or the resources;
    one log line says so (serve-http serves it).

    Raises `SettingsError` for an invalid configuration file, and, for the one source of
    `MCP_SQL_DSN`, StartupRefusedError (exit 78) when the role could do more than read
    (`open_engine`). With a file, a source whose start is refused refuses only its own calls.
    """
    sources = load_sources(settings)
    if stdio:
        for source in sources:
            if source.identity is not None:
                log.warning(
                    "%snot offered over stdio: it reads only as the role each verified caller maps to "
                    "(its identity map), and stdio has no verified caller; serve-http serves it",
                    log_prefix(source.name),
                )
        sources = tuple(source for source in sources if source.identity is None)
    if not sources:
        yield None
        return
    named = settings.config_file is not None
    with contextlib.ExitStack() as stack:
        engines: dict[str, SqlEngine] = {}
        refused: dict[str, str] = {}
        # Sources that audit one role the same way share its verdict: a re-audit of either
        # refuses (or serves) both at once, never one for an interval while the other serves. The
        # shared gate's log lines name every source it decides for.
        sharing: dict[Hashable, list[str]] = {}
        for source in sources:
            sharing.setdefault(_audit_key(source), []).append(source.name)
        gates = {key: AuditGate(source=", ".join(names) if named else None) for key, names in sharing.items()}
        for source in sources:
            gate = gates[_audit_key(source)]
            engine = _open_source(source, named=named, refused=refused, gate=gate)
            if engine is not None:
                stack.callback(engine.close)
                engines[source.name] = engine
        router = SqlSources(
            engines,
            refused,
            named=named,
            order=tuple(s.name for s in sources),
            curated_only=frozenset(s.name for s in sources if not s.free_sql),
            no_schema=frozenset(s.name for s in sources if not s.schema),
        )
        # Curated tools (issue 55): each judged now, as free SQL is, or refused with its name.
        curated, judgments = curated_faces.specs(
            tuple(tool for source in sources for tool in source.tools), router, verified=not stdio
        )
        for name, judged in judgments.items():
            if name in engines:
                curated_faces.judge_at_start(engines[name], judged)
        curated_faces.build_models(curated)
        described = {source.name: source.description for source in sources}
        if named:
            log.info("read_only_sql: sources at start-up: %s", summary(router.states()))
        yield Toolset(
            tools=(
                schema_tool.spec(router),
                read_tool.spec(router),
                explain_tool.spec(router, guard_hidden_rows=guard_hidden_rows),
                *curated,
            ),
            resources=tuple(
                schema_tool.resource(
                    engine,
                    f"postgres://{name}/schema" if named else schema_uri(engine.dsn),
                    name,
                    about=described[name] if named else None,
                )
                for name, engine in engines.items()
                if name not in router.no_schema
            ),
            warm_up=tuple(step for engine in engines.values() for step in engine.warm_up),
            guidance=_guidance(sources, named=named),
            guidance_for=functools.partial(_guidance_for, sources) if named else None,
            background=tuple(engine.serve_reaudit for engine in engines.values()),
            states=router.states,
        )


def _audit_key(source: Source) -> Hashable:
    """What a source's role audit depends on: the connection (server, database, login role: the
    password and the name shown aside), the mapped roles, and the settings the audit reads."""
    parts = conninfo_to_dict(source.dsn.get_secret_value())
    for secondary in ("password", "passfile", "application_name", "connect_timeout"):
        parts.pop(secondary, None)
    settings = source.settings
    return (
        tuple(sorted((key, str(value)) for key, value in parts.items())),
        source.identity.roles if source.identity is not None else (),
        settings.sql_accept_definer_functions,
        settings.sql_accept_function_creators,
        settings.sql_pooler,
        settings.sql_audit_dsn.get_secret_value() if settings.sql_audit_dsn is not None else None,
    )


def _open_source(
    source: Source, *, named: bool, refused: dict[str, str], gate: AuditGate | None = None
) -> SqlEngine | None:
    """The source's engine; with a configuration file, None (and why, in `refused`) for a source
    whose start is refused for a reason no re-audit lifts, while the others serve."""
    try:
        dsn = source.dsn.get_secret_value()
        return open_engine(
            source.settings,
            dsn,
            refuse_at_start=not named,
            identity=source.identity,
            source=source.name if named else None,
            gate=gate,
        )
    except (StartupRefusedError, StartupUnavailableError) as exc:
        if not named:
            raise
        log.critical("read_only_sql: the source %r is not served: %s", source.name, exc)
        refused[source.name] = "its start was refused (the server's log says why)"
        return None


def _guidance_for(sources: tuple[Source, ...], allowed: Collection[str]) -> str:
    """The guidance for a caller who may read only the `allowed` sources: it names no other (their
    names and descriptions are the operator's, not every caller's to read); none, no sentence."""
    mine = tuple(source for source in sources if source.name in allowed)
    return _guidance(mine, named=True) if mine else ""


# What each condition of a source means at start-up, for the summary line.
_AT_START: Final = {
    "serving": "serving",
    "unreachable": "not reachable (its calls get database-unavailable until it answers)",
    "login-refused": "refusing the server's login (its role, password or database: a line above says which)",
    "refused": "refused by the role audit (its calls are refused until a re-audit passes)",
    "unaudited": "not audited yet (its calls wait for an audit to pass)",
    "not-served": "not served (its start was refused; a restart after the fix serves it)",
}


def summary(states: list[SourceState]) -> str:
    """The start-up line's list: each source and what it does now, as the probe and the metrics
    see it (a source whose role is refused or whose database is down is not called served)."""
    return "; ".join(f"{state.name} {_AT_START.get(state.condition, state.condition)}" for state in states)


def _guidance(sources: tuple[Source, ...], *, named: bool) -> str:
    if not named:
        return GUIDANCE
    listed = "; ".join(f"{source.name}: {source.description}" for source in sources)
    return f"{GUIDANCE} Each takes source, one of: {listed}."
