#!/bin/sh
# PgBouncer for containers/compose.http.yaml: write its configuration from the environment to /tmp
# (the only writable place: the root is read-only) and run it in the foreground as this user.
#
#   MCP_STACK_PG_HOST     PostgreSQL's host name or address, or a Unix socket folder (required)
#   MCP_STACK_PG_PORT     its port (5432)
#   MCP_STACK_PG_DBNAME   the database the replicas use (required; the only one served)
#   MCP_STACK_PG_SSLMODE  PgBouncer's TLS to PostgreSQL: disable, prefer (default), require,
#                         verify-ca, verify-full (checked against the system CA bundle)
#   MCP_STACK_POOL_SIZE   server connections per user and database, shared by every replica (8)
#
# Clients and PgBouncer authenticate with scram-sha-256; the passwords are in the userlist mounted
# read-only at /run/secrets/userlist ("user" "password" lines, PgBouncer's auth_file format). Transaction
# pooling: a replica's session is never pinned to a backend (docs/operations/deployments.md).
set -eu
if [ -z "${MCP_STACK_PG_HOST:-}" ] || [ -z "${MCP_STACK_PG_DBNAME:-}" ]; then
    echo "mcp-pgbouncer: MCP_STACK_PG_HOST (PostgreSQL's host) and MCP_STACK_PG_DBNAME (the replicas' database) are required" >&2
    exit 78
fi
case "$MCP_STACK_PG_HOST$MCP_STACK_PG_DBNAME${MCP_STACK_PG_PORT:-}${MCP_STACK_POOL_SIZE:-}" in
*[!A-Za-z0-9._/-]*)
    echo "mcp-pgbouncer: MCP_STACK_PG_HOST, _PORT, _DBNAME and MCP_STACK_POOL_SIZE take letters, digits, . _ / - only" >&2
    exit 78
    ;;
esac
case "${MCP_STACK_PG_SSLMODE:-prefer}" in
disable | allow | prefer | require | verify-ca | verify-full) ;;
*)
    echo "mcp-pgbouncer: MCP_STACK_PG_SSLMODE must be one of disable, allow, prefer, require, verify-ca, verify-full" >&2
    exit 78
    ;;
esac
[ -r /run/secrets/userlist ] || {
    echo "mcp-pgbouncer: no readable userlist at /run/secrets/userlist (mount it read-only, owned by 10001, mode 0600)" >&2
    exit 78
}
umask 077
cat >/tmp/pgbouncer.ini <<INI
[databases]
$MCP_STACK_PG_DBNAME = host=$MCP_STACK_PG_HOST port=${MCP_STACK_PG_PORT:-5432} dbname=$MCP_STACK_PG_DBNAME

[pgbouncer]
listen_addr = 0.0.0.0
listen_port = 6432
unix_socket_dir =
auth_type = scram-sha-256
auth_file = /run/secrets/userlist
pool_mode = transaction
default_pool_size = ${MCP_STACK_POOL_SIZE:-8}
min_pool_size = 0
reserve_pool_size = 0
server_idle_timeout = 600
max_client_conn = 500
server_tls_sslmode = ${MCP_STACK_PG_SSLMODE:-prefer}
server_tls_ca_file = /etc/ssl/certs/ca-certificates.crt
logfile =
pidfile =
INI
exec /usr/sbin/pgbouncer /tmp/pgbouncer.ini
