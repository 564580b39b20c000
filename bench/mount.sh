#!/bin/bash
# The seed's sysbench fileio run against one snfsd on loopback:
#   sysbench fileio --file-test-mode=rndrw --file-block-size=2K
#     --file-total-size=200M --threads=16 --file-rw-ratio=0.5
#  1. host: through snfs-mount (FUSE on libsnfs), NFSv3 and NFSv4.2, with
#     the libsnfs partial-page cache on and off;
#  2. guest (GUEST=1): in ONE QEMU guest (../shared/tools/kvm, TCG-emulated
#     CPU) the Linux kernel NFS client (vers=3, vers=4.2) beside snfs-mount
#     in the same guest, all against the host's snfsd at 10.0.2.2. Guest
#     numbers compare only with each other, never with the host's.
# The test files are prepared once, locally in the export directory (no
# client's prepare is timed), and every run mounts afresh. Runs are
# interleaved, the order rotating, so the shared machine's load hits every
# configuration alike; the report gives medians over the runs.
# Prints the tables and writes bench/results/mount.md (raw sysbench reports
# stay in WORKDIR/out and WORKDIR/gout).
# usage: bench/mount.sh [WORKDIR]     (default /tmp/snfs-bench-mount)
#   TIME=30 RUNS=3 VERSIONS="3 4.2" CACHES="on off" SIZE=200M
#   GUEST=1 GUEST_TIME=30 GUEST_RUNS=2 GUEST_SIZE=$SIZE GUEST_CACHES="on off"
#   GUEST_TIMEOUT=3600 GUEST_MEM=2G OUT=bench/results/mount.md
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SNFS_SHARED:-$(cd "$ROOT/.." && pwd)/shared}
# a clone elsewhere (CI) still finds the team's tools
[ -d "$SHARED/tools" ] || SHARED=/work/shared
KVM=$SHARED/tools/kvm/run-guest.sh
W=$(realpath -m "${1:-/tmp/snfs-bench-mount}")
TIME=${TIME:-30} RUNS=${RUNS:-3} VERSIONS=${VERSIONS:-3 4.2}
CACHES=${CACHES:-on off} SIZE=${SIZE:-200M}
GUEST=${GUEST:-1} GUEST_TIME=${GUEST_TIME:-30} GUEST_RUNS=${GUEST_RUNS:-2}
GUEST_SIZE=${GUEST_SIZE:-$SIZE} GUEST_CACHES=${GUEST_CACHES:-on off}
GUEST_TIMEOUT=${GUEST_TIMEOUT:-3600} GUEST_MEM=${GUEST_MEM:-2G}
OUT=${OUT:-$ROOT/bench/results/mount.md}
log() { echo "mount.sh: $*" >&2; }
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
T0=$(date -u '+%Y-%m-%d %H:%M')
make -s -C "$ROOT" build/snfsd build/snfs-mount >/dev/null || exit 1
command -v sysbench >/dev/null || apt-get install -y -qq sysbench >&2
rm -rf "$W"
EXP=$W/export
mkdir -p "$EXP" "$W/state" "$W/mnt" "$W/out" "$W/gout" "$ROOT/bench/results"

# sbargs SIZE: the seed's sysbench arguments for that total size
sbargs() {
	echo "--file-test-mode=rndrw --file-block-size=2K --file-total-size=$1 --threads=16 --file-rw-ratio=0.5"
}
# prepare SIZE: the files, written locally in EXPORT/sb-SIZE
prepare() {
	[ -d "$EXP/sb-$1" ] && return 0
	mkdir -p "$EXP/sb-$1"
	# shellcheck disable=SC2046
	(cd "$EXP/sb-$1" && sysbench fileio $(sbargs "$1") prepare >/dev/null) || exit 1
}
prepare "$SIZE"
[[ $GUEST == 1 ]] && prepare "$GUEST_SIZE"
sync

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ROOT/build/snfsd" -e "$EXP:rw,insecure,no_root_squash" -l 127.0.0.1 -p "$PORT" \
	-s "$W/state" --no-portmap -t 8 2>"$W/snfsd.log" &
SPID=$!
MPID=
cleanup() {
	mountpoint -q "$W/mnt" && fusermount3 -u "$W/mnt"
	[ -n "$MPID" ] && wait "$MPID" 2>/dev/null
	kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
	rm -rf "$EXP"
}
trap cleanup EXIT
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && break; sleep 0.1; done
URL="nfs://127.0.0.1$EXP?nfsport=$PORT&mountport=$PORT"

