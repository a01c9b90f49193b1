#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# migbed record on a kernel with soft-dirty tracking (the soft-RoCE VM's Debian kernel): one
# quick recording of a writer, checked as a user would (docs/record.md). Skipped on a kernel
# without it (a native verbs host may lack CONFIG_MEM_SOFT_DIRTY).

MIGBED=${MIGBED:-$BATS_TEST_DIRNAME/../../build/migbed}
load ../helpers
bats_require_minimum_version 1.5.0

@test "record: dd filling a 16M buffer 16 times: a valid trace with its buffer as a block, written" {
  cd "$BATS_TEST_TMPDIR"
  # dd reads /dev/zero into one 16 MiB anonymous buffer 16 times (the kernel's writes set
  # soft-dirty as the process's own would) and exits: a fixed amount of work, not a time
  # (20 ms epochs: natively the 256 MiB take some 40 ms; under TCG a few seconds)
  run --separate-stderr "$MIGBED" record -o t.trace --interval-ms 20 --json -- \
    dd if=/dev/zero of=/dev/null bs=16M count=16
  echo "$stderr"
  if [[ "$stderr" == *"no soft-dirty page tracking"* ]]; then
    skip "this kernel has no soft-dirty tracking"
  fi
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"the command exited with status 0"* ]]
  [ "$(echo "$output" | jq -r .stop)" = exit ]
  [ "$(echo "$output" | jq '."command-exit"')" -eq 0 ]
  epochs=$(echo "$output" | jq .epochs)
  [ "$epochs" -ge 1 ]
  # the buffer's 4096 pages are written at least once after epoch 0 (which is taken as dd
  # starts, before it has filled the buffer 16 times)
  [ "$(echo "$output" | jq '."pages-written"')" -ge 4096 ]
  run "$MIGBED" trace check t.trace
  [ "$status" -eq 0 ]
  [ "$output" = "t.trace: ok, $epochs epochs" ]
  run "$MIGBED" trace stat --json t.trace
  [ "$status" -eq 0 ]
  # the buffer (16M of anonymous memory, malloc'd: a little more) is a block
  [ "$(echo "$output" | jq '[.blocks[] | select(."size-bytes" >= 16777216)] | length')" -ge 1 ]
  run test -e t.trace.tmp
  [ "$status" -eq 1 ]
}

@test "record: a CMD that cannot run, a --pid that is not there, a --region not mapped: exit 2, nothing written" {
  cd "$BATS_TEST_TMPDIR"
  run "$MIGBED" record -o probe.trace -- true
  if [[ "$output" == *"no soft-dirty page tracking"* ]]; then
    skip "this kernel has no soft-dirty tracking"
  fi
  rm -f probe.trace   # (true may exit before the first scan: nothing recorded, exit 1; either is fine here)
  run "$MIGBED" record -o t.trace -- /nonexistent/cmd
  [ "$status" -eq 2 ]
  [[ "$output" == *"cannot run '/nonexistent/cmd': No such file or directory"* ]]
  run "$MIGBED" record -o u.trace --pid 2147483647
  [ "$status" -eq 2 ]
  [[ "$output" == *"--pid 2147483647: no such process"* ]]
  run "$MIGBED" record -o u.trace --pid "$$" --region 0x1000+4K
  [ "$status" -eq 2 ]
  [[ "$output" == *"--region 0x1000+4096 is not wholly mapped in process $$"* ]]
  run ls -A
  [ -z "$output" ]
}

@test "record: transparent huge pages make soft-dirty 2 MiB-granular: record says so, and --no-thp records without them" {
  cd "$BATS_TEST_TMPDIR"
  thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo none)
  # dd keeps rewriting one 16 MiB buffer until --duration ends it (SIGTERM); the last check of the
  # recorded memory's huge pages is taken while it still runs
  run --separate-stderr "$MIGBED" record -o nothp.trace --interval-ms 20 --duration 1 --json --no-thp -- \
    dd if=/dev/zero of=/dev/null bs=16M count=100000000
  echo "$stderr"
  if [[ "$stderr" == *"no soft-dirty page tracking"* ]]; then
    skip "this kernel has no soft-dirty tracking"
  fi
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq '.["thp-bytes"]')" -eq 0 ]
  [[ "$stderr" != *"transparent huge pages"* ]]
  if [[ "$thp" != *"[always]"* ]]; then
    skip "transparent huge pages are not on for every process here ($thp)"
  fi
  run --separate-stderr "$MIGBED" record -o thp.trace --interval-ms 20 --duration 1 --json -- \
    dd if=/dev/zero of=/dev/null bs=16M count=100000000
  echo "$stderr"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq '.["thp-bytes"]')" -ge 2097152 ]
  [[ "$stderr" == *"MiB of the recorded memory was in transparent huge pages"* ]]
}

@test "record-qemu: a vCPU sweeping guest RAM, recorded from QEMU's process at 4 KiB granularity, migrates and verifies" {
  cd "$BATS_TEST_TMPDIR"
  run "$BATS_TEST_DIRNAME/../../scripts/record-qemu.sh" q.trace 2
  echo "$output"
  if [[ "$output" == *"no soft-dirty page tracking"* ]]; then
    skip "this kernel has no soft-dirty tracking"
  fi
  [ "$status" -eq 0 ]
  [[ "$output" == *"writer vcpu"* ]]
  [[ "$output" != *"transparent huge pages, whose"* ]]
  passes=$(echo "$output" | sed -n "s/.*vCPU completed \([0-9]*\) passes.*/\1/p")
  [ "$passes" -ge 1 ]
  [[ "${lines[-1]}" == *"verdict=pass status=completed"* ]]
  run "$MIGBED" trace check q.trace
  [ "$status" -eq 0 ]
  # the writer's pages (guest-physical 16-48 MiB: pages 4096-12287) are written, in runs that
  # do not all start on a 2 MiB boundary (a huge page's 512 pages would)
  run awk '/^[0-9]+\/region/ { for (i = 2; i <= NF; i++) { split($i, r, "-"); if (r[1] >= 4096 && r[1] <= 12287) { n++; if (r[1] % 512) odd++ } } } END { print n + 0, odd + 0 }' q.trace
  echo "writer runs, of them not 2 MiB-aligned: $output"
  [ "${output% *}" -ge 3 ]
  [ "${output#* }" -ge 1 ]
}
