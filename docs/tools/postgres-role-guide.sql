-- A least-privilege PostgreSQL role for mcp-suite's read_only_sql (docs/tools/read_only_sql.md, docs/operations/threat-model.md).
--
-- A psql script: run it as a superuser, connected to the database to serve, once per database.
-- Nothing is edited by hand: the names are psql variables, each with a default, and every step
-- can run again (for another database of the same cluster, another reader role, or after a
-- change) without failing or granting twice:
--
--   psql -X -v ON_ERROR_STOP=1 -d app -f postgres-role-guide.sql
--   psql -X -v ON_ERROR_STOP=1 -d reports -v reader=mcp_reports -v views=mcp_report_views \
--        -v views_owner=mcp_report_views_owner -f postgres-role-guide.sql
--   psql -X -v ON_ERROR_STOP=1 -d app -v part1=off -v part2=on -f postgres-role-guide.sql
--
-- Variables (-v NAME=VALUE, or \set before \i): reader (mcp_reader), views (mcp_views),
-- views_owner (mcp_views_owner), password (none: psql asks for it with \password when it runs
-- in a terminal; never put it on a command line others can see), part1 (on), part2 (off: the
-- identity map's roles, below), login (mcp_login, part 2). The database is the one psql is
-- connected to. The server audits the role at start-up and refuses to serve (exit status 78) if
-- it could do more than read; `mcp-suite check-role` runs that audit alone. Explanations:
-- docs/tools/read_only_sql.md, "Execution and role audit" → "The role guide".

\if :{?reader} \else \set reader mcp_reader \endif
\if :{?views} \else \set views mcp_views \endif
\if :{?views_owner} \else \set views_owner mcp_views_owner \endif
\if :{?login} \else \set login mcp_login \endif
\if :{?part1} \else \set part1 on \endif
\if :{?part2} \else \set part2 off \endif
SELECT pg_catalog.current_database() AS database \gset

\if :part1
-- 1. The login role: no special attributes, does not inherit, few connections.
--    NOINHERIT: even if someone later grants it a role, it does not silently gain that role's
--    privileges (the audit still refuses any membership: SET ROLE could switch to it).
--    CONNECTION LIMIT, per server process: MCP_SQL_POOL_MAX_SIZE (default 4) for the pool, plus
--    one the role audit holds for as long as the server runs (its dedicated connection, opened at
--    start-up, never from the pool), so 5; times the number of server processes (replicas), plus
--    whatever else logs in as this role (a DBA's psql counts too). The audit's connection is what
--    keeps it auditing when the other slots are full; if it is lost and cannot be opened again,
--    the SQL tools stop serving after two MCP_SQL_REAUDIT_INTERVAL_S, until an audit passes.
--    That holds whatever the calls do: a backend whose work PostgreSQL cannot interrupt (an XPath
--    with MCP_SQL_ALLOW_XML, a quadratic array @>) keeps its connection and its pool slot until
--    it ends, so the server never opens another beside it; only a connection broken by the network
--    is given up (docs/tools/read_only_sql.md, "Work that cannot be stopped").
--    Made once per cluster (roles are the cluster's); run again, the attributes are set again.
SELECT pg_catalog.format('CREATE ROLE %I', :'reader')
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = :'reader') \gexec
ALTER ROLE :"reader"
    LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT
    CONNECTION LIMIT 5;
\if :{?password}
ALTER ROLE :"reader" PASSWORD :'password';
\else
\echo 'the reader role has no password yet: psql asks for one now (or run \\password' :reader 'later)'
\password :reader
\endif

-- 2. Server-side defaults: they hold even for a client that forgets to ask for them.
ALTER ROLE :"reader" SET default_transaction_read_only = on;
ALTER ROLE :"reader" SET statement_timeout = '10s';          -- the server also sets it per call
ALTER ROLE :"reader" SET lock_timeout = '2s';
ALTER ROLE :"reader" SET idle_in_transaction_session_timeout = '30s';
ALTER ROLE :"reader" SET idle_session_timeout = '15min';     -- PostgreSQL 14+
-- What one query may cost the host in temporary files (sorts, hashes, materialised function
-- results); superuser-only, so it belongs to the role. The audit refuses a role without a limit.
ALTER ROLE :"reader" SET temp_file_limit = '1GB';

-- 3. Connect to this database only. PUBLIC may connect everywhere by default: take that away.
REVOKE CONNECT, TEMPORARY ON DATABASE :"database" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"database" TO :"reader";
-- (repeat the REVOKE for every other database of the cluster, including postgres and template1;
--  the roles that must connect there get an explicit GRANT CONNECT)

-- 4. One schema of curated views, owned by a NOLOGIN role: the model sees only what you chose.
SELECT pg_catalog.format('CREATE ROLE %I NOLOGIN', :'views_owner')
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = :'views_owner') \gexec
CREATE SCHEMA IF NOT EXISTS :"views" AUTHORIZATION :"views_owner";
-- Create the views AS the owner (so the default privileges below apply); the owner needs SELECT
-- on what the views read. Expose columns, not whole tables (no e-mail addresses, no secrets);
-- security_barrier keeps a view's filters from being bypassed by leaky functions (the audit refuses
-- a view that filters a table the role may not read in full without it, and a view, function or
-- row-level security policy the role reaches that calls set_config or anything else the query
-- policy refuses: what they run, runs as the caller):
--   GRANT USAGE ON SCHEMA docs TO mcp_views_owner; GRANT SELECT ON docs.pages TO mcp_views_owner;
--   SET ROLE mcp_views_owner;
--   CREATE VIEW mcp_views.pages WITH (security_barrier) AS SELECT slug, section, words FROM docs.pages;
--   RESET ROLE;
GRANT USAGE ON SCHEMA :"views" TO :"reader";
GRANT SELECT ON ALL TABLES IN SCHEMA :"views" TO :"reader";
ALTER DEFAULT PRIVILEGES FOR ROLE :"views_owner" IN SCHEMA :"views"
    GRANT SELECT ON TABLES TO :"reader";
