#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Peer profiles (docs/profiles.md): --impl / --src-impl / --dst-impl make a side behave as a
# given QEMU version. What a user checks: the options refuse what that QEMU cannot do, a
# version-specific failure is named (and only on the versions that have it), the run says
# which side played which version and what that QEMU prints, and it is deterministic.
load helpers

S=$BATS_TEST_DIRNAME/scenarios
SMALL=(--guest 16M --workers 2 --worker-bytes 4M --sweep-rate 64M --duration-ms 200 --seed 7)
LATE=(--fault 'wc.send@dst #2 -> delay(1ms)' --expect-fired 1)

@test "--help lists the profiles; an unknown profile is refused with the choices (exit 2)" {
  run "$MIGBED" run --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"--src-impl migbed|qemu-6.1|qemu-7.2|qemu-8.1|qemu-8.2|qemu-11.1"* ]]
  run "$MIGBED" run --impl qemu-6.2
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"qemu-6.2"* ]]
  [[ "$output" == *"is not migbed, qemu-6.1, qemu-7.2, qemu-8.1, qemu-8.2 or qemu-11.1"* ]]
}

@test "a profile refuses what its QEMU cannot do: a chunk size before 11.1, --protocol negotiated (exit 2)" {
  run "$MIGBED" run --src-impl qemu-7.2 --chunk-size 64M
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"src-impl qemu-7.2 has no chunk-size setting"* ]]
  [[ "$output" == *"chunk-size 64M needs src-impl migbed or qemu-11.1"* ]]
  run "$MIGBED" run --dst-impl qemu-8.2 --dst-chunk-size 2M
  [ "$status" -eq 2 ]
  [[ "$output" == *"dst-impl qemu-8.2 has no chunk-size setting"* ]]
  run "$MIGBED" run --impl qemu-11.1 --protocol negotiated
  [ "$status" -eq 2 ]
  [[ "$output" == *"src-impl qemu-11.1 does not speak --protocol negotiated"* ]]
  # a scenario names the file and line of a bad value
  printf 'impl = qemu-9\n' >"$BATS_TEST_TMPDIR/bad.scn"
  run "$MIGBED" run "$BATS_TEST_TMPDIR/bad.scn"
  [ "$status" -eq 2 ]
  [[ "$output" == *"bad.scn:1"* ]]
}

@test "the shared-CQ hang is QEMU <= 6.1's alone: the same late completion completes on 6.2+ and migbed" {
  # (qemu-8.1, i.e. 8.1.0-8.1.2, fails every migration at its first flush record: tested below)
  for impl in migbed qemu-7.2 qemu-8.2 qemu-11.1; do
    run "$MIGBED" run "${SMALL[@]}" "${LATE[@]}" --impl "$impl" --json "$BATS_TEST_TMPDIR/$impl.json"
    echo "$impl: ${lines[-1]}"
    [ "$status" -eq 0 ]
    [ "$(jq -r '.status + " " + (.verified|tostring) + " " + .dst.impl' "$BATS_TEST_TMPDIR/$impl.json")" = "completed true $impl" ]
    [ "$(jq -r '.faults[0].fired' "$BATS_TEST_TMPDIR/$impl.json")" = 1 ]
  done
  run "$MIGBED" run "${SMALL[@]}" "${LATE[@]}" --impl qemu-6.1 --expect failed:COMPLETION_DROPPED \
    --json "$BATS_TEST_TMPDIR/61.json"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"destination (as qemu-6.1): failed: COMPLETION_DROPPED: qemu-6.1 would wait here forever"* ]]
  [[ "$output" == *'"A Wanted wrid CONTROL SEND (2000) but got CONTROL RECV (4000)"'* ]]
  [ "$(jq -r '.side + " " + .cause + " " + .dst.impl + " " + .src.impl' "$BATS_TEST_TMPDIR/61.json")" = \
    "dst COMPLETION_DROPPED qemu-6.1 qemu-6.1" ]
}

@test "a side that would hang sends no ERROR; migbed's own side sends one" {
  run "$MIGBED" run "$S/profile-qemu61-dst-drops-message.scn" --events "$BATS_TEST_TMPDIR/ev"
  [ "$status" -eq 0 ]
  run grep -c '^[0-9.]* dst send_error' "$BATS_TEST_TMPDIR/ev"
  [ "$output" = 0 ]
  run grep -c '^[0-9.]* dst wrid_dropped want=2000 got=4000 impl=qemu-6.1' "$BATS_TEST_TMPDIR/ev"
  [ "$output" = 1 ]
  # migbed's destination, failing on its own (a bad COMPRESS), does send ERROR
  run "$MIGBED" run "$S/fault-msg-compress-corrupt-payload.scn" --events "$BATS_TEST_TMPDIR/ev2"
  echo "$output"
  [ "$status" -eq 0 ]
  run grep -c '^[0-9.]* dst send_error' "$BATS_TEST_TMPDIR/ev2"
  [ "$output" = 1 ]
}

