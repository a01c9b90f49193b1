#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# migbed trace gen: help, determinism, .zst output, every pattern, bad options.

load helpers
bats_require_minimum_version 1.5.0

setup() {
  cd "$BATS_TEST_TMPDIR"
}

# a small valid command line for pattern $1, output $2, extra options after
gen() {
  local pattern=$1 out=$2
  shift 2
  "$MIGBED" trace gen --pattern "$pattern" --guest 64M --duration-ms 500 --seed 7 -o "$out" "$@"
}

# exit status 2, a message on stderr naming the problem, no output file (nor .tmp)
expect_usage_error() {  # $1 = expected text in stderr, rest = trace gen arguments
  local want=$1
  shift
  run --separate-stderr "$MIGBED" trace gen "$@"
  echo "status=$status stderr=$stderr"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"$want"* ]]
  [ -z "$output" ]
  [ ! -e out.trace ]
  [ ! -e out.trace.tmp ]
}

@test "trace gen --help lists every option with its bounds and default, exit 0" {
  run --separate-stderr "$MIGBED" trace gen --help
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  for opt in --pattern --guest --duration-ms --seed --output --page-size --epoch-ms \
             --workers --worker-bytes --sweep-rate --rate --hot-fraction --hot-rate \
             --cold-rate rand-set random hotcold idle; do
    [[ "$output" == *"$opt"* ]] || { echo "missing $opt"; false; }
  done
  [[ "$output" == *"[512..1G] (default 4K)"* ]]
  [[ "$output" == *"[1..3600000 ms] (default 10)"* ]]
  [[ "$output" == *"[0 < F < 1] (default 0.05)"* ]]
  [[ "$output" == *"[1..4096] (default 2)"* ]]
  [[ "$output" == *"[1..86400000 ms] (required)"* ]]
}

