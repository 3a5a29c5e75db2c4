"""The model of the settings: one frozen `Settings`, every option of the server written once.

Each option is a field carrying its rule and its parser (`rules`), and its `MCP_*` variable derives
from its name; a field a source of the configuration file may set for itself is marked so on the
field (`per_source`), its key there the field's name without `sql_` (`SOURCE_KEYS`). Construction
is validated strictly: an invalid value is a `SettingsError` naming each field by its variable
(the CLI exits with `os.EX_CONFIG`, 78), never silently replaced. Must not import trio or any tool
module, nor do I/O on import. The DSN is a secret: it never appears in a repr or message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mcp_suite.settings import rules
from mcp_suite.settings.limits import MAX_FRAME_BYTES
from mcp_suite.settings.rules import (
    EXTENSION_NAMES,
    FUNCTION_NAMES,
    LOOPBACK_HOSTS,
    ROLE_NAMES,
    CpuAffinity,
    HttpAuth,
    LogLevel,
    Parser,
    Problem,
    SecretStr,
    SettingsError,
    SqlPooler,
    field_problem,
    names,
)

__all__ = [
    "ENV_PREFIX",
    "ENV_VARIABLES",
    "PARSERS",
    "SOURCE_KEYS",
    "Settings",
    "default_of",
    "highest_of",
    "name_of_field",
    "variable_of",
]

ENV_PREFIX: Final = "MCP_"

# The rules' marks, parsers and choices under the short names the fields below are written with.
_of, _flag, _int, _float, _one_of = rules.typed, rules.flag, rules.integer, rules.number, rules.one_of
_parse_dsn, _parse_path, _parse_dir = rules.parse_dsn, rules.parse_path, rules.parse_dir
_parse_int, _parse_host, _parse_url = rules.parse_int, rules.parse_host, rules.parse_url
_parse_origins, _parse_endpoint_path = rules.parse_origins, rules.parse_endpoint_path
_parse_service_name = rules.parse_service_name
_LOG_LEVELS, _AFFINITIES = rules.LOG_LEVELS, rules.AFFINITIES
_HTTP_AUTH_MODES, _SQL_POOLERS = rules.HTTP_AUTH_MODES, rules.SQL_POOLERS


@dataclass(frozen=True, slots=True)
class Settings:
    """The frozen configuration of one server process.

    Keyword construction is validated strictly (types, ranges, relations between fields) and an
    invalid value raises `SettingsError`. Plain dataclasses on purpose: a server start must not pay
    for a validation library's import before it can answer `initialize`.
    """

    # --- tools ---------------------------------------------------------------------------------
    sql_dsn: SecretStr | None = field(default=None, metadata=_of(SecretStr, type(None), parse=_parse_dsn))
    # The TOML file naming the databases the SQL tools read (`tools/sql/sources.py`); without it,
    # MCP_SQL_DSN and the MCP_SQL_* settings describe one source, `default`.
    config_file: Path | None = field(
        default=None, metadata=_of(Path, type(None), parse=_parse_path, variable="CONFIG")
    )
    safe_data_dir: Path | None = field(default=None, metadata=_of(Path, type(None), parse=_parse_dir))
    metrics_enabled: bool = field(default=True, metadata=_flag())
    metrics_disk_path: Path = field(default=Path("/"), metadata=_of(Path, parse=_parse_dir))

    # --- SQL -----------------------------------------------------------------------------------
    # 0 by default: an idle server holds no pooled backend once `sql_pool_max_idle_s` has passed
    # (the role audit keeps its own connection).
    sql_pool_min_size: int = field(default=0, metadata=_int(0, 64, per_source=True))
    sql_pool_max_size: int = field(default=4, metadata=_int(1, 64, per_source=True))
    # After its last call, an idle server closes every pooled connection above the minimum within
    # this time (the executor derives the pool's shrink period from it and the maximum size).
    sql_pool_max_idle_s: float = field(default=600.0, metadata=_float(1, 86_400))
    # Also the main bound of a query's memory in its backend, which PostgreSQL does not limit: an
    # aggregate grows for as long as it runs (docs/operations/deployments.md, "Database memory").
    sql_statement_timeout_ms: int = field(default=5_000, metadata=_int(1, 600_000, per_source=True))
    sql_max_rows: int = field(default=200, metadata=_int(1, 10_000, per_source=True))
    # Sized for the clients people use: Claude Code refuses a tool answer over 25,000 tokens, and
    # a tool answer carries the result twice (docs/configuration.md, "Answers and tokens").
    sql_max_result_bytes: int = field(default=20_000, metadata=_int(1_024, 16_777_216, per_source=True))
    sql_connect_timeout_s: float = field(default=5.0, metadata=_float(0, 60, low_open=True))
    sql_policy_cache_size: int = field(default=1_024, metadata=_int(0, 100_000))
    # A cancelled call waits (shielded) at most this long for PostgreSQL to stop its query and for
    # the worker thread to hand the connection back clean.
    sql_cancel_grace_s: float = field(default=5.0, metadata=_float(0, 60, low_open=True))
    # The schema resource lists at most this many tables (then says `truncated`).
    sql_schema_max_tables: int = field(default=500, metadata=_int(1, 100_000))
    # `sql_schema` and the schema resource cut each table or column comment to this many
    # characters (then marked "… [cut: N characters in all]"), so one comment cannot fill a page.
    sql_schema_max_comment_chars: int = field(default=2_000, metadata=_int(16, 100_000))
    # How long a call waits for a pooled connection before it connects directly (the pool
    # reconnects with back-off after an outage; the call should not wait for that).
    sql_pool_wait_s: float = field(default=1.0, metadata=_float(0, 60, low_open=True))
    # SECURITY DEFINER functions (`schema.name`, every overload) the operator accepts as a known,
    # logged risk: the start-up audit and the run-time check let only these through.
    sql_accept_definer_functions: tuple[str, ...] = field(
        default=(), metadata=names(FUNCTION_NAMES, per_source=True)
    )
    # How long the run-time check trusts what the catalogue said about SECURITY DEFINER functions
    # before it asks again (the names a query calls never make it ask; the re-audit refreshes it).
    sql_function_cache_s: float = field(default=60.0, metadata=_float(0, 3_600, low_open=True))
    # After repeated failed connections, calls fail at once (database-unavailable) for a back-off
    # that doubles up to this bound, so a wrong password is not retried at the client's call rate.
    sql_reconnect_max_s: float = field(default=30.0, metadata=_float(0, 3_600, low_open=True))
    # True: a database that cannot be reached, or refuses the login, at start-up stops the server
    # (exit 69) instead of serving database-unavailable until it is back.
    sql_require_database: bool = field(default=False, metadata=_flag(per_source=True))
    # --- re-audit while serving (issue 26) ---
    # How often the whole role audit runs again while the server serves (on its own connection, in
    # a worker thread). A new refusal stops the SQL tools until a re-audit passes; each re-audit
    # also refreshes the SECURITY DEFINER guard's catalogue.
    sql_reaudit_interval_s: float = field(
        default=30.0, metadata=_float(0, 60, low_open=True, per_source=True)
    )
    # Where the re-audit's own connection goes (issue 40): unset, MCP_SQL_DSN. Behind a
    # transaction-pooling PgBouncer a DSN straight to PostgreSQL (the same role and database: checked)
    # lets it LISTEN for the role guide's event trigger, so a change is audited within a second
    # instead of within an interval. A pooler answering for it refuses the start (exit 78).
    sql_audit_dsn: SecretStr | None = field(
        default=None, metadata=_of(SecretStr, type(None), parse=_parse_dsn)
    )
    # Roles the operator accepts may create functions PUBLIC can execute at once (no default
    # privilege revoking it): the audit logs a warning for each instead of refusing to start.
    sql_accept_function_creators: tuple[str, ...] = field(
        default=(), metadata=names(ROLE_NAMES, per_source=True)
    )
    # True: the SQL policy's catalogue rule is off, and a query reads pg_catalog, unfiltered
    # information_schema views and the host/connection functions freely (logged at start-up as a
    # warning; docs/tools/read_only_sql.md, "The catalogue").
    sql_allow_catalogue: bool = field(default=False, metadata=_flag(per_source=True))
    # True: the SQL policy allows XML (the xml type, XMLPARSE, xpath, XMLTABLE, ...), which PostgreSQL
    # hands to libxml2: libxml2 never checks for cancellation, so one call can keep its backend busy
    # past the statement timeout (logged at start-up; docs/tools/read_only_sql.md, "Work that
    # cannot be stopped").
    sql_allow_xml: bool = field(default=False, metadata=_flag(per_source=True))
    # True: the SQL policy allows containment (`@>`, `<@`, array `&&`) and parsing (text search,
    # JSON, array, path and polygon input) of a value the query builds (an aggregate's, a subquery's,
    # a sized call's), which PostgreSQL does not interrupt until it ends: one call over one large
    # built value can keep its backend busy past the statement timeout (logged at start-up;
    # docs/tools/read_only_sql.md, "Work that cannot be stopped").
    sql_allow_uninterruptible: bool = field(default=False, metadata=_flag(per_source=True))
    # Extensions whose functions a query may call although they are not on the reviewed list
    # (docs/tools/read_only_sql.md, "Functions"), as pg_extension names them; logged at start-up.
    sql_allow_extensions: tuple[str, ...] = field(
        default=(), metadata=names(EXTENSION_NAMES, per_source=True)
    )
    # What sits between the pool and PostgreSQL. "none": each pooled connection is its own backend,
    # so a call's pinned settings are set once per connection and every call only checks them (a
    # mismatch refuses the call and drops the connection). "transaction": a transaction-pooling
    # PgBouncer (or another pooler that hands backends around): every call sets them itself, inside
    # its transaction, after RESET ALL (docs/tools/read_only_sql.md, "Settings of a call").
    sql_pooler: SqlPooler = field(default="none", metadata=_one_of(_SQL_POOLERS, per_source=True))

    # --- files ---------------------------------------------------------------------------------
    fs_max_bytes: int = field(default=1_048_576, metadata=_int(1, 16_777_216))
    # A file with more than one hard link may be another name for a file outside the root; refused
    # unless the operator opts in (docs/tools/sandbox_fs_read.md).
    fs_allow_hard_links: bool = field(default=False, metadata=_flag())
    # `sandbox_fs_list` returns the entries whose JSON fits in this many bytes (then `truncated`),
    # sized for the clients people use like MCP_SQL_MAX_RESULT_BYTES.
    fs_list_max_bytes: int = field(default=20_000, metadata=_int(1_024, 16_777_216))

    # --- runtime -------------------------------------------------------------------------------
    max_concurrency: int = field(default=16, metadata=_int(1, 256))
    queue_wait_s: float = field(default=5.0, metadata=_float(0, 300))
    call_deadline_s: float = field(default=30.0, metadata=_float(0, 3_600, low_open=True))
    drain_grace_s: float = field(default=5.0, metadata=_float(0, 300))
    # How long the `requestState` of a 2026-07-28 input-required result may be sent back: a retry
    # after it is refused (the person answers a question within this time).
    input_request_ttl_s: float = field(default=600.0, metadata=_float(0, 86_400, low_open=True))
    # A call whose request carries `_meta.progressToken` gets at most one `notifications/progress`
    # per this many seconds (docs/wire.md, "Progress").
    progress_interval_s: float = field(default=1.0, metadata=_float(0.1, 60))
    log_level: LogLevel = field(default="INFO", metadata=_one_of(_LOG_LEVELS, aliases={"WARN": "WARNING"}))
    # stderr lines not yet written (a log shipper that lags) hold at most this many bytes: log lines
    # fill at most half (then they are dropped and counted), audit records are never dropped, and a
    # request that would be audited waits (stdio) or is refused with 503 (HTTP) while the whole is
    # full (watching.md).
    log_buffer_bytes: int = field(default=4_194_304, metadata=_int(16_384, 268_435_456))
    # "single": pin the process (and so every thread it starts) to the CPU it started on. The GIL
    # lets one thread run Python at a time anyway; on one CPU the event loop and its worker
    # threads hand the GIL over without cross-CPU wake-ups, much cheaper for a tool call on a
    # virtual machine (bench_sql; docs/performance.md). "off": leave scheduling to the kernel.
    cpu_affinity: CpuAffinity = field(default="single", metadata=_one_of(_AFFINITIES))
    # Bounded channels (STYLE habit 1: start small). Frames waiting for the dispatcher, and responses
    # waiting for the writer. Back-pressure, not growth, is what a slow client gets.
    inbound_channel_size: int = field(default=16, metadata=_int(1, 4_096, env=False))
    outbound_channel_size: int = field(default=64, metadata=_int(1, 4_096, env=False))

    # --- HTTP (`mcp-suite serve-http`, docs/operations/remote.md) ---------------------------------
    http_host: str = field(default="127.0.0.1", metadata=_of(str, parse=_parse_host))
    # 0: any free port (the start-up log names the one bound).
    http_port: int = field(default=8000, metadata=_int(0, 65_535))
    # The MCP endpoint's path; the protected resource metadata is served beside it.
    http_path: str = field(default="/mcp", metadata=_of(str, parse=_parse_endpoint_path))
    # Origins a browser may call from (`scheme://host[:port]`); any other `Origin` gets 403.
    http_allowed_origins: tuple[str, ...] = field(default=(), metadata=_of(tuple, parse=_parse_origins))
    # A request body over this is refused with 413 while it is read (the declared length first).
    http_max_body_bytes: int = field(default=MAX_FRAME_BYTES, metadata=_int(1_024, 16_777_216))
    # The request line and headers of one request, in bytes (hypercorn's incomplete-request bound).
    http_max_header_bytes: int = field(default=16_384, metadata=_int(1_024, 1_048_576))
    # An idle connection, and one whose request headers are not complete within it, is closed.
    http_idle_timeout_s: float = field(default=5.0, metadata=_float(0, 300, low_open=True))
    # The whole body must arrive within this, counted from the end of the headers (408 then).
    http_body_timeout_s: float = field(default=10.0, metadata=_float(0, 300, low_open=True))
    # Each write of an answer (its head, its body) must be taken by the client within this, or the
    # connection is closed (the call's audit record stays); a client that never reads holds nothing
    # longer.
    http_write_timeout_s: float = field(default=10.0, metadata=_float(0, 300, low_open=True))
    # Open connections: at most this many in all, and at most MCP_HTTP_MAX_CONNECTIONS_PER_PEER from
    # one peer address (behind a proxy, the proxy's: the shipped HAProxy opens at most 64 per
    # replica); one more is answered 429 and closed. Below the container profile's 1,024 descriptors.
    http_max_connections: int = field(default=512, metadata=_int(1, 65_536))
    http_max_connections_per_peer: int = field(default=64, metadata=_int(1, 65_536))
    # Answer bytes being written to clients that have not taken them yet, of one identity and in
    # all: an answer goes while both are below these (so at most one answer beyond each); past
    # either it is withheld and answered 429, and a caller at its share gets 429 for new requests
    # until its clients read (or their writes time out).
    http_max_unread_bytes_per_identity: int = field(default=4_194_304, metadata=_int(65_536, 1 << 30))
    http_max_unread_bytes: int = field(default=16_777_216, metadata=_int(65_536, 1 << 30))
    # Requests one identity (a token's subject; the anonymous caller of MCP_HTTP_AUTH=none) may
    # have in progress at once; one more is refused with 429.
    http_max_requests_per_identity: int = field(default=16, metadata=_int(1, 1_024))
    # Call slots (of MCP_MAX_CONCURRENCY) one identity may hold at once, below the server's so that
    # one caller using its whole share leaves slots to the others; its further calls wait in its
    # own line, and the lines of waiting callers are served in turn (bench_fairness).
    http_max_calls_per_identity: int = field(default=8, metadata=_int(1, 256))
    # Legacy (2025-11-25 and earlier) sessions: at most this many at once, and at most
    # MCP_HTTP_MAX_SESSIONS_PER_SUBJECT of one token subject (its own least recently used one makes
    # room); each dropped after this long without a request (its id then gets 404, and the client
    # starts a new one).
    http_max_sessions: int = field(default=256, metadata=_int(1, 100_000))
    http_max_sessions_per_subject: int = field(default=8, metadata=_int(1, 100_000))
    http_session_idle_s: float = field(default=600.0, metadata=_float(0, 86_400, low_open=True))
    # "jwt": every request carries a bearer JWT from MCP_HTTP_ISSUER; "none": no authorization,
    # allowed only on a loopback host and named in the start-up log.
    http_auth: HttpAuth = field(default="jwt", metadata=_one_of(_HTTP_AUTH_MODES))
    # This server's canonical URI (RFC 8707): a token's `aud` must name it.
    http_resource_uri: str | None = field(default=None, metadata=_of(str, type(None), parse=_parse_url))
    http_issuer: str | None = field(default=None, metadata=_of(str, type(None), parse=_parse_url))
    http_jwks_url: str | None = field(default=None, metadata=_of(str, type(None), parse=_parse_url))
    # The issuer's keys are kept this long, fetched again sooner on an unknown `kid`, but at
    # most once per MCP_HTTP_JWKS_REFRESH_MIN_S; a key set over MCP_HTTP_JWKS_MAX_BYTES is refused.
    http_jwks_max_age_s: float = field(default=3_600.0, metadata=_float(0, 86_400, low_open=True))
    http_jwks_refresh_min_s: float = field(default=30.0, metadata=_float(0, 3_600))
    http_jwks_timeout_s: float = field(default=5.0, metadata=_float(0, 60, low_open=True))
    http_jwks_max_bytes: int = field(default=65_536, metadata=_int(1_024, 1_048_576))
    # A request that must wait for the key set (none fetched yet, or its `kid` unknown) waits at
    # most this long for the fetch in progress, then gets 503; a token whose key is cached never
    # waits for a fetch.
    http_jwks_wait_s: float = field(default=2.0, metadata=_float(0, 60, low_open=True))
    # Clock skew allowed on a token's `exp`, `nbf` and `iat`.
    http_clock_leeway_s: int = field(default=30, metadata=_int(0, 300))
    # The signatures of this many recently verified tokens are not checked again while the key set
    # stays the same (their claims are, on every request); 0 checks every request's signature.
    http_token_cache_size: int = field(default=256, metadata=_int(0, 65_536))

    # --- traces and metrics (docs/operations/watching.md; the `otel` extra) ----------------------
    # The OTLP/HTTP collector's base URL (`/v1/traces` and `/v1/metrics` are added): traces and
    # metrics are exported there. Unset: no exporter, no OpenTelemetry import, no outbound connection.
    otel_endpoint: str | None = field(default=None, metadata=_of(str, type(None), parse=_parse_url))
    # The `service.name` resource attribute of every span and metric.
    otel_service_name: str = field(default="mcp-suite", metadata=_of(str, parse=_parse_service_name))
    # Finished spans waiting for the exporter; beyond this they are dropped (and counted).
    otel_queue_size: int = field(default=2_048, metadata=_int(16, 1_000_000))
    # How often metrics are pushed over OTLP, and how long one export may take.
    otel_export_interval_s: float = field(default=10.0, metadata=_float(0.1, 3_600))
    otel_export_timeout_s: float = field(default=5.0, metadata=_float(0, 60, low_open=True))
    # The Prometheus listener (text format at /metrics): off unless a port is set (0: any free one);
    # loopback unless the operator names another address.
    prometheus_port: int | None = field(default=None, metadata=_of(int, type(None), parse=_parse_int))
    prometheus_host: str = field(default="127.0.0.1", metadata=_of(str, parse=_parse_host))

    def __post_init__(self) -> None:
        problems = [p for f in dataclasses.fields(self) if (p := field_problem(f, getattr(self, f.name)))]
        if not problems:
            for spec in dataclasses.fields(self):  # an integer given for a float field becomes a float
                if spec.metadata.get("kind") is float:
                    object.__setattr__(self, spec.name, float(getattr(self, spec.name)))
            problems = _relation_problems(self)
        if problems:
            raise SettingsError("; ".join(p.render(name_of_field) for p in problems), problems)

    @property
    def telemetry_configured(self) -> bool:
        """Traces and metrics are on: an OTLP endpoint or a Prometheus port is set."""
        return self.otel_endpoint is not None or self.prometheus_port is not None

    def http_problems(self) -> list[str]:
        """What `mcp-suite serve-http` still lacks or refuses (stdio reads none of these, so they
        are checked only there): with MCP_HTTP_AUTH=jwt, the resource, the issuer and its key set;
        and a caller's share of the call slots below the server's."""
        problems: list[str] = []
        if self.http_auth == "jwt":
            needed = {
                "MCP_HTTP_RESOURCE_URI": self.http_resource_uri,
                "MCP_HTTP_ISSUER": self.http_issuer,
                "MCP_HTTP_JWKS_URL": self.http_jwks_url,
            }
            problems += [
                f"{name} is required with MCP_HTTP_AUTH=jwt" for name, value in needed.items() if not value
            ]
        # One caller must not be able to hold every call slot (issue 47), unless there is one.
        share, slots = self.http_max_calls_per_identity, self.max_concurrency
        if not (share < slots or share == slots == 1):
            problems.append(
                "MCP_HTTP_MAX_CALLS_PER_IDENTITY must be below MCP_MAX_CONCURRENCY (or 1 when that is 1)"
            )
        return problems

    @property
    def max_queued_calls(self) -> int:
        """Waiters beyond 4 x slots are refused at once (docs/wire.md)."""
        return 4 * self.max_concurrency

    @property
    def sql_threads_per_caller(self) -> int:
        """The database threads of a source one verified caller may hold (issue 52): all but one,
        so that another caller's query finds one free; the one thread of a pool of one."""
        return max(1, self.sql_pool_max_size - 1)


