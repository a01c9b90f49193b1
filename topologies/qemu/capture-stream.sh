#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# capture-stream.sh OUT [SIZE] - capture the migration stream of a `-M none -m SIZE` QEMU
# (default 2M) whose RAM holds migbed's test pattern (8 KiB at 0x1000: byte i = (7*i+3) mod
# 256, the rest zero), migrated to a file ("exec:cat > OUT"). Over RDMA the stream has the
# same sections; only the pages are replaced by HOOKs and RDMA writes. Used to make
# transport/testdata/*.qemu-stream (see transport/testdata/README.md). Needs no RDMA.
set -u -o pipefail
export LC_ALL=C   # awk must print bytes, not UTF-8
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/qemu-lib.bash"
[ $# -ge 1 ] || { echo "usage: capture-stream.sh OUT [SIZE]" >&2; exit 2; }
OUT=$1 SIZE=${2:-2M}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/capture-stream.XXXXXX") || exit 1
trap 'qemu_stop_all; rm -rf "$WORK"' EXIT
awk 'BEGIN { for (i = 0; i < 8192; i++) printf "%c", (7 * i + 3) % 256 }' </dev/null | LC_ALL=C cat >"$WORK/content.bin"
[ "$(stat -c %s "$WORK/content.bin")" = 8192 ] || { echo "capture-stream: pattern generation failed" >&2; exit 1; }
qemu_start src "$WORK" -m "$SIZE" -S -device loader,file="$WORK/content.bin",addr=0x1000 || exit 1
qmp src "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"exec:cat > $WORK/stream\"}}" >/dev/null || exit 1
st=$(qemu_migrate_wait src 30) || { echo "capture-stream: migration $st" >&2; exit 1; }
cp "$WORK/stream" "$OUT"
echo "capture-stream: $(stat -c %s "$OUT") bytes -> $OUT ($(qemu-system-x86_64 --version | head -1))"