@test "trace gen: the generator keys have run's defaults (2 x 16M at 32M/s, fewer bytes in a small guest)" {
  gen rand-set a.trace 2>/dev/null
  grep -qx '# gen: migbed trace gen --pattern rand-set --guest 64M --page-size 4K --duration-ms 500 --epoch-ms 10 --seed 7 --workers 2 --worker-bytes 16M --sweep-rate 32M' a.trace
  "$MIGBED" trace gen --pattern rand-set --guest 4M --duration-ms 100 --seed 1 -o b.trace 2>/dev/null
  grep -q -- '--workers 2 --worker-bytes 1M --sweep-rate 32M$' b.trace
  # the same in a run and in torture: a 4M guest fits the default workers
  run "$MIGBED" run --guest 4M --duration-ms 100 --quiet
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "trace gen: bounds are the option table's, as in run (--workers 5000 is refused by both)" {
  expect_usage_error "migbed: trace gen: --workers: '5000' is not a number of workers from 1 to 4096" \
    --pattern rand-set --guest 1G --duration-ms 10 --seed 1 --workers 5000 -o out.trace
  run "$MIGBED" run --workers 5000
  [ "$status" -eq 2 ]
  [[ "$output" == *"--workers: '5000' is not a number of workers from 1 to 4096"* ]]
  expect_usage_error "--cold-rate: '0' is not a rate in pages/s from 1 to 4294967295" \
    --pattern hotcold --guest 1M --duration-ms 10 --seed 1 --cold-rate 0 -o out.trace
  expect_usage_error "--workers: '0' is not a number of workers from 1 to 4096" \
    --pattern rand-set --guest 1M --duration-ms 10 --seed 1 --workers 0 -o out.trace
}

@test "trace gen: each pattern generates a trace that trace check accepts" {
  for p in rand-set random hotcold idle; do
    run --separate-stderr gen "$p" "$p.trace"
    echo "$p: $status $stderr"
    [ "$status" -eq 0 ]
    [ -s "$p.trace" ]
    [ ! -e "$p.trace.tmp" ]
    head -1 "$p.trace" | grep -qx 'migbed-trace 1'
    grep -q "^# gen: migbed trace gen --pattern $p " "$p.trace"
    [[ "$stderr" == *"pattern $p"* && "$stderr" == *"epochs"* && "$stderr" == *"pages written"* ]]
    # the reader of the trace module agrees
    run "$MIGBED" trace check "$p.trace"
    echo "$output"
    [ "$status" -eq 0 ]
  done
  [ "$(grep -c '^epoch ' idle.trace)" -eq 1 ]
  [ "$(grep -c '^epoch ' rand-set.trace)" -eq 50 ]
}

@test "trace gen: the same options twice give identical files" {
  for p in rand-set random hotcold; do
    gen "$p" a.trace 2>/dev/null
    gen "$p" b.trace 2>/dev/null
    cmp a.trace b.trace
  done
}

@test "trace gen: another seed gives another random trace" {
  gen random b.trace --rate 1000 2>/dev/null
  "$MIGBED" trace gen --pattern random --guest 64M --duration-ms 500 --seed 8 --rate 1000 \
    -o c.trace 2>/dev/null
  run -1 cmp -s b.trace c.trace
  # and not only in the "# gen:" line
  grep -v '^#' b.trace > b.body
  grep -v '^#' c.trace > c.body
  run -1 cmp -s b.body c.body
}

@test "trace gen: FILE.zst is zstd-compressed and holds the same trace" {
  gen rand-set plain.trace 2>/dev/null
  gen rand-set packed.trace.zst 2>/dev/null
  zstd -q -t packed.trace.zst
  zstd -q -d -c packed.trace.zst | cmp - plain.trace
}

@test "trace gen: rand-set 1G / 60 s (the benchmark case) has 6000 epochs" {
  "$MIGBED" trace gen --pattern rand-set --guest 1G --duration-ms 60000 --seed 1 -o big.trace
  [ "$(grep -c '^epoch ' big.trace)" -eq 6000 ]
}

@test "trace gen: a SIZE that is not one is rejected by name" {
  expect_usage_error "migbed: trace gen: --guest: 'abc' is not a SIZE of 1 or more" \
    --pattern idle --guest abc --duration-ms 10 --seed 1 -o out.trace
  expect_usage_error "--page-size: '3k' is not a power of two from 512 to 1G" \
    --pattern idle --guest 1M --page-size 3k --duration-ms 10 --seed 1 -o out.trace
  expect_usage_error "--guest: '1.5' is not a SIZE" \
    --pattern idle --guest 1.5 --duration-ms 10 --seed 1 -o out.trace
  expect_usage_error "--guest: '99999999999999999999' is not a SIZE" \
    --pattern idle --guest 99999999999999999999 --duration-ms 10 --seed 1 -o out.trace
}

@test "trace gen: SIZEs as QEMU's size parser reads them (4k, 1.5m, 0.5M) mean what they say" {
  run "$MIGBED" trace gen --pattern rand-set --guest 1.5m --page-size 4k --worker-bytes 0.5M \
    --duration-ms 50 --seed 3 -o lower.trace
  [ "$status" -eq 0 ]
  run "$MIGBED" trace gen --pattern rand-set --guest 1536K --page-size 4K --worker-bytes 512K \
    --duration-ms 50 --seed 3 -o upper.trace
  [ "$status" -eq 0 ]
  cmp lower.trace upper.trace
  run grep -c '^block pc.ram 1536K$' lower.trace
  [ "$output" = 1 ]
}

@test "trace gen: bad numbers and zero values are rejected" {
  expect_usage_error "--duration-ms: 'ten' is not a time in ms from 1 to 86400000" \
    --pattern idle --guest 1M --duration-ms ten --seed 1 -o out.trace
  expect_usage_error "--duration-ms: '0' is not a time in ms from 1 to 86400000" \
    --pattern idle --guest 1M --duration-ms 0 --seed 1 -o out.trace
  expect_usage_error "--seed: '-1' is not a decimal number" \
    --pattern idle --guest 1M --duration-ms 10 --seed -1 -o out.trace
  expect_usage_error "--rate: '0' is not a rate in pages/s from 1 to 4294967295" \
    --pattern random --guest 1M --duration-ms 10 --seed 1 --rate 0 -o out.trace
  expect_usage_error "--workers: '5000000000' is not a number of workers from 1 to 4096" \
    --pattern rand-set --guest 1M --duration-ms 10 --seed 1 --workers 5000000000 -o out.trace
  expect_usage_error "--hot-fraction: '1.5' is not a fraction strictly between 0 and 1" \
    --pattern hotcold --guest 1M --duration-ms 10 --seed 1 --hot-fraction 1.5 -o out.trace
  expect_usage_error "--hot-fraction: 'nan' is not a fraction" \
    --pattern hotcold --guest 1M --duration-ms 10 --seed 1 --hot-fraction nan -o out.trace
}

@test "trace gen: impossible combinations are rejected with the reason" {
  expect_usage_error "does not fit in the guest" \
    --pattern rand-set --guest 1M --workers 5 --worker-bytes 256K --duration-ms 10 --seed 1 \
    -o out.trace
  expect_usage_error "--page-size: '3000' is not a power of two from 512 to 1G" \
    --pattern idle --guest 1M --page-size 3000 --duration-ms 10 --seed 1 -o out.trace
  expect_usage_error "not a multiple of the page size" \
    --pattern idle --guest 5000 --duration-ms 10 --seed 1 -o out.trace
  expect_usage_error "workers only applies to pattern rand-set, not random" \
    --pattern random --guest 1M --workers 2 --duration-ms 10 --seed 1 -o out.trace
}

@test "trace gen: missing, unknown and extra arguments are usage errors" {
  expect_usage_error "--output FILE is required (see migbed trace gen --help)" \
    --pattern idle --guest 1M --duration-ms 10 --seed 1
  expect_usage_error "--seed N is required" --pattern idle --guest 1M --duration-ms 10 -o out.trace
  expect_usage_error "--pattern: 'zigzag' is not rand-set, random, hotcold or idle" \
    --pattern zigzag --guest 1M --duration-ms 10 --seed 1 -o out.trace
  expect_usage_error "unknown option '--colour'" \
    --pattern idle --guest 1M --duration-ms 10 --seed 1 --colour -o out.trace
  expect_usage_error "unexpected argument 'extra'" \
    --pattern idle --guest 1M --duration-ms 10 --seed 1 -o out.trace extra
  expect_usage_error "needs a value" --pattern idle --guest 1M --duration-ms 10 --seed
}

@test "trace gen: an unwritable output is an error and leaves nothing behind" {
  run --separate-stderr "$MIGBED" trace gen --pattern idle --guest 1M --duration-ms 10 --seed 1 \
    -o no-such-dir/out.trace
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"no-such-dir/out.trace"* ]]
  [ ! -e no-such-dir ]
}