@test "QEMU's waits have no bound: a lost READY is QEMU_HANG naming the version, TIMEOUT for migbed" {
  run "$MIGBED" run "$S/profile-qemu72-lost-ready-hangs.scn"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"source (as qemu-7.2): failed: QEMU_HANG: qemu-7.2 would wait here forever for READY from the destination (migbed gave up after 2000 ms)"* ]]
  run "$MIGBED" run "$S/profile-qemu72-lost-ready-hangs.scn" --impl migbed --expect failed:TIMEOUT
  [ "$status" -eq 0 ]
  [[ "${lines[-1]}" == *"cause=TIMEOUT side=src" ]]
}

@test "a side playing QEMU 7.2 shows the lines 7.2 was observed to print for the run's cause (human and JSON)" {
  # QEMU 11.1 at 64M against a 7.2 destination (1M, the only size 7.2 has)
  run "$MIGBED" run --guest 64M --duration-ms 300 --src-impl qemu-11.1 --chunk-size 64M --dst-impl qemu-7.2 \
    --expect failed:REMOTE_ACCESS_ERROR --json "$BATS_TEST_TMPDIR/r.json"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"chunk size: src 65536 KiB, dst 1024 KiB"* ]]
  [[ "$output" == *"qemu-7.2 dst log (observed): load of migration failed: Operation not permitted"* ]]
  [ "$(jq -r '.dst."qemu-log" | length' "$BATS_TEST_TMPDIR/r.json")" = 3 ]
  [ "$(jq -r '.dst."qemu-log"[0]' "$BATS_TEST_TMPDIR/r.json")" = "ibv_poll_cq wc.status=5 Work Request Flushed Error!" ]
  [ "$(jq -r '.dst."qemu-log-kind"' "$BATS_TEST_TMPDIR/r.json")" = observed ]
  # 11.1 was not observed and its rdma.c not read: it prints 8.2's lines, and says they are 8.2's
  [[ "$output" == *"qemu-11.1 src log (from QEMU 8.2's source; seen waiting for a control SEND): rdma migration: send polling control error"* ]]
  [ "$(jq -r '.src."qemu-log-kind" + " " + .src."qemu-log-version"' "$BATS_TEST_TMPDIR/r.json")" = "source 8.2" ]
  [[ "$output" != *"qemu-11.1 src log (observed)"* ]]
}

@test "a side playing QEMU 8.2 shows 8.2's lines read from its source, labelled so, filled from the run (human and JSON)" {
  # the chunk-size mismatch's destination: 8.2 prints no wc.status line, only the caller's message
  run "$MIGBED" run --guest 64M --duration-ms 300 --src-impl qemu-11.1 --chunk-size 64M --dst-impl qemu-8.2 \
    --expect failed:REMOTE_ACCESS_ERROR --json "$BATS_TEST_TMPDIR/r.json"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"  qemu-8.2 dst log (from QEMU 8.2's source): rdma migration: recv polling control error!"$'\n'* ]]
  # a field migbed does not know stays a conversion
  [[ "$output" == *"  qemu-8.2 dst log (from QEMU 8.2's source): load of migration failed: %s"$'\n'* ]]
  [[ "$output" != *"qemu-8.2 dst log (observed)"* ]]
  [ "$(jq -r '.dst."qemu-log-kind" + " " + .dst."qemu-log-version"' "$BATS_TEST_TMPDIR/r.json")" = "source 8.2" ]
  [ "$(jq -r '.dst."qemu-log" | join("|")' "$BATS_TEST_TMPDIR/r.json")" = \
    "rdma migration: recv polling control error!|load of migration failed: %s" ]
  [ "$(jq -r '.dst."qemu-log-notes" | length' "$BATS_TEST_TMPDIR/r.json")" = 2 ]
  [ "$(jq '[.dst."qemu-log"[] | select(contains("ibv_poll_cq"))] | length' "$BATS_TEST_TMPDIR/r.json")" = 0 ]
  # the message types are filled from the side's own detail (QEMU's wording of the same check)
  run "$MIGBED" run "${SMALL[@]}" --src-impl qemu-8.2 --fault 'reg_mr@dst #4 -> errno(ENOMEM)' \
    --expect failed:DEST_REG_FAILED --json "$BATS_TEST_TMPDIR/s.json"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"  qemu-8.2 src log (from QEMU 8.2's source): Was expecting a REGISTER RESULT (8) control message, but got: ERROR (1), length: 0"* ]]
  [ "$(jq -r '.src."qemu-log"[0]' "$BATS_TEST_TMPDIR/s.json")" = \
    "Was expecting a REGISTER RESULT (8) control message, but got: ERROR (1), length: 0" ]
  # the same run with a migbed source: no QEMU lines, and JSON says there is no kind
  run "$MIGBED" run "${SMALL[@]}" --fault 'reg_mr@dst #4 -> errno(ENOMEM)' --expect failed:DEST_REG_FAILED \
    --json "$BATS_TEST_TMPDIR/m.json"
  [ "$status" -eq 0 ]
  [[ "$output" != *" src log ("* ]]
  [ "$(jq -r '.src."qemu-log-kind"' "$BATS_TEST_TMPDIR/m.json")" = null ]
  [ "$(jq -r '.src."qemu-log" | length' "$BATS_TEST_TMPDIR/m.json")" = 0 ]
}

