#!/usr/bin/env python3
"""Hand-made seeds for fuzz_nfs4_compound (called by mkcorpus.sh).

    mkseeds4.py CORPUSDIR

Writes CORPUSDIR/fuzz_nfs4_compound/SHA1 files: byte 0 (minor version and
caller, see fuzz_nfs4_compound.c) then a COMPOUND4args. The recorded
traffic (mkseeds.py) covers what clients send; these cover every operation
the server decodes, with valid handles (SNFZ placeholders) and, for 4.1
and 4.2, a SEQUENCE on the harness's session (SNFS placeholder, sequenceid
0: the harness fills in the slot's next one), so state operations (OPEN,
READ, WRITE, LOCK, CLOSE...) run on the current stateid.
"""

import hashlib
import os
import struct
import sys

u32 = lambda v: struct.pack(">I", v)
u64 = lambda v: struct.pack(">Q", v)


def opaque(b):
    return u32(len(b)) + b + b"\0" * ((4 - len(b) % 4) % 4)


def fh(i):
    return u32(8) + b"SNFZ" + u32(i)


ROOT, DIR, FILE, BIG, LINK, MANY, RO, SUB = 0, 1, 4, 6, 7, 11, 16, 2
CUR_SID = u32(1) + b"\0" * 12   # current stateid (RFC 8881 16.2.3.1.2)
ANON_SID = b"\0" * 16
SESSION = b"SNFS" + b"\0" * 12


def bitmap(*words):
    return u32(len(words)) + b"".join(u32(w) for w in words)


def op(num, body=b""):
    return u32(num) + body


def seq(slot=0):
    return op(53, SESSION + u32(0) + u32(slot) + u32(7) + u32(0))


def putfh(i):
    return op(22, fh(i))


def open_args(seqid, name, create, share=3, mode=0o644):
    owner = u64(0x66757a7a) + opaque(b"fuzz-open-owner")
    how = u32(0)
    if create:
        how = u32(1) + u32(0) + bitmap(0, 0x2) + opaque(
            u32(mode))  # UNCHECKED4, fattr: mode
    return op(18, u32(seqid) + u32(share) + u32(0) + owner + how +
              u32(0) + opaque(name))  # CLAIM_NULL


def lock_args(new=True, ltype=2, off=0, length=100):
    if new:
        locker = u32(1) + u32(0) + CUR_SID + u32(0) + u64(0x66757a7a) + \
            opaque(b"fuzz-lock-owner")
    else:
        locker = u32(0) + CUR_SID + u32(1)
    return op(12, u32(ltype) + u32(0) + u64(off) + u64(length) + locker)


GETATTR_ALL = op(9, bitmap(0xffffffff, 0xffffffff, 0xffffffff))
GETATTR = op(9, bitmap(0x0010011a, 0x00b0a23a))
GETFH = op(10)
READ = op(25, CUR_SID + u64(0) + u32(4096))
WRITE = op(38, CUR_SID + u64(0) + u32(2) + opaque(b"fuzz data\n"))
CLOSE = op(4, u32(0) + CUR_SID)


def lookup(name):
    return op(15, opaque(name))


def compound(ops, tag=b""):
    return opaque(tag) + u32(0) + u32(len(ops)) + b"".join(ops)


