"""Every limit and option of the server, each defined once here (docs/configuration.md).

The operator's options are the fields of one frozen `Settings`, each written once: its field carries
its rule and parser, and its `MCP_*` variable derives from its name. Values are validated strictly:
an invalid value is a `SettingsError` (the CLI exits with `os.EX_CONFIG`, 78), never silently
replaced. The limits fixed by the wire contract (frame size, JSON depth, argument shape, how much
caller input a message or log line echoes) are the module constants below; `protocol/`, `problems/`,
the runtime and the tools import them from here. A tool's own argument bounds (a listing's depth, a
path's length) and internal sizes (worker threads, buffers) are named constants beside the code they
bound. Must not import trio or any tool module, nor do I/O on import, nor list the names the
project's tooling reads (except the one inside a family of ours, `FOREIGN_IN_FAMILIES`). The DSN is
a secret: it never appears in a repr or message.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, get_args

__all__ = [
    "ENV_PREFIX",
    "ENV_VARIABLES",
    "FOREIGN_IN_FAMILIES",
    "SETTING_FAMILIES",
    "SecretStr",
    "Settings",
    "SettingsError",
    "foreign_variables",
    "load_settings",
    "variable_of",
]

ENV_PREFIX = "MCP_"

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
CpuAffinity = Literal["single", "off"]
HttpAuth = Literal["jwt", "none"]
SqlPooler = Literal["none", "transaction"]
_LOG_LEVELS: Final[tuple[str, ...]] = get_args(LogLevel)
_AFFINITIES: Final[tuple[str, ...]] = get_args(CpuAffinity)
_HTTP_AUTH_MODES: Final[tuple[str, ...]] = get_args(HttpAuth)
_SQL_POOLERS: Final[tuple[str, ...]] = get_args(SqlPooler)
# The hosts `MCP_HTTP_AUTH=none` may bind: loopback only (docs/operations/remote.md).
LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "::1", "localhost"})

# Wire limits fixed by the contract (docs/wire.md): not read from the environment. The code that
# enforces them, and the tests, import them from here.
MAX_FRAME_BYTES = 1_048_576
MAX_JSON_DEPTH = 64
ARG_MAX_DEPTH = 8
ARG_MAX_ITEMS = 1_000
ARG_MAX_KEY_CHARS = 64
# Caller input quoted in a problem's detail or the audit log: at most this many characters, and
# a name the caller chose (a method, a tool, a protocol version) at most NAME_ECHO_CHARS.
ECHO_MAX_CHARS = 256
NAME_ECHO_CHARS = 64
# The audit record of a SQL statement holds its text up to this many characters (then `sql_truncated`).
AUDIT_SQL_MAX_CHARS = 4_096
# Over HTTP an answer leaves once its audit record is written to stderr (a replica killed right after
# answering keeps the record), waiting at most this long for a stderr nobody reads.
AUDIT_WRITE_WAIT_S = 1.0
# The Prometheus listener (MCP_PROMETHEUS_PORT) serves at most this many connections at once, each
# closed when a read or write of it waits this long; one more is closed at once (no thread for it).
PROMETHEUS_MAX_CONNECTIONS = 4
PROMETHEUS_TIMEOUT_S = 5.0
# A caller's SQL text (`read_only_sql`, `explain_sql`) holds at most this many characters.
SQL_MAX_CHARS = 10_000
# A file's (a listing's) invisible-characters report names at most this many of its first lines
# (entries) holding some; it counts them all.
INVISIBLE_SHOWN = 10


class SettingsError(Exception):
    """Configuration is invalid; the message names the variable(s) and never echoes a secret."""


class SecretStr:
    """A string that never shows itself: `repr` and `str` print asterisks; read it explicitly."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "SecretStr('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretStr) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


# The parsers of the variables' text. Strict: "5" is an int only for int fields, booleans only accept
# true/false/1/0/yes/no/on/off.
_Parser = Callable[[str], object]
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _parse_bool(raw: str) -> bool:
    low = raw.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError("expected true or false")


def _parse_int(raw: str) -> int:
    text = raw.strip().replace("_", "")
    if not text or not (text.isdigit() or (text[0] == "-" and text[1:].isdigit())):
        raise ValueError("expected an integer")
    return int(text)


def _parse_float(raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise ValueError("expected a number") from None
    if not math.isfinite(value):
        raise ValueError("expected a finite number")
    return value


def _parse_path(raw: str) -> Path:
    if not raw or "\x00" in raw:
        raise ValueError("expected a path")
    return Path(raw)


def _parse_dir(raw: str) -> Path:
    path = _parse_path(raw)
    # A client starts the server in a working directory of its own choosing: a relative path would
    # quietly mean a folder nobody named.
    if not path.is_absolute():
        raise ValueError("must be an absolute path")
    if not path.is_dir():
        raise ValueError("must be an existing directory")
    return path


def _parse_dsn(raw: str) -> SecretStr:
    from mcp_suite.dsn import dsn_problem  # only when a DSN is set (it loads libpq's keywords)

    problem = dsn_problem(raw)
    if problem:
        raise ValueError(problem)
    return SecretStr(raw)


def _parse_function_names(raw: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in raw.split(",") if part.strip())
    for name in names:
        schema, dot, function = name.partition(".")
        if not (schema and dot and function) or "." in function or any(c in name for c in " ()\"'"):
            raise ValueError("expected schema.function names, separated by commas")
    return names


def _parse_role_names(raw: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in raw.split(",") if part.strip())
    if any(c in name for name in names for c in "\"'"):
        raise ValueError("expected role names as PostgreSQL stores them, separated by commas (no quotes)")
    return names


def _parse_extension_names(raw: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in raw.split(",") if part.strip())
    if any(c in name for name in names for c in "\"' "):
        raise ValueError("expected extension names as pg_extension holds them, separated by commas")
    return names


def _parse_host(raw: str) -> str:
    host = raw.strip()
    if not host or any(c in host for c in " /[]"):
        raise ValueError("expected a host name or an IP address (no brackets, no port)")
    return host


def _parse_endpoint_path(raw: str) -> str:
    path = raw.strip()
    if not path.startswith("/") or path == "/" or path.endswith("/") or any(c in path for c in " ?#%"):
        raise ValueError("expected a path such as /mcp (no trailing slash, query or fragment)")
    return path


def _parse_url(raw: str) -> str:
    from urllib.parse import urlsplit  # only when an HTTP setting is set

    url = raw.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment or " " in url:
        raise ValueError("expected an absolute http(s) URL without a fragment")
    return url


def _parse_origins(raw: str) -> tuple[str, ...]:
    from urllib.parse import urlsplit

    origins = tuple(part.strip().lower() for part in raw.split(",") if part.strip())
    for origin in origins:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query:
            raise ValueError("expected origins as scheme://host[:port], separated by commas")
    return origins


def _parse_service_name(raw: str) -> str:
    name = raw.strip()
    if not name or len(name) > 128 or not name.isprintable():
        raise ValueError("expected a printable name of at most 128 characters")
    return name


def _choice(choices: tuple[str, ...], *, aliases: Mapping[str, str] | None = None) -> _Parser:
    """The parser of a field with `choices`, all in one case: any case is read (`warn`, ` OFF `)."""
    fold = str.upper if choices[0].isupper() else str.lower
    wording = f"expected {', '.join(choices[:-1])} or {choices[-1]}"

    def parse(raw: str) -> str:
        value = fold(raw.strip())
        value = (aliases or {}).get(value, value)
        if value not in choices:
            raise ValueError(wording)
        return value

    return parse


# Each field of `Settings` is one option, written once: its rule (the types, range or choices that
# `Settings` checks) and its parser (`parse`, None for a field not read from the environment). Its
# variable is `MCP_` + the field's name upper-cased, or `MCP_` + the `variable` its metadata names.
def _of(*types: type, parse: _Parser, variable: str | None = None) -> dict[str, Any]:
    return {"types": types, "parse": parse} | ({"variable": variable} if variable else {})


def _flag() -> dict[str, Any]:
    return _of(bool, parse=_parse_bool)


def _int(low: int, high: int, *, env: bool = True) -> dict[str, Any]:
    return {"kind": int, "low": low, "high": high, "parse": _parse_int if env else None}


def _float(low: float, high: float, *, low_open: bool = False) -> dict[str, Any]:
    return {"kind": float, "low": low, "high": high, "low_open": low_open, "parse": _parse_float}


def _one_of(choices: tuple[str, ...], *, aliases: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"choices": choices, "parse": _choice(choices, aliases=aliases)}


@dataclass(frozen=True, slots=True)
class Settings:
    """The frozen configuration of one server process.

    Keyword construction is validated strictly (types, ranges, relations between fields) and an
    invalid value raises `SettingsError`. Plain dataclasses on purpose: a server start must not pay
    for a validation library's import before it can answer `initialize`.
    """

    # --- tools ---------------------------------------------------------------------------------
    sql_dsn: SecretStr | None = field(default=None, metadata=_of(SecretStr, type(None), parse=_parse_dsn))
    # The TOML file naming the databases the SQL tools read (`sources.load_sources`); without it,
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
    sql_pool_min_size: int = field(default=0, metadata=_int(0, 64))
    sql_pool_max_size: int = field(default=4, metadata=_int(1, 64))
    # After its last call, an idle server closes every pooled connection above the minimum within
    # this time (the executor derives the pool's shrink period from it and the maximum size).
    sql_pool_max_idle_s: float = field(default=600.0, metadata=_float(1, 86_400))
    # Also the main bound of a query's memory in its backend, which PostgreSQL does not limit: an
    # aggregate grows for as long as it runs (docs/operations/deployments.md, "Database memory").
    sql_statement_timeout_ms: int = field(default=5_000, metadata=_int(1, 600_000))
    sql_max_rows: int = field(default=200, metadata=_int(1, 10_000))
    # Sized for the clients people use: Claude Code refuses a tool answer over 25,000 tokens, and
    # a tool answer carries the result twice (docs/configuration.md, "Answers and tokens").
    sql_max_result_bytes: int = field(default=20_000, metadata=_int(1_024, 16_777_216))
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
        default=(), metadata=_of(tuple, parse=_parse_function_names)
    )
    # How long the run-time check trusts what the catalogue said about SECURITY DEFINER functions
    # before it asks again (the names a query calls never make it ask; the re-audit refreshes it).
    sql_function_cache_s: float = field(default=60.0, metadata=_float(0, 3_600, low_open=True))
    # After repeated failed connections, calls fail at once (database-unavailable) for a back-off
    # that doubles up to this bound, so a wrong password is not retried at the client's call rate.
    sql_reconnect_max_s: float = field(default=30.0, metadata=_float(0, 3_600, low_open=True))
    # True: a database that cannot be reached, or refuses the login, at start-up stops the server
    # (exit 69) instead of serving database-unavailable until it is back.
    sql_require_database: bool = field(default=False, metadata=_flag())
    # --- re-audit while serving (issue 26) ---
    # How often the whole role audit runs again while the server serves (on its own connection, in
    # a worker thread). A new refusal stops the SQL tools until a re-audit passes; each re-audit
    # also refreshes the SECURITY DEFINER guard's catalogue.
    sql_reaudit_interval_s: float = field(default=30.0, metadata=_float(0, 60, low_open=True))
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
        default=(), metadata=_of(tuple, parse=_parse_role_names)
    )
    # True: the SQL policy's catalogue rule is off, and a query reads pg_catalog, unfiltered
    # information_schema views and the host/connection functions freely (logged at start-up as a
    # warning; docs/tools/read_only_sql.md, "The catalogue").
    sql_allow_catalogue: bool = field(default=False, metadata=_flag())
    # True: the SQL policy allows XML (the xml type, XMLPARSE, xpath, XMLTABLE, ...), which PostgreSQL
    # hands to libxml2: libxml2 never checks for cancellation, so one call can keep its backend busy
    # past the statement timeout (logged at start-up; docs/tools/read_only_sql.md, "Work that
    # cannot be stopped").
    sql_allow_xml: bool = field(default=False, metadata=_flag())
    # Extensions whose functions a query may call although they are not on the reviewed list
    # (docs/tools/read_only_sql.md, "Functions"), as pg_extension names them; logged at start-up.
    sql_allow_extensions: tuple[str, ...] = field(
        default=(), metadata=_of(tuple, parse=_parse_extension_names)
    )
    # What sits between the pool and PostgreSQL. "none": each pooled connection is its own backend,
    # so a call's pinned settings are set once per connection and every call only checks them (a
    # mismatch refuses the call and drops the connection). "transaction": a transaction-pooling
    # PgBouncer (or another pooler that hands backends around): every call sets them itself, inside
    # its transaction, after RESET ALL (docs/tools/read_only_sql.md, "Settings of a call").
    sql_pooler: SqlPooler = field(default="none", metadata=_one_of(_SQL_POOLERS))

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

    # --- contract constants (not from the environment) ------------------------------------------
    max_frame_bytes: int = field(default=MAX_FRAME_BYTES, metadata=_int(1, 1 << 30, env=False))
    max_json_depth: int = field(default=MAX_JSON_DEPTH, metadata=_int(1, 1_000, env=False))
    arg_max_depth: int = field(default=ARG_MAX_DEPTH, metadata=_int(1, 1_000, env=False))
    arg_max_items: int = field(default=ARG_MAX_ITEMS, metadata=_int(1, 1 << 30, env=False))

    def __post_init__(self) -> None:
        problems = [p for f in dataclasses.fields(self) if (p := _field_problem(f, getattr(self, f.name)))]
        if problems:
            raise SettingsError("; ".join(problems))
        for spec in dataclasses.fields(self):  # an integer given for a float field becomes a float
            if spec.metadata.get("kind") is float:
                object.__setattr__(self, spec.name, float(getattr(self, spec.name)))
        if self.sql_pool_min_size > self.sql_pool_max_size:
            raise SettingsError("MCP_SQL_POOL_MIN_SIZE must not exceed MCP_SQL_POOL_MAX_SIZE")
        if self.http_auth == "none" and self.http_host not in LOOPBACK_HOSTS:
            raise SettingsError(
                "MCP_HTTP_AUTH=none is allowed only on a loopback MCP_HTTP_HOST (127.0.0.1, ::1, localhost)"
            )
        if self.http_max_connections_per_peer > self.http_max_connections:
            raise SettingsError("MCP_HTTP_MAX_CONNECTIONS_PER_PEER must not exceed MCP_HTTP_MAX_CONNECTIONS")
        if self.http_max_unread_bytes_per_identity > self.http_max_unread_bytes:
            raise SettingsError(
                "MCP_HTTP_MAX_UNREAD_BYTES_PER_IDENTITY must not exceed MCP_HTTP_MAX_UNREAD_BYTES"
            )
        if self.prometheus_port is not None and not 0 <= self.prometheus_port <= 65_535:
            raise SettingsError("MCP_PROMETHEUS_PORT: must be at least 0 and at most 65535")
        if self.sql_statement_timeout_ms >= self.call_deadline_s * 1000:
            raise SettingsError(
                "MCP_SQL_STATEMENT_TIMEOUT_MS must be below the call deadline (MCP_CALL_DEADLINE_S)"
            )

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


