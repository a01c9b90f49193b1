#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# guest-init.sh - /init (PID 1) of the soft-RoCE guest that topologies/vm/rxe-vm boots.
#
# 1. mounts the host's / (virtio-9p, read-only) under a tmpfs overlay at /newroot: the guest
#    sees the host's files, and its own writes land in RAM and are thrown away;
# 2. mounts the per-run directory (9p "outdir", writable) and the writable host shares listed
#    in its "mounts" file (9p "rw0".., each at its own host path);
# 3. loads rdma_rxe & co from the Debian kernel's modules in this initramfs and creates the
#    soft-RoCE devices (rxevm.ndev=2: rxe0/veth0 198.18.0.1 <-> rxe1/veth1 198.18.0.2;
#    1: rxe0 on a dummy, 198.18.0.1; 0: modules only, no device);
# 4. runs $RUN/job.sh chrooted in /newroot as root, writes its status to $RUN/rc, powers off.
#
# Everything goes back to the host through files in the per-run directory: stdout, stderr,
# rc (absent = the guest failed before the job ended) and guest.log (this script's own log).
# The first line must name busybox: /bin/sh does not exist before `busybox --install`.
export PATH=/bin:/sbin
/bin/busybox --install -s /bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
hostname rxe-vm

RUN='' NDEV=2 LOG=''
for a in $(cat /proc/cmdline); do
  case "$a" in
    rxevm.out=*)  RUN=${a#rxevm.out=} ;;
    rxevm.ndev=*) NDEV=${a#rxevm.ndev=} ;;
  esac
done

die() {
  echo "rxe-vm guest: FATAL: $*" >&2          # the console (ttyS0): shown by the host on failure
  [ -n "$LOG" ] && echo "FATAL: $*" >>"$LOG"
  sync; poweroff -f; sleep 5; exit 1
}
up() { cut -d' ' -f1 /proc/uptime; }
mount9p() {  # TAG DIR [extra options]: virtio-9p, 512 kB messages
  mount -t 9p -o "trans=virtio,version=9p2000.L,msize=512000${3:+,$3}" "$1" "$2"
}

modprobe -a virtio_pci 9pnet_virtio 9p overlay || die "cannot load the virtio/9p/overlay modules"

# ---- root: host / read-only + tmpfs upper layer ----------------------------------------
mkdir -p /host /rw /newroot /out
# cache=loose: the host root is treated as unchanging during the run (exec and ld.so are
# much faster). The writable shares below use no cache, so the host sees writes at once.
mount9p hostroot /host ro,cache=loose || die "cannot mount the host root (9p hostroot)"
mount -t tmpfs -o mode=755 tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work /newroot \
  || die "cannot mount the overlay root"

[ -n "$RUN" ] || die "no rxevm.out= on the kernel command line"
mount9p outdir /out || die "cannot mount the per-run directory (9p outdir)"
LOG=/out/guest.log
echo "t=$(up) 9p root, overlay and run dir mounted" >>"$LOG"

mkdir -p /newroot/proc /newroot/sys /newroot/dev /newroot/run
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs tmpfs /newroot/dev/shm
# devtmpfs lacks the links udev would make; bash process substitution (bats) needs /dev/fd
ln -sfn /proc/self/fd /newroot/dev/fd
ln -sf /proc/self/fd/0 /newroot/dev/stdin
ln -sf /proc/self/fd/1 /newroot/dev/stdout
ln -sf /proc/self/fd/2 /newroot/dev/stderr
mount -t tmpfs tmpfs /newroot/run           # hide the host's /run (stale pid files, sockets)

# ---- writable host shares, parents first (the host sorted them), then the run dir -------
# Each line of $RUN/mounts is "TAG PATH"; PATH may contain spaces.
if [ -f /out/mounts ]; then
  while read -r tag path; do
    [ -n "$tag" ] || continue
    mkdir -p "/newroot$path" || die "cannot create mount point $path"
    mount9p "$tag" "/newroot$path" cache=mmap || die "cannot mount writable share $path ($tag)"
  done </out/mounts
fi
mkdir -p "/newroot$RUN" && mount -o bind /out "/newroot$RUN" || die "cannot bind the run dir at $RUN"

# ---- RDMA: modules, network, soft-RoCE devices ----------------------------------------
# crc32_generic: rxe needs the "crc32" shash for the RoCEv2 ICRC and it is no modinfo dependency.
modprobe -a crc32_generic rdma_rxe ib_uverbs rdma_ucm veth dummy || die "cannot load the RDMA modules"
echo "t=$(up) modules loaded" >>"$LOG"

# The host's iproute2 (ip, rdma) does the work through the chroot: busybox ip knows no veth,
# rules or rdma. One `ip -batch`, because every exec reads its binary over 9p (slow under TCG).
cat >/newroot/run/rxe-setup.sh <<'EOF'
set -e
case "$1" in
0) ip link set lo up ;;
1)
  ip -batch - <<'B'
link set lo up
link add rxe_d0 type dummy
addr add 198.18.0.1/24 dev rxe_d0
link set rxe_d0 up
B
  rdma link add rxe0 type rxe netdev rxe_d0 ;;
*)
  # Both veth ends live in this one netns (rdma_rxe in 6.1 works only in init_net). Policy
  # routing makes .1 <-> .2 cross the veth instead of lo (rxe drops what arrives on lo);
  # static neighbours because a host does not answer an ARP request from its own address.
  for i in all default; do
    echo 0 >/proc/sys/net/ipv4/conf/$i/rp_filter
    echo 1 >/proc/sys/net/ipv4/conf/$i/accept_local
  done
  ip -batch - <<'B'
link set lo up
link add veth0 address 02:00:c6:12:00:01 type veth peer name veth1 address 02:00:c6:12:00:02
addr add 198.18.0.1/24 dev veth0
addr add 198.18.0.2/24 dev veth1
link set veth0 up
link set veth1 up
rule add pref 10 iif veth0 lookup local
rule add pref 11 iif veth1 lookup local
route add 198.18.0.2 dev veth0 src 198.18.0.1 table 100
route add 198.18.0.1 dev veth1 src 198.18.0.2 table 101
rule add pref 20 from 198.18.0.1 to 198.18.0.2 lookup 100
rule add pref 21 from 198.18.0.2 to 198.18.0.1 lookup 101
rule add pref 30 lookup local
rule del pref 0 lookup local
neigh replace 198.18.0.2 lladdr 02:00:c6:12:00:02 dev veth0 nud permanent
neigh replace 198.18.0.1 lladdr 02:00:c6:12:00:01 dev veth1 nud permanent
B
  rdma link add rxe0 type rxe netdev veth0
  rdma link add rxe1 type rxe netdev veth1 ;;
esac
EOF
chroot /newroot /bin/sh /run/rxe-setup.sh "$NDEV" >>"$LOG" 2>&1 || die "rxe setup failed (see guest.log)"
echo "t=$(up) rxe ready: $(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')" >>"$LOG"

# ---- the job: written by the host (environment, cd, command) --------------------------
chroot /newroot /bin/bash "$RUN/job.sh" </dev/null >/out/stdout 2>/out/stderr
rc=$?
echo "t=$(up) job exited rc=$rc" >>"$LOG"
echo "$rc" >/out/rc
sync
poweroff -f
