#!/bin/bash
# `snfs bench` against snfsd, v3 and v4.2: a short run prints requests/s,
# reads/s, writes/s, latency and RPC counters with no errors; the classic
# page cache (pagecache=full) sends READs before partial writes while the
# partial one sends fewer; bad arguments are refused.
set -u
. "$(dirname "$0")/../lib.sh"
SNFS=${SNFS:-$ROOT/build/asan/snfs}
[ -x "$SNFS" ] || SNFS=$ROOT/build/snfs
scratch
EXP=$T_DIR/exp
mkdir -p "$EXP/b"
PORT=$(free_port)
snfsd_start "$PORT" --no-portmap -e "$EXP:rw,insecure,no_root_squash,async" || notok "snfsd start"
BASE="nfs://127.0.0.1:$PORT$EXP/b"

field() { # FILE KEY -> the first number after "KEY:"
	awk -v k="$2:" '$1 == k {print $2; exit}' "$1"
}
rpc() { # FILE OP -> the count of OP on the rpc: line
	awk -v op="$2" '$1 == "rpc:" {for (i = 2; i < NF; i++) if ($i == op) print $(i + 1)}' "$1"
}

for v in 3 4.2; do
	out=$T_DIR/bench-$v.txt
	"$SNFS" bench --threads 4 --size 4M --files 8 --block 2K --time 2 \
		"$BASE?version=$v" >"$out" 2>"$T_DIR/bench-$v.err"
	check "v$v: snfs bench exits 0" test $? = 0
	rps=$(field "$out" requests/s)
	check "v$v: requests/s reported and positive ($rps)" awk -v r="${rps:-0}" 'BEGIN {exit !(r > 0)}'
	check "v$v: reads/s and writes/s reported" grep -q '^reads/s: [0-9]' "$out"
	check "v$v: writes/s reported" grep -q '^writes/s: [0-9]' "$out"
	check "v$v: latency min/avg/p95/p99/max" grep -Eq '^latency ms: min [0-9.]+ avg [0-9.]+ p95 [0-9.]+ p99 [0-9.]+ max [0-9.]+' "$out"
	check_eq "v$v: errors 0" "0" "$(sed -n 's/.*errors \([0-9]*\).*/\1/p' "$out")"
	w=$(rpc "$out" WRITE) c=$(rpc "$out" COMMIT)
	check "v$v: WRITE and COMMIT counted (WRITE=$w COMMIT=$c)" test "${w:-0}" -gt 0 -a "${c:-0}" -gt 0
	check "v$v: 8 files of 512 KiB prepared" test "$(find "$EXP/b" -name 'snfs-bench.*' -size 512k | wc -l)" = 8
done

# Same number of requests, write-only (rw-ratio 0): the classic cache must
# READ before partial writes, the partial cache never.
for m in partial full; do
	"$SNFS" bench --threads 2 --size 4M --files 8 --rw-ratio 0 --requests 400 --time 20 \
		"$BASE?version=3&pagecache=$m" >"$T_DIR/w-$m.txt" 2>&1
	check "pagecache=$m: write-only run exits 0" test $? = 0
done
rp=$(rpc "$T_DIR/w-partial.txt" READ) rf=$(rpc "$T_DIR/w-full.txt" READ)
check_eq "pagecache=partial: 2 KiB writes send no READ" "0" "${rp:-x}"
check "pagecache=full: 2 KiB writes READ their pages first (READ=$rf)" test "${rf:-0}" -gt 100
check "pagecache=full is named in the report" grep -q '^pagecache: full' "$T_DIR/w-full.txt"

check_eq "bad --threads exits 1" "1" "$("$SNFS" bench --threads 0 "$BASE" >/dev/null 2>&1; echo $?)"
check_eq "bad --block exits 1" "1" "$("$SNFS" bench --block 2Q "$BASE" >/dev/null 2>&1; echo $?)"
check_eq "no URL exits 1" "1" "$("$SNFS" bench --time 1 >/dev/null 2>&1; echo $?)"
check_eq "size too small for the files exits 1" "1" "$("$SNFS" bench --size 1K --files 8 "$BASE" >/dev/null 2>&1; echo $?)"
check_eq "bad pagecache= value exits 1" "1" "$("$SNFS" bench --time 1 "$BASE?pagecache=maybe" >/dev/null 2>&1; echo $?)"
snfsd_stop
check_no_sanitizer_reports "bench"
[ "$T_FAILS" = 0 ]
