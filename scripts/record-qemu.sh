#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/record-qemu.sh [--writer vcpu|qtest] [--thp off|keep] [OUT [SECONDS]] - record a QEMU guest's RAM as
# seen from its QEMU process, then migrate that trace (docs/record.md, 'Recording a QEMU guest').
#
# Needs soft-dirty tracking: run it inside the soft-RoCE VM,
#   MIGBED_VM_NDEV=0 topologies/vm/rxe-vm -- scripts/record-qemu.sh rec/qemu.trace
# A 64 MiB QEMU guest (-M pc) is the workload. The writer:
#   vcpu   (default) a vCPU runs topologies/qemu/guest-writer.c, a multiboot kernel built here
#          with gcc -m32 that sweeps guest RAM [16M, 48M) writing a word per page, for ever
#          (TCG: the guest's stores dirty QEMU's mapping of its RAM as a real guest's do)
#   qtest  no vCPU (the qtest accelerator); qtest's memset sweeps 1 MiB steps through guest RAM
#          as fast as QEMU answers (QEMU writes its guest's RAM as a device would)
# `migbed record --pid QEMU --region ADDR+64M` records that mapping (pc.ram: the anonymous
# 64 MiB mapping in /proc/PID/maps) for SECONDS (default 3); `migbed run --trace` migrates it.
# --thp off (default) turns transparent huge pages off system-wide while QEMU runs when it can
# (root, as in the VM; put back at exit): QEMU asks for them on guest RAM, and the kernel keeps
# one soft-dirty bit per 2 MiB huge page, so the trace would be 2 MiB-granular (record warns).
# Exit status: 0 recorded and migrated; 1 a step failed (named); 2 bad usage.
set -u -o pipefail
die() { echo "record-qemu: $*" >&2; exit 1; }
usage() { echo "record-qemu: $*" >&2; echo "usage: scripts/record-qemu.sh [--writer vcpu|qtest] [--thp off|keep] [OUT [SECONDS]]" >&2; exit 2; }
[ "${1:-}" = --help ] && { sed -n '2,/^set -u/{/^set -u/d;/SPDX-License-Identifier/d;s/^# \{0,1\}//;p}' "$0"; exit 0; }
writer=vcpu thp=off
while :; do
  case ${1:-} in
    --writer) [ $# -ge 2 ] || usage "--writer needs a value (vcpu or qtest)"; writer=$2; shift 2 ;;
    --thp) [ $# -ge 2 ] || usage "--thp needs a value (off or keep)"; thp=$2; shift 2 ;;
    *) break ;;
  esac
