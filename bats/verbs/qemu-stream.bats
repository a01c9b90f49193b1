#!/usr/bin/env bats
# QEMU in the loop, the stream reader's causes against a real QEMU 7.2 source (verbs lane, in
# the rxe VM): a QEMU configuration whose stream migbed does not read ends in
# QEMU_STREAM_UNSUPPORTED quoting the offset and the bytes, never a crash or a guess.

setup() {
  command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed"
  ip rule show 2>/dev/null | grep -q 'lookup 101' || skip "not in migbed's rxe VM (no policy routing)"
  . "$BATS_TEST_DIRNAME/../../topologies/qemu/qemu-lib.bash"
  ulimit -l unlimited
  qemu_route_src_via_rxe1
  D=$BATS_TEST_TMPDIR
  head -c 4M /dev/urandom >"$D/content.bin"
}

teardown() {
  qemu_stop_all
  # the VM's /tmp is RAM and bats removes test folders only at the end of the run
  if [ -n "${D:-}" ]; then rm -f "$D"/*.bin "$D"/*.mem; fi
}

MIGBED=${MIGBED:-$BATS_TEST_DIRNAME/../../build/migbed}

start_dest() {  # start_dest PORT EXPECT [RAM]
  printf 'migbed-trace 1\npage-size 4K\nblock ram %s\nduration 1s\nepoch 0ms\n' "${3:-64M}" >"$D/ram.trace"
  "$MIGBED" dest --listen "198.18.0.1:$1" --trace "$D/ram.trace" --qemu-stream true \
    --qemu-expect "$D/content.bin@1048576" --accept-timeout-ms 60000 --wait-timeout-ms 20000 \
    --expect "$2" --json "$D/dest.json" --events "$D/dest.ev" >"$D/dest.out" 2>&1 3>&- &
  dpid=$!
  sleep 1
}

@test "qemu stream: a QEMU 7.2 source with block migration (an iterative 'block' section) -> QEMU_STREAM_UNSUPPORTED at migbed dest" {
  start_dest 4501 failed:QEMU_STREAM_UNSUPPORTED
  qemu_start src "$D" -m 64M -S -device loader,file="$D/content.bin",addr=0x100000
  qmp src '{"execute":"migrate-set-capabilities","arguments":{"capabilities":[{"capability":"block","state":true}]}}'
  qmp src '{"execute":"migrate","arguments":{"uri":"rdma:198.18.0.1:4501"}}'
  run qemu_migrate_wait src 120
  echo "QEMU source: $output"
  wait "$dpid" && drc=0 || drc=$?
  cat "$D/dest.out"
  echo "QEMU source log:"; grep -v '^$' "$D/src.log" | tail -8 || true
  [ "$drc" -eq 0 ]
  grep -q 'cause=QEMU_STREAM_UNSUPPORTED side=dst' "$D/dest.out"
  grep -q "offset [0-9]*: .*'block'.*(bytes" "$D/dest.out"
  # what QEMU 7.2 printed (the cause table's observed line): migbed sent ERROR
  grep -q 'Was expecting a READY (2) control message, but got: ERROR (1), length: 0' "$D/src.log"
  [ "$output" = failed ]
}

@test "qemu stream: a QEMU 7.2 source killed mid-stream -> QEMU_STREAM_TRUNCATED at migbed dest (what was expected, at which offset)" {
  # 96 MiB of content to RDMA-write: the migration takes seconds on rxe under TCG
  head -c 96M /dev/urandom >"$D/content.bin"
  start_dest 4502 failed:QEMU_STREAM_TRUNCATED 128M
  qemu_start src "$D" -m 128M -S -device loader,file="$D/content.bin",addr=0x100000
  qmp src '{"execute":"migrate","arguments":{"uri":"rdma:198.18.0.1:4502"}}'
  # kill it once the migration is active: the RAM section is under way
  for ((i = 0; i < 300; i++)); do qmp src '{"execute":"query-migrate"}' | grep -q '"status": "active"' && break; sleep 0.1; done
  sleep 0.5
  qmp src '{"execute":"query-migrate"}' | grep -o '"status": "[a-z]*"'
  kill -9 "${_QEMU_PID[src]}"
  wait "$dpid" && drc=0 || drc=$?
  cat "$D/dest.out"
  [ "$drc" -eq 0 ]
  grep -q 'cause=QEMU_STREAM_TRUNCATED side=dst' "$D/dest.out"
  grep -q 'the source disconnected mid-stream: offset [0-9]*: stream ends while expecting' "$D/dest.out"
}
