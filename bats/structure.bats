#!/usr/bin/env bats
# The code's structure: the folders' include graph has no cycle (scripts/check-includes.sh),
# and the shared names come from one table (vocab/vocab.h).
load helpers

ROOT=$BATS_TEST_DIRNAME/..

@test "the folders' #include graph has no cycle (vocab lowest, then sim; cli highest)" {
  run "$ROOT/scripts/check-includes.sh"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[-1]}" == "check-includes: no cycle; layers, lowest first: "* ]]
  [[ "$output" == *"vocab -> (nothing)"* ]]
  [[ "$output" == *"sim -> vocab"* ]]
  [[ "${lines[-1]}" == *" cli" ]]
}

@test "check-includes names a cycle and the include that closes it" {
  t=$BATS_TEST_TMPDIR/tree
  mkdir -p "$t/low" "$t/high"
  printf '#include "low/a.h"\n' >"$t/high/b.c"
  printf '#include "high/b.h"\nint x;\n' >"$t/low/a.c"
  : >"$t/low/a.h"; : >"$t/high/b.h"
  printf '#include "high/b.h"\n' >"$t/low/a_test.c"   # tests are left out
  run "$ROOT/scripts/check-includes.sh" "$t"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "${lines[-1]}" == "check-includes: cycle: high -> low -> high (low/a.c includes high/b.h)" ]]
  rm "$t/low/a.c"
  run "$ROOT/scripts/check-includes.sh" "$t"
  [ "$status" -eq 0 ]
  [[ "${lines[-1]}" == "check-includes: no cycle; layers, lowest first: low high" ]]
}

@test "no hand-written copy of the shared name lists outside vocab/ (CM events, WC statuses, message types)" {
  # each list's spelled-out names may appear as a table only in vocab/vocab.h
  for pat in '"RDMA_CM_EVENT_ADDR_RESOLVED"' '"LOC_EEC_OP_ERR"' '"local EE context operation error"' \
             '"cm.addr_resolved"' '"msg.unregister_finished"' '"UNREGISTER FINISHED"' '"unregister_finished"'; do
    run grep -rlF --include='*.c' --include='*.h' --exclude='*_test.c' -- "$pat" \
      "$ROOT/sim" "$ROOT/transport" "$ROOT/faults" "$ROOT/cli" "$ROOT/run"
    echo "$pat: $output"
    [ "$status" -eq 1 ]
  done
}
