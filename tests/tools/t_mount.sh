#!/bin/bash
# snfs-mount (ASan build) over snfsd (ASan build) and nfs-ganesha.
#  - NFSv3 on snfsd: the file-operations transcript against a local
#    directory, dd of 64 MiB both ways, cp --sparse=always with the holes
#    checked on the server's disk by a SEEK_DATA walk, ls -f of 200,000
#    entries, fio randrw with crc32c verification, the seed's sysbench
#    fileio rndrw (200M), and a SIGKILLed server: EIO within the timeout,
#    then recovery.
#  - NFSv4.2 on snfsd: the transcript; lseek SEEK_DATA/SEEK_HOLE equal to
#    the export's; fallocate (allocate, KEEP_SIZE, punch hole); a
#    copy_file_range done by server-side COPY (snfs-mount's counters:
#    SIGUSR1 writes them to its stats_file; snfsd's per-op counts);
#    statfs equal to the export's;
#    renameat2 flags, then mv.
#  - Options: kernel_cache, attr_timeout/entry_timeout, ro, version=3|4.2
#    (snfsd's per-version counts), plain umount, daemon mode.
#  - Locks: fcntl locks through two NFSv4.2 mounts (two clients) are the
#    server's (locks_mount.py: conflicts, F_GETLK, shared reads, upgrade,
#    to-EOF ranges, dropped at close and exit, F_SETLKW waiting for the
#    release, a waiter interrupted); over NFSv3 they stay local.
#  - nfs-ganesha: the transcript over NFSv3 and NFSv4.1; locks over 4.1.
# T_MOUNT_PARTS="v3 v42 opts locks ganesha" runs only some parts (the local
# transcript and the usage checks always run).
set -u
. "$(dirname "$0")/../lib.sh"
NENTRIES=${NENTRIES:-200000}
NFILES=${FILEOPS_NFILES:-1000}
DEAD_TIMEOUT=4 # the mount's timeout= for the dead-server check
PARTS=" ${T_MOUNT_PARTS:-v3 v42 opts locks ganesha} "
part() { [[ $PARTS == *" $1 "* ]]; }
SEEKMAP=$ROOT/tests/tools/seekmap.py
scratch
GPORT=
cleanup() {
	local m
	for m in "$T_DIR"/mnt*; do
		mountpoint -q "$m" 2>/dev/null && fusermount3 -u -z "$m" 2>/dev/null
	done
	[ -n "$GPORT" ] && "$PEERS/ganesha.sh" stop "$T_DIR/gexp" "$GPORT" >/dev/null 2>&1
	snfsd_stop KILL
	rm -rf "$T_DIR"
}
trap cleanup EXIT

if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	ok "skipped: no /dev/fuse or fusermount3"
	exit 0
fi
for t in fio sysbench; do
	command -v $t >/dev/null || notok "$t not installed (make deps-test)"
done

# mount_up NAME URL MNT [OPTS]: fuse_up (tests/lib.sh) with the counters
# in $T_DIR/NAME.stats on SIGUSR1 (mstat) and OPTS; snfs-mount's pid in
# MPID.
mount_up() {
	local rc
	fuse_up "$1" "$2" "$3" ${MOUNT_DEBUG:+-d} -o "stats_file=$T_DIR/$1.stats${4:+,$4}"
	rc=$?
	MPID=${FUSE_PID[$1]}
	return $rc
}

# fileops_cmp NAME DIR-ON-MOUNT [SED]: the transcript must equal the local
# one (both filtered through SED, for a server's known differences).
LOCAL_OUT=$T_DIR/fileops.local
fileops_cmp() {
	local name=$1 dir=$2 filter=${3:-}
	mkdir -p "$dir" || { notok "$name: mkdir on the mount"; return; }
	FILEOPS_NFILES=$NFILES "$ROOT/tests/interop/fileops.sh" "$dir" "$T_DIR/fileops.$name"
	if diff -u <(sed -e "$filter" "$LOCAL_OUT") <(sed -e "$filter" "$T_DIR/fileops.$name") \
		>"$T_DIR/fileops.$name.diff"; then
		ok "$name: fileops transcript equals the local one"
	else
		notok "$name: fileops transcript differs"
		head -40 "$T_DIR/fileops.$name.diff" >&2
	fi
}

# Data segments of a file by a SEEK_DATA/SEEK_HOLE walk, on one line.
datamap() { python3 "$SEEKMAP" walk "$1" | paste -sd' '; }
sha() { sha256sum <"$1" | cut -d' ' -f1; }
lap() { echo "# $1: $SECONDS s"; }

