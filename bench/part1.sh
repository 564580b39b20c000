#!/bin/bash
# Part-1 numbers, side by side in one run: snfsd vs nfs-ganesha.
#  - READ of a cached 1 GiB file: libnfs nfs-cat on this machine (native
#    speed), and the Linux kernel client in the QEMU guest (dd bs=1M of a
#    data and an all-hole file over vers=3, 4.1 and 4.2; the guest CPU is
#    emulated, so compare only within the guest run);
#  - listing a 200,000-entry directory: nfs-ls here, `ls -f` in the guest;
#  - the physical limits: raw loopback TCP and cat from the page cache.
# usage: bench/part1.sh [WORKDIR]   (RUNS=3, SIZE_MIB=1024)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SNFS_SHARED:-$(cd "$ROOT/.." && pwd)/shared}
# a clone elsewhere (CI) still finds the team's tools
[ -d "$SHARED/tools" ] || SHARED=/work/shared
W=$(realpath -m "${1:-/tmp/snfs-bench1}")
RUNS=${RUNS:-3} SIZE_MIB=${SIZE_MIB:-1024}
SP=22049 GP=20490
rm -rf "$W/state" # a fresh NFSv4 state: no grace period after a previous run
mkdir -p "$W/export" "$W/state" "$ROOT/bench/results"
cd "$W"
make -s -C "$ROOT" build/snfsd >/dev/null
command -v nfs-cat >/dev/null || apt-get install -y -qq libnfs-utils
for t in mkfiles tcpstream; do [[ $t -nt $SHARED/tools/peers/$t.c ]] || cc -O2 -o $t "$SHARED/tools/peers/$t.c"; done
[[ $(stat -c %s export/data 2>/dev/null) == $((SIZE_MIB << 20)) ]] || ./mkfiles files export "$SIZE_MIB" >&2
[[ $(find export/dir200k -maxdepth 1 -type f 2>/dev/null | wc -l) == 200000 ]] ||
	{ rm -rf export/dir200k; ./mkfiles dir export/dir200k 200000 >&2; }
EX=$W/export

"$ROOT/build/snfsd" -e "$EX:rw,insecure,no_root_squash" -p $SP -s "$W/state" --no-portmap -t 8 2>"$W/snfsd.log" &
SPID=$!
"$SHARED/tools/peers/ganesha.sh" start "$EX" $GP >&2
trap 'kill $SPID 2>/dev/null; "$SHARED/tools/peers/ganesha.sh" stop "$EX" $GP >&2 || true' EXIT
sleep 1

sub() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a - b}'; }
timeit() { # warm-up + RUNS runs -> "min median"
	local t=() t0
	"$@" >/dev/null
	for ((i = 0; i < RUNS; i++)); do t0=$EPOCHREALTIME; "$@" >/dev/null; t+=("$(sub "$EPOCHREALTIME" "$t0")"); done
	printf '%s\n' "${t[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.3f %.3f", a[1], a[int((NR+1)/2)]}'
}
OUT=$ROOT/bench/results/part1.md
bytes=$((SIZE_MIB << 20))
row() { # what "min med" [bytes]
	local a
	read -ra a <<<"$2"
	if [ -n "${3:-}" ]; then
		printf '| %s | %s | %s | %s |\n' "$1" "${a[0]}" "${a[1]}" "$(awk -v b="$3" -v t="${a[1]}" 'BEGIN{printf "%.0f", b/t/1e6}')"
	else
		printf '| %s | %s | %s | - |\n' "$1" "${a[0]}" "${a[1]}"
	fi
}
{
	echo "# part 1 bench, $(date -u +%FT%TZ), $(nproc) cores, RUNS=$RUNS, file ${SIZE_MIB} MiB"
	echo
	echo "| case | min s | median s | MB/s (median) |"
	echo "|---|---|---|---|"
	row "loopback TCP (tcpstream rw 1 MiB)" "$(timeit ./tcpstream export/data rw 1048576)" $bytes
	row "page cache (cat)" "$(timeit cat export/data)" $bytes
	for v in 3 4; do
		sa="version=$v&nfsport=$SP"; ga="version=$v&nfsport=$GP"
		[ $v = 3 ] && sa="$sa&mountport=$SP" && ga="$ga&mountport=$((GP + 1))"
		row "nfs-cat v$v data, snfsd" "$(timeit nfs-cat "nfs://127.0.0.1$EX/data?$sa")" $bytes
		row "nfs-cat v$v data, ganesha" "$(timeit nfs-cat "nfs://127.0.0.1/export/data?$ga")" $bytes
		row "nfs-ls v$v dir200k, snfsd" "$(timeit nfs-ls "nfs://127.0.0.1$EX/dir200k?$sa")"
		row "nfs-ls v$v dir200k, ganesha" "$(timeit nfs-ls "nfs://127.0.0.1/export/dir200k?$ga")"
	done
	echo "| ls -f dir200k (local) | $(timeit ls -f export/dir200k | tr ' ' '|') | - |"
	echo
	echo "Linux kernel client in the QEMU guest (emulated CPU: compare within this block only):"
	echo
	echo '```'
	"$SHARED/tools/kvm/run-guest.sh" --mem 2G --timeout 2400 -- "
	  echo '## snfsd'; $SHARED/tools/kvm/nfs-bench.sh -v '3 4.1 4.2' -o port=$SP -3 proto=tcp,mountport=$SP,mountproto=tcp 10.0.2.2:$EX data hole dir200k/
	  echo '## nfs-ganesha'; $SHARED/tools/kvm/nfs-bench.sh -v '3 4.1 4.2' -o port=$GP -3 proto=tcp,mountport=$((GP + 1)),mountproto=tcp 10.0.2.2:/export data hole dir200k/" 2>&1 | grep -v '^\[nfs-kvm'
	echo '```'
} | tee "$OUT"
