#!/bin/bash
# Guest A/B: two snfsd side by side ($W/snfsd_a, $W/snfsd_b, export options
# A_OPTS, B_OPTS such as ",readplus_min_hole=65536"; pinned
# to CPU 1, dd on CPU 0), with snfsd A's READ and knfsd's READ_PLUS as
# references: dd iflag=direct bs=128K of FILES, cold (drop_caches before
# each) and server-warm, mounts in a rotating order. Prints
# "R|mount|file|mode|run|seconds|server CPU ticks".
set -u
W=$1 EXP=/srv/gw SIZE_MIB=${SIZE_MIB:-32} RUNS=${RUNS:-11}
FILES=${FILES:-mixed-32d,mixed-4d} MODES=${MODES:-cold,warm}
FILES=${FILES//,/ } MODES=${MODES//,/ } # commas: run-guest.sh passes no spaces
modprobe loop
mkdir -p /srv/gwimg $EXP /run/gw-state1 /run/gw-state2
mount -t tmpfs -o size=90% gwimg /srv/gwimg
truncate -s $((SIZE_MIB * 12 + 256))M /srv/gwimg/fs.img
mkfs.ext4 -q -F /srv/gwimg/fs.img && mount -o loop /srv/gwimg/fs.img $EXP || exit 1
"$W/mkfiles" seed $EXP "$SIZE_MIB" >/dev/null
NFSD_THREADS=8 /work/shared/tools/kvm/knfsd-guest.sh $EXP >/dev/null 2>&1
"$W/snfsd_a" -e "$EXP:rw,insecure,no_root_squash${A_OPTS:-}" -p 22161 -s /run/gw-state1 --no-portmap -t 8 --cpus 1 2>/run/gw-1.log &
PA=$!
"$W/snfsd_b" -e "$EXP:rw,insecure,no_root_squash${B_OPTS:-}" -p 22162 -s /run/gw-state2 --no-portmap -t 8 --cpus 1 2>/run/gw-2.log &
PB=$!
sleep 2
declare -A MP
mnt() { mkdir -p /run/m-$1; mount -t nfs -o "vers=$4,port=$2,retry=0" 127.0.0.1:$3 /run/m-$1 || exit 1; MP[$1]=/run/m-$1; }
mnt a42 22161 $EXP 4.2
mnt b42 22162 $EXP 4.2
mnt a41 22161 $EXP 4.1
mnt k42 2049 / 4.2
NAMES=(a42 b42 a41 k42)
declare -A PID=([a42]=$PA [a41]=$PA [b42]=$PB [k42]=)
ticks() { [[ -n $1 ]] && awk '{print $14 + $15}' /proc/$1/stat || echo 0; }
for ((r = 1; r <= RUNS; r++)); do
	for f in $FILES; do
		for m in $MODES; do
			for ((i = 0; i < 4; i++)); do
				n=${NAMES[$(((i + r) % 4))]}
				sync; echo 3 >/proc/sys/vm/drop_caches
				[[ $m == warm ]] && cat $EXP/$f >/dev/null
				c0=$(ticks "${PID[$n]}")
				t0=$EPOCHREALTIME
				taskset -c 0 dd if=${MP[$n]}/$f of=/dev/null bs=128K iflag=direct status=none
				t1=$EPOCHREALTIME
				echo "R|$n|$f|$m|$r|$(awk -v a=$t1 -v b=$t0 'BEGIN{printf "%.3f", a-b}')|$(($(ticks "${PID[$n]}") - c0))"
			done
		done
	done
done
for n in "${NAMES[@]}"; do umount ${MP[$n]}; done
