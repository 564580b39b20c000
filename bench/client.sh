#!/bin/bash
# Client benchmarks (issue 4, SEEDS.md sections 2 and 3), side by side in
# one run against one snfsd (--no-portmap, export rw,insecure,
# no_root_squash,async):
#  1. listing DIR_ENTRIES entries (mkfiles dir, kept between runs) with
#     readdir buffers BUFS over LS_VERSIONS: `snfs ls -f` seconds and
#     READDIR/READDIRPLUS counts, beside `ls -f` on the local directory and
#     the Linux kernel client in a QEMU guest (mount rsize=BUF, which caps
#     its READDIR size; per-op counts from /proc/self/mountstats);
#  2. `snfs bench` (sysbench fileio rndrw: 16 threads, 200 MiB, 2 KiB,
#     rw-ratio 0.5) with pagecache=partial against pagecache=full (a
#     classic cache that reads a 4 KiB page before a partial write), for
#     BENCH_TIME seconds and for the seed's fixed BENCH_REQUESTS requests;
#  3. copying the seed's sparse files (mkfiles seed, SIZE_MIB each) NFS to
#     local with `snfs cp`, libnfs `nfs-cp` and `cp` from a kernel mount in
#     the guest: seconds, bytes on the wire (TCP payload on lo from dumpcap
#     for snfs and nfs-cp; RPC bytes from mountstats for the kernel) and
#     the blocks the copy allocates.
# The guest is CPU-emulated (TCG): its seconds are not comparable with the
# host's; its RPC counts and bytes are. Compare ratios from one run only:
# the machine is shared.
# Writes bench/results/client.{md,csv}.
# usage: bench/client.sh [WORKDIR]        (default /tmp/snfs-cbench)
#   DIR_ENTRIES=1500000 BUFS="32K 256K 1M" LS_VERSIONS="3 4.2" LS_RUNS=1
#   BENCH_TIME=30 BENCH_REQUESTS=100000 BENCH_CACHE=256M
#   BENCH_VERSIONS="3 4.2" BENCH_RUNS=3 (alternating partial/full; the
#   ratio is of the medians) SIZE_MIB=256 SPARSE_FILES="data hole ..."
#   KERNEL=1 (0: skip the guest) KERNEL_CP_FILES="data hole mixed-4d
#   mixed-32h" GUEST_TIMEOUT=3600 PARTS="ls bench cp"
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${SNFS_SHARED:-$(cd "$ROOT/.." && pwd)/shared}
# a clone elsewhere (CI) still finds the team's tools
[ -d "$SHARED/tools" ] || SHARED=/work/shared
PEERS=$SHARED/tools/peers
KVM=$SHARED/tools/kvm/run-guest.sh
W=$(realpath -m "${1:-/tmp/snfs-cbench}")
DIR_ENTRIES=${DIR_ENTRIES:-1500000} BUFS=${BUFS:-32K 256K 1M}
LS_VERSIONS=${LS_VERSIONS:-3 4.2} LS_RUNS=${LS_RUNS:-1}
BENCH_TIME=${BENCH_TIME:-30} BENCH_REQUESTS=${BENCH_REQUESTS:-100000}
BENCH_CACHE=${BENCH_CACHE:-256M} BENCH_VERSIONS=${BENCH_VERSIONS:-3 4.2}
BENCH_RUNS=${BENCH_RUNS:-3}
SIZE_MIB=${SIZE_MIB:-256}
SPARSE_FILES=${SPARSE_FILES:-data hole mixed-4d mixed-4h mixed-8d mixed-8h mixed-16d mixed-16h mixed-32d mixed-32h}
KERNEL=${KERNEL:-1} GUEST_TIMEOUT=${GUEST_TIMEOUT:-3600}
# the guest is slow (TCG): it copies only these
KERNEL_CP_FILES=${KERNEL_CP_FILES:-data hole mixed-4d mixed-32h}
PARTS=${PARTS:-ls bench cp}
RES=${RES:-$ROOT/bench/results}
SNFS=$ROOT/build/snfs
EXP=$W/export
DIR=$EXP/dir-$DIR_ENTRIES
SPARSE=$EXP/sparse-$SIZE_MIB
CSV=$RES/client.csv MD=$RES/client.md
mkdir -p "$W" "$EXP" "$RES" "$W/out"
cd "$W" || exit 1
make -s -C "$ROOT" build/snfsd build/snfs >/dev/null || exit 1
command -v nfs-cp >/dev/null || apt-get install -y -qq libnfs-utils >&2
command -v bc >/dev/null || apt-get install -y -qq bc >&2
[[ mkfiles -nt $PEERS/mkfiles.c ]] || cc -O2 -o mkfiles "$PEERS/mkfiles.c" || exit 1
has() { [[ " $PARTS " == *" $1 "* ]]; }
log() { echo "client.sh: $*" >&2; }
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a - b}'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN {if (b + 0 > 0) printf "%.2f", a / b; else print "nan"}'; }
cpu_busy() { # % busy over 1 s
	local a b
	a=$(awk '/^cpu /{print $2+$3+$4+$6+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
	sleep 1
	b=$(awk '/^cpu /{print $2+$3+$4+$6+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
	awk -v a="$a" -v b="$b" 'BEGIN {split(a, x, " "); split(b, y, " "); printf "%.0f", 100 * (y[1] - x[1]) / (y[2] - x[2])}'
}

# ---- the files, kept between runs ----
if has ls && [[ $(find "$DIR" -maxdepth 1 -name 'f*' 2>/dev/null | wc -l) != "$DIR_ENTRIES" ]]; then
	log "making $DIR_ENTRIES entries in $DIR"
	rm -rf "$DIR"
	./mkfiles dir "$DIR" "$DIR_ENTRIES" >&2 || exit 1
fi
if has cp; then
	for f in $SPARSE_FILES; do
		[[ -f $SPARSE/$f && $(stat -c %s "$SPARSE/$f") == $((SIZE_MIB << 20)) ]] && continue
		log "making the seed files in $SPARSE"
		rm -rf "$SPARSE"
		mkdir -p "$SPARSE"
		./mkfiles seed "$SPARSE" "$SIZE_MIB" >&2 || exit 1
		break
	done
fi
mkdir -p "$EXP/bench"

# ---- snfsd ----
SP=${SP:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
# A fresh state directory: with old client records, snfsd's NFSv4 grace
# period would hold the first OPENs back.
rm -rf "$W/state"
mkdir -p "$W/state"
"$ROOT/build/snfsd" -l 127.0.0.1 -p "$SP" -s "$W/state" --no-portmap \
	-e "$EXP:rw,insecure,no_root_squash,async" 2>>"$W/snfsd.log" &
SPID=$!
CAPPID=
cleanup() {
	[[ -n $CAPPID ]] && kill "$CAPPID" 2>/dev/null
	kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
	rm -rf "$W/out"
}
trap cleanup EXIT
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$SP) 2>/dev/null && break; sleep 0.1; done
url() { # path-below-export version [args]
	echo "nfs://127.0.0.1:$SP$EXP/$1?version=$2${3:+&$3}"
}

echo "part,client,proto,param,seconds,entries_or_requests,rpcs,wire_bytes,note" >"$CSV"
csv() { local IFS=,; echo "$*" >>"$CSV"; }
BUSY0=$(cpu_busy)
log "snfsd on port $SP, CPU busy ${BUSY0}% before"

# ---- the kernel client: one guest for the listing and the copies ----
KOUT=$W/kernel.txt
: >"$KOUT"
guest_script() {
	cat <<EOF
set -u
M=/run/cb; mkdir -p \$M /run/cbout
now() { date +%s.%N; }
ops() { awk -v m=\$M '\$1=="device" {f=(\$5==m)} f && \$1 ~ /^[A-Z_]+:\$/ && \$2 > 0 {sub(":","",\$1); n[\$1]+=\$2; s+=\$5+\$6} END {printf "bytes=%d", s; for (k in n) printf " %s=%d", k, n[k]}' /proc/self/mountstats; }
mnt() { # vers rsize
	local o
	if [ \$1 = 3 ]; then o=vers=3,nolock,proto=tcp,port=$SP,mountport=$SP,mountproto=tcp; else o=vers=\$1,port=$SP; fi
	mount -t nfs -o \$o,rsize=\$2,retry=0 10.0.2.2:$EXP \$M
}
EOF
	if has ls; then
		for v in $LS_VERSIONS; do
			for b in $BUFS; do
				cat <<EOF
if mnt $v $(($(numfmt --from=iec "$b"))); then echo 3 > /proc/sys/vm/drop_caches
t0=\$(now); n=\$(ls -f \$M/dir-$DIR_ENTRIES | wc -l); t1=\$(now)
echo "KLS $v $b \$n \$(echo "\$t1 - \$t0" | bc) \$(ops)"; umount \$M; else echo "KLS $v $b mount-failed"; fi
EOF
			done
		done
	fi
	if has cp; then
		for v in 3 4.2; do
			for f in $KERNEL_CP_FILES; do
				cat <<EOF
if mnt $v 1048576; then echo 3 > /proc/sys/vm/drop_caches
t0=\$(now); cp \$M/sparse-$SIZE_MIB/$f /run/cbout/$f; t1=\$(now)
echo "KCP $v $f \$(echo "\$t1 - \$t0" | bc) \$(du -k /run/cbout/$f | cut -f1) \$(ops)"; rm -f /run/cbout/$f; umount \$M; else echo "KCP $v $f mount-failed"; fi
EOF
			done
		done
	fi
}
if [[ $KERNEL == 1 ]] && { has ls || has cp; }; then
	guest_script >"$W/guest.sh"
	log "kernel client in the guest (TCG; this takes a while)"
	"$KVM" --mem 2G --timeout "$GUEST_TIMEOUT" -- "bash $W/guest.sh" >"$KOUT" 2>"$W/guest.err" ||
		log "guest failed (status $?), see $W/guest.err"
fi
kfield() { # line key -> value of key=value
	tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k {print $2; f=1} END {if (!f) print 0}'
}

# ---- 1. listing ----
LS_ROWS=()
if has ls; then
	ls -f "$DIR" >/dev/null # warm the server's directory cache
	best=
	for _ in $(seq "$LS_RUNS"); do
		t0=$(now); n=$(ls -f "$DIR" | wc -l); t=$(sub "$(now)" "$t0")
		[[ -z $best ]] || awk -v a="$t" -v b="$best" 'BEGIN {exit !(a < b)}' && best=$t
	done
	LOCAL_LS=$best
	csv ls local-ls-f local - "$LOCAL_LS" "$n" 0 0 "ls -f on the server's directory"
	LS_ROWS+=("| local \`ls -f\` | - | - | $LOCAL_LS | $n | - | 1.00 |")
	log "local ls -f: $n entries in $LOCAL_LS s"
	for v in $LS_VERSIONS; do
		for b in $BUFS; do
			best='' rpcs=''
			for _ in $(seq "$LS_RUNS"); do
				t0=$(now)
				n=$("$SNFS" --stats ls -f "$(url "dir-$DIR_ENTRIES" "$v" "readdir-buffer=$b")" 2>"$W/ls.err" | wc -l)
				t=$(sub "$(now)" "$t0")
				r=$(grep -o 'readdir[a-z]*=[0-9]*' "$W/ls.err" | awk -F= '{s+=$2} END {print s+0}')
				rx=$(grep -o 'received=[0-9]*' "$W/ls.err" | cut -d= -f2)
				if [[ -z $best ]] || awk -v a="$t" -v b="$best" 'BEGIN {exit !(a < b)}'; then best=$t rpcs=$r; fi
			done
			x=$(div "$best" "$LOCAL_LS")
			csv ls snfs "v$v" "$b" "$best" "$n" "$rpcs" "$rx" "x local: $x"
			LS_ROWS+=("| \`snfs ls -f\` | v$v | $b | $best | $n | $rpcs READDIR | $x |")
			log "snfs ls v$v $b: $n entries, $best s, $rpcs READDIR RPCs (${x}x local)"
		done
	done
	while read -r _ v b n t rest; do
		[[ $n == mount-failed ]] && { LS_ROWS+=("| kernel (guest) | v$v | $b | mount failed | | | |"); continue; }
		rd=$(kfield "$rest" READDIR) rdp=$(kfield "$rest" READDIRPLUS)
		csv ls kernel-guest "v$v" "$b" "$t" "$n" "$((rd + rdp))" "$(kfield "$rest" bytes)" "READDIR=$rd READDIRPLUS=$rdp (TCG guest)"
		LS_ROWS+=("| kernel (TCG guest), rsize=$b | v$v | $b | $t | $n | $rd READDIR + $rdp READDIRPLUS | (emulated) |")
	done < <(grep '^KLS' "$KOUT")
fi

# ---- 2. snfs bench: partial-page cache against a classic one ----
BENCH_ROWS=() RATIO_ROWS=()
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
bench_one() { # version mode extra-args... -> fills B_* from the report
	local v=$1 m=$2 out=$W/bench-$1-$2.txt
	shift 2
	"$SNFS" bench --threads 16 --size 200M --block 2K --rw-ratio 0.5 "$@" \
		"$(url bench "$v" "cache=$BENCH_CACHE&pagecache=$m")" >"$out" 2>>"$W/bench.err"
	B_RPS=$(awk '$1 == "requests/s:" {print $2}' "$out")
	B_TIME=$(awk '$1 == "time:" {print $2}' "$out")
	B_REQ=$(awk '$1 == "requests:" {print $2}' "$out")
	B_ERR=$(sed -n 's/.*errors \([0-9]*\).*/\1/p' "$out")
	B_LAT=$(sed -n 's/^latency ms: //p' "$out")
	B_RPC=$(sed -n 's/^rpc: //p' "$out")
	B_READ=$(awk '$1 == "rpc:" {print $3 + $5}' "$out")
	B_TX=$(awk '$1 == "bytes:" {print $3 + $5}' "$out")
}
if has bench; then
	"$SNFS" bench --prepare-only --size 200M --block 2K "$(url bench 3)" 2>>"$W/bench.err"
	for v in $BENCH_VERSIONS; do
		for kind in time requests; do
			declare -A rps=()
			for run in $(seq "$BENCH_RUNS"); do
			# alternate the order: a noisy neighbour hits both alike
			order="partial full"
			((run % 2 == 0)) && order="full partial"
			for m in $order; do
				if [[ $kind == time ]]; then
					bench_one "$v" "$m" --time "$BENCH_TIME"
					param="${BENCH_TIME}s"
				else
					bench_one "$v" "$m" --time 600 --requests "$BENCH_REQUESTS"
					param="$BENCH_REQUESTS requests"
				fi
				rps[$m]="${rps[$m]:-} $B_RPS"
				csv bench "snfs-$m" "v$v" "$param" "$B_TIME" "$B_REQ" "$B_READ" "$B_TX" "run $run; req/s $B_RPS; errors $B_ERR; latency ms $B_LAT; $B_RPC"
				BENCH_ROWS+=("| v$v | $param | $run | $m | $B_RPS | $B_TIME | $B_REQ | $B_ERR | $B_LAT | $B_RPC |")
				log "bench v$v $param run $run $m: $B_RPS req/s, errors $B_ERR"
			done
			done
			mp=$(median ${rps[partial]}) mf=$(median ${rps[full]})
			RATIO_ROWS+=("| v$v | $param | $mp (${rps[partial]# }) | $mf (${rps[full]# }) | $(div "$mp" "$mf")x |")
			unset rps
		done
	done
fi

# ---- 3. sparse files, NFS to local ----
CP_ROWS=()
cap_start() {
	CAPF=$W/cap.pcapng
	rm -f "$CAPF"
	if command -v dumpcap >/dev/null; then
		dumpcap -q -i lo -s 96 -f "tcp port $SP" -w "$CAPF" 2>/dev/null &
		CAPPID=$!
		sleep 1.5 # it captures a little after it says so
	fi
}
cap_stop() { # -> TCP payload bytes, both ways
	if [[ -n $CAPPID ]]; then
		sleep 0.5
		kill -INT "$CAPPID" 2>/dev/null
		wait "$CAPPID" 2>/dev/null
		CAPPID=
		tshark -r "$CAPF" -T fields -e tcp.len 2>/dev/null | awk '{s+=$1} END {print s+0}'
	else
		echo nan
	fi
}
if has cp; then
	for f in $SPARSE_FILES; do
		cat "$SPARSE/$f" >/dev/null # the server reads from its page cache
		alloc=$(du -k "$SPARSE/$f" | cut -f1)
		for c in snfs-v3 snfs-v4.2 nfs-cp-v3 nfs-cp-v4.0; do
			rm -f "$W/out/$f"
			cap_start
			t0=$(now)
			case $c in
			snfs-v*)
				"$SNFS" --stats cp -q "$(url "sparse-$SIZE_MIB/$f" "${c#snfs-v}")" "$W/out/$f" 2>"$W/cp.err"
				;;
			nfs-cp-v3)
				nfs-cp "nfs://127.0.0.1$SPARSE/$f?version=3&nfsport=$SP&mountport=$SP" "$W/out/$f" >/dev/null 2>"$W/cp.err"
				;;
			nfs-cp-v4.0)
				nfs-cp "nfs://127.0.0.1$SPARSE/$f?version=4&nfsport=$SP" "$W/out/$f" >/dev/null 2>"$W/cp.err"
				;;
			esac
			st=$?
			t=$(sub "$(now)" "$t0")
			wire=$(cap_stop)
			ok=ok
			[[ $st == 0 ]] && cmp -s "$SPARSE/$f" "$W/out/$f" || ok="FAILED(status $st)"
			dst=$(du -k "$W/out/$f" 2>/dev/null | cut -f1)
			rpcs=$(grep -o 'calls=[0-9]*' "$W/cp.err" | head -1 | cut -d= -f2)
			sb=$(grep -o 'received=[0-9]*' "$W/cp.err" | cut -d= -f2)
			csv cp "${c%-v*}" "${c##*-}" "$f" "$t" "$((SIZE_MIB << 20))" "${rpcs:-}" "$wire" "$ok; dst KiB $dst; src KiB $alloc${sb:+; snfs_stats received $sb}"
			CP_ROWS+=("| $f | ${c%-v*} | ${c##*-} | $t | $(awk -v w="$wire" 'BEGIN {printf "%.1f", w / 1048576}') | ${rpcs:-} | $dst / $alloc | $ok |")
			log "cp $f $c: $t s, wire $wire bytes, $ok"
		done
		rm -f "$W/out/$f"
	done
	while read -r _ v f t dst rest; do
		[[ $t == mount-failed ]] && { CP_ROWS+=("| $f | kernel cp | v$v | mount failed | | | | |"); continue; }
		b=$(kfield "$rest" bytes)
		ops=$(tr ' ' '\n' <<<"$rest" | grep -E '^(READ|READ_PLUS|SEEK)=' | tr '\n' ' ')
		csv cp kernel-guest-cp "v$v" "$f" "$t" "$((SIZE_MIB << 20))" "$(kfield "$rest" READ)+$(kfield "$rest" READ_PLUS)" "$b" "mountstats bytes; $ops; dst KiB $dst (TCG guest)"
		CP_ROWS+=("| $f | kernel cp (TCG guest) | v$v | $t | $(awk -v w="$b" 'BEGIN {printf "%.1f", w / 1048576}') (mountstats) | ${ops% } | $dst / - | |")
	done < <(grep '^KCP' "$KOUT")
