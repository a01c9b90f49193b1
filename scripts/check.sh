#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/check.sh UNIT_TEST_BIN... - migbed's whole test suite, as `make check` runs it.
#
#   1. cmocka unit tests (TAP output), one binary per module
#   2. Bats, model lane: bats/*.bats plus one generated test per bats/scenarios/*.scn
#   3. Bats, verbs lane: bats/verbs/*.bats on a native rxe/siw device if topologies/detect
#      finds one, otherwise inside one boot of the soft-RoCE VM (topologies/vm/rxe-vm).
#      MIGBED_SKIP_VERBS=1 skips it, loudly; in CI (CI=true) a VM that cannot start fails.
#      MIGBED_VERBS_SKIP="FILE.bats ..." leaves those bats/verbs/ files out, loudly (make
#      coverage's second pass leaves out qemu.bats: see coverage/run.sh).
#   MIGBED_BATS_ONLY="bats/A.bats ..." runs only those model-lane files, and with
#   MIGBED_SCN_GLOB='GLOB ...' the scenarios of bats/scenarios/ it matches (make check-asan-ci).
# Every Bats line carries its duration (bats --timing: "ok 7 name in 1234ms").
# Ends with "N passed, N failed" and exits non-zero if anything failed.
set -u -o pipefail
BUILD=${BUILD:-build}
export MIGBED=${MIGBED:-$PWD/$BUILD/migbed}
export MIGBED_BUILD=$PWD/$BUILD
LOGDIR=$BUILD/check-logs
mkdir -p "$LOGDIR"
passed=0 failed=0 skipped=0
failures=()

# count TAP lines of one log: adds to the totals, remembers failing test names
count_tap() {  # $1 = label, $2 = log
  local ok oks no nos
  ok=$(grep -cE "^ok [0-9]+" "$2") || true
  oks=$(grep -cE "^ok [0-9]+.*# (skip|SKIP)" "$2") || true
  no=$(grep -cE "^not ok [0-9]+" "$2") || true
  nos=$(grep -cE "^not ok [0-9]+.*# (skip|SKIP)" "$2") || true
  passed=$((passed + ok - oks)); skipped=$((skipped + oks + nos)); failed=$((failed + no - nos))
  while IFS= read -r l; do failures+=("$1: $l"); done < <(grep -E "^not ok [0-9]+" "$2" | grep -vE "# (skip|SKIP)")
}