@test "migbed profiles says which versions' QEMU lines are observed and which read from the source" {
  run "$MIGBED" profiles
  [ "$status" -eq 0 ]
  [[ "$output" == *"[QEMU 7.2's log lines, observed]"* ]]
  [[ "$output" == *"[QEMU 8.2's log lines, from its source]"* ]]
  run "$MIGBED" profiles --json
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq -r '[.profiles[] | .name + "=" + (."observed-log" // "-") + "/" + (."source-log" // "-")] | join(" ")')" = \
    "migbed=-/- qemu-6.1=-/- qemu-7.2=7.2/- qemu-8.1=-/- qemu-8.2=-/8.2 qemu-11.1=-/8.2" ]
}

@test "profile runs are deterministic: the same scenario gives the same event log and JSON" {
  for i in 1 2; do
    "$MIGBED" run "$S/profile-qemu61-src-drops-ready.scn" --quiet --events "$BATS_TEST_TMPDIR/ev$i" \
      --json "$BATS_TEST_TMPDIR/r$i.json" >/dev/null
  done
  [ "$(wc -l <"$BATS_TEST_TMPDIR/ev1")" -gt 20 ]
  cmp "$BATS_TEST_TMPDIR/ev1" "$BATS_TEST_TMPDIR/ev2"
  cmp "$BATS_TEST_TMPDIR/r1.json" "$BATS_TEST_TMPDIR/r2.json"
}

@test "QEMU <= 8.1 swallows a polling error between pages and goes on; 8.2 and migbed stop there" {
  run "$MIGBED" run "$S/profile-qemu72-swallowed-poll-error.scn" --events "$BATS_TEST_TMPDIR/ev"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"(qemu-7.2's save_page printed this polling error and went on); qemu-7.2 went on and stopped later at QEMU_HANG: qemu-7.2 would wait here forever"* ]]
  run grep -c '^[0-9.]* src poll_error_swallowed cause=CONTROL_RECV_ERROR impl=qemu-7.2' "$BATS_TEST_TMPDIR/ev"
  [ "$output" = 1 ]
  # it stopped in a wait 7.2 never leaves (migbed's QEMU_HANG): no ERROR to the peer, as 7.2,
  # still waiting, would send none (the swallowed error is the cause all the same)
  run grep -c ' src send_error ' "$BATS_TEST_TMPDIR/ev"
  [ "$output" = 0 ]
  for impl in qemu-8.2 migbed; do
    run "$MIGBED" run "$S/profile-qemu72-swallowed-poll-error.scn" --src-impl "$impl" --events "$BATS_TEST_TMPDIR/ev.$impl"
    echo "$impl: $output"
    [ "$status" -eq 0 ]
    [[ "$output" != *"went on"* ]]
    run grep -c 'poll_error_swallowed' "$BATS_TEST_TMPDIR/ev.$impl"
    [ "$output" = 0 ]
  done
}

