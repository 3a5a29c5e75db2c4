"""The demo's databases and roles, and the seed that makes them (docs/tools/read_only_sql.md):
mcp_demo (`seed.sql`: schemas docs and reports, NOLOGIN owner docs_owner, reader mcp_reader) and
mcp_ops (`seed_ops.sql`: schema ops, NOLOGIN owner ops_owner, reader mcp_ops_reader), each reader
allowed to connect to its own database only. Runs SQL as the bootstrap superuser through psycopg;
starts no server (`cluster.py` does, and calls `seed_cluster` once, when it creates one).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from mcp_suite.demo.cluster import Cluster

__all__ = [
    "ADMIN_USER",
    "DEMO_DB",
    "OPS_DB",
    "OPS_OWNER_ROLE",
    "OPS_READER_POOL",
    "OPS_READER_USER",
    "OWNER_ROLE",
    "READER_POOL",
    "READER_USER",
    "seed_cluster",
    "seed_digest",
]

ADMIN_USER: Final = "devdb_admin"  # bootstrap superuser (password, TCP only)
OWNER_ROLE: Final = "docs_owner"  # NOLOGIN owner of the demo database, schema and tables
READER_USER: Final = "mcp_reader"  # the login role the MCP server uses
DEMO_DB: Final = "mcp_demo"
# The demo's second database (`make run` serves both, docs/configuration.md "Several databases"):
# its own NOLOGIN owner and its own least-privilege reader, audited as mcp_reader is.
OPS_DB: Final = "mcp_ops"
OPS_OWNER_ROLE: Final = "ops_owner"
OPS_READER_USER: Final = "mcp_ops_reader"
# Each reader's CONNECTION LIMIT is its source's pool plus the audit's own connection
# (docs/tools/postgres-role-guide.sql): mcp_reader's pool is the default 4, mcp_ops_reader's 2.
READER_POOL: Final = 4
OPS_READER_POOL: Final = 2

_SEED_PATH: Final = Path(__file__).parent / "seed.sql"
_OPS_SEED_PATH: Final = Path(__file__).parent / "seed_ops.sql"


def seed_digest() -> str:
    """The SHA-256 of seed.sql and seed_ops.sql: a cluster seeded from another version (one from
    before the second database included) is made again for the demo."""
    digest = hashlib.sha256()
    for path in (_SEED_PATH, _OPS_SEED_PATH):
        data = path.read_bytes()
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def seed_cluster(cluster: Cluster) -> None:
    """Seed (docs/tools/read_only_sql.md): mcp_demo (schemas docs and reports, NOLOGIN owner
    docs_owner, mcp_reader) and mcp_ops (schema ops, NOLOGIN owner ops_owner, mcp_ops_reader).
    Each reader may connect to its own database only."""
    import psycopg
    from psycopg import sql

    databases = (
        (DEMO_DB, OWNER_ROLE, READER_USER, READER_POOL, cluster.reader_password, _SEED_PATH),
        (
            OPS_DB,
            OPS_OWNER_ROLE,
            OPS_READER_USER,
            OPS_READER_POOL,
            cluster.ops_reader_password,
            _OPS_SEED_PATH,
        ),
    )
    with psycopg.connect(
        cluster.dsn(ADMIN_USER, cluster.admin_password, "postgres"), autocommit=True
    ) as conn:
        for db, owner, reader, pool, password, _ in databases:
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(owner)))
            conn.execute(
                sql.SQL(
                    "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT "
                    "NOREPLICATION NOBYPASSRLS CONNECTION LIMIT {} PASSWORD {}"
                ).format(sql.Identifier(reader), sql.Literal(pool + 1), sql.Literal(password))
            )
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(db), sql.Identifier(owner))
            )
        # PUBLIC loses CONNECT everywhere; each reader may connect to its own database only.
        for db in ("postgres", "template1", *(database[0] for database in databases)):
            conn.execute(
                sql.SQL("REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC").format(sql.Identifier(db))
            )
        for db, _, reader, _, _, _ in databases:
            conn.execute(
                sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                    sql.Identifier(db), sql.Identifier(reader)
                )
            )
    for db, _, _, _, _, seed in databases:
        with psycopg.connect(cluster.dsn(ADMIN_USER, cluster.admin_password, db), autocommit=True) as conn:
            conn.execute(seed.read_bytes())  # no parameters: one simple-query message