def _relation_problems(settings: Settings) -> list[Problem]:
    """The rules across fields (each field's own value already checked)."""
    problems = []
    if settings.sql_pool_min_size > settings.sql_pool_max_size:
        problems.append(Problem(("sql_pool_min_size", "sql_pool_max_size"), "{0} must not exceed {1}"))
    if settings.http_auth == "none" and settings.http_host not in LOOPBACK_HOSTS:
        problems.append(
            Problem(
                ("http_auth", "http_host"),
                "{0}=none is allowed only on a loopback {1} (127.0.0.1, ::1, localhost)",
            )
        )
    if settings.http_max_connections_per_peer > settings.http_max_connections:
        problems.append(
            Problem(("http_max_connections_per_peer", "http_max_connections"), "{0} must not exceed {1}")
        )
    if settings.http_max_unread_bytes_per_identity > settings.http_max_unread_bytes:
        problems.append(
            Problem(
                ("http_max_unread_bytes_per_identity", "http_max_unread_bytes"), "{0} must not exceed {1}"
            )
        )
    if settings.prometheus_port is not None and not 0 <= settings.prometheus_port <= 65_535:
        problems.append(Problem(("prometheus_port",), "{0}: must be at least 0 and at most 65535"))
    if settings.sql_statement_timeout_ms >= settings.call_deadline_s * 1000:
        problems.append(
            Problem(
                ("sql_statement_timeout_ms", "call_deadline_s"), "{0} must be below the call deadline ({1})"
            )
        )
    return problems


