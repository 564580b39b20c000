# guest: capture one 128K direct READ_PLUS reply (and READ) from snfsd and knfsd; dump the first 200 bytes of each reply
EXP=/srv/sp M=/run/sp
modprobe loop; mkdir -p /srv/img $EXP $M
mount -t tmpfs -o size=90% img /srv/img
truncate -s 300M /srv/img/fs.img
mkfs.ext4 -q -F /srv/img/fs.img && mount -o loop /srv/img/fs.img $EXP || exit 1
/tmp/g1/w/mkfiles seed $EXP 1 >/dev/null; sync
NFSD_THREADS=8 /work/shared/tools/kvm/knfsd-guest.sh $EXP >/dev/null 2>&1
mkdir -p /run/st
/tmp/g1/w/snfsd-new -e "$EXP:rw,insecure,no_root_squash" -p 22149 -s /run/st --no-portmap 2>/run/s.log &
sleep 2
for v in 4.2 4.1; do mkdir -p $M/s$v $M/k$v; mount -t nfs -o vers=$v,port=22149 127.0.0.1:$EXP $M/s$v; mount -t nfs -o vers=$v 127.0.0.1:/ $M/k$v; done
cat $EXP/mixed-8d >/dev/null
for n in s4.2 k4.2 s4.1 k4.1; do
  port=2049; [ ${n:0:1} = s ] && port=22149
  tcpdump -i lo -s 400 -w /run/cap.$n "tcp src port $port and greater 1000" 2>/dev/null & T=$!; sleep 1
  dd if=$M/$n/mixed-8d of=/dev/null iflag=direct bs=128K count=2 2>/dev/null
  sleep 1; kill $T; wait $T 2>/dev/null
  echo "== $n"; tcpdump -r /run/cap.$n -x -c 1 2>/dev/null | head -16
done
