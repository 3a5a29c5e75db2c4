"""Everyday analytic queries (issue 40, item 4) and the data they read, shared by the PostgreSQL
comparison (tests/pg/test_sql_corpus.py) and the policy's twin without a database
(tests/unit/tools/sql/test_sql_corpus_policy.py).

The data: schema `corpus` (customers, categories, products, orders, order_items, events), made by the
superuser with deterministic rows, and the contrib extensions the queries use, installed in `public`
(where a data person finds them unqualified). `create_corpus` makes it all and grants the reader
what it reads; `drop_corpus` takes it all away again. The queries are ordinary work only: no
catalogue, no system function. Every query orders its rows totally unless `ordered` is False (the
rows are then compared as a multiset), and returns far fewer rows than `MAX_ROWS`. The expected
answer is never written here: the test asks PostgreSQL for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

__all__ = [
    "CORPUS_SCHEMA",
    "EXTENSIONS",
    "MAX_ROWS",
    "QUERIES",
    "TRUNCATIONS",
    "CorpusQuery",
    "Truncation",
    "create_corpus",
    "drop_corpus",
]

CORPUS_SCHEMA = "corpus"
# The contrib extensions the queries use; the embedded PostgreSQL 18 ships each one's .control file.
EXTENSIONS = ("pg_trgm", "unaccent", "fuzzystrmatch", "citext", "hstore", "vector")
# The largest `max_rows` the settings allow: no corpus query comes near it, so none is cut.
MAX_ROWS = 10_000


@dataclass(frozen=True, slots=True)
class CorpusQuery:
    name: str  # the test id
    sql: str
    ordered: bool = True  # False: the order of the rows is not defined (compared as a multiset)


@dataclass(frozen=True, slots=True)
class Truncation:
    """A query answered with a small `max_rows`: the rows are PostgreSQL's, cut at `max_rows`."""

    name: str
    sql: str
    max_rows: int
    ordered: bool = True  # False: not cut, and the order of the rows is not defined (a multiset)


# --- the data ----------------------------------------------------------------------------------------
_DATA = r"""
CREATE SCHEMA corpus;

CREATE TABLE corpus.customers (
    id integer PRIMARY KEY,
    name text NOT NULL,
    handle citext NOT NULL UNIQUE,
    city text NOT NULL,
    country text NOT NULL,
    signed_up date NOT NULL,
    referred_by integer REFERENCES corpus.customers,
    ip inet,
    prefs hstore,
    tags text[] NOT NULL,
    embedding vector(3),
    credit_limit numeric(10, 2)
);

INSERT INTO corpus.customers
SELECT n,
       (ARRAY['Ana', 'Bo', 'Chloé', 'Dmitri', 'Émile', 'Farah', 'Günter', 'Hélène', 'Inês', 'Jörg'])[n %
            10 + 1]
           || ' ' || (ARRAY['Silva', 'Müller', 'Ng', 'Okafor', 'Łukasz', 'Peña', 'Quist'])[n % 7 + 1],
       CASE WHEN n % 2 = 0 THEN 'User' ELSE 'user' END || lpad(n::text, 2, '0'),
       (ARRAY['Zürich', 'São Paulo', 'Montréal', 'Kraków', 'Reykjavík', 'Lisboa', 'Köln', 'Málaga'])[n %
            8 + 1],
       (ARRAY['CH', 'BR', 'CA', 'PL', 'IS', 'PT', 'DE', 'ES'])[n % 8 + 1],
       DATE '2023-01-01' + (n * 37) % 700,
       CASE WHEN n > 5 THEN (n * 7) % (n - 1) + 1 END,
       CASE WHEN n % 9 = 0 THEN ('2001:db8::' || n)::inet
            ELSE ('10.' || n % 4 || '.' || n || '.' || (n * 13) % 250 || '/' || (24 + n % 9))::inet END,
       CASE WHEN n % 11 <> 0 THEN hstore(ARRAY['lang', 'theme'],
            ARRAY[(ARRAY['en', 'fr', 'de', 'pt'])[n % 4 + 1], CASE WHEN n % 3 = 0 THEN 'dark' ELSE
            'light' END]) END,
       (ARRAY['vip', 'b2b', 'newsletter', 'churn-risk', 'beta'])[1 + n % 3 : n % 5 + 1],
       CASE WHEN n % 12 <> 0 THEN ('[' || n % 5 || ',' || (n * 3) % 7 || ',' || (n * 2) % 3 + n / 10.0
            || ']')::vector END,
       CASE WHEN n % 13 <> 0 THEN (n * 250.5)::numeric(10, 2) END
FROM generate_series(1, 40) AS n;

CREATE TABLE corpus.categories (
    id integer PRIMARY KEY,
    parent_id integer REFERENCES corpus.categories,
    name text NOT NULL
);

INSERT INTO corpus.categories VALUES
    (1, NULL, 'All'), (2, 1, 'Books'), (3, 1, 'Garden'), (4, 2, 'Fiction'), (5, 2, 'Non-fiction'),
    (6, 4, 'Crime'), (7, 4, 'Fantasy'), (8, 3, 'Tools'), (9, 3, 'Seeds'), (10, 8, 'Hand tools');

CREATE TABLE corpus.products (
    id integer PRIMARY KEY,
    sku text NOT NULL UNIQUE,
    name text NOT NULL,
    category_id integer NOT NULL REFERENCES corpus.categories,
    price numeric(8, 2) NOT NULL,
    weight_kg double precision,
    on_sale daterange NOT NULL,
    stock_bins int4multirange NOT NULL
);

INSERT INTO corpus.products
SELECT n,
       'SKU-' || to_char(n, 'FM000'),
       (ARRAY['Café table', 'Crème brûlée kit', 'Garden hose', 'Fantasy saga', 'Crime novel',
              'Seed mix', 'Hand trowel', 'Atlas', 'Pruning shears', 'Tomato seeds'])[n % 10 + 1]
           || ' ' || (ARRAY['mini', 'classic', 'deluxe'])[n % 3 + 1],
       (ARRAY[6, 7, 8, 9, 10, 5, 4, 2, 3, 9])[n % 10 + 1],
       ((n * 7919) % 9000 / 100.0 + 1.5)::numeric(8, 2),
       CASE WHEN n % 7 <> 0 THEN (n * 0.37) % 5 + 0.125 END,
       daterange(DATE '2024-01-01' + n * 5, DATE '2024-01-01' + n * 5 + 30 + n % 40),
       int4multirange(int4range(n % 5, n % 5 + 3), int4range(10 + n % 3, 14 + n % 6))
FROM generate_series(1, 30) AS n;

CREATE TABLE corpus.orders (
    id integer PRIMARY KEY,
    customer_id integer NOT NULL REFERENCES corpus.customers,
    ordered_at timestamptz NOT NULL,
    status text NOT NULL,
    total numeric(10, 2) NOT NULL,
    discount real NOT NULL,
    shipped_at timestamptz,
    delivery tstzrange,
    note text
);

INSERT INTO corpus.orders
SELECT n,
       (n * 7) % 40 + 1,
       TIMESTAMPTZ '2024-01-01 08:00:00+00' + n * INTERVAL '17 hours 13 minutes 7 seconds',
       (ARRAY['new', 'paid', 'shipped', 'cancelled', 'refunded'])[n % 5 + 1],
       ((n * 37) % 500 + 9.99)::numeric(10, 2),
       (n % 4) * 0.05,
       CASE WHEN n % 5 = 2 THEN TIMESTAMPTZ '2024-01-01 08:00:00+00' + n * INTERVAL
            '17 hours 13 minutes 7 seconds'
            + (n % 6 + 1) * INTERVAL '1 day' END,
       CASE WHEN n % 5 <> 3 THEN tstzrange(
            TIMESTAMPTZ '2024-01-03 00:00:00+00' + n * INTERVAL '17 hours',
            TIMESTAMPTZ '2024-01-03 00:00:00+00' + n * INTERVAL '17 hours' + (n % 5 + 1) * INTERVAL
            '1 day') END,
       CASE WHEN n % 6 = 0 THEN 'Leave at the door, merci! Ref #' || (n * 131) % 1000
            WHEN n % 6 = 3 THEN 'Call +41 44 ' || (200 + n) || ' ' || (n * 17) % 100 END
FROM generate_series(1, 200) AS n;

CREATE TABLE corpus.order_items (
    order_id integer NOT NULL REFERENCES corpus.orders,
    line integer NOT NULL,
    product_id integer NOT NULL REFERENCES corpus.products,
    qty integer NOT NULL,
    unit_price numeric(8, 2) NOT NULL,
    PRIMARY KEY (order_id, line)
);

INSERT INTO corpus.order_items
SELECT o, l, (o * 11 + l * 5) % 30 + 1, (o + l) % 4 + 1, ((o * 13 + l * 29) % 8000 / 100.0 +
            2)::numeric(8, 2)
FROM generate_series(1, 200) AS o, generate_series(1, 4) AS l
WHERE l <= o % 4 + 1;

CREATE TABLE corpus.events (
    id bigint PRIMARY KEY,
    customer_id integer NOT NULL REFERENCES corpus.customers,
    at timestamptz NOT NULL,
    kind text NOT NULL,
    payload jsonb NOT NULL,
    raw json NOT NULL
);

INSERT INTO corpus.events
SELECT n,
       (n * 13) % 40 + 1,
       TIMESTAMPTZ '2024-03-01 00:00:00+00' + n * INTERVAL '3 hours 7 minutes',
       (ARRAY['view', 'click', 'search', 'purchase'])[n % 4 + 1],
       jsonb_build_object(
           'page', '/p/' || n % 12,
           'ms', (n * 31) % 900,
           'device', jsonb_build_object('os', (ARRAY['ios', 'android', 'linux'])[n % 3 + 1], 'ver', n %
            5),
           'items', CASE WHEN n % 4 = 3
               THEN jsonb_build_array(
                   jsonb_build_object('sku', 'SKU-' || to_char(n % 30 + 1, 'FM000'), 'qty', n % 3 + 1),
                   jsonb_build_object('sku', 'SKU-' || to_char((n * 7) % 30 + 1, 'FM000'), 'qty', 1))
               ELSE '[]'::jsonb END,
           'query', CASE WHEN n % 4 = 2 THEN (ARRAY['crème', 'garden hose', 'atlas', 'seeds'])[n % 4 +
            1] END),
       json_build_object('id', n, 'customer_id', (n * 13) % 40 + 1, 'kind', (ARRAY['view', 'click',
            'search', 'purchase'])[n % 4 + 1],
                         'score', round(((n * 7) % 100) / 10.0, 1))
FROM generate_series(1, 300) AS n;

ANALYZE corpus.customers, corpus.categories, corpus.products, corpus.orders, corpus.order_items,
            corpus.events;
"""


