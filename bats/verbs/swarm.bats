#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# migbed swarm on real soft-RoCE (docs/swarm.md "On verbs"): seeded random configurations
# restricted to what runs on rxe in a short run, with fault rules only at the sites that go
# through real verbs and rdma_cm calls; the model's oracles (the same cause tables), the
# watchdog, and the verbs lane's leak check after every run (no fd, QP, MR, PD or CM id left).
# An rxe stall (TRANSPORT_RETRY_EXCEEDED no fired fault explains) runs its seed once more,
# loudly (the swarm's own "# rxe stalled" line, passed on to TAP as the lane's tests do).

MIGBED=${MIGBED:-$BATS_TEST_DIRNAME/../../build/migbed}
load ../helpers

# A fixed seed range (measured: see docs/swarm.md "On verbs"); its runs must all be proper.
SEEDS=19..28
SWARM_ARGS=(--backend verbs --wait-timeout-ms "$(scaled 4000)" --watchdog-ms "$(scaled 60000)")

setup() {
  cd "$BATS_TEST_TMPDIR"
}

# The swarm's rxe stall lines, on TAP's channel (make check counts them).
pass_on_stalls() {
  local n
  n=$(awk '/^# rxe stalled/ { n++ } END { print n + 0 }' <<<"$output")
  if [ "$n" -gt 0 ]; then
    grep '^# rxe stalled' <<<"$output" >&3
  fi
}

@test "verbs swarm: a fixed seed range on rxe, every run proper (explained cause, no leak, no hang)" {
  run "$MIGBED" swarm "${SWARM_ARGS[@]}" --seeds "$SEEDS" --bundles b --json s.json
  echo "$output"
  pass_on_stalls
  [ "$status" -eq 0 ]
  [ "$(jq '.summary.runs' s.json)" -eq 10 ]
  [ "$(jq '.summary.findings' s.json)" -eq 0 ]
  # every plan is a verbs plan, and its line is the replay
  [ "$(jq '[.runs[] | select(.config | test("^--seed [0-9]+ --backend verbs --wait-timeout-ms "))] | length' s.json)" -eq 10 ]
  # only the fault sites that go through real verbs calls (no msg.*, post_recv, alloc)
  [ "$(jq '[.runs[] | select(.config | test("msg[.]|post_recv|alloc@|post_send@"))] | length' s.json)" -eq 0 ]
  # the range has runs that complete and runs that fail with fired faults
  [ "$(jq '.summary.completed' s.json)" -ge 3 ]
  [ "$(jq '[.runs[] | select(.status == "failed" and .fired > 0)] | length' s.json)" -ge 2 ]
  no_rdma_leftovers
}

@test "verbs swarm: the leak oracle names an fd a run left open (a test hook leaks one)" {
  run env MIGBED_SWARM_TEST_LEAK_RUN=1 "$MIGBED" swarm "${SWARM_ARGS[@]}" --seeds 3 --shrink-max-runs 0 --bundles b --json l.json
  echo "$output"
  [ "$status" -eq 1 ]
  [ "$(jq -r '.runs[0].finding' l.json)" = leak ]
  [[ "$(jq -r '.runs[0].detail' l.json)" == "the run left fd "*" (/dev/null) open" ]]
  [[ "$output" == *"FINDING leak"* ]]
  no_rdma_leftovers
}

@test "verbs swarm: a seed's line replays on rxe with the same actions per side and the same cause" {
  # seed 297: reg_mr@src #2 -> errno(ENOMEM) fires (not a completion-site rule, whose timing rxe decides)
  run "$MIGBED" swarm "${SWARM_ARGS[@]}" --seeds 297 --json one.json
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(jq '.runs[0].fired' one.json)" -ge 1 ]
  eval "set -- $(jq -r '.runs[0].config' one.json)"
  run "$MIGBED" run "$@" --expect failed:INTERNAL --bundle b1 --quiet
  echo "$output"
  [ "$status" -eq 1 ]
  [ -d b1 ]
  run "$MIGBED" replay b1
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"reproduced (verbs: the same actions per side up to the first failure, status and cause)"* ]]
}
