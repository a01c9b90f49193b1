# SPDX-License-Identifier: MIT
# coverage/folders.awk - per-folder totals of an lcov tracefile (part of coverage/run.sh and
# coverage/check.sh).   awk -v root=REPO -f folders.awk TRACEFILE
# Output, tab-separated, one line per top folder of the repo and one "total" line:
#   FOLDER LINES_FOUND LINES_HIT FUNCTIONS_FOUND FUNCTIONS_HIT BRANCHES_FOUND BRANCHES_HIT
BEGIN { FS = ":"; OFS = "\t" }
/^SF:/ {
	f = substr($0, 4)
	if (root != "" && index(f, root "/") == 1)
		f = substr(f, length(root) + 2)
	dir = f
	if (!sub(/\/.*/, "", dir))
		dir = "."
	if (!(dir in seen)) {
		seen[dir] = 1
		order[++n] = dir
	}
	next
}
/^(LF|LH|FNF|FNH|BRF|BRH):/ { v[dir, $1] += $2; v["total", $1] += $2 }
END {
	for (i = 1; i <= n; i++)   # folders in name order
		for (j = i + 1; j <= n; j++)
			if (order[j] < order[i]) { t = order[i]; order[i] = order[j]; order[j] = t }
	for (i = 1; i <= n; i++)
		line(order[i])
	line("total")
}
function line(d) {
	print d, v[d, "LF"] + 0, v[d, "LH"] + 0, v[d, "FNF"] + 0, v[d, "FNH"] + 0, v[d, "BRF"] + 0, v[d, "BRH"] + 0
}
