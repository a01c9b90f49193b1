#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# topologies/: detect, setup, clean and the soft-RoCE VM runner, as seen from the host.
# One test boots the VM (about 5-10 s, plus a one-time setup of about 15 s with an empty cache).
load helpers
bats_require_minimum_version 1.5.0

REPO=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
TOPO=$REPO/topologies
RXE_VM=$TOPO/vm/rxe-vm

host_has_rdma() { [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; }
kernel_can_rxe() { [ -d /sys/module/ib_core ] || [ -d "/lib/modules/$(uname -r)" ]; }

# a made-up /sys/class/infiniband: DEV PORT STATE NETDEV
fake_port() {
  local d=$BATS_TEST_TMPDIR/ib/$1/ports/$2
  mkdir -p "$d/gid_attrs/ndevs"
  echo "$3" >"$d/state"
  echo "$4" >"$d/gid_attrs/ndevs/0"
}

@test "detect: no RDMA on this host -> exit 1 and the reason on stderr" {
  host_has_rdma && skip "this host has RDMA devices"
  run --separate-stderr "$TOPO/detect"
  [ "$status" -eq 1 ]
  [ -z "$output" ]
  [[ $stderr == *"no /sys/class/infiniband"* ]]
}

@test "detect --json: an empty list when there is no RDMA" {
  host_has_rdma && skip "this host has RDMA devices"
  run --separate-stderr "$TOPO/detect" --json
  [ "$status" -eq 1 ]
  [ "$output" = "[]" ]
}

@test "detect: lists ACTIVE ports with netdev and IPv4, names multi-port links DEV/PORT" {
  fake_port rxe9 1 "4: ACTIVE" lo
  fake_port mlx9 1 "4: ACTIVE" lo
  fake_port mlx9 2 "1: DOWN" lo
  MIGBED_IB_SYSFS=$BATS_TEST_TMPDIR/ib run --separate-stderr "$TOPO/detect"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "mlx9/1 lo 127.0.0.1" ]
  [ "${lines[1]}" = "rxe9 lo 127.0.0.1" ]
  [ "${#lines[@]}" -eq 2 ]
  MIGBED_IB_SYSFS=$BATS_TEST_TMPDIR/ib run --separate-stderr "$TOPO/detect" --json
  [ "$status" -eq 0 ]
  [ "$output" = '[{"dev":"mlx9/1","port":1,"netdev":"lo","ipv4":"127.0.0.1"},{"dev":"rxe9","port":1,"netdev":"lo","ipv4":"127.0.0.1"}]' ]
}

@test "detect: a link whose netdev has no IPv4 address -> exit 1 naming it" {
  fake_port rxe9 1 "4: ACTIVE" nosuchdev9
  MIGBED_IB_SYSFS=$BATS_TEST_TMPDIR/ib run --separate-stderr "$TOPO/detect"
  [ "$status" -eq 1 ]
  [ "$output" = "rxe9 nosuchdev9 -" ]
  [[ $stderr == *"rxe9: netdev nosuchdev9 has no IPv4 address"* ]]
}

@test "detect: a bad option -> exit 2" {
  run --separate-stderr "$TOPO/detect" --bogus
  [ "$status" -eq 2 ]
  [[ $stderr == *"unknown argument '--bogus'"* ]]
}

@test "setup: fails cleanly on a kernel without RDMA (exit 1, points to the VM, creates nothing)" {
  kernel_can_rxe && skip "this kernel has RDMA support"
  export MIGBED_TOPO_STATE=$BATS_TEST_TMPDIR/state
  run --separate-stderr "$TOPO/setup"
  [ "$status" -eq 1 ]
  [[ $stderr == *"this kernel has no RDMA support (no /sys/module/ib_core, modules unavailable): use topologies/vm/rxe-vm"* ]]
  [ ! -e "$MIGBED_TOPO_STATE" ]
  run ip link show dev veth0
  [ "$status" -ne 0 ]
}

@test "setup --dry-run: prints the VM's layout and changes nothing" {
  export MIGBED_TOPO_STATE=$BATS_TEST_TMPDIR/state
  run --separate-stderr "$TOPO/setup" --dry-run
  [ "$status" -eq 0 ]
  [[ $output == *"ip addr add 198.18.0.1/24 dev veth0"* ]]
  [[ $output == *"ip addr add 198.18.0.2/24 dev veth1"* ]]
  [[ $output == *"rdma link add rxe0 type rxe netdev veth0"* ]]
  [[ $output == *"rdma link add rxe1 type rxe netdev veth1"* ]]
  [ ! -e "$MIGBED_TOPO_STATE" ]
}

