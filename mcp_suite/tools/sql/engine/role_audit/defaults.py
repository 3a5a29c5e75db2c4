"""What the role gets by default: the search_path its sessions start with, and EXECUTE on functions
created after the audit (PostgreSQL grants it to PUBLIC unless default privileges say otherwise).

`search_path_findings` refuses a session search_path that puts any schema before pg_catalog (a
same-named function there would shadow a built-in); `creator_findings` refuses every role that can
create functions in this database without a default privilege that keeps EXECUTE from PUBLIC and from
the reader. docs/tools/read_only_sql.md says why. Sync psycopg only; no trio.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from psycopg import sql

from mcp_suite.tools.sql.engine.role_audit.finding import Finding

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "CREATORS_QUERY",
    "CREATOR_SETTING",
    "Creator",
    "creator_findings",
    "read_creators",
    "search_path_entries",
    "search_path_findings",
    "shadowing_entries",
    "shadowing_findings",
]

CREATOR_SETTING: Final = "MCP_SQL_ACCEPT_FUNCTION_CREATORS"

# Two values: the one this session started with (the database's and the role's ALTER ... SET as the
# server applied them at log-in, and the DSN's options; not a SET made since), and the one a new
# session would get from ALTER ROLE/DATABASE ... SET now (role-and-database over role over database,
# as PostgreSQL applies them), which a long-lived pooled connection does not show.
SEARCH_PATH_QUERY: Final = """
SELECT (SELECT reset_val FROM pg_catalog.pg_settings WHERE name = 'search_path'),
       (SELECT pg_catalog.substr(c, 13)
        FROM pg_catalog.pg_db_role_setting d CROSS JOIN LATERAL pg_catalog.unnest(d.setconfig) AS c
        WHERE pg_catalog.starts_with(c, 'search_path=')
        AND d.setrole IN (0, (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user))
        AND d.setdatabase IN (0, (SELECT oid FROM pg_catalog.pg_database
                                  WHERE datname = pg_catalog.current_database()))
        ORDER BY d.setrole <> 0 DESC, d.setdatabase <> 0 DESC LIMIT 1)
"""


def search_path_entries(raw: str) -> list[str]:
    """The schemas of a search_path value, in order, unquoted (`"a""b"` is `a"b`)."""
    entries: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(raw):
        char = raw[i]
        if quoted:
            if char == '"' and raw[i + 1 : i + 2] == '"':
                current.append('"')
                i += 1
            elif char == '"':
                quoted = False
            else:
                current.append(char)
        elif char == '"':
            quoted = True
        elif char == ",":
            entries.append("".join(current).strip())
            current = []
        else:
            current.append(char.lower() if not char.isspace() else char)
        i += 1
    entries.append("".join(current).strip())
    return [entry for entry in entries if entry]


def shadowing_entries(entries: list[str]) -> list[str]:
    """The entries searched before pg_catalog. Not naming pg_catalog puts it first (PostgreSQL
    searches it implicitly before the path), so only an explicit, late pg_catalog shadows."""
    if "pg_catalog" not in entries:
        return []
    return entries[: entries.index("pg_catalog")]


def search_path_findings(conn: psycopg.Connection[Any], *, role: str, db: str) -> list[Finding]:
    """The search_path finding for the role's sessions (one statement)."""
    started, configured = conn.execute(SEARCH_PATH_QUERY).fetchone() or ("", None)
    # What a new session would get first (the fix is about that), else this session's own value.
    for raw in (configured, started):
        if raw is not None and (found := shadowing_findings(str(raw), role=role, db=db)):
            return found
    return []


def shadowing_findings(raw: str, *, role: str, db: str) -> list[Finding]:
    """A refusal when the search_path value `raw` puts any schema before pg_catalog."""
    entries = search_path_entries(raw)
    before = shadowing_entries(entries)
    if not before:
        return []
    rest = [_quoted(e) for e in entries if e != "pg_catalog"]
    return [
        Finding(
            "search-path",
            f"the role's sessions start with search_path = {raw}: the schemas {', '.join(before)} come "
            "before pg_catalog, so a function, operator or aggregate made there with a built-in's "
            "name (max, =, ...) runs instead of the built-in",
            f"ALTER ROLE {role} IN DATABASE {db} SET search_path = {', '.join(['pg_catalog', *rest])};",
        )
    ]


def _quoted(name: str) -> str:
    return sql.Identifier(name).as_string(None)


