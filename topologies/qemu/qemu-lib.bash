# SPDX-License-Identifier: MIT
# qemu-lib.bash - start and drive real QEMUs for migbed's "QEMU in the loop" tests.
# Source it (bash); it defines functions only. Each QEMU gets a name and a work dir:
#   qemu_start NAME DIR [QEMU ARGS...]   start $QEMU (default qemu-system-x86_64) with
#                                       -M none defaults and QMP on a FIFO pair (in a private
#                                       mktemp dir: 9p shares cannot hold FIFOs); log DIR/NAME.log
#   qmp NAME JSON                       send one QMP command, print its reply line (events skipped)
#   qmp_hmp NAME 'HMP COMMAND'          run an HMP command through QMP, print its text output
#   qemu_migrate_wait NAME SECONDS      poll query-migrate until completed/failed; print final status
#   qemu_status NAME                    print the run state (query-status)
#   qemu_exit_status NAME SECONDS       wait for QEMU to exit by itself; print its status
#   qemu_stop NAME                      quit (bounded), then kill; the log stays in DIR/NAME.log
#   qemu_incoming_wait NAME SECONDS     like qemu_migrate_wait for a destination QEMU, which
#                                       exits when loading fails: prints completed,
#                                       "failed[: desc]", "exited N" or "timeout: ..."
#   qemu_route_src_via_rxe1             make an unbound RDMA connect to 198.18.0.1 leave on
#                                       rxe1 (198.18.0.2) so it crosses the veth wire
#   qemu_unroute_src_via_rxe1           remove that rule again, if this shell added it
#   qemu_probe PATH                     start PATH -M none once (QMP on stdio, nothing written)
#                                       and print what it is: KEY=VALUE lines (see below)
# No QEMU is left running: qemu_stop_all (trap it on EXIT) ends every QEMU started here.
# Nothing is written outside DIR.
# Every bound (the SECONDS arguments, the 30 s greeting and 60 s QMP reply waits) is
# multiplied by MIGBED_TEST_SCALE (a positive integer, default 1): the tests' one scale
# factor (bats/helpers.bash) for slower machines, instrumented builds and TCG.

QEMU=${QEMU:-qemu-system-x86_64}
declare -gA _QEMU_PID=() _QEMU_WATCH=() _QEMU_IN=() _QEMU_OUT=() _QEMU_DIR=() _QEMU_FIFOS=()

_qemu_err() { echo "qemu-lib: $*" >&2; }
_qemu_scaled() { echo $(($1 * ${MIGBED_TEST_SCALE:-1})); }

qemu_start() {
	local name=$1 dir=$2; shift 2
	local fifos pipe
	fifos=$(mktemp -d "${TMPDIR:-/tmp}/qemu-qmp.XXXXXX") || return 1
	_QEMU_FIFOS[$name]=$fifos
	pipe=$fifos/qmp
	mkfifo "$pipe.in" "$pipe.out" || return 1
	# A watcher subshell records QEMU's exit status in $fifos/exit: qemu_exit_status is
	# called as $(...), and a command substitution cannot `wait` for its parent's child.
	(
		"$QEMU" -M none -nodefaults -no-user-config -display none \
			-chardev "pipe,id=qmp0,path=$pipe" -mon chardev=qmp0,mode=control \
			"$@" </dev/null >"$dir/$name.log" 2>&1 &
		echo $! >"$fifos/pid.tmp" && mv "$fifos/pid.tmp" "$fifos/pid"
		rc=0; wait $! 2>/dev/null || rc=$?
		echo "$rc" >"$fifos/exit.tmp" && mv "$fifos/exit.tmp" "$fifos/exit"
	) &
	_QEMU_WATCH[$name]=$!
	_QEMU_DIR[$name]=$dir
	local i
	for ((i = 0; i < 100; i++)); do [ -e "$fifos/pid" ] && break; sleep 0.05; done   # allow-sleep: poll step, bounded (5 s), for the pid file
	[ -e "$fifos/pid" ] || { _qemu_err "$name: QEMU did not start"; return 1; }
	_QEMU_PID[$name]=$(<"$fifos/pid")
	local fin fout
	exec {fin}>"$pipe.in" {fout}<"$pipe.out"
	_QEMU_IN[$name]=$fin
	_QEMU_OUT[$name]=$fout
	local greeting
	if ! read -r -t "$(_qemu_scaled 30)" greeting <&"$fout"; then
		_qemu_err "$name: no QMP greeting within $(_qemu_scaled 30) s (see $dir/$name.log)"
		cat "$dir/$name.log" >&2
		return 1
	fi
	case $greeting in *'"QMP"'*) ;; *) _qemu_err "$name: bad QMP greeting: $greeting"; return 1;; esac
	qmp "$name" '{"execute":"qmp_capabilities"}' >/dev/null
}

