#!/bin/bash
# Guest: server-warm direct 4 KiB reads of the data file through several
# mounts in turn: snfsd (default and no_zerocopy) and knfsd, READ_PLUS
# (4.2) and READ (4.1). Prints per run: seconds, client RTT and execute
# per call (mountstats), server CPU ticks (all, user, system).
set -u
W=$1 EXP=/srv/gw SIZE_MIB=${SIZE_MIB:-32} N=${N:-2000} F=${F:-data} RUNS=${RUNS:-5}
modprobe loop
mkdir -p /srv/gwimg $EXP /run/gw-state1 /run/gw-state2
mount -t tmpfs -o size=90% gwimg /srv/gwimg
truncate -s $((SIZE_MIB * 12 + 256))M /srv/gwimg/fs.img
mkfs.ext4 -q -F /srv/gwimg/fs.img && mount -o loop /srv/gwimg/fs.img $EXP || exit 1
"$W/mkfiles" seed $EXP "$SIZE_MIB" >/dev/null
NFSD_THREADS=8 /work/shared/tools/kvm/knfsd-guest.sh $EXP >/dev/null 2>&1
"${SNFSD_A:-$W/snfsd}" -e "$EXP:rw,insecure,no_root_squash" -p 22161 -s /run/gw-state1 --no-portmap -t 8 ${CPUS:+--cpus $CPUS} 2>/run/gw-1.log &
P1=$!
"${SNFSD_B:-$W/snfsd}" -e "$EXP:rw,insecure,no_root_squash${B_OPTS-,no_zerocopy}" -p 22162 -s /run/gw-state2 --no-portmap -t 8 2>/run/gw-2.log &
P2=$!
sleep 2
NP=$(pgrep -x nfsd | tr '\n' ' ')
declare -A MP PID
mnt() { # name port src vers pids
	mkdir -p /run/m-$1
	mount -t nfs -o "vers=$4,port=$2,retry=0" 127.0.0.1:$3 /run/m-$1 || exit 1
	MP[$1]=/run/m-$1 PID[$1]="$5"
}
mnt a42 22161 $EXP 4.2 $P1
mnt a41 22161 $EXP 4.1 $P1
mnt b42 22162 $EXP 4.2 $P2
mnt k42 2049 / 4.2 "$NP"
mnt k41 2049 / 4.1 "$NP"
NAMES=${NAMES:-a42 a41 b42 k42 k41}
cat $EXP/$F >/dev/null
ticks() { local f=() p; for p in "$@"; do f+=(/proc/$p/stat); done; awk '{u += $14; s += $15} END {print u, s}' "${f[@]}"; }
segs() { awk '$1 == "Tcp:" && $2 ~ /^[0-9]/ {print $12}' /proc/net/snmp; }
ops() { # mount: "ops rtt_ms exec_ms" of READ_PLUS + READ
	awk -v m="$1" '$1 == "device" {on = ($5 == m)} on && ($1 == "READ_PLUS:" || $1 == "READ:") {o += $2; r += $8; e += $9} END {print o, r, e}' /proc/self/mountstats
}
for n in $NAMES; do dd if=${MP[$n]}/$F of=/dev/null bs=4K count=100 iflag=direct status=none; done
for ((r = 1; r <= RUNS; r++)); do
	for n in $NAMES; do
		a=$(ops ${MP[$n]}); ta=$(ticks ${PID[$n]}); sa=$(segs); t0=$EPOCHREALTIME
		${READER:+taskset -c $READER} dd if=${MP[$n]}/$F of=/dev/null bs=${BS:-4K} count=$N iflag=direct status=none
		t1=$EPOCHREALTIME; tb=$(ticks ${PID[$n]}); sb=$(segs); b=$(ops ${MP[$n]})
		echo "R|$n|$r|$(awk -v a=$t1 -v b=$t0 'BEGIN{printf "%.3f", a-b}')|$a|$b|$(( ${tb% *} + ${tb#* } - ${ta% *} - ${ta#* } ))|$(( ${tb% *} - ${ta% *} ))|$(( ${tb#* } - ${ta#* } ))|$((sb - sa))"
	done
done
for n in $NAMES; do umount ${MP[$n]}; done
