#!/bin/bash
# READ_PLUS through snfsd on xfs, btrfs and ext4 loop images: the hole maps
# come from FIEMAP there (src/backend/holemap.c), with unwritten and
# delayed extents left to lseek (on xfs and ext4 only those with dirty or
# writeback pages: the rest are zeros, holes even once cached). For every seed shape, for a file with
# fallocated space and writes still in the page cache, and for a tiny
# (inline on btrfs) file: READ_PLUS (nfs42probe, 1 MiB calls) sends as
# data exactly the bytes the local SEEK_DATA/SEEK_HOLE map calls data,
# and the rest as holes, with the right content; SEEK over NFSv4.2
# (`snfs holes`) gives the local map; `snfs cat` and `snfs cp` give the
# same bytes. The local map is taken first: reading a file can turn
# unwritten space into data for lseek. On ext4 the files are read once
# more through an export with mapped,zerocopy (data sent from a mapping
# of the file, big pieces by sendfile: rpc/send.c), over NFSv4.2 and v3.
# Both exports set readplus_min_hole=4k: every hole of a page or more a
# hole (by default holes under the size from which sendfile pays go as
# zeros: v42.c rp_min_hole).
ROOT=${ROOT:-$(cd "$(dirname "$0")/../../.." && pwd)}
. "$ROOT/tests/lib.sh"
SNFS=${SNFS:-$ROOT/build/asan/snfs}
scratch
MNTS=()
cleanup_fs() {
	snfsd_stop
	for m in "${MNTS[@]}"; do umount "$m" 2>/dev/null; done
	rm -rf "$T_DIR"
}
trap cleanup_fs EXIT

if [ "$(id -u)" != 0 ]; then
	ok "skipped: needs root for loop mounts"
	exit 0
fi
cc -O2 -o "$T_DIR/mkfiles" "$PEERS/mkfiles.c" || { notok "build mkfiles"; exit 1; }

# A file system image with the seed files (16 MiB each) and two more.
make_fs() { # fs mnt
	local fs=$1 mnt=$2 img=$T_DIR/$1.img
	truncate -s 600M "$img"
	case $fs in
	xfs) mkfs.xfs -q -f "$img" ;;
	btrfs) mkfs.btrfs -q -f "$img" >/dev/null ;;
	ext4) mkfs.ext4 -q -F "$img" ;;
	esac || return 1
	mkdir -p "$mnt" && mount -o loop "$img" "$mnt" || return 1
	MNTS+=("$mnt")
	"$T_DIR/mkfiles" seed "$mnt" 16 >/dev/null 2>&1 || return 1
	python3 - "$mnt" <<'PY'
import os, sys
d = sys.argv[1]
fd = os.open(d + '/falloc', os.O_CREAT | os.O_RDWR, 0o644)
os.pwrite(fd, b'A' * 4096, 0)
os.posix_fallocate(fd, 65536, 4 << 20)
os.pwrite(fd, b'B' * 8192, 1 << 20)
os.ftruncate(fd, 8 << 20)
os.fsync(fd)
os.pwrite(fd, b'C' * 4096, 2 << 20)  # inside the unwritten extent, unsynced
os.pwrite(fd, b'D' * 4096, 6 << 20)  # in a hole, unsynced
os.close(fd)
fd = os.open(d + '/small', os.O_CREAT | os.O_RDWR, 0o644)
os.pwrite(fd, b'a few bytes of data', 0)
os.close(fd)
PY
}

holemap() { "$SNFS" holes "$1" 2>&1 | grep -v '^size'; }

# Every file of $mnt through the snfsd on $port ($u): SEEK map, READ_PLUS
# bytes and content, cat; label before each check's name. A second pass
# (a label) leaves out falloc: the first pass's reads and its cp wrote its
# unwritten extents' state back, so its map is no longer the one made.
read_files() {
	local p f local_map want got label=${1:-}
	for p in "$mnt"/*; do
		[ -f "$p" ] || continue
		f=$(basename "$p")
		[ -n "$label" ] && [ "$f" = falloc ] && continue
		local_map=$(holemap "$p")
		want=$(echo "$local_map" | awk '$1 == "data" {d += $3} END {print d + 0}')
		check_eq "$label$fs $f: SEEK map over NFS = local SEEK map" "$local_map" \
			"$(holemap "$u/$f?version=4.2")"
		got=$(cd "$mnt" && timeout 120 python3 "$PEERS/nfs42probe.py" 127.0.0.1 "$port" "$mnt" \
			readplus "$f" 1048576 2 2>&1 | grep '^READ_PLUS')
		check_eq "$label$fs $f: READ_PLUS data bytes = local map's, content verified" \
			"data $want B, content verified" \
			"$(echo "$got" | grep -o 'data [0-9]* B'), $(echo "$got" | grep -o 'content verified')"
		check_eq "$label$fs $f: cat" "$(sha256sum <"$p" | cut -c1-64)" \
			"$("$SNFS" cat "$u/$f?version=4.2" | sha256sum | cut -c1-64)"
		# Written back, then read locally: the page cache now holds
		# the zeros of the unwritten extents (xfs preallocated the
		# gaps), which lseek calls data. On xfs and ext4 READ_PLUS
		# still sends them as holes (no dirty page there: zeros).
		case $fs:$f in xfs:mixed-* | ext4:mixed-* | xfs:data | ext4:data)
			sync "$p"
			cat "$p" >/dev/null
			got=$(cd "$mnt" && timeout 120 python3 "$PEERS/nfs42probe.py" 127.0.0.1 "$port" "$mnt" \
				readplus "$f" 1048576 2 2>&1 | grep '^READ_PLUS')
			check_eq "$label$fs $f: warm: READ_PLUS data bytes = the cold map's, content verified" \
				"data $want B, content verified" \
				"$(echo "$got" | grep -o 'data [0-9]* B'), $(echo "$got" | grep -o 'content verified')"
			;;
		esac
	done
}

for fs in xfs btrfs ext4; do
	command -v "mkfs.$fs" >/dev/null || {
		ok "$fs: skipped, no mkfs.$fs"
		continue
	}
	mnt=$T_DIR/mnt-$fs
	if ! make_fs "$fs" "$mnt"; then
		notok "$fs: make the image and the files"
		continue
	fi
	port=$(free_port)
	snfsd_start "$port" --no-portmap -e "$mnt:rw,insecure,no_root_squash,readplus_min_hole=4k" ||
		{ notok "$fs: start snfsd"; continue; }
	u="nfs://127.0.0.1:$port$mnt"
	read_files
	"$SNFS" cp -q "$u/falloc?version=4.2" "$T_DIR/falloc-$fs"
	check "$fs falloc: cp from NFS, same bytes" cmp -s "$T_DIR/falloc-$fs" "$mnt/falloc"
	snfsd_stop
	check_no_sanitizer_reports "$fs"
	if [ "$fs" = ext4 ]; then
		port=$(free_port)
		snfsd_start "$port" --no-portmap \
			-e "$mnt:rw,insecure,no_root_squash,mapped,zerocopy,readplus_min_hole=4k" ||
			{ notok "$fs: start snfsd (mapped)"; continue; }
		u="nfs://127.0.0.1:$port$mnt"
		read_files "mapped: "
		for f in data mixed-4d mixed-32d small; do
			check_eq "mapped: $fs $f: v3 cat" \
				"$(sha256sum <"$mnt/$f" | cut -c1-64)" \
				"$("$SNFS" cat "$u/$f?version=3" | sha256sum | cut -c1-64)"
		done
		snfsd_stop
		check_no_sanitizer_reports "$fs mapped"
	fi
	umount "$mnt"
done
exit 0
