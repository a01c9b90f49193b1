# SPDX-License-Identifier: MIT
# coverage/render.awk - joins the cause list, the allow-list, the recorded runs and the
# error-handling sites into the error-path map, and writes it (part of coverage/errpath.sh).
#
#   awk -v fmt=tsv|txt|json|html -v causes=F -v allow=F -v runs=F -v sites=F \
#       [-v nres=N -v resdir=D -v lcov=F -v srclink=1] -f render.awk
#
#   causes  NAME<TAB>MESSAGE per line, in table order (from `migbed causes --json`)
#   allow   NAME<TAB>REASON (coverage/unreached-allow, validated)
#   runs    CAUSE BACKEND KIND PRODUCER FILE (results.awk)
#   sites   FILE LINE FUNCTION CAUSE KIND HITS (sites.awk; may be empty)
# tsv: NAME STATE MODEL_RUNS VERBS_RUNS SITES SITES_TAKEN MESSAGE REASON, one cause per line, where
# STATE is reached | allowed | UNREACHED.
BEGIN {
	FS = "\t"
	nc = 0
	while ((getline l < causes) > 0) {
		split(l, a, "\t")
		name[++nc] = a[1]
		msg[a[1]] = a[2]
	}
	while ((getline l < allow) > 0) {
		split(l, a, "\t")
		reason[a[1]] = a[2]
	}
	nruns = 0
	while ((getline l < runs) > 0) {
		split(l, a, "\t")
		c = a[1]; be = a[2]; pr = a[4]
		if (!((c, a[5]) in cf)) {   # results, not lines: a sweep counts once
			cf[c, a[5]] = 1
			if (be == "model")
				mruns[c]++
			else if (be == "verbs")
				vruns[c]++
			else
				oruns[c]++
		}
		if (!((c, pr) in pseen)) {
			pseen[c, pr] = 1
			np[c]++
			prod[c, np[c]] = pr
		}
		pcount[c, pr]++
		if (index(pbe[c, pr], be) == 0)
			pbe[c, pr] = pbe[c, pr] (pbe[c, pr] == "" ? "" : ",") be
		if (!(a[5] in files)) {
			files[a[5]] = 1
			nruns++
		}
	}
	ns = 0
	while ((getline l < sites) > 0) {
		split(l, a, "\t")
		ns++
		sf[ns] = a[1]; sl[ns] = a[2]; sfn[ns] = a[3]; sc[ns] = a[4]; sk[ns] = a[5]; sh[ns] = a[6]
		nsites[a[4]]++
		if (a[6] != "-" && a[6] > 0) {
			ntaken[a[4]]++
			taken_all++
		}
		if (a[6] != "-")
			measured++
	}
	for (i = 1; i <= nc; i++) {
		c = name[i]
		sort_producers(c)
		if (mruns[c] + vruns[c] + oruns[c] > 0)
			state[c] = "reached"
		else if (c in reason)
			state[c] = "allowed"
		else
			state[c] = "UNREACHED"
		be = (mruns[c] > 0 && vruns[c] > 0) ? "both" : mruns[c] > 0 ? "model" : vruns[c] > 0 ? "verbs" : \
		     oruns[c] > 0 ? "other" : "none"
		backends[c] = be
		nstate[state[c]]++
		if (state[c] == "reached")
			nbe[be]++
	}
	if (fmt == "tsv")
		tsv()
	else if (fmt == "txt")
		txt()
	else if (fmt == "json")
		json()
	else if (fmt == "html")
		html()
	else {
		print "render.awk: unknown fmt '" fmt "'" > "/dev/stderr"
		exit 2
	}
}

function sort_producers(c,    i, j, t) {   # insertion sort: a few producers per cause
	for (i = 2; i <= np[c]; i++)
		for (j = i; j > 1 && prod[c, j - 1] > prod[c, j]; j--) {
			t = prod[c, j]; prod[c, j] = prod[c, j - 1]; prod[c, j - 1] = t
		}
}

function n0(x) { return x == "" ? 0 : x + 0 }

function tsv(    i, c) {
	for (i = 1; i <= nc; i++) {
		c = name[i]
		print c "\t" state[c] "\t" n0(mruns[c]) "\t" n0(vruns[c]) "\t" n0(nsites[c]) "\t" n0(ntaken[c]) "\t" msg[c] "\t" reason[c]
	}
}

