#!/bin/bash
# fcntl(2) and flock(2) locks through the Linux kernel NFS client (one QEMU
# guest, ../shared/tools/kvm) against the ASan snfsd on 127.0.0.1:2049 with
# its own portmapper on port 111: an NFSv3 mount WITHOUT "nolock" (the
# guest's lockd finds snfsd's NLM v4 through that portmapper, no port
# options) and an NFSv4.2 mount of the same export in the same guest,
# whose locks live in the same table on the server. Guest side:
# locks_guest.sh (daemons, mounts) and locks_guest.py (the scenarios):
# negative controls, v3 against v3, v3 against v4 both ways, shared read
# locks, blocking F_SETLKW waiters (Linux's NLM client polls every 30 s,
# since snfsd's NLM_GRANTED call back cannot reach the guest), a waiter
# killed while waiting, locks dropped at exit and close, flock, and
# range arithmetic (downgrade, upgrade, split, to-EOF at 2^40).
# Then snfsd's own counters must show the NLM calls. Needs ports 111 and
# 2049 free. Takes 1.5-3 minutes (guest CPU emulated).
set -u
. "$(dirname "$0")/../lib.sh"
HERE=$ROOT/tests/interop
scratch_keep
EXP=$T_DIR/export
mkdir -p "$EXP"
OUT=$T_DIR/guest.out

# Another test's server may hold the ports for a moment: wait up to a minute.
guest_server "kernel locks" "$EXP" || exit 1
# The guest's lockd asks the portmapper for NLM v4 over TCP (the mount's
# transport); statd-less clients and other systems ask over UDP.
pm=$(python3 - "$HERE" <<'EOF' 2>&1
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import nfsrpc as N
with N.Client("127.0.0.1", 111) as c:
    print(c.pmap_getport(100021, 4), c.pmap_getport(100021, 4, N.IPPROTO_UDP),
          c.pmap_getport(100024, 1), c.pmap_getport(100024, 1, N.IPPROTO_UDP))
EOF
)
check_eq "portmap GETPORT NLM v4 tcp, udp, NSM v1 tcp, udp" "2049 2049 2049 2049" "$pm"

cd "$ROOT" || exit 1
t0=$(date +%s)
kvm_run "$OUT" "$T_DIR/guest.err" --timeout 600 -- bash "$HERE/locks_guest.sh" 10.0.2.2 "$EXP"
rc=$?
echo "# guest ran $(($(date +%s) - t0))s, exit status $rc"
check_eq "guest exit status" 0 "$rc"
[ "$rc" = 0 ] || tail -30 "$T_DIR/guest.err" | sed 's/^/# guest: /'
grep '^G|' "$OUT" | cut -c3- | sed 's/^/# /'

