#!/usr/bin/env bats
# migbed record on a kernel with soft-dirty tracking (the soft-RoCE VM's Debian kernel): one
# quick recording of a writer, checked as a user would (docs/record.md). Skipped on a kernel
# without it (a native verbs host may lack CONFIG_MEM_SOFT_DIRTY).

MIGBED=${MIGBED:-$BATS_TEST_DIRNAME/../../build/migbed}
load ../helpers
bats_require_minimum_version 1.5.0

@test "record: a dd rewriting a 16M buffer for 2 s: a valid trace with its buffer as a block, rewritten" {
  cd "$BATS_TEST_TMPDIR"
  # dd reads /dev/zero into one 16 MiB anonymous buffer again and again (the kernel's writes
  # set soft-dirty as the process's own would); --duration ends it with SIGTERM
  run --separate-stderr "$MIGBED" record -o t.trace --interval-ms 100 --duration 2 --json -- \
    dd if=/dev/zero of=/dev/null bs=16M count=1000000
  echo "$stderr"
  if [[ "$stderr" == *"no soft-dirty page tracking"* ]]; then
    skip "this kernel has no soft-dirty tracking"
  fi
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"--duration reached: the command was sent SIGTERM"* ]]
  [ "$(echo "$output" | jq -r .stop)" = duration ]
  epochs=$(echo "$output" | jq .epochs)
  [ "$epochs" -ge 5 ]
  run "$MIGBED" trace check t.trace
  [ "$status" -eq 0 ]
  [ "$output" = "t.trace: ok, $epochs epochs" ]
  run "$MIGBED" trace stat --json t.trace
  [ "$status" -eq 0 ]
  # the buffer (16M of anonymous memory, malloc'd: a little more) is a block, and written
  # more than once over (epoch 0 holds at most its first fill)
  [ "$(echo "$output" | jq '[.blocks[] | select(.size_bytes >= 16777216)] | length')" -ge 1 ]
  [ "$(echo "$output" | jq .pages_written)" -ge 8192 ]
  run test -e t.trace.tmp
  [ "$status" -eq 1 ]
}
