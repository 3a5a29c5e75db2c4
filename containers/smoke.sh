#!/usr/bin/env bash
# Smoke test of the hardened container (docs/operations/), on this machine, with no image registry:
#
#   containers/smoke.sh            the full test: engine tools, local base image (debootstrap, cached),
#                                  image build, then containers/smoke_driver.py (profile probe, MCP
#                                  over container stdio via run.sh and via the compose file, sandbox
#                                  escapes, SIGTERM drain; then, with podman, the HTTP stack of
#                                  compose.http.yaml and `run.sh http`: containers/smoke_http.py)
#   containers/smoke.sh --offline  only the static check of the Containerfiles, the compose files and
#                                  the run flags (containers/check_profile.py): no engine, no network
#
# Full mode needs root with podman, runc, debootstrap and iptables, which podman's network backend
# (netavark) runs for every bridge network, the image build's included (CI installs them from
# Debian's packages: see docs/operations/container.md). read_only_sql is exercised against the demo PostgreSQL when the
# project's venv exists: the cluster listens on loopback TCP, which --network none cannot reach, so
# the driver relays a Unix socket to it and mounts that socket into the container. Without the venv
# the test checks that read_only_sql is not registered (no DSN).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
py="${PYTHON:-python3}"

"$py" "$here/check_profile.py"
[[ "${1:-}" == "--offline" ]] && exit 0

# shellcheck source=containers/profile.sh
source "$here/profile.sh"
engine="$(mcp_engine)"
t0=$SECONDS
work="$(mktemp -d "${TMPDIR:-/tmp}/mcp-suite-smoke.XXXXXX")"
docker_daemon=""
# The HTTP stack's compose project: unique, so a parallel run's containers are never touched, and
# removed by its label at exit whatever happened to the driver.
http_project="mcp-smoke-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
cleanup() {
    if [[ "${engine:-}" == podman ]]; then
        local left
        left="$(podman ps -aq --filter "label=io.podman.compose.project=$http_project" 2>/dev/null || true)"
        # shellcheck disable=SC2086  # container ids, one word each
        [[ -n "$left" ]] && podman rm -f -t 5 $left >/dev/null 2>&1
        left="$(podman network ls -q --filter "label=io.podman.compose.project=$http_project" 2>/dev/null || true)"
        # shellcheck disable=SC2086  # network names, one word each
        [[ -n "$left" ]] && podman network rm -f $left >/dev/null 2>&1
    fi
    if [[ -n "$docker_daemon" ]]; then
        kill "$docker_daemon" 2>/dev/null || true
        wait "$docker_daemon" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
say() { printf '\nsmoke: %s\n' "$*"; }

# Docker, when asked (ENGINE=docker): a daemon must answer. As root with none running, this starts
# Debian's (installing docker.io and docker-compose if dockerd is missing, as CI does for podman) on
# a private socket, with no iptables rules and no bridge: the profile's --network none needs
# neither, and the machine's network is left as it was. It is stopped at exit.
start_docker() {
    docker info >/dev/null 2>&1 && return 0
    if [[ $(id -u) -ne 0 ]]; then
        say "FAIL: no docker daemon answers; start one, or run this as root to start Debian's"
        exit 1
    fi
    if ! command -v dockerd >/dev/null; then
        say "installing Debian's docker.io and docker-compose"
        apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io docker-compose >/dev/null
    fi
    local run=/run/mcp-suite-docker
    mkdir -p "$run"
    export DOCKER_HOST="unix://$run/docker.sock"
    dockerd --host "$DOCKER_HOST" --data-root /var/lib/mcp-suite-docker --exec-root "$run/exec" \
        --pidfile "$run/dockerd.pid" --iptables=false --ip6tables=false --bridge=none \
        >"$work/dockerd.log" 2>&1 &
    docker_daemon=$!
    for _ in $(seq 1 150); do
        docker info >/dev/null 2>&1 && { say "started dockerd (pid $docker_daemon) on $DOCKER_HOST"; return 0; }
        sleep 0.2
    done
    tail -n 20 "$work/dockerd.log"
    say "FAIL: dockerd did not start (its log is above)"
    exit 1
}
[[ "$engine" == docker ]] && start_docker

say "$engine $("$engine" --version | awk '{print $NF}'), runtime $(command -v runc || echo '?')"
if [[ "$engine" == podman ]] && ! PATH="$PATH:/usr/sbin:/sbin" command -v iptables >/dev/null; then
    # Otherwise the first build step fails with only "netavark: No such file or directory".
    say "FAIL: podman's network backend needs iptables (Debian's package iptables)"
    exit 1
fi

# podman-compose from the hash-locked containers/tools.txt, in its own venv (Debian's 1.0.3 drops
# pids_limit and ignores network_mode: none).
compose=()
compose_missing=""
if [[ "$engine" == podman ]]; then
    tools="$root/.cache/container-tools"
    if [[ ! -x "$tools/bin/podman-compose" ]] || ! cmp -s "$here/tools.txt" "$tools/tools.txt"; then
        say "installing podman-compose (containers/tools.txt) into .cache/container-tools"
        rm -rf "$tools"
        "$py" -m venv "$tools"
        "$tools/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes \
            --no-deps -r "$here/tools.txt"
        cp "$here/tools.txt" "$tools/tools.txt"
    fi
    compose=("$tools/bin/podman-compose")
fi
if [[ "$engine" == docker ]]; then
    if docker compose version >/dev/null 2>&1; then
        compose=(docker compose)
    elif command -v docker-compose >/dev/null; then
        compose=(docker-compose)
    else
        compose=()
        compose_missing="no compose for docker: neither the 'docker compose' plugin nor docker-compose is installed (Debian: apt-get install docker-compose)"
    fi
fi

tb=$SECONDS
base="$(mcp_base_image "$root")"
say "base image: ${base:-the Containerfile default} ($((SECONDS - tb)) s)"

say "building $MCP_SUITE_IMAGE"
tb=$SECONDS
if ! mcp_build_image "$root" "$base" >"$work/build.log" 2>&1; then
    tail -n 40 "$work/build.log"
    say "FAIL: the image did not build"
    exit 1
fi
grep -E '^(\[[0-9]/[0-9]\] STEP|Successfully)' "$work/build.log" | cut -c1-110 || true
# Older builds' images and layers (dangling) go; the last hour's stay as the build cache.
"$engine" image prune -f --filter until=1h >/dev/null 2>&1 || true
say "image built in $((SECONDS - tb)) s; size: $("$engine" image inspect --format '{{.Size}}' \
    "$MCP_SUITE_IMAGE" | awk '{printf "%.1f MB (%d bytes)", $1 / 1e6, $1}'); layers: $("$engine" image \
    inspect --format '{{len .RootFS.Layers}}' "$MCP_SUITE_IMAGE")"

# The HTTP stack's two helper images (containers/Containerfile.stack), on the same base; each is a
# cached apt layer after its first build.
http_flag=()
if [[ "$engine" == podman ]]; then
    tb=$SECONDS
    for target in pgbouncer haproxy; do
        build_args=(build -f "$here/Containerfile.stack" --target "$target" -t "localhost/mcp-suite-$target:latest")
        [[ -n "$base" ]] && build_args+=(--build-arg "BASE_IMAGE=$base")
        if ! podman "${build_args[@]}" "$here" >"$work/build-$target.log" 2>&1; then
            tail -n 30 "$work/build-$target.log"
            say "FAIL: the $target image did not build"
            exit 1
        fi
    done
    say "stack images built in $((SECONDS - tb)) s: $(podman image inspect --format '{{.Size}}' \
        localhost/mcp-suite-pgbouncer:latest localhost/mcp-suite-haproxy:latest |
        awk '{printf "%s%.1f MB", (NR > 1 ? ", " : ""), $1 / 1e6}') (pgbouncer, haproxy)"
    http_flag=(--http-project "$http_project")
