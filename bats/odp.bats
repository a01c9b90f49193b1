#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# ODP destination memory (docs/profiles.md, 'ODP destination memory'): QEMU's field failure
# F2. What a user checks: with QEMU's rnr_retry 0 the source fails with RNR_RETRY_EXCEEDED on
# an RDMA WRITE (and the destination only sees the consequence); with a retry count the
# migration completes, slower; ibv_advise_mr prefetch avoids it at about no cost; bad
# values are refused; the verbs backend refuses ODP as documented.
load helpers

S=$BATS_TEST_DIRNAME/scenarios

# total_ms SCENARIO [ARGS...]: run it (it must meet its expectation) and print its virtual
# total time in ms (query-migrate's total-time) from the JSON.
total_ms() {
  local scn=$1 j="$BATS_TEST_TMPDIR/t.json"
  shift
  "$MIGBED" run "$scn" "$@" --quiet --json "$j" >"$BATS_TEST_TMPDIR/t.out" 2>&1 || return 1
  jq -r '.metrics["total-time"]' "$j"
}

@test "ODP with QEMU's rnr_retry 0: the source fails with RNR_RETRY_EXCEEDED on an RDMA WRITE" {
  for scn in odp-rnr-zero odp-pin-all-rnr-zero; do
    run "$MIGBED" run "$S/$scn.scn" --quiet --json "$BATS_TEST_TMPDIR/r.json" --events "$BATS_TEST_TMPDIR/e.log"
    echo "$scn: $output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"status=failed cause=RNR_RETRY_EXCEEDED side=src"* ]]
    [ "$(jq -r '.cause + " " + .side + " " + .src.cause + " " + .verdict' "$BATS_TEST_TMPDIR/r.json")" = \
      "RNR_RETRY_EXCEEDED src RNR_RETRY_EXCEEDED pass" ]
    run jq -r .detail "$BATS_TEST_TMPDIR/r.json"
    [[ "$output" == "RDMA WRITE block=pc.ram "*"status=RNR_RETRY_EXC_ERR (RNR retry counter exceeded)"* ]]
    [[ "$output" == *"not ready for the WRITE (an ODP page not faulted in yet?)"* ]]
    # the destination sees only the consequence: an RNR NAK does not hurt the responder
    [ "$(jq -r .dst.cause "$BATS_TEST_TMPDIR/r.json")" = PEER_DISCONNECTED ]
    # both sides passed QEMU's 0; the source's QP went to error when the NAK came back
    run grep -c -e 'src connect .* rnr_retry=0$' -e 'dst accept .* rnr_retry=0 rc=0$' \
      -e 'src qp_to_error rc=0 rnr_nak=1$' "$BATS_TEST_TMPDIR/e.log"
    [ "$output" = 3 ]
    run grep -c -e 'src wc wr_id=0x[0-9a-f]* op=write status=RNR_RETRY_EXC_ERR' "$BATS_TEST_TMPDIR/e.log"
    [ "$output" = 1 ]
  done
}

@test "ODP with --rnr-retry 7 completes and verifies, slower than pinned; prefetch is about as fast as pinned" {
  for scn in odp-rnr-retry-7 odp-pin-all-prefetch; do
    run "$MIGBED" run "$S/$scn.scn" --quiet --json "$BATS_TEST_TMPDIR/r.json"
    [ "$status" -eq 0 ]
    [ "$(jq -r '.status + " " + (.verified|tostring)' "$BATS_TEST_TMPDIR/r.json")" = "completed true" ]
  done
  for scn in odp-prefetch odp-pin-all-prefetch; do
    pinned=$(total_ms "$S/$scn.scn" --dst-odp off)
    odp7=$(total_ms "$S/$scn.scn" --dst-odp on --rnr-retry 7)
    prefetch=$(total_ms "$S/$scn.scn" --dst-odp prefetch)
    echo "$scn: pinned $pinned ms, ODP + rnr_retry 7 $odp7 ms, ODP + prefetch $prefetch ms"
    [ "$pinned" -gt 0 ]
    [ "$odp7" -gt $((pinned * 3 / 2)) ]
    [ "$prefetch" -le $((pinned * 11 / 10)) ]
    [ "$prefetch" -ge $((pinned * 9 / 10)) ]
  done
}