# Roles that can put a function into this database (superusers; CREATE on any schema, as owner,
# through a grant or through inherited membership), except the reader itself (schema-create refuses
# that) and the predefined roles (nobody logs in as them). Every schema counts, not only those the
# reader may use: casts, operators, views and aggregates reach functions in any schema by OID.
# For each: the default-privilege entries that give EXECUTE on new functions to PUBLIC or to a role
# the reader is a member of, and whether a global entry exists at all (without one, PostgreSQL's
# built-in default gives EXECUTE to PUBLIC).
CREATORS_QUERY: Final = """
WITH creator AS (
  SELECT r.oid, r.rolname::text AS rolname, r.rolsuper,
         ARRAY(SELECT n.nspname::text FROM pg_catalog.pg_namespace n
               WHERE n.nspname NOT LIKE 'pg\\_toast%%' AND n.nspname NOT LIKE 'pg\\_temp\\_%%'
               AND pg_catalog.has_schema_privilege(r.oid, n.oid, 'CREATE') ORDER BY 1) AS schemas
  FROM pg_catalog.pg_roles r
  WHERE r.rolname !~ '^pg_' AND r.rolname <> current_user
)
SELECT c.rolname, c.rolsuper, c.schemas,
       NOT EXISTS (SELECT 1 FROM pg_catalog.pg_default_acl d WHERE d.defaclrole = c.oid
                   AND d.defaclnamespace = 0 AND d.defaclobjtype = 'f') AS no_global,
       (SELECT pg_catalog.json_agg(DISTINCT pg_catalog.jsonb_build_array(COALESCE(n.nspname::text, ''),
                    CASE WHEN a.grantee = 0 THEN '' ELSE pg_catalog.pg_get_userbyid(a.grantee)::text END))
        FROM pg_catalog.pg_default_acl d
        LEFT JOIN pg_catalog.pg_namespace n ON n.oid = d.defaclnamespace
        CROSS JOIN LATERAL pg_catalog.aclexplode(d.defaclacl) a
        WHERE d.defaclrole = c.oid AND d.defaclobjtype = 'f' AND a.privilege_type = 'EXECUTE'
        AND CASE WHEN a.grantee = 0 THEN true
                 ELSE pg_catalog.pg_has_role(a.grantee, 'MEMBER') END) AS grants
FROM creator c
WHERE c.rolsuper OR pg_catalog.cardinality(c.schemas) > 0
ORDER BY 1
"""


@dataclass(frozen=True, slots=True)
class Creator:
    """A role that can create functions, and the default privileges that open new ones to the reader."""

    name: str
    superuser: bool
    schemas: tuple[str, ...]  # where it may CREATE
    grants: tuple[tuple[str, str], ...]  # (schema or "" for every schema, grantee or "" for PUBLIC)


def read_creators(conn: psycopg.Connection[Any]) -> list[Creator]:
    """The creators whose new functions the reader could execute: one statement."""
    creators = []
    for name, superuser, schemas, no_global, grants in conn.execute(CREATORS_QUERY).fetchall():
        pairs = {(str(schema), str(grantee)) for schema, grantee in grants or ()}
        if no_global:
            pairs.add(("", ""))
        if pairs:
            creators.append(Creator(name, bool(superuser), tuple(schemas), tuple(sorted(pairs))))
    return creators


def _fix(creator: Creator, db: str) -> str:
    """The statements that close `creator`'s default privileges, and where to run them: default
    privileges belong to one database, so the fix is run connected to the one audited (`db`, a
    quoted identifier), as a superuser or `creator` itself."""
    role = _quoted(creator.name)
    fixes = [f"connected to the database {db} (psql -d {db}) as a superuser or {role}, run:"]
    for schema, grantee in creator.grants:
        where = f" IN SCHEMA {_quoted(schema)}" if schema else ""
        whom = _quoted(grantee) if grantee else "PUBLIC"
        fixes.append(
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {role}{where} REVOKE EXECUTE ON FUNCTIONS FROM {whom};"
        )
    return " ".join(fixes)


def creator_findings(
    creators: Iterable[Creator], *, accepted: frozenset[str], db: str = '""'
) -> list[Finding]:
    """A refusal per creator (a logged warning for those the operator named in CREATOR_SETTING);
    each fix names the database it is run in (`db`, the audited one, quoted)."""
    findings: list[Finding] = []
    for creator in creators:
        why = (
            "a superuser" if creator.superuser else "may create in the schemas " + ", ".join(creator.schemas)
        )
        whom = sorted({grantee or "PUBLIC" for _, grantee in creator.grants})
        problem = (
            f"the role {creator.name} ({why}) can create functions that {' and '.join(whom)} may execute "
            "from the moment they exist, so the reader could run a function made after this audit"
            " (through a cast, an operator, a view or an aggregate, not only by name)"
        )
        if creator.name in accepted:
            findings.append(
                Finding(
                    "function-creator-accepted",
                    f"{problem}: accepted as a known risk by {CREATOR_SETTING}",
                    _fix(creator, db) + f" and remove {creator.name} from {CREATOR_SETTING}",
                    warning=True,
                )
            )
        else:
            findings.append(
                Finding(
                    "function-creator",
                    problem,
                    _fix(creator, db) + f" (or, knowing the risk, name {creator.name} in {CREATOR_SETTING})",
                )
            )
    return findings
