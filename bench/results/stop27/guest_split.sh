#!/bin/bash
# guest: where a 128 KiB direct call's time goes, cold and warm, per file.
# Every snfsd of INST ("name:binary:export options;...") and knfsd, each
# mounted 4.2 (and 4.1 with V41=1); for each file, RUNS rounds, each round
# reads every mount cold (drop_caches first) then warm, order rotated per
# round (STATES="warm": warm only). Per dd: seconds, the client's RTT and exec per op (mountstats
# deltas), the server's CPU ticks (user+sys of its threads).
set -u
SIZE=${SIZE:-32}; RUNS=${RUNS:-7}; FILES=${FILES:-"data mixed-4d"}
BS=${BS:-128K}; DDX=${DDX:-"iflag=direct"}
EXP=/srv/sp M=/run/sp
modprobe loop; mkdir -p /srv/img $EXP $M
mount -t tmpfs -o size=90% img /srv/img
truncate -s $((SIZE * 12 + 256))M /srv/img/fs.img
mkfs.ext4 -q -F /srv/img/fs.img && mount -o loop /srv/img/fs.img $EXP || exit 1
/tmp/g1/w/mkfiles seed $EXP $SIZE >/dev/null; sync
NFSD_THREADS=8 /work/shared/tools/kvm/knfsd-guest.sh $EXP >/dev/null 2>&1
port=22149; mounts=""; declare -A pid
VERS=${VERS:-4.2}
IFS=';' read -ra insts <<<"$INST"
for ent in "${insts[@]}"; do
  IFS=':' read -r name bin opts <<<"$ent"
  mkdir -p /run/st-$name
  $bin -e "$EXP:rw,insecure,no_root_squash${opts:+,$opts}" -p $port -s /run/st-$name --no-portmap 2>/run/$name.log &
  p=$!; sleep 2
  for v in $VERS; do mkdir -p $M/$name$v; mount -t nfs -o vers=$v,port=$port,retry=0 127.0.0.1:$EXP $M/$name$v || echo "E mount $name$v"; mounts="$mounts $name$v"; pid[$name$v]=$p; done
  port=$((port+1))
done
NP=$(pgrep -x nfsd | tr '\n' ' ')
for v in $VERS; do mkdir -p $M/knfsd$v; mount -t nfs -o vers=$v 127.0.0.1:/ $M/knfsd$v; mounts="$mounts knfsd$v"; pid[knfsd$v]="$NP"; done
for f in $FILES; do for n in $mounts; do cmp -s $M/$n/$f $EXP/$f || echo "E content $n $f"; done; done
cpu() { for p in "$@"; do for t in /proc/$p/task/*; do awk '{print $14, $15}' $t/stat; done; done | awk '{u+=$1;s+=$2} END {printf "%d %d", u, s}'; }
ms() { awk -v d="$M/$1" '/^device/ {on = ($5 == d)} on && /^[ \t]+(READ|READ_PLUS):/ {o+=$2; r+=$8; e+=$9} END {printf "%d %d %d", o, r, e}' /proc/self/mountstats; }
one() { # mount file state
  local n=$1 f=$2 st=$3
  [ $st = cold ] && { sync; echo 3 >/proc/sys/vm/drop_caches; }
  [ $st = warm ] && cat $EXP/$f >/dev/null
  local c0 m0 c1 m1 t0 t1
  c0=$(cpu ${pid[$n]}); m0=$(ms $n); t0=$EPOCHREALTIME
  dd if=$M/$n/$f of=/dev/null $DDX bs=$BS 2>/dev/null
  t1=$EPOCHREALTIME; m1=$(ms $n); c1=$(cpu ${pid[$n]})
  echo "R $f $st $n $(awk -v a=$t1 -v b=$t0 -v m0="$m0" -v m1="$m1" -v c0="$c0" -v c1="$c1" 'BEGIN {split(m0,x," "); split(m1,y," "); split(c0,p," "); split(c1,q," "); o=y[1]-x[1]; if (o<1) o=1; printf "%.4f ops %d rtt %.3f exec %.3f cpu_u %d cpu_s %d", a-b, o, (y[2]-x[2])/o, (y[3]-x[3])/o, q[1]-p[1], q[2]-p[2]}')"
}
set -- $mounts; nm=$#
for f in $FILES; do for r in $(seq $RUNS); do
  arr=($mounts); order=""
  for i in $(seq 0 $((nm - 1))); do order="$order ${arr[$(((i + r) % nm))]}"; done
  for st in ${STATES:-cold warm}; do for n in $order; do one $n $f $st; done; done
done; done
grep -h "sendfile" /run/*.log
