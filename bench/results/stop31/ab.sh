#!/bin/bash
# ab.sh N files...: alternate ports 23901 (A) 23902 (B), v4.2, print medians
n=$1; shift
for f in "$@"; do
 for i in $(seq $n); do for port in 23901 23902; do /tmp/vs/t.sh $port $f ${V:-4.2} 1; done; done > /tmp/vs/ab_$f.txt
 for port in 23901 23902; do grep "^$port" /tmp/vs/ab_$f.txt | awk '{print $5, $7}' | sort -n | awk -v p=$port -v f=$f '{w[NR]=$1; c[NR]=$2} END {m=int((NR+1)/2); printf "%s %s min %.3f med %.3f srvcpu(med-wall row) %.2f\n", f, p, w[1], w[m], c[m]}'; done
done
