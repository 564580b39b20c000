#!/bin/bash
# The READ_PLUS seed matrix (SEEDS.md section 1, issue 5), one run:
#  files  data, hole, mixed-{4,8,16,32}{d,h} (mkfiles seed) on loop images of
#         each file system in FSES;
#  proto  v3 READ, v4.1 READ, v4.2 READ_PLUS (libsnfs `snfs cat`), and
#         libnfs nfs-cat v3 / v4.0 READ;
#  server snfsd, and nfs-ganesha with its best READ (its READ_PLUS is broken);
#  cache  warm (read once first) and cold (mkfiles evict before each run);
#  pairs  the targets' ratios also from v4.1 READ and v4.2 READ_PLUS run in
#         turn (server snfsd-ab, PAIR_RUNS each; warm, and cold for data;
#         PAIRS_ONLY=1 measures just these);
#  figures seconds (min, median of RUNS), MB/s, snfsd CPU seconds, and for
#         snfsd v4.1/v4.2 the RPC count and reply bytes on the wire
#         (nfs42probe, one run); the READ_PLUS tiny-hole policy
#         (readplus_min_hole), detect_zeroes and no_zerocopy,no_mapped (READ and
#         READ_PLUS copied, not sent by sendfile) measured end to end; the
#         physical limits (loopback TCP, cat from the page cache);
#  kernel the Linux kernel client, snfsd vs knfsd in one QEMU guest
#         (KVM=1|0|auto, bench/sparse_guest.sh -> sparse_kernel.{md,csv}).
# Writes bench/results/sparse.{md,csv} and sparse-*.png (gnuplot).
# usage: bench/sparse.sh [WORKDIR]
#   SIZE_MIB=1024 FSES="ext4 xfs btrfs" RUNS=3 PAIR_RUNS=7 CACHES="warm cold"
#   SERVERS="snfsd ganesha" FILES="data hole mixed-4d ..." QUICK_FSES=""
#   KVM=auto KVM_SIZE_MIB=64 KVM_FILES="..." KVM_MIN_HOLES="0 4096 ..."
#   (QUICK_FSES: file systems measured with data, hole, mixed-4d only)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SNFS_SHARED:-$(cd "$ROOT/.." && pwd)/shared}
# a clone elsewhere (CI) still finds the team's tools
[ -d "$SHARED/tools" ] || SHARED=/work/shared
PEERS=$SHARED/tools/peers
W=$(realpath -m "${1:-/tmp/snfs-sparse}")
SIZE_MIB=${SIZE_MIB:-1024} RUNS=${RUNS:-3} PAIR_RUNS=${PAIR_RUNS:-7}
PAIRS_ONLY=${PAIRS_ONLY:-} # set: only the pairs (and the limits)
FSES=${FSES:-ext4 xfs btrfs} QUICK_FSES=${QUICK_FSES:-}
CACHES=${CACHES:-warm cold} SERVERS=${SERVERS:-snfsd ganesha}
ALL_FILES="data hole mixed-4d mixed-4h mixed-8d mixed-8h mixed-16d mixed-16h mixed-32d mixed-32h"
FILES=${FILES:-$ALL_FILES}
MIN_HOLES=${MIN_HOLES:-4096 16384 65536}
SP=${SP:-22149} GP=${GP:-22160}
RES=${RES:-$ROOT/bench/results}
mkdir -p "$W" "$RES"
cd "$W"
make -s -C "$ROOT" build/snfsd build/snfs >/dev/null
command -v nfs-cat >/dev/null || apt-get install -y -qq libnfs-utils >&2
command -v gnuplot >/dev/null || apt-get install -y -qq gnuplot-nox >&2
command -v mkfs.xfs >/dev/null || apt-get install -y -qq xfsprogs >&2
command -v mkfs.btrfs >/dev/null || apt-get install -y -qq btrfs-progs >&2
for t in mkfiles tcpstream; do
	[[ $t -nt $PEERS/$t.c ]] || cc -O2 -o $t "$PEERS/$t.c"
done
# every timed command is started by posix_spawn, not by a fork of this
# shell (bench/spawntime.c: that fork alone is milliseconds here)
[[ spawntime -nt $ROOT/bench/spawntime.c ]] || cc -O2 -Wall -o spawntime "$ROOT/bench/spawntime.c"
TIMED=$W/spawntime
SNFS=$ROOT/build/snfs
CSV=$RES/sparse.csv
echo "fs,file,cache,server,client,proto,min_s,median_s,mbps,server_cpu_s,rpcs,wire_bytes" >"$CSV"
bytes=$((SIZE_MIB << 20))
SPID= GDIR=

sub() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.4f", a - b}'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

