#!/bin/bash
# guest: warm 128 KiB direct reads of the data file from snfsd (INST, one
# "name:binary") and knfsd, threads placed freely or all on CPU 0 (the
# reader and the server), ROUNDS rounds; then perf profiles of one read
# each (cpu-clock, whole system).
set -u
SIZE=${SIZE:-32}; ROUNDS=${ROUNDS:-5}; EXP=/srv/sp M=/run/sp
modprobe loop; mkdir -p /srv/img $EXP $M/s $M/k
mount -t tmpfs -o size=90% img /srv/img
truncate -s $((SIZE * 12 + 256))M /srv/img/fs.img
mkfs.ext4 -q -F /srv/img/fs.img && mount -o loop /srv/img/fs.img $EXP || exit 1
/tmp/g1/w/mkfiles seed $EXP $SIZE >/dev/null; sync
NFSD_THREADS=8 /work/shared/tools/kvm/knfsd-guest.sh $EXP >/dev/null 2>&1
IFS=':' read -r name bin <<<"$INST"; mkdir -p /run/st
$bin -e "$EXP:rw,insecure,no_root_squash" -p 22149 -s /run/st --no-portmap 2>/run/s.log &
SP=$!; sleep 2
mount -t nfs -o vers=4.2,port=22149 127.0.0.1:$EXP $M/s; mount -t nfs -o vers=4.2 127.0.0.1:/ $M/k
NP=$(pgrep -x nfsd | tr '\n' ' ')
cat $EXP/data >/dev/null
ms() { awk -v d="$M/$1" '/^device/ {on = ($5 == d)} on && /^[ \t]+(READ|READ_PLUS):/ {o+=$2; r+=$8} END {printf "%d %d", o, r}' /proc/self/mountstats; }
one() { # label mount taskset-prefix
  local m0 m1 t0 t1; m0=$(ms $2); t0=$EPOCHREALTIME
  $3 dd if=$M/$2/data of=/dev/null iflag=direct bs=128K 2>/dev/null
  t1=$EPOCHREALTIME; m1=$(ms $2)
  echo "R $1 $2 $(awk -v a=$t1 -v b=$t0 -v m0="$m0" -v m1="$m1" 'BEGIN {split(m0,x," "); split(m1,y," "); printf "%.4f rtt %.3f", a-b, (y[2]-x[2])/(y[1]-x[1])}')"
}
place() { # free | cpu0
  local c=0-1; [ $1 = cpu0 ] && c=0
  for p in $SP $NP; do for t in /proc/$p/task/*; do taskset -pc $c ${t##*/} >/dev/null; done; done
}
for r in $(seq $ROUNDS); do for pl in free cpu0; do
  place $pl; pre=""; [ $pl = cpu0 ] && pre="taskset -c 0"
  if [ $((r % 2)) = 0 ]; then one $pl s "$pre"; one $pl k "$pre"; else one $pl k "$pre"; one $pl s "$pre"; fi
done; done
place free
if [ -n "${PERF:-}" ]; then for m in s k; do
  perf record -o /run/perf.$m -a -F 4000 -e cpu-clock -g -- dd if=$M/$m/data of=/dev/null iflag=direct bs=128K 2>/dev/null >/dev/null
  echo "== perf $m by comm"; perf report -i /run/perf.$m --no-children --sort comm --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -12
  echo "== perf $m by symbol"; perf report -i /run/perf.$m --no-children --sort sym --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -40
done; fi
