#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Reproducer bundles and replay (issue 13): a run that misses its expectation writes a
# bundle with --bundle DIR (torture: every rerun that is not proper, under --bundles DIR);
# `migbed replay DIR` reruns it and says whether it reproduced (model: byte for byte).

load helpers
bats_require_minimum_version 1.5.0

S=$BATS_TEST_DIRNAME/scenarios

setup() {
  cd "$BATS_TEST_TMPDIR"
  export TMPDIR=$BATS_TEST_TMPDIR
}

FAULT='reg_mr@dst #4 -> errno(ENOMEM)'

@test "a failing model run writes a bundle with every file; its scenario gives the same verdict; replay reproduces it" {
  run "$MIGBED" run --fault "$FAULT" --seed 3 --bundle b --json r.json
  [ "$status" -eq 1 ]
  [[ "$output" == *"migbed: bundle: b written, and .tar.zst (replay: migbed replay b)"* ]]
  [[ "${lines[-1]}" == "migbed: verdict=fail status=failed cause=DEST_REG_FAILED side=dst" ]]
  for f in scenario.scn events.log result.json build.txt outcome.txt README; do [ -s "b/$f" ]; done
  [ -s b.tar.zst ]
  [ -z "$(find . -maxdepth 1 -name 'b.tmp-*')" ]
  # the scenario: every key, defaults resolved, the fault rule and the seed
  grep -qxF "fault = $FAULT" b/scenario.scn
  grep -qx 'seed = 3' b/scenario.scn
  grep -qx 'dst-chunk-size = 1M' b/scenario.scn
  grep -qx 'worker-bytes = 16M' b/scenario.scn
  grep -qx '# left out: where the output goes (json, events, timeline, quiet, pause-at, fault-counts, bundle), and' b/scenario.scn
  run grep -cE '^(json|events|quiet|bundle) =' b/scenario.scn
  [ "$output" = 0 ]
  grep -qx "build-id = .*" b/build.txt
  grep -qx "compiler = .*" b/build.txt
  grep -qx "backend = model" b/build.txt
  grep -qx "outcome = exit 1" b/outcome.txt
  grep -qx "replay: migbed replay b" b/README
  grep -qx "got: verdict=fail status=failed cause=DEST_REG_FAILED side=dst" b/README
  grep -q "^trace: .*migbed trace gen --pattern rand-set .* --seed 3 -o trace$" b/README
  # the run's result, as the bundle's scenario run writes it
  [ "$(jq -r .cause b/result.json)" = DEST_REG_FAILED ]
  [ "$(jq -r .scenario b/result.json)" = scenario.scn ]
  diff <(jq -S 'del(.scenario)' r.json) <(jq -S 'del(.scenario)' b/result.json)
  # the bundle's scenario gives the same verdict
  run "$MIGBED" run b/scenario.scn --quiet
  [ "$status" -eq 1 ]
  [ "$output" = "migbed: verdict=fail status=failed cause=DEST_REG_FAILED side=dst" ]
  # the archive holds the same files
  run tar --zstd -tf b.tar.zst
  [ "$status" -eq 0 ]
  [ "$(sort <<<"$output" | tr '\n' ' ')" = "b/ b/README b/build.txt b/events.log b/outcome.txt b/result.json b/scenario.scn " ]
  # replay: byte for byte
  run "$MIGBED" replay b
  [ "$status" -eq 0 ]
  [ "$output" = "migbed: replay: b: reproduced (model: the same outcome, event log and result byte for byte)" ]
  run "$MIGBED" replay b --json
  [ "$status" -eq 0 ]
  [ "$(jq -r '.reproduced, ."same-build", (.differences | length)' <<<"$output" | tr '\n' ' ')" = "true true 0 " ]
  [ -z "$(find . -maxdepth 1 -name 'migbed-replay-*')" ]    # its scratch folder is gone
}

@test "a bundle is deterministic: the same failing run writes the same files" {
  # bundle names no build id can contain (a hex commit like c0b1ae9 holds "b1")
  for i in one two; do
    run "$MIGBED" run "$S/model-mismatch-64m-to-1m.scn" --expect completed --quiet --bundle bundle-$i
    [ "$status" -eq 1 ]
  done
  for f in scenario.scn events.log result.json build.txt outcome.txt; do cmp bundle-one/$f bundle-two/$f; done
  diff <(sed 's/bundle-one/B/g' bundle-one/README) <(sed 's/bundle-two/B/g' bundle-two/README)
}

