"""Hazards along the role's reach, each made as a careless superuser would (tests/pg/test_sql_reach.py
at start-up, tests/pg/test_sql_reach_while_serving.py while the server serves).

Everything lives in the schema REACH_SCHEMA or is named mcp_reach_*, so `drop_hazards` removes it all.
`{witness}` in a statement is the temporary file a program run would create. Also here: the roles
that can create functions the reader could run (`CREATORS`) and the search_path hazard, a `max`
that shadows the built-in (`make_shadowing_max`).
"""

from __future__ import annotations

from typing import Any, Final

import psycopg

from tests.support.pg import PROBE_ROLE

REACH_SCHEMA: Final = "mcp_reach"

# A SECURITY DEFINER step that runs a program as the database's OS user, EXECUTE withheld from PUBLIC
# (as the audit's definer-function finding asks): the aggregate around it is what the role can call.
_EXPORT_STEP: Final = [
    "CREATE FUNCTION mcp_reach.export_step(s text, v text) RETURNS text LANGUAGE plpgsql STRICT"
    " SECURITY DEFINER SET search_path = pg_catalog"
    " AS $$ BEGIN COPY (SELECT 1) TO PROGRAM 'touch {witness}; cat >/dev/null'; RETURN v; END $$",
    "REVOKE EXECUTE ON FUNCTION mcp_reach.export_step(text, text) FROM PUBLIC",
]


def _internal_definer(name: str, arguments: str, returns: str, symbol: str) -> str:
    """A SECURITY DEFINER copy of a built-in C function (harmless code; the attribute is the hazard)."""
    return (
        f"CREATE FUNCTION mcp_reach.{name}({arguments}) RETURNS {returns} LANGUAGE internal"
        f" IMMUTABLE SECURITY DEFINER AS '{symbol}'"
    )