@test "a non-zero COMPRESS: refused by migbed and 8.2, filled silently by 7.2 (its low byte)" {
  # the corrupt value is 0xff000000: its low byte is 0, so 7.2 fills zeros and completes
  run "$MIGBED" run "$S/fault-msg-compress-corrupt-payload.scn" --dst-impl qemu-7.2 --expect completed \
    --expect-fired '>0' --events "$BATS_TEST_TMPDIR/ev"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[-1]}" == *"status=completed cause=NONE"* ]]
  run grep -c '^[0-9.]* dst compress_fill value=4278190080 byte=0x00 impl=qemu-7.2' "$BATS_TEST_TMPDIR/ev"
  [ "$output" -gt 0 ]
  run "$MIGBED" run "$S/fault-msg-compress-corrupt-payload.scn" --dst-impl qemu-8.2
  [ "$status" -eq 0 ]
  [[ "${lines[-1]}" == *"cause=BAD_COMPRESS side=dst" ]]
}

@test "an unknown protocol version: 7.2 would crash after accepting, 8.2 says initialization failed" {
  run "$MIGBED" run "$S/config-caps-version-2.scn" --dst-impl qemu-7.2
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Unknown source RDMA version: 2, bailing... (QEMU <= 8.1 then returns success from accept with nothing set up and crashes, SIGSEGV, at its first READY)"* ]]
  run "$MIGBED" run "$S/config-caps-version-2.scn" --dst-impl qemu-8.2
  [ "$status" -eq 0 ]
  [[ "$output" == *"bailing... | RDMA ERROR: Migration initialization failed"* ]]
}

@test "QEMU <= 8.1 sends stack bytes in the QEMU FILE header's repeat (from the seed); 8.2+ and migbed send 0" {
  for impl in qemu-7.2 qemu-8.2 migbed; do
    "$MIGBED" run "${SMALL[@]}" --src-impl "$impl" --quiet --events "$BATS_TEST_TMPDIR/$impl.ev" >/dev/null
  done
  run sh -c "grep -o 'src ctl_send type=qemu_file len=[0-9]* repeat=[0-9]*' '$BATS_TEST_TMPDIR/qemu-7.2.ev' | sed 's/.*repeat=//' | sort -u"
  echo "7.2: $output"
  [ "${#lines[@]}" -eq 1 ]
  [ "$output" != 0 ]
  for impl in qemu-8.2 migbed; do
    run sh -c "grep -o 'src ctl_send type=qemu_file len=[0-9]* repeat=[0-9]*' '$BATS_TEST_TMPDIR/$impl.ev' | sed 's/.*repeat=//' | sort -u"
    [ "$output" = 0 ]
  done
  # and the migration is the same otherwise: the destination looks at repeat only in a registration round
  "$MIGBED" run "${SMALL[@]}" --src-impl qemu-7.2 --quiet --json "$BATS_TEST_TMPDIR/r.json" >/dev/null
  [ "$(jq -r .status "$BATS_TEST_TMPDIR/r.json")" = completed ]
}

@test "QEMU 8.1.0-8.1.2's flush record inside a registration round: the destination bails with 'Too many requests'" {
  run "$MIGBED" run "$S/profile-qemu81-flush-in-round.scn" --events "$BATS_TEST_TMPDIR/ev" --json "$BATS_TEST_TMPDIR/r.json"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"destination (as qemu-8.1): failed: TOO_MANY_REQUESTS: rdma: Too many requests in this message ("* ]]
  [ "$(jq -r '.side + " " + .cause + " " + .src.impl' "$BATS_TEST_TMPDIR/r.json")" = "dst TOO_MANY_REQUESTS qemu-8.1" ]
  # the record went out once, at the end of the bulk pass, with the run's stack bytes as its repeat,
  # and the destination read it inside the round (between the round's REGISTER REQUESTs)
  run grep -c '^[0-9.]* src multifd_flush repeat=[0-9]* impl=qemu-8.1$' "$BATS_TEST_TMPDIR/ev"
  [ "$output" = 1 ]
  flush=$(grep -o 'src multifd_flush repeat=[0-9]*' "$BATS_TEST_TMPDIR/ev" | sed 's/.*repeat=//')
  [ -n "$flush" ]
  [ "$flush" != 0 ]
  [ "$(jq -r .dst.detail "$BATS_TEST_TMPDIR/r.json")" = "rdma: Too many requests in this message ($flush).Bailing." ]
  # any destination bails: the check is the registration loop's in every version
  for dst in qemu-7.2 qemu-8.2 migbed; do
    run "$MIGBED" run "$S/profile-qemu81-flush-in-round.scn" --dst-impl "$dst"
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" == *"cause=TOO_MANY_REQUESTS side=dst" ]]
  done
  # 8.1.3 (qemu-7.2's row) and 8.2 send no flush record and complete
  for src in qemu-7.2 qemu-8.2; do
    run "$MIGBED" run "$S/profile-qemu81-flush-in-round.scn" --src-impl "$src" --dst-impl "$src" --expect completed \
      --events "$BATS_TEST_TMPDIR/ev.$src"
    [ "$status" -eq 0 ]
    run grep -c multifd_flush "$BATS_TEST_TMPDIR/ev.$src"
    [ "$output" = 0 ]
  done
}