@test "trace gen: an existing FILE is replaced only when the new trace is complete" {
  echo "old content" > out.trace
  run "$MIGBED" trace gen --pattern idle --guest 1M --duration-ms 0 --seed 1 -o out.trace
  [ "$status" -eq 2 ]
  [ "$(cat out.trace)" = "old content" ]
  "$MIGBED" trace gen --pattern idle --guest 1M --duration-ms 10 --seed 1 -o out.trace 2>/dev/null
  head -1 out.trace | grep -qx 'migbed-trace 1'
}

@test "trace gen: stress-ng's spelling churns (a pass ends with the whole region), --vm-keep and --churn false do not" {
  local sn=(trace gen --vm 2 --vm-bytes 64K --vm-method rand-set --guest 1M --sweep-rate 800K --epoch-ms 10 --duration-ms 100 --seed 1)
  run "$MIGBED" "${sn[@]}" -o churn.trace
  [ "$status" -eq 0 ]
  # 2 pages per epoch in 8-page regions: the pass ends at 40 ms and 80 ms with both regions whole
  [ "$(grep -A1 '^epoch 40ms' churn.trace | tail -1)" = "pc.ram 0-15" ]
  [ "$(grep -A1 '^epoch 80ms' churn.trace | tail -1)" = "pc.ram 0-15" ]
  [ "$(grep -A1 "^epoch 50ms" churn.trace | tail -1)" = "pc.ram 0-1 8-9" ]   # the next pass from page 0
  run "$MIGBED" "${sn[@]}" --vm-keep -o keep.trace
  [ "$status" -eq 0 ]
  [ "$(grep -A1 '^epoch 40ms' keep.trace | tail -1)" = "pc.ram 6-7 14-15" ]
  run "$MIGBED" "${sn[@]}" --churn false -o nochurn.trace
  [ "$status" -eq 0 ]
  cmp keep.trace nochurn.trace
  # migbed's own spelling keeps the old default (no churn): the same as --vm-keep
  run "$MIGBED" trace gen --pattern rand-set --workers 2 --worker-bytes 32K --guest 1M --sweep-rate 800K --epoch-ms 10 --duration-ms 100 --seed 1 -o own.trace
  [ "$status" -eq 0 ]
  cmp keep.trace own.trace
  expect_usage_error "contradicts churn = true" "${sn[@]:2}" --vm-keep --churn true -o out.trace
  expect_usage_error "churn only applies to pattern rand-set" --pattern random --churn true --guest 1M --duration-ms 100 --seed 1 -o out.trace
}