echo "== unit tests (cmocka)"
for t in "$@"; do
  name=${t#"$BUILD"/test/}; log="$LOGDIR/unit-${name//\//_}.tap"
  CMOCKA_MESSAGE_OUTPUT=TAP "$t" >"$log" 2>&1; rc=$?
  count_tap "$name" "$log"
  if [ $rc -ne 0 ] && ! grep -qE '^not ok' "$log"; then
    failed=$((failed + 1)); failures+=("$name: exited $rc without a failing test (crash?)")
  fi
  printf '  %-40s %s\n' "$name" "$( [ $rc -eq 0 ] && echo ok || echo FAIL)"
done

echo "== bats (model lane)"
if [ -n "${MIGBED_BATS_ONLY+set}" ]; then
  # a chosen part of the lane (make check-asan-ci): these files, and the scenarios of
  # MIGBED_SCN_GLOB (none if unset), loudly
  echo "  MIGBED_BATS_ONLY: only ${MIGBED_BATS_ONLY:-no files}; scenarios: ${MIGBED_SCN_GLOB:-none}"
  rm -f "$BUILD/bats/scenarios.bats"
  if [ -n "${MIGBED_SCN_GLOB:-}" ]; then
    SCN_GLOB=$MIGBED_SCN_GLOB scripts/gen-scenario-bats.sh bats/scenarios "$BUILD/bats/scenarios.bats" \
      || { failed=$((failed+1)); failures+=("scenario bats generation failed"); }
  fi
  bats_files=$(for f in ${MIGBED_BATS_ONLY}; do echo "$f"; done; [ -s "$BUILD/bats/scenarios.bats" ] && echo "$BUILD/bats/scenarios.bats")
else
  scripts/gen-scenario-bats.sh bats/scenarios "$BUILD/bats/scenarios.bats" || { failed=$((failed+1)); failures+=("scenario bats generation failed"); }
  bats_files=$(ls bats/*.bats 2>/dev/null; [ -s "$BUILD/bats/scenarios.bats" ] && echo "$BUILD/bats/scenarios.bats")
fi
if [ -n "$bats_files" ]; then
  # shellcheck disable=SC2086
  bats --tap --timing $bats_files >"$LOGDIR/bats-model.tap" 2>&1
  count_tap bats-model "$LOGDIR/bats-model.tap"
  grep -E '^not ok' -A6 "$LOGDIR/bats-model.tap" | head -60
  echo "  $(grep -cE '^ok' "$LOGDIR/bats-model.tap") ok, $(grep -cE '^not ok' "$LOGDIR/bats-model.tap") not ok"
fi

echo "== bats (verbs lane)"
if [ "${MIGBED_SKIP_VERBS:-0}" = 1 ]; then
  echo "  ********************************************************************"
  echo "  * MIGBED_SKIP_VERBS=1: the verbs lane (real RDMA on rxe) is SKIPPED *"
  echo "  ********************************************************************"
elif ls bats/verbs/*.bats >/dev/null 2>&1; then
  log="$LOGDIR/bats-verbs.tap"
  t0=$(date +%s)
  # the fault matrix again, on real rxe: the same expected cause as on the model
  # (the faults that go through real verbs calls; the msg.* and post_* ones are protocol-level and
  # run on the model only, to keep make check under 20 minutes). migbed's per-wait bound is 5 s
  # x MIGBED_TEST_SCALE there (default 10 s): these 16 MiB guests wait well under a second when
  # all is well; a failed side no longer leaves its peer waiting a bound (run.c, finish_both:
  # the fault matrix and torture went from 362 s to 219 s of the lane, measured under load)
  SCN_GLOB='fault-reg-* fault-wc-* fault-modify-* fault-dereg-* fault-accept-* fault-connect-* fault-ep-* fault-cm-* fault-post-send-write-enomem.scn' scripts/gen-scenario-bats.sh bats/scenarios "$BUILD/bats/verbs-faults.bats" \
    --backend verbs --mem bytes --wait-timeout-ms $((5000 * ${MIGBED_TEST_SCALE:-1})) \
    || { failed=$((failed+1)); failures+=("verbs fault bats generation failed"); }
  verbs_files=""
  for f in bats/verbs/*.bats; do
    case " ${MIGBED_VERBS_SKIP:-} " in
      *" ${f##*/} "*) echo "  MIGBED_VERBS_SKIP: $f is left out of this lane" ;;
      *) verbs_files="$verbs_files $f" ;;
    esac
  done
  verbs_files="$verbs_files $BUILD/bats/verbs-faults.bats"
  if topologies/detect >/dev/null 2>&1; then
    echo "  native RDMA device found: running on it"
    # shellcheck disable=SC2086
    bats --tap --timing $verbs_files >"$log" 2>&1; rc=$?
  else
    echo "  no RDMA device on this host: running the verbs lane in one soft-RoCE VM boot"
    # the boot's own bound scales with the tests' (bats/helpers.bash): the lane takes ~17 min
    # on an idle 2-core machine, ~30 min with a CPU hog on one core
    export MIGBED_VM_TIMEOUT=${MIGBED_VM_TIMEOUT:-$((2700 * ${MIGBED_TEST_SCALE:-1}))}
    # shellcheck disable=SC2086
    topologies/vm/rxe-vm bats --tap --timing $verbs_files >"$log" 2>&1; rc=$?
  fi
  count_tap bats-verbs "$log"
  if [ $rc -ne 0 ] && ! grep -qE '^not ok' "$log"; then
    failed=$((failed + 1)); failures+=("verbs lane: exited $rc without test results (VM could not start?)")
    tail -n 40 "$log"
  fi
  grep -E '^not ok' -A6 "$log" | head -60
  echo "  verbs lane: $(grep -cE '^ok' "$log") ok, $(grep -cE '^not ok' "$log") not ok, wall $(( $(date +%s) - t0 )) s"
  # the tests that met an rxe stall (TRANSPORT_RETRY_EXCEEDED on a healthy wire) and ran once more
  stalls=$(grep -c '^# rxe stalled' "$log")
  if [ "$stalls" -gt 0 ]; then
    echo "  verbs lane: $stalls rxe stall(s) retried once (TRANSPORT_RETRY_EXCEEDED where the test expects none):"
    grep '^# rxe stalled' "$log" | sed 's/^/    /'
  fi
fi

if [ ${#failures[@]} -gt 0 ]; then
  echo "== failures"
  printf '  %s\n' "${failures[@]}"
fi
echo "logs: $LOGDIR"
if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