def _field_problem(spec: dataclasses.Field[Any], value: object) -> str | None:
    """What is wrong with `value` for field `spec`, named by its variable; None when it is valid.

    Strict, like the environment parsers: a bool is not an int, a string is not a number, an
    integer is accepted for a float; numbers must be finite and inside the field's range.
    """
    name = _VARIABLE_OF.get(spec.name, spec.name)
    rule = spec.metadata
    if "kind" in rule:
        kind = rule["kind"]
        wrong_kind = kind is int and isinstance(value, float)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or wrong_kind:
            return f"{name}: expected {'a number' if kind is float else 'an integer'}"
        if not math.isfinite(value):
            return f"{name}: expected a finite number"
        low, high = rule["low"], rule["high"]
        too_low = value <= low if rule.get("low_open") else value < low
        if too_low or value > high:
            bound = "above" if rule.get("low_open") else "at least"
            return f"{name}: must be {bound} {low} and at most {high}"
        return None
    if "choices" in rule:
        return None if value in rule["choices"] else f"{name}: expected one of {', '.join(rule['choices'])}"
    if not isinstance(value, rule["types"]):
        return f"{name}: invalid value"
    return None


def _variable(spec: dataclasses.Field[Any]) -> str | None:
    """The variable of a settings field (see `_of`), None for one not read from the environment."""
    if spec.metadata["parse"] is None:
        return None
    suffix: str = spec.metadata.get("variable", spec.name.upper())
    return ENV_PREFIX + suffix