@test "trace gen: --first-touch-ms delays the regions, --sweep-jitter-pct varies the rate (seeded)" {
  gen rand-set ft.trace --guest 1M --workers 2 --worker-bytes 32K --sweep-rate 800K --epoch-ms 10 --duration-ms 100 --first-touch-ms 25
  [ "$(grep -A1 '^epoch 20ms' ft.trace | tail -1)" = "epoch 30ms" ]        # nothing before 25 ms
  [ "$(grep -A1 '^epoch 30ms' ft.trace | tail -1)" = "pc.ram 0-15" ]       # the first touch
  gen rand-set j1.trace --sweep-jitter-pct 60
  gen rand-set j2.trace --sweep-jitter-pct 60
  cmp j1.trace j2.trace
  gen rand-set j0.trace
  run cmp -s j0.trace j1.trace
  [ "$status" -eq 1 ]
  expect_usage_error "is not before duration-ms" --pattern rand-set --guest 1M --duration-ms 100 --first-touch-ms 100 --seed 1 -o out.trace
  expect_usage_error "sweep-jitter-pct" --pattern rand-set --guest 1M --duration-ms 100 --sweep-jitter-pct 101 --seed 1 -o out.trace
}

@test "trace gen: --layout-nonzero-pct writes a version 2 layout that trace check, stat and run read" {
  gen idle l.trace --guest 64M --layout-nonzero-pct 25 --layout-extent 1M
  [ "$(head -1 l.trace)" = "migbed-trace 2" ]
  run "$MIGBED" trace check l.trace
  [ "$status" -eq 0 ]
  run "$MIGBED" trace stat l.trace
  [[ "$output" == *"layout          4096 pages non-zero at start (16.000 MiB, 25.0 % of the guest"* ]]
  # the layout decides what the migration transfers: 16 MiB of data against an all-zero guest
  gen idle z.trace --guest 64M
  [ "$(head -1 z.trace)" = "migbed-trace 1" ]
  run "$MIGBED" run --trace l.trace --json l.json --quiet
  [ "$status" -eq 0 ]
  run "$MIGBED" run --trace z.trace --json z.json --quiet
  [ "$status" -eq 0 ]
  [ "$(jq '.metrics.ram.normal' l.json)" -eq 4096 ]
  [ "$(jq '.metrics.ram.normal' z.json)" -eq 0 ]
  [ "$(jq '.verified' l.json)" = true ]
  expect_usage_error "layout-extent 3000 is not a positive multiple" --pattern idle --guest 1M --duration-ms 100 --layout-nonzero-pct 10 --layout-extent 3000 --seed 1 -o out.trace
  expect_usage_error "layout-nonzero-pct" --pattern idle --guest 1M --duration-ms 100 --layout-nonzero-pct 101 --seed 1 -o out.trace
}

