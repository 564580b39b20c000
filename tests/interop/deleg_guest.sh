#!/bin/bash
# Runs inside the test guest for t_kernel_deleg.sh: NFSv4.2 mounts of an
# export with read delegations (DELEG) and of one without (PLAIN), and an
# NFSv3 mount of DELEG (nolock) as the other client that changes files.
# Scenarios: opens served under the delegation (no OPEN on the wire) next
# to the plain export's; an NFSv3 write, rename and remove, and another
# NFSv4.2 client's write (libsnfs's snfs cp), each recalling the
# delegation, after which the holder sees the change; the holder writing
# its own delegated file; a lock taken under the delegation that must
# reach the server at the recall. Output: "R|name rc" results and "G|..."
# information (guest_lib.sh).
# usage: deleg_guest.sh SERVER DELEG PLAIN SNFS
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SERVER=$1 DELEG=$2 PLAIN=$3 SNFS=$4
export LC_ALL=C

. "$HERE/guest_lib.sh"

mkdir -p /mnt4 /mnt4p /mnt3
mounted=1
step mount-v4 mount -t nfs -o vers=4.2 "$SERVER:$DELEG" /mnt4 || mounted=0
step mount-v4-plain mount -t nfs -o vers=4.2 "$SERVER:$PLAIN" /mnt4p || mounted=0
step mount-v3 mount -t nfs -o vers=3,nolock "$SERVER:$DELEG" /mnt3 || mounted=0
if [ "$mounted" = 0 ]; then
	dmesg | tail -20 | sed 's/^/G|dmesg: /'
	exit 1
fi

# ops MOUNTPOINT OP: how many OP calls that mount made (mountstats);
# OPEN counts OPEN_NOATTR too (Linux's OPEN when it has the attributes).
ops() {
	awk -v m="$1" -v op="$2" '
		$1 == "device" { cur = $5 }
		cur == m && ($1 == op ":" || (op == "OPEN" && $1 == "OPEN_NOATTR:")) { n += $2 }
		END { print n + 0 }' /proc/self/mountstats
}
# res NAME CONDITION...: R|NAME 0 when the test command holds.
res() {
	local name=$1
	shift
	if "$@"; then echo "R|$name 0"; else echo "R|$name 1"; fi
}
content() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# 1. Opens under a delegation stay local; without one each goes out.
res first-read content /mnt4/f1 one
o0=$(ops /mnt4 OPEN) g0=$(ops /mnt4 GETATTR) a0=$(ops /mnt4 ACCESS)
for _ in $(seq 10); do cat /mnt4/f1 >/dev/null; done
do=$(($(ops /mnt4 OPEN) - o0)) dg=$(($(ops /mnt4 GETATTR) - g0)) da=$(($(ops /mnt4 ACCESS) - a0))
echo "G|10 cats of a delegated file: OPEN +$do GETATTR +$dg ACCESS +$da"
res deleg-opens-local test "$do" -eq 0
res plain-first-read content /mnt4p/p1 plain
o0=$(ops /mnt4p OPEN) g0=$(ops /mnt4p GETATTR) a0=$(ops /mnt4p ACCESS)
for _ in $(seq 10); do cat /mnt4p/p1 >/dev/null; done
po=$(($(ops /mnt4p OPEN) - o0)) pg=$(($(ops /mnt4p GETATTR) - g0)) pa=$(($(ops /mnt4p ACCESS) - a0))
echo "G|10 cats without delegations: OPEN +$po GETATTR +$pg ACCESS +$pa"
res plain-opens-go-out test "$po" -ge 10

# 2. An NFSv3 write recalls it; the holder then reads the new data.
res v3w-read content /mnt4/f2 old2
exec 3</mnt4/f2
t0=$(now)
res v3w-write sh -c 'echo new2 > /mnt3/f2'
echo "G|NFSv3 write of a delegated file took $(secs "$t0" "$(now)") s"
exec 3<&-
res v3w-holder-sees-it content /mnt4/f2 new2

# 3. Another NFSv4.2 client (libsnfs) writes: OPEN for writing recalls.
res v4w-read content /mnt4/f3 old3
echo new3 >/tmp/new3
t0=$(now)
res v4w-snfs-cp "$SNFS" cp -q /tmp/new3 "nfs://$SERVER$DELEG/f3?version=4.2"
echo "G|libsnfs NFSv4.2 write of a delegated file took $(secs "$t0" "$(now)") s"
res v4w-holder-sees-it content /mnt4/f3 new3

# 4. NFSv3 rename and remove of delegated files. The old name may stay
# in the client's name cache until it looks at the directory again, as
# with any server (names are not delegated; Linux 4.1 even opens a cached
# name by its handle, CLAIM_FH): what must hold is the file under its new
# name, and a removed file gone.
res v3mv-read content /mnt4/f4 old4
res v3mv-rename mv /mnt3/f4 /mnt3/f4b
res v3mv-holder-sees-rename content /mnt4/f4b old4
echo "G|the old name after the rename: $([ -e /mnt4/f4 ] && echo still cached || echo gone)"
res v3rm-read content /mnt4/f7 old7
res v3rm-remove rm /mnt3/f7
res v3rm-holder-sees-remove sh -c '! cat /mnt4/f7 2>/dev/null'

# 5. The holder writes its own delegated file: no recall needed.
res own-read content /mnt4/f5 old5
res own-write sh -c 'echo mine > /mnt4/f5'
res own-reread content /mnt4/f5 mine
res own-on-server content /mnt3/f5 mine

# 6. A lock taken under the delegation goes to the server at the recall:
# after the NFSv3 write, the lock is on the server (snfsd counts a LOCK
# there, t_kernel_deleg.sh checks) and the reader still holds it.
res lk-read content /mnt4/f6 old6
l0=$(ops /mnt4 LOCK)
python3 - /mnt4/f6 /mnt3/f6 <<'PY' &
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.lockf(fd, fcntl.LOCK_SH)
open("/tmp/lk.held", "w").close()
while not os.path.exists("/tmp/lk.done"):
    time.sleep(0.1)
os.close(fd)
PY
lkpid=$!
for _ in $(seq 100); do [ -e /tmp/lk.held ] && break; sleep 0.1; done
res lk-held test -e /tmp/lk.held
l1=$(ops /mnt4 LOCK)
echo "G|LOCK calls while delegated: +$((l1 - l0))"
res lk-v3-write sh -c 'echo new6 > /mnt3/f6'
l2=$(ops /mnt4 LOCK)
echo "G|LOCK calls after the recall: +$((l2 - l1))"
res lk-sent-at-recall test "$((l2 - l1))" -ge 1
touch /tmp/lk.done
wait "$lkpid"
res lk-holder-sees-write content /mnt4/f6 new6

# 7. A change beside snfsd: a program on the server writes a delegated
# file (t_kernel_deleg.sh waits for the go-local marker). Its open is
# held back by snfsd's lease until the delegation is recalled and back;
# then the holder reads what it wrote.
res local-read content /mnt4/f8 old8
res local-go touch /mnt3/go-local
seen=1
for _ in $(seq 150); do
	content /mnt4/f8 local8 && { seen=0; break; }
	sleep 0.2
done
echo "R|local-holder-sees-it $seen"

for m in /mnt3 /mnt4p /mnt4; do
	step "umount-${m#/mnt}" umount "$m"
done
