"""Curated tools served (issue 55): each declaration's `ToolSpec`, and its judgment at start-up.

A curated tool is judged like free SQL: its statement goes through the source's SQL policy (with a
NULL of its declared type where each `$n` goes: `policy.judged_text`), PostgreSQL reads its
placeholders (their count and types must be those declared) and runs its plan (EXPLAIN, values
NULL) as each role that may call it (the login role, or every mapped role of the identity map),
through the executor's own guards (SECURITY DEFINER functions, the role's catalogue). A refusal is
a `StartupRefusedError` naming the tool (exit 78). A call runs the statement judged, with its
values bound (never spliced), in the transaction of `read_only_sql`; a guard that refuses it after
start-up (a function turned SECURITY DEFINER) stops that tool alone with `role-refused`.
Imports the engine and the family's modules, never an opener.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import trio

from mcp_suite.caller import current_caller
from mcp_suite.lazy import Lazy
from mcp_suite.problems import (
    DatabaseUnavailableError,
    ProblemError,
    QueryViolationError,
    RoleRefusedError,
    RoleUnauditedError,
)
from mcp_suite.protocol.mcp import EncodedResult
from mcp_suite.tools.base import StartupRefusedError, ToolSpec
from mcp_suite.tools.sql.curated.policy import CuratedTool, bound_values, input_schema, judged_text
from mcp_suite.tools.sql.engine.definers import DefinerGuard
from mcp_suite.tools.sql.engine.identity import CallRole
from mcp_suite.tools.sql.engine.pipeline import Bound
from mcp_suite.tools.sql.engine.ticket import CallTicket
from mcp_suite.tools.sql.read_only_sql.tool import result_json
from mcp_suite.tools.sql.statement_log import log_statement

if TYPE_CHECKING:
    from pydantic import BaseModel

    from mcp_suite.tools.sql.engine.engine import DescribedColumn, SqlEngine
    from mcp_suite.tools.sql.engine.policy import VettedQuery
    from mcp_suite.tools.sql.engine.router import SqlSources

__all__ = ["Judgment", "judge", "spec"]

log = logging.getLogger(__name__)

# What a mapped role is told it is while its tool is judged (no caller: the audit's own call).
_AUDIT_NAME: Final = "mcp-suite curated-tool audit"


class JudgmentRefusedError(Exception):
    """A curated tool the audit refuses; the message names the tool and why."""


@dataclass(frozen=True, slots=True)
class Judged:
    vetted: VettedQuery
    oids: tuple[int, ...]
    # The result's columns as PostgreSQL describes the statement (the login role's reading).
    columns: tuple[DescribedColumn, ...] = ()


class Judgment:
    """One tool's verdict: made at start-up, or by its first call when the database did not answer
    then. Thread-safe (the verdict is made once, under a lock)."""

    def __init__(self, tool: CuratedTool, definers: DefinerGuard) -> None:
        self.tool = tool
        # The source's guard for curated statements: no SECURITY DEFINER function, accepted or not.
        self.definers = definers
        self._judged: Judged | None = None
        self._lock = threading.Lock()

    @property
    def made(self) -> Judged | None:
        """The verdict if it was made (no lock, no I/O: a call then needs no thread to ask)."""
        return self._judged

    def get(self, engine: SqlEngine, ticket: CallTicket) -> Judged:
        """The verdict, judged now if it is not yet; blocking. Raises `JudgmentRefusedError`,
        or the database's problem (`DatabaseUnavailableError`) when it cannot be judged now."""
        with self._lock:
            if self._judged is None:
                self._judged = judge(engine, self.tool, self.definers)
            return self._judged


def _roles(engine: SqlEngine) -> list[CallRole | None]:
    """Who may call a tool of `engine`: the login role, or each role of its identity map."""
    if engine.identity is None:
        return [None]
    return [CallRole(role, "{}", _AUDIT_NAME) for role in engine.roles]


