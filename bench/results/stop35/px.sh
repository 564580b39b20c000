#!/bin/bash
# stop 35: READ vs READ_PLUS in turn on one ext4 image, snfsd CPU per run,
# then a perf profile of snfsd over READ_PLUS runs. usage: px.sh [files]
set -u
ROOT=/work/main W=/tmp/s35 SP=23501
FILES=${1:-"mixed-4d mixed-32d"} RUNS=${RUNS:-7} FS=${FS:-ext4}
SNFSD=${SNFSD:-$ROOT/build/snfsd}
mkdir -p $W; cd $W
[ -x mkfiles ] || cc -O2 -o mkfiles /work/shared/tools/peers/mkfiles.c
[ -x spawntime ] || cc -O2 -o spawntime $ROOT/bench/spawntime.c
if ! mountpoint -q mnt-$FS; then
	mkdir -p mnt-$FS; rm -f $FS.img; truncate -s 14G $FS.img
	case $FS in ext4) mkfs.ext4 -q -F $FS.img ;; xfs) mkfs.xfs -q -f $FS.img ;; btrfs) mkfs.btrfs -q -f $FS.img >/dev/null ;; esac
	mount -o loop $FS.img mnt-$FS && ./mkfiles seed mnt-$FS 1024 >/dev/null
fi
$SNFSD -e $W/mnt-$FS:rw,insecure,no_root_squash -p $SP -s $W/state --no-portmap -t 8 ${SNFSD_ARGS:-} 2>>$W/snfsd.log &
SPID=$!; sleep 0.8
ticks() { awk '{print $14 + $15}' /proc/$SPID/stat; }
for f in $FILES; do
	p=$W/mnt-$FS/$f
	[ -n "${REREAD:-}" ] && { ./mkfiles evict $p >/dev/null; cat $p >/dev/null; }
	$ROOT/build/snfs cat "nfs://127.0.0.1:$SP$p?version=4.1" >/dev/null
	for ((i = 0; i < RUNS; i++)); do
		order="4.1 4.2"; ((i % 2)) && order="4.2 4.1"
		for v in $order; do
			[ "${CACHE:-warm}" = cold ] && { sleep 0.25; ./mkfiles evict $p >/dev/null; }
			c0=$(ticks); t=$(./spawntime $ROOT/build/snfs cat "nfs://127.0.0.1:$SP$p?version=$v")
			echo "$f $v $t $(( $(ticks) - c0 ))"
		done
	done
done | python3 -c '
import sys, statistics as st
d = {}
for l in sys.stdin:
    f, v, t, c = l.split()
    d.setdefault(f, {}).setdefault(v, []).append((float(t), int(c)))
for f in d:
    r = {v: st.median(t for t, _ in d[f][v]) for v in d[f]}
    for v in sorted(d[f]):
        ts = [t for t, _ in d[f][v]]
        print(f, v, "min %.4f med %.4f cpu/run %.3f" % (min(ts), r[v], sum(c for _, c in d[f][v]) / len(ts) / 100))
    if "4.1" in r and "4.2" in r:
        print(f, "RP/READ medians %.3f mins %.3f" % (r["4.2"] / r["4.1"], min(t for t, _ in d[f]["4.2"]) / min(t for t, _ in d[f]["4.1"])))
'
if [ -n "${PERF:-}" ]; then
	p=$W/mnt-$FS/$PERF
	perf record -q -g -o $W/perf.data -p $SPID -- sleep 4 >/dev/null 2>&1 &
	PP=$!; sleep 0.3
	for i in 1 2 3 4 5 6 7 8 9 10; do $ROOT/build/snfs cat "nfs://127.0.0.1:$SP$p?version=${PV:-4.2}" >/dev/null; done
	wait $PP
	perf report -i $W/perf.data --no-children --percent-limit 0.7 --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -50
fi
kill $SPID; wait $SPID 2>/dev/null
