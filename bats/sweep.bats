#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# migbed sweep (README "Sweeping chunk sizes"): one run per point of the cross product of the
# lists, the table's columns, --json's schema, --csv, shards that recombine to the whole, a
# mismatch row that is a failed row (exit 1), bad lists exit 2 naming the option and value
# with no file written, --plot (when gnuplot is there; its absence is exit 2 before any run),
# and determinism. Small guests: each sweep takes well under a second on the model.

load helpers
bats_require_minimum_version 1.5.0

SMALL=(--guest 16M --duration-ms 200)

setup() {
  cd "$BATS_TEST_TMPDIR"
}

@test "sweep --help names its keys and its exit status" {
  run "$MIGBED" sweep --help
  [ "$status" -eq 0 ]
  for o in --chunk-sizes --pin-all --guest --downtime-limit-ms --max-bandwidth --link-gbps --json --csv --plot --shard; do
    [[ "$output" == *"  $o "* ]]
  done
  [[ "$output" == *"exit status: 0 every row met"* ]]
  run "$MIGBED" --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"  sweep "* ]]
}

@test "the table: a header, one row per point in order (chunk size fastest), a summary" {
  run "$MIGBED" sweep "${SMALL[@]}" --chunk-sizes 1M,4M,16M --pin-all off,on
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" =~ ^POINT\ +pin-all\ +CHUNK\ +TOTAL_MS\ +DOWN_MS\ +SETUP_MS\ +MBPS\ +XFER_GIB\ +REGS_SRC/DST\ +COMPRESS\ +PINNED_SRC/DST\ +OUTCOME$ ]]
  [ "${#lines[@]}" -eq 8 ]
  [[ "${lines[1]}" =~ ^\ +0\ +off\ +1M\ +[0-9]+\ +[0-9]+\ +[0-9]+\ +[0-9.]+\ +[0-9.]+\ +[0-9]+/[0-9]+\ +[0-9]+\ +[0-9.]+[KMG]?/[0-9.]+[KMG]?\ +completed$ ]]
  [[ "${lines[3]}" =~ ^\ +2\ +off\ +16M\  ]]
  [[ "${lines[4]}" =~ ^\ +3\ +on\ +1M\  ]]
  [[ "${lines[6]}" =~ ^\ +5\ +on\ +16M\ .*completed$ ]]
  [ "${lines[7]}" = "sweep: 6 rows (of 6 points, shard 1/1): 6 completed, 0 failed; 6 met the expectation" ]
}

@test "--json: the rows with the seed table's keys; --csv: the same rows" {
  run "$MIGBED" sweep "${SMALL[@]}" --chunk-sizes 1M,16M --link-gbps 10,100 --json s.json --csv s.csv
  [ "$status" -eq 0 ]
  jq -e '.backend == "model" and .shard == "1/1" and .points == 4 and .ok == true' s.json
  jq -e '.swept == ["link-gbps", "chunk-size"]' s.json
  jq -e '[.rows[].point] == [0, 1, 2, 3]' s.json
  jq -e '[.rows[]."chunk-size"] == [1048576, 16777216, 1048576, 16777216]' s.json
  jq -e '[.rows[]."link-gbps"] == [10, 10, 100, 100]' s.json
  for k in chunk-size dst-chunk-size pin-all guest link-gbps max-bandwidth downtime-limit-ms total-time downtime \
           setup-time mbps transferred registrations compress pinned-peak status cause side verdict; do
    jq -e --arg k "$k" '.rows | all(has($k))' s.json
  done
  jq -e '.rows | all(.guest == 16777216 and .status == "completed" and .cause == "NONE" and .side == "-")' s.json
  jq -e '.rows | all(.registrations.src > 0 and .["pinned-peak"].dst > 0 and .transferred > 0)' s.json
  # mbps as QEMU computes it: transferred*8 / (total - setup) / 1000
  jq -e '.rows | all(((.transferred * 8 / (."total-time" - ."setup-time") / 1000) - .mbps | fabs) < 0.01)' s.json
  # the CSV: a header and the same rows
  [ "$(head -1 s.csv)" = "point,chunk-size,dst-chunk-size,pin-all,guest,link-gbps,max-bandwidth,downtime-limit-ms,total-time,downtime,setup-time,mbps,transferred,registrations-src,registrations-dst,compress,pinned-peak-src,pinned-peak-dst,status,cause,side,verdict" ]
  [ "$(wc -l <s.csv)" -eq 5 ]
  diff <(tail -n +2 s.csv | cut -d, -f1,2,9,13) \
       <(jq -r '.rows[] | "\(.point),\(."chunk-size"),\(."total-time"),\(.transferred)"' s.json)
  [ -z "$(find . -name '*.tmp*')" ]
}

