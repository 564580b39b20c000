#!/bin/bash
# snfs cat over NFSv3 before (OLDC) and after (NEWC) read_pieces for v3, nfs-cat beside; v4.1 for reference
OLDC=${OLDC:-/tmp/proto/build/snfs}; NEWC=${NEWC:-/work/main/build/snfs}; EXP=/tmp/g/big; P=23987; RUNS=${RUNS:-9}
mkdir -p /tmp/cg/st$P; /work/main/build/snfsd --no-portmap -p $P -s /tmp/cg/st$P -e "$EXP:rw,insecure" >/tmp/cg/s$P.log 2>&1 & sp=$!; sleep 1.5
for f in ${FILES:-data mixed-4d}; do
 for r in $(seq $RUNS); do
  for k in old new nfscat v41; do
   case $k in old) cmd="$OLDC -q cat nfs://127.0.0.1:$P$EXP/$f?version=3";; new) cmd="$NEWC -q cat nfs://127.0.0.1:$P$EXP/$f?version=3";;
    nfscat) cmd="nfs-cat nfs://127.0.0.1$EXP/$f?version=3&nfsport=$P&mountport=$P";; v41) cmd="$NEWC -q cat nfs://127.0.0.1:$P$EXP/$f?version=4.1";; esac
   s=$(date +%s.%N); $cmd >/dev/null || echo FAIL $k >&2; e=$(date +%s.%N); echo "$f $k $(echo "$e - $s"|bc)"
  done; done; done | python3 -c "
import sys,statistics as st
d={}
for l in sys.stdin:
  f,k,t=l.split(); d.setdefault((f,k),[]).append(float(t))
for (f,k),v in d.items(): print('%-9s %-7s med %.4f min %.4f'%(f,k,st.median(v),min(v)))
"
kill $sp
