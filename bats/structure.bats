#!/usr/bin/env bats
# The code's structure: the folders' include graph has no cycle (scripts/check-includes.sh),
# and the shared names come from one table (vocab/vocab.h).
load helpers

ROOT=$BATS_TEST_DIRNAME/..

@test "the folders' #include graph has no cycle (vocab sim transport faults run cli fuzz scripts)" {
  run "$ROOT/scripts/check-includes.sh"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[-1]}" == "check-includes: no cycle; layers, lowest first: vocab sim transport faults run cli fuzz scripts" ]]
  [[ "$output" == *"vocab -> (nothing)"* ]]
  [[ "$output" == *"sim -> vocab"* ]]
  # the seam depends on the leaves only: it declares the fault hook, faults/ implements it
  [[ "$output" == *$'\n'"transport -> sim vocab"$'\n'* ]]
  [[ "$output" == *$'\n'"faults -> "*"transport"* ]]
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

@test "no hand-written copy of the shared name lists outside vocab/ (CM events, WC statuses, message types, fault sites)" {
  # each list's spelled-out names may appear as a table only in vocab/vocab.h
  for pat in '"RDMA_CM_EVENT_ADDR_RESOLVED"' '"LOC_EEC_OP_ERR"' '"local EE context operation error"' \
             '"cm.addr_resolved"' '"msg.unregister_finished"' '"UNREGISTER FINISHED"' '"unregister_finished"' \
             '"post_send.write"' '"qp_error"' '"wr_id"'; do
    run grep -rlF --include='*.c' --include='*.h' --exclude='*_test.c' -- "$pat" \
      "$ROOT/sim" "$ROOT/transport" "$ROOT/faults" "$ROOT/cli" "$ROOT/run"
    echo "$pat: $output"
    [ "$status" -eq 1 ]
  done
}

# code_hits PAT DIR...: the non-test C lines under DIR... holding the fixed string PAT outside
# a comment (a line that starts a comment, or PAT after a "/*", is a comment)
code_hits() {
  local pat=$1; shift
  grep -rnF --include='*.c' --include='*.h' --exclude='*_test.c' -- "$pat" "$@" |
    grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/[*]|[*])' | grep -vF "/*" | grep -F -- "$pat"
}

@test "sides are enum vocab_side: no side spelled as a string in code outside vocab/" {
  # a side becomes text only where it is printed or parsed, through vocab/vocab.h's table
  # (comments may name them). The CLI's commands `source` and `dest` are not sides.
  for pat in '"src"' '"dst"'; do
    run code_hits "$pat" "$ROOT/sim" "$ROOT/transport" "$ROOT/faults" "$ROOT/cli" "$ROOT/run"
    echo "$pat: $output"
    [ "$status" -eq 1 ]
  done
  for pat in '"source"' '"dest"'; do
    run code_hits "$pat" "$ROOT/sim" "$ROOT/transport" "$ROOT/faults" "$ROOT/run"
    echo "$pat: $output"
    [ "$status" -eq 1 ]
  done
  # and no string compare of a side at the seam or in the fault plans
  run grep -rnE --include='*.c' --exclude='*_test.c' 'strcmp\([^)]*side' "$ROOT/transport" "$ROOT/faults"
  echo "$output"
  [ "$status" -eq 1 ]
}
