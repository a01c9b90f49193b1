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
