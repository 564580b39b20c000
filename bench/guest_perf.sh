#!/bin/bash
# Where a guest read's time goes: snfsd against knfsd for one seed file,
# read by the Linux client in ONE QEMU guest (../shared/tools/kvm), then
# profiled with perf (-a: every CPU, call graphs). sparse_guest.sh gives
# the times; this tells why they differ (stop 22: knfsd splices the page
# cache into the socket, snfsd copies twice, and a copy under the
# emulated CPU runs at about 0.5 GB/s).
#  1. RUNS timed reads of FILE through each server, in turn, caches
#     dropped before each (times: compare within this run only);
#  2. one more read of each under `perf record -F FREQ -a -g`, and the
#     reports: samples by command and object, then by symbol with
#     children (syscalls, splice, copies) for the servers' threads.
# perf's sampling is itself dear under emulation (a 1 s read takes many
# seconds with it), so read the profile for shares, the timed runs for
# time. Writes WORKDIR/guest.out (raw) and WORKDIR/perf.txt.
# usage: bench/guest_perf.sh [WORKDIR]
#   FILE=mixed-4d SIZE_MIB=32 BS=128K DIRECT=1 VERS=4.2 RUNS=5 FREQ=500
#   SNFSD_OPTS="" (more export options of snfsd)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SNFS_SHARED:-$(cd "$ROOT/.." && pwd)/shared}
[ -d "$SHARED/tools" ] || SHARED=/work/shared
KVM_DIR=$SHARED/tools/kvm
FILE=${FILE:-mixed-4d} SIZE_MIB=${SIZE_MIB:-32} BS=${BS:-128K}
DIRECT=${DIRECT:-1} VERS=${VERS:-4.2} RUNS=${RUNS:-5} FREQ=${FREQ:-500}
SNFSD_OPTS=${SNFSD_OPTS:-}
PORT=22159 EXP=/srv/gp

# Context switches and rescheduling interrupts (the IPIs that wake an
# idle vCPU) since boot: "ctxt res".
switches() {
	echo "$(awk '$1 == "ctxt" {print $2}' /proc/stat) $(awk '$1 == "RES:" {
		for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i; print n}' /proc/interrupts)"
}

# One read of the file through the mount at $1 (caches dropped first);
# prints "seconds|context switches|rescheduling IPIs" of the read.
read_once() { # mountpoint [command prefix...]
	local m=$1 t0 flag= a b
	shift
	[ "$DIRECT" = 1 ] && flag=iflag=direct
	echo 3 >/proc/sys/vm/drop_caches
	a=$(switches)
	t0=$EPOCHREALTIME
	"$@" dd if="$m/$FILE" of=/dev/null bs="$BS" $flag 2>/dev/null >/dev/null
	b=$(switches)
	awk -v a="$EPOCHREALTIME" -v b="$t0" -v x="$a" -v y="$b" 'BEGIN {
		split(x, p, " "); split(y, q, " ")
		printf "%.3f|%d|%d", a - b, q[1] - p[1], q[2] - p[2] }'
}

