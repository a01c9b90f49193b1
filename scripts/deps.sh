#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/deps.sh [--check] GROUP... - make sure the Debian packages migbed needs are installed.
#
# Groups:  build  compiler-side libraries and test tools (make, make check)
#          vm     the soft-RoCE VM lane: qemu, busybox, kernel tooling, rdma-core tools, perftest
#          all    both, and what some tests need beyond the build (gnuplot-nox: sweep --plot)
#          fresh  scripts/fresh-machine.sh (debootstrap)
# As root, missing packages are installed with apt-get (no recommends). Otherwise, or with
# --check (a plain `make`: it never runs apt-get, only `make deps` and `make run` do), the exact
# apt-get line is printed and the script exits 1. Exit 0 when everything is present.
set -u
BUILD_PKGS="gcc make pkg-config libibverbs-dev librdmacm-dev rdma-core ibverbs-providers
            libzstd-dev libxxhash-dev libjansson-dev libcmocka-dev bats lcov time procps jq"
VM_PKGS="qemu-system-x86 busybox-static kmod cpio xz-utils iproute2 rdma-core ibverbs-providers
         ibverbs-utils rdmacm-utils perftest"
# what some tests need beyond the build: gnuplot for the pictures (bats/sweep.bats, bats/timeline.bats),
# xmllint to check JUnit XML (bats/run-suite.bats), valgrind for make check-valgrind, GNU parallel
# for the sharded swarm recipe (bats/swarm.bats), stress-ng for the recording docs/record.md compares
# the generator with (in the VM)
TEST_PKGS="gnuplot-nox libxml2-utils valgrind parallel stress-ng zstd"

want="" check=false
if [ "${1:-}" = --check ]; then check=true; shift; fi
[ $# -gt 0 ] || set -- build
for g in "$@"; do
  case "$g" in
    build) want="$want $BUILD_PKGS" ;;
    vm)    want="$want $VM_PKGS" ;;
    all)   want="$want $BUILD_PKGS $VM_PKGS $TEST_PKGS" ;;
    fresh) want="$want debootstrap" ;;
    -h|--help) sed -n '2,/^set -u/{/^set -u/d;/SPDX-License-Identifier/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "deps.sh: unknown group '$g' (build, vm, all, fresh)" >&2; exit 2 ;;
  esac
done

missing=""
for p in $(echo "$want" | tr ' ' '\n' | sort -u); do
  [ -n "$p" ] || continue
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || st=""
  case "$st" in *" installed") ;; *) missing="$missing $p" ;; esac
done
[ -z "$missing" ] && exit 0

line="apt-get install -y --no-install-recommends$missing"
if $check || [ "$(id -u)" != 0 ]; then
  echo "migbed: missing Debian packages:$missing" >&2
  echo "migbed: run as root:  apt-get update && $line  (or: make deps)" >&2
  exit 1
fi
echo "migbed: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1; then
  apt-get update -q >/dev/null 2>&1 || true
  apt-get install -y -q --no-install-recommends $missing >&2 || {
    echo "migbed: apt-get failed; try: apt-get update && $line" >&2; exit 1; }
fi
exit 0
