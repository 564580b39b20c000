#!/bin/bash
# in the guest: snfsd builds side by side on one ext4 (loop on tmpfs), the 6.12 client reads
# usage: guest_ab.sh SIZE_MIB RUNS FILES...   (instances from $INST: "name:binary:env:opts;...")
set -u
SIZE=$1 RUNS=$2; shift 2; FILES="$*"
EXP=/srv/sp M=/run/sp
modprobe loop; mkdir -p /srv/img $EXP $M
mount -t tmpfs -o size=90% img /srv/img
truncate -s $((SIZE * 12 + 256))M /srv/img/fs.img
mkfs.ext4 -q -F /srv/img/fs.img && mount -o loop /srv/img/fs.img $EXP || exit 1
/tmp/g1/w/mkfiles seed $EXP $SIZE >/dev/null
NFSD_THREADS=8 /work/shared/tools/kvm/knfsd-guest.sh $EXP >/dev/null 2>&1
port=22149; names=""
IFS=';' read -ra insts <<<"$INST"
for ent in "${insts[@]}"; do
  IFS=':' read -r name bin env opts <<<"$ent"
  mkdir -p /run/st-$name
  env $env $bin -e "$EXP:rw,insecure,no_root_squash${opts:+,$opts}" -p $port -s /run/st-$name --no-portmap -t 8 -v 2>/run/$name.log &
  eval "port_$name=$port"; port=$((port+1)); names="$names $name"
done
sleep 2
for n in $names; do p=$(eval echo \$port_$n); for v in 4.2 4.1; do mkdir -p $M/$n-$v; mount -t nfs -o vers=$v,port=$p,retry=0 127.0.0.1:$EXP $M/$n-$v || echo "E mount $n $v"; done; grep -h 'read_pieces' /run/$n.log | sed "s/^/I $n: /"; done
for v in 4.2 4.1; do mkdir -p $M/knfsd-$v; mount -t nfs -o vers=$v 127.0.0.1:/ $M/knfsd-$v || echo "E mount knfsd"; done
for f in $FILES; do for n in $names knfsd; do cmp -s $M/$n-4.2/$f $EXP/$f || echo "E content $n $f"; done; done
for f in $FILES; do for mode in buf direct; do for r in $(seq $RUNS); do for n in $names knfsd; do for v in 4.2 4.1; do
  sync; echo 3 >/proc/sys/vm/drop_caches; [ -n "${WARM:-}" ] && cat $EXP/$f >/dev/null
  t0=$EPOCHREALTIME
  if [ $mode = direct ]; then dd if=$M/$n-$v/$f of=/dev/null iflag=direct bs=128K 2>/dev/null; else dd if=$M/$n-$v/$f of=/dev/null bs=1M 2>/dev/null; fi
  echo "R $f $mode $n $v $(awk -v a=$EPOCHREALTIME -v b=$t0 'BEGIN {printf "%.4f", a-b}')"
done; done; done; done; done
