#!/usr/bin/env python3
"""seekmap.py walk FILE: the data segments of FILE by a SEEK_DATA/SEEK_HOLE
walk, one "start end" line each.
seekmap.py probe FILE...: per file one line: its size, the walk, and what
lseek(SEEK_DATA) and lseek(SEEK_HOLE) answer (an offset or an errno name)
at offsets around the MiB boundaries, the middle and the end, so two views
of one file (the export, a mount) compare as text."""
import errno
import os
import sys

MIB = 1 << 20


def walk(fd, size):
    out, off = [], 0
    while off < size:
        try:
            d = os.lseek(fd, off, os.SEEK_DATA)
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
            break
        h = os.lseek(fd, d, os.SEEK_HOLE)
        out.append((d, h))
        off = h
    return out


def answer(fd, off, whence):
    try:
        return str(os.lseek(fd, off, whence))
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def probe(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        segs = " ".join("%d-%d" % s for s in walk(fd, size)) or "-"
        offs = {0, 1, 4095, MIB - 1, MIB, 2 * MIB - 1, 2 * MIB, 5 * MIB,
                9 * MIB + 1, size // 2, max(size - 1, 0), size, size + 1,
                size + 10 * MIB}
        probes = []
        for off in sorted(offs):
            probes.append("D%d=%s" % (off, answer(fd, off, os.SEEK_DATA)))
            probes.append("H%d=%s" % (off, answer(fd, off, os.SEEK_HOLE)))
        return "%s size %d walk %s | %s" % (os.path.basename(path), size,
                                             segs, " ".join(probes))
    finally:
        os.close(fd)


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("walk", "probe"):
        sys.exit("usage: seekmap.py walk FILE | seekmap.py probe FILE...")
    if sys.argv[1] == "walk":
        fd = os.open(sys.argv[2], os.O_RDONLY)
        for d, h in walk(fd, os.fstat(fd).st_size):
            print(d, h)
        return
    for p in sys.argv[2:]:
        print(probe(p))


main()
