#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
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
load ../helpers

qemu_dest() {  # qemu_dest PORT EXPECT [RAM [MIGBED ARGS...]]: migbed dest, once it listens
  local port=$1 expect=$2 ram=${3:-64M}
  shift $(($# < 3 ? $# : 3))
  printf 'migbed-trace 1\npage-size 4K\nblock ram %s\nduration 1s\nepoch 0ms\n' "$ram" >"$D/ram.trace"
  start_dest "$D/dest.out" "$port" --trace "$D/ram.trace" --qemu-stream true \
    --qemu-expect "$D/content.bin@1048576" --accept-timeout-ms "$(scaled 60000)" --wait-timeout-ms "$(scaled 20000)" \
    --expect "$expect" --json "$D/dest.json" --events "$D/dest.ev" "$@"
}

@test "qemu stream: a QEMU 7.2 source with block migration (an iterative 'block' section) -> QEMU_STREAM_UNSUPPORTED at migbed dest" {
  qemu_dest 4501 failed:QEMU_STREAM_UNSUPPORTED
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
  # killed at a point of the stream, not after a time: migbed dest stops itself after it
  # registered QEMU's 3rd chunk (the RAM section is under way), QEMU dies, migbed resumes
  qemu_dest 4502 failed:QEMU_STREAM_TRUNCATED 128M --pause-at dst:registered#3
  qemu_start src "$D" -m 128M -S -device loader,file="$D/content.bin",addr=0x100000
  qmp src '{"execute":"migrate","arguments":{"uri":"rdma:198.18.0.1:4502"}}'
  run wait_paused "$dpid" 60
  paused=$status
  qmp src '{"execute":"query-migrate"}' | jq -c '{status: .return.status}' || true
  kill -9 "${_QEMU_PID[src]}"
  resume "$dpid"
  drc=0
  wait "$dpid" || drc=$?
  cat "$D/dest.out"
  [ "$paused" -eq 0 ]
  grep -q 'migbed: paused at dst registered #3' "$D/dest.out"
  [ "$drc" -eq 0 ]
  grep -q 'cause=QEMU_STREAM_TRUNCATED side=dst' "$D/dest.out"
  grep -q 'the source disconnected mid-stream: offset [0-9]*: stream ends while expecting' "$D/dest.out"
}