# variable name -> (field, parser), in the fields' order (the order `--help` lists them in).
_PARSERS: Final[dict[str, tuple[str, _Parser]]] = {
    name: (spec.name, spec.metadata["parse"])
    for spec in dataclasses.fields(Settings)
    if (name := _variable(spec)) is not None
}
ENV_VARIABLES: Final[tuple[str, ...]] = tuple(_PARSERS)
_VARIABLE_OF: Final = {field_name: name for name, (field_name, _parser) in _PARSERS.items()}


# Name families of this server's own settings: an unknown name in one is a misspelling of ours.
# Other programs share the `MCP_` prefix in the same environments (Claude Code's `MCP_TIMEOUT`,
# a harness's `MCP_SUITE_CHECKOUT`, the project's own container scripts), so a name outside these
# families is refused only when it is within `_TYPO_DISTANCE` edits of a known name.
SETTING_FAMILIES: Final = (
    "MCP_SQL_",
    "MCP_FS_",
    "MCP_SAFE_",
    "MCP_METRICS_",
    "MCP_HTTP_",
    "MCP_OTEL_",
    "MCP_PROMETHEUS_",
)
_TYPO_DISTANCE: Final = 2
# Another program's names inside a family of ours (the host folder a container mounts as
# MCP_SAFE_DATA_DIR): foreign like any other program's, not misspellings. Only a name a family would
# claim belongs here: a name outside the families and far from ours is foreign without a list
# (tests/unit/test_settings_variables.py proves this holds exactly what the project's tooling needs).
FOREIGN_IN_FAMILIES: Final = frozenset({"MCP_SAFE_DATA_HOST_DIR"})


