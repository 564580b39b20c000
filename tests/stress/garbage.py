#!/usr/bin/env python3
"""Send random and mutated RPC records to snfsd and check it copes.

usage: garbage.py PORT EXPORT [NCASES [SEED]]

Valid NULL/GETATTR/LOOKUP/READ/WRITE/READDIRPLUS/MNT calls are mutated (bit
flips, truncation, extension, words set to huge values, lying or odd fragment
headers, pure random bytes). Each case goes over a fresh TCP connection: a
reply must arrive, or the connection must be closed once we half-close our
side (shutdown(SHUT_WR) tells the server no more bytes will come). A case
that gets neither within the time limit, or a reply that is not a well-formed
RPC reply, is a failure. Some datagrams also go to MOUNT over UDP (no answer
is a valid outcome there). Afterwards the server must still answer NULL and
GETATTR correctly. Prints ok/not ok lines and the tally.
"""

import collections
import os
import random
import socket
import struct
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import nfsrpc as N  # noqa: E402
from nfsrpc import check  # noqa: E402

FIRST_WAIT = 1.0  # seconds to wait for a reply before half-closing
CLOSE_WAIT = 8.0  # then seconds to wait for the close


def base_calls(root, fh, export):
    """(name, call bytes without record mark) for each valid call."""
    P = N.Packer
    cred = N.auth_sys(0, 0, (1, 2, 3))
    mk = lambda xid, prog, vers, proc, args: N.build_call(xid, prog, vers, proc, args, cred)  # noqa: E731
    return [
        ("NULL", mk(0x1001, N.NFS_PROG, 3, N.NFSPROC3_NULL, b"")),
        ("GETATTR", mk(0x1002, N.NFS_PROG, 3, N.NFSPROC3_GETATTR, N.call_args(N.NFSPROC3_GETATTR, root))),
        ("LOOKUP", mk(0x1003, N.NFS_PROG, 3, N.NFSPROC3_LOOKUP, N.call_args(N.NFSPROC3_LOOKUP, root, "g.dat"))),
        ("READ", mk(0x1004, N.NFS_PROG, 3, N.NFSPROC3_READ, N.call_args(N.NFSPROC3_READ, fh, offset=100, count=8192))),
        ("WRITE", mk(0x1005, N.NFS_PROG, 3, N.NFSPROC3_WRITE,
                     N.call_args(N.NFSPROC3_WRITE, fh, offset=4000, data=bytes(range(256)) * 3))),
        ("READDIRPLUS", mk(0x1006, N.NFS_PROG, 3, N.NFSPROC3_READDIRPLUS,
                           N.call_args(N.NFSPROC3_READDIRPLUS, root))),
        ("MNT", mk(0x1007, N.MOUNT_PROG, 3, N.MOUNTPROC3_MNT, P().string(export).bytes())),
        ("COMMIT", mk(0x1008, N.NFS_PROG, 3, N.NFSPROC3_COMMIT, N.call_args(N.NFSPROC3_COMMIT, fh))),
    ]


HUGE = [0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x80000001, 0x10000000, 0x00100000,
        0xFFFFFFFE, 65, 64, 1025, 4097, 0]


