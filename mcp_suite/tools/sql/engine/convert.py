"""PostgreSQL values → JSON values (docs/tools/read_only_sql.md), as psycopg text-format loaders.

The loaders produce JSON-ready values directly, so arrays (whose element loaders psycopg looks up in
the same adapters map) convert element by element. Numbers stay numbers; non-finite floats and every
`numeric` become strings; dates and times become ISO 8601 (the session runs with DateStyle ISO and
TimeZone UTC); uuid, inet, ranges, intervals, records and unknown types (enums...) keep their
PostgreSQL text; bytea is `\\x…` hex; json/jsonb become JSON. Arrays of user-defined types (an
enum, a domain, a composite) get an array loader from `array_loader`, so they become JSON arrays
too. Pure conversion, no I/O.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any, Final

from psycopg.adapt import AdaptersMap, Buffer, Loader
from psycopg.pq import Format
from psycopg.types.array import ArrayLoader
from psycopg.types.string import TextLoader

from mcp_suite.protocol.jsonrpc import compact_json
from mcp_suite.settings import MAX_JSON_DEPTH

__all__ = [
    "JSON_READY_OIDS",
    "array_loader",
    "depth_within",
    "json_size",
    "json_type",
    "register_loaders",
    "to_json_value",
]

# json/jsonb values deeper than the wire's own depth guard (MAX_JSON_DEPTH) are returned as their
# text: the client and our own writer must never meet a structure that recursion limits or the
# wire's depth guard would choke on.

_NON_FINITE: Final = frozenset({b"NaN", b"Infinity", b"-Infinity"})


def _text(data: Buffer) -> str:
    return bytes(data).decode("utf-8")


class _PgTextLoader(Loader):
    """The value exactly as PostgreSQL prints it (numeric, bytea, uuid, inet, ranges, ...)."""

    format = Format.TEXT

    def load(self, data: Buffer) -> str:
        return _text(data)


class _FloatLoader(Loader):
    format = Format.TEXT

    def load(self, data: Buffer) -> float | str:
        raw = bytes(data)
        if raw in _NON_FINITE:
            return raw.decode("ascii")  # JSON has no NaN/Infinity (docs/tools/read_only_sql.md)
        return float(raw)


_TZ_HOURS_ONLY: Final = re.compile(r"([+-]\d\d)$")


def _iso_offset(text: str) -> str:
    # PostgreSQL prints "+00" / "+05:30"; ISO 8601 extended format wants "+00:00".
    return _TZ_HOURS_ONLY.sub(r"\1:00", text)


def _special(text: str) -> bool:
    # infinity, -infinity and BC dates have no ISO 8601 form: keep PostgreSQL's text.
    return text.endswith(("infinity", " BC"))


class _TimestampLoader(Loader):
    format = Format.TEXT

    def load(self, data: Buffer) -> str:
        text = _text(data)
        return text if _special(text) else text.replace(" ", "T", 1)


class _TimestampTzLoader(Loader):
    format = Format.TEXT

    def load(self, data: Buffer) -> str:
        text = _text(data)
        return text if _special(text) else _iso_offset(text.replace(" ", "T", 1))


class _TimeTzLoader(Loader):
    format = Format.TEXT

    def load(self, data: Buffer) -> str:
        return _iso_offset(_text(data))


def _parse_json_float(text: str) -> float | str:
    value = float(text)
    return value if math.isfinite(value) else text  # 1e400 stays text rather than Infinity


def depth_within(value: Any, limit: int) -> bool:
    """True when `value` nests at most `limit` containers deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True


# A `\uD800`-`\uDFFF` escape: the only way a lone surrogate gets into a loaded json value.
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def _has_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class _JsonLoader(Loader):
    format = Format.TEXT

    def load(self, data: Buffer) -> Any:
        text = _text(data)
        try:
            value = json.loads(text, parse_float=_parse_json_float)
        except (RecursionError, ValueError):
            return text
        # PostgreSQL's json (not jsonb) keeps an escaped lone surrogate (`"\ud800"`) as written: no
        # UTF-8 encoder can write it (the rows' serializer raises) and strict JSON parsers refuse
        # its escape, so such a value, like one nested too deep, is returned as its text.
        if _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(value):
            return text
        return value if depth_within(value, MAX_JSON_DEPTH) else text