def create_corpus(admin: psycopg.Connection[Any], reader: str) -> None:
    """Make the corpus as the superuser (`admin`, autocommit) and let the role `reader` read it:
    USAGE on the schema, SELECT on its tables, EXECUTE on the functions of its extensions (the
    demo's default privileges keep new functions from PUBLIC, extensions' included)."""
    drop_corpus(admin)  # what an interrupted run left
    for extension in EXTENSIONS:
        admin.execute(sql.SQL("CREATE EXTENSION {} SCHEMA public").format(sql.Identifier(extension)))
    admin.execute(_DATA.encode())
    role = sql.Identifier(reader)
    schema = sql.Identifier(CORPUS_SCHEMA)
    admin.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, role))
    admin.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(schema, role))
    functions = admin.execute(
        "SELECT p.oid::regprocedure::text FROM pg_catalog.pg_depend d"
        " JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid"
        " JOIN pg_catalog.pg_proc p ON p.oid = d.objid"
        " WHERE d.classid = 'pg_catalog.pg_proc'::regclass"
        " AND d.refclassid = 'pg_catalog.pg_extension'::regclass"
        " AND d.deptype = 'e' AND e.extname = ANY(%s)",
        (list(EXTENSIONS),),
    ).fetchall()
    for (signature,) in functions:
        admin.execute(sql.SQL("GRANT EXECUTE ON FUNCTION {} TO {}").format(sql.SQL(signature), role))


def drop_corpus(admin: psycopg.Connection[Any]) -> None:
    """Take the schema and the extensions away (their grants go with them)."""
    admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(CORPUS_SCHEMA)))
    for extension in reversed(EXTENSIONS):
        admin.execute(sql.SQL("DROP EXTENSION IF EXISTS {} CASCADE").format(sql.Identifier(extension)))


