#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# migbed explain (docs/explain.md): QEMU logs in, the causes they fit out, best first. What a
# user checks: every log of the corpus (bats/data/qemu-logs: real QEMU 7.2 lines and the field
# failures) names its cause first, in text and JSON; a log that fits nothing says so (exit 1)
# and shows its lines; bad input is exit 2 with nothing written; the scenario it writes fails
# the same way under `migbed run`, with the same QEMU lines; the output is deterministic.
load helpers

L=$BATS_TEST_DIRNAME/data/qemu-logs
export MIGBED_SCENARIOS=$BATS_TEST_DIRNAME/scenarios

# corpus: "LOGS FIRST" rows of expected.txt (LOGS: A or A+B), one per line
corpus() { grep -v '^#' "$L/expected.txt" | awk 'NF == 2'; }

logs_of() {  # logs_of A+B -> the paths, one word each
  local f out=()
  IFS=+ read -ra parts <<<"$1"
  for f in "${parts[@]}"; do out+=("$L/$f"); done
  echo "${out[@]}"
}

@test "explain --help says what it reads and its exit codes; a bad option or no log is exit 2" {
  run "$MIGBED" explain --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"usage: migbed explain"* ]]
  [[ "$output" == *"--scenario-out DIR"* ]]
  [[ "$output" == *"exit status: 0 some cause fits, 1 none does"* ]]
  run "$MIGBED" --help
  [[ "$output" == *"explain"* ]]
  run "$MIGBED" explain --bogus "$L/72-dst-version-2.log"
  [ "$status" -eq 2 ]
  [[ "$output" == *"unknown option '--bogus'"* ]]
  run "$MIGBED" explain
  [ "$status" -eq 2 ]
  run "$MIGBED" explain --run "$L/72-dst-version-2.log"
  [ "$status" -eq 2 ]
  [[ "$output" == *"--run runs the scenarios --scenario-out DIR writes"* ]]
}

@test "every corpus log names its cause first (text and --json)" {
  [ "$(corpus | wc -l)" -ge 18 ]
  n=0
  while read -r logs first; do
    n=$((n + 1))
    # shellcheck disable=SC2046
    run "$MIGBED" explain $(logs_of "$logs") --json "$BATS_TEST_TMPDIR/r.json"
    echo "$logs (want $first):"; echo "$output" | grep -E '^[0-9]+\. ' | head -4
    [ "$status" -eq 0 ]
    top=$(jq -r '.causes[0].cause' "$BATS_TEST_TMPDIR/r.json")
    if [[ $first == =* ]]; then       # the log cannot tell: the cause shares the top score
      want=${first#=}
      [ "$(jq --arg c "$want" '[.causes[] | select(.cause == $c)][0].score == .causes[0].score' "$BATS_TEST_TMPDIR/r.json")" = true ]
    else
      [ "$top" = "$first" ]
      [[ "${lines[*]}" == *"1. $first (score "* ]]
    fi
    # every cause cites its lines as FILE:LINE: text, from the files given
    [ "$(jq '[.causes[].lines[] | select(test("^/.*qemu-logs/[^:]+:[0-9]+: ") | not)] | length' "$BATS_TEST_TMPDIR/r.json")" -eq 0 ]
  done < <(corpus)
  [ "$n" -eq "$(corpus | wc -l)" ]
}

@test "a cause comes with its lines, side, QEMU versions, hint and a scenario" {
  run "$MIGBED" explain "$L/72-dst-chunk-64m-source.log"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "$L/72-dst-chunk-64m-source.log: dst log (inferred from its lines), 6 line(s), 4 placed" ]
  [ "${lines[1]}" = "1. REMOTE_ACCESS_ERROR (score 333, dst side): an RDMA WRITE was rejected by the destination (IBV_WC_REM_ACCESS_ERR)" ]
  [[ "$output" == *"72-dst-chunk-64m-source.log:3: ibv_poll_cq wrid=CONTROL RECV!"$'\n'"       = [7.2 observed dst]"* ]]
  # a line 8.2 prints too reads as its format; with ibv_poll_cq status lines the log is not 8.2's
  [[ "$output" == *"72-dst-chunk-64m-source.log:4: qemu-system-x86_64: rdma migration: recv polling control error!"$'\n'"       = [8.2 read dst]"* ]]
  [[ "$output" == *"QEMU versions: 7.2 (profile qemu-7.2, QEMU 6.2 .. 8.0, 8.1.3 .. 8.1.x); <= 8.1 (ibv_poll_cq status lines; 8.2 prints none)"* ]]
  [[ "$output" == *"hint: the write fell outside the memory the destination registered"* ]]
  [[ "$output" == *"reproduce: migbed run $MIGBED_SCENARIOS/model-mismatch-64m-to-1m.scn"* ]]
  # a printf format's fields are quoted; a 6.1 trace is the shared-CQ versions
  run "$MIGBED" explain "$L/hw-src-ram-blocks-mismatch.log"
  [[ "$output" == *'= [8.2 read src] "ram blocks mismatch (Number of blocks %d vs %d)" with 3, 4'* ]]
  run "$MIGBED" explain "$L/hw-libvirt-dst-guest1.log"
  [[ "$output" == *'hw-libvirt-dst-guest1.log:12: 2026-03-02T10:15:07.418230Z qemu-system-x86_64: rdma: Too many requests in this message (3254779904).Bailing.'* ]]
  [[ "$output" == *'with 3254779904'* ]]
  run "$MIGBED" explain "$L/hw-61-dst-shared-cq-hang.log"
  [[ "$output" == *"QEMU versions: shared CQ (profile qemu-6.1, QEMU .. 6.1)"* ]]
  [[ "$output" == *"reproduce: migbed run $MIGBED_SCENARIOS/profile-qemu61-dst-drops-message.scn"* ]]
}

