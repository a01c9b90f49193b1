#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Citations resolve inside the repository. Code comments and docs cite the reference texts
# in docs/ by file and heading ("docs/protocol.md, 'Registration'", "docs/verbs-facts.md,
# 'RECV posted to an ERR QP'"); a section sign must follow the name of a file that is in the
# repository; nothing points at the spec documents outside it (they were moved into
# docs/protocol.md and docs/verbs-facts.md). Each check prints FILE:LINE: problem.

load helpers

ROOT=$BATS_TEST_DIRNAME/..
SECT=$(printf '\302\247')      # the section sign, spelled in octal so this file cites nothing
OUTSIDE="shared/"'spec'        # the out-of-repo spec folder, split so this file does not name it

export LC_ALL=C

text_files() {  # ROOT: every text file under ROOT (not .git, not build output, not this
  # file: its fixtures are bad citations on purpose), relative
  (cd "$1" || exit 1; grep -rIl --exclude-dir=.git --exclude-dir='build*' -e '' . | sed 's|^\./||' \
    | grep -v -x 'bats/docs\.bats' | sort)
}

# A section sign must follow the name of a file that exists (relative to the root or to the
# citing file's folder): "docs/protocol.md SECT3" is fine, "spec SECT4.2" and "(SECT3e)" are not.
section_sign_findings() {  # ROOT
  local root=$1 f line text cite name
  while IFS= read -r f; do
    while IFS=: read -r line text; do
      while IFS= read -r cite; do
        name=${cite%"$SECT"}
        name=${name%[[:space:]]}
        if [ -n "$name" ] && { [ -f "$root/$name" ] || [ -f "$root/$(dirname "$f")/$name" ]; }; then
          continue
        fi
        echo "$f:$line: '${cite}' cites a section of a document that is not in the repository"
      done < <(grep -o -E "[^[:space:]\"'\`(]*[[:space:]]?$SECT" <<<"$text")
    done < <(grep -n -F -e "$SECT" "$root/$f")
  done < <(text_files "$root")
}

