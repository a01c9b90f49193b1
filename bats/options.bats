#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The one option table (cli/runcfg.c): README's key table is the generated one (drift fails),
# and every command's --help (run, source, dest, trace gen, torture) lists every key the table
# gives it, with its bounds.

load helpers

ROOT=$BATS_TEST_DIRNAME/..

keys_of() {  # keys_of COMMAND: the keys the table gives COMMAND, one per line
  "$MIGBED" options --markdown | awk -F'|' -v cmd="$1" '
    NR > 2 { n = split($(NF - 1), c, /[ ,]+/); for (i = 1; i <= n; i++) if (c[i] == cmd) print $2 }' |
    sed 's/^ `\(--[a-z-]*\).*/\1/'
}

@test "README's key table is the one generated from the option table" {
  run "$ROOT/scripts/gen-options-doc.sh" --check "$MIGBED" "$ROOT/README.md"
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "a README whose key table drifted fails the check" {
  sed 's/^| `--seed N` | seed of the run /| `--seed N` | the seed /' "$ROOT/README.md" >"$BATS_TEST_TMPDIR/README.md"
  run cmp -s "$ROOT/README.md" "$BATS_TEST_TMPDIR/README.md"
  [ "$status" -eq 1 ]
  run "$ROOT/scripts/gen-options-doc.sh" --check "$MIGBED" "$BATS_TEST_TMPDIR/README.md"
  [ "$status" -eq 1 ]
  [[ "$output" == *"seed of the run"* ]]
}

@test "run, source, dest, trace gen, torture and sweep --help list every key the table gives them" {
  for cmd in run source dest trace-gen torture sweep; do
    run keys_of "$cmd"
    [ "$status" -eq 0 ]
    keys=$output
    [ "$(wc -l <<<"$keys")" -ge 14 ]
    run "$MIGBED" ${cmd/-/ } --help
    [ "$status" -eq 0 ]
    help=$output
    while read -r k; do
      grep -qE -- "^  $k( |$)" <<<"$help" || { echo "$cmd --help lacks $k"; return 1; }
    done <<<"$keys"
  done
}

@test "migbed options refuses an unknown argument with exit 2" {
  run "$MIGBED" options --nope
  [ "$status" -eq 2 ]
  [[ "$output" == *"options: unknown argument '--nope'"* ]]
}

@test "the table's bounds are in README's table and enforced the same by every command" {
  run "$MIGBED" options --markdown
  [ "$status" -eq 0 ]
  [[ "$output" == *'| `--workers N` | rand-set: workers, each sweeping its own region (like stress-ng --vm-method rand-set) (also --vm, stress-ng'"'"'s name) | integer | 1..4096 |'* ]]
  [[ "$output" == *'| `--max-runs N` | at most N reruns, spread evenly over the sites | integer | 1..100000 |'* ]]
  for cmd in run "trace gen" torture; do
    run "$MIGBED" $cmd --workers 5000
    echo "$cmd: $output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--workers: '5000' is not a number of workers from 1 to 4096"* ]]
  done
  run "$MIGBED" dest --listen 198.18.0.1:1 --accept-timeout-ms 0
  [ "$status" -eq 2 ]
  [[ "$output" == *"--accept-timeout-ms: '0' is not a time in ms from 1 to 86400000"* ]]
  run "$MIGBED" source --connect
  [ "$status" -eq 2 ]
  [[ "$output" == *"source: --connect needs a value"* ]]
}

@test "torture takes the generator's defaults: a 4M guest runs (it used to fail: 2 x 16M does not fit)" {
  run "$MIGBED" torture --guest 4M --duration-ms 100 --max-runs 1 --sites reg_mr
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"torture: 1 runs"* ]]
}

@test "QEMU's spellings are accepted: --x-rdma-chunk-size, --rdma-pin-all, --downtime-limit (options and scenario keys)" {
  run "$MIGBED" run --help
  [[ "$output" == *"--chunk-size SIZE            source chunk size (as QEMU) (also --x-rdma-chunk-size, QEMU's name)"* ]]
  # the same run, spelled both ways
  "$MIGBED" run --chunk-size 64M --dst-chunk-size 1M --pin-all --downtime-limit-ms 500 --quiet \
    --events "$BATS_TEST_TMPDIR/a.ev" --json "$BATS_TEST_TMPDIR/a.json" || true
  "$MIGBED" run --x-rdma-chunk-size 64M --dst-chunk-size 1M --rdma-pin-all --downtime-limit 500 --quiet \
    --events "$BATS_TEST_TMPDIR/b.ev" --json "$BATS_TEST_TMPDIR/b.json" || true
  [ -s "$BATS_TEST_TMPDIR/a.ev" ]
  cmp "$BATS_TEST_TMPDIR/a.ev" "$BATS_TEST_TMPDIR/b.ev"
  cmp "$BATS_TEST_TMPDIR/a.json" "$BATS_TEST_TMPDIR/b.json"
  printf 'x-rdma-chunk-size = 64M\ndst-chunk-size = 1M\nexpect = failed:REMOTE_ACCESS_ERROR\n' >"$BATS_TEST_TMPDIR/q.scn"
  run "$MIGBED" run "$BATS_TEST_TMPDIR/q.scn" --quiet
  [ "$status" -eq 0 ]
  [ "$output" = "migbed: verdict=pass status=failed cause=REMOTE_ACCESS_ERROR side=src" ]
  # a key and its QEMU spelling are one key: given twice
  printf 'chunk-size = 2M\nx-rdma-chunk-size = 64M\n' >"$BATS_TEST_TMPDIR/twice.scn"
  run "$MIGBED" run "$BATS_TEST_TMPDIR/twice.scn"
  [ "$status" -eq 2 ]
  [[ "$output" == *"twice.scn:2: key 'x-rdma-chunk-size' given twice (first on line 1)"* ]]
  # bounds are the key's own
  run "$MIGBED" run --x-rdma-chunk-size 512K
  [ "$status" -eq 2 ]
  [[ "$output" == *"is not a power of two from 1M to 1G"* ]]
}

