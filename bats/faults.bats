#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Fault plans (docs/faults.md) through the CLI: --fault and `fault =` lines, their errors (the
# column of the problem, exit 2, nothing written), the event-log line of every injection,
# --fault-counts, seeded probabilities, die. The matrix of sites x actions with expected
# causes is data: bats/scenarios/fault-*.scn (one generated test each).

load helpers
bats_require_minimum_version 1.5.0

SMALL=(--pattern rand-set --guest 16M --workers 2 --worker-bytes 4M --sweep-rate 64M --duration-ms 200 --seed 7)

setup() {
  cd "$BATS_TEST_TMPDIR"
}

@test "run --help documents --fault and --fault-counts" {
  run "$MIGBED" run --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"--fault RULE"*"SITE[@SIDE] [TRIGGER...] -> ACTION"* ]]
  [[ "$output" == *"--fault-counts FILE"* ]]
}

@test "a bad --fault names the column and the problem, exits 2 and writes nothing" {
  run "$MIGBED" run "${SMALL[@]}" --json r.json --events ev --fault 'reg_mr@dsr #3 -> errno(ENOMEM)'
  [ "$status" -eq 2 ]
  [[ "$output" == *"--fault 'reg_mr@dsr #3 -> errno(ENOMEM)': col 8: unknown side 'dsr' (src or dst)"* ]]
  for f in r.json ev r.json.tmp ev.tmp; do [ ! -e "$f" ]; done
  run "$MIGBED" run --fault 'wc.recv -> errno(EIO)'
  [ "$status" -eq 2 ]
  [[ "$output" == *"col 12: action 'errno' does not apply to site 'wc.recv'"* ]]
  run "$MIGBED" run --fault 'msg.ready #0 -> drop'
  [ "$status" -eq 2 ]
  [[ "$output" == *"col 12: #N (the Nth matching call) must be at least 1"* ]]
}

@test "a bad fault line in a scenario names file, line and column" {
  printf 'guest = 16M\n# a comment\nfault = post_send.write@src >20 -> qp_error\n' >bad.scn
  run "$MIGBED" run bad.scn --json r.json
  [ "$status" -eq 2 ]
  [[ "$output" == *"bad.scn:3: fault 'post_send.write@src >20 -> qp_error': col 24: >T (after virtual time T) needs a unit (ns, us, ms or s)"* ]]
  [ ! -e r.json ]
}

@test "at most 16 rules" {
  args=()
  for i in $(seq 17); do args+=(--fault "dereg_mr #$i -> errno(EBUSY)"); done
  run "$MIGBED" run "${SMALL[@]}" "${args[@]}"
  [ "$status" -eq 2 ]
  [[ "$output" == *"--fault: more than 16 rules"* ]]
}

@test "every injection is one event-log line: site, side, call number, action" {
  run "$MIGBED" run "${SMALL[@]}" --quiet --events ev --json r.json --fault 'reg_mr@dst #4 -> errno(ENOMEM)'
  [ "$status" -eq 1 ]
  [[ "$output" == *"verdict=fail status=failed cause=DEST_REG_FAILED side=dst"* ]]
  run grep -c ' fault ' ev
  [ "$output" -eq 1 ]
  grep -Eq '^[0-9]+\.[0-9]{9} dst fault site=reg_mr side=dst call=4 action=errno\(ENOMEM\)$' ev
  # the failed call is logged with its errno, and nothing was registered by it
  grep -A1 ' fault site=reg_mr' ev | grep -q 'dst reg_mr .* rc=-12$'
}

