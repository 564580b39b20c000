#!/bin/bash
# cab.sh N file vers: alternate client binaries snfs_old / snfs_new against port 23901
n=$1 f=$2 v=$3
for i in $(seq $n); do for b in old new; do /usr/bin/time -f "$b %e %U %S" /tmp/vs/snfs_$b cat "nfs://127.0.0.1:23901/tmp/g/$f?version=$v" 2>&1 >/dev/null; done; done > /tmp/vs/cab.txt
for b in old new; do grep "^$b" /tmp/vs/cab.txt | awk -v b=$b -v f=$f '{print $2, $3+$4}' | sort -n | awk -v b=$b -v f=$f '{w[NR]=$1; c+=$2} END {printf "%s %s wall min %.3f med %.3f  client cpu mean %.3f\n", f, b, w[1], w[int((NR+1)/2)], c/NR}'; done
