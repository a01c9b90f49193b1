#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# migbed torture (docs/faults.md "Torture"): the sweep of a small scenario with every
# fallible call failed once (inside make check), sharding, --max-runs, determinism, that
# a crashing or hanging run fails the sweep, and that a defective trace is bad input (exit 2).
# Its --json's output-file rules are tested with run's in bad-input.bats.

load helpers
bats_require_minimum_version 1.5.0

SCN=$BATS_TEST_DIRNAME/data/torture-small.scn

setup() {
  cd "$BATS_TEST_TMPDIR"
  export TMPDIR=$BATS_TEST_TMPDIR
}

# "site side call" of every run in a sweep JSON
runs_of() {
  jq -r '.runs[] | "\(.site) \(.side) \(.call)"' "$1" | sort
}

@test "torture --help" {
  run "$MIGBED" torture --help
  [ "$status" -eq 0 ]
  for o in --max-runs --shard --json --watchdog-ms --jobs --sites; do [[ "$output" == *"$o"* ]]; done
  [[ "$output" == *"exit status"* ]]
}

# (its speed is make bench's business, not a timed assertion: under load this sweep takes longer)
@test "sweep: every fallible call of a small migration failed once, every run ends properly" {
  run "$MIGBED" torture "$SCN" --jobs 2 --max-runs 100000 --json sweep.json
  echo "$output" | tail -n 5
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == "SITE"*"SIDE"*"CALL"*"ACTION"*"VERDICT"*"CAUSE"*"BY" ]]
  [[ "${lines[-1]}" =~ ^torture:\ ([0-9]+)\ runs\ \(([0-9]+)\ calls.*\ 0\ bad ]]
  n=${BASH_REMATCH[1]}
  [ "$n" -gt 300 ]
  [ "$n" -eq "${BASH_REMATCH[2]}" ]     # no budget cut: one run per call
  [ "$(jq '.runs | length' sweep.json)" -eq "$n" ]
  [ "$(jq -r .ok sweep.json)" = true ]
  # one run per call of each (site, side) the baseline counted
  [ "$(jq '[.groups[].calls] | add' sweep.json)" -eq "$n" ]
  jq -e '[.runs[] | select(.verdict != "completed" and .verdict != "failed")] | length == 0' sweep.json
  jq -e '[.runs[] | select(.verdict == "failed" and (.cause == "INTERNAL" or .cause == "" or .cause == "NONE"))] | length == 0' sweep.json
  # the sweep covers the sites of the issue, on both sides where they exist
  for g in "reg_mr src" "reg_mr dst" "dereg_mr dst" "post_send.write src" "post_send.send dst" "post_recv src" \
           "wc.write src" "wc.recv dst" "modify_qp src" "connect src" "accept dst" "cm src" "msg.ready dst" \
           "msg.register_request src" "msg.compress src"; do
    jq -e --arg s "${g% *}" --arg d "${g#* }" '[.groups[] | select(.site == $s and .side == $d and .runs == .calls and .runs > 0)] | length == 1' sweep.json
  done
  # failing control-buffer registrations end in their own cause
  jq -e '[.runs[] | select(.site == "reg_mr" and .call <= 3)] | all(.cause == "CONTROL_REG_FAILED")' sweep.json
  [ -z "$(find "$BATS_TEST_TMPDIR" -maxdepth 1 -name 'migbed-torture-*')" ]    # its folder is gone
}

@test "shards split the sweep: disjoint, and together the whole" {
  sites='reg_mr,dereg_mr,ep_*,modify_qp,connect,accept'
  "$MIGBED" torture "$SCN" --sites "$sites" --json all.json >/dev/null
  for k in 1 2 3; do
    run "$MIGBED" torture "$SCN" --sites "$sites" --shard $k/3 --json s$k.json
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" == *"shard $k/3"* ]]
  done
  [ "$(runs_of all.json | wc -l)" -gt 40 ]
  diff <(runs_of all.json) <(cat <(runs_of s1.json) <(runs_of s2.json) <(runs_of s3.json) | sort)
  [ -z "$(cat <(runs_of s1.json) <(runs_of s2.json) <(runs_of s3.json) | sort | uniq -d)" ]
}

@test "--max-runs spreads the budget over every site, first and last call included" {
  run "$MIGBED" torture "$SCN" --sites 'reg_mr,post_recv,msg.*' --max-runs 24 --json m.json
  [ "$status" -eq 0 ]
  [ "$(jq '.runs | length' m.json)" -eq 24 ]
  groups=$(jq '.groups | length' m.json)
  [ "$groups" -ge 10 ]
  jq -e '.groups | all(.runs >= 1)' m.json
  jq -e '[.groups[].runs] | add == 24' m.json
  # a group with two runs or more: its first and last call are among them
  for g in $(jq -r '.groups[] | select(.runs >= 2) | "\(.site):\(.side):\(.calls)"' m.json); do
    IFS=: read -r s d c <<<"$g"
    jq -e --arg s "$s" --arg d "$d" --argjson c "$c" \
      '[.runs[] | select(.site == $s and .side == $d) | .call] | (index(1) != null and index($c) != null)' m.json
  done
}