# mstat NAME KEY...: snfs-mount's counters (of the mount NAME, process
# MPID) for the KEYs, space-separated: SIGUSR1 makes it write
# $T_DIR/NAME.stats ("key value" lines) whole.
mstat() {
	local f=$T_DIR/$1.stats k out=
	shift
	rm -f "$f"
	kill -USR1 "$MPID"
	for _ in $(seq 1 100); do
		[ -e "$f" ] && break
		sleep 0.05
	done
	for k; do out="$out${out:+ }$(awk -v k="$k" '$1 == k { print $2 }' "$f")"; done
	echo "$out"
}
# srv_calls VERS: calls snfsd has counted for NFS version VERS (3 or 4).
srv_calls() {
	"$SNFSD" --stats -s "$T_DIR/state" 2>/dev/null |
		awk -v v="$1" '$1 == "nfs" && $2 == v { n += $4 } END { print n + 0 }'
}
# srv_ops MINOR [OP]: NFSv4 operations (all, or OP) snfsd has counted for
# minor version MINOR (4.1, 4.2), from its second table.
srv_ops() {
	"$SNFSD" --stats -s "$T_DIR/state" 2>/dev/null |
		awk -v v="$1" -v op="${2:-}" '/^NFSv4 operations/ { t = 1; next }
			t && $1 == v && (op == "" || $2 == op) { n += $3 } END { print n + 0 }'
}
# renameat2 FROM TO noreplace|exchange: 0 or the errno.
renameat2() {
	python3 -c 'import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
flags = {"noreplace": 1, "exchange": 2}[sys.argv[3]]
r = libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), flags)
print(ctypes.get_errno() if r else 0)' "$@"
}

mkdir -p "$T_DIR/local"
FILEOPS_NFILES=$NFILES "$ROOT/tests/interop/fileops.sh" "$T_DIR/local" "$LOCAL_OUT" ||
	notok "fileops on a local directory"

EXP=$T_DIR/exp
mkdir -p "$EXP"
PORT=$(free_port)
snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash" || notok "snfsd start"
URL="nfs://127.0.0.1$EXP?nfsport=$PORT&mountport=$PORT"

# RENAME_NOREPLACE and RENAME_EXCHANGE on the mount M (PFX names the
# checks): EEXIST when the kernel sees the target (it checks before asking
# FUSE), else EINVAL as documented (no NFS version can refuse to replace a
# name atomically); nothing moves; then mv must work.
rename_flags() {
	local pfx=$1
	echo a >"$M/ra"
	echo b >"$M/rb"
	check_eq "$pfx: renameat2(RENAME_NOREPLACE) onto an existing name gives EEXIST" \
		17 "$(renameat2 "$M/ra" "$M/rb" noreplace)"
	echo d >"$EXP/rd" # made beside the mount
	check_eq "$pfx: renameat2(RENAME_NOREPLACE) onto a name made on the export gives EEXIST" \
		17 "$(renameat2 "$M/ra" "$M/rd" noreplace)"
	check_eq "$pfx: renameat2(RENAME_NOREPLACE) to a new name gives EINVAL (documented)" \
		22 "$(renameat2 "$M/ra" "$M/rc" noreplace)"
	check_eq "$pfx: renameat2(RENAME_EXCHANGE) gives EINVAL (documented)" \
		22 "$(renameat2 "$M/ra" "$M/rb" exchange)"
	check_eq "$pfx: after renameat2 nothing moved (export)" "a b d absent" \
		"$(cat "$EXP/ra" "$EXP/rb" "$EXP/rd" | paste -sd' ') $([ -e "$EXP/rc" ] && echo present || echo absent)"
	if mv "$M/ra" "$M/rb"; then
		ok "$pfx: mv onto an existing name after that"
	else
		notok "$pfx: mv onto an existing name after that"
	fi
	check_eq "$pfx: mv: the target has the source's bytes, the source is gone (export)" \
		"a absent" "$(cat "$EXP/rb") $([ -e "$EXP/ra" ] && echo present || echo absent)"
	rm -f "$M/rb" "$M/rd"
}

