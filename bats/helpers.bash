# SPDX-License-Identifier: MIT
# Shared Bats setup: $MIGBED is the binary under test (make check exports it).
MIGBED=${MIGBED:-$BATS_TEST_DIRNAME/../build/migbed}
[ -x "$MIGBED" ] || MIGBED=$BATS_TEST_DIRNAME/../../build/migbed

# The bad-trace corpus: each file's first line says where its defect is.
# "# expect: 7: some keyword" -> sets exp_line=7 exp_word="some keyword"
read_expect() {
  local first
  first=$(head -1 "$1")
  [[ "$first" =~ ^#\ expect:\ ([0-9]+):\ (.+)$ ]] || { echo "$1: no '# expect: LINE: keyword' line"; return 1; }
  exp_line=${BASH_REMATCH[1]}
  exp_word=${BASH_REMATCH[2]}
}

# --- waiting for events, never for a time -------------------------------------------------
# The tests never sleep to let "the other side get ready" or "the migration get under way":
# they wait for the event itself (a destination's ready file, a process paused by
# --pause-at at a given event-log line, a QEMU's query-migrate status), each wait bounded.
#
# Every bound comes from one scale factor: MIGBED_TEST_SCALE (a positive integer, default 1;
# the bounds below are sized for the soft-RoCE VM under TCG on an idle 2-core machine).
# make coverage sets 2 (an instrumented build is slower); give 2 or 3 on a loaded or slow
# machine. scripts/lint-tests.sh rejects a `sleep` in bats/ that is not a marked poll step.
MIGBED_TEST_SCALE=${MIGBED_TEST_SCALE:-1}
case $MIGBED_TEST_SCALE in
'' | *[!0-9]* | 0*) echo "MIGBED_TEST_SCALE='$MIGBED_TEST_SCALE': a positive integer" >&2; exit 2 ;;
esac
export MIGBED_TEST_SCALE

scaled() { echo $(($1 * MIGBED_TEST_SCALE)); }           # scaled SECONDS|MS -> bound
# scaled_ack_timeout EXP: an RC ack-timeout exponent (4.096 us x 2^EXP per try) with room for
# the scale: one more (twice the time) per doubling of MIGBED_TEST_SCALE
scaled_ack_timeout() {
  local e=$1 s=$MIGBED_TEST_SCALE
  while [ "$s" -gt 1 ]; do e=$((e + 1)); s=$((s / 2)); done
  echo "$e"
}

# migbed's own bound on every single wait (--wait-timeout-ms, default 10000), scaled: for the
# verbs runs that do not test a timeout (real time under TCG: e.g. a 1 GiB destination's
# verification after EOF took longer than 10 s in an instrumented build on a loaded machine)
MIGBED_WAIT=(--wait-timeout-ms "$(scaled 10000)")

# wait_until SECONDS CMD [ARG...]: run CMD every 0.1 s until it succeeds (0) or SECONDS x
# scale have passed (1, with a line on stderr).
wait_until() {
  local secs i
  secs=$(scaled "$1"); shift
  for ((i = 0; i < secs * 10; i++)); do
    "$@" && return 0
    sleep 0.1   # allow-sleep: the poll step of a bounded wait for an event
  done
  echo "wait_until: not true within ${secs} s: $*" >&2
  return 1
}

# _paused_pid PID: print the pid of PID or of one of its descendants that is stopped (state
# T), as --pause-at leaves migbed (PID may be a wrapper: make coverage runs migbed under
# coverage/migbed-record). 0 found; 1 none stopped yet; 2 PID has exited.
_paused_pid() {
  local root=$1 p pp st
  [ -e "/proc/$root" ] || return 2
  case $(cut -d' ' -f3 "/proc/$root/stat" 2>/dev/null) in Z | X | '') return 2 ;; esac
  local -A kids=()
  while read -r p pp st; do
    kids[$pp]+="$p "
    [ "$p" = "$root" ] && case $st in T*) echo "$p"; return 0 ;; esac
  done < <(ps -e -o pid=,ppid=,stat=)
  local queue=("$root") q
  while [ ${#queue[@]} -gt 0 ]; do
    q=${queue[0]}; queue=("${queue[@]:1}")
    for p in ${kids[$q]:-}; do
      case $(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null) in T | t) echo "$p"; return 0 ;; esac
      queue+=("$p")
    done
  done
  return 1
}
_paused_or_gone() { _paused_pid "$1" >/dev/null; [ $? -ne 1 ]; }

# wait_paused PID SECONDS: PID (started with --pause-at, directly or through a wrapper)
# reached its event and stopped. Fails (1) if it exited first or did not get there in time.
wait_paused() {
  wait_until "$2" _paused_or_gone "$1" || return 1
  _paused_pid "$1" >/dev/null || { echo "wait_paused: process $1 exited before its pause point" >&2; return 1; }
}

# resume PID: SIGCONT to PID and every descendant (the paused migbed under a wrapper too).
resume() {
  local p
  for p in $(ps -e -o pid=,ppid= | awk -v r="$1" '{ kid[$2] = kid[$2] " " $1 }
      END { q[1] = r; n = 1; for (i = 1; i <= n; i++) { print q[i]; m = split(kid[q[i]], k, " ");
            for (j = 1; j <= m; j++) q[++n] = k[j] } }'); do
    kill -CONT "$p" 2>/dev/null
  done
  return 0
}

_ready_or_gone() { [ -s "$1" ] || ! kill -0 "$2" 2>/dev/null; }

# start_dest OUT PORT ARGS...: `migbed dest --listen 198.18.0.1:PORT ARGS...` in the
# background (stdout+stderr to OUT), returns once it listens (its --ready-file). Sets dpid.
# Fails if it exited first or did not listen within 30 s x scale.
start_dest() {
  local out=$1 port=$2; shift 2
  local ready=$out.ready
  rm -f "$ready"
  "$MIGBED" dest --listen "198.18.0.1:$port" --ready-file "$ready" "$@" >"$out" 2>&1 3>&- &
  dpid=$!
  if ! wait_until 30 _ready_or_gone "$ready" "$dpid" || [ ! -s "$ready" ]; then
    echo "start_dest: migbed dest did not listen on port $port:" >&2
    cat "$out" >&2
    return 1
  fi
}

# CMD... under a pseudo-terminal (stdout and stderr both on it): $output is what it showed.
on_tty() {
  local q
  printf -v q '%q ' "$@"
  run script -qec "$q" /dev/null
}

# No QP, MR, PD or CM id of a migbed process may be left once it has exited.
no_rdma_leftovers() {
  local r
  for r in qp mr pd cm_id; do
    run rdma resource show "$r"
    echo "rdma resource show $r -> $status: $output"
    [ "$status" -eq 0 ]
    [[ "$output" != *migbed* ]]
  done
}

# The progress tests' setup: a scratch folder, a pseudo-terminal tool, a status line at every
# check (MIGBED_PROGRESS_INTERVAL_MS=0), and no forced MIGBED_PROGRESS from the caller.
progress_setup() {
  cd "$BATS_TEST_TMPDIR"
  export TMPDIR=$BATS_TEST_TMPDIR
  command -v script || skip "script (util-linux) is not installed"
  export MIGBED_PROGRESS_INTERVAL_MS=0
  unset MIGBED_PROGRESS
}
