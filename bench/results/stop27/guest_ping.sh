#!/bin/bash
# guest: NULL-call round trips, one outstanding (rpcping), to knfsd,
# snfsd (each of INST "name:binary;...") and nullsrv (the least a user-space
# server does), ROUNDS rounds of COUNT calls in rotated order.
set -u
COUNT=${COUNT:-2000}; ROUNDS=${ROUNDS:-5}; W=/tmp/g1/w
modprobe loop; mkdir -p /srv/img /srv/sp; mount -t tmpfs img /srv/img
truncate -s 256M /srv/img/fs.img; mkfs.ext4 -q -F /srv/img/fs.img && mount -o loop /srv/img/fs.img /srv/sp || exit 1
NFSD_THREADS=8 /work/shared/tools/kvm/knfsd-guest.sh /srv/sp >/dev/null 2>&1
targets="knfsd:2049"; port=22149
IFS=';' read -ra insts <<<"$INST"
for ent in "${insts[@]}"; do
  IFS=':' read -r name bin <<<"$ent"; mkdir -p /run/st-$name
  $bin -e /srv/sp:rw,insecure -p $port -s /run/st-$name --no-portmap 2>/run/$name.log &
  targets="$targets $name:$port"; port=$((port+1))
done
sleep 2; cat /run/*.log; rpcinfo -p 127.0.0.1 | grep -w nfs | head -3
$W/nullsrv 22199 & targets="$targets nullsrv:22199"
sleep 2
set -- $targets; nt=$#; arr=($targets)
for r in $(seq $ROUNDS); do for i in $(seq 0 $((nt - 1))); do
  IFS=':' read -r name p <<<"${arr[$(((i + r) % nt))]}"
  echo "P $name $($W/rpcping 127.0.0.1 $p 100003 3 $COUNT)"
done; done
