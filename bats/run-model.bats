#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# migbed run on the model backend: the CLI contract, determinism, metric invariants.
load helpers
bats_require_minimum_version 1.5.0

S=$BATS_TEST_DIRNAME/scenarios

json_num() {  # json_num FILE PATH -> the value at jq PATH (fails if it is missing)
  jq -er "$2" "$1"
}

@test "run --help lists the options and exit codes" {
  run "$MIGBED" run --help
  [ "$status" -eq 0 ]
  for o in --trace --chunk-size --dst-chunk-size --pin-all --backend --link-gbps \
           --downtime-limit-ms --max-bandwidth --device-state --seed --json --events --expect; do
    [[ "$output" == *"$o"* ]]
  done
  [[ "$output" == *"exit status"* ]]
}

@test "run with no arguments generates a default trace, completes and verifies" {
  run "$MIGBED" run
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"Migration status: completed"* ]]
  [[ "$output" == *"verification: destination memory equals"* ]]
  [[ "${lines[-1]}" == "migbed: verdict=pass status=completed cause=NONE side=-" ]]
}

@test "the same scenario and seed give byte-identical event logs and JSON" {
  for i in 1 2; do
    "$MIGBED" run "$S/model-rand-set-1m.scn" --quiet --events "$BATS_TEST_TMPDIR/ev$i" \
      --json "$BATS_TEST_TMPDIR/r$i.json" >/dev/null
  done
  [ -s "$BATS_TEST_TMPDIR/ev1" ]
  [ "$(wc -l <"$BATS_TEST_TMPDIR/ev1")" -gt 100 ]
  cmp "$BATS_TEST_TMPDIR/ev1" "$BATS_TEST_TMPDIR/ev2"
  cmp "$BATS_TEST_TMPDIR/r1.json" "$BATS_TEST_TMPDIR/r2.json"
}

@test "a failing run is deterministic too (64M source, 1M destination)" {
  for i in 1 2; do
    run "$MIGBED" run "$S/model-mismatch-64m-to-1m.scn" --quiet --events "$BATS_TEST_TMPDIR/ev$i" \
      --json "$BATS_TEST_TMPDIR/r$i.json"
    [ "$status" -eq 0 ]
  done
  cmp "$BATS_TEST_TMPDIR/ev1" "$BATS_TEST_TMPDIR/ev2"
  cmp "$BATS_TEST_TMPDIR/r1.json" "$BATS_TEST_TMPDIR/r2.json"
}

@test "a different seed gives a different event log" {
  "$MIGBED" run --pattern random --rate 20000 --seed 1 --quiet --events "$BATS_TEST_TMPDIR/a" >/dev/null
  "$MIGBED" run --pattern random --rate 20000 --seed 2 --quiet --events "$BATS_TEST_TMPDIR/b" >/dev/null
  run cmp -s "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
  [ "$status" -eq 1 ]
}

@test "metrics obey their invariants" {
  for scn in model-rand-set-1m model-hotcold-64m model-idle-1g model-rand-set-32m-pin-all; do
    "$MIGBED" run "$S/$scn.scn" --quiet --json "$BATS_TEST_TMPDIR/r.json" >/dev/null
    f=$BATS_TEST_TMPDIR/r.json
    transferred=$(json_num "$f" .metrics.ram.transferred); normal=$(json_num "$f" .metrics.ram.normal)
    page=$(json_num "$f" '.metrics.ram."page-size"'); total=$(json_num "$f" '.metrics."total-time"')
    down=$(json_num "$f" .metrics.downtime); syncs=$(json_num "$f" '.metrics.ram."dirty-sync-count"')
    setup=$(json_num "$f" '.metrics."setup-time"')
    echo "$scn: transferred=$transferred normal=$normal page=$page total=$total down=$down syncs=$syncs"
    [ "$transferred" -ge $((normal * page)) ]
    [ "$down" -le "$total" ]
    [ "$setup" -le "$total" ]
    [ "$syncs" -ge 2 ]
    [ "$(jq -r .status "$f")" = completed ]
  done
}

@test "the source 64M / destination 1M failure names the chunk size in its hint" {
  run "$MIGBED" run "$S/model-mismatch-64m-to-1m.scn"
  [ "$status" -eq 0 ]
  [[ "$output" == *"cause: REMOTE_ACCESS_ERROR (src side)"* ]]
  [[ "$output" == *"chunk size"* ]]
  [[ "$output" == *"REM_ACCESS_ERR"* ]]
  [[ "${lines[-1]}" == "migbed: verdict=pass status=failed cause=REMOTE_ACCESS_ERROR side=src" ]]
}

