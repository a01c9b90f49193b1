#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The torture sweep on real rxe: every fallible call of a small migration is failed once
# (bounded by --max-runs, spread evenly over the sites); each rerun must end completed and
# verified or with a named cause - no hang, no corruption, no unnamed failure.

MIGBED=${MIGBED:-$BATS_TEST_DIRNAME/../../build/migbed}
load ../helpers

@test "verbs: torture sweep of the small scenario on rxe (bounded), every run ends properly" {
  # migbed's per-wait bound 4 s x scale (default 10 s): a 16 MiB guest's waits take well under
  # a second on rxe (measured: 380 s for 30 reruns at 10 s; 167 s at 4 s; 79 s since a failed
  # side stops at once instead of leaving its peer a wait-timeout, run.c finish_both)
  run "$MIGBED" torture "$BATS_TEST_DIRNAME/../data/torture-small.scn" --backend verbs \
    --max-runs 30 --watchdog-ms "$(scaled 60000)" --wait-timeout-ms "$(scaled 4000)" --json "$BATS_TEST_TMPDIR/t.json"
  echo "$output" | tail -40
  [ "$status" -eq 0 ]
  [ "$(jq -r .backend "$BATS_TEST_TMPDIR/t.json")" = verbs ]
  runs=$(jq '.runs | length' "$BATS_TEST_TMPDIR/t.json")
  echo "runs: $runs"
  [ "$runs" -ge 25 ]
}
