-- The demo data (docs/tools/read_only_sql.md), run by mcp_suite.demo (seed.py) as the bootstrap superuser in the demo database.
-- Roles and database-level grants are made by seed.py (they need the random reader password).
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

CREATE INDEX pages_section_idx ON docs.pages (section);

COMMENT ON TABLE docs.pages IS 'One page of the documentation site.';
COMMENT ON COLUMN docs.pages.words IS 'Words on the page, counted at publication.';

-- Beyond the base demo data, for schema discovery: a second schema, a column-level grant, a view, comments,
-- a foreign key to a visible table and one to a hidden table, an index on a hidden column.
CREATE SCHEMA reports;
COMMENT ON SCHEMA reports IS 'Release reporting.';

CREATE TABLE reports.releases (
    version text PRIMARY KEY,
    released_on date NOT NULL,
    page_slug text REFERENCES docs.pages,
    approved_by text REFERENCES docs.editors,
    internal_note text,
    UNIQUE (released_on, version)
);
CREATE INDEX releases_internal_note_idx ON reports.releases (internal_note);
COMMENT ON TABLE reports.releases IS 'Published releases.';
COMMENT ON COLUMN reports.releases.version IS 'Semantic version, for example 1.2.0.';

INSERT INTO reports.releases VALUES
    ('1.0.0', DATE '2026-01-15', 'page-03', 'e-1', 'first public release'),
    ('1.1.0', DATE '2026-04-02', 'page-06', 'e-2', 'security fixes'),
    ('1.2.0', DATE '2026-09-30', NULL, 'e-1', 'the schema tool');

CREATE VIEW reports.words_per_section AS
    SELECT section, sum(words) AS words FROM docs.pages GROUP BY section;
COMMENT ON VIEW reports.words_per_section IS 'Total words per documentation section.';

RESET ROLE;

ANALYZE docs.editors, docs.pages, reports.releases;

-- The reader: USAGE on docs, SELECT on docs.pages only (not docs.editors).
GRANT USAGE ON SCHEMA docs TO mcp_reader;
GRANT SELECT ON docs.pages TO mcp_reader;
-- In reports: the view, and releases only without approved_by and internal_note (column grants).
GRANT USAGE ON SCHEMA reports TO mcp_reader;
GRANT SELECT ON reports.words_per_section TO mcp_reader;
GRANT SELECT (version, released_on, page_slug) ON reports.releases TO mcp_reader;
-- Server-side default for every session of the reader (the MCP server also asks for it).
ALTER ROLE mcp_reader IN DATABASE mcp_demo SET default_transaction_read_only = on;
-- What one query may cost the host: temporary files (superuser-only, so it belongs to the role) and
-- time. (A demo cluster seeded from an older seed.sql is made again: cluster.py keeps its digest.)
ALTER ROLE mcp_reader IN DATABASE mcp_demo SET temp_file_limit = '256MB';
ALTER ROLE mcp_reader IN DATABASE mcp_demo SET statement_timeout = '10s';

-- Defence in depth beyond docs/tools/read_only_sql.md (see docs/tools/postgres-role-guide.sql): large objects are the
-- one write a plain role may make by default, so PUBLIC loses EXECUTE on the functions that create,
-- change or remove them. The read-only transaction refuses them too; each layer holds alone.
REVOKE EXECUTE ON FUNCTION
    lo_create(oid), lo_creat(integer), lo_from_bytea(oid, bytea), lo_put(oid, bigint, bytea),
    lo_unlink(oid), lo_import(text), lo_import(text, oid), lo_export(oid, text),
    lowrite(integer, bytea), lo_truncate(integer, integer), lo_truncate64(integer, bigint),
    lo_open(oid, integer)
FROM PUBLIC;

-- Functions made later must not become executable by the reader on their own: PostgreSQL gives
-- EXECUTE on every new function to PUBLIC unless the creator's default privileges say otherwise.
-- Every role that can create functions here needs this (the audit refuses to serve otherwise): the
-- bootstrap superuser running this file, and docs_owner (owner of the database and its schemas).
ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE docs_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
