#!/bin/bash
C=/work/main/build/snfs; EXP=/tmp/g/m8; export SNFSD_SENDFILE_PAYS=32768
i=0; for b in /tmp/s29/build/snfsd /work/main/build/snfsd; do i=$((i+1)); p=2394$i; mkdir -p /tmp/cg/st$p; $b --no-portmap -p $p -s /tmp/cg/st$p -e "$EXP:rw,insecure" >/tmp/cg/s$p.log 2>&1 & done; sleep 1.5
for f in mixed-8d mixed-16d; do for r in 1 2 3 4 5; do for p in 23941 23942; do for v in 4.2 4.1; do
 sleep 0.3; /tmp/mx/mkfiles evict $EXP/$f >/dev/null; s=$EPOCHREALTIME; $C -q cat "nfs://127.0.0.1:$p$EXP/$f?version=$v" >/dev/null; e=$EPOCHREALTIME
 echo "$f $p $v $(echo "$e - $s"|bc)"; done; done; done; done | python3 -c "
import sys,statistics as st
d={}
for l in sys.stdin:
  f,p,v,t=l.split(); d.setdefault((f,p,v),[]).append(float(t))
for k,v in d.items(): print(k, 'med %.3f min %.3f'%(st.median(v),min(v)))
"
pkill -f "snfsd --no-portmap -p 2394[12]"
