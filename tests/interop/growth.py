#!/usr/bin/env python3
"""growth.py MOUNT SERVER_DIR: a file another writer makes longer while it
is open on the mount (SERVER_DIR is the same directory on the server).

1. tail -f: read to the end, the file grows, read on (after the 1 s
   attribute time): the new bytes, not the end we knew.
2. a mapping of the longer size through the same open file: a write past
   the old end reaches the server (and no SIGBUS, no write cut at the
   size the client knew at open).
Prints "ok - ..." or "not ok - ..." lines (run by t_fsrand.sh).
"""
import mmap
import os
import sys
import time


def check(name, cond):
    print(("ok - " if cond else "not ok - ") + name)


def main():
    mnt, srv = sys.argv[1], sys.argv[2]
    with open(os.path.join(srv, "log"), "wb") as f:
        f.write(b"line1\n")
    fd = os.open(os.path.join(mnt, "log"), os.O_RDONLY)
    first = os.read(fd, 100)
    with open(os.path.join(srv, "log"), "ab") as f:
        f.write(b"line2\n")
    time.sleep(1.5)
    more = os.read(fd, 100)
    os.close(fd)
    check("growth: tail -f reads another writer's appends (%r %r)" % (first, more),
          first == b"line1\n" and more == b"line2\n")

    p = os.path.join(mnt, "grown")
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.pwrite(fd, b"a" * 5000, 0)
    os.fsync(fd)
    with open(os.path.join(srv, "grown"), "r+b") as f:
        f.seek(0, 2)
        f.write(b"b" * 20000)
    time.sleep(1.5)
    size = os.fstat(fd).st_size
    pid = os.fork()
    if pid == 0:  # a SIGBUS must not take the checker down
        m = mmap.mmap(fd, size)
        m[15000:15010] = b"0123456789"
        m.flush()
        m.close()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    with open(os.path.join(srv, "grown"), "rb") as f:
        d = f.read()
    check("growth: a mapped write past the size known at open reaches the "
          "server (size %d, status %d)" % (size, status),
          size == 25000 and status == 0 and len(d) == 25000 and
          d[15000:15010] == b"0123456789" and d[:5000] == b"a" * 5000)


if __name__ == "__main__":
    main()
