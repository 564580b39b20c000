#!/bin/bash
# new build, READ_PLUS with readplus_min_hole=4k/8k/16k/32k (mapped pieces, the rest zeros by sendfile) vs READ; interleaved
S=/work/main/build/snfsd; C=/work/main/build/snfs; EXP=${EXP:-/tmp/g/m8}; RUNS=${RUNS:-11}
start(){ mkdir -p /tmp/cg/st$1; $S --no-portmap -p $1 -s /tmp/cg/st$1 -e "$EXP:rw,insecure$2" >/tmp/cg/s$1.log 2>&1 & sleep 1.5; }
start 23961 ",readplus_min_hole=4k"; start 23962 ",readplus_min_hole=8k"; start 23963 ",readplus_min_hole=16k"; start 23964 ",readplus_min_hole=32k"
for f in ${FILES:-mixed-4d mixed-8d mixed-16d}; do
 for p in 23961 23962 23963 23964; do $C -q cat "nfs://127.0.0.1:$p$EXP/$f?version=4.2" >/dev/null; done
 for r in $(seq $RUNS); do for k in 23961 23962 23963 23964 read; do
  if [ $k = read ]; then u="nfs://127.0.0.1:23961$EXP/$f?version=4.1"; else u="nfs://127.0.0.1:$k$EXP/$f?version=4.2"; fi
  s=$(date +%s.%N); $C -q cat "$u" >/dev/null; e=$(date +%s.%N); echo "$f $k $(echo "$e - $s"|bc)"; done; done
done | python3 -c "
import sys,statistics as st
d={}
for l in sys.stdin:
  f,k,t=l.split(); d.setdefault((f,k),[]).append(float(t))
nm={'23961':'mh4k','23962':'mh8k','23963':'mh16k','23964':'mh32k','read':'READ'}
for f in dict.fromkeys(k[0] for k in d):
  rm=st.median(d[(f,'read')]); rmin=min(d[(f,'read')])
  print(f, ' '.join('%s %.4f(%.2f|min %.2f)'%(nm[k],st.median(d[(f,k)]),st.median(d[(f,k)])/rm,min(d[(f,k)])/rmin) for k in ('23961','23962','23963','23964','read')))
"
pkill -f "snfsd --no-portmap -p 2396[1234]"
grep -h "sendfile:" /tmp/cg/s23961.log
