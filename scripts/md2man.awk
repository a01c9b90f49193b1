# SPDX-License-Identifier: MIT
# scripts/md2man.awk - the small Markdown subset of docs/*.md as man(7) roff (scripts/gen-man.sh):
# "# title" (dropped: the page's NAME says it), "## H" -> .SH, "### H" -> .SS, ``` blocks -> .nf/.fi,
# "* " / "- " / "1. " items -> .IP, a few non-ASCII characters -> roff names, | tables | -> one .IP per row, **b** -> bold, `code` -> bold,
# *i* -> italic, blank line -> .PP. Hyphens are escaped, so options stay copy-pastable.
function esc(s) {   # and the non-ASCII characters docs/trace-format.md uses, as roff names them
  gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s)
  gsub(/–/, "\\(en", s); gsub(/−/, "\\(mi", s); gsub(/≤/, "\\(<=", s); gsub(/≥/, "\\(>=", s)
  gsub(/⁶⁴/, "^64", s); gsub(/²/, "^2", s); gsub(/⁶/, "^6", s); gsub(/×/, "\\(mu", s)
  return s
}
function inline(s,   out, m) {
  s = esc(s)
  while (match(s, /`[^`]*`/)) { out = out substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 1, RLENGTH - 2) "\\fR"; s = substr(s, RSTART + RLENGTH) }
  s = out s; out = ""
  while (match(s, /\*\*[^*]+\*\*/)) { out = out substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 2, RLENGTH - 4) "\\fR"; s = substr(s, RSTART + RLENGTH) }
  s = out s; out = ""
  while (match(s, /\*[^* ][^*]*\*/)) { out = out substr(s, 1, RSTART - 1) "\\fI" substr(s, RSTART + 1, RLENGTH - 2) "\\fR"; s = substr(s, RSTART + RLENGTH) }
  s = out s
  if (s ~ /^[.']/) s = "\\&" s
  return s
}
function cells(s,   n, a, i, out) {   # | a | b | -> "a: b"
  sub(/^ *\| */, "", s); sub(/ *\| *$/, "", s)
  n = split(s, a, / *\| */)
  out = inline(a[1])
  for (i = 2; i <= n; i++) out = out (i == 2 ? ": " : "; ") inline(a[i])
  return out
}
BEGIN { pre = 0; hdr = 0 }
/^[ ]*```/ { if (!pre) { print ".PP\n.nf\n.RS 4"; pre = 1 } else { print ".RE\n.fi"; pre = 0 } next }
pre { l = $0; sub(/^  /, "", l); l = esc(l); if (l ~ /^[.']/) l = "\\&" l; print l; next }
/^# / { next }
/^## / { print ".SH " toupper(esc(substr($0, 4))); next }
/^### / { print ".SS " esc(substr($0, 5)); next }
/^\|[- |]*\|$/ { next }                                          # a table's rule line
/^\|/ { if (!hdr) { print ".PP\n" inline_bold(cells($0)); hdr = 1 } else print ".IP \\(bu 2\n" cells($0); next }
/^[*-] / { print ".IP \\(bu 2\n" inline(substr($0, 3)); next }
/^  [0-9]+\. / { l = $0; sub(/^ +/, "", l); n = l; sub(/\..*/, "", n); sub(/^[0-9]+\. /, "", l); print ".IP " n ". 4\n" inline(l); next }
/^$/ { hdr = 0; print ".PP"; next }
{ l = $0; sub(/^ +/, "", l); print inline(l) }
function inline_bold(s) { return "\\fB" s "\\fR" }
