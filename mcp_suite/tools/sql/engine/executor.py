"""The read-only executor: one call's transaction for the SQL tools (docs/tools/read_only_sql.md).

Owns the call: after the audit gate (`audit_gate.py`), on a connection from `connections.py`, one
round trip (`pipeline.py`) of BEGIN READ ONLY, the pinned settings' check or setting, the role
switch, the query through a named cursor (statement timeout, `max_rows + 1` rows, the byte cap),
ROLLBACK and the reset; its errors mapped by `sqlstate.classify` (only a broken connection is
`database-unavailable`). Must not open, pin or retry connections; no trio: worker threads only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn, TypeVar

import psycopg
from psycopg import pq
from psycopg.sql import quote as sql_quote

from mcp_suite.problems import (
    DatabaseUnavailableError,
    IdentityChangedError,
    ProblemError,
    ResultTooLargeError,
)
from mcp_suite.settings import Settings
from mcp_suite.tools.sql.engine.audit_gate import CallGate
from mcp_suite.tools.sql.engine.availability import Availability
from mcp_suite.tools.sql.engine.connections import (
    PIN_CHECK_FAILED,
    Connections,
    PinnedConnection,
    pinned_settings,
    refuse_unpinned,
    reset_statements,
    session_role_changed,
)
from mcp_suite.tools.sql.engine.definers import DefinerGuard
from mcp_suite.tools.sql.engine.identity import CLAIMS_SETTING, CallRole
from mcp_suite.tools.sql.engine.names import NameGuard
from mcp_suite.tools.sql.engine.pipeline import Bound, run_pipeline
from mcp_suite.tools.sql.engine.result import (
    Column,
    QueryResult,
    description,
    json_rows,
    load_rows,
    plan_json,
    too_large,
)
from mcp_suite.tools.sql.engine.role_audit.login import reachable_roles
from mcp_suite.tools.sql.engine.role_audit.reaudit import AuditGate
from mcp_suite.tools.sql.engine.sqlstate import Fault, classify, problem_from_sqlstate
from mcp_suite.tools.sql.engine.ticket import CallCancelledError, CallTicket
from mcp_suite.tools.sql.engine.type_names import TypeNames

if TYPE_CHECKING:
    from mcp_suite.tools.sql.engine.policy import VettedQuery

__all__ = [
    "CURSOR_NAME",
    "CallCancelledError",
    "CallTicket",
    "Column",
    "DatabaseUnavailableError",
    "Executor",
    "ExecutorStatistics",
    "ExplainMode",
    "QueryResult",
    "problem_from_sqlstate",
]

T = TypeVar("T")

CURSOR_NAME: Final = "mcp_suite_query"

# `explain_sql`: what replaces the FETCH (the statement is the vetted text, after the cursor's DECLARE).
ExplainMode = Literal["plan", "analyze"]
_EXPLAIN: Final[dict[str, bytes]] = {
    "plan": b"EXPLAIN (FORMAT JSON) ",
    "analyze": b"EXPLAIN (ANALYZE, FORMAT JSON) ",
}

_FATAL_ERROR: Final = pq.ExecStatus.FATAL_ERROR
_SQLSTATE: Final = pq.DiagnosticField.SQLSTATE
_MOVE: Final = f'MOVE FORWARD 1 IN "{CURSOR_NAME}"'.encode()
# Every call's transaction (explain_sql's too): READ ONLY.
_BEGIN: Final = b"BEGIN READ ONLY"


@dataclass(frozen=True, slots=True)
class ExecutorStatistics:
    """What `Executor.statistics()` returns: counts since the executor was made."""

    round_trips: int  # network exchanges made for calls: pipelines, type lookups, resets
    type_names: int  # column type names cached
    pool_size: int  # connections the pool holds now (in use or idle)
    pool_available: int  # idle connections in the pool
    pool_waiting: int = 0  # calls waiting for a connection now
    pool_in_use: int = 0  # connections lent to calls now


def _bound(sql: bytes, values: Bound | None) -> bytes | Bound:
    """`sql` as a command, with a curated tool's bound values when it has them."""
    return sql if values is None else Bound(sql, values.values, values.oids)


