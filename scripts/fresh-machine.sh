#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/fresh-machine.sh [--keep] - the README's first command on a machine without the packages.
#
# Makes a Debian bookworm chroot (debootstrap --variant=minbase) with only build-essential, git
# and pkg-config added, clones this repository's HEAD into it and, as root there, runs
#   make run            (the README's first command: installs the packages, builds, migrates)
#   make -j2 all unit   (what make check builds)
# Each must succeed, and `make run` must end with a completed-and-verified verdict. Needs root,
# debootstrap and the Debian mirror (nothing else from the network); about 1-2 minutes.
# The chroot is removed at the end (--keep keeps it and prints where). Exit 0 pass, 1 fail,
# 2 cannot run here (not root, no debootstrap).
set -u -o pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
keep=0
[ "${1:-}" = --keep ] && keep=1
log() { printf 'fresh-machine: %s\n' "$*" >&2; }
[ "$(id -u)" = 0 ] || { log "needs root (chroot, debootstrap)"; exit 2; }
command -v debootstrap >/dev/null || { log "needs debootstrap (apt-get install debootstrap)"; exit 2; }
MIRROR=${MIGBED_DEBIAN_MIRROR:-$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/* *$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
C=$(mktemp -d /tmp/migbed-fresh.XXXXXX) || exit 1
cleanup() {
  umount "$C/proc" 2>/dev/null; umount "$C/dev" 2>/dev/null
  if [ $keep = 1 ]; then log "kept: $C"; else rm -rf --one-file-system "$C"; fi
}
trap cleanup EXIT
in_chroot() {
  chroot "$C" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root TERM=dumb LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive sh -c "$*"
}
t0=$(date +%s)
log "debootstrap --variant=minbase bookworm $C ($MIRROR)"
debootstrap --variant=minbase bookworm "$C" "$MIRROR" >"$C.debootstrap.log" 2>&1 \
  || { tail -n 20 "$C.debootstrap.log" >&2; log "debootstrap failed"; exit 1; }
rm -f "$C.debootstrap.log"
cp /etc/resolv.conf "$C/etc/resolv.conf" 2>/dev/null
mount --bind /dev "$C/dev" && mount -t proc proc "$C/proc" || { log "cannot mount /dev, /proc in the chroot"; exit 1; }
log "apt-get install build-essential git pkg-config (nothing else)"
in_chroot 'apt-get update -q && apt-get install -y -q --no-install-recommends build-essential git pkg-config ca-certificates' \
  >"$C/root/apt.log" 2>&1 || { tail -n 20 "$C/root/apt.log" >&2; log "apt-get in the chroot failed"; exit 1; }
git clone -q "$ROOT" "$C/root/migbed" || { log "git clone failed"; exit 1; }
log "clone of $(git -C "$ROOT" rev-parse --short HEAD); \$ make run"
in_chroot 'cd /root/migbed && make run' >"$C/root/run.log" 2>&1; rc=$?
tail -n 3 "$C/root/run.log" | sed 's/^/  | /' >&2
if [ $rc -ne 0 ] || ! tail -n 1 "$C/root/run.log" | grep -q '^migbed: verdict=pass status=completed cause=NONE'; then
  tail -n 30 "$C/root/run.log" >&2
  log "FAIL: make run (exit $rc) on a fresh machine"; exit 1
fi
log "\$ make -j2 all unit"
in_chroot 'cd /root/migbed && make -j2 all unit' >"$C/root/unit.log" 2>&1 \
  || { tail -n 30 "$C/root/unit.log" >&2; log "FAIL: make check's build on a fresh machine"; exit 1; }
log "pass: make run and make check's build work on a fresh bookworm minbase ($(( $(date +%s) - t0 )) s)"
