#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/check-includes.sh [ROOT] - the folder graph of migbed's C code, derived from its
# #include "FOLDER/..." lines, must have no cycle.
#
# Folders: every top-level folder holding .c/.h files. Unit tests (*_test.c) are left out:
# a test may reach into the layers it tests against. Prints the graph (one "A -> B C" line a
# folder) and a layering (lowest first); exit 0 acyclic, 1 with the cycle named
# ("cycle: transport -> faults -> transport (faults/fault.c includes transport/hca.h)").
set -u -o pipefail
ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$ROOT" || exit 2
declare -A deps=() why=()
folders=$(find . -mindepth 2 -maxdepth 2 -name '*.[ch]' ! -name '*_test.c' -printf '%h\n' | sed 's|^\./||' | sort -u)
for d in $folders; do
  deps[$d]=''
  for f in "$d"/*.[ch]; do
    case $f in *_test.c) continue ;; esac
    while IFS= read -r inc; do
      t=${inc%%/*}
      [ "$t" = "$d" ] && continue
      [ -d "$t" ] || continue
      case " ${deps[$d]} " in *" $t "*) ;; *) deps[$d]="${deps[$d]} $t"; why[$d:$t]="$f includes $inc" ;; esac
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\/[^"]*\)".*/\1/p' "$f")
  done
done
for d in $folders; do echo "$d ->${deps[$d]:- (nothing)}"; done
# depth-first search; colour 0 new, 1 on the stack, 2 done
declare -A colour=()
order=() stack=()
cycle=''
visit() {
  local d=$1 t
  colour[$d]=1; stack+=("$d")
  for t in ${deps[$d]}; do
    [ -n "$cycle" ] && return
    if [ "${colour[$t]:-0}" = 1 ]; then
      local path='' i start=0
      for i in "${!stack[@]}"; do [ "${stack[$i]}" = "$t" ] && start=$i; done
      for i in "${stack[@]:$start}"; do path="$path$i -> "; done
      cycle="$path$t (${why[$d:$t]})"
      return
    fi
    [ "${colour[$t]:-0}" = 0 ] && visit "$t"
  done
  colour[$d]=2; order+=("$d")
  unset 'stack[${#stack[@]}-1]'
}
for d in $folders; do [ -n "$cycle" ] && break; [ "${colour[$d]:-0}" = 0 ] && visit "$d"; done
if [ -n "$cycle" ]; then
  echo "check-includes: cycle: $cycle"
  exit 1
fi
echo "check-includes: no cycle; layers, lowest first: ${order[*]}"