def _switch_role(role: CallRole) -> bytes:
    """One statement that switches the call's transaction to its caller's mapped role (issue 42)
    and tells it who calls: the claims as JSON in `request.jwt.claims` (PostgREST's setting, which
    row-level security policies written for it already read) and `application_name` (what
    `pg_stat_activity` and a `log_line_prefix` with `%a` show). `SET LOCAL`, each of them: the
    call's ROLLBACK ends them, so a pooled connection or a PgBouncer backend never keeps them.
    The values are quoted literals (`sql_quote`); the policy refuses every statement that could
    change them (`set_config`, `SET`, `RESET`)."""
    values = (("role", role.role), (CLAIMS_SETTING, role.claims), ("application_name", role.application_name))
    calls = ", ".join(f"pg_catalog.set_config('{name}', {sql_quote(value)}, true)" for name, value in values)
    return f"SELECT {calls}".encode()


# What the identity check raises when the call is not, or no longer, who the server made it: its
# cast of a word that is not a number (22P02, by its position in the pipeline, never shown).
_IDENTITY_FAILED: Final = "identity changed"


def identity_check(role: CallRole | None) -> bytes:
    """One statement that fails (22P02, `errors.InvalidTextRepresentation`) unless the transaction
    is still who the server made it: with `role`, `current_user` is that role and
    `request.jwt.claims` its claims; without one, `current_user` is the login role
    (`session_user`). Code the query ran can switch either (an invoker helper that calls
    `set_config`, a function with `SET role`); this is what tells. Every name is
    schema-qualified and the comparison is `OPERATOR(pg_catalog.=)`: the query may have changed
    the search path before it runs. No catalogue read (docs/tools/read_only_sql.md, "An identity
    nothing can change")."""
    if role is None:
        same = "current_user OPERATOR(pg_catalog.=) session_user"
    else:
        same = (
            f"current_user OPERATOR(pg_catalog.=) {sql_quote(role.role)}::pg_catalog.name"
            f" AND pg_catalog.current_setting('{CLAIMS_SETTING}', true)"
            f" OPERATOR(pg_catalog.=) {sql_quote(role.claims)}::pg_catalog.text"
        )
    return f"SELECT (CASE WHEN {same} THEN '1' ELSE '{_IDENTITY_FAILED}' END)::pg_catalog.int4".encode()


def identity_changed(*, role: CallRole | None, at_start: bool) -> IdentityChangedError:
    """The refusal of a call whose identity check failed (`identity_check`)."""
    if at_start:  # before the query ran: the session itself started as another role
        return session_role_changed()
    who = "the login role" if role is None else f"the role {role.role!r} with the caller's claims"
    return IdentityChangedError(
        f"The call was refused and none of its rows returned: by its end it no longer ran as {who}."
        " Code the query ran (a function calling set_config, or one declared with SET role) switched"
        " the role or request.jwt.claims; such code may not be used.",
        metadata={"finding": "identity-changed"},
    )


