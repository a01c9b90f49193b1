#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# seed-bf3-trace.sh [MIGBED] [OUT]: write bats/scenarios/seed-bf3.trace.zst, the seed's workload
# (issue 14; docs/model.md, 'The seed workload'): an 8 GiB guest, stress-ng --vm 4 --vm-bytes 1G
# --vm-method rand-set (1 GiB in all: 4 workers of 256 MiB, from `migbed trace gen --pattern
# rand-set`), plus an initial layout the generator cannot make yet (issue 14 part 2): in every
# GiB after the first, its first LAYOUT_MIB MiB hold data before the migration starts (kernel,
# page cache). LAYOUT_MIB = 480 is inferred from the seed table's 1M row (1,007 Mb/s over
# 37.0 s of 37.9 s is ~4.3 GiB sent, and a 1 MiB chunk with no data is elided): it is an
# assumption, not a measurement, and the transferred column is therefore no prediction.
# The same inputs write the same bytes.
set -u -o pipefail
die() { echo "seed-bf3-trace: $*" >&2; exit 2; }
migbed=${1:-build/migbed}
out=${2:-bats/scenarios/seed-bf3.trace.zst}
LAYOUT_MIB=${LAYOUT_MIB:-480}
[ -x "$migbed" ] || die "$migbed: not an executable (make first)"
command -v zstd >/dev/null || die "zstd is needed"
tmp=$(mktemp -d) || die "mktemp failed"
trap 'rm -rf "$tmp"' EXIT
"$migbed" trace gen --pattern rand-set --guest 8G --workers 4 --worker-bytes 256M --sweep-rate ${SWEEP_RATE:-256M} \
	--duration-ms 60000 --seed 1 -o "$tmp/gen.trace" 2>/dev/null || die "trace gen failed"
pages_gib=262144
layout_pages=$((LAYOUT_MIB * 256))
ranges=""
for g in 1 2 3 4 5 6 7; do
	a=$((g * pages_gib))
	ranges="$ranges $a-$((a + layout_pages - 1))"
done
# the layout goes right after the first "epoch 0s" line: written before the migration starts
awk -v r="pc.ram$ranges" -v mib="$LAYOUT_MIB" '
	{ print }
	/^epoch 0s/ && !done { print "# initial layout (seed-bf3-trace.sh): the first " mib " MiB of every GiB after the first"; print r; done = 1 }
' "$tmp/gen.trace" >"$tmp/seed.trace" || die "awk failed"
"$migbed" trace check "$tmp/seed.trace" >/dev/null || die "the trace does not check"
zstd -q -19 -f "$tmp/seed.trace" -o "$tmp/seed.trace.zst" || die "zstd failed"
mv "$tmp/seed.trace.zst" "$out" || die "cannot write $out"
echo "seed-bf3-trace: wrote $out"