@test "a log in QEMU 8.2's words (hand-written from its source) names its cause and 8.2 as the version" {
  run "$MIGBED" explain "$L/82-dst-bad-compress.log" --json "$BATS_TEST_TMPDIR/c.json"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "$L/82-dst-bad-compress.log: dst log (inferred from its lines), 1 line(s), 1 placed" ]
  [[ "${lines[1]}" == "1. BAD_COMPRESS (score "*", dst side): "* ]]
  [[ "$output" == *'= [8.2 read dst, a non-zero value] "rdma: Zero page with non-zero (%d) value" with 255'* ]]
  [[ "$output" == *"   QEMU versions: 8.2 (profile qemu-8.2, QEMU 8.2 .. 11.0)"$'\n'* ]]
  [[ "$output" != *"profile qemu-11.1"* ]]
  [ "$(jq -r '.causes[0].cause' "$BATS_TEST_TMPDIR/c.json")" = BAD_COMPRESS ]
  # the version-2 refusal: the first line is 7.2's too, the second only 8.2's (7.2 crashed)
  run "$MIGBED" explain "$L/82-dst-version-2.log"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[1]}" == "1. VERSION_UNSUPPORTED (score "* ]]
  [[ "$output" == *"82-dst-version-2.log:2: qemu-system-x86_64: RDMA ERROR: Migration initialization failed"$'\n'"       = [8.2 read dst]"* ]]
  [[ "$output" == *"QEMU versions: 7.2 (profile qemu-7.2, QEMU 6.2 .. 8.0, 8.1.3 .. 8.1.x); 8.2 (profile qemu-8.2, QEMU 8.2 .. 11.0)"* ]]
}