# path -> (statements, text the refusal must name)
HAZARDS: Final[dict[str, tuple[list[str], str]]] = {
    "aggregate-transition": (
        [
            *_EXPORT_STEP,
            "CREATE AGGREGATE mcp_reach.export_agg(text) (SFUNC = mcp_reach.export_step, STYPE = text)",
            "GRANT EXECUTE ON FUNCTION mcp_reach.export_agg(text) TO PUBLIC",
        ],
        "aggregate mcp_reach.export_agg(text) → transition function mcp_reach.export_step(text,text)",
    ),
    "aggregate-final": (
        [
            "CREATE FUNCTION mcp_reach.export_final(s text) RETURNS text LANGUAGE plpgsql SECURITY DEFINER"
            " SET search_path = pg_catalog AS $$ BEGIN"
            " COPY (SELECT 1) TO PROGRAM 'touch {witness}; cat >/dev/null'; RETURN s; END $$",
            "REVOKE EXECUTE ON FUNCTION mcp_reach.export_final(text) FROM PUBLIC",
            "CREATE AGGREGATE mcp_reach.final_agg(text) (SFUNC = pg_catalog.textcat, STYPE = text,"
            " FINALFUNC = mcp_reach.export_final)",
            "GRANT EXECUTE ON FUNCTION mcp_reach.final_agg(text) TO PUBLIC",
        ],
        "aggregate mcp_reach.final_agg(text) → final function mcp_reach.export_final(text)",
    ),
    "aggregate-moving-inverse": (
        [
            *_EXPORT_STEP,
            "CREATE AGGREGATE mcp_reach.moving_agg(text) (SFUNC = pg_catalog.textcat, STYPE = text,"
            " MSFUNC = pg_catalog.textcat, MINVFUNC = mcp_reach.export_step, MSTYPE = text)",
            "GRANT EXECUTE ON FUNCTION mcp_reach.moving_agg(text) TO PUBLIC",
        ],
        "aggregate mcp_reach.moving_agg(text) → moving inverse transition function mcp_reach.export_step",
    ),
    "aggregate-administrative": (
        [
            # lo_truncate is withheld from PUBLIC by the demo's seed; the aggregate hands it out.
            "CREATE AGGREGATE mcp_reach.trunc_agg(integer) (SFUNC = pg_catalog.lo_truncate, STYPE = integer)",
            "GRANT EXECUTE ON FUNCTION mcp_reach.trunc_agg(integer) TO PUBLIC",
        ],
        "aggregate mcp_reach.trunc_agg(integer) → transition function lo_truncate(integer,integer)",
    ),
    "aggregate-extension": (
        [
            "CREATE EXTENSION IF NOT EXISTS dblink SCHEMA mcp_reach",
            "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA mcp_reach FROM PUBLIC",
            "CREATE AGGREGATE mcp_reach.link_agg(text) (SFUNC = mcp_reach.dblink_connect, STYPE = text)",
            "GRANT EXECUTE ON FUNCTION mcp_reach.link_agg(text) TO PUBLIC",
        ],
        "aggregate mcp_reach.link_agg(text) → transition function mcp_reach.dblink_connect(text,text)",
    ),
    "type-input": (
        [
            "CREATE TYPE mcp_reach.label",
            _internal_definer("label_in", "cstring", "mcp_reach.label", "textin"),
            "CREATE FUNCTION mcp_reach.label_out(mcp_reach.label) RETURNS cstring LANGUAGE internal"
            " IMMUTABLE STRICT AS 'textout'",
            "CREATE TYPE mcp_reach.label (INPUT = mcp_reach.label_in, OUTPUT = mcp_reach.label_out,"
            " LIKE = pg_catalog.text)",
        ],
        "type mcp_reach.label → input function mcp_reach.label_in(cstring)",
    ),
    "range-subtype-difference": (
        [
            "CREATE FUNCTION mcp_reach.gap(a integer, b integer) RETURNS float8 LANGUAGE plpgsql"
            " IMMUTABLE SECURITY DEFINER SET search_path = pg_catalog AS $$ BEGIN"
            " COPY (SELECT 1) TO PROGRAM 'touch {witness}; cat >/dev/null'; RETURN b - a; END $$",
            "REVOKE EXECUTE ON FUNCTION mcp_reach.gap(integer, integer) FROM PUBLIC",
            "CREATE TYPE mcp_reach.span AS RANGE (SUBTYPE = integer, SUBTYPE_DIFF = mcp_reach.gap)",
        ],
        "range type mcp_reach.span → subtype difference function mcp_reach.gap(integer,integer)",
    ),
    "operator-estimator": (
        [
            _internal_definer("guess", "internal, oid, internal, integer", "float8", "eqsel"),
            "CREATE OPERATOR mcp_reach.=== (FUNCTION = pg_catalog.int4eq, LEFTARG = integer,"
            " RIGHTARG = integer, RESTRICT = mcp_reach.guess)",
        ],
        "operator mcp_reach.===(integer,integer) → restriction estimator mcp_reach.guess(",
    ),
    "planner-support": (
        [
            _internal_definer("helper", "internal", "internal", "textlike_support"),
            "CREATE FUNCTION mcp_reach.plain(integer) RETURNS integer LANGUAGE sql"
            " SUPPORT mcp_reach.helper AS 'SELECT $1'",
        ],
        "function mcp_reach.plain(integer) → planner support function mcp_reach.helper(internal)",
    ),
    "operator-family-support": (
        [
            "CREATE FUNCTION mcp_reach.order_cmp(a integer, b integer) RETURNS integer LANGUAGE plpgsql"
            " SECURITY DEFINER SET search_path = pg_catalog AS $$ BEGIN"
            " COPY (SELECT 1) TO PROGRAM 'touch {witness}; cat >/dev/null'; RETURN btint4cmp(a, b); END $$",
            "REVOKE EXECUTE ON FUNCTION mcp_reach.order_cmp(integer, integer) FROM PUBLIC",
            "CREATE OPERATOR CLASS mcp_reach.odd_ops FOR TYPE integer USING btree AS"
            " OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >,"
            " FUNCTION 1 mcp_reach.order_cmp(integer, integer)",
        ],
        "operator family mcp_reach.odd_ops (btree) → support function 1 for integer, integer"
        " mcp_reach.order_cmp(",
    ),
    "operator-family-operator": (
        [
            # array and row comparison, array_position, BRIN and index scans call a family's
            # operators through the type cache, without asking for EXECUTE
            "CREATE TYPE mcp_reach.mood AS ENUM ('ok', 'sad')",
            "CREATE FUNCTION mcp_reach.mood_eq(a mcp_reach.mood, b mcp_reach.mood) RETURNS boolean"
            " LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$ BEGIN"
            " COPY (SELECT 1) TO PROGRAM 'touch {witness}; cat >/dev/null'; RETURN a::text = b::text; END $$",
            "REVOKE EXECUTE ON FUNCTION mcp_reach.mood_eq(mcp_reach.mood, mcp_reach.mood) FROM PUBLIC",
            "CREATE OPERATOR mcp_reach.= (FUNCTION = mcp_reach.mood_eq, LEFTARG = mcp_reach.mood,"
            " RIGHTARG = mcp_reach.mood)",
            "CREATE OPERATOR CLASS mcp_reach.mood_ops DEFAULT FOR TYPE mcp_reach.mood USING btree AS"
            " OPERATOR 1 <(anyenum, anyenum), OPERATOR 2 <=(anyenum, anyenum),"
            " OPERATOR 3 mcp_reach.=(mcp_reach.mood, mcp_reach.mood),"
            " OPERATOR 4 >=(anyenum, anyenum), OPERATOR 5 >(anyenum, anyenum),"
            " FUNCTION 1 pg_catalog.enum_cmp(anyenum, anyenum)",
        ],
        "operator family mcp_reach.mood_ops (btree) → operator mcp_reach.=(mcp_reach.mood,mcp_reach.mood),"
        " whose function is mcp_reach.mood_eq(",
    ),
    "conversion": (
        [
            "CREATE FUNCTION mcp_reach.recode(integer, integer, cstring, internal, integer, boolean)"
            " RETURNS integer LANGUAGE c SECURITY DEFINER"
            " AS '$libdir/utf8_and_iso8859_1', 'utf8_to_iso8859_1'",
            "CREATE CONVERSION mcp_reach.recoding FOR 'UTF8' TO 'LATIN1' FROM mcp_reach.recode",
        ],
        "conversion mcp_reach.recoding → conversion function mcp_reach.recode(",
    ),
    "text-search-template": (
        [
            _internal_definer("ts_init", "internal", "internal", "dsimple_init"),
            "CREATE TEXT SEARCH TEMPLATE mcp_reach.plain_words (INIT = mcp_reach.ts_init,"
            " LEXIZE = pg_catalog.dsimple_lexize)",
        ],
        "text search template mcp_reach.plain_words → init function mcp_reach.ts_init(internal)",
    ),
    "text-search-parser": (
        [
            _internal_definer("ts_start", "internal, integer", "internal", "prsd_start"),
            "CREATE TEXT SEARCH PARSER mcp_reach.plain_parser (START = mcp_reach.ts_start,"
            " GETTOKEN = pg_catalog.prsd_nexttoken, END = pg_catalog.prsd_end,"
            " LEXTYPES = pg_catalog.prsd_lextype)",
        ],
        "text search parser mcp_reach.plain_parser → start function mcp_reach.ts_start(internal,integer)",
    ),
    "access-method": (
        [
            _internal_definer("am_handler", "internal", "table_am_handler", "heap_tableam_handler"),
            "CREATE ACCESS METHOD mcp_reach_heap TYPE TABLE HANDLER mcp_reach.am_handler",
        ],
        "access method mcp_reach_heap → handler mcp_reach.am_handler(internal)",
    ),
    "tablesample-method": (
        [_internal_definer("sample", "internal", "tsm_handler", "tsm_system_handler")],
        "tablesample method mcp_reach.sample(internal) → handler mcp_reach.sample(internal)",
    ),
    "foreign-data-wrapper": (
        [
            "CREATE FUNCTION mcp_reach.fdw_handler() RETURNS fdw_handler LANGUAGE c SECURITY DEFINER"
            " AS '$libdir/dblink', 'dblink_fdw_validator'",
            "CREATE FOREIGN DATA WRAPPER mcp_reach_fdw HANDLER mcp_reach.fdw_handler",
        ],
        "foreign-data wrapper mcp_reach_fdw → handler mcp_reach.fdw_handler()",
    ),
    "transform": (
        [
            _internal_definer("from_sql", "internal", "internal", "textlike_support"),
            "CREATE TYPE mcp_reach.mood AS ENUM ('ok')",
            "CREATE TRANSFORM FOR mcp_reach.mood LANGUAGE sql"
            " (FROM SQL WITH FUNCTION mcp_reach.from_sql(internal))",
        ],
        "transform for mcp_reach.mood language sql → from-SQL function mcp_reach.from_sql(internal)",
    ),
    "language": (
        [
            "CREATE FUNCTION mcp_reach.call_handler() RETURNS language_handler LANGUAGE c SECURITY DEFINER"
            " AS '$libdir/plpgsql', 'plpgsql_call_handler'",
            "CREATE LANGUAGE mcp_reach_lang HANDLER mcp_reach.call_handler",
        ],
        "language mcp_reach_lang → call handler mcp_reach.call_handler()",
    ),
}