function pct(a, b) { return b > 0 ? sprintf("%.1f%%", 100 * a / b) : "n/a" }

function producers_text(c, max,    i, s) {
	s = ""
	for (i = 1; i <= np[c] && i <= max; i++)
		s = s (i > 1 ? "; " : "") prod[c, i] " [" pbe[c, prod[c, i]] "]"
	if (np[c] > max)
		s = s sprintf("; (+%d more)", np[c] - max)
	return s
}

function summary_line() {
	return sprintf("%d causes: %d reached (%d on both backends, %d model only, %d verbs only), " \
		       "%d allow-listed, %d NOT REACHED", nc, n0(nstate["reached"]), n0(nbe["both"]), \
		       n0(nbe["model"]), n0(nbe["verbs"]), n0(nstate["allowed"]), n0(nstate["UNREACHED"]))
}

function txt(    i, c, w, p, st) {
	printf "migbed error-path map: %d recorded run result(s) from %s\n", nres, resdir
	print summary_line()
	printf "\n%-26s %6s %6s %7s  %-9s %s\n", "CAUSE", "MODEL", "VERBS", "SITES", "STATE", "PRODUCED BY (runs: scenario or test [backend])"
	for (i = 1; i <= nc; i++) {
		c = name[i]
		st = state[c] == "reached" ? backends[c] : state[c]
		p = state[c] == "allowed" ? "allow-listed: " reason[c] : producers_text(c, 3)
		if (p == "")
			p = "-"
		printf "%-26s %6d %6d %3d/%-3d  %-9s %s\n", c, n0(mruns[c]), n0(vruns[c]), n0(ntaken[c]), \
		       n0(nsites[c]), st, p
	}
	printf "\nError-handling sites: %d, taken by the tests: %d (%s)", ns, n0(taken_all), pct(taken_all, ns)
	if (measured < ns)
		printf "; %d without line data", ns - measured
	printf "\nKIND call: a fail/cause_set call naming the cause; status: the fallback of a completion-status\n" \
	       "mapping (taken = that error path ran, with any status); return: a mapping function's result;\n" \
	       "ternary: the line holds both arms of a ?: (taken = the line ran, not necessarily this arm)\n"
	printf "%-34s %-26s %-26s %-8s %s\n", "SITE", "FUNCTION", "CAUSE", "KIND", "TAKEN"
	for (i = 1; i <= ns; i++)
		printf "%-34s %-26s %-26s %-8s %s\n", sf[i] ":" sl[i], sfn[i], sc[i], sk[i], \
		       (sh[i] == "-" ? "no data" : sh[i] > 0 ? "yes (" sh[i] (sk[i] == "status" ? ", any status" : "") ")" : "NO")
}

function jstr(s) {
	gsub(/\\/, "\\\\", s)
	gsub(/"/, "\\\"", s)
	gsub(/\t/, "\\t", s)
	return "\"" s "\""
}

function json(    i, j, c, p) {
	printf "{\"results_dir\":%s,\"runs\":%d,", jstr(resdir), nres
	printf "\"summary\":{\"causes\":%d,\"reached\":%d,\"reached_both\":%d,\"reached_model_only\":%d," \
	       "\"reached_verbs_only\":%d,\"allowed\":%d,\"unreached\":%d,\"sites\":%d,\"sites_taken\":%d}", \
	       nc, n0(nstate["reached"]), n0(nbe["both"]), n0(nbe["model"]), n0(nbe["verbs"]), \
	       n0(nstate["allowed"]), n0(nstate["UNREACHED"]), ns, n0(taken_all)
	printf ",\"causes\":["
	for (i = 1; i <= nc; i++) {
		c = name[i]
		printf "%s{\"name\":%s,\"message\":%s,\"state\":%s,\"backends\":%s,\"model_runs\":%d," \
		       "\"verbs_runs\":%d,\"sites\":%d,\"sites_taken\":%d,\"allowed_reason\":%s,\"produced_by\":[", \
		       (i > 1 ? "," : ""), jstr(c), jstr(msg[c]), jstr(state[c]), jstr(backends[c]), n0(mruns[c]), \
		       n0(vruns[c]), n0(nsites[c]), n0(ntaken[c]), (c in reason) ? jstr(reason[c]) : "null"
		for (j = 1; j <= np[c]; j++) {
			p = prod[c, j]
			printf "%s{\"producer\":%s,\"backends\":%s,\"runs\":%d}", (j > 1 ? "," : ""), jstr(p), \
			       jstr(pbe[c, p]), pcount[c, p]
		}
		printf "]}"
	}
	printf "],\"sites\":["
	for (i = 1; i <= ns; i++)
		printf "%s{\"file\":%s,\"line\":%d,\"function\":%s,\"cause\":%s,\"kind\":%s,\"hits\":%s}", \
		       (i > 1 ? "," : ""), jstr(sf[i]), sl[i], jstr(sfn[i]), jstr(sc[i]), jstr(sk[i]), \
		       sh[i] == "-" ? "null" : sh[i] + 0
	printf "]}\n"
}