@test "--csv - writes the CSV on standard output and the table on standard error" {
  run --separate-stderr "$MIGBED" sweep "${SMALL[@]}" --chunk-sizes 1M,2M --csv -
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 3 ]
  [[ "${lines[0]}" == "point,chunk-size,"* ]]
  [[ "${lines[2]}" == "1,2097152,2097152,"* ]]
  [[ "$stderr" == *"sweep: 2 rows"* ]]
}

@test "shards split the sweep: disjoint, and together the whole, each row with its global point" {
  "$MIGBED" sweep "${SMALL[@]}" --chunk-sizes 1M,2M,4M,8M,16M --json all.json >/dev/null
  for k in 1 2 3; do
    run "$MIGBED" sweep "${SMALL[@]}" --chunk-sizes 1M,2M,4M,8M,16M --shard $k/3 --json s$k.json
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" == *"(of 5 points, shard $k/3)"* ]]
  done
  jq -e '[.rows[].point] == [1, 4]' s2.json
  diff <(jq -c '.rows[]' all.json) <(jq -c '.rows[]' s1.json s2.json s3.json | jq -sc 'sort_by(.point)[]')
}

@test "a mismatch row is a failed row: failed:CAUSE in the table and the JSON, exit 1" {
  run "$MIGBED" sweep "${SMALL[@]}" --dst-chunk-size 1M --chunk-sizes 1M,16M --json m.json
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "${lines[1]}" == *" completed" ]]
  [[ "${lines[2]}" =~ ^\ +1\ +16M/1M\ .*failed:REMOTE_ACCESS_ERROR@src$ ]]
  [[ "${lines[-1]}" == *": 1 completed, 1 failed; 1 met the expectation" ]]
  jq -e '.ok == false and .rows[1].status == "failed" and .rows[1].cause == "REMOTE_ACCESS_ERROR"' m.json
  jq -e '.rows[1].side == "src" and .rows[1].verdict == "fail" and .rows[1]."dst-chunk-size" == 1048576' m.json
  # expected by the runs' --expect: every row met it
  run "$MIGBED" sweep "${SMALL[@]}" --dst-chunk-size 1M --chunk-sizes 16M,64M --expect failed:REMOTE_ACCESS_ERROR
  [ "$status" -eq 0 ]
}

@test "bad lists and options exit 2 naming the option and value, before anything is written" {
  while IFS='|' read -r args want; do
    run "$MIGBED" sweep "${SMALL[@]}" $args --json bad.json --csv bad.csv
    echo "$args: $output"
    [ "$status" -eq 2 ]
    [ "$output" = "migbed: sweep: $want" ]
    [ -z "$(ls)" ]
  done <<'EOF'
--chunk-sizes 1M,3M|--chunk-sizes: '3M' is not a power of two from 1M to 1G
--chunk-sizes 1M,,2M|--chunk-sizes: '1M,,2M': an empty value (values are separated by single commas)
--chunk-sizes 1M,1M|--chunk-sizes: '1M,1M': '1M' is given twice
--pin-all off,maybe|--pin-all: 'maybe' is not a boolean (true/false)
--guest 16M,8X|--guest: '8X' is not a SIZE of 1 or more
--link-gbps 0|--link-gbps: '0' is not a link rate in Gb/s from 1 to 10000
--max-bandwidth 1G,5|--max-bandwidth: '5' is not a SIZE per second of 10 or more, or 'unlimited'
--downtime-limit-ms 300,0|--downtime-limit-ms: '0' is not a time in ms from 1 to 3600000
--chunk-sizes 1M --chunk-size 2M|--chunk-size and --chunk-sizes: give one
--chunk-sizes 1M --events e.log|--events is one run's output: every row would overwrite it (the sweep writes --json, --csv and --plot)
--shard 3/2|--shard: '3/2' is not K/N with 1 <= K <= N <= 100000
--plot p.pdf|--plot p.pdf: the name must end in .svg or .png
EOF
  run "$MIGBED" sweep --json bad.json --chunk-sizes
  [ "$status" -eq 2 ]
  [ "$output" = "migbed: sweep: --chunk-sizes needs a value" ]
  [ -z "$(ls)" ]
}

