#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# JSON input (issue 17): every command that reads a JSON file reads it with the one reader
# (libjansson: sim/json_in.h; explain's query-migrate/QMP logs in run/explain.c). Each document of the bad-JSON corpus (bats/data/json-bad, its
# defect's LINE:COLUMN in bats/data/json-bad/expect) given where a command reads JSON exits 2
# naming FILE:LINE:COLUMN and jansson's words, before anything runs, and writes nothing.

load helpers
bats_require_minimum_version 1.5.0

BAD=$BATS_TEST_DIRNAME/data/json-bad

setup_file() {
  cd "$BATS_FILE_TMPDIR" || return 1
  "$MIGBED" run --fault 'reg_mr@dst #4 -> errno(ENOMEM)' --seed 3 --bundle good >/dev/null 2>&1 || [ $? -eq 1 ] || return 1   # exit 1: the run misses "completed"
  [ -s good/result.json ] || return 1
}

setup() {
  cd "$BATS_TEST_TMPDIR"
  export TMPDIR=$BATS_TEST_TMPDIR
}

# each_bad CMD...: for every corpus entry NAME, a copy of the good bundle as NAME with NAME.json
# as its result.json; `migbed CMD NAME` must exit 2 and name NAME/result.json:LINE:COLUMN.
each_bad() {
  local n=0 name pos words
  while read -r name pos words; do
    case $name in '#'* | '') continue ;; esac
    rm -rf "${name%.json}"
    cp -r "$BATS_FILE_TMPDIR/good" "${name%.json}"
    cp "$BAD/$name" "${name%.json}/result.json"
    run --separate-stderr "$MIGBED" "$@" "${name%.json}"
    echo "$name: status $status: $stderr"
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"${name%.json}/result.json:$pos: $words"* ]]
    [[ "$output" != *"reproduced"* ]]
    [ ! -e "${name%.json}.shrunk" ]
    n=$((n + 1))
  done <"$BAD/expect"
  [ "$n" -eq 7 ]
}

@test "the good bundle replays (the corpus's failures are the JSON's, not the bundle's)" {
  run "$MIGBED" replay "$BATS_FILE_TMPDIR/good"
  [ "$status" -eq 0 ]
  [[ "$output" == *": reproduced (model:"* ]]
}

@test "replay: a bundle whose result.json is not JSON exits 2 with FILE:LINE:COLUMN, before the rerun" {
  each_bad replay
}

@test "shrink: a bundle whose result.json is not JSON exits 2 with FILE:LINE:COLUMN and writes nothing" {
  each_bad shrink
}

@test "explain: a query-migrate/QMP log that is not JSON exits 2 with FILE:LINE:COLUMN and writes nothing" {
  local name pos words n=0
  while read -r name pos words; do
    case $name in '#'* | '' | empty.json | two-documents.json) continue ;; esac   # text; two replies
    rm -rf so r.json
    run --separate-stderr "$MIGBED" explain "$BAD/$name" --json r.json --scenario-out so
    echo "$name: status $status: $stderr"
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"$BAD/$name:$pos: $words"* ]]
    [ ! -e r.json ]
    [ ! -e so ]
    n=$((n + 1))
  done <"$BAD/expect"
  [ "$n" -eq 5 ]
  # documents one after another (QMP replies) are JSON: read, each desc a line
  run "$MIGBED" explain "$BAD/two-documents.json"
  [ "$status" -eq 1 ]
  [[ "$output" == *"no cause fits these logs"* ]]
}
