"""The schema listing `sql_schema` shows (sync psycopg, worker threads only): fixed SQL text.

Every query below is a constant; the caller's strings reach PostgreSQL only as bound parameters
(`Lookup`), never as SQL text, so `%`, `_`, quotes and backslashes in them are data. Visibility is
PostgreSQL's own: schemas with USAGE, objects with SELECT on the object or on one of its columns,
columns with SELECT, constraints and indexes only when every column they use is selectable and,
for a foreign key, when the referenced columns are too. The caller (`Executor.read_catalogue`)
runs `read` inside a read-only transaction with the statement timeout.

Paging: objects come in (schema, name) order, the order of `name`'s C collation, and a page starts
after the cursor's object (a keyset, so a walk reaches every object once, whatever changes
elsewhere in the catalogue). Comments are cut in the database to the configured length.
`estimated_rows` is told only of a relation the role may read in full (table-level SELECT, no
row-level security): of any other it would count rows the role cannot see (explain_sql's rule).
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from mcp_suite.problems import ResultTooLargeError
from mcp_suite.tools.sql.engine.convert import json_size
from mcp_suite.tools.sql.engine.introspect.lookup import Lookup, cap_comment, encode_cursor
from mcp_suite.tools.text import escape_invisible

__all__ = ["KINDS", "read"]

KINDS: Final = {
    "r": "table",
    "p": "partitioned table",
    "v": "view",
    "m": "materialized view",
    "f": "foreign table",
}

_OBJECTS_SQL: Final = """
SELECT c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text,
       pg_catalog.left(d.description, %(comment_chars)s), pg_catalog.char_length(d.description),
       CASE WHEN c.relkind IN ('r', 'm', 'f') AND c.reltuples >= 0
                 AND pg_catalog.has_table_privilege(c.oid, 'SELECT') AND NOT c.relrowsecurity
            THEN c.reltuples::int8 END
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_catalog.pg_description d
         ON d.objoid = c.oid AND d.classoid = 'pg_catalog.pg_class'::regclass AND d.objsubid = 0
 WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
   AND NOT c.relispartition
   AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
   AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
   AND pg_catalog.has_any_column_privilege(c.oid, 'SELECT')
   AND (%(schema)s::text IS NULL OR n.nspname = %(schema)s::text)
   AND (%(name_like)s::text IS NULL OR c.relname ILIKE %(name_like)s::text ESCAPE '\\')
   AND (%(object_schema)s::text IS NULL
        OR (n.nspname = %(object_schema)s::text AND c.relname = %(object_name)s::text))
   AND (%(after_schema)s::text IS NULL
        OR (n.nspname, c.relname) > (%(after_schema)s::name, %(after_name)s::name))
 ORDER BY n.nspname, c.relname
 LIMIT %(limit)s
