#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/bench-verbs.sh OUTDIR - the verbs-wire benchmark: migbed's DATA-PHASE RDMA WRITE
# throughput in a migration on the rxe wire (rxe1 -> rxe0 across the veth) against ib_write_bw
# (perftest) on the same devices and message size (2 MiB, migbed's merged write), as PAIRS
# alternating pairs in one VM boot (or natively when topologies/detect finds rxe devices).
# migbed's data phase is the wall-clock window from its first RDMA WRITE posted to its last
# WRITE completion taken (the verbs run's --json "wall-clock"."data-phase": writes, bytes, us),
# not setup and registration before it. Two migbed runs per pair:
#   pin-all  --pin-all: every registration happens before the first WRITE, so the window holds
#            WRITEs and the bitmap syncs only;
#   chunked  64M chunks as QEMU registers them: each chunk's REGISTER exchange and both pins
#            (the destination's on never-touched memory) fall inside the window.
# and a second perftest run with one WRITE in flight (ib_write_bw -t 1): QEMU, and migbed as it,
# waits for a chunk's previous WRITE before the next to the same chunk (the transit bit), so a
# run of 2 MiB writes within one chunk has one WRITE in flight; -t 1 shows what that costs.
# Writes OUTDIR/verbs.txt (the pairs and the summary) and OUTDIR/verbs.json.
set -u -o pipefail
OUT=${1:?usage: bench-verbs.sh OUTDIR}
BUILD=${BUILD:-build}
M=$PWD/$BUILD/migbed
if [ "${MIGBED_BENCH_INNER:-0}" != 1 ]; then
  before=$(uptime)
  if topologies/detect >/dev/null 2>&1; then
    MIGBED_BENCH_INNER=1 "$0" "$OUT"
  else
    MIGBED_BENCH_INNER=1 topologies/vm/rxe-vm "$0" "$OUT"
  fi
  rc=$?
  { echo "verbs-wire: host load average before: $before"; echo "verbs-wire: host load average after: $(uptime)"; } \
    | tee -a "$OUT/verbs.txt"
  exit $rc
