#!/usr/bin/env bats
# The one option table (cli/runcfg.c): README's key table is the generated one (drift fails),
# and every command's --help lists every key the table gives it.

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
  sed 's/^| `--seed N` | run seed |/| `--seed N` | the seed |/' "$ROOT/README.md" >"$BATS_TEST_TMPDIR/README.md"
  run cmp -s "$ROOT/README.md" "$BATS_TEST_TMPDIR/README.md"
  [ "$status" -eq 1 ]
  run "$ROOT/scripts/gen-options-doc.sh" --check "$MIGBED" "$BATS_TEST_TMPDIR/README.md"
  [ "$status" -eq 1 ]
  [[ "$output" == *"run seed"* ]]
}

@test "run, source and dest --help list every key the table gives them" {
  for cmd in run source dest; do
    run keys_of "$cmd"
    [ "$status" -eq 0 ]
    keys=$output
    [ "$(wc -l <<<"$keys")" -ge 40 ]
    run "$MIGBED" "$cmd" --help
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
