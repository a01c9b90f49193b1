#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# migbed shrink BUNDLE (issue 13 part 3): delta debugging of a reproducer bundle while its run
# fails with the same verdict, cause and side; the smaller bundle replays byte for byte.

load helpers
bats_require_minimum_version 1.5.0

setup() {
  cd "$BATS_TEST_TMPDIR"
  export TMPDIR=$BATS_TEST_TMPDIR
}

# (--max-time 86400 where a result is compared: only --max-runs may bound a test, never the wall clock)
NEEDED='reg_mr@dst #4 -> errno(ENOMEM)'
IDLE='reg_mr@src #100000 -> errno(ENOMEM)'

# a failing model run with a rule it needs and one it does not: bundle b
make_bundle() {
  run "$MIGBED" run --fault "$NEEDED" --fault "$IDLE" --seed 3 --quiet --bundle b
  [ "$status" -eq 1 ]
  [ -d b ]
}

@test "shrink --help" {
  run "$MIGBED" shrink --help
  [ "$status" -eq 0 ]
  [[ "$output" == "usage: migbed shrink BUNDLE [-o OUT] [--max-runs N] [--max-time SECONDS] [--json]"* ]]
  run "$MIGBED" --help
  [[ "$output" == *"shrink "*"delta debugging"* ]]
}

@test "a failing bundle shrinks on every axis it touches; the shrunk bundle replays and still fails the same way" {
  make_bundle
  run "$MIGBED" shrink b --json --max-time 86400
  [ "$status" -eq 0 ]
  echo "$output"
  [ "$(jq -r '.output, .cause, .side, ."stopped-by"' <<<"$output" | tr '\n' ' ')" = "b.shrunk DEST_REG_FAILED dst null " ]
  for k in guest-bytes epochs pages-dirtied fault-rules; do
    before=$(jq ".before[\"$k\"]" <<<"$output")
    after=$(jq ".after[\"$k\"]" <<<"$output")
    echo "$k: $before -> $after"
    [ "$after" -ge 1 ]
    [ $((before / after)) -ge 2 ]
  done
  [ "$(jq '.after["fault-rules"]' <<<"$output")" -eq 1 ]
  # the rule it needs stayed, the generated trace is a file in the bundle now
  grep -qxF "fault = $NEEDED" b.shrunk/scenario.scn
  grep -qx 'trace = trace' b.shrunk/scenario.scn
  run grep -c '^fault =' b.shrunk/scenario.scn
  [ "$output" = 1 ]
  run "$MIGBED" trace check b.shrunk/trace
  [ "$status" -eq 0 ]
  for f in scenario.scn trace events.log result.json build.txt outcome.txt README shrink.txt; do [ -s "b.shrunk/$f" ]; done
  grep -q '^guest-bytes .* 268435456 ' b.shrunk/shrink.txt
  run "$MIGBED" replay b.shrunk
  [ "$status" -eq 0 ]
  [ "$output" = "migbed: replay: b.shrunk: reproduced (model: the same outcome, event log and result byte for byte)" ]
  run "$MIGBED" run b.shrunk/scenario.scn --quiet
  [ "$status" -eq 1 ]
  [ "$output" = "migbed: verdict=fail status=failed cause=DEST_REG_FAILED side=dst" ]
  [ -z "$(find . -maxdepth 1 -name 'migbed-shrink-*' -o -maxdepth 1 -name 'b.shrunk.tmp-*')" ]
}

@test "the human output is the before/after table and where the bundle went" {
  make_bundle
  run "$MIGBED" shrink b -o small --max-time 86400
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == *"before"*"after"*"smaller by" ]]
  [[ "$output" == *"fault-rules "*" 2 "*" 1  2.0x"* ]]
  [[ "$output" == *"replay-wall-ms"* ]]
  [[ "${lines[-1]}" == "migbed: shrink: small written ("*" runs; still fails with cause=DEST_REG_FAILED side=dst; replay: migbed replay small)" ]]
  [ -d small ]
  [ ! -e b.shrunk ]
}

