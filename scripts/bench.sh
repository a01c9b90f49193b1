#!/usr/bin/env bash
# scripts/bench.sh - migbed's benchmarks (make bench). Speed and memory targets live here,
# never as timed assertions in tests. Results: $BUILD/bench/results.txt and results.json.
#
#   trace-tools   gen, stat and check of a 1 GiB-guest, 60 s rand-set trace (issue 2)
#   model-8g      the model migrating an 8 GiB guest under a 4 x 1 GiB rand-set trace at 1M
#                 and 64M chunks: wall time, peak RSS, and the 1M/64M ratio of virtual
#                 total-time (the reviewer's table has 45156/4492 = 10.1)
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

if [ -z "$only" ] || [ "$only" = verbs-wire ]; then
  if [ -x scripts/bench-verbs.sh ]; then
    scripts/bench-verbs.sh "$OUT" && [ -s "$OUT/verbs.json" ] && json+=("\"verbs-wire\":$(cat "$OUT/verbs.json")")
  else
    log "verbs-wire: not available in this tree"
  fi
fi

(IFS=,; echo "{${json[*]}}") >"$OUT/results.json"
echo "results: $OUT/results.txt $OUT/results.json"