guest_main() {
	local W=$1 s r
	modprobe loop
	mkdir -p /srv/gpimg $EXP /run/gp-snfsd /run/gp-knfsd /run/gp-state
	mount -t tmpfs -o size=90% gpimg /srv/gpimg
	truncate -s $((SIZE_MIB * 12 + 256))M /srv/gpimg/fs.img
	mkfs.ext4 -q -F /srv/gpimg/fs.img && mount -o loop /srv/gpimg/fs.img $EXP || return 1
	"$W/mkfiles" seed $EXP "$SIZE_MIB" >/dev/null
	[ -f "$EXP/$FILE" ] || { echo "E|no seed file $FILE"; return 1; }
	NFSD_THREADS=8 "$KVM_DIR/knfsd-guest.sh" $EXP 2>&1 | sed 's/^/I|/'
	"$W/snfsd" -e "$EXP:rw,insecure,no_root_squash${SNFSD_OPTS:+,$SNFSD_OPTS}" \
		-p $PORT -s /run/gp-state --no-portmap -t 8 2>/run/gp-snfsd.log &
	sleep 2
	mount -t nfs -o "vers=$VERS,port=$PORT,retry=0" 127.0.0.1:$EXP /run/gp-snfsd &&
		mount -t nfs -o "vers=$VERS,port=2049,retry=0" 127.0.0.1:/ /run/gp-knfsd || return 1
	for s in snfsd knfsd; do # untimed: maps and caches found once
		cmp -s "/run/gp-$s/$FILE" "$EXP/$FILE" && echo "V|$s|ok" || echo "V|$s|BAD"
	done
	for ((r = 1; r <= RUNS; r++)); do
		for s in snfsd knfsd; do echo "T|$s|$r|$(read_once /run/gp-$s)"; done
	done
	for s in snfsd knfsd; do
		echo "P|$s|$(read_once /run/gp-$s perf record -q -F "$FREQ" -a -g -o "/tmp/perf.$s" --)"
		echo "=== $s: samples by command and object"
		perf report -i "/tmp/perf.$s" --no-children --sort comm,dso -g none \
			--stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -20
		echo "=== $s: the server's threads, by symbol with children"
		perf report -i "/tmp/perf.$s" --children --comm "${s/knfsd/nfsd}" --sort sym -g none \
			--stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -60
	done
	umount /run/gp-snfsd /run/gp-knfsd
}

host_main() {
	local W
	W=$(realpath -m "${1:-/tmp/snfs-guest-perf}")
	mkdir -p "$W"
	make -s -C "$ROOT" build/snfsd >/dev/null 2>&1 || true
	[ -x "$ROOT/build/snfsd" ] || exit 1
	cp "$ROOT/build/snfsd" "$W/snfsd" # a rebuild meanwhile must not change it
	[[ $W/mkfiles -nt $SHARED/tools/peers/mkfiles.c ]] ||
		cc -O2 -o "$W/mkfiles" "$SHARED/tools/peers/mkfiles.c" || exit 1
	NFS_KVM_KNFSD=1 "$KVM_DIR/run-guest.sh" --mem 3G --timeout 1800 -- \
		FILE="$FILE" SIZE_MIB="$SIZE_MIB" BS="$BS" DIRECT="$DIRECT" VERS="$VERS" \
		RUNS="$RUNS" FREQ="$FREQ" SNFSD_OPTS="'$SNFSD_OPTS'" \
		bash "$ROOT/bench/guest_perf.sh" --guest "$W" >"$W/guest.out" 2>"$W/guest.err"
	grep -v '^[TPVI]|' "$W/guest.out" >"$W/perf.txt"
	python3 - "$W/guest.out" "$FILE" "$SIZE_MIB" "$BS" "$DIRECT" "$VERS" <<'PY'
import statistics, sys
out, f, size, bs, direct, vers = sys.argv[1:7]
t, cs, ipi = {}, {}, {}
for line in open(out):
    p = line.rstrip("\n").split("|")
    if p[0] == "T":
        t.setdefault(p[1], []).append(float(p[3]))
        cs.setdefault(p[1], []).append(int(p[4]))
        ipi.setdefault(p[1], []).append(int(p[5]))
    elif p[0] in ("V", "E"):
        print(" ".join(p))
print("%s %s MiB, dd bs=%s%s, vers=%s:" % (f, size, bs, " iflag=direct" if direct == "1" else "", vers))
for s, v in t.items():
    print("  %s: min %.3f median %.3f s over %d; per run (medians) %d context switches, %d rescheduling IPIs"
          % (s, min(v), statistics.median(v), len(v), statistics.median(cs[s]), statistics.median(ipi[s])))
if len(t) == 2:
    print("  snfsd/knfsd median: %.2f" % (statistics.median(t["snfsd"]) / statistics.median(t["knfsd"])))
PY
	echo "profiles: $W/perf.txt"
}

if [ "${1:-}" = --guest ]; then
	guest_main "$2"
else
	host_main "$@"
fi
