#!/bin/bash
# guest: warm server cache; per-call costs snfsd vs knfsd
set -u
SIZE=${SIZE:-32}; RUNS=${RUNS:-3}
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
  IFS=':' read -r name bin env opts args <<<"$ent"
  mkdir -p /run/st-$name
  env $env $bin -e "$EXP:rw,insecure,no_root_squash${opts:+,$opts}" -p $port -s /run/st-$name --no-portmap $args 2>/run/$name.log &
  eval "port_$name=$port"; port=$((port+1)); names="$names $name"
done
sleep 2
V=${V:-4.2}
for n in $names; do p=$(eval echo \$port_$n); mkdir -p $M/$n; mount -t nfs -o vers=$V,port=$p,retry=0 127.0.0.1:$EXP $M/$n || echo "E mount $n"; done
mkdir -p $M/knfsd; mount -t nfs -o vers=$V 127.0.0.1:/ $M/knfsd
for f in $FILES; do cat $EXP/$f >/dev/null; for n in $names knfsd; do cmp -s $M/$n/$f $EXP/$f || echo "E content $n $f"; done; done
for f in $FILES; do for mode in $MODES; do for r in $(seq $RUNS); do for n in $names knfsd; do
  sync; echo 3 >/proc/sys/vm/drop_caches; [ -z "${COLD:-}" ] && cat $EXP/$f >/dev/null
  t0=$EPOCHREALTIME
  case $mode in buf) dd if=$M/$n/$f of=/dev/null bs=1M 2>/dev/null;; d*) dd if=$M/$n/$f of=/dev/null iflag=direct bs=${mode#d} 2>/dev/null;; esac
  echo "R $f $mode $n $(awk -v a=$EPOCHREALTIME -v b=$t0 'BEGIN {printf "%.4f", a-b}')"
done; done; done; done
for n in $names; do grep -h "sendfile\|read_pieces" /run/$n.log; done
for n in $names; do echo "== $n"; $(echo "$INST" | tr ';' '\n' | grep "^$n:" | cut -d: -f2) --stats -s /run/st-$n 2>&1 | grep -i "read_plus\|COMPOUND\|SEQUENCE\|PUTFH" | head -40; done
awk '/^device/ {dev=$2" "$5} /READ_PLUS:|^\s+READ:/ && $2>0 {printf "MS %s %s ops %d queue/op %.3f rtt/op %.3f exec/op %.3f ms\n", dev, $1, $2, $7/$2, $8/$2, $9/$2}' /proc/self/mountstats