@test "trace gen: --blocks writes a guest of several RAM blocks that trace check and run read; one block stays the old trace" {
  run "$MIGBED" trace gen --pattern random --rate 25600 --blocks pc.ram=8M,pc.bios=256K,0000:00:02.0/vga.vram=4M,odd=1028K \
    --duration-ms 200 --seed 7 -o b.trace
  [ "$status" -eq 0 ]
  run grep '^block ' b.trace
  [ "$output" = "$(printf 'block pc.ram 8M\nblock pc.bios 256K\nblock 0000:00:02.0/vga.vram 4M\nblock odd 1028K')" ]
  # the guest is the blocks' total; every block gets writes; the header says how to make it again
  run grep -c '^odd ' b.trace
  [ "$output" -gt 0 ]
  run grep -c '^pc.bios ' b.trace
  [ "$output" -gt 0 ]
  run grep '^# gen: ' b.trace
  [[ "$output" == *"--guest 13572K "*"--blocks pc.ram=8M,pc.bios=256K,0000:00:02.0/vga.vram=4M,odd=1028K"* ]]
  run "$MIGBED" trace check b.trace
  [ "$status" -eq 0 ]
  # a migration of it verifies every block, with chunks larger than the small blocks and not aligned to odd's end
  run "$MIGBED" run --trace b.trace --chunk-size 2M --json b.json --quiet
  [ "$status" -eq 0 ]
  [ "$(jq -r '[.status, .verified] | @tsv' b.json)" = "$(printf 'completed\ttrue')" ]
  # --guest may be given when it is the total; `migbed run` takes the same keys
  run "$MIGBED" run --pattern idle --guest 8448K --blocks pc.ram=8M,pc.bios=256K --quiet
  [ "$status" -eq 0 ]
  # one block named pc.ram is the default trace, but for the comment that records --blocks
  gen random one.trace
  gen random pc.trace --blocks pc.ram=64M
  [ "$(grep -v '^# gen: ' one.trace | md5sum)" = "$(grep -v '^# gen: ' pc.trace | md5sum)" ]
}

@test "trace gen: bad --blocks values are refused by name: exit 2, nothing written" {
  expect_usage_error "--blocks: 'pc.ram': 'pc.ram' has no '=SIZE'" --pattern idle --blocks pc.ram --duration-ms 10 --seed 1 -o out.trace
  expect_usage_error "--blocks: 'a=1M,a=2M': block 'a' is named twice" --pattern idle --blocks a=1M,a=2M --duration-ms 10 --seed 1 -o out.trace
  expect_usage_error "--blocks: 'ram@1=1M': 'ram@1': bad block name" --pattern idle --blocks ram@1=1M --duration-ms 10 --seed 1 -o out.trace
  expect_usage_error "--blocks: 'a=0': 'a': the size '0' is not a SIZE of more than 0" --pattern idle --blocks a=0 --duration-ms 10 --seed 1 -o out.trace
  expect_usage_error "--blocks: 'a=1M,': an empty item" --pattern idle --blocks a=1M, --duration-ms 10 --seed 1 -o out.trace
  expect_usage_error "block 'b' of 5000 is not a positive multiple of the page size 4K" --pattern idle --blocks a=1M,b=5000 --duration-ms 10 --seed 1 -o out.trace
  expect_usage_error "guest 2M is not the total of blocks (1028K)" --pattern idle --guest 2M --blocks a=1M,b=4K --duration-ms 10 --seed 1 -o out.trace
  expect_usage_error "--guest SIZE is required" --pattern idle --duration-ms 10 --seed 1 -o out.trace
  run "$MIGBED" run --blocks a=1M,a=1M --quiet
  [ "$status" -eq 2 ]
  [[ "$output" == *"--blocks: 'a=1M,a=1M': block 'a' is named twice"* ]]
}

