#!/bin/bash
# NFSv4.1 read delegations with the Linux kernel client (one QEMU guest,
# ../shared/tools/kvm) against the ASan snfsd on 127.0.0.1:2049: one
# export with the `delegations` option and one without, mounted NFSv4.2,
# and the first again NFSv3 as a second client. deleg_guest.sh runs the
# scenarios: opens served under the delegation with no OPEN on the wire,
# recalls by an NFSv3 write, rename and remove and by another NFSv4.2
# client's write (libsnfs), each followed by the holder reading the
# change, and a lock cached under the delegation sent at the recall.
# Then snfsd's counters: delegations granted, recalled and returned, none
# revoked, every call back answered. Needs ports 111 and 2049 free.
set -u
. "$(dirname "$0")/../lib.sh"
HERE=$ROOT/tests/interop
scratch_keep
EXP=$T_DIR/deleg
PLAIN=$T_DIR/plain
OUT=$T_DIR/guest.out
mkdir -p "$EXP" "$PLAIN"
echo one >"$EXP/f1"
for i in 2 3 4 5 6 7 8; do echo "old$i" >"$EXP/f$i"; done
echo plain >"$PLAIN/p1"
chmod -R a+rwX "$EXP" "$PLAIN"

guest_server "kernel delegations" "$EXP" delegations \
	-e "$PLAIN:rw,insecure,no_root_squash" || exit 1

# The change beside snfsd (scenario 7): once the guest says so, write a
# delegated file here, on the server; the open waits for the recall.
(
	for _ in $(seq 1200); do [ -e "$EXP/go-local" ] && break; sleep 0.1; done
	a=$(date +%s.%N)
	echo local8 >"$EXP/f8"
	echo "$a $(date +%s.%N)" >"$T_DIR/local.time"
) &
LOCAL_PID=$!

cd "$ROOT" || exit 1
t0=$(date +%s)
kvm_run "$OUT" "$T_DIR/guest.err" --timeout 600 -- \
	bash "$HERE/deleg_guest.sh" 10.0.2.2 "$EXP" "$PLAIN" "$ROOT/build/snfs"
rc=$?
echo "# guest ran $(($(date +%s) - t0))s, exit status $rc"
check_eq "guest exit status" 0 "$rc"
[ "$rc" = 0 ] || tail -30 "$T_DIR/guest.err" | sed 's/^/# guest: /'
grep '^G|' "$OUT" | cut -c3- | sed 's/^/# /'
kill "$LOCAL_PID" 2>/dev/null
wait "$LOCAL_PID" 2>/dev/null
if [ -s "$T_DIR/local.time" ]; then
	echo "# the local write on the server waited $(awk '{ printf "%.2f", $2 - $1 }' "$T_DIR/local.time") s for the recall"
fi
check "the local write on the server went through" test -s "$T_DIR/local.time"

EXPECTED='
mount-v4|mount -t nfs -o vers=4.2 of the export with delegations
mount-v4-plain|mount -t nfs -o vers=4.2 of the export without
mount-v3|mount -t nfs -o vers=3,nolock of the export with delegations
first-read|a first read of a file on the delegations export
deleg-opens-local|ten more opens and reads of it: no OPEN on the wire (the delegation serves them)
plain-first-read|a first read of a file on the plain export
plain-opens-go-out|ten more opens of it there: ten OPENs (no delegation)
v3w-read|v3 write: the v4.2 client reads (and holds open) a delegated file
v3w-write|v3 write: an NFSv3 client truncates and writes it (recall)
v3w-holder-sees-it|v3 write: the v4.2 holder then reads the new data
v4w-read|v4 write: the v4.2 client reads a delegated file
v4w-snfs-cp|v4 write: libsnfs (another NFSv4.2 client) writes it (OPEN for writing recalls)
v4w-holder-sees-it|v4 write: the v4.2 holder then reads the new data
v3mv-read|v3 rename: the v4.2 client reads a delegated file
v3mv-rename|v3 rename: an NFSv3 client renames it (recall)
v3mv-holder-sees-rename|v3 rename: the v4.2 holder reads the file by its new name
v3rm-read|v3 remove: the v4.2 client reads a delegated file
v3rm-remove|v3 remove: an NFSv3 client removes it (recall)
v3rm-holder-sees-remove|v3 remove: an open of it by the v4.2 holder fails
own-read|own write: the v4.2 client reads a delegated file
own-write|own write: it writes the file itself
own-reread|own write: it reads its data back
own-on-server|own write: the NFSv3 client reads the same data from the server
lk-read|lock: the v4.2 client reads a delegated file
lk-held|lock: a process opens it and takes a read lock (cached under the delegation)
lk-v3-write|lock: an NFSv3 client writes the file (recall)
lk-sent-at-recall|lock: the v4.2 client sent the cached lock to the server at the recall (LOCK)
lk-holder-sees-write|lock: the v4.2 holder then reads the new data
local-read|local change: the v4.2 client reads a delegated file
local-go|local change: it asks the host to write the file on the server
local-holder-sees-it|local change: the write on the server is held back until the recall, then the holder reads it
umount-3|umount the v3 mount
umount-4p|umount the plain v4.2 mount
umount-4|umount the delegations v4.2 mount
'
guest_results "$OUT" "$EXPECTED"

"$SNFSD" --stats -s "$T_DIR/state" >"$T_DIR/stats" 2>&1
grep -E '^NFSv4.1 (delegations|calls back)' "$T_DIR/stats" | sed 's/^/# stats: /'
d=$(sed -n 's/^NFSv4.1 delegations: \([0-9]*\) held, \([0-9]*\) granted, \([0-9]*\) recalled, \([0-9]*\) returned, \([0-9]*\) revoked$/\1 \2 \3 \4 \5/p' "$T_DIR/stats")
read -r held granted recalled returned revoked <<<"${d:-0 0 0 0 0}"
check "snfsd granted read delegations ($granted)" test "$granted" -ge 5
check "snfsd recalled them ($recalled): v3 write, v4 write, rename, remove, lock, local write" test "$recalled" -ge 6
check "every recalled delegation was returned ($returned returned in all, at recalls and umounts)" test "$returned" -ge "$recalled"
check_eq "all granted returned by the end, none held, none revoked" "$granted 0 0" "$returned $held $revoked"
cb=$(sed -n 's/^NFSv4.1 calls back: \([0-9]*\) sent, \([0-9]*\) answered OK, \([0-9]*\) failed$/\1 \2 \3/p' "$T_DIR/stats")
read -r cb_sent cb_ok cb_failed <<<"${cb:-0 0 0}"
check_eq "the guest answered every call back NFS4_OK" "$cb_sent 0" "$cb_ok $cb_failed"
lk=$(awk '$1 == "4.2" && $2 == "LOCK" { print $3 }' "$T_DIR/stats")
echo "# stats: NFSv4.2 LOCK calls: ${lk:-0}"
check "the cached lock reached snfsd (NFSv4.2 LOCK calls: ${lk:-0})" test "${lk:-0}" -ge 1

check "snfsd alive after the guest" snfsd_alive
snfsd_stop TERM
check_eq "snfsd exits 0 on SIGTERM" 0 $?
grep -iE 'deleg|warn|error' "$T_DIR/snfsd.log" | head -20 | sed 's/^/# snfsd.log: /'
check_no_sanitizer_reports kernel-deleg
[ "$T_FAILS" = 0 ]