"""

_COLUMNS_SQL: Final = """
SELECT a.attrelid::int8, a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod),
       NOT a.attnotnull, pg_catalog.pg_get_expr(d.adbin, d.adrelid),
       pg_catalog.left(cd.description, %(comment_chars)s), pg_catalog.char_length(cd.description)
  FROM pg_catalog.pg_attribute a
  LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  LEFT JOIN pg_catalog.pg_description cd
         ON cd.objoid = a.attrelid AND cd.classoid = 'pg_catalog.pg_class'::regclass
        AND cd.objsubid = a.attnum
 WHERE a.attrelid = ANY(%(oids)s::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
   AND pg_catalog.has_column_privilege(a.attrelid, a.attnum, 'SELECT')
 ORDER BY a.attrelid, a.attnum
"""

# Primary keys, unique constraints and foreign keys whose columns (and, for a foreign key, the
# referenced object's schema and columns) the role may all read.
_CONSTRAINTS_SQL: Final = """
SELECT con.conrelid::int8, con.contype::text,
       ARRAY(SELECT a.attname::text
               FROM unnest(con.conkey) WITH ORDINALITY AS k(num, pos)
               JOIN pg_catalog.pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num
              ORDER BY k.pos),
       CASE WHEN con.contype = 'f'
            THEN pg_catalog.quote_ident(fn.nspname) || '.' || pg_catalog.quote_ident(fc.relname) END,
       ARRAY(SELECT a.attname::text
               FROM unnest(con.confkey) WITH ORDINALITY AS k(num, pos)
               JOIN pg_catalog.pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.num
              ORDER BY k.pos)
  FROM pg_catalog.pg_constraint con
  LEFT JOIN pg_catalog.pg_class fc ON fc.oid = con.confrelid
  LEFT JOIN pg_catalog.pg_namespace fn ON fn.oid = fc.relnamespace
 WHERE con.conrelid = ANY(%(oids)s::oid[]) AND con.contype IN ('p', 'u', 'f')
   AND NOT EXISTS (SELECT 1 FROM unnest(con.conkey) AS k(num)
                    WHERE NOT pg_catalog.has_column_privilege(con.conrelid, k.num, 'SELECT'))
   AND (con.contype <> 'f'
        OR (pg_catalog.has_schema_privilege(fn.oid, 'USAGE')
            AND NOT EXISTS (SELECT 1 FROM unnest(con.confkey) AS k(num)
                             WHERE NOT pg_catalog.has_column_privilege(con.confrelid, k.num, 'SELECT'))))
 ORDER BY con.conrelid, con.contype, con.conname
"""

# Indexes whose every column, in keys, expressions and predicates alike (pg_depend records each),
# the role may read: a definition must not name a column the role cannot see.
_INDEXES_SQL: Final = """
SELECT i.indrelid::int8, ic.relname::text, i.indisunique, pg_catalog.pg_get_indexdef(i.indexrelid)
  FROM pg_catalog.pg_index i
  JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
 WHERE i.indrelid = ANY(%(oids)s::oid[])
   AND NOT EXISTS (SELECT 1 FROM unnest(i.indkey::int2[]) AS k(num)
                    WHERE k.num > 0 AND NOT pg_catalog.has_column_privilege(i.indrelid, k.num, 'SELECT'))
   AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend dep
                    WHERE dep.classid = 'pg_catalog.pg_class'::regclass AND dep.objid = i.indexrelid
                      AND dep.refclassid = 'pg_catalog.pg_class'::regclass
                      AND dep.refobjid = i.indrelid AND dep.refobjsubid > 0
                      AND NOT pg_catalog.has_column_privilege(i.indrelid, dep.refobjsubid::int2, 'SELECT'))
 ORDER BY i.indrelid, ic.relname
