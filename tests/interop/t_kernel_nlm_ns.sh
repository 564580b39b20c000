#!/bin/bash
# NFSv3 locks between two hosts in one QEMU guest (../shared/tools/kvm):
# the ASan snfsd runs in the guest's network namespace "srv" on 10.9.0.2
# and answers the portmapper itself there; the Linux kernel client with
# rpcbind, rpc.statd and lockd is the root namespace on 10.9.0.1; a veth
# pair joins them. Unlike t_kernel_locks.sh (server on the host, guest
# behind QEMU's user network), the server can call the client back.
# Guest side: nlm_ns_guest.sh (network, daemons, mounts) and
# nlm_ns_guest.py (the scenarios):
#   1. a v3 lock refuses the second (nosharecache) v3 mount
#   2. an F_SETLKW waiter is granted within 5 s of the release: snfsd's
#      NLM_GRANTED reached the client's lockd (Linux's own retry: 30 s)
#   3. a held v3 lock (and a v4.2 one) survives a server restart, by
#      SIGTERM and by SIGKILL, with the same state directory: the server
#      tells the client's statd (SM_NOTIFY), lockd reclaims in the grace
#      period (SNFSD_NFS4_LEASE=10), a new lock is held back meanwhile,
#      the other mount is refused afterwards, the holder can unlock
#   4. the control of 3: a restart with the state directory as it was
#      before any lock (no record of the client) loses the lock to the
#      other mount
#   5. the server's host runs rpcbind and rpc.statd (in netns srv, a
#      mount namespace of their own): snfsd registers there, has
#      rpc.statd watch the client (SM_MON), and the client's restart
#      (sm-notify -f), relayed by rpc.statd, drops its locks
# The server log comes back from the guest ($T_DIR/snfsd.log) for the
# sanitizer check. Uses no host ports. Takes about 1.5 minutes (guest CPU
# emulated; most of it the two 10 s grace periods and the boot).
set -u
. "$(dirname "$0")/../lib.sh"
HERE=$ROOT/tests/interop
scratch_keep
OUT=$T_DIR/guest.out
if [ ! -x "$KVM" ]; then
	notok "kernel nlm ns: $KVM not found, skipping"
	exit 1
fi
if [ ! -x "$SNFSD" ]; then
	notok "kernel nlm ns: $SNFSD not built"
	exit 1
fi

cd "$ROOT" || exit 1
t0=$(date +%s)
kvm_run "$OUT" "$T_DIR/guest.err" --timeout 900 -- \
	ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}" \
	UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
	bash "$HERE/nlm_ns_guest.sh" "$SNFSD"
rc=$?
echo "# guest ran $(($(date +%s) - t0))s, exit status $rc"
check_eq "guest exit status" 0 "$rc"
[ "$rc" = 0 ] || tail -30 "$T_DIR/guest.err" | sed 's/^/# guest: /'
grep '^L|' "$OUT" | cut -c3- >"$T_DIR/snfsd.log"
grep '^G|' "$OUT" | cut -c3- | sed 's/^/# /'

