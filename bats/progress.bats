#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Progress on a terminal (README "Progress on long work", cli/progress.h): one status line on
# standard error rewritten with \r, under a pseudo-terminal (util-linux `script`); nothing when
# standard error is not a terminal or with --quiet; MIGBED_PROGRESS=1 forces it, =0 silences it.
# MIGBED_PROGRESS_INTERVAL_MS=0 makes every check show a line, so short work shows one.

load helpers
bats_require_minimum_version 1.5.0

setup() {
  progress_setup
}

@test "run: an info-migrate-like status line on a terminal, ended by a newline; none with --quiet" {
  on_tty "$MIGBED" run --guest 256M --duration-ms 500
  [ "$status" -eq 0 ]
  [[ "$output" == *$'\r'"run: round "*", remaining "*" MiB, transferred "*" MiB, dirty-pages-rate "*" pages/s, expected downtime "*" ms, virtual time "*" s"$'\e[K'* ]]
  [[ "$output" == *$'\e[K\r\n'"Migration status: completed"* ]]   # the final newline, then the report
  on_tty "$MIGBED" run --guest 256M --duration-ms 500 --quiet
  [ "$status" -eq 0 ]
  [[ "$output" != *"run: round "* ]]
  [[ "$output" == *"verdict=pass"* ]]
}

@test "run: nothing when standard error is not a terminal; MIGBED_PROGRESS=1 forces the line, =0 silences a terminal" {
  run --separate-stderr "$MIGBED" run --guest 256M --duration-ms 500
  [ "$status" -eq 0 ]
  [[ "$stderr" != *"run: round"* ]]
  MIGBED_PROGRESS=1 run --separate-stderr "$MIGBED" run --guest 256M --duration-ms 500
  [ "$status" -eq 0 ]
  [[ "$stderr" == $'\r'"run: round "* ]]
  MIGBED_PROGRESS=0 on_tty "$MIGBED" run --guest 256M --duration-ms 500
  [ "$status" -eq 0 ]
  [[ "$output" != *"run: round "* ]]
}

@test "the same line for trace gen and trace stat, swarm, sweep, torture and run DIR; none when piped or --quiet" {
  on_tty "$MIGBED" trace gen --pattern random --guest 64M --duration-ms 2000 --seed 1 -o g.trace
  [ "$status" -eq 0 ]
  [[ "$output" == *$'\r'"trace gen: "*" s of the workload, "*" epochs"* ]]
  on_tty "$MIGBED" trace stat g.trace
  [ "$status" -eq 0 ]
  [[ "$output" == *$'\r'"trace stat: g.trace: epoch "* ]]
  on_tty "$MIGBED" trace stat g.trace --quiet
  [[ "$output" != *"trace stat: g.trace: epoch"* ]]
  on_tty "$MIGBED" swarm --seeds 1..3
  [ "$status" -eq 0 ]
  [[ "$output" == *$'\r'"swarm: 1/3 runs, 0 findings, "* ]]
  on_tty "$MIGBED" swarm --seeds 1..3 --quiet
  [[ "$output" != *"swarm: 1/3 runs"* ]]
  on_tty "$MIGBED" sweep --guest 64M --duration-ms 300 --chunk-sizes 1M,4M
  [ "$status" -eq 0 ]
  [[ "$output" == *$'\r'"sweep: row 1/2 "* ]]
  on_tty "$MIGBED" torture "$BATS_TEST_DIRNAME/data/torture-small.scn" --sites connect
  [ "$status" -eq 0 ]
  [[ "$output" == *$'\r'"torture: 1/"*" runs, 0 bad"* ]]
  mkdir suite
  printf 'guest = 16M\nduration-ms = 200\n' >suite/a.scn
  cp suite/a.scn suite/b.scn
  on_tty "$MIGBED" run suite
  [ "$status" -eq 0 ]
  [[ "$output" == *$'\r'"run: scenario 2/2 b: 1 passed, 0 failed, 0 could not run"* ]]
  run --separate-stderr "$MIGBED" swarm --seeds 1..3
  [[ "$stderr" != *"swarm: 1/3 runs"* ]]
  run --separate-stderr "$MIGBED" trace stat g.trace
  [ -z "$stderr" ]
}
