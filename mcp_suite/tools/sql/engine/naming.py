"""What `read_only_sql` calls things: the database a DSN names, the schema resource's URI, and the
`application_name` its connections carry (how a DBA finds them in `pg_stat_activity`).

No connection is made; psycopg's conninfo parser reads the DSN (keyword/value or URI form).
"""

from __future__ import annotations

from urllib.parse import quote

from psycopg.conninfo import conninfo_to_dict

from mcp_suite import SERVER_NAME, __version__

__all__ = ["APPLICATION_NAME", "database_name", "schema_uri"]

APPLICATION_NAME = f"{SERVER_NAME}/{__version__}"


def database_name(dsn: str) -> str:
    """The database a DSN names (for the schema resource URI), without connecting."""
    params = conninfo_to_dict(dsn)
    return str(params.get("dbname") or params.get("user") or "postgres")


def schema_uri(dsn: str) -> str:
    return f"postgres://{quote(database_name(dsn), safe='')}/schema"