@test "a rule without a side counts both sides; the logged call number is per side" {
  "$MIGBED" run "${SMALL[@]}" --quiet --events ev --fault 'post_recv #3 -> delay(1ms)' >/dev/null
  # the 3rd post_recv of the run, whichever side; the line names that side's own count
  line=$(grep ' fault ' ev)
  side=$(sed -n 's/.* side=\([a-z]*\) .*/\1/p' <<<"$line")
  call=$(sed -n 's/.* call=\([0-9]*\) .*/\1/p' <<<"$line")
  n=$(grep -m1 -n ' fault ' ev | cut -d: -f1)
  # the number of post_recv lines of that side before the fault line, plus this one
  before=$(head -n "$n" ev | grep -c " $side post_recv ")
  [ "$call" -eq $((before + 1)) ]
  [ "$(head -n "$n" ev | grep -c ' post_recv ')" -eq 2 ]
}

@test "--fault adds to the scenario's fault lines; the first rule that fires wins the call" {
  printf 'guest = 16M\nworker-bytes = 4M\nduration-ms = 200\nfault = reg_mr@dst #4 -> errno(ENOMEM)\n' >s.scn
  run "$MIGBED" run s.scn --quiet --fault 'reg_mr@dst #4 -> errno(EPERM)' --events ev
  [ "$status" -eq 1 ]
  [[ "$output" == *"cause=DEST_REG_FAILED"* ]]
  grep -q 'fault site=reg_mr side=dst call=4 action=errno(ENOMEM)' ev
  run -1 grep -q 'errno(EPERM)' ev
}

@test "--fault-counts: calls per site and side, consistent with the event log" {
  run "$MIGBED" run "${SMALL[@]}" --quiet --events ev --fault-counts counts
  [ "$status" -eq 0 ]
  [ "$(head -1 counts)" = "# migbed fault-counts 1" ]
  for side in src dst; do
    for site in reg_mr dereg_mr post_recv; do
      want=$(grep -c " $side $site " ev)
      got=$(awk -v s="$site" -v d="$side" '$1 == s && $2 == d { print $3 }' counts)
      [ "$want" -gt 0 ]
      [ "$got" = "$want" ]
    done
  done
  # every send WR is counted once under post_send and once under .write or .send
  awk '$1 == "post_send" { a[$2] = $3 } $1 ~ /^post_send\./ { b[$2] += $3 } END { for (s in a) if (a[s] != b[s]) exit 1 }' counts
  # control messages: msg.* adds up to post_send.send
  awk '$1 ~ /^msg\./ { m[$2] += $3 } $1 == "post_send.send" { s[$2] = $3 } END { for (x in s) if (m[x] != s[x]) exit 1 }' counts
  grep -q '^connect src 1$' counts
  grep -q '^accept dst 1$' counts
  run "$MIGBED" run "${SMALL[@]}" --quiet --fault-counts /nonexistent/dir/counts
  [ "$status" -eq 2 ]
  [[ "$output" == *"/nonexistent/dir/counts: cannot write the fault counts"* ]]
}

@test "~P draws from the run seed: same seed, same injections; another seed, others" {
  for i in 1 2; do
    "$MIGBED" run "${SMALL[@]}" --quiet --events ev$i --fault 'wc.recv ~0.3 -> delay(1ms)' >/dev/null
  done
  "$MIGBED" run "${SMALL[@]}" --seed 8 --quiet --events ev3 --fault 'wc.recv ~0.3 -> delay(1ms)' >/dev/null
  cmp ev1 ev2
  n=$(grep -c ' fault ' ev1)
  [ "$n" -gt 5 ]
  run -1 cmp -s <(grep ' fault ' ev1 | cut -d' ' -f2-) <(grep ' fault ' ev3 | cut -d' ' -f2-)
}

@test "a fault that never fires changes nothing: same log as a run without it" {
  "$MIGBED" run "${SMALL[@]}" --quiet --events a >/dev/null
  "$MIGBED" run "${SMALL[@]}" --quiet --events b --fault 'reg_mr@dst #9999 -> errno(ENOMEM)' >/dev/null
  cmp a b
}

