"""The schema and object names that complete an argument (completion/complete), fixed SQL text.

Sync psycopg, worker threads only. What is visible is exactly what `sql_schema` lists
(`introspect.objects`): an object is a name when the role may select from it (or from one of its
columns) in a schema it may use, partitions and the system schemas aside; a schema is a name when
it holds such an object. The typed prefix reaches PostgreSQL only as a bound parameter, matched
with `starts_with` on the lower-cased name (so `%`, `_` and quotes in it are data). The caller
(`Executor.read_catalogue`) runs `read` in a read-only transaction, as the mapped role if any.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from mcp_suite.tools.text import escape_invisible

__all__ = ["read"]

# Each query's visibility predicate is `objects._OBJECTS_SQL`'s, word for word (each text whole, a
# constant: no SQL is put together at run time).
_SQL: Final = {
    "schema": """
SELECT name, pg_catalog.count(*) OVER ()
  FROM (SELECT DISTINCT n.nspname::text AS name
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
   AND NOT c.relispartition
   AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
   AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
   AND pg_catalog.has_any_column_privilege(c.oid, 'SELECT')
           AND pg_catalog.starts_with(pg_catalog.lower(n.nspname::text), pg_catalog.lower(%(prefix)s::text))
       ) AS names
 ORDER BY name COLLATE "C"
 LIMIT %(limit)s
""",
    "table": """
SELECT name, pg_catalog.count(*) OVER ()
  FROM (SELECT DISTINCT c.relname::text AS name
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
   AND NOT c.relispartition
   AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
   AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
   AND pg_catalog.has_any_column_privilege(c.oid, 'SELECT')
           AND (%(schema)s::text IS NULL OR n.nspname = %(schema)s::text)
           AND pg_catalog.starts_with(pg_catalog.lower(c.relname::text), pg_catalog.lower(%(prefix)s::text))
       ) AS names
 ORDER BY name COLLATE "C"
 LIMIT %(limit)s
""",
}


def read(
    conn: psycopg.Connection[Any], *, argument: str, prefix: str, schema: str | None, limit: int
) -> tuple[list[str], int]:
    """The first `limit` names of `argument` ("schema" or "table"; a table's only in `schema`
    when given) that start with `prefix` ignoring case, in code point order, and how many matched;
    blocking. Invisible characters in a name are shown escaped, as `sql_schema` shows them.

    Limits: at most `limit` rows leave the database."""
    rows = conn.execute(_SQL[argument], {"prefix": prefix, "schema": schema, "limit": limit}).fetchall()
    total = int(rows[0][1]) if rows else 0
    return [escape_invisible(str(name)) for name, _ in rows], total
