#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# migbed trace stat / trace check: the corpus in bats/data/traces (good/ must pass, every bad/
# file names its one defect in a first-line "# expect: LINE: keyword" comment), .zst handling,
# stat's numbers and JSON, and a round trip through trace gen.

load helpers
bats_require_minimum_version 1.5.0

CORPUS=$BATS_TEST_DIRNAME/data/traces

setup() {
  cd "$BATS_TEST_TMPDIR"
}


# compress $1 to $2 with the zstd tool, or skip
zstd_file() {
  command -v zstd >/dev/null || skip "zstd tool not installed"
  zstd -q -c "$1" >"$2"
}

@test "trace stat --help and trace check --help: usage on stdout, exit 0" {
  run --separate-stderr "$MIGBED" trace stat --help
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  [[ "$output" == *"usage: migbed trace stat FILE [--json]"* ]]
  for word in --json "pages written" "unique pages" "dirty rate" 100ms 1s 10s .zst "exit status"; do
    [[ "$output" == *"$word"* ]] || { echo "stat --help lacks '$word'"; false; }
  done
  run --separate-stderr "$MIGBED" trace check -h
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  [[ "$output" == *"usage: migbed trace check FILE"* ]]
  [[ "$output" == *"FILE:LINE: problem"* ]]
  [[ "$output" == *"ok, N epochs"* ]]
}

@test "trace stat/check: bad usage exits 2 with a message and nothing on stdout" {
  local good=$CORPUS/good/idle.trace
  for args in "stat" "check" "stat --bogus $good" "check --json $good" "stat $good $good" \
              "check $good extra"; do
    # shellcheck disable=SC2086
    run --separate-stderr "$MIGBED" trace $args
    echo "$args -> $status: $stderr"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [[ "$stderr" == "migbed: trace "* ]]
  done
  run --separate-stderr "$MIGBED" trace stat --bogus "$good"
  [[ "$stderr" == *"unknown option '--bogus'"* ]]
  run --separate-stderr "$MIGBED" trace check
  [[ "$stderr" == *"missing FILE"* ]]
}

