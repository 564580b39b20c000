# guest: strace -T of snfsd during one warm 128K direct dd, 4.2 vs 4.1
EXP=/srv/sp M=/run/sp
modprobe loop; mkdir -p /srv/img $EXP $M
mount -t tmpfs -o size=90% img /srv/img
truncate -s 700M /srv/img/fs.img
mkfs.ext4 -q -F /srv/img/fs.img && mount -o loop /srv/img/fs.img $EXP || exit 1
/tmp/g1/w/mkfiles seed $EXP 16 >/dev/null; sync
mkdir -p /run/st
/tmp/g1/w/snfsd-new -e "$EXP:rw,insecure,no_root_squash" -p 22149 -s /run/st --no-portmap 2>/run/s.log &
P=$!; sleep 2
for v in 4.2 4.1; do mkdir -p $M/$v; mount -t nfs -o vers=$v,port=22149 127.0.0.1:$EXP $M/$v; done
cat $EXP/mixed-8d >/dev/null
for r in 1 2 3; do for v in 4.2 4.1; do
  dd if=$M/$v/mixed-8d of=/dev/null iflag=direct bs=128K 2>/dev/null
  strace -f -T -tt -p $P -o /run/st.$v.$r 2>/dev/null & S=$!; sleep 1
  t0=$EPOCHREALTIME; dd if=$M/$v/mixed-8d of=/dev/null iflag=direct bs=128K 2>/dev/null; t1=$EPOCHREALTIME
  sleep 0.5; kill $S; wait $S 2>/dev/null
  echo "T $v $r $(echo "$t1 - $t0" | bc)"
  sed -nE 's/^[0-9]+ +[0-9:.]+ (<\.\.\. )?([a-z_0-9]+)[( ].*<([0-9.]+)>$/\2 \3/p' /run/st.$v.$r |
    awk -v v=$v '{n[$1]++; t[$1]+=$2} END { for (k in n) printf "S %s %s n=%d avg_us=%.1f\n", v, k, n[k], t[k]/n[k]*1e6 }' | sort
done; done
