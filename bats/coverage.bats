#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# `make coverage-check` (coverage/check.sh) as CI uses it: a named cause that no recorded run
# produces fails the gate, naming the cause; coverage under a floor of coverage/thresholds
# fails it; a floor well below the measure passes with a reminder to raise it; bad lines in
# the thresholds or the allow-list are bad input. Fast: a few model runs and small made-up
# tracefiles, never the whole suite.
load helpers

ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd -P)
CHECK=$ROOT/coverage/check.sh

setup() {
  T=$BATS_TEST_TMPDIR
  "$MIGBED" causes --json >"$T/causes.json"
  jq -e 'any(.[]; .name == "REMOTE_ACCESS_ERROR")' "$T/causes.json" >/dev/null
}

# The scenario Bats of DIR, generated and run as `make check` does, leaving their JSON in RESULTS.
run_scenario_bats() {  # DIR RESULTS
  rm -rf "$2"
  "$ROOT/scripts/gen-scenario-bats.sh" "$1" "$T/gen/scenarios.bats"
  run env MIGBED="$MIGBED" MIGBED_RESULTS_DIR="$2" bats --tap "$T/gen/scenarios.bats"
  echo "$output"
  [ "$status" -eq 0 ]
}

produced() {  # RESULTS: the causes the runs in RESULTS produced (the run's and each side's), one per line
  jq -r '.cause, .src.cause, .dst.cause' "$1"/*.json | grep -vx NONE | sort -u
}

# An allow-list of every cause except those given on stdin, so that the check hinges on them alone.
allow_all_but() {  # FILE < CAUSES
  local keep
  keep=$(cat)
  jq -r '.[].name' "$T/causes.json" | grep -vxF "$keep" \
    | sed 's/$/  not under test in this Bats test/' >"$1"
}

# A tracefile with BRH of BRF branches in transport/ and all 10 of 10 in faults/.
tracefile() {  # FILE BRF BRH
  printf 'TN:\nSF:%s/transport/x.c\nFNF:1\nFNH:1\nBRF:%d\nBRH:%d\nLF:10\nLH:10\nend_of_record\n' "$ROOT" "$2" "$3" >"$1"
  printf 'SF:%s/faults/y.c\nFNF:1\nFNH:1\nBRF:10\nBRH:10\nLF:4\nLH:4\nend_of_record\n' "$ROOT" >>"$1"
}

@test "coverage-check: removing the only scenario that produces a cause fails the check, naming that cause" {
  mkdir -p "$T/scenarios"
  cp "$ROOT/bats/scenarios/model-idle-1m.scn" "$ROOT/bats/scenarios/model-mismatch-64m-to-1m.scn" "$T/scenarios/"
  run_scenario_bats "$T/scenarios" "$T/results"
  [ -f "$T/results/model-mismatch-64m-to-1m.json" ]
  [ -f "$T/results/model-idle-1m.json" ]
  produced "$T/results" >"$T/produced"
  grep -qx REMOTE_ACCESS_ERROR "$T/produced"
  allow_all_but "$T/allow" <"$T/produced"

  run "$CHECK" --no-lcov --results "$T/results" --causes "$T/causes.json" --allow "$T/allow"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"coverage-check: passed"* ]]
  [[ "$output" != *FAIL* ]]

  rm "$T/scenarios/model-mismatch-64m-to-1m.scn"
  run_scenario_bats "$T/scenarios" "$T/results"
  [ ! -f "$T/results/model-mismatch-64m-to-1m.json" ]
  run "$CHECK" --no-lcov --results "$T/results" --causes "$T/causes.json" --allow "$T/allow"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"FAIL: cause REMOTE_ACCESS_ERROR ("*") is produced by no test"* ]]
  [[ "${lines[-1]}" == "coverage-check: FAILED" ]]
  # every cause it names is one only the removed scenario produced
  while read -r c; do grep -qx "$c" "$T/produced"; done < <(sed -n 's/.*FAIL: cause \([A-Z_]*\) .*/\1/p' <<<"$output")
}

@test "coverage-check: branch coverage under its floor fails, naming folder, numbers and the thresholds line" {
  tracefile "$T/lcov.info" 200 150
  printf '# floors\ntransport branches 80.0\nfaults branches 100.0\n' >"$T/thresholds"
  mkdir -p "$T/results"
  : | allow_all_but "$T/allow"
  run "$CHECK" --results "$T/results" --causes "$T/causes.json" --allow "$T/allow" --lcov "$T/lcov.info" \
    --thresholds "$T/thresholds" --root "$ROOT"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"FAIL: transport/ branches coverage 75.0% (150 of 200) is under its floor 80.0% (${T}/thresholds:2)"* ]]
  [[ "$output" == *"ok: faults/ branches 100.0% >= 100.0%"* ]]
}

@test "coverage-check: coverage well above its floor passes and asks for the floor to be raised" {
  tracefile "$T/lcov.info" 200 170
  printf 'transport branches 80.0\n' >"$T/thresholds"
  mkdir -p "$T/results"
  : | allow_all_but "$T/allow"
  run "$CHECK" --results "$T/results" --causes "$T/causes.json" --allow "$T/allow" --lcov "$T/lcov.info" \
    --thresholds "$T/thresholds" --root "$ROOT"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"transport/ branches 85.0% >= 80.0%; it is 5.0 points above: raise the floor in ${T}/thresholds:1 to 85.0"* ]]
  # within half a point: no reminder
  printf 'transport branches 84.6\n' >"$T/thresholds"
  run "$CHECK" --results "$T/results" --causes "$T/causes.json" --allow "$T/allow" --lcov "$T/lcov.info" \
    --thresholds "$T/thresholds" --root "$ROOT"
  [ "$status" -eq 0 ]
  [[ "$output" != *"raise the floor"* ]]
}

@test "coverage-check: a bad thresholds line or allow-list line is bad input (exit 2, FILE:LINE: problem)" {
  tracefile "$T/lcov.info" 10 10
  mkdir -p "$T/results"
  : | allow_all_but "$T/allow"
  printf '# floors\ntransport branches 80.0\ntransport branchez 80\n' >"$T/thresholds"
  run "$CHECK" --results "$T/results" --causes "$T/causes.json" --allow "$T/allow" --lcov "$T/lcov.info" \
    --thresholds "$T/thresholds" --root "$ROOT"
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"$T/thresholds:3: metric \"branchez\" is not lines, functions or branches"* ]]
  printf 'transport branches 180\n' >"$T/thresholds"
  run "$CHECK" --results "$T/results" --causes "$T/causes.json" --allow "$T/allow" --lcov "$T/lcov.info" \
    --thresholds "$T/thresholds" --root "$ROOT"
  [ "$status" -eq 2 ]
  [[ "$output" == *"$T/thresholds:1: \"180\" is not a percentage"* ]]
  printf 'INTERNAL  a bug\nNO_SUCH_CAUSE  typo\nTIMEOUT\n' >"$T/allow2"
  run "$CHECK" --no-lcov --results "$T/results" --causes "$T/causes.json" --allow "$T/allow2"
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"$T/allow2:2: unknown cause 'NO_SUCH_CAUSE' (see migbed causes)"* ]]
  [[ "$output" == *"$T/allow2:3: TIMEOUT has no reason"* ]]
}

@test "coverage-check: without make coverage's data it says what to run (exit 2)" {
  run "$CHECK" --results "$T/none" --causes "$T/causes.json"
  [ "$status" -eq 2 ]
  [[ "$output" == *"no run results in $T/none (run \`make coverage\` first)"* ]]
}
