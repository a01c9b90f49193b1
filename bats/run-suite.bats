#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# migbed run DIR|SCENARIO... (README "Many scenarios: CI formats"): each scenario judged against its
# own expectation, a line each and a summary, TAP (read by prove's TAP parser), JUnit XML (checked
# by xmllint), JSON; exit 0/1/2; per-run outputs refused; bad input named, the others still run.

load helpers
bats_require_minimum_version 1.5.0

setup() {
  cd "$BATS_TEST_TMPDIR"
  mkdir suite
  printf 'guest = 16M\nduration-ms = 200\nexpect = completed\n' >suite/a-completes.scn
  printf 'guest = 16M\nduration-ms = 200\nchunk-size = 64M\ndst-chunk-size = 1M\nexpect = failed:REMOTE_ACCESS_ERROR\n' >suite/b-mismatch.scn
  printf 'guest = 16M\nduration-ms = 200\nexpect = failed:TIMEOUT\n' >suite/c-wrong-expectation.scn
  printf 'not a scenario line\n' >bad.scn
  printf 'notes\n' >suite/README.txt
}

@test "run DIR: one line per scenario (sorted, *.scn only) and a summary; a missed expectation is exit 1; --json per scenario" {
  run "$MIGBED" run suite --json s.json
  echo "$output"
  [ "$status" -eq 1 ]
  [ "${#lines[@]}" -eq 4 ]
  [[ "${lines[0]}" == "ok    a-completes: verdict=pass status=completed cause=NONE side=-" ]]
  [[ "${lines[1]}" == "ok    b-mismatch: verdict=pass status=failed cause=REMOTE_ACCESS_ERROR side=src" ]]
  [[ "${lines[2]}" == "FAIL  c-wrong-expectation: verdict=fail status=completed cause=NONE side=-" ]]
  [[ "${lines[3]}" == "migbed: run: 3 scenarios: 2 passed, 1 failed, 0 could not run ("* ]]
  run jq -r '[.scenarios[] | "\(.name) \(.result) \(.status) \(.cause)"] | join(",")' s.json
  [ "$output" = "a-completes pass completed NONE,b-mismatch pass failed REMOTE_ACCESS_ERROR,c-wrong-expectation fail completed NONE" ]
  run jq -c .summary s.json
  [ "$output" = '{"scenarios":3,"passed":2,"failed":1,"errors":0}' ]
  run jq -r '.scenarios[2].detail' s.json
  [[ "$output" == *"expected: failed:TIMEOUT"* ]]
}

@test "run --tap: TAP that prove's parser reads (3 tests, 1 failed); --junit: XML that xmllint accepts, with the failure and its cause" {
  run "$MIGBED" run suite/a-completes.scn suite/b-mismatch.scn suite/c-wrong-expectation.scn --tap --junit j.xml
  echo "$output"
  [ "$status" -eq 1 ]
  [ "${lines[0]}" = "TAP version 13" ]
  [ "${lines[1]}" = "1..3" ]
  printf '%s\n' "$output" >out.tap
  run perl -MTAP::Parser -e '
    my $p = TAP::Parser->new({ source => "out.tap" });
    while (my $r = $p->next) {}
    printf "tests=%d passed=%d failed=%d errors=%d\n", $p->tests_run, scalar($p->passed), scalar($p->failed), scalar($p->parse_errors);'
  echo "$output"
  [ "$output" = "tests=3 passed=2 failed=1 errors=0" ]
  command -v xmllint || skip "xmllint (libxml2-utils) is not installed"
  run xmllint --noout j.xml
  [ "$status" -eq 0 ]
  run xmllint --xpath 'string(/testsuites/@tests)' j.xml
  [ "$output" = 3 ]
  run xmllint --xpath 'count(//testcase[failure])' j.xml
  [ "$output" = 1 ]
  run xmllint --xpath 'string(//testcase[@name="c-wrong-expectation"]/failure/@message)' j.xml
  [ "$output" = "verdict=fail status=completed cause=NONE side=-" ]
}

@test "run DIR with a scenario that cannot run: named (FILE:LINE), the others still run, exit 2; JUnit error; per-run outputs and an empty DIR refused before any run" {
  cp bad.scn suite/0-bad.scn
  run "$MIGBED" run suite --junit j.xml
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "${lines[0]}" == "ERROR 0-bad: "*"0-bad.scn:1:"* ]]
  [[ "${lines[1]}" == "ok    a-completes: "* ]]
  [[ "$output" == *"4 scenarios: 2 passed, 1 failed, 1 could not run"* ]]
  command -v xmllint || skip "xmllint (libxml2-utils) is not installed"
  run xmllint --xpath 'count(//testcase[error])' j.xml
  [ "$output" = 1 ]
  rm j.xml
  for opt in "--events ev" "--timeline t.json" "--bundle b" "--fault-counts fc"; do
    # shellcheck disable=SC2086
    run "$MIGBED" run suite $opt --junit j.xml
    echo "$opt: $output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"names one run's file: with several scenarios it is refused"* ]]
    [ ! -e j.xml ]
  done
  mkdir empty
  run "$MIGBED" run empty
  [ "$status" -eq 2 ]
  [[ "$output" == *"empty: no *.scn scenario in this directory"* ]]
  run "$MIGBED" run suite --junit nodir/j.xml
  [ "$status" -eq 2 ]
  [[ "$output" == *"nodir/j.xml"* ]]
  run "$MIGBED" run suite --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"usage: migbed run DIR|SCENARIO... [--junit FILE] [--tap]"* ]]
}

@test "run DIR: the options apply to every scenario, over its own keys; a lone SCENARIO keeps the single-run report" {
  run "$MIGBED" run suite/a-completes.scn suite/b-mismatch.scn --dst-chunk-size 64M
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "${lines[1]}" == "FAIL  b-mismatch: verdict=fail status=completed cause=NONE side=-" ]]
  run "$MIGBED" run suite/a-completes.scn
  [ "$status" -eq 0 ]
  [[ "$output" == *"Migration status: completed"* ]]
}

@test "run DIR: --json - makes standard output the JSON alone (the lines go to standard error); with --tap it is refused; an option without its value is refused before any run; TAP's YAML is quoted" {
  run --separate-stderr "$MIGBED" run suite/a-completes.scn suite/b-mismatch.scn --json -
  [ "$status" -eq 0 ]
  run jq -c .summary <<<"$output"
  [ "$output" = '{"scenarios":2,"passed":2,"failed":0,"errors":0}' ]
  run "$MIGBED" run suite --json - --tap
  [ "$status" -eq 2 ]
  [[ "$output" == *"--tap and --json - would both write to standard output"* ]]
  run "$MIGBED" run suite --seed
  [ "$status" -eq 2 ]
  [ "$output" = "migbed: run: --seed needs a value" ]
  cp bad.scn "suite/it's-bad.scn"
  run "$MIGBED" run suite --tap
  [ "$status" -eq 2 ]
  [[ "$output" == *"  file: 'suite/it''s-bad.scn'"* ]]
  [[ "$output" == *"  result: 'suite/it''s-bad.scn:1: "* ]]
}