"""

# Room kept for the envelope around the objects
# ({"database": ..., "objects": [], "truncated": false, "next_cursor": ...}), the cursor aside.
_ENVELOPE_BYTES: Final = 256
# No object's JSON is shorter ({"schema":"","name":"","kind":"view","comment":null,...} is 72
# bytes): more objects than the byte cap holds at this size are never read.
_MIN_OBJECT_BYTES: Final = 64
_DETAILS: Final = ("columns", "primary_key", "unique", "foreign_keys", "indexes")


def read(
    conn: psycopg.Connection[Any],
    lookup: Lookup,
    *,
    detail: str,
    max_objects: int,
    max_bytes: int,
    comment_chars: int,
    after: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """One page of the `sql_schema` result as plain JSON values; blocking. Objects come in schema
    and name order, starting after the object `after` (from the caller's cursor); `next_cursor`
    (and `truncated`) when more matched than `max_objects`, or than fit in `max_bytes` of JSON.

    Limits: at most `max_objects + 1` objects are read, and no more than could fit in `max_bytes`
    (so neither a large `max_objects` of the resource nor a huge catalogue fills memory); comments
    arrive cut to `comment_chars`; the answer never exceeds `max_bytes`. A page holds at least one
    object: one whose columns, keys and indexes alone pass the cap is listed without them
    (`details_omitted`), so no object is ever out of reach.
    """
    (database,) = conn.execute("SELECT current_database()::text").fetchone() or ("",)
    budget = max_bytes - _ENVELOPE_BYTES - json_size(database)
    wanted = min(max_objects, max(0, budget) // (_MIN_OBJECT_BYTES + 1))
    params = {
        "schema": lookup.schema,
        "name_like": lookup.name_like,
        "object_schema": lookup.object_schema,
        "object_name": lookup.object_name,
        "after_schema": after[0] if after else None,
        "after_name": after[1] if after else None,
        "comment_chars": comment_chars,
        "limit": wanted + 1,
    }
    rows = conn.execute(_OBJECTS_SQL, params).fetchall()
    more = len(rows) > wanted
    objects: dict[int, dict[str, Any]] = {}
    stored: dict[int, tuple[str, str]] = {}  # the names as stored: the cursor's keyset needs them
    for oid, schema, name, kind, comment, comment_total, estimate in rows[:wanted]:
        objects[oid] = {
            "schema": _visible(schema),
            "name": _visible(name),
            "kind": KINDS[kind],
            "comment": _visible(cap_comment(comment, comment_total, comment_chars)),
            "estimated_rows": estimate,
        }
        stored[oid] = (schema, name)
    if objects and detail != "names":
        _add_details(conn, objects, full=detail == "full", comment_chars=comment_chars)
    listed: list[dict[str, Any]] = []
    last: tuple[str, str] | None = None
    for oid, item in objects.items():
        size = json_size(item) + 1
        if size + _cursor_bytes(lookup, item) > budget:
            more = True
            break
        budget -= size
        listed.append(item)
        last = stored[oid]
    if not listed and objects:
        oid, item = next(iter(objects.items()))
        listed.append(_without_details(lookup, item, budget, max_bytes))
        last = stored[oid]
    cursor = encode_cursor(lookup, *last) if more and last is not None else None
    return {
        "database": _visible(database),
        "objects": listed,
        "truncated": cursor is not None,
        "next_cursor": cursor,
    }


def _visible(value: Any) -> Any:
    """Catalogue text as the model and a person reviewing the transcript see it: every invisible
    character (bidi controls, zero-width and tag characters) as a visible escape (`[U+202E]`),
    in a string or in the strings of a list."""
    if isinstance(value, str):
        return escape_invisible(value)
    if isinstance(value, list):
        return [_visible(part) for part in value]
    return value


def _cursor_bytes(lookup: Lookup, item: dict[str, Any]) -> int:
    return json_size(encode_cursor(lookup, item["schema"], item["name"]))


def _without_details(lookup: Lookup, item: dict[str, Any], budget: int, max_bytes: int) -> dict[str, Any]:
    """The first object of a page, too large for it whole: without its columns, keys and indexes
    (the caller reads them from information_schema), or else without its comment."""
    small = {key: value for key, value in item.items() if key not in _DETAILS}
    if len(small) < len(item):
        small["details_omitted"] = True
    if json_size(small) + 1 + _cursor_bytes(lookup, small) > budget and small["comment"] is not None:
        small["comment"] = "… [cut: longer than the reply's byte limit allows]"
    if json_size(small) + 1 + _cursor_bytes(lookup, small) > budget:
        raise ResultTooLargeError(
            f"The object {item['schema']}.{item['name']}'s name alone does not fit in the reply's"
            f" {max_bytes} bytes; the operator can raise MCP_SQL_MAX_RESULT_BYTES.",
            metadata={"max_result_bytes": max_bytes},
        )
    return small


def _add_details(
    conn: psycopg.Connection[Any], objects: dict[int, dict[str, Any]], *, full: bool, comment_chars: int
) -> None:
    oids = {"oids": list(objects)}
    for item in objects.values():
        item["columns"] = []
        if full:
            item.update(primary_key=[], unique=[], foreign_keys=[], indexes=[])  # [] = none
    columns = conn.execute(_COLUMNS_SQL, {**oids, "comment_chars": comment_chars})
    for oid, name, type_, nullable, default, comment, comment_total in columns:
        objects[oid]["columns"].append(
            {
                "name": _visible(name),
                "type": _visible(type_),
                "nullable": nullable,
                "default": _visible(default),
                "comment": _visible(cap_comment(comment, comment_total, comment_chars)),
            }
        )
    if not full:
        return
    for oid, kind, columns, references, referenced in conn.execute(_CONSTRAINTS_SQL, oids):
        item = objects[oid]
        if kind == "p":
            item["primary_key"] = _visible(columns)
        elif kind == "u":
            item["unique"].append(_visible(columns))
        else:
            item["foreign_keys"].append(
                {
                    "columns": _visible(columns),
                    "references": _visible(references),
                    "referenced_columns": _visible(referenced),
                }
            )
    for oid, name, unique, definition in conn.execute(_INDEXES_SQL, oids):
        objects[oid]["indexes"].append(
            {"name": _visible(name), "unique": unique, "definition": _visible(definition)}
        )
