#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/measure-rxe.sh [OUTDIR] - measure soft-RoCE (rdma_rxe) in ONE boot of the TCG VM
# (topologies/vm/rxe-vm), for the rxe-tcg hardware profile (docs/model.md, 'rxe-tcg'):
#   1. ibv_reg_mr / ibv_dereg_mr cost against size on touched and never-touched memory
#      (build/rxe-regcost, from scripts/rxe-regcost.c);
#   2. the control round trip: ib_send_lat, 64 B SEND/RECV ping-pong across the veth (rxe1 ->
#      rxe0), busy-polling and blocking on the completion channel (-e), each without and with a
#      CPU hog pinned to the waiting side's core; alternating repeats, medians;
#      and a blocking wait's cost with a CPU hog on the waiting core from migbed's own verbs run
#      (perftest's latency under a hog reports inf);
#   3. RDMA WRITE throughput against message size (ib_write_bw across the veth);
#   4. real `migbed run --backend verbs` runs of a fixed trace (256 MiB guest, an idle workload
#      over a 50 % non-zero initial layout: no decision of the run depends on time, so the model
#      registers the same chunks and sends the same bytes) at 1M, 4M, 16M, 64M and 256M chunks, REPS rounds
#      with the order rotated, wall-clock total time of each.
#   5. the verbs-wire benchmark (scripts/bench-verbs.sh), its summary copied to OUTDIR/rxe-verbs-wire.*
# Writes OUTDIR/rxe-costs.txt (key = value, medians) and OUTDIR/rxe-runs.csv (every verbs run),
# each figure with its time (UTC), and OUTDIR/rxe-hostload.log (the host's load every 15 s);
# OUTDIR defaults to docs/data. The host's load average is recorded before and after (the
# guest's own is beside it). Run from the top of the source tree, after `make all`.
set -u -o pipefail
OUT=${1:-docs/data}
BUILD=${BUILD:-build}
REPS=${MEASURE_RXE_REPS:-3}
CHUNKS=${MEASURE_RXE_CHUNKS:-1M 4M 16M 64M 256M}
# MEASURE_RXE_STEPS: a subset of the steps reruns them, appending to rxe-costs.txt (runs: rewrites rxe-runs.csv)
STEPS=" ${MEASURE_RXE_STEPS:-reg lat hog bw runs bench} "
M=$PWD/$BUILD/migbed
if [ "${MIGBED_VM_GUEST:-0}" != 1 ]; then
  mkdir -p "$OUT" || exit 2
  cc -O2 -Wall -o "$BUILD/rxe-regcost" scripts/rxe-regcost.c -libverbs || exit 2
  "$M" trace gen --pattern idle --guest 256M --duration-ms 2000 --seed 1 --layout-nonzero-pct 50 \
    -o "$BUILD/rxe-idle-256m.trace" >/dev/null || exit 2
  before=$(uptime)
  t0=$(date -u +%FT%TZ)
  # the host's load average every 15 s while the VM runs (the guest cannot see it): each figure
  # below carries its time, to be matched with OUT/rxe-hostload.log
  ( while :; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 15; done ) >>"$OUT/rxe-hostload.log" &
  sampler=$!
  MIGBED_VM_MEM=${MIGBED_VM_MEM:-2G} topologies/vm/rxe-vm "$0" "$OUT"
  rc=$?
  kill "$sampler"
  {
    echo "host-load-before${MEASURE_RXE_STEPS:+ ($MEASURE_RXE_STEPS)} = $before"
    echo "host-load-after${MEASURE_RXE_STEPS:+ ($MEASURE_RXE_STEPS)} = $(uptime)"
    echo "date${MEASURE_RXE_STEPS:+ ($MEASURE_RXE_STEPS)} = $t0"
  } >>"$OUT/rxe-costs.txt"
  exit $rc
fi