def _within_edits(a: str, b: str, limit: int) -> bool:
    """Whether `a` becomes `b` in at most `limit` single-character insertions, deletions or changes."""
    if abs(len(a) - len(b)) > limit:
        return False
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        if min(current) > limit:
            return False
        previous = current
    return previous[-1] <= limit


def _is_ours(name: str) -> bool:
    """An unknown `MCP_*` name that can only be a misspelling of one of this server's settings."""
    if name in FOREIGN_IN_FAMILIES:
        return False
    return name.startswith(SETTING_FAMILIES) or any(
        _within_edits(name, known, _TYPO_DISTANCE) for known in ENV_VARIABLES
    )


def _unknown_variables(env: Mapping[str, str]) -> list[str]:
    """A problem per unknown `MCP_*` name that is a likely misspelling of one of this server's
    (`_is_ours`): a misspelt name must not keep a default silently."""
    import difflib  # only when there is a stranger to name

    problems = []
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or name in _PARSERS or not _is_ours(name):
            continue
        close = difflib.get_close_matches(name, ENV_VARIABLES, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else "see docs/configuration.md for the known names"
        problems.append(f"{name}: not a known setting ({hint})")
    return problems


def variable_of(field_name: str) -> str:
    """The `MCP_*` variable that sets the settings field `field_name`."""
    return _VARIABLE_OF[field_name]


def foreign_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """The `MCP_*` names that are neither this server's nor likely misspellings of them: another
    program's (the server ignores them, and says so once at start-up)."""
    env = os.environ if environ is None else environ
    return sorted(n for n in env if n.startswith(ENV_PREFIX) and n not in _PARSERS and not _is_ours(n))


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build `Settings` from `MCP_*` variables.

    An empty variable counts as unset; an `MCP_*` name that is not a setting is refused, with the
    nearest known name, when it is a likely misspelling of ours (in a family of ours, or a couple of
    edits from a known name); another program's is left alone (`foreign_variables`). Every problem
    is collected and reported together, unknown names, values and ranges alike, naming the variable
    and the rule, never the value (the DSN is secret; other values are not needed to fix it).
    """
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    problems = _unknown_variables(env)
    for name, (field_name, parser) in _PARSERS.items():
        raw = env.get(name)
        if raw is None or raw == "":
            continue
        try:
            values[field_name] = parser(raw)
        except ValueError as exc:
            problems.append(f"{name}: {exc}")
    try:
        settings = Settings(**values)  # type: ignore[arg-type]  # values are typed by their parsers
    except SettingsError as exc:  # the ranges and the rules across settings, reported with the rest
        problems.append(str(exc))
    if problems:
        raise SettingsError("; ".join(problems))
    return settings