# parse LABEL RUN FILE: one sysbench report -> "LABEL RUN reqs/s reads/s
# writes/s fsyncs/s p50 p95 p99 max" (latency in ms: percentiles from
# sysbench's histogram, whose buckets are ~1.5% wide; max from its summary),
# or "LABEL RUN FAILED" when the report has no numbers.
parse() {
	awk -v label="$1" -v run="$2" '
	/^ *[0-9.]+ \|/ { v[n] = $1; c[n] = $NF; tot += $NF; n++ }
	/reads\/s:/ { r = $2; ok = 1 } /writes\/s:/ { w = $2 } /fsyncs\/s:/ { f = $2 }
	/max:/ && mx == "" { mx = $2 }
	END {
		if (!ok || !tot) { print label, run, "FAILED"; exit }
		split("50 95 99", q, " ")
		for (k = 1; k <= 3; k++) {
			need = tot * q[k] / 100; acc = 0
			for (i = 0; i < n; i++) { acc += c[i]; if (acc >= need) { p[k] = v[i]; break } }
		}
		printf "%s %s %.1f %.1f %.1f %.1f %s %s %s %s\n", label, run, r + w + f, r, w, f, p[1], p[2], p[3], mx
	}' "$3" 2>/dev/null || echo "$1 $2 FAILED"
}

# host_run LABEL RUN VERSION CACHE: one sysbench run on a fresh snfs-mount
host_run() {
	local label=$1 f=$W/out/$1.$2 opts="version=$3,timeout=60"
	[[ $4 == off ]] && opts+=",cache=0"
	"$ROOT/build/snfs-mount" "$URL" "$W/mnt" -f -o "$opts" 2>>"$W/mount.$label.log" &
	MPID=$!
	for _ in $(seq 50); do mountpoint -q "$W/mnt" && break; sleep 0.1; done
	# shellcheck disable=SC2046
	(cd "$W/mnt/sb-$SIZE" && sysbench fileio $(sbargs "$SIZE") --time="$TIME" --histogram=on run) \
		>"$f.out" 2>"$f.err"
	fusermount3 -u "$W/mnt"
	wait "$MPID"
	MPID=
	parse "$label" "$2" "$f.out"
}

# ---- 1. host: snfs-mount ----
HCFG=()
for v in $VERSIONS; do
	for c in $CACHES; do HCFG+=("snfs-mount-v$v-cache-$c"); done
