#!/bin/bash
# Guest: where snfsd's time per small call goes. Server-warm direct 4 KiB
# reads of the data file: CPU ticks of snfsd and of knfsd's threads per
# run, then strace -c -f of snfsd over one run.
set -u
W=$1 EXP=/srv/gw PORT=22160 SIZE_MIB=${SIZE_MIB:-32} N=${N:-2000} F=${F:-data}
modprobe loop
mkdir -p /srv/gwimg $EXP /run/gw-snfsd /run/gw-knfsd /run/gw-state
mount -t tmpfs -o size=90% gwimg /srv/gwimg
truncate -s $((SIZE_MIB * 12 + 256))M /srv/gwimg/fs.img
mkfs.ext4 -q -F /srv/gwimg/fs.img && mount -o loop /srv/gwimg/fs.img $EXP || exit 1
"$W/mkfiles" seed $EXP "$SIZE_MIB" >/dev/null
NFSD_THREADS=8 /work/shared/tools/kvm/knfsd-guest.sh $EXP >/dev/null 2>&1
"$W/snfsd" -e "$EXP:rw,insecure,no_root_squash${SNFSD_OPTS:+,$SNFSD_OPTS}" \
	-p $PORT -s /run/gw-state --no-portmap -t ${THREADS:-8} 2>/run/gw-snfsd.log &
SP=$!
sleep 2
mount -t nfs -o "vers=4.2,port=$PORT,retry=0" 127.0.0.1:$EXP /run/gw-snfsd &&
	mount -t nfs -o "vers=4.2,port=2049,retry=0" 127.0.0.1:/ /run/gw-knfsd || exit 1
cat $EXP/$F >/dev/null
ticks() { # total utime+stime of the pids given
	local t=0 p
	for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat))); done
	echo $t
}
NP=$(pgrep -x nfsd | tr '\n' ' ')
SELF=$(awk '{print $14 + $15}' /proc/self/stat)
for r in $(seq ${ROUNDS:-3}); do
	for s in snfsd knfsd; do
		if [ $s = snfsd ]; then P=$SP; else P=$NP; fi
		a=$(ticks $P); t0=$EPOCHREALTIME
		dd if=/run/gw-$s/$F of=/dev/null bs=4K count=$N iflag=direct status=none
		t1=$EPOCHREALTIME; b=$(ticks $P)
		echo "C|$s|$r|$(awk -v a=$t1 -v b=$t0 'BEGIN{printf "%.3f", a-b}')|$((b - a)) ticks"
	done
done
echo "=== vmstat 1 during snfsd"
vmstat 1 4 &
dd if=/run/gw-snfsd/$F of=/dev/null bs=4K count=$((N * 2)) iflag=direct status=none
wait
echo "=== strace -c -f snfsd"
strace -c -f -p $SP -o /tmp/st.txt &
STP=$!
sleep 1
dd if=/run/gw-snfsd/$F of=/dev/null bs=4K count=$N iflag=direct status=none
kill -TERM $STP; wait $STP
cat /tmp/st.txt
echo "=== threads"
ls /proc/$SP/task | wc -l
umount /run/gw-snfsd /run/gw-knfsd