@test "a point its run refuses is exit 2 naming the point, with nothing written" {
  run "$MIGBED" sweep --duration-ms 200 --guest 4M,16M --workers 2 --worker-bytes 4M --json r.json
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == "migbed: sweep: point 0 (guest=4M): "*"does not fit in the guest (4M)"* ]]
  [ -z "$(ls)" ]
  # a defective trace: the run's own FILE:LINE message, for the first point
  printf 'garbage\n' >bad.trace
  run "$MIGBED" sweep --trace bad.trace --chunk-sizes 1M,2M --json r.json --csv r.csv
  [ "$status" -eq 2 ]
  [[ "$output" == "migbed: sweep: point 0 (chunk-size=1M): bad.trace:1: missing magic line"* ]]
  [ "$(ls)" = bad.trace ]
}

@test "generator keys are checked against the swept guests, not the run's default guest" {
  # 4 x 1G/4 fits in 4G and 8G, not in the default 256M guest: the sweep runs
  run "$MIGBED" sweep --guest 4G,8G --vm 4 --vm-bytes 1G --duration-ms 200 --chunk-sizes 64M \
    --max-time-ms 50 --json r.json
  echo "$output"
  [ "$status" -eq 1 ]
  [ "$(jq -r '[.rows[].guest] | @csv' r.json)" = "$((4 << 30)),$((8 << 30))" ]
  # refused for the first swept guest too: named as that point, nothing written
  rm -f r.json
  run "$MIGBED" sweep --guest 1G,8G --vm 4 --vm-bytes 2G --duration-ms 200 --chunk-sizes 64M --json r.json
  [ "$status" -eq 2 ]
  [[ "$output" == "migbed: sweep: point 0 (guest=1G): workers x worker-bytes (4 x 512M) does not fit in the guest (1G)"* ]]
  [ -z "$(ls)" ]
}

@test "--plot without gnuplot on PATH is exit 2 before any run" {
  # a PATH with bash alone (MIGBED may be a bash wrapper: make coverage's), no gnuplot
  mkdir nognuplot
  ln -s "$(command -v bash)" nognuplot/bash
  run env PATH="$PWD/nognuplot" "$MIGBED" sweep "${SMALL[@]}" --chunk-sizes 1M,2M --plot p.svg --json p.json
  [ "$status" -eq 2 ]
  [ "$output" = "migbed: sweep: --plot: gnuplot not found: apt-get install gnuplot-nox" ]
  [ "$(ls)" = nognuplot ]
}

@test "a gnuplot that fails after the runs: exit 2, its status named, and no --json/--csv/--plot file written" {
  mkdir fake
  printf '#!/bin/sh\ncat >/dev/null\nexit 3\n' >fake/gnuplot
  chmod +x fake/gnuplot
  run env PATH="$PWD/fake:$PATH" "$MIGBED" sweep "${SMALL[@]}" --chunk-sizes 1M,2M --json s.json --csv s.csv --plot p.svg
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "${lines[-1]}" == "migbed: sweep: --plot p.svg: gnuplot failed (exit status 3); nothing written" ]]
  [ "$(ls)" = fake ]
}

@test "--plot FILE.svg and FILE.png: gnuplot's three panels, the same bytes twice" {
  if ! command -v gnuplot >/dev/null; then skip "gnuplot not installed (apt-get install gnuplot-nox)"; fi
  for i in 1 2; do
    run "$MIGBED" sweep "${SMALL[@]}" --chunk-sizes 1M,4M,16M --pin-all off,on --plot p$i.svg
    [ "$status" -eq 0 ]
  done
  cmp p1.svg p2.svg
  grep -q '<svg' p1.svg
  for t in 'total time (ms)' 'downtime (ms)' 'transferred (GiB)' 'chunk size (MiB)' 'pin-all=off' 'pin-all=on'; do
    grep -qF "$t" p1.svg
  done
  run "$MIGBED" sweep "${SMALL[@]}" --chunk-sizes 1M,4M --plot p.png
  [ "$status" -eq 0 ]
  [ "$(head -c 4 p.png | tail -c 3)" = PNG ]
  # no completed row: a plot that says so, and the sweep's exit 1
  run "$MIGBED" sweep "${SMALL[@]}" --dst-chunk-size 1M --chunk-sizes 4M,16M --plot none.svg
  [ "$status" -eq 1 ]
  grep -qF 'no completed row' none.svg
  [ -z "$(find . -name '*.tmp*')" ]
}

@test "the same sweep gives the same table, JSON and CSV" {
  for i in 1 2; do
    "$MIGBED" sweep "${SMALL[@]}" --chunk-sizes 1M,4M,16M --max-bandwidth 64M,unlimited --json j$i.json --csv c$i.csv >t$i.txt
  done
  cmp j1.json j2.json
  cmp c1.csv c2.csv
  cmp t1.txt t2.txt
  jq -e '[.rows[]."max-bandwidth"] == [67108864, 67108864, 67108864, 0, 0, 0]' j1.json
}