# Every result the guest must report, in order: "name|what it shows".
# A name missing from the guest's output fails, as does one not listed.
EXPECTED='
tmpfs|guest tmpfs for the export and the state directory
netns-veth|netns srv with 10.9.0.2, veth to the root namespace on 10.9.0.1
rpcbind|client rpcbind started
statd|client rpc.statd --no-notify started
statd-registered|client statd registered with the client rpcbind
server-start|snfsd started in netns srv on 10.9.0.2:2049
server-answers-portmap|snfsd answers the portmapper itself in its namespace
server-portmap-lists-nlm|rpcinfo -p 10.9.0.2 lists NLM (100021)
server-portmap-lists-nsm|rpcinfo -p 10.9.0.2 lists NSM (100024)
mount-v3|mount -t nfs -o vers=3 10.9.0.2:EXPORT (no nolock)
mount-v3b|second v3 mount, nosharecache
mount-v4|mount -t nfs -o vers=4.2 of the same export
v3-mount-has-no-nolock|/proc/mounts: the v3 mount has no nolock
v3-mount-local-lock-none|/proc/mounts: the v3 mount has local_lock=none
v3b-mount-has-no-nolock|/proc/mounts: the second v3 mount has no nolock
v3-mount-server-addr|/proc/mounts: the v3 mount goes to addr=10.9.0.2
nb-a-write-0-99|1 basics: v3 A write lock 0-99 granted
nb-b-write-50-149-refused|1 basics: v3 B (other mount) write 50-149 refused by the server
nb-b-getlk-nlm-test|1 basics: v3 B F_GETLK (NLM TEST) reports the write lock 0-99
nb-b-write-100-199-beside|1 basics: v3 B write 100-199 beside it granted
nb-b-write-0-99-after-unlock|1 basics: v3 B write 0-99 granted after A unlocks
cb-b-waits-behind-holder|2 call back: v3 F_SETLKW on /mnt3b behind /mnt3'"'"'s lock waits
cb-granted-within-5s|2 call back: the waiter has the lock within 5 s of the release (NLM_GRANTED reached the client'"'"'s lockd)
cb-waiter-holds-after-grant|2 call back: the granted waiter holds the bytes on the server
cb-no-cannot-call-in-log|2 call back: no "cannot call" in the snfsd log
rs-term-held-before-restart|3 SIGTERM restart: A'"'"'s v3 lock refuses /mnt3b before the restart
rs-term-v4-held-before-restart|3 SIGTERM restart: C'"'"'s v4.2 lock refuses /mnt3b before the restart
rs-term-server-exit|3 SIGTERM restart: snfsd exits 0 on SIGTERM
rs-term-server-restarted|3 SIGTERM restart: snfsd listens again with the same state directory
rs-term-new-lock-held-back-in-grace|3a SIGTERM restart: a new v3 lock on free bytes is not granted in the grace period
rs-term-new-lock-granted-after-grace|3a SIGTERM restart: that lock is granted once the grace period is over
rs-term-v3-lock-reclaimed|3b SIGTERM restart: after grace /mnt3b is refused A'"'"'s bytes (lockd reclaimed A'"'"'s lock)
rs-term-v3-getlk-sees-reclaimed|3b SIGTERM restart: F_GETLK from /mnt3b reports A'"'"'s reclaimed lock 0-99
rs-term-free-bytes-granted|3b SIGTERM restart: bytes A does not hold are granted to /mnt3b
rs-term-v4-lock-reclaimed|3b SIGTERM restart: C'"'"'s v4.2 lock was reclaimed too (/mnt3b refused)
rs-term-a-unlocks|3c SIGTERM restart: A unlocks
rs-term-bytes-granted-after-a-unlocks|3c SIGTERM restart: /mnt3b gets A'"'"'s bytes after A unlocks
rs-term-c-unlocks|3c SIGTERM restart: C (v4.2) unlocks
rs-term-v4-bytes-granted-after-c-unlocks|3c SIGTERM restart: /mnt3b gets C'"'"'s bytes after C unlocks
rs-kill-held-before-restart|3 SIGKILL restart: A'"'"'s v3 lock refuses /mnt3b before the restart
rs-kill-v4-held-before-restart|3 SIGKILL restart: C'"'"'s v4.2 lock refuses /mnt3b before the restart
rs-kill-server-exit|3 SIGKILL restart: snfsd killed (status 137)
rs-kill-server-restarted|3 SIGKILL restart: snfsd listens again with the same state directory
rs-kill-new-lock-held-back-in-grace|3a SIGKILL restart: a new v3 lock on free bytes is not granted in the grace period
rs-kill-new-lock-granted-after-grace|3a SIGKILL restart: that lock is granted once the grace period is over
rs-kill-v3-lock-reclaimed|3b SIGKILL restart: after grace /mnt3b is refused A'"'"'s bytes (lockd reclaimed A'"'"'s lock)
rs-kill-v3-getlk-sees-reclaimed|3b SIGKILL restart: F_GETLK from /mnt3b reports A'"'"'s reclaimed lock 0-99
rs-kill-free-bytes-granted|3b SIGKILL restart: bytes A does not hold are granted to /mnt3b
rs-kill-v4-lock-reclaimed|3b SIGKILL restart: C'"'"'s v4.2 lock was reclaimed too (/mnt3b refused)
rs-kill-a-unlocks|3c SIGKILL restart: A unlocks
rs-kill-bytes-granted-after-a-unlocks|3c SIGKILL restart: /mnt3b gets A'"'"'s bytes after A unlocks
rs-kill-c-unlocks|3c SIGKILL restart: C (v4.2) unlocks
rs-kill-v4-bytes-granted-after-c-unlocks|3c SIGKILL restart: /mnt3b gets C'"'"'s bytes after C unlocks
ctl-held-before-restart|4 control: A'"'"'s v3 lock refuses /mnt3b before the restart
ctl-server-exit|4 control: snfsd exits 0 on SIGTERM
ctl-server-restarted|4 control: snfsd listens again with the state directory of before any lock
ctl-no-record-other-mount-gets-a-bytes|4 control: with no record of the client, /mnt3b gets A'"'"'s bytes after the restart (nothing reclaimed: check 3b can fail)
relay-server-exit|5 rpc.statd relay: snfsd exits 0 on SIGTERM
relay-rpcbind-statd-up|5 rpc.statd relay: rpcbind and rpc.statd run in netns srv (a mount namespace of their own)
relay-server-started|5 rpc.statd relay: snfsd listens again
relay-server-registered-with-rpcbind|5 rpc.statd relay: snfsd registered with that rpcbind (no portmapper of its own)
relay-a-lock|5 rpc.statd relay: v3 A write lock 0-99 granted (after the grace period)
relay-statd-watches-client|5 rpc.statd relay: snfsd had rpc.statd watch 10.9.0.1 (SM_MON)
relay-held-before-notify|5 rpc.statd relay: A'"'"'s lock refuses /mnt3b before the client'"'"'s restart
relay-sm-notify-ran|5 rpc.statd relay: sm-notify -f on the client ran
relay-restarted-client-locks-dropped|5 rpc.statd relay: /mnt3b gets A'"'"'s bytes (rpc.statd relayed the restart, snfsd dropped the client'"'"'s locks)
relay-log-says-relayed|5 rpc.statd relay: snfsd'"'"'s log says the restart came relayed by rpc.statd
nlm-ns-guest-py|guest scenarios ran to the end
client-lockd-registered|client lockd (nlockmgr) registered with the client rpcbind
umount-4|umount the v4.2 mount
umount-3b|umount the second v3 mount
umount-3|umount the v3 mount
server-final-sigterm-exit-0|snfsd exits 0 on the final SIGTERM
'
guest_results "$OUT" "$EXPECTED"

check "the guest returned the snfsd log" test -s "$T_DIR/snfsd.log"
check "the server logged the restarts' notifications" grep -q 'nsm: told 10.9.0.1 of the restart (as 10.9.0.2' "$T_DIR/snfsd.log"
check "the server logged the v3 client's reclaimed lock" grep -q 'nlm: .* (10.9.0.1) reclaimed a write lock' "$T_DIR/snfsd.log"
check_no_sanitizer_reports kernel-nlm-ns
[ "$T_FAILS" = 0 ]
