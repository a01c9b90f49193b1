#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# coverage/check.sh - `make coverage-check`: the coverage gate, run after `make coverage`.
# Fails (exit 1) when
#   - a named cause (vocab/cause.h) is produced by no recorded run and is not in the
#     allow-list (coverage/unreached-allow), or
#   - a folder's coverage falls under its floor in coverage/thresholds.
# A measure more than 0.5 points above its floor passes with a reminder to raise the floor.
#
# usage: coverage/check.sh [--results DIR] [--causes FILE] [--lcov FILE | --no-lcov]
#            [--thresholds FILE] [--allow FILE] [--root DIR]
#   defaults, from `make coverage` (BUILD, default build-cov): --results BUILD/results,
#   --causes BUILD/coverage/causes.json, --lcov BUILD/coverage/lcov.info,
#   --thresholds coverage/thresholds, --allow coverage/unreached-allow, --root: this repo.
#   --no-lcov   judge the causes only (no tracefile: the thresholds are not checked)
# Exit: 0 pass, 1 fail, 2 bad input (a missing file, a bad line: FILE:LINE: problem).
set -u -o pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
PROG=coverage-check
ROOT=$(cd "$HERE/.." && pwd -P)
BUILD=${BUILD:-build-cov}
case "$BUILD" in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac

die() { printf '%s: %s\n' "$PROG" "$*" >&2; exit 2; }

results=$B/results causes=$B/coverage/causes.json lcov=$B/coverage/lcov.info use_lcov=1
thresholds=$HERE/thresholds allow=$HERE/unreached-allow root=$ROOT
while [ $# -gt 0 ]; do
  case "$1" in
    --results|--causes|--lcov|--thresholds|--allow|--root)
      [ $# -ge 2 ] || die "$1 needs a value"
      case "$1" in
        --results) results=$2 ;; --causes) causes=$2 ;; --lcov) lcov=$2 ;;
        --thresholds) thresholds=$2 ;; --allow) allow=$2 ;; --root) root=$2 ;;
      esac
      shift 2 ;;
    --no-lcov) use_lcov=0; shift ;;
    -h|--help) sed -n '2,/^set -u/{/^set -u/d;/SPDX-License-Identifier/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
hint="run \`make coverage\` first"
[ -d "$results" ] || die "no run results in $results ($hint)"
[ -f "$causes" ] || die "no cause list $causes ($hint, or pass --causes FILE from \`migbed causes --json\`)"
if [ "$use_lcov" = 1 ]; then
  [ -f "$lcov" ] || die "no tracefile $lcov ($hint, or pass --no-lcov)"
  [ -f "$thresholds" ] && [ -r "$thresholds" ] || die "--thresholds $thresholds: no such readable file"
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/migbed-covcheck.XXXXXX") || die "cannot create a temporary directory"
trap 'rm -rf "$tmp"' EXIT

