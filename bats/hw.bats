#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Hardware profiles and the cost rules (README "Hardware profiles and the calibrated cost model",
# docs/model.md): migbed hw list/show/keys, --hw NAME|FILE and --hw-set, scenario hw =, bad
# profiles exit 2 naming FILE:LINE with nothing written, an empty profile changes nothing, each new
# rule moves the clock as stated (source and destination pins serial), and the seed-bf3 fit stays
# within the tolerance README claims. Small guests, except the fit check (5 runs of 8 GiB, ~5 s).

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

@test "the rules: setup, waits by guest state, the downtime floor, destination zero-fill, source and destination pins serial" {
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
  # the downtime floor: charged once at vm_stop, in the downtime and the total, named in the event log
  "$MIGBED" run "${SMALL[@]}" --hw-set downtime-floor-ms=700 --json f.json --events f.ev --quiet
  [ "$(m f.json '.downtime')" -ge $((d0 + 700)) ]
  [ "$(m f.json '.downtime')" -le $((d0 + 701)) ]
  [ "$(m f.json '."total-time"')" -ge $((t0 + 700)) ]
  run grep -c 'sim downtime_floor_cost ns=700000000' f.ev
  [ "$output" = 1 ]
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

# the model's cell of the sweep's row for CHUNK (MiB): jq path
cell() { jq -r --argjson c "$(($1 * 1048576))" ".rows[] | select(.[\"chunk-size\"] == \$c) | $2" seed.json; }

@test "seed-bf3 on cx7-bf3: every cell of README's side-by-side table as stated (measured vs model)" {
  run "$MIGBED" sweep "$BATS_TEST_DIRNAME/scenarios/seed-bf3.scn" --chunk-sizes 1M,32M,64M,128M,1G --json seed.json
  echo "$output"
  [ "$status" -eq 0 ]
  # the measured rows (docs/data/seed-table.csv): MiB total-ms downtime-ms mbps centi-GiB
  local rows=("1 45156 1166 1252 646" "64 4492 1554 13637 575" "128 3940 1662 16860 606" "1024 3665 2238 24676 804")
  local r cs tm dm mb gb t d b g
  for r in "${rows[@]}"; do
    read -r cs tm dm mb gb <<<"$r"
    t=$(cell "$cs" '."total-time"') d=$(cell "$cs" '.downtime') b=$(cell "$cs" '.mbps | floor')
    g=$(cell "$cs" '.transferred * 100 / 1073741824 | floor')
    echo "${cs}M: total $t/$tm downtime $d/$dm mbps $b/$mb GiB x100 $g/$gb"
    near "$t" "$tm" 25
    near "$d" "$dm" 25
    near "$g" "$gb" 25
    near "$b" "$mb" 25
  done
  # the 32M row: the known miss, -68 % (+-5 points) in total time
  e=$(err "$(cell 32 '."total-time"')" 15034)
  [ "$e" -ge -73 ]
  [ "$e" -le -63 ]
  # orderings README states among the 1M, 64M, 128M and 1G rows: 23 of 24. Total time falls
  # from 1M to 128M, and 1M and 64M are above 1G ...
  [ "$(cell 1 '."total-time"')" -gt "$(cell 32 '."total-time"')" ]
  [ "$(cell 32 '."total-time"')" -gt "$(cell 64 '."total-time"')" ]
  [ "$(cell 64 '."total-time"')" -gt "$(cell 128 '."total-time"')" ]
  [ "$(cell 64 '."total-time"')" -gt "$(cell 1024 '."total-time"')" ]
  # ... the one violated pair README names: 1G 1-4 % slower than 128M (the table: 128M 7 % slower)
  t128=$(cell 128 '."total-time"') t1g=$(cell 1024 '."total-time"')
  [ "$t1g" -gt "$t128" ]
  near "$t1g" "$t128" 4
  # downtime, Mb/s and transferred: every pair of the four rows as the table orders it
  [ "$(cell 1 '.downtime')" -lt "$(cell 64 '.downtime')" ]
  [ "$(cell 64 '.downtime')" -lt "$(cell 128 '.downtime')" ]
  [ "$(cell 128 '.downtime')" -lt "$(cell 1024 '.downtime')" ]
  [ "$(cell 1 '.mbps | floor')" -lt "$(cell 32 '.mbps | floor')" ]
  [ "$(cell 32 '.mbps | floor')" -lt "$(cell 64 '.mbps | floor')" ]
  [ "$(cell 64 '.mbps | floor')" -lt "$(cell 128 '.mbps | floor')" ]
  [ "$(cell 128 '.mbps | floor')" -lt "$(cell 1024 '.mbps | floor')" ]
  # transferred as the table: 32M < 64M < 128M < 1M < 1G (the unaligned layout's elision falls
  # smoothly with the chunk size)
  [ "$(cell 32 '.transferred')" -lt "$(cell 64 '.transferred')" ]
  [ "$(cell 64 '.transferred')" -lt "$(cell 128 '.transferred')" ]
  [ "$(cell 128 '.transferred')" -lt "$(cell 1 '.transferred')" ]
  [ "$(cell 1 '.transferred')" -lt "$(cell 1024 '.transferred')" ]
  # the layout is in the trace (format 2), and the workload churns (stress-ng without --vm-keep)
  run "$MIGBED" trace stat "$BATS_TEST_DIRNAME/scenarios/seed-bf3.trace.zst" --json
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq -r '.version')" = 2 ]
  # exactly 50 % of 8 GiB's 2,097,152 pages (layout-runs exp), in runs off the 192M grid
  [ "$(echo "$output" | jq -r '."layout-pages"')" -eq 1048576 ]
  # and the shipped trace is what scripts/seed-bf3-trace.sh writes, byte for byte
  run "$BATS_TEST_DIRNAME/../scripts/seed-bf3-trace.sh" "$MIGBED" "$BATS_TEST_TMPDIR/seed.trace.zst"
  [ "$status" -eq 0 ]
  cmp "$BATS_TEST_DIRNAME/scenarios/seed-bf3.trace.zst" "$BATS_TEST_TMPDIR/seed.trace.zst"
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
  [[ "$output" == *"2 keys for 1 fitted data points: more parameters than data points"* ]]
  # a downtime column: each downtime is a data point (2 keys on 1 row with its downtime: a match)
  printf 'chunk-size,total-time-ms,downtime-ms\n1M,800,-3\n' >down.csv
  run "$MIGBED" calibrate --table down.csv --fit wait-running-us --guest 16M
  [ "$status" -eq 2 ]
  [[ "$output" == *"down.csv:2: downtime-ms: '-3' is not a number above 0"* ]]
  printf 'chunk-size,total-time-ms,downtime-ms\n1M,800,30\n' >down.csv
  run "$MIGBED" calibrate --table down.csv --fit wait-running-us,downtime-floor-ms --guest 16M --duration-ms 200 \
    --max-evals 4 --json down.json
  [ "$status" -eq 0 ]
  [[ "$output" == *"2 key(s) on 2 fitted data point(s)"*"matched, not over-determined"* ]]
  [ "$(jq -r '.rows[0]."measured-downtime-ms"' down.json)" = 30 ]
  [ "$(jq -r '.rows[0]."model-downtime-ms" >= 0' down.json)" = true ]
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
