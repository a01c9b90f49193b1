#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/check-valgrind.sh - `make check-valgrind`: migbed's commands under valgrind memcheck
# (invalid reads/writes, uses of uninitialised values, definite leaks), on the
# paths users take: completed runs (dynamic, pin-all, a QEMU profile, 64M chunks), failed runs
# (faults on each side, a mismatch, a timeout), bad input (exit 2), trace gen/stat/check,
# explain, sweep, a scenario suite, timeline and a bounded torture sweep. Each case must exit
# with its expected status; valgrind's own error status is 99. Prints one line per case and
# exits 1 when any case fails. ASan/UBSan cover the unit tests and the model lane
# (make check-asan); this covers the uninstrumented binary as users run it.
set -u -o pipefail
cd "$(dirname "$0")/.."
M=${MIGBED:-${BUILD:-build}/migbed}
[ -x "$M" ] || { echo "check-valgrind: $M: build first (make)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "check-valgrind: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/migbed-valgrind.XXXXXX") || exit 2
trap 'rm -rf "$T"' EXIT
VG=(valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite
    --errors-for-leak-kinds=definite --log-file="$T/vg.%p.log")
S=bats/scenarios
failed=0 n=0 t0=$(date +%s)
case_() {  # case_ WANT NAME ARGS...: migbed ARGS under valgrind must exit WANT, valgrind silent
  local want=$1 name=$2; shift 2
  n=$((n + 1))
  rm -f "$T"/vg.*.log
  (cd "$T" && "${VG[@]}" "$OLDPWD/$M" "$@" >"$T/out" 2>&1); local rc=$?
  if [ "$rc" -ne "$want" ] || grep -qE '^==[0-9]+== [A-Za-z]' "$T"/vg.*.log 2>/dev/null; then
    failed=$((failed + 1))
    echo "  FAIL $name: exit $rc (want $want)"
    tail -n 5 "$T/out" | sed 's/^/       | /'
    cat "$T"/vg.*.log 2>/dev/null | head -40 | sed 's/^/       vg| /'
  else
    echo "  ok   $name"
  fi
}
R=$PWD
case_ 0 "run: default (completed, verified)" run --guest 16M --duration-ms 200 --quiet
case_ 0 "run: pin-all" run --guest 16M --duration-ms 200 --pin-all --quiet
case_ 0 "run: 64M chunks, QEMU 11.1 peers" run --guest 64M --duration-ms 200 --chunk-size 64M --src-impl qemu-11.1 --dst-impl qemu-11.1 --quiet
case_ 0 "run: QEMU 7.2 peers" run --guest 16M --duration-ms 200 --src-impl qemu-7.2 --dst-impl qemu-7.2 --quiet
case_ 0 "run: QEMU 8.1 flush record (failed, expected)" run "$R/$S/profile-qemu81-flush-in-round.scn" --quiet
case_ 0 "run: source registration fault" run "$R/$S/fault-reg-mr-src-chunk-enomem.scn" --quiet
case_ 0 "run: destination registration fault" run "$R/$S/fault-reg-mr-dst-chunk-enomem.scn" --quiet
case_ 0 "run: corrupt REGISTER REQUEST" run "$R/$S/fault-msg-register-request-corrupt-payload.scn" --quiet
case_ 0 "run: a lost completion (TIMEOUT)" run "$R/$S/fault-wc-write-drop.scn" --wait-timeout-ms 200 --quiet
case_ 0 "run: chunk-size mismatch" run "$R/$S/model-mismatch-64m-to-1m.scn" --quiet
case_ 0 "run: --json --events --timeline" run --guest 16M --duration-ms 200 --json r.json --events ev --timeline tl.json --quiet
case_ 0 "timeline -o and --plot" timeline ev -o tl2.json --plot tl.svg
case_ 1 "run: a missed expectation (exit 1)" run --guest 16M --duration-ms 200 --expect failed:TIMEOUT --quiet
# a few of each bad corpus (every file of them is fed to every reader in bats/bad-input.bats)
for f in bad-fault.scn bad-expect.scn bad-bool.scn; do
  case_ 2 "run: bad scenario $f" run "$R/bats/data/scenarios-bad/$f"
done
for f in bad-range.trace bad-time-unit.trace bad-page-size.trace; do
  case_ 2 "run --trace: bad trace $f" run --trace "$R/bats/data/traces/bad/$f" --quiet
done
case_ 0 "trace gen" trace gen --pattern rand-set --guest 32M --duration-ms 300 --seed 1 -o t.trace
case_ 0 "trace stat" trace stat t.trace
case_ 0 "trace check" trace check t.trace
case_ 0 "explain a QEMU log" explain "$R/bats/data/qemu-logs/72-dst-register-address.log"
case_ 0 "sweep 1M,64M" sweep --guest 16M --duration-ms 200 --chunk-sizes 1M,64M
case_ 1 "run DIR: a suite with a missed expectation" run "$R/$S/neg-old-new-64m-to-1m.scn" "$R/$S/fault-reg-mr-src-chunk-enomem.scn" --expect completed --junit j.xml
case_ 0 "torture (bounded)" torture "$R/bats/data/torture-small.scn" --max-runs 12
echo "check-valgrind: $n cases, $failed failed ($(( $(date +%s) - t0 )) s)"
[ "$failed" -eq 0 ]
