# coverage/results.awk - which causes the recorded runs produced (part of coverage/errpath.sh).
#
# Input: one JSON result path per line (migbed run/source/dest --json, or migbed torture
# --json); beside each, an optional ID.meta written by coverage/migbed-record (lane=, test=,
# argv=). Output, tab-separated, one line per (result file, cause produced in it):
#   CAUSE  BACKEND  KIND  PRODUCER  FILE
# KIND is run (migbed run/source/dest) or torture. For a run, the produced causes are the run's
# cause and each side's own cause (a secondary one such as PEER_ERROR is produced too);
# NONE is not a cause. PRODUCER names what made the run: the scenario file, else the Bats
# test, else the command line, else the file name. A file that holds no migbed result is
# reported on stderr as "FILE: not a migbed result" and counted in the exit status (2).
BEGIN { FS = "\t"; bad = 0 }

function slurp(f,    l, s) {
	s = ""
	while ((getline l < f) > 0)
		s = s l "\n"
	close(f)
	return s
}

# The first "KEY":"VALUE" string value in s ("" if none).
function str(s, key,    m) {
	if (!match(s, "\"" key "\":\"[^\"]*\""))
		return ""
	m = substr(s, RSTART + length(key) + 4, RLENGTH - length(key) - 5)
	return m
}

# The cause of the side object "src" or "dst": {"completed":B,"cause":"NAME",...}
function side_cause(s, side,    m) {
	if (!match(s, "\"" side "\":\\{\"completed\":(true|false),\"cause\":\"[A-Z_]*\""))
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
	if (cause == "" || cause == "NONE" || (file SUBSEP cause) in seen)
		return
	seen[file, cause] = 1
	gsub(/\t/, " ", producer)
	print cause "\t" backend "\t" kind "\t" producer "\t" file
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
	torture = (index(argv, "torture") == 1 || index(j, "\"torture\"") > 0)
	if (!torture && index(j, "\"verdict\":") == 0) {
		print file ": not a migbed result (no \"verdict\")" > "/dev/stderr"
		bad = 1
		next
	}
	scn = str(j, "scenario")
	if (scn != "")
		producer = "scenario " base(scn)
	else if (test != "")
		producer = test
	else if (argv != "")
		producer = "migbed " argv
	else
		producer = base(file)
	if (torture) {
		if (test != "")
			producer = test
		else
			producer = "migbed " (argv != "" ? argv : "torture (" base(file) ")")
		rest = j
		while (match(rest, /"cause":"[A-Z_]*"/)) {
			c = substr(rest, RSTART + 9, RLENGTH - 10)
			emit(c, backend, "torture", producer, file)
			rest = substr(rest, RSTART + RLENGTH)
		}
		next
	}
	emit(str(j, "cause"), backend, "run", producer, file)
	emit(side_cause(j, "src"), backend, "run", producer, file)
	emit(side_cause(j, "dst"), backend, "run", producer, file)
}

END { exit bad ? 2 : 0 }