@test "a run that misses its expectation exits 1" {
  run "$MIGBED" run --guest 64M --expect failed:REMOTE_ACCESS_ERROR
  [ "$status" -eq 1 ]
  [[ "${lines[-1]}" == "migbed: verdict=fail status=completed cause=NONE side=-" ]]
  run "$MIGBED" run "$S/model-mismatch-64m-to-1m.scn" --expect completed
  [ "$status" -eq 1 ]
  [[ "${lines[-1]}" == *"verdict=fail status=failed cause=REMOTE_ACCESS_ERROR"* ]]
}

@test "bad options exit 2 with a clear message and write nothing" {
  cd "$BATS_TEST_TMPDIR"
  run "$MIGBED" run --chunk-size 3M --json out.json
  [ "$status" -eq 2 ]
  [[ "$output" == *"--chunk-size: '3M' is not a power of two from 1M to 1G"* ]]
  [ ! -e out.json ]
  run "$MIGBED" run --no-such-option 1
  [ "$status" -eq 2 ]
  [[ "$output" == *"unknown option '--no-such-option'"* ]]
  run "$MIGBED" run --expect failed:NO_SUCH_CAUSE --events ev
  [ "$status" -eq 2 ]
  [[ "$output" == *"unknown cause 'NO_SUCH_CAUSE'"* ]]
  [ ! -e ev ]
  run "$MIGBED" run --backend rdma
  [ "$status" -eq 2 ]
  run "$MIGBED" run --trace /no/such/file.trace
  [ "$status" -eq 2 ]
  [[ "$output" == *"/no/such/file.trace"* ]]
}

@test "a malformed scenario is rejected with FILE:LINE" {
  cd "$BATS_TEST_TMPDIR"
  printf 'chunk-size = 1M\nthis line has no equals sign\n' >bad1.scn
  run "$MIGBED" run bad1.scn --json out.json
  [ "$status" -eq 2 ]
  [[ "$output" == *"bad1.scn:2: expected 'key = value'"* ]]
  [ ! -e out.json ]
  printf '# ok\nchunk-sizes = 1M\n' >bad2.scn
  run "$MIGBED" run bad2.scn
  [ "$status" -eq 2 ]
  [[ "$output" == *"bad2.scn:2: unknown key 'chunk-sizes'"* ]]
  printf 'pin-all = maybe\n' >bad3.scn
  run "$MIGBED" run bad3.scn
  [ "$status" -eq 2 ]
  [[ "$output" == *"bad3.scn:1: pin-all: 'maybe' is not a boolean"* ]]
  printf 'trace = x.trace\npattern = idle\n' >bad4.scn
  run "$MIGBED" run bad4.scn
  [ "$status" -eq 2 ]
  [[ "$output" == *"conflict"* ]]
}

@test "command-line options override the scenario" {
  run "$MIGBED" run "$S/model-mismatch-64m-to-1m.scn" --dst-chunk-size 64M --quiet
  [ "$status" -eq 1 ]      # the scenario still expects the failure
  [[ "${lines[-1]}" == "migbed: verdict=fail status=completed cause=NONE side=-" ]]
}

@test "migbed causes lists every cause with its QEMU messages; --json is one array" {
  run "$MIGBED" causes
  [ "$status" -eq 0 ]
  [[ "$output" == *"REMOTE_ACCESS_ERROR"* ]]
  [[ "$output" == *"QEMU: rdma migration: polling error"* ]]
  run "$MIGBED" causes --json
  [ "$status" -eq 0 ]
  [[ "$output" == "["*"]" ]]
  # the consequences, by the table's KIND column (the judge never lets one hide a primary cause)
  [ "$(jq -r '[.[] | select(.kind == "consequence") | .name] | sort | join(" ")' <<<"$output")" = \
    "CONNECT_REJECTED DEST_INCOMPLETE PEER_DISCONNECTED PEER_ERROR QEMU_STREAM_TRUNCATED QP_ERROR" ]
  [ "$(jq '[.[] | select(.kind != "consequence" and .kind != "primary")] | length' <<<"$output")" -eq 0 ]
  run "$MIGBED" causes NO_SUCH
  [ "$status" -eq 1 ]
}