def _variable(spec: dataclasses.Field[object]) -> str | None:
    """The variable of a settings field (see `rules.typed`), None for one not read from the environment."""
    if spec.metadata["parse"] is None:
        return None
    suffix: str = spec.metadata.get("variable", spec.name.upper())
    return ENV_PREFIX + suffix


# variable name -> (field, parser), in the fields' order (the order `--help` lists them in).
PARSERS: Final[dict[str, tuple[str, Parser]]] = {
    name: (spec.name, spec.metadata["parse"])
    for spec in dataclasses.fields(Settings)
    if (name := _variable(spec)) is not None
}
ENV_VARIABLES: Final[tuple[str, ...]] = tuple(PARSERS)
_VARIABLE_OF: Final = {field_name: name for name, (field_name, _parser) in PARSERS.items()}
_FIELDS: Final = {spec.name: spec for spec in dataclasses.fields(Settings)}

# A source's key in the configuration file -> the field it sets for that source: the fields marked
# `per_source`, each keyed by its name without `sql_` (tools/sql/sources.py reads them).
SOURCE_KEYS: Final[Mapping[str, str]] = {
    spec.name.removeprefix("sql_"): spec.name
    for spec in dataclasses.fields(Settings)
    if spec.metadata.get("per_source")
}


def variable_of(field_name: str) -> str:
    """The `MCP_*` variable that sets the settings field `field_name`."""
    return _VARIABLE_OF[field_name]


def default_of(field_name: str) -> Any:
    """A field's default: the value code that runs without the settings (before they are read, or
    in a test) takes, read from the field rather than written twice."""
    return _FIELDS[field_name].default


def highest_of(field_name: str) -> Any:
    """The highest value a numeric field accepts (a model that bounds an argument by it reads it)."""
    return _FIELDS[field_name].metadata["high"]


def name_of_field(field_name: str) -> str:
    """A field's name in the environment's channel: its variable (the field's own name for one not
    read from the environment)."""
    return _VARIABLE_OF.get(field_name, field_name)
