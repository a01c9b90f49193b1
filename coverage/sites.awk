# SPDX-License-Identifier: MIT
# coverage/sites.awk - the error-handling sites of the C sources and whether the tests took
# them (part of coverage/errpath.sh).
#
#   awk -v lcov=TRACEFILE -v root=REPO -f sites.awk DIR/FILE.c ...   (paths relative to REPO)
#
# A site is a statement that ends a path in a named cause: a call that names CAUSE_X
# (fail(..., CAUSE_X, ...), cause_set(cx, CAUSE_X, ...), proto_src_fail(ps, CAUSE_X, ...)),
# a status mapping (ctl_status_cause(status, CAUSE_X): the fallback of a completion-status
# switch), a `return CAUSE_X;` of a mapping function, or `cause = CAUSE_X`. Comparisons
# (== CAUSE_X, case CAUSE_X) and the table machinery (CAUSE_NONE, CAUSE_COUNT, CAUSE_##name)
# are not sites. Found by reading the source, so line numbers may move freely.
# Output, tab-separated: FILE LINE FUNCTION CAUSE KIND HITS
#   KIND  call | status | return | assign | ternary (the line also holds the other arm of a
#         ?: so its count says the line ran, not that this arm did)
#   HITS  the lcov line count of the statement, "-" when the tracefile has none for it
BEGIN {
	OFS = "\t"
	if (lcov != "")
		read_lcov(lcov)
}

function read_lcov(f,    l, sf, p, a) {
	sf = ""
	while ((getline l < f) > 0) {
		if (substr(l, 1, 3) == "SF:") {
			sf = substr(l, 4)
			if (root != "" && index(sf, root "/") == 1)
				sf = substr(sf, length(root) + 2)
		} else if (substr(l, 1, 3) == "DA:") {
			split(substr(l, 4), a, ",")
			p = sf SUBSEP (a[1] + 0)
			da[p] = (p in da) ? da[p] + a[2] : a[2] + 0
		} else if (substr(l, 1, 3) == "FN:") {
			split(substr(l, 4), a, ",")
			nfn[sf]++
			fnline[sf, nfn[sf]] = a[1] + 0
			fnname[sf, nfn[sf]] = a[2]
		}
	}
	close(f)
}

# The function around line ln of file f: from lcov's FN records when there are any, else
# the last line of the source that opened a function definition.
function func_at(f, ln,    i, best, bl) {
	best = ""
	bl = 0
	for (i = 1; i <= nfn[f]; i++)
		if (fnline[f, i] <= ln && fnline[f, i] > bl) {
			bl = fnline[f, i]
			best = fnname[f, i]
		}
	return best != "" ? best : srcfn
}

# The count of the statement starting at line ln: gcc puts a call's count on its first line;
# a statement that goes on (no ';' yet) may carry it on the next lines.
function hits(f, ln, complete,    k, p) {
	for (k = 0; k < (complete ? 1 : 3); k++) {
		p = f SUBSEP (ln + k)
		if (p in da)
			return da[p]
	}
	return "-"
}

# Strip comments (block comments may span lines) and the contents of string literals.
function code(line,    out, s, d, e) {
	out = ""
	while (line != "") {
		if (incomment) {
			e = index(line, "*/")
			if (!e)
				return out
			line = substr(line, e + 2)
			incomment = 0
			continue
		}
		s = index(line, "/*")
		d = index(line, "//")
		if (d && (!s || d < s))
			return out substr(line, 1, d - 1)
		if (!s)
			return out line
		out = out substr(line, 1, s - 1)
		line = substr(line, s + 2)
		incomment = 1
	}
	gsub(/"([^"\\]|\\.)*"/, "\"\"", out)
	return out
}

FNR == 1 { incomment = 0; srcfn = ""; prev = "" }

{
	if ($0 ~ /^[A-Za-z_][A-Za-z0-9_ \t*]*[ \t*][A-Za-z_][A-Za-z0-9_]*\(/ && $0 !~ /;[ \t]*$/) {
		t = $0
		sub(/\(.*/, "", t)
		sub(/.*[ \t*]/, "", t)
		srcfn = t
	}
	out = code($0)
	gsub(/"([^"\\]|\\.)*"/, "\"\"", out)
	if (out ~ /^[ \t]*#/) {
		prev = ""
		next
	}
	complete = (out ~ /;[ \t]*$/)
	rest = out
	pre = ""
	while (match(rest, /CAUSE_[A-Z0-9_]+/)) {
		tok = substr(rest, RSTART + 6, RLENGTH - 6)
		last = pre substr(rest, 1, RSTART - 1)
		rest = substr(rest, RSTART + RLENGTH)
		pre = last "CAUSE_" tok
		if (tok == "NONE" || tok == "COUNT" || tok == "TABLE" || tok ~ /_$/ || rest ~ /^##/)
			continue
		if (last ~ /(==|!=|<=|>=|<|>)[ \t]*-?[ \t]*$/ || last ~ /case[ \t]+-?[ \t]*$/)
			continue
		ln = FNR
		if (last ~ /^[ \t]*-?[ \t]*$/ && prev ~ /[(,][ \t]*$/) {
			last = prev   # an argument on its own line: the statement began on the line above
			ln = FNR - 1
		}
		if (last ~ /\?/)
			kind = "ternary"
		else if (last ~ /ctl_status_cause\([^()]*$/)
			kind = "status"
		else if (last ~ /return[ \t]*-?[ \t]*$/)
			kind = "return"
		else if (last ~ /[A-Za-z_0-9][ \t]*\(/)
			kind = "call"
		else if (last ~ /[^=!<>]=[ \t]*-?[ \t]*$/)
			kind = "assign"
		else
			continue
		print FILENAME, ln, func_at(FILENAME, ln), tok, kind, hits(FILENAME, ln, complete && ln == FNR)
	}
	prev = out
}
