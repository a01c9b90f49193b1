#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# migbed trace gen -o: where the trace goes (sim/outfile.h). '-' is standard output; a symlink
# stays a link (its target is replaced); a device or FIFO is written in place; a path that
# cannot be written is refused before anything is generated (exit 2, the path named, nothing
# written).

load helpers
bats_require_minimum_version 1.5.0

setup() {
  cd "$BATS_TEST_TMPDIR"
}

gen() {  # OUT [extra options]
  local out=$1
  shift
  "$MIGBED" trace gen --pattern random --guest 4M --duration-ms 50 --seed 3 -o "$out" "$@"
}

@test "trace-output: -o - writes the trace to standard output, byte for byte the file's" {
  run --separate-stderr gen -
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"wrote standard output"* ]]
  [ ! -e ./- ]
  [ ! -e ./-.tmp ]
  gen - >stdout.trace
  run "$MIGBED" trace check stdout.trace
  echo "$output"
  [ "$status" -eq 0 ]
  gen ref.trace
  cmp stdout.trace ref.trace
}

@test "trace-output: -o - is plain text, the same trace as a .zst file decompressed" {
  gen - >plain.out
  head -1 plain.out | grep -qx 'migbed-trace 1'
  gen ref.trace.zst
  zstd -dc ref.trace.zst | cmp - plain.out
}

@test "trace-output: a symlink to a regular file stays a link, the content lands at its target" {
  mkdir real
  echo old >real/t.trace
  ln -s real/t.trace link.trace
  run --separate-stderr gen link.trace
  [ "$status" -eq 0 ]
  [ -L link.trace ]
  [ "$(readlink link.trace)" = real/t.trace ]
  [ ! -e link.trace.tmp ]
  [ ! -e real/t.trace.tmp ]
  gen ref.trace
  cmp real/t.trace ref.trace
}

@test "trace-output: a FIFO is written in place, not replaced" {
  mkfifo pipe.trace
  cat pipe.trace >got.trace &
  reader=$!
  run --separate-stderr gen pipe.trace
  wait "$reader"
  [ "$status" -eq 0 ]
  [ -p pipe.trace ]
  [ ! -e pipe.trace.tmp ]
  gen ref.trace
  cmp got.trace ref.trace
}

@test "trace-output: a character device (/dev/null) is written in place" {
  run --separate-stderr gen /dev/null
  [ "$status" -eq 0 ]
  [ -c /dev/null ]
  [ ! -e /dev/null.tmp ]
}

@test "trace-output: a missing directory is exit 2, the path named, nothing written" {
  run --separate-stderr gen /nonexistent/dir/x.trace
  echo "$stderr"
  [ "$status" -eq 2 ]
  [ -z "$output" ]
  [[ "$stderr" == *"/nonexistent/dir/x.trace: cannot write: No such file or directory"* ]]
  [ ! -e /nonexistent ]
}

@test "trace-output: a directory target is exit 2, the directory left as it was" {
  mkdir out.d
  run --separate-stderr gen out.d
  echo "$stderr"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"out.d: cannot write: Is a directory"* ]]
  [ -d out.d ]
  [ -z "$(ls -A out.d)" ]
  [ ! -e out.d.tmp ]
}

@test "trace-output: a directory without write permission is exit 2, nothing written" {
  if [ "$(id -u)" -eq 0 ]; then skip "root writes anywhere"; fi
  mkdir ro
  chmod 555 ro
  run --separate-stderr gen ro/x.trace
  chmod 755 ro
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"ro/x.trace: cannot write: Permission denied"* ]]
  [ -z "$(ls -A ro)" ]
}
