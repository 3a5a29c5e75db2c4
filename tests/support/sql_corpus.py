"""The SQL policy's corpus and its independent safety oracle, shared by the unit, property and
PostgreSQL tests (tests/unit/tools/sql/test_sql_policy_corpus.py, tests/property/, tests/pg/).

Every case is labelled allow/reject with the reason. Queries read only `docs.pages` (the one table
`mcp_reader` may SELECT). `assert_safe` checks an accepted query's executed form with pglast's own AST
and visitor, not with the policy's code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pglast import ast as pg_ast
from pglast import parse_sql
from pglast import parser as pg_parser
from pglast.visitors import Visitor

from mcp_suite.problems import InvalidArgumentsError, ProblemError, QueryViolationError
from mcp_suite.tools.sql.engine.denylist import DENIED_FUNCTIONS, DENIED_PREFIXES, denied_reason
from mcp_suite.tools.sql.engine.policy import VettedQuery

__all__ = ["ATTACKS", "CORPUS", "DENIED_SPELLINGS", "HONEST", "MAX_ROWS", "Case", "assert_safe"]

MAX_ROWS = 50


@dataclass(frozen=True, slots=True)
class Case:
    sql: str
    rule: str | None  # None: allowed; else the `metadata["rule"]` of the expected problem
    why: str
    # Allowed cases only: whether two runs give the same rows (no now(), random(), ...).
    deterministic: bool = True

    @property
    def allowed(self) -> bool:
        return self.rule is None

    @property
    def problem(self) -> type[ProblemError]:
        return InvalidArgumentsError if self.rule in _INVALID_RULES else QueryViolationError


_INVALID_RULES = frozenset({"syntax", "empty", "too-deep", "too-long", "nul", "unsupported-syntax"})


def allow(sql: str, why: str, *, deterministic: bool = True) -> Case:
    return Case(sql, None, why, deterministic)


def reject(sql: str, rule: str, why: str) -> Case:
    return Case(sql, rule, why)


HONEST: tuple[Case, ...] = (
    allow("SELECT slug, words FROM docs.pages ORDER BY words DESC LIMIT 5", "plain top-n"),
    allow(
        "SELECT section, count(*) AS n, avg(words)::numeric(10, 2) AS avg_words "
        "FROM docs.pages GROUP BY section ORDER BY section",
        "aggregates and a numeric cast",
    ),
    allow(
        "SELECT slug, section, rank() OVER (PARTITION BY section ORDER BY words DESC) AS r "
        "FROM docs.pages ORDER BY section, r",
        "window function",
    ),
    allow(
        "SELECT slug, sum(words) OVER (ORDER BY slug ROWS BETWEEN UNBOUNDED PRECEDING AND "
        "CURRENT ROW) AS running FROM docs.pages ORDER BY slug",
        "window frame",
    ),
    allow(
        "SELECT slug, lag(words) OVER w AS prev, lead(words) OVER w AS next FROM docs.pages "
        "WINDOW w AS (ORDER BY slug) ORDER BY slug",
        "named window",
    ),
    allow(
        "SELECT slug, ntile(4) OVER (ORDER BY words) AS quartile, "
        "round(cume_dist() OVER (ORDER BY words)::numeric, 3) AS cd FROM docs.pages ORDER BY slug",
        "ntile and cume_dist",
    ),
    allow(
        "SELECT count(*) FILTER (WHERE words > 500) AS long, "
        "count(*) FILTER (WHERE section = 'guides') AS guides FROM docs.pages",
        "FILTER",
    ),
    allow(
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY words) AS median FROM docs.pages",
        "WITHIN GROUP / percentile_cont",
    ),
    allow(
        "SELECT section, mode() WITHIN GROUP (ORDER BY editor_id) AS usual FROM docs.pages "
        "GROUP BY section ORDER BY section",
        "mode() WITHIN GROUP",
    ),
    allow(
        "SELECT p.slug, w.hundreds FROM docs.pages AS p CROSS JOIN LATERAL "
        "(SELECT p.words / 100 AS hundreds) AS w ORDER BY p.slug",
        "LATERAL subquery",
    ),
    allow(
        "SELECT p.slug, g FROM docs.pages AS p, LATERAL generate_series(1, 2) AS g "
        "WHERE p.words < 300 ORDER BY 1, 2",
        "LATERAL function",
    ),
    allow(
        "WITH totals AS (SELECT section, sum(words) AS total FROM docs.pages GROUP BY section) "
        "SELECT * FROM totals ORDER BY total DESC",
        "read-only CTE",
    ),
    allow(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) "
        "SELECT n FROM r ORDER BY n",
        "recursive CTE over a bounded series",
    ),
    allow(
        "WITH RECURSIVE fib(a, b, i) AS (SELECT 0::bigint, 1::bigint, 1 UNION ALL "
        "SELECT b, a + b, i + 1 FROM fib WHERE i < 30) SELECT a FROM fib ORDER BY i",
        "recursive CTE: Fibonacci",
    ),
    allow(
        """SELECT '{"a": {"b": [1, 2, 3]}}'::jsonb -> 'a' -> 'b' ->> 1 AS second""",
        "JSON operators",
    ),
    allow(
        "SELECT json_agg(json_build_object('slug', slug, 'words', words) ORDER BY slug) "
        "FROM docs.pages WHERE words > 900",
        "JSON functions",
    ),
    allow(
        """SELECT key, value FROM jsonb_each('{"x": 1, "y": 2}'::jsonb) ORDER BY key""",
        "jsonb_each in FROM",
    ),
    allow(
        """SELECT jsonb_path_query_array('{"a": [1, 2, 3]}', '$.a[*] ? (@ > 1)') AS big""",
        "SQL/JSON path",
    ),
    allow(
        """SELECT '{"a": 1, "b": 2}'::jsonb @> '{"a": 1}'::jsonb AS contains,"""
        """ '{"a": 1}'::jsonb ? 'a' AS has_a""",
        "jsonb containment and key test",
    ),
    allow("VALUES (1, 'one'), (2, 'two')", "VALUES at the root"),
    allow(
        "SELECT * FROM (VALUES (3), (1), (2)) AS v(x) ORDER BY x LIMIT 2",
        "VALUES in FROM with ORDER BY and LIMIT",
    ),
    allow(
        "SELECT slug FROM docs.pages WHERE words < 300 UNION "
        "SELECT slug FROM docs.pages WHERE words > 950 ORDER BY 1",
        "UNION",
    ),
    allow(
        "SELECT section FROM docs.pages WHERE words > 600 INTERSECT "
        "SELECT section FROM docs.pages WHERE editor_id = 'e-1' ORDER BY 1",
        "INTERSECT",
    ),
    allow(
        "SELECT slug FROM docs.pages EXCEPT SELECT slug FROM docs.pages WHERE words > 300 ORDER BY 1",
        "EXCEPT",
    ),
    allow(
        "SELECT 1 AS n UNION ALL SELECT 2 UNION ALL SELECT 3 ORDER BY n DESC LIMIT 2",
        "UNION ALL with a LIMIT on the whole",
    ),
    allow(
        "SELECT DISTINCT ON (section) section, slug, words FROM docs.pages ORDER BY section, words DESC",
        "DISTINCT ON",
    ),
    allow(
        "SELECT section, editor_id, count(*) AS n FROM docs.pages "
        "GROUP BY GROUPING SETS ((section), (editor_id), ()) ORDER BY 1, 2",
        "GROUPING SETS",
    ),
    allow(
        "SELECT section, editor_id, sum(words) FROM docs.pages GROUP BY ROLLUP (section, editor_id) "
        "ORDER BY 1, 2",
        "ROLLUP",
    ),
    allow(
        "SELECT array_agg(slug ORDER BY slug) AS slugs FROM docs.pages WHERE section = 'changelog'",
        "array_agg",
    ),
    allow(
        "SELECT ARRAY[1, 2, 3] || 4 AS a, (ARRAY[1, 2, 3])[2] AS second, "
        "array_length(ARRAY[[1, 2], [3, 4]], 1) AS len",
        "arrays",
    ),
    allow(
        "SELECT * FROM unnest(ARRAY['a', 'b']) WITH ORDINALITY AS t(v, i) ORDER BY i",
        "unnest WITH ORDINALITY",
    ),
    allow(
        "SELECT '2024-01-31'::date + 1 AS d, CAST('42' AS integer) AS i, 3.7::int AS r, "
        "'1 day'::interval * 2 AS two_days",
        "casts",
    ),
    allow("SELECT slug FROM docs.pages WHERE slug ILIKE 'PAGE-1%' ORDER BY slug", "ILIKE"),
    allow(
        "SELECT slug FROM docs.pages WHERE slug ~ '^page-0[1-3]$' OR slug !~* 'page' ORDER BY slug",
        "regex operators",
    ),
    allow(
        "SELECT regexp_replace(slug, '[0-9]+', 'N') AS shape, substring(slug FROM '[0-9]+') AS num "
        "FROM docs.pages ORDER BY slug LIMIT 3",
        "regex functions",
    ),
    allow(
        """SELECT 1 AS "select", 2 AS "from", 3 AS "limit", 'x' AS "user", 4 AS "union\"""",
        "identifiers that look like keywords",
    ),
    allow(
        """SELECT t."order", t."group" FROM (VALUES (1, 2)) AS t("order", "group")""",
        "quoted keyword column names",
    ),
    allow(
        "SELECT words AS lo_size, slug AS pg_sleep FROM docs.pages ORDER BY slug LIMIT 2",
        "aliases named like denied functions are only names",
    ),
    allow("SELECT 'DROP TABLE x; DELETE FROM y' AS s", "keywords and a semicolon in a string"),
    allow("SELECT ';' AS semi, 'COMMIT; SELECT 1' AS text", "semicolons in strings"),
    allow("SELECT /* ; DELETE FROM docs.pages */ 1 AS one -- trailing ; UPDATE", "comments"),
    allow("SELECT $$a; DROP TABLE docs.pages$$ AS s", "dollar quoting hiding a semicolon"),
    allow("SELECT $tag$ pg_sleep(10) $tag$ AS s", "a denied name inside a dollar-quoted string"),
    allow("SELECT 1; -- done", "one statement, a trailing semicolon and comment"),
    allow(
        "SELECT slug, CASE WHEN words > 800 THEN 'long' WHEN words > 400 THEN 'medium' "
        "ELSE 'short' END AS size FROM docs.pages ORDER BY slug",
        "CASE",
    ),
    allow(
        "SELECT slug FROM docs.pages AS p WHERE words > (SELECT avg(words) FROM docs.pages) "
        "AND EXISTS (SELECT 1 FROM docs.pages AS q WHERE q.section = p.section) ORDER BY slug",
        "scalar subquery and EXISTS",
    ),
    allow(
        "SELECT * FROM (SELECT slug FROM docs.pages ORDER BY slug LIMIT 100) AS s ORDER BY slug",
        "a subquery LIMIT above max_rows",
    ),
    allow(
        "SELECT date_trunc('month', timestamp '2024-05-17 10:00') AS m, "
        "extract(dow FROM date '2024-05-17') AS dow, date '2024-05-17' - date '2024-01-01' AS days",
        "date and time functions",
    ),
    allow(
        "SELECT upper(slug), length(slug), left(slug, 4), split_part(slug, '-', 2)::int AS n, "
        "format('%s/%s', section, slug) AS path FROM docs.pages ORDER BY slug LIMIT 3",
        "string functions",
    ),
    allow(
        "SELECT coalesce(NULL, 1) AS c, nullif(1, 1) AS n, greatest(1, 5, 3) AS g, least(2, 0) AS l",
        "conditional expressions",
    ),
    allow(
        "SELECT d::date AS day FROM generate_series('2024-01-01'::date, '2024-01-07'::date, '1 day') AS d",
        "generate_series over dates",
    ),
    allow(
        "SELECT section, string_agg(slug, ',' ORDER BY slug) AS slugs FROM docs.pages "
        "GROUP BY section ORDER BY section",
        "string_agg",
    ),
    allow(
        "SELECT bool_and(words > 100) AS all_long, every(words < 2000) AS all_short, "
        "round(stddev(words), 2) AS sd FROM docs.pages",
        "boolean and statistical aggregates",
    ),
    allow("SELECT slug FROM docs.pages ORDER BY slug LIMIT 5 OFFSET 10", "LIMIT and OFFSET"),
    allow("SELECT slug FROM docs.pages ORDER BY slug OFFSET 25", "OFFSET only"),
    allow("SELECT slug FROM docs.pages ORDER BY slug FETCH FIRST 3 ROWS ONLY", "FETCH FIRST"),
    allow("SELECT slug FROM docs.pages ORDER BY slug LIMIT ALL", "LIMIT ALL"),
    allow(
        "SELECT slug FROM docs.pages ORDER BY slug OFFSET 3 ROWS FETCH NEXT ROW ONLY",
        "FETCH NEXT ROW ONLY means one row",
    ),
    allow("TABLE docs.pages", "TABLE shorthand"),
    allow(
        "SELECT a.slug, b.slug AS next FROM docs.pages AS a JOIN docs.pages AS b "
        "ON b.words = a.words + 25 ORDER BY a.slug LIMIT 5",
        "self join",
    ),
    allow(
        "SELECT a.slug, b.slug FROM docs.pages AS a LEFT JOIN docs.pages AS b USING (section, slug) "
        "ORDER BY 1 LIMIT 3",
        "LEFT JOIN USING",
    ),
    allow(
        "SELECT 1 IS DISTINCT FROM NULL AS d, 5 BETWEEN SYMMETRIC 9 AND 1 AS b, (1, 2) < (1, 3) AS rowcmp",
        "IS DISTINCT FROM, BETWEEN SYMMETRIC, row comparison",
    ),
    allow(
        "SELECT slug FROM docs.pages WHERE section IN (VALUES ('guides'), ('reference')) "
        "AND words = ANY (ARRAY[225, 250, 275]) ORDER BY slug",
        "IN (VALUES) and = ANY(ARRAY)",
    ),
    allow(
        "SELECT md5(slug) AS h, encode(convert_to(slug, 'UTF8'), 'base64') AS b64 "
        "FROM docs.pages ORDER BY slug LIMIT 2",
        "hash and encoding",
    ),
    allow("""SELECT "slug" FROM "docs"."pages" ORDER BY "slug" LIMIT 1""", "quoted identifiers"),
    allow("SELECT U&'d\\0061t\\+000061' AS s", "a Unicode-escaped string literal"),
    allow(
        "SELECT current_setting('server_version_num')::int >= 100000 AS modern",
        "reading a setting",
    ),
    allow("SELECT now() >= '2000-01-01'::timestamptz AS sane", "now()", deterministic=False),
    allow(
        "SELECT words % 7 AS m, words / 3 AS d, -words AS n, abs(-5) AS a, 2 ^ 10 AS p, 7 & 3 AS b "
        "FROM docs.pages ORDER BY slug LIMIT 2",
        "arithmetic operators",
    ),
    allow(
        "SELECT slug FROM docs.pages WHERE slug LIKE 'page-2_' AND NOT (words < 0) "
        "AND section IS NOT NULL ORDER BY slug",
        "LIKE, NOT, IS NOT NULL",
    ),
    allow(
        # pg_typeof() was here: its regtype result turns identifiers into any type's name (the catalogue
        # rule refuses it; the reply's columns carry their types).
        "SELECT to_char(1234.5, 'FM9999.00') AS money, to_jsonb(ARRAY[1, 2]) AS j, 1.5::text AS t",
        "formatting functions",
    ),
    allow(
        "SELECT x FROM (VALUES (1), (2)) AS v(x) WHERE x = 2 UNION SELECT 3 INTERSECT SELECT 3 ORDER BY 1",
        "mixed set operations",
    ),
    allow(
        "SELECT make_interval(days => 2) AS two_days, make_interval(hours := 3) AS three_hours",
        "named function arguments",
    ),
    allow(
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) "
        "SEARCH DEPTH FIRST BY n SET ord SELECT n FROM t ORDER BY ord",
        "recursive CTE with SEARCH",
    ),
    allow(
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n % 3 + 1 FROM t) "
        "CYCLE n SET is_cycle USING path SELECT n FROM t WHERE NOT is_cycle ORDER BY n",
        "recursive CTE with CYCLE",
    ),
    allow(
        "SELECT * FROM ROWS FROM (generate_series(1, 3), generate_series(1, 2)) AS r(a, b)",
        "ROWS FROM",
    ),
    allow(
        "SELECT slug, count(*) OVER (ORDER BY words GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING "
        "EXCLUDE CURRENT ROW) AS near FROM docs.pages ORDER BY slug",
        "GROUPS frame with EXCLUDE",
    ),
    allow(
        "SELECT section, count(*) FROM docs.pages GROUP BY DISTINCT ROLLUP (section), CUBE (section) "
        "ORDER BY 1, 2",
        "GROUP BY DISTINCT",
    ),
    allow(
        """SELECT * FROM JSON_TABLE('[{"a": 1}, {"a": 2}]'::jsonb, '$[*]' """
        """COLUMNS (a int PATH '$.a', ord FOR ORDINALITY)) AS jt""",
        "JSON_TABLE",
    ),
    allow(
        "SELECT slug FROM docs.pages WHERE words > ALL (SELECT words FROM docs.pages "
        "WHERE section = 'guides') ORDER BY 1",
        "> ALL (subquery)",
    ),
    allow("SELECT FROM docs.pages LIMIT 2", "an empty select list"),
    allow(
        "SELECT slug AS straße, 1 AS \"名前\", 'ü' AS ä FROM docs.pages ORDER BY straße LIMIT 2",
        "non-ASCII identifiers",
    ),
    allow("SELECT count(*) FROM docs.pages LIMIT 0", "LIMIT 0"),
    allow(
        "SELECT slug, repeat('#', words / 100) AS bar, lpad(words::text, 6) AS w FROM docs.pages "
        "ORDER BY slug LIMIT 3",
        "repeat() and lpad() with modest lengths",
    ),
    allow(
        "SELECT substr(slug, 1, 4), strpos(slug, '-'), char_length(slug) FROM docs.pages "
        "ORDER BY slug LIMIT 2",
        "functions sqlglot renames",
    ),
    allow(
        "SELECT slug, to_tsvector('simple', replace(slug, '-', ' ')) @@ to_tsquery('simple', 'page') "
        "AS hit FROM docs.pages ORDER BY slug LIMIT 2",
        "full-text search operators",
    ),
    # PostgreSQL syntax sqlglot cannot read (or write back): PostgreSQL's own tree is regenerated.
    allow("VALUES (3), (1), (2) ORDER BY 1 LIMIT 2", "VALUES with ORDER BY and LIMIT at the root"),
    allow("VALUES (1, 'a'), (2, 'b') ORDER BY 1 DESC", "VALUES with ORDER BY at the root"),
    allow("VALUES (1), (2) ORDER BY 1 OFFSET 1", "VALUES with OFFSET at the root"),
    allow("SELECT @ -5 AS a, |/ 25.0 AS r, ||/ 27.0 AS c", "prefix operators: abs, square and cube root"),
    allow(
        "SELECT slug FROM docs.pages WHERE section = 'gui'\n  'des' ORDER BY slug LIMIT 3",
        "adjacent string literals on separate lines",
    ),
    allow("SELECT 'a'\n'b' AS s", "two adjacent literals"),
    allow("SELECT 'it''s'\n'-'\n'ok' AS s", "three adjacent literals with a quote inside"),
    allow("SELECT E'tab\\t'\n'x' AS e, B'01'\n'1' AS b", "escape-string and bit-string continuations"),
    allow(
        "SELECT j.slug FROM docs.pages AS a JOIN docs.pages AS b USING (slug) AS j ORDER BY j.slug LIMIT 3",
        "JOIN USING with an alias",
    ),
    allow("SELECT slug FROM docs.pages ORDER BY words USING >, slug LIMIT 3", "ORDER BY ... USING >"),
    allow("SELECT collation for (slug) AS c FROM docs.pages ORDER BY slug LIMIT 1", "collation for"),
    allow(
        "SELECT substring(slug similar '%#\"ge-0#\"_' escape '#') FROM docs.pages ORDER BY slug LIMIT 3",
        "substring(... similar ... escape ...)",
    ),
    allow("SELECT slug IS NFC NORMALIZED AS n FROM docs.pages ORDER BY slug LIMIT 2", "IS NFC NORMALIZED"),
    allow("SELECT 'a' IS NOT NFKD NORMALIZED AS n", "IS NOT NFKD NORMALIZED"),
)

