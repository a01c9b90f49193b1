#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
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

@test "every source and script file carries an SPDX-License-Identifier: MIT line (scripts/spdx.sh adds them)" {
  [ -f "$ROOT/LICENSE" ]
  run grep -c 'MIT License\|Copyright (c) the migbed authors' "$ROOT/LICENSE"
  [ "$output" -eq 2 ]
  run "$ROOT/scripts/spdx.sh" --check "$ROOT"
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "spdx.sh: each comment syntax, data left alone, idempotent; --check names the files without one" {
  t=$BATS_TEST_TMPDIR/tree
  mkdir -p "$t/src" "$t/fuzz/corpus/x" "$t/bats/data" "$t/build" "$t/.ci"
  printf '/* a - a module */\nint a;\n' >"$t/src/a.c"
  printf '#ifndef B_H\n#endif\n' >"$t/src/b.h"
  printf '#!/usr/bin/env bash\n# s.sh - a script\nset -u\n' >"$t/src/s.sh"
  printf '#!/usr/bin/env bash\n# tool - no extension\nset -u\n' >"$t/src/tool"
  printf '# sourced, no #!\nx=1\n' >"$t/src/lib.bash"
  printf 'all:\n\ttrue\n' >"$t/Makefile"
  printf '{ print }\n' >"$t/src/p.awk"
  printf '#!/usr/bin/env bats\n@test "x" { true; }\n' >"$t/src/t.bats"
  printf '/* SPDX-License-Identifier: MIT */\nint c;\n' >"$t/src/has.c"
  printf 'expect = completed\n' >"$t/src/x.scn"          # data: left alone
  printf 'not a script\n' >"$t/src/notes"
  printf '#!/bin/sh\n' >"$t/fuzz/corpus/x/seed"; printf '#!/bin/sh\n' >"$t/bats/data/d"
  printf 'int z;\n' >"$t/build/z.c"; printf '#!/bin/sh\n' >"$t/.ci/run"
  chmod 755 "$t/src/s.sh" "$t/src/tool"
  run "$ROOT/scripts/spdx.sh" --check "$t"
  echo "$output"
  [ "$status" -eq 1 ]
  [ "$output" = "$(printf '%s: no SPDX-License-Identifier: MIT line\n' Makefile src/a.c src/b.h src/lib.bash \
                     src/p.awk src/s.sh src/t.bats src/tool
                     echo "spdx: 8 file(s) without 'SPDX-License-Identifier: MIT' (scripts/spdx.sh adds it)")" ]
  cp -a "$t" "$t.before"
  run "$ROOT/scripts/spdx.sh" "$t"
  [ "$status" -eq 0 ]
  [ "$(head -1 "$t/src/a.c")" = "/* SPDX-License-Identifier: MIT */" ]
  [ "$(sed -n 2p "$t/src/a.c")" = "/* a - a module */" ]
  [ "$(head -1 "$t/src/b.h")" = "/* SPDX-License-Identifier: MIT */" ]
  [ "$(head -2 "$t/src/s.sh")" = "$(printf '#!/usr/bin/env bash\n# SPDX-License-Identifier: MIT')" ]
  [ "$(sed -n 2p "$t/src/tool")" = "# SPDX-License-Identifier: MIT" ]
  [ "$(sed -n 2p "$t/src/t.bats")" = "# SPDX-License-Identifier: MIT" ]
  [ "$(head -1 "$t/Makefile")" = "# SPDX-License-Identifier: MIT" ]
  [ "$(head -1 "$t/src/lib.bash")" = "# SPDX-License-Identifier: MIT" ]
  [ "$(head -1 "$t/src/p.awk")" = "# SPDX-License-Identifier: MIT" ]
  [ "$(stat -c %a "$t/src/s.sh")" = 755 ]
  [ "$(tail -n +2 "$t/src/a.c")" = "$(cat "$t.before/src/a.c")" ]      # nothing else changed
  [ "$(sed 2d "$t/src/s.sh")" = "$(cat "$t.before/src/s.sh")" ]
  for f in src/has.c src/x.scn src/notes fuzz/corpus/x/seed bats/data/d build/z.c .ci/run; do
    cmp "$t/$f" "$t.before/$f"
  done
  run "$ROOT/scripts/spdx.sh" --check "$t"
  [ "$status" -eq 0 ]
  cp -a "$t" "$t.once"
  run "$ROOT/scripts/spdx.sh" "$t"                       # a second run changes nothing
  run diff -r "$t.once" "$t"
  [ "$status" -eq 0 ]
}

@test "spdx.sh over a copy of the repository's scripts: every --help prints the same text after" {
  t=$BATS_TEST_TMPDIR/copy
  mkdir -p "$t"
  (cd "$ROOT" || exit 1; cp -a --parents scripts/deps.sh scripts/fuzz.sh scripts/record-qemu.sh scripts/spdx.sh \
     topologies/detect topologies/clean topologies/setup coverage/check.sh coverage/errpath.sh "$t"/)
  # the SPDX line out of the originals (they may carry it already), then in again
  for f in $(cd "$t" && find . -type f); do sed -i '/^\(# \|\/\* \)SPDX-License-Identifier: MIT/d' "$t/$f"; done
  declare -A before
  for f in $(cd "$t" && find . -type f | sort); do before[$f]=$(bash "$t/$f" --help 2>&1 || echo "exit $?"); done
  [ "${#before[@]}" -eq 9 ]
  run "$ROOT/scripts/spdx.sh" "$t"
  [ "$status" -eq 0 ]
  for f in "${!before[@]}"; do
    [ "$(sed -n 2p "$t/$f")" = "# SPDX-License-Identifier: MIT" ]
    after=$(bash "$t/$f" --help 2>&1 || echo "exit $?")
    [ "$after" = "${before[$f]}" ] || { echo "$f: --help changed"; diff <(echo "${before[$f]}") <(echo "$after"); return 1; }
    [[ "$after" != *SPDX* ]]
  done
}