-- Functions: PostgreSQL lets PUBLIC execute every new function. A SECURITY DEFINER function runs
-- with its owner's privileges, so a SELECT of one can do whatever its owner may (run a program,
-- read server files). Take EXECUTE away in the exposed schema, now and for functions made later
-- (the audit refuses a role that can execute any SECURITY DEFINER function outside pg_catalog).
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA :"views" FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE :"views_owner" REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
-- (repeat both for every schema the reader may use, FOR ROLE each role that creates functions
--  there; grant EXECUTE back only on SECURITY INVOKER functions the model should call)
-- Functions made later, anywhere in this database, by anyone: a cast, an operator, a view or an
-- aggregate runs a function without the query naming it, so every role that can create functions
-- here needs the same default privilege: each superuser, the database owner, and every owner of a
-- schema or holder of CREATE on one. The audit refuses to serve until each has it, and prints the
-- statement for each role it finds (a role you cannot change: name it in
-- MCP_SQL_ACCEPT_FUNCTION_CREATORS, an explicit and logged risk). This gives it to every such role
-- there is now (default privileges are per database: this database's), the reader excepted; a
-- role that becomes one later (a new superuser, an application role that owns its schema) needs
-- it too: run this file again in each database served, or the statement the audit prints.
SELECT pg_catalog.format('ALTER DEFAULT PRIVILEGES FOR ROLE %I REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC',
                         r.rolname)
FROM pg_catalog.pg_roles r
WHERE r.rolname !~ '^pg_' AND r.rolname <> :'reader'
  AND (r.rolsuper
       OR r.oid = (SELECT datdba FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
       OR EXISTS (SELECT FROM pg_catalog.pg_namespace n
                  WHERE pg_catalog.has_schema_privilege(r.oid, n.oid, 'CREATE')))
ORDER BY r.rolname \gexec

-- 5. No CREATE anywhere (PostgreSQL 15+ already revokes CREATE on public from PUBLIC).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- 6. Large objects are the one write a plain role may make by default: revoke their functions.
REVOKE EXECUTE ON FUNCTION
    lo_create(oid), lo_creat(integer), lo_from_bytea(oid, bytea), lo_put(oid, bigint, bytea),
    lo_unlink(oid), lo_import(text), lo_import(text, oid), lo_export(oid, text),
    lowrite(integer, bytea), lo_truncate(integer, integer), lo_truncate64(integer, bigint),
    lo_open(oid, integer)
FROM PUBLIC;

-- 7. Never grant these (the audit refuses them): pg_write_all_data, pg_read_server_files,
--    pg_write_server_files, pg_execute_server_program, pg_signal_backend — and no membership in
--    any other role. pg_read_all_data would bypass step 4; pg_monitor/pg_read_all_stats show
--    other sessions' queries. Check with:
--    SELECT roleid::regrole FROM pg_auth_members WHERE member = 'mcp_reader'::regrole;
--    Nor these (refused too): EXECUTE on dblink's functions (REVOKE them FROM PUBLIC, or do not
--    install dblink in this database), USAGE or UPDATE on a sequence, UPDATE on a large object,
--    EXECUTE on the administrative functions PostgreSQL withholds from PUBLIC (pg_read_file...).

-- 8. Transport: require TLS with certificate and host name checks in the DSN, for example
--    MCP_SQL_DSN='host=db.internal dbname=app user=mcp_reader sslmode=verify-full
--                 sslrootcert=/run/secrets/db-ca.pem'
--    and in pg_hba.conf allow the role only over hostssl with scram-sha-256:
--    hostssl app mcp_reader 10.0.0.5/32 scram-sha-256

-- 9. Tell the server at once when something changes (recommended). The server audits the role
--    again every MCP_SQL_REAUDIT_INTERVAL_S (30 s): what a DDL statement grants is reachable until
--    then. This event trigger notifies the channel mcp_suite_role_audit at the end of every DDL
--    command in this database (CREATE/ALTER/DROP of functions, aggregates, operators, casts, views,
--    schemas, extensions; GRANT and REVOKE on objects; ALTER DEFAULT PRIVILEGES; ...), and the
--    server, which LISTENs on its audit connection, audits again within a second. What fires no
--    event trigger is still seen by the interval alone: role membership (GRANT role TO role),
--    ALTER ROLE (attributes, SET search_path), other cluster-wide objects (databases, tablespaces)
--    and grants on them, large objects, pg_hba.conf and server settings. Behind a pooler in
--    transaction mode the server cannot LISTEN unless MCP_SQL_AUDIT_DSN leads straight to
--    PostgreSQL (docs/configuration.md). Creating an event trigger needs a superuser; the function
--    runs as whoever ran the DDL, sends only the command's tag, and PUBLIC may not execute it.
CREATE SCHEMA IF NOT EXISTS mcp_suite_audit;
CREATE OR REPLACE FUNCTION mcp_suite_audit.notify_role_audit() RETURNS event_trigger
    LANGUAGE plpgsql SET search_path = pg_catalog
    AS $$ BEGIN PERFORM pg_catalog.pg_notify('mcp_suite_role_audit', tg_tag); END $$;
REVOKE EXECUTE ON FUNCTION mcp_suite_audit.notify_role_audit() FROM PUBLIC;
DROP EVENT TRIGGER IF EXISTS mcp_suite_role_audit;  -- run again: made anew, as below
CREATE EVENT TRIGGER mcp_suite_role_audit ON ddl_command_end
    EXECUTE FUNCTION mcp_suite_audit.notify_role_audit();
-- ALWAYS: an event trigger fires by default only when session_replication_role is "origin", and
-- migration tools set "replica"; the audit warns when it finds the trigger in another state.
ALTER EVENT TRIGGER mcp_suite_role_audit ENABLE ALWAYS;
-- (to remove it: DROP EVENT TRIGGER mcp_suite_role_audit; DROP SCHEMA mcp_suite_audit CASCADE;)

-- 10. Verify: `mcp-suite check-role` prints each problem with its fix, or says the role can only read.
\endif

-- ================================================================================================
-- Part 2. Each person reads as themselves (the HTTP endpoint's identity map, [sources.identity]:
-- docs/operations/remote.md, "Each person reads as themselves"). Instead of one reader role: a
-- login role that holds nothing and, for each call, switches to the role the caller's verified
-- token maps to; row-level security then sees the caller's claims. Over stdio the map does not
-- apply (the local user reads as the DSN's role): keep part 1 for that. The audit checks all of it.

\if :part2
-- 11. The login role (the DSN's): NOINHERIT (a mapped role's privileges are never its own), CONNECT
--     only, nothing to read itself. Session settings stay the login role's after SET ROLE, so the
--     limits of step 2 belong here (an ALTER ROLE <mapped role> SET ... does not apply).
SELECT pg_catalog.format('CREATE ROLE %I', :'login')
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = :'login') \gexec
ALTER ROLE :"login"
    LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT
    CONNECTION LIMIT 5;
\if :{?password}
ALTER ROLE :"login" PASSWORD :'password';
\else
\echo 'the login role has no password yet: psql asks for one now (or run \\password' :login 'later)'
\password :login
\endif
ALTER ROLE :"login" SET statement_timeout = '10s';
ALTER ROLE :"login" SET idle_in_transaction_session_timeout = '30s';
ALTER ROLE :"login" SET temp_file_limit = '1GB';
GRANT CONNECT ON DATABASE :"database" TO :"login";

--     Never `ALTER ROLE mcp_login SET role = ...` (or session_authorization, or the same on the
--     database): every new session would start as that role. The audit refuses it, and each
--     connection and each call checks it (issue 51).

-- 12. One NOLOGIN role per group the map names, each granted what that group may read; the login
--     role is a member of each of them and of no other role (the audit refuses any other). Any code
--     a call runs can switch to every role the login role reaches (a SECURITY INVOKER function that
--     calls set_config('role', ...)), so the audit follows every membership from the login role: a
--     mapped role must itself be a member of no role the map does not name, and none it reaches may
--     be a superuser, BYPASSRLS, CREATEROLE, REPLICATION or a predefined pg_* role (pg_read_all_data,
--     pg_read_all_stats, pg_monitor, ...), whatever the map says. And no function the login role
--     or a mapped role may execute may carry `SET role`, `SET session_authorization` or
--     `SET request.jwt.*` (ALTER FUNCTION ... SET): its body would run as another role or person
--     (the audit's function-config finding).
SELECT pg_catalog.format('CREATE ROLE %I NOLOGIN NOINHERIT', name)
FROM (VALUES ('mcp_sales'), ('mcp_support')) AS mapped (name)
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = name) \gexec
GRANT mcp_sales, mcp_support TO :"login";

-- 13. A worked example: one table, a policy on the subject. The server sets, for each call's
--     transaction, `request.jwt.claims` to the caller's claims as JSON (PostgREST's convention),
--     so `->> 'sub'` is the verified subject.
SELECT 'CREATE ROLE mcp_notes_owner NOLOGIN'
WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'mcp_notes_owner') \gexec
CREATE SCHEMA IF NOT EXISTS mcp_notes AUTHORIZATION mcp_notes_owner;
-- As in step 4: the owner's new functions are not PUBLIC's to execute (the audit checks it for
-- every mapped role; steps 4-7 of part 1 apply to a database served this way too).
ALTER DEFAULT PRIVILEGES FOR ROLE mcp_notes_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
CREATE TABLE IF NOT EXISTS mcp_notes.notes (owner text NOT NULL, body text NOT NULL);
ALTER TABLE mcp_notes.notes OWNER TO mcp_notes_owner;
ALTER TABLE mcp_notes.notes ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS own_notes ON mcp_notes.notes;  -- run again: made anew, as below
CREATE POLICY own_notes ON mcp_notes.notes FOR SELECT TO mcp_sales, mcp_support
    USING (owner = pg_catalog.current_setting('request.jwt.claims', true)::json ->> 'sub');
