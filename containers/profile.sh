# shellcheck shell=bash
# The hardened run profile of docs/operations/, in one place for containers/run.sh and containers/smoke.sh
# (containers/compose.yaml repeats it; `containers/smoke.sh --offline` checks both). Sourced, not run.
#
#   --read-only            the image's root file system, the venv included, cannot be written
#   --cap-drop ALL         no Linux capabilities at all (the server needs none)
#   no-new-privileges      execve can never gain privileges (setuid bits are also stripped)
#   --network none         no network namespace beyond loopback: no egress, no exfiltration (stdio;
#                          the HTTP mode has a network and publishes its one port: see below)
#   --tmpfs /tmp ...       the only writable place: 16 MiB, noexec, nosuid
#   --pids-limit 64        bounded threads/processes (trio worker threads count here)
#   --memory 256m          bounded memory, no swap beyond the engine default
#   --cpus 1               one CPU
#   --user 10001:10001     never root, even if the image's USER were changed
#   SIGTERM, 10 s          the server drains for MCP_DRAIN_GRACE_S (5 s), the engine waits 10 s
#   --ulimit nofile, nproc 1024 descriptors, 1024 processes of uid 10001: explicit, because podman
#                          (as root) otherwise asks the runtime for 1048576 of each, which a host whose
#                          own limits are lower (no CAP_SYS_RESOURCE, as in some sandboxes and CI
#                          machines) refuses: "error setting rlimit type 7", exit 126. Lower limits
#                          are always settable, so the same flags work everywhere, docker included.
# The project's podman settings (runc, no default ulimits: crun cannot set up the cgroups of some
# kernels, the CI machine's among them), unless the caller chose a file or runc is not installed.
if [[ -z "${CONTAINERS_CONF:-}" ]] && command -v runc >/dev/null; then
    export CONTAINERS_CONF
    CONTAINERS_CONF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/containers.conf"
fi
MCP_SUITE_IMAGE="${MCP_SUITE_IMAGE:-localhost/mcp-suite:latest}"
MCP_LOCAL_BASE_IMAGE="${MCP_LOCAL_BASE_IMAGE:-localhost/mcp-suite-base:bookworm}"
MCP_STOP_TIMEOUT_S="${MCP_STOP_TIMEOUT_S:-10}"
# Used by the scripts that source this file; the commas are tmpfs options, not array separators.
# shellcheck disable=SC2034,SC2054
MCP_HARDENING=(
    --read-only
    --cap-drop ALL
    --security-opt no-new-privileges
    --tmpfs /tmp:rw,noexec,nosuid,size=16m
    --pids-limit 64
    --memory 256m
    --cpus 1
    --user 10001:10001
    --stop-signal SIGTERM
    --stop-timeout "$MCP_STOP_TIMEOUT_S"
    --ulimit nofile=1024:1024
    --ulimit nproc=1024:1024
)
# stdio (the default): no network at all.
# shellcheck disable=SC2034
MCP_PROFILE=("${MCP_HARDENING[@]}" --network none)
# HTTP (`containers/run.sh http`): the same hardening; a network instead of none, because the port
# must be reachable and the issuer's key set fetched (docs/operations/remote.md), and that one port
# published, on the host's loopback unless MCP_CONTAINER_PUBLISH says otherwise
# (host-address:port, or a port alone for every address of the host).
MCP_CONTAINER_NETWORK="${MCP_CONTAINER_NETWORK:-bridge}"
MCP_CONTAINER_PUBLISH="${MCP_CONTAINER_PUBLISH:-127.0.0.1:8000}"
# shellcheck disable=SC2034
MCP_PROFILE_HTTP=("${MCP_HARDENING[@]}" --network "$MCP_CONTAINER_NETWORK" --publish "$MCP_CONTAINER_PUBLISH:8000")

# podman where it exists (with the project's containers.conf), else docker.
mcp_engine() {
    if [[ -n "${ENGINE:-}" ]]; then
        printf '%s\n' "$ENGINE"
    elif command -v podman >/dev/null; then
        printf 'podman\n'
    elif command -v docker >/dev/null; then
        printf 'docker\n'
    else
        printf 'containers: neither podman nor docker is installed\n' >&2
        return 1
    fi
}

# A digest of every file the build reads (the allowlist of Containerfile.dockerignore), stored as an
# image label so `make run-container` rebuilds exactly when the sources changed.
mcp_source_digest() {
    local root="$1"
    (
        cd "$root" &&
            find containers/Containerfile pyproject.toml requirements/runtime.txt requirements/dev.txt \
                mcp_suite -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 2>/dev/null |
            sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64
    )
}

