# guest: block I/O per cold dd iflag=direct bs=128K, snfsd vs knfsd
EXP=/srv/sp M=/run/sp
modprobe loop; mkdir -p /srv/img $EXP $M
mount -t tmpfs -o size=90% img /srv/img
truncate -s 700M /srv/img/fs.img
mkfs.ext4 -q -F /srv/img/fs.img && mount -o loop /srv/img/fs.img $EXP || exit 1
LOOP=$(basename $(findmnt -n -o SOURCE $EXP))
echo "loop $LOOP ra_kb $(cat /sys/block/$LOOP/queue/read_ahead_kb) maxsec $(cat /sys/block/$LOOP/queue/max_sectors_kb)"
/tmp/g1/w/mkfiles seed $EXP 32 >/dev/null; sync
NFSD_THREADS=8 /work/shared/tools/kvm/knfsd-guest.sh $EXP >/dev/null 2>&1
mkdir -p /run/st
/tmp/g1/w/snfsd-cur -e "$EXP:rw,insecure,no_root_squash" -p 22149 -s /run/st --no-portmap 2>/run/s.log &
sleep 2
for s in snfsd knfsd; do for v in 4.2 4.1; do mkdir -p $M/$s$v
 if [ $s = snfsd ]; then mount -t nfs -o vers=$v,port=22149 127.0.0.1:$EXP $M/$s$v; else mount -t nfs -o vers=$v 127.0.0.1:/ $M/$s$v; fi
done; done
for r in 1 2 3; do for f in data mixed-8d; do for s in snfsd knfsd; do for v in 4.2 4.1; do
  sync; echo 3 >/proc/sys/vm/drop_caches
  read -r a1 a2 a3 a4 rest < /sys/block/$LOOP/stat
  t0=$EPOCHREALTIME; dd if=$M/$s$v/$f of=/dev/null iflag=direct bs=128K 2>/dev/null; t1=$EPOCHREALTIME
  read -r b1 b2 b3 b4 rest < /sys/block/$LOOP/stat
  echo "R $r $f $s $v t=$(echo "$t1 - $t0" | bc) ios=$((b1-a1)) merges=$((b2-a2)) kib=$(((b3-a3)/2)) ticks_ms=$((b4-a4))"
done; done; done; done
