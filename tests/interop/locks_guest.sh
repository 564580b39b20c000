#!/bin/bash
# Runs inside the test guest for t_kernel_locks.sh: starts the guest's own
# rpcbind and rpc.statd (the kernel's lockd registers with the first and
# the NLM client asks the second to monitor the server; without them a
# lock-enabled NFSv3 mount or its first lock fails), mounts SERVER:EXPORT
# with NFSv3 WITHOUT "nolock" (lockd finds snfsd's NLM through snfsd's
# portmapper) and with NFSv4.2, and runs the lock scenarios of
# locks_guest.py across them. Everything goes to stdout, one prefix per
# stream:
#   R|name rc      a result (0: as expected); t_kernel_locks.sh turns each
#                  into an ok / not ok line
#   G|...          information (what was observed, timings, daemons)
# usage: locks_guest.sh SERVER EXPORT
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SERVER=$1 EXPORT=$2
export LC_ALL=C

. "$HERE/guest_lib.sh"

# Wait (up to 10 s) until the local rpcbind lists program $1.
registered() {
	for _ in $(seq 1 50); do
		rpcinfo -p 127.0.0.1 2>/dev/null | awk -v p="$1" '$1 == p { f = 1 } END { exit !f }' && return 0
		sleep 0.2
	done
	return 1
}

# The guest has no init: start rpcbind (it forks into the background and
# drops to its own user; /run is a fresh tmpfs, so no stale state) and
# statd. --no-notify: this guest never held locks before, so there is no
# one to tell of a reboot (and no server statd to tell it to).
step rpcbind rpcbind
step statd rpc.statd --no-notify
step statd-registered registered 100024
rpcinfo -p 127.0.0.1 2>&1 | sed 's/^/G|guest rpcbind before mounting: /'

# /mnt3: the mount under test (locks go to the server by NLM).
# /mnt3b: the same export again, nosharecache: its own inodes, so the
#   kernel's local lock table cannot see /mnt3's locks and every conflict
#   between the two is the server's answer.
# /mnt3n: nolock (the negative control: local locks only, blind to the
#   server's).
# /mnt4: NFSv4.2, same export: LOCK/LOCKT into the same lock table.
mkdir -p /mnt3 /mnt3b /mnt3n /mnt4
mounted=1
step mount-v3 mount -t nfs -o vers=3 "$SERVER:$EXPORT" /mnt3 || mounted=0
step mount-v3b mount -t nfs -o vers=3,nosharecache "$SERVER:$EXPORT" /mnt3b || mounted=0
step mount-v3n mount -t nfs -o vers=3,nolock,nosharecache "$SERVER:$EXPORT" /mnt3n || mounted=0
step mount-v4 mount -t nfs -o vers=4.2 "$SERVER:$EXPORT" /mnt4 || mounted=0
awk '$2 ~ /^\/mnt[34]/ { print "G|mount: " $0 }' /proc/mounts
if [ "$mounted" = 0 ]; then
	dmesg | tail -20 | sed 's/^/G|dmesg: /'
	exit 1
fi
opts() { awk -v m="$1" '$2 == m { print $4 }' /proc/mounts | tr , '\n'; }
# The kernel shows a lock-enabled v3 mount as local_lock=none and a
# nolock one as nolock,local_lock=all; the control mount proves the check
# reads the options right.
echo "R|v3-mount-has-no-nolock $(opts /mnt3 | grep -cx nolock)"
echo "R|v3-mount-local-lock-none $(opts /mnt3 | grep -qx local_lock=none; echo $?)"
echo "R|v3b-mount-has-no-nolock $(opts /mnt3b | grep -cx nolock)"
echo "R|ctl-nolock-mount-shows-nolock $(opts /mnt3n | grep -qx nolock; echo $?)"
echo "R|v4-mount-is-4.2 $(opts /mnt4 | grep -qx vers=4.2; echo $?)"

mkdir -p /mnt3/locks
t0=$(date +%s)
python3 "$HERE/locks_guest.py" /mnt3/locks /mnt3b/locks /mnt3n/locks /mnt4/locks
echo "R|locks-guest-py $?"
echo "G|lock scenarios took $(($(date +%s) - t0))s"

# lockd registered itself with the guest's rpcbind on the first
# lock-enabled mount (nlockmgr, 100021).
rpcinfo -p 127.0.0.1 2>&1 | sed 's/^/G|guest rpcbind after: /'
echo "R|guest-lockd-registered $(rpcinfo -p 127.0.0.1 2>/dev/null | awk '$1 == 100021 { f = 1 } END { print !f }')"
# What statd was asked to monitor (the server, for the v3 locks).
find /var/lib/nfs/sm -mindepth 1 -printf '%f\n' 2>&1 | sed 's/^/G|statd monitors: /'
dmesg | grep -iE 'lockd|nlm|statd|nfs:' | grep -v 'ommand line' | tail -20 | sed 's/^/G|dmesg: /'

rm -rf /mnt3/locks
for m in /mnt4 /mnt3n /mnt3b /mnt3; do
	step "umount-${m#/mnt}" umount "$m"
done
exit 0
