#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/trace-runs.sh TRACE... - run lengths of plain-text traces (docs/record.md): for each
# file, the number of ranges (runs of consecutive pages written in one epoch), pages per run
# (mean, median, max) and the share of runs that are a single page. `migbed trace stat` has
# the rates and working sets; this adds the shape of the writes.
set -u -o pipefail
[ $# -ge 1 ] || { echo "usage: scripts/trace-runs.sh TRACE..." >&2; exit 2; }
for f in "$@"; do
  [ -r "$f" ] || { echo "trace-runs: $f: cannot read" >&2; exit 2; }
  awk -v file="$f" '
    { sub(/#.*/, "") }
    NF == 0 || $1 == "migbed-trace" || $1 == "page-size" || $1 == "block" || $1 == "duration" || $1 == "epoch" || $1 == "layout" { next }
    { for (i = 2; i <= NF; i++) { n = split($i, ab, "-"); len = n == 2 ? ab[2] - ab[1] + 1 : 1
        runs++; pages += len; if (len == 1) ones++; if (len > max) max = len; c[len]++ } }
    END {
      if (!runs) { printf "%s: no runs\n", file; exit }
      half = runs / 2; acc = 0; med = 0
      for (k = 1; k <= max; k++) { acc += c[k]; if (acc >= half) { med = k; break } }
      printf "%s: %d runs, %d pages; pages per run: mean %.1f, median %d, max %d; single-page runs %.1f %%\n",
        file, runs, pages, pages / runs, med, max, 100 * ones / runs }' "$f" || exit 2
done
