"""The limits fixed by the wire contract (docs/wire.md): not read from the environment, each defined
once here. The code that enforces them, and the tests, import them (through `mcp_suite.settings`,
which names each). Every name here is a limit. Imports nothing of the package.
"""

from __future__ import annotations

from typing import Final

# A message (a stdio line, an HTTP body by default: MCP_HTTP_MAX_BODY_BYTES) holds at most this many
# bytes; its JSON nests at most MAX_JSON_DEPTH deep; a tool's arguments at most ARG_MAX_DEPTH deep,
# ARG_MAX_ITEMS members or items in all, each key at most ARG_MAX_KEY_CHARS characters.
MAX_FRAME_BYTES: Final = 1_048_576
MAX_JSON_DEPTH: Final = 64
ARG_MAX_DEPTH: Final = 8
ARG_MAX_ITEMS: Final = 1_000
ARG_MAX_KEY_CHARS: Final = 64
# Caller input quoted in a problem's detail or the audit log: at most this many characters, and
# a name the caller chose (a method, a tool, a protocol version) at most NAME_ECHO_CHARS.
ECHO_MAX_CHARS: Final = 256
# Resource subscriptions one legacy session may hold (only where a server offers subscriptions).
MAX_SUBSCRIPTIONS: Final = 64
NAME_ECHO_CHARS: Final = 64
# A 2026-07-28 retry's `requestState` (basic/patterns/mrtr): what this server seals is far shorter;
# a longer one is refused before it is decoded.
REQUEST_STATE_MAX_CHARS: Final = 4_096
# The audit record of a SQL statement holds its text up to this many characters (then `sql_truncated`).
AUDIT_SQL_MAX_CHARS: Final = 4_096
# Over HTTP an answer leaves once its audit record is written to stderr (a replica killed right after
# answering keeps the record), waiting at most this long for a stderr nobody reads.
AUDIT_WRITE_WAIT_S: Final = 1.0
# The Prometheus listener (MCP_PROMETHEUS_PORT) serves at most this many connections at once, each
# closed when a read or write of it waits this long; one more is closed at once (no thread for it).
PROMETHEUS_MAX_CONNECTIONS: Final = 4
PROMETHEUS_TIMEOUT_S: Final = 5.0
# A caller's SQL text (`read_only_sql`, `explain_sql`) holds at most this many characters.
SQL_MAX_CHARS: Final = 10_000
# A file's (a listing's) invisible-characters report names at most this many of its first lines
# (entries) holding some; it counts them all.
INVISIBLE_SHOWN: Final = 10
# completion/complete (server/utilities/completion): at most COMPLETION_MAX_VALUES values in an
# answer (the specification's cap), for a typed value of at most COMPLETION_MAX_VALUE_CHARS
# characters (longer than any PostgreSQL name or source name it could be the start of).
COMPLETION_MAX_VALUES: Final = 100
COMPLETION_MAX_VALUE_CHARS: Final = 256
