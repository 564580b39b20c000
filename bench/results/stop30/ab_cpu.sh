#!/bin/bash
# A/B on the host with CPU: snfs cat of cached 1 GiB seed files from servers
# started side by side (SERVERS="name=binary:extra-export-opts ..."), READ_PLUS
# (v4.2) and READ (v4.1) in turn, RUNS rounds; per config the median and min
# wall time and the mean server and client CPU seconds per read (server from
# /proc ticks, client from getrusage via /usr/bin/time).
C=${C:-/work/main/build/snfs}; EXP=${EXP:-/tmp/g/m8}; RUNS=${RUNS:-9}
FILES=${FILES:-mixed-4d mixed-8d mixed-16d mixed-32d data}
port=23950; declare -A P PID
for s in $SERVERS; do
	n=${s%%=*}; rest=${s#*=}; bin=${rest%%:*}; opts=${rest#*:}; [ "$opts" = "$rest" ] && opts=
	port=$((port + 1)); P[$n]=$port; mkdir -p /tmp/cg/st$port
	$bin --no-portmap -p $port -s /tmp/cg/st$port -e "$EXP:rw,insecure$opts" >/tmp/cg/s$port.log 2>&1 &
	PID[$n]=$!
	sleep 1 # one at a time: calibrations running together time each other
done
sleep 1.5
ticks() { awk '{print $14 + $15}' /proc/$1/stat; }
for f in $FILES; do
	for n in "${!P[@]}"; do for v in 4.2 4.1; do $C -q cat "nfs://127.0.0.1:${P[$n]}$EXP/$f?version=$v" >/dev/null; done; done
	for r in $(seq $RUNS); do for n in "${!P[@]}"; do for v in 4.2 4.1; do
		t0=$(ticks ${PID[$n]}); s=$EPOCHREALTIME
		/usr/bin/time -f "%U %S" -o /tmp/cg/ct $C -q cat "nfs://127.0.0.1:${P[$n]}$EXP/$f?version=$v" >/dev/null
		e=$EPOCHREALTIME; t1=$(ticks ${PID[$n]})
		echo "$f $n $v $(echo "$e - $s" | bc) $(echo "($t1 - $t0) / $(getconf CLK_TCK)" | bc -l) $(awk '{print $1 + $2}' /tmp/cg/ct)"
	done; done; done
done | python3 -c "
import sys, statistics as st
d = {}
for l in sys.stdin:
    f, n, v, t, sc, cc = l.split()
    d.setdefault((f, n, v), []).append((float(t), float(sc), float(cc)))
print('%-9s %-8s %-5s %8s %8s %7s %7s  %s' % ('file', 'server', 'proto', 'wall med', 'wall min', 'srv cpu', 'cli cpu', 'RP/READ (med, min, srv+cli cpu)'))
for f in dict.fromkeys(k[0] for k in d):
    for n in dict.fromkeys(k[1] for k in d):
        for v in ('4.2', '4.1'):
            x = d[(f, n, v)]
            w = [a[0] for a in x]
            line = '%-9s %-8s %-5s %8.4f %8.4f %7.3f %7.3f' % (f, n, 'RP' if v == '4.2' else 'READ', st.median(w), min(w), st.mean(a[1] for a in x), st.mean(a[2] for a in x))
            if v == '4.1':
                y = d[(f, n, '4.2')]; wy = [a[0] for a in y]
                line += '  %.2f %.2f %.2f' % (st.median(wy) / st.median(w), min(wy) / min(w), st.mean(a[1] + a[2] for a in y) / st.mean(a[1] + a[2] for a in x))
            print(line)
"
for n in "${!PID[@]}"; do kill ${PID[$n]}; done
grep -h "sendfile:" /tmp/cg/s239[5-6]?.log | sort -u
