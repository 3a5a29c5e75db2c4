-- The demo data (docs/tools/read_only_sql.md), run by mcp_suite.devdb as the bootstrap superuser in the demo database.
-- Roles and database-level grants are made by cluster.py (they need the random reader password).
SET ROLE docs_owner;

CREATE SCHEMA docs;

CREATE TABLE docs.editors (
    editor_id text PRIMARY KEY,
    email text NOT NULL
);

CREATE TABLE docs.pages (
    slug text PRIMARY KEY,
    editor_id text NOT NULL REFERENCES docs.editors,
    section text NOT NULL CHECK (section IN ('guides', 'reference', 'changelog')),
    words integer NOT NULL CHECK (words >= 0)
);

INSERT INTO docs.editors (editor_id, email) VALUES ('e-1', 'ana@example.com'), ('e-2', 'bo@example.com');

-- n = 1..30: slug page-NN, editor e-1 when n is even else e-2,
-- section ('guides','reference','changelog')[n % 3 + 1], words 200 + 25 n.
INSERT INTO docs.pages (slug, editor_id, section, words)
SELECT format('page-%s', lpad(n::text, 2, '0')),
       CASE WHEN n % 2 = 0 THEN 'e-1' ELSE 'e-2' END,
       (ARRAY['guides', 'reference', 'changelog'])[n % 3 + 1],
       200 + 25 * n
FROM generate_series(1, 30) AS n;

RESET ROLE;

-- The reader: USAGE on docs, SELECT on docs.pages only (not docs.editors).
GRANT USAGE ON SCHEMA docs TO mcp_reader;
GRANT SELECT ON docs.pages TO mcp_reader;
-- Server-side default for every session of the reader (the MCP server also asks for it).
ALTER ROLE mcp_reader IN DATABASE mcp_demo SET default_transaction_read_only = on;

-- Defence in depth beyond docs/tools/read_only_sql.md (see docs/tools/postgres-role-guide.sql): large objects are the
-- one write a plain role may make by default, so PUBLIC loses EXECUTE on the functions that create,
-- change or remove them. The read-only transaction refuses them too; each layer holds alone.
REVOKE EXECUTE ON FUNCTION
    lo_create(oid), lo_creat(integer), lo_from_bytea(oid, bytea), lo_put(oid, bigint, bytea),
    lo_unlink(oid), lo_import(text), lo_import(text, oid), lo_export(oid, text),
    lowrite(integer, bytea), lo_truncate(integer, integer), lo_truncate64(integer, bigint),
    lo_open(oid, integer)
FROM PUBLIC;
