# SPDX-License-Identifier: MIT
# coverage/results.awk - which causes the recorded runs produced (part of coverage/errpath.sh).
#
# Input: one JSON result path per line: `migbed run/source/dest --json` results and `migbed
# torture --json` sweeps; beside each, an optional ID.meta written by coverage/migbed-record
# (lane=, test=, argv=). Output, tab-separated, one line per (result, cause produced in it):
#   CAUSE  BACKEND  KIND  PRODUCER  FILE
# KIND is run or torture. A run produces its cause and each side's own cause (a consequence
# such as PEER_ERROR is produced too); NONE is not a cause. PRODUCER names what made it: the
# scenario file, else the Bats test, else the command line, else the file name; for a sweep,
# "torture SCENARIO: SITE@SIDE", one per fault site and side whose reruns ended in the cause.
# A file that is neither is reported on stderr ("FILE: not a migbed result") and makes the
# exit status 2.
BEGIN { FS = "\t"; bad = 0 }

function slurp(f,    l, s) {
	s = ""
	while ((getline l < f) > 0)
		s = s l "\n"
	close(f)
	return s
}

# The first "KEY":"VALUE" string value in s ("" if none).
function str(s, key) {
	if (!match(s, "\"" key "\":\"[^\"]*\""))
		return ""
	return substr(s, RSTART + length(key) + 4, RLENGTH - length(key) - 5)
}

# The cause of the side object "src" or "dst": {"completed":B,"cause":"NAME",...}
function side_cause(s, side,    m) {
	if (!match(s, "\"" side "\":\\{\"completed\":(true|false),\"cause\":\"[A-Z_0-9]*\""))
		return ""
	m = substr(s, RSTART, RLENGTH)
	sub(/.*"cause":"/, "", m)
	sub(/"$/, "", m)
	return m
}

function meta(text, key,    n, i, ln, out) {
	n = split(text, ln, "\n")
	out = ""
	for (i = 1; i <= n; i++)
		if (index(ln[i], key "=") == 1)
			out = substr(ln[i], length(key) + 2)
	return out
}

function base(p) {
	sub(/.*\//, "", p)
	return p
}

function emit(cause, backend, kind, producer, file) {
	if (cause == "" || cause == "NONE" || (file SUBSEP cause SUBSEP producer) in seen)
		return
	seen[file, cause, producer] = 1
	gsub(/\t/, " ", producer)
	print cause "\t" backend "\t" kind "\t" producer "\t" file
}

# A sweep: {"scenario":..,"backend":..,"runs":[{"site":S,"side":D,...,"cause":C,...},...]}
function torture(j, file, backend, label,    rest, n, parts, i) {
	rest = j
	sub(/.*"runs":\[/, "", rest)
	n = split(rest, parts, /\{"site":/)
	for (i = 2; i <= n; i++)
		emit(str(parts[i], "cause"), backend, "torture", label ": " str("{\"site\":" parts[i], "site") "@" \
		     str(parts[i], "side"), file)
}

{
	file = $0
	if (file == "")
		next
	j = slurp(file)
	mf = file
	sub(/\.json$/, ".meta", mf)
	m = (mf != file) ? slurp(mf) : ""
	argv = meta(m, "argv")
	test = meta(m, "test")
	backend = str(j, "backend")
	if (backend == "")
		backend = "unknown"
	scn = str(j, "scenario")
	if (index(argv, "torture") == 1 || index(j, "\"runs\":[") > 0) {
		torture(j, file, backend, "torture " (scn != "" ? base(scn) : test != "" ? test : base(file)))
		next
	}
	if (index(j, "\"verdict\":") == 0) {
		print file ": not a migbed result (no \"verdict\" and no \"runs\")" > "/dev/stderr"
		bad = 1
		next
	}
	if (scn != "")
		producer = "scenario " base(scn)
	else if (test != "")
		producer = test
	else if (argv != "")
		producer = "migbed " argv
	else
		producer = base(file)
	emit(str(j, "cause"), backend, "run", producer, file)
	emit(side_cause(j, "src"), backend, "run", producer, file)
	emit(side_cause(j, "dst"), backend, "run", producer, file)
}

END { exit bad ? 2 : 0 }
