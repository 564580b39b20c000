#!/bin/bash
# in the guest: one snfsd, warm file, strace of a few direct 128K reads
EXP=/srv/sp
modprobe loop; mkdir -p /srv/img $EXP /run/m
mount -t tmpfs -o size=90% img /srv/img
truncate -s 512M /srv/img/fs.img; mkfs.ext4 -q -F /srv/img/fs.img && mount -o loop /srv/img/fs.img $EXP
/tmp/g1/w/mkfiles files $EXP 16 >/dev/null
mkdir -p /run/st
/tmp/g1/snfsd.head -e "$EXP:rw,insecure,no_root_squash" -p 22149 -s /run/st --no-portmap -t 8 2>/run/s.log &
PID=$!; sleep 2
mount -t nfs -o vers=4.1,port=22149,retry=0 127.0.0.1:$EXP /run/m || echo "E mount"
cat $EXP/data >/dev/null
dd if=/run/m/data of=/dev/null iflag=direct bs=128K count=8 2>/dev/null
t0=$EPOCHREALTIME; dd if=/run/m/data of=/dev/null iflag=direct bs=128K count=64 2>/dev/null; echo "T nostrace 64 calls $(awk -v a=$EPOCHREALTIME -v b=$t0 'BEGIN{print a-b}')"
strace -f -tt -T -p $PID -o /run/st.txt & SP=$!; sleep 2
t0=$EPOCHREALTIME; dd if=/run/m/data of=/dev/null iflag=direct bs=128K count=16 skip=100 2>/dev/null; echo "T strace 16 calls $(awk -v a=$EPOCHREALTIME -v b=$t0 'BEGIN{print a-b}')"
sleep 1; kill $SP; sleep 1
grep -c . /run/st.txt; tail -60 /run/st.txt | cut -c1-160