# statfs_cmp PFX: statvfs and df of the mount M are the export's.
statfs_cmp() {
	local r
	# statvfs of the mount between two of the export's: the same figures
	# in bytes, to within the mount's 4 KiB blocks (other processes may
	# write to the disk meanwhile: 16 MiB and 1,000 inodes of slack
	# around the two readings).
	r=$(python3 -c 'import os, sys
e1, m, e2 = os.statvfs(sys.argv[1]), os.statvfs(sys.argv[2]), os.statvfs(sys.argv[1])
def b(s, f): return getattr(s, f) * s.f_frsize
bad = []
for f, slack, get in (("f_blocks", 4096, b), ("f_bfree", 16 << 20, b), ("f_bavail", 16 << 20, b),
                      ("f_files", 0, getattr), ("f_ffree", 1000, getattr), ("f_favail", 1000, getattr)):
    lo, hi = sorted((get(e1, f), get(e2, f)))
    if not lo - slack <= get(m, f) <= hi + slack:
        bad.append("%s: mount %d, export %d..%d" % (f, get(m, f), lo, hi))
print("; ".join(bad) or "same")' "$EXP" "$M")
	check_eq "$1: statvfs of the mount: the export file system's figures" same "$r"
	r=$(df -B1 --output=size "$M" | tail -1 | tr -d ' ')
	check_eq "$1: df: the export's size" "$(df -B1 --output=size "$EXP" | tail -1 | tr -d ' ')" "$r"
}

# ---------------- snfsd, NFSv3 ----------------
v3_part() {
	M=$T_DIR/mnt3
	if ! mount_up v3 "$URL" "$M" "timeout=$DEAD_TIMEOUT"; then
		notok "v3: mount"
		tail -20 "$T_DIR/v3.mlog" >&2
		return
	fi
	ok "v3: mounted"
	fileops_cmp v3 "$M/fileops"
	rm -rf "$M/fileops"

	lap "v3: dd in and out"
	head -c $((64 << 20)) /dev/urandom >"$T_DIR/big"
	dd if="$T_DIR/big" of="$M/big" bs=1M status=none conv=fsync
	check_eq "v3: dd 64 MiB in: same bytes on the server" "$(sha "$T_DIR/big")" "$(sha "$EXP/big")"
	dd if="$M/big" of="$T_DIR/big.back" bs=1M status=none
	check_eq "v3: dd 64 MiB out: same bytes" "$(sha "$T_DIR/big")" "$(sha "$T_DIR/big.back")"
	rm -f "$T_DIR/big.back" "$T_DIR/big" "$M/big"

	lap "v3: cp --sparse=always"
	# MiB-aligned random data with holes between and at the end; the
	# server's file must have the same data map.
	SP=$T_DIR/sparse
	truncate -s 40M "$SP"
	for mb in 1 7 8 20; do
		dd if=/dev/urandom of="$SP" bs=1M seek=$mb count=1 conv=notrunc status=none
	done
	cp --sparse=always "$SP" "$M/sparse"
	check_eq "v3: cp --sparse=always: same bytes" "$(sha "$SP")" "$(sha "$EXP/sparse")"
	check_eq "v3: cp --sparse=always: holes kept on the export (SEEK_DATA walk)" \
		"$(datamap "$SP")" "$(datamap "$EXP/sparse")"
	# NFSv3 has no SEEK, so all data, the hole at the end, ENXIO past it.
	check_eq "v3: SEEK_DATA/SEEK_HOLE on the mount (v3: one data run)" \
		"0 $((40 << 20))" "$(datamap "$M/sparse")"
	r=$(python3 -c 'import os,sys
fd=os.open(sys.argv[1],os.O_RDONLY)
try: os.lseek(fd, 50<<20, os.SEEK_DATA); print("no error")
except OSError as e: print(e.errno)' "$M/sparse")
	check_eq "v3: SEEK_DATA past the end gives ENXIO" 6 "$r"
	r=$(fallocate -p -o 0 -l 4096 "$M/sparse" 2>&1)
	case "$r" in *"not supported"* | *unsupported*) ok "v3: fallocate punch hole: EOPNOTSUPP" ;; *) notok "v3: fallocate punch hole ($r)" ;; esac
	rm -f "$M/sparse"
	statfs_cmp v3
	rename_flags v3

	lap "v3: ls -f"
	# ls -f on a big directory made on the server's disk.
	gcc -O2 -o "$ROOT/build/mkfiles" "$PEERS/mkfiles.c" || notok "build mkfiles"
	"$ROOT/build/mkfiles" dir "$EXP/many" "$NENTRIES" >/dev/null
	ls -f "$M/many" >"$T_DIR/many.ls"
	check_eq "v3: ls -f of $NENTRIES entries" $((NENTRIES + 2)) "$(wc -l <"$T_DIR/many.ls")"
	check_eq "v3: ls -f: no duplicates" $((NENTRIES + 2)) "$(sort -u "$T_DIR/many.ls" | wc -l)"
	rm -rf "$EXP/many" "$T_DIR/many.ls"

	lap "v3: fio"
	# random reads and writes, every block verified (4 x 8 MiB).
	mkdir -p "$M/fio"
	if (cd "$T_DIR" && fio --name=randrw --directory="$M/fio" --rw=randrw --size=8M --bs=4k \
		--verify_state_save=0 \
		--numjobs=4 --ioengine=psync --verify=crc32c --do_verify=1 \
		--group_reporting --output="$T_DIR/fio.out" >/dev/null 2>&1) &&
		grep -q 'err= 0' "$T_DIR/fio.out"; then
		ok "v3: fio randrw --verify=crc32c"
	else
		notok "v3: fio randrw --verify=crc32c"
		tail -20 "$T_DIR/fio.out" >&2
	fi
	rm -rf "$M/fio"

	lap "v3: sysbench fileio"
	# The seed's run (SEEDS.md: 200M in 128 files, 2 KiB blocks, 16
	# threads, rndrw 0.5), bounded to 10 s. The files are prepared on the
	# export, as bench/mount.sh does: 100,000 writes of 2 KiB through FUSE
	# take minutes on a loaded machine and test nothing the run does not.
	SB=(--file-test-mode=rndrw --file-block-size=2K --file-num=128 --file-total-size=200M
		--threads=16 --file-rw-ratio=0.5 --time=10)
	mkdir -p "$EXP/sb"
	(cd "$EXP/sb" && sysbench fileio "${SB[@]}" prepare) >"$T_DIR/sb.prep" 2>&1 ||
		notok "v3: sysbench prepare on the export"
	if (cd "$M/sb" && sysbench fileio "${SB[@]}" run) >"$T_DIR/sb.out" 2>&1 &&
		grep -q 'total time:' "$T_DIR/sb.out" && grep -q 'reads/s' "$T_DIR/sb.out" &&
		! grep -qi 'error\|FATAL' "$T_DIR/sb.out"; then
		ok "v3: sysbench fileio rndrw 200M: completes, no errors ($(grep 'reads/s' "$T_DIR/sb.out" | tr -s ' ' | cut -d: -f2 | head -1) reads/s)"
	else
		notok "v3: sysbench fileio rndrw 200M"
		tail -20 "$T_DIR/sb.out" >&2
	fi
	r=$(cd "$M/sb" && sysbench fileio "${SB[@]}" cleanup 2>&1 >/dev/null) &&
		check_eq "v3: sysbench cleanup through the mount" 0 "$(find "$EXP/sb" -type f | wc -l)" ||
		notok "v3: sysbench cleanup ($r)"
	rm -rf "$M/sb"

	lap "v3: a dead server"
	# EIO after the timeout, not a hang; then recovery.
	echo alive >"$M/probe"
	sleep 1.5 # past attr_timeout/entry_timeout, so stat asks the server
	snfsd_stop KILL
	t0=$(date +%s.%N)
	r=$(timeout 60 stat -c %s "$M/probe" 2>&1)
	t1=$(date +%s.%N)
	el=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	case "$r" in *"Input/output error"*) ok "dead server: stat gives EIO (${el}s)" ;; *) notok "dead server: stat gives EIO (got '$r' after ${el}s)" ;; esac
	if awk -v e="$el" -v t="$DEAD_TIMEOUT" 'BEGIN { exit !(e < 2 * t + 5) }'; then
		ok "dead server: EIO within the timeout (${el}s, timeout ${DEAD_TIMEOUT}s)"
	else
		notok "dead server: EIO took ${el}s (timeout ${DEAD_TIMEOUT}s)"
	fi
	snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash" || notok "snfsd restart"
	lap "v3: server restarted"
	r=
	for _ in $(seq 1 20); do
		r=$(cat "$M/probe" 2>/dev/null) && [ "$r" = alive ] && break
		sleep 0.5
	done
	check_eq "server back: the mount works again" alive "$r"
	echo again >"$M/probe2" && check_eq "server back: writes reach the server" again "$(cat "$EXP/probe2")"
	rm -f "$M/probe" "$M/probe2"
	lap "v3: unmount"
	fuse_down v3 "$M"
}

