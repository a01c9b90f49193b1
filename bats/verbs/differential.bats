#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# Differential: the same scenario and seed on the model and on real rxe must make the same
# protocol decisions: identical outcome, cause, rounds, registrations, transferred bytes,
# dirty syncs and virtual total time.

MIGBED=${MIGBED:-$BATS_TEST_DIRNAME/../../build/migbed}
S=$BATS_TEST_DIRNAME/../scenarios
load ../helpers

json_field() {  # json_field FILE PATH -> the value at the jq PATH, nothing if it is missing
  jq -r "$2 | select(. != null)" "$1"
}

differential() {  # differential SCENARIO ARGS...
  "$MIGBED" run "$@" "${MIGBED_WAIT[@]}" --mem bytes --backend model --quiet --json "$BATS_TEST_TMPDIR/m.json" || true
  "$MIGBED" run "$@" "${MIGBED_WAIT[@]}" --backend verbs --quiet --json "$BATS_TEST_TMPDIR/v.json" || true
  for k in .verdict .status .cause .side .metrics.migbed.rounds '.metrics.migbed."rdma-writes"' \
           .metrics.ram.transferred .metrics.ram.normal .metrics.ram.duplicate '.metrics.ram."dirty-sync-count"' \
           '.metrics."total-time"' .metrics.downtime .metrics.migbed.src.registrations .metrics.migbed.dst.registrations; do
    m=$(json_field "$BATS_TEST_TMPDIR/m.json" "$k"); v=$(json_field "$BATS_TEST_TMPDIR/v.json" "$k")
    echo "$k: model=$m verbs=$v"
    [ -n "$m" ]
    [ "$m" = "$v" ]
  done
}

@test "differential: default rand-set, 1M chunks" {
  differential --guest 64M --worker-bytes 8M
}

@test "differential: hotcold, 64M chunks" {
  differential "$S/model-hotcold-64m.scn" --guest 128M
}

@test "differential: pin-all, 32M chunks" {
  differential "$S/model-rand-set-32m-pin-all.scn" --guest 128M
}

@test "differential: chunk-size mismatch 64M -> 1M fails identically" {
  differential "$S/model-mismatch-64m-to-1m.scn"
}

@test "differential: idle guest, 1G chunks" {
  differential --pattern idle --guest 1G --chunk-size 1G
}
