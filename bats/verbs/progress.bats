#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Progress of the two-process commands on a terminal (README "Progress on long work"): `source`
# shows the run's status line and `dest` its own (waiting, registrations, pinned, control
# messages, stream), each on standard error rewritten with \r, under a pseudo-terminal
# (util-linux `script`); nothing with --quiet. On rxe (the verbs lane): source and dest are two
# processes over a real RDMA connection. bats/progress.bats has the single-process commands.

MIGBED=${MIGBED:-$BATS_TEST_DIRNAME/../../build/migbed}
load ../helpers
bats_require_minimum_version 1.5.0

setup() {
  progress_setup
}

@test "source and dest: the run's status line on a terminal, the destination's own; none with --quiet" {
  local args=(--guest 64M --duration-ms 500 --seed 1)
  printf -v q '%q ' "$MIGBED" dest --listen 198.18.0.1:29390 --ready-file d.ready "${args[@]}" \
    --accept-timeout-ms "$(scaled 30000)"
  script -qec "$q" d.tty >/dev/null 2>&1 3>&- &
  local spid=$!
  run wait_until 30 _ready_or_gone d.ready "$spid"
  [ -s d.ready ]
  on_tty "$MIGBED" source --connect 198.18.0.1:29390@198.18.0.2 "${args[@]}"
  [ "$status" -eq 0 ]
  [[ "$output" == *$'\r'"source: round "*", remaining "*" MiB, transferred "*" MiB, dirty-pages-rate "*$'\e[K'* ]]
  run wait "$spid"
  [ "$status" -eq 0 ]
  run cat d.tty
  [[ "$output" == *$'\r'"dest: "*$'\e[K'* ]]
  [[ "$output" == *"verdict=pass"* ]]
  rm -f d.ready
  printf -v q '%q ' "$MIGBED" dest --listen 198.18.0.1:29391 --ready-file d.ready "${args[@]}" --quiet \
    --accept-timeout-ms "$(scaled 30000)"
  script -qec "$q" dq.tty >/dev/null 2>&1 3>&- &
  spid=$!
  run wait_until 30 _ready_or_gone d.ready "$spid"
  [ -s d.ready ]
  on_tty "$MIGBED" source --connect 198.18.0.1:29391@198.18.0.2 "${args[@]}" --quiet
  [ "$status" -eq 0 ]
  [[ "$output" != *"source: round "* ]]
  run wait "$spid"
  [ "$status" -eq 0 ]
  run cat dq.tty
  [[ "$output" != *$'\r'"dest: "* ]]
}