@test "trace check: every good corpus trace is ok" {
  local n=0
  for f in "$CORPUS"/good/*.trace; do
    run --separate-stderr "$MIGBED" trace check "$f"
    echo "$f: $status $output $stderr"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    [[ "$output" =~ ^"$f: ok, "[0-9]+" epoch" ]]
    n=$((n + 1))
  done
  [ "$n" -ge 3 ]
  run "$MIGBED" trace check "$CORPUS/good/incident-example.trace"
  [ "$output" = "$CORPUS/good/incident-example.trace: ok, 3 epochs" ]
}

@test "trace check: each bad corpus trace exits 2 naming its one defect as FILE:LINE: keyword" {
  local n=0
  for f in "$CORPUS"/bad/*.trace; do
    read_expect "$f"
    run --separate-stderr "$MIGBED" trace check "$f"
    echo "$f (want $exp_line: $exp_word) -> $status"
    echo "$stderr"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    grep -F -- "$f:$exp_line: " <<<"$stderr" | grep -qF -- "$exp_word"
    # exactly one defect (plus the summary line)
    [ "$(grep -cF -- "$f:" <<<"$stderr" | head -1)" -eq 2 ]
    [[ "$stderr" == *"migbed: trace check: $f: 1 defect"* ]]
    n=$((n + 1))
  done
  [ "$n" -ge 15 ]
}

@test "trace stat: each bad corpus trace exits 2, prints nothing on stdout, the defect on stderr" {
  for f in "$CORPUS"/bad/*.trace; do
    read_expect "$f"
    run --separate-stderr "$MIGBED" trace stat "$f"
    echo "$f -> $status: $stderr"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [[ "$stderr" == *"$f:$exp_line: "*"$exp_word"* ]]
    run --separate-stderr "$MIGBED" trace stat --json "$f"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
  done
}

@test "trace stat: the documented numbers of good/steady-writer.trace" {
  run --separate-stderr "$MIGBED" trace stat "$CORPUS/good/steady-writer.trace"
  echo "$output"
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  grep -qE '^page size +4K \(4096 bytes\)$' <<<"$output"
  grep -qE '^  pc\.ram +64M \(67108864 bytes, 16384 pages\)$' <<<"$output"
  grep -qE '^duration +1s$' <<<"$output"
  grep -qE '^epochs +10$' <<<"$output"
  grep -qE '^pages written +2560$' <<<"$output"
  grep -qE '^unique pages +256 \(1\.000 MiB\)$' <<<"$output"
  grep -qE '^bytes written +10485760 \(10\.000 MiB\)$' <<<"$output"
  grep -qE '^dirty rate +10\.000 MiB/s' <<<"$output"
  grep -qE '^  100ms +10 +256\.0 +1\.000 +256 +1\.000$' <<<"$output"
  grep -qE '^  1s +1 +256\.0 +1\.000 +256 +1\.000$' <<<"$output"
  [[ "$output" != *$'\n  10s '* ]]     # a 10 s window is longer than the 1 s trace
}

@test "trace stat: overlapping ranges count in pages written, once in unique pages" {
  run "$MIGBED" trace stat --json "$CORPUS/good/hugepages-multiblock.trace"
  echo "$output"
  [ "$status" -eq 0 ]
  # 4096 + (11 + 11 + 1 + 1) + 8 written; 4096 + 1 + 8 unique (pc.ram 10-25 already written)
  [ "$(jq '."pages-written"' <<<"$output")" -eq 4128 ]
  [ "$(jq '."unique-pages"' <<<"$output")" -eq 4105 ]
  [ "$(jq '."page-size"' <<<"$output")" -eq 2097152 ]
  jq -e '.blocks | any(. == {"name": "/rom:etc/acpi/tables", "size-bytes": 2097152, "pages": 1})' <<<"$output"
}

@test "trace stat --json: one valid JSON object, keys in a fixed order, no trailing output" {
  run --separate-stderr "$MIGBED" trace stat --json "$CORPUS/good/incident-example.trace"
  echo "$output"
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  [ "$(wc -l <<<"$output")" -eq 1 ]
  jq -s -e 'length == 1 and (.[0] | type == "object")' <<<"$output"   # one JSON object, nothing after it
  keys=$(jq -r '[paths | last | strings] | join(" ")' <<<"$output")   # every key, in document order
  [ "$keys" = "file version page-size blocks name size-bytes pages name size-bytes pages duration-ns epochs pages-written unique-pages bytes-written dirty-rate-mib-per-s working-set window-ns windows mean-pages mean-mib max-pages max-mib window-ns windows mean-pages mean-mib max-pages max-mib" ]
  [ "$(jq '."duration-ns"' <<<"$output")" -eq 2000000000 ]
  [ "$(jq .epochs <<<"$output")" -eq 3 ]
}

@test "trace check/stat: a .zst trace reads like the plain one; a truncated .zst is refused" {
  cp "$CORPUS/good/incident-example.trace" x.trace
  zstd_file x.trace x.trace.zst
  run "$MIGBED" trace check x.trace.zst
  [ "$status" -eq 0 ]
  [ "$output" = "x.trace.zst: ok, 3 epochs" ]
  plain=$("$MIGBED" trace stat --json x.trace)
  zst=$("$MIGBED" trace stat --json x.trace.zst)
  jq -n -e --argjson p "$plain" --argjson z "$zst" '($p | del(.file)) == ($z | del(.file))'   # equal but for "file"
  size=$(stat -c %s x.trace.zst)
  head -c $((size - 8)) x.trace.zst >cut.trace.zst
  run --separate-stderr "$MIGBED" trace check cut.trace.zst
  echo "$stderr"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"cut.trace.zst:"*": truncated zstd frame"* ]]
  run --separate-stderr "$MIGBED" trace stat cut.trace.zst
  [ "$status" -eq 2 ]
  [ -z "$output" ]
  [[ "$stderr" == *"truncated zstd frame"* ]]
}

@test "trace check: zstd data in a plain-named file, and plain text named .zst, are named as such" {
  cp "$CORPUS/good/idle.trace" plain.trace
  zstd_file plain.trace packed.trace.zst
  cp packed.trace.zst packed.trace
  cp plain.trace text.trace.zst
  run --separate-stderr "$MIGBED" trace check packed.trace
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"packed.trace:1: zstd-compressed data, but the file name does not end in .zst"* ]]
  run --separate-stderr "$MIGBED" trace check text.trace.zst
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"text.trace.zst:"*"bad zstd data"* ]]
}

@test "trace check: a line over 1 MiB is refused, and checking goes on after it" {
  {
    printf 'migbed-trace 1\npage-size 4K\nblock pc.ram 1G\nduration 1s\nepoch 0s\npc.ram'
    head -c 1100000 /dev/zero | tr '\0' '7'
    printf '\npc.ram 1\nepoch 0s\n'
  } >long.trace
  run --separate-stderr "$MIGBED" trace check long.trace
  echo "$stderr"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"long.trace:6: line too long"* ]]
  [[ "$stderr" == *"long.trace:8: epoch time 0s is not after the previous epoch"* ]]
}

@test "trace check: every defect of one file is reported, each with its own line" {
  cat >many.trace <<'EOF'
migbed-trace 1
page-size 4K
block pc.ram 1M
block pc.ram 1M
duration 1s
pc.ram 1
epoch 10ms
pc.ram 1 256 9-3
vga 1
epoch 5ms
epoch 1s
bogus stuff
EOF
  run --separate-stderr "$MIGBED" trace check many.trace
  echo "$stderr"
  [ "$status" -eq 2 ]
  for want in "many.trace:4: duplicate block" "many.trace:6: range line before any epoch" \
              "many.trace:8: page 256 out of range" "many.trace:8: bad range '9-3'" \
              "many.trace:9: unknown block 'vga'" "many.trace:10: epoch time 5ms is not after" \
              "many.trace:11: epoch time 1s is not before the duration" \
              "many.trace:12: unknown keyword 'bogus'" "many.trace: 8 defects"; do
    [[ "$stderr" == *"$want"* ]] || { echo "missing: $want"; false; }
  done
}

@test "trace check: CRLF line endings, tabs and trailing comments are accepted" {
  sed 's/$/\r/' "$CORPUS/good/hugepages-multiblock.trace" >crlf.trace
  grep -q $'\r$' crlf.trace
  run "$MIGBED" trace check crlf.trace
  [ "$status" -eq 0 ]
  [ "$output" = "crlf.trace: ok, 4 epochs" ]
}

@test "trace check/stat: a missing file exits 2 naming it" {
  run --separate-stderr "$MIGBED" trace check nope.trace
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"nope.trace: cannot open: No such file"* ]]
  run --separate-stderr "$MIGBED" trace stat nope.trace
  [ "$status" -eq 2 ]
  [ -z "$output" ]
  [[ "$stderr" == *"nope.trace: cannot open"* ]]
}

@test "trace gen -> check -> stat round trip, plain and .zst agree" {
  run "$MIGBED" trace gen --pattern rand-set --guest 64M --duration-ms 1000 --seed 1 -o g.trace
  [ "$status" -eq 0 ]
  "$MIGBED" trace gen --pattern rand-set --guest 64M --duration-ms 1000 --seed 1 -o g.trace.zst
  run "$MIGBED" trace check g.trace
  [ "$status" -eq 0 ]
  [ "$output" = "g.trace: ok, 100 epochs" ]
  run "$MIGBED" trace check g.trace.zst
  [ "$status" -eq 0 ]
  [ "$output" = "g.trace.zst: ok, 100 epochs" ]
  plain=$("$MIGBED" trace stat --json g.trace)
  zst=$("$MIGBED" trace stat --json g.trace.zst)
  jq -n -e --argjson p "$plain" --argjson z "$zst" '($p | del(.file)) == ($z | del(.file))'   # equal but for "file"
  [ "$(jq -c .blocks <<<"$plain")" = '[{"name":"pc.ram","size-bytes":67108864,"pages":16384}]' ]
  [ "$(jq '."duration-ns"' <<<"$plain")" -eq 1000000000 ]
  [ "$(jq .epochs <<<"$plain")" -eq 100 ]
  # pages written agrees with an independent count of the ranges
  want=$(awk '$1 == "pc.ram" { for (i = 2; i <= NF; i++) { n = split($i, a, "-");
              s += (n == 2 ? a[2] - a[1] + 1 : 1) } } END { print s }' g.trace)
  [ "$(jq '."pages-written"' <<<"$plain")" -eq "$want" ]
}