@test "die kills the process on the spot (SIGKILL): no verdict, no half-written files" {
  # a killed run leaves its temporary trace in TMPDIR: keep it in the test's folder
  TMPDIR=$BATS_TEST_TMPDIR run -137 "$MIGBED" run "${SMALL[@]}" --json r.json --events ev --fault 'reg_mr@dst #5 -> die'
  [[ "$output" != *"verdict="* ]]
  [ ! -e r.json ]
  [ ! -e ev ]    # only ev.tmp, the log being written when it died
}

@test "dropped RDMA WRITEs are caught by the destination's verification" {
  run "$MIGBED" run "${SMALL[@]}" --quiet --json r.json --fault 'post_send.write@src #16 -> drop'
  [ "$status" -eq 1 ]
  [[ "$output" == *"cause=VERIFY_MISMATCH side=dst"* ]]
  [ "$(jq .verified r.json)" = false ]
}

@test "a lost completion ends in a bounded TIMEOUT that names what was awaited" {
  run "$MIGBED" run "${SMALL[@]}" --wait-timeout-ms 500 --fault 'wc.write@src #2 -> drop'
  [ "$status" -eq 1 ]
  [[ "$output" == *"cause: TIMEOUT (src side)"* ]]
  [[ "$output" == *"detail: waiting 500 ms for outstanding RDMA WRITE completions (drain)"* ]]
}

# Finding F3 (docs/faults.md): the responder of a bad RDMA WRITE dies when the WRITE arrives,
# not when it is posted; nothing of the destination's failure may come before that moment.
@test "a bad RDMA WRITE kills the responder's QP when it arrives, not when it is posted (F3)" {
  run "$MIGBED" run "$BATS_TEST_DIRNAME/scenarios/fault-msg-ram-blocks-result-corrupt-payload.scn" --events ev
  [ "$status" -eq 0 ]
  [[ "$output" == *"cause=REMOTE_ACCESS_ERROR side=src"* ]]
  t_err=$(awk '$2 == "src" && $3 == "wc" && /status=REM_ACCESS_ERR/ { print $1; exit }' ev)
  t_post=$(awk '$2 == "src" && $3 == "post_send" && /op=write/ { print $1; exit }' ev)
  t_dst=$(awk '$2 == "dst" && ($3 == "fail" || $3 == "disconnect" || /status=WR_FLUSH_ERR/) { print $1; exit }' ev)
  echo "write posted $t_post, REM_ACCESS_ERR $t_err, first destination failure $t_dst"
  [ -n "$t_err" ]
  [ -n "$t_post" ]
  [ -n "$t_dst" ]
  # the 1 MiB WRITE takes time on the wire: arrival is after posting
  awk -v a="$t_post" -v b="$t_err" 'BEGIN { exit !(a < b) }'
  awk -v d="$t_dst" -v e="$t_err" 'BEGIN { exit !(d >= e) }'
}

# Finding F2 (docs/faults.md): a side that sees its RECV flushed takes its own failed SEND
# first, and the cause carries the completion's own time, so the source's RNR failure is not
# hidden by the destination's consequence.
@test "a flushed RECV makes a side name its own earlier failed SEND (F2)" {
  run "$MIGBED" run "${SMALL[@]}" --fault 'msg.compress@src #1 -> duplicate' --json r.json
  [ "$status" -eq 1 ]
  [[ "$output" == *"cause=RNR_RETRY_EXCEEDED side=src"* ]]
  # the destination's own cause is a consequence: the failed source disconnects at once (it
  # used to stay connected a wait-timeout, long enough for the destination's next SEND to go
  # unacknowledged, TRANSPORT_RETRY_EXCEEDED: the consequence F2 was about)
  jq -e '.dst.completed == false and .dst.cause == "PEER_DISCONNECTED"' r.json
}

