#!/bin/bash
# snfs-mount (ASan build) over snfsd (ASan build) and nfs-ganesha: the
# file-operations transcript against a local directory (NFSv3, NFSv4.2 when
# libsnfs has it, ganesha), dd of 64 MiB both ways, cp --sparse=always with
# the holes checked on the server's disk by a SEEK_DATA walk, ls -f of
# 200,000 entries, fio randrw with crc32c verification, sysbench fileio
# rndrw, and a SIGKILLed server: EIO within the timeout, then recovery.
set -u
. "$(dirname "$0")/../lib.sh"
MOUNT_BIN=${MOUNT_BIN:-$ROOT/build/asan/snfs-mount}
NENTRIES=${NENTRIES:-200000}
NFILES=${FILEOPS_NFILES:-1000}
DEAD_TIMEOUT=4 # the mount's timeout= for the dead-server check
scratch
GPORT=
MNT_PIDS=()
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

# mount_up NAME URL MNT [OPTS]: start snfs-mount -f in the background
# (log in $T_DIR/NAME.mlog) and wait for the mount. Sets MPID.
mount_up() {
	local name=$1 url=$2 mnt=$3 opts=${4:-}
	mkdir -p "$mnt"
	"$MOUNT_BIN" "$url" "$mnt" -f ${opts:+-o "$opts"} >>"$T_DIR/$name.mlog" 2>&1 &
	MPID=$!
	local i
	for i in $(seq 1 100); do
		mountpoint -q "$mnt" && return 0
		[ -e /proc/$MPID ] || return 1
		sleep 0.1
	done
	return 1
}