# Built-in type OIDs (stable across PostgreSQL versions; see pg_type.dat).
_TEXT_OIDS: Final = (
    17,  # bytea (bytea_output = hex: "\x...")
    1700,  # numeric
    1082,  # date
    1083,  # time
    1186,  # interval
    2950,  # uuid
    869,  # inet
    650,  # cidr
    829,  # macaddr
    774,  # macaddr8
    790,  # money
    2249,  # record
    3904,  # int4range
    3906,  # numrange
    3908,  # tsrange
    3910,  # tstzrange
    3912,  # daterange
    3926,  # int8range
    4451,  # int4multirange
    4532,  # nummultirange
    4533,  # tsmultirange
    4534,  # tstzmultirange
    4535,  # datemultirange
    4536,  # int8multirange
)
_FLOAT_OIDS: Final = (700, 701)  # float4, float8
_JSON_OIDS: Final = (114, 3802)  # json, jsonb
_TIME_OIDS: Final = (1114, 1184, 1266)  # timestamp, timestamptz, timetz

# Types whose loaded values are JSON values already: the loaders below, and psycopg's own for
# booleans (bool), integers (int) and text (str). A column of any other type (an array, a type
# psycopg loads as a Python object) goes through `to_json_value`; one of a type psycopg does not
# know (an enum...) loads as its text.
JSON_READY_OIDS: Final = frozenset(
    {
        16,  # bool
        20,  # int8
        21,  # int2
        23,  # int4
        26,  # oid
        18,  # "char"
        19,  # name
        25,  # text
        1042,  # bpchar
        1043,  # varchar
        *_TEXT_OIDS,
        *_FLOAT_OIDS,
        *_JSON_OIDS,
        *_TIME_OIDS,
    }
)


def json_type(oid: int, category: str) -> dict[str, Any]:
    """The JSON Schema of a column's values as the loaders above write them (NULL allowed: a
    described column says nothing of its nulls): `{}` where the value's shape is not known."""
    if oid == 16:
        kind: Any = "boolean"
    elif oid in (20, 21, 23, 26):
        kind = "integer"
    elif oid in _FLOAT_OIDS:
        kind = ["number", "string"]  # NaN and the infinities as strings
    elif oid in _JSON_OIDS:
        return {}  # any JSON value (or its text, past the depth guard)
    elif oid in JSON_READY_OIDS:
        kind = "string"
    elif category == "A":
        kind = "array"
    elif category in ("E", "S"):  # an enum, or a user-defined string type: its text
        kind = "string"
    else:
        return {}
    return {"type": [*(kind if isinstance(kind, list) else [kind]), "null"]}


def register_loaders(adapters: AdaptersMap, *, encoding: str = "utf-8") -> None:
    """Install the JSON-ready loaders on a connection's (or a context's) adapters map.

    `encoding` is the connection's (`conn.info.encoding`): psycopg's own text loader (compiled,
    cheaper per value: bench_stages) decodes with it, except on a SQL_ASCII database ("ascii"),
    where it would return bytes; there the values are read as UTF-8 text.
    """
    text_loader = _PgTextLoader if encoding == "ascii" else TextLoader
    for oid in _TEXT_OIDS:
        adapters.register_loader(oid, text_loader)
    for oid in _FLOAT_OIDS:
        adapters.register_loader(oid, _FloatLoader)
    for oid in _JSON_OIDS:
        adapters.register_loader(oid, _JsonLoader)
    adapters.register_loader(1114, _TimestampLoader)
    adapters.register_loader(1184, _TimestampTzLoader)
    adapters.register_loader(1266, _TimeTzLoader)


# One loader class per (element type, delimiter), made once: classes are never freed, so their
# number is bounded (a database with more user-defined array types gets text for the rest).
_ARRAY_LOADERS: dict[tuple[int, bytes], type[Loader]] = {}
_MAX_ARRAY_LOADERS: Final = 10_000


def array_loader(element_oid: int, delimiter: str) -> type[Loader] | None:
    """A text-format loader for arrays of `element_oid` (its elements load as that type does)."""
    key = (element_oid, delimiter.encode("utf-8"))
    loader = _ARRAY_LOADERS.get(key)
    if loader is None:
        if len(_ARRAY_LOADERS) >= _MAX_ARRAY_LOADERS:
            return None
        made = type(
            f"UserArrayLoader{element_oid}", (ArrayLoader,), {"base_oid": element_oid, "delimiter": key[1]}
        )
        loader = _ARRAY_LOADERS.setdefault(key, made)
    return loader


def to_json_value(value: Any) -> Any:
    """Last line of defence for a value no loader shaped: make it JSON, never fail.

    The loaders above already return JSON-ready values for every type they cover
    (`JSON_READY_OIDS`); anything else (a psycopg default loader we did not override) is turned
    into a string here.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, list | tuple):
        return [to_json_value(item) for item in value]
    if isinstance(value, dict):
        return value  # only our json loader returns dicts, already checked
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\x" + bytes(value).hex()
    return str(value)


def json_size(value: Any) -> int:
    """Bytes of `value` as compact, ASCII-only JSON (how the wire carries it)."""
    return len(compact_json(value))
