#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Bad input and output targets of the commands that run a migration (run, source, dest,
# torture, sweep, replay; hw profiles: also hw show, calibrate): every bad corpus trace (bats/data/traces/bad, its defect in a first-line
# "# expect: LINE: keyword" comment), plain or zstd, and every bad corpus scenario
# (bats/data/scenarios-bad, the same comment; also as a bundle's scenario.scn) fed to every
# way they read one exits 2 naming FILE:LINE and the problem, before anything runs, and
# leaves no output file; explain ends hostile logs properly; --json,
# --events and --fault-counts (and torture's --json, dest's --ready-file, source's
# --dump-mem) write "-" to stdout, devices and FIFOs in place, through symlinks (the link
# stays), and an unwritable path is refused before the run.

load helpers
bats_require_minimum_version 1.5.0

CORPUS=$BATS_TEST_DIRNAME/data/traces
DATA=$BATS_TEST_DIRNAME/data/bad-input
SCENARIOS_BAD=$BATS_TEST_DIRNAME/data/scenarios-bad
HW_BAD=$BATS_TEST_DIRNAME/data/hw-bad

setup() {
  cd "$BATS_TEST_TMPDIR"
  bg_pid=
}

teardown() {        # a migbed this test left stopped or running (by its pid only)
  if [ -n "$bg_pid" ] && kill -0 "$bg_pid" 2>/dev/null; then
    kill -KILL "$bg_pid" 2>/dev/null
  fi
  return 0
}


# bad_trace_case NAME TRACE ARGS...: `migbed ARGS` with every output in a fresh out/ must exit
# exactly 2 (not a crash), name TRACE:LINE and the keyword on stderr, print no verdict, and
# leave out/ empty (no json, events, fault counts, ready file, nor their .tmp).
bad_trace_case() {
  local name=$1 f=$2
  shift 2
  rm -rf out
  mkdir out
  run --separate-stderr "$MIGBED" "$@" --json out/r.json --events out/ev --fault-counts out/fc
  echo "$name $(basename "$f") (want $exp_line: $exp_word) -> $status"
  echo "stdout: $output"
  echo "stderr: $stderr"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"$f:$exp_line: "*"$exp_word"* ]]
  [[ "$output" != *"verdict="* ]]
  [ -z "$(ls -A out)" ]
}

