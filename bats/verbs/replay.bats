#!/usr/bin/env bats
# Determinism on real verbs (the contract: the same inputs and seed give the same sequence of
# actions per side and the same outcome on verbs, not the same times; `migbed replay` is the
# comparison: the CM events and completions rxe delivers when it does, and the teardown after
# a failure, are not actions) and reproducer bundles from the fault matrix replayed on rxe
# (issue 13: they reproduce the cause there too).

MIGBED=${MIGBED:-$BATS_TEST_DIRNAME/../../build/migbed}
S=$BATS_TEST_DIRNAME/../scenarios
load ../helpers

setup() {
  cd "$BATS_TEST_TMPDIR"
}

@test "verbs: the same run again takes the same actions on each side, with the same outcome (replay of a completed run)" {
  # --expect failed:TIMEOUT makes the completed run miss its expectation, so it writes a bundle
  run "$MIGBED" run --backend verbs --guest 32M --duration-ms 300 --seed 11 "${MIGBED_WAIT[@]}" \
    --expect failed:TIMEOUT --bundle a --quiet
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "${lines[-1]}" == *"status=completed cause=NONE"* ]]
  run "$MIGBED" replay a
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"reproduced (verbs: the same actions per side up to the first failure, status and cause)"* ]]
  # and the comparison sees the run: each side took its own actions
  run grep -c ' src ctl_send ' a/events.log
  [ "$output" -gt 10 ]
}

@test "verbs: fault-matrix runs that miss their expectation write bundles that replay on rxe with the same cause" {
  for scn in fault-reg-mr-src-chunk-enomem fault-reg-mr-dst-chunk-enomem fault-modify-qp-src-rts; do
    cause=$(sed -n 's/^expect = failed://p' "$S/$scn.scn")
    # --expect completed: the run misses it (exit 1) and writes its bundle
    run "$MIGBED" run "$S/$scn.scn" --backend verbs --mem bytes --wait-timeout-ms "$(scaled 5000)" \
      --expect completed --bundle "b-$scn"
    echo "$scn: $output" | tail -3
    [ "$status" -eq 1 ]
    [[ "${lines[-1]}" == *"status=failed cause=$cause "* ]]
    [ -d "b-$scn" ]
    run "$MIGBED" replay "b-$scn"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"reproduced"* ]]
  done
}