def mutate_payload(rng, msg):
    """A mutated call body and the name of the mutation."""
    b = bytearray(msg)
    kind = rng.choice(["flip", "flip", "truncate", "extend", "word", "word", "random_word", "zero_tail"])
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b) * 8)
            b[i // 8] ^= 1 << (i % 8)
    elif kind == "truncate":
        b = b[:rng.randrange(len(b))]
    elif kind == "extend":
        b += rng.randbytes(rng.randint(1, 300))
    elif kind == "word":
        # Set an aligned word (a length, count, offset or enum) huge.
        i = rng.randrange(max(1, len(b) // 4)) * 4
        b[i:i + 4] = struct.pack(">I", rng.choice(HUGE))
    elif kind == "random_word":
        i = rng.randrange(max(1, len(b) // 4)) * 4
        b[i:i + 4] = rng.randbytes(4)
    elif kind == "zero_tail":
        i = rng.randrange(len(b))
        b[i:] = bytes(len(b) - i)
    return kind, bytes(b)


def frame_mutated(rng, body):
    """Record-mark body, sometimes with a lying or odd fragment layout."""
    kind = rng.choice(["ok"] * 6 + ["long", "short", "nolast", "frags", "zerofrags", "huge", "double"])
    n = len(body)
    if kind == "ok":
        return kind, N.record_mark(body)
    if kind == "long":  # claims more bytes than follow
        return kind, struct.pack(">I", 0x80000000 | (n + rng.randint(1, 100000))) + body
    if kind == "short":  # claims fewer: the rest reads as a new header
        return kind, struct.pack(">I", 0x80000000 | rng.randrange(n + 1)) + body
    if kind == "nolast":  # last-fragment bit missing: the record never ends
        return kind, struct.pack(">I", n) + body
    if kind == "frags":
        return kind, N.frame(body, rng.randint(1, 16))
    if kind == "zerofrags":
        return kind, struct.pack(">I", 0) * rng.randint(1, 50) + N.record_mark(body)
    if kind == "huge":
        return kind, struct.pack(">I", rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 0x8FFFFFFF])) + body
    return kind, N.record_mark(body) + N.record_mark(body)  # "double"


def make_case(rng, bases):
    r = rng.random()
    if r < 0.06:
        data = rng.randbytes(rng.randint(0, 2000))
        return "random_bytes", data
    if r < 0.12:
        return "random_record", N.record_mark(rng.randbytes(rng.randint(0, 2000)))
    name, msg = rng.choice(bases)
    mkind, body = mutate_payload(rng, msg)
    fkind, data = frame_mutated(rng, body)
    return "%s/%s/%s" % (name, mkind, fkind), data


def parse_replies(buf):
    """Split a byte stream into reply records. Returns (records, error)."""
    rest = bytearray(buf)
    recs = N.take_records(rest)
    if rest:
        return recs, "%d bytes after the last whole reply record" % len(rest)
    for r in recs:
        if len(r) < 12:
            return recs, "reply of %d bytes" % len(r)
        mtype, rstat = struct.unpack(">II", r[4:12])
        if mtype != N.REPLY or rstat > 1:
            return recs, "not an RPC reply (msg_type %d reply_stat %d)" % (mtype, rstat)
    return recs, None


def run_case(port, data):
    """Send data on a new connection. Returns (outcome, detail), outcome in
    answered / closed / hung / bad."""
    s = socket.socket()
    s.settimeout(5)
    try:
        s.connect(("127.0.0.1", port))
    except OSError as e:
        return "bad", "connect: %s" % e
    buf = bytearray()
    closed = False
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            closed = True
        deadline = time.monotonic() + FIRST_WAIT
        half_closed = False
        while not closed:
            left = deadline - time.monotonic()
            if left <= 0:
                if half_closed:
                    break
                try:
                    s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                half_closed = True
                deadline = time.monotonic() + CLOSE_WAIT
                continue
            s.settimeout(left)
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                continue
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            buf += chunk
            recs, err = parse_replies(bytes(buf))
            if recs and not err:
                break  # answered; later replies (pipelined cases) are not needed
    finally:
        s.close()
    recs, err = parse_replies(bytes(buf))
    if err and closed and recs == [] and len(buf) == 0:
        err = None
    if err:
        return "bad", err
    if recs:
        return "answered", "%d replies" % len(recs)
    if closed:
        return "closed", ""
    return "hung", "no reply and not closed %.0fs after our shutdown(SHUT_WR)" % CLOSE_WAIT


def udp_cases(rng, port, export, n):
    """MOUNT calls over UDP: mutated; the server may answer or stay silent."""
    tally = collections.Counter()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(0.3)
    s.connect(("127.0.0.1", port))  # so that ICMP port unreachable shows
    bases = [
        N.build_call(0x2001, N.MOUNT_PROG, 3, N.MOUNTPROC3_MNT, N.Packer().string(export).bytes()),
        N.build_call(0x2002, N.MOUNT_PROG, 3, N.MOUNTPROC3_NULL),
        N.build_call(0x2003, N.MOUNT_PROG, 3, N.MOUNTPROC3_EXPORT),
        N.build_call(0x2004, N.MOUNT_PROG, 3, N.MOUNTPROC3_DUMP),
    ]
    # In batches: send 20 datagrams, then collect answers until quiet.
    for start in range(0, n, 20):
        for i in range(start, min(n, start + 20)):
            if i % 10 == 0:
                body = rng.randbytes(rng.randint(0, 1500))
            else:
                _, body = mutate_payload(rng, rng.choice(bases))
            try:
                s.send(body)
            except ConnectionRefusedError:
                tally["refused"] += 1
        while True:
            try:
                s.recv(65536)
                tally["answered"] += 1
            except socket.timeout:
                break
            except ConnectionRefusedError:
                tally["refused"] += 1
    s.close()
    return tally


def main():
    port, export = int(sys.argv[1]), sys.argv[2]
    ncases = int(sys.argv[3]) if len(sys.argv) > 3 else 1200
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else int(time.time())
    print("# seed %d, %d TCP cases" % (seed, ncases))
    rng = random.Random(seed)
    # MOUNT_PORT: for peers (ganesha) that serve MOUNT on another port.
    with N.Client("127.0.0.1", int(os.environ.get("MOUNT_PORT", port))) as m:
        root = m.mnt(export)
    with N.Client("127.0.0.1", port) as c:
        st, fh, _ = c.create(root, "g.dat", 0o644)
        check("setup: CREATE g.dat", st == N.NFS3_OK, "status %d" % st)
        c.write(fh, 0, b"x" * 10000, N.FILE_SYNC)
        # A file no mutated call targets (mutated WRITEs may grow g.dat to
        # terabytes at random offsets), to check data afterwards.
        keep_data = bytes(range(256)) * 40
        st, keep, _ = c.create(root, "keep.dat", 0o644)
        check("setup: CREATE keep.dat", st == N.NFS3_OK, "status %d" % st)
        c.write(keep, 0, keep_data, N.FILE_SYNC)
        st, ref = c.getattr(root)
    bases = base_calls(root, fh, export)
    cases = [make_case(rng, bases) for _ in range(ncases)]
    # Every base call unmutated first: these must be answered.
    cases = [("valid/" + n, N.record_mark(m)) for n, m in bases] + cases
    # Legal but unusual record marking (RFC 5531 section 11: a fragment
    # holds 0 to 2**31-1 bytes): these must be answered too.
    getattr_call = bases[1][1]
    cases += [
        ("valid/one-byte-fragments", N.frame(getattr_call, 1)),
        ("valid/zero-length-first-fragment", struct.pack(">I", 0) + N.record_mark(getattr_call)),
        ("valid/zero-length-last-fragment",
         struct.pack(">I", len(getattr_call)) + getattr_call + struct.pack(">I", 0x80000000)),
    ]

    tally = collections.Counter()
    by_kind = collections.defaultdict(collections.Counter)
    failures = []
    valid = {}
    lock = threading.Lock()

    def one(case):
        name, data = case
        outcome, detail = run_case(port, data)
        with lock:
            tally[outcome] += 1
            by_kind[name.split("/")[-1] if "/" in name else name][outcome] += 1
            if name.startswith("valid/"):
                valid[name] = (outcome, detail)
            elif outcome in ("hung", "bad"):
                failures.append((name, outcome, detail, data[:200].hex()))

    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=24) as ex:
        list(ex.map(one, cases))
    dt = time.monotonic() - t0
    print("# TCP: %d cases in %.1fs: %s" % (len(cases), dt, dict(tally)))
    for k in sorted(by_kind):
        print("#   framing %-14s %s" % (k, dict(by_kind[k])))
    for name, outcome, detail, hexdata in failures[:20]:
        print("# FAILED CASE %s: %s %s\n#   data: %s" % (name, outcome, detail, hexdata))
    check("every TCP case answered or closed (%d answered, %d closed)" % (tally["answered"], tally["closed"]),
          tally["hung"] == 0 and tally["bad"] == 0 and not failures,
          "%d hung, %d bad replies, %d failures" % (tally["hung"], tally["bad"], len(failures)))
    for name in sorted(valid):
        outcome, detail = valid[name]
        check("unmutated call answered: %s" % name[6:], outcome == "answered", "%s %s" % (outcome, detail))
    check("at least 1000 TCP cases sent", len(cases) >= 1000, str(len(cases)))

    ut = udp_cases(rng, port, export, 200)
    print("# UDP MOUNT: 200 datagrams: %s" % dict(ut))
    check("UDP: 200 datagrams sent (%d answered, %d refused)" % (ut["answered"], ut["refused"]),
          ut["answered"] <= 200)

    try:
        with N.Client("127.0.0.1", port, timeout=10) as c:
            c.null()
            check("NULL after garbage", True)
            st, attr = c.getattr(root)
            check("GETATTR of the root after garbage", st == N.NFS3_OK and attr["type"] == 2
                  and attr["fileid"] == ref["fileid"], "status %d" % st)
            data = c.read_all(keep)
            check("keep.dat reads back intact after garbage", data == keep_data, "%d bytes" % len(data))
            st, data, _ = c.read(fh, 0, 100)
            check("READ of g.dat after garbage", st == N.NFS3_OK and len(data) == 100, "status %d" % st)
    except (OSError, EOFError, N.RpcError, N.XdrError) as e:
        check("server answers after garbage", False, "%s: %s" % (type(e).__name__, e))
    sys.exit(1 if N.failures() else 0)


if __name__ == "__main__":
    main()
