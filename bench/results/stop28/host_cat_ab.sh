#!/bin/bash
# host: snfs cat of 256 MiB seed files (made beforehand in /tmp/g/big), v4.2 READ_PLUS vs v4.1 READ, warm, 5 runs in turn; OPTS=",opt" adds export options
B=${B:-/work/main/build}; EXP=/tmp/g/big; PORT=${PORT:-23913}
mkdir -p /tmp/cg/state3
$B/snfsd --no-portmap -p $PORT -s /tmp/cg/state3 -e "$EXP:rw,insecure${OPTS}" >/tmp/cg/snfsd3.log 2>&1 &
PID=$!; sleep 1
for f in ${FILES:-mixed-4d mixed-4h mixed-8d data}; do
 for v in 4.2 4.1; do $B/snfs -q cat "nfs://127.0.0.1:$PORT$EXP/$f?version=$v" >/dev/null; done
 for r in 1 2 3 4 5; do for v in 4.2 4.1; do
  s=$(date +%s.%N); $B/snfs -q cat "nfs://127.0.0.1:$PORT$EXP/$f?version=$v" >/dev/null; e=$(date +%s.%N)
  echo "$f $v $(echo "$e - $s" | bc)"; done; done
done | awk '{k=$1" "$2; t[k]=t[k]" "$3} END{for(k in t) print k, t[k]}' | sort
kill $PID