function h(s) {
	gsub(/&/, "\\&amp;", s)
	gsub(/</, "\\&lt;", s)
	gsub(/>/, "\\&gt;", s)
	gsub(/"/, "\\&quot;", s)
	return s
}

function html(    i, j, c, p, cls, st, link, t) {
	print "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>migbed error-path map</title>"
	print "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;margin-bottom:2em}" \
	      "td,th{border:1px solid #bbb;padding:2px 6px;vertical-align:top;font-size:90%}th{background:#dde}" \
	      ".ok{background:#cfc}.half{background:#ffc}.no{background:#fcc}.al{background:#eee}" \
	      "td.n{text-align:right}code{font-size:95%}</style></head><body>"
	print "<h1>migbed error-path map</h1>"
	printf "<p>%s.<br>%d recorded run result(s) from <code>%s</code>. " \
	       "<a href=\"index.html\">Line and branch coverage (lcov)</a>.</p>\n", h(summary_line()), nres, h(resdir)
	print "<h2>Causes: which runs produced them, on which backend</h2>"
	print "<table><tr><th>cause</th><th>state</th><th>model runs</th><th>verbs runs</th>" \
	      "<th>sites taken</th><th>produced by (scenario or test)</th><th>message</th></tr>"
	for (i = 1; i <= nc; i++) {
		c = name[i]
		st = state[c] == "reached" ? backends[c] : state[c]
		cls = state[c] == "UNREACHED" ? "no" : state[c] == "allowed" ? "al" : backends[c] == "both" ? "ok" : "half"
		printf "<tr class=\"%s\"><td><a name=\"%s\"></a><code>%s</code></td><td>%s</td><td class=n>%d</td>" \
		       "<td class=n>%d</td><td class=n>%d/%d</td><td>", cls, c, c, st, n0(mruns[c]), n0(vruns[c]), \
		       n0(ntaken[c]), n0(nsites[c])
		if (state[c] == "allowed")
			printf "allow-listed: %s", h(reason[c])
		for (j = 1; j <= np[c]; j++) {
			p = prod[c, j]
			printf "%s%s [%s]%s", (j > 1 ? "<br>" : ""), h(p), pbe[c, p], (pcount[c, p] > 1 ? " &times;" pcount[c, p] : "")
		}
		printf "</td><td>%s</td></tr>\n", h(msg[c])
	}
	print "</table>"
	printf "<h2>Error-handling sites: %d, taken by the tests: %d (%s)</h2>\n", ns, n0(taken_all), pct(taken_all, ns)
	print "<p>A site is a statement that ends a path in a named cause. <i>ternary</i>: the line also holds" \
	      " the other arm of a <code>?:</code>, so its count says the line ran, not that this arm did." \
	      " <i>status</i>: the cause is the fallback of a completion-status mapping.</p>"
	print "<table><tr><th>site</th><th>function</th><th>cause</th><th>kind</th><th>taken (line count)</th></tr>"
	for (i = 1; i <= ns; i++) {
		cls = sh[i] == "-" ? "al" : sh[i] > 0 ? "ok" : "no"
		t = sh[i] == "-" ? "no data" : sh[i] > 0 ? "yes (" sh[i] (sk[i] == "status" ? ", any status" : "") ")" : "NO"
		link = srclink ? sprintf("<a href=\"%s.gcov.html#%d\">%s:%d</a>", sf[i], sl[i], sf[i], sl[i]) : sf[i] ":" sl[i]
		printf "<tr class=\"%s\"><td><code>%s</code></td><td><code>%s</code></td><td><a href=\"#%s\">%s</a></td>" \
		       "<td>%s</td><td>%s</td></tr>\n", cls, link, h(sfn[i]), sc[i], sc[i], sk[i], t
	}
	print "</table></body></html>"
}