# One command, one reply; asynchronous events before the reply go to DIR/NAME.events.
qmp() {
	local name=$1 cmd=$2 line i
	[ -n "${_QEMU_IN[$name]:-}" ] || { _qemu_err "$name: not started"; return 1; }
	kill -0 "${_QEMU_PID[$name]}" 2>/dev/null || { _qemu_err "$name: QEMU is not running"; return 1; }
	# in a subshell: a QEMU that died meanwhile gives SIGPIPE there, not in the caller
	(trap - PIPE; printf '%s\n' "$cmd" >&"${_QEMU_IN[$name]}") 2>/dev/null ||
		{ _qemu_err "$name: QMP pipe closed (QEMU exited?)"; return 1; }
	for ((i = 0; i < 1000; i++)); do
		if ! read -r -t "$(_qemu_scaled 60)" line <&"${_QEMU_OUT[$name]}"; then
			_qemu_err "$name: no QMP reply within $(_qemu_scaled 60) s to $cmd"
			return 1
		fi
		case $line in
		*'"event"'*) printf '%s\n' "$line" >>"${_QEMU_DIR[$name]}/$name.events" ;;
		*'"error"'*) printf '%s\n' "$line"; return 1 ;;
		*) printf '%s\n' "$line"; return 0 ;;
		esac
	done
	return 1
}

qmp_hmp() {
	local name=$1 cmd=$2 esc
	esc=${cmd//\\/\\\\}; esc=${esc//\"/\\\"}
	qmp "$name" "{\"execute\":\"human-monitor-command\",\"arguments\":{\"command-line\":\"$esc\"}}"
}

qemu_status() {
	local r
	r=$(qmp "$1" '{"execute":"query-status"}') || return 1
	r=${r#*\"status\": \"}; printf '%s\n' "${r%%\"*}"
}

# One query-migrate reply R: prints the final status (completed, or failed/cancelled with the
# error-desc if any) and returns 0 for completed, 1 for failed/cancelled; 2 (nothing printed)
# while the migration is still going.
_qemu_migrate_verdict() {
	local r=$1 st e=''
	st=${r#*\"status\": \"}; st=${st%%\"*}
	case $st in
	completed) echo completed; return 0 ;;
	failed | cancelled)
		case $r in *'"error-desc"'*) e=${r#*\"error-desc\": \"}; e=${e%%\"*} ;; esac
		echo "$st${e:+: $e}"; return 1 ;;
	esac
	return 2
}

# Prints the final migration status (completed / failed / ...) and the error-desc if any.
qemu_migrate_wait() {
	local name=$1 secs r st i
	secs=$(_qemu_scaled "$2")
	for ((i = 0; i < secs * 5; i++)); do
		r=$(qmp "$name" '{"execute":"query-migrate"}') || return 1
		st=${r#*\"status\": \"}; st=${st%%\"*}
		_qemu_migrate_verdict "$r"; case $? in 0) return 0 ;; 1) return 1 ;; esac
		sleep 0.2   # allow-sleep: poll step of a bounded query-migrate wait
	done
	echo "timeout: last status $st"
	return 1
}