stop_servers() {
	[[ -n $SPID ]] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null || true
	SPID=
	[[ -n $GDIR ]] && "$PEERS/ganesha.sh" stop "$GDIR" $GP >&2 || true
	GDIR=
}
cleanup() {
	stop_servers
	for m in "$W"/mnt-*; do mountpoint -q "$m" 2>/dev/null && umount "$m"; done
	true
}
trap cleanup EXIT

start_snfsd() { # DIR [extra export options]
	[[ -n $SPID ]] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null || true
	"$ROOT/build/snfsd" -e "$1:rw,insecure,no_root_squash${2:+,$2}" -p $SP \
		-s "$W/state" --no-portmap -t 8 2>>"$W/snfsd.log" &
	SPID=$!
	sleep 0.7
}

# The file's pages out of the page cache. snfsd keeps a mapping of a file
# it sends pieces of until 0.1 s unused (rpc/mapcache.c), and mapped
# pages are not evicted: wait for it to go first.
evict() { # file
	sleep 0.25
	./mkfiles evict "$1" >/dev/null
}

# One measured read: warm-up (warm) or evict (cold) before each of RUNS
# runs. Prints "min median cpu_s" (snfsd CPU: median per run, else 0).
measure() { # cache file cmd...
	local cache=$1 f=$2 t=() c=() v c0 i
	shift 2
	[[ $cache == warm ]] && { "$@" >/dev/null 2>&1 || true; }
	for ((i = 0; i < RUNS; i++)); do
		[[ $cache == cold ]] && evict "$f"
		c0=$([[ -n $SPID ]] && ticks "$SPID" || echo 0)
		v=$("$TIMED" "$@") || { echo "nan nan nan"; return; }
		t+=("$v")
		c+=($(($([[ -n $SPID ]] && ticks "$SPID" || echo 0) - c0)))
	done
	summ "${t[*]}" "${c[*]}"
}

# "min median cpu_s" of the times and CPU ticks given (as measure prints).
summ() { # "t1 t2 ..." "c1 c2 ..."
	printf '%s\n' $1 | sort -g | awk '{a[NR]=$1} END {printf "%.4f %.4f ", a[1], a[int((NR+1)/2)]}'
	printf '%s\n' $2 | sort -g | awk -v hz="$hz" '{a[NR]=$1} END {printf "%.3f\n", a[int((NR+1)/2)]/hz}'
}

# The targets' pairs: v4.1 READ and v4.2 READ_PLUS in turn, PAIR_RUNS
# each, so that both see the same load (on this shared machine the load
# drifts between two blocks of runs by more than the effect); which goes
# first alternates, so neither always follows the other's eviction.
pair() { # cache fs file path w41 w42 (rpcs wire of each)
	local cache=$1 p=$4 t1=() t2=() c1=() c2=() i v t c0 order
	shift
	"$SNFS" cat "nfs://127.0.0.1:$SP$p?version=4.2" >/dev/null 2>&1 || return 0
	for ((i = 0; i < PAIR_RUNS; i++)); do
		order="4.1 4.2"
		((i % 2)) && order="4.2 4.1"
		for v in $order; do
			[[ $cache == cold ]] && evict "$p"
			c0=$(ticks "$SPID")
			t=$("$TIMED" "$SNFS" cat "nfs://127.0.0.1:$SP$p?version=$v") || return 0
			if [[ $v == 4.1 ]]; then
				t1+=("$t") c1+=($(($(ticks "$SPID") - c0)))
			else
				t2+=("$t") c2+=($(($(ticks "$SPID") - c0)))
			fi
		done
	done
	row "$1" "$2" $cache snfsd-ab snfs v4.1-READ "$(summ "${t1[*]}" "${c1[*]}")" $4 $5
	row "$1" "$2" $cache snfsd-ab snfs v4.2-READ_PLUS "$(summ "${t2[*]}" "${c2[*]}")" $6 $7
}

row() { # fs file cache server client proto "min med cpu" rpcs wire
	local mn md cpu
	read -r mn md cpu <<<"$7"
	echo "$1,$2,$3,$4,$5,$6,$mn,$md,$(awk -v b=$bytes -v t="$mn" 'BEGIN {if (t + 0 > 0) printf "%.0f", b / t / 1e6; else print "nan"}'),$cpu,$8,$9" >>"$CSV"
	printf '%-6s %-10s %-4s %-13s %-8s %-14s min %7s med %7s cpu %6s rpcs %6s wire %s\n' \
		"$1" "$2" "$3" "$4" "$5" "$6" "$mn" "$md" "$cpu" "$8" "$9" >&2
}

# RPC count and reply bytes for snfsd v4.1 READ / v4.2 READ_PLUS.
wire() { # dir file minor -> "rpcs bytes"
	(cd "$1" && python3 "$PEERS/nfs42probe.py" 127.0.0.1 $SP "$1" readplus "$2" 1048576 "$3" 2>/dev/null) |
		awk '{for (i = 1; i <= NF; i++) {if ($(i+1) == "RPCs,") r = $i; if ($i == "bytes") {b = $(i+1); gsub(/,/, "", b)}}} END {print (r ? r : "nan"), (b ? b : "nan")}'
}

