#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# topologies/qemu/migbed-qemu, host side (model lane, no VM, no RDMA): usage errors exit 2
# with a message naming the problem and write nothing; the QEMU checks (-M none + QMP, RDMA
# migration, x-rdma-chunk-size) against stand-in "QEMUs" that speak just enough QMP. The
# migrations themselves run in bats/verbs/qemu.bats (soft-RoCE VM).
load helpers

RUNNER=$BATS_TEST_DIRNAME/../topologies/qemu/migbed-qemu

setup() {
  D=$BATS_TEST_TMPDIR
  export TMPDIR=$D
}

# runner ARGS...: the runner with this build's migbed; outputs named so a usage error can be
# shown to have written nothing
runner() {
  run env MIGBED="$MIGBED" "$RUNNER" --json "$D/out.json" --keep "$D/keep" "$@"
  echo "$output"
}

nothing_written() {
  [ ! -e "$D/out.json" ]
  [ ! -e "$D/keep" ]
  # no work dir left behind either (the runner's mktemp dirs live in TMPDIR)
  [ -z "$(ls -A "$D" | grep -v '^fake-qemu$' || true)" ]
}

# fake_qemu MAJOR.MINOR.MICRO RDMA(yes|no) CHUNK_PARAM(yes|no): a script that answers the QMP
# commands of qemu_probe (qemu-lib.bash) the way a QEMU of that kind does
fake_qemu() {
  local maj=${1%%.*} rest=${1#*.}
  local min=${rest%%.*} mic=${rest#*.}
  local ver="{\"micro\": $mic, \"minor\": $min, \"major\": $maj}"
  local params='{"return": {"downtime-limit": 300, "max-bandwidth": 134217728}, "id": "p"}'
  local set="{\"id\": \"s\", \"error\": {\"class\": \"GenericError\", \"desc\": \"Parameter 'x-rdma-chunk-size' is unexpected\"}}"
  local inc='{"id": "r", "error": {"class": "GenericError", "desc": "unknown migration protocol: rdma:256.0.0.0:1"}}'
  if [ "$3" = yes ]; then
    params='{"return": {"downtime-limit": 300, "x-rdma-chunk-size": 1048576, "max-bandwidth": 134217728}, "id": "p"}'
    set='{"return": {}, "id": "s"}'
  fi
  [ "$2" = no ] || inc='{"id": "r", "error": {"class": "GenericError", "desc": "RDMA ERROR: could not rdma_getaddrinfo address 256.0.0.0"}}'
  cat >"$D/fake-qemu" <<EOF
#!/usr/bin/env bash
case " \$* " in *' -M none '*) ;; *) echo "fake-qemu: wants -M none" >&2; exit 1 ;; esac
echo '{"QMP": {"version": {"qemu": $ver, "package": "fake"}, "capabilities": ["oob"]}}'
while IFS= read -r l; do
  case \$l in
  *qmp_capabilities*) echo '{"return": {}}' ;;
  *query-version*) echo '{"return": {"qemu": $ver, "package": "fake"}, "id": "v"}' ;;
  *query-migrate-parameters*) echo '$params' ;;
  *migrate-set-parameters*) echo "$(printf '%s' "$set" | sed 's/"/\\"/g')" ;;
  *migrate-incoming*) echo '$inc' ;;
  *quit*) echo '{"return": {}, "id": "q"}'; exit 0 ;;
  esac
done
EOF
  chmod +x "$D/fake-qemu"
}

@test "qemu-runner: --help lists every option and the exit statuses" {
  run "$RUNNER" --help
  [ "$status" -eq 0 ]
  for o in --qemu --direction --mem --pin-all --chunk-size --qemu-chunk-size --fault --json --keep --check; do
    [[ "$output" == *"$o"* ]]
  done
  [[ "$output" == *"verdict=pass|fail direction="* ]]
  [[ "$output" == *"Exit status: 0 completed and verified; 1 failed"* ]]
}

@test "qemu-runner: an unknown option exits 2, names it, writes nothing" {
  runner --chunk 64M
  [ "$status" -eq 2 ]
  [[ "$output" == *"unknown option '--chunk'"* ]]
  nothing_written
}

@test "qemu-runner: --qemu pointing to a missing file exits 2 and names it" {
  runner --qemu "$D/no/such/qemu"
  [ "$status" -eq 2 ]
  [[ "$output" == *"--qemu $D/no/such/qemu: no such file"* ]]
  nothing_written
}

@test "qemu-runner: --qemu naming no program in PATH exits 2" {
  runner --qemu qemu-system-does-not-exist
  [ "$status" -eq 2 ]
  [[ "$output" == *"--qemu qemu-system-does-not-exist: not found in PATH"* ]]
}

@test "qemu-runner: --qemu pointing to a non-executable file exits 2 and says so" {
  printf 'not a program\n' >"$D/fake-qemu"
  runner --qemu "$D/fake-qemu"
  [ "$status" -eq 2 ]
  [[ "$output" == *"--qemu $D/fake-qemu: not executable"* ]]
  nothing_written
}

@test "qemu-runner: --qemu pointing to a script that is not QEMU exits 2 with what it printed" {
  printf '#!/bin/sh\necho "hello from a script"\n' >"$D/fake-qemu"
  chmod +x "$D/fake-qemu"
  runner --qemu "$D/fake-qemu"
  [ "$status" -eq 2 ]
  [[ "$output" == *"--qemu $D/fake-qemu: not a usable QEMU"*"no QMP greeting"*"it printed: hello from a script"* ]]
  nothing_written
}