# The thresholds: "FOLDER METRIC PERCENT" lines, validated before anything is judged.
if [ "$use_lcov" = 1 ]; then
  awk -v f="$thresholds" '
    /^[ \t]*(#|$)/ { next }
    { bad = ""; sub(/\/$/, "", $1)
      if (NF != 3) bad = "expected FOLDER METRIC PERCENT (e.g. \"transport branches 80.0\"), got " NF " fields"
      else if ($2 !~ /^(lines|functions|branches)$/) bad = "metric \"" $2 "\" is not lines, functions or branches"
      else if ($3 !~ /^[0-9]+(\.[0-9])?$/ || $3 + 0 > 100) bad = "\"" $3 "\" is not a percentage from 0 to 100 with at most one decimal"
      else if (($1, $2) in seen) bad = $1 " " $2 " is set twice (first on line " seen[$1, $2] ")"
      if (bad != "") { printf "%s:%d: %s\n", f, NR, bad > "/dev/stderr"; err = 1; next }
      seen[$1, $2] = NR; print $1 "\t" $2 "\t" $3 "\t" NR }
    END { exit err ? 2 : 0 }' "$thresholds" >"$tmp/thresholds.tsv" || exit 2
fi

# The causes: the error-path map's judgement of each.
args=(--quiet --causes "$causes" --results "$results" --allow "$allow" --root "$root" --out "$tmp/map")
[ "$use_lcov" = 0 ] || args+=(--lcov "$lcov")
"$HERE/errpath.sh" "${args[@]}" || exit 2
fail=0
while IFS=$'\t' read -r name state _ _ nsites ntaken msg reason; do
  case "$state" in
    UNREACHED)
      extra=''
      [ "$use_lcov" = 0 ] || extra=" (its error-handling sites taken by any test, unit tests included: $ntaken of $nsites)"
      printf '%s: FAIL: cause %s (%s) is produced by no test: no recorded run ends in it%s; add a scenario or torture run that ends in it, or allow-list it with a reason in %s\n' \
        "$PROG" "$name" "$msg" "$extra" "${allow#"$ROOT"/}"
      fail=1 ;;
    reached)
      if [ -n "$reason" ]; then
        printf '%s: note: %s is allow-listed in %s but a run produced it: remove the entry\n' \
          "$PROG" "$name" "${allow#"$ROOT"/}"
      fi ;;
  esac
done <"$tmp/map/causes.tsv"
read -r ncauses nreached nallowed nunreached < <(awk -F'\t' '{ n++; s[$2]++ }
  END { print n + 0, s["reached"] + 0, s["allowed"] + 0, s["UNREACHED"] + 0 }' "$tmp/map/causes.tsv")
nruns=$(find "$results" -name '*.json' -type f | wc -l)
printf '%s: causes: %d of %d produced by the %d recorded run results, %d allow-listed, %d produced by no test\n' \
  "$PROG" "$nreached" "$ncauses" "$nruns" "$nallowed" "$nunreached"

# The floors: measured per folder, floored to one decimal, against each threshold.
if [ "$use_lcov" = 1 ]; then
  awk -v root="$root" -f "$HERE/folders.awk" "$lcov" >"$tmp/folders.tsv"
  awk -F'\t' -v prog="$PROG" -v tf="${thresholds#"$ROOT"/}" '
    FNR == NR { m[$1, "lines"] = $3 "/" $2; m[$1, "functions"] = $5 "/" $4; m[$1, "branches"] = $7 "/" $6; next }
    { d = $1; k = $2; t = $3 + 0
      if (!((d, k) in m)) { printf "%s: FAIL: %s:%d: the tracefile has no folder %s/\n", prog, tf, $4, d; bad = 1; next }
      split(m[d, k], x, "/")
      if (x[2] == 0) { printf "%s: FAIL: %s/ has no %s to measure (%s:%d)\n", prog, d, k, tf, $4; bad = 1; next }
      v = int(1000 * x[1] / x[2]) / 10
      if (v < t) {
        printf "%s: FAIL: %s/ %s coverage %.1f%% (%d of %d) is under its floor %.1f%% (%s:%d)\n", prog, d, k, v, x[1], x[2], t, tf, $4
        bad = 1
      } else if (v > t + 0.5)
        printf "%s: ok: %s/ %s %.1f%% >= %.1f%%; it is %.1f points above: raise the floor in %s:%d to %.1f\n", prog, d, k, v, t, v - t, tf, $4, v
      else
        printf "%s: ok: %s/ %s %.1f%% >= %.1f%%\n", prog, d, k, v, t }
    END { exit bad ? 1 : 0 }' "$tmp/folders.tsv" "$tmp/thresholds.tsv"
  floors=$?
  [ "$floors" -eq 0 ] || fail=1
  if [ "$floors" -ne 0 ] && ! grep -rqs --include='*.json' '"backend":"verbs"' "$results"; then
    echo "$PROG: note: no result in $results comes from the verbs backend: was the verbs lane skipped?" \
         "The floors are for the whole suite."
  fi
fi

if [ "$fail" -ne 0 ]; then
  echo "$PROG: FAILED"
  exit 1
fi
echo "$PROG: passed"
exit 0