@test "shrink is deterministic: the same bundle and options write the same bundle" {
  make_bundle
  for i in one two; do
    run "$MIGBED" shrink b -o out-$i --max-runs 40 --max-time 86400
    [ "$status" -eq 0 ]
  done
  for f in scenario.scn trace events.log result.json build.txt outcome.txt shrink.txt; do cmp out-one/$f out-two/$f; done
  diff <(sed 's/out-one/B/g' out-one/README) <(sed 's/out-two/B/g' out-two/README)
}

@test "--max-runs 1 stops early, says so, and still writes a bundle that replays" {
  make_bundle
  run "$MIGBED" shrink b --max-runs 1
  [ "$status" -eq 0 ]
  [[ "$output" == *"migbed: shrink: stopped by --max-runs after 1 runs: the best bundle so far is written"* ]]
  run "$MIGBED" replay b.shrunk
  [ "$status" -eq 0 ]
  run "$MIGBED" shrink b --max-runs 1 --json -o j
  [ "$status" -eq 0 ]
  [ "$(jq -r '."stopped-by", .runs' <<<"$output" | tr '\n' ' ')" = "max-runs 1 " ]
}

@test "a bundle that does not reproduce exits 1 and writes nothing" {
  make_bundle
  sed -i 's/"cause":"DEST_REG_FAILED"/"cause":"TIMEOUT"/' b/result.json
  run "$MIGBED" shrink b
  [ "$status" -eq 1 ]
  [[ "$output" == *"migbed: shrink: b does not reproduce: recorded verdict=fail cause=TIMEOUT side=dst, this run verdict=fail cause=DEST_REG_FAILED side=dst (nothing written)"* ]]
  [ ! -e b.shrunk ]
}

@test "bad input exits 2 naming the file and line, and leaves no output behind" {
  run "$MIGBED" shrink nowhere
  [ "$status" -eq 2 ]
  [[ "$output" == *"migbed: shrink: nowhere: not a bundle: No such file or directory"* ]]
  [ ! -e nowhere.shrunk ]
  make_bundle
  cp -r b garbled
  sed -i 's/^seed = 3$/seed = three/' garbled/scenario.scn
  run "$MIGBED" shrink garbled
  [ "$status" -eq 2 ]
  [[ "$output" == *"garbled/scenario.scn:"*"seed"* ]]
  cp -r b notrace
  sed -i -E '/^(pattern|guest|duration-ms|epoch-ms|page-size|workers|worker-bytes|sweep-rate|churn|vm-keep|first-touch-ms|sweep-jitter-pct|layout-nonzero-pct|layout-extent) =/d' notrace/scenario.scn
  echo 'trace = trace' >>notrace/scenario.scn
  printf 'migbed-trace 1\npage-size 4K\nblock pc.ram 1M\nduration 1s\nepoch 0s\npc.ram 9999\n' >notrace/trace
  run "$MIGBED" shrink notrace
  [ "$status" -eq 2 ]
  [[ "$output" == *"notrace/trace:6: "* ]]
  cp -r b nojson
  echo '{}' >nojson/result.json
  run "$MIGBED" shrink nojson
  [ "$status" -eq 2 ]
  [[ "$output" == *"nojson/result.json:1: no verdict, cause or side (garbled)"* ]]
  run "$MIGBED" shrink b --max-runs 0
  [ "$status" -eq 2 ]
  [[ "$output" == *"--max-runs '0': expected a whole number 1..1000000"* ]]
  run "$MIGBED" shrink b --bogus
  [ "$status" -eq 2 ]
  mkdir b.shrunk
  run "$MIGBED" shrink b
  [ "$status" -eq 2 ]
  [[ "$output" == *"b.shrunk: exists"* ]]
  rmdir b.shrunk
  for d in nowhere garbled notrace nojson b; do [ ! -e "$d.shrunk" ]; done
  [ -z "$(find . -maxdepth 1 -name 'migbed-shrink-*' -o -maxdepth 1 -name '*.tmp-*')" ]
}