@test "--protocol negotiated: the summary and JSON show the chunk size used, not the one configured" {
  run "$MIGBED" run "$S/neg-new-new-64m-to-1m-adapt.scn" --json "$BATS_TEST_TMPDIR/r.json" --events "$BATS_TEST_TMPDIR/ev"
  [ "$status" -eq 0 ]
  grep -q ' src chunk_adapt from=67108864 to=1048576$' "$BATS_TEST_TMPDIR/ev"
  [[ "$output" == *"chunk size: src 1024 KiB, dst 1024 KiB, pin-all off"* ]]
  [[ "$output" == *"chunk size: the source was configured with 64M and used 1M (negotiated)"* ]]
  [ "$(jq -c '[.metrics.migbed."chunk-size-src", .metrics.migbed."chunk-size-dst"]' "$BATS_TEST_TMPDIR/r.json")" = '[1048576,1048576]' ]
  # an old destination: the source adapts to 1M as well
  run "$MIGBED" run "$S/neg-new-old-64m-to-1m-adapt.scn" --quiet --json "$BATS_TEST_TMPDIR/r.json"
  [ "$status" -eq 0 ]
  [ "$(jq '.metrics.migbed."chunk-size-src"' "$BATS_TEST_TMPDIR/r.json")" -eq 1048576 ]
  # nothing to adapt (a smaller source chunk, or no negotiation): the configured size
  run "$MIGBED" run "$S/neg-new-new-1m-to-64m-adapt.scn" --json "$BATS_TEST_TMPDIR/r.json"
  [[ "$output" != *"configured with"* ]]
  [ "$(jq -c '[.metrics.migbed."chunk-size-src", .metrics.migbed."chunk-size-dst"]' "$BATS_TEST_TMPDIR/r.json")" = '[1048576,67108864]' ]
  run "$MIGBED" run "$S/model-mismatch-64m-to-1m.scn" --quiet --json "$BATS_TEST_TMPDIR/r.json"
  [ "$(jq '.metrics.migbed."chunk-size-src"' "$BATS_TEST_TMPDIR/r.json")" -eq 67108864 ]
}

@test "a generator value of 0 is refused (exit 2), not silently replaced by its default" {
  for kv in "cold-rate 0" "hot-rate 0" "rate 0" "sweep-rate 0" "worker-bytes 0" "page-size 0"; do
    set -- $kv
    run "$MIGBED" run --pattern hotcold --"$1" "$2" --json "$BATS_TEST_TMPDIR/r.json"
    echo "--$kv: $output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--$1: '0' is not "* ]]
    [ ! -e "$BATS_TEST_TMPDIR/r.json" ]
  done
  printf 'pattern = hotcold\ncold-rate = 0\n' >"$BATS_TEST_TMPDIR/c.scn"
  run "$MIGBED" run "$BATS_TEST_TMPDIR/c.scn"
  [ "$status" -eq 2 ]
  [[ "$output" == *"c.scn:2: cold-rate: '0' is not a rate in pages/s from 1 to 4294967295"* ]]
  run "$MIGBED" run --pattern hotcold --guest 64M --cold-rate 1 --quiet
  [ "$status" -eq 0 ]
}

@test "the model's cost defaults in --help are the real ones: giving them changes nothing" {
  run "$MIGBED" run --help
  [ "$status" -eq 0 ]
  reg=$(sed -n 's/^ *--reg-us-per-gib N .*(default \([0-9]*\):.*/\1/p' <<<"$output")
  gbps=$(sed -n 's/^ *--link-gbps N .*(default \([0-9]*\)).*/\1/p' <<<"$output")
  lat=$(sed -n 's/^ *--latency-us N .*(default \([0-9]*\)).*/\1/p' <<<"$output")
  echo "reg=$reg gbps=$gbps lat=$lat"
  [ -n "$reg" ]
  [ -n "$gbps" ]
  [ -n "$lat" ]
  [[ "$output" == *"(default $reg: 60 ns per 4 KiB page, plus 20 us per registration)"* ]]
  "$MIGBED" run --guest 64M --quiet --events "$BATS_TEST_TMPDIR/a" --json "$BATS_TEST_TMPDIR/a.json" >/dev/null
  "$MIGBED" run --guest 64M --quiet --events "$BATS_TEST_TMPDIR/b" --json "$BATS_TEST_TMPDIR/b.json" \
    --reg-us-per-gib "$reg" --link-gbps "$gbps" --latency-us "$lat" >/dev/null
  cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
  cmp "$BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/b.json"
  # and a different cost does change the run (the comparison above can fail)
  "$MIGBED" run --guest 64M --quiet --events "$BATS_TEST_TMPDIR/c" --reg-us-per-gib $((reg * 2)) >/dev/null
  run cmp -s "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/c"
  [ "$status" -eq 1 ]
}