make_fs() { # fs -> mount point with the seed files
	local fs=$1 img=$W/$fs.img mnt=$W/mnt-$fs files=$2
	# The image file is sparse, so room costs nothing until used. xfs
	# needs more than the files' data: its speculative preallocation
	# allocates most of the mixed files' holes while mkfiles writes them
	# (1 GiB seed: 6.6 GiB did not hold the nine files).
	local mib=$((SIZE_MIB * 12 + 512))
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	mkdir -p "$mnt"
	rm -f "$img"
	truncate -s ${mib}M "$img"
	case $fs in
	ext4) mkfs.ext4 -q -F "$img" ;;
	xfs) mkfs.xfs -q -f "$img" ;;
	btrfs) mkfs.btrfs -q -f "$img" >/dev/null ;;
	esac
	mount -o loop "$img" "$mnt"
	./mkfiles seed "$mnt" "$SIZE_MIB" >&2 || { echo "sparse.sh: mkfiles seed failed on $fs" >&2; exit 1; }
	for f in $ALL_FILES; do [[ " $files " == *" $f "* ]] || rm -f "$mnt/$f"; done
	echo "$mnt"
}

run_fs() { # fs files
	local fs=$1 files=$2 mnt f cache r
	mnt=$(make_fs "$fs" "$files")
	start_snfsd "$mnt"
	for s in $SERVERS; do [[ $s == ganesha ]] && { "$PEERS/ganesha.sh" start "$mnt" $GP >&2 && GDIR=$mnt; }; done
	sleep 1
	local -A wires
	for f in $files; do
		if [[ -n $PAIRS_ONLY ]]; then
			wires[$f]="$(wire "$mnt" "$f" 1) $(wire "$mnt" "$f" 2)"
			continue
		fi
		local p=$mnt/$f w41 w42
		w41=$(wire "$mnt" "$f" 1)
		w42=$(wire "$mnt" "$f" 2)
		wires[$f]="$w41 $w42"
		for cache in $CACHES; do
			r=$(measure $cache "$p" "$SNFS" cat "nfs://127.0.0.1:$SP$p?version=3")
			row $fs $f $cache snfsd snfs v3-READ "$r" $((bytes >> 20)) $bytes
			r=$(measure $cache "$p" "$SNFS" cat "nfs://127.0.0.1:$SP$p?version=4.1")
			row $fs $f $cache snfsd snfs v4.1-READ "$r" $w41
			r=$(measure $cache "$p" "$SNFS" cat "nfs://127.0.0.1:$SP$p?version=4.2")
			row $fs $f $cache snfsd snfs v4.2-READ_PLUS "$r" $w42
			r=$(measure $cache "$p" nfs-cat "nfs://127.0.0.1$p?version=3&nfsport=$SP&mountport=$SP")
			row $fs $f $cache snfsd nfs-cat v3-READ "$r" $((bytes >> 20)) $bytes
			r=$(measure $cache "$p" nfs-cat "nfs://127.0.0.1$p?version=4&nfsport=$SP")
			row $fs $f $cache snfsd nfs-cat v4.0-READ "$r" $((bytes >> 20)) $bytes
			if [[ -n $GDIR ]]; then
				local sp=$SPID
				SPID=
				r=$(measure $cache "$p" nfs-cat "nfs://127.0.0.1/export/$f?version=3&nfsport=$GP&mountport=$((GP + 1))")
				row $fs $f $cache ganesha nfs-cat v3-READ "$r" $((bytes >> 20)) $bytes
				r=$(measure $cache "$p" nfs-cat "nfs://127.0.0.1/export/$f?version=4&nfsport=$GP")
				row $fs $f $cache ganesha nfs-cat v4.0-READ "$r" $((bytes >> 20)) $bytes
				SPID=$sp
			fi
		done
	done
	for f in $files; do
		[[ $f == hole ]] || pair warm $fs $f "$mnt/$f" ${wires[$f]}
		[[ $f != data ]] || pair cold $fs $f "$mnt/$f" ${wires[$f]}
	done
	[[ -n $PAIRS_ONLY ]] && { stop_servers; umount "$mnt"; rm -f "$W/$fs.img"; return; }
	# The tiny-hole policy and detect_zeroes, end to end (warm, v4.2).
	for mh in $MIN_HOLES; do
		start_snfsd "$mnt" "readplus_min_hole=$mh"
		for f in $files; do
			[[ $f == mixed-* ]] || continue
			r=$(measure warm "$mnt/$f" "$SNFS" cat "nfs://127.0.0.1:$SP$mnt/$f?version=4.2")
			row $fs $f warm "snfsd-min$mh" snfs v4.2-READ_PLUS "$r" $(wire "$mnt" "$f" 2)
		done
	done
	start_snfsd "$mnt" detect_zeroes
	for f in data mixed-4d; do
		[[ " $files " == *" $f "* ]] || continue
		r=$(measure warm "$mnt/$f" "$SNFS" cat "nfs://127.0.0.1:$SP$mnt/$f?version=4.2")
		row $fs $f warm snfsd-dz snfs v4.2-READ_PLUS "$r" $(wire "$mnt" "$f" 2)
	done
	# Copies instead of sendfile or a mapping (no_zerocopy,no_mapped;
	# zerocopy=auto, the default, sends pieces from the size where
	# sendfile pays here, timed at start, and smaller ones from a kept
	# mapping): READ and READ_PLUS beside the default rows of this run.
	start_snfsd "$mnt" no_zerocopy,no_mapped
	for f in $files; do
		[[ $f == mixed-* || $f == data ]] || continue
		r=$(measure warm "$mnt/$f" "$SNFS" cat "nfs://127.0.0.1:$SP$mnt/$f?version=4.1")
		row $fs $f warm snfsd-copy snfs v4.1-READ "$r" $(wire "$mnt" "$f" 1)
		r=$(measure warm "$mnt/$f" "$SNFS" cat "nfs://127.0.0.1:$SP$mnt/$f?version=4.2")
		row $fs $f warm snfsd-copy snfs v4.2-READ_PLUS "$r" $(wire "$mnt" "$f" 2)
	done
	stop_servers
	umount "$mnt"
	rm -f "$W/$fs.img"
}

