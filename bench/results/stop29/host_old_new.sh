#!/bin/bash
# host: snfs cat of 256 MiB seed files (in /tmp/g/big), two snfsd binaries side by side
# (OLD, NEW), v4.2 READ_PLUS and v4.1 READ, warm, RUNS runs in turn; medians and mins.
OLD=${OLD:?old snfsd}; NEW=${NEW:-/work/main/build/snfsd}; C=${C:-/work/main/build/snfs}
EXP=${EXP:-/tmp/g/big}; RUNS=${RUNS:-7}
start(){ mkdir -p /tmp/cg/st$2; $1 --no-portmap -p $2 -s /tmp/cg/st$2 -e "$EXP:rw,insecure$3" >/tmp/cg/s$2.log 2>&1 & sleep 1; }
start $OLD 23991 ""; start $NEW 23992 ""
for f in ${FILES:-mixed-4d mixed-8d mixed-16d mixed-32d data hole}; do
 for p in 23991 23992; do for v in 4.2 4.1; do $C -q cat "nfs://127.0.0.1:$p$EXP/$f?version=$v" >/dev/null; done; done
 for r in $(seq $RUNS); do for p in 23991 23992; do for v in 4.2 4.1; do
  s=$(date +%s.%N); $C -q cat "nfs://127.0.0.1:$p$EXP/$f?version=$v" >/dev/null; e=$(date +%s.%N)
  echo "$f $p $v $(echo "$e - $s"|bc)"; done; done; done
done | python3 -c "
import sys,statistics as st
d={}
for l in sys.stdin:
  f,p,v,t=l.split(); d.setdefault((f,p,v),[]).append(float(t))
name={'23991':'old','23992':'new'}
print('file      server  RP med   READ med  RP/READ med  (mins: RP READ ratio)')
for f in dict.fromkeys(k[0] for k in d):
  for p in ('23991','23992'):
    a=d[(f,p,'4.2')]; b=d[(f,p,'4.1')]
    print('%-9s %-6s %.4f   %.4f    %.2f         (%.4f %.4f %.2f)'%(f,name[p],st.median(a),st.median(b),st.median(a)/st.median(b),min(a),min(b),min(a)/min(b)))
"
pkill -f "snfsd --no-portmap -p 2399[12]"
grep -h "sendfile:" /tmp/cg/s23991.log /tmp/cg/s23992.log
