#!/bin/bash
# t.sh PORT FILE VERS [N]: wall and server CPU per run
port=$1 f=$2 v=$3 n=${4:-3}
P=$(pgrep -f "snfsd.*-p $port")
for i in $(seq $n); do
 a=$(awk '{print $14+$15}' /proc/$P/stat)
 s=$(date +%s.%N)
 /work/main/build/snfs cat "nfs://127.0.0.1:$port/tmp/g/$f?version=$v" > /dev/null
 e=$(date +%s.%N)
 b=$(awk '{print $14+$15}' /proc/$P/stat)
 printf "%s %s v%s wall %.3f srvcpu %.2f\n" $port $f $v $(echo "$e - $s" | bc) $(echo "($b - $a)/100" | bc -l)
done
