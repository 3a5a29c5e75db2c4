-- The demo's second database, mcp_ops (docs/tools/read_only_sql.md, "The demo database"), run by
-- mcp_suite.demo (seed.py) as the bootstrap superuser in that database. `make run` serves it as the source
-- `ops` beside `docs` (mcp_demo). Roles and database-level grants are made by seed.py (they need
-- the random reader password); its reader, mcp_ops_reader, is audited as mcp_reader is.
SET ROLE ops_owner;

CREATE SCHEMA ops;
COMMENT ON SCHEMA ops IS 'Services, their deploys and their incidents.';

CREATE TABLE ops.services (
    service text PRIMARY KEY,
    team text NOT NULL,
    tier smallint NOT NULL CHECK (tier BETWEEN 1 AND 3)
);
COMMENT ON COLUMN ops.services.tier IS '1 = customer-facing and paged at night, 3 = best effort.';

CREATE TABLE ops.deploys (
    deploy_id integer PRIMARY KEY,
    service text NOT NULL REFERENCES ops.services,
    version text NOT NULL,
    deployed_at timestamptz NOT NULL,
    deployed_by text NOT NULL,
    succeeded boolean NOT NULL
);
CREATE INDEX deploys_service_idx ON ops.deploys (service, deployed_at);
COMMENT ON TABLE ops.deploys IS 'One deploy of one service; succeeded is false when it was rolled back.';

CREATE TABLE ops.incidents (
    incident_id text PRIMARY KEY,
    service text NOT NULL REFERENCES ops.services,
    severity text NOT NULL CHECK (severity IN ('sev1', 'sev2', 'sev3')),
    opened_at timestamptz NOT NULL,
    resolved_at timestamptz CHECK (resolved_at >= opened_at),
    caused_by integer REFERENCES ops.deploys,
    summary text NOT NULL
);
COMMENT ON TABLE ops.incidents IS 'Incidents; resolved_at is NULL while one is open.';
COMMENT ON COLUMN ops.incidents.caused_by IS 'The deploy the post-mortem blamed, if any.';

-- Who to call at night: the reader may not read it.
CREATE TABLE ops.oncall_contacts (
    person text PRIMARY KEY,
    phone text NOT NULL
);

INSERT INTO ops.services (service, team, tier) VALUES
    ('api', 'platform', 1),
    ('billing', 'payments', 1),
    ('search', 'discovery', 2),
    ('docs-site', 'docs', 3);

-- n = 1..24: service ('api','billing','search','docs-site')[n % 4 + 1], version 1.n.0, every 7 hours
-- from 2026-11-02 09:00 UTC, deployed by ana when n is even else bo, rolled back when n % 6 = 0.
INSERT INTO ops.deploys (deploy_id, service, version, deployed_at, deployed_by, succeeded)
SELECT n,
       (ARRAY['api', 'billing', 'search', 'docs-site'])[n % 4 + 1],
       format('1.%s.0', n),
       TIMESTAMPTZ '2026-11-02 09:00:00+00' + n * INTERVAL '7 hours',
       CASE WHEN n % 2 = 0 THEN 'ana@example.com' ELSE 'bo@example.com' END,
       n % 6 <> 0
FROM generate_series(1, 24) AS n;

INSERT INTO ops.incidents VALUES
    ('INC-101', 'billing', 'sev1', TIMESTAMPTZ '2026-11-02 17:10+00', TIMESTAMPTZ '2026-11-02 18:05+00', 1,
     'Card payments failing after the 1.1.0 deploy'),
    ('INC-102', 'search', 'sev2', TIMESTAMPTZ '2026-11-04 03:30+00', TIMESTAMPTZ '2026-11-04 04:10+00', 6,
     'Empty results for quoted queries after the 1.6.0 deploy'),
    ('INC-103', 'api', 'sev2', TIMESTAMPTZ '2026-11-05 21:20+00', TIMESTAMPTZ '2026-11-05 22:05+00', 12,
     'Timeouts on the orders endpoint'),
    ('INC-104', 'search', 'sev3', TIMESTAMPTZ '2026-11-06 02:40+00', TIMESTAMPTZ '2026-11-06 09:15+00', NULL,
     'Slow suggestions during the nightly reindex'),
    ('INC-105', 'billing', 'sev2', TIMESTAMPTZ '2026-11-09 10:20+00', NULL, NULL,
     'Invoices e-mailed twice');

INSERT INTO ops.oncall_contacts VALUES ('ana', '+1 555 0100'), ('bo', '+1 555 0101');

CREATE VIEW ops.open_incidents AS
    SELECT incident_id, service, severity, opened_at, summary FROM ops.incidents WHERE resolved_at IS NULL;
COMMENT ON VIEW ops.open_incidents IS 'Incidents not resolved yet.';

RESET ROLE;

ANALYZE ops.services, ops.deploys, ops.incidents, ops.oncall_contacts;

-- The reader: services, incidents and the view; deploys without deployed_by (a column grant);
-- nothing of oncall_contacts.
GRANT USAGE ON SCHEMA ops TO mcp_ops_reader;
GRANT SELECT ON ops.services, ops.incidents, ops.open_incidents TO mcp_ops_reader;
GRANT SELECT (deploy_id, service, version, deployed_at, succeeded) ON ops.deploys TO mcp_ops_reader;
-- Server-side defaults for every session of the reader, as for mcp_reader in mcp_demo.
ALTER ROLE mcp_ops_reader IN DATABASE mcp_ops SET default_transaction_read_only = on;
ALTER ROLE mcp_ops_reader IN DATABASE mcp_ops SET temp_file_limit = '256MB';
ALTER ROLE mcp_ops_reader IN DATABASE mcp_ops SET statement_timeout = '10s';

-- Function privileges live in each database's own catalogue: what seed.sql does in mcp_demo is
-- done again here (large objects, and EXECUTE on functions made later by either creator).
REVOKE EXECUTE ON FUNCTION
    lo_create(oid), lo_creat(integer), lo_from_bytea(oid, bytea), lo_put(oid, bigint, bytea),
    lo_unlink(oid), lo_import(text), lo_import(text, oid), lo_export(oid, text),
    lowrite(integer, bytea), lo_truncate(integer, integer), lo_truncate64(integer, bigint),
    lo_open(oid, integer)
FROM PUBLIC;
ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE ops_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