def sessions():
    """4.1+ compounds on the harness's session."""
    s = seq()
    return [
        [s, op(24), GETFH, GETATTR],  # PUTROOTFH
        [s, op(24), lookup(b"tmp"), lookup(b"snfs-fuzz"), lookup(b"export"),
         GETFH, GETATTR_ALL],
        [s, putfh(ROOT), lookup(b"file"), GETATTR, op(3, u32(0x3f))],
        [s, putfh(DIR), op(16), GETFH],
        [s, putfh(ROOT), open_args(0, b"file", False), READ, CLOSE],
        [s, putfh(ROOT), open_args(0, b"newfile", True), WRITE,
         op(5, u64(0) + u32(0)), CLOSE],
        [s, putfh(ROOT), open_args(0, b"file", False), lock_args(),
         op(13, u32(2) + u64(0) + u64(10) + u64(1) + opaque(b"other")),
         op(14, u32(2) + u32(0) + CUR_SID + u64(0) + u64(100)), CLOSE],
        [s, putfh(ROOT), open_args(0, b"file", False),
         op(21, CUR_SID + u32(0) + u32(1) + u32(0)), CLOSE],
        [s, putfh(ROOT), open_args(0, b"file", False), op(55, u32(1) + CUR_SID),
         op(45, CUR_SID)],
        [s, putfh(MANY), op(26, u64(0) + u64(0) + u32(1024) + u32(8192) +
                            bitmap(0x0010011a, 0x00b0a23a))],
        [s, putfh(ROOT), op(26, u64(0) + u64(0) + u32(400) + u32(400) +
                            bitmap(0x00000002))],
        [s, putfh(LINK), op(27)],
        [s, putfh(ROOT), op(6, u32(5) + opaque(b"file") + opaque(b"lnk") +
                            bitmap(0, 0x2) + opaque(u32(0o777)))],
        [s, putfh(ROOT), op(6, u32(2) + opaque(b"newdir") +
                            bitmap(0, 0x2) + opaque(u32(0o755)))],
        [s, putfh(ROOT), op(28, opaque(b"empty"))],
        [s, putfh(ROOT), op(32), putfh(DIR), op(29, opaque(b"sub") +
                                                  opaque(b"sub2"))],
        [s, putfh(FILE), op(32), putfh(ROOT), op(11, opaque(b"hard"))],
        [s, putfh(FILE), op(34, ANON_SID + bitmap(1 << 4, 0x2) +
                              opaque(u64(10) + u32(0o600)))],
        [s, putfh(FILE), op(37, bitmap(1 << 4) + opaque(u64(48)))],
        [s, putfh(FILE), op(17, bitmap(1 << 4) + opaque(u64(1)))],
        [s, putfh(DIR), op(16), GETFH, op(31)],
        [s, putfh(ROOT), op(33, opaque(b"file"))],
        [s, putfh(ROOT), op(52, u32(0))],
        [s, putfh(ROOT), op(24), op(23)],
        [s, op(58, u32(0))],
        [op(44, SESSION)],
        [op(41, SESSION + u32(3) + u32(0))],
        [op(42, b"fuzzverf" + opaque(b"seed-client") + u32(0) + u32(0) +
            u32(0))],
        [op(43, u64(1) + u32(1) + u32(0) + (u32(0) + u32(65536) * 3 +
                                            u32(8) + u32(4) + u32(0)) * 2 +
            u32(0x40000000) + u32(1) + u32(1) + u32(0) + opaque(b"x") +
            u32(0) + u32(0) + u32(0))],
        [op(57, u64(1))],
        [s, op(7, u64(1)), op(8, ANON_SID)],
    ]


def v42():
    s = seq()
    return [
        [s, putfh(BIG), op(68, ANON_SID + u64(0) + u32(65536))],
        [s, putfh(BIG), op(69, ANON_SID + u64(0) + u32(1)),
         op(69, ANON_SID + u64(8192) + u32(0))],
        [s, putfh(ROOT), open_args(0, b"file", False),
         op(59, CUR_SID + u64(0) + u64(8192)),
         op(62, CUR_SID + u64(0) + u64(4096)), CLOSE],
        [s, putfh(FILE), op(32), putfh(ROOT), open_args(0, b"cp", True),
         op(60, ANON_SID + CUR_SID + u64(0) + u64(0) + u64(0) + u32(1) +
            u32(1) + u32(0))],
        [s, putfh(FILE), op(32), putfh(ROOT), open_args(0, b"cl", True),
         op(71, ANON_SID + CUR_SID + u64(0) + u64(0) + u64(0))],
    ]


def v40():
    cid = u64(0x1234)
    return [
        [op(24), GETFH, GETATTR_ALL],
        [op(35, b"fuzzverf" + opaque(b"v40-client") + u32(0x40000000) +
            opaque(b"tcp") + opaque(b"127.0.0.1.8.1") + u32(1))],
        [op(36, cid + b"fuzzverf")],
        [op(30, cid)],
        [putfh(ROOT), open_args(1, b"file", False), READ],
        [putfh(FILE), op(20, ANON_SID + u32(2))],
        [op(39, cid + opaque(b"fuzz-lock-owner"))],
        [putfh(ROOT), lookup(b"dir"), lookup(b"sub"), lookup(b"deep"),
         op(10), op(16), op(16), op(16)],
        [putfh(MANY), op(26, u64(0) + u64(0) + u32(8192) + u32(32768) +
                            bitmap(0xffffffff, 0xffffffff))],
        [putfh(RO), lookup(b"rofile"), op(34, ANON_SID +
                                            bitmap(1 << 4) + opaque(u64(0)))],
    ]


def main():
    out = os.path.join(sys.argv[1], "fuzz_nfs4_compound")
    os.makedirs(out, exist_ok=True)
    seeds = []
    for ops in v40():
        seeds.append(bytes([0]) + compound(ops))
    for ops in sessions():
        seeds.append(bytes([1]) + compound(ops))
        seeds.append(bytes([2]) + compound(ops, b"v4.2"))
    for ops in v42():
        seeds.append(bytes([2]) + compound(ops))
    seeds.append(bytes([3 | 1 << 2]) + opaque(b"tag") + u32(7) + u32(0))
    seeds.append(bytes([2 | 2 << 2]) + compound(sessions()[4]))
    seeds.append(bytes([1 | 3 << 2]) + compound(sessions()[0]))
    for s in seeds:
        with open(os.path.join(out, hashlib.sha1(s).hexdigest()), "wb") as f:
            f.write(s)
    print("seeds: fuzz_nfs4_compound %d (hand-made)" % len(seeds))


if __name__ == "__main__":
    main()
