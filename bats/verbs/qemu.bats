#!/usr/bin/env bats
# QEMU in the loop (issue 7), verbs lane, in the rxe VM: real Debian QEMU 7.2 `-M none`
# machines driven over QMP by topologies/qemu/qemu-lib.bash. Today: QEMU -> QEMU over rxe
# (the reference the migbed <-> QEMU cases compare with; those need the proto_dst stream
# hook and the --qemu-stream CLI keys, see docs/qemu-in-the-loop.md).

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
}

q2q() {  # q2q PIN(true|false) PORT
  qemu_start dst "$D" -m 64M -incoming "rdma:198.18.0.1:$2"
  qemu_start src "$D" -m 64M -S -device loader,file="$D/content.bin",addr=0x100000
  for q in src dst; do
    qmp $q "{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":[{\"capability\":\"rdma-pin-all\",\"state\":$1}]}}"
  done
  qmp src "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"rdma:198.18.0.1:$2\"}}"
  run qemu_migrate_wait src 120
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = completed ]
  # the source left on rxe1, the destination listened on rxe0: the traffic crossed the wire
  grep -q 'kernel name rxe1' "$D/src.log"
  grep -q 'kernel name rxe0' "$D/dst.log"
  qmp dst "{\"execute\":\"pmemsave\",\"arguments\":{\"val\":0,\"size\":67108864,\"filename\":\"$D/dst.mem\"}}"
  qmp src "{\"execute\":\"pmemsave\",\"arguments\":{\"val\":0,\"size\":67108864,\"filename\":\"$D/src.mem\"}}"
  cmp "$D/src.mem" "$D/dst.mem"
  cmp <(tail -c +$((0x100000 + 1)) "$D/dst.mem" | head -c 4194304) "$D/content.bin"
}

@test "qemu: QEMU 7.2 -> QEMU 7.2 over rxe (dynamic registration): completes, memory equal" {
  q2q false 4444
}

@test "qemu: QEMU 7.2 -> QEMU 7.2 over rxe with rdma-pin-all: completes, memory equal" {
  q2q true 4445
}

# QEMU 7.2 source -> migbed dest (--qemu-stream): migbed reads QEMU's own migration stream,
# serves registration as QEMU's destination does, and verifies its memory against the
# content the source QEMU was given.
q2m() {  # q2m PIN(true|false) PORT EXPECT_FILE EXPECT(completed|failed:CAUSE)
  printf 'migbed-trace 1\npage-size 4K\nblock ram 64M\nduration 1s\nepoch 0ms\n' >"$D/ram.trace"
  "$MIGBED" dest --listen "198.18.0.1:$2" --trace "$D/ram.trace" --qemu-stream true \
    --qemu-expect "$3@1048576" --accept-timeout-ms 60000 --expect "$4" \
    --json "$D/dest.json" --events "$D/dest.ev" >"$D/dest.out" 2>&1 3>&- &
  dpid=$!
  sleep 1
  qemu_start src "$D" -m 64M -S -device loader,file="$D/content.bin",addr=0x100000
  qmp src "{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":[{\"capability\":\"rdma-pin-all\",\"state\":$1}]}}"
  qmp src "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"rdma:198.18.0.1:$2\"}}"
  run qemu_migrate_wait src 120
  echo "QEMU source: $output"
  wait "$dpid" && drc=0 || drc=$?
  cat "$D/dest.out"
  [ "$drc" -eq 0 ]
}

MIGBED=${MIGBED:-$BATS_TEST_DIRNAME/../../build/migbed}

@test "qemu: QEMU 7.2 source -> migbed dest (dynamic registration): completes and verifies" {
  q2m false 4446 "$D/content.bin" completed
  [ "$output" = completed ]
  grep -q 'verdict=pass status=completed cause=NONE' "$D/dest.out"
  grep -q '"verified":true' "$D/dest.json"
  grep -q 'dst registered' "$D/dest.ev"
}

@test "qemu: QEMU 7.2 source -> migbed dest with rdma-pin-all: completes and verifies" {
  q2m true 4447 "$D/content.bin" completed
  [ "$output" = completed ]
  grep -q 'verdict=pass status=completed cause=NONE' "$D/dest.out"
  grep -q '"pin-all":true\|pin_all=1' "$D/dest.json" "$D/dest.ev"
}

@test "qemu: migbed dest catches memory that differs from what QEMU was given (VERIFY_MISMATCH)" {
  head -c 4M /dev/urandom >"$D/other.bin"
  q2m false 4448 "$D/other.bin" failed:VERIFY_MISMATCH
  grep -q 'verdict=pass status=failed cause=VERIFY_MISMATCH side=dst' "$D/dest.out"
  # QEMU 7.2 never looks at the control channel after its EOF: it reports completed anyway
  [ "$output" = completed ]
}
