#!/usr/bin/env python3
"""A hostile NFSv4.1/4.2 server for client robustness tests.

fake_server4.py PORT MODE [SEED]: listens on 127.0.0.1:PORT. Client ID and
session setup (EXCHANGE_ID, CREATE_SESSION, DESTROY_*) and RECLAIM_COMPLETE
are answered properly, and so is the mount's path walk (PUTROOTFH, LOOKUP,
GETFH, GETATTR), so the abuse reaches the operations after mounting:
  random     records of random bytes (half carry the call's xid)
  body       proper RPC and COMPOUND headers and a valid SEQUENCE result,
             then random bytes (sometimes a plausible first result); half
             of the GETATTRs are valid
  truncated  like body, but each reply is cut short inside its record, or
             its record mark promises more than is sent before the close
  huge       a record mark of 2 GiB, then junk
  frag       valid-looking replies split into 1-byte fragments with a
             garbage tail
  noplus     not hostile: an honest NFSv4.1/4.2 server of a small tree kept
             in memory (/export/d/f, 300 KiB of a known pattern, and any
             file created beside it) that lacks READ_PLUS, COPY and SEEK:
             it answers them NFS4ERR_NOTSUPP, as servers without them do,
             and everything else a libsnfs client asks properly (OPEN,
             READ, WRITE, COMMIT, SETATTR of the size, ...)
  capplus    noplus, but with READ_PLUS, which like knfsd covers no more
             of the file than its maxread (64 KiB here) whatever the
             count: holes (runs of 4 KiB zero blocks) as HOLE segments;
             and a sparse file /export/d/s, 8 MiB of 4 KiB data and 4 KiB
             holes. Prints the READ_PLUS calls and their counts to stderr.
Prints "listening" once ready.
"""
import os
import random
import socket
import struct
import sys
import threading

PORT, MODE = int(sys.argv[1]), sys.argv[2]
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else os.getpid())
lock = threading.Lock()
tree_lock = threading.Lock()  # noplus: the files

OP_GETATTR, OP_GETFH, OP_LOOKUP, OP_PUTFH, OP_PUTROOTFH = 9, 10, 15, 22, 24
OP_EXCHANGE_ID, OP_CREATE_SESSION, OP_DESTROY_SESSION = 42, 43, 44
OP_SEQUENCE, OP_DESTROY_CLIENTID, OP_RECLAIM_COMPLETE = 53, 57, 58


def rnd(n):
    with lock:
        return bytes(rng.getrandbits(8) for _ in range(n))


def rint(a, b):
    with lock:
        return rng.randint(a, b)


def u32(v):
    return struct.pack(">I", v & 0xFFFFFFFF)


def u64(v):
    return struct.pack(">Q", v)


def opaque(b):
    return u32(len(b)) + b + b"\0" * ((4 - len(b) % 4) % 4)


def fattr(ftype, fsid, size=4096):
    # type(1), size(4), fsid(8) in word 0; mode(33) in word 1
    vals = u32(ftype) + u64(size) + u64(fsid) + u64(fsid) + u32(0o755)
    return u32(2) + u32((1 << 1) | (1 << 4) | (1 << 8)) + u32(1 << 1) + opaque(vals)


def header(xid):
    # REPLY, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS
    return struct.pack(">IIIIII", xid, 1, 0, 0, 0, 0)


def compound(status, results):
    return u32(status) + u32(0) + u32(len(results)) + b"".join(results)


def chan():
    return u32(0) + u32(1 << 21) + u32(1 << 21) + u32(8192) + u32(16) + u32(8) + u32(0)


class Args:
    def __init__(s, b):
        s.b, s.p = b, 0

    def u32(s):
        if s.p + 4 > len(s.b):
            raise EOFError
        s.p += 4
        return struct.unpack(">I", s.b[s.p - 4:s.p])[0]

    def skip(s, n):
        s.p += n + (4 - n % 4) % 4

    def opaque(s):
        n = s.u32()
        s.skip(n)