@test "the two sides' logs combine: the chunk-size mismatch pair, by position, by flag or swapped" {
  src=$L/hw-chunk-mismatch-src.log
  dst=$L/hw-chunk-mismatch-dst.log
  run "$MIGBED" explain "$src" "$dst" --json "$BATS_TEST_TMPDIR/a.json"
  [ "$status" -eq 0 ]
  [ "$(jq -r '.causes[0].cause + " " + .causes[0].scenario' "$BATS_TEST_TMPDIR/a.json")" = \
    "REMOTE_ACCESS_ERROR $MIGBED_SCENARIOS/model-mismatch-64m-to-1m.scn" ]
  # lines from both logs
  [ "$(jq '[.causes[0].lines[] | select(contains("mismatch-src.log:1: "))] | length' "$BATS_TEST_TMPDIR/a.json")" -eq 1 ]
  [ "$(jq '[.causes[0].lines[] | select(contains("mismatch-dst.log:3: "))] | length' "$BATS_TEST_TMPDIR/a.json")" -eq 1 ]
  [ "$(jq -r '[.logs[].side] | join(" ")' "$BATS_TEST_TMPDIR/a.json")" = "src dst" ]
  run "$MIGBED" explain --dst "$dst" --src "$src" --json "$BATS_TEST_TMPDIR/b.json"
  same='[.causes[] | [.cause, .score, .side, (.lines | sort)]]'
  [ "$(jq -c "$same" "$BATS_TEST_TMPDIR/b.json")" = "$(jq -c "$same" "$BATS_TEST_TMPDIR/a.json")" ]
  [ "$(jq -r '[.logs[] | .side + " " + (."side-inferred" | tostring)] | join(", ")' "$BATS_TEST_TMPDIR/b.json")" = "dst false, src false" ]
  # swapped positions: the lines say which side each is
  run "$MIGBED" explain "$dst" "$src" --json "$BATS_TEST_TMPDIR/c.json"
  [ "$(jq -r '.causes[0].cause' "$BATS_TEST_TMPDIR/c.json")" = REMOTE_ACCESS_ERROR ]
  [ "$(jq -r '[.logs[].side] | join(" ")' "$BATS_TEST_TMPDIR/c.json")" = "dst src" ]
  # one side alone says less: the destination's log alone does not put REMOTE_ACCESS_ERROR first
  run "$MIGBED" explain "$dst" --json "$BATS_TEST_TMPDIR/d.json"
  [ "$(jq -r '.causes[0].cause' "$BATS_TEST_TMPDIR/d.json")" != REMOTE_ACCESS_ERROR ]
}

@test "a log that fits no cause: exit 1, its lines listed as unplaced" {
  run "$MIGBED" explain "$L/hw-nothing-known.log" --json "$BATS_TEST_TMPDIR/n.json"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"migbed: explain: no cause fits these logs"* ]]
  [[ "$output" == *"hw-nothing-known.log: 2 line(s) fit no cause:"* ]]
  [[ "$output" == *"hw-nothing-known.log:2: qemu-system-x86_64: terminating on signal 15 from pid 1234 (/usr/sbin/libvirtd)"* ]]
  [ "$(jq '.causes | length' "$BATS_TEST_TMPDIR/n.json")" -eq 0 ]
  [ "$(jq '.logs[0].unplaced | length' "$BATS_TEST_TMPDIR/n.json")" -eq 2 ]
}

@test "an unreadable log is exit 2, named, and nothing is written" {
  run "$MIGBED" explain "$L/72-dst-version-2.log" "$BATS_TEST_TMPDIR/no-such.log" \
    --json "$BATS_TEST_TMPDIR/r.json" --scenario-out "$BATS_TEST_TMPDIR/out"
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"explain: $BATS_TEST_TMPDIR/no-such.log: No such file or directory"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/r.json" ]
  [ ! -e "$BATS_TEST_TMPDIR/out" ]
  mkdir "$BATS_TEST_TMPDIR/dir.log"
  run "$MIGBED" explain "$BATS_TEST_TMPDIR/dir.log"
  [ "$status" -eq 2 ]
  [[ "$output" == *"dir.log"* ]]
  # a --json path that cannot be written is refused before anything happens
  run "$MIGBED" explain "$L/72-dst-version-2.log" --json "$BATS_TEST_TMPDIR/no/dir/r.json"
  [ "$status" -eq 2 ]
  [ ! -e "$BATS_TEST_TMPDIR/no" ]
}

@test "--scenario-out writes a scenario that migbed run fails with the same cause and the same QEMU 7.2 lines" {
  out=$BATS_TEST_TMPDIR/out
  run "$MIGBED" explain "$L/72-dst-chunk-64m-source.log" --scenario-out "$out"
  [ "$status" -eq 0 ]
  [[ "$output" == *"written: $out/REMOTE_ACCESS_ERROR.scn (with dst-impl = qemu-7.2)"* ]]
  grep -qx 'dst-impl = qemu-7.2' "$out/REMOTE_ACCESS_ERROR.scn"
  grep -qx 'expect = failed:REMOTE_ACCESS_ERROR' "$out/REMOTE_ACCESS_ERROR.scn"
  run "$MIGBED" run "$out/REMOTE_ACCESS_ERROR.scn" --json "$BATS_TEST_TMPDIR/run.json"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[-1]}" = "migbed: verdict=pass status=failed cause=REMOTE_ACCESS_ERROR side=src" ]
  # each line the reproduction's QEMU 7.2 destination prints is a line of the log
  [ "$(jq '.dst."qemu-log" | length' "$BATS_TEST_TMPDIR/run.json")" -eq 3 ]
  while read -r l; do
    grep -qF -- "$l" "$L/72-dst-chunk-64m-source.log"
  done < <(jq -r '.dst."qemu-log"[]' "$BATS_TEST_TMPDIR/run.json")
}

