#!/bin/bash
# idle.sh CMD...: wall, and busy CPU-seconds over all CPUs (from /proc/stat)
read -r _ u n s i w q sq st _ < /proc/stat
t0=$(date +%s.%N)
"$@" > /dev/null
t1=$(date +%s.%N)
read -r _ u2 n2 s2 i2 w2 q2 sq2 st2 _ < /proc/stat
echo "wall $(echo "$t1-$t0"|bc) busy $(echo "(($u2+$n2+$s2+$q2+$sq2)-($u+$n+$s+$q+$sq))/100"|bc -l|cut -c1-5) idle $(echo "(($i2+$w2)-($i+$w))/100"|bc -l|cut -c1-5) steal $(echo "($st2-$st)/100"|bc -l|cut -c1-5)"
