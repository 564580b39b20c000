#!/bin/bash
# Runs inside the test guest for t_kernel_nlm_ns.sh: two hosts in one
# guest. The server, snfsd, runs in network namespace "srv" on 10.9.0.2
# and answers the portmapper itself there (nothing else listens on its
# port 111); the client is the root namespace on 10.9.0.1 with the
# kernel NFS client, rpcbind, rpc.statd and the kernel's lockd; a veth
# pair joins them. So the server's NLM_GRANTED call backs and SM_NOTIFY
# reach the client's lockd and statd through the client's portmapper, as
# between two machines. Export and state directory are on a tmpfs.
# Mounts: /mnt3 (vers=3, no nolock), /mnt3b (vers=3, nosharecache: its
# own inodes, so conflicts between the two are the server's answers),
# /mnt4 (vers=4.2). The scenarios (nlm_ns_guest.py) restart the server.
# Output, one prefix per stream:
#   R|name rc   a result (0: as expected), t_kernel_nlm_ns.sh's ok/not ok
#   G|...       information (timings, daemons, dmesg, server log excerpts)
#   L|...       the server's whole log (stdout and stderr of every start)
# usage: nlm_ns_guest.sh SNFSD
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SNFSD=$1
export LC_ALL=C
. "$HERE/guest_lib.sh"

CLIENT=10.9.0.1 SERVER=10.9.0.2
W=/srv/nlmns
export NLMNS_SNFSD=$SNFSD NLMNS_ADDR=$SERVER NLMNS_EXPORT=$W/export NLMNS_STATE=$W/state
export NLMNS_SNAP=$W/state.snap NLMNS_LOG=$W/snfsd.log NLMNS_RUN=$W/run NLMNS_LEASE=10
PY="python3 $HERE/nlm_ns_guest.py"
t_start=$(date +%s)

finish() { # print the server's log and what the kernel said; always last
	dmesg | grep -iE 'lockd|nlm|statd|nfs|rpc|oom|killed|hung' | grep -v 'ommand line' | tail -30 | sed 's/^/G|dmesg: /'
	grep -iE 'nsm|nlm|grace|reclaim|portmap|warn|error|hang|shutting' "$NLMNS_LOG" 2>/dev/null | head -100 | sed 's/^/G|snfsd.log: /'
	sed 's/^/L|/' "$NLMNS_LOG" 2>/dev/null
	echo "G|guest script took $(($(date +%s) - t_start))s"
}
trap finish EXIT

# Wait (up to 10 s) until the portmapper at $1 lists program $2.
registered() {
	for _ in $(seq 1 50); do
		rpcinfo -p "$1" 2>/dev/null | awk -v p="$2" '$1 == p { f = 1 } END { exit !f }' && return 0
		sleep 0.2
	done
	return 1
}

net_setup() {
	set -e
	ip link set lo up
	ip netns add srv
	ip link add nlmc type veth peer name nlms
	ip link set nlms netns srv
	ip addr add "$CLIENT/24" dev nlmc
	ip link set nlmc up
	ip -n srv link set lo up
	ip -n srv addr add "$SERVER/24" dev nlms
	ip -n srv link set nlms up
}

mkdir -p $W
step tmpfs mount -t tmpfs -o size=256m nlmns $W || exit 1
mkdir -p "$NLMNS_EXPORT" "$NLMNS_STATE" "$NLMNS_RUN"
step netns-veth net_setup || exit 1
ip -br addr | sed 's/^/G|client ns: /'
ip -n srv -br addr | sed 's/^/G|server ns: /'

# The client's daemons, as locks_guest.sh starts them (no init here).
step rpcbind rpcbind
step statd rpc.statd --no-notify
step statd-registered registered 127.0.0.1 100024

step server-start $PY srv-start first || exit 1
# Nothing else in netns srv: snfsd answers port 111 on its own address,
# with NLM and NSM; the client's portmapper is another one.
step server-answers-portmap grep -q 'answering portmap' "$NLMNS_LOG"
step server-portmap-lists-nlm registered $SERVER 100021
step server-portmap-lists-nsm registered $SERVER 100024
rpcinfo -p $SERVER 2>&1 | sed 's/^/G|server portmap: /'
# The state directory before any lock: the control's restart uses it.
# (Its files: the control socket is the running server's.)
mkdir -p "$NLMNS_SNAP"
find "$NLMNS_STATE" -maxdepth 1 -type f -exec cp -a {} "$NLMNS_SNAP/" \;
ls -la "$NLMNS_SNAP" | sed 's/^/G|state before any lock: /'

mkdir -p /mnt3 /mnt3b /mnt4
mounted=1
step mount-v3 mount -t nfs -o vers=3 "$SERVER:$NLMNS_EXPORT" /mnt3 || mounted=0
step mount-v3b mount -t nfs -o vers=3,nosharecache "$SERVER:$NLMNS_EXPORT" /mnt3b || mounted=0
step mount-v4 mount -t nfs -o vers=4.2 "$SERVER:$NLMNS_EXPORT" /mnt4 || mounted=0
awk '$2 ~ /^\/mnt[34]/ { print "G|mount: " $0 }' /proc/mounts
[ "$mounted" = 1 ] || exit 1
opts() { awk -v m="$1" '$2 == m { print $4 }' /proc/mounts | tr , '\n'; }
echo "R|v3-mount-has-no-nolock $(opts /mnt3 | grep -cx nolock)"
echo "R|v3-mount-local-lock-none $(opts /mnt3 | grep -qx local_lock=none; echo $?)"
echo "R|v3b-mount-has-no-nolock $(opts /mnt3b | grep -cx nolock)"
echo "R|v3-mount-server-addr $(opts /mnt3 | grep -qx "addr=$SERVER"; echo $?)"

mkdir -p /mnt3/t
t0=$(date +%s)
# Bounded, so that a hung lock call still leaves time for the server's
# log to come back (the whole guest has 900 s).
timeout -k 10 420 $PY run /mnt3/t /mnt3b/t /mnt4/t
echo "R|nlm-ns-guest-py $?"
echo "G|scenarios took $(($(date +%s) - t0))s"

# lockd registered with the client's rpcbind (the call backs' target),
# and statd monitored the server (the name SM_NOTIFY must give).
echo "R|client-lockd-registered $(rpcinfo -p 127.0.0.1 2>/dev/null | awk '$1 == 100021 { f = 1 } END { print !f }')"
rpcinfo -p 127.0.0.1 2>&1 | sed 's/^/G|client rpcbind: /'
find /var/lib/nfs/sm /var/lib/nfs/sm.bak -mindepth 1 -printf '%p\n' 2>&1 | sed 's/^/G|statd: /'
ls -la "$NLMNS_STATE" | sed 's/^/G|state at the end: /'
timeout 20 "$SNFSD" --stats -s "$NLMNS_STATE" 2>&1 | grep -iE 'nlockmgr|status' | sed 's/^/G|stats: /'

timeout 60 rm -rf /mnt3/t
for m in /mnt4 /mnt3b /mnt3; do
	step "umount-${m#/mnt}" timeout 60 umount "$m" || umount -l "$m"
done
echo "G|final SIGTERM to the server"
final=$($PY srv-stop TERM 2>&1)
echo "R|server-final-sigterm-exit-0 $([ "$final" = 0 ]; echo $?)"
echo "G|server-final-sigterm-exit-0: exit status $final"
exit 0
