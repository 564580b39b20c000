#!/bin/bash
# abport.sh N FILE VERS PORT_A PORT_B: warm, in turn (order alternating)
n=$1 f=$2 v=$3 pa=$4 pb=$5
/work/main/build/snfs -q cat "nfs://127.0.0.1:$pa/tmp/g/$f?version=$v" >/dev/null
for i in $(seq $n); do
  if (( i % 2 )); then order="$pa $pb"; else order="$pb $pa"; fi
  for p in $order; do
    P=$(pgrep -f "snfsd --no-portmap -p $p"); c0=$(awk '{print $14+$15}' /proc/$P/stat)
    t=$(/tmp/w/spawntime /work/main/build/snfs -q cat "nfs://127.0.0.1:$p/tmp/g/$f?version=$v")
    echo "$p $t $(( $(awk '{print $14+$15}' /proc/$P/stat) - c0 ))"
  done
done > /tmp/abport.txt
for p in $pa $pb; do grep "^$p " /tmp/abport.txt | sort -k2 -g | awk -v p=$p '{a[NR]=$2; c+=$3} END {printf "%s %s v%s min %.3f med %.3f  srv cpu/run %.3f s\n", p, "'$f'", "'$v'", a[1], a[int((NR+1)/2)], c/NR/100}'; done
