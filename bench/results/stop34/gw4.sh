#!/bin/bash
# Guest: perf profiles of snfsd and knfsd serving server-warm direct
# 4 KiB reads (N calls each), samples by command, then the server's
# symbols (self and with children).
set -u
W=$1 EXP=/srv/gw PORT=22160 SIZE_MIB=${SIZE_MIB:-32} N=${N:-3000} F=${F:-data}
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
for s in snfsd knfsd; do
	dd if=/run/gw-$s/$F of=/dev/null bs=4K count=200 iflag=direct status=none
	t0=$EPOCHREALTIME
	perf record -q -F ${FREQ:-1000} -a -g -o /tmp/perf.$s -- dd if=/run/gw-$s/$F of=/dev/null bs=4K count=$N iflag=direct status=none
	echo "=== $s: $(awk -v a=$EPOCHREALTIME -v b=$t0 'BEGIN{printf "%.3f", a-b}') s; samples by command"
	perf report -i /tmp/perf.$s --no-children --sort comm -g none --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -12
	perf report -i /tmp/perf.$s --no-children --sort comm -g none --stdio 2>/dev/null | grep "Samples\|Event count" | head -3
	c=${s/knfsd/nfsd}
	echo "=== $s: $c self by symbol"
	perf report -i /tmp/perf.$s --no-children --comm $c --sort dso,sym -g none --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -40
	echo "=== $s: dd self by symbol"
	perf report -i /tmp/perf.$s --no-children --comm dd --sort dso,sym -g none --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -25
	echo "=== $s: dd with children"
	perf report -i /tmp/perf.$s --children --comm dd --sort sym -g none --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -40
	echo "=== $s: $c with children"
	perf report -i /tmp/perf.$s --children --comm $c --sort sym -g none --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -70
done
umount /run/gw-snfsd /run/gw-knfsd