def walk_ops(a, nops):
    """The operations of a path walk, or None for anything else."""
    ops = []
    for _ in range(nops):
        op = a.u32()
        ops.append(op)
        if op == OP_SEQUENCE:
            a.skip(16 + 16)
        elif op == OP_PUTFH:
            a.opaque()
        elif op == OP_LOOKUP:
            a.opaque()
        elif op == OP_GETATTR:
            for _ in range(a.u32()):
                a.u32()
        elif op not in (OP_PUTROOTFH, OP_GETFH):
            return ops, False
    return ops, True


def seq_result():
    return u32(OP_SEQUENCE) + u32(0) + rnd(16) + u32(1) + u32(0) + u32(7) + u32(7) + u32(0)


def result(call_args):
    """The COMPOUND reply body, and whether it is one of the honest ones."""
    a = Args(call_args)
    a.opaque()  # tag
    a.u32()     # minorversion
    nops = a.u32()
    first = a.u32()
    if first == OP_EXCHANGE_ID:
        return compound(0, [u32(first) + u32(0) + u64(0x1234) + u32(1) + u32(0) + u32(0)
                            + u64(1) + opaque(b"fake") + opaque(b"fake") + u32(0)]), True
    if first == OP_CREATE_SESSION:
        return compound(0, [u32(first) + u32(0) + rnd(16) + u32(1) + u32(0) + chan() + chan()]), True
    if first in (OP_DESTROY_SESSION, OP_DESTROY_CLIENTID):
        return compound(0, [u32(first) + u32(0)]), True
    a.p = 0
    a.opaque()
    a.u32()
    a.u32()
    try:
        ops, walk = walk_ops(a, nops)
    except EOFError:
        ops, walk = [], False
    if len(ops) >= 2 and ops[1] == OP_RECLAIM_COMPLETE:
        return compound(0, [seq_result(), u32(OP_RECLAIM_COMPLETE) + u32(0)]), True
    if walk and len(ops) >= 2 and ops[1] == OP_PUTROOTFH:
        res, depth = [seq_result()], 0
        for op in ops[1:]:
            if op == OP_GETFH:
                res.append(u32(op) + u32(0) + opaque(b"fh-%d" % depth))
            elif op == OP_GETATTR:
                res.append(u32(op) + u32(0) + fattr(2, 100 + min(depth, 1)))
            else:
                if op == OP_LOOKUP:
                    depth += 1
                res.append(u32(op) + u32(0))
        return compound(0, res), True
    if walk and len(ops) == 3 and ops[2] == OP_GETATTR and rint(0, 1):
        return compound(0, [seq_result(), u32(OP_PUTFH) + u32(0),
                            u32(OP_GETATTR) + u32(0) + fattr(rint(1, 2), 101, rint(0, 1 << 30))]), True
    body = [seq_result()]
    if rint(0, 2) == 0 and len(ops) > 1:
        body.append(u32(ops[1]) + u32(0))
        if len(ops) > 2:
            body.append(u32(ops[2]) + u32(0) + rnd(rint(0, 300)))
    body.append(rnd(rint(0, 600)))
    # status OK, empty tag, a result count that may not match
    return u32(0) + u32(0) + u32(rint(1, 6)) + b"".join(body), False


def record(data):
    return struct.pack(">I", 0x80000000 | len(data)) + data


def read_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def read_call(conn):
    data = b""
    while True:
        (mark,) = struct.unpack(">I", read_exact(conn, 4))
        data += read_exact(conn, mark & 0x7FFFFFFF)
        if mark & 0x80000000:
            return data


def call_args(call):
    # xid, type, rpcvers, prog, vers, proc, cred, verf
    p = 24
    for _ in range(2):
        (n,) = struct.unpack(">I", call[p + 4:p + 8])
        p += 8 + n + (4 - n % 4) % 4
    return call[p:]