@test "the same sweep gives the same table and JSON" {
  for i in 1 2; do
    "$MIGBED" torture "$SCN" --sites 'msg.*,wc.send' --max-runs 40 --json j$i.json >t$i.txt
  done
  cmp j1.json j2.json
  cmp t1.txt t2.txt
}

@test "a run that crashes fails the sweep and is named in the table" {
  # ERROR messages are only sent after a failure: the baseline completes, failing runs die
  run "$MIGBED" torture "$SCN" --sites 'reg_mr' --fault 'msg.error -> die' --json c.json
  [ "$status" -eq 1 ]
  [[ "$output" == *" crash "* ]]
  [[ "$output" == *"^ killed by signal 9 (Killed)"* ]]
  [[ "${lines[-1]}" =~ crash\ [1-9] ]]
  [ "$(jq -r .ok c.json)" = false ]
}

@test "the watchdog kills a run that outlives it: a hang" {
  run "$MIGBED" torture --mem bytes --guest 512M --watchdog-ms 150
  [ "$status" -eq 1 ]
  [[ "$output" == *"does not complete without faults (hang: killed by the watchdog after 150 ms of wall time)"* ]]
}

@test "a scenario that fails without faults has nothing to sweep" {
  run "$MIGBED" torture "$SCN" --fault 'connect -> errno(ECONNREFUSED)'
  [ "$status" -eq 1 ]
  [[ "$output" == *"does not complete without faults (failed CONNECT_REJECTED"* ]]
}

@test "bad usage exits 2 with a message" {
  for args in "--shard 0/2" "--shard 3/2" "--shard 1/2x" "--max-runs 0" "--jobs 100" "--watchdog-ms 5" "--max-runs"; do
    run "$MIGBED" torture "$SCN" $args
    [ "$status" -eq 2 ]
    [[ "$output" == "migbed: torture: --"* ]]
  done
  run "$MIGBED" torture "$SCN" --bogus 1
  [ "$status" -eq 2 ]
  [[ "$output" == *"unknown option '--bogus'"* ]]
  run "$MIGBED" torture nonexistent.scn
  [ "$status" -eq 2 ]
  [[ "$output" == *"nonexistent.scn: cannot open scenario"* ]]
  run "$MIGBED" torture "$SCN" --fault 'reg_mr -> status(GENERAL_ERR)'
  [ "$status" -eq 2 ]
  [[ "$output" == *"col 11: action 'status' does not apply to site 'reg_mr'"* ]]
}

@test "--sites: a glob that matches no fault site exits 2 naming it, before any run" {
  for sites in 'reg_mrr' 'reg_mr,wc.wirte' 'msg.*,nosuch*'; do
    run "$MIGBED" torture "$SCN" --sites "$sites" --json sweep.json
    echo "$sites: $output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--sites: '"*"' matches no fault site"* ]]
    [ ! -e sweep.json ]
  done
  run "$MIGBED" torture "$SCN" --sites 'reg_mr,wc.wirte'
  [[ "$output" == *"'wc.wirte' matches no fault site"* ]]
  for sites in '' ','; do
    run "$MIGBED" torture "$SCN" --sites "$sites"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--sites: no site given"* ]]
  done
  # the globs that do match still select as before
  run "$MIGBED" torture "$SCN" --sites 'connect,accept' --json sweep.json
  [ "$status" -eq 0 ]
  [ "$(jq -r '[.groups[].site] | join(" ")' sweep.json)" = "connect accept" ]
}

@test "a defective trace is bad input: exit 2 with run's FILE:LINE: problem, no sweep" {
  local f=$BATS_TEST_DIRNAME/data/traces/bad/time-backwards.trace
  run --separate-stderr "$MIGBED" run --trace "$f"
  [ "$status" -eq 2 ]
  want=${stderr#migbed: run: }
  [[ "$want" == "$f:7: "* ]]
  run --separate-stderr "$MIGBED" torture --trace "$f" --json sweep.json
  echo "$stderr"
  [ "$status" -eq 2 ]
  [ "$stderr" = "migbed: torture: $want" ]
  [ -z "$output" ]
  [ ! -e sweep.json ]
  [ -z "$(find "$BATS_TEST_TMPDIR" -maxdepth 1 -name 'migbed-torture-*')" ]
}
