#!/bin/bash
# stop 35: cold READs through snfsd with and without the stream order
# (SNFSD_NO_READ_ORDER=1), in turn; then the warm file's local dd and warm
# READ / READ_PLUS through snfsd. usage: ro.sh [files] (after px.sh)
set -u
ROOT=/work/main W=/tmp/s35 SP=23501 FS=${FS:-ext4} RUNS=${RUNS:-5}
FILES=${1:-"data mixed-4d"} V=${V:-4.1}
cd $W
start() { env $1 $ROOT/build/snfsd -e $W/mnt-$FS:rw,insecure,no_root_squash -p $SP -s $W/state --no-portmap -t 8 2>>$W/snfsd.log & SPID=$!; sleep 0.8; }
stop() { kill $SPID; wait $SPID 2>/dev/null; }
ticks() { awk '{print $14 + $15}' /proc/$SPID/stat; }
for f in $FILES; do
	p=$W/mnt-$FS/$f
	for ((i = 0; i < RUNS; i++)); do
		for mode in SNFSD_NO_READ_ORDER=1 SNFSD_X=1; do
			start $mode
			./mkfiles evict $p >/dev/null; sleep 0.2
			c0=$(ticks)
			t=$(./spawntime $ROOT/build/snfs cat "nfs://127.0.0.1:$SP$p?version=$V")
			c=$(( $(ticks) - c0 ))
			w41=$(./spawntime $ROOT/build/snfs cat "nfs://127.0.0.1:$SP$p?version=4.1")
			w42=$(./spawntime $ROOT/build/snfs cat "nfs://127.0.0.1:$SP$p?version=4.2")
			stop
			d=$(./spawntime dd if=$p of=/dev/null bs=1M)
			echo "$f ${mode%%=*} cold $t cpu $c warm41 $w41 warm42 $w42 dd $d"
		done
	done
done
