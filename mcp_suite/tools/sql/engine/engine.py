"""The PostgreSQL engine the three SQL tools share: one object, opened once per server.

`open_engine(settings, dsn)` audits the role (refusing to start, exit 78, when it could do more than
read) and returns the `SqlEngine`: it owns the executor and its pool (built on first need), the SQL
policy (built on first need), the database threads' limiter, the re-audit's gate and loop, and
offers the blocking operations the tools run (`vet_and_run`, `schema_page`, `hidden_relations`) and
the one way to run them (`run_blocking`: in a database worker thread, cancelled inside PostgreSQL).
The re-audit has a connection of its own (`link.AuditLink`), opened at start-up, outside the pool.
With an identity map (a source's `[sources.identity]`, issue 42) `role_for` turns the verified
caller into the `CallRole` each operation takes; every mapped role is audited with the login role.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import psycopg
from psycopg import pq

from mcp_suite import observe
from mcp_suite.caller import Caller, current_caller
from mcp_suite.lazy import Lazy
from mcp_suite.offload import run_in_db_thread
from mcp_suite.problems import AccessDeniedError
from mcp_suite.settings import Settings
from mcp_suite.tools.base import SourceState, StartupRefusedError, StartupUnavailableError
from mcp_suite.tools.sql.engine.availability import Availability, State
from mcp_suite.tools.sql.engine.identity import CallRole, IdentityMap, UnsafeClaimError, call_role
from mcp_suite.tools.sql.engine.introspect import visibility
from mcp_suite.tools.sql.engine.introspect.lookup import decode_cursor, lookup
from mcp_suite.tools.sql.engine.naming import log_prefix, the_database
from mcp_suite.tools.sql.engine.role_audit.connect import (
    PoolerInFrontError,
    TlsRefusedError,
    audit_role,
    connection_failure,
)
from mcp_suite.tools.sql.engine.role_audit.finding import format_findings, refusals
from mcp_suite.tools.sql.engine.role_audit.link import AuditDsnError, AuditLink, NoVerdict
from mcp_suite.tools.sql.engine.role_audit.reaudit import AuditGate, audit_once, serve_reaudit, wait_notified
from mcp_suite.tools.sql.engine.ticket import CallTicket
from mcp_suite.turns import Turns

if TYPE_CHECKING:
    from mcp_suite.tools.sql.engine.definers import DefinerGuard
    from mcp_suite.tools.sql.engine.executor import Executor, ExplainMode, QueryResult
    from mcp_suite.tools.sql.engine.pipeline import Bound
    from mcp_suite.tools.sql.engine.policy import QueryPolicy, VettedQuery
    from mcp_suite.tools.sql.engine.role_audit.finding import Finding

__all__ = ["DescribedColumn", "SqlEngine", "open_engine"]

# The toolset's log, by the name its lines carried before the engine was split out of the tool.
log = logging.getLogger("mcp_suite.tools.sql.read_only_sql.tool")

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class DescribedColumn:
    """One result column of a prepared statement, as PostgreSQL describes it."""

    name: str
    oid: int
    type: str  # format_type(oid, NULL): the name a result's `columns` give it
    category: str  # pg_type.typcategory ("A": an array)


class SqlEngine:
    """The executor (a `Lazy`), the policy (a `Lazy`), the limiter and the audit gate of one server."""

    def __init__(
        self,
        settings: Settings,
        dsn: str,
        *,
        audited: bool,
        availability: Availability,
        identity: IdentityMap | None = None,
        source: str | None = None,
        gate: AuditGate | None = None,
    ) -> None:
        self.settings = settings
        self.identity = identity
        self.source = source  # the configuration file's name, which its log lines carry
        self.roles: tuple[str, ...] = identity.roles if identity is not None else ()
        # Shared by the sources that audit one role the same way (`open_sql`): one verdict for all.
        self.gate = gate if gate is not None else AuditGate(source=source)
        self._dsn = dsn
        # The re-audit's own connection. It LISTENs for the role guide's event trigger unless it
        # goes through a transaction pooler (MCP_SQL_POOLER=transaction without MCP_SQL_AUDIT_DSN).
        audit_dsn = settings.sql_audit_dsn.get_secret_value() if settings.sql_audit_dsn else None
        self.audit_link = AuditLink(
            audit_dsn or dsn,
            connect_timeout_s=settings.sql_connect_timeout_s,
            listen=audit_dsn is not None or settings.sql_pooler == "none",
            reference_dsn=dsn if audit_dsn else None,
            source=source,
        )
        self._audited = audited
        self._availability = availability
        # What the last audit connection found (the start-up audit's, then each re-audit's): the
        # readiness probe and the metrics read it; no probe of its own reaches the database.
        self._reachable = audited
        self._verified = audited
        self._role = _role_of(dsn)
        self._database = Lazy(
            functools.partial(
                _open_executor,
                settings,
                dsn,
                audited=audited,
                availability=availability,
                gate=self.gate,
                roles=self.roles,
            )
        )
        self._policy = Lazy(
            functools.partial(
                _build_policy,
                settings.sql_policy_cache_size,
                allow_catalogue=settings.sql_allow_catalogue,
                allow_xml=settings.sql_allow_xml,
                allow_uninterruptible=settings.sql_allow_uninterruptible,
            )
        )
        # Database worker threads: at most the pool size, shared by the callers in turn, each
        # verified caller holding at most its share (issue 52: one caller's slow queries must not
        # hold every thread another caller's quick one needs).
        self._threads = Turns(settings.sql_pool_max_size, settings.sql_threads_per_caller)
        # Guards of the source's curated tools (issue 55), refreshed by each re-audit with the
        # executor's, on its connection: a function turned SECURITY DEFINER stops such a tool there.
        self.curated_guards: list[DefinerGuard] = []

    @property
    def dsn(self) -> str:
        """The connection string (secret: never logged or shown)."""
        return self._dsn

    async def run_blocking(self, work: Callable[[CallTicket], T]) -> T:
        """`work(ticket)` in a database worker thread, taken in the current caller's turn; a
        cancelled caller cancels its query inside PostgreSQL and waits (shielded, bounded) for the
        connection to come back clean."""
        grace = self.settings.sql_cancel_grace_s
        return await run_in_db_thread(
            work,
            CallTicket(cancel_timeout_s=grace),
            threads=self._threads,
            caller=self._thread_caller(current_caller.get()),
            cancel_grace_s=grace,
        )

    def _thread_caller(self, caller: Caller | None) -> str | None:
        """Whose turn a call takes at the threads: the verified subject; None (no share, the one
        caller) over stdio and under MCP_HTTP_AUTH=none, where everyone is the same caller."""
        if caller is None or self.settings.http_auth == "none":
            return None
        return caller.subject

    def role_for(self, caller: Caller | None) -> CallRole | None:
        """What a call by `caller` runs as: None without an identity map, or without a verified
        caller (stdio: the DSN's role; under a map that role reads nothing itself). Raises
        `AccessDeniedError` naming the missing mapping when no rule maps the caller: such a caller
        never reads with the login role's privileges."""
        if self.identity is None or caller is None:
            return None
        try:
            role = call_role(self.identity, caller.subject, caller.claims)
        except UnsafeClaimError as exc:
            raise AccessDeniedError(
                f"The token's claim {exc.args[0]!r}, which this database's identity map passes on to "
                "PostgreSQL (request.jwt.claims), holds a control character (such as NUL or a "
                "newline), which the database's policies could not read; the call was refused. The "
                "token's issuer must not put control characters in that claim.",
                metadata={"claim": exc.args[0], "retryable": False},
            ) from None
        if role is None:
            raise AccessDeniedError(
                "No rule of this database's identity map maps the caller (neither its subject nor a "
                "value of its groups or roles claim), and the map has no default_role, so the call "
                "was refused. An operator adds a rule for it to the configuration file "
                "([sources.identity]).",
                metadata={"mapping": "missing", "retryable": False},
            )
        return role

    def executor(self) -> Executor:
        """The executor, built (and its pool opened) on first need; blocking."""
        return self._database.get()

    def vet_and_run(
        self,
        sql: str,
        max_rows: int,
        ticket: CallTicket,
        *,
        explain: ExplainMode | None = None,
        role: CallRole | None = None,
    ) -> QueryResult:
        """The policy's verdict, then the query (or its EXPLAIN) in one read-only transaction;
        blocking. The policy runs in the worker thread too: an uncached verdict costs milliseconds
        of parsing that must not stall the event loop (pings, other calls)."""
        with observe.stage("sql.policy"):
            vetted = self._policy.get().vet(sql, max_rows=max_rows)
            # Never the text (it may hold values): PostgreSQL's fingerprint of the normalized
            # statement, the same for every query that differs only in its constants.
            observe.note(lambda: {"mcp_suite.sql.fingerprint": _fingerprint(sql)})
        with observe.stage("sql.database"):
            return self._database.get().run_vetted(
                vetted, max_rows=max_rows, ticket=ticket, explain=explain, role=role
            )

    def vet_statement(self, judged: str, statement: str, max_rows: int) -> VettedQuery:
        """A curated statement's verdict (issue 55): the policy judges `judged` (the statement with
        each `$n` a NULL of its declared type); what runs is `statement` itself, `$n` and all, in
        the same outer LIMIT. Raises the policy's refusal. Blocking (the parsers)."""
        from mcp_suite.tools.sql.engine.policy.rewrite import wrap  # with the policy's parsers

        vetted = self._policy.get().vet(judged, max_rows=max_rows)
        return dataclasses.replace(vetted, sql=wrap(statement, max_rows + 1)[0])

    def run_curated(
        self,
        vetted: VettedQuery,
        values: Bound,
        *,
        max_rows: int,
        max_bytes: int,
        ticket: CallTicket,
        role: CallRole | None = None,
        explain: ExplainMode | None = None,
        definers: DefinerGuard | None = None,
    ) -> QueryResult:
        """A curated statement vetted at start-up, with its bound values, in the read-only
        transaction of `read_only_sql` (the same guards, role and limits; `definers`, a guard of
        its own); blocking."""
        with observe.stage("sql.database"):
            return self._database.get().run_vetted(
                vetted,
                max_rows=max_rows,
                ticket=ticket,
                explain=explain,
                role=role,
                bound=values,
                max_bytes=max_bytes,
                definers=definers,
            )

    def describe_statement(
        self, statement: str, ticket: CallTicket, role: CallRole | None = None
    ) -> tuple[list[int], list[DescribedColumn]]:
        """PostgreSQL's own reading of a statement: its `$n`'s types' OIDs, in order, and its result
        columns (name, type OID, `format_type` name, type category), as the statement is prepared
        (never run) in a rolled-back read-only transaction as `role`. Raises the database's error
        as a problem (a name the role cannot resolve, a syntax error)."""

        def describe(conn: psycopg.Connection[Any]) -> tuple[list[int], list[DescribedColumn]]:
            pg = conn.pgconn
            for result in (pg.prepare(b"", statement.encode(), None), pg.describe_prepared(b"")):
                if result.status == pq.ExecStatus.FATAL_ERROR:
                    raise psycopg.errors.error_from_result(result, encoding=conn.info.encoding)
            params = [result.param_type(i) for i in range(result.nparams)]
            fields = [
                ((result.fname(i) or b"").decode(conn.info.encoding or "utf-8", "replace"), result.ftype(i))
                for i in range(result.nfields)
            ]
            types = {
                int(oid): (str(name), str(category))
                for oid, name, category in conn.execute(
                    "SELECT t.oid::int8, format_type(t.oid, NULL), t.typcategory::text"
                    " FROM pg_catalog.pg_type t WHERE t.oid = ANY(%s::oid[])",
                    [sorted({oid for _, oid in fields})],
                )
            }
            return params, [
                DescribedColumn(name, oid, *types.get(oid, (f"oid {oid}", ""))) for name, oid in fields
            ]

        return self._database.get().read_catalogue(describe, ticket=ticket, role=role)

    def state(self, name: str) -> SourceState:
        """The source `name`'s state for the readiness probe and the metrics; no I/O."""
        in_use = waiting = 0
        if self._database.built:
            try:
                stats = self._database.get().statistics()
            except RuntimeError:  # closed at shutdown
                stats = None
            if stats is not None:
                in_use, waiting = stats.pool_in_use, stats.pool_waiting
        # A mapped role's refusal stops its own calls only: the source still serves the others.
        refused = any(not f.role for f in self.gate.refused)
        if not self._reachable:
            status = "login-refused" if self._availability.state is State.REFUSED else "unreachable"
        elif self.gate.unaudited or not self._verified:
            status = "unaudited"
        else:
            status = "refused" if refused else "serving"
        return SourceState(
            name,
            reachable=self._reachable,
            audited=self._verified and not refused and not self.gate.unaudited,
            pool_in_use=in_use,
            pool_waiting=waiting,
            role=self._role,
            status=status,
        )

    def schema_page(
        self,
        ticket: CallTicket,
        *,
        schema: str | None = None,
        name_like: str | None = None,
        obj: str | None = None,
        detail: str = "columns",
        cursor: str | None = None,
        max_objects: int,
        role: CallRole | None = None,
    ) -> dict[str, Any]:
        """One page of the schema listing as JSON values (blocking):
        `{"database", "objects", "truncated", "next_cursor"}`, within the result byte cap.

        Raises `InvalidArgumentsError` for a malformed `object` or `name_like`, or a cursor this
        server did not give for these filters, before anything is sent.
        """
        from mcp_suite.tools.sql.engine.introspect import objects  # with the executor: off `initialize`

        params = lookup(schema, name_like, obj)
        after = decode_cursor(cursor, params) if cursor is not None else None
        return self.executor().read_catalogue(
            functools.partial(
                objects.read,
                lookup=params,
                detail=detail,
                max_objects=max_objects,
                max_bytes=self.settings.sql_max_result_bytes,
                comment_chars=self.settings.sql_schema_max_comment_chars,
                after=after,
            ),
            ticket=ticket,
            role=role,
        )

    def complete_names(
        self,
        ticket: CallTicket,
        *,
        argument: str,
        prefix: str,
        schema: str | None,
        limit: int,
        role: CallRole | None = None,
    ) -> tuple[list[str], int]:
        """The schema or object names (`argument`) starting with `prefix` that `sql_schema` would
        list to the role (`role`, else the server's), at most `limit` of them, and how many there
        are (blocking; the catalogue read of `sql_schema`: read-only, under the statement timeout)."""
        from mcp_suite.tools.sql.engine.introspect import names  # with the executor: off `initialize`

        return self.executor().read_catalogue(
            functools.partial(names.read, argument=argument, prefix=prefix, schema=schema, limit=limit),
            ticket=ticket,
            role=role,
        )

    def hidden_relations(
        self, names: Collection[str], ticket: CallTicket, role: CallRole | None = None
    ) -> list[str]:
        """The names among `names` (relations a plan reads) that the role may not read in full;
        blocking (one catalogue query, read-only, under the statement timeout)."""
        if not names:
            return []
        return self.executor().read_catalogue(
            lambda conn: visibility.hidden_relations(conn, names), ticket=ticket, role=role
        )

    @property
    def warm_up(self) -> tuple[Callable[[], object], ...]:
        # The pool connects in the background while the policy's parsers load; then the type names.
        return (self._database.get, self._policy.get, self._preload_type_names)

    async def serve_reaudit(self) -> NoReturn:
        """The re-audit loop (the toolset's background task): every interval, and at once when the
        audit's connection is notified."""
        link = self.audit_link
        await serve_reaudit(
            self.gate,
            self._reaudit,
            interval_s=self.settings.sql_reaudit_interval_s,
            notified=(lambda: wait_notified(link)) if link.listening else None,
        )

    def close(self) -> None:
        self.audit_link.close()
        executor = self._database.close()
        if executor is not None:
            executor.close()

    def _reaudit(self) -> list[Finding] | NoVerdict:
        """One re-audit (blocking, in its worker thread): the whole role audit on its own connection,
        and, when the executor exists, its guards' catalogue refreshed on the same one."""
        database = self._database
        try:
            executor = database.get() if database.built else None  # never built here: off the warm-up
        except RuntimeError:  # the tool closed under an abandoned re-audit (shutdown)
            executor = None
        guards = tuple(self.curated_guards)

        def refresh(conn: psycopg.Connection[Any]) -> None:
            if executor is not None:
                executor.refresh_catalogue(conn)
            for guard in guards:
                guard.refresh(conn)

        verdict = audit_once(
            self.audit_link,
            self.settings,
            refresh=refresh if executor is not None or guards else None,
            roles=self.roles,
        )
        # For the readiness probe and the metrics: whether this audit's connection answered, and
        # whether an audit has completed since the start.
        self._reachable = not isinstance(verdict, NoVerdict)
        if self._reachable:
            self._verified = True
        return verdict

    def _preload_type_names(self) -> None:
        """Every type name, read once on the pool's first connection (after a passed audit)."""
        if not self._audited:
            return
        try:
            self._database.get().preload_type_names()
        except psycopg.Error:
            # Not fatal: a call looks up the names it meets (the database may be back by then).
            log.info("%stype names not preloaded (the database did not answer)", log_prefix(self.source))


def open_engine(
    settings: Settings,
    dsn: str,
    *,
    refuse_at_start: bool = True,
    identity: IdentityMap | None = None,
    source: str | None = None,
    gate: AuditGate | None = None,
) -> SqlEngine:
    """Audit the role at start-up (blocking, bounded by the connect timeout) and make the engine.

    `refuse_at_start=False` (one source of several): a role the audit refuses does not stop the
    start; the engine's gate holds the refusal, so its calls are refused until a re-audit passes.

    Raises StartupRefusedError when the role could do more than read, when the server's TLS
    certificate is refused (sslmode verify-ca / verify-full), or when MCP_SQL_POOLER=none but a
    pooler answers for the connection, and StartupUnavailableError when no connection could be
    made and the operator requires one. A database that cannot be connected to
    otherwise is not fatal: the log says why, calls get -32603 until a connection succeeds, and the
    audit then runs before the first query.
    `identity`: the source's identity map; the login role and every role it maps to are audited
    (a finding about one mapped role stops that role's calls only, at start-up too).
    `source`: the configuration file's name of the source, which every log line about it names
    (None: `MCP_SQL_DSN`'s one source).
    `gate`: the verdict this engine shares with other sources' engines on the same role (`open_sql`).
    """
    availability = Availability(max_backoff_s=settings.sql_reconnect_max_s, source=source)
    roles = identity.roles if identity is not None else ()
    prefix = log_prefix(source)
    findings = _audit_at_start(
        dsn, settings, availability, refuse=refuse_at_start, roles=roles, source=source
    )
    engine = SqlEngine(
        settings,
        dsn,
        audited=findings is not None,
        availability=availability,
        identity=identity,
        source=source,
        gate=gate,
    )
    if findings is not None:
        engine.gate.record(findings)  # logs the warnings: the risks the operator accepted, and the others
        _open_audit_link(engine.audit_link, prefix)
    if identity is not None:
        log.info(
            "%sidentity map: over HTTP each call reads as the role its caller maps to (%s); over "
            "stdio as the DSN's login role, which reads nothing itself",
            prefix,
            ", ".join(roles),
        )
    if settings.sql_allow_catalogue:
        log.warning(
            "%sMCP_SQL_ALLOW_CATALOGUE is true: queries read pg_catalog unfiltered "
            "(other objects' names, definitions and comments, role names, other sessions' queries, "
            "the server's address)",
            prefix,
        )
    if settings.sql_allow_xml:
        log.warning(
            "read_only_sql: MCP_SQL_ALLOW_XML is true: queries may use XML, which PostgreSQL hands to "
            "libxml2; libxml2 cannot be interrupted, so one call can hold its backend past the "
            "statement timeout"
        )
    if settings.sql_allow_uninterruptible:
        log.warning(
            "%sMCP_SQL_ALLOW_UNINTERRUPTIBLE is true: queries may hand a value they build to "
            "containment or parsing, which PostgreSQL does not interrupt, so one call can hold its "
            "backend past the statement timeout",
            prefix,
        )
    if settings.sql_allow_extensions:
        log.warning(
            "%sMCP_SQL_ALLOW_EXTENSIONS lets queries call every function of these extensions, which "
            "are not on the reviewed list: %s",
            prefix,
            ", ".join(settings.sql_allow_extensions),
        )
    return engine


def _audit_at_start(
    dsn: str,
    settings: Settings,
    availability: Availability,
    *,
    refuse: bool = True,
    roles: tuple[str, ...] = (),
    source: str | None = None,
) -> list[Finding] | None:
    """The start-up role audit: the findings when the role passed; None when no connection could be
    made (the executor then audits before the first query)."""
    try:
        findings = audit_role(dsn, settings, roles)
    except (TlsRefusedError, PoolerInFrontError) as exc:
        raise StartupRefusedError(str(exc)) from None
    except psycopg.OperationalError as exc:
        if settings.sql_require_database:
            raise StartupUnavailableError(
                f"no connection to {the_database(source)} ({connection_failure(exc)}) and "
                "MCP_SQL_REQUIRE_DATABASE is true"
            ) from None
        # Down, or up but refusing this role (a wrong password, a missing database): the log says
        # which, since the fix differs; calls get database-unavailable, and the role audit runs
        # before the first query.
        availability.failed(exc, at_start=True)
        return None
    # A mapped role's refusal stops its own calls (the gate holds it); the login role's stops the start.
    if any(not f.role for f in refusals(findings)) and refuse:
        raise StartupRefusedError(format_findings(findings))
    return findings


def _open_audit_link(link: AuditLink, prefix: str) -> None:
    """The re-audit's own connection, opened at start-up (blocking, bounded by the connect timeout).

    Raises StartupRefusedError when MCP_SQL_AUDIT_DSN cannot serve the audit. No connection is not
    fatal: the re-audit opens it (and the gate shuts if it cannot for two intervals).
    """
    try:
        link.open()
    except AuditDsnError as exc:
        raise StartupRefusedError(str(exc)) from None
    except psycopg.Error as exc:
        log.warning(
            "%sthe role audit's own connection could not be opened (%s); the re-audit tries again",
            prefix,
            connection_failure(exc),
        )


def _role_of(dsn: str) -> str:
    """The role a DSN names (a metric's label: never the rest of the DSN); "" when it names none."""
    try:
        return str(psycopg.conninfo.conninfo_to_dict(dsn).get("user") or "")[:64]
    except psycopg.ProgrammingError:
        return ""


def _fingerprint(sql: str) -> str:
    """pg_query's fingerprint of `sql` (pglast, which the policy has loaded); "" when it does not parse."""
    from pglast.parser import ParseError, fingerprint

    try:
        return str(fingerprint(sql))
    except ParseError:
        return ""


def _open_executor(
    settings: Settings,
    dsn: str,
    *,
    audited: bool,
    availability: Availability,
    gate: AuditGate,
    roles: tuple[str, ...] = (),
) -> Executor:
    """The executor, its pool open (connections come in the background); blocking.

    Built on first need (the warm-up, or the first call): the executor module brings psycopg_pool
    and the type loaders, and opening the pool starts its threads and a connection, none of which
    is needed to answer `initialize`.
    """
    from mcp_suite.tools.sql.engine.executor import Executor  # deferred on purpose

    executor = Executor(settings, dsn, availability=availability, gate=gate, roles=roles)
    if audited:
        executor.mark_audited()
    executor.open()
    return executor


def _build_policy(
    cache_size: int, *, allow_catalogue: bool, allow_xml: bool, allow_uninterruptible: bool
) -> QueryPolicy:
    """The SQL policy, imported off the start-up path (built by a `Lazy`).

    sqlglot and pglast are the largest imports of the server (bench_sql's all-tools cold start),
    and answering `initialize` does not need them. Building it is the tool's warm-up
    step: the session runs it in a worker thread right after the handshake; a call that needs the
    policy before that is done waits for it (in its worker thread), so no call is ever vetted by
    anything less.
    """
    from mcp_suite.tools.sql.engine.policy import QueryPolicy, vet_sql  # deferred on purpose

    vet = functools.partial(
        vet_sql,
        allow_catalogue=allow_catalogue,
        allow_xml=allow_xml,
        allow_uninterruptible=allow_uninterruptible,
    )
    return QueryPolicy(cache_size=cache_size, vet=vet)
