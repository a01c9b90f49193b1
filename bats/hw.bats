#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Hardware profiles and the cost rules (README "Hardware profiles and the calibrated cost model",
# docs/model.md): migbed hw list/show/keys, --hw NAME|FILE and --hw-set, scenario hw =, bad
# profiles exit 2 naming FILE:LINE with nothing written, an empty profile changes nothing, each new
# rule moves the clock as stated (source and destination pins serial), and the seed-bf3 fit stays
# within the tolerance README claims. Small guests, except the fit check (3 runs of 8 GiB, ~5 s).

load helpers
bats_require_minimum_version 1.5.0

SMALL=(--guest 16M --duration-ms 200 --seed 3 --max-bandwidth unlimited)

setup() {
  cd "$BATS_TEST_TMPDIR"
}

# m JSON KEY...: a metric of a run's --json (jq path under .metrics)
m() { jq -r ".metrics$2" "$1"; }

@test "hw --help, list, keys and show" {
  run "$MIGBED" hw --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"migbed hw show NAME|FILE"* ]]
  run "$MIGBED" --help
  [[ "$output" == *"  hw "* ]]
  run "$MIGBED" hw list
  [ "$status" -eq 0 ]
  [[ "$output" == *"cx7-bf3"*"ConnectX-7"* ]]
  run "$MIGBED" hw list --json
  [ "$status" -eq 0 ]
  run jq -r '.profiles[] | select(.name == "cx7-bf3") | .valid' <<<"$output"
  [ "$output" = true ]
  run "$MIGBED" hw keys --json
  [ "$status" -eq 0 ]
  run jq -r '[.keys[] | select(.key == "wait-running-us" or .key == "setup-ms") | .default] | join(",")' <<<"$output"
  [ "$output" = "0,0" ]
  run "$MIGBED" hw show cx7-bf3 --json
  [ "$status" -eq 0 ]
  run jq -r '.keys."wait-running-us", .keys."setup-ms", .keys."link-gbps"' <<<"$output"
  [ "${lines[0]}" -gt 0 ]
  [ "${lines[1]}" -eq 900 ]
  [ "${lines[2]}" -eq 200 ]
  run "$MIGBED" hw nope
  [ "$status" -eq 2 ]
  run "$MIGBED" hw list --bogus
  [ "$status" -eq 2 ]
}

@test "hw show writes a profile that reads back to the same keys, with --hw-set applied" {
  run "$MIGBED" hw show cx7-bf3 --hw-set setup-ms=5 --hw-set wait-stopped-us=7
  [ "$status" -eq 0 ]
  printf '%s\n' "$output" >mine.hw
  run "$MIGBED" hw show ./mine.hw --json
  [ "$status" -eq 0 ]
  run jq -r '.keys."setup-ms", .keys."wait-stopped-us"' <<<"$output"
  [ "${lines[0]}" -eq 5 ]
  [ "${lines[1]}" -eq 7 ]
}

@test "a bad profile, key or name is exit 2 naming FILE:LINE, and nothing is written" {
  printf '# mine\nsetup-ms = 10\nwait-runing-us = 5\n' >bad.hw
  run "$MIGBED" run "${SMALL[@]}" --hw ./bad.hw --json out.json --events out.ev
  [ "$status" -eq 2 ]
  [[ "$output" == *"./bad.hw:3: unknown hardware key 'wait-runing-us' (see migbed hw keys)"* ]]
  [ ! -e out.json ]
  [ ! -e out.ev ]
  printf 'setup-ms = 1.5\n' >frac.hw
  run "$MIGBED" run "${SMALL[@]}" --hw frac.hw
  [ "$status" -eq 2 ]
  [[ "$output" == *"frac.hw:1: setup-ms: '1.5' is not a whole number of ms"* ]]
  run "$MIGBED" run "${SMALL[@]}" --hw no-such-card
  [ "$status" -eq 2 ]
  [[ "$output" == *"hw: no profile 'no-such-card' (looked in "* ]]
  run "$MIGBED" run "${SMALL[@]}" --hw-set link-gbps=0
  [ "$status" -eq 2 ]
  [[ "$output" == *"link-gbps: '0' is not a whole number of Gb/s from 1 to 10000"* ]]
  run "$MIGBED" sweep "${SMALL[@]}" --chunk-sizes 1M,2M --hw-set nokey=1 --json s.json
  [ "$status" -eq 2 ]
  [ ! -e s.json ]
  # in a scenario: the error names the profile file, a relative file is the scenario's folder's
  mkdir scn
  printf 'setup-ms = 1\nsetup-ms = 2\n' >scn/twice.hw
  printf 'guest = 16M\nduration-ms = 200\nhw = twice.hw\n' >scn/a.scn
  run "$MIGBED" run scn/a.scn
  [ "$status" -eq 2 ]
  [[ "$output" == *"scn/twice.hw:2: key 'setup-ms' given twice (first on line 1)"* ]]
}

