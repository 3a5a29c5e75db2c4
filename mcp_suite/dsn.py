"""Check a PostgreSQL connection string before anything uses it, and say what is wrong without it.

`dsn_problem(raw)` returns None for a string libpq accepts, else a sentence that names the position
of the fault and the fix, never any text of the string (a fragment could be a word of a password).
The key=value form is tokenised here by libpq's own rules; a `postgresql://` URI gets its
percent-encoding and parameter names checked; libpq's parser has the last word, its message unseen;
then the values libpq would check only when connecting (sslmode, port, timeouts...) are checked.
Imports psycopg (for libpq's keyword list) only when called. No I/O.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit

from mcp_suite.lazy import Lazy

__all__ = ["dsn_problem"]

_URI_SCHEMES: Final = ("postgresql://", "postgres://")
_BAD_PERCENT: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")
_QUOTING: Final = "put a value holding spaces or quotes in single quotes, as in password='a b\\'c'"


def _libpq_keywords() -> frozenset[str]:
    from psycopg import pq

    return frozenset(opt.keyword.decode() for opt in pq.Conninfo.get_defaults())


_KEYWORDS: Final = Lazy(_libpq_keywords)


def _unknown(what: str, key: str) -> str:
    # The key itself is never echoed: in `password=a b=c` the "key" `b` is a word of the password.
    close = difflib.get_close_matches(key.lower(), sorted(_KEYWORDS.get()), n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{what} is not a libpq connection option{hint}"


def _keyword_value_problem(raw: str) -> str | None:
    """libpq's conninfo_parse rules: `key = value` pairs, values bare or in '…' with \\ escapes."""
    i, n, number = 0, len(raw), 0
    while True:
        while i < n and raw[i].isspace():
            i += 1
        if i >= n:
            return None
        number += 1
        start = i
        while i < n and raw[i] != "=" and not raw[i].isspace():
            i += 1
        key = raw[start:i]
        while i < n and raw[i].isspace():
            i += 1
        if i >= n or raw[i] != "=":
            return f"word {number} is not a key=value pair; {_QUOTING}"
        if key not in _KEYWORDS.get():
            return _unknown(f"option {number}", key) if key else f"option {number} has no name before '='"
        i += 1
        while i < n and raw[i].isspace():
            i += 1
        if i < n and raw[i] == "'":
            i += 1
            while i < n and raw[i] != "'":
                i += 2 if raw[i] == "\\" else 1
            if i >= n:
                return f"the quoted value of option {number} is not closed; {_QUOTING}"
            i += 1
        else:
            while i < n and not raw[i].isspace():
                i += 2 if raw[i] == "\\" else 1


def _uri_problem(raw: str) -> str | None:
    if _BAD_PERCENT.search(raw):
        return "the URI has a % that does not start a percent-encoding (write % as %25, a space as %20)"
    try:
        query = urlsplit(raw).query
    except ValueError:
        return "the URI's host part is malformed (write a password's @ : / as %40 %3A %2F)"
    for number, item in enumerate(filter(None, query.split("&")), start=1):
        key, sep, _ = item.partition("=")
        if not sep:
            return f"URI parameter {number} is not a key=value pair"
        if key not in _KEYWORDS.get() and key != "ssl":  # libpq's alias: ssl=true means sslmode=require
            return _unknown(f"URI parameter {number}", key)
    return None


def dsn_problem(raw: str) -> str | None:
    """What is wrong with connection string `raw`, or None when libpq can parse it.

    Security: the answer never contains any character of `raw`; psycopg's message is not read.
    """
    if not raw.strip():
        return "must not be empty"
    is_uri = raw.lstrip().startswith(_URI_SCHEMES)
    problem = _uri_problem(raw.strip()) if is_uri else _keyword_value_problem(raw)
    if problem:
        return problem
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        options = conninfo_to_dict(raw)
    except psycopg.Error:
        form = "postgresql:// URI" if is_uri else "key=value connection string"
        return f"not a valid {form} (libpq refused it; see libpq's 'Connection Strings')"
    return _value_problem(options)


# Options whose values libpq checks only when it connects (and then quotes the value in its error):
# checked here, so a wrong one stops the start-up (exit 78) instead of looking like a database down.
_CHOICES: Final = {
    "sslmode": ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
    "gssencmode": ("disable", "prefer", "require"),
    "channel_binding": ("disable", "prefer", "require"),
    "sslnegotiation": ("postgres", "direct"),
    "sslcertmode": ("disable", "allow", "require"),
    "load_balance_hosts": ("disable", "random"),
    "target_session_attrs": ("any", "read-write", "read-only", "primary", "standby", "prefer-standby"),
}
_INTEGERS: Final = (
    "connect_timeout",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
)


def _value_problem(options: Mapping[str, object]) -> str | None:
    for key, allowed in _CHOICES.items():
        if key in options and str(options[key]) not in allowed:
            return f"the value of {key} is not one of {', '.join(allowed)}"
    for key in _INTEGERS:
        if key in options and not str(options[key]).strip().lstrip("-").isdigit():
            return f"the value of {key} is not an integer"
    ports = [port.strip() for port in str(options.get("port", "")).split(",")]
    if any(port and not port.isdigit() for port in ports):  # an empty one means the default
        return "the value of port is not a port number (or a comma-separated list of them)"
    return None