@test "the chunk-size mismatch across QEMU versions: 11.1 at 64M against 7.2, 8.2, 11.1 at 1M, both ways, pin-all off/on" {
  for pin in off on; do
    P=()
    if [ "$pin" = on ]; then P=(--pin-all); fi
    for other in qemu-7.2 qemu-8.2 qemu-11.1; do
      # a 64M source against a 1M destination: REMOTE_ACCESS_ERROR without pin-all
      want=failed:REMOTE_ACCESS_ERROR
      if [ "$pin" = on ]; then want=completed; fi
      run "$MIGBED" run --guest 256M --duration-ms 500 "${P[@]}" --src-impl qemu-11.1 --chunk-size 64M \
        --dst-impl "$other" --dst-chunk-size 1M --expect "$want" --json "$BATS_TEST_TMPDIR/a.json"
      echo "pin-all $pin, 11.1@64M -> $other@1M: ${lines[-1]}"
      [ "$status" -eq 0 ]
      if [ "$pin" = off ]; then
        [ "$(jq -r '.cause + " " + .side + " " + .dst.cause' "$BATS_TEST_TMPDIR/a.json")" = "REMOTE_ACCESS_ERROR src QP_ERROR" ]
      fi
      # a 1M source against a 64M destination completes (the destination pins more)
      run "$MIGBED" run --guest 256M --duration-ms 500 "${P[@]}" --src-impl "$other" \
        --dst-impl qemu-11.1 --dst-chunk-size 64M --json "$BATS_TEST_TMPDIR/b.json"
      echo "pin-all $pin, $other@1M -> 11.1@64M: ${lines[-1]}"
      [ "$status" -eq 0 ]
      [ "$(jq -r '.status + " " + (.verified|tostring)' "$BATS_TEST_TMPDIR/b.json")" = "completed true" ]
    done
  done
}

@test "migbed profiles lists every profile (text and JSON), and docs/profiles.md documents each" {
  run "$MIGBED" profiles --json
  [ "$status" -eq 0 ]
  names=$(echo "$output" | jq -r '.profiles[].name' | tr '\n' '|')
  [ "$names" = "migbed|qemu-6.1|qemu-7.2|qemu-8.1|qemu-8.2|qemu-11.1|" ]
  [ "$(echo "$output" | jq -r '.profiles[] | select(.name=="qemu-6.1") | .behaviours | index("shared-cq") != null')" = true ]
  [ "$(echo "$output" | jq -r '[.profiles[] | select(.behaviours | index("shared-cq"))] | length')" = 1 ]
  run "$MIGBED" profiles
  [ "$status" -eq 0 ]
  [[ "$output" == *"qemu-7.2   QEMU 6.2 .. 8.0, 8.1.3 .. 8.1.x:"* ]]
  [[ "$output" == *"qemu-8.1   QEMU 8.1.0 .. 8.1.2:"* ]]
  doc=$BATS_TEST_DIRNAME/../docs/profiles.md
  # every profile has its row, with the behaviours migbed profiles names for it
  "$MIGBED" profiles --json | jq -r '.profiles[] | "| `" + .name + "` | " + .versions + " | " + (.behaviours | join(" "))' |
  while read -r row; do
    grep -qF -- "$row" "$doc" || { echo "docs/profiles.md lacks: $row"; return 1; }
  done
  run "$MIGBED" profiles --bogus
  [ "$status" -eq 2 ]
}