@test "trace gen: --layout-runs exp places data in unaligned runs, exactly the share; fixed stays the default, byte for byte" {
  gen idle f.trace --guest 64M --layout-nonzero-pct 40 --layout-extent 1M
  gen idle f2.trace --guest 64M --layout-nonzero-pct 40 --layout-extent 1M --layout-runs fixed
  cmp f.trace f2.trace
  run grep -c -- "--layout-runs" f.trace
  [ "$output" = 0 ]
  gen idle e.trace --guest 64M --layout-nonzero-pct 40 --layout-extent 1M --layout-runs exp
  gen idle e2.trace --guest 64M --layout-nonzero-pct 40 --layout-extent 1M --layout-runs exp
  cmp e.trace e2.trace
  [ "$(head -1 e.trace)" = "migbed-trace 2" ]
  run grep -c -- "--layout-nonzero-pct 40 --layout-extent 1M --layout-runs exp" e.trace
  [ "$output" = 1 ]
  run "$MIGBED" trace check e.trace
  [ "$status" -eq 0 ]
  # 40 % of 16384 pages, exactly, as the fixed placement's 40 % of 64 extents is not
  run "$MIGBED" trace stat e.trace
  [[ "$output" == *"layout          6554 pages non-zero at start"* ]]
  # some run starts off a 1M (256-page) boundary; every fixed one starts on one
  run awk '/^layout/ { for (i = 3; i <= NF; i++) { split($i, r, "-"); if (r[1] % 256) n++ } } END { print n + 0 }' e.trace
  [ "$output" -gt 0 ]
  run awk '/^layout/ { for (i = 3; i <= NF; i++) { split($i, r, "-"); if (r[1] % 256) n++ } } END { print n + 0 }' f.trace
  [ "$output" -eq 0 ]
  run "$MIGBED" run --trace e.trace --json e.json --quiet
  [ "$status" -eq 0 ]
  # every data page is sent, and the holes that share a 1M chunk with data after it; whole-hole
  # chunks are elided
  local normal
  normal=$(jq '.metrics.ram.normal' e.json)
  echo "normal=$normal"
  [ "$normal" -ge 6554 ]
  [ "$normal" -lt 16384 ]
  expect_usage_error "layout-runs" --pattern idle --guest 1M --duration-ms 100 --layout-nonzero-pct 10 --layout-runs poisson --seed 1 -o out.trace
  # with several RAM blocks the runs are split where one block ends and the next begins
  run "$MIGBED" trace gen --pattern idle --blocks a=3M,b=5M --layout-nonzero-pct 40 --layout-extent 1M \
    --layout-runs exp --duration-ms 10 --seed 1 -o eb.trace
  [ "$status" -eq 0 ]
  run "$MIGBED" trace stat eb.trace
  [[ "$output" == *"layout          819 pages non-zero at start"* ]]
  run "$MIGBED" run --trace eb.trace --json eb.json --quiet
  [ "$status" -eq 0 ]
  [ "$(jq '.verified' eb.json)" = true ]
}

@test "trace gen: docs/record.md's matched generator is within 5 % of the recorded stress-ng's pages and first touch" {
  local rec=$BATS_TEST_DIRNAME/data/traces/recorded
  # recorded in the VM: stress-ng --vm 4 --vm-bytes 64M --vm-method rand-set --timeout 5s (docs/record.md)
  "$MIGBED" trace gen --vm 4 --vm-bytes 64M --vm-method rand-set --guest 64M --first-touch-ms 1000 --sweep-rate 9M \
    --sweep-jitter-pct 70 --epoch-ms 180 --duration-ms 6280 --seed 1 -o gen.trace
  "$MIGBED" trace gen --vm 4 --vm-bytes 64M --vm-method rand-set --vm-keep --guest 64M --first-touch-ms 1800 --sweep-rate 6M \
    --sweep-jitter-pct 70 --epoch-ms 180 --duration-ms 6820 --seed 1 -o keep.trace
  for pair in "stress-ng-vm4-64M-rand-set.trace.zst gen.trace" "stress-ng-vm4-64M-rand-set-vm-keep.trace.zst keep.trace"; do
    set -- $pair
    local r g
    r=$("$MIGBED" trace stat --json "$rec/$1" | jq '.["pages-written"]')
    g=$("$MIGBED" trace stat --json "$2" | jq '.["pages-written"]')
    echo "$1: recorded $r, generated $g"
    [ $((g * 100)) -ge $((r * 95)) ]
    [ $((g * 100)) -le $((r * 105)) ]
    # nothing before the first touch: epoch 0 holds at most the recorder's few pages
    [ "$(sed -n '/^epoch 0s/,/^epoch [1-9]/p' "$2" | grep -vc '^epoch')" -eq 0 ]
  done
}
