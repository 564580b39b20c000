#!/bin/bash
# host A/B: several snfsd on one export, snfs cat in turn
# usage: INST="name:bin:env:opts;..." FILES=".." VERS="4.2 4.1" RUNS=N hostab.sh
EXP=${EXP:-/tmp/g/big}; port=23950; names=""
IFS=';' read -ra insts <<<"$INST"
for ent in "${insts[@]}"; do
  IFS=':' read -r name bin env opts <<<"$ent"
  rm -rf /tmp/g/st-$name; mkdir -p /tmp/g/st-$name
  env $env $bin -e "$EXP:rw,insecure,no_root_squash${opts:+,$opts}" -p $port -s /tmp/g/st-$name --no-portmap 2>/tmp/g/$name.log &
  eval "pid_$name=$!"; eval "port_$name=$port"; port=$((port+1)); names="$names $name"
done
sleep 1.5
for f in $FILES; do cat $EXP/$f >/dev/null; for v in $VERS; do for n in $names; do p=$(eval echo \$port_$n); /work/main/build/snfs -q cat "nfs://127.0.0.1:$p$EXP/$f?version=$v${Q:-}" | cmp - $EXP/$f || echo "E $n $f $v"; done; done; done
for r in $(seq $RUNS); do for f in $FILES; do for v in $VERS; do for n in $names; do p=$(eval echo \$port_$n)
  pid=$(eval echo \$pid_$n); c0=$(awk '{print $14+$15}' /proc/$pid/stat)
  t0=$EPOCHREALTIME; /work/main/build/snfs -q cat "nfs://127.0.0.1:$p$EXP/$f?version=$v${Q:-}" >/dev/null; t1=$EPOCHREALTIME
  c1=$(awk '{print $14+$15}' /proc/$pid/stat)
  echo "R $f $v $n $(awk -v a=$t1 -v b=$t0 'BEGIN{printf "%.4f", a-b}') $((c1-c0))"
done; done; done; done
kill $(jobs -p) 2>/dev/null; wait
