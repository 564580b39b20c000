#!/bin/bash
# stop 35: how the page cache's state after a cold read depends on who
# read it. Each way evicts FILE, reads it once, then times three local
# `dd bs=1M` of the now warm file (spawntime: seconds). Small folios make
# the later reads dearer. usage: folios.sh FILE (in /tmp/s35, after px.sh)
set -u
f=${1:-mnt-ext4/data}
cd /tmp/s35
t() { echo "$1: warm dd $(for i in 1 2 3; do ./spawntime dd if=$f of=/dev/null bs=1M; done | tr '\n' ' ')"; }
py() { ./mkfiles evict $f >/dev/null; python3 -c "
import os, threading, time, queue
fd = os.open('$f', os.O_RDONLY); n = os.fstat(fd).st_size >> 20
def seq():
    for i in range(n): os.pread(fd, 1 << 20, i << 20)
def strided():
    def w(k):
        for i in range(k, n, 8): os.pread(fd, 1 << 20, i << 20)
    ts = [threading.Thread(target=w, args=(k,)) for k in range(8)]
    [x.start() for x in ts]; [x.join() for x in ts]
def queued(lock):
    q = queue.Queue(); [q.put(i) for i in range(n)]; lk = threading.Lock()
    def w():
        while True:
            try: i = q.get_nowait()
            except queue.Empty: return
            if lock:
                with lk: os.pread(fd, 1 << 20, i << 20)
            else: os.pread(fd, 1 << 20, i << 20)
    ts = [threading.Thread(target=w) for k in range(8)]
    [x.start() for x in ts]; [x.join() for x in ts]
def willneed():
    for i in range(n): os.posix_fadvise(fd, i << 20, 1 << 20, os.POSIX_FADV_WILLNEED)
    time.sleep(3)
t0 = time.time(); $1; print('cold read %.3f s' % (time.time() - t0), end='; ')
"; t "$1"; }
py "seq()"; py "strided()"; py "queued(False)"; py "queued(True)"; py "willneed()"
