#!/bin/bash
# Guest: does placement matter? Server-warm reads of file F by snfsd and
# knfsd, the reader free or pinned to CPU 0 and snfsd free or pinned to
# CPU 1 (taskset), in turn; modes direct 4 KiB (N calls), direct 128 KiB
# and buffered 1 MiB (client cache dropped, server's read back first).
set -u
W=$1 EXP=/srv/gw SIZE_MIB=${SIZE_MIB:-32} N=${N:-1000} F=${F:-mixed-4d} RUNS=${RUNS:-5}
modprobe loop
mkdir -p /srv/gwimg $EXP /run/gw-state1
mount -t tmpfs -o size=90% gwimg /srv/gwimg
truncate -s $((SIZE_MIB * 12 + 256))M /srv/gwimg/fs.img
mkfs.ext4 -q -F /srv/gwimg/fs.img && mount -o loop /srv/gwimg/fs.img $EXP || exit 1
"$W/mkfiles" seed $EXP "$SIZE_MIB" >/dev/null
NFSD_THREADS=8 /work/shared/tools/kvm/knfsd-guest.sh $EXP >/dev/null 2>&1
"$W/snfsd" -e "$EXP:rw,insecure,no_root_squash" -p 22161 -s /run/gw-state1 --no-portmap -t 8 2>/run/gw-1.log &
P1=$!
sleep 2
NP=$(pgrep -x nfsd | tr '\n' ' ')
mkdir -p /run/m-s /run/m-k
mount -t nfs -o vers=4.2,port=22161,retry=0 127.0.0.1:$EXP /run/m-s || exit 1
mount -t nfs -o vers=4.2,port=2049,retry=0 127.0.0.1:/ /run/m-k || exit 1
cat $EXP/$F >/dev/null
ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat))); done; echo $t; }
ops() {
	awk -v m="$1" '$1 == "device" {on = ($5 == m)} on && ($1 == "READ_PLUS:" || $1 == "READ:") {o += $2; r += $8; e += $9} END {print o, r, e}' /proc/self/mountstats
}
# variant: name mount server-pids reader-prefix snfsd-affinity
run() {
	local n=$1 m=$2 pids=$3 pre=$4 aff=$5
	taskset -a -p -c $aff $P1 >/dev/null
	if [ $mode = buf ]; then
		echo 3 >/proc/sys/vm/drop_caches
		cat $EXP/$F >/dev/null
	fi
	a=$(ops $m); ta=$(ticks $pids); t0=$EPOCHREALTIME
	case $mode in
	d4k) $pre dd if=$m/$F of=/dev/null bs=4K count=$N iflag=direct status=none ;;
	d128k) $pre dd if=$m/$F of=/dev/null bs=128K iflag=direct status=none ;;
	buf) $pre dd if=$m/$F of=/dev/null bs=1M status=none ;;
	esac
	t1=$EPOCHREALTIME; tb=$(ticks $pids); b=$(ops $m)
	echo "R|$mode-$n|$r|$(awk -v a=$t1 -v b=$t0 'BEGIN{printf "%.3f", a-b}')|$a|$b|$((tb - ta))"
}
for mode in ${MODES:-d4k d128k buf}; do for ((r = 1; r <= RUNS; r++)); do
	run s-free /run/m-s "$P1" "" 0-1
	run s-pin /run/m-s "$P1" "taskset -c 0" 1
	run s-same /run/m-s "$P1" "taskset -c 0" 0
	run k-free /run/m-k "$NP" "" 0-1
	run s-pin1 /run/m-s "$P1" "" 1
	run k-rd0 /run/m-k "$NP" "taskset -c 0" 0-1
done; done
umount /run/m-s /run/m-k