# mount_down NAME MNT: unmount, wait for the process, check its log.
mount_down() {
	local name=$1 mnt=$2 rc
	fusermount3 -u "$mnt" || fusermount3 -u -z "$mnt"
	wait "$MPID"
	rc=$?
	check_eq "$name: snfs-mount exits 0 after unmount" 0 "$rc"
	if grep -qE 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' "$T_DIR/$name.mlog"; then
		notok "$name: sanitizer report in snfs-mount log"
		grep -E -A30 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer' "$T_DIR/$name.mlog" | head -40 >&2
	else
		ok "$name: no sanitizer report in snfs-mount"
	fi
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

# Data segments of a file by a SEEK_DATA/SEEK_HOLE walk ("start end" lines).
datamap() {
	python3 - "$1" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
end, off = os.fstat(fd).st_size, 0
while off < end:
    try:
        d = os.lseek(fd, off, os.SEEK_DATA)
    except OSError:
        break
    h = os.lseek(fd, d, os.SEEK_HOLE)
    print(d, h)
    off = h
PY
}
sha() { sha256sum <"$1" | cut -d' ' -f1; }
lap() { echo "# $1: $SECONDS s"; }

mkdir -p "$T_DIR/local"
FILEOPS_NFILES=$NFILES "$ROOT/tests/interop/fileops.sh" "$T_DIR/local" "$LOCAL_OUT" ||
	notok "fileops on a local directory"

# ---------------- snfsd, NFSv3 ----------------
EXP=$T_DIR/exp
mkdir -p "$EXP"
PORT=$(free_port)
snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash" || notok "snfsd start"
URL="nfs://127.0.0.1$EXP?nfsport=$PORT&mountport=$PORT"
M=$T_DIR/mnt3
if mount_up v3 "$URL" "$M" "timeout=$DEAD_TIMEOUT"; then
	ok "v3: mounted"
	fileops_cmp v3 "$M/fileops"
	rm -rf "$M/fileops"

	lap "dd in and out."
	# dd in and out.
	head -c $((64 << 20)) /dev/urandom >"$T_DIR/big"
	dd if="$T_DIR/big" of="$M/big" bs=1M status=none conv=fsync
	check_eq "v3: dd 64 MiB in: same bytes on the server" "$(sha "$T_DIR/big")" "$(sha "$EXP/big")"
	dd if="$M/big" of="$T_DIR/big.back" bs=1M status=none
	check_eq "v3: dd 64 MiB out: same bytes" "$(sha "$T_DIR/big")" "$(sha "$T_DIR/big.back")"
	rm -f "$T_DIR/big.back" "$M/big"

	lap "cp --sparse=always:"
	# cp --sparse=always: MiB-aligned random data with holes between and
	# at the end; the server's file must have the same data map.
	SP=$T_DIR/sparse
	truncate -s 40M "$SP"
	for mb in 1 7 8 20; do
		dd if=/dev/urandom of="$SP" bs=1M seek=$mb count=1 conv=notrunc status=none
	done
	cp --sparse=always "$SP" "$M/sparse"
	check_eq "v3: cp --sparse=always: same bytes" "$(sha "$SP")" "$(sha "$EXP/sparse")"
	check_eq "v3: cp --sparse=always: holes kept on the export (SEEK_DATA walk)" \
		"$(datamap "$SP" | paste -sd' ')" "$(datamap "$EXP/sparse" | paste -sd' ')"
	# lseek SEEK_DATA/SEEK_HOLE on the mount: NFSv3 has no SEEK, so all
	# data, the hole at the end, ENXIO past it.
	check_eq "v3: SEEK_DATA/SEEK_HOLE on the mount (v3: one data run)" \
		"0 $((40 << 20))" "$(datamap "$M/sparse" | paste -sd' ')"
	r=$(python3 -c 'import os,sys
fd=os.open(sys.argv[1],os.O_RDONLY)
try: os.lseek(fd, 50<<20, os.SEEK_DATA); print("no error")
except OSError as e: print(e.errno)' "$M/sparse")
	check_eq "v3: SEEK_DATA past the end gives ENXIO" 6 "$r"
	r=$(fallocate -p -o 0 -l 4096 "$M/sparse" 2>&1)
	case "$r" in *"not supported"* | *unsupported*) ok "v3: fallocate punch hole: EOPNOTSUPP" ;; *) notok "v3: fallocate punch hole ($r)" ;; esac
	rm -f "$M/sparse"

	# RENAME_NOREPLACE cannot be honoured over NFS: EINVAL (the kernel
	# itself answers EEXIST when it knows the target); mv falls back.
	echo a >"$M/ra"
	echo b >"$M/rb"
	r=$(python3 -c 'import ctypes,os,sys
libc=ctypes.CDLL(None, use_errno=True)
r=libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 1)
print(ctypes.get_errno() if r else 0)' "$M/ra" "$M/rc")
	check_eq "v3: renameat2(RENAME_NOREPLACE) gives EINVAL" 22 "$r"
	mv "$M/ra" "$M/rb" && check_eq "v3: mv after that" a "$(cat "$EXP/rb")"
	rm -f "$M/rb"

	lap "ls -f on a big"
	# ls -f on a big directory made on the server's disk.
	gcc -O2 -o "$ROOT/build/mkfiles" "$PEERS/mkfiles.c" || notok "build mkfiles"
	"$ROOT/build/mkfiles" dir "$EXP/many" "$NENTRIES" >/dev/null
	ls -f "$M/many" >"$T_DIR/many.ls"
	check_eq "v3: ls -f of $NENTRIES entries" $((NENTRIES + 2)) "$(wc -l <"$T_DIR/many.ls")"
	check_eq "v3: ls -f: no duplicates" $((NENTRIES + 2)) "$(sort -u "$T_DIR/many.ls" | wc -l)"
	rm -rf "$EXP/many"

	lap "fio: random"
	# fio: random reads and writes, every block verified (4 x 8 MiB).
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

	lap "sysbench fileio"
	# sysbench fileio rndrw (the seed's run, smaller and shorter).
	mkdir -p "$M/sb"
	SB=(--file-test-mode=rndrw --file-block-size=2K --file-total-size=32M
		--threads=16 --file-rw-ratio=0.5 --time=10)
	if (cd "$M/sb" && sysbench fileio "${SB[@]}" prepare &&
		sysbench fileio "${SB[@]}" run && sysbench fileio "${SB[@]}" cleanup) >"$T_DIR/sb.out" 2>&1 &&
		grep -q 'reads/s' "$T_DIR/sb.out" && ! grep -qi 'error\|FATAL' "$T_DIR/sb.out"; then
		ok "v3: sysbench fileio rndrw ($(grep 'reads/s' "$T_DIR/sb.out" | tr -s ' ' | cut -d: -f2 | head -1) reads/s)"
	else
		notok "v3: sysbench fileio rndrw"
		tail -20 "$T_DIR/sb.out" >&2
	fi
	rm -rf "$M/sb"

	lap "A dead server:"
	# A dead server: EIO after the timeout, not a hang; then recovery.
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
	r=
	for i in $(seq 1 20); do
		r=$(cat "$M/probe" 2>/dev/null) && [ "$r" = alive ] && break
		sleep 0.5
	done
	check_eq "server back: the mount works again" alive "$r"
	echo again >"$M/probe2" && check_eq "server back: writes reach the server" again "$(cat "$EXP/probe2")"
	mount_down v3 "$M"