@test "alloc and corrupt(wr_id): where they apply, and what they are rejected with elsewhere" {
  run "$MIGBED" run "${SMALL[@]}" --fault 'alloc -> drop'
  [ "$status" -eq 2 ]
  [[ "$output" == *"col 10: action 'drop' does not apply to site 'alloc'"* ]]
  run "$MIGBED" run "${SMALL[@]}" --fault 'wc.write -> corrupt(len)'
  [ "$status" -eq 2 ]
  [[ "$output" == *"corrupt(len) does not apply to site 'wc.write' (msg.*: len, type, repeat, payload; wc.*: wr_id)"* ]]
  run "$MIGBED" run "${SMALL[@]}" --fault 'msg.ready -> corrupt(wr_id)'
  [ "$status" -eq 2 ]
  [[ "$output" == *"corrupt(wr_id) does not apply to site 'msg.ready'"* ]]
  # a bare corrupt at a completion site is corrupt(wr_id)
  run "$MIGBED" run "${SMALL[@]}" --fault 'wc.send@src #3 -> corrupt' --events ev
  [ "$status" -eq 1 ]
  [[ "$output" == *"cause=INTERNAL side=src"* ]]
  grep -q 'fault site=wc.send side=src call=3 action=corrupt(wr_id)' ev
  [[ "$output" == *"send completion with wr_id 0x3fff07d0, which was never posted"* ]]
}

@test "alloc faults: every allocation of migbed's own fails in turn, each ends RESOURCE_EXHAUSTED on its side" {
  run "$MIGBED" run "${SMALL[@]}" --fault-counts counts
  [ "$status" -eq 0 ]
  n_src=$(awk '$1 == "alloc" && $2 == "src" { print $3 }' counts)
  n_dst=$(awk '$1 == "alloc" && $2 == "dst" { print $3 }' counts)
  [ "$n_src" -ge 3 ]    # 3 control buffers each, bitmaps, device state
  [ "$n_dst" -ge 3 ]
  for side in src dst; do
    n=$([ $side = src ] && echo "$n_src" || echo "$n_dst")
    for i in $(seq 1 "$n"); do
      run "$MIGBED" run "${SMALL[@]}" --fault "alloc@$side #$i -> errno(ENOMEM)"
      echo "alloc@$side #$i: $output"
      [ "$status" -eq 1 ]
      [[ "$output" == *"cause=RESOURCE_EXHAUSTED side=$side"* ]]
    done
  done
}

@test "each rule's firings are in the summary and the JSON, per rule; a rule that never fired is warned about" {
  run "$MIGBED" run "${SMALL[@]}" --json r.json --fault 'reg_mr@dst %2 -> delay(1ms)' --fault 'reg_mr@dst #9999 -> errno(ENOMEM)'
  [ "$status" -eq 0 ]
  [[ "$output" == *"fault rule 1: reg_mr@dst %2 -> delay(1ms): fired 5 times (11 matching calls)"* ]]
  [[ "$output" == *"fault rule 2: reg_mr@dst #9999 -> errno(ENOMEM): fired 0 times (11 matching calls)"* ]]
  [[ "$output" == *"migbed: warning: fault rule 2 'reg_mr@dst #9999 -> errno(ENOMEM)' never fired (11 matching calls)"* ]]
  [ "$(jq -c '.faults' r.json)" = '[{"rule":"reg_mr@dst %2 -> delay(1ms)","matched":11,"fired":5,"shadowed":0,"expect":null,"met":null},{"rule":"reg_mr@dst #9999 -> errno(ENOMEM)","matched":11,"fired":0,"shadowed":0,"expect":null,"met":null}]' ]
  # the firings are the injections: one "fault" line each in the event log
  run "$MIGBED" run "${SMALL[@]}" --quiet --json r.json --events ev --fault 'wc.recv ~0.3 -> delay(1ms)'
  [ "$status" -eq 0 ]
  [ "$(jq '.faults[0].fired' r.json)" -eq "$(grep -c ' fault site=' ev)" ]
  # a rule due on a call an earlier rule took is shadowed, not fired
  run "$MIGBED" run "${SMALL[@]}" --quiet --json r.json --fault 'reg_mr@dst #2 -> delay(1ms)' --fault 'reg_mr@dst #2 -> delay(2ms)'
  [ "$status" -eq 0 ]
  [ "$(jq -c '[.faults[] | [.fired, .shadowed]]' r.json)" = '[[1,0],[0,1]]' ]
  run "$MIGBED" run "${SMALL[@]}" --quiet --json r.json
  [ "$(jq -c '.faults' r.json)" = '[]' ]
}