else
    # The private dockerd started above has no bridge and no iptables (--bridge=none): it cannot
    # publish a port, so the HTTP stack is podman's part of this test.
    say "the HTTP stack is run with podman only (this dockerd has no bridge network)"
fi

status=0
# The driver runs on the project's venv when there is one (`make venv`): it then starts the demo
# PostgreSQL (docs/tools/read_only_sql.md) and exercises read_only_sql through a mounted Unix socket.
driver_py="$py"
sql_flag=()
[[ -x "$root/.venv/bin/python" ]] && driver_py="$root/.venv/bin/python"
[[ "${MCP_SMOKE_SQL:-1}" == 0 ]] && sql_flag=(--no-sql)
"$driver_py" "$here/smoke_driver.py" --engine "$engine" --image "$MCP_SUITE_IMAGE" --work "$work" \
    "${sql_flag[@]}" "${http_flag[@]}" --compose "${compose[@]}" -- "${MCP_PROFILE[@]}" || status=$?
# Every container snippet of docs/operations/clients.md, as printed, as a client starts it (without
# this script's CONTAINERS_CONF): tests/e2e/test_client_snippets.py, which `make test` runs for the
# other snippets. It needs the project's venv (the MCP SDK and pytest).
say "the container snippets of docs/operations/clients.md"
if [[ -x "$root/.venv/bin/python" ]]; then
    (cd "$root" && env -u CONTAINERS_CONF MCP_SUITE_IMAGE="$MCP_SUITE_IMAGE" .venv/bin/python -m pytest \
        -p no:cacheprovider -q -m container tests/e2e/test_client_snippets.py) || status=1
else
    say "FAIL: the docs' container snippets were not tried: no .venv (make venv)"
    status=1
fi
if [[ -n "$compose_missing" ]]; then
    say "FAIL: the compose file was not tried: $compose_missing"
    status=1
fi
say "total $((SECONDS - t0)) s"
exit "$status"