# path -> one query through which the role itself would run the hazard's program (touch the witness),
# for the paths where a plain query does (the others need an index build or statistics first).
RUNS: Final[dict[str, str]] = {
    "aggregate-transition": "SELECT mcp_reach.export_agg(slug) FROM docs.pages",
    "aggregate-final": "SELECT mcp_reach.final_agg(slug) FROM docs.pages",
    # A frame whose start moves takes rows out of the moving state: the inverse transition runs.
    "aggregate-moving-inverse": "SELECT mcp_reach.moving_agg(slug) OVER (ORDER BY slug"
    " ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM docs.pages",
    # Array equality finds the type's = through the type cache, without asking for EXECUTE.
    "operator-family-operator": "SELECT ARRAY['ok'::mcp_reach.mood] = ARRAY['ok'::mcp_reach.mood]",
}

_DROPS: Final = (
    "DROP LANGUAGE IF EXISTS mcp_reach_lang CASCADE",
    "DROP FOREIGN DATA WRAPPER IF EXISTS mcp_reach_fdw CASCADE",
    "DROP ACCESS METHOD IF EXISTS mcp_reach_heap CASCADE",
    "DROP EXTENSION IF EXISTS dblink CASCADE",
    "DROP SCHEMA IF EXISTS mcp_reach CASCADE",
    "DROP ROLE IF EXISTS mcp_reach_creator",
)