@test "expect-fired: a rule that fires other than expected fails the run (exit 1) with a line naming it" {
  # the issue's example: fault-wc-send-eof-late.scn with its call number past the end
  sed 's/#38/#99999/' "$BATS_TEST_DIRNAME/scenarios/fault-wc-send-eof-late.scn" >late.scn
  run "$MIGBED" run late.scn --quiet --json r.json
  [ "$status" -eq 1 ]
  [[ "$output" == *"migbed: expect-fired: fault rule 1 'wc.send@src #99999 -> delay(3ms)' fired 0 times, expected >0"* ]]
  [[ "${lines[-1]}" == "migbed: verdict=fail status=completed cause=NONE side=-" ]]
  [ "$(jq -c '[.verdict, .faults[0].fired, .faults[0].expect, .faults[0].met]' r.json)" = '["fail",0,">0",false]' ]
  run "$MIGBED" run "$BATS_TEST_DIRNAME/scenarios/fault-wc-send-eof-late.scn" --quiet --json r.json
  [ "$status" -eq 0 ]
  [ "$(jq -c '[.verdict, .faults[0].fired, .faults[0].met]' r.json)" = '["pass",1,true]' ]
  # exact counts, one value for every rule or a list in rule order; also with a failure expected
  run "$MIGBED" run "${SMALL[@]}" --quiet --fault 'reg_mr@dst %2 -> delay(1ms)' --expect-fired 5
  [ "$status" -eq 0 ]
  run "$MIGBED" run "${SMALL[@]}" --quiet --fault 'reg_mr@dst %2 -> delay(1ms)' --expect-fired 4
  [ "$status" -eq 1 ]
  [[ "$output" == *"fault rule 1 'reg_mr@dst %2 -> delay(1ms)' fired 5 times, expected 4"* ]]
  run "$MIGBED" run "${SMALL[@]}" --quiet --fault 'reg_mr@dst %2 -> delay(1ms)' --fault 'dereg_mr #999 -> errno(EBUSY)' --expect-fired '>4, 0'
  [ "$status" -eq 0 ]
  run "$MIGBED" run "${SMALL[@]}" --quiet --fault 'reg_mr@dst %2 -> delay(1ms)' --fault 'dereg_mr #999 -> errno(EBUSY)' --expect-fired '>0'
  [ "$status" -eq 1 ]
  [[ "$output" == *"fault rule 2 'dereg_mr #999 -> errno(EBUSY)' fired 0 times, expected >0"* ]]
  [[ "$output" != *"fault rule 1 'reg_mr"* ]]
  run "$MIGBED" run "${SMALL[@]}" --quiet --fault 'reg_mr@dst #4 -> errno(ENOMEM)' --expect failed:DEST_REG_FAILED --expect-fired 2
  [ "$status" -eq 1 ]
  [[ "${lines[-1]}" == "migbed: verdict=fail status=failed cause=DEST_REG_FAILED side=dst" ]]
}

@test "expect-fired: bad values exit 2 with a message" {
  for v in '' 'x' '>' '>-1' '1,,' '>0x'; do
    run "$MIGBED" run "${SMALL[@]}" --fault 'reg_mr@dst %2 -> delay(1ms)' --expect-fired "$v"
    echo "'$v': $output"
    [ "$status" -eq 2 ]
  done
  run "$MIGBED" run "${SMALL[@]}" --expect-fired '>0'
  [ "$status" -eq 2 ]
  [[ "$output" == *"expect-fired needs at least one fault rule"* ]]
  run "$MIGBED" run "${SMALL[@]}" --fault 'reg_mr@dst %2 -> delay(1ms)' --expect-fired '1,2'
  [ "$status" -eq 2 ]
  [[ "$output" == *"expect-fired lists 2 values for 1 fault rules"* ]]
}

