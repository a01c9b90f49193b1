#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cmp-model-outputs.sh BASE_MIGBED NEW_MIGBED [SCENARIO...]
#
# Run every scenario (default: bats/scenarios/*.scn, the model ones; a scenario for the verbs
# backend is skipped) with --events and --json on two binaries and compare the outputs byte for
# byte, the JSON's "build" field left out (it names the commit). For a change that must not move
# any existing run (a new cost rule off by default, docs/model.md). Prints each difference and a
# summary line; exit 0 when there is none, 1 when there is, 2 on bad use.
set -u -o pipefail

die() { echo "cmp-model-outputs: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: $0 BASE_MIGBED NEW_MIGBED [SCENARIO...]"
base=$1 new=$2
shift 2
[ -x "$base" ] || die "$base: not an executable"
[ -x "$new" ] || die "$new: not an executable"
if [ $# -eq 0 ]; then
	set -- bats/scenarios/*.scn
fi
tmp=$(mktemp -d) || die "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

strip_build() { sed -e 's/"build":"[^"]*"//' "$1"; }

n=0 diffs=0 skipped=0
for scn in "$@"; do
	if grep -Eq '^[[:space:]]*backend[[:space:]]*=[[:space:]]*verbs' "$scn"; then
		skipped=$((skipped + 1))
		continue
	fi
	n=$((n + 1))
	for side in base new; do
		bin=$base
		[ "$side" = new ] && bin=$new
		"$bin" run "$scn" --quiet --events "$tmp/$side.ev" --json "$tmp/$side.json" \
			>"$tmp/$side.out" 2>"$tmp/$side.err"
		echo "$?" >"$tmp/$side.rc"
	done
	for f in rc out err ev; do
		if ! cmp -s "$tmp/base.$f" "$tmp/new.$f"; then
			echo "DIFF $scn: $f"
			diffs=$((diffs + 1))
		fi
	done
	if ! cmp -s <(strip_build "$tmp/base.json") <(strip_build "$tmp/new.json"); then
		echo "DIFF $scn: json"
		diffs=$((diffs + 1))
	fi
	rm -f "$tmp"/base.* "$tmp"/new.*
done
echo "cmp-model-outputs: $n scenarios, $skipped skipped (verbs), $diffs differences"
[ "$diffs" -eq 0 ]