@test "the stalls are the fault-ins: rnr_wait lines with rnr_retry 7, advise_mr lines and none with prefetch" {
  run "$MIGBED" run "$S/odp-rnr-retry-7.scn" --quiet --events "$BATS_TEST_TMPDIR/e7.log"
  [ "$status" -eq 0 ]
  run grep -c '^[0-9.]* src rnr_wait wr_id=0x[0-9a-f]* fault_pages=[1-9][0-9]* ns=[1-9][0-9]*$' "$BATS_TEST_TMPDIR/e7.log"
  echo "rnr_wait lines: $output"
  [ "$output" -gt 0 ]
  run grep -c 'access=0x43 ' "$BATS_TEST_TMPDIR/e7.log"
  [ "$output" -gt 0 ]
  run "$MIGBED" run "$S/odp-prefetch.scn" --quiet --events "$BATS_TEST_TMPDIR/ep.log"
  [ "$status" -eq 0 ]
  run grep -c 'rnr_wait' "$BATS_TEST_TMPDIR/ep.log"
  [ "$output" = 0 ]
  run grep -c '^[0-9.]* dst advise_mr .* advice=prefetch_write rc=0$' "$BATS_TEST_TMPDIR/ep.log"
  [ "$output" -gt 0 ]
  # one prefetch per ODP registration of guest RAM
  [ "$output" = "$(grep -c '^[0-9.]* dst reg_mr blk=.* access=0x43 ' "$BATS_TEST_TMPDIR/ep.log")" ]
}

@test "--odp-fault-us is the cost of a fault-in: a dearer fault makes a longer migration" {
  free=$(total_ms "$S/odp-rnr-retry-7.scn" --odp-fault-us 0)
  dflt=$(total_ms "$S/odp-rnr-retry-7.scn")
  dear=$(total_ms "$S/odp-rnr-retry-7.scn" --odp-fault-us 200)
  echo "fault 0 us: $free ms, 50 us: $dflt ms, 200 us: $dear ms"
  [ "$free" -lt "$dflt" ]
  [ "$dflt" -lt "$dear" ]
  run "$MIGBED" run --help
  [[ "$output" == *"--odp-fault-us N"*"(default 50: an assumption, see docs/profiles.md)"* ]]
}

@test "ODP runs are deterministic: the same scenario twice gives the same events and JSON" {
  for i in 1 2; do
    run "$MIGBED" run "$S/odp-rnr-retry-7.scn" --quiet --json "$BATS_TEST_TMPDIR/r$i.json" --events "$BATS_TEST_TMPDIR/e$i.log"
    [ "$status" -eq 0 ]
  done
  cmp "$BATS_TEST_TMPDIR/r1.json" "$BATS_TEST_TMPDIR/r2.json"
  cmp "$BATS_TEST_TMPDIR/e1.log" "$BATS_TEST_TMPDIR/e2.log"
}

@test "bad --dst-odp, --rnr-retry and --odp-fault-us values are refused (exit 2), in a scenario with FILE:LINE" {
  run "$MIGBED" run --dst-odp yes
  [ "$status" -eq 2 ]
  [[ "$output" == *"--dst-odp: 'yes' is not off, on or prefetch"* ]]
  run "$MIGBED" run --rnr-retry 8
  [ "$status" -eq 2 ]
  [[ "$output" == *"--rnr-retry: '8' is not an RNR retry count up to 7"* ]]
  run "$MIGBED" run --odp-fault-us -1
  [ "$status" -eq 2 ]
  [[ "$output" == *"--odp-fault-us: '-1' is not a time in microseconds"* ]]
  printf 'seed = 7\ndst-odp = maybe\n' >"$BATS_TEST_TMPDIR/bad.scn"
  run "$MIGBED" run "$BATS_TEST_TMPDIR/bad.scn" --json "$BATS_TEST_TMPDIR/bad.json"
  [ "$status" -eq 2 ]
  [[ "$output" == *"bad.scn:2"*"'maybe' is not off, on or prefetch"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/bad.json" ]
}

@test "--dst-odp is modelled only: the verbs backend refuses it (exit 2) before touching a device" {
  run "$MIGBED" run --backend verbs --dst-odp on
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"--dst-odp is modelled only: use --backend model"* ]]
  # migbed dest and source run verbs by default
  run "$MIGBED" dest --listen 127.0.0.1:1 --dst-odp prefetch
  [ "$status" -eq 2 ]
  [[ "$output" == *"--dst-odp is modelled only"* ]]
  run "$MIGBED" source --connect 127.0.0.1:1 --dst-odp on
  [ "$status" -eq 2 ]
  [[ "$output" == *"--dst-odp is modelled only"* ]]
  # off is the default, and is no refusal reason
  run "$MIGBED" run --backend verbs --dst-odp off --mem stamp
  [ "$status" -eq 2 ]
  [[ "$output" != *"--dst-odp"* ]]
}