GRANT USAGE ON SCHEMA mcp_notes TO mcp_sales, mcp_support;
GRANT SELECT ON mcp_notes.notes TO mcp_sales, mcp_support;
INSERT INTO mcp_notes.notes
SELECT * FROM (VALUES ('ann@example.com', 'Call the Lisbon customer back'),
                      ('bo@example.com', 'Ticket 4312 waits for a log')) AS example (owner, body)
WHERE NOT EXISTS (SELECT FROM mcp_notes.notes);
-- The configuration file's source for it (ann's token holds "groups": ["sales"], bo's ["support"]):
--   dsn = "host=db.internal dbname=app user=mcp_login"
--   [sources.identity]
--   [[sources.identity.rules]]
--   group = "sales"
--   role = "mcp_sales"
--   [[sources.identity.rules]]
--   group = "support"
--   role = "mcp_support"
-- Then `SELECT body FROM mcp_notes.notes` answers ann "Call the Lisbon customer back" and bo
-- "Ticket 4312 waits for a log"; a caller no rule maps is refused. pg_stat_activity shows
-- application_name `mcp-suite/ann@example.com` during ann's call (log_line_prefix '%a' logs it).

-- 14. Verify: `mcp-suite --config sources.toml check-role` audits the login role, then each mapped
--     role (one line each), and prints each problem with its fix.
\endif