def judge(engine: SqlEngine, tool: CuratedTool, definers: DefinerGuard) -> Judged:
    """Judge `tool` as free SQL is judged, on `engine`; blocking. Raises `JudgmentRefusedError`
    naming the tool and the reason, or `DatabaseUnavailableError` when the database did not answer."""
    name = f"the curated tool {tool.served_name} (source {tool.source!r})"
    try:
        vetted = engine.vet_statement(judged_text(tool), tool.statement, tool.max_rows)
    except ProblemError as exc:
        raise JudgmentRefusedError(f"{name}: the SQL policy refuses its statement: {exc.detail}") from None
    declared = tuple(p.type.oid for p in tool.parameters)
    nulls = Bound(b"", (None,) * len(declared), declared)
    columns: tuple[DescribedColumn, ...] = ()
    for role in _roles(engine):
        who = f"as {role.role}" if role is not None else "as the login role"
        try:
            params, described = engine.describe_statement(
                tool.statement, CallTicket(cancel_timeout_s=engine.settings.sql_cancel_grace_s), role
            )
            read = tuple(params)
            columns = columns or tuple(described)
            if read != declared:
                raise JudgmentRefusedError(
                    f"{name}: PostgreSQL reads its parameters as {_types(engine, read)}, the declaration "
                    f"says {_types(engine, declared)} (each $n's type is PostgreSQL's reading of it; a "
                    "cast in the statement, $1::integer, fixes one)"
                )
            engine.run_curated(
                vetted,
                nulls,
                max_rows=1,
                max_bytes=tool.max_result_bytes,
                ticket=CallTicket(cancel_timeout_s=engine.settings.sql_cancel_grace_s),
                role=role,
                explain="plan",
                definers=definers,
            )
        except (DatabaseUnavailableError, RoleUnauditedError, RoleRefusedError):
            raise  # the source's own state, not the tool's: judged when the source serves
        except ProblemError as exc:
            raise JudgmentRefusedError(f"{name}: {who}, its statement cannot run: {exc.detail}") from None
    return Judged(vetted, declared, columns)


def _types(engine: SqlEngine, oids: tuple[int, ...]) -> str:
    from mcp_suite.tools.sql.curated.policy import PG_TYPES

    names = {t.oid: t.name for t in PG_TYPES.values()}
    return "(" + ", ".join(names.get(oid, f"oid {oid}") for oid in oids) + ")"


def judge_at_start(engine: SqlEngine, judgments: list[Judgment]) -> None:
    """Judge each tool now (start-up); blocking. Raises `StartupRefusedError` (exit 78) naming the
    first tool refused; a database that does not answer leaves the verdict to the first call."""
    for judgment in judgments:
        try:
            judgment.get(engine, CallTicket(cancel_timeout_s=engine.settings.sql_cancel_grace_s))
        except JudgmentRefusedError as exc:
            raise StartupRefusedError(str(exc)) from None
        except (DatabaseUnavailableError, RoleUnauditedError, RoleRefusedError):
            return  # judged by its first call, once the source serves


def build_models(specs: list[ToolSpec]) -> None:
    """Build each curated tool's models now (start-up): a declaration its arguments' checker
    cannot read is a start-up refusal naming the tool, never a failed call."""
    for spec in specs:
        try:
            spec.models.get()
        except Exception as exc:  # noqa: BLE001  # pydantic's SchemaError: the declaration's fault
            raise StartupRefusedError(
                f"the curated tool {spec.name}: its parameters cannot be checked: {exc}"
            ) from None


def _models(tool: CuratedTool) -> tuple[type[BaseModel], type[BaseModel]]:
    """The tool's strict arguments model (its declared types, bounds and allowed values; a bound
    parameter is no field, so an argument of its name is refused as unknown) and its result."""
    from typing import Annotated, Literal

    from pydantic import Field, create_model

    from mcp_suite.tools.models import StrictModel
    from mcp_suite.tools.sql.models import ReadOnlySqlResult

    python = {"string": str, "integer": int, "number": float, "boolean": bool}
    fields: dict[str, Any] = {}
    for p in tool.arguments:
        kind: Any = python[p.type.json]
        if p.enum:
            kind = Literal[p.enum]
        elif p.type.json == "string":
            kind = Annotated[str, Field(max_length=p.max_length or 1000, pattern=p.pattern or p.type.pattern)]
        elif p.type.json in ("integer", "number"):
            low = p.minimum if p.minimum is not None else p.type.low
            high = p.maximum if p.maximum is not None else p.type.high
            kind = Annotated[kind, Field(ge=low, le=high)]
        fields[p.name] = (kind, ...) if p.required else (kind | None, p.default)
    args = create_model(f"{tool.served_name}_args", __base__=StrictModel, **fields)
    return args, ReadOnlySqlResult


def output_schema(judgment: Judgment) -> dict[str, Any]:
    """The tool's `outputSchema`: the envelope of `read_only_sql`'s result, its `columns` and each
    row's values named and typed from PostgreSQL's description of the statement at start-up (each
    value's JSON type as the result's loaders write it). A tool not judged yet (the database did
    not answer at start-up) advertises the envelope alone, which its results also satisfy."""
    from mcp_suite.protocol.mcp import model_json_schema
    from mcp_suite.tools.sql.engine.convert import json_type
    from mcp_suite.tools.sql.models import ReadOnlySqlResult

    schema = model_json_schema(ReadOnlySqlResult)
    judged = judgment.made
    if judged is None or not judged.columns:
        return schema
    columns = judged.columns
    properties = schema["properties"]
    properties["columns"] = {
        "description": "The result's columns, in order",
        "type": "array",
        "prefixItems": [
            {
                "type": "object",
                "properties": {"name": {"const": c.name}, "type": {"const": c.type}},
                "required": ["name", "type"],
                "additionalProperties": False,
            }
            for c in columns
        ],
        # Exactly these, said with the lengths, not `items: false`: a client that reads an older
        # draft ignores `prefixItems`, and would then refuse every non-empty array.
        "minItems": len(columns),
        "maxItems": len(columns),
    }
    properties["rows"] = {
        "description": properties["rows"]["description"],
        "type": "array",
        "items": {
            "type": "array",
            "prefixItems": [{"title": c.name, **json_type(c.oid, c.category)} for c in columns],
            "minItems": len(columns),
            "maxItems": len(columns),
        },
    }
    return schema


