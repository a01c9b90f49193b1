#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# scripts/lint-tests.sh's errexit rules: a check bash's errexit ignores (a negated command, the
# left side of `A && B`) is a FILE:LINE finding in a .bats file; conditions, guards, quoted
# text, here-documents and comments are not; `# lint-ok: REASON` allows one. (The fixed-wait
# rule is tested in readiness.bats.)

LINT=$BATS_TEST_DIRNAME/../scripts/lint-tests.sh

@test "lint: the tests in bats/ hold no check that cannot fail" {
  run "$LINT"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[-1]}" == "lint-tests: "*" files, 0 finding(s), "*" allowed sleep(s)" ]]
}

@test "lint: the tests generated from the scenarios (model lane and the verbs lane's replay) hold none either" {
  g=$BATS_TEST_TMPDIR/gen
  mkdir -p "$g"
  run "$BATS_TEST_DIRNAME/../scripts/gen-scenario-bats.sh" "$BATS_TEST_DIRNAME/scenarios" "$g/scenarios.bats"
  [ "$status" -eq 0 ]
  run "$BATS_TEST_DIRNAME/../scripts/gen-scenario-bats.sh" "$BATS_TEST_DIRNAME/scenarios" "$g/verbs-faults.bats" \
    --backend verbs --mem bytes
  [ "$status" -eq 0 ]
  [ "$(grep -c '^@test' "$g/scenarios.bats")" -gt 100 ]
  run "$LINT" "$g/scenarios.bats" "$g/verbs-faults.bats"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "${lines[-1]}" == "lint-tests: 2 files, 0 finding(s), 0 allowed sleep(s)" ]]
}

@test "lint: each way to write a check that cannot fail is a FILE:LINE finding" {
  f=$BATS_TEST_TMPDIR/bad.bats
  printf '%s\n' \
    '@test "bad" {' \
    '  ! grep -q x f' \
    '  [ -e a ] && [ -e b ]' \
    '  [[ -e a ]] && [[ -e b ]]' \
    '  true && ! grep -q x f' \
    '  for g in a b; do [ -e "$g" ] && [ -s "$g" ]; done' \
    '  [ -e a ] &&' \
    '    [ -e b ]' \
    '  { [ -e a ] && [ -e b ]; } 2>/dev/null' \
    '}' \
    'gone() {' \
    '  ! grep -q x "$1"' \
    '  echo checked' \
    '}' >"$f"
  run "$LINT" "$f"
  echo "$output"
  [ "$status" -eq 1 ]
  neg='negated command as a statement (errexit ignores `! cmd`'
  and='`A && B` as a statement (errexit ignores a failing A'
  for want in "2: $neg" "3: $and" "4: $and" "5: $neg" "5: $and" "6: $and" "7: $and" "9: $and" "12: $neg"; do
    [[ "$output" == *"$f:$want"* ]] || { echo "missing: $f:$want"; false; }
  done
  [[ "$output" == *"$f:2: $neg"*': ! grep -q x f'* ]]     # the line itself follows
  [ "$(grep -c "^$f:[0-9]*: " <<<"$output")" -eq 9 ]
  [[ "${lines[-1]}" == "lint-tests: 1 files, 9 finding(s), 0 allowed sleep(s)" ]]
}

@test "lint: conditions, guards, quoted text, here-documents and comments are no finding; lint-ok allows one" {
  f=$BATS_TEST_TMPDIR/good.bats
  printf '%s\n' \
    '@test "good" {' \
    '  if ! grep -q x f; then false; fi' \
    '  while ! [ -e a ]; do break; done' \
    '  [ ! -e a ]' \
    '  [[ -e a && ! -e b ]]' \
    '  n=$([ -e a ] && echo 1 || echo 0)' \
    '  wait "$p" && rc=0 || rc=$?' \
    '  [ -e a ] && skip "a guard"' \
    "  awk '\$1 == \"a\" && \$2 == \"b\" { print }' f" \
    "  x='a && b" \
    "  ! c'" \
    "  cat >f <<'EOF'" \
    '! not code' \
    'a && b' \
    'EOF' \
    '  # ! a comment && more' \
    '  run ! grep -q x f' \
    '  cmd >f 2>&1 &' \
    '  [ -e a ] && [ -e b ]   # lint-ok: planted, to show the marker' \
    '  if [ -e a ] &&' \
    '     [ -e b ]; then true; fi' \
    '  x="$(a && b)"; y=`c && ! d`' \
    '}' \
    'pred() { [ -e "$1" ] && return 0; return 1; }' >"$f"
  run "$LINT" "$f"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[-2]}" = "lint-tests: 1 check(s) allowed by '# lint-ok: REASON'" ]
  [ "${lines[-1]}" = "lint-tests: 1 files, 0 finding(s), 0 allowed sleep(s)" ]
  # the exceptions are listed, like the allowed poll steps
  LINT_VERBOSE=1 run "$LINT" "$f"
  [[ "$output" == *"lint-tests: allowed errexit exceptions:"*"19:  [ -e a ] && [ -e b ]   # lint-ok: planted"* ]]
}

@test "lint: the errexit rules apply to .bats files only" {
  printf '%s\n' 'helper() {' '  ! grep -q x "$1"' '}' >"$BATS_TEST_TMPDIR/lib.bash"
  run "$LINT" "$BATS_TEST_TMPDIR/lib.bash"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[-1]}" = "lint-tests: 1 files, 0 finding(s), 0 allowed sleep(s)" ]
}