done
HROWS=
for run in $(seq "$RUNS"); do
	n=${#HCFG[@]}
	for i in $(seq 0 $((n - 1))); do
		label=${HCFG[$(((i + run - 1) % n))]}
		v=${label#snfs-mount-v} v=${v%%-*}
		row=$(host_run "$label" "$run" "$v" "${label##*-}")
		log "host $row"
		HROWS+=$row$'\n'
	done
done

# ---- 2. guest: kernel client and snfs-mount, side by side ----
GROWS='' GNOTE=''
if [[ $GUEST == 1 && -x $KVM ]]; then
	GCFG=
	for v in $VERSIONS; do GCFG+=" kernel-v$v"; done
	for v in $VERSIONS; do
		for c in $GUEST_CACHES; do GCFG+=" snfs-mount-v$v-cache-$c"; done
	done
	log "guest: ${GCFG# } x $GUEST_RUNS runs of ${GUEST_TIME}s (TCG; this takes a while)"
	# shellcheck disable=SC2046
	"$KVM" --mem "$GUEST_MEM" --timeout "$GUEST_TIMEOUT" --rw "$W/gout" -- \
		bash "$ROOT/bench/mount_guest.sh" "$PORT" "$EXP" "sb-$GUEST_SIZE" "$W/gout" \
		"$GUEST_TIME" "$GUEST_RUNS" "'${GCFG# }'" $(sbargs "$GUEST_SIZE") \
		>"$W/guest.txt" 2>"$W/guest.err" || log "guest failed (status $?), see $W/guest.err"
	cat "$W/guest.txt" >&2
	grep -q 'no-/dev/fuse' "$W/guest.txt" && GNOTE="The guest had no /dev/fuse: its snfs-mount rows failed."
	for label in $GCFG; do
		for run in $(seq "$GUEST_RUNS"); do
			row=$(parse "$label" "$run" "$W/gout/$label.$run.out")
			log "guest $row"
			GROWS+=$row$'\n'
		done
	done
elif [[ $GUEST == 1 ]]; then
	GNOTE="No guest: $KVM not found."
fi

# summary ROWS: per label (first-seen order), the median over its runs of
# every column, and requests/s as "median (min-max)".
summary() {
	awk '
	$3 == "FAILED" { if (!($1 in seen)) { seen[$1] = 1; ord[++nl] = $1 }; fail[$1]++; next }
	NF == 10 {
		if (!($1 in seen)) { seen[$1] = 1; ord[++nl] = $1 }
		k = ++cnt[$1]
		for (j = 3; j <= 10; j++) val[$1, j, k] = $j
	}
	function med(l, j,   m, i, a, t, x, y) {
		m = cnt[l]
		for (i = 1; i <= m; i++) a[i] = val[l, j, i] + 0
		for (x = 1; x <= m; x++) for (y = x + 1; y <= m; y++) if (a[y] < a[x]) { t = a[x]; a[x] = a[y]; a[y] = t }
		lo = a[1]; hi = a[m]
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	END {
		for (i = 1; i <= nl; i++) {
			l = ord[i]
			if (!cnt[l]) { printf "| %s | all %d runs failed | | | | | | | | |\n", l, fail[l]; continue }
			m3 = med(l, 3)
			printf "| %s | %d%s | %.1f (%.1f-%.1f)", l, cnt[l], fail[l] ? " (+" fail[l] " failed)" : "", m3, lo, hi
			for (j = 4; j <= 6; j++) printf " | %.1f", med(l, j)
			for (j = 7; j <= 10; j++) printf " | %.3f", med(l, j)
			print " |"
		}
	}' <<<"$1"
}
raw() {
	awk 'NF { printf "| %s | %s", $1, $2; for (j = 3; j <= NF; j++) printf " | %s", $j; print " |" }' <<<"$1"
}
HEAD="| configuration | runs | requests/s median (min-max) | reads/s | writes/s | fsyncs/s | p50 | p95 | p99 | max |"
SEP="|---|---|---|---|---|---|---|---|---|---|"
RHEAD="| configuration | run | requests/s | reads/s | writes/s | fsyncs/s | p50 | p95 | p99 | max |"
{
	echo "# sysbench fileio rndrw through snfs-mount and the kernel client (snfsd on loopback)"
	echo
	echo "Run $T0 to $(date -u '+%H:%M') UTC by bench/mount.sh on $(nproc) CPUs shared with other jobs (load average at start $LOAD0, at the end $(cut -d' ' -f1-3 /proc/loadavg)): expect noise, compare medians within one table only."
	echo
	echo "- Workload: \`sysbench fileio $(sbargs "$SIZE")\` (sysbench defaults otherwise: 128 files, \`--file-fsync-freq=100\`: after every 100 reads+writes it fsyncs each of the 128 files, so fsyncs are about 56 % of the requests), \`--histogram=on\`. The files are prepared once, locally in the export; every run mounts afresh (cold client cache) and unmounts after."
	echo "- Server: one snfsd (-O2 build, \`-t 8\`, \`--no-portmap\`) on 127.0.0.1, export \`rw,insecure,no_root_squash\` (sync), fresh state directory; every row below talks to it."
	echo "- snfs-mount: \`-o version=V,timeout=60\`, \`cache-off\` adds \`cache=0\` (libsnfs page cache off; on = its default size, partial pages). On NFSv4.x libsnfs sends scattered write-backs as one COMPOUND, on v3 one WRITE each."
	echo "- Numbers: median over the runs of each column (runs interleaved, order rotating); requests/s = reads/s + writes/s + fsyncs/s, with min-max of the runs. Latency in ms per request: p50/p95/p99 from sysbench's histogram (log buckets ~1.8% wide), max from its summary."
	echo
	echo "## 1. Host: snfs-mount (FUSE on libsnfs), NFSv3 vs NFSv4.2, page cache on/off"
	echo
	echo "\`--time=$TIME\`, $RUNS runs each. Compare these rows with each other (native CPU)."
	echo
	echo "$HEAD"
	echo "$SEP"
	summary "$HROWS"
	if [[ $GUEST == 1 ]]; then
		echo
		echo "## 2. QEMU guest: Linux kernel NFS client vs snfs-mount, side by side"
		echo
		echo "One guest (../shared/tools/kvm/run-guest.sh, Debian kernel ${NFS_KVM_KERNEL:-backports} 6.12, 2 vCPUs, $GUEST_MEM, **TCG-emulated CPU**) runs every row of this table against the host's snfsd (10.0.2.2 = host 127.0.0.1, QEMU user-net). Kernel mounts: \`vers=3,nolock,proto=tcp,port=P,mountport=P,mountproto=tcp\` and \`vers=4.2,port=P\` (otherwise defaults). snfs-mount runs in the guest through its /dev/fuse, options as on the host."
		echo "\`sysbench fileio $(sbargs "$GUEST_SIZE")\` with \`--time=$GUEST_TIME\`, $GUEST_RUNS runs each. The emulated CPU makes these numbers comparable **only with each other** (kernel client vs snfs-mount in the same guest), never with section 1. ${GNOTE}"
		echo
		echo "$HEAD"
		echo "$SEP"
		summary "$GROWS"
	fi
	echo
	echo "## Every run"
	echo
	echo "$RHEAD"
	echo "$SEP"
	raw "$HROWS"
	[[ $GUEST == 1 ]] && raw "$(sed '/./s/^/guest:/' <<<"$GROWS")"
} >"$OUT"
cat "$OUT"
