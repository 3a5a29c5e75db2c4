#!/usr/bin/env bash
# `make run-container`: build the hardened image if it is missing or stale, then serve MCP inside it
# with the full profile of containers/profile.sh.
#
#   containers/run.sh [stdio]   (default) MCP on stdio, --network none. stdout carries only the MCP
#                               stream (every build log goes to stderr), so an MCP client can use this
#                               script as its server command.
#   containers/run.sh http      (`make run-container-http`) `mcp-suite serve-http` with the same
#                               hardening, on a network, its one port published on the host's
#                               127.0.0.1:8000 unless MCP_CONTAINER_PUBLISH says otherwise. Bearer
#                               tokens are required (MCP_HTTP_AUTH=none is loopback-only and the
#                               server listens on the container's interface): set MCP_HTTP_RESOURCE_URI,
#                               MCP_HTTP_ISSUER and MCP_HTTP_JWKS_URL (docs/operations/remote.md).
#
# Environment (all optional):
#   MCP_SAFE_DATA_HOST_DIR  folder served read-only as /safe_data_dir (default: examples/safe_data
#                           when it exists; otherwise the tool serves an empty folder)
#   MCP_SQL_DSN             passed to the server; with --network none only a Unix-socket DSN works,
#   MCP_PG_SOCKET_DIR       ...from this host directory, mounted read-only at the same path
#   MCP_SQL_POOLER          passed to the server: `transaction` behind PgBouncer (docs/configuration.md)
#   MCP_HTTP_*              (http) every one that is set is passed to the server, except MCP_HTTP_HOST
#                           and MCP_HTTP_PORT: inside the container it listens on 0.0.0.0:8000
#   MCP_CONTAINER_PUBLISH   (http) the host address and port to publish, default 127.0.0.1:8000
#   MCP_CONTAINER_NETWORK   (http) the network to join, default the engine's bridge; one where the
#                           issuer's key set and the database are reachable
#   MCP_BASE_IMAGE          base image for a build ("default": the Containerfile's pinned one)
#   MCP_SUITE_IMAGE, ENGINE (podman or docker), MCP_REBUILD=1 (force a build), MCP_SKIP_BUILD=1,
#   MCP_CONTAINER_NAME      a name for the container (so `podman stop NAME` can reach it)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
# shellcheck source=containers/profile.sh
source "$here/profile.sh"
engine="$(mcp_engine)"

# The inputs first, each refused in one line before anything slow or noisy starts.
mode="${1:-stdio}"
if [[ "$mode" != stdio && "$mode" != http ]] || [[ $# -gt 1 ]]; then
    printf 'run-container: usage: containers/run.sh [stdio|http]\n' >&2
    exit 64
fi
if [[ "$mode" == http && "${MCP_HTTP_AUTH:-jwt}" == none ]]; then
    printf '%s\n' >&2 \
        "run-container: MCP_HTTP_AUTH=none is for a loopback address only, and a container's server listens on its own interface: use bearer tokens (MCP_HTTP_RESOURCE_URI, MCP_HTTP_ISSUER, MCP_HTTP_JWKS_URL)"
    exit 78
fi
data="${MCP_SAFE_DATA_HOST_DIR:-}"
[[ -z "$data" && -d "$root/examples/safe_data" ]] && data="$root/examples/safe_data"
if [[ -n "$data" ]] && ! data="$(cd "$data" 2>/dev/null && pwd)"; then
    printf 'run-container: MCP_SAFE_DATA_HOST_DIR=%s is not a folder this user can enter\n' \
        "${MCP_SAFE_DATA_HOST_DIR:-$root/examples/safe_data}" >&2
    exit 78
fi
# Docker's CLI without its daemon would print its own banner at the first image command.
if [[ "$engine" == docker ]] && ! docker info --format '{{.ServerVersion}}' >/dev/null 2>&1; then
    printf '%s\n' >&2 \
        "run-container: the docker command cannot reach a Docker daemon: start it, or use podman (ENGINE=podman)"
    exit 69
fi

if [[ "${MCP_SKIP_BUILD:-0}" == 1 ]]; then
    : # the caller built (and tests) exactly this image: containers/smoke.sh
elif [[ "${MCP_REBUILD:-0}" == 1 ]] || ! mcp_image_current "$root"; then
    printf 'run-container: building %s\n' "$MCP_SUITE_IMAGE" >&2
    mcp_build_image "$root" "$(mcp_base_image "$root")"
fi

if [[ "$mode" == http ]]; then
    # Inside its own network namespace the server must listen on the container's interface for the
    # published port to reach it; the host side of that port is MCP_CONTAINER_PUBLISH (loopback).
    args=(run --rm --log-driver none "${MCP_PROFILE_HTTP[@]}" -e MCP_HTTP_HOST=0.0.0.0 -e MCP_HTTP_PORT=8000)
    passed=(MCP_SQL_DSN MCP_SQL_POOLER MCP_METRICS_ENABLED MCP_LOG_LEVEL MCP_CALL_DEADLINE_S MCP_DRAIN_GRACE_S)
    for name in $(compgen -e MCP_HTTP_); do
        [[ "$name" == MCP_HTTP_HOST || "$name" == MCP_HTTP_PORT ]] || passed+=("$name")
    done
else
    args=(run --rm -i --log-driver none "${MCP_PROFILE[@]}")
    passed=(MCP_SQL_DSN MCP_SQL_POOLER MCP_METRICS_ENABLED MCP_LOG_LEVEL MCP_CALL_DEADLINE_S MCP_DRAIN_GRACE_S)
fi
[[ -n "${MCP_CONTAINER_NAME:-}" ]] && args+=(--name "$MCP_CONTAINER_NAME")
[[ -n "$data" ]] && args+=(-v "$data:/safe_data_dir:ro")
for name in "${passed[@]}"; do
    # `-e NAME` without a value: the engine copies it from this environment, so a DSN or a token
    # setting never appears on a command line (ps would show it).
    [[ -n "${!name:-}" ]] && args+=(-e "$name")
done
if [[ -n "${MCP_PG_SOCKET_DIR:-}" ]]; then
    args+=(-v "$MCP_PG_SOCKET_DIR:$MCP_PG_SOCKET_DIR:ro")
fi
if [[ "$mode" == http ]]; then
    exec "$engine" "${args[@]}" "$MCP_SUITE_IMAGE" serve-http
fi
exec "$engine" "${args[@]}" "$MCP_SUITE_IMAGE"