# ---- noplus: an honest server without READ_PLUS, COPY and SEEK ----

OP_ACCESS, OP_CLOSE, OP_COMMIT, OP_OPEN, OP_READ, OP_REMOVE = 3, 4, 5, 18, 25, 28
OP_SAVEFH, OP_SETATTR, OP_WRITE = 32, 34, 38
OP_ALLOCATE, OP_COPY, OP_DEALLOCATE, OP_READ_PLUS, OP_SEEK = 59, 60, 62, 68, 69
NFS4ERR_NOENT, NFS4ERR_EXIST, NFS4ERR_STALE = 2, 17, 70
NFS4ERR_NOTSUPP, NFS4ERR_ATTRNOTSUPP, NFS4ERR_BADXDR = 10004, 10032, 10036
NOTSUPP_OPS = (OP_READ_PLUS, OP_COPY, OP_SEEK, OP_ALLOCATE, OP_DEALLOCATE)
CAP_MAXREAD = 64 << 10  # capplus: READ_PLUS covers at most this much


def pattern(n):
    return bytes((i * 7 + i // 4096) & 0xFF for i in range(n))


# path -> [type (1 file, 2 dir), bytearray, change, fileid]
tree = {"/": [2, None, 1, 1], "/export": [2, None, 1, 2],
        "/export/d": [2, None, 1, 3], "/export/d/f": [1, bytearray(pattern(300 << 10)), 1, 4]}
if MODE == "capplus":
    tree["/export/d/s"] = [1, bytearray(b"".join(
        pattern(4096) if k % 2 == 0 else bytes(4096) for k in range(2048))), 1, 5]


def read_plus_body(data, off, count):
    """READ_PLUS4resok of data[off:off + min(count, CAP_MAXREAD)]."""
    end = min(len(data), off + min(count, CAP_MAXREAD))
    segs, pos = [], off
    while pos < end:
        blk = min(end, (pos // 4096 + 1) * 4096)
        hole = not any(data[pos:blk])
        if segs and segs[-1][0] == hole:
            segs[-1][2] = blk
        else:
            segs.append([hole, pos, blk])
        pos = blk
    out = b""
    for hole, s0, e0 in segs:
        if hole:
            out += u32(1) + u64(s0) + u64(e0 - s0)
        else:
            out += u32(0) + u64(s0) + opaque(bytes(data[s0:e0]))
    return u32(end >= len(data)) + u32(len(segs)) + out


def fh_of(path):
    return b"P:" + path.encode()


def join(d, name):
    return (d.rstrip("/") + "/" + name) if d != "/" else "/" + name


def nfstime(sec):
    return struct.pack(">qI", sec, 0)


def attr_value(bit, path):
    t, data, change, fileid = tree[path]
    size = len(data) if data is not None else 4096
    when = 1700000000 + change
    vals = {1: u32(t), 3: u64(change), 4: u64(size),
            8: u64(100 if path == "/" else 101) + u64(0), 10: u32(90), 11: u32(0),
            20: u64(fileid), 21: u64(1000), 22: u64(1000), 23: u64(2000),
            30: u64(1 << 20), 31: u64(1 << 20), 33: u32(0o755 if t == 2 else 0o644),
            35: u32(1), 36: opaque(b"0"), 37: opaque(b"0"),
            42: u64(1 << 30), 43: u64(1 << 30), 44: u64(2 << 30), 45: u64(size),
            47: nfstime(when), 52: nfstime(when), 53: nfstime(when), 55: u64(fileid)}
    return vals.get(bit)


def getattr_body(a, path):
    words = [a.u32() for _ in range(a.u32())]
    out, vals = [0] * len(words), b""
    for bit in range(32 * len(words)):
        if words[bit // 32] >> (bit % 32) & 1:
            v = attr_value(bit, path)
            if v is not None:
                out[bit // 32] |= 1 << (bit % 32)
                vals += v
    return u32(len(out)) + b"".join(u32(w) for w in out) + opaque(vals)


def setattrs(a, path):
    """Apply a fattr4 of settable attributes; the bitmap of those set."""
    words = [a.u32() for _ in range(a.u32())]
    n = a.u32()
    end = a.p + n + (4 - n % 4) % 4
    for bit in range(32 * len(words)):
        if not words[bit // 32] >> (bit % 32) & 1:
            continue
        if bit == 4:
            size = (a.u32() << 32) | a.u32()
            data = tree[path][1]
            if size < len(data):
                del data[size:]
            else:
                data.extend(bytes(size - len(data)))
            tree[path][2] += 1
        elif bit == 33:
            a.u32()
        elif bit in (48, 54):
            if a.u32() == 1:
                a.skip(12)
        else:
            return None
    a.p = end
    return u32(len(words)) + b"".join(u32(w) for w in words)


def noplus_compound(call_args):
    a = Args(call_args)
    a.opaque()  # tag
    a.u32()     # minorversion
    nops = a.u32()
    cur = saved = None
    res, status = [], 0
    for _ in range(nops):
        op = a.u32()
        st, body = 0, b""
        if op == OP_SEQUENCE:
            sid = a.b[a.p:a.p + 16]
            a.skip(16)
            seq, slot, high = a.u32(), a.u32(), a.u32()
            a.u32()
            body = sid + u32(seq) + u32(slot) + u32(high) + u32(high) + u32(0)
        elif op == OP_EXCHANGE_ID:
            return result(call_args)[0]
        elif op == OP_CREATE_SESSION:
            return compound(0, [u32(op) + u32(0) + rnd(16) + u32(1) + u32(0) + chan() + chan()])
        elif op in (OP_DESTROY_SESSION, OP_DESTROY_CLIENTID):
            return compound(0, [u32(op) + u32(0)])
        elif op == OP_RECLAIM_COMPLETE:
            a.u32()
        elif op == OP_PUTROOTFH:
            cur = "/"
        elif op == OP_PUTFH:
            n = a.u32()
            fh = a.b[a.p:a.p + n]
            a.skip(n)
            cur = fh[2:].decode(errors="replace") if fh.startswith(b"P:") else None
            if cur not in tree:
                st = NFS4ERR_STALE
        elif op == OP_SAVEFH:
            saved = cur
        elif op == OP_LOOKUP:
            n = a.u32()
            name = a.b[a.p:a.p + n].decode(errors="replace")
            a.skip(n)
            if join(cur, name) in tree:
                cur = join(cur, name)
            else:
                st = NFS4ERR_NOENT
        elif op == OP_GETFH:
            body = opaque(fh_of(cur))
        elif op == OP_GETATTR:
            body = getattr_body(a, cur)
        elif op == OP_ACCESS:
            acc = a.u32()
            body = u32(acc) + u32(acc)
        elif op == OP_OPEN:
            a.u32()
            a.u32()
            a.u32()
            a.skip(8)
            a.opaque()
            create = a.u32() == 1
            if create:
                how = a.u32()
                if how in (0, 1):  # UNCHECKED, GUARDED: fattr4
                    for _ in range(a.u32()):
                        a.u32()
                    a.opaque()
                else:  # EXCLUSIVE4(_1): verifier (and attributes)
                    a.skip(8)
                    if how == 3:
                        for _ in range(a.u32()):
                            a.u32()
                        a.opaque()
            claim = a.u32()
            if claim == 0:  # CLAIM_NULL: a name in the directory
                n = a.u32()
                name = a.b[a.p:a.p + n].decode(errors="replace")
                a.skip(n)
                path = join(cur, name)
                if path not in tree:
                    if not create:
                        st = NFS4ERR_NOENT
                    else:
                        tree[path] = [1, bytearray(), 1, 10 + len(tree)]
                elif create and how == 1:
                    st = NFS4ERR_EXIST
                cur = path
            elif claim == 1:
                a.u32()
            if st == 0:
                body = (u32(1) + rnd(12) + u32(0) + u64(1) + u64(2) + u32(0)
                        + u32(0) + u32(0))
        elif op == OP_CLOSE:
            a.u32()
            a.skip(16)
            body = u32(0) + bytes(12)
        elif op == OP_READ:
            a.skip(16)
            off = (a.u32() << 32) | a.u32()
            count = a.u32()
            data = tree[cur][1]
            chunk = bytes(data[off:off + count])
            body = u32(off + len(chunk) >= len(data)) + opaque(chunk)
        elif op == OP_READ_PLUS and MODE == "capplus":
            a.skip(16)
            off = (a.u32() << 32) | a.u32()
            count = a.u32()
            print("READ_PLUS", off, count, file=sys.stderr, flush=True)
            body = read_plus_body(tree[cur][1], off, count)
        elif op == OP_WRITE:
            a.skip(16)
            off = (a.u32() << 32) | a.u32()
            a.u32()
            n = a.u32()
            chunk = a.b[a.p:a.p + n]
            a.skip(n)
            data = tree[cur][1]
            if len(data) < off:
                data.extend(bytes(off - len(data)))
            data[off:off + n] = chunk
            tree[cur][2] += 1
            body = u32(n) + u32(2) + b"noplusvf"  # FILE_SYNC
        elif op == OP_COMMIT:
            a.skip(12)
            body = b"noplusvf"
        elif op == OP_SETATTR:
            a.skip(16)
            body = setattrs(a, cur)
            if body is None:
                st, body = NFS4ERR_ATTRNOTSUPP, u32(0)
        elif op == OP_REMOVE:
            n = a.u32()
            name = a.b[a.p:a.p + n].decode(errors="replace")
            a.skip(n)
            if tree.pop(join(cur, name), None) is None:
                st = NFS4ERR_NOENT
            body = u32(0) + u64(1) + u64(2)
        elif op in NOTSUPP_OPS:
            st = NFS4ERR_NOTSUPP
        else:
            st = NFS4ERR_NOTSUPP
        res.append(u32(op) + u32(st) + (body if st == 0 or op == OP_SETATTR else b""))
        status = st
        if st:
            break
    return compound(status, res)


def answer(conn, call):
    xid, _, _, prog, vers, proc = struct.unpack(">IIIIII", call[:24])
    if proc == 0:
        conn.sendall(record(header(xid)))
        return
    if MODE in ("noplus", "capplus"):
        with tree_lock:
            body = noplus_compound(call_args(call))
        conn.sendall(record(header(xid) + body))
        return
    body, honest = result(call_args(call))
    if honest:
        conn.sendall(record(header(xid) + body))
        return
    if MODE == "random":
        junk = rnd(rint(0, 512))
        if rint(0, 1) and len(junk) >= 4:
            junk = struct.pack(">I", xid) + junk[4:]
        conn.sendall(record(junk))
        return
    if MODE == "huge":
        conn.sendall(struct.pack(">I", 0xFFFFFFFF) + rnd(100))
        return
    reply = header(xid) + body
    if MODE == "truncated":
        if rint(0, 1):
            conn.sendall(record(reply[: rint(0, len(reply))]))
        else:
            conn.sendall(struct.pack(">I", 0x80000000 | (len(reply) + 100)) + reply)
            raise EOFError
        return
    if MODE == "frag":
        reply += rnd(rint(0, 64))
        out = b"".join(struct.pack(">I", 1) + reply[i:i + 1] for i in range(len(reply) - 1))
        conn.sendall(out + record(reply[-1:]))
        return
    conn.sendall(record(reply))


def serve(conn):
    try:
        while True:
            call = read_call(conn)
            if len(call) < 40:
                return
            answer(conn, call)
    except (EOFError, OSError, struct.error):
        pass
    finally:
        conn.close()


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", PORT))
    s.listen(16)
    print("listening", flush=True)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


main()
