#!/bin/bash
# The POSIX backend's clone (NFSv4.2 CLONE, RFC 7862 15.13) decided by the
# file system: on btrfs and on xfs made with reflink=1 (FICLONE) it must
# share the blocks (FIEMAP_EXTENT_SHARED on every extent of both files) and
# read as the source; on xfs with reflink=0, ext4 and tmpfs it must be
# EOPNOTSUPP and change nothing. Small loop images (sparse files, as in
# tests/server/nfs4/t_readplus_fs.sh); the checks are test_posix's
# ("test_posix clone DIR yes|no").
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/lib.sh"
BIN=${TEST_POSIX:-$ROOT/build/asan/tests/backend/test_posix}
[ -x "$BIN" ] || BIN=$ROOT/build/tests/backend/test_posix
scratch
MNTS=()
cleanup_fs() {
	for m in "${MNTS[@]}"; do umount "$m" 2>/dev/null; done
	rm -rf "$T_DIR"
}
trap cleanup_fs EXIT

if [ "$(id -u)" != 0 ]; then
	ok "skipped: needs root for loop mounts"
	exit 0
fi
[ -x "$BIN" ] || { notok "no test_posix binary ($BIN)"; exit 1; }

# name mkfs-command size expectation
run_fs() {
	local name=$1 mk=$2 size=$3 want=$4 img=$T_DIR/$1.img mnt=$T_DIR/mnt-$1
	mkdir -p "$mnt"
	if [ "$mk" = tmpfs ]; then
		mount -t tmpfs -o size="$size" none "$mnt" ||
			{ notok "$name: mount tmpfs"; return; }
	else
		command -v "${mk%% *}" >/dev/null ||
			{ ok "$name: skipped, no ${mk%% *}"; return; }
		truncate -s "$size" "$img"
		$mk "$img" >/dev/null 2>&1 || { notok "$name: $mk"; return; }
		mount -o loop "$img" "$mnt" || { notok "$name: loop mount"; return; }
	fi
	MNTS+=("$mnt")
	# test_posix names the file system itself; say which image this is
	local out=$T_DIR/$name.out rc
	"$BIN" clone "$mnt" "$want" >"$out" 2>&1
	rc=$?
	sed "s/^\(\(not \)\{0,1\}ok - \)/\1[$name] /" "$out"
	if grep -q '^not ok' "$out"; then
		T_FAILS=$((T_FAILS + 1))
	elif [ "$rc" != 0 ]; then
		notok "$name: test_posix clone exited with status $rc"
	fi
	umount "$mnt" && rm -f "$img"
}

run_fs btrfs "mkfs.btrfs -q -f" 256M yes
run_fs xfs-reflink "mkfs.xfs -q -f -m reflink=1" 320M yes
run_fs xfs-noreflink "mkfs.xfs -q -f -m reflink=0" 320M no
run_fs ext4 "mkfs.ext4 -q -F" 64M no
run_fs tmpfs tmpfs 16M no
[ "$T_FAILS" = 0 ]
