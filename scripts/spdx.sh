#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/spdx.sh [--check] [DIR] - the SPDX line `SPDX-License-Identifier: MIT` (LICENSE) in every
# source and script file of DIR (default: the repository) that lacks one, in its comment syntax:
#   *.c *.h                                       /* SPDX-License-Identifier: MIT */  (first line)
#   *.sh *.bash *.bats *.awk *.py, Makefile,
#   any other file starting with #!               # SPDX-License-Identifier: MIT     (after a #! line)
# Data is left alone: scenarios, traces, logs, corpora (fuzz/corpus, fuzz/regress, bats/data,
# docs/data), Markdown, hidden folders (.git, .ci) and build folders (build*/). A file "has one"
# when one of its first 5 lines is a comment holding the identifier. Files are rewritten in place, keeping mode.
# --check: write nothing; list each file without one ("FILE: no SPDX-License-Identifier line")
# and exit 1 if there is any (bats/structure.bats). Exit 0: all have one; 2: bad usage.
set -u -o pipefail
die() { echo "spdx: $*" >&2; exit 2; }
ID='SPDX-License-Identifier: MIT'
check=false
if [ "${1:-}" = --check ]; then check=true; shift; fi
case "${1:-}" in -h|--help) sed -n '2,/^set -u/{/^set -u/d;/SPDX-License-Identifier/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; -*) die "unknown option '$1'" ;; esac
[ $# -le 1 ] || die "usage: spdx.sh [--check] [DIR]"
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
[ -d "$root" ] || die "$root: not a folder"
cd "$root" || die "cannot enter $root"

# style FILE: sets STYLE to c, hash or "" (not a source or script file); no subshell (speed)
style() {
  local first=''
  case "$1" in
    *.c|*.h) STYLE=c ;;
    *.sh|*.bash|*.bats|*.awk|*.py|*/Makefile|Makefile|*.mk) STYLE=hash ;;
    */*.*|[!/]*.*) STYLE='' ;;                          # data: .scn .trace .md .hw .json ...
    *) read -r -n 2 first <"$1" 2>/dev/null; if [ "$first" = '#!' ]; then STYLE=hash; else STYLE=''; fi ;;
  esac
}

add() {   # FILE STYLE
  local f=$1 tmp="$1.spdx.$$" first=''
  read -r -n 2 first <"$f" 2>/dev/null
  if [ "$2" = c ]; then { printf '/* %s */\n' "$ID"; cat "$f"; } >"$tmp"
  elif [ "$first" = '#!' ]; then { head -n 1 "$f"; printf '# %s\n' "$ID"; tail -n +2 "$f"; } >"$tmp"
  else { printf '# %s\n' "$ID"; cat "$f"; } >"$tmp"; fi || { rm -f "$tmp"; die "cannot write $tmp"; }
  chmod --reference="$f" "$tmp" && mv "$tmp" "$f" || { rm -f "$tmp"; die "cannot replace $f"; }
}

# the source and script files, then those of them whose first 5 lines lack the identifier
files=() styles=()
while IFS= read -r -d '' f; do
  f=${f#./}
  style "$f"
  [ -n "$STYLE" ] || continue
  files+=("$f") styles+=("$STYLE")
done < <(find . \( -name '.?*' -o -name 'build*' -o -path ./fuzz/corpus -o -path ./fuzz/regress \
                 -o -path ./bats/data -o -path ./docs/data \) -prune -o -type f -print0 | sort -z)
[ ${#files[@]} -gt 0 ] || exit 0
declare -A lacking=()
while IFS= read -r f; do lacking[$f]=1; done < <(
  awk -v id="$ID" 'FNR == 1 { if (NR > 1 && !has) print prev; has = 0; prev = FILENAME }
                   FNR <= 5 && /^(#|\/\*|\/\/) *SPDX-License-Identifier: / && index($0, id) { has = 1 }
                   END { if (NR > 0 && !has) print prev }' "${files[@]}")
missing=0
for i in "${!files[@]}"; do
  f=${files[$i]}
  [ -n "${lacking[$f]:-}" ] || continue
  if $check; then echo "$f: no $ID line"; missing=$((missing + 1)); else add "$f" "${styles[$i]}"; echo "spdx: $f"; fi
done
if $check && [ $missing -gt 0 ]; then echo "spdx: $missing file(s) without '$ID' (scripts/spdx.sh adds it)" >&2; exit 1; fi
exit 0
