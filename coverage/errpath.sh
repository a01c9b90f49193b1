#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# coverage/errpath.sh - the error-path map: for every named cause, the runs (scenarios, Bats
# tests, torture runs) that produced it and on which backend (model, verbs, both); for every
# error-handling site in the C sources (a statement ending a path in a cause), whether the
# tests took it, from the lcov tracefile.
#
# usage: coverage/errpath.sh --causes FILE --results DIR --out DIR
#            [--allow FILE] [--lcov FILE] [--root DIR] [--html DIR] [--sums FILE] [--quiet]
#   --causes FILE   `migbed causes --json` output: the list of causes
#   --results DIR   a directory (searched recursively) of run JSON results: `migbed run/source/
#                   dest --json` files, `migbed torture --json` reports, optional ID.meta beside
#   --allow FILE    causes deliberately left unreached, "NAME  reason" (default
#                   coverage/unreached-allow)
#   --lcov FILE     the tracefile (without test code); no --lcov: sites get no line data
#   --root DIR      the source tree the tracefile was built from (default: this repo)
#   --html DIR      also write DIR/errpath.html, linking into genhtml's pages in DIR
#   --sums FILE     sha1sum list of the sources taken at build time: warn about files changed
#                   since (their line numbers may no longer match the counts)
# Writes OUT/errpath.txt (the readable table, also printed unless --quiet), OUT/errpath.json,
# OUT/causes.tsv (NAME STATE MODEL_RUNS VERBS_RUNS SITES SITES_TAKEN MESSAGE REASON; STATE reached |
# allowed | UNREACHED), OUT/runs.tsv, OUT/sites.tsv.
# Exit: 0 written (whatever it says: judging is coverage/check.sh's job); 2 bad input.
set -u -o pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
PROG=coverage/errpath.sh
# the C folders whose error-handling sites are mapped
SITE_DIRS="transport faults sim run vocab"   # vocab: the cause table's own (cause.c)

die() { printf '%s: %s\n' "$PROG" "$*" >&2; exit 2; }

causes_json='' results='' out='' allow=$HERE/unreached-allow lcov='' root=$(cd "$HERE/.." && pwd -P)
html='' sums='' quiet=0
while [ $# -gt 0 ]; do
  case "$1" in
    --causes|--results|--out|--allow|--lcov|--root|--html|--sums)
      [ $# -ge 2 ] || die "$1 needs a value"
      v=$2
      case "$1" in
        --causes) causes_json=$v ;; --results) results=$v ;; --out) out=$v ;; --allow) allow=$v ;;
        --lcov) lcov=$v ;; --root) root=$v ;; --html) html=$v ;; --sums) sums=$v ;;
      esac
      shift 2 ;;
    --quiet) quiet=1; shift ;;
    -h|--help) sed -n '2,/^set -u/{/^set -u/d;/SPDX-License-Identifier/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -n "$causes_json" ] || die "--causes FILE is required"
[ -n "$results" ] || die "--results DIR is required"
[ -n "$out" ] || die "--out DIR is required"
[ -f "$causes_json" ] && [ -r "$causes_json" ] || die "--causes $causes_json: no such readable file"
[ -d "$results" ] || die "--results $results: no such directory"
[ -f "$allow" ] && [ -r "$allow" ] || die "--allow $allow: no such readable file"
[ -z "$lcov" ] || [ -f "$lcov" ] || die "--lcov $lcov: no such file"
[ -z "$sums" ] || [ -f "$sums" ] || die "--sums $sums: no such file"
[ -d "$root" ] || die "--root $root: no such directory"
root=$(cd "$root" && pwd -P)
mkdir -p "$out" || die "cannot create $out"
[ -z "$html" ] || mkdir -p "$html" || die "cannot create $html"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/migbed-errpath.XXXXXX") || die "cannot create a temporary directory"
trap 'rm -rf "$tmp"' EXIT

