#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# coverage/summary.sh TRACEFILE [ROOT] - the per-folder coverage table of an lcov tracefile
# (test code already removed): line, function and branch coverage of sim/, transport/, run/,
# faults/, cli/ and the total, plus topologies/ (bash scripts: gcc cannot instrument them).
set -u -o pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
[ $# -ge 1 ] && [ -f "$1" ] || { echo "usage: coverage/summary.sh TRACEFILE [ROOT]" >&2; exit 2; }
root=${2:-$(cd "$HERE/.." && pwd -P)}
awk -v root="$root" -f "$HERE/folders.awk" "$1" | awk -F'\t' '
  function p(h, f) { return f > 0 ? sprintf("%5.1f%% %11s", 100 * h / f, "(" h "/" f ")") : sprintf("%18s", "-") }
  BEGIN { printf "%-11s %-18s %-18s %-18s\n", "folder", "lines", "functions", "branches" }
  $1 == "total" { total = $0; next }
  { printf "%-11s %s %s %s\n", $1 "/", p($3, $2), p($5, $4), p($7, $6) }
  END {
    printf "%-11s %s\n", "topologies/", "not instrumented (bash scripts; exercised by bats/topologies.bats)"
    split(total, t, "\t")
    printf "%-11s %s %s %s\n", "total (C)", p(t[3], t[2]), p(t[5], t[4]), p(t[7], t[6])
  }'
