#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# --timeline / `migbed timeline`: the run as a Chrome/Perfetto trace (run/timeline.h): valid JSON
# with the tracks a user opens it for, the same picture from the event log, deterministic, and
# bad input refused (exit 2, FILE:LINE, nothing written).

load helpers
bats_require_minimum_version 1.5.0

setup() {
  cd "$BATS_TEST_TMPDIR"
}

SMALL=(--guest 64M --workers 2 --worker-bytes 8M --seed 3)

@test "run --timeline: the tracks (setup, every round, switchover, downtime, chunk registrations, writes in flight), valid JSON" {
  run "$MIGBED" run "${SMALL[@]}" --quiet --json r.json --timeline tl.json
  echo "$output"
  [ "$status" -eq 0 ]
  run jq -e '.traceEvents | length > 0' tl.json
  [ "$status" -eq 0 ]
  run jq -r '[.traceEvents[] | select(.name == "process_name") | .args.name] | join(",")' tl.json
  [ "$output" = "migration,source,dest,other" ]
  # one span per round, as many as the result counts
  rounds=$(jq '.metrics.migbed.rounds' r.json)
  run jq '[.traceEvents[] | select(.ph == "X" and (.name | startswith("round ")))] | length' tl.json
  echo "rounds: $rounds, spans: $output"
  [ "$output" -eq "$rounds" ]
  run jq '[.traceEvents[] | select(.ph == "X" and (.name == "setup" or .name == "downtime (VM stopped)"))] | length' tl.json
  [ "$output" -eq 2 ]
  run jq '[.traceEvents[] | select(.name == "switchover: VM stopped")] | length' tl.json
  [ "$output" -eq 1 ]
  # one REGISTER REQUEST -> RESULT span on the source per chunk it registered
  regs=$(jq '.metrics.migbed.src.registrations' r.json)
  run jq '[.traceEvents[] | select(.ph == "X" and .pid == 2 and (.name | startswith("chunk ")))] | length' tl.json
  echo "registrations: $regs, spans: $output"
  [ "$output" -eq "$regs" ]
  [ "$output" -gt 0 ]
  # the writes-in-flight counter rises and comes back to 0
  run jq -r '[.traceEvents[] | select(.ph == "C" and .name == "RDMA WRITEs in flight") | .args.writes] | [max, .[-1]] | map(tostring) | join(" ")' tl.json
  echo "max, last: $output"
  [[ "$output" =~ ^[1-9][0-9]*\ 0$ ]]
  # spans do not run backwards
  run jq '[.traceEvents[] | select(.ph == "X" and .dur < 0)] | length' tl.json
  [ "$output" -eq 0 ]
}

@test "run --timeline on a failed run: written, with the fault that fired and the named failure" {
  run "$MIGBED" run "$BATS_TEST_DIRNAME/scenarios/fault-reg-mr-src-chunk-enomem.scn" --quiet --timeline tl.json
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[-1]}" == *"status=failed cause=SOURCE_REG_FAILED side=src"* ]]
  run jq -r '.traceEvents[] | select(.tid == 5 and .ph == "i") | "\(.pid) \(.name)"' tl.json
  echo "$output"
  [[ "$output" == *"2 fault reg_mr -> errno(ENOMEM)"* ]]
  [[ "$output" == *"2 failed: SOURCE_REG_FAILED"* ]]
  [[ "$output" == *"3 failed: PEER_ERROR"* ]]
}

@test "migbed timeline EVENTS -o F draws the same picture as run --timeline; the same run twice, byte for byte" {
  run "$MIGBED" run "${SMALL[@]}" --quiet --events ev --timeline a.json
  [ "$status" -eq 0 ]
  run "$MIGBED" run "${SMALL[@]}" --quiet --timeline b.json
  [ "$status" -eq 0 ]
  run "$MIGBED" timeline ev -o c.json
  echo "$output"
  [ "$status" -eq 0 ]
  cmp a.json b.json
  cmp a.json c.json
  # no temporary event log is left behind by --timeline alone
  run find . -name 'migbed-timeline-*'
  [ -z "$output" ]
}

