#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/lint-tests.sh [FILE...] - reject test code that cannot fail or that waits for a time.
#
# Default files: bats/**/*.bats, bats/*.bash, topologies/qemu/qemu-lib.bash.
#   sleep   a fixed sleep standing for "the other side is ready" or "the run is under way"
#           races under load. Wait for the event (bats/helpers.bash: start_dest, wait_paused,
#           wait_until). Allowed only on a line marked `# allow-sleep: REASON` (the poll step
#           of a bounded wait); the allow-list is printed, so it is documented in one place.
# In .bats files, also a check that cannot fail (bash's errexit ignores both; bats/lint.bats):
#   !       a negated command as a statement (`! grep -q x f`, also `A && ! B`): it never fails
#           the test. Write `run cmd` then `[ "$status" -ne 0 ]`, or `if cmd; then false; fi`.
#   &&      `A && B` as a statement: a failing A ends the list with no error. Split it into
#           two lines, or write `if A; then B; fi`. Not a finding: inside if/elif/while/until
#           conditions, [[ ]], $( ), a list that ends in `|| C` (`wait "$p" && rc=0 || rc=$?`),
#           or one whose last command is skip, return, break, continue or exit (a guard).
#   Allowed only on a line marked `# lint-ok: REASON` (listed like the allowed sleeps).
# Exit 0 clean, 1 with one "FILE:LINE: problem" line per finding.
set -u -o pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  set -- $(find bats -name '*.bats' | sort) $(ls bats/*.bash) topologies/qemu/qemu-lib.bash
fi
# The errexit check (.bats files): FILE:LINE findings, then "lint-tests-counts FINDINGS ALLOWED".
read -r -d '' errexit_awk <<'AWK' || true
# FILE:LINE findings for checks that errexit ignores; see the header of scripts/lint-tests.sh.
# A scanner per character (quotes, $( ), ${ }, [[ ]], (( )), here-documents, comments) makes a
# skeleton of each logical line (continuations joined): the top-level shell only, every quoted
# or substituted part one word "S". The skeleton is cut into and-or lists and each is judged.
function reset_file() {
  sp = 0; stk[0] = "T"; hd_n = 0; hd_i = 0; in_hd = 0; cond = 0
  skel = ""; lstart = 0; lraw = ""; lok = 0
}
function push(c) { if (sp == 0) skel = skel " S "; stk[++sp] = c }
function wordstart(s, i,   p) { if (i == 1) return 1; p = substr(s, i - 1, 1); return p ~ /[ \t;&|()]/ }
# scan one physical line into skel; sets bs (ends in a backslash-newline)
function scan(s,   i, L, c, n1, n2, ctx, j, q, w) {
  L = length(s); bs = 0
  for (i = 1; i <= L; i++) {
    c = substr(s, i, 1); n1 = substr(s, i + 1, 1); n2 = substr(s, i + 1, 2); ctx = stk[sp]
    if (ctx == "SQ") { if (c == "'") sp--; continue }
    if (ctx == "AQ") { if (c == "\\") i++; else if (c == "'") sp--; continue }
    if (ctx == "BT") { if (c == "\\") i++; else if (c == "`") sp--; continue }
    if (ctx == "DQ" || ctx == "BR") {
      if (c == "\\") i++
      else if (ctx == "DQ" && c == "\"") sp--
      else if (ctx == "BR" && c == "}") sp--
      else if (ctx == "BR" && c == "\"") push("DQ")
      else if (c == "$" && n2 == "((") { push("AR"); i += 2 }
      else if (c == "$" && n1 == "(") { push("SUB"); i++ }
      else if (c == "$" && n1 == "{") { push("BR"); i++ }
      else if (c == "`") push("BT")
      continue
    }
    if (ctx == "AR" || ctx == "AP") {
      if (c == "(") push("AP")
      else if (ctx == "AP" && c == ")") sp--
      else if (c == ")" && n1 == ")") { sp--; i++ }
      continue
    }
    # code: the top level (T), a substitution (SUB, PAR: a parenthesis in it) or [[ ]] (DBR)
    if (c == "\\") { if (i == L) bs = 1; else if (sp == 0) skel = skel c n1; i++; continue }
    if (c == "'") { push("SQ"); continue }
    if (c == "\"") { push("DQ"); continue }
    if (c == "$" && n1 == "'") { push("AQ"); i++; continue }
    if (c == "$" && n2 == "((") { push("AR"); i += 2; continue }
    if (c == "$" && n1 == "(") { push("SUB"); i++; continue }
    if (c == "$" && n1 == "{") { push("BR"); i++; continue }
    if (c == "`") { push("BT"); continue }
    if (ctx == "DBR") {
      if (c == "]" && n1 == "]") { sp--; i++ }
      continue
    }
    if ((c == "<" || c == ">") && n1 == "(") { push("SUB"); i++; continue }
    if (c == "<" && n1 == "<" && substr(s, i + 2, 1) == "<") { if (sp == 0) skel = skel "<<<"; i += 2; continue }
    if (c == "<" && n1 == "<") {        # a here-document: its body (the lines after this one) is skipped
      j = i + 2; hd_strip[hd_n + 1] = 0
      if (substr(s, j, 1) == "-") { hd_strip[hd_n + 1] = 1; j++ }
      while (substr(s, j, 1) ~ /[ \t]/) j++
      q = substr(s, j, 1); w = ""
      if (q == "'" || q == "\"") { j++; while (j <= L && substr(s, j, 1) != q) w = w substr(s, j++, 1) }
      else { if (q == "\\") j++; while (j <= L && substr(s, j, 1) ~ /[A-Za-z0-9_]/) w = w substr(s, j++, 1); j-- }
      if (w != "") hd_word[++hd_n] = w
      if (sp == 0) skel = skel " << S "
      i = j; continue
    }
    if (c == "#" && wordstart(s, i)) break
    if (c == "[" && n1 == "[" && wordstart(s, i) && substr(s, i + 2, 1) ~ /[ \t]|^$/) { push("DBR"); i++; continue }
    if (c == "(" && n1 == "(" && wordstart(s, i)) { push("AR"); i++; continue }
    if (ctx == "SUB" || ctx == "PAR") {
      if (c == "(") stk[++sp] = "PAR"
      else if (c == ")") sp--
      continue
    }
    skel = skel c
  }
}
function finding(msg) {
  if (lok) { oks++; return }
  printf "%s:%d: %s: %s\n", fname, lstart, msg, lraw
  nbad++
}
function endlist() {
  if (!cond && (haslist || neg)) {
    if (neg)
      finding("negated command as a statement (errexit ignores `! cmd`: use `run cmd` and check $status)")
    if (ops ~ /&&/ && ops !~ /\|\|$/ && lastfirst !~ /^(skip|return|break|continue|exit)$/)
      finding("`A && B` as a statement (errexit ignores a failing A: split it in two, or use if)")
  }
  ops = ""; neg = 0; lastfirst = ""; haslist = 0; start = 1; inpipe = 0
}
# cut a logical line's skeleton into and-or lists
function judge(s,   n, i, L, c, two, w, k, t) {
  n = 0; i = 1; L = length(s)
  while (i <= L) {
    c = substr(s, i, 1); two = substr(s, i, 2)
    if (c ~ /[ \t]/) { i++; continue }
    if (two == "&&" || two == "||" || two == ";;") { tok[++n] = two; i += 2; continue }
    if (two == "()") { i += 2; continue }                       # NAME() { ...
    if (c == ";" || c == "(" || c == ")" || c == "|" || (c == "&" && substr(s, i + 1, 1) != ">")) {
      tok[++n] = c; i++; continue
    }
    w = ""
    while (i <= L) {
      c = substr(s, i, 1)
      if (c ~ /[ \t;()|]/) break
      if (c == "&" && w !~ /[<>]$/ && w != "" ) break        # 2>&1, >&2, 3>&- stay words
      w = w c; i++
    }
    tok[++n] = w
  }
  endlist()
  for (k = 1; k <= n; k++) {
    t = tok[k]
    if (t == ";" || t == ";;" || t == "&" || t == "(" || t == ")") { endlist(); continue }
    if (t == "&&" || t == "||") { ops = ops " " t; start = 1; lastfirst = ""; continue }
    if (t == "|") { start = 1; inpipe = 1; continue }
    if (!start) continue
    if (t == "if" || t == "elif" || t == "while" || t == "until") { endlist(); cond = 1; continue }
    if (t == "then" || t == "do") { endlist(); cond = 0; continue }
    if (t == "else" || t == "{" || t == "}" || t == "fi" || t == "done" || t == "esac") { endlist(); continue }
    if (t == "!") { if (!inpipe) neg = 1; continue }
    if (!inpipe) lastfirst = t
    start = 0; inpipe = 0; haslist = 1
  }
  endlist()
}
FNR == 1 { reset_file(); fname = FILENAME }
{
  raw = $0; sub(/\r$/, "", raw)
  if (in_hd) {
    t = raw; if (hd_strip[hd_i]) sub(/^\t+/, "", t)
    if (t == hd_word[hd_i] && ++hd_i > hd_n) { in_hd = 0; hd_n = 0 }
    next
  }
  if (lstart == 0) { lstart = FNR; lraw = raw; sub(/^[ \t]+/, "", lraw); lok = 0 }
  if (raw ~ /# lint-ok: [^ ]/) lok = 1
  scan(raw)
  t = skel; sub(/[ \t]+$/, "", t)
  if (sp > 0 || bs || t ~ /(&&|\|\||\|)$/) skel = skel " "
  else { judge(skel); skel = ""; lstart = 0 }
  if (hd_n > 0) { in_hd = 1; hd_i = 1 }
}
END { printf "lint-tests-counts %d %d\n", nbad, oks }
AWK
bad=0 allowed=0
for f in "$@"; do
  n=0
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    code=${line%%#*}    # the code before a comment (a '#' in a string ends it early: fine here)
    case $line in *'# allow-sleep: '?*) allowed=$((allowed + 1)); continue ;; '@test '*) continue ;; esac
    if [[ "$code" =~ (^|[^a-zA-Z_-])sleep([[:space:]]|$) ]]; then
      echo "$f:$n: fixed sleep (wait for the event instead; see bats/helpers.bash): $line"
      bad=$((bad + 1))
    fi
  done <"$f"
done
bats_files=()
for f in "$@"; do case $f in *.bats) bats_files+=("$f") ;; esac; done
lint_ok=0
if [ ${#bats_files[@]} -gt 0 ]; then
  out=$(awk "$errexit_awk" "${bats_files[@]}") || { echo "lint-tests: awk failed on ${bats_files[*]}" >&2; exit 2; }
  while IFS= read -r line; do
    case $line in
    'lint-tests-counts '*) read -r _ nb lint_ok <<<"$line"; bad=$((bad + nb)) ;;
    *) echo "$line" ;;
    esac
  done <<<"$out"
fi
if [ "${LINT_VERBOSE:-0}" = 1 ] || [ $bad -gt 0 ]; then
  echo "lint-tests: allowed sleeps (poll steps of bounded waits):"
  grep -n '# allow-sleep: ' "$@" | sed 's/^/  /'
  if [ "$lint_ok" -gt 0 ]; then
    echo "lint-tests: allowed errexit exceptions:"
    grep -n '# lint-ok: ' "${bats_files[@]}" | sed 's/^/  /'
  fi
fi
[ "$lint_ok" -eq 0 ] || echo "lint-tests: $lint_ok check(s) allowed by '# lint-ok: REASON'"
echo "lint-tests: $# files, $bad finding(s), $allowed allowed sleep(s)"
[ $bad -eq 0 ]