fi
mkdir -p "$OUT"
SIZE=2097152 N=${BENCH_VERBS_ITERS:-100} PAIRS=${BENCH_VERBS_PAIRS:-5}
port=18515
ibwb() {  # [perftest options]: the client's BW average (MB/s)
  port=$((port + 1))
  # server on rxe0 (198.18.0.1), client on rxe1; -x 1 = the IPv4-mapped RoCEv2 GID
  ib_write_bw -d rxe0 -x 1 -F -s $SIZE -n $N -p $port "$@" >"$OUT/ibwb-server.txt" 2>&1 &
  local spid=$!
  # the client connects once the server listens (its TCP port for the out-of-band exchange)
  for ((i = 0; i < 300; i++)); do ss -ltn 2>/dev/null | grep -q ":$port " && break; kill -0 $spid || break; sleep 0.1; done
  ib_write_bw -d rxe1 -x 1 -F -s $SIZE -n $N -p $port "$@" 198.18.0.1 >"$OUT/ibwb-client.txt" 2>&1
  wait $spid
  # the result line: "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]"
  awk -v s=$SIZE '$1 == s && NF >= 5 {print $4; exit}' "$OUT/ibwb-client.txt"
}
mig() {  # [run options]: "DATA_MB_S WRITES BYTES US WALL_MS"; 128 MiB guest fully written. MB = 2^20
  # bytes, taken to be perftest's MB (not checked in its source: were it 10^6, every ratio is 4.9 % higher)
  "$M" run --backend verbs --guest 128M --workers 2 --worker-bytes 64M --sweep-rate 16M \
    --chunk-size 64M --max-bandwidth unlimited --quiet --json "$OUT/migbed.json" "$@" >"$OUT/migbed.txt" 2>&1 || return 1
  jq -r '.metrics."wall-clock" | [(if ."data-phase".us > 0 then ."data-phase".bytes / ."data-phase".us * 1000000 / 1048576 else 0 end),
    ."data-phase".writes, ."data-phase".bytes, ."data-phase".us, ."total-time"] | map(tostring) | join(" ")' "$OUT/migbed.json"
}
med() { sort -g | awk '{v[NR] = $1} END { if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
: >"$OUT/pairs.txt"
for ((p = 1; p <= PAIRS; p++)); do
  # alternate which side goes first, so a drift in the machine's load falls on both
  if ((p % 2)); then
    ib=$(ibwb); ib1=$(ibwb -t 1); pa=$(mig --pin-all); ch=$(mig)
  else
    ch=$(mig); pa=$(mig --pin-all); ib1=$(ibwb -t 1); ib=$(ibwb)
  fi
  read -r pa_mbs pa_w pa_b pa_us pa_wall <<<"${pa:-0 0 0 0 0}"
  read -r ch_mbs ch_w ch_b ch_us ch_wall <<<"${ch:-0 0 0 0 0}"
  echo "$p ${ib:-0} ${ib1:-0} $pa_mbs $ch_mbs" >>"$OUT/pairs.txt"
  printf 'verbs-wire: pair %d: ib_write_bw %s MB/s (-t 1: %s); migbed data phase pin-all %.1f MB/s (%s writes, %s B in %s us; run %s ms), 64M chunks %.1f MB/s (%s writes in %s us; run %s ms)\n' \
    "$p" "${ib:-?}" "${ib1:-?}" "$pa_mbs" "$pa_w" "$pa_b" "$pa_us" "$pa_wall" "$ch_mbs" "$ch_w" "$ch_us" "$ch_wall" | tee -a "$OUT/verbs.txt"
done
# per pair: migbed / ib_write_bw; the median and the spread (min..max) of the ratios
ratios() {  # COLUMN DENOM_COLUMN
  awk -v c="$1" -v d="$2" '$d > 0 {printf "%.3f\n", $c / $d}' "$OUT/pairs.txt" | sort -g
}
summ() {  # COLUMN DENOM_COLUMN: "MEDIAN MIN MAX"
  local r
  r=$(ratios "$1" "$2")
  [ -n "$r" ] || { echo "0 0 0"; return; }
  echo "$(med <<<"$r") $(head -1 <<<"$r") $(tail -1 <<<"$r")"
}
read -r pa_med pa_min pa_max <<<"$(summ 4 2)"
read -r ch_med ch_min ch_max <<<"$(summ 5 2)"
read -r t1_med t1_min t1_max <<<"$(summ 4 3)"
ib_med=$(awk '$2 > 0 {print $2}' "$OUT/pairs.txt" | med)   # a perftest run that reported 0 left out
{
  echo "verbs-wire: $PAIRS alternating pairs, 2 MiB messages; ib_write_bw median $ib_med MB/s"
  echo "verbs-wire: ratio migbed data phase / ib_write_bw, pin-all: median $pa_med (spread $pa_min..$pa_max; target >= 0.9)"
  echo "verbs-wire: ratio migbed data phase / ib_write_bw, 64M chunks: median $ch_med (spread $ch_min..$ch_max)"
  echo "verbs-wire: ratio migbed pin-all / ib_write_bw -t 1 (one WRITE in flight): median $t1_med (spread $t1_min..$t1_max)"
} | tee -a "$OUT/verbs.txt"
printf '{"pairs":%d,"ib-write-bw-mb-s":%s,"ratio-pin-all":%s,"ratio-pin-all-min":%s,"ratio-pin-all-max":%s,"ratio-chunked":%s,"ratio-chunked-min":%s,"ratio-chunked-max":%s,"ratio-pin-all-vs-t1":%s,"ratio":%s}\n' \
  "$PAIRS" "$ib_med" "$pa_med" "$pa_min" "$pa_max" "$ch_med" "$ch_min" "$ch_max" "$t1_med" "$pa_med" >"$OUT/verbs.json"
