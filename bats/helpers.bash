# Shared Bats setup: $MIGBED is the binary under test (make check exports it).
MIGBED=${MIGBED:-$BATS_TEST_DIRNAME/../build/migbed}
