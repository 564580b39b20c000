#!/bin/bash
# multi.sh N file vers bin...: client binaries in turn against 23901
n=$1 f=$2 v=$3; shift 3
for i in $(seq $n); do for b in "$@"; do /usr/bin/time -f "$b %e %U %S" /tmp/vs/$b cat "nfs://127.0.0.1:23901/tmp/g/$f?version=$v" 2>&1 >/dev/null; done; done > /tmp/vs/multi.txt
for b in "$@"; do grep "^$b " /tmp/vs/multi.txt | awk '{print $2, $3+$4}' | sort -n | awk -v b=$b -v f=$f -v v=$v '{w[NR]=$1; c+=$2} END {printf "%s v%s %-10s wall min %.3f med %.3f  client cpu mean %.3f\n", f, v, b, w[1], w[int((NR+1)/2)], c/NR}'; done
