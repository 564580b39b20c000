#!/bin/bash
set -u
mkdir -p /srv/t /mnt/s /tmp/st
mount -t tmpfs -o size=300M tmpfs /srv/t
truncate -s 64M /srv/t/hole
/work/main/build/snfsd --no-portmap -p 20490 -s /tmp/st -e /srv/t:rw,insecure,no_root_squash 2>/tmp/st/log &
SP=$!
sleep 3
mount -t nfs -o vers=4.2,port=20490,retry=0 127.0.0.1:/srv/t /mnt/s || { cat /tmp/st/log; exit 1; }
sync; echo 3 > /proc/sys/vm/drop_caches; cat /srv/t/hole > /dev/null
perf record -q -e cpu-clock -F 2000 -p $SP -o /tmp/st/perf.data -- sleep 4 &
PP=$!
sleep 0.5
dd if=/mnt/s/hole of=/dev/null iflag=direct bs=128K status=none
dd if=/mnt/s/hole of=/dev/null iflag=direct bs=128K status=none
wait $PP
perf report -i /tmp/st/perf.data --no-children --sort dso,symbol 2>/dev/null | grep -v "^#" | grep "%" | grep -v "^ *|" | grep -v "\-\-" | head -50
echo; perf report -i /tmp/st/perf.data --no-children --sort dso 2>/dev/null | grep -v "^#" | grep "%" | grep -v "^ *|" | grep -v "\-\-" | head -8
umount /mnt/s
kill $SP
