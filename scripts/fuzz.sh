#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/fuzz.sh BUILD NAME... - run each libFuzzer harness BUILD/fuzzer/NAME for FUZZ_SECONDS
# (default 60) on one core, as `make fuzz` does (docs/fuzzing.md).
#
# Each harness starts from its seed corpus fuzz/corpus/NAME and its regression inputs
# fuzz/regress/NAME (read only); what it finds new goes to BUILD/fuzz-work/NAME (kept between
# runs, so campaigns add up), crashes to BUILD/fuzz-crash/NAME/. Dictionaries: fuzz/dict/NAME.dict.
# Prints one line per harness (executions, coverage, features, seconds) and a summary table in
# BUILD/fuzz-stats.tsv; exits 1 if any harness crashed or a property failed.
#   FUZZ_SECONDS=N   seconds per harness
#   FUZZ_ARGS="..."  more libFuzzer options (e.g. -max_len=65536)
#   FUZZ_SEARCH_BUILD=DIR  search with DIR/fuzzer/NAME instead (`make fuzz FUZZ_SAN=none`: a build
#                    without ASan/UBSan, several times faster), then replay every input that run
#                    added to BUILD/fuzz-work/NAME, and any crash, with BUILD/fuzzer/NAME (the
#                    ASan+UBSan build): a finding of either fails the harness
set -u -o pipefail
die() { echo "fuzz.sh: $*" >&2; exit 2; }
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,/^set -u/{/^set -u/d;/SPDX-License-Identifier/d;s/^# \{0,1\}//;p}' "$0"
  exit 0
fi
[ $# -ge 2 ] || die "usage: scripts/fuzz.sh BUILD NAME..."
build=$1; shift
secs=${FUZZ_SECONDS:-60}
case $secs in ''|*[!0-9]*) die "FUZZ_SECONDS: '$secs' is not a number of seconds" ;; esac
stats=$build/fuzz-stats.tsv
printf 'harness\texecs\tcov\tft\tcorpus\tseconds\tresult\n' >"$stats.tmp" || die "cannot write $stats.tmp"
failed=0
search=${FUZZ_SEARCH_BUILD:-$build}
for name in "$@"; do
  san=$build/fuzzer/$name bin=$search/fuzzer/$name
  [ -x "$bin" ] || die "$bin: no such harness (make fuzz builds them)"
  [ -x "$san" ] || die "$san: no such harness (make fuzz builds them)"
  work=$build/fuzz-work/$name crash=$build/fuzz-crash/$name log=$build/fuzz-logs/$name.log
  mkdir -p "$work" "$crash" "${log%/*}" || die "cannot make $work"
  dirs=("$work" "fuzz/corpus/$name")
  [ -d "fuzz/regress/$name" ] && dirs+=("fuzz/regress/$name")
  dict=()
  [ -f "fuzz/dict/$name.dict" ] && dict=("-dict=fuzz/dict/$name.dict")
  t0=$(date +%s)
  stamp=$build/fuzz-logs/$name.start
  : >"$stamp" || die "cannot write $stamp"
  # shellcheck disable=SC2086
  "$bin" -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=1024 \
    -artifact_prefix="$crash/" "${dict[@]}" ${FUZZ_ARGS:-} "${dirs[@]}" >"$log" 2>&1
  rc=$?
  t=$(( $(date +%s) - t0 ))
  replayed=
  if [ "$search" != "$build" ]; then
    # Every input the search added (and any crash) once through the sanitizer build: files
    # given to a libFuzzer binary are each run once. A work corpus's names are content hashes,
    # so an input kept from an earlier run is not new.
    find "$work" "$crash" -type f -newer "$stamp" -print0 >"$log.new"
    replayed=$(tr -cd '\0' <"$log.new" | wc -c)
    : >"$log.asan"
    if [ "$replayed" -gt 0 ] &&
       ! xargs -0 -n 256 "$san" -timeout=10 -rss_limit_mb=1024 <"$log.new" >"$log.asan" 2>&1; then
      replayed="$replayed FAILED ($log.asan)"; [ $rc -eq 0 ] && rc=1
      grep -E 'ERROR: |property failed|SUMMARY' "$log.asan" | head -5 >&2
    fi
    replayed=", $replayed new inputs replayed under ASan+UBSan"
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  result=ok
  if [ $rc -ne 0 ]; then
    result="FAILED (exit $rc; $log, $crash/)"; failed=1
    grep -E 'ERROR: |property failed|SUMMARY' "$log" | head -5 >&2
  fi
  printf '%-12s %12s execs  cov %6s  ft %6s  corpus %5s  %4ss  %s%s\n' "$name" "${execs:-?}" "${cov:-?}" "${ft:-?}" \
    "${corp:-?}" "$t" "$result" "$replayed"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$t" "$result" \
    >>"$stats.tmp"
done
mv "$stats.tmp" "$stats" || die "cannot write $stats"
exit $failed