# 1. the causes, in table order: NAME<TAB>MESSAGE
awk '{ s = s $0 }
  END {
    while (match(s, /"name":"[A-Z_0-9]*"/)) {
      n = substr(s, RSTART + 8, RLENGTH - 9); s = substr(s, RSTART + RLENGTH); m = ""
      if (match(s, /"message":"([^"\\]|\\.)*"/)) m = substr(s, RSTART + 11, RLENGTH - 12)
      gsub(/\\"/, "\"", m); print n "\t" m
    }
  }' "$causes_json" >"$tmp/causes.list"
[ -s "$tmp/causes.list" ] || die "--causes $causes_json: no causes in it (expected \`migbed causes --json\` output)"

# 2. the allow-list: "NAME  reason", validated (file:line: problem)
awk -v f="$allow" -v list="$tmp/causes.list" '
  BEGIN { while ((getline l < list) > 0) { split(l, a, "\t"); known[a[1]] = 1 } }
  /^[ \t]*(#|$)/ { next }
  { n = $1; r = $0; sub(/^[ \t]*[^ \t]+[ \t]*/, "", r); sub(/[ \t]+$/, "", r)
    if (!(n in known)) { printf "%s:%d: unknown cause '\''%s'\'' (see migbed causes)\n", f, NR, n > "/dev/stderr"; bad = 1; next }
    if (r == "") { printf "%s:%d: %s has no reason: say why no test can produce it\n", f, NR, n > "/dev/stderr"; bad = 1; next }
    if (n in seen) { printf "%s:%d: %s is listed twice (first on line %d)\n", f, NR, n, seen[n] > "/dev/stderr"; bad = 1; next }
    seen[n] = NR; print n "\t" r }
  END { exit bad ? 2 : 0 }' "$allow" >"$tmp/allow.tsv" || exit 2

# 3. the recorded runs
find "$results" -name '*.json' -type f | LC_ALL=C sort >"$tmp/results.list"
nres=$(wc -l <"$tmp/results.list")
awk -f "$HERE/results.awk" "$tmp/results.list" >"$tmp/runs.tsv" || exit 2

# 4. the error-handling sites, with their line counts
: >"$tmp/sites.tsv"
srcs=()
for d in $SITE_DIRS; do
  for f in "$root/$d"/*.c; do
    [ -e "$f" ] || continue
    case "$f" in *_test.c) continue ;; esac
    srcs+=("${f#"$root"/}")
  done
done
if [ ${#srcs[@]} -gt 0 ]; then
  (cd "$root" && awk -v lcov="$lcov" -v root="$root" -f "$HERE/sites.awk" "${srcs[@]}") >"$tmp/sites.tsv" \
    || die "reading the sources failed"
fi
if [ -n "$sums" ]; then
  changed=$(cd "$root" && sha1sum --quiet -c "$sums" 2>/dev/null | sed -n 's/: FAILED.*//p' | tr '\n' ' ')
  [ -z "$changed" ] || printf '%s: warning: changed since the coverage build (their line counts may be off): %s\n' \
    "$PROG" "$changed" >&2
fi

# 5. the map
render() { awk -v fmt="$1" -v causes="$tmp/causes.list" -v allow="$tmp/allow.tsv" -v runs="$tmp/runs.tsv" \
             -v sites="$tmp/sites.tsv" -v resdir="$results" -v nres="$nres" -v srclink="${2:-0}" -f "$HERE/render.awk"; }
render tsv >"$out/causes.tsv" || exit 2
render txt >"$out/errpath.txt" || exit 2
render json >"$out/errpath.json" || exit 2
[ -z "$html" ] || render html 1 >"$html/errpath.html" || exit 2
cp "$tmp/runs.tsv" "$out/runs.tsv"
cp "$tmp/sites.tsv" "$out/sites.tsv"
[ "$quiet" = 1 ] || cat "$out/errpath.txt"
[ "$nres" -gt 0 ] || printf '%s: warning: no run results in %s\n' "$PROG" "$results" >&2
exit 0
