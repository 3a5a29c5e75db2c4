"""What `read_only_sql` calls things: the database a DSN names, the schema resource's URI, the
`application_name` its connections carry (how a DBA finds them in `pg_stat_activity`), and how a
log line names the source it is about.

No connection is made; psycopg's conninfo parser reads the DSN (keyword/value or URI form).
"""

from __future__ import annotations

from urllib.parse import quote

from psycopg.conninfo import conninfo_to_dict

from mcp_suite import SERVER_NAME, __version__

__all__ = ["APPLICATION_NAME", "database_name", "log_prefix", "schema_uri", "the_database"]

APPLICATION_NAME = f"{SERVER_NAME}/{__version__}"


def database_name(dsn: str) -> str:
    """The database a DSN names (for the schema resource URI), without connecting."""
    params = conninfo_to_dict(dsn)
    return str(params.get("dbname") or params.get("user") or "postgres")


def schema_uri(dsn: str) -> str:
    return f"postgres://{quote(database_name(dsn), safe='')}/schema"


def log_prefix(source: str | None) -> str:
    """The start of every log line about one source: `read_only_sql: source 'hr': ` with a
    configuration file's sources (`source` its name), `read_only_sql: ` for `MCP_SQL_DSN`'s one."""
    return "read_only_sql: " if source is None else f"read_only_sql: source {source!r}: "


def the_database(source: str | None) -> str:
    """A log line's words for the source's database: `the database of MCP_SQL_DSN` for its one
    source, `the database` after a prefix naming a file's source."""
    return "the database of MCP_SQL_DSN" if source is None else "the database"