# ---------------- snfsd, NFSv4.2 ----------------
v42_part() {
	local before r a b n s0 c0 rb0 wb0 rx0 c1 rb1 wb1 rx1
	M=$T_DIR/mnt42
	before=$(srv_calls 3)
	if ! mount_up v42 "$URL&version=4.2" "$M"; then
		notok "v4.2: mount (snfsd speaks NFSv4.2)"
		tail -20 "$T_DIR/v42.mlog" >&2
		return
	fi
	ok "v4.2: mounted"
	fileops_cmp v42 "$M/fileops42"
	rm -rf "$M/fileops42"
	check_eq "v4.2: snfs-mount speaks 4.2" 4.2 "$(mstat v42 version)"

	lap "v4.2: SEEK"
	# Sparse files made on the export: data, holes, a hole at the end,
	# data at the end, all hole, empty, all data. The mount's SEEK_DATA/
	# SEEK_HOLE answers must be the export's, walk and single probes.
	truncate -s 40M "$EXP/sp"
	for mb in 1 7 8 20; do
		dd if=/dev/urandom of="$EXP/sp" bs=1M seek=$mb count=1 conv=notrunc status=none
	done
	cp --sparse=always "$EXP/sp" "$EXP/spend"
	dd if=/dev/urandom of="$EXP/spend" bs=1M seek=39 count=1 conv=notrunc status=none
	truncate -s 8M "$EXP/sphole"
	: >"$EXP/spempty"
	head -c 3000000 /dev/urandom >"$EXP/spdata"
	n="sp spend sphole spempty spdata"
	a=$(cd "$EXP" && python3 "$SEEKMAP" probe $n)
	b=$(cd "$M" && python3 "$SEEKMAP" probe $n)
	if [ "$a" = "$b" ]; then
		ok "v4.2: lseek SEEK_DATA/SEEK_HOLE equal to the export's (5 files, walk and probes)"
	else
		notok "v4.2: lseek SEEK_DATA/SEEK_HOLE differ from the export's"
		diff <(echo "$a" | tr ' ' '\n') <(echo "$b" | tr ' ' '\n') | head -20 >&2
	fi
	check_eq "v4.2: the sparse file's walk has its 3 data runs" \
		"1048576 2097152 7340032 9437184 20971520 22020096" "$(datamap "$M/sp")"
	rm -f "$EXP"/sp*

	lap "v4.2: fallocate"
	a=$(mstat v42 allocate)
	if fallocate -l 8M "$M/fa"; then ok "v4.2: fallocate -l 8M"; else notok "v4.2: fallocate -l 8M"; fi
	check_eq "v4.2: fallocate: the size grows (mount, export)" "8388608 8388608" \
		"$(stat -c %s "$M/fa") $(stat -c %s "$EXP/fa")"
	r="$(stat -c %b "$M/fa") $(stat -c %b "$EXP/fa")"
	if [ "${r% *}" = "${r#* }" ] && [ "${r% *}" -ge 16384 ]; then
		ok "v4.2: fallocate: st_blocks grow to 8 MiB, as on the export ($r)"
	else
		notok "v4.2: fallocate: st_blocks (mount export: $r, want >= 16384 and equal)"
	fi
	check_eq "v4.2: fallocate went as one ALLOCATE" $((a + 1)) "$(mstat v42 allocate)"
	# KEEP_SIZE inside the file allocates; past the end it cannot (ALLOCATE
	# extends the file): EOPNOTSUPP and the size stays.
	truncate -s 8M "$M/fk"
	fallocate -n -o 0 -l 4M "$M/fk" || notok "v4.2: fallocate -n inside the file"
	check_eq "v4.2: fallocate -n (KEEP_SIZE) inside the file: size kept, blocks allocated" \
		"8388608 yes" "$(stat -c %s "$EXP/fk") $([ "$(stat -c %b "$EXP/fk")" -ge 8192 ] && echo yes)"
	r=$(fallocate -n -o 8M -l 1M "$M/fk" 2>&1)
	case "$r" in *"not supported"* | *unsupported*) ok "v4.2: fallocate -n past the end: EOPNOTSUPP" ;; *) notok "v4.2: fallocate -n past the end (got '$r')" ;; esac
	check_eq "v4.2: fallocate -n past the end: the size stays (mount, export)" "8388608 8388608" \
		"$(stat -c %s "$M/fk") $(stat -c %s "$EXP/fk")"
	# Punch a hole in 4 MiB of data written through the mount.
	head -c 4M /dev/urandom >"$T_DIR/pu"
	cp "$T_DIR/pu" "$M/pu"
	b=$(stat -c %b "$EXP/pu")
	if fallocate -p -o 1M -l 2M "$M/pu"; then ok "v4.2: fallocate -p"; else notok "v4.2: fallocate -p"; fi
	dd if=/dev/zero of="$T_DIR/pu" bs=1M seek=1 count=2 conv=notrunc status=none
	check_eq "v4.2: fallocate -p: the range reads as zeros, the rest unchanged (mount)" \
		"$(sha "$T_DIR/pu")" "$(sha "$M/pu")"
	check_eq "v4.2: fallocate -p: the same bytes on the export" "$(sha "$T_DIR/pu")" "$(sha "$EXP/pu")"
	check_eq "v4.2: fallocate -p: SEEK_DATA skips the hole (mount)" \
		"0 1048576 3145728 4194304" "$(datamap "$M/pu")"
	check_eq "v4.2: fallocate -p: a real hole on the export (SEEK_DATA walk)" \
		"0 1048576 3145728 4194304" "$(datamap "$EXP/pu")"
	r=$(stat -c %b "$EXP/pu")
	if [ "$r" -le $((b - 4096)) ]; then
		ok "v4.2: fallocate -p: the export's file has 2 MiB fewer blocks ($b -> $r)"
	else
		notok "v4.2: fallocate -p: the export's blocks $b -> $r"
	fi
	rm -f "$M/fa" "$M/fk" "$M/pu" "$T_DIR/pu"

	lap "v4.2: copy_file_range"
	# Between two files on the mount: one server-side COPY; the 16 MiB
	# never cross the client (READ/WRITE payload and bytes received stay
	# far below the file's size).
	head -c 16M /dev/urandom >"$EXP/cs"
	read -r c0 rb0 wb0 rx0 <<<"$(mstat v42 copy read_bytes write_bytes bytes_received)"
	s0="$(srv_ops 4.2 COPY) $(($(srv_ops 4.2 READ) + $(srv_ops 4.2 READ_PLUS) + $(srv_ops 4.2 WRITE)))"
	python3 -c 'import os, sys