# Every result the guest must report, in order: "name|what it shows".
# A name missing from the guest's output fails (the guest died or a
# scenario did not get that far), as does one not listed here.
EXPECTED='
rpcbind|guest rpcbind started
statd|guest rpc.statd --no-notify started
statd-registered|guest statd registered with the guest rpcbind
mount-v3|mount -t nfs -o vers=3 (no nolock, no port options)
mount-v3b|second v3 mount, nosharecache
mount-v3n|control v3 mount with nolock, nosharecache
mount-v4|mount -t nfs -o vers=4.2 of the same export
v3-mount-has-no-nolock|/proc/mounts: the v3 mount has no nolock
v3-mount-local-lock-none|/proc/mounts: the v3 mount has local_lock=none (locks go to the server)
v3b-mount-has-no-nolock|/proc/mounts: the second v3 mount has no nolock
ctl-nolock-mount-shows-nolock|control: /proc/mounts shows nolock on the nolock mount
v4-mount-is-4.2|/proc/mounts: the v4 mount is vers=4.2
ctl-free-range-granted|control: a write lock on a range nobody holds is granted
ctl-same-owner-not-refused|control: a process locking over its own lock is not refused (POSIX)
ctl-same-owner-getlk-none|control: F_GETLK ignores the caller'"'"'s own lock (server TEST excludes the owner)
ctl-nolock-mount-blind-to-server-lock|control: a nolock mount does not see the lock another mount holds on the server
ctl-v3b-sees-it|control: ...while the lock-enabled second v3 mount is refused
v3-a-write-0-99|v3 A: write lock 0-99 granted
v3-b-write-50-149-refused-same-mount|v3 B (same mount): write 50-149 refused with EAGAIN/EACCES
v3-b-write-50-149-refused-other-mount|v3 B (other mount): write 50-149 refused by the server
v3-b-read-0-49-refused-other-mount|v3 B (other mount): read 0-49 refused under the write lock
v3-b-getlk-same-mount|v3 B (same mount): F_GETLK reports the write lock 0-99
v3-b-getlk-other-mount-nlm-test|v3 B (other mount): F_GETLK (NLM TEST) reports the write lock 0-99
v3-b-write-100-199-no-overlap|v3 B: write 100-199 beside it granted
v3-b-write-50-99-after-unlock|v3 B: write 50-99 granted after A unlocks
v3-a-write-0-49-beside|v3 A: write 0-49 beside B'"'"'s 50-199 granted
v3-a-write-0-50-refused|v3 A: write 0-50 (one byte into B'"'"'s range) refused
x-v4-write-refused-while-v3-holds|cross: v4.2 write 0-99 refused while v3 A holds it
x-v4-read-refused-while-v3-writes|cross: v4.2 read of byte 99 refused under v3 A'"'"'s write lock
x-v4-getlk-sees-v3-lock|cross: v4.2 F_GETLK (LOCKT) reports v3 A'"'"'s write lock 0-99
x-v4-write-granted-after-v3-unlock|cross: v4.2 write 0-99 granted after v3 A unlocks
x-v3-write-refused-while-v4-holds|cross: v3 write 0-99 refused while v4.2 C holds it
x-v3-read-refused-while-v4-writes|cross: v3 read 50-59 refused under v4.2 C'"'"'s write lock
x-v3-getlk-sees-v4-lock|cross: v3 F_GETLK (NLM TEST) reports v4.2 C'"'"'s write lock 0-99
x-v3-write-100-199-beside-v4|cross: v3 write 100-199 beside v4.2 C'"'"'s lock granted
x-v3-write-granted-after-v4-unlock|cross: v3 write 0-99 granted after v4.2 C unlocks
rd-v3-read|readers: v3 read lock 0-99 granted
rd-v4-read-shared-with-v3|readers: v4.2 read lock 0-99 shared with the v3 reader
rd-v3-writer-refused-by-both|readers: a v3 writer is refused while both read
rd-v4-writer-refused-by-both|readers: a v4.2 writer is refused while both read
rd-v3-writer-refused-by-v4-reader|readers: a v3 writer is refused by the v4.2 reader alone
rd-v4-writer-refused-by-v3-reader|readers: a v4.2 writer is refused by the v3 reader alone
rd-v4-reader-beside-v3-reader|readers: a v4.2 read lock beside the v3 reader granted
rd-writer-granted-after-readers|readers: the v3 writer is granted once all readers unlocked
blk-a-still-waiting|blocking: v3 F_SETLKW behind a v3 holder waits
blk-b-still-waiting|blocking: v3 F_SETLKW behind a v4.2 holder waits
blk-c-still-waiting|blocking: v4.2 F_SETLKW behind a v3 holder waits
blk-d-still-waiting|blocking: v3 F_SETLKW behind a holder on its own mount waits
blk-e-still-waiting|blocking: v4.2 F_SETLKW behind a v3 holder (released 10 s later) waits
blk-k-still-waiting|blocking: v3 F_SETLKW to be killed waits
blk-k-killed-waiter-holds-nothing|blocking: a v3 waiter killed while waiting does not keep the lock after the release (CANCEL)
blk-a-granted-to-waiter-at-release|blocking: at the v3 holder'"'"'s unlock the server gives the bytes to the waiting v3 LOCK (a v4.2 newcomer is refused)
blk-b-granted-to-waiter-at-release|blocking: at the v4.2 holder'"'"'s LOCKU the server gives the bytes to the waiting v3 LOCK (a v3 newcomer is refused)
blk-a-acquired|blocking: v3 waiter behind a v3 holder acquires after the release (within 75 s)
blk-b-acquired|blocking: v3 waiter behind a v4.2 holder acquires after the release
blk-c-acquired|blocking: v4.2 waiter behind a v3 holder acquires after the release
blk-d-acquired|blocking: v3 waiter on the holder'"'"'s mount acquires after the release
blk-e-acquired|blocking: v4.2 waiter behind the later v3 release acquires (CB_NOTIFY_LOCK)
blk-a-waiter-holds-after-grant|blocking: the granted v3 waiter holds the bytes on the server (v4.2 refused)
exit-v3-held-before-exit|exit: v3 A'"'"'s lock refuses another v3 process
exit-v3-holder-exit-releases|exit: after v3 A exits without unlocking, another v3 process gets the lock at once
exit-v4-held-before-exit|exit: v4.2 C'"'"'s lock refuses a v3 process
exit-v4-holder-exit-releases-for-v3|exit: after v4.2 C exits without unlocking, a v3 process gets the lock at once
close-v3-held-before-close|close: a v3 lock refuses another v3 process
close-other-fd-releases|close: closing another descriptor of the file drops the v3 lock (POSIX)
flock-v3-a-ex|flock: v3 A LOCK_EX granted
flock-v3-b-ex-refused-same-mount|flock: v3 B LOCK_EX (same mount) refused
flock-v3-b-ex-refused-other-mount|flock: v3 B LOCK_EX (other mount) refused by the server
flock-v4-ex-refused-by-v3-flock|flock: v4.2 LOCK_EX refused by v3 A'"'"'s flock
flock-v3-blocks-fcntl-lock|flock: v3 flock refuses another v3 process'"'"'s fcntl lock (whole-file lock on the server)
flock-v3-a-unlock|flock: v3 A LOCK_UN
flock-v3-b-ex-after-unlock|flock: v3 B LOCK_EX granted after A'"'"'s LOCK_UN
flock-v4-ex-refused-by-v3b-flock|flock: v4.2 LOCK_EX refused by v3 B'"'"'s flock
rng-v4-read-refused-by-v3-write|ranges: v4.2 read refused under a v3 write lock
rng-v3-downgrade-to-read|ranges: v3 write lock downgraded to read
rng-v4-read-granted-after-v3-downgrade|ranges: v4.2 read granted after the v3 downgrade
rng-v3-upgrade-refused-by-v4-reader|ranges: v3 upgrade to write refused while v4.2 reads
rng-v3-upgrade-granted-after-v4-unlock|ranges: v3 upgrade to write granted after the v4.2 unlock
rng-v4-write-in-the-hole-of-v3-lock|ranges: v4.2 write granted on 40-59 unlocked out of v3'"'"'s 0-99
rng-v4-write-byte-39-refused|ranges: v4.2 write on byte 39 (still v3'"'"'s) refused
rng-v4-write-byte-60-refused|ranges: v4.2 write on byte 60 (still v3'"'"'s) refused
rng-v3-write-byte-50-refused-by-v4|ranges: v3 write on byte 50 refused by v4.2'"'"'s lock in the hole
rng-v4-write-refused-far-past-v3-lock-to-eof|ranges: v4.2 write at 2^50 refused by a v3 lock from 2^40 to EOF (l_len 0)
rng-v4-write-just-below-v3-lock-to-eof|ranges: v4.2 write on byte 2^40-1 granted
rng-v3-getlk-reports-lock-to-eof|ranges: v3 F_GETLK (NLM TEST) reports the lock as 2^40, l_len 0
rng-v4-getlk-reports-lock-to-eof|ranges: v4.2 F_GETLK (LOCKT) reports the lock as 2^40, l_len 0
nsm-held-before-notify|SM_NOTIFY: a v3 write lock refused to the other mount before the notification
nsm-sm-notify-ran|SM_NOTIFY: sm-notify -f in the guest (its statd names the server it monitors) ran
nsm-restarted-client-locks-dropped|SM_NOTIFY: snfsd dropped the "restarted" client'"'"'s lock (the other mount gets it)
locks-guest-py|guest lock scenarios ran to the end
guest-lockd-registered|guest lockd (nlockmgr) registered with the guest rpcbind
umount-4|umount the v4.2 mount
umount-3n|umount the nolock mount
umount-3b|umount the second v3 mount
umount-3|umount the v3 mount
'
guest_results "$OUT" "$EXPECTED"

# The server's counters: the locks really went by NLM (TEST, LOCK,
# UNLOCK) and the killed waiter's CANCEL arrived.
"$SNFSD" --stats -s "$T_DIR/state" >"$T_DIR/stats" 2>&1
grep -i 'nlockmgr' "$T_DIR/stats" | sed 's/^/# stats: /'
nlm_calls() { awk -v p="$1" 'tolower($1) == "nlockmgr" && $3 == p { print $4; f = 1 } END { if (!f) print 0 }' "$T_DIR/stats"; }
for p in TEST LOCK UNLOCK CANCEL; do
	n=$(nlm_calls "$p")
	check "snfsd counted NLM $p calls ($n)" test "${n:-0}" -gt 0 2>/dev/null
done

# The v4.2 waiter (blk-c) was woken by CB_NOTIFY_LOCK over the mount's
# back channel: calls back went out and the guest's client answered
# every one NFS4_OK.
cb=$(sed -n 's/^NFSv4.1 calls back: \([0-9]*\) sent, \([0-9]*\) answered OK, \([0-9]*\) failed$/\1 \2 \3/p' "$T_DIR/stats")
echo "# stats: NFSv4.1 calls back (sent, OK, failed): ${cb:-none}"
read -r cb_sent cb_ok cb_failed <<<"${cb:-0 0 0}"
check "snfsd sent NFSv4.1 calls back (CB_NOTIFY_LOCK) to the guest ($cb_sent)" test "$cb_sent" -gt 0
check_eq "the guest answered every call back NFS4_OK" "$cb_sent 0" "$cb_ok $cb_failed"

check "snfsd alive after the guest" snfsd_alive
snfsd_stop TERM
check_eq "snfsd exits 0 on SIGTERM" 0 $?
# The server's complaints, if any (warnings, NLM call back trouble).
grep -iE 'nlm|nsm|warn|error' "$T_DIR/snfsd.log" | head -20 | sed 's/^/# snfsd.log: /'
check_no_sanitizer_reports kernel-locks
[ "$T_FAILS" = 0 ]
