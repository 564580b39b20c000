#!/bin/bash
# var.sh N file vers: env variants of snfs_var in turn
n=$1 f=$2 v=$3
for i in $(seq $n); do
 for e in "X=1" "NOTHP=1" "NOPOP=1" "NOTHP=1 NOPOP=1"; do
  env $e /usr/bin/time -f "$(echo $e|tr ' ' '+') %e %U %S" /tmp/vs/snfs_var cat "nfs://127.0.0.1:23901/tmp/g/$f?version=$v" 2>&1 >/dev/null
 done
done > /tmp/vs/var.txt
for e in X=1 NOTHP=1 NOPOP=1 NOTHP=1+NOPOP=1; do grep "^$e " /tmp/vs/var.txt | awk '{print $2, $3+$4}' | sort -n | awk -v b=$e -v f=$f '{w[NR]=$1; c+=$2} END {printf "%s %-16s wall min %.3f med %.3f  client cpu mean %.3f\n", f, b, w[1], w[int((NR+1)/2)], c/NR}'; done
