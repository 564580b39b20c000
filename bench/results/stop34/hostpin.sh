#!/bin/bash
# Host: snfs cat of a warm seed file, READ (4.1) and READ_PLUS (4.2), from
# snfsd free (the reader free) and from snfsd --cpus 1 (the reader on CPU
# 0), all in turn; prints medians and minimums.
# usage: hostpin.sh FILE [ROUNDS]   (FILE under /tmp/g)
set -u
F=${1:-mixed-4d} R=${2:-7} B=/work/main/build T=/tmp/w/spawntime
mkdir -p /tmp/hp/a /tmp/hp/b
$B/snfsd --no-portmap -p 23411 -s /tmp/hp/a -e /tmp/g:rw,insecure,no_root_squash 2>/tmp/hp/a.log &
PA=$!
$B/snfsd --no-portmap -p 23412 -s /tmp/hp/b --cpus 1 -e /tmp/g:rw,insecure,no_root_squash 2>/tmp/hp/b.log &
PB=$!
trap 'kill $PA $PB' EXIT
sleep 1.5
cat /tmp/g/$F >/dev/null
declare -A t
for ((i = 0; i < R; i++)); do
	for k in a41 a42 b41 b42; do
		port=23411 pre=
		[ ${k:0:1} = b ] && port=23412 pre="taskset -c 0"
		v=${k:1:1}.${k:2:1}
		t[$k]+="$($pre $T $B/snfs cat "nfs://127.0.0.1:$port/tmp/g/$F?version=$v") "
	done
done
for k in a41 a42 b41 b42; do
	echo "$k ${t[$k]}" | python3 -c 'import sys, statistics as s
k, *v = sys.stdin.read().split(); v = [float(x) for x in v]
print(k, "min %.4f med %.4f" % (min(v), s.median(v)))'
done