class Executor:
    """One call's transaction, on a connection `Connections` hands over, after the audit gate
    (`CallGate`). Thread-safe; every public method blocks (run it in a worker thread). Limits:
    statement timeout, the whole exchange's timeout, max rows, max bytes, all from `Settings` (the
    pool's are `Connections`')."""

    def __init__(
        self,
        settings: Settings,
        dsn: str,
        *,
        availability: Availability | None = None,
        gate: AuditGate | None = None,
        roles: Sequence[str] = (),
    ) -> None:
        self._settings = settings
        self._roles = tuple(roles)  # an identity map's roles: each audited, each its own catalogue
        self._availability = availability or Availability(max_backoff_s=settings.sql_reconnect_max_s)
        self._gate = CallGate(gate or AuditGate(), settings, self._roles)
        self._connections = Connections(settings, dsn, availability=self._availability)
        self._timeout_ms = settings.sql_statement_timeout_ms
        self._max_bytes = settings.sql_max_result_bytes
        self._types = TypeNames()
        self._definers = DefinerGuard(
            accepted=settings.sql_accept_definer_functions, cache_s=settings.sql_function_cache_s
        )
        self._names = NameGuard(
            allowed_extensions=settings.sql_allow_extensions, cache_s=settings.sql_function_cache_s
        )
        self._pipelines = 0
        self._count_lock = threading.Lock()
        # `read_catalogue` sets them in its transaction whatever the pooler; a call does so only
        # behind one (`Connections` sets them once per direct connection).
        self._set_local = pinned_settings(settings, dsn, local=True, login_check=True)
        self._direct = settings.sql_pooler == "none"
        # When one call's exchange is overdue (logged; `run_pipeline`): the statement timeout, plus
        # time for the server to notice it, plus a connect timeout's worth of network slack. Past
        # it the connection is still held until PostgreSQL answers: a backend that outlives its
        # call keeps counting against the pool (docs/tools/read_only_sql.md, "Work that cannot be stopped").
        self._exchange_timeout_s = (
            self._timeout_ms / 1000 + settings.sql_cancel_grace_s + settings.sql_connect_timeout_s
        )

    def statistics(self) -> ExecutorStatistics:
        """Counts since the executor was made (like trio's `statistics()`: a frozen record)."""
        types = self._types.statistics()
        pool = self._connections.statistics()
        return ExecutorStatistics(
            round_trips=self._pipelines + pool.resets + types.lookups,
            type_names=types.names,
            pool_size=pool.size,
            pool_available=pool.available,
            pool_waiting=pool.waiting,
            pool_in_use=pool.lent,
        )

    @property
    def connections(self) -> Connections:
        """The pool and the direct connection the calls run on."""
        return self._connections

    def open(self) -> None:
        """Start the pool; connections are made in the background (a down database is no error)."""
        self._connections.open()

    def close(self) -> None:
        self._connections.close()

    def mark_audited(self) -> None:
        """The start-up audit passed: no call audits before its query (`audit_gate.CallGate`)."""
        self._gate.mark_audited()

    # --- one call ------------------------------------------------------------------------------
    @property
    def definers(self) -> DefinerGuard:
        return self._definers

    @property
    def names(self) -> NameGuard:
        return self._names

    def refresh_catalogue(self, conn: psycopg.Connection[Any]) -> None:
        """Both run-time guards read the catalogue now, on `conn` (the re-audit's connection); the
        name guard once per role it judges for (the login role, and each mapped role it reaches)."""
        self._definers.refresh(conn)
        self._names.refresh(conn)
        if self._roles:
            with conn.transaction(force_rollback=True):
                reachable = reachable_roles(conn, frozenset(self._roles))
            for role in self._roles:
                if role in reachable:  # the others are refused by the audit (their calls stop)
                    self._names.refresh(conn, role)

    def run_vetted(
        self,
        query: VettedQuery,
        *,
        max_rows: int,
        ticket: CallTicket,
        explain: ExplainMode | None = None,
        role: CallRole | None = None,
        bound: Bound | None = None,
        max_bytes: int | None = None,
        definers: DefinerGuard | None = None,
    ) -> QueryResult:
        """Run a query the policy vetted (`policy.QueryPolicy.vet` makes the `VettedQuery`: the
        executor takes no text of its own, so nothing the policy has not seen can run), after
        refusing it (`QueryViolationError`) when it names a SECURITY DEFINER function
        (`definers.DefinerGuard`), or a function or type outside PostgreSQL's own schemas that the
        role's catalogue does not allow (`names.NameGuard`). With `role` (an identity map's), the
        transaction runs as that role (`_switch_role`), the name guard judges by that role's
        catalogue, and that role's audit gate is asked. Blocking. Raises a ProblemError,
        DatabaseUnavailableError, or `CallCancelledError` when the ticket was cancelled before the
        query started.
        `bound`: a curated tool's bound values (their `sql` unused: the statement is `query.sql`),
        sent apart from the text; `max_bytes`: its own byte limit, below the source's; `definers`:
        its guard, which accepts no SECURITY DEFINER function (the operator's acceptance is free SQL's).

        With `explain` ("plan" or "analyze", for `explain_sql`) the same transaction declares the
        cursor (so PostgreSQL still accepts only one SELECT/VALUES), then, in place of the FETCH,
        runs `EXPLAIN (FORMAT JSON)` of the same text, or `EXPLAIN (ANALYZE, FORMAT JSON)`, which
        executes it; the result is that one row. Planning runs code too (constant folding, casts,
        estimators: the DECLARE plans, and so does a plain EXPLAIN), so every statement after the
        settings, plain plans included, runs under the call's statement timeout.
        Cancellation: `ticket.cancel()` from another thread stops the query in PostgreSQL; the
        connection is rolled back and reset before it returns to the pool.
        Limits: at most `max_rows + 1` rows are fetched; the JSON size is capped.
        """
        ticket.started = True
        as_role = role.role if role is not None else None

        def work(conn: PinnedConnection) -> QueryResult:
            self._names.check_vetted(conn, query, role=as_role)
            (definers or self._definers).check(conn, query.functions, query.operators)
            return self._run_on(
                conn,
                query.sql,
                max_rows=max_rows,
                ticket=ticket,
                explain=explain,
                role=role,
                bound=bound,
                max_bytes=max_bytes,
            )

        return self._with_connection(ticket, work, role=as_role, query=query.sql)

    def _with_connection(
        self,
        ticket: CallTicket,
        work: Callable[[PinnedConnection], T],
        *,
        role: str | None = None,
        query: str = "",
    ) -> T:
        # The back-off after failures, then the gate: a re-audit's refusal, or no audit for two
        # intervals, stops the call here, before a connection is taken (with the role's slots
        # full, none might be). The checkout and its retry are `Connections.with_connection`'s.
        self._availability.check()
        self._gate.check(role)
        return self._connections.with_connection(
            lambda conn: self._answering(conn, work, role, query), ticket=ticket
        )

    def _answering(
        self, conn: PinnedConnection, work: Callable[[PinnedConnection], T], role: str | None, query: str
    ) -> T:
        """`work(conn)` after the audit gate; a database error becomes what `sqlstate.classify`
        says: the caller's problem, `database-unavailable` (through `Availability`, logged) for a
        failure of the connection itself, or the error itself for a server fault (the dispatcher
        answers it as an internal error with an incident id)."""
        try:
            self._gate.admit(conn, role)
            return work(conn)
        except psycopg.Error as exc:
            # `query`, the caller's text: an error shows no value it does not hold (issue 51).
            answer = classify(
                exc, broken=conn.broken or conn.closed, timeout_ms=self._timeout_ms, query=query
            )
            if isinstance(answer, ProblemError):
                raise answer from None
            if answer is Fault.CONNECTION:
                raise self._availability.failed(exc) from None
            raise

    def _run_on(
        self,
        conn: PinnedConnection,
        sql: str,
        *,
        max_rows: int,
        ticket: CallTicket,
        explain: ExplainMode | None = None,
        role: CallRole | None = None,
        bound: Bound | None = None,
        max_bytes: int | None = None,
    ) -> QueryResult:
        if not ticket.attach(conn):
            raise CallCancelledError
        limit = self._max_bytes if max_bytes is None else min(max_bytes, self._max_bytes)
        # The rows, then whether one more exists: MOVE counts it without sending it, so a huge row
        # past `max_rows` costs neither the wire nor the memory bound.
        reads: list[bytes | Bound] = [f'FETCH FORWARD {int(max_rows)} FROM "{CURSOR_NAME}"'.encode(), _MOVE]
        if explain is not None:
            reads = [_bound(_EXPLAIN[explain] + sql.encode(), bound)]
        declare = _bound(f'DECLARE "{CURSOR_NAME}" NO SCROLL CURSOR FOR {sql}'.encode(), bound)
        # Direct: the settings were set on the connection, check them; behind a pooler: set them in
        # the transaction.
        # Behind a pooler, RESET ALL restores the login role's own `role` setting, if it has one
        # (ALTER ROLE ... SET role): the settings' statement refuses before the query could run as
        # someone else. A direct connection was checked once, when it was made (`Connections`).
        commands: list[bytes | Bound] = (
            [_BEGIN, conn.pin_check] if self._direct else [_BEGIN, b"RESET ALL", self._set_local]
        )
        at_start = -1 if self._direct else 2
        if role is not None:  # the caller's role and claims, in the same round trip (issue 42)
            commands.append(_switch_role(role))
        commands.append(declare)
        at_fetch = len(commands)
        # The identity check ends the call, in the same round trip, before the ROLLBACK.
        at_end = at_fetch + len(reads)
        commands += [*reads, identity_check(role), b"ROLLBACK", *reset_statements()]
        try:
            # One pipeline, one Sync, one round trip. Every statement uses the extended protocol,
            # so PostgreSQL itself accepts exactly one statement in DECLARE ... FOR <query>. The
            # FETCH's rows come one by one, so those that arrived before the byte limit are kept.
            piped = run_pipeline(
                conn,
                commands,
                max_bytes=limit,
                timeout_s=self._exchange_timeout_s,
                stream=at_fetch if explain is None else None,
            )
            with self._count_lock:
                self._pipelines += 1
            results = piped.results
            failed = next((r for r in results if r.status == _FATAL_ERROR), None)
            if failed is not None:
                if (
                    self._direct
                    and failed is results[1]
                    and failed.error_field(_SQLSTATE) in PIN_CHECK_FAILED
                ):
                    refuse_unpinned(conn)
                error = psycopg.errors.error_from_result(failed, encoding=conn.info.encoding)
                if isinstance(error, psycopg.errors.InvalidTextRepresentation) and any(
                    failed is results[i] for i in (at_start, at_end) if 0 <= i < len(results)
                ):
                    ticket.detach()  # no cancel request may reach the clean-up below
                    self._connections.restore(conn)  # the pipeline stopped before its ROLLBACK
                    raise identity_changed(role=role, at_start=failed is not results[at_end])
                raise error
            if role is not None and piped.cut:
                # The byte limit cut the rows before the identity check could run: unchecked, they
                # are not returned (a check that cannot run is a refusal).
                raise ResultTooLargeError(
                    f"The rows passed the reply's {limit} bytes before the call could check"
                    " it still ran as its caller, so none is returned. Ask for fewer or shorter rows"
                    " (a LIMIT, fewer columns, left(col, 200)).",
                    metadata={"max_result_bytes": limit},
                )
            row_results = [*piped.rows, *results[at_fetch : at_fetch + 1]]
            if not any(r.ntuples for r in row_results):
                if piped.cut:  # not even the first row arrived whole within the limit
                    raise too_large(limit)
                row_results = results[at_fetch : at_fetch + 1]  # no rows: the columns still count
            names_and_oids = description(conn, row_results[0])
        except psycopg.Error as exc:
            self._fail(conn, exc, ticket)
        finally:
            ticket.detach()
        if ticket.cancelled:
            # A cancel may have raced the end of the pipeline: make sure the reset really ran.
            self._connections.restore(conn)
        # After a cut the connection is closed: a type name not cached yet reads "oid <n>".
        columns = tuple(Column.named(name, self._types.name(conn, oid)) for name, oid in names_and_oids)
        oids = [oid for _, oid in names_and_oids]
        self._types.install_array_loaders(conn, oids)
        rows = load_rows(conn, row_results)
        if explain is not None:
            # One row, the plan: the tool checks its size (after the hidden-rows check).
            values = [list(row) for row in rows]
            return QueryResult(columns=columns, rows=values, truncated=False, rows_json=plan_json(values))
        more = piped.cut or piped.results[at_fetch + 1].command_status == b"MOVE 1"
        values, data, cut = json_rows(
            rows,
            columns,
            oids,
            encoding=conn.info.encoding,
            max_bytes=limit,
            max_rows=max_rows,
            more=more,
        )
        return QueryResult(
            columns=columns, rows=values, truncated=more or cut, rows_json=data, cut_at_bytes=cut or piped.cut
        )

    def _fail(self, conn: psycopg.Connection[Any], exc: psycopg.Error, ticket: CallTicket) -> NoReturn:
        """After a failed statement: clean the connection, then raise the error again
        (`_answering` says what it is, once the clean-up has shown whether the connection lives)."""
        ticket.detach()  # no cancel request may reach the clean-up below
        self._connections.restore(conn)
        raise exc

    # --- column type names ---------------------------------------------------------------------
    def load_type_names(self, conn: psycopg.Connection[Any]) -> None:
        """Preload every type's name and array element (one query): no extra round trip later."""
        self._types.load(conn)

    def preload_type_names(self) -> None:
        """`load_type_names` on a pooled connection (blocking: waits for the pool's first one)."""
        with self._connections.connection(timeout=self._settings.sql_connect_timeout_s) as conn:
            self._types.load(conn)

    # --- catalogue reads (sql_schema and the schema resource) ---------------------------------
    def read_catalogue(
        self,
        work: Callable[[psycopg.Connection[Any]], T],
        *,
        ticket: CallTicket,
        role: CallRole | None = None,
    ) -> T:
        """Run `work(conn)`, fixed catalogue queries, inside a read-only transaction with the
        call's statement timeout, always rolled back; blocking. Cancellation and failures as
        `run_vetted`.
        With `role`, the transaction runs as it (what it may read is what `work` sees), after its
        audit gate."""
        ticket.started = True

        def on_connection(conn: psycopg.Connection[Any]) -> T:
            if not ticket.attach(conn):
                raise CallCancelledError
            try:
                with conn.transaction(force_rollback=True):
                    conn.execute(b"SET TRANSACTION READ ONLY")
                    try:
                        conn.execute(self._set_local)
                    except psycopg.errors.InvalidTextRepresentation:  # `SESSION_IS_LOGIN_COLUMN`
                        raise session_role_changed() from None
                    if role is not None:
                        conn.execute(_switch_role(role))
                    return work(conn)
            except psycopg.Error as exc:
                self._fail(conn, exc, ticket)
            finally:
                ticket.detach()

        return self._with_connection(ticket, on_connection, role=role.role if role is not None else None)
