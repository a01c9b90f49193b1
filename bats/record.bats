#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# migbed record: options, the kernel without soft-dirty tracking (this host's, the CI host's),
# nothing written on failure. Recording itself needs CONFIG_MEM_SOFT_DIRTY: its test runs in
# the soft-RoCE VM with the verbs lane (bats/verbs/record.bats).

load helpers
bats_require_minimum_version 1.5.0

setup() {
  cd "$BATS_TEST_TMPDIR"
}

# no file and no FILE.tmp in the test's folder
nothing_written() {
  run ls -A "$BATS_TEST_TMPDIR"
  echo "left: $output"
  [ -z "$output" ]
}

@test "record --help: usage on stdout, exit 0, naming every option" {
  run --separate-stderr "$MIGBED" record --help
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  for word in "usage: migbed record -o TRACE" --interval-ms --duration --region --pid "-- CMD" --json \
              CONFIG_MEM_SOFT_DIRTY rxe-vm "Exit status"; do
    [[ "$output" == *"$word"* ]] || { echo "--help lacks '$word'"; false; }
  done
  run "$MIGBED" --help
  [[ "$output" == *"record "*"soft-dirty"* ]]
}

@test "record: bad options exit 2 naming the problem, nothing written" {
  while IFS='|' read -r args want; do
    # shellcheck disable=SC2086
    run "$MIGBED" record $args
    echo "record $args -> $status: $output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"$want"* ]]
    nothing_written
  done <<'CASES'
-- true|missing -o TRACE
-o t.trace|give either --pid PID or -- CMD
-o t.trace --pid 1 -- true|give either --pid PID or -- CMD
-o t.trace --interval-ms 0 -- true|bad --interval-ms '0' (an integer 1 .. 60000)
-o t.trace --interval-ms 60001 -- true|bad --interval-ms '60001'
-o t.trace --interval-ms 10ms -- true|bad --interval-ms '10ms'
-o t.trace --duration 0 -- true|bad --duration '0' (an integer 1 .. 86400)
-o t.trace --pid 0|bad --pid '0'
-o t.trace --pid x|bad --pid 'x'
-o t.trace --region 0x1000 -- true|bad region '0x1000' (expected ADDR+LEN
-o t.trace --region 0x1001+4K -- true|ADDR and LEN must be multiples of the page size
-o t.trace --region 0xzz+4K -- true|ADDR is not a hexadecimal address
-o t.trace --region 0x1000+1.5 -- true|LEN is not a SIZE
-o t.trace --region 0x1000+4K -- true|--region needs --pid (a command's addresses are not known before it runs)
-o - --json -- true|-o - and --json both want standard output
-o t.trace --frobnicate -- true|unknown option or missing value '--frobnicate'
-o|unknown option or missing value '-o'
-o nodir/t.trace -- true|nodir/t.trace: cannot write: No such file or directory
CASES
}

@test "record on a kernel without soft-dirty tracking: exit 2, says so and how to record in the VM, nothing written" {
  run "$MIGBED" record -o t.trace -- true
  if [[ "$output" != *"no soft-dirty page tracking"* ]]; then
    rm -f t.trace
    skip "this kernel has soft-dirty tracking (record works here)"
  fi
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"this kernel has no soft-dirty page tracking (CONFIG_MEM_SOFT_DIRTY): record inside the soft-RoCE VM: topologies/vm/rxe-vm -- build/migbed record"* ]]
  nothing_written
  # --pid as well, before anything else is looked at
  run "$MIGBED" record -o t.trace --pid "$$"
  [ "$status" -eq 2 ]
  [[ "$output" == *"no soft-dirty page tracking"* ]]
  nothing_written
}