@test "setup: refuses rxe on lo (exit 2) and a bad --ndev (exit 2)" {
  run --separate-stderr "$TOPO/setup" --dry-run --netdev lo
  [ "$status" -eq 2 ]
  [[ $stderr == *"refusing to put rxe on the loopback device"* ]]
  run --separate-stderr "$TOPO/setup" --ndev 3
  [ "$status" -eq 2 ]
  [[ $stderr == *"--ndev 3: must be 1 or 2"* ]]
}

@test "clean: nothing recorded -> exit 0; a foreign state file -> exit 2 naming file and line" {
  export MIGBED_TOPO_STATE=$BATS_TEST_TMPDIR/state
  run --separate-stderr "$TOPO/clean"
  [ "$status" -eq 0 ]
  [[ $stderr == *"nothing to clean"* ]]
  printf '# topologies/setup 2\nip link del veth0\nrm -rf /tmp/x\n' >"$MIGBED_TOPO_STATE"
  run --separate-stderr "$TOPO/clean"
  [ "$status" -eq 2 ]
  [[ $stderr == *"$MIGBED_TOPO_STATE:3: not a step topologies/setup writes"* ]]
  [ -e "$MIGBED_TOPO_STATE" ]
  run --separate-stderr "$TOPO/clean" --dry-run
  [ "$status" -eq 2 ]
}

@test "clean --dry-run: replays setup's undo steps last first" {
  export MIGBED_TOPO_STATE=$BATS_TEST_TMPDIR/state
  printf '# topologies/setup 2\nip link del veth0\nsysctl net.ipv4.conf.all.rp_filter 2\nrdma link delete rxe0\n' >"$MIGBED_TOPO_STATE"
  run --separate-stderr "$TOPO/clean" --dry-run
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "rdma link delete rxe0" ]
  [ "${lines[1]}" = "sysctl -w net.ipv4.conf.all.rp_filter=2" ]
  [ "${lines[2]}" = "ip link del veth0" ]
}

@test "rxe-vm --help: documents the knobs and exit statuses" {
  run "$RXE_VM" --help
  [ "$status" -eq 0 ]
  for k in MEM SMP TIMEOUT NDEV RW CONSOLE KEEP TIMING CACHE; do
    [[ $output == *"MIGBED_VM_$k"* ]]
  done
  [[ $output == *"--batch FILE"* ]]
  [[ $output == *"124 the guest timed out"* ]]
  [[ $output == *"125 the VM failed"* ]]
}

@test "rxe-vm: bad usage and bad knobs -> exit 2 before booting" {
  run --separate-stderr "$RXE_VM"
  [ "$status" -eq 2 ]
  [[ $stderr == *"no command given"* ]]
  MIGBED_VM_NDEV=3 run --separate-stderr "$RXE_VM" true
  [ "$status" -eq 2 ]
  [[ $stderr == *"MIGBED_VM_NDEV='3': must be 0, 1 or 2"* ]]
  MIGBED_VM_RW=$BATS_TEST_TMPDIR/missing run --separate-stderr "$RXE_VM" true
  [ "$status" -eq 2 ]
  [[ $stderr == *"is not a directory"* ]]
  printf 'true\n\n# comment\nif then\n' >"$BATS_TEST_TMPDIR/batch"
  run --separate-stderr "$RXE_VM" --batch "$BATS_TEST_TMPDIR/batch"
  [ "$status" -eq 2 ]
  [[ $stderr == *"$BATS_TEST_TMPDIR/batch:4: syntax error"* ]]
  run --separate-stderr "$RXE_VM" --batch "$BATS_TEST_TMPDIR/nonexistent"
  [ "$status" -eq 2 ]
}

@test "rxe-vm (one boot): detect finds rxe0 and rxe1 on the veth pair; batch status is the first failure" {
  [ "${MIGBED_VM_GUEST:-0}" = 1 ] && skip "already inside the rxe VM"
  cat >"$BATS_TEST_TMPDIR/batch" <<EOF
$TOPO/detect
exit 3
echo after-the-failure > "$BATS_TEST_TMPDIR/out"
EOF
  cd "$BATS_TEST_TMPDIR"
  run --separate-stderr "$RXE_VM" --batch "$BATS_TEST_TMPDIR/batch"
  [ "$status" -eq 3 ]
  [[ $output == *$'\nrxe0 veth0 198.18.0.1\nrxe1 veth1 198.18.0.2\n'"### rxe-vm batch [1/3] exit 0"* ]]
  [[ $output == *"### rxe-vm batch [2/3] exit 3"* ]]
  [[ $output == *"### rxe-vm batch [3/3] exit 0"* ]]
  # the current directory was shared writable: the last command's file is on the host
  [ "$(cat "$BATS_TEST_TMPDIR/out")" = after-the-failure ]
}
