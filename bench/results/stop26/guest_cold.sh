#!/bin/bash
# guest: cold server cache (drop_caches before each read), dd direct 128K
# (MODE=buf: dd bs=1M); every snfsd of INST and knfsd
# ("name:binary:export options;...") each mounted as 4.2 (READ_PLUS) and 4.1 (READ), all read in turn, the
# order reversed every other run; the client's RTT per op from mountstats
set -u
SIZE=${SIZE:-32}; RUNS=${RUNS:-7}; FILES=${FILES:-"data mixed-4d"}; MODE=${MODE:-direct}
EXP=/srv/sp M=/run/sp
modprobe loop; mkdir -p /srv/img $EXP $M
mount -t tmpfs -o size=90% img /srv/img
truncate -s $((SIZE * 12 + 256))M /srv/img/fs.img
mkfs.ext4 -q -F /srv/img/fs.img && mount -o loop /srv/img/fs.img $EXP || exit 1
/tmp/g1/w/mkfiles seed $EXP $SIZE >/dev/null; sync
NFSD_THREADS=8 /work/shared/tools/kvm/knfsd-guest.sh $EXP >/dev/null 2>&1
port=22149; mounts=""
IFS=';' read -ra insts <<<"$INST"
for ent in "${insts[@]}"; do
  IFS=':' read -r name bin opts <<<"$ent"
  mkdir -p /run/st-$name
  $bin -e "$EXP:rw,insecure,no_root_squash${opts:+,$opts}" -p $port -s /run/st-$name --no-portmap 2>/run/$name.log &
  sleep 2
  for v in 4.2 4.1; do mkdir -p $M/$name$v; mount -t nfs -o vers=$v,port=$port,retry=0 127.0.0.1:$EXP $M/$name$v || echo "E mount $name$v"; mounts="$mounts $name$v"; done
  port=$((port+1))
done
[ -n "${NO_KNFSD:-}" ] || for v in 4.2 4.1; do mkdir -p $M/knfsd$v; mount -t nfs -o vers=$v 127.0.0.1:/ $M/knfsd$v; mounts="$mounts knfsd$v"; done
rev=$(echo $mounts | tr ' ' '\n' | tac | tr '\n' ' ')
for f in $FILES; do for n in $mounts; do cmp -s $M/$n/$f $EXP/$f || echo "E content $n $f"; done; done
for f in $FILES; do for r in $(seq $RUNS); do
  order=$mounts; [ $((r % 2)) = 0 ] && order=$rev
  for n in $order; do
  sync; echo 3 >/proc/sys/vm/drop_caches
  t0=$EPOCHREALTIME
  if [ $MODE = buf ]; then dd if=$M/$n/$f of=/dev/null bs=1M 2>/dev/null; else dd if=$M/$n/$f of=/dev/null iflag=direct bs=128K 2>/dev/null; fi
  echo "R $f $n $(awk -v a=$EPOCHREALTIME -v b=$t0 'BEGIN {printf "%.4f", a-b}')"
done; done; done
grep -h "sendfile" /run/*.log
awk '/^device/ {dev=$5} /READ_PLUS:|^\s+READ:/ && $2>0 {printf "MS %s %s ops %d rtt/op %.3f exec/op %.3f ms\n", dev, $1, $2, $8/$2, $9/$2}' /proc/self/mountstats
