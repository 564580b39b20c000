#!/bin/bash
# Guest: server-warm direct 128K reads, snfsd vs knfsd, with the client's
# per-op RTT and execute times from mountstats. usage (host):
#   /work/shared/tools/kvm/run-guest.sh --mem 3G --timeout 1500 -- bash gw.sh W
set -u
W=$1 EXP=/srv/gw PORT=22160
FILES=${FILES:-hole mixed-4h data} RUNS=${RUNS:-7} SIZE_MIB=${SIZE_MIB:-32} BS=${BS:-128K} COUNT=${COUNT:-}
modprobe loop
mkdir -p /srv/gwimg $EXP /run/gw-snfsd /run/gw-knfsd /run/gw-state
mount -t tmpfs -o size=90% gwimg /srv/gwimg
truncate -s $((SIZE_MIB * 12 + 256))M /srv/gwimg/fs.img
mkfs.ext4 -q -F /srv/gwimg/fs.img && mount -o loop /srv/gwimg/fs.img $EXP || exit 1
"$W/mkfiles" seed $EXP "$SIZE_MIB" >/dev/null
NFSD_THREADS=8 /work/shared/tools/kvm/knfsd-guest.sh $EXP >/dev/null 2>&1
"$W/snfsd" -e "$EXP:rw,insecure,no_root_squash${SNFSD_OPTS:+,$SNFSD_OPTS}" \
	-p $PORT -s /run/gw-state --no-portmap -t 8 2>/run/gw-snfsd.log &
sleep 2
mount -t nfs -o "vers=4.2,port=$PORT,retry=0" 127.0.0.1:$EXP /run/gw-snfsd &&
	mount -t nfs -o "vers=4.2,port=2049,retry=0" 127.0.0.1:/ /run/gw-knfsd || exit 1
# "ops rtt_ms exec_ms" of READ_PLUS on mount $1
ops() {
	awk -v m="$1" '$1 == "device" {on = ($5 == m)} on && $1 == "READ_PLUS:" {print $2, $8, $9; exit}' /proc/self/mountstats
}
for f in $FILES; do
	for s in snfsd knfsd; do cmp -s /run/gw-$s/$f $EXP/$f || echo "BAD $s $f"; done
	for ((r = 1; r <= RUNS; r++)); do
		for s in snfsd knfsd; do
			echo 3 >/proc/sys/vm/drop_caches
			cat $EXP/$f >/dev/null
			a=$(ops /run/gw-$s)
			t0=$EPOCHREALTIME
			dd if=/run/gw-$s/$f of=/dev/null bs=$BS ${COUNT:+count=$COUNT} iflag=direct status=none
			t1=$EPOCHREALTIME
			b=$(ops /run/gw-$s)
			echo "R|$f|$s|$r|$(awk -v a="$t1" -v b="$t0" 'BEGIN{printf "%.3f", a-b}')|$a|$b"
		done
	done
done
umount /run/gw-snfsd /run/gw-knfsd
