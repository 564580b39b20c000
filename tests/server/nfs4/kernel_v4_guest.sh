#!/bin/bash
# Runs inside the test guest for t_kernel_v4.sh: mounts SERVER:/ with
# vers=4.2 (the pseudo root; the export is reached below it),
# SERVER:EXPORT with vers=4.1 and with vers=4.0, runs fileops.sh (the
# part-1 script, 10,000 files in its big directory) on each and on a
# tmpfs, then
# the NFSv4.2 extras on the 4.2 mount: fallocate -l/-p, a SEEK_DATA/SEEK_HOLE
# walk, copy_file_range and cp --reflink=auto, and locks that must conflict
# between the two mounts (two clients). Output lines, by prefix:
#   R|step rc   the guest's steps   N|,O|,P|,L|  transcripts 4.2, 4.1, 4.0, tmpfs
#   S|          summary of the 4.2 tree   X|key value  results of the extras
#   M|          per-op counts of the 4.2 mount    G|  information
# usage: kernel_v4_guest.sh SERVER PORT EXPORT
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
FILEOPS=$HERE/../../interop/fileops.sh
SERVER=$1 PORT=$2 EXPORT=$3
export LC_ALL=C

. "$HERE/../../interop/guest_lib.sh"

mkdir -p /mnt42 /mnt41 /mnt40 /tmp/local
step mount-tmpfs mount -t tmpfs -o size=512m tmpfs /tmp/local
if ! step mount-42 mount -t nfs -o "vers=4.2,port=$PORT,retry=0" "$SERVER:/" /mnt42; then
	dmesg | tail -10 | sed 's/^/G|dmesg: /'
	exit 1
fi
if ! step mount-41 mount -t nfs -o "vers=4.1,port=$PORT,retry=0" "$SERVER:$EXPORT" /mnt41; then
	dmesg | tail -10 | sed 's/^/G|dmesg: /'
	exit 1
fi
# 4.0: SETCLIENTID, OPEN_CONFIRM, seqids, RENEW; its callback address is
# never dialled (no delegations).
if ! step mount-40 mount -t nfs -o "vers=4.0,port=$PORT,retry=0" "$SERVER:$EXPORT" /mnt40; then
	dmesg | tail -10 | sed 's/^/G|dmesg: /'
	exit 1
fi
grep " /mnt4" /proc/mounts | sed 's/^/G|mount: /'
ls /mnt42 | sed 's/^/G|pseudo root: /'
M42=/mnt42$EXPORT
step mkdir-42 mkdir "$M42/t42"
step mkdir-41 mkdir /mnt41/t41
step mkdir-40 mkdir /mnt40/t40
step mkdir-local mkdir /tmp/local/t

export FILEOPS_NFILES=${FILEOPS_NFILES:-10000}
# The four runs at once, each in its own directory: the guest is
# CPU-emulated and an NFS run mostly waits for its round trips. Only the
# NFS runs drop caches (which only makes the others ask the server again).
fileops_bg() { # tag dir out [drop]
	(
		FILEOPS_DROP_CACHES=${4:-0} FILEOPS_TIMES=/tmp/times$1 bash "$FILEOPS" "$2" "$3" >/tmp/fileops$1.err 2>&1
		echo "R|fileops-$1 $?"
		echo "G|fileops $1 seconds per section: $(tr '\n' ' ' </tmp/times$1)"
		sed "s/^/G|fileops-$1: /" /tmp/fileops$1.err | head -20
	) >/tmp/fileops$1.steps &
}
t0=$(date +%s)
fileops_bg local /tmp/local/t /tmp/local.out
fileops_bg 42 "$M42/t42" /tmp/n42.out 1
fileops_bg 41 /mnt41/t41 /tmp/n41.out 1
fileops_bg 40 /mnt40/t40 /tmp/n40.out 1
wait
echo "G|fileops (all four at once) took $(($(date +%s) - t0))s"
cat /tmp/fileops{42,41,40,local}.steps
sed 's/^/N|/' /tmp/n42.out
sed 's/^/O|/' /tmp/n41.out
sed 's/^/P|/' /tmp/n40.out
sed 's/^/L|/' /tmp/local.out
sync
echo 3 >/proc/sys/vm/drop_caches
bash "$FILEOPS" --summary "$M42/t42" | sed 's/^/S|/'

