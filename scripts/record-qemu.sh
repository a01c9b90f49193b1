#!/usr/bin/env bash
# scripts/record-qemu.sh [OUT [SECONDS]] - record a QEMU guest's RAM as seen from its QEMU
# process, then migrate that trace (docs/record.md, 'Recording a QEMU guest').
#
# Needs soft-dirty tracking: run it inside the soft-RoCE VM,
#   MIGBED_VM_NDEV=0 topologies/vm/rxe-vm -- scripts/record-qemu.sh rec/qemu.trace
# A 64 MiB QEMU guest (-M pc, no CPU running: the qtest accelerator) is the workload; the
# writer is qtest's memset, sweeping 1 MiB steps through guest RAM as fast as QEMU answers
# (memset writes guest RAM through QEMU's own mapping of it, as a vCPU or a device would).
# `migbed record --pid QEMU --region ADDR+64M` records that mapping (pc.ram: the anonymous
# 64 MiB mapping in /proc/PID/maps) for SECONDS (default 3); `migbed run --trace` migrates it.
# Exit status: 0 recorded and migrated; 1 a step failed (named); 2 bad usage.
set -u -o pipefail
die() { echo "record-qemu: $*" >&2; exit 1; }
[ "${1:-}" = --help ] && { sed -n '2,/^set -u/{/^set -u/d;/SPDX-License-Identifier/d;s/^# \{0,1\}//;p}' "$0"; exit 0; }
here=$(cd "$(dirname "$0")/.." && pwd) || die "no repository folder"
migbed=${MIGBED:-$here/build/migbed}
out=${1:-qemu.trace} secs=${2:-3}
case $secs in ''|*[!0-9]*) echo "record-qemu: SECONDS '$secs' is not a whole number" >&2; exit 2 ;; esac
[ -x "$migbed" ] || die "$migbed: not an executable (make first)"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not installed (topologies/vm/rxe-vm --setup installs it)"
ram_mib=64 step=$((1024 * 1024))

coproc QT { exec qemu-system-x86_64 -M pc -m ${ram_mib}M -display none -nodefaults -qtest stdio -qtest-log /dev/null 2>/dev/null; }
qpid=$QT_PID rec=''
cleanup() {
  [ -n "$rec" ] && kill "$rec" 2>/dev/null
  kill "$qpid" 2>/dev/null
  wait 2>/dev/null
}
trap cleanup EXIT

# one qtest command, its reply (bounded: 30 s)
qtest() {
  local reply
  echo "$*" >&"${QT[1]}" || die "qtest: QEMU is gone"
  while IFS= read -r -t 30 reply <&"${QT[0]}"; do
    case $reply in OK*) return 0 ;; FAIL*|ERR*) die "qtest '$*': $reply" ;; esac
  done
  die "qtest '$*': no reply within 30 s"
}
qtest "readb 0x0"                          # QEMU is up: its RAM is mapped now

want=$((ram_mib * 1024 * 1024)) addr=''
while read -r range perms _ _ inode path; do
  [ "$perms" = rw-p ] && [ "$inode" = 0 ] && [ -z "${path:-}" ] || continue
  s=$((16#${range%-*})) e=$((16#${range#*-}))
  if [ $((e - s)) -eq "$want" ]; then addr=${range%-*}; break; fi
done </proc/"$qpid"/maps
[ -n "$addr" ] || die "no anonymous ${ram_mib} MiB mapping in /proc/$qpid/maps (pc.ram not found)"
echo "record-qemu: QEMU $qpid: pc.ram at 0x$addr, recording ${secs} s into $out" >&2

"$migbed" record -o "$out" --pid "$qpid" --region "0x$addr+${ram_mib}M" --interval-ms 50 --duration "$secs" &
rec=$!
end=$((SECONDS + secs)) i=0
while [ "$SECONDS" -lt "$end" ]; do
  qtest "memset $(printf '0x%x' $(( (i * step) % want ))) $(printf '0x%x' "$step") $(printf '0x%x' $((i % 255 + 1)))"
  i=$((i + 1))
done
wait "$rec" || die "migbed record failed (status $?)"
rec=''
echo "record-qemu: the writer did $i memsets of $((step / 1024)) KiB" >&2
"$migbed" trace stat "$out" || die "trace stat $out failed"
"$migbed" run --trace "$out" || die "migbed run --trace $out failed"