@test "qemu-runner: a QEMU without RDMA migration exits 2 (unknown migration protocol)" {
  fake_qemu 9.2.0 no no
  runner --qemu "$D/fake-qemu"
  [ "$status" -eq 2 ]
  [[ "$output" == *"QEMU at $D/fake-qemu (version 9.2.0) has no RDMA migration"*"unknown migration protocol"* ]]
  nothing_written
}

@test "qemu-runner: --qemu-chunk-size on a QEMU without x-rdma-chunk-size exits 2 (never ignored)" {
  fake_qemu 7.2.22 yes no
  runner --qemu "$D/fake-qemu" --qemu-chunk-size 64M
  [ "$status" -eq 2 ]
  [[ "$output" == *"QEMU at $D/fake-qemu (version 7.2.22) has no x-rdma-chunk-size parameter"* ]]
  nothing_written
}

@test "qemu-runner: --check reports what a QEMU has (with and without x-rdma-chunk-size)" {
  fake_qemu 11.1.0 yes yes
  run env MIGBED="$MIGBED" "$RUNNER" --qemu "$D/fake-qemu" --check
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"QEMU at $D/fake-qemu: version 11.1.0 (fake)"* ]]
  [[ "$output" == *"RDMA migration: yes"* ]]
  [[ "$output" == *"x-rdma-chunk-size: yes"* ]]
  # the same with --qemu-chunk-size: accepted by the check
  run env MIGBED="$MIGBED" "$RUNNER" --qemu "$D/fake-qemu" --qemu-chunk-size 64M --check
  [ "$status" -eq 0 ]
  fake_qemu 7.2.22 yes no
  run env MIGBED="$MIGBED" "$RUNNER" --qemu "$D/fake-qemu" --check
  [ "$status" -eq 0 ]
  [[ "$output" == *"x-rdma-chunk-size: no"* ]]
}

@test "qemu-runner: Debian's QEMU passes the checks and has no x-rdma-chunk-size (7.2)" {
  command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed"
  q=$(command -v qemu-system-x86_64)
  v=$(qemu-system-x86_64 --version | sed -n '1s/^QEMU emulator version \([0-9.]*\).*/\1/p')
  run env MIGBED="$MIGBED" "$RUNNER" --qemu qemu-system-x86_64 --check
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"QEMU at $q: version $v"* ]]
  [[ "$output" == *"RDMA migration: yes"* ]]
  [ "${v%%.*}" -ge 11 ] && skip "QEMU $v may have x-rdma-chunk-size: the refusal is tested with 7.2 only"
  [[ "$output" == *"x-rdma-chunk-size: no"* ]]
  runner --qemu qemu-system-x86_64 --qemu-chunk-size 1M
  [ "$status" -eq 2 ]
  [[ "$output" == *"QEMU at $q (version $v) has no x-rdma-chunk-size parameter"* ]]
  nothing_written
}

@test "qemu-runner: bad sizes and directions exit 2 naming the option and the value" {
  fake_qemu 7.2.22 yes no
  runner --qemu "$D/fake-qemu" --mem 5M
  [ "$status" -eq 2 ]; [[ "$output" == *"--mem: '5M' is not a whole number of MiB from 8M to 64G"* ]]
  runner --qemu "$D/fake-qemu" --mem lots
  [ "$status" -eq 2 ]; [[ "$output" == *"--mem: 'lots' is not a size"* ]]
  runner --qemu "$D/fake-qemu" --chunk-size 3M
  [ "$status" -eq 2 ]; [[ "$output" == *"--chunk-size: '3M' is not a power of two from 1M to 1G"* ]]
  runner --qemu "$D/fake-qemu" --qemu-chunk-size 512K
  [ "$status" -eq 2 ]; [[ "$output" == *"--qemu-chunk-size: '512K' is not a power of two from 1M to 1G"* ]]
  runner --qemu "$D/fake-qemu" --direction sideways
  [ "$status" -eq 2 ]; [[ "$output" == *"--direction: 'sideways' is not qemu-to-migbed or migbed-to-qemu"* ]]
  runner --qemu "$D/fake-qemu" --mem
  [ "$status" -eq 2 ]; [[ "$output" == *"--mem needs a value"* ]]
  nothing_written
}

@test "qemu-runner: a bad --fault rule exits 2 with migbed's own message" {
  fake_qemu 7.2.22 yes no
  runner --qemu "$D/fake-qemu" --fault 'no.such.site -> drop'
  [ "$status" -eq 2 ]
  [[ "$output" == *"--fault 'no.such.site -> drop': col 1: unknown site 'no.such.site'"* ]]
  nothing_written
}

@test "qemu-runner: unwritable --json / --keep places exit 2 before anything runs" {
  fake_qemu 7.2.22 yes no
  run env MIGBED="$MIGBED" "$RUNNER" --qemu "$D/fake-qemu" --json "$D/no/dir/r.json"
  [ "$status" -eq 2 ]
  [[ "$output" == *"--json $D/no/dir/r.json: no such directory $D/no/dir"* ]]
  run env MIGBED="$MIGBED" "$RUNNER" --qemu "$D/fake-qemu" --keep "$D/no/dir/keep"
  [ "$status" -eq 2 ]
  [[ "$output" == *"--keep $D/no/dir/keep: cannot create it"* ]]
  [ ! -e "$D/no" ]
}

@test "qemu-runner: a missing migbed binary exits 2 and says how to get one" {
  fake_qemu 7.2.22 yes no
  run env MIGBED="$D/no-migbed" "$RUNNER" --qemu "$D/fake-qemu"
  [ "$status" -eq 2 ]
  [[ "$output" == *"migbed binary $D/no-migbed not found or not executable"* ]]
}
