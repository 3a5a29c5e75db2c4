"""Which of the relations a plan reads the role may not read in full: one catalogue query (sync).

Run by `SqlEngine.hidden_relations` inside `Executor.read_catalogue` (a read-only transaction under
the call's statement timeout), in the call's worker thread; no trio here. The decision of what to
do with the answer is `explain_sql`'s (`policy.hidden_rows_refusal`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import psycopg

__all__ = ["hidden_relations"]

# EXPLAIN without VERBOSE names a relation without its schema, so a name stands for every table,
# partitioned table, materialised view, foreign table and index of that name: it is readable in
# full only when each of them is (an unrelated hidden namesake makes it hidden: that errs on the
# side of refusing). An index stands for the table it indexes. A table is read in full when the
# role holds table-level SELECT (column grants alone are not enough) on it or on a table it is a
# partition or inheritance child of (a parent's SELECT reads the children's rows), and no table on
# that line has row-level security enabled (its policies would hide rows). Views never appear in a
# plan (they are expanded), so a security_barrier view is judged by the tables it reads. A name
# that matches nothing is hidden too. So is every system catalogue table: its rows describe objects
# and sessions the role may not see, and the catalogue's views (information_schema, pg_stats) hide
# those rows with a filter that a plan's counts would see through.
_HIDDEN_SQL: Final = b"""
WITH RECURSIVE candidate AS (
    SELECT c.relname::text AS name,
           CASE WHEN c.relkind IN ('i', 'I') THEN i.indrelid ELSE c.oid END AS rel
    FROM pg_catalog.pg_class AS c
    LEFT JOIN pg_catalog.pg_index AS i ON i.indexrelid = c.oid
    WHERE c.relname::text = ANY (%(names)s::text[]) AND c.relkind IN ('r', 'p', 'm', 'f', 'i', 'I')
), lineage AS (
    SELECT rel, rel AS member FROM candidate
    UNION
    SELECT l.rel, h.inhparent FROM lineage AS l JOIN pg_catalog.pg_inherits AS h ON h.inhrelid = l.member
), verdict AS (
    SELECT l.rel,
           bool_or(pg_catalog.has_table_privilege(l.member, 'SELECT'))
               AND NOT bool_or(m.relrowsecurity OR m.relnamespace = 'pg_catalog'::regnamespace)
               AS readable
    FROM lineage AS l JOIN pg_catalog.pg_class AS m ON m.oid = l.member
    GROUP BY l.rel
)
SELECT n.name
FROM unnest(%(names)s::text[]) AS n(name)
WHERE NOT EXISTS (SELECT FROM candidate AS c WHERE c.name = n.name)
   OR EXISTS (
       SELECT FROM candidate AS c JOIN verdict AS v ON v.rel = c.rel
       WHERE c.name = n.name AND NOT v.readable
   )
ORDER BY n.name
"""


def hidden_relations(conn: psycopg.Connection[Any], names: Collection[str]) -> list[str]:
    """The names among `names` that stand for a relation the role may not read in full; blocking.

    Security: a relation is hidden unless the catalogue shows the role may select every row of it
    (see `_HIDDEN_SQL`); an empty list means every relation named is readable in full.
    """
    if not names:
        return []
    rows = conn.execute(_HIDDEN_SQL, {"names": sorted(names)}).fetchall()
    return [str(name) for (name,) in rows]