# Physical limits on this machine, from a file in the page cache.
limits() {
	local d=$W/limits r
	mkdir -p "$d"
	[[ $(stat -c %s "$d/data" 2>/dev/null) == "$bytes" ]] || ./mkfiles files "$d" "$SIZE_MIB" >&2
	cat "$d/data" >/dev/null
	# min and median of RUNS, like every other row: one sample of a
	# noisy machine made the ratio to it swing by a third
	local tcp=() pc=()
	for ((i = 0; i < RUNS; i++)); do
		tcp+=("$(./tcpstream "$d/data" | awk '{print $2}')")
		pc+=("$("$TIMED" cat "$d/data")")
	done
	r=$(printf '%s\n' "${tcp[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%s %s 0", a[1], a[int((NR+1)/2)]}')
	row limits data warm loopback tcpstream raw-TCP "$r" 0 $bytes
	r=$(printf '%s\n' "${pc[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%s %s 0", a[1], a[int((NR+1)/2)]}')
	row limits data warm local cat page-cache "$r" 0 0
}

limits
for fs in $FSES; do run_fs "$fs" "$FILES"; done
for fs in $QUICK_FSES; do run_fs "$fs" "data hole mixed-4d"; done

# ---- KVM: the Linux kernel client rows (bench/sparse_guest.sh). One QEMU
# guest runs snfsd and knfsd side by side and reads the seed files with
# `dd bs=1M` and `dd iflag=direct bs=128K`, vers=4.2 and 4.1, plus the
# readplus_min_hole policy; writes sparse_kernel.{md,csv}. The guest CPU is
# emulated, so its times stand apart from the rows above. KVM=1 runs it
# (failing the bench if it fails), KVM=0 skips it; by default (auto) it runs
# when ../shared/tools/kvm is there and its setup works, and a failure is
# only reported. Its own knobs: KVM_SIZE_MIB (64), KVM_FILES, KVM_MIN_HOLES.
KVM=${KVM:-auto}
KVM_DIR=$SHARED/tools/kvm
if [[ $KVM == auto ]]; then
	KVM=0
	[[ -x $KVM_DIR/run-guest.sh ]] && NFS_KVM_KNFSD=1 "$KVM_DIR/setup.sh" >/dev/null 2>&1 && KVM=auto
fi
if [[ $KVM != 0 ]]; then
	stop_servers
	if ! RES=$RES RUNS=$RUNS SIZE_MIB=${KVM_SIZE_MIB:-64} \
		FILES=${KVM_FILES:-data hole mixed-4d mixed-4h mixed-32d} \
		MIN_HOLES=${KVM_MIN_HOLES:-0 4096 8192 16384 65536} SERVERS="snfsd knfsd" \
		"$ROOT/bench/sparse_guest.sh" "$W/kvm" >&2; then
		echo "sparse: the kernel client rows failed (bench/sparse_guest.sh)" >&2
		[[ $KVM == 1 ]] && exit 1
	fi
fi
"$ROOT/bench/sparse_report.sh" "$CSV" "$RES" "$SIZE_MIB" "$RUNS"
