#!/usr/bin/env bash
# Build the local base image for containers/Containerfile from Debian's own packages, for machines
# where no image registry is reachable (docs/operations/: "the base image is a build argument, so the image
# also builds where no registry is reachable").
#
#   containers/build-base.sh [--force]
#
# debootstrap a minimal Debian (minbase + python3 + python3-venv), bring it up to date with the
# security suite, and import it (`podman import` or `docker import`) as $MCP_LOCAL_BASE_IMAGE (default localhost/mcp-suite-base:bookworm).
# The image is cached: if it already exists this does nothing (pass --force to rebuild).
#
# Environment: MCP_LOCAL_BASE_IMAGE, DEBIAN_SUITE (bookworm), DEBIAN_MIRROR (default: the first URI of the
# host's apt sources, else debootstrap's own default), ENGINE (podman or docker), CONTAINERS_CONF.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=containers/profile.sh
source "$here/profile.sh"
engine="${ENGINE:-podman}"
image="$MCP_LOCAL_BASE_IMAGE"
suite="${DEBIAN_SUITE:-bookworm}"
force=0
[[ "${1:-}" == "--force" ]] && force=1

log() { printf 'build-base: %s\n' "$*" >&2; }

if [[ $force -eq 0 ]] && "$engine" image inspect "$image" >/dev/null 2>&1; then
    log "$image exists (cached); pass --force to rebuild"
    exit 0
fi

command -v debootstrap >/dev/null || { log "debootstrap is missing (apt-get install debootstrap)"; exit 1; }
[[ $(id -u) -eq 0 ]] || { log "debootstrap needs root"; exit 1; }

# The mirror the host already uses for Debian, so nothing is hard-wired here.
host_uri() {
    local pattern="$1"
    {
        grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}'
        grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}'
    } | grep -E "$pattern" | head -n1 || true
}
mirror="${DEBIAN_MIRROR:-$(host_uri '/debian/?$')}"
security="${DEBIAN_SECURITY_MIRROR:-$(host_uri '/debian-security/?$')}"

work="$(mktemp -d "${TMPDIR:-/var/tmp}/mcp-suite-base.XXXXXX")"
cleanup() {
    # Never follow anything out of our own directory: the rootfs may hold mount points.
    for m in proc sys dev/pts dev; do
        if mountpoint -q "$work/rootfs/$m" 2>/dev/null; then umount -l "$work/rootfs/$m" || true; fi
    done
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT

log "debootstrap $suite (minbase, python3, python3-venv) into $work/rootfs"
# shellcheck disable=SC2086  # $mirror is empty or one word on purpose
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    "$suite" "$work/rootfs" $mirror >"$work/debootstrap.log" 2>&1 || {
    tail -n 30 "$work/debootstrap.log" >&2
    exit 1
}

# Security updates: the suite alone is the point release, not today's fixes.
if [[ -n "$mirror" && -n "$security" ]]; then
    log "applying $suite-security updates"
    {
        echo "deb $mirror $suite main"
        echo "deb $mirror $suite-updates main"
        echo "deb $security $suite-security main"
    } >"$work/rootfs/etc/apt/sources.list"
    cp /etc/resolv.conf "$work/rootfs/etc/resolv.conf"
    chroot "$work/rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
        sh -c 'apt-get -q update && apt-get -qy upgrade' >"$work/upgrade.log" 2>&1 || {
        tail -n 30 "$work/upgrade.log" >&2
        exit 1
    }
    : >"$work/rootfs/etc/resolv.conf"
fi

# Keep the image small and free of the build host's traces.
chroot "$work/rootfs" apt-get clean
rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/"*.bin \
    "$work/rootfs/var/log/"*.log "$work/rootfs/usr/share/doc/"* "$work/rootfs/usr/share/man/"* \
    "$work/rootfs/usr/share/locale/"* "$work/rootfs/tmp/"* "$work/rootfs/root"/.??* 2>/dev/null || true

log "importing as $image"
quiet=()
[[ "$engine" == podman ]] && quiet=(--quiet) # docker import has no --quiet
tar --numeric-owner -C "$work/rootfs" -c . |
    "$engine" import "${quiet[@]}" --change 'CMD ["/bin/sh"]' --change 'ENV LANG=C.UTF-8' - "$image" >/dev/null
"$engine" image inspect --format '{{.Id}} {{.Size}}' "$image" >&2