# The differential against the real QEMU 7.2 (bats/verbs/qemu.bats, run in the soft-RoCE VM):
# each case there, replayed model-to-model with the QEMU side played by the qemu-7.2 profile,
# must end the same way on that side, with the message the real 7.2 printed. Cases that
# disagree are listed, with the reason, in docs/profiles.md ('Differential against QEMU 7.2').
# diff7 NAME 'run.cause run.side' 'QEMU-SIDE.cause' 'text in its detail' [ARGS...]
diff7() {
  local name=$1 want=$2 qcause=$3 qtext=$4; shift 4
  local side=src
  if [[ " $* " == *" --dst-impl qemu-7.2 "* ]]; then side=dst; fi
  run "$MIGBED" run --guest 64M --duration-ms 300 --seed 7 --wait-timeout-ms 5000 "$@" \
    --expect "failed:${want%% *}" --json "$BATS_TEST_TMPDIR/$name.json"
  echo "$name: ${lines[-1]}"
  [ "$status" -eq 0 ]
  [ "$(jq -r '.cause + " " + .side' "$BATS_TEST_TMPDIR/$name.json")" = "$want" ]
  [ "$(jq -r ".$side.impl + \" \" + .$side.cause" "$BATS_TEST_TMPDIR/$name.json")" = "qemu-7.2 $qcause" ]
  [[ "$(jq -r ".$side.detail" "$BATS_TEST_TMPDIR/$name.json")" == *"$qtext"* ]]
}

@test "differential vs the real QEMU 7.2, QEMU as source: the profile ends as 7.2 did" {
  diff7 reg-refused 'DEST_REG_FAILED dst' PEER_ERROR \
    'Was expecting a REGISTER RESULT (8) control message, but got: ERROR (1), length: 0' \
    --src-impl qemu-7.2 --fault 'reg_mr@dst #4 -> errno(ENOMEM)'
  diff7 qp-error 'QP_ERROR dst' PEER_DISCONNECTED 'RDMA_CM_EVENT_DISCONNECTED' \
    --src-impl qemu-7.2 --fault 'msg.register_result@dst #2 -> qp_error'
  diff7 wrong-rkey 'REMOTE_ACCESS_ERROR src' REMOTE_ACCESS_ERROR 'status=REM_ACCESS_ERR (remote access error)' \
    --src-impl qemu-7.2 --fault 'msg.register_result@dst #2 -> corrupt(payload)'
  diff7 internal 'INTERNAL dst' PEER_ERROR 'but got: ERROR (1)' \
    --src-impl qemu-7.2 --fault 'wc.recv@dst #3 -> corrupt(wr_id)'
}

@test "differential vs the real QEMU 7.2, QEMU as destination: the profile ends as 7.2 did" {
  diff7 repeat 'TOO_MANY_REQUESTS dst' TOO_MANY_REQUESTS 'rdma: Too many requests in this message (65537).Bailing.' \
    --dst-impl qemu-7.2 --fault 'msg.register_request@src #2 -> corrupt(repeat)'
  diff7 long-len 'MESSAGE_MALFORMED dst' MESSAGE_MALFORMED 'too long length: 10737418' \
    --dst-impl qemu-7.2 --fault 'msg.qemu_file@src #3 -> corrupt(len)'
  diff7 disconnect 'QP_ERROR src' PEER_DISCONNECTED 'receive cm event, cm event is 10' \
    --dst-impl qemu-7.2 --fault 'msg.register_request@src #2 -> disconnect'
  diff7 version 'VERSION_UNSUPPORTED dst' VERSION_UNSUPPORTED 'Unknown source RDMA version: 2, bailing...' \
    --dst-impl qemu-7.2 --caps-version 2
  diff7 chunk-64m 'REMOTE_ACCESS_ERROR src' QP_ERROR 'WR_FLUSH_ERR' \
    --dst-impl qemu-7.2 --src-impl qemu-11.1 --chunk-size 64M
  # a non-zero COMPRESS: 7.2 fills its low byte (0 here) and completes, as the real one did
  run "$MIGBED" run --guest 64M --duration-ms 300 --seed 7 --dst-impl qemu-7.2 \
    --fault 'msg.compress@src #1 -> corrupt(payload)' --expect-fired 1 --json "$BATS_TEST_TMPDIR/c.json"
  [ "$status" -eq 0 ]
  [ "$(jq -r '.status + " " + (.verified|tostring)' "$BATS_TEST_TMPDIR/c.json")" = "completed true" ]
  # QEMU 7.2 to QEMU 7.2, dynamic and pin-all: complete, memory equal
  for p in "" --pin-all; do
    run "$MIGBED" run --guest 64M --duration-ms 300 --seed 7 --impl qemu-7.2 $p --json "$BATS_TEST_TMPDIR/q.json"
    [ "$status" -eq 0 ]
    [ "$(jq -r '.status + " " + (.verified|tostring)' "$BATS_TEST_TMPDIR/q.json")" = "completed true" ]
  done
}