fi
BUSY1=$(cpu_busy)

# ---- the report ----
{
	echo "# Client benchmarks (bench/client.sh)"
	echo
	echo "Run $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores; CPU busy before ${BUSY0}%, after ${BUSY1}% (shared machine: compare within this run)."
	echo "snfsd on 127.0.0.1:$SP (--no-portmap, rw,insecure,no_root_squash,async); export $EXP."
	echo "Knobs: DIR_ENTRIES=$DIR_ENTRIES BUFS=\"$BUFS\" LS_RUNS=$LS_RUNS BENCH_TIME=$BENCH_TIME BENCH_REQUESTS=$BENCH_REQUESTS BENCH_CACHE=$BENCH_CACHE SIZE_MIB=$SIZE_MIB KERNEL=$KERNEL PARTS=\"$PARTS\"."
	echo "Kernel client: Linux (NFS_KVM_KERNEL=${NFS_KVM_KERNEL:-backports}, 6.12) in a TCG-emulated QEMU guest via ../shared/tools/kvm/run-guest.sh: its seconds are not comparable with the host's, its RPC counts and bytes are."
	if has ls; then
		echo
		echo "## 1. Listing $DIR_ENTRIES entries"
		echo
		echo "Seed (SEEDS.md section 2): v3 1 MiB: 61 RPCs; v4 1 MiB: 91 RPCs. Target: snfs within 3x of local \`ls -f\`."
		echo
		echo "| client | proto | buffer | seconds | entries | RPCs | x local ls -f |"
		echo "|---|---|---|---|---|---|---|"
		printf '%s\n' "${LS_ROWS[@]}"
	fi
	if has bench; then
		echo
		echo "## 2. \`snfs bench\`: partial-page cache against a classic one"
		echo
		echo "sysbench fileio rndrw pattern: 16 threads, 128 files, 200 MiB, 2 KiB blocks, rw-ratio 0.5 (1 read : 2 writes), fsync every 100 requests per file; cache=$BENCH_CACHE (the seed's 4 GB client held all 200 MiB). pagecache=full emulates a cache of whole 4 KiB pages: a read miss or a partial write READs the page first. Seed: 1,592 -> 2,566 requests/s (1.61x) for 100,000 requests; target >= 1.6x."
		echo
		echo "| proto | run | partial req/s: median (runs) | full req/s: median (runs) | ratio of medians |"
		echo "|---|---|---|---|---|"
		printf '%s\n' "${RATIO_ROWS[@]}"
		echo
		echo "| proto | run | # | pagecache | req/s | seconds | requests | errors | latency ms | RPCs |"
		echo "|---|---|---|---|---|---|---|---|---|---|"
		printf '%s\n' "${BENCH_ROWS[@]}"
	fi
	if has cp; then
		echo
		echo "## 3. Copying the seed's sparse files NFS -> local ($SIZE_MIB MiB each)"
		echo
		echo "Wire: TCP payload both ways on lo (dumpcap) for snfs and nfs-cp; RPC bytes from /proc/self/mountstats for the kernel. KiB: blocks allocated by the copy / by the source."
		echo
		echo "| file | client | proto | seconds | wire MiB | RPCs | KiB dst / src | check |"
		echo "|---|---|---|---|---|---|---|---|"
		printf '%s\n' "${CP_ROWS[@]}"
	fi
} >"$MD"
log "wrote $MD and $CSV"