@test "a tampered event log or result does not reproduce: replay exits 1 naming the line or the fields" {
  run "$MIGBED" run --fault "$FAULT" --quiet --bundle b
  [ "$status" -eq 1 ]
  sed -i '20s/.*/0.000000000 src tampered/' b/events.log
  run "$MIGBED" replay b
  [ "$status" -eq 1 ]
  [[ "$output" == *"events.log: line 20: bundle '0.000000000 src tampered', replay '"* ]]
  [[ "${lines[-1]}" == "migbed: replay: b: NOT reproduced (1 difference)" ]]
  # a line longer than the message shows (255 bytes) still counts as a difference
  run "$MIGBED" run --fault "$FAULT" --quiet --bundle long
  sed -i "5s/\$/$(printf 'x%.0s' $(seq 300))Y/" long/events.log
  run "$MIGBED" replay long
  [ "$status" -eq 1 ]
  [[ "$output" == *"events.log: line 5: bundle '"* ]]
  run "$MIGBED" run --fault "$FAULT" --quiet --bundle c
  sed -i 's/"seed":1,/"seed":99,/; s/"cause":"DEST_REG_FAILED"/"cause":"TIMEOUT"/' c/result.json
  run "$MIGBED" replay c --json
  [ "$status" -eq 1 ]
  [ "$(jq -r .reproduced <<<"$output")" = false ]
  [ "$(jq -r '.differences[0]' <<<"$output")" = "result.json: seed, cause differ" ]
  rm c/events.log
  run "$MIGBED" replay c
  [ "$status" -eq 1 ]
  [[ "$output" == *"events.log: written by the replay, not in the bundle"* ]]
}

@test "a bundle from another build replays with a warning" {
  run "$MIGBED" run --fault "$FAULT" --quiet --bundle b
  [ "$status" -eq 1 ]
  sed -i 's/^build-id = .*/build-id = v0.0-other/' b/build.txt
  run --separate-stderr "$MIGBED" replay b
  [ "$status" -eq 0 ]
  [[ "$stderr" == "migbed: replay: warning: the bundle is from another build (v0.0-other, "*"); this is "*": replaying anyway" ]]
  [[ "$output" == *": reproduced"* ]]
}

@test "a run that meets its expectation writes no bundle" {
  run "$MIGBED" run --quiet --bundle b
  [ "$status" -eq 0 ]
  [ ! -e b ]
  [ ! -e b.tar.zst ]
  [ -z "$(find . -maxdepth 1 -name 'b.*')" ]
  run "$MIGBED" run "$S/model-mismatch-64m-to-1m.scn" --quiet --bundle b
  [ "$status" -eq 0 ]
  [ ! -e b ]
}

@test "--bundle with --events: both written, the same log; an existing bundle is refused before the run" {
  run "$MIGBED" run --fault "$FAULT" --quiet --bundle b --events ev.log
  [ "$status" -eq 1 ]
  cmp ev.log b/events.log
  run "$MIGBED" run --fault "$FAULT" --quiet --bundle b --events ev2.log
  [ "$status" -eq 2 ]
  [ "$output" = "migbed: run: b: exists (a bundle is never written over: remove it or name another)" ]
  [ ! -e ev2.log ]
  run "$MIGBED" run --quiet --bundle nosuchdir/b
  [ "$status" -eq 2 ]
  [[ "$output" == "migbed: run: nosuchdir/b: cannot write the bundle: No such file or directory" ]]
}

@test "a --trace file is copied into the bundle; the bundle replays from anywhere" {
  "$MIGBED" trace gen --pattern random --guest 64M --duration-ms 300 --seed 5 -o t.trace.zst
  run "$MIGBED" run --trace t.trace.zst --chunk-size 64M --dst-chunk-size 1M --quiet --bundle b
  [ "$status" -eq 1 ]
  cmp t.trace.zst b/trace.zst
  grep -qx 'trace = trace.zst' b/scenario.scn
  run grep -c '^pattern' b/scenario.scn
  [ "$output" = 0 ]
  mkdir elsewhere
  mv b elsewhere/moved
  rm t.trace.zst
  run "$MIGBED" replay elsewhere/moved
  [ "$status" -eq 0 ]
  run "$MIGBED" run elsewhere/moved/scenario.scn --quiet
  [ "$status" -eq 1 ]
  [[ "$output" == *"cause=REMOTE_ACCESS_ERROR"* ]]
}