@test "migbed timeline: bad input exits 2 with FILE:LINE, nothing written; --help; a bad --timeline path is refused before the run" {
  run "$MIGBED" timeline --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"usage: migbed timeline EVENTS -o FILE.json"* ]]
  run "$MIGBED" timeline
  [ "$status" -eq 2 ]
  printf '0.000000000 src listen rc=0\nthis is not an event\n' >bad.ev
  run "$MIGBED" timeline bad.ev -o out.json
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"bad.ev:2: not an event-log line"* ]]
  [ ! -e out.json ]
  # every bad trace of the corpus is no event log either (line 1)
  for f in "$BATS_TEST_DIRNAME"/data/traces/bad/*; do
    [ -e "$f" ] || continue
    run "$MIGBED" timeline "$f" -o out.json
    [ "$status" -eq 2 ]
    [[ "$output" == *"${f}:"* ]]
    [ ! -e out.json ]
  done
  run "$MIGBED" timeline missing.ev -o out.json
  [ "$status" -eq 2 ]
  [[ "$output" == *"missing.ev: cannot read the event log"* ]]
  run "$MIGBED" run "${SMALL[@]}" --json r.json --timeline nodir/tl.json
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"nodir/tl.json"* ]]
  [ ! -e r.json ]
}

@test "migbed timeline --plot: the picture (rounds, registrations, downtime, writes in flight), the same bytes twice; bad input writes nothing" {
  run "$MIGBED" run "${SMALL[@]}" --quiet --events ev
  [ "$status" -eq 0 ]
  run "$MIGBED" timeline ev --plot a.svg
  echo "$output"
  [ "$status" -eq 0 ]
  run "$MIGBED" timeline ev --plot b.svg -o b.json
  [ "$status" -eq 0 ]
  cmp a.svg b.svg
  run jq -e '.traceEvents | length > 0' b.json
  [ "$status" -eq 0 ]
  run head -c 5 a.svg
  [ "$output" = "<?xml" ]
  for label in 'rounds' 'chunk registrations (source)' 'downtime (VM stopped)' 'RDMA WRITEs in flight' 'time (ms)'; do
    run grep -c -F "$label" a.svg
    echo "$label: $output"
    [ "$output" -ge 1 ]
  done
  run "$MIGBED" timeline ev --plot a.pdf
  [ "$status" -eq 2 ]
  [[ "$output" == *"the name must end in .svg or .png"* ]]
  printf 'garbage\n' >bad.ev
  run "$MIGBED" timeline bad.ev --plot c.svg
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"bad.ev:1: not an event-log line"* ]]
  [ ! -e c.svg ]
  [ ! -e c.svg.tmp ]
}

@test "timeline: what cannot work is refused before anything is written (--events - or a FIFO, two outputs on stdout, a bad log to stdout, a failing gnuplot, a time past the clock's range)" {
  run "$MIGBED" run "${SMALL[@]}" --events - --timeline tl.json --quiet
  [ "$status" -eq 2 ]
  [[ "$output" == *"--timeline reads the event log back after the run: --events - is not a regular file"* ]]
  [ ! -e tl.json ]
  mkfifo fifo
  run "$MIGBED" run "${SMALL[@]}" --events fifo --timeline tl.json --quiet
  [ "$status" -eq 2 ]
  [[ "$output" == *"--events fifo is not a regular file"* ]]
  run "$MIGBED" run "${SMALL[@]}" --json - --timeline - --quiet
  [ "$status" -eq 2 ]
  [[ "$output" == *"--json - and --timeline - would both write to standard output"* ]]
  printf '0.000000000 src listen rc=0\nbad line\n' >bad.ev
  run --separate-stderr "$MIGBED" timeline bad.ev -o -
  [ "$status" -eq 2 ]
  [ -z "$output" ]
  [[ "$stderr" == *"bad.ev:2: not an event-log line"* ]]
  printf '18446744079.000000000 sim round n=1\n' >far.ev
  run "$MIGBED" timeline far.ev -o far.json
  [ "$status" -eq 2 ]
  [[ "$output" == *"far.ev:1: not an event-log line"* ]]
  # a gnuplot that fails: neither the picture nor the JSON is left
  run "$MIGBED" run "${SMALL[@]}" --events ev --quiet
  [ "$status" -eq 0 ]
  mkdir fakebin
  printf '#!/bin/sh\ncat >/dev/null\nexit 1\n' >fakebin/gnuplot
  chmod +x fakebin/gnuplot
  PATH="$PWD/fakebin:$PATH" run "$MIGBED" timeline ev -o keep.json --plot p.svg
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"gnuplot failed (exit status 1); nothing written"* ]]
  [ ! -e keep.json ]
  [ ! -e p.svg ]
}