# Wait up to SECONDS for QEMU NAME to exit on its own; print its exit status (128+N: signal
# N, e.g. 139 = SIGSEGV), or "running". A QEMU destination exits(1) when loading fails.
# Works in $(...): the status comes from the watcher's file, not from `wait`.
qemu_exit_status() {
	local name=$1 secs f=${_QEMU_FIFOS[$1]:-}/exit i
	secs=$(_qemu_scaled "$2")
	[ -n "${_QEMU_PID[$name]:-}" ] || { _qemu_err "$name: not started"; return 1; }
	for ((i = 0; i < secs * 10; i++)); do
		[ -e "$f" ] && break
		sleep 0.1   # allow-sleep: poll step of a bounded wait for the exit file
	done
	if [ -e "$f" ]; then cat "$f"; else echo running; fi
}

qemu_stop() {
	local name=$1 pid=${_QEMU_PID[$1]:-} i
	[ -n "$pid" ] || return 0
	qmp "$name" '{"execute":"quit"}' >/dev/null 2>&1 || true
	for ((i = 0; i < 50; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1   # allow-sleep: poll step of the bounded wait for QEMU to quit
	done
	kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
	wait "${_QEMU_WATCH[$name]}" 2>/dev/null
	exec {_QEMU_IN[$name]}>&- {_QEMU_OUT[$name]}<&-
	rm -rf "${_QEMU_FIFOS[$name]}"
	unset "_QEMU_PID[$name]" "_QEMU_WATCH[$name]" "_QEMU_IN[$name]" "_QEMU_OUT[$name]" "_QEMU_FIFOS[$name]"
	return 0
}

qemu_stop_all() {
	local n
	for n in "${!_QEMU_PID[@]}"; do qemu_stop "$n"; done
}

# An unbound rdma_resolve_addr(198.18.0.1) finds a local address and would use rxe0's
# internal loopback. This rule sends locally originated traffic for .1 through table 101
# (veth1, src .2), so the connection uses rxe1 and crosses the veth wire.
qemu_route_src_via_rxe1() {
	local rules
	rules=$(ip rule show) || return 1   # not piped into grep -q: with pipefail, ip may get SIGPIPE
	grep -q 'lookup 101' <<<"$rules" || { _qemu_err "no table 101: not in migbed's rxe VM?"; return 1; }
	grep -q '^5:' <<<"$rules" && return 0
	ip rule add pref 5 iif lo to 198.18.0.1 lookup 101 || return 1
	_QEMU_ROUTE_ADDED=1
}

# Undo qemu_route_src_via_rxe1 on a host (topologies/setup): only the rule this shell added.
qemu_unroute_src_via_rxe1() {
	[ "${_QEMU_ROUTE_ADDED:-0}" = 1 ] || return 0
	ip rule del pref 5 iif lo to 198.18.0.1 lookup 101 && _QEMU_ROUTE_ADDED=0
}

# Wait for a destination QEMU's incoming migration. A failed load ends the process (exit 1),
# so its end is a result too: "exited N" (its exit status). Returns 0 only for completed.
qemu_incoming_wait() {
	local name=$1 secs f=${_QEMU_FIFOS[$1]:-}/exit r st='' i
	secs=$(_qemu_scaled "$2")
	[ -n "${_QEMU_PID[$name]:-}" ] || { _qemu_err "$name: not started"; return 1; }
	for ((i = 0; i < secs * 5; i++)); do
		if [ -e "$f" ]; then echo "exited $(<"$f")"; return 1; fi
		if ! r=$(qmp "$name" '{"execute":"query-migrate"}' 2>/dev/null); then
			st=$(qemu_exit_status "$name" 10)
			if [ "$st" = running ]; then echo "timeout: QMP does not answer"; else echo "exited $st"; fi
			return 1
		fi
		st=${r#*\"status\": \"}; st=${st%%\"*}
		case $r in *'"status"'*) ;; *) st=none ;; esac
		_qemu_migrate_verdict "$r"; case $? in 0) return 0 ;; 1) return 1 ;; esac
		sleep 0.2   # allow-sleep: poll step of a bounded query-migrate wait
	done
	echo "timeout: last status $st"
	return 1
}