# "docs/FILE.md, 'Heading'" (more headings may follow: ", 'B'", " and 'B'", " to 'B'"): the
# file exists and has each heading (a Markdown heading line of exactly that text).
heading_findings() {  # ROOT
  local root=$1 f line cite doc h
  while IFS= read -r f; do
    while IFS=: read -r line cite; do
      doc=${cite%%,*}
      if [ ! -f "$root/$doc" ]; then
        echo "$f:$line: $doc is not in the repository"
        continue
      fi
      while IFS= read -r h; do
        h=${h#\'}
        h=${h%\'}
        awk -v h="$h" '/^#+ / { sub(/^#+ /, ""); if ($0 == h) found = 1 } END { exit !found }' \
          "$root/$doc" || echo "$f:$line: $doc has no heading '$h'"
      done < <(grep -o "'[^']*'" <<<"${cite#*,}")
    done < <(grep -n -o -E "docs/[A-Za-z0-9_.-]+\.md, '[^']+'((,| and| to) '[^']+')*" "$root/$f")
  done < <(text_files "$root")
}

outside_findings() {  # ROOT
  (cd "$1" || exit 1; grep -rIn --exclude-dir=.git --exclude-dir='build*' -F -e "$OUTSIDE" . \
    | sed 's|^\./||; s|$| (a document outside the repository)|')
  return 0
}

@test "docs: every section sign follows the name of a file in the repository" {
  run section_sign_findings "$ROOT"
  echo "$output"
  [ "$status" -eq 0 ]
  [ -z "$output" ]
}

@test "docs: every docs/FILE.md, 'Heading' citation names an existing file and heading" {
  run heading_findings "$ROOT"
  echo "$output"
  [ "$status" -eq 0 ]
  [ -z "$output" ]
  # the citations are there to check (the reference texts are cited from the code)
  [ "$(grep -rl --include='*.[ch]' -e "docs/protocol.md, '" "$ROOT/transport" | wc -l)" -ge 4 ]
  [ "$(grep -rl --include='*.[ch]' -e "docs/verbs-facts.md, '" "$ROOT/transport" | wc -l)" -ge 3 ]
}

@test "docs: nothing points at the spec documents outside the repository" {
  run outside_findings "$ROOT"
  echo "$output"
  [ "$status" -eq 0 ]
  [ -z "$output" ]
}

@test "docs: the checks find each kind of bad citation, and pass good ones" {
  t=$BATS_TEST_TMPDIR/tree
  mkdir -p "$t/docs" "$t/src"
  printf '# Ref\n\n## Good\n\n### Also good\n' >"$t/docs/ref.md"
  printf '%s\n' \
    "/* fine: docs/ref.md, 'Good' and 'Also good'; docs/ref.md ${SECT}2; ../docs/ref.md ${SECT}3 */" \
    "/* bad: spec ${SECT}4.2 */" \
    "/* bad: (${SECT}3e) */" \
    "/* bad: docs/ref.md, 'Missing' */" \
    "/* bad: docs/gone.md, 'Good' */" \
    "/* bad: ../$OUTSIDE/x.md */" >"$t/src/a.c"
  run section_sign_findings "$t"
  echo "$output"
  [ "${#lines[@]}" -eq 2 ]
  [[ "${lines[0]}" == "src/a.c:2: 'spec ${SECT}' cites a section"* ]]
  [[ "${lines[1]}" == "src/a.c:3: '${SECT}' cites a section"* ]]
  run heading_findings "$t"
  echo "$output"
  [ "${#lines[@]}" -eq 2 ]
  [ "${lines[0]}" = "src/a.c:4: docs/ref.md has no heading 'Missing'" ]
  [ "${lines[1]}" = "src/a.c:5: docs/gone.md is not in the repository" ]
  run outside_findings "$t"
  echo "$output"
  [ "${#lines[@]}" -eq 1 ]
  [[ "${lines[0]}" == "src/a.c:6:"* ]]
}

@test "docs: every fault site and action migbed knows is in docs/faults.md" {
  run "$MIGBED" faults --json
  [ "$status" -eq 0 ]
  json=$output
  missing=""
  for s in $(jq -r '.sites[].site' <<<"$json"); do
    grep -qF "\`$s\`" "$BATS_TEST_DIRNAME/../docs/faults.md" || missing="$missing $s"
  done
  for a in $(jq -r '.actions[]' <<<"$json"); do
    grep -qE "\`$a(\(|\`)" "$BATS_TEST_DIRNAME/../docs/faults.md" || missing="$missing $a"
  done
  echo "not in docs/faults.md:$missing"
  [ -z "$missing" ]
  # and the list is the vocabulary's: 16 fixed sites, one per CM event (16), one per message type (12)
  [ "$(jq '.sites | length' <<<"$json")" -eq 44 ]
  [ "$(jq '[.sites[].site | select(startswith("cm."))] | length' <<<"$json")" -eq 16 ]
}

@test "faults: text and JSON list the same sites; a stray argument is exit 2" {
  run "$MIGBED" faults
  [ "$status" -eq 0 ]
  [[ "${lines[1]}" == "reg_mr "*"errno"*"(torture: errno(ENOMEM))" ]]
  text_sites=$(grep -cE '^[a-z_.]+ +[a-z_ ]+ +\(torture: ' <<<"$output")
  run "$MIGBED" faults --json
  [ "$(jq '.sites | length' <<<"$output")" -eq "$text_sites" ]
  run "$MIGBED" faults --bogus
  [ "$status" -eq 2 ]
  [[ "$output" == *"unknown argument '--bogus'"* ]]
}

@test "docs: docs/events.md names every event the code writes, each with every key of its fields, and no other event" {
  run "$BATS_TEST_DIRNAME/../scripts/gen-events-doc.sh"
  [ "$status" -eq 0 ]
  listed=$output
  n=$(wc -l <<<"$listed")
  echo "events in the code: $n"
  [ "$n" -ge 50 ]
  doc=$BATS_TEST_DIRNAME/../docs/events.md
  missing=""
  while IFS=$'\t' read -r ev keys files; do
    row=$(grep -F "| \`$ev\` |" "$doc" | head -n 1)
    if [ -z "$row" ]; then missing="$missing $ev($files)"; continue; fi
    for k in $keys; do
      [[ "$row" == *"$k="* ]] || missing="$missing $ev:$k"
    done
  done <<<"$listed"
  echo "missing from docs/events.md:$missing"
  [ -z "$missing" ]
  extra=""
  for ev in $(sed -n 's/^| `\([a-z_.]*\)` |.*/\1/p' "$doc"); do
    grep -q "^$ev"$'\t' <<<"$listed" || extra="$extra $ev"
  done
  echo "in docs/events.md, written by no code:$extra"
  [ -z "$extra" ]
}

@test "events: a completed migration's log holds no alarming line (fail, wait_error, wait_timeout, send_error, warn)" {
  cd "$BATS_TEST_TMPDIR"
  for extra in "" "--pin-all" "--chunk-size 64M" "--src-impl qemu-7.2 --dst-impl qemu-7.2"; do
    # shellcheck disable=SC2086
    run "$MIGBED" run --guest 32M --quiet --events ev $extra
    echo "$extra: $output"
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" == *"status=completed cause=NONE"* ]]
    run grep -E ' (fail|wait_error|wait_timeout|send_error|warn) ' ev
    echo "$output"
    [ "$status" -eq 1 ]
    run grep -c ' wait_disconnected ' ev
    [ "$output" -ge 1 ]
  done
}
