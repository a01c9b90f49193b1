#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# seed-bf3-trace.sh [MIGBED] [OUT]: write bats/scenarios/seed-bf3.trace.zst, the seed's workload
# (issue 14; docs/model.md, 'The seed workload'): an 8 GiB guest running what the reviewer ran,
# `stress-ng --vm 4 --vm-bytes 1G --vm-method rand-set` (1 GiB in all: stress-ng divides --vm-bytes
# among the 4 workers; no --vm-keep, so every pass remaps its buffer: churn), spelled as stress-ng
# spells it to `migbed trace gen`. Assumed, not measured: each worker sweeps 256 MiB/s (+-20 % per
# epoch, seeded), the workers run before the migration starts (first touch at 0). The initial
# layout (a version 2 trace's `layout` lines): LAYOUT_PCT % of the guest holds data when the
# migration starts, the rest never touched, placed by LAYOUT_RUNS: exp (the default here), data and
# hole runs of random, unaligned, exponentially distributed lengths with the means of LAYOUT_EXTENT
# placed at random (extent / (1 - share) data, extent / share holes); fixed, whole LAYOUT_EXTENT
# extents aligned to the extent (what this script wrote before the 2026-12-03 refit).
# LAYOUT_PCT = 50 and LAYOUT_EXTENT = 192M are two of the fit's six parameters (docs/model.md,
# 'The fit'), chosen from the table's transferred column, not measured in a guest.
# The same inputs write the same bytes.
set -u -o pipefail
die() { echo "seed-bf3-trace: $*" >&2; exit 2; }
migbed=${1:-build/migbed}
out=${2:-bats/scenarios/seed-bf3.trace.zst}
LAYOUT_PCT=${LAYOUT_PCT:-50}
LAYOUT_EXTENT=${LAYOUT_EXTENT:-192M}
LAYOUT_RUNS=${LAYOUT_RUNS:-exp}
[ -x "$migbed" ] || die "$migbed: not an executable (make first)"
tmp=$(mktemp -d) || die "mktemp failed"
trap 'rm -rf "$tmp"' EXIT
"$migbed" trace gen --vm 4 --vm-bytes 1G --vm-method rand-set --guest 8G --sweep-rate 256M \
	--sweep-jitter-pct 20 --layout-nonzero-pct "$LAYOUT_PCT" --layout-extent "$LAYOUT_EXTENT" \
	--layout-runs "$LAYOUT_RUNS" \
	--duration-ms 60000 --seed 1 -o "$tmp/seed.trace.zst" >/dev/null || die "trace gen failed"
"$migbed" trace check "$tmp/seed.trace.zst" >/dev/null || die "the trace does not check"
mv "$tmp/seed.trace.zst" "$out" || die "cannot write $out"
echo "seed-bf3-trace: wrote $out"
