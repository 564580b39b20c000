#!/bin/bash
# The seed's sysbench fileio run through snfs-mount on snfsd, with the
# libsnfs page cache (partial pages) on and off:
#   sysbench fileio --file-test-mode=rndrw --file-block-size=2K
#     --file-total-size=200M --threads=16 --file-rw-ratio=0.5
# Prints requests/s and latency percentiles (from sysbench's histogram)
# side by side and writes bench/results/mount.md.
# usage: bench/mount.sh [WORKDIR]   (TIME=30 seconds per run)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(realpath -m "${1:-/tmp/snfs-bench-mount}")
TIME=${TIME:-30}
make -s -C "$ROOT" build/snfsd build/snfs-mount >/dev/null
command -v sysbench >/dev/null || apt-get install -y -qq sysbench >&2
rm -rf "$W"
mkdir -p "$W/export" "$W/state" "$W/mnt" "$ROOT/bench/results"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ROOT/build/snfsd" -e "$W/export:rw,insecure,no_root_squash" -l 127.0.0.1 -p "$PORT" \
	-s "$W/state" --no-portmap -t 8 2>"$W/snfsd.log" &
SPID=$!
MPID=
cleanup() {
	mountpoint -q "$W/mnt" && fusermount3 -u "$W/mnt"
	[ -n "$MPID" ] && wait "$MPID" 2>/dev/null
	kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null || true
}
trap cleanup EXIT
sleep 1
URL="nfs://127.0.0.1$W/export?nfsport=$PORT&mountport=$PORT"
SB=(--file-test-mode=rndrw --file-block-size=2K --file-total-size=200M
	--threads=16 --file-rw-ratio=0.5)

# run LABEL MOUNT-OPTIONS: one sysbench run on a fresh mount; prints
# "LABEL reqs/s reads/s writes/s fsyncs/s p50 p95 p99 max" (ms).
run() {
	local label=$1 opts=$2 out=$W/sysbench.$1.out
	"$ROOT/build/snfs-mount" "$URL" "$W/mnt" -f -o "$opts" 2>"$W/mount.$label.log" &
	MPID=$!
	for _ in $(seq 50); do mountpoint -q "$W/mnt" && break; sleep 0.1; done
	mkdir -p "$W/mnt/sb"
	(cd "$W/mnt/sb" && sysbench fileio "${SB[@]}" prepare >/dev/null &&
		sysbench fileio "${SB[@]}" --time="$TIME" --histogram=on run >"$out" &&
		sysbench fileio "${SB[@]}" cleanup >/dev/null)
	rmdir "$W/mnt/sb"
	fusermount3 -u "$W/mnt"
	wait "$MPID"
	MPID=
	awk -v label="$label" '
	/^ *[0-9.]+ \|/ { v[n] = $1; c[n] = $NF; tot += $NF; n++ }
	/reads\/s:/ { r = $2 } /writes\/s:/ { w = $2 } /fsyncs\/s:/ { f = $2 }
	/max:/ && !mx { mx = $2 }
	END {
		split("50 95 99", q, " ")
		for (k = 1; k <= 3; k++) {
			need = tot * q[k] / 100; acc = 0
			for (i = 0; i < n; i++) { acc += c[i]; if (acc >= need) { p[k] = v[i]; break } }
		}
		printf "%s %.1f %.1f %.1f %.1f %s %s %s %s\n", label, r + w + f, r, w, f, p[1], p[2], p[3], mx
	}' "$out"
}

rows=$(run cache-on "timeout=60"; run cache-off "timeout=60,cache=0")
OUT=$ROOT/bench/results/mount.md
{
	echo "# sysbench fileio rndrw through snfs-mount (snfsd on loopback, $(date -u +%F))"
	echo
	echo "\`sysbench fileio ${SB[*]} --time=$TIME\`, 128 files, snfs-mount and snfsd -O2 builds,"
	echo "NFSv3, $(nproc) CPUs. Latency in ms (sysbench histogram)."
	echo
	echo "| libsnfs page cache | requests/s | reads/s | writes/s | fsyncs/s | p50 | p95 | p99 | max |"
	echo "|---|---|---|---|---|---|---|---|---|"
	echo "$rows" | awk '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }'
} >"$OUT"
cat "$OUT"