def make_hazard(admin: psycopg.Connection[Any], path: str, witness: str) -> str:
    """Create the hazard of `path` (in a fresh schema the probe may use); returns the text to expect."""
    drop_hazards(admin)
    return add_hazard(admin, path, witness)


def add_hazard(admin: psycopg.Connection[Any], path: str, witness: str) -> str:
    """`make_hazard` beside what exists (the schema REACH_SCHEMA must not)."""
    admin.execute(f"CREATE SCHEMA {REACH_SCHEMA}".encode())
    statements, expected = HAZARDS[path]
    for statement in statements:
        admin.execute(statement.format(witness=witness).encode())
    return expected


def drop_hazards(admin: psycopg.Connection[Any]) -> None:
    for statement in _DROPS:
        admin.execute(statement.encode())


# A role that can create functions the reader could run, without the default privilege that keeps
# them from PUBLIC: case -> (statements, the fix the audit prints). The role is mcp_reach_creator.
CREATOR_ROLE: Final = "mcp_reach_creator"
CREATORS: Final[dict[str, tuple[list[str], str]]] = {
    "schema-create": (
        ["CREATE ROLE mcp_reach_creator NOLOGIN", "GRANT CREATE ON SCHEMA docs TO mcp_reach_creator"],
        'ALTER DEFAULT PRIVILEGES FOR ROLE "mcp_reach_creator" REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;',
    ),
    "schema-owner": (
        [
            "CREATE ROLE mcp_reach_creator NOLOGIN",
            f"CREATE SCHEMA {REACH_SCHEMA} AUTHORIZATION mcp_reach_creator",
        ],
        'ALTER DEFAULT PRIVILEGES FOR ROLE "mcp_reach_creator" REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;',
    ),
    "superuser": (
        ["CREATE ROLE mcp_reach_creator NOLOGIN SUPERUSER"],
        'ALTER DEFAULT PRIVILEGES FOR ROLE "mcp_reach_creator" REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;',
    ),
    "grant-to-the-reader": (
        [
            "CREATE ROLE mcp_reach_creator NOLOGIN",
            "ALTER DEFAULT PRIVILEGES FOR ROLE mcp_reach_creator REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC",
            "GRANT CREATE ON SCHEMA docs TO mcp_reach_creator",
            "ALTER DEFAULT PRIVILEGES FOR ROLE mcp_reach_creator IN SCHEMA docs"
            f" GRANT EXECUTE ON FUNCTIONS TO {PROBE_ROLE}",
        ],
        'ALTER DEFAULT PRIVILEGES FOR ROLE "mcp_reach_creator" IN SCHEMA "docs"'
        f' REVOKE EXECUTE ON FUNCTIONS FROM "{PROBE_ROLE}";',
    ),
}