# --- the queries ---------------------------------------------------------------------------------------
# Each query follows a line `-- <name>`; `(unordered)` after the name: its order of rows is not defined.
_QUERIES = r"""
-- inner-join
SELECT o.id, c.name, o.total FROM corpus.orders o JOIN corpus.customers c ON c.id = o.customer_id
WHERE o.total > 400 ORDER BY o.id

-- left-join-count
SELECT c.id, c.handle, count(o.id) AS orders FROM corpus.customers c
LEFT JOIN corpus.orders o ON o.customer_id = c.id GROUP BY c.id, c.handle ORDER BY orders DESC, c.id

-- right-join
SELECT p.sku, oi.order_id FROM corpus.order_items oi RIGHT JOIN corpus.products p ON p.id =
oi.product_id
WHERE oi.order_id IS NULL OR oi.order_id < 5 ORDER BY p.sku, oi.order_id

-- full-join
SELECT coalesce(a.country, b.country) AS country, a.customers, b.orders
FROM (SELECT country, count(*) AS customers FROM corpus.customers WHERE id < 20 GROUP BY country) a
FULL JOIN (SELECT c.country, count(*) AS orders FROM corpus.orders o JOIN corpus.customers c ON c.id =
o.customer_id
           WHERE c.id > 25 GROUP BY c.country) b ON a.country = b.country ORDER BY 1

-- cross-join
SELECT s.status, k.kind FROM (SELECT DISTINCT status FROM corpus.orders) s
CROSS JOIN (SELECT DISTINCT kind FROM corpus.events) k ORDER BY 1, 2

-- self-join-referrals
SELECT c.name, r.name AS referrer FROM corpus.customers c JOIN corpus.customers r ON r.id =
c.referred_by
ORDER BY c.id

-- join-using
SELECT order_id, line, o.status FROM corpus.order_items JOIN corpus.orders o ON o.id = order_id
JOIN corpus.products p ON p.id = product_id WHERE p.category_id = 9 ORDER BY order_id, line

-- natural-join
SELECT * FROM (SELECT id, name FROM corpus.categories) a NATURAL JOIN (SELECT id, parent_id FROM
corpus.categories) b
ORDER BY id

-- semi-join-exists
SELECT c.id, c.name FROM corpus.customers c
WHERE EXISTS (SELECT 1 FROM corpus.orders o WHERE o.customer_id = c.id AND o.status = 'refunded') ORDER
BY c.id

-- anti-join-not-exists
SELECT p.id, p.sku FROM corpus.products p
WHERE NOT EXISTS (SELECT 1 FROM corpus.order_items oi WHERE oi.product_id = p.id AND oi.qty = 4) ORDER
BY p.id

-- in-subquery
SELECT id, total FROM corpus.orders WHERE customer_id IN (SELECT id FROM corpus.customers WHERE country
= 'CH')
ORDER BY id

-- not-in-subquery
SELECT id FROM corpus.customers WHERE id NOT IN (SELECT customer_id FROM corpus.orders WHERE status =
'paid') ORDER BY id

-- scalar-subquery
SELECT id, total, total - (SELECT avg(total) FROM corpus.orders) AS above_mean FROM corpus.orders
WHERE id <= 10 ORDER BY id

-- correlated-subquery
SELECT c.id, (SELECT max(o.ordered_at) FROM corpus.orders o WHERE o.customer_id = c.id) AS last_order
FROM corpus.customers c ORDER BY c.id

-- three-way-join-revenue
SELECT cat.name, sum(oi.qty * oi.unit_price) AS revenue FROM corpus.order_items oi
JOIN corpus.products p ON p.id = oi.product_id JOIN corpus.categories cat ON cat.id = p.category_id
GROUP BY cat.name ORDER BY revenue DESC, cat.name

-- join-on-range
SELECT o.id, p.sku FROM corpus.orders o JOIN corpus.products p ON p.on_sale @> o.ordered_at::date
WHERE o.id BETWEEN 40 AND 60 ORDER BY o.id, p.sku

-- lateral-top-2-per-customer
SELECT c.id, t.id AS order_id, t.total FROM corpus.customers c
CROSS JOIN LATERAL (SELECT o.id, o.total FROM corpus.orders o WHERE o.customer_id = c.id
                    ORDER BY o.total DESC, o.id LIMIT 2) t ORDER BY c.id, t.total DESC, t.id

-- left-join-lateral
SELECT c.id, last.at, last.kind FROM corpus.customers c
LEFT JOIN LATERAL (SELECT e.at, e.kind FROM corpus.events e WHERE e.customer_id = c.id ORDER BY e.at
DESC LIMIT 1) last
ON true ORDER BY c.id

-- lateral-unnest-tags
SELECT c.id, t.tag, t.pos FROM corpus.customers c, LATERAL unnest(c.tags) WITH ORDINALITY AS t(tag, pos)
ORDER BY c.id, t.pos

-- lateral-generate-series
SELECT p.id, d::date AS day FROM corpus.products p,
LATERAL generate_series(lower(p.on_sale), lower(p.on_sale) + 2, interval '1 day') AS d
WHERE p.id <= 5 ORDER BY p.id, day

-- cte-plain
WITH big AS (SELECT customer_id, sum(total) AS spent FROM corpus.orders GROUP BY customer_id)
SELECT c.name, big.spent FROM big JOIN corpus.customers c ON c.id = big.customer_id WHERE big.spent >
1500
ORDER BY big.spent DESC, c.name

-- cte-materialized
WITH m AS MATERIALIZED (SELECT status, count(*) AS n FROM corpus.orders GROUP BY status)
SELECT status, n, round(100.0 * n / sum(n) OVER (), 1) AS pct FROM m ORDER BY status

-- recursive-category-tree
WITH RECURSIVE tree AS (
    SELECT id, name, parent_id, 1 AS depth, name::text AS path FROM corpus.categories WHERE parent_id IS
NULL
    UNION ALL
    SELECT c.id, c.name, c.parent_id, t.depth + 1, t.path || ' > ' || c.name
    FROM corpus.categories c JOIN tree t ON c.parent_id = t.id)
SELECT id, depth, path FROM tree ORDER BY path

-- recursive-referral-chain
WITH RECURSIVE chain(id, referred_by, hops) AS (
    SELECT id, referred_by, 0 FROM corpus.customers WHERE id = 40
    UNION ALL
    SELECT c.id, c.referred_by, chain.hops + 1 FROM corpus.customers c JOIN chain ON c.id =
chain.referred_by)
SELECT * FROM chain ORDER BY hops

-- recursive-counter
WITH RECURSIVE n(i) AS (VALUES (1) UNION ALL SELECT i + 1 FROM n WHERE i < 12)
SELECT i, i * i AS square FROM n ORDER BY i

-- recursive-search-depth-first
WITH RECURSIVE tree AS (
    SELECT id, parent_id, name FROM corpus.categories WHERE id = 1
    UNION ALL
    SELECT c.id, c.parent_id, c.name FROM corpus.categories c JOIN tree t ON c.parent_id = t.id
) SEARCH DEPTH FIRST BY id SET ordercol
SELECT id, name FROM tree ORDER BY ordercol

-- recursive-cycle-clause
WITH RECURSIVE walk AS (
    SELECT id, referred_by FROM corpus.customers WHERE id = 33
    UNION ALL
    SELECT c.id, c.referred_by FROM corpus.customers c JOIN walk w ON c.id = w.referred_by
) CYCLE id SET is_cycle USING route
SELECT id, is_cycle FROM walk ORDER BY id

-- window-row-number
SELECT id, customer_id, row_number() OVER (PARTITION BY customer_id ORDER BY ordered_at) AS nth
FROM corpus.orders ORDER BY customer_id, nth

-- window-rank-dense-rank
SELECT id, status, total, rank() OVER w, dense_rank() OVER w, percent_rank() OVER w, cume_dist() OVER w
FROM corpus.orders WINDOW w AS (PARTITION BY status ORDER BY total DESC) ORDER BY status, total DESC

-- window-running-total
SELECT id, total, sum(total) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS
running
FROM corpus.orders ORDER BY id

-- window-moving-average-rows
SELECT id, total, avg(total) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING) AS smooth
FROM corpus.orders ORDER BY id

-- window-range-interval-frame
SELECT id, ordered_at, count(*) OVER (ORDER BY ordered_at RANGE BETWEEN INTERVAL '3 days' PRECEDING AND
CURRENT ROW)
AS last_3_days FROM corpus.orders ORDER BY id

-- window-groups-frame-exclude
SELECT id, customer_id, sum(total) OVER (ORDER BY customer_id GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING
EXCLUDE CURRENT ROW) AS around FROM corpus.orders WHERE id <= 30 ORDER BY id

-- window-lag-lead
SELECT id, ordered_at, ordered_at - lag(ordered_at) OVER (ORDER BY ordered_at) AS gap,
lead(status, 2, 'none') OVER (ORDER BY ordered_at) AS later FROM corpus.orders ORDER BY id

-- window-first-last-nth
SELECT DISTINCT customer_id,
first_value(total) OVER w AS first, last_value(total) OVER w AS last, nth_value(total, 2) OVER w AS
second
FROM corpus.orders WINDOW w AS (PARTITION BY customer_id ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING
AND UNBOUNDED FOLLOWING)
ORDER BY customer_id

-- window-ntile
SELECT id, total, ntile(4) OVER (ORDER BY total) AS quartile FROM corpus.orders ORDER BY id

-- window-filter-in-window
SELECT id, count(*) FILTER (WHERE status = 'paid') OVER (ORDER BY id) AS paid_so_far FROM corpus.orders
ORDER BY id

-- window-share-of-partition
SELECT oi.order_id, oi.line, round(oi.qty * oi.unit_price / sum(oi.qty * oi.unit_price) OVER (PARTITION
BY oi.order_id), 4)
AS share FROM corpus.order_items oi WHERE oi.order_id < 20 ORDER BY oi.order_id, oi.line

-- percentile-cont
SELECT status, percentile_cont(0.5) WITHIN GROUP (ORDER BY total) AS median,
percentile_cont(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY total) AS quartiles
FROM corpus.orders GROUP BY status ORDER BY status

-- percentile-disc-mode
SELECT percentile_disc(0.9) WITHIN GROUP (ORDER BY total) AS p90, mode() WITHIN GROUP (ORDER BY status)
AS common
FROM corpus.orders

-- hypothetical-rank
SELECT rank(100) WITHIN GROUP (ORDER BY total), percent_rank(100) WITHIN GROUP (ORDER BY total) FROM
corpus.orders

-- aggregate-filter
SELECT customer_id, count(*) FILTER (WHERE status = 'paid') AS paid,
sum(total) FILTER (WHERE status IN ('refunded', 'cancelled')) AS lost FROM corpus.orders
GROUP BY customer_id ORDER BY customer_id

-- grouping-sets
SELECT c.country, o.status, count(*), grouping(c.country, o.status) AS g FROM corpus.orders o
JOIN corpus.customers c ON c.id = o.customer_id GROUP BY GROUPING SETS ((c.country, o.status),
(c.country), ())
ORDER BY c.country NULLS LAST, o.status NULLS LAST

-- rollup
SELECT date_trunc('month', ordered_at) AS month, status, sum(total) FROM corpus.orders
GROUP BY ROLLUP (date_trunc('month', ordered_at), status) ORDER BY 1 NULLS LAST, 2 NULLS LAST

-- cube
SELECT kind, payload -> 'device' ->> 'os' AS os, count(*) FROM corpus.events GROUP BY CUBE (kind, 2)
ORDER BY 1 NULLS FIRST, 2 NULLS FIRST

-- having
SELECT customer_id, count(*) AS n FROM corpus.orders GROUP BY customer_id HAVING sum(total) > 1300
ORDER BY n DESC, customer_id

-- bool-and-or-every
SELECT customer_id, bool_and(total > 50) AS all_big, bool_or(status = 'refunded') AS any_refund,
every(discount < 0.2) AS small_discounts FROM corpus.orders GROUP BY customer_id ORDER BY customer_id

-- count-distinct
SELECT count(DISTINCT customer_id), count(DISTINCT status), count(*) FROM corpus.orders

-- min-max-avg-sum
SELECT min(total), max(total), avg(total), sum(total), avg(discount), sum(weight_kg) FROM corpus.orders,
corpus.products
WHERE products.id = 1

-- group-by-distinct
SELECT status, count(*) FROM corpus.orders GROUP BY DISTINCT ROLLUP (status), ROLLUP (status) ORDER BY 1
NULLS LAST, 2

-- distinct-on-latest-order
SELECT DISTINCT ON (customer_id) customer_id, id, ordered_at, total FROM corpus.orders
ORDER BY customer_id, ordered_at DESC

-- distinct
SELECT DISTINCT country FROM corpus.customers ORDER BY country

-- distinct-on-expression
SELECT DISTINCT ON (date_trunc('week', at)) date_trunc('week', at) AS week, id, kind FROM corpus.events
ORDER BY date_trunc('week', at), id

-- date-trunc-month
SELECT date_trunc('month', ordered_at) AS month, count(*), sum(total) FROM corpus.orders GROUP BY 1
ORDER BY 1

-- date-trunc-with-zone
SELECT id, date_trunc('day', ordered_at, 'Europe/Zurich') AS local_day FROM corpus.orders WHERE id <= 10
ORDER BY id

-- date-part-year
SELECT date_part('year', ordered_at) AS year, count(*) FROM corpus.orders GROUP BY 1 ORDER BY 1

-- date-part-dow
SELECT id, date_part('dow', ordered_at) AS dow, date_part('epoch', ordered_at) AS epoch FROM
corpus.orders
WHERE id <= 10 ORDER BY id

-- extract-fields
SELECT id, extract(year FROM ordered_at) AS y, extract(quarter FROM ordered_at) AS q, extract(isodow
FROM ordered_at) AS d,
extract(hour FROM ordered_at) AS h, extract(epoch FROM shipped_at - ordered_at) AS secs
FROM corpus.orders WHERE id <= 12 ORDER BY id

-- age
SELECT id, age(TIMESTAMP '2026-01-01', signed_up::timestamp) AS tenure FROM corpus.customers ORDER BY id

-- age-two-timestamps
SELECT id, age(shipped_at, ordered_at) FROM corpus.orders WHERE shipped_at IS NOT NULL ORDER BY id

-- make-interval
SELECT id, ordered_at + make_interval(days => id % 7, hours => 3) AS due FROM corpus.orders WHERE id <=
10 ORDER BY id

-- make-date-timestamp
SELECT make_date(2024, n, 1) AS first, make_timestamptz(2024, n, 1, 12, 30, 0.5, 'UTC') AS noonish,
make_time(n, 15, 0) AS t FROM generate_series(1, 12) AS n ORDER BY n

-- to-char-timestamp
SELECT id, to_char(ordered_at, 'YYYY-MM-DD HH24:MI Dy') AS shown, to_char(ordered_at, 'IYYY-"W"IW') AS
iso_week
FROM corpus.orders WHERE id <= 10 ORDER BY id

-- to-char-numbers
SELECT id, to_char(total, 'FM999G990D00') AS money, to_char(discount, '0.99') AS d, to_char(id, 'FM000')
AS padded
FROM corpus.orders WHERE id <= 10 ORDER BY id

-- to-date-to-timestamp
SELECT to_date('05 Dec 2026', 'DD Mon YYYY') AS d, to_timestamp('2026-12-05 10:11:12',
'YYYY-MM-DD HH24:MI:SS') AS ts,
to_timestamp(1700000000) AS from_epoch

-- interval-iso-8601
SELECT id, ordered_at + interval 'P1D' AS next_day FROM corpus.orders WHERE id <= 5 ORDER BY id

-- interval-iso-8601-alternative
SELECT interval 'P1Y2M3DT4H5M6S' AS long_form, interval 'PT36H' AS hours, interval
'P0001-02-03T04:05:06' AS alt

-- interval-arithmetic
SELECT id, shipped_at - ordered_at AS took, (shipped_at - ordered_at) * 2 AS twice,
justify_hours(shipped_at - ordered_at) AS justified FROM corpus.orders WHERE shipped_at IS NOT NULL
ORDER BY id

-- interval-literal-forms
SELECT interval '1 day 2 hours', INTERVAL '90 minutes', '2 weeks'::interval, interval '3 4:05' DAY TO MINUTE

-- interval-sql-standard-qualifier
SELECT id, ordered_at + interval '1' year AS renewal, ordered_at - interval '90' minute AS before
FROM corpus.orders WHERE id <= 5 ORDER BY id

-- interval-days-and-time
SELECT id, ordered_at + interval '2 days 03:00' AS due FROM corpus.orders WHERE id <= 5 ORDER BY id

-- to-char-interval
SELECT id, to_char(shipped_at - ordered_at, 'DD "days" HH24:MI') AS took FROM corpus.orders
WHERE shipped_at IS NOT NULL ORDER BY id

-- current-timestamp-precision
SELECT to_char(current_timestamp(0), 'US') AS micros

-- current-timestamp-millisecond-precision
SELECT right(to_char(current_timestamp(3), 'US'), 3) AS below_milliseconds

-- localtimestamp-precision
SELECT to_char(localtimestamp(0), 'US') AS local_micros

-- date-arithmetic
SELECT id, signed_up + 30 AS trial_end, signed_up - DATE '2023-01-01' AS days_in, signed_up + interval
'1 month' AS next
FROM corpus.customers ORDER BY id

-- date-bin
SELECT date_bin(interval '6 hours', at, TIMESTAMPTZ '2024-03-01') AS bucket, count(*) FROM corpus.events
GROUP BY 1 ORDER BY 1

-- at-time-zone
SELECT id, ordered_at AT TIME ZONE 'America/New_York' AS ny, (ordered_at AT TIME ZONE
'Asia/Tokyo')::date AS tokyo_day
FROM corpus.orders WHERE id <= 8 ORDER BY id

-- overlaps
SELECT a.id, b.id FROM corpus.orders a JOIN corpus.orders b ON a.id < b.id
AND (a.ordered_at, a.ordered_at + interval '1 day') OVERLAPS (b.ordered_at, b.ordered_at + interval
'1 day')
WHERE a.id <= 20 ORDER BY 1, 2

-- generate-series-dates
SELECT d::date AS day, count(o.id) AS orders FROM generate_series(DATE '2024-01-01', DATE '2024-01-31',
interval '1 day') d
LEFT JOIN corpus.orders o ON o.ordered_at::date = d::date GROUP BY d ORDER BY d

-- isfinite-and-infinity
SELECT isfinite(DATE 'infinity'), DATE 'infinity' > DATE '2024-01-01', TIMESTAMP '-infinity' < TIMESTAMP
'1970-01-01'

-- log10
SELECT id, log10(total) AS magnitude FROM corpus.orders WHERE id <= 10 ORDER BY id

-- math-functions
SELECT id, ln(total) AS ln, log(2, total) AS log2, exp(discount) AS e, sqrt(total) AS root,
cbrt(total::float8) AS cube_root,
power(1.05, id % 10) AS growth FROM corpus.orders WHERE id <= 10 ORDER BY id

-- rounding
SELECT id, round(total, 1), trunc(total), ceil(total), floor(total), round(total::float8), abs(total -
250), sign(total - 250)
FROM corpus.orders WHERE id <= 10 ORDER BY id

-- integer-math
SELECT id, id / 3 AS div, id % 3 AS mod, div(id, 7), mod(id, 7), gcd(id, 12), lcm(id, 4), id # 5 AS xor,
id << 2 AS shifted
FROM corpus.customers ORDER BY id

-- numeric-scale
SELECT total, scale(total), min_scale(total * 10), trim_scale(total * 1.000), width_bucket(total, 0,
500, 5)
FROM corpus.orders WHERE id <= 10 ORDER BY id

-- greatest-least-nullif-coalesce
SELECT id, greatest(total, 100), least(total, 100), nullif(status, 'new'), coalesce(note, '(none)')
FROM corpus.orders WHERE id <= 12 ORDER BY id

-- arithmetic-operators
SELECT id, id / 4 AS int_div, id / 4.0 AS num_div, -id % 4 AS rem, 2 ^ (id % 8) AS pow2, total ^ 0.5 AS root
FROM corpus.orders WHERE id <= 8 ORDER BY id

-- date-part-of-interval
SELECT id, date_part('epoch', shipped_at - ordered_at) / 3600 AS hours_to_ship,
date_part('day', shipped_at - ordered_at) AS days FROM corpus.orders WHERE shipped_at IS NOT NULL ORDER BY id

-- jsonb-subscripts
SELECT id, payload['device']['os'] AS os, payload -> 'items' -> -1 AS last_item FROM corpus.events
WHERE id <= 8 ORDER BY id

-- trigonometry-and-pi
SELECT round(pi()::numeric, 6), degrees(radians(180)), sin(0), cos(0), atan2(1, 1), tanh(0.5)

-- float-special-values
SELECT 'NaN'::float8, 'Infinity'::float8, '-Infinity'::float4, 1e300::float8 * 10, 0.1::float4 +
0.2::float4

-- numeric-special-values
SELECT 'NaN'::numeric, 'Infinity'::numeric, 1.0 / 3, 10::numeric ^ 30

-- to-hex
SELECT id, to_hex(id) AS hex, to_hex(id * 1000000000000) AS big FROM corpus.customers ORDER BY id

-- format
SELECT format('%s bought %s for %s', c.name, o.id, o.total), format('%I.%L', 'my table', c.city),
format('%-10s|%5s|', c.country, c.id) FROM corpus.orders o JOIN corpus.customers c ON c.id =
o.customer_id
WHERE o.id <= 8 ORDER BY o.id

-- split-part
SELECT id, split_part(name, ' ', 1) AS first, split_part(name, ' ', -1) AS last, split_part(ip::text,
'.', 2) AS octet
FROM corpus.customers ORDER BY id

-- string-agg
SELECT country, string_agg(name, ', ' ORDER BY name) AS names, string_agg(DISTINCT city, '/') AS cities
FROM corpus.customers GROUP BY country ORDER BY country

-- concat-and-pipes
SELECT id, concat(name, ' <', handle, '>'), concat_ws(' | ', city, country, NULL, signed_up), name ||
' (' || id || ')'
FROM corpus.customers ORDER BY id

-- case-and-length
SELECT id, upper(name), lower(city), initcap(lower(name)), length(name), char_length(city),
octet_length(city),
bit_length(country) FROM corpus.customers ORDER BY id

-- substring-position
SELECT id, substring(name FROM 2 FOR 3), substr(city, 1, 3), left(name, 4), right(city, 3), position('a'
IN name),
strpos(city, 'ö') FROM corpus.customers ORDER BY id

-- trim-pad-repeat
SELECT id, lpad(id::text, 5, '0'), rpad(country, 5, '.'), btrim('  ' || city || '  '), ltrim('xxab',
'x'),
rtrim(name, 'aeiou'), repeat('*', id % 5) FROM corpus.customers ORDER BY id

-- replace-translate-reverse
SELECT id, replace(name, ' ', '_'), translate(city, 'éöüã', 'eoua'), reverse(handle::text), overlay(name
PLACING '**' FROM 2 FOR 2)
FROM corpus.customers ORDER BY id

-- like-ilike-similar
SELECT id, name FROM corpus.customers WHERE name LIKE '%ü%' OR city ILIKE 'm%' OR country SIMILAR TO
'(C|P)%'
ORDER BY id

-- starts-with-and-operator
SELECT id, name FROM corpus.customers WHERE starts_with(name, 'H') OR name ^@ 'J' ORDER BY id

-- starts-with-operator-value
SELECT id, name ^@ 'A' AS starts_a FROM corpus.customers ORDER BY id

-- function-aliases
SELECT id, pow(id, 2), ceiling(total / 7), character_length(status) FROM corpus.orders WHERE id <= 6
ORDER BY id

-- md5-and-encode
SELECT id, md5(name), encode(convert_to(city, 'UTF8'), 'base64'), encode(sha256(convert_to(name,
'UTF8')), 'hex')
FROM corpus.customers WHERE id <= 5 ORDER BY id

-- quote-functions
SELECT quote_ident(name), quote_literal(city), quote_nullable(NULL::text) FROM corpus.customers ORDER BY
id

-- normalize-unicode
SELECT id, normalize(city, NFD) = city AS nfc, length(normalize(city, NFD)) FROM corpus.customers ORDER
BY id

-- ascii-chr
SELECT ascii(name), chr(65 + id % 26) FROM corpus.customers ORDER BY id

-- casefold-sort-collate
SELECT name FROM corpus.customers ORDER BY name COLLATE "C", id

-- text-search-over-values
SELECT id, to_tsvector('simple', name || ' ' || city) @@ plainto_tsquery('simple', 'ana') AS hit
FROM corpus.customers ORDER BY id

-- regexp-replace
SELECT id, regexp_replace(note, '[0-9]+', '#', 'g') FROM corpus.orders WHERE note IS NOT NULL ORDER BY
id

-- regexp-match-substr
SELECT id, regexp_match(note, 'Ref #([0-9]+)') AS ref, regexp_substr(note, '\+[0-9 ]+'), substring(note
FROM '[0-9]+$')
FROM corpus.orders WHERE note IS NOT NULL ORDER BY id

-- regexp-matches-global
SELECT id, m[1] AS digits FROM corpus.orders, regexp_matches(note, '([0-9]+)', 'g') AS m
WHERE id <= 30 ORDER BY id, digits

-- regexp-split
SELECT id, regexp_split_to_array(name, '\s+') AS parts, array_length(regexp_split_to_array(city, ''), 1)
FROM corpus.customers ORDER BY id

-- regexp-split-to-table
SELECT id, part FROM corpus.orders, regexp_split_to_table(note, ',\s*') AS part WHERE note LIKE 'Leave%'
ORDER BY id, part

-- regexp-count-like-instr
SELECT id, regexp_count(name, '[aeiou]'), regexp_like(city, '^[A-Z][a-z]+$'), regexp_instr(name, 'e')
FROM corpus.customers ORDER BY id

-- posix-operators
SELECT id, name ~ '^[A-D]' AS a_to_d, name ~* 'ü' AS umlaut, city !~ 'a' AS no_a FROM corpus.customers
ORDER BY id

-- jsonb-arrow-operators
SELECT id, payload -> 'device' AS device, payload ->> 'page' AS page, payload #> '{device,os}' AS
os_json,
payload #>> '{device,ver}' AS ver FROM corpus.events WHERE id <= 10 ORDER BY id

-- jsonb-containment-exists
SELECT id FROM corpus.events WHERE payload @> '{"device": {"os": "ios"}}' AND payload ? 'items'
AND payload ?| ARRAY['query', 'x'] ORDER BY id

-- jsonb-path-query
SELECT id, jsonb_path_query_array(payload, '$.items[*].sku') AS skus,
jsonb_path_exists(payload, '$.items[*] ? (@.qty > 1)') AS multi FROM corpus.events WHERE kind =
'purchase' ORDER BY id

-- jsonb-path-operators
SELECT id, payload @? '$.device ? (@.ver >= 3)' AS recent, payload @@ '$.ms > 500' AS slow FROM
corpus.events
WHERE id <= 20 ORDER BY id

-- jsonb-path-query-first-vars
SELECT id, jsonb_path_query_first(payload, '$.items[*] ? (@.qty >= $min).sku', '{"min": 2}') AS sku
FROM corpus.events WHERE kind = 'purchase' ORDER BY id

-- jsonb-each-text
SELECT e.id, kv.key, kv.value FROM corpus.events e, jsonb_each_text(e.payload -> 'device') AS kv
WHERE e.id <= 5 ORDER BY e.id, kv.key

-- jsonb-array-elements
SELECT e.id, item ->> 'sku' AS sku, (item ->> 'qty')::int AS qty FROM corpus.events e,
jsonb_array_elements(e.payload -> 'items') AS item ORDER BY e.id, sku, qty

-- jsonb-to-recordset
SELECT e.id, r.sku, r.qty FROM corpus.events e, jsonb_to_recordset(e.payload -> 'items') AS r(sku text,
qty int)
ORDER BY e.id, r.sku, r.qty

-- jsonb-populate-record-row-type
SELECT (jsonb_populate_record(NULL::corpus.categories, '{"id": 99, "parent_id": 1, "name": "Misc"}')).*

-- json-populate-record-row-type
SELECT r.id, r.kind, r.customer_id FROM corpus.events e, json_populate_record(NULL::corpus.events,
e.raw) AS r
WHERE e.id <= 10 ORDER BY r.id

-- jsonb-populate-recordset
SELECT * FROM jsonb_populate_recordset(NULL::corpus.categories,
'[{"id": 1, "name": "a"}, {"id": 2, "parent_id": 1, "name": "b"}]') ORDER BY id

-- json-table
SELECT e.id, jt.* FROM corpus.events e, JSON_TABLE(e.payload, '$.items[*]' COLUMNS (
    n FOR ORDINALITY, sku text PATH '$.sku', qty int PATH '$.qty' DEFAULT 0 ON EMPTY)) AS jt
ORDER BY e.id, jt.n

-- json-table-nested-exists
SELECT jt.* FROM JSON_TABLE('{"a": [{"x": 1, "ys": [1, 2]}, {"x": 2, "ys": []}]}'::jsonb, '$.a[*]'
COLUMNS (
    x int PATH '$.x', has_y boolean EXISTS PATH '$.ys[0]', NESTED PATH '$.ys[*]' COLUMNS (y int PATH
'$'))) AS jt
ORDER BY x, y NULLS FIRST

-- sql-json-functions
SELECT id, JSON_VALUE(payload, '$.device.ver' RETURNING int) AS ver, JSON_QUERY(payload, '$.items') AS
items,
JSON_EXISTS(payload, '$.query') AS has_query FROM corpus.events WHERE id <= 8 ORDER BY id

-- jsonb-build-and-agg
SELECT customer_id, jsonb_agg(jsonb_build_object('id', id, 'total', total) ORDER BY id) AS orders,
jsonb_object_agg(status, total ORDER BY id) AS by_status FROM corpus.orders WHERE customer_id <= 4
GROUP BY customer_id ORDER BY customer_id

-- json-agg-row-to-json
SELECT json_agg(row_to_json(c) ORDER BY c.id) FROM (SELECT id, name, parent_id FROM corpus.categories) c

-- to-jsonb-row
SELECT to_jsonb(p) - 'stock_bins' AS doc FROM corpus.products p WHERE id <= 3 ORDER BY id

-- jsonb-set-and-delete
SELECT id, jsonb_set(payload, '{device,ver}', '99') #> '{device}' AS bumped, payload - 'items' - 'query'
AS slim,
payload #- '{device,os}' AS no_os FROM corpus.events WHERE id <= 5 ORDER BY id

-- jsonb-typeof-length-keys
SELECT id, jsonb_typeof(payload -> 'items'), jsonb_array_length(payload -> 'items'),
ARRAY(SELECT jsonb_object_keys(payload) ORDER BY 1) AS keys FROM corpus.events WHERE id <= 6 ORDER BY id

-- jsonb-strip-nulls-pretty
SELECT id, jsonb_strip_nulls(payload), jsonb_pretty(payload -> 'device') FROM corpus.events WHERE id <=
4 ORDER BY id

-- json-operators-on-json
SELECT id, raw -> 'score' AS score_json, (raw ->> 'score')::numeric AS score, json_typeof(raw -> 'kind')
FROM corpus.events WHERE id <= 6 ORDER BY id

-- jsonb-numeric-aggregate
SELECT payload -> 'device' ->> 'os' AS os, avg((payload ->> 'ms')::int) AS avg_ms, max((payload ->>
'ms')::int) AS max_ms
FROM corpus.events GROUP BY 1 ORDER BY 1

-- is-json-predicate
SELECT s, s IS JSON AS json, s IS JSON OBJECT AS object, s IS JSON ARRAY AS array
FROM (VALUES ('{"a": 1}'), ('[1, 2]'), ('nope'), ('3')) AS v(s) ORDER BY s

-- json-constructors
SELECT JSON_OBJECT('id': id, 'name': name), JSON_ARRAY(id, country) FROM corpus.customers WHERE id <= 3
ORDER BY id

-- json-arrayagg-objectagg
SELECT JSON_ARRAYAGG(id ORDER BY id), JSON_OBJECTAGG(sku VALUE price) FROM corpus.products WHERE id <= 4

-- unnest-with-ordinality
SELECT * FROM unnest(ARRAY['b', 'a', 'c']) WITH ORDINALITY AS t(letter, n) ORDER BY n

-- unnest-multiple
SELECT * FROM unnest(ARRAY[1, 2, 3], ARRAY['x', 'y']) AS t(n, s) ORDER BY n

-- array-agg
SELECT customer_id, array_agg(id ORDER BY id) AS ids, array_agg(DISTINCT status) AS statuses FROM
corpus.orders
GROUP BY customer_id ORDER BY customer_id

-- any-all
SELECT id, name FROM corpus.customers WHERE 'vip' = ANY(tags) AND country <> ALL(ARRAY['PL', 'IS'])
ORDER BY id

-- array-operators
SELECT id, tags @> ARRAY['b2b'] AS b2b, tags && ARRAY['vip', 'beta'] AS any_of, tags || 'new'::text AS
added,
cardinality(tags), array_length(tags, 1), tags[1] AS first, tags[2:3] AS middle FROM corpus.customers
ORDER BY id

-- array-functions
SELECT id, array_position(tags, 'newsletter'), array_remove(tags, 'vip'), array_replace(tags, 'b2b',
'B2B'),
array_to_string(tags, ';', '-'), array_cat(tags, ARRAY['x']), array_prepend('p', tags) FROM
corpus.customers ORDER BY id

-- array-sort-reverse-trim
SELECT id, array_reverse(tags), array_sort(tags), trim_array(tags, 1) FROM corpus.customers WHERE
cardinality(tags) >= 1
ORDER BY id

-- string-to-array
SELECT string_to_array('a,b,,c', ','), string_to_array('a,b,,c', ',', ''), string_to_table('x y', ' ')

-- array-constructor-subquery
SELECT c.id, ARRAY(SELECT o.id FROM corpus.orders o WHERE o.customer_id = c.id ORDER BY o.id) AS
order_ids
FROM corpus.customers c ORDER BY c.id

-- multidimensional-array
SELECT ARRAY[[1, 2], [3, 4]] AS m, (ARRAY[[1, 2], [3, 4]])[2][1], array_dims(ARRAY[[1, 2], [3, 4]])

-- tag-counts
SELECT tag, count(*) FROM corpus.customers, unnest(tags) AS tag GROUP BY tag ORDER BY count(*) DESC, tag

-- generate-subscripts
SELECT id, i, tags[i] FROM corpus.customers, generate_subscripts(tags, 1) AS i WHERE id <= 6 ORDER BY
id, i

-- numeric-array-agg
SELECT array_agg(total ORDER BY id) FROM corpus.orders WHERE id <= 10

-- citext-array-agg
SELECT country, array_agg(handle ORDER BY id) FROM corpus.customers GROUP BY country ORDER BY country

-- range-operators
SELECT id, delivery @> TIMESTAMPTZ '2024-02-01 12:00+00' AS covers, delivery && tstzrange('2024-02-01',
'2024-02-03') AS overlaps,
lower(delivery), upper(delivery), upper(delivery) - lower(delivery) AS span, isempty(delivery),
upper_inf(delivery)
FROM corpus.orders WHERE id <= 40 ORDER BY id

-- range-constructors
SELECT int4range(1, 10) * int4range(5, 15) AS meet, int4range(1, 5) + int4range(5, 9) AS joined,
numrange(1.5, 2.5, '[]') AS closed, daterange('2024-01-01', NULL) AS open_end, int4range(3, 3) AS empty

-- range-adjacency-and-order
SELECT a.id, b.id FROM corpus.products a JOIN corpus.products b ON a.on_sale -|- b.on_sale OR a.on_sale
<< b.on_sale
WHERE a.id <= 3 AND b.id <= 8 ORDER BY 1, 2

-- multirange-operations
SELECT id, stock_bins, stock_bins @> 12 AS has_12, stock_bins + int4multirange(int4range(20, 22)) AS
more,
stock_bins - int4multirange(int4range(0, 2)) AS less, range_merge(stock_bins) FROM corpus.products WHERE
id <= 8 ORDER BY id

-- multirange-agg-unnest
SELECT range_agg(on_sale) AS selling, (SELECT array_agg(r ORDER BY r) FROM unnest(range_agg(stock_bins))
r) AS bins
FROM corpus.products WHERE category_id = 9

-- range-intersect-agg
SELECT range_intersect_agg(on_sale) FROM corpus.products WHERE id BETWEEN 3 AND 6

-- tstzrange-from-columns
SELECT id, tstzrange(ordered_at, shipped_at, '[]') AS window FROM corpus.orders WHERE shipped_at IS NOT
NULL ORDER BY id

-- corr-and-regression
SELECT corr(qty, unit_price), regr_slope(unit_price, qty), regr_intercept(unit_price, qty),
regr_r2(unit_price, qty),
regr_count(unit_price, qty), regr_avgx(unit_price, qty), covar_samp(qty, unit_price), covar_pop(qty,
unit_price)
FROM corpus.order_items

-- stddev-variance
SELECT status, stddev(total), stddev_pop(total), variance(total), var_samp(discount), var_pop(discount)
FROM corpus.orders GROUP BY status ORDER BY status

-- regr-per-group
SELECT p.category_id, regr_slope(oi.qty, oi.unit_price), regr_sxx(oi.qty, oi.unit_price),
regr_syy(oi.qty, oi.unit_price)
FROM corpus.order_items oi JOIN corpus.products p ON p.id = oi.product_id GROUP BY p.category_id ORDER
BY p.category_id

-- z-scores
SELECT id, round((total - avg(total) OVER ()) / stddev(total) OVER (), 3) AS z FROM corpus.orders ORDER
BY id

-- casts
SELECT id, total::int AS whole, total::float8 AS f, total::text AS t, id::numeric(6, 2) AS n,
ordered_at::date AS d,
ordered_at::time AS tm, discount::numeric(4, 2) AS disc, CAST(status AS varchar(4)) AS short FROM
corpus.orders
WHERE id <= 10 ORDER BY id

-- casts-from-text
SELECT '42'::int, '3.14'::numeric, '2024-02-29'::date, 'true'::boolean, '12:34'::time, '1e3'::float8,
'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, '192.168.1.5/24'::inet, '{1,2}'::int[], 'x'::char(3)

-- typed-literals
SELECT DATE '2024-02-29', TIME '10:00', TIMESTAMP '2024-02-29 10:00', TIMESTAMPTZ '2024-02-29 10:00+02',
INTERVAL '1 hour', NUMERIC '1.50', BOOLEAN 'yes'

-- cast-bool-and-bytea
SELECT 1::boolean, 'abc'::bytea, decode('00ff', 'hex'), 'x'::text::bytea

-- money-and-bit
SELECT 12.5::money * 2, B'1010' | B'0101', 5::bit(4), '1.5'::numeric::money

-- inet-functions
SELECT id, host(ip), masklen(ip), network(ip), family(ip), ip << inet '10.1.0.0/16' AS in_subnet,
abbrev(ip)
FROM corpus.customers ORDER BY id

-- inet-group-by-network
SELECT set_masklen(ip::cidr, 16) AS net, count(*) FROM corpus.customers WHERE family(ip) = 4 GROUP BY 1
ORDER BY 1

-- uuid-values
SELECT md5(name)::uuid AS id_from_name FROM corpus.customers ORDER BY id

-- case-expressions
SELECT id, CASE WHEN total >= 400 THEN 'large' WHEN total >= 100 THEN 'medium' ELSE 'small' END AS size,
CASE status WHEN 'paid' THEN 1 WHEN 'shipped' THEN 2 ELSE 0 END AS code FROM corpus.orders ORDER BY id

-- is-distinct-from
SELECT id FROM corpus.customers WHERE credit_limit IS DISTINCT FROM 250.50 AND referred_by IS NOT
DISTINCT FROM NULL
ORDER BY id

-- row-comparison
SELECT id, customer_id FROM corpus.orders WHERE (customer_id, id) > (20, 100) ORDER BY customer_id, id

-- row-value-column
SELECT ROW(id, name) AS pair FROM corpus.categories ORDER BY id

-- between-symmetric
SELECT id FROM corpus.orders WHERE total BETWEEN SYMMETRIC 300 AND 200 ORDER BY id

-- generate-series-ints
SELECT n, n * n AS sq FROM generate_series(1, 20, 3) AS n ORDER BY n

-- generate-series-numeric
SELECT x FROM generate_series(0.5, 3.0, 0.5) AS x ORDER BY x

-- generate-series-timestamps
SELECT ts FROM generate_series(TIMESTAMPTZ '2024-01-01', TIMESTAMPTZ '2024-01-02', interval '4 hours')
AS ts ORDER BY ts

-- values-root
VALUES (1, 'one', 1.5), (2, 'two', NULL), (3, 'three', 2.25) ORDER BY 1

-- values-in-from
SELECT v.code, v.label, count(o.id) FROM (VALUES ('paid', 'Paid'), ('new', 'New'), ('gone', 'Gone')) AS
v(code, label)
LEFT JOIN corpus.orders o ON o.status = v.code GROUP BY v.code, v.label ORDER BY v.code

-- union
SELECT city AS place FROM corpus.customers UNION SELECT name FROM corpus.categories ORDER BY place

-- union-all
SELECT 'order' AS source, id FROM corpus.orders WHERE id <= 3 UNION ALL SELECT 'event', id FROM
corpus.events WHERE id <= 3
ORDER BY source, id

-- intersect
SELECT customer_id FROM corpus.orders INTERSECT SELECT customer_id FROM corpus.events ORDER BY 1

-- except
SELECT id FROM corpus.customers EXCEPT SELECT customer_id FROM corpus.orders WHERE status = 'paid' ORDER
BY 1

-- except-all-intersect-all
(SELECT status FROM corpus.orders WHERE id <= 20 EXCEPT ALL SELECT status FROM corpus.orders WHERE id <=
5)
INTERSECT ALL SELECT status FROM corpus.orders WHERE id <= 12 ORDER BY 1

-- set-operation-parenthesised-limit
(SELECT id FROM corpus.orders ORDER BY total DESC LIMIT 3) UNION ALL (SELECT id FROM corpus.orders ORDER
BY total LIMIT 3)
ORDER BY 1

-- fetch-first-with-ties (unordered)
SELECT id, customer_id FROM corpus.orders ORDER BY customer_id FETCH FIRST 3 ROWS WITH TIES

-- fetch-first-only
SELECT id, total FROM corpus.orders ORDER BY total DESC, id FETCH FIRST 5 ROWS ONLY

-- fetch-with-ties-in-subquery
SELECT * FROM (SELECT id, customer_id FROM corpus.orders ORDER BY customer_id DESC FETCH FIRST 2 ROWS
WITH TIES) t
ORDER BY customer_id, id

-- limit-expression
SELECT id FROM corpus.orders ORDER BY id LIMIT 2 + 3

-- limit-subquery-expression
SELECT id FROM corpus.orders ORDER BY id LIMIT (SELECT count(*) FROM corpus.categories)

-- limit-offset
SELECT id, total FROM corpus.orders ORDER BY total, id LIMIT 10 OFFSET 20

-- offset-only
SELECT id FROM corpus.orders ORDER BY id OFFSET 190

-- offset-fetch-standard
SELECT id FROM corpus.orders ORDER BY id OFFSET 5 ROWS FETCH NEXT 4 ROWS ONLY

-- limit-all
SELECT id FROM corpus.categories ORDER BY id LIMIT ALL

-- limit-null
SELECT id FROM corpus.categories ORDER BY id LIMIT NULL

-- order-by-nulls-last
SELECT id, shipped_at FROM corpus.orders ORDER BY shipped_at DESC NULLS LAST, id

-- order-by-nulls-first
SELECT id, credit_limit FROM corpus.customers ORDER BY credit_limit NULLS FIRST, id

-- order-by-expression-and-alias
SELECT id, total * (1 - discount) AS net FROM corpus.orders ORDER BY net DESC, id

-- pg-trgm-similarity
SELECT id, name, similarity(name, 'Helen Muller') AS score FROM corpus.customers ORDER BY score DESC, id
LIMIT 5

-- pg-trgm-percent-operator
SELECT id, name FROM corpus.products WHERE name % 'garden hoses' ORDER BY id

-- pg-trgm-word-similarity
SELECT id, word_similarity('brulee', name), 'seed' <% name AS has_word, name <-> 'Atlas mini' AS
distance
FROM corpus.products ORDER BY id

-- pg-trgm-show-trgm
SELECT show_trgm('Café')

-- unaccent
SELECT id, unaccent(name), unaccent(city) FROM corpus.customers WHERE unaccent(city) ILIKE '%zurich%' OR
id <= 3
ORDER BY id

-- unaccent-search
SELECT id, name FROM corpus.products WHERE unaccent(lower(name)) LIKE '%creme brulee%' ORDER BY id

-- fuzzystrmatch
SELECT id, levenshtein(city, 'Zurich'), soundex(name), difference(name, 'Ana Silva'), metaphone(name,
6), dmetaphone(name)
FROM corpus.customers ORDER BY id

-- levenshtein-less-equal
SELECT a.id, b.id FROM corpus.customers a JOIN corpus.customers b ON a.id < b.id
AND levenshtein_less_equal(a.name, b.name, 3) <= 3 ORDER BY 1, 2

-- citext-comparison
SELECT id, handle FROM corpus.customers WHERE handle = 'USER07' OR handle IN ('user08', 'UsEr09') ORDER
BY id

-- citext-order-and-like
SELECT handle FROM corpus.customers WHERE handle LIKE 'USER1%' ORDER BY handle

-- citext-group
SELECT lower(handle::text) AS h, count(*) FROM corpus.customers GROUP BY handle ORDER BY h

-- hstore-operators
SELECT id, prefs -> 'lang' AS lang, prefs ? 'theme' AS has_theme, prefs @> 'theme=>dark' AS dark,
akeys(prefs), prefs || hstore('seen', 'yes') AS more, prefs - 'theme'::text AS less FROM
corpus.customers ORDER BY id

-- hstore-each-and-agg
SELECT h.key, h.value, count(*) FROM corpus.customers c, each(c.prefs) AS h GROUP BY 1, 2 ORDER BY 1, 2

-- hstore-to-json
SELECT id, hstore_to_jsonb(prefs), prefs -> ARRAY['lang', 'none'] FROM corpus.customers WHERE id <= 5
ORDER BY id

-- vector-l2-nearest
SELECT id, embedding <-> '[1, 2, 1]' AS distance FROM corpus.customers WHERE embedding IS NOT NULL
ORDER BY distance, id LIMIT 5

-- vector-cosine-nearest
SELECT id, embedding <=> '[1, 1, 1]' AS cosine FROM corpus.customers WHERE embedding IS NOT NULL
ORDER BY cosine, id LIMIT 5

-- vector-cosine-rounded
SELECT id, round((embedding <=> '[1, 1, 1]')::numeric, 6) AS cosine FROM corpus.customers
WHERE embedding IS NOT NULL AND id <= 10 ORDER BY id

-- vector-inner-product
SELECT id, embedding <#> '[1, 0, 0]' AS neg_inner FROM corpus.customers WHERE embedding IS NOT NULL
ORDER BY id

-- vector-l1-distance
SELECT id, embedding <+> '[1, 0, 0]' AS taxicab FROM corpus.customers WHERE embedding IS NOT NULL
ORDER BY taxicab, id

-- vector-functions
SELECT id, vector_dims(embedding), round(vector_norm(embedding)::numeric, 4), embedding + '[1, 1, 1]' AS
shifted,
l1_distance(embedding, '[0, 0, 0]') FROM corpus.customers WHERE embedding IS NOT NULL AND id <= 6 ORDER
BY id

-- vector-avg
SELECT country, avg(embedding) FROM corpus.customers GROUP BY country ORDER BY country

-- monthly-cohort
SELECT date_trunc('month', c.signed_up)::date AS cohort, count(DISTINCT c.id) AS customers, count(o.id)
AS orders
FROM corpus.customers c LEFT JOIN corpus.orders o ON o.customer_id = c.id GROUP BY 1 ORDER BY 1

-- funnel
SELECT customer_id, count(*) FILTER (WHERE kind = 'view') AS views, count(*) FILTER (WHERE kind =
'click') AS clicks,
count(*) FILTER (WHERE kind = 'purchase') AS purchases FROM corpus.events GROUP BY customer_id ORDER BY
customer_id

-- retention-gap-days
SELECT customer_id, round(avg(extract(epoch FROM gap) / 86400), 2) AS mean_gap_days FROM (
    SELECT customer_id, ordered_at - lag(ordered_at) OVER (PARTITION BY customer_id ORDER BY ordered_at)
AS gap
    FROM corpus.orders) g WHERE gap IS NOT NULL GROUP BY customer_id ORDER BY customer_id

-- pivot-with-filter
SELECT c.country,
sum(o.total) FILTER (WHERE date_part('month', o.ordered_at) = 1) AS jan,
sum(o.total) FILTER (WHERE date_part('month', o.ordered_at) = 2) AS feb,
sum(o.total) FILTER (WHERE date_part('month', o.ordered_at) = 3) AS mar
FROM corpus.orders o JOIN corpus.customers c ON c.id = o.customer_id GROUP BY c.country ORDER BY
c.country

-- top-products-per-category
SELECT category_id, sku, units FROM (
    SELECT p.category_id, p.sku, sum(oi.qty) AS units,
    row_number() OVER (PARTITION BY p.category_id ORDER BY sum(oi.qty) DESC, p.sku) AS r
    FROM corpus.order_items oi JOIN corpus.products p ON p.id = oi.product_id GROUP BY p.category_id,
p.sku) t
WHERE r <= 2 ORDER BY category_id, r

-- basket-size-histogram
SELECT lines, count(*) AS orders FROM (SELECT order_id, count(*) AS lines FROM corpus.order_items GROUP
BY order_id) b
GROUP BY lines ORDER BY lines

-- order-value-check
SELECT o.id, o.total, sum(oi.qty * oi.unit_price) AS items_value, o.total - sum(oi.qty * oi.unit_price)
AS diff
FROM corpus.orders o JOIN corpus.order_items oi ON oi.order_id = o.id GROUP BY o.id, o.total ORDER BY
o.id

-- sessionize
SELECT customer_id, sum(new_session) OVER (PARTITION BY customer_id ORDER BY at, id) AS session, id FROM
(
    SELECT customer_id, id, at, CASE WHEN at - lag(at) OVER (PARTITION BY customer_id ORDER BY at, id) <
interval '2 days'
    THEN 0 ELSE 1 END AS new_session FROM corpus.events) s ORDER BY customer_id, at, id

-- search-terms
SELECT payload ->> 'query' AS term, count(*) FROM corpus.events WHERE kind = 'search' GROUP BY 1 ORDER
BY 2 DESC, 1

-- weekday-profile
SELECT to_char(at, 'ID Day') AS weekday, count(*) FROM corpus.events GROUP BY 1 ORDER BY 1

-- delivery-late-check
SELECT id, shipped_at, delivery, shipped_at <@ delivery AS on_time FROM corpus.orders
WHERE shipped_at IS NOT NULL AND delivery IS NOT NULL ORDER BY id

-- docs-pages-join
SELECT section, count(*), sum(words) FROM docs.pages GROUP BY section ORDER BY section

-- exists-in-select-list
SELECT c.id, EXISTS (SELECT 1 FROM corpus.events e WHERE e.customer_id = c.id AND e.kind = 'purchase')
AS bought
FROM corpus.customers c ORDER BY c.id

-- nested-aggregate-subquery
SELECT max(n), min(n), avg(n) FROM (SELECT customer_id, count(*) AS n FROM corpus.orders GROUP BY
customer_id) t

-- table-star-and-qualified-star
SELECT c.*, o.id AS order_id FROM corpus.categories c, LATERAL (SELECT 1 AS id) o ORDER BY c.id

-- count-variants
SELECT count(*), count(shipped_at), count(note) FROM corpus.orders
"""

