#!/usr/bin/env bats
# QEMU in the loop (issue 7), verbs lane, in the rxe VM: real Debian QEMU 7.2 `-M none`
# machines driven over QMP by topologies/qemu/qemu-lib.bash: QEMU -> QEMU over rxe (the
# reference), QEMU source -> migbed dest and migbed source -> QEMU dest (--qemu-stream, see
# docs/qemu-in-the-loop.md), and fault cases against the real QEMU.

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

# migbed source (--qemu-stream) -> QEMU 7.2 destination: migbed writes QEMU's own stream
# (transport/qemu_stream.c's writer) for a trace whose layout is QEMU's (`-M none -m 64M`:
# one block "ram"); the destination's verdict is on its QMP, its memory (pmemsave) must equal
# the source's (--dump-mem).
m2q() {  # m2q PIN(true|false) PORT "QEMU ARGS" [MIGBED ARGS...]
  local pin=$1 port=$2 qargs=$3; shift 3
  printf 'migbed-trace 1\npage-size 4K\nblock ram 64M\nduration 1s\nepoch 0ms\nram 256-1279 4096-4200\nepoch 100ms\nram 300-400 5000-5100\n' >"$D/ram.trace"
  # shellcheck disable=SC2086
  qemu_start dst "$D" -m 64M -incoming "rdma:198.18.0.1:$port" $qargs
  qmp dst "{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":[{\"capability\":\"rdma-pin-all\",\"state\":$pin}]}}"
  mrc=0
  timeout 120 "$MIGBED" source --connect "198.18.0.1:$port@198.18.0.2" --trace "$D/ram.trace" --qemu-stream true \
    --dump-mem "$D/src.mem" --json "$D/src.json" --events "$D/src.ev" "$@" >"$D/src.out" 2>&1 3>&- || mrc=$?
  cat "$D/src.out"
  echo "--- QEMU destination log"; cat "$D/dst.log"
}

m2q_memory_equal() {
  qmp dst "{\"execute\":\"pmemsave\",\"arguments\":{\"val\":0,\"size\":67108864,\"filename\":\"$D/dst.mem\"}}"
  [ "$(stat -c %s "$D/src.mem")" -eq 67108864 ]
  run cmp -s "$D/src.mem" <(head -c 64M /dev/zero)   # the guest wrote something
  [ "$status" -ne 0 ]
  cmp "$D/src.mem" "$D/dst.mem"
}

@test "qemu: migbed source -> QEMU 7.2 dest (dynamic registration): completes, QEMU runs, memory equal" {
  m2q false 4450 ""
  [ "$mrc" -eq 0 ]
  grep -q 'verdict=pass status=completed cause=NONE' "$D/src.out"
  grep -q 'its verdict is only on its QMP' "$D/src.out"
  grep -q 'src registered' "$D/src.ev"
  run qemu_migrate_wait dst 30
  [ "$output" = completed ]
  # no -S: QEMU starts the guest (globalstate says "running")
  [ "$(qemu_status dst)" = running ]
  m2q_memory_equal
}

@test "qemu: migbed source -> QEMU 7.2 dest with rdma-pin-all: completes, memory equal" {
  m2q true 4451 "" --pin-all
  [ "$mrc" -eq 0 ]
  grep -q 'src connected pin_all=1' "$D/src.ev"
  run qemu_migrate_wait dst 30
  [ "$output" = completed ]
  [ "$(qemu_status dst)" = running ]
  m2q_memory_equal
}

@test "qemu: migbed source -> QEMU 7.2 dest started with -S: completes and stays paused" {
  m2q false 4452 "-S"
  [ "$mrc" -eq 0 ]
  run qemu_migrate_wait dst 30
  [ "$output" = completed ]
  [ "$(qemu_status dst)" = paused ]
  m2q_memory_equal
}

# Fault cases against the real QEMU (the messages are in docs/qemu-in-the-loop.md).
@test "qemu: migbed source with 64M chunks -> QEMU 7.2 (1M chunks): REMOTE_ACCESS_ERROR, QEMU fails the load and exits" {
  m2q false 4453 "" --chunk-size 64M --expect failed:REMOTE_ACCESS_ERROR
  [ "$mrc" -eq 0 ]
  grep -q 'verdict=pass status=failed cause=REMOTE_ACCESS_ERROR side=src' "$D/src.out"
  [ "$(qemu_exit_status dst 10)" = 1 ]
  grep -q 'rdma migration: recv polling control error!' "$D/dst.log"
  grep -q 'load of migration failed' "$D/dst.log"
}

@test "qemu: migbed source --caps-version 2 -> QEMU 7.2 refuses it (Unknown source RDMA version)" {
  m2q false 4454 "" --caps-version 2 --wait-timeout-ms 5000 --expect failed:CONNECT_REJECTED
  [ "$mrc" -eq 0 ]
  grep -q 'cause=CONNECT_REJECTED side=src' "$D/src.out"
  grep -q 'Unknown source RDMA version: 2, bailing' "$D/dst.log"
  st=$(qemu_exit_status dst 10)
  echo "QEMU exit status: $st (observed with 7.2.22: 139, SIGSEGV after the refusal)"
  [ "$st" != running ]
}

@test "qemu: migbed source --dump-mem to an unwritable place: exit 2, names the file, writes nothing" {
  printf 'migbed-trace 1\npage-size 4K\nblock ram 64M\nduration 1s\n' >"$D/ram.trace"
  run "$MIGBED" source --connect 198.18.0.1:4455@198.18.0.2 --trace "$D/ram.trace" --qemu-stream true \
    --dump-mem "$D/no/such/dir/src.mem"
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"--dump-mem $D/no/such/dir/src.mem: No such file or directory"* ]]
  [ ! -e "$D/no" ]
}
