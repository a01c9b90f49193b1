#!/usr/bin/env bash
# scripts/bench.sh - migbed's benchmarks (make bench). Speed and memory targets live here,
# never as timed assertions in tests. Results: $BUILD/bench/results.txt and results.json.
#
#   trace-tools   gen, stat and check of a 1 GiB-guest, 60 s rand-set trace (issue 2)
#   model-8g      the model migrating an 8 GiB guest under a 4 x 1 GiB rand-set trace at 1M
#                 and 64M chunks: wall time, peak RSS, and the 1M/64M ratio of virtual
#                 total-time (the reviewer's table has 45156/4492 = 10.1)
#   shrink        migbed shrink of an 8 GiB, 60 s, 3-rule bundle: its time, and the replays of the
#                 bundle and of the shrunk one side by side (the ratio; issue 13)
#   verbs-wire    (in the soft-RoCE VM) migbed's RDMA WRITE throughput in a migration vs
#                 ib_write_bw on the same devices and message size: the ratio (issue 4)
# BENCH_ONLY=name runs one of them.
set -u -o pipefail
BUILD=${BUILD:-build}
M=$PWD/$BUILD/migbed
OUT=$PWD/$BUILD/bench
mkdir -p "$OUT"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
json=()
log() { echo "$*" | tee -a "$OUT/results.txt"; }
: >"$OUT/results.txt"
only=${BENCH_ONLY:-}

# wall seconds and peak RSS (KiB) of a command, via GNU time
measure() {  # measure OUTVAR_PREFIX cmd...
  local p=$1; shift
  /usr/bin/time -f '%e %M' -o "$TMP/time" "$@" >"$TMP/out" 2>&1 || { cat "$TMP/out"; return 1; }
  read -r "${p}_s" "${p}_kb" <"$TMP/time"
}

if [ -z "$only" ] || [ "$only" = trace-tools ]; then
  t="$TMP/rs1g.trace"
  measure gen "$M" trace gen --pattern rand-set --guest 1G --workers 4 --worker-bytes 128M \
    --sweep-rate 1G --duration-ms 60000 --seed 1 -o "$t"
  measure stat "$M" trace stat "$t"
  measure check "$M" trace check "$t"
  tz="$TMP/rs1g.trace.zst"
  measure genz "$M" trace gen --pattern rand-set --guest 1G --workers 4 --worker-bytes 128M \
    --sweep-rate 1G --duration-ms 60000 --seed 1 -o "$tz"
  measure statz "$M" trace stat "$tz"
  log "trace-tools: 1 GiB guest, 60 s rand-set ($(stat -c %s "$t") bytes, .zst $(stat -c %s "$tz")):"
  log "  gen ${gen_s} s, stat ${stat_s} s, check ${check_s} s; .zst: gen ${genz_s} s, stat ${statz_s} s"
  json+=("\"trace-tools\":{\"gen-s\":$gen_s,\"stat-s\":$stat_s,\"check-s\":$check_s,\"gen-zst-s\":$genz_s,\"stat-zst-s\":$statz_s}")
fi

if [ -z "$only" ] || [ "$only" = model-8g ]; then
  t="$TMP/rs8g.trace"
  "$M" trace gen --pattern rand-set --guest 8G --workers 4 --worker-bytes 1G --sweep-rate 256M \
    --duration-ms 60000 --seed 1 -o "$t" 2>/dev/null
  declare -A vt
  for cs in 1M 64M; do
    measure run "$M" run --trace "$t" --chunk-size "$cs" --max-bandwidth unlimited --quiet \
      --json "$TMP/r$cs.json"
    vt[$cs]=$(sed -n 's/.*"total-time":\([0-9]*\).*/\1/p' "$TMP/r$cs.json" | head -1)
    log "model-8g: chunk $cs: wall ${run_s} s, peak RSS $((run_kb / 1024)) MiB, virtual total-time ${vt[$cs]} ms"
    json+=("\"model-8g-$cs\":{\"wall-s\":$run_s,\"peak-rss-kib\":$run_kb,\"virtual-total-ms\":${vt[$cs]}}")
  done
  ratio=$(awk -v a="${vt[1M]}" -v b="${vt[64M]}" 'BEGIN{printf "%.2f", (b>0)?a/b:0}')
  log "model-8g: virtual total-time ratio 1M/64M = $ratio (reviewer's hardware table: 10.05)"
  json+=("\"model-8g-ratio-1m-64m\":$ratio")
fi

if [ -z "$only" ] || [ "$only" = shrink ]; then
  # issue 13: an 8 GiB, 60 s bundle with 3 rules (one needed) shrunk; the replays measured side by side
  t="$TMP/sh8g.trace"
  "$M" trace gen --pattern rand-set --guest 8G --duration-ms 60000 --seed 1 -o "$t" 2>/dev/null
  "$M" run --trace "$t" --fault 'wc.write@src #45 -> status(RETRY_EXC_ERR)' --fault 'msg.ready@dst %2 -> delay(1ms)' \
    --fault 'reg_mr@src #100000 -> errno(ENOMEM)' --quiet --bundle "$TMP/sh8g" >/dev/null 2>&1
  measure shrink "$M" shrink "$TMP/sh8g" -o "$TMP/sh8g.small" --json
  cp "$TMP/out" "$OUT/shrink.json"
  measure before "$M" replay "$TMP/sh8g"
  measure after "$M" replay "$TMP/sh8g.small"
  ratio=$(awk -v a="$before_s" -v b="$after_s" 'BEGIN{printf "%.1f", (b>0)?a/b:0}')
  log "shrink-8g: shrink ${shrink_s} s; replay before ${before_s} s, after ${after_s} s: ${ratio}x faster (see shrink.json)"
  json+=("\"shrink-8g\":{\"shrink-s\":$shrink_s,\"replay-before-s\":$before_s,\"replay-after-s\":$after_s,\"ratio\":$ratio}")
fi

if [ -z "$only" ] || [ "$only" = verbs-wire ]; then
  if [ -x scripts/bench-verbs.sh ]; then
    scripts/bench-verbs.sh "$OUT" && [ -s "$OUT/verbs.json" ] && json+=("\"verbs-wire\":$(cat "$OUT/verbs.json")")
  else
    log "verbs-wire: not available in this tree"
  fi
fi

(IFS=,; echo "{${json[*]}}") >"$OUT/results.json"
echo "results: $OUT/results.txt $OUT/results.json"