@test "every fault scenario that expects completed asserts that its faults fired" {
  n=0
  for f in "$BATS_TEST_DIRNAME"/scenarios/*.scn; do
    grep -Eq '^[[:space:]]*fault[[:space:]]*=' "$f" || continue
    grep -Eq '^[[:space:]]*expect[[:space:]]*=[[:space:]]*failed:' "$f" && continue
    n=$((n + 1))
    run grep -Ec '^[[:space:]]*expect-fired[[:space:]]*=' "$f"
    echo "$f: $output expect-fired line(s)"
    [ "$output" -eq 1 ]
  done
  [ "$n" -ge 9 ]
}

@test "gen-scenario-bats.sh refuses a fault scenario that expects completed without expect-fired" {
  gen=$BATS_TEST_DIRNAME/../scripts/gen-scenario-bats.sh
  mkdir scn
  printf 'guest = 16M\nfault = reg_mr@dst %%2 -> delay(1ms)\nexpect = completed\n' >scn/fault-a.scn
  printf 'guest = 16M\nfault = reg_mr@dst #4 -> errno(ENOMEM)\nexpect = failed:DEST_REG_FAILED\n' >scn/fault-b.scn
  run "$gen" scn out.bats
  [ "$status" -eq 1 ]
  [[ "$output" == *"scn/fault-a.scn: has fault rules and expects completed, but no expect-fired line"* ]]
  [[ "$output" != *"fault-b.scn"* ]]
  [ ! -e out.bats ]
  printf 'expect-fired = >0\n' >>scn/fault-a.scn
  run "$gen" scn out.bats
  [ "$status" -eq 0 ]
  run grep -c '^@test' out.bats
  [ "$output" -eq 2 ]
}

@test "gen-scenario-bats.sh: on verbs, a run that meets an rxe stall (TRANSPORT_RETRY_EXCEEDED not expected) runs once more, loudly; a second stall fails" {
  gen=$BATS_TEST_DIRNAME/../scripts/gen-scenario-bats.sh
  mkdir scn
  printf 'guest = 16M\nexpect = completed\n' >scn/a.scn
  printf 'guest = 16M\nexpect = failed:TRANSPORT_RETRY_EXCEEDED\n' >scn/b.scn
  run "$gen" scn model.bats
  [ "$status" -eq 0 ]
  run grep -c 'rxe stalled' model.bats
  [ "$output" -eq 0 ]
  run "$gen" scn verbs.bats --backend verbs
  [ "$status" -eq 0 ]
  run grep -c 'rxe stalled' verbs.bats
  [ "$output" -eq 1 ]   # a.scn only: b.scn expects the stall's cause
  # a fake migbed: stalls (up to) twice, then completes; the stall line reaches the TAP stream
  printf '#!/bin/bash\nj=; while [ $# -gt 0 ]; do [ "$1" = --json ] && j=$2; shift; done\nn=$(cat "%s/n" 2>/dev/null || echo 0); echo $((n + 1)) >"%s/n"\nif [ "$n" -lt "%s" ]; then echo "migbed: verdict=fail status=failed cause=TRANSPORT_RETRY_EXCEEDED side=src"; exit 1; fi\necho "{\\"verified\\":true}" >"$j"; echo "migbed: verdict=pass status=completed cause=NONE side=-"\n' \
    "$PWD" "$PWD" 1 >fake1
  sed 's/-lt "1"/-lt "2"/; s/-lt 1 /-lt 2 /' fake1 >fake2
  chmod +x fake1 fake2
  run env MIGBED="$PWD/fake1" bats --tap -f 'scenario a ' verbs.bats
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"# rxe stalled (TRANSPORT_RETRY_EXCEEDED, not this scenario's cause) in a: running once more"* ]]
  [[ "$output" == *"ok 1 scenario a "* ]]
  rm -f n
  run env MIGBED="$PWD/fake2" bats --tap -f 'scenario a ' verbs.bats
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"not ok 1 scenario a "* ]]
}

@test "a failed source tears down at once, as QEMU's does: its ERROR and disconnect reach the destination without a wait-timeout in between" {
  run "$MIGBED" run "$BATS_TEST_DIRNAME/scenarios/fault-reg-mr-src-chunk-enomem.scn" --wait-timeout-ms 5000 --quiet --events ev
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[-1]}" == "migbed: verdict=pass status=failed cause=SOURCE_REG_FAILED side=src" ]]
  grep -E ' (fail|disconnect|ep_destroy)' ev
  fail_t=$(awk '$2 == "src" && $3 == "fail" { print $1; exit }' ev)
  dst_t=$(awk '$2 == "dst" && $3 == "fail" { print $1; exit }' ev)
  gone_t=$(awk '$2 == "src" && $3 == "ep_destroy" { print $1; exit }' ev)
  echo "src fail $fail_t, src ep_destroy $gone_t, dst fail $dst_t"
  # before: the source lingered a whole wait-timeout (5 s) before its teardown
  run awk -v a="$fail_t" -v b="$gone_t" -v c="$dst_t" 'BEGIN { exit !(b - a < 0.001 && c - a < 0.001) }'
  [ "$status" -eq 0 ]
  run grep -c 'dst fail cause=PEER_ERROR' ev
  [ "$output" -eq 1 ]
}

@test "a source that fails before connecting leaves a listening destination nothing to wait for: it ends with the source, PEER_DISCONNECTED" {
  run "$MIGBED" run "$BATS_TEST_DIRNAME/scenarios/fault-connect-refused.scn" --wait-timeout-ms 5000 --quiet --events ev
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[-1]}" == "migbed: verdict=pass status=failed cause=CONNECT_REJECTED side=src" ]]
  tail -n 4 ev
  gone_t=$(awk '$2 == "src" && $3 == "ep_destroy" { print $1; exit }' ev)
  dst_t=$(awk '$2 == "dst" && $3 == "fail" && $4 == "cause=PEER_DISCONNECTED" { print $1; exit }' ev)
  echo "src ep_destroy $gone_t, dst fail $dst_t"
  # before: the listening destination waited two wait-timeouts (10 s) for a source that had failed
  run awk -v b="$gone_t" -v c="$dst_t" 'BEGIN { exit !(c != "" && c - b < 0.001) }'
  [ "$status" -eq 0 ]
}

@test "a destination that trickles each READY just within the single wait meets the migration's deadline on both sides (issue 16)" {
  # deadline = max-time + downtime-limit + 2 x wait-timeout = 2000 + 300 + 2 x 500 = 3300 ms
  run "$MIGBED" run "${SMALL[@]}" --max-time-ms 2000 --wait-timeout-ms 500 --json r.json \
    --fault 'msg.ready@dst -> delay(400ms)'
  [ "$status" -eq 1 ]
  [[ "$output" == *"source: failed: TIMEOUT: the migration's deadline, 3300 ms after connecting, waiting for READY"* ]]
  [[ "$output" == *"destination: failed: TIMEOUT: the migration's deadline, 3300 ms after the source connected"* ]]
  # every single wait was met (each READY came 400 ms late, within 500): only the deadline ended it
  [ "$(jq -r '.cause' r.json)" = TIMEOUT ]
  run "$MIGBED" run "${SMALL[@]}" --max-time-ms 2000 --wait-timeout-ms 500 --fault 'msg.ready@dst -> delay(400ms) #1'
  [[ "$output" != *"deadline"* ]]
}