@test "every bad corpus trace, every command that reads a trace: exit 2, FILE:LINE: problem, nothing written" {
  local n=0 good=$CORPUS/good/steady-writer.trace
  for f in "$CORPUS"/bad/*.trace; do
    read_expect "$f"
    bad_trace_case "run --trace" "$f" run --trace "$f"
    bad_trace_case "run --dst-layout" "$f" run --trace "$good" --dst-layout "$f"
    bad_trace_case "source --trace" "$f" source --connect 127.0.0.1:9 --trace "$f"
    bad_trace_case "dest --trace" "$f" dest --listen 127.0.0.1:0 --accept-timeout-ms 100 \
      --ready-file out/ready --trace "$f"
    bad_trace_case "dest --dst-layout" "$f" dest --listen 127.0.0.1:0 --accept-timeout-ms 100 \
      --ready-file out/ready --trace "$good" --dst-layout "$f"
    bad_trace_case "torture --trace" "$f" torture --trace "$f"
    bad_trace_case "torture --dst-layout" "$f" torture --trace "$good" --dst-layout "$f"
    n=$((n + 1))
  done
  [ "$n" -ge 20 ]
}

@test "every bad corpus scenario, every command that reads a scenario: exit 2, FILE:LINE: problem, nothing written" {
  export TMPDIR=$BATS_TEST_TMPDIR/tmp       # torture's sweep folder would go here
  mkdir "$TMPDIR"
  local n=0
  for f in "$SCENARIOS_BAD"/*.scn; do
    read_expect "$f"
    bad_trace_case "run" "$f" run "$f"
    bad_trace_case "source" "$f" source "$f" --connect 127.0.0.1:9
    bad_trace_case "dest" "$f" dest "$f" --listen 127.0.0.1:0 --accept-timeout-ms 100 --ready-file out/ready
    bad_trace_case "torture" "$f" torture "$f"
    [ -z "$(ls -A "$TMPDIR")" ]
    n=$((n + 1))
  done
  [ "$n" -ge 15 ]
}

# bad_sweep_case NAME FILE ARGS...: `migbed ARGS` (a sweep or a calibration: outputs --json,
# --csv, -o in a fresh out/) must exit 2 naming FILE:LINE and the keyword, and leave out/ empty.
bad_sweep_case() {
  local name=$1 f=$2
  shift 2
  rm -rf out
  mkdir out
  run --separate-stderr "$MIGBED" "$@"
  echo "$name $(basename "$f") (want $exp_line: $exp_word) -> $status"
  echo "stdout: $output"
  echo "stderr: $stderr"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"$f:$exp_line: "*"$exp_word"* ]]
  [ -z "$(ls -A out)" ]
}

@test "sweep: every bad corpus trace and scenario, as --trace, --dst-layout or SCENARIO: exit 2, FILE:LINE, nothing written" {
  local n=0 good=$CORPUS/good/steady-writer.trace
  for f in "$CORPUS"/bad/*.trace; do
    read_expect "$f"
    bad_sweep_case "sweep --trace" "$f" sweep --trace "$f" --chunk-sizes 1M,2M --json out/s.json --csv out/s.csv
    bad_sweep_case "sweep --dst-layout" "$f" sweep --trace "$good" --dst-layout "$f" --chunk-sizes 1M,2M \
      --json out/s.json --csv out/s.csv
    n=$((n + 1))
  done
  for f in "$SCENARIOS_BAD"/*.scn; do
    read_expect "$f"
    bad_sweep_case "sweep SCENARIO" "$f" sweep "$f" --chunk-sizes 1M,2M --json out/s.json --csv out/s.csv
    n=$((n + 1))
  done
  [ "$n" -ge 35 ]
}

@test "every bad corpus hardware profile, every command that reads one (--hw, a scenario's hw key, hw show, calibrate): exit 2, FILE:LINE, nothing written" {
  export TMPDIR=$BATS_TEST_TMPDIR/tmp       # torture's sweep folder would go here
  mkdir "$TMPDIR"
  printf 'chunk-size,total-time-ms\n1M,800\n4M,400\n' >table.csv
  local n=0
  for f in "$HW_BAD"/*.hw; do
    read_expect "$f"
    bad_trace_case "run --hw" "$f" run --guest 16M --duration-ms 100 --hw "$f"
    bad_trace_case "source --hw" "$f" source --connect 127.0.0.1:9 --guest 16M --hw "$f"
    bad_trace_case "dest --hw" "$f" dest --listen 127.0.0.1:0 --accept-timeout-ms 100 \
      --ready-file out/ready --guest 16M --hw "$f"
    bad_trace_case "torture --hw" "$f" torture --guest 16M --duration-ms 100 --hw "$f"
    bad_sweep_case "sweep --hw" "$f" sweep --guest 16M --duration-ms 100 --chunk-sizes 1M,2M --hw "$f" \
      --json out/s.json --csv out/s.csv
    bad_sweep_case "hw show" "$f" hw show "$f"
    bad_sweep_case "calibrate --hw" "$f" calibrate --table table.csv --fit setup-ms --guest 16M \
      --duration-ms 100 --hw "$f" -o out/fit.hw --json out/c.json
    # a scenario naming it (hw = FILE: relative to the scenario's folder)
    printf 'guest = 16M\nduration-ms = 100\nhw = %s\n' "$f" >a.scn
    bad_trace_case "run SCENARIO (hw =)" "$f" run a.scn
    [ -z "$(ls -A "$TMPDIR")" ]
    n=$((n + 1))
  done
  [ "$n" -ge 12 ]
}

@test "replay: a bundle whose scenario.scn is bad is no bundle: exit 2 naming scenario.scn:LINE, nothing written" {
  export TMPDIR=$BATS_TEST_TMPDIR/tmp
  mkdir "$TMPDIR"
  run "$MIGBED" run --guest 16M --worker-bytes 4M --fault 'reg_mr@dst #1 -> errno(ENOMEM)' --quiet --bundle w
  [ "$status" -eq 1 ]
  local n=0 before
  for f in "$SCENARIOS_BAD"/*.scn; do
    read_expect "$f"
    cp "$f" w/scenario.scn
    before=$(ls -l w)
    run --separate-stderr "$MIGBED" replay w
    echo "$(basename "$f") -> $status: $stderr"
    [ "$status" -eq 2 ]
    [[ "$stderr" == "migbed: replay: w: not a bundle: w/scenario.scn:$exp_line: "*"$exp_word"* ]]
    [[ "$output" != *"reproduced"* ]]
    [ "$(ls -l w)" = "$before" ]
    [ -z "$(ls -A "$TMPDIR")" ]
    n=$((n + 1))
  done
  [ "$n" -ge 15 ]
}

@test "zstd traces: a truncated frame, text named .zst, zstd named plain, a bad trace compressed: every command exits 2 naming the file" {
  command -v zstd >/dev/null || skip "zstd tool not installed"
  local good=$CORPUS/good/steady-writer.trace
  zstd -q -c "$good" >packed.trace.zst
  head -c $(($(stat -c %s packed.trace.zst) - 8)) packed.trace.zst >cut.trace.zst
  cp "$good" text.trace.zst
  cp packed.trace.zst packed.trace
  zstd -q -c "$CORPUS/bad/time-backwards.trace" >backwards.trace.zst
  local f
  for f in cut.trace.zst text.trace.zst packed.trace backwards.trace.zst; do
    case $f in
      cut.*) exp_line='[0-9]*' exp_word="truncated zstd frame" ;;
      text.*) exp_line='[0-9]*' exp_word="bad zstd data" ;;
      packed.*) exp_line=1 exp_word="zstd-compressed data, but the file name does not end in .zst" ;;
      backwards.*) exp_line=7 exp_word="strictly increase" ;;
    esac
    bad_zst_case "run --trace" "$f" run --trace "$f"
    bad_zst_case "run --dst-layout" "$f" run --trace "$good" --dst-layout "$f"
    bad_zst_case "source --trace" "$f" source --connect 127.0.0.1:9 --trace "$f"
    bad_zst_case "dest --trace" "$f" dest --listen 127.0.0.1:0 --accept-timeout-ms 100 \
      --ready-file out/ready --trace "$f"
    bad_zst_case "torture --trace" "$f" torture --trace "$f"
  done
}

# bad_zst_case: bad_trace_case with exp_line a glob (a zstd error's line is where the data broke)
bad_zst_case() {
  local name=$1 f=$2
  shift 2
  rm -rf out
  mkdir out
  run --separate-stderr "$MIGBED" "$@" --json out/r.json --events out/ev --fault-counts out/fc
  echo "$name $f (want $exp_line: $exp_word) -> $status"
  echo "stderr: $stderr"
  [ "$status" -eq 2 ]
  # shellcheck disable=SC2053
  [[ "$stderr" == *"$f:"$exp_line": "*"$exp_word"* ]]
  [[ "$output" != *"verdict="* ]]
  [ -z "$(ls -A out)" ]
}

@test "explain: hostile QEMU logs (NUL bytes, random bytes, one 2 MB line, not UTF-8, empty) end properly: exit 1, valid JSON, no scenario written" {
  printf 'qemu-system-x86_64: rdma: bad\0 line\nfoo\n' >nul.log
  { echo x; head -c 1000000 /dev/urandom; } >random.log   # not '{' first: a JSON log that is not JSON exits 2
  { head -c 2000000 /dev/zero | tr '\0' x; echo; } >long.log
  printf '\xff\xfe\xfd\n' >binary.log
  : >empty.log
  local f
  for f in nul.log random.log long.log binary.log empty.log; do
    rm -rf so r.json
    run --separate-stderr "$MIGBED" explain "$f" --json r.json --scenario-out so
    echo "$f -> $status: $stderr"
    [ "$status" -eq 1 ]
    [[ "$output" == *"no cause fits these logs"* ]]
    jq -e '.causes | length == 0' r.json
    [ ! -e so ]
  done
}

@test "a valid trace QEMU cannot migrate (a block not whole 4 KiB pages): trace check accepts it, every command that runs it exits 2 naming FILE:LINE" {
  local good=$CORPUS/good/steady-writer.trace n=0
  for f in "$CORPUS"/unmigratable/*.trace; do
    run "$MIGBED" trace check "$f"
    [ "$status" -eq 0 ]
    read_expect "$f"
    bad_trace_case "run --trace" "$f" run --trace "$f"
    bad_trace_case "run --dst-layout" "$f" run --trace "$good" --dst-layout "$f"
    bad_trace_case "source --trace" "$f" source --connect 127.0.0.1:9 --trace "$f"
    bad_trace_case "dest --trace" "$f" dest --listen 127.0.0.1:0 --accept-timeout-ms 100 \
      --ready-file out/ready --trace "$f"
    bad_trace_case "torture --trace" "$f" torture --trace "$f"
    n=$((n + 1))
  done
  [ "$n" -ge 1 ]
}

@test "a trace that turns bad mid-run (replaced while paused, re-read by the loop): exit 2, no crash, nothing written" {
  cp "$DATA/loop-10ms.trace" t.trace
  "$MIGBED" run --trace t.trace --quiet --json r.json --events ev --fault-counts fc \
    --pause-at src:ep_create >out 2>err &
  bg_pid=$!
  local rc=0
  wait_paused "$bg_pid" 20
  cp "$DATA/loop-10ms-bad.trace" new.trace
  mv new.trace t.trace      # the open reader keeps the old file; the next pass opens this one
  resume "$bg_pid"
  wait "$bg_pid" || rc=$?
  cat out err
  [ "$rc" -eq 2 ]
  grep -qF "migbed: run: t.trace:7: unknown block 'vga.vram'" err
  [ "$(grep -c 'verdict=' out)" -eq 0 ]
  [ "$(ls -A | tr '\n' ' ')" = "err out t.trace " ]
}

@test "run rejects a trace whose time goes backwards as trace check does (the same FILE:LINE: problem)" {
  local f=$CORPUS/bad/time-backwards.trace
  run --separate-stderr "$MIGBED" trace check "$f"
  [ "$status" -eq 2 ]
  want=$(head -1 <<<"$stderr")
  [[ "$want" == "$f:7: "*"strictly increase"* ]]
  run --separate-stderr "$MIGBED" run --trace "$f"
  echo "$stderr"
  [ "$status" -eq 2 ]
  [ "$stderr" = "migbed: run: $want" ]
}

@test "a trace with several defects: run names the first and counts them" {
  local f=$DATA/two-defects.trace
  run --separate-stderr "$MIGBED" run --trace "$f" --json r.json
  echo "$stderr"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"$f:9: page 999 out of range"*"(2 defects in all: see migbed trace check)"* ]]
  [ ! -e r.json ]
  [ ! -e r.json.tmp ]
}

@test "--json - puts the JSON alone on stdout, the verdict on stderr; no file named -" {
  run --separate-stderr "$MIGBED" run --quiet --json -
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 1 ]
  [ "$stderr" = "migbed: verdict=pass status=completed cause=NONE side=-" ]
  jq -e '.verdict == "pass" and .status == "completed"' <<<"${lines[0]}"
  [ ! -e ./- ]
  [ ! -e ./-.tmp ]
}

@test "--events - puts the event log on stdout, before the verdict; no file named -" {
  "$MIGBED" run --quiet --events ev >/dev/null
  run --separate-stderr "$MIGBED" run --quiet --events -
  [ "$status" -eq 0 ]
  [ "${lines[-1]}" = "migbed: verdict=pass status=completed cause=NONE side=-" ]
  [ "$(sed '$d' <<<"$output")" = "$(cat ev)" ]
  [ ! -e ./- ]
}

@test "--json /dev/stdout: the JSON arrives and /dev/stdout stays a symlink" {
  [ -L /dev/stdout ] || skip "/dev/stdout is not a symlink here"
  run --separate-stderr "$MIGBED" run --quiet --json /dev/stdout
  if [ ! -L /dev/stdout ]; then             # a broken binary replaced it: repair, then fail
    ln -sf /proc/self/fd/1 /dev/stdout
    echo "/dev/stdout was replaced by a regular file"
    false
  fi
  [ ! -e /dev/stdout.tmp ]
  [ "$status" -eq 0 ]
  jq -e '.verdict == "pass"' <<<"${lines[0]}"
  # stdout redirected to a regular file: the JSON alone goes into it (standard output's own
  # file is standard output: the verdict goes to stderr, as with --json -)
  "$MIGBED" run --quiet --json /dev/stdout >out.txt 2>err.txt
  [ -L /dev/stdout ]
  [ "$(cat err.txt)" = "migbed: verdict=pass status=completed cause=NONE side=-" ]
  [ "$(wc -l <out.txt)" -eq 1 ]
  jq -e '.verdict == "pass"' out.txt
}

@test "--json and --events through a symlink to stdout's file descriptor: the link stays" {
  ln -s /proc/self/fd/1 j
  ln -s /proc/self/fd/1 e
  run --separate-stderr "$MIGBED" run --quiet --json j --events e
  [ "$status" -eq 0 ]
  [ -L j ]
  [ -L e ]
  [ ! -e j.tmp ]
  [ ! -e e.tmp ]
  jq -e '.verdict == "pass"' <<<"${lines[-1]}"
  [[ "${lines[0]}" == "0.000000000 sim hca_world backend=model" ]]
}

@test "--json, --events, --fault-counts through symlinks to regular files: links stay, targets get the content" {
  "$MIGBED" run --quiet --json want.json --events want.ev --fault-counts want.fc >/dev/null
  mkdir a b
  echo old >b/r.json
  echo old >b/r.ev
  ln -s ../b/r.json a/l.json          # relative, into another directory
  ln -s "$PWD/b/r.ev" a/l.ev          # absolute
  ln -s r.fc b/l.fc                   # dangling: the target is created
  run "$MIGBED" run --quiet --json a/l.json --events a/l.ev --fault-counts b/l.fc
  [ "$status" -eq 0 ]
  [ -L a/l.json ]
  [ -L a/l.ev ]
  [ -L b/l.fc ]
  cmp want.json b/r.json
  cmp want.ev b/r.ev
  cmp want.fc b/r.fc
  [ "$(ls a b | grep -c '\.tmp$')" -eq 0 ]
}

@test "--json and --events into a FIFO and a device: written in place, never replaced" {
  mkfifo jf ef
  timeout "$(scaled 20)" cat jf >got.json &
  local jpid=$!
  timeout "$(scaled 20)" cat ef >got.ev &
  local epid=$!
  run "$MIGBED" run --quiet --json jf --events ef
  wait "$jpid"
  wait "$epid"
  [ "$status" -eq 0 ]
  [ -p jf ]
  [ -p ef ]
  jq -e '.verdict == "pass"' got.json
  [[ "$(head -1 got.ev)" == "0.000000000 sim hca_world backend=model" ]]
  [ "$(id -u)" -eq 0 ] || skip "mknod needs root"
  mknod null c 1 3                    # a private /dev/null: a broken binary replaces only this
  run "$MIGBED" run --quiet --json null --events null
  [ "$status" -eq 0 ]
  [ -c null ]
  [ ! -e null.tmp ]
}

# unwritable OPTION PATH [COMMAND ARGS...]: `migbed COMMAND ARGS OPTION PATH` (COMMAND: run
# unless given) is refused before the run (no verdict line, no torture table), exit 2, PATH named
unwritable() {
  local opt=$1 path=$2
  shift 2
  [ $# -gt 0 ] || set -- run
  run "$MIGBED" "$@" "$opt" "$path"
  echo "$* $opt $path -> $status: $output"
  [ "$status" -eq 2 ]
  [[ "$output" != *"verdict="* ]]
  [[ "$output" != *"VERDICT"* ]]
  [[ "$output" == *"$path: cannot write"* ]]
}

@test "an unwritable --json, --events or --fault-counts is refused before the run, nothing created" {
  mkdir d
  for opt in --json --events --fault-counts; do
    unwritable "$opt" /nonexistent/dir/x.json
    [ ! -e /nonexistent ]
    unwritable "$opt" d
    [ -d d ]
    [ -z "$(ls -A d)" ]
    [ ! -e d.tmp ]
    unwritable "$opt" /proc/migbed-x.json
  done
  if [ "$(id -u)" -ne 0 ]; then
    mkdir ro
    chmod 555 ro
    unwritable --json ro/x.json
    unwritable --events ro/x.ev
    [ -z "$(ls -A ro)" ]
  fi
}

@test "source and dest: an unwritable --json or --events is refused before connecting or listening" {
  for opt in --json --events; do
    run "$MIGBED" source --connect 127.0.0.1:9 "$opt" /nonexistent/dir/x
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"/nonexistent/dir/x: cannot write"* ]]
    run "$MIGBED" dest --listen 127.0.0.1:0 --accept-timeout-ms 100 --ready-file ready "$opt" /nonexistent/dir/x
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"/nonexistent/dir/x: cannot write"* ]]
    [[ "$output" != *"listening on"* ]]
    [ ! -e ready ]
    [ ! -e ready.tmp ]
  done
}

# --- torture --json, dest --ready-file, source --dump-mem: the same rules ----------------------

TORTURE_SCN=$BATS_TEST_DIRNAME/data/torture-small.scn

@test "torture --json: - is stdout after the table, a symlink stays, a FIFO is written in place" {
  export TMPDIR=$BATS_TEST_TMPDIR
  "$MIGBED" torture "$TORTURE_SCN" --sites connect --json want.json >want.txt
  jq -e '.ok and (.runs | length == 1)' want.json
  run --separate-stderr "$MIGBED" torture "$TORTURE_SCN" --sites connect --json -
  [ "$status" -eq 0 ]
  [ ! -e ./- ]
  [ ! -e ./-.tmp ]
  [ "$(head -n "$(wc -l <want.txt)" <<<"$output")" = "$(cat want.txt)" ]
  [ "$(tail -n +"$(($(wc -l <want.txt) + 1))" <<<"$output")" = "$(cat want.json)" ]
  mkdir a
  echo old >a/real.json
  ln -s a/real.json l.json
  run "$MIGBED" torture "$TORTURE_SCN" --sites connect --json l.json
  [ "$status" -eq 0 ]
  [ -L l.json ]
  cmp want.json a/real.json
  [ "$(ls a | grep -c '\.tmp$')" -eq 0 ]
  mkfifo jf
  timeout "$(scaled 20)" cat jf >got.json &
  local jpid=$!
  run "$MIGBED" torture "$TORTURE_SCN" --sites connect --json jf
  wait "$jpid"
  [ "$status" -eq 0 ]
  [ -p jf ]
  cmp want.json got.json
}

@test "torture: an unwritable --json is refused before the sweep, nothing created" {
  export TMPDIR=$BATS_TEST_TMPDIR
  mkdir d
  unwritable --json /nonexistent/dir/x.json torture "$TORTURE_SCN"
  [ ! -e /nonexistent ]
  unwritable --json d torture "$TORTURE_SCN"
  [ -z "$(ls -A d)" ]
  [ ! -e d.tmp ]
  unwritable --json /proc/migbed-x.json torture "$TORTURE_SCN"
  [ -z "$(find . -name 'migbed-torture-*')" ]     # and no sweep folder is left behind
}

@test "dest --ready-file: through a symlink (the link stays), - is stdout, unwritable refused before listening" {
  local dest=(dest --backend model --listen 127.0.0.1:0 --accept-timeout-ms 100 --quiet)
  ln -s real.ready ready
  run "$MIGBED" "${dest[@]}" --ready-file ready
  [ "$status" -eq 1 ]            # listened, then no source came: TIMEOUT
  [ -L ready ]
  [[ "$(cat real.ready)" == "listening 127.0.0.1:0 pid "* ]]
  [ ! -e real.ready.tmp ]
  run --separate-stderr "$MIGBED" "${dest[@]}" --ready-file -
  [ "$status" -eq 1 ]
  [[ "${lines[0]}" == "listening 127.0.0.1:0 pid "* ]]
  [ ! -e ./- ]
  run "$MIGBED" "${dest[@]}" --ready-file /nonexistent/dir/ready
  [ "$status" -eq 2 ]
  [[ "$output" == *"--ready-file /nonexistent/dir/ready: No such file or directory"* ]]
  [[ "$output" != *"listening on"* ]]
}

@test "source --dump-mem: through a symlink (the link stays), - is stdout, unwritable refused before connecting" {
  local src=(source --backend model --mem bytes --guest 4M --worker-bytes 1M --connect 127.0.0.1:9 --quiet)
  ln -s real.mem dump.mem
  run "$MIGBED" "${src[@]}" --dump-mem dump.mem
  [ "$status" -eq 1 ]            # nobody listens: CONNECT_FAILED, the memory is dumped all the same
  [ -L dump.mem ]
  [ "$(stat -c %s real.mem)" -eq $((4 << 20)) ]
  [ ! -e real.mem.tmp ]
  local rc=0
  "$MIGBED" "${src[@]}" --dump-mem - >out.bin || rc=$?
  [ "$rc" -eq 1 ]
  [ ! -e ./- ]
  cmp <(head -c $((4 << 20)) out.bin) real.mem
  [ "$(tail -c +$(((4 << 20) + 1)) out.bin)" = "migbed: verdict=fail status=failed cause=CONNECT_FAILED side=src" ]
  run "$MIGBED" "${src[@]}" --dump-mem /nonexistent/dir/x.mem
  [ "$status" -eq 2 ]
  [[ "$output" == *"--dump-mem /nonexistent/dir/x.mem: No such file or directory"* ]]
  [[ "$output" != *"verdict="* ]]
}
