#!/bin/bash
# NFSv3 clients' restarts where the host runs rpcbind and rpc.statd (the
# usual Debian NFS server host): snfsd registers with rpcbind, puts each
# lock holder's host under rpc.statd's watch (SM_MON), and drops a
# host's locks when rpc.statd relays its SM_NOTIFY (NLM procedure 16).
# Real rpcbind and rpc.statd run in a network and mount namespace of
# their own (unshare), so port 111 and /run of the machine stay free;
# the loopback device there carries 10.9.0.2-5 as the client hosts.
set -u
. "$(dirname "$0")/../../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" != 0 ]; then
	echo "ok - # SKIP needs root (namespaces, rpcbind, rpc.statd)"
	exit 0
fi
for b in rpcbind rpc.statd unshare; do
	# make deps-test installs them (rpcbind, nfs-common, util-linux)
	command -v $b >/dev/null || { notok "$b is installed"; exit 1; }
done
scratch
mkdir -p "$T_DIR/rw" "$T_DIR/ro" "$T_DIR/nsm/sm" "$T_DIR/nsm/sm.bak"
echo data >"$T_DIR/rw/f"
echo data >"$T_DIR/ro/f"

# Everything below runs in the namespaces; it prints the ok/not ok lines.
inside() {
	set -u
	ip link set lo up
	for i in 2 3 4 5; do ip addr add 10.9.0.$i/32 dev lo; done
	mount -t tmpfs tmpfs /run
	mkdir -p /run/rpcbind
	rpcbind -f -w >"$T_DIR/rpcbind.log" 2>&1 &
	RPCBIND=$!
	for _ in $(seq 1 50); do port_busy 111 && break; sleep 0.1; done
	rpc.statd -F -d -P "$T_DIR/nsm" >"$T_DIR/statd.log" 2>&1 &
	STATD=$!
	for _ in $(seq 1 50); do rpcinfo -p 2>/dev/null | grep -q status && break; sleep 0.1; done
	check "rpcbind and rpc.statd run in the namespace" sh -c 'rpcinfo -p | grep -q status'

	PORT=$(free_port)
	if ! snfsd_start "$PORT" -e "$T_DIR/rw:rw,insecure,no_root_squash" \
		-e "$T_DIR/ro:ro,insecure,no_root_squash"; then
		notok "snfsd starts"
		tail -20 "$T_DIR/snfsd.log" >&2
		kill "$STATD" "$RPCBIND"
		return
	fi
	check "snfsd registers with rpcbind" grep -q "registered nfs, mountd and nlockmgr with rpcbind" "$T_DIR/snfsd.log"
	check "nlockmgr v4 over UDP is snfsd's (where rpc.statd relays)" \
		sh -c "rpcinfo -p | grep -Eq '100021 +4 +udp +$PORT'"

	python3 "$HERE/nlm_cases.py" "$PORT" "$T_DIR/rw" "$T_DIR/ro" --statd "$T_DIR/nsm/sm"
	check "the log names the watched hosts" grep -q "nsm: rpc.statd watches 10.9.0.2 for us" "$T_DIR/snfsd.log"
	check "the log says whose locks went, and why" \
		grep -q "nsm: 10.9.0.2 restarted (state 3, relayed by rpc.statd): 2 lock owners dropped" "$T_DIR/snfsd.log"
	check "the forged relay is logged" grep -q "NSM_NOTIFY for 10.9.0.2 refused" "$T_DIR/snfsd.log"

	# Without rpc.statd, locks are still granted; the log says what is lost.
	kill "$STATD"
	wait "$STATD" 2>/dev/null
	python3 - "$PORT" "$T_DIR/rw" <<'PY'
import os, sys
sys.path.insert(0, os.environ["HERE"])
import nlm_cases as C
port, rw = int(sys.argv[1]), sys.argv[2]
fh = C.handle_of(port, rw, "f")
n = C.Nlm(port, "10.9.0.5")
C.eq("no rpc.statd: a lock is granted all the same", n.lock(C.Owner("clientF", 1), fh, 80, 1), C.GRANTED_S)
sys.exit(C.N.failures())
PY
	for _ in $(seq 1 50); do grep -q "rpc.statd will not watch 10.9.0.5" "$T_DIR/snfsd.log" && break; sleep 0.1; done
	check "... and the log warns that restarts go unnoticed" grep -q "rpc.statd will not watch 10.9.0.5" "$T_DIR/snfsd.log"
	check "the server lives" snfsd_alive
	snfsd_stop
	check_eq "snfsd exits cleanly" 0 $?
	kill "$RPCBIND"
	wait "$RPCBIND" 2>/dev/null
}
export HERE
export -f inside
unshare -n -m --propagation private bash -c ". '$HERE/../../lib.sh'; T_DIR='$T_DIR'; HERE='$HERE'; inside"
check_no_sanitizer_reports "nlm statd"
exit 0
