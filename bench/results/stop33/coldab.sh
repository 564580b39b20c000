#!/bin/bash
# coldab.sh N FILE: cold v4.1 READ vs v4.2 READ_PLUS in turn (order alternating)
n=$1 f=$2
for i in $(seq $n); do
  if (( i % 2 )); then order="4.1 4.2"; else order="4.2 4.1"; fi
  for v in $order; do
    sleep 0.25; /tmp/w/mkfiles evict /tmp/g/$f >/dev/null
    echo "$v $(/tmp/w/spawntime /work/main/build/snfs -q cat "nfs://127.0.0.1:23922/tmp/g/$f?version=$v")"
  done
done > /tmp/coldab.txt
for v in 4.1 4.2; do grep "^$v " /tmp/coldab.txt | awk '{print $2}' | sort -g | awk -v v=$v '{a[NR]=$1} END {printf "%s min %.3f med %.3f max %.3f  all:", v, a[1], a[int((NR+1)/2)], a[NR]; for(i=1;i<=NR;i++) printf " %.3f", a[i]; print ""}'; done