@test "an empty profile changes nothing: events and result byte for byte" {
  : >empty.hw
  run "$MIGBED" run "${SMALL[@]}" --events a.ev --json a.json --quiet
  [ "$status" -eq 0 ]
  run "$MIGBED" run "${SMALL[@]}" --hw ./empty.hw --events b.ev --json b.json --quiet
  [ "$status" -eq 0 ]
  cmp a.ev b.ev
  cmp a.json b.json
}

@test "the rules: setup, waits by guest state, destination zero-fill, source and destination pins serial" {
  run "$MIGBED" run "${SMALL[@]}" --json base.json --quiet
  [ "$status" -eq 0 ]
  t0=$(m base.json '."total-time"')
  d0=$(m base.json '.downtime')
  ex=$(( $(m base.json '.migbed.src.registrations') + $(m base.json '.migbed.src."messages-sent".compress') ))
  pages=$(( $(m base.json '.migbed.dst."pinned-peak-bytes"') / 4096 ))
  [ "$ex" -gt 0 ]
  [ "$pages" -gt 0 ]
  "$MIGBED" run "${SMALL[@]}" --hw-set setup-ms=250 --json s.json --quiet
  [ "$(m s.json '."setup-time"')" -eq 250 ]
  [ "$(m s.json '."total-time"')" -ge $((t0 + 250)) ]
  # every exchange blocks at least once (its SEND) with the guest running: >= 10 ms each
  "$MIGBED" run "${SMALL[@]}" --hw-set wait-running-us=10000 --json w.json --quiet
  [ "$(m w.json '."total-time"')" -ge $((10 * ex)) ]
  [ "$(m w.json '.downtime')" -le $((d0 + 1)) ]
  # the final round's exchanges (at least REGISTER FINISHED) wait at the stopped cost
  "$MIGBED" run "${SMALL[@]}" --hw-set wait-stopped-us=10000 --json ws.json --quiet
  [ "$(m ws.json '.downtime')" -ge $((d0 + 10)) ]
  # 0.1 ms per never-touched destination page, once per page pinned (the base run's time is
  # mostly the first 100 ms bandwidth period, so the bounds are absolute)
  "$MIGBED" run "${SMALL[@]}" --hw-set dst-zero-fill-ns-per-page=100000 --json z.json --quiet
  [ "$(m z.json '."total-time"')" -ge $((pages / 10)) ]
  # the two sides' pins add up: serial, not overlapped (each alone is pages / 10 ms)
  "$MIGBED" run "${SMALL[@]}" --hw-set src-reg-ns-per-page=100000 --hw-set dst-reg-ns-per-page=100000 --json pb.json --quiet
  [ "$(m pb.json '."total-time"')" -ge $((2 * pages / 10)) ]
  # an option given with --hw overrides the profile's key
  "$MIGBED" run "${SMALL[@]}" --hw cx7-bf3 --link-gbps 10 --json o.json --quiet
  "$MIGBED" run "${SMALL[@]}" --hw cx7-bf3 --json p.json --quiet
  [ "$(m o.json '."total-time"')" -gt "$(m p.json '."total-time"')" ]
}

# within PCT of TARGET (integers; PCT percent of TARGET, rounded up)
near() { local v=$1 t=$2 p=$3; local d=$((v - t)); [ "${d#-}" -le $(((t * p + 99) / 100)) ]; }
# signed error of MODEL against MEASURED in whole percent
err() { echo $(((($1 - $2) * 100) / $2)); }

