#!/bin/bash
# small READ calls: copy (default) vs kept mapping (mapped,mapped_min=4k); snfs cat rsize=R of 256 MiB cached
S=/work/main/build/snfsd; C=/work/main/build/snfs; EXP=/tmp/g/big; RUNS=${RUNS:-5}
start(){ mkdir -p /tmp/cg/st$1; $S --no-portmap -p $1 -s /tmp/cg/st$1 -e "$EXP:rw,insecure$2" >/tmp/cg/s$1.log 2>&1 & sleep 1.5; }
start 23971 ""; start 23972 ",mapped,mapped_min=4k"
for rs in ${RS:-4096 16384 32768}; do for r in $(seq $RUNS); do for p in 23971 23972; do
  s=$(date +%s.%N); $C -q cat "nfs://127.0.0.1:$p$EXP/data?version=4.1&rsize=$rs" >/dev/null; e=$(date +%s.%N)
  echo "$rs $p $(echo "$e - $s"|bc)"; done; done; done | python3 -c "
import sys,statistics as st
d={}
for l in sys.stdin:
  a,p,t=l.split(); d.setdefault((a,p),[]).append(float(t))
for (a,p),v in sorted(d.items()): print('rsize %-6s %-8s med %.4f min %.4f'%(a,{'23971':'copy','23972':'mapped'}[p],st.median(v),min(v)))
"
pkill -f "snfsd --no-portmap -p 2397[12]"
