#!/bin/bash
# Runs inside the guest for t_kill_writes.sh: mounts SERVER:EXPORT (NFSv3,
# hard, no portmapper) and copies PATTERN to the mount with dd while the
# host SIGKILLs and restarts snfsd. Small dirty limits keep UNSTABLE writes
# outstanding and COMMITs to redo when the client sees a new verifier; with
# DELAY > 0 the copy is also fed slowly (one MiB every DELAY s) through a
# pipe into one long-running dd (for small files, where one dd would end
# before the kills). Output lines: R|step rc, S|sha256 of the file read back (caches
# dropped), G|info.
# usage: kill_writes_guest.sh SERVER PORT EXPORT PATTERN [DELAY]
set -u
SERVER=$1 PORT=$2 EXPORT=$3 PAT=$4 DELAY=${5:-0}
export LC_ALL=C
. "$(dirname "$0")/../interop/guest_lib.sh"
# Small dirty limits: write back (UNSTABLE WRITEs) while dd is still going.
sysctl -q -w vm.dirty_background_bytes=1048576 vm.dirty_bytes=4194304 vm.dirty_expire_centisecs=100
mkdir -p /mnt
# proto= and mountvers= too: with every port, version and protocol given
# mount.nfs skips its portmap probing (which fails when some other server
# answers portmap on the host's port 111).
step mount mount -t nfs -o "vers=3,proto=tcp,mountvers=3,nolock,hard,port=$PORT,mountport=$PORT,mountproto=tcp" "$SERVER:$EXPORT" /mnt || exit 1
n=$(($(stat -c %s "$PAT") / 1048576))
t0=$(date +%s.%N)
echo "G|copy start"
feed() {
	local i
	for i in $(seq 0 $((n - 1))); do
		dd if="$PAT" bs=1M skip="$i" count=1 status=none
		sleep "$DELAY"
	done
}
if [ "$DELAY" = 0 ]; then
	step dd dd if="$PAT" of=/mnt/f bs=1M conv=fsync
else
	feed | step dd dd of=/mnt/f bs=1M iflag=fullblock conv=fsync
fi
step sync sync
echo "G|copy took $(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo '?') s"
echo 3 >/proc/sys/vm/drop_caches
echo "S|$(sha256sum </mnt/f | cut -c1-64)"
grep -E '^[[:space:]]*(WRITE|COMMIT):' /proc/self/mountstats | sed 's/^[[:space:]]*/G|mountstats /'
step umount umount /mnt