@test "seed-bf3 on cx7-bf3 stays within README's tolerances (measured vs model)" {
  run "$MIGBED" sweep "$BATS_TEST_DIRNAME/scenarios/seed-bf3.scn" --chunk-sizes 1M,32M,1G --json seed.json
  echo "$output"
  [ "$status" -eq 0 ]
  t1=$(jq -r '.rows[0]."total-time"' seed.json)
  t32=$(jq -r '.rows[1]."total-time"' seed.json)
  tg=$(jq -r '.rows[2]."total-time"' seed.json)
  echo "model: 1M $t1 ms, 32M $t32 ms, 1G $tg ms"
  # fitted: within 2 %
  near "$t1" 37915 2
  near "$tg" 4368 2
  # the known miss: 32M at -50 % (+-5 points), as README's table says
  e32=$(err "$t32" 17880)
  [ "$e32" -ge -55 ]
  [ "$e32" -le -45 ]
  # orderings: time falls and Mb/s rises with the chunk size
  [ "$t1" -gt "$t32" ]
  [ "$t32" -gt "$tg" ]
  b1=$(jq -r '.rows[0].mbps | floor' seed.json)
  b32=$(jq -r '.rows[1].mbps | floor' seed.json)
  bg=$(jq -r '.rows[2].mbps | floor' seed.json)
  [ "$b1" -lt "$b32" ]
  [ "$b32" -lt "$bg" ]
  # Mb/s errors as README states them, +-5 points: +23 %, +192 %, +29 %
  e=$(err "$b1" 1007)
  [ "$e" -ge 18 ]
  [ "$e" -le 28 ]
  e=$(err "$b32" 2260)
  [ "$e" -ge 187 ]
  [ "$e" -le 197 ]
  e=$(err "$bg" 17529)
  [ "$e" -ge 24 ]
  [ "$e" -le 34 ]
}

@test "calibrate: --help, bad tables exit 2 naming FILE:LINE, more keys than rows refused" {
  run "$MIGBED" calibrate --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"--fit KEY,..."* ]]
  run "$MIGBED" calibrate --fit wait-running-us
  [ "$status" -eq 2 ]
  [[ "$output" == *"--table and --fit are required"* ]]
  printf 'chunk-size,total-time-ms\n1M,800\n4M,x\n' >bad.csv
  run "$MIGBED" calibrate --table bad.csv --fit wait-running-us --guest 16M -o out.hw
  [ "$status" -eq 2 ]
  [[ "$output" == *"bad.csv:3: total-time-ms: 'x' is not a number above 0"* ]]
  [ ! -e out.hw ]
  printf 'chunk,total\n1M,800\n' >hdr.csv
  run "$MIGBED" calibrate --table hdr.csv --fit wait-running-us --guest 16M
  [ "$status" -eq 2 ]
  [[ "$output" == *"hdr.csv:1: the header needs the columns chunk-size and total-time-ms"* ]]
  printf 'chunk-size,total-time-ms,fit\n1M,800,1\n4M,400,0\n' >one.csv
  run "$MIGBED" calibrate --table one.csv --fit wait-running-us,setup-ms --guest 16M
  [ "$status" -eq 2 ]
  [[ "$output" == *"2 keys for 1 fitted rows: more parameters than data points"* ]]
  run "$MIGBED" calibrate --table one.csv --fit no-such-key --guest 16M
  [ "$status" -eq 2 ]
  [[ "$output" == *"unknown hardware key 'no-such-key'"* ]]
}

@test "a wait cost that makes the first round outlast the counter period ends the run (it stalled: the engine's clock wrapped)" {
  for v in 5623 6000; do
    run timeout 60 "$MIGBED" run --guest 16M --duration-ms 200 --max-bandwidth unlimited --chunk-size 4M \
      --hw-set "wait-running-us=$v" --quiet --events ev
    echo "$v: $output"
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" == *"status=completed cause=NONE"* ]]
    # the virtual clock stays sane: the last event well under a minute
    run awk 'END { exit !($1 < 60) }' ev
    [ "$status" -eq 0 ]
  done
}