@test "bad input: no such bundle, not a bundle, bad usage: exit 2" {
  run "$MIGBED" replay nosuch
  [ "$status" -eq 2 ]
  [ "$output" = "migbed: replay: nosuch: not a bundle: No such file or directory" ]
  mkdir empty
  run "$MIGBED" replay empty
  [ "$status" -eq 2 ]
  [ "$output" = "migbed: replay: empty: not a bundle: no scenario.scn" ]
  cp "$S/model-rand-set-1m.scn" empty/scenario.scn
  run "$MIGBED" replay empty
  [ "$status" -eq 2 ]
  [ "$output" = "migbed: replay: empty: not a bundle: no build.txt or outcome.txt" ]
  run "$MIGBED" replay "$S/model-rand-set-1m.scn"
  [ "$status" -eq 2 ]
  [[ "$output" == *"not a bundle: not a directory" ]]
  # a watchdog that is not 1 ms .. a day (it bounds the replay's wait)
  run "$MIGBED" run --fault "$FAULT" --quiet --bundle w
  [ "$status" -eq 1 ]
  for v in -1 0 12x 99999999999999 ''; do
    sed -i "s/^watchdog-ms = .*/watchdog-ms = $v/" w/outcome.txt
    run "$MIGBED" replay w
    echo "watchdog-ms '$v': $output"
    [ "$status" -eq 2 ]
    [ "$output" = "migbed: replay: w: not a bundle: build.txt or outcome.txt incomplete" ]
  done
  run "$MIGBED" replay
  [ "$status" -eq 2 ]
  run "$MIGBED" replay a b
  [ "$status" -eq 2 ]
  run "$MIGBED" replay --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"exit status: 0 reproduced, 1 not reproduced"* ]]
}

@test "torture writes one bundle per rerun that is not proper, and each replays" {
  # ERROR messages are only sent after a failure: the baseline completes, failing runs die
  run "$MIGBED" torture "$BATS_TEST_DIRNAME/data/torture-small.scn" --sites reg_mr --max-runs 6 \
    --fault 'msg.error -> die' --bundles bb --json sw.json
  [ "$status" -eq 1 ]
  [[ "$output" == *"torture: "*" bundles in bb (migbed replay bb/SITE-SIDE-CALL)"* ]]
  [[ "${lines[-1]}" == "torture: "*" runs "* ]]
  want=$(jq -r '.runs[] | select(.verdict != "completed" and .verdict != "failed") | "\(.site)-\(.side)-\(.call)"' sw.json | sort)
  [ -n "$want" ]
  [ "$(find bb -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)" = "$want" ]
  for b in $want; do
    grep -qx "outcome = signal 9" bb/$b/outcome.txt
    grep -q "^got: torture rerun with fault .*: crash: killed by signal 9" bb/$b/README
    [ -s bb/$b.tar.zst ]
    run "$MIGBED" replay bb/$b
    echo "$b: $output"
    [ "$status" -eq 0 ]
  done
  # a second sweep replaces its bundles
  run "$MIGBED" torture "$BATS_TEST_DIRNAME/data/torture-small.scn" --sites reg_mr --max-runs 6 \
    --fault 'msg.error -> die' --bundles bb
  [ "$status" -eq 1 ]
  [ "$(find bb -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)" = "$want" ]
  [ -z "$(find "$BATS_TEST_TMPDIR" -maxdepth 1 -name 'migbed-*')" ]
  # the reruns' scratch lives in bb (renames never cross a filesystem) and is gone after
  [ -z "$(find bb -maxdepth 1 -name '.scratch-*')" ]
  # a third sweep whose tar fails (none on its PATH): each bundle is replaced, and its older
  # .tar.zst, which would not be the new bundle, is removed
  # (the real binary: under make coverage $MIGBED is a wrapper script that needs a PATH)
  mkdir nobin
  local real=${MIGBED_REAL:-$MIGBED}
  for t in "$real" jq; do ln -s "$(command -v "$t")" nobin/; done
  run env PATH="$PWD/nobin" "$real" torture "$BATS_TEST_DIRNAME/data/torture-small.scn" --sites reg_mr \
    --max-runs 6 --fault 'msg.error -> die' --bundles bb
  [ "$status" -eq 1 ]
  [ "$(find bb -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)" = "$want" ]
  [ -z "$(find bb -maxdepth 1 -name '*.tar.zst')" ]
  [ -z "$(find bb -maxdepth 1 -name '*.old-*')" ]
}

@test "every scenario of the fault matrix, made to miss its expectation, writes a bundle that replays" {
  n=0
  for scn in "$S"/fault-*.scn; do
    name=$(basename "$scn" .scn)
    want=$(sed -n 's/^expect = //p' "$scn")
    wrong=failed:NOT_CONVERGED
    if [ "$want" != completed ]; then wrong=completed; fi
    run "$MIGBED" run "$scn" --expect "$wrong" --quiet --bundle "$name"
    [ "$status" -eq 1 ]
    run "$MIGBED" replay "$name"
    echo "$name: $output"
    [ "$status" -eq 0 ]
    n=$((n + 1))
  done
  [ "$n" -ge 60 ]
}