# Answered with a small `max_rows` (after the name): LIMITs below, at and above it, LIMITs that are
# expressions, OFFSET, FETCH, and answers exactly `max_rows` long; `unordered` ones are not cut.
_TRUNCATIONS = r"""
-- limit-below-max-rows (max_rows 5)
SELECT id FROM corpus.orders ORDER BY id LIMIT 3

-- limit-at-max-rows (max_rows 5)
SELECT id FROM corpus.orders ORDER BY id LIMIT 5

-- limit-one-above-max-rows (max_rows 5)
SELECT id FROM corpus.orders ORDER BY id LIMIT 6

-- limit-far-above-max-rows (max_rows 5)
SELECT id, total FROM corpus.orders ORDER BY total DESC, id LIMIT 50

-- no-limit-cut (max_rows 10)
SELECT id, status FROM corpus.orders ORDER BY id

-- no-limit-exactly-max-rows (max_rows 10)
SELECT id FROM corpus.categories ORDER BY id

-- limit-expression-above (max_rows 7)
SELECT id FROM corpus.orders ORDER BY id LIMIT 4 * 5

-- limit-expression-below (max_rows 7)
SELECT id FROM corpus.orders ORDER BY id LIMIT 2 + 1

-- limit-subquery-below (max_rows 20)
SELECT id FROM corpus.orders ORDER BY id LIMIT (SELECT count(*) FROM corpus.categories)

-- with-ties-top-level-under-max-rows (max_rows 10, unordered)
SELECT id, customer_id FROM corpus.orders ORDER BY customer_id FETCH FIRST 3 ROWS WITH TIES

-- limit-subquery-above (max_rows 4)
SELECT id FROM corpus.orders ORDER BY id LIMIT (SELECT count(*) FROM corpus.categories)

-- offset-then-cut (max_rows 5)
SELECT id FROM corpus.orders ORDER BY id OFFSET 190

-- limit-offset-below (max_rows 5)
SELECT id FROM corpus.orders ORDER BY id LIMIT 3 OFFSET 10

-- fetch-first-above (max_rows 6)
SELECT id FROM corpus.orders ORDER BY id FETCH FIRST 12 ROWS ONLY

-- limit-all-cut (max_rows 8)
SELECT id FROM corpus.orders ORDER BY id LIMIT ALL

-- with-ties-under-max-rows (max_rows 4)

SELECT * FROM (SELECT id, customer_id FROM corpus.orders ORDER BY customer_id FETCH FIRST 3 ROWS WITH
TIES) t
ORDER BY customer_id, id

-- with-ties-over-max-rows (max_rows 2)

SELECT * FROM (SELECT id, customer_id FROM corpus.orders ORDER BY customer_id FETCH FIRST 3 ROWS WITH
TIES) t
ORDER BY customer_id, id

-- union-cut (max_rows 9)
SELECT id FROM corpus.orders UNION ALL SELECT id FROM corpus.events ORDER BY 1 LIMIT 30

-- values-cut (max_rows 2)
VALUES (3), (1), (2) ORDER BY 1
"""

_HEADER = re.compile(r"^-- (?P<name>[a-z0-9-]+)(?: \((?P<note>[^)]*)\))?$", re.MULTILINE)


def _split(text: str) -> list[tuple[str, str | None, str]]:
    """(name, note, query text) of each `-- <name> (<note>)` block of `text`."""
    headers = list(_HEADER.finditer(text))
    ends = [h.start() for h in headers[1:]] + [len(text)]
    return [(h["name"], h["note"], text[h.end() : end].strip()) for h, end in zip(headers, ends, strict=True)]


QUERIES: tuple[CorpusQuery, ...] = tuple(
    CorpusQuery(name, sql, ordered=note != "unordered") for name, note, sql in _split(_QUERIES)
)


def _truncation(name: str, note: str | None, sql: str) -> Truncation:
    """`note`: "max_rows <n>", then ", unordered" when the order of the rows is not defined."""
    cap, _, order = (note or "").removeprefix("max_rows ").partition(", ")
    return Truncation(name, sql, int(cap), ordered=order != "unordered")


TRUNCATIONS: tuple[Truncation, ...] = tuple(_truncation(*block) for block in _split(_TRUNCATIONS))