# (rule, why, sql) for each attack or forbidden construct.
ATTACKS: tuple[Case, ...] = (
    # Stacked statements.
    reject("SELECT 1; COMMIT; DROP TABLE docs.pages", "multiple-statements", "stacked after COMMIT"),
    reject("COMMIT; SELECT 1", "multiple-statements", "COMMIT first"),
    reject("SELECT 1; SELECT 2", "multiple-statements", "two SELECTs"),
    reject("SELECT 1; /* ; */ DELETE FROM docs.pages", "multiple-statements", "comment hides nothing"),
    reject("SELECT $$;$$; DELETE FROM docs.pages", "multiple-statements", "dollar quote then DML"),
    reject("SELECT ';'; UPDATE docs.pages SET words = 0", "multiple-statements", "string then DML"),
    # DML, at the root and anywhere.
    reject("INSERT INTO docs.pages VALUES ('x', 'e-1', 'guides', 1)", "data-modifying", "INSERT"),
    reject("UPDATE docs.pages SET words = 0", "data-modifying", "UPDATE"),
    reject("DELETE FROM docs.pages", "data-modifying", "DELETE"),
    reject(
        "MERGE INTO docs.pages p USING docs.pages q ON p.slug = q.slug "
        "WHEN MATCHED THEN UPDATE SET words = 0",
        "data-modifying",
        "MERGE",
    ),
    reject(
        "WITH gone AS (DELETE FROM docs.pages RETURNING *) SELECT * FROM gone",
        "data-modifying",
        "writable CTE (DELETE)",
    ),
    reject(
        "WITH up AS (UPDATE docs.pages SET words = 0 RETURNING slug) SELECT count(*) FROM up",
        "data-modifying",
        "writable CTE (UPDATE)",
    ),
    reject(
        "WITH ins AS (INSERT INTO docs.pages VALUES ('x', 'e-1', 'guides', 1) RETURNING 1) SELECT 1",
        "data-modifying",
        "writable CTE (INSERT), unreferenced",
    ),
    reject(
        "WITH a AS (SELECT 1), b AS (WITH c AS (DELETE FROM docs.pages RETURNING 1) "
        "SELECT * FROM c) SELECT * FROM b",
        "data-modifying",
        "writable CTE nested two levels down",
    ),
    reject(
        "SELECT * FROM (WITH d AS (DELETE FROM docs.pages RETURNING 1) SELECT * FROM d) AS s",
        "data-modifying",
        "writable CTE inside a subquery",
    ),
    # SELECT INTO and row locks.
    reject("SELECT * INTO stolen FROM docs.pages", "select-into", "SELECT INTO"),
    reject("SELECT * INTO TEMP t FROM docs.pages", "select-into", "SELECT INTO TEMP"),
    reject("SELECT * FROM docs.pages FOR UPDATE", "row-lock", "FOR UPDATE"),
    reject("SELECT * FROM docs.pages FOR SHARE", "row-lock", "FOR SHARE"),
    reject("SELECT * FROM docs.pages FOR NO KEY UPDATE NOWAIT", "row-lock", "FOR NO KEY UPDATE"),
    reject("SELECT * FROM docs.pages FOR KEY SHARE SKIP LOCKED", "row-lock", "FOR KEY SHARE"),
    reject("SELECT * FROM (SELECT * FROM docs.pages FOR UPDATE) AS s", "row-lock", "lock in subquery"),
    reject(
        "WITH l AS (SELECT * FROM docs.pages FOR UPDATE) SELECT * FROM l",
        "row-lock",
        "lock in a CTE",
    ),
    reject(
        "SELECT (SELECT slug FROM docs.pages LIMIT 1 FOR SHARE) AS s",
        "row-lock",
        "lock in a scalar subquery",
    ),
    # Statements that are not queries.
    reject("EXPLAIN ANALYZE DELETE FROM docs.pages", "root-not-select", "EXPLAIN ANALYZE"),
    reject("EXPLAIN SELECT 1", "root-not-select", "EXPLAIN"),
    reject("COPY docs.pages TO STDOUT", "root-not-select", "COPY TO"),
    reject("COPY (SELECT 1) TO PROGRAM 'id'", "root-not-select", "COPY TO PROGRAM"),
    reject("DO $$ BEGIN PERFORM pg_sleep(1); END $$", "root-not-select", "DO"),
    reject("CALL some_procedure()", "root-not-select", "CALL"),
    reject("LISTEN channel", "root-not-select", "LISTEN"),
    reject("NOTIFY channel, 'x'", "root-not-select", "NOTIFY"),
    reject("UNLISTEN *", "root-not-select", "UNLISTEN"),
    reject("PREPARE p AS SELECT 1", "root-not-select", "PREPARE"),
    reject("EXECUTE p", "root-not-select", "EXECUTE"),
    reject("DEALLOCATE ALL", "root-not-select", "DEALLOCATE"),
    reject(
        "DECLARE c CURSOR WITH HOLD FOR SELECT * FROM docs.pages",
        "root-not-select",
        "DECLARE WITH HOLD",
    ),
    reject("FETCH ALL FROM c", "root-not-select", "FETCH from a cursor"),
    reject("CLOSE c", "root-not-select", "CLOSE"),
    reject("LOCK TABLE docs.pages IN ACCESS EXCLUSIVE MODE", "root-not-select", "LOCK"),
    reject("DISCARD ALL", "root-not-select", "DISCARD"),
    reject("VACUUM docs.pages", "root-not-select", "VACUUM"),
    reject("ANALYZE docs.pages", "root-not-select", "ANALYZE"),
    reject("CHECKPOINT", "root-not-select", "CHECKPOINT"),
    reject("REINDEX TABLE docs.pages", "root-not-select", "REINDEX"),
    reject("CLUSTER docs.pages", "root-not-select", "CLUSTER"),
    reject("REFRESH MATERIALIZED VIEW v", "root-not-select", "REFRESH"),
    reject("LOAD 'plpgsql'", "root-not-select", "LOAD"),
    reject("SHOW ALL", "root-not-select", "SHOW"),
    reject("SET ROLE postgres", "root-not-select", "SET ROLE"),
    reject("SET statement_timeout = 0", "root-not-select", "SET"),
    reject("SET SESSION AUTHORIZATION DEFAULT", "root-not-select", "SET SESSION AUTHORIZATION"),
    reject("RESET ALL", "root-not-select", "RESET"),
    reject("BEGIN", "root-not-select", "BEGIN"),
    reject("COMMIT", "root-not-select", "COMMIT"),
    reject("ROLLBACK", "root-not-select", "ROLLBACK"),
    reject("START TRANSACTION READ WRITE", "root-not-select", "START TRANSACTION"),
    reject("SAVEPOINT s", "root-not-select", "SAVEPOINT"),
    reject("SET TRANSACTION READ WRITE", "root-not-select", "SET TRANSACTION"),
    reject("PREPARE TRANSACTION 'x'", "root-not-select", "PREPARE TRANSACTION"),
    # DDL and privileges.
    reject("CREATE TABLE t (a int)", "root-not-select", "CREATE TABLE"),
    reject("CREATE TABLE t AS SELECT 1", "root-not-select", "CREATE TABLE AS"),
    reject("CREATE TEMP VIEW v AS SELECT 1", "root-not-select", "CREATE VIEW"),
    reject(
        "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
        "root-not-select",
        "CREATE FUNCTION",
    ),
    reject("CREATE EXTENSION dblink", "root-not-select", "CREATE EXTENSION"),
    reject("DROP TABLE docs.pages", "root-not-select", "DROP"),
    reject("ALTER TABLE docs.pages ADD COLUMN x int", "root-not-select", "ALTER"),
    reject("ALTER SYSTEM SET work_mem = '1GB'", "root-not-select", "ALTER SYSTEM"),
    reject("TRUNCATE docs.pages", "root-not-select", "TRUNCATE"),
    reject("COMMENT ON TABLE docs.pages IS 'x'", "root-not-select", "COMMENT"),
    reject("GRANT SELECT ON docs.editors TO mcp_reader", "root-not-select", "GRANT"),
    reject("REVOKE SELECT ON docs.pages FROM PUBLIC", "root-not-select", "REVOKE"),
    reject("SECURITY LABEL ON TABLE docs.pages IS 'x'", "root-not-select", "SECURITY LABEL"),
    reject("IMPORT FOREIGN SCHEMA s FROM SERVER x INTO y", "root-not-select", "IMPORT FOREIGN"),
    # Bind parameters.
    reject("SELECT * FROM docs.pages WHERE slug = $1", "bind-parameter", "positional parameter"),
    reject("SELECT $1::int", "bind-parameter", "cast parameter"),
    reject("SELECT %s", "syntax", "psycopg placeholder is not PostgreSQL syntax"),
    reject("SELECT :name", "syntax", "named placeholder is not PostgreSQL syntax"),
    reject("SELECT ?", "syntax", "JDBC placeholder is not PostgreSQL syntax"),
    # Functions hidden in odd places.
    reject("SELECT * FROM pg_read_file('/etc/passwd')", "denied-function", "pg_read_file in FROM"),
    reject(
        "SELECT * FROM docs.pages AS p JOIN LATERAL pg_ls_dir('.') AS f ON true",
        "denied-function",
        "pg_ls_dir in a lateral join",
    ),
    reject(
        "SELECT * FROM ROWS FROM (generate_series(1, 2), pg_sleep(1)) AS r",
        "denied-function",
        "ROWS FROM",
    ),
    reject("SELECT slug FROM docs.pages ORDER BY pg_sleep(0.1)", "denied-function", "in ORDER BY"),
    reject(
        "SELECT count(*) FILTER (WHERE pg_sleep(1) IS NULL) FROM docs.pages",
        "denied-function",
        "in FILTER",
    ),
    reject(
        "SELECT slug FROM docs.pages GROUP BY slug HAVING pg_notify('c', slug) IS NULL",
        "denied-function",
        "in HAVING",
    ),
    reject(
        "SELECT sum(words) OVER (ORDER BY pg_sleep(1)) FROM docs.pages",
        "denied-function",
        "in a window",
    ),
    reject(
        "SELECT CASE WHEN false THEN pg_terminate_backend(pg_backend_pid()) END",
        "denied-function",
        "in a dead CASE branch",
    ),
    reject(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r "
        "WHERE pg_advisory_lock(n) IS NOT NULL AND n < 3) SELECT * FROM r",
        "denied-function",
        "in a recursive CTE",
    ),
    reject(
        "SELECT query_to_xml('DELETE FROM docs.pages RETURNING 1', true, true, '')",
        "denied-function",
        "a query smuggled in a string",
    ),
    reject(
        "SELECT ts_stat('SELECT to_tsvector(slug) FROM docs.pages')",
        "denied-function",
        "ts_stat runs a string query",
    ),
    reject(
        "SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(a int)",
        "denied-function",
        "dblink",
    ),
    reject("SELECT lo_import('/etc/passwd')", "denied-function", "lo_import"),
    reject("SELECT loread(0, 1)", "denied-function", "loread"),
    reject("SELECT set_config('work_mem', '1GB', false)", "denied-function", "set_config"),
    reject("SELECT txid_current()", "denied-function", "txid_current"),
    reject("SELECT nextval('docs.seq')", "denied-function", "nextval"),
    reject("SELECT pg_logical_emit_message(false, 'x', repeat('x', 1000))", "denied-function", "WAL"),
    reject("SELECT gin_clean_pending_list('docs.idx'::regclass)", "denied-function", "index writes"),
    reject("SELECT pg_export_snapshot()", "denied-function", "pg_export_snapshot"),
    reject('SELECT U&"pg\\005fsleep"(1)', "denied-function", "Unicode-escaped name"),
    reject("SELECT U&\"!0070g_sleep\" UESCAPE '!' (1)", "denied-function", "Unicode with UESCAPE"),
    reject('SELECT "pg_catalog"."pg_sleep"(1)', "denied-function", "quoted qualified name"),
    reject("SELECT public.pg_sleep(1)", "denied-function", "other schema does not rescue"),
    reject("SELECT PG_CATALOG . PG_SLEEP (1)", "denied-function", "spaces around the dot"),
    reject("SELECT pg_sleep/**/(1)", "denied-function", "comment before the argument list"),
    reject("SELECT setseed(0.5)", "denied-function", "session random seed"),
    reject(
        "SELECT * FROM docs.pages TABLESAMPLE pg_sleep(1)",
        "denied-function",
        "a TABLESAMPLE method names a function",
    ),
    reject("SELECT repeat('x', 1000000000)", "oversized-value", "huge repeat()"),
    reject("SELECT length(lpad('', 2000000000, 'x'))", "oversized-value", "huge lpad()"),
    reject(
        "SELECT count(*) FROM generate_series(1, 3) AS g WHERE rpad('x', 500000000) <> ''",
        "oversized-value",
        "huge rpad() in WHERE",
    ),
    # Comments and quoting around keywords.
    reject("SELECT 1 /* */; DELETE FROM docs.pages", "multiple-statements", "comment then semicolon"),
    reject("/* SELECT */ DELETE FROM docs.pages", "data-modifying", "comment shaped like SELECT"),
    reject("-- SELECT 1\nDELETE FROM docs.pages", "data-modifying", "line comment then DML"),
    reject("-- only a comment", "empty", "comments only"),
    reject("/* nothing */", "empty", "block comment only"),
    reject("", "empty", "empty text"),
    reject("   \n\t ", "empty", "whitespace only"),
    reject(";", "empty", "a lone semicolon"),
    # Unparsable, too long, too deep.
    reject("SELEC 1", "syntax", "misspelled keyword"),
    reject("SELECT 'unterminated", "syntax", "unterminated string"),
    reject("SELECT (1", "syntax", "unbalanced parenthesis"),
    reject("SELECT * FROM docs.pages FETCH FIRST 10 PERCENT ROWS ONLY", "syntax", "PERCENT"),
    reject("SELECT 1\x00", "nul", "NUL byte"),
    # Syntax only PostgreSQL's tree can stand for: every refusal still holds on that path.
    reject("VALUES (pg_sleep(1)) ORDER BY 1", "denied-function", "a denied function in VALUES ... ORDER BY"),
    reject("SELECT collation for (pg_read_file('/etc/passwd'))", "denied-function", "inside collation for"),
    reject("SELECT (SELECT lo_create(0)) IS NFC NORMALIZED", "denied-function", "inside IS NFC NORMALIZED"),
    reject(
        "WITH d AS (DELETE FROM docs.pages RETURNING slug) SELECT slug IS NFC NORMALIZED FROM d",
        "data-modifying",
        "a data-modifying CTE behind syntax sqlglot cannot read",
    ),
    reject(
        "SELECT j.slug FROM docs.pages a JOIN docs.pages b USING (slug) AS j FOR UPDATE",
        "row-lock",
        "a row lock behind JOIN USING ... AS",
    ),
    # The catalogue (docs/tools/read_only_sql.md, "The catalogue"): read by structure, in every spelling.
    reject("SELECT relname FROM pg_class", "catalogue", "an unqualified catalogue relation"),
    reject('SELECT * FROM "pg_catalog"."pg_description"', "catalogue", "comments, quoted and qualified"),
    reject(
        "SELECT p.slug, d.description FROM docs.pages AS p CROSS JOIN LATERAL "
        "(SELECT description FROM pg_catalog.pg_description) AS d",
        "catalogue",
        "comments in a lateral subquery",
    ),
    reject(
        "WITH s AS (SELECT query FROM pg_stat_activity) SELECT * FROM s",
        "catalogue",
        "other sessions in a CTE",
    ),
    reject("SELECT rolname FROM pg_roles", "catalogue", "role names"),
    reject("SELECT 'docs.pages'::regclass", "catalogue", "a regclass cast"),
    reject("SELECT pg_typeof(1.5) AS t", "catalogue", "a regtype source"),
    reject("SELECT obj_description(1)", "catalogue", "another object's comment"),
    reject("SELECT pg_get_functiondef(1)", "catalogue", "a function's source"),
    reject("SELECT inet_server_addr(), inet_server_port()", "catalogue", "the server's address"),
    reject("SELECT current_setting('port')", "catalogue", "the server's port as a setting"),
    reject("SELECT * FROM information_schema.routines", "catalogue", "an unfiltered information_schema view"),
    reject("VALUES (1) ORDER BY 1 LIMIT 2; DROP TABLE docs.pages", "multiple-statements", "stacked"),
    reject("VALUES ($1) ORDER BY 1", "bind-parameter", "a parameter in VALUES ... ORDER BY"),
    reject("SELECT " + "(" * 10_000 + "1" + ")" * 10_000, "too-long", "past the length cap"),
    reject("SELECT " + "(" * 4_000 + "1" + ")" * 4_000, "too-deep", "4,000 parentheses"),
    reject("SELECT " + "NOT " * 2_400 + "true", "too-deep", "2,400 NOTs"),
    reject("SELECT 1" + "::int" * 1_900, "too-deep", "1,900 casts"),
    reject("SELECT " + "- " * 4_900 + "1", "too-deep", "4,900 unary minus"),
    reject("SELECT " + "CASE WHEN true THEN " * 400 + "1" + " END" * 400, "too-deep", "400 CASEs"),
    reject("SELECT " + "ARRAY[" * 30 + "1" + "]" * 30, "too-deep", "nested ARRAY[ (exponential)"),
    reject("SELECT (ARRAY[1])" + "[1]" * 1_000, "too-deep", "subscript chain (quadratic)"),
    reject("SELECT " + "(SELECT " * 1_000 + "1" + ")" * 1_000, "too-deep", "1,000 subqueries"),
    reject("SELECT " + "abs(" * 1_500 + "1" + ")" * 1_500, "too-deep", "1,500 nested calls"),
)