# qemu_probe PATH: what a QEMU binary is, from one short run of
#   PATH -M none -nodefaults -display none -S -incoming defer -qmp stdio
# fed qmp_capabilities, query-version, query-migrate-parameters, a migrate-set-parameters of
# x-rdma-chunk-size (1 MiB, the default), a migrate-incoming to rdma:256.0.0.0:1 (an address
# that cannot resolve: nothing listens) and quit. Prints KEY=VALUE lines:
#   qmp=yes|no               it started with -M none and answered QMP
#   first_line=TEXT          (qmp=no) the first thing it printed, if anything
#   status=N                 (qmp=no) its exit status (124: still running after 20 s)
#   version=MAJOR.MINOR.MICRO   package=TEXT
#   rdma=yes|no  rdma_said=TEXT   the migrate-incoming reply: "RDMA ..." = compiled in;
#                            "unknown migration protocol" (or anything else) = not
#   chunk_param=yes|no       query-migrate-parameters lists x-rdma-chunk-size, or
#                            migrate-set-parameters accepted it
# Writes nothing (QMP on stdin/stdout); bounded by a 20 s timeout.
qemu_probe() {
	local q=$1 out line rc=0 greet=no ver='' pkg='' rdma=no said='' chunk=no first=''
	out=$(printf '%s\n' '{"execute":"qmp_capabilities"}' \
		'{"execute":"query-version","id":"v"}' \
		'{"execute":"query-migrate-parameters","id":"p"}' \
		'{"execute":"migrate-set-parameters","arguments":{"x-rdma-chunk-size":1048576},"id":"s"}' \
		'{"execute":"migrate-incoming","arguments":{"uri":"rdma:256.0.0.0:1"},"id":"r"}' \
		'{"execute":"quit","id":"q"}' |
		timeout -k 2 20 "$q" -M none -nodefaults -no-user-config -display none -S \
			-incoming defer -qmp stdio 2>&1) || rc=$?
	while IFS= read -r line; do
		[ -n "$first" ] || first=$line
		case $line in
		'{"QMP": '*) greet=yes ;;
		*'"id": "v"'*)
			local k maj='' min='' mic=''
			for k in major minor micro; do
				[[ $line =~ \"$k\":\ ([0-9]+) ]] || continue
				case $k in major) maj=${BASH_REMATCH[1]} ;; minor) min=${BASH_REMATCH[1]} ;; *) mic=${BASH_REMATCH[1]} ;; esac
			done
			ver=$maj.$min.$mic
			[[ $line =~ \"package\":\ \"([^\"]*)\" ]] && pkg=${BASH_REMATCH[1]} ;;
		*'"id": "p"'*) case $line in *'"x-rdma-chunk-size"'*) chunk=yes ;; esac ;;
		*'"id": "s"'*) case $line in *'"return"'*) chunk=yes ;; esac ;;
		*'"id": "r"'*)
			if [[ $line =~ \"desc\":\ \"([^\"]*)\" ]]; then said=${BASH_REMATCH[1]}; else said=ok; fi
			case $said in ok | RDMA* | rdma*) rdma=yes ;; esac ;;
		esac
	done <<<"$out"
	echo "qmp=$greet"
	if [ $greet = no ]; then
		echo "first_line=${first:0:200}"
		echo "status=$rc"
		return 1
	fi
	echo "version=${ver:-unknown}"
	echo "package=$pkg"
	echo "rdma=$rdma"
	echo "rdma_said=$said"
	echo "chunk_param=$chunk"
}