def spec(tool: CuratedTool, judgment: Judgment, sources: SqlSources) -> ToolSpec:
    """The MCP tool of one declaration, on its source's engine."""

    async def call(args: BaseModel) -> EncodedResult:
        name, engine = sources.pick(tool.source)
        started, outcome, rows, role = time.perf_counter(), "error", None, None
        try:
            caller = current_caller.get()
            role = engine.role_for(caller)
            values = bound_values(
                tool,
                args.model_dump(),
                caller.subject if caller is not None else None,
                caller.claims if caller is not None else {},
            )
            judged = judgment.made
            if judged is None:  # not judged at start-up (the database did not answer then)
                judged = await engine.run_blocking(lambda ticket: _judged(judgment, engine, ticket))
            result = await engine.run_blocking(
                lambda ticket: engine.run_curated(
                    judged.vetted,
                    Bound(b"", tuple(values), judged.oids),
                    max_rows=tool.max_rows,
                    max_bytes=tool.max_result_bytes,
                    ticket=ticket,
                    role=role,
                    definers=judgment.definers,
                )
            )
            outcome, rows = "ok", len(result.rows)
        except QueryViolationError as exc:
            # The statement passed at start-up; a guard refusing it now is a change in the
            # database (a function turned SECURITY DEFINER): this tool stops, the others serve.
            outcome = "role-refused"
            raise _stopped(tool, exc.detail) from None
        except ProblemError as exc:
            outcome = exc.slug
            sources.name_problem(name, exc)
            raise
        except trio.Cancelled:
            outcome = "cancelled"
            raise
        finally:
            log_statement(
                tool=tool.served_name,
                sql=tool.statement,
                outcome=outcome,
                started=started,
                rows=rows,
                source=name if sources.named else None,
                role=role.role if role is not None else None,
            )
        hint = None
        if result.truncated:
            hint = (
                f"The tool returns at most {tool.max_rows} rows"
                f"{' within ' + str(tool.max_result_bytes) + ' bytes' if result.cut_at_bytes else ''}:"
                " narrow the question with its parameters."
            )
        return EncodedResult(
            result_json(
                [(c.name, c.type) for c in result.columns],
                result.rows_json,
                row_count=len(result.rows),
                truncated=result.truncated,
                hint=hint,
                invisible=result.invisible(),
            )
        )

    return ToolSpec(
        name=tool.served_name,
        title=tool.title,
        description=tool.description,
        models=Lazy(lambda: _models(tool)),
        call=call,
        scope=tool.scope,
        untrusted=True,  # database values
        advertised=lambda: input_schema(tool),
        advertised_output=lambda: output_schema(judgment),
    )


def _judged(judgment: Judgment, engine: SqlEngine, ticket: CallTicket) -> Judged:
    try:
        return judgment.get(engine, ticket)
    except JudgmentRefusedError as exc:
        raise _stopped(judgment.tool, str(exc)) from None


def _stopped(tool: CuratedTool, why: str) -> RoleRefusedError:
    return RoleRefusedError(
        f"The curated tool {tool.served_name} is stopped: its statement no longer passes the audit it "
        f"passed at start-up ({why}). An operator must review it; the other tools serve.",
        metadata={"tool": tool.served_name, "source": tool.source, "retryable": False},
    )


def specs(
    tools: tuple[CuratedTool, ...], sources: SqlSources, *, verified: bool
) -> tuple[list[ToolSpec], Mapping[str, list[Judgment]]]:
    """The specs of the tools served (a tool bound to claims only where callers are `verified`),
    and each source's judgments to make at start-up."""
    served: list[ToolSpec] = []
    by_source: dict[str, list[Judgment]] = {}
    guards: dict[str, DefinerGuard] = {}
    for tool in tools:
        if tool.bound and not verified:
            log.warning(
                "the curated tool %s is not offered over stdio: a parameter is bound to the caller's "
                "verified token, and stdio has no verified caller; serve-http serves it",
                tool.served_name,
            )
            continue
        if tool.source not in guards:
            engine = sources.engines.get(tool.source)
            cache_s = engine.settings.sql_function_cache_s if engine is not None else 60.0
            guards[tool.source] = DefinerGuard(cache_s=cache_s)
            if engine is not None:
                engine.curated_guards.append(guards[tool.source])
        judgment = Judgment(tool, guards[tool.source])
        by_source.setdefault(tool.source, []).append(judgment)
        served.append(spec(tool, judgment, sources))
    return served, by_source