@test "rxe-tcg (measured on soft-RoCE in the VM) loads, sets a link under 1 Gb/s, and a model run with it completes" {
  run "$MIGBED" hw list
  [ "$status" -eq 0 ]
  [[ "$output" == *"rxe-tcg"* ]]
  run "$MIGBED" hw show rxe-tcg --json
  [ "$status" -eq 0 ]
  run jq -r '.keys."link-mbps", .keys."setup-ms", .keys."dst-reg-ns-per-page"' <<<"$output"
  [ "${lines[0]}" -gt 0 ]
  [ "${lines[0]}" -lt 1000 ]
  [ "${lines[1]}" -gt 0 ]
  [ "${lines[2]}" -gt 1000 ]
  # hw show writes a file that reads back to the same rate (link-gbps is left out: not exact)
  run "$MIGBED" hw show rxe-tcg
  [ "$status" -eq 0 ]
  [[ "$output" != *"link-gbps ="* ]]
  printf '%s\n' "$output" >back.hw
  run "$MIGBED" hw show ./back.hw --json
  [ "$status" -eq 0 ]
  run jq -r '.keys."link-mbps"' <<<"$output"
  mbps=$output
  run "$MIGBED" hw show rxe-tcg --json
  run jq -r '.keys."link-mbps"' <<<"$output"
  [ "$output" = "$mbps" ]
  # a model run on it: 64 MiB at a few hundred Mb/s takes seconds of virtual time, not the
  # default profile's fraction of a second
  run "$MIGBED" run --guest 64M --duration-ms 200 --seed 3 --max-bandwidth unlimited --chunk-size 4M \
    --layout-nonzero-pct 50 --pattern idle --hw rxe-tcg --json out.json --quiet
  [ "$status" -eq 0 ]
  [[ "${lines[-1]}" == *"status=completed cause=NONE"* ]]
  run jq -r '.metrics."total-time"' out.json
  [ "$output" -gt 1000 ]
}

@test "link-mbps sets the link rate under 1 Gb/s; link-gbps and link-mbps are the same rate" {
  run "$MIGBED" hw show cx7-bf3 --hw-set link-mbps=350 --json
  [ "$status" -eq 0 ]
  run jq -r '.keys."link-mbps", .keys."link-gbps"' <<<"$output"
  [ "${lines[0]}" -eq 350 ]
  [ "${lines[1]}" -eq 0 ]
  run "$MIGBED" hw show cx7-bf3 --json
  run jq -r '.keys."link-mbps"' <<<"$output"
  [ "$output" -eq 200000 ]
  run "$MIGBED" run "${SMALL[@]}" --hw-set link-mbps=0
  [ "$status" -eq 2 ]
  [[ "$output" == *"link-mbps: '0' is not a whole number of Mb/s from 1 to 10000000"* ]]
  # 16 MiB over 100 Mb/s is at least 1.3 s of link time
  run "$MIGBED" run "${SMALL[@]}" --layout-nonzero-pct 100 --pattern idle --hw-set link-mbps=100 --json slow.json --quiet
  [ "$status" -eq 0 ]
  run jq -r '.metrics."total-time"' slow.json
  [ "$output" -gt 1300 ]
}

@test "rxe-tcg predicts the held-out chunk sizes of the real rxe runs within 20 % (docs/data/rxe-table.csv), every ordering held" {
  table="$BATS_TEST_DIRNAME/../docs/data/rxe-table.csv"
  trace="$BATS_TEST_DIRNAME/../docs/data/rxe-idle-256m.trace"
  run "$MIGBED" sweep --trace "$trace" --max-bandwidth unlimited --hw rxe-tcg --chunk-sizes 1M,4M,16M,64M,256M --json rxe.json
  echo "$output"
  [ "$status" -eq 0 ]
  i=0 prev=0 held=0
  while IFS=, read -r chunk ms fit; do
    t=$(jq -r ".rows[$i].\"total-time\"" rxe.json)
    e=$(err "$t" "$ms")
    echo "$chunk: measured $ms ms, model $t ms, error $e %, fit $fit"
    if [ "$fit" = 0 ]; then
      held=$((held + 1))
      [ "$e" -ge -20 ]
      [ "$e" -le 20 ]
    fi
    # the measured times rise with the chunk size; so must the model's
    [ "$t" -gt "$prev" ]
    prev=$t i=$((i + 1))
  done < <(grep -E '^[0-9]+[MG],' "$table")
  [ "$i" -eq 5 ]
  [ "$held" -eq 3 ]
}
