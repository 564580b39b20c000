#!/bin/bash
# host callgrind: user instructions per 128 KiB call, READ_PLUS (v4.2) then READ (v4.1), FILE (default mixed-4d) of a 128 MiB seed set; B= the build dir
set -e
B=${B:-/work/main/build}
EXP=/tmp/cg/exp
mkdir -p $EXP /tmp/cg/state
[ -f $EXP/${FILE:-mixed-4d} ] || /work/main/build/mkfiles files $EXP 128
PORT=23911
valgrind --tool=callgrind --callgrind-out-file=/tmp/cg/cg.%p.out $B/snfsd --no-portmap -p $PORT -s /tmp/cg/state -t 2 \
  -e "$EXP:rw,insecure,zerocopy,readplus_min_hole=16384" >/tmp/cg/snfsd.log 2>&1 &
PID=$!
sleep 6
$B/snfs -q cat "nfs://127.0.0.1:$PORT$EXP/${FILE:-mixed-4d}?version=4.2&rsize=131072" >/dev/null  # warm
callgrind_control -z $PID >/dev/null
$B/snfs -q cat "nfs://127.0.0.1:$PORT$EXP/${FILE:-mixed-4d}?version=4.2&rsize=131072" >/dev/null
callgrind_control -d rp $PID >/dev/null
callgrind_control -z $PID >/dev/null
$B/snfs -q cat "nfs://127.0.0.1:$PORT$EXP/${FILE:-mixed-4d}?version=4.1&rsize=131072" >/dev/null
callgrind_control -d rd $PID >/dev/null
kill $PID; wait $PID || true
for f in /tmp/cg/cg.$PID.out.*; do echo "== $f"; callgrind_annotate --inclusive=yes --threshold=100 $f 2>/dev/null | sed -n '1,40p' | grep -E "PROGRAM TOTALS|read_plus|nfs4_read\b|rp_|hole_map|entry_lookup|posix_extents|read_pieces|op_read" ; done
