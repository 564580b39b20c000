#!/bin/bash
# NLM v4 (NFSv3 byte-range locks) from raw RPC against the ASan snfsd:
# TEST/LOCK/CANCEL/UNLOCK/FREE_ALL semantics between owners, POSIX splits
# within one, read sharing, bad handles and arguments (nlm_cases.py);
# then the client's side of NLM_GRANTED call backs and of the _MSG/_RES
# messages, played by the script itself (a portmapper on 111 and a lock
# manager). As root it runs in a network namespace of its own, so port
# 111 is always free (and other suites' untouched). The Linux kernel
# client's locks, v3 and v4 together, are in
# tests/interop/t_kernel_locks.sh.
set -u
if [ "$(id -u)" = 0 ] && [ -z "${T_NLM_NETNS:-}" ] && command -v unshare >/dev/null; then
	exec unshare -n env T_NLM_NETNS=1 bash -c \
		'ip link set lo up || echo "not ok - loopback up in the network namespace"; exec bash "$0"' "$0"
fi
. "$(dirname "$0")/../../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

scratch
mkdir -p "$T_DIR/rw" "$T_DIR/ro"
echo data >"$T_DIR/rw/f"
echo data >"$T_DIR/ro/f"
PORT=$(free_port)
if ! snfsd_start "$PORT" --no-portmap -e "$T_DIR/rw:rw,insecure,no_root_squash" \
	-e "$T_DIR/ro:ro,insecure,no_root_squash"; then
	notok "snfsd starts"
	tail -20 "$T_DIR/snfsd.log" >&2
	exit 1
fi

python3 "$HERE/nlm_cases.py" "$PORT" "$T_DIR/rw" "$T_DIR/ro"
check "the server lives after the NLM cases" snfsd_alive

if [ "$(id -u)" != 0 ] || port_busy 111; then
	echo "ok - # SKIP call backs: port 111 taken or not root"
else
	python3 "$HERE/nlm_cases.py" "$PORT" "$T_DIR/rw" "$T_DIR/ro" --callbacks
	check "the server lives after the call backs" snfsd_alive

	# A restart: the lock holder's host is on record, is told, reclaims.
	python3 "$HERE/nlm_cases.py" "$PORT" "$T_DIR/rw" "$T_DIR/ro" --restart-before
	check "the lock holder's host is on record in the state directory" test -s "$T_DIR/state/nlm.hosts"
	snfsd_stop
	check_eq "snfsd exits cleanly before the restart" 0 $?
	python3 "$HERE/nlm_cases.py" "$PORT" "$T_DIR/rw" "$T_DIR/ro" --restart-peer "$T_DIR/notify" &
	peer=$!
	for _ in $(seq 1 100); do [ -e "$T_DIR/notify.ready" ] && break; sleep 0.1; done
	SNFSD_NFS4_LEASE=4 snfsd_start "$PORT" --no-portmap -e "$T_DIR/rw:rw,insecure,no_root_squash" \
		-e "$T_DIR/ro:ro,insecure,no_root_squash" || notok "snfsd restarts"
	python3 "$HERE/nlm_cases.py" "$PORT" "$T_DIR/rw" "$T_DIR/ro" --restart-after "$T_DIR/notify"
	kill "$peer" 2>/dev/null
	wait "$peer" 2>/dev/null
	check "the log says who was told" grep -q "nsm: told 127.0.0.1 of the restart" "$T_DIR/snfsd.log"
	check "the log says who reclaimed" grep -q "nlm: hostA (127.0.0.1) reclaimed a write lock at 0+10" "$T_DIR/snfsd.log"

	# A told host stays on record (it may restart before reclaiming);
	# one that cannot be told (nothing on its port 111 now) is dropped.
	told() { grep -c "nsm: telling 1 NFSv3 client host" "$T_DIR/snfsd.log"; }
	restart() {
		snfsd_stop
		SNFSD_NFS4_LEASE=2 snfsd_start "$PORT" --no-portmap -e "$T_DIR/rw:rw,insecure,no_root_squash" \
			-e "$T_DIR/ro:ro,insecure,no_root_squash" || notok "snfsd restarts"
		sleep 1
	}
	n0=$(told)
	restart
	check_eq "restarted again: the host is told again" $((n0 + 1)) "$(told)"
	for _ in $(seq 1 50); do grep -q "nsm: cannot tell 127.0.0.1" "$T_DIR/snfsd.log" && break; sleep 0.2; done
	check "... which fails now (no status monitor there)" grep -q "nsm: cannot tell 127.0.0.1" "$T_DIR/snfsd.log"
	restart
	check_eq "a host that could not be told is not told again" $((n0 + 1)) "$(told)"
fi

snfsd_stop
check_eq "snfsd exits cleanly" 0 $?
check_no_sanitizer_reports "nlm"
exit 0
