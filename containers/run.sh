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
#   MCP_*                   every setting of the server that is set (docs/configuration.md) is passed
#                           on by name (`-e NAME`: no value on a command line), so the container runs
#                           what the server runs; a misspelt one is refused by the server inside as
#                           it is outside (exit 78). Not passed: this script's own variables below,
#                           MCP_SAFE_DATA_DIR (the image's /safe_data_dir: use MCP_SAFE_DATA_HOST_DIR)
#                           and, in the HTTP mode, MCP_HTTP_HOST and MCP_HTTP_PORT (inside the
#                           container it listens on 0.0.0.0:8000).
#   MCP_CONFIG              the configuration file (several databases, identity maps): mounted
#                           read-only at the same path, with each source's password_file; each
#                           password_env variable it names is passed on by name. Paths absolute.
#   MCP_SAFE_DATA_HOST_DIR  folder served read-only as /safe_data_dir (default: examples/safe_data
#                           when it exists; otherwise the tool serves an empty folder)
#   MCP_SQL_DSN             with --network none only a Unix-socket DSN works,
#   MCP_PG_SOCKET_DIR       ...from this host directory, mounted read-only at the same path
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

# The configuration file and what it names, read as the server reads it (TOML): its password files
# (mounted read-only at the same paths) and its password variables (passed on by name).
config_mounts=()
config_env=()
if [[ -n "${MCP_CONFIG:-}" ]]; then
    if [[ "$MCP_CONFIG" != /* || ! -r "$MCP_CONFIG" || ! -f "$MCP_CONFIG" ]]; then
        printf 'run-container: MCP_CONFIG=%s: an absolute path to a file this user can read\n' "$MCP_CONFIG" >&2
        exit 78
    fi
    if ! named="$(python3 - "$MCP_CONFIG" 2>&1 <<'PY'
import sys, tomllib
try:
    with open(sys.argv[1], "rb") as f:
        document = tomllib.load(f)
except (OSError, tomllib.TOMLDecodeError) as exc:
    sys.exit(f"not TOML ({exc})")
for table in document.get("sources", []) if isinstance(document.get("sources"), list) else []:
    if not isinstance(table, dict):
        continue
    path, variable = table.get("password_file"), table.get("password_env")
    if isinstance(path, str):
        if not path.startswith("/") or "\n" in path or ":" in path:
            sys.exit(f"password_file {path!r}: an absolute path without ':' (it is mounted at the same path)")
        print("file", path)
    if isinstance(variable, str) and variable.isidentifier():
        print("env", variable)
PY
)"; then
        printf 'run-container: MCP_CONFIG=%s: %s\n' "$MCP_CONFIG" "${named##*$'\n'}" >&2
        exit 78
    fi
    # The server runs as 10001:10001 inside: a file it cannot read stops it there, so say so here.
    # (Rootful engine: host ids are the container's. Rootless podman maps them: `podman unshare
    # chown 10001:10001 FILE` gives it to the container's user.)
    readable_inside() {
        local uid gid mode
        read -r uid gid mode < <(stat -L -c '%u %g %a' "$1")
        mode=$((8#$mode))
        (( (uid == 10001 && mode & 0400) || (gid == 10001 && mode & 0040) || mode & 0004 ))
    }
    # A password file must be its owner's alone (the server refuses one its group or others may
    # read, as libpq does): inside, that owner is the container's user.
    owned_inside() {
        local uid mode
        read -r uid mode < <(stat -L -c '%u %a' "$1")
        mode=$((8#$mode))
        (( uid == 10001 && mode & 0400 ))
    }
    secrets=()
    config_mounts+=(-v "$MCP_CONFIG:$MCP_CONFIG:ro")
    config_env+=(MCP_CONFIG)
    mounted=("$MCP_CONFIG")
    while read -r kind value; do
        case "$kind" in
            file)
                if [[ ! -r "$value" ]]; then
                    printf 'run-container: MCP_CONFIG=%s: password_file %s cannot be read by this user\n' \
                        "$MCP_CONFIG" "$value" >&2
                    exit 78
                fi
                config_mounts+=(-v "$value:$value:ro")
                secrets+=("$value")
                ;;
            env) config_env+=("$value") ;;
        esac
    done <<<"$named"
    if [[ $(id -u) -eq 0 || "$engine" == docker ]]; then
        for file in "${mounted[@]}"; do
            if ! readable_inside "$file"; then
                printf '%s\n' >&2 \
                    "run-container: $file cannot be read by the container's user 10001: chgrp 10001 it and chmod g+r (mode 0640), or chown 10001 it"
                exit 78
            fi
        done
        for file in "${secrets[@]}"; do
            if ! owned_inside "$file"; then
                printf '%s\n' >&2 \
                    "run-container: the password file $file must be the container's user's alone: chown 10001 it and chmod 600 it"
                exit 78
            fi
        done
    fi
fi

if [[ "${MCP_SKIP_BUILD:-0}" == 1 ]]; then
    : # the caller built (and tests) exactly this image: containers/smoke.sh
elif [[ "${MCP_REBUILD:-0}" == 1 ]] || ! mcp_image_current "$root"; then
    base="$(mcp_base_image "$root")"
    # Without root (debootstrap) and without MCP_BASE_IMAGE, the local base must exist already, or
    # the build would end in the engine's raw registry error for the Containerfile's default.
    if [[ -z "$base" && -z "${MCP_BASE_IMAGE:-}" ]]; then
        if "$engine" image inspect "$MCP_LOCAL_BASE_IMAGE" >/dev/null 2>&1; then
            base="$MCP_LOCAL_BASE_IMAGE"
        else
            printf '%s\n' >&2 \
                "run-container: no base image: build $MCP_LOCAL_BASE_IMAGE once as root (sudo ENGINE=$engine containers/build-base.sh, needs debootstrap; rootless podman then: sudo podman save $MCP_LOCAL_BASE_IMAGE | podman load), or set MCP_BASE_IMAGE=default to pull the Containerfile's pinned image from its registry (docs/operations/container.md#the-base-image)"
            exit 69
        fi
    fi
    printf 'run-container: building %s\n' "$MCP_SUITE_IMAGE" >&2
    mcp_build_image "$root" "$base"
fi

if [[ "$mode" == http ]]; then
    # Inside its own network namespace the server must listen on the container's interface for the
    # published port to reach it; the host side of that port is MCP_CONTAINER_PUBLISH (loopback).
    args=(run --rm --log-driver none "${MCP_PROFILE_HTTP[@]}" -e MCP_HTTP_HOST=0.0.0.0 -e MCP_HTTP_PORT=8000)
    own=(MCP_HTTP_HOST MCP_HTTP_PORT)
else
    args=(run --rm -i --log-driver none "${MCP_PROFILE[@]}")
    own=()
fi
# This script's own variables (and the image's data folder) stay here; every other MCP_* goes in.
own+=(MCP_CONFIG MCP_SAFE_DATA_DIR MCP_SAFE_DATA_HOST_DIR MCP_PG_SOCKET_DIR MCP_CONTAINER_PUBLISH
    MCP_CONTAINER_NETWORK MCP_CONTAINER_NAME MCP_BASE_IMAGE MCP_LOCAL_BASE_IMAGE MCP_SUITE_IMAGE
    MCP_REBUILD MCP_SKIP_BUILD MCP_STOP_TIMEOUT_S MCP_BUILD_CA_BUNDLE)
passed=("${config_env[@]}")
for name in $(compgen -e MCP_); do
    [[ " ${own[*]} " == *" $name "* ]] || passed+=("$name")
done
args+=("${config_mounts[@]}")
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