@test "a failure that ends in a wait shrinks its wait bound: wait-timeout-ms is lowered while the cause stays" {
  # a lost completion: the source waits for it until its wait bound (TIMEOUT)
  run "$MIGBED" run --guest 16M --fault 'wc.write@src #5 -> drop' --quiet --bundle w
  [ "$status" -eq 1 ]
  run "$MIGBED" shrink w --json --max-time 86400
  [ "$status" -eq 0 ]
  echo "$output"
  [ "$(jq -r '.cause + " " + .side' <<<"$output")" = "TIMEOUT src" ]
  before=$(jq '.before["virtual-ns"]' <<<"$output")
  after=$(jq '.after["virtual-ns"]' <<<"$output")
  [ "$before" -gt 10000000000 ]          # the source waited out the 10 s default
  [ $((before / after)) -ge 10 ]
  run grep -x 'wait-timeout-ms = [0-9]*' w.shrunk/scenario.scn
  [ "$status" -eq 0 ]
  [ "${output#wait-timeout-ms = }" -lt 10000 ]
  run "$MIGBED" replay w.shrunk
  [ "$status" -eq 0 ]
}

# README 'From a QEMU log to a small reproducer': the whole loop on the chunk-mismatch logs the verbs
# lane recorded from a real QEMU 7.2.
@test "the whole loop: QEMU logs -> explain -> scenario -> failing run -> bundle -> shrink -> replay" {
  L=$BATS_TEST_DIRNAME/data/qemu-logs
  cp "$L/hw-chunk-mismatch-src.log" src.log
  cp "$L/hw-chunk-mismatch-dst.log" dst.log
  run "$MIGBED" explain src.log dst.log --scenario-out repro
  [ "$status" -eq 0 ]
  [[ "${lines[2]}" == "1. REMOTE_ACCESS_ERROR (score "*", src side): "* ]]
  [ -s repro/REMOTE_ACCESS_ERROR.scn ]
  run "$MIGBED" run repro/REMOTE_ACCESS_ERROR.scn
  [ "$status" -eq 0 ]
  [ "${lines[-1]}" = "migbed: verdict=pass status=failed cause=REMOTE_ACCESS_ERROR side=src" ]
  run "$MIGBED" run repro/REMOTE_ACCESS_ERROR.scn --expect completed --quiet --bundle field
  [ "$status" -eq 1 ]
  run "$MIGBED" shrink field --json --max-time 86400
  [ "$status" -eq 0 ]
  [ "$(jq -r '.cause + " " + .side' <<<"$output")" = "REMOTE_ACCESS_ERROR src" ]
  [ "$(jq '.before["guest-bytes"] / .after["guest-bytes"] >= 10' <<<"$output")" = true ]
  [ "$(jq '.before["pages-dirtied"] / .after["pages-dirtied"] >= 10' <<<"$output")" = true ]
  run grep -x 'dst-chunk-size = 1M' field.shrunk/scenario.scn
  [ "$status" -eq 0 ]
  run "$MIGBED" replay field.shrunk
  [ "$status" -eq 0 ]
  [[ "$output" == *": reproduced (model: the same outcome, event log and result byte for byte)" ]]
}

@test "a bundle of a run with --dst-layout shrinks (its layout is read from the bundle) and replays" {
  G=$BATS_TEST_DIRNAME/data/traces/good/steady-writer.trace
  run "$MIGBED" run --trace "$G" --dst-layout "$G" --fault 'reg_mr@dst #1 -> errno(ENOMEM)' --quiet --bundle w
  [ "$status" -eq 1 ]
  run "$MIGBED" shrink w --max-runs 30 --max-time 86400
  echo "$output"
  [ "$status" -eq 0 ]
  run "$MIGBED" replay w.shrunk
  [ "$status" -eq 0 ]
  [[ "$output" == *": reproduced (model: "* ]]
}

@test "a trace's initial layout (version 2) is kept by shrink: the smaller bundle's source starts from the same pages" {
  run "$MIGBED" run --guest 32M --duration-ms 500 --layout-nonzero-pct 50 \
    --fault 'reg_mr@dst #4 -> errno(ENOMEM)' --bundle L --quiet
  [ "$status" -eq 1 ]
  run "$MIGBED" shrink L -o Ls
  echo "$output"
  [ "$status" -eq 0 ]
  run "$MIGBED" trace stat --json Ls/trace
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq '.["layout-pages"]')" -eq 4096 ]
  run "$MIGBED" replay Ls
  [ "$status" -eq 0 ]
}
