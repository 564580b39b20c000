#!/usr/bin/env python3
"""Turn recorded RPC traffic into seed corpora (called by mkcorpus.sh).

    mkseeds.py RAWDIR FIXTURE CORPUSDIR

RAWDIR holds recproxy.py's output (cN.stream, cN-M.rec); FIXTURE is the
output of a fuzz target run with FUZZ_FHMAP=print (handles of the known
tree, the procedure table). Writes CORPUSDIR/{fuzz_rpc,fuzz_nfs3_args,
fuzz_record,fuzz_nfs4_compound}/SHA1 files:

- fuzz_rpc: each call record, xid set to 1 and every known file handle
  replaced by its placeholder (fuzz_srv.h), so seeds survive a rebuilt tree;
- fuzz_nfs3_args: the procedure's index in the fixture table as one byte,
  then the (placeholder-substituted) arguments;
- fuzz_nfs4_compound: the COMPOUND4args of NFSv4 calls, minor version as
  byte 0, SEQUENCE's sessionid as the harness's session placeholder;
- fuzz_record: whole client streams (cut at 16 KiB) with the harness's two
  config bytes, some with a small max_record, and records re-framed into
  small fragments.
Duplicates are dropped; sizes are capped to keep the corpus commit-sized.
"""

import glob
import hashlib
import os
import struct
import sys

MAX_REC = 16384       # bigger calls (large WRITEs) are left out
MAX_STREAM = 16384
LIMITS = {"fuzz_rpc": 120, "fuzz_nfs3_args": 110, "fuzz_record": 50,
          "fuzz_nfs4_compound": 120}
OP_SEQUENCE = 53


def load_fixture(path):
    fhs, procs = [], {}
    for line in open(path):
        w = line.split()
        if w and w[0] == "fh":
            fhs.append((int(w[1]), bytes.fromhex(w[2])))
        elif w and w[0] == "proc":
            procs[(int(w[2]), int(w[3]), int(w[4]))] = int(w[1])
    return fhs, procs


def xdr_opaque(b):
    return struct.pack(">I", len(b)) + b + b"\0" * ((4 - len(b) % 4) % 4)


def placeholders(rec, fhs):
    for idx, fh in fhs:
        rec = rec.replace(xdr_opaque(fh), struct.pack(">I", 8) + b"SNFZ" +
                          struct.pack(">I", idx))
    return rec


def args_offset(rec):
    """Offset of the arguments in a call record, and (prog, vers, proc)."""
    pos = 24
    if len(rec) < pos + 8:
        return None, None
    prog, vers, proc = struct.unpack(">III", rec[12:24])
    for _ in range(2):  # credential, verifier
        (blen,) = struct.unpack(">I", rec[pos + 4:pos + 8])
        pos += 8 + blen + (4 - blen % 4) % 4
        if pos > len(rec):
            return None, None
    return pos, (prog, vers, proc)


def compound_seed(args, sids):
    """fuzz_nfs4_compound seed from COMPOUND4args: byte 0 is the minor
    version (caller root); a SEQUENCE's sessionid becomes the harness's
    session placeholder ("SNFS"...) with sequenceid 0 (the harness fills
    in the slot's next one); every sessionid seen so far (sids) becomes a
    placeholder wherever it appears (DESTROY_SESSION...)."""
    if len(args) < 12:
        return None
    (taglen,) = struct.unpack(">I", args[:4])
    pos = 4 + taglen + (4 - taglen % 4) % 4
    if pos + 8 > len(args):
        return None
    (minor,) = struct.unpack(">I", args[pos:pos + 4])
    if minor > 2:
        return None
    first = pos + 8
    if len(args) >= first + 24 and \
            struct.unpack(">I", args[first:first + 4])[0] == OP_SEQUENCE:
        sids.add(args[first + 4:first + 20])
        args = args[:first + 20] + struct.pack(">I", 0) + args[first + 24:]
    for sid in sids:
        args = args.replace(sid, b"SNFS" + sid[4:])
    return bytes([minor]) + args


def frame(rec, fragsize):
    out = b""
    chunks = [rec[i:i + fragsize] for i in range(0, len(rec), fragsize)] or [b""]
    for i, c in enumerate(chunks):
        last = 0x80000000 if i == len(chunks) - 1 else 0
        out += struct.pack(">I", last | len(c)) + c
    return out


class Corpus:
    def __init__(self, root, name):
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir, exist_ok=True)
        self.seen = set()
        self.n = 0
        self.limit = LIMITS[name]

    def add(self, data):
        h = hashlib.sha1(data).hexdigest()
        if h in self.seen or self.n >= self.limit:
            return
        self.seen.add(h)
        self.n += 1
        with open(os.path.join(self.dir, h), "wb") as f:
            f.write(data)


def main():
    raw, fixture, out = sys.argv[1:4]
    fhs, procs = load_fixture(fixture)
    rpc = Corpus(out, "fuzz_rpc")
    args = Corpus(out, "fuzz_nfs3_args")
    record = Corpus(out, "fuzz_record")
    v4 = Corpus(out, "fuzz_nfs4_compound")
    sids = set()

    recs = sorted(glob.glob(os.path.join(raw, "c*-*.rec")),
                  key=lambda p: [int(x) for x in
                                 os.path.basename(p)[1:-4].split("-")])
    # Group calls by procedure and take them round-robin, so the size cap
    # drops repeats of common calls, never the only call of a procedure.
    groups = {}
    small = []
    for path in recs:
        rec = open(path, "rb").read()
        if len(rec) > MAX_REC or len(rec) < 24:
            continue
        rec = placeholders(struct.pack(">I", 1) + rec[4:], fhs)
        off, key = args_offset(rec)
        groups.setdefault(key, []).append((rec, off))
        if len(rec) < 300:
            small.append(rec)
    while any(groups.values()):
        for key in sorted(groups, key=str):
            if not groups[key]:
                continue
            rec, off = groups[key].pop(0)
            rpc.add(rec)
            if off is not None and key in procs:
                args.add(bytes([procs[key]]) + rec[off:])
            if off is not None and key == (100003, 4, 1):
                seed = compound_seed(rec[off:], sids)
                if seed:
                    v4.add(seed)

    for i, rec in enumerate(small[:10]):
        record.add(bytes([0x80, i & 0xff]) + frame(rec, 8) + frame(rec, 100))
    for path in sorted(glob.glob(os.path.join(raw, "c*.stream"))):
        data = open(path, "rb").read()[:MAX_STREAM]
        if data:
            record.add(b"\x80\x02" + data)  # default limit, chunks <= 3 bytes
            record.add(b"\x03\x07" + data)  # max_record 100, big chunks
    print("procedures seen: " + " ".join("%d/%d/%d" % k for k in
          sorted(k for k in groups if k)))
    print("seeds: fuzz_rpc %d, fuzz_nfs3_args %d, fuzz_record %d, "
          "fuzz_nfs4_compound %d (recorded)"
          % (rpc.n, args.n, record.n, v4.n))


if __name__ == "__main__":
    main()