def drop_creator(admin: psycopg.Connection[Any]) -> None:
    """What mcp_reach_creator owns and was granted (`drop_hazards` then drops the role)."""
    exists = admin.execute("SELECT 1 FROM pg_roles WHERE rolname = 'mcp_reach_creator'").fetchone()
    if exists:
        admin.execute(f"DROP SCHEMA IF EXISTS {REACH_SCHEMA} CASCADE".encode())
        admin.execute("DROP OWNED BY mcp_reach_creator")


# The search_path hazard: `util.max(integer)`, an aggregate whose transition function (SECURITY
# DEFINER, EXECUTE revoked from PUBLIC, as the audit asks) touches the witness, under the built-in's
# name; SHADOWING_SEARCH_PATH puts util before pg_catalog for the probe role.
SHADOW_STEP: Final = "util.max_step"
SHADOWING_SEARCH_PATH: Final = f"ALTER ROLE {PROBE_ROLE} SET search_path = util, pg_catalog, public"


def make_shadowing_max(admin: psycopg.Connection[Any], witness: str) -> None:
    admin.execute("CREATE SCHEMA util")
    admin.execute(f"GRANT USAGE ON SCHEMA util TO {PROBE_ROLE}".encode())
    admin.execute(
        "CREATE FUNCTION util.max_step(integer, integer) RETURNS integer LANGUAGE plpgsql"
        " SECURITY DEFINER SET search_path = pg_catalog AS $body$ BEGIN"
        f" COPY (SELECT 1) TO PROGRAM 'touch {witness}; cat >/dev/null';"
        " RETURN GREATEST($1, $2); END $body$".encode()
    )
    admin.execute("REVOKE EXECUTE ON FUNCTION util.max_step(integer, integer) FROM PUBLIC")
    admin.execute("CREATE AGGREGATE util.max(integer) (SFUNC = util.max_step, STYPE = integer)")
    # The demo's default privileges keep new functions from PUBLIC; a careless DBA grants it back.
    admin.execute("GRANT EXECUTE ON FUNCTION util.max(integer) TO PUBLIC")


def drop_shadowing_max(admin: psycopg.Connection[Any]) -> None:
    admin.execute("DROP SCHEMA IF EXISTS util CASCADE")
