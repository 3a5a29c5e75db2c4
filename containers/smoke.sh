#!/usr/bin/env bash
# Smoke test of the hardened container (docs/operations/), on this machine, with no image registry:
#
#   containers/smoke.sh            the full test: engine tools, local base image (debootstrap, cached),
#                                  image build, then containers/smoke_driver.py (profile probe, MCP
#                                  over container stdio via run.sh and via the compose file, sandbox
#                                  escapes, SIGTERM drain)
#   containers/smoke.sh --offline  only the static check of Containerfile, compose.yaml and the run
#                                  flags (containers/check_profile.py): no engine, no network
#
# Full mode needs root with podman, runc and debootstrap (CI installs them from Debian's packages:
# see docs/operations/container.md). read_only_sql is exercised against the demo PostgreSQL when the
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
trap 'rm -rf "$work"' EXIT
say() { printf '\nsmoke: %s\n' "$*"; }

say "$engine $("$engine" --version | awk '{print $NF}'), runtime $(command -v runc || echo '?')"

# podman-compose from the hash-locked containers/tools.txt, in its own venv (Debian's 1.0.3 drops
# pids_limit and ignores network_mode: none).
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
[[ "$engine" == docker ]] && compose=(docker compose)

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

status=0
# The driver runs on the project's venv when there is one (`make venv`): it then starts the demo
# PostgreSQL (docs/tools/read_only_sql.md) and exercises read_only_sql through a mounted Unix socket.
driver_py="$py"
sql_flag=()
[[ -x "$root/.venv/bin/python" ]] && driver_py="$root/.venv/bin/python"
[[ "${MCP_SMOKE_SQL:-1}" == 0 ]] && sql_flag=(--no-sql)
"$driver_py" "$here/smoke_driver.py" --engine "$engine" --image "$MCP_SUITE_IMAGE" --work "$work" \
    "${sql_flag[@]}" --compose "${compose[@]}" -- "${MCP_PROFILE[@]}" || status=$?
say "total $((SECONDS - t0)) s"
exit "$status"