src = os.open(sys.argv[1], os.O_RDONLY)
dst = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
size, off = os.fstat(src).st_size, 0
while off < size:
    n = os.copy_file_range(src, dst, size - off, off, off)
    if n <= 0:
        break
    off += n
os.close(dst)
print(off)' "$M/cs" "$M/cd" >"$T_DIR/cfr.out" 2>&1
	check_eq "v4.2: copy_file_range copied 16 MiB" $((16 << 20)) "$(cat "$T_DIR/cfr.out")"
	check_eq "v4.2: copy_file_range: same bytes on the export" "$(sha "$EXP/cs")" "$(sha "$EXP/cd")"
	read -r c1 rb1 wb1 rx1 <<<"$(mstat v42 copy read_bytes write_bytes bytes_received)"
	if [ "$c1" -gt "$c0" ]; then
		ok "v4.2: copy_file_range used server-side COPY ($((c1 - c0)) COPY calls)"
	else
		notok "v4.2: copy_file_range: no COPY call (copy $c0 -> $c1)"
	fi
	read -r c0 r <<<"$s0"
	check_eq "v4.2: copy_file_range: snfsd ran COPY, and no READ, READ_PLUS or WRITE" "yes $r" \
		"$([ "$(srv_ops 4.2 COPY)" -gt "$c0" ] && echo yes) $(($(srv_ops 4.2 READ) + $(srv_ops 4.2 READ_PLUS) + $(srv_ops 4.2 WRITE)))"
	r=$((rb1 - rb0 + wb1 - wb0))
	n=$((rx1 - rx0))
	if [ "$r" -lt $((1 << 20)) ] && [ "$n" -lt $((1 << 20)) ]; then
		ok "v4.2: copy_file_range: the data did not cross the client ($r bytes READ/WRITE, $n received)"
	else
		notok "v4.2: copy_file_range: $r bytes of READ/WRITE, $n bytes received for 16 MiB"
	fi
	rm -f "$M/cs" "$M/cd"

	lap "v4.2: statfs"
	statfs_cmp v4.2
	rename_flags v4.2
	check_eq "v4.2: no NFSv3 call reached snfsd while mounted" "$before" "$(srv_calls 3)"
	fuse_down v42 "$M"
}