# ---- NFSv4.2 extras, on the 4.2 mount and the same steps on tmpfs ----
holes() { # FILE: the SEEK_DATA/SEEK_HOLE walk as "data START END" lines
	python3 - "$1" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
pos = 0
while pos < size:
    try:
        d = os.lseek(fd, pos, os.SEEK_DATA)
    except OSError:
        break
    h = os.lseek(fd, d, os.SEEK_HOLE)
    print("data", d, h)
    pos = h
PY
}
extras() { # DIR: print "key value" lines
	local d=$1
	cd "$d" || return
	fallocate -l 1M alloc && echo "alloc_size $(stat -c %s alloc)"
	python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 7 + i // 251) % 256 for i in range(262144)))' >mixed.src
	cp mixed.src mixed
	fallocate -p -o 65536 -l 131072 mixed && echo "punch ok"
	truncate -s 1M mixed
	echo "mixed_sum $(sha256sum <mixed | cut -c1-16)"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	holes mixed | sed 's/^/walk /'
	echo "reread_sum $(sha256sum <mixed | cut -c1-16)"
	python3 -c '
import os
s = os.open("mixed", os.O_RDONLY); d = os.open("cfr", os.O_WRONLY | os.O_CREAT, 0o644)
n = 0
while True:
    c = os.copy_file_range(s, d, 1 << 20)
    if c == 0: break
    n += c
print("cfr_bytes", n)'
	echo "cfr_sum $(sha256sum <cfr | cut -c1-16)"
	cp --reflink=auto mixed.src reflinked && echo "reflink_sum $(sha256sum <reflinked | cut -c1-16)"
	cd /
}
mkdir "$M42/x42" /tmp/local/x
extras "$M42/x42" | sed 's/^/X|nfs /'
extras /tmp/local/x | sed 's/^/X|local /'

# ---- locks between the two clients (4.1 and 4.2 mounts) ----
L41=/mnt41/lockfile L42=$M42/lockfile
echo x >"$L41"
flock "$L41" -c 'sleep 6' &
sleep 2
if flock -n "$L42" -c true; then echo "X|lock flock_conflict no"; else echo "X|lock flock_conflict yes"; fi
wait
if flock -n "$L42" -c true; then echo "X|lock flock_after_release yes"; else echo "X|lock flock_after_release no"; fi
python3 - "$L41" "$L42" <<'PY'
import fcntl, os, sys
a = open(sys.argv[1], "r+"); b = open(sys.argv[2], "r+")
fcntl.lockf(a, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 0)
try:
    fcntl.lockf(b, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 5)
    print("X|lock fcntl_overlap_conflict no")
except OSError:
    print("X|lock fcntl_overlap_conflict yes")
try:
    fcntl.lockf(b, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 20)
    print("X|lock fcntl_disjoint_ok yes")
except OSError:
    print("X|lock fcntl_disjoint_ok no")
PY
rm -f "$L41"

# ---- vers=4.0 beside 4.1: a lock held by one conflicts with the other ----
if grep -q " /mnt40 " /proc/mounts; then
	(
		cd /mnt40 || exit 1
		mkdir v40 && cd v40 || exit 1
		seq 1 20000 >numbers
		echo "X|v40 numbers_sum $(sha256sum <numbers | cut -c1-16)"
		echo "X|v40 expect_sum $(seq 1 20000 | sha256sum | cut -c1-16)"
		mv numbers renamed && ln -s renamed sl && echo "X|v40 readlink $(readlink sl)"
		echo "X|v40 ls $(ls | tr '\n' ' ')"
		flock /mnt41/lockfile2 -c 'sleep 4' &
		sleep 2
		if flock -n /mnt40/lockfile2 -c true; then echo "X|v40 lock_conflict no"; else echo "X|v40 lock_conflict yes"; fi
		wait
		cd / && rm -r /mnt40/v40 /mnt40/lockfile2 && echo "X|v40 cleanup ok"
	)
	step umount-40 umount /mnt40
fi

# Per-op counts of the 4.2 mount of the export (the crossing from the
# pseudo root is a submount with its own statistics).
awk -v m=" mounted on $M42 with " '
	/^device / { on = index($0, m) > 0; ops = 0; next }
	on && /per-op statistics/ { ops = 1; next }
	on && ops && NF > 1 && $2 > 0 { print "M|" $0 }' /proc/self/mountstats
step umount-41 umount /mnt41
step umount-42 umount /mnt42
exit 0