done
case $writer in vcpu|qtest) ;; *) usage "--writer '$writer': not vcpu or qtest" ;; esac
case $thp in off|keep) ;; *) usage "--thp '$thp': not off or keep" ;; esac
case ${1:-} in -*) usage "unknown option '$1'" ;; esac
here=$(cd "$(dirname "$0")/.." && pwd) || die "no repository folder"
migbed=${MIGBED:-$here/build/migbed}
out=${1:-qemu.trace} secs=${2:-3}
case $secs in ''|*[!0-9]*) usage "SECONDS '$secs' is not a whole number" ;; esac
[ -x "$migbed" ] || die "$migbed: not an executable (make first)"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not installed (topologies/vm/rxe-vm --setup installs it)"
ram_mib=64 step=$((1024 * 1024))
tmp=$(mktemp -d) || die "no temporary folder"
qpid='' rec='' thp_file=/sys/kernel/mm/transparent_hugepage/enabled thp_was=''
cleanup() {
  [ -n "$rec" ] && kill "$rec" 2>/dev/null
  [ -n "$qpid" ] && kill "$qpid" 2>/dev/null
  wait 2>/dev/null
  [ -n "$thp_was" ] && echo "$thp_was" >"$thp_file" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
if [ "$thp" = off ] && [ -w "$thp_file" ]; then
  thp_was=$(sed 's/.*\[\(.*\)\].*/\1/' "$thp_file")
  if [ "$thp_was" = never ]; then thp_was=''
  else echo never >"$thp_file" && echo "record-qemu: transparent huge pages off while QEMU runs (were $thp_was)" >&2
  fi
elif [ "$thp" = off ]; then
  echo "record-qemu: cannot turn transparent huge pages off ($thp_file not writable): if QEMU gets them, migbed record warns" >&2
fi

if [ "$writer" = vcpu ]; then
  src=$here/topologies/qemu
  gcc -m32 -ffreestanding -nostdlib -static -O2 -fno-pic -no-pie -Wl,-T,"$src/guest-writer.ld" \
      -Wl,--build-id=none -o "$tmp/guest-writer.elf" "$src/guest-writer.c" \
    || die "cannot build the guest writer (gcc -m32 -ffreestanding; see topologies/qemu/guest-writer.c)"
  # stopped (-S) until the recorder runs; the monitor on stdio to start it and read the pass count
  coproc QT { exec qemu-system-x86_64 -M pc -m ${ram_mib}M -display none -nodefaults -S \
                -kernel "$tmp/guest-writer.elf" -monitor stdio 2>/dev/null; }
else
  coproc QT { exec qemu-system-x86_64 -M pc -m ${ram_mib}M -display none -nodefaults -qtest stdio -qtest-log /dev/null 2>/dev/null; }
fi
qpid=$QT_PID

# one qtest command, its reply (bounded: 30 s)
qtest() {
  local reply
  echo "$*" >&"${QT[1]}" || die "qtest: QEMU is gone"
  while IFS= read -r -t 30 reply <&"${QT[0]}"; do
    case $reply in OK*) return 0 ;; FAIL*|ERR*) die "qtest '$*': $reply" ;; esac
  done
  die "qtest '$*': no reply within 30 s"
}
# one monitor command whose reply holds PATTERN (a glob); that line into $hmp_line (bounded:
# 30 s; not in $(...): a subshell has no coproc descriptors)
hmp_line=''
hmp() {
  local reply
  echo "$1" >&"${QT[1]}" || die "monitor: QEMU is gone"
  while IFS= read -r -t 30 reply <&"${QT[0]}"; do
    reply=${reply//$'\r'/}
    case $reply in *$2*) hmp_line=$reply; return 0 ;; esac
  done
  die "monitor '$1': no reply within 30 s"
}
if [ "$writer" = vcpu ]; then
  hmp "info status" "VM status"   # QEMU is up (paused): its RAM is mapped now
else
  qtest "readb 0x0"
fi

want=$((ram_mib * 1024 * 1024)) addr=''
while read -r range perms _ _ inode path; do
  [ "$perms" = rw-p ] && [ "$inode" = 0 ] && [ -z "${path:-}" ] || continue
  s=$((16#${range%-*})) e=$((16#${range#*-}))
  if [ $((e - s)) -eq "$want" ]; then addr=${range%-*}; break; fi
done </proc/"$qpid"/maps
[ -n "$addr" ] || die "no anonymous ${ram_mib} MiB mapping in /proc/$qpid/maps (pc.ram not found)"
echo "record-qemu: QEMU $qpid: pc.ram at 0x$addr, writer $writer, recording ${secs} s into $out" >&2

"$migbed" record -o "$out" --pid "$qpid" --region "0x$addr+${ram_mib}M" --interval-ms 50 --duration "$secs" &
rec=$!
if [ "$writer" = vcpu ]; then
  echo cont >&"${QT[1]}" || die "monitor: QEMU is gone"
  hmp "info status" "VM status: running"
  wait "$rec" || die "migbed record failed (status $?)"
  rec=''
  echo stop >&"${QT[1]}" || die "monitor: QEMU is gone"
  hmp "info status" "VM status: paused"
  # the passes the writer completed, from its last page (one word per page: the pass number)
  hmp "xp /1wx 0x2fff000" "0000000002fff000:"
  passes=${hmp_line##*: }
  echo "record-qemu: the guest writer's vCPU completed $((passes)) passes over 32 MiB (8192 pages each)" >&2
else
  end=$((SECONDS + secs)) i=0
  while [ "$SECONDS" -lt "$end" ]; do
    qtest "memset $(printf '0x%x' $(( (i * step) % want ))) $(printf '0x%x' "$step") $(printf '0x%x' $((i % 255 + 1)))"
    i=$((i + 1))
  done
  wait "$rec" || die "migbed record failed (status $?)"
  rec=''
  echo "record-qemu: the writer did $i memsets of $((step / 1024)) KiB" >&2
fi
"$migbed" trace stat "$out" || die "trace stat $out failed"
"$migbed" run --trace "$out" || die "migbed run --trace $out failed"