C=$OUT/rxe-costs.txt
R=$OUT/rxe-runs.csv
[ "${MEASURE_RXE_STEPS:-}" ] || : >"$C"
step() { [[ "$STEPS" == *" $1 "* ]]; }
kv() { printf '%s = %s [%s UTC]\n' "$1" "$2" "$(date -u +%T)" | tee -a "$C"; }
med() { sort -n | awk '{v[NR] = $1} END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
kv guest-load-before "$(cat /proc/loadavg)"
kv guest "$(uname -r), $(nproc) vCPUs, $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo), TCG"

# 1. registration
step reg && "$BUILD/rxe-regcost" --reps 5 1 4 16 64 256 | sed "s/\$/ [$(date -u +%T) UTC]/" | tee -a "$C"

# 2. control round trip: ib_send_lat (t_typical = median, us); client on rxe1 pinned to CPU 0
hog_pid=
hog() { taskset -c 0 bash -c 'while :; do :; done' & hog_pid=$!; }
unhog() { [ -n "$hog_pid" ] && kill "$hog_pid" && wait "$hog_pid" 2>/dev/null; hog_pid=; }
port=18600
lat() {  # MODE(poll|event) HOG(0|1): "TYPICAL AVG" one-way latency in us (perftest: half the round trip)
  local ev=() res
  [ "$1" = event ] && ev=(-e)
  port=$((port + 1))
  [ "$2" = 1 ] && hog
  timeout 60 taskset -c 1 ib_send_lat -d rxe0 -x 1 -F -s 64 -n 300 -p $port "${ev[@]}" >/tmp/lat-s.txt 2>&1 &
  local spid=$!
  for ((i = 0; i < 300; i++)); do ss -ltn 2>/dev/null | grep -q ":$port " && break; sleep 0.05; done
  timeout 60 taskset -c 0 ib_send_lat -d rxe1 -x 1 -F -s 64 -n 300 -p $port "${ev[@]}" 198.18.0.1 >/tmp/lat-c.txt 2>&1
  wait $spid
  unhog
  # "#bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%"
  res=$(awk '$1 == 64 && NF >= 6 {print $5 " " $6; exit}' /tmp/lat-c.txt)
  [ -n "$res" ] || { echo "measure-rxe: ib_send_lat $1 hog=$2 gave no result:" >&2; tail -5 /tmp/lat-c.txt /tmp/lat-s.txt >&2; }
  echo "${res:-nan nan}"
}
for mode in poll event; do for h in 0 1; do : >/tmp/lat-$mode-$h; done; done
for ((r = 0; r < 3; r++)); do
  step lat || break
  for mode in poll event; do for h in 0 1; do lat $mode $h >>/tmp/lat-$mode-$h; done; done
done
step lat && for mode in poll event; do for h in 0 1; do
  kv "send-lat-$mode-hog$h-typical-us" "$(awk '{print $1}' /tmp/lat-$mode-$h | med) (median of: $(awk '{print $1}' /tmp/lat-$mode-$h | tr '\n' ' '))"
  kv "send-lat-$mode-hog$h-avg-us" "$(awk '{print $2}' /tmp/lat-$mode-$h | med) (median of: $(awk '{print $2}' /tmp/lat-$mode-$h | tr '\n' ' '))"
done; done

# 2b. a blocking wait with and without a CPU hog on the waiting core, from migbed's own verbs run
# (perftest's latency report is inf under a hog: its clock calibration fails). The run at 1M
# chunks blocks on the completion channel in each of its control exchanges; pinned to CPU 0,
# with a busy loop on CPU 0 or not, 3 alternating pairs: (wall with - wall without) / waits.
# The hog takes CPU from the whole run, not only its wake-ups: an upper bound for the waits.
if step hog; then
  : >/tmp/hog-0; : >/tmp/hog-1
  for ((r = 0; r < 3; r++)); do
    for h in $((r % 2)) $((1 - r % 2)); do
      [ "$h" = 1 ] && hog
      taskset -c 0 "$M" run --backend verbs --trace "$BUILD/rxe-idle-256m.trace" --max-bandwidth unlimited \
        --chunk-size 1M --quiet --json /tmp/hog.json >/tmp/hog.txt 2>&1
      unhog
      jq -r '.metrics."wall-clock"."total-time"' /tmp/hog.json >>/tmp/hog-$h
    done
  done
  waits=$(jq -r '.metrics.migbed.src."messages-sent" | .compress + 2 * ."register-request" + 2 * ."ram-blocks-request"' /tmp/hog.json)
  w0=$(med </tmp/hog-0) w1=$(med </tmp/hog-1)
  kv hog-run-wall-ms "$w0 without, $w1 with a hog on the run's core (runs: $(tr '\n' ' ' </tmp/hog-0)/ $(tr '\n' ' ' </tmp/hog-1))"
  kv hog-waits "$waits"
  kv hog-extra-per-wait-us "$(awk -v a="$w0" -v b="$w1" -v n="$waits" 'BEGIN { printf "%.0f", (b - a) * 1000 / n }')"
fi

# 3. RDMA WRITE throughput against message size (MB/s, BW average), about 32 MiB per size
bw() {  # SIZE_BYTES
  local n=$((32 * 1048576 / $1)) res
  [ $n -lt 20 ] && n=20
  port=$((port + 1))
  timeout 120 ib_write_bw -d rxe0 -x 1 -F -s "$1" -n $n -p $port >/tmp/bw-s.txt 2>&1 &
  local spid=$!
  for ((i = 0; i < 300; i++)); do ss -ltn 2>/dev/null | grep -q ":$port " && break; sleep 0.05; done
  timeout 120 ib_write_bw -d rxe1 -x 1 -F -s "$1" -n $n -p $port 198.18.0.1 >/tmp/bw-c.txt 2>&1
  wait $spid
  res=$(awk -v s="$1" '$1 == s && NF >= 5 {print $4; exit}' /tmp/bw-c.txt)
  echo "${res:-nan}"
}
step bw && for s in 65536 262144 1048576 2097152 8388608; do
  a=$(bw $s) b=$(bw $s)
  kv "write-bw-$s-mb-s" "$(printf '%s\n%s\n' "$a" "$b" | med) (runs: $a $b)"
done

# 4. real verbs runs of the fixed trace
read -r -a CH <<<"$CHUNKS"
step runs && echo "rep,chunk-size,wall-ms,virtual-ms,transferred,registrations,rdma-writes,utc" >"$R"
for ((r = 0; r < REPS; r++)); do
  step runs || break
  for ((k = 0; k < ${#CH[@]}; k++)); do
    c=${CH[$(((k + r) % ${#CH[@]}))]}   # the order rotates from one repeat to the next
    j=/tmp/run-$r-$c.json
    if ! "$M" run --backend verbs --trace "$BUILD/rxe-idle-256m.trace" --max-bandwidth unlimited \
        --chunk-size "$c" --quiet --json "$j" >/tmp/run.txt 2>&1; then
      echo "measure-rxe: verbs run at $c failed:" >&2; cat /tmp/run.txt >&2
      continue
    fi
    jq -r --arg r "$r" --arg c "$c" --arg t "$(date -u +%T)" '[$r, $c, .metrics."wall-clock"."total-time", .metrics."total-time",
      .metrics.ram.transferred, .metrics.migbed.src.registrations, .metrics.migbed."rdma-writes", $t] | @csv' "$j" \
      | tr -d '"' | tee -a "$R"
  done
done
kv guest-load-after "$(cat /proc/loadavg)"

# 5. the verbs-wire benchmark in the same boot (scripts/bench-verbs.sh: alternating pairs)
if step bench; then
  MIGBED_BENCH_INNER=1 BUILD=$BUILD scripts/bench-verbs.sh "$BUILD/bench-verbs"
  cp "$BUILD/bench-verbs/verbs.txt" "$OUT/rxe-verbs-wire.txt"
  cp "$BUILD/bench-verbs/verbs.json" "$OUT/rxe-verbs-wire.json"
fi
