#!/bin/bash
# Hostile and unlucky peers, full and failing disks (issue 7, "Faults"):
#  - connections cut mid-request (half a record; a whole 1 MiB WRITE, then
#    close) and mid-reply (a 1 MiB READ, close or reset after 100 bytes);
#  - a client that pipelines thousands of 1 MiB READs and never reads: the
#    server's RSS stays bounded and other clients are served meanwhile;
#  - a full disk (a 16 MiB ext4 loop image): FILE_SYNC writes until
#    NFS3ERR_NOSPC, everything acknowledged before reads back intact;
#  - EIO from the backend: a second ext4 loop image shut down under the
#    server (EXT4_IOC_SHUTDOWN): NFS errors, no crash.
# The loop images need root and a free loop device (losetup -f); without
# them those cases print "not ok" with the reason.
set -u
. "$(dirname "$0")/../lib.sh"
HERE=$ROOT/tests/faults
scratch
# ASan keeps up to 256 MiB of freed memory in quarantine, which would read
# as RSS growth; a small quarantine keeps the RSS bounds meaningful.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:quarantine_size_mb=16"
MNTS=()
cleanup() {
	local m
	snfsd_stop
	for m in "${MNTS[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
	rm -rf "$T_DIR"
}
trap cleanup EXIT
EXP=$T_DIR/export
mkdir -p "$EXP"

# loop_fs NAME: a 16 MiB ext4 image mounted on $T_DIR/NAME
loop_fs() {
	local img=$T_DIR/$1.img mnt=$T_DIR/$1
	mkdir -p "$mnt"
	truncate -s 16M "$img" && mkfs.ext4 -q -F "$img" >/dev/null 2>&1 || return 1
	mount -o loop "$img" "$mnt" 2>/dev/null || return 1
	MNTS+=("$mnt")
}
why=""
if [ "$(id -u)" != 0 ]; then
	why="not root"
elif ! command -v mkfs.ext4 >/dev/null; then
	why="no mkfs.ext4"
elif ! losetup -f >/dev/null 2>&1; then
	why="no free loop device (losetup -f)"
elif ! loop_fs nospc || ! loop_fs eio; then
	why="mount -o loop failed"
fi
ARGS=(-e "$EXP:rw,insecure,no_root_squash")
[ -z "$why" ] && ARGS+=(-e "$T_DIR/nospc:rw,insecure,no_root_squash" -e "$T_DIR/eio:rw,insecure,no_root_squash")
PORT=$(free_port)
if ! snfsd_start "$PORT" --no-portmap "${ARGS[@]}"; then
	notok "snfsd listening on $PORT"
	tail -20 "$T_DIR/snfsd.log" >&2
	exit 1
fi
ok "snfsd listening on $PORT"

run() { # case export
	python3 "$HERE/connfaults.py" "$1" "$PORT" "$2" "$SNFSD_PID"
	check_eq "connfaults.py $1 exit status" 0 $?
}
run cuts "$EXP"
run noreader "$EXP"
if [ -n "$why" ]; then
	notok "full disk: skipped, $why"
	notok "EIO from the backend: skipped, $why"
else
	run nospc "$T_DIR/nospc"
	run eio "$T_DIR/eio"
fi
check "snfsd alive at the end" snfsd_alive
echo "# peak RSS of snfsd $(($(awk '/^VmHWM/ {print $2}' /proc/"$SNFSD_PID"/status) / 1024)) MiB"
snfsd_stop TERM
check_eq "snfsd exits 0 on SIGTERM" 0 $?
check_no_sanitizer_reports conn-faults
[ "$T_FAILS" = 0 ]