_SPELLINGS = ("plain", "quoted", "upper", "qualified", "unicode", "from")


def _unicode_escaped(name: str) -> str:
    return 'U&"' + f"\\{ord(name[0]):04x}" + name[1:] + '"'


def _spell(name: str, how: str) -> str:
    return {
        "plain": f"SELECT {name}(1)",
        "quoted": f'SELECT "{name}"(1)',
        "upper": f"SELECT {name.upper()}(1)",
        "qualified": f"SELECT pg_catalog.{name}(1)",
        "unicode": f"SELECT {_unicode_escaped(name)}(1)",
        "from": f"SELECT * FROM {name}(1) AS f",
    }[how]


def _denied_names() -> list[str]:
    names = sorted(DENIED_FUNCTIONS)
    # One representative per family: the prefix itself completed to a plausible name.
    names += sorted({prefix + ("x" if prefix.endswith("_") else "_x") for prefix, _ in DENIED_PREFIXES})
    return names


DENIED_SPELLINGS: tuple[Case, ...] = tuple(
    reject(_spell(name, how), "denied-function", f"{name} ({how})")
    for name in _denied_names()
    for how in _SPELLINGS
)

CORPUS: tuple[Case, ...] = HONEST + ATTACKS + DENIED_SPELLINGS


def _outer_limit(executed: str) -> tuple[str, int | None]:
    (statement,) = json.loads(pg_parser.parse_sql_json(executed))["stmts"]
    root: dict[str, Any] = statement["stmt"]["SelectStmt"]
    const = root.get("limitCount", {}).get("A_Const", {})
    value = const.get("ival", {}).get("ival", 0) if "ival" in const else None
    return root.get("limitOption", ""), value