@test "--run runs the written scenarios and says whether they reproduce the log" {
  out=$BATS_TEST_TMPDIR/out
  run "$MIGBED" explain "$L/72-src-dest-reg-failed.log" --scenario-out "$out" --run --json "$BATS_TEST_TMPDIR/r.json"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"reproduction: cause DEST_REG_FAILED (the same); qemu-7.2 src lines: 2 of 2 in the log -> reproduced"* ]]
  [ "$(jq -r '.causes[0].reproduction.same' "$BATS_TEST_TMPDIR/r.json")" = true ]
  [ -s "$out/DEST_REG_FAILED.json" ]
  # a log with no 7.2 line: the cause is compared, there are no lines to compare
  run "$MIGBED" explain "$L/hw-f2-src-rnr-odp.log" --scenario-out "$out" --run
  [[ "$output" == *"reproduction: cause RNR_RETRY_EXCEEDED (the same); no QEMU lines to compare (the log has no observed 7.2 line) -> reproduced"* ]]
}

@test "explain is deterministic: the same logs give byte-identical text and JSON" {
  for i in 1 2; do
    "$MIGBED" explain "$L/hw-chunk-mismatch-src.log" "$L/hw-chunk-mismatch-dst.log" "$L/hw-libvirt-dst-guest1.log" \
      --json "$BATS_TEST_TMPDIR/r$i.json" >"$BATS_TEST_TMPDIR/t$i"
  done
  [ -s "$BATS_TEST_TMPDIR/t1" ]
  cmp "$BATS_TEST_TMPDIR/t1" "$BATS_TEST_TMPDIR/t2"
  cmp "$BATS_TEST_TMPDIR/r1.json" "$BATS_TEST_TMPDIR/r2.json"
  # --json - writes the JSON alone on standard output
  json=$("$MIGBED" explain "$L/72-dst-version-2.log" --json - 2>/dev/null)
  [ "$(jq -r '.causes[0].cause' <<<"$json")" = VERSION_UNSUPPORTED ]
}

@test "--scenario-out: a file path with a space or '#' is copied whole; a later file that cannot be written leaves none written" {
  # a catalogue (MIGBED_SCENARIOS) whose scenarios name a dst-layout by a relative path with a
  # space and a '#' (the scenario reader takes a value to the end of its line)
  cat=$BATS_TEST_TMPDIR/cat
  mkdir "$cat"
  cp "$BATS_TEST_DIRNAME"/scenarios/*.scn "$cat/"
  "$MIGBED" trace gen --pattern idle --guest 64M --duration-ms 10 --seed 1 -o "$cat/lay out#1.trace" 2>/dev/null
  for f in "$cat"/*.scn; do
    echo 'dst-layout = lay out#1.trace' >>"$f"
  done
  out=$BATS_TEST_TMPDIR/out
  MIGBED_SCENARIOS=$cat run "$MIGBED" explain "$L/72-dst-chunk-64m-source.log" --scenario-out "$out"
  echo "$output"
  [ "$status" -eq 0 ]
  run grep -x "dst-layout = $cat/lay out#1.trace" "$out/REMOTE_ACCESS_ERROR.scn"
  [ "$status" -eq 0 ]
  run grep -x "dst-layout = $cat/lay out#1.trace" "$out/CHUNK_SIZE_MISMATCH.scn"
  [ "$status" -eq 0 ]
  # the second cause's file cannot be written (a folder is in its place): exit 2, and the first
  # one written in this call is removed again
  rm -rf "$out"
  mkdir -p "$out/CHUNK_SIZE_MISMATCH.scn"
  MIGBED_SCENARIOS=$cat run "$MIGBED" explain "$L/72-dst-chunk-64m-source.log" --scenario-out "$out"
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"(nothing written)"* ]]
  run ls "$out"
  [ "$output" = CHUNK_SIZE_MISMATCH.scn ]
}