@test "migbed --help lists --version, and --version prints it" {
  run "$MIGBED" --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"--version"* ]]
  [[ "$output" == *"--help, -h"* ]]
  run "$MIGBED" --version
  [ "$status" -eq 0 ]
  [[ "$output" =~ ^migbed\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
}

@test "headers: every declaration is inside the include guard (nothing after the last #endif)" {
  cd "$BATS_TEST_DIRNAME/.."
  n=0
  for h in sim/*.h transport/*.h faults/*.h run/*.h cli/*.h; do
    n=$((n + 1))
    last=$(grep -v '^[[:space:]]*$' "$h" | tail -n 1)
    echo "$h: $last"
    [[ "$last" == "#endif"* ]]
  done
  [ "$n" -gt 20 ]
}

@test "QEMU's registrations and headers (issue 12): source chunk MRs without remote access, pin-all blocks with it as QEMU (migbed's own: without, issue 16), QEMU FILE repeat 0" {
  run "$MIGBED" run "$S/model-rand-set-1m.scn" --quiet --events "$BATS_TEST_TMPDIR/dyn.ev"
  [ "$status" -eq 0 ]
  run grep -c ' src reg_mr blk=.* access=0x0 ' "$BATS_TEST_TMPDIR/dyn.ev"
  [ "$status" -eq 0 ]
  [ "$output" -gt 0 ]
  run grep -c ' src reg_mr blk=.* access=0x3 ' "$BATS_TEST_TMPDIR/dyn.ev"
  [ "$status" -eq 1 ]
  run grep -c ' src ctl_send type=qemu_file .* repeat=0$' "$BATS_TEST_TMPDIR/dyn.ev"
  [ "$status" -eq 0 ]
  [ "$output" -gt 0 ]
  run grep -c ' src ctl_send type=qemu_file .* repeat=1$' "$BATS_TEST_TMPDIR/dyn.ev"
  [ "$status" -eq 1 ]
  run "$MIGBED" run "$S/model-rand-set-1m.scn" --pin-all --src-impl qemu-7.2 --quiet --events "$BATS_TEST_TMPDIR/pin.ev"
  [ "$status" -eq 0 ]
  run grep -c ' src reg_mr blk=.* access=0x3 ' "$BATS_TEST_TMPDIR/pin.ev"
  [ "$status" -eq 0 ]
  [ "$output" -gt 0 ]
  # migbed's own source pins its blocks with no remote access: its destination cannot write them
  run "$MIGBED" run "$S/model-rand-set-1m.scn" --pin-all --quiet --events "$BATS_TEST_TMPDIR/own.ev"
  [ "$status" -eq 0 ]
  run grep -c ' src reg_mr blk=.* access=0x0 ' "$BATS_TEST_TMPDIR/own.ev"
  [ "$status" -eq 0 ]
  [ "$output" -gt 0 ]
  run grep -c ' src reg_mr blk=.* access=0x3 ' "$BATS_TEST_TMPDIR/own.ev"
  [ "$status" -eq 1 ]
}

# QEMU registers its control buffers LOCAL_WRITE | REMOTE_WRITE (qemu_rdma_reg_control), on
# either side; a side playing a QEMU profile does too. migbed's own protocol needs no remote
# access there (SEND/RECV only) and registers them LOCAL_WRITE only: a peer cannot overwrite a
# message it has not handled yet (issue 16, docs/security.md). Three 512 KiB buffers a side.
@test "control buffers: LOCAL_WRITE only on migbed's own sides, remote-writable on a side playing QEMU" {
  run "$MIGBED" run "$S/model-rand-set-1m.scn" --quiet --events "$BATS_TEST_TMPDIR/own.ev"
  [ "$status" -eq 0 ]
  for side in src dst; do
    run grep -c " $side reg_mr addr=\* len=524288 access=0x1 " "$BATS_TEST_TMPDIR/own.ev"
    [ "$status" -eq 0 ]
    [ "$output" -eq 3 ]
    run grep -c " $side reg_mr addr=\* len=524288 access=0x3 " "$BATS_TEST_TMPDIR/own.ev"
    [ "$status" -eq 1 ]
  done
  run "$MIGBED" run "$S/model-rand-set-1m.scn" --src-impl qemu-7.2 --quiet --events "$BATS_TEST_TMPDIR/q.ev"
  [ "$status" -eq 0 ]
  run grep -c " src reg_mr addr=\* len=524288 access=0x3 " "$BATS_TEST_TMPDIR/q.ev"
  [ "$status" -eq 0 ]
  [ "$output" -eq 3 ]
  run grep -c " dst reg_mr addr=\* len=524288 access=0x1 " "$BATS_TEST_TMPDIR/q.ev"
  [ "$status" -eq 0 ]
  [ "$output" -eq 3 ]
}

# The model grants what rxe grants (a 1023-deep send queue for QEMU's 512): more than 512 RDMA
# WRITEs in flight complete, with no wait cut short after 513 completions (issue 12; the same
# test runs on rxe in bats/verbs/verbs.bats).
@test "more than 512 RDMA WRITEs in flight complete and verify" {
  run "$MIGBED" run --guest 544M --pin-all --max-bandwidth unlimited \
    --fault 'post_send.write@src #1 -> delay(2s)' --expect-fired 1 --json "$BATS_TEST_TMPDIR/r.json"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[-1]}" == *"verdict=pass status=completed"* ]]
  [ "$(json_num "$BATS_TEST_TMPDIR/r.json" '.metrics.migbed."max-writes-in-flight"')" -eq 544 ]
}

@test "run: query-migrate's rates and byte counts, human and JSON; --json - makes stdout the JSON alone" {
  run --separate-stderr "$MIGBED" run "$S/model-rand-set-1m.scn" --json -
  [ "$status" -eq 0 ]
  printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/r.json"
  # stdout is one JSON document (jq reads it whole); the report and the verdict are on stderr
  run jq -e . "$BATS_TEST_TMPDIR/r.json"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"migbed: verdict=pass status=completed cause=NONE side=-"* ]]
  [[ "$stderr" == *$'\npages-per-second: 33280\ndirty pages rate: 27603 pages\nexpected downtime: 304 ms\nprecopy ram: 159748 kbytes\ndowntime ram: 38960 kbytes\n'* ]]
  # QEMU's definitions, on virtual time: the bytes split at the VM stop; the rates measured
  [ "$(json_num "$BATS_TEST_TMPDIR/r.json" '.metrics.ram["precopy-bytes"] + .metrics.ram["downtime-bytes"] == .metrics.ram.transferred')" = true ]
  [ "$(json_num "$BATS_TEST_TMPDIR/r.json" '.metrics.ram["dirty-pages-rate"]')" -eq 27603 ]
  [ "$(json_num "$BATS_TEST_TMPDIR/r.json" '.metrics.ram["pages-per-second"]')" -eq 33280 ]
  [ "$(json_num "$BATS_TEST_TMPDIR/r.json" '.metrics["expected-downtime"]')" -eq 304 ]
  [ "$(json_num "$BATS_TEST_TMPDIR/r.json" '.metrics | has("error-desc")')" = false ]
  # deterministic: the same again, byte for byte
  "$MIGBED" run "$S/model-rand-set-1m.scn" --json - 2>/dev/null | cmp - "$BATS_TEST_TMPDIR/r.json"
  # a failed run: error-desc; NOT_CONVERGED says the dirty rate, the bandwidth and the downtime needed
  run --separate-stderr "$MIGBED" run "$S/fault-post-send-write-slow-link.scn" --json -
  [ "$status" -eq 0 ]
  printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/f.json"
  want="still iterating after the time limit (max-time): the guest dirties 362 pages/s (1.4 MiB/s), the migration moves 1.5 MiB/s (max-bandwidth 128.0 MiB/s): the 16.0 MiB dirty would need 10666 ms of downtime, the limit is 300 ms"
  [ "$(json_num "$BATS_TEST_TMPDIR/f.json" '.detail')" = "$want" ]
  [ "$(json_num "$BATS_TEST_TMPDIR/f.json" '.metrics["error-desc"]')" = "NOT_CONVERGED: $want" ]
  [ "$(json_num "$BATS_TEST_TMPDIR/f.json" '.metrics["expected-downtime"]')" -eq 300 ]
  # one output per stream
  run "$MIGBED" run --json - --events - --quiet
  [ "$status" -eq 2 ]
  [[ "$output" == *"--json - and --events - would both write to standard output: give one a file"* ]]
}

@test "verbs on a host without an RDMA device: exit 2, and the message says where to run it (the soft-RoCE VM, or topologies/setup)" {
  run "$BATS_TEST_DIRNAME/../topologies/detect"
  if [ "$status" -eq 0 ]; then skip "this host has an RDMA device"; fi
  run "$MIGBED" run --backend verbs --guest 16M --quiet
  echo "$output"
  [ "$status" -eq 2 ]
  [[ "$output" == *"cannot create the verbs backend: No such device: this host has no RDMA device"* ]]
  [[ "$output" == *"topologies/vm/rxe-vm build/migbed ... --backend verbs"* ]]
  [[ "$output" == *"topologies/setup"* ]]
}
