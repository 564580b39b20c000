#!/bin/bash
# Runs inside the test guest for t_kernel_v3.sh: mounts SERVER:EXPORT with
# NFSv3 (the portmapper must name the ports), runs fileops.sh on the mount and
# on a guest tmpfs, and prints everything on stdout with a prefix per stream:
#   R|step rc      results of the guest's own steps
#   N|...  L|...   fileops transcripts on the mount and on tmpfs
#   S|...          --summary of the mount after the run (caches dropped)
#   M|...          per-op counts from /proc/self/mountstats
#   G|...          information (rpcinfo, timings)
# usage: [FILEOPS_NFILES=N] kernel_v3_guest.sh SERVER EXPORT [EXTRA_MOUNT_OPTIONS]
# (extra options, e.g. port=,mountport= , only to try the script on a peer)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SERVER=$1 EXPORT=$2 EXTRA=${3:+,$3}
export LC_ALL=C

. "$HERE/guest_lib.sh"

# rpcbind v3/v4 DUMP (rpcinfo -p would connect to the universal address the
# server reports, 127.0.0.1, which is not the host from inside the guest).
if command -v rpcinfo >/dev/null; then
	rpcinfo -s "$SERVER" >/tmp/rpcinfo 2>&1
	sed 's/^/G|rpcinfo: /' /tmp/rpcinfo
	echo "R|rpcinfo-lists-nfs-mountd $(awk '$1 == 100003 || $1 == 100005 { n++ } END { print n + 0 }' /tmp/rpcinfo)"
fi
mkdir -p /mnt /tmp/local
step mount-tmpfs mount -t tmpfs -o size=512m tmpfs /tmp/local
# No port options: mount.nfs asks the portmapper on SERVER for NFS and MOUNT.
if ! step mount-nfs mount -t nfs -o "vers=3,nolock$EXTRA" "$SERVER:$EXPORT" /mnt; then
	dmesg | tail -5 | sed 's/^/G|dmesg: /'
	exit 1
fi
grep " /mnt " /proc/mounts | sed 's/^/G|mount: /'
step mkdir-nfs mkdir /mnt/t
step mkdir-local mkdir /tmp/local/t

# Both runs at once: the NFS one mostly waits for the network, and the
# guest is slow (CPU-emulated). Only the NFS run drops caches.
t0=$(date +%s)
(
	FILEOPS_TIMES=/tmp/local.times step fileops-local bash "$HERE/fileops.sh" /tmp/local/t /tmp/local.out
	echo "G|fileops took $(($(date +%s) - t0))s on tmpfs"
) >/tmp/local.steps &
FILEOPS_DROP_CACHES=1 FILEOPS_TIMES=/tmp/nfs.times step fileops-nfs bash "$HERE/fileops.sh" /mnt/t /tmp/nfs.out
echo "G|fileops took $(($(date +%s) - t0))s on NFS"
wait
cat /tmp/local.steps
echo "G|seconds per section on NFS:" $(cat /tmp/nfs.times)
echo "G|seconds per section on tmpfs:" $(cat /tmp/local.times)
sed 's/^/N|/' /tmp/nfs.out
sed 's/^/L|/' /tmp/local.out

sync
echo 3 >/proc/sys/vm/drop_caches
bash "$HERE/fileops.sh" --summary /mnt/t | sed 's/^/S|/'

# Per-op counts: "OP: ops trans timeouts bytes_sent bytes_recv ..."
awk '/per-op statistics/ { on = 1; next } on && NF > 1 && $2 > 0 { print "M|" $0 }' /proc/self/mountstats

step umount umount /mnt

# A plain mount, no type, version or port options: mount.nfs negotiates
# the highest version snfsd offers (4.2) on port 2049.
mkdir -p /mntp
if step mount-plain mount "$SERVER:$EXPORT" /mntp; then
	awk '$2 == "/mntp" { print "G|plain mount: " $0 }' /proc/mounts
	echo "R|plain-$(awk '$2 == "/mntp" { print $3 }' /proc/mounts) $(awk '$2 == "/mntp" { print $4 }' /proc/mounts | tr , '\n' | grep '^vers=')"
	echo "written over the plain mount" >/mntp/plain.txt
	echo 3 >/proc/sys/vm/drop_caches
	echo "R|plain-readback $(cat /mntp/plain.txt | tr ' ' _)"
	rm -f /mntp/plain.txt
	step umount-plain umount /mntp
fi
exit 0
