#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/bench-verbs.sh OUTDIR - migbed's RDMA WRITE throughput in a migration on the rxe wire
# (rxe1 -> rxe0 across the veth) against ib_write_bw (perftest) on the same devices and message
# size, in the same VM boot (or natively when topologies/detect finds rxe devices).
# Writes OUTDIR/verbs.txt and OUTDIR/verbs.json. Message size: 2 MiB, migbed's merged write.
set -u -o pipefail
OUT=${1:?usage: bench-verbs.sh OUTDIR}
BUILD=${BUILD:-build}
M=$PWD/$BUILD/migbed
if [ "${MIGBED_BENCH_INNER:-0}" != 1 ]; then
  if topologies/detect >/dev/null 2>&1; then
    MIGBED_BENCH_INNER=1 exec "$0" "$OUT"
  fi
  MIGBED_BENCH_INNER=1 topologies/vm/rxe-vm "$0" "$OUT"
  exit $?
fi
mkdir -p "$OUT"
SIZE=2097152 N=${BENCH_VERBS_ITERS:-100}
# perftest: server on rxe0 (198.18.0.1), client on rxe1; -x 1 = the IPv4-mapped RoCEv2 GID
ib_write_bw -d rxe0 -x 1 -F -s $SIZE -n $N -p 18515 >"$OUT/ibwb-server.txt" 2>&1 &
spid=$!
# the client connects once the server listens (its TCP port for the out-of-band exchange)
for ((i = 0; i < 300; i++)); do ss -ltn 2>/dev/null | grep -q ':18515 ' && break; kill -0 $spid || break; sleep 0.1; done
ib_write_bw -d rxe1 -x 1 -F -s $SIZE -n $N -p 18515 198.18.0.1 >"$OUT/ibwb-client.txt" 2>&1
wait $spid
# the result line: "#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]"
ib_mbs=$(awk -v s=$SIZE '$1 == s && NF >= 5 {print $4; exit}' "$OUT/ibwb-client.txt")
# migbed: 128 MiB guest fully written (2 workers x 64 MiB), 64M chunks, no rate limit
"$M" run --backend verbs --guest 128M --workers 2 --worker-bytes 64M --sweep-rate 16M \
  --chunk-size 64M --max-bandwidth unlimited --quiet --json "$OUT/migbed.json" >"$OUT/migbed.txt" 2>&1
rdma=$(grep -o '"normal-bytes":[0-9]*' "$OUT/migbed.json" | head -1 | cut -d: -f2)
wall=$(grep -o '"wall-clock":{"total-time":[0-9]*' "$OUT/migbed.json" | head -1 | sed 's/.*://')
mig_mbs=$(awk -v b="${rdma:-0}" -v ms="${wall:-0}" 'BEGIN{ if (ms > 0) printf "%.2f", b / 1e6 / (ms / 1000); else print 0 }')
ratio=$(awk -v a="$mig_mbs" -v b="${ib_mbs:-0}" 'BEGIN{ if (b > 0) printf "%.3f", a / b; else print 0 }')
{
  echo "verbs-wire: ib_write_bw rxe1->rxe0, 2 MiB messages x $N: ${ib_mbs:-?} MB/s"
  echo "verbs-wire: migbed run --backend verbs, 128 MiB guest, 64M chunks: $rdma RDMA bytes in $wall ms wall = $mig_mbs MB/s (end to end, incl. setup and registration)"
  echo "verbs-wire: ratio migbed / ib_write_bw = $ratio"
} | tee "$OUT/verbs.txt"
echo "{\"ib-write-bw-mb-s\":${ib_mbs:-0},\"migbed-mb-s\":$mig_mbs,\"ratio\":$ratio,\"migbed-rdma-bytes\":${rdma:-0},\"migbed-wall-ms\":${wall:-0}}" >"$OUT/verbs.json"