@test "a verbs bundle compares the event names per side, the status and the cause (not times, fields or metrics)" {
  run "$MIGBED" run --fault "$FAULT" --quiet --bundle b
  [ "$status" -eq 1 ]
  sed -i 's/^backend = model$/backend = verbs/' b/build.txt   # judged as a verbs bundle (the run stays the model's)
  sed -i 's/^0\.000000000 /0.000000001 /; s/ addr=[^ ]*//; s/ rc=0$/ rc=0 extra=1/' b/events.log
  sed -i 's/"transferred":[0-9]*/"transferred":1/' b/result.json
  run "$MIGBED" replay b
  [ "$status" -eq 0 ]
  [ "$output" = "migbed: replay: b: reproduced (verbs: the same actions per side up to the first failure, status and cause)" ]
  # after the first failure the teardown is asynchronous on real hardware (rxe delivers the
  # peer's DISCONNECTED, flushes and deregistrations in its own order): not compared
  fail=$(grep -n '^[0-9.]* [a-z]* fail ' b/events.log | head -n 1 | cut -d: -f1)
  total=$(wc -l <b/events.log)
  echo "first fail at line $fail of $total"
  [ "$fail" -lt "$total" ]
  sed -i "$((fail + 1)),\$ s/ \(src\|dst\) [a-z_]*/ \1 teardown_reordered/" b/events.log
  run "$MIGBED" replay b
  echo "$output"
  [ "$status" -eq 0 ]
  # a CM event or a completion the hardware delivered at another point: not an action, not compared
  sed -i '2i 0.000000000 dst cm_event type=RDMA_CM_EVENT_ESTABLISHED status=0' b/events.log
  sed -i '3i 0.000000000 src wc wr_id=0x1 op=send status=SUCCESS len=16' b/events.log
  run "$MIGBED" replay b
  echo "$output"
  [ "$status" -eq 0 ]
  # the destination's 5th action (not a CM event or completion the hardware delivers)
  line=$(grep -n '^[0-9.]* dst ' b/events.log | grep -vE ' dst (cm_event|dst_cm|wc|rnr_wait|wait_[a-z]*) ' \
    | sed -n 5p | cut -d: -f1)
  sed -i "${line}s/ dst [a-z_]*/ dst renamed/" b/events.log
  sed -i 's/"cause":"DEST_REG_FAILED"/"cause":"TIMEOUT"/' b/result.json
  run "$MIGBED" replay b
  [ "$status" -eq 1 ]
  [[ "$output" == *"events.log: dst event 5: bundle 'renamed' (line $line), replay 'reg_mr' (line $((line - 2)))"* ]]   # 2 lines inserted above
  [[ "$output" == *"result.json: cause differs"* ]]
}

@test "bundle names a shell would split or read as an option: the printed replay command runs as printed, and the .tar.zst is written" {
  # the printed command names `migbed`: the real binary's folder (under make coverage $MIGBED is
  # coverage/migbed-record, and its folder has no `migbed`)
  PATH=$(dirname "${MIGBED_REAL:-$MIGBED}"):$PATH
  for name in "my b" "it's" "-y"; do
    run "$MIGBED" run --guest 16M --duration-ms 200 --expect failed:TIMEOUT "--bundle=$name" --quiet
    echo "$output"
    [ "$status" -eq 1 ]
    said=$output
    [ -d "./$name" ]
    [ -s "./$name.tar.zst" ]
    run tar --zstd -tf "./$name.tar.zst"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "$name/" ]]
    # the stderr line's and the bundle README's command, as a shell reads them
    cmd=$(sed -n 's/^replay: //p' "./$name/README")
    [[ "$said" == *"(replay: $cmd)"* ]]
    run bash -c "$cmd"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"reproduced"* ]]
    # by hand: the run itself, which misses its expectation again
    run bash -c "$(sed -n 's/^by hand: //p' "./$name/README")"
    [ "$status" -eq 1 ]
    [[ "$output" == *"verdict=fail status=completed cause=NONE"* ]]
  done
}

@test "a --qemu-expect file is copied into the bundle too: it replays after the original is gone" {
  head -c 8192 /dev/urandom >content.bin
  run "$MIGBED" run "$S/config-qemu-stream-from-migbed.scn" --qemu-expect "$PWD/content.bin@1048576" \
    --expect completed --bundle b --quiet
  echo "$output"
  [ "$status" -eq 1 ]
  run grep -x 'qemu-expect = qemu-expect@1048576' b/scenario.scn
  [ "$status" -eq 0 ]
  cmp content.bin b/qemu-expect
  rm content.bin
  mkdir elsewhere
  mv b elsewhere/
  run "$MIGBED" replay elsewhere/b
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"reproduced (model"* ]]
}