class _Census(Visitor):
    """An independent oracle: pglast's Python AST and its own visitor, not the policy's JSON walk."""

    def __init__(self) -> None:
        self.kinds: set[str] = set()
        self.functions: set[str] = set()

    def visit(self, ancestors: Any, node: Any) -> None:
        self.kinds.add(type(node).__name__)
        if isinstance(node, pg_ast.FuncCall):
            names = node.funcname or ()
            self.functions.add(names[-1].sval)


FORBIDDEN_KINDS = {
    "InsertStmt",
    "UpdateStmt",
    "DeleteStmt",
    "MergeStmt",
    "LockingClause",
    "IntoClause",
    "ParamRef",
}


def assert_safe(vetted: VettedQuery, max_rows: int) -> None:
    """What an accepted query's executed form must be, checked without the policy's code."""
    statements = parse_sql(vetted.sql)
    assert len(statements) == 1
    assert isinstance(statements[0].stmt, pg_ast.SelectStmt)
    census = _Census()
    census(statements)
    assert not census.kinds & FORBIDDEN_KINDS, vetted.sql
    assert [f for f in census.functions if denied_reason(f) is not None] == [], vetted.sql
    option, value = _outer_limit(vetted.sql)
    assert option == "LIMIT_OPTION_COUNT"
    assert value == max_rows + 1
    assert vetted.limit <= max_rows + 1