@test "QEMU's rdma:HOST:PORT is an address wherever one is given; a verbs run refuses a bad one before it starts" {
  run "$MIGBED" run --help
  [[ "$output" == *"QEMU's URI rdma:198.18.0.1:29200"* ]]
  # the model ignores --dst-addr, but checks it: QEMU's URI (v4, [v6]) runs
  run "$MIGBED" run --dst-addr rdma:198.18.0.1:29200 --guest 4M --duration-ms 50 --quiet
  [ "$status" -eq 0 ]
  run "$MIGBED" run --dst-addr 'rdma:[fe80::1]:4444' --guest 4M --duration-ms 50 --quiet
  [ "$status" -eq 0 ]
  # a verbs run checks its address before it starts (no RDMA device needed to see that)
  printf 'backend = verbs\ndst-addr = rdma:host.example:4444\n' >"$BATS_TEST_TMPDIR/a.scn"
  run "$MIGBED" run "$BATS_TEST_TMPDIR/a.scn"
  [ "$status" -eq 2 ]
  [[ "$output" == *"--dst-addr: 'rdma:host.example:4444' is not IP:PORT, [IPV6]:PORT or QEMU's rdma:IP:PORT (a numeric address)"* ]]
  # stored without the scheme: a model dest's readiness line says IP:PORT
  run "$MIGBED" dest --backend model --listen rdma:127.0.0.1:4444 --accept-timeout-ms 1 --quiet \
    --ready-file "$BATS_TEST_TMPDIR/ready"
  [ "$status" -eq 1 ]
  [[ "$(cat "$BATS_TEST_TMPDIR/ready")" == "listening 127.0.0.1:4444 pid "* ]]
}

@test "stress-ng's --vm, --vm-bytes, --vm-method rand-set are the generator's keys; what does not map is refused by name" {
  run "$MIGBED" trace gen --help
  [[ "$output" == *"(also --vm, stress-ng's name)"* ]]
  [[ "$output" == *"(also --vm-method rand-set, stress-ng's name)"* ]]
  cd "$BATS_TEST_TMPDIR"
  [[ "$output" == *"(also --vm-bytes, stress-ng's name: the total over the workers, divided among them)"* ]]
  # stress-ng 0.15 divides --vm-bytes among the workers (docs/record.md): 3M over 3 = 1M each
  run "$MIGBED" trace gen --vm 3 --vm-bytes 3m --vm-method rand-set --vm-keep --guest 4M --duration-ms 40 --seed 2 -o a.trace
  [ "$status" -eq 0 ]
  run "$MIGBED" trace gen --workers 3 --worker-bytes 1M --pattern rand-set --guest 4M --duration-ms 40 --seed 2 -o b.trace
  [ "$status" -eq 0 ]
  cmp a.trace b.trace
  # the last of --vm-bytes and --worker-bytes wins; less than a page each is refused
  run "$MIGBED" trace gen --vm 3 --vm-bytes 3m --worker-bytes 1M --vm-keep --pattern rand-set --guest 4M --duration-ms 40 --seed 2 -o d.trace
  [ "$status" -eq 0 ]
  cmp b.trace d.trace
  run "$MIGBED" trace gen --vm 4 --vm-bytes 8k --pattern rand-set --guest 4M --duration-ms 40 --seed 2 -o e.trace
  [ "$status" -eq 2 ]
  [[ "$output" == *"less than a page each (stress-ng divides --vm-bytes among the --vm workers)"* ]]
  [ ! -e e.trace ]
  printf 'vm = 3\nvm-bytes = 1M\nguest = 4M\nduration-ms = 40\n' >vm.scn
  run "$MIGBED" run vm.scn --quiet
  [ "$status" -eq 0 ]
  run "$MIGBED" trace gen --vm-method flip --guest 4M --duration-ms 40 --seed 2 -o c.trace
  [ "$status" -eq 2 ]
  [[ "$output" == *"--vm-method: stress-ng's method 'flip' does not map onto migbed: only rand-set does (as --pattern rand-set)"* ]]
  run "$MIGBED" run --vm-hang 0 --quiet
  [ "$status" -eq 2 ]
  [[ "$output" == *"stress-ng's --vm-hang does not map onto migbed: migbed's workers never unmap their memory"* ]]
  printf 'vm = 2\nvm-ops = 100\n' >ops.scn
  run "$MIGBED" run ops.scn
  [ "$status" -eq 2 ]
  [[ "$output" == *"ops.scn:2: stress-ng's --vm-ops does not map onto migbed: the workload is bounded by --duration-ms"* ]]
  [ ! -e c.trace ]
}