# Docker builds with BuildKit when it can: buildx, or the BuildKit inside Docker 20.10 behind
# DOCKER_BUILDKIT=1. Debian's docker.io CLI without either has only the legacy builder, which knows
# neither `--secret`, nor `RUN --mount`, nor a Containerfile's own .dockerignore.
mcp_docker_buildkit() {
    docker buildx version >/dev/null 2>&1 && return 0
    DOCKER_BUILDKIT=1 docker build --help 2>&1 | grep -q -- '--secret'
}

# Copy the build's allowlist (what Containerfile.dockerignore lets in) to the directory $2, so every
# builder, docker's legacy one included, gets the same small context.
mcp_stage_context() {
    local root="$1" dest="$2"
    (
        cd "$root" &&
            find pyproject.toml README* LICENSE* requirements/runtime.txt requirements/dev.txt mcp_suite \
                -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 2>/dev/null |
            tar --null -T - -cf - | tar -xf - -C "$dest"
    )
}

# The CA bundle the builder's pip trusts, or nothing: the host's by default, so the builder trusts
# exactly what the host trusts (needed behind a TLS-inspecting proxy; harmless elsewhere).
mcp_ca_bundle() {
    local ca="${MCP_BUILD_CA_BUNDLE:-${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}}"
    [[ -n "$ca" && -s "$ca" ]] && printf '%s\n' "$ca"
    return 0
}

# Build $MCP_SUITE_IMAGE from the checkout at $1 on base image $2 (logs to stderr only: stdout is the
# MCP stream for run.sh). A CA bundle for a TLS-inspecting proxy goes in as a build secret where the
# builder has secrets (podman, BuildKit); docker's legacy builder builds without it.
mcp_build_image() {
    local root="$1" base="$2" engine digest stage status=0 secrets=1
    engine="$(mcp_engine)"
    digest="$(mcp_source_digest "$root")"
    local file="$root/containers/Containerfile" context="$root"
    local args=(build -t "$MCP_SUITE_IMAGE" --label "org.mcp-suite.source-digest=$digest")
    stage=""
    if [[ "$engine" == podman ]]; then
        args+=(--ignorefile "$root/containers/Containerfile.dockerignore")
    else
        stage="$(mktemp -d "${TMPDIR:-/tmp}/mcp-suite-context.XXXXXX")"
        mcp_stage_context "$root" "$stage"
        context="$stage"
        # The build's pip reaches the package index even when the daemon runs without a bridge.
        args+=(--network host)
        if mcp_docker_buildkit; then
            docker buildx version >/dev/null 2>&1 || export DOCKER_BUILDKIT=1
        else
            # The legacy builder has no secret mounts: the CA bundle (public certificates) is copied
            # into the builder stage where the mount would be, and removed by the strip step, so it
            # is absent from the shipped image's one layer.
            printf 'containers: docker has no BuildKit: the legacy builder\n' >&2
            secrets=0
            local copy_ca=""
            if [[ -n "$(mcp_ca_bundle)" ]]; then
                cp "$(mcp_ca_bundle)" "$stage/pip_cert"
                copy_ca='COPY pip_cert /run/secrets/pip_cert\n'
            fi
            sed "s|^RUN --mount=type=secret,id=pip_cert |${copy_ca}RUN |" "$file" >"$stage/Containerfile"
            file="$stage/Containerfile"
        fi
    fi
    args+=(-f "$file")
    [[ -n "$base" ]] && args+=(--build-arg "BASE_IMAGE=$base")
    [[ $secrets -eq 1 && -n "$(mcp_ca_bundle)" ]] && args+=(--secret "id=pip_cert,src=$(mcp_ca_bundle)")
    "$engine" "${args[@]}" "$context" >&2 || status=$?
    [[ -n "$stage" ]] && rm -rf "$stage"
    return "$status"
}

# True when the image exists and was built from the current sources.
mcp_image_current() {
    local root="$1" engine have
    engine="$(mcp_engine)"
    have="$("$engine" image inspect --format '{{ index .Config.Labels "org.mcp-suite.source-digest" }}' \
        "$MCP_SUITE_IMAGE" 2>/dev/null)" || return 1
    [[ "$have" == "$(mcp_source_digest "$root")" ]]
}

# The base image to build on: $MCP_BASE_IMAGE if set ("default" = the Containerfile's digest-pinned
# official image); else, as root with debootstrap available, the local Debian base (built
# once, then cached); else the Containerfile's default.
mcp_base_image() {
    local root="$1"
    if [[ -n "${MCP_BASE_IMAGE:-}" ]]; then
        [[ "$MCP_BASE_IMAGE" == default ]] || printf '%s\n' "$MCP_BASE_IMAGE"
        return 0
    fi
    if [[ $(id -u) -eq 0 ]] && command -v debootstrap >/dev/null; then
        ENGINE="$(mcp_engine)" MCP_LOCAL_BASE_IMAGE="$MCP_LOCAL_BASE_IMAGE" "$root/containers/build-base.sh" >&2 ||
            return 1
        printf '%s\n' "$MCP_LOCAL_BASE_IMAGE"
    fi
}