# ---------------- snfs-mount's options ----------------
# cat_twice NAME FILE: "READs of the first cat, READs of the second"
# (READ and READ_PLUS calls by snfs-mount's counters).
# READ + READ_PLUS calls so far, once they stop moving: the kernel's
# read-ahead may still have calls of the last read under way when cat
# returns, and they must count for that read, not the next.
settled_reads() {
	local x y
	y=$(mstat "$1" read read_plus | awk '{ print $1 + $2 }')
	for _ in $(seq 1 20); do
		x=$y
		sleep 0.2
		y=$(mstat "$1" read read_plus | awk '{ print $1 + $2 }')
		[ "$x" = "$y" ] && break
	done
	echo "$y"
}

cat_twice() {
	local a b c
	a=$(settled_reads "$1")
	cat "$2" >/dev/null
	b=$(settled_reads "$1")
	fincore -b -n -o RES,PAGES "$2" >"$T_DIR/$1.fincore" 2>&1
	echo "=== second read" >>"$T_DIR/$1.mlog"
	cat "$2" >/dev/null
	c=$(settled_reads "$1")
	echo "$((b - a)) $((c - b))"
}

opts_part() {
	local r a b el v3 v4 t0 pid
	head -c 4M /dev/urandom >"$EXP/kc"

	lap "options: kernel_cache, version="
	# With the libsnfs cache off a second read reaches the server, unless
	# kernel_cache keeps the kernel's pages from the first open. The
	# default version is 3: -o version=4.2 must give 4.2, and -o version=3
	# must win over the URL's version=4.2.
	M=$T_DIR/mntk
	v3=$(srv_calls 3) v4=$(srv_calls 4) r=$(srv_ops 4.2)
	if MOUNT_DEBUG=1 mount_up kc "$URL" "$M" "version=4.2,cache=0,kernel_cache"; then
		read -r a b <<<"$(cat_twice kc "$M/kc")"
		if [ "$a" -gt 0 ] && [ "$b" = 0 ]; then
			ok "kernel_cache: the second read comes from the kernel's page cache ($a READs, then 0)"
		else
			notok "kernel_cache: READs of the first and second read: $a $b (want >0, 0); resident before the second: $(tr -s " \n" " " <"$T_DIR/kc.fincore")"
			sed -n '/^=== second read/,$p' "$T_DIR/kc.mlog" | grep -E -B1 -A2 'READ|GETATTR|OPEN' | head -60 >&2
		fi
		check_eq "version=4.2: snfs-mount speaks 4.2, READ_PLUS used" "4.2 yes" \
			"$(mstat kc version) $([ "$(mstat kc read_plus)" -gt 0 ] && echo yes)"
		check_eq "version=4.2: no NFSv3 call reached snfsd, NFSv4.2 ones did" "$v3 yes yes" \
			"$(srv_calls 3) $([ "$(srv_calls 4)" -gt "$v4" ] && echo yes) $([ "$(srv_ops 4.2)" -gt "$r" ] && echo yes)"
		fuse_down kc "$M"
	else
		notok "mount -o cache=0,kernel_cache"
		tail -20 "$T_DIR/kc.mlog" >&2
	fi
	M=$T_DIR/mntn
	v3=$(srv_calls 3) v4=$(srv_calls 4)
	if mount_up nokc "$URL&version=4.2" "$M" "version=3,cache=0"; then
		read -r a b <<<"$(cat_twice nokc "$M/kc")"
		if [ "$a" -gt 0 ] && [ "$b" -gt 0 ]; then
			ok "no kernel_cache, cache=0: the second read goes to the server ($a READs, then $b)"
		else
			notok "no kernel_cache, cache=0: READs of the first and second read: $a $b (want >0, >0)"
		fi
		check_eq "version=3 (the URL says 4.2, -o wins): snfs-mount speaks 3" 3 "$(mstat nokc version)"
		check_eq "version=3: no NFSv4 call reached snfsd, NFSv3 ones did" "$v4 yes" \
			"$(srv_calls 4) $([ "$(srv_calls 3)" -gt "$v3" ] && echo yes)"
		fuse_down nokc "$M"
	else
		notok "mount -o cache=0,version=3"
		tail -20 "$T_DIR/nokc.mlog" >&2
	fi

	lap "options: attr_timeout, entry_timeout"
	# Changes made on the export: a file grows (attributes) and a name is
	# replaced by another file (the entry). With 4 s timeouts the mount
	# still shows the old state at 1.8 s (the 1 s default would not) and
	# the new one at 6.5 s.
	M=$T_DIR/mntt
	echo 1 >"$EXP/ta"
	echo old >"$EXP/te"
	if mount_up tmo "$URL" "$M" "attr_timeout=4,entry_timeout=4"; then
		r="$(stat -c %s "$M/ta") $(cat "$M/te")"
		t0=$(date +%s.%N)
		echo 22 >>"$EXP/ta"
		mv "$EXP/te" "$EXP/te.old"
		echo new >"$EXP/te"
		sleep "$(awk -v a="$t0" -v n="$(date +%s.%N)" 'BEGIN { d = a + 1.8 - n; print (d > 0 ? d : 0) }')"
		r="$r / $(stat -c %s "$M/ta") $(cat "$M/te")"
		el=$(awk -v a="$t0" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - a }')
		sleep "$(awk -v a="$t0" -v n="$(date +%s.%N)" 'BEGIN { d = a + 6.5 - n; print (d > 0 ? d : 0) }')"
		r="$r / $(stat -c %s "$M/ta") $(cat "$M/te")"
		if awk -v e="$el" 'BEGIN { exit !(e < 3.5) }'; then
			check_eq "attr_timeout=4, entry_timeout=4: old at 1.8 s, new at 6.5 s (size, content)" \
				"2 old / 2 old / 5 new" "$r"
		else
			# the machine stalled past the timeout: only the end counts
			check_eq "attr_timeout=4, entry_timeout=4: new at 6.5 s (the 1.8 s look came at ${el}s)" \
				"5 new" "${r##*/ }"
		fi
		fuse_down tmo "$M"
	else
		notok "mount -o attr_timeout=4,entry_timeout=4"
		tail -20 "$T_DIR/tmo.mlog" >&2
	fi
	rm -f "$EXP/ta" "$EXP/te" "$EXP/te.old"

	lap "options: ro, umount"
	M=$T_DIR/mntr
	if mount_up ro "$URL&version=4.2" "$M" ro; then
		check_eq "ro: reads work" "$(sha "$EXP/kc")" "$(sha "$M/kc")"
		r=
		(echo x >"$M/kc") 2>>"$T_DIR/ro.err" || r="$r write"
		(echo x >"$M/new") 2>>"$T_DIR/ro.err" || r="$r create"
		mkdir "$M/d" 2>>"$T_DIR/ro.err" || r="$r mkdir"
		rm "$M/kc" 2>>"$T_DIR/ro.err" || r="$r rm"
		chmod 600 "$M/kc" 2>>"$T_DIR/ro.err" || r="$r chmod"
		truncate -s 0 "$M/kc" 2>>"$T_DIR/ro.err" || r="$r truncate"
		check_eq "ro: write, create, mkdir, rm, chmod, truncate fail" \
			" write create mkdir rm chmod truncate" "$r"
		check_eq "ro: each with EROFS" 6 "$(grep -c 'Read-only file system' "$T_DIR/ro.err")"
		check_eq "ro: the export is untouched" "4194304 absent absent" \
			"$(stat -c %s "$EXP/kc") $([ -e "$EXP/new" ] && echo present || echo absent) $([ -e "$EXP/d" ] && echo present || echo absent)"
		fuse_down ro "$M" umount
		mountpoint -q "$M" && notok "umount: still mounted" || ok "umount: unmounted"
	else
		notok "mount -o ro"
		tail -20 "$T_DIR/ro.mlog" >&2
	fi

	lap "options: daemon mode"
	# Without -f: the command returns 0 once the mount is up; the daemon
	# goes when the file system is unmounted.
	M=$T_DIR/mntd
	mkdir -p "$M"
	"$MOUNT_BIN" "$URL" "$M" -o version=3 >"$T_DIR/daemon.out" 2>&1
	check_eq "daemon mode: snfs-mount returns 0" 0 "$?"
	if mountpoint -q "$M"; then
		ok "daemon mode: mounted when the command returns"
		check_eq "daemon mode: the mount works" "$(sha "$EXP/kc")" "$(sha "$M/kc")"
		pid=$(ps -eo pid=,args= | awk -v m="$M" '$2 ~ /snfs-mount$/ { for (i = 3; i <= NF; i++) if ($i == m) print $1 }')
		umount "$M"
		for _ in $(seq 1 100); do
			[ -n "$pid" ] && [ -e "/proc/$pid" ] || break
			sleep 0.1
		done
		if [ -n "$pid" ] && [ ! -e "/proc/$pid" ]; then
			ok "daemon mode: the daemon (pid $pid) exits after umount"
		else
			notok "daemon mode: the daemon '$pid' after umount: $(ps -o stat= -p "${pid:-1}")"
		fi
	else
		notok "daemon mode: not mounted ($(cat "$T_DIR/daemon.out"))"
	fi
	rm -f "$EXP/kc"
}

