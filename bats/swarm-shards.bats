#!/usr/bin/env bats
# SPDX-License-Identifier: MIT
# The bounded swarm of `make check` (issue 15): a fixed seed range of the model, run once
# unsharded with --check-determinism and again as shards under GNU parallel by the recipes of
# docs/swarm.md ("GNU parallel on one machine") and README.md ("Swarm testing"), taken from the
# documents themselves (only the seed range is made smaller). Each merge must equal the unsharded
# run (byte for byte but the check-determinism flag), and the range must hold no finding.
# Cost (measured 2026-12-03 on the 2-core machine, load average about 4): 200 seeds are 3.3 s of
# CPU plain, 5.8 s with --check-determinism; the file about 13 s of CPU in all.

load helpers
bats_require_minimum_version 1.5.0

SEEDS=1..200
NSEEDS=200

ROOT=$BATS_TEST_DIRNAME/..

# The unsharded run, each seed twice (--check-determinism), once for the file.
setup_file() {
  run "$MIGBED" swarm --seeds "$SEEDS" --check-determinism --shrink-max-runs 0 \
    --bundles "$BATS_FILE_TMPDIR/bundles" --json "$BATS_FILE_TMPDIR/all.json"
  echo "$output" >"$BATS_FILE_TMPDIR/all.out"
  echo "$status" >"$BATS_FILE_TMPDIR/all.status"
  # `migbed` on PATH, as the recipes spell it
  mkdir -p "$BATS_FILE_TMPDIR/bin"
  ln -sf "$(cd "$(dirname "$MIGBED")" && pwd)/$(basename "$MIGBED")" "$BATS_FILE_TMPDIR/bin/migbed"
}

setup() {
  cd "$BATS_TEST_TMPDIR"
  ALL=$BATS_FILE_TMPDIR/all.json
  if ! command -v parallel >/dev/null; then
    # CI installs it (scripts/deps.sh all): there its absence is a failure, not a skip
    if [ "${CI:-}" = true ]; then
      echo "GNU parallel is not installed (scripts/deps.sh all installs it)" >&2
      return 1
    fi
    skip "GNU parallel is not installed (scripts/deps.sh all installs it): the recipes are not tested"
  fi
}

# recipe FILE HEADING: the first fenced code block after the first line of FILE that contains
# HEADING, its seed range made $SEEDS
recipe() {
  awk -v h="$2" 'index($0, h) { found = 1; next }
                 found && /^```/ { if (inside) exit; inside = 1; next }
                 inside { print }' "$1" | sed "s/--seeds 1\.\.100000/--seeds $SEEDS/g"
}

# same_as_unsharded FILE: FILE is the unsharded run's document (its check-determinism flag aside)
same_as_unsharded() {
  run jq -e --slurpfile a "$ALL" '($a[0] | .["check-determinism"] = false) == .' "$1"
  [ "$status" -eq 0 ]
  run cmp <(jq -S 'del(.["check-determinism"])' "$ALL") <(jq -S 'del(.["check-determinism"])' "$1")
  [ "$status" -eq 0 ]
}

@test "the unsharded bounded swarm: $NSEEDS runs, deterministic, no finding" {
  [ "$(cat "$BATS_FILE_TMPDIR/all.status")" -eq 0 ]
  run jq -r '[.["check-determinism"], .summary.runs, .summary.findings, .summary.classes.nondeterministic,
              .summary.completed + .summary.failed, (.runs | map(select(.finding != null)) | length)] | @tsv' "$ALL"
  [ "$status" -eq 0 ]
  [ "$output" = "$(printf 'true\t%s\t0\t0\t%s\t0' "$NSEEDS" "$NSEEDS")" ]
  # the range is not trivial: both ends, and failures by fired faults (so healed reruns)
  run jq -r '[.summary.completed > 0, .summary.failed > 0, ([.runs[] | select(.fired > 0)] | length > 0)] | @tsv' "$ALL"
  [ "$output" = "$(printf 'true\ttrue\ttrue')" ]
  [[ "$(cat "$BATS_FILE_TMPDIR/all.out")" == *"swarm: $NSEEDS runs: "*", 0 findings"* ]]
}

@test "docs/swarm.md's GNU parallel recipe: 8 shards, merged, equal the unsharded run" {
  code=$(recipe "$ROOT/docs/swarm.md" "GNU parallel on one machine")
  [[ "$code" == "parallel --will-cite migbed swarm --seeds $SEEDS --shard {}/8 "* ]]
  [[ "$code" == *$'\n'"migbed swarm merge shard-*.json --json swarm.json" ]]
  PATH=$BATS_FILE_TMPDIR/bin:$PATH run bash -e -u -o pipefail -c "$code"
  echo "$output"
  [ "$status" -eq 0 ]
  # eight shards, each its share of the seeds and its lines, none with a finding
  for k in 1 2 3 4 5 6 7 8; do
    run jq -r '[.shard, (.runs | length), .summary.findings] | @tsv' "shard-$k.json"
    [ "$output" = "$(printf '%s/8\t25\t0' "$k")" ]
    run grep -c "^ *[0-9]\+  \(completed\|failed\)" "shard-$k.out"
    [ "$output" = 25 ]
  done
  same_as_unsharded swarm.json
}

@test "README's GNU parallel recipe (both cores): 2 shards, merged, equal the unsharded run" {
  code=$(recipe "$ROOT/README.md" "With GNU parallel on")
  [[ "$code" == "parallel --will-cite migbed swarm --seeds $SEEDS --shard {}/2 "* ]]
  PATH=$BATS_FILE_TMPDIR/bin:$PATH run bash -e -u -o pipefail -c "$code"
  echo "$output"
  [ "$status" -eq 0 ]
  run jq -r '.shard, .summary.runs, .summary.findings' swarm.json
  [ "$output" = "$(printf '1/1\n%s\n0' "$NSEEDS")" ]
  same_as_unsharded swarm.json
}

@test "a shard with a finding fails the parallel recipe (its exit status reaches parallel)" {
  # the liveness test hook turns seed 3 (failed by a fired rule) into a finding in shard 1/2
  code=$(recipe "$ROOT/README.md" "With GNU parallel on" | sed "s/--seeds $SEEDS/--seeds 1..4 --shrink-max-runs 0 --bundles b/")
  MIGBED_SWARM_TEST_UNHEALED_SEED=3 PATH=$BATS_FILE_TMPDIR/bin:$PATH run bash -e -u -o pipefail -c "$code"
  [ "$status" -ne 0 ]
  run jq -r '.summary.findings, .summary.classes.liveness' shard-1.json
  [ "$output" = "$(printf '1\n1')" ]
  # the merge still joins the shards, and says so by its exit status
  run migbed_merge shard-1.json shard-2.json
  [ "$status" -eq 1 ]
  run jq -r '.summary.findings, .runs[2].finding' merged.json
  [ "$output" = "$(printf '1\nliveness')" ]
}

migbed_merge() { "$MIGBED" swarm merge "$@" --json merged.json; }