else
	notok "v3: mount"
	tail -20 "$T_DIR/v3.mlog" >&2
fi

lap "snfsd, NFSv4.2"
# ---------------- snfsd, NFSv4.2 ----------------
M=$T_DIR/mnt42
if mount_up v42 "$URL&version=4.2" "$M"; then
	ok "v4.2: mounted"
	fileops_cmp v42 "$M/fileops42"
	mount_down v42 "$M"
elif grep -qE 'not built in|not supported|Protocol not supported' "$T_DIR/v42.mlog"; then
	ok "skipped v4.2: libsnfs or snfsd has no NFSv4.2 ($(tail -1 "$T_DIR/v42.mlog"))"
else
	notok "v4.2: mount"
	tail -20 "$T_DIR/v42.mlog" >&2
fi
check_no_sanitizer_reports snfsd
snfsd_stop

lap "nfs-ganesha"
# ---------------- nfs-ganesha ----------------
GPORT=$(free_port_pair)
mkdir -p "$T_DIR/gexp"
if "$PEERS/ganesha.sh" start "$T_DIR/gexp" "$GPORT" >"$T_DIR/ganesha.log" 2>&1 && wait_port "$GPORT" 30; then
	M=$T_DIR/mntg
	if mount_up ganesha "nfs://127.0.0.1/export?version=3&nfsport=$GPORT&mountport=$((GPORT + 1))" "$M"; then
		ok "ganesha: mounted"
		# ganesha 4.3 (FSAL VFS) answers SETATTR of a symlink's times
		# with NFS3_OK and leaves them: the same through any client.
		fileops_cmp ganesha "$M/fileops" '/^mtime sl /d; /^copy .\/sub\/link /d'
		check_eq "ganesha: the symlink time it ignores is the server's doing" \
			"$(grep '^mtime sl ' "$T_DIR/fileops.ganesha" | cut -d' ' -f3 | cut -d. -f1)" \
			"$(stat -c %Y "$T_DIR/gexp/fileops/sl")"
		mount_down ganesha "$M"
	else
		notok "ganesha: mount"
		tail -20 "$T_DIR/ganesha.mlog" >&2
	fi
	"$PEERS/ganesha.sh" stop "$T_DIR/gexp" "$GPORT" >/dev/null 2>&1
	GPORT=
else
	notok "ganesha start"
	tail -20 "$T_DIR/ganesha.log" >&2
fi

lap "Usage errors"
# Usage errors fail the command itself (the daemon path forks and waits).
if "$MOUNT_BIN" "nfs://127.0.0.1:1/nothing?timeout=2" "$T_DIR/mntx" >/dev/null 2>&1; then
	notok "a dead URL fails snfs-mount"
else
	ok "a dead URL fails snfs-mount"
fi
[ "$T_FAILS" = 0 ]