part v3 && v3_part
part v42 && v42_part
part opts && opts_part

# ---------------- locks ----------------
# locks_between NAME URL1 URL2 [full]: locks_mount.py through two mounts.
locks_between() {
	local name=$1 m1=$T_DIR/mnt-$1-1 m2=$T_DIR/mnt-$1-2
	if mount_up "$name-1" "$2" "$m1" && mount_up "$name-2" "$3" "$m2"; then
		python3 "$ROOT/tests/tools/locks_mount.py" "$name" "$m1" "$m2" ${4:-}
		check_eq "$name: locks_mount.py ran to the end" 0 $?
	else
		notok "$name: two mounts"
	fi
	mountpoint -q "$m2" && fuse_down "$name-2" "$m2"
	mountpoint -q "$m1" && fuse_down "$name-1" "$m1"
}
if part locks; then
	lap "locks"
	locks_between locks42 "$URL&version=4.2" "$URL&version=4.2" full
	# NFSv3 has no NLM client here: the kernel's local locks, which the
	# other mount does not see (as with the kernel client's nolock).
	M=$T_DIR/mntl3
	if mount_up locks3 "$URL&version=3" "$M"; then
		r=$(python3 -c 'import fcntl, sys
a, b = open(sys.argv[1] + "/lk3", "w"), open(sys.argv[2] + "/lk3", "r+")
fcntl.lockf(a, fcntl.LOCK_EX | fcntl.LOCK_NB)
try:
    fcntl.lockf(b, fcntl.LOCK_EX | fcntl.LOCK_NB); print("granted")
except OSError as e:
    print("refused", e.errno)' "$M" "$EXP")
		check_eq "locks3: over NFSv3 an fcntl lock stays local (the export's own file is not locked)" granted "$r"
		fuse_down locks3 "$M"
	else
		notok "locks3: mount"
	fi
fi
check_no_sanitizer_reports snfsd
snfsd_stop

# ---------------- nfs-ganesha ----------------
# ganesha 4.3 (FSAL VFS) answers SETATTR of a symlink's times with OK and
# leaves them: the same through any client.
GFILTER='/^mtime sl /d; /^copy .\/sub\/link /d'
ganesha_fileops() { # NAME URL DIR
	local name=$1 url=$2 dir=$3
	M=$T_DIR/mnt$name
	if mount_up "$name" "$url" "$M"; then
		ok "$name: mounted"
		fileops_cmp "$name" "$M/$dir" "$GFILTER"
		check_eq "$name: the symlink time it ignores is the server's doing" \
			"$(grep '^mtime sl ' "$T_DIR/fileops.$name" | cut -d' ' -f3 | cut -d. -f1)" \
			"$(stat -c %Y "$T_DIR/gexp/$dir/sl")"
		fuse_down "$name" "$M"
	else
		notok "$name: mount"
		tail -20 "$T_DIR/$name.mlog" >&2
	fi
}
if part ganesha; then
	lap "nfs-ganesha"
	GPORT=$(free_port_pair)
	mkdir -p "$T_DIR/gexp"
	if "$PEERS/ganesha.sh" start "$T_DIR/gexp" "$GPORT" >"$T_DIR/ganesha.log" 2>&1 && wait_port "$GPORT" 30; then
		ganesha_fileops ganesha "nfs://127.0.0.1/export?version=3&nfsport=$GPORT&mountport=$((GPORT + 1))" fileops
		lap "nfs-ganesha, NFSv4.1"
		# (4.2 would fall back from ganesha's broken READ_PLUS: see
		# ../shared/tools/peers/README.md)
		ganesha_fileops ganesha41 "nfs://127.0.0.1/export?version=4.1&nfsport=$GPORT" fileops41
		part locks && locks_between ganesha-locks "nfs://127.0.0.1/export?version=4.1&nfsport=$GPORT" \
			"nfs://127.0.0.1/export?version=4.1&nfsport=$GPORT"
		"$PEERS/ganesha.sh" stop "$T_DIR/gexp" "$GPORT" >/dev/null 2>&1
		GPORT=
	else
		notok "ganesha start"
		tail -20 "$T_DIR/ganesha.log" >&2
	fi
fi

lap "usage errors"
# Usage errors fail the command itself (the daemon path forks and waits).
if "$MOUNT_BIN" "nfs://127.0.0.1:1/nothing?timeout=2" "$T_DIR/mntx" >/dev/null 2>&1; then
	notok "a dead URL fails snfs-mount"
else
	ok "a dead URL fails snfs-mount"
fi
if "$MOUNT_BIN" "$URL" "$T_DIR/mntx" -o attr_timeout=soon >/dev/null 2>&1; then
	notok "a bad option fails snfs-mount"
else
	ok "a bad option fails snfs-mount"
fi
lap "end"
[ "$T_FAILS" = 0 ]
