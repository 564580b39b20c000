#!/bin/bash
# in the guest: snfsd on tmpfs, dd iflag=direct bs=128K of 64 MiB hole and data files, server warm
set -u
mkdir -p /srv/t /mnt/s /tmp/st
mount -t tmpfs -o size=300M tmpfs /srv/t
truncate -s 64M /srv/t/hole
dd if=/dev/zero of=/srv/t/data bs=1M count=64 status=none
/work/main/build/snfsd --no-portmap -p 20490 -s /tmp/st -e /srv/t:rw,insecure,no_root_squash 2>/tmp/st/log &
SP=$!
sleep 3
mount -t nfs -o vers=4.2,port=20490,retry=0 127.0.0.1:/srv/t /mnt/s || { cat /tmp/st/log; exit 1; }
grep -i "sendfile\|gap" /tmp/st/log
for f in hole data hole data; do
  sync; echo 3 > /proc/sys/vm/drop_caches; cat /srv/t/$f > /dev/null
  a=$(awk '{print $14, $15}' /proc/$SP/stat)
  t0=$(date +%s.%N)
  dd if=/mnt/s/$f of=/dev/null iflag=direct bs=128K status=none
  t1=$(date +%s.%N)
  b=$(awk '{print $14, $15}' /proc/$SP/stat)
  echo "$f $(echo "$t1 - $t0" | bc) s  snfsd user/sys ticks: $a -> $b"
done
if command -v perf >/dev/null; then
  sync; echo 3 > /proc/sys/vm/drop_caches; cat /srv/t/hole > /dev/null
  perf record -q -e cpu-clock -a -g -o /tmp/st/perf.data -- dd if=/mnt/s/hole of=/dev/null iflag=direct bs=128K status=none 2>&1 | tail -2
  perf report -i /tmp/st/perf.data --no-children --sort comm,symbol 2>/dev/null | grep -v "^#" | grep "%" | grep -v "^ *|" | grep -v "\-\-" | head -40
fi
umount /mnt/s
kill $SP
