#!/bin/bash
# The guest half of bench/mount.sh: runs INSIDE a QEMU guest
# (../shared/tools/kvm/run-guest.sh) and drives the same sysbench fileio run
# through the Linux kernel NFS client and through snfs-mount (FUSE in the
# guest), both against the host's snfsd (10.0.2.2 is host 127.0.0.1).
# The test files are prepared by the host in EXPORT/DIR beforehand, so no
# client spends guest time on `prepare`; every run mounts afresh (cold
# client cache) and unmounts after.
# Writes OUTDIR/LABEL.RUN.out (sysbench's report) and OUTDIR/LABEL.RUN.err;
# prints one "G LABEL RUN STATUS" line per run.
# usage (in the guest): mount_guest.sh PORT EXPORT DIR OUTDIR TIME RUNS CONFIGS SB-ARGS...
#   CONFIGS: space-separated labels kernel-v3 kernel-v4.2 snfs-mount-v3-cache-on
#   snfs-mount-v4.2-cache-off ... (order rotates by one each run)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PORT=$1 EXP=$2 DIR=$3 OUT=$4 TIME=$5 RUNS=$6 CONFIGS=$7
shift 7
SB=("$@")
M=/run/sbmnt
mkdir -p "$M" "$OUT"
modprobe fuse 2>/dev/null
[ -c /dev/fuse ] || echo "G - - no-/dev/fuse"

# mount_one LABEL: mounts the export at $M the way LABEL says; sets MPID
# for snfs-mount (its FUSE process stays in the foreground).
MPID=
mount_one() {
	local v cache
	case $1 in
	kernel-v3)
		# no portmapper on the host: explicit ports, MOUNT over TCP, no NLM
		mount -t nfs -o vers=3,nolock,proto=tcp,port="$PORT",mountport="$PORT",mountproto=tcp,retry=0 \
			"10.0.2.2:$EXP" "$M"
		;;
	kernel-v4.2)
		mount -t nfs -o vers=4.2,port="$PORT",retry=0 "10.0.2.2:$EXP" "$M"
		;;
	snfs-mount-v*)
		v=${1#snfs-mount-v} v=${v%%-*}
		cache=timeout=60
		[[ $1 == *cache-off ]] && cache=timeout=60,cache=0
		"$ROOT/build/snfs-mount" "nfs://10.0.2.2$EXP?nfsport=$PORT&mountport=$PORT" "$M" \
			-f -o "version=$v,$cache" 2>>"$OUT/$1.mount.log" &
		MPID=$!
		for _ in $(seq 100); do mountpoint -q "$M" && return 0; sleep 0.2; done
		return 1
		;;
	*) return 1 ;;
	esac
}

umount_one() {
	if [ -n "$MPID" ]; then
		fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
		wait "$MPID"
		MPID=
	else
		umount "$M" || umount -l "$M"
	fi
}

read -ra cfg <<<"$CONFIGS"
n=${#cfg[@]}
for run in $(seq "$RUNS"); do
	for i in $(seq 0 $((n - 1))); do
		# rotate the order: a slow patch of the shared host hits all alike
		label=${cfg[$(((i + run - 1) % n))]}
		f=$OUT/$label.$run
		if ! mount_one "$label" 2>"$f.err"; then
			echo "G $label $run mount-failed"
			[ -n "$MPID" ] && { kill "$MPID"; wait "$MPID"; MPID=; }
			continue
		fi
		(cd "$M/$DIR" && sysbench fileio "${SB[@]}" --time="$TIME" --histogram=on run) >"$f.out" 2>>"$f.err"
		st=$?
		umount_one 2>>"$f.err"
		echo "G $label $run status-$st"
	done
done
