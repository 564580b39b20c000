#!/usr/bin/env python3
"""N simultaneous TCP connections, each doing NULL and GETATTR of the root.

usage: connections.py PORT EXPORT [N]

All N connections are opened first and kept open; then every one sends a
NULL and a GETATTR (pipelined, one send) and all replies are collected with
a selector. Every reply must be correct. Prints ok/not ok lines.
"""

import os
import resource
import selectors
import socket
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
import nfsrpc as N  # noqa: E402
from nfsrpc import check  # noqa: E402


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = n + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard) if hard != resource.RLIM_INFINITY else want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Conn:
    def __init__(self, i):
        self.i = i
        self.sock = socket.socket()
        self.sock.setblocking(False)
        self.out = b""
        self.inbuf = bytearray()
        self.replies = []
        self.err = None


def connect_all(n, port, deadline):
    sel = selectors.DefaultSelector()
    conns = []
    for i in range(n):
        c = Conn(i)
        rc = c.sock.connect_ex(("127.0.0.1", port))
        if rc not in (0, 115):  # EINPROGRESS
            c.err = "connect: %s" % os.strerror(rc)
        else:
            sel.register(c.sock, selectors.EVENT_WRITE, c)
        conns.append(c)
    pending = sum(1 for c in conns if c.err is None)
    while pending and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            c = key.data
            rc = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if rc:
                c.err = "connect: %s" % os.strerror(rc)
            sel.unregister(c.sock)
            pending -= 1
    for c in conns:
        if c.err is None and c.sock.fileno() in sel.get_map():
            c.err = "connect timed out"
    sel.close()
    return conns


def exchange(conns, root, deadline):
    sel = selectors.DefaultSelector()
    cred = N.auth_sys()
    for c in conns:
        if c.err:
            continue
        xid = 0x10000 + 2 * c.i
        c.xids = (xid, xid + 1)
        c.out = (N.record_mark(N.build_call(xid, N.NFS_PROG, 3, N.NFSPROC3_NULL, b"", cred)) +
                 N.record_mark(N.build_call(xid + 1, N.NFS_PROG, 3, N.NFSPROC3_GETATTR,
                                            N.Packer().opaque(root).bytes(), cred)))
        sel.register(c.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
    active = len(sel.get_map())
    while active and time.monotonic() < deadline:
        for key, ev in sel.select(timeout=1):
            c = key.data
            try:
                if ev & selectors.EVENT_WRITE and c.out:
                    k = c.sock.send(c.out)
                    c.out = c.out[k:]
                    if not c.out:
                        sel.modify(c.sock, selectors.EVENT_READ, c)
                if ev & selectors.EVENT_READ:
                    chunk = c.sock.recv(65536)
                    if not chunk:
                        raise EOFError("closed by server after %d replies" % len(c.replies))
                    c.inbuf += chunk
                    c.replies += N.take_records(c.inbuf)
            except (OSError, EOFError, N.XdrError) as e:
                c.err = "%s: %s" % (type(e).__name__, e)
            if c.err or len(c.replies) >= 2:
                sel.unregister(c.sock)
                active -= 1
    for c in conns:
        if c.err is None and len(c.replies) < 2:
            c.err = "timed out with %d replies" % len(c.replies)
    sel.close()


def verify(c, ref):
    if c.err:
        return c.err
    by_xid = {N.reply_xid(r): r for r in c.replies}
    try:
        u = N.parse_reply(by_xid[c.xids[0]], c.xids[0])
        u.done()
        u = N.parse_reply(by_xid[c.xids[1]], c.xids[1])
        st = u.u32()
        if st != N.NFS3_OK:
            return "GETATTR status %d" % st
        a = N.parse_fattr3(u)
        if a["fileid"] != ref["fileid"] or a["type"] != 2:
            return "GETATTR attributes differ: %s" % a
    except KeyError as e:
        return "no reply for xid %s" % e
    except (N.RpcError, N.XdrError) as e:
        return "%s: %s" % (type(e).__name__, e)
    return None


def main():
    port, export = int(sys.argv[1]), sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    limit = raise_nofile(n)
    check("RLIMIT_NOFILE %d >= %d" % (limit, n + 64), limit >= n + 64)
    with N.Client("127.0.0.1", int(os.environ.get("MOUNT_PORT", port))) as m:
        root = m.mnt(export)
    with N.Client("127.0.0.1", port) as c:
        st, ref = c.getattr(root)
    t0 = time.monotonic()
    conns = connect_all(n, port, t0 + 60)
    nconn = sum(1 for c in conns if c.err is None)
    t1 = time.monotonic()
    check("%d connections open at once" % n, nconn == n, "%d connected" % nconn)
    exchange(conns, root, t1 + 90)
    t2 = time.monotonic()
    errors = {}
    good = 0
    for c in conns:
        e = verify(c, ref)
        if e:
            errors.setdefault(e, []).append(c.i)
        else:
            good += 1
    print("# connect %.1fs, NULL+GETATTR on all %.1fs; %d of %d served correctly" % (t1 - t0, t2 - t1, good, n))
    for e, ids in list(errors.items())[:10]:
        print("# %d connections: %s (e.g. #%d)" % (len(ids), e, ids[0]))
    check("all %d connections served NULL and GETATTR correctly" % n, good == n, "%d good" % good)
    for c in conns:
        c.sock.close()
    try:
        with N.Client("127.0.0.1", port) as c:
            c.null()
            st, a = c.getattr(root)
            check("server answers after the connections closed", st == N.NFS3_OK and a["fileid"] == ref["fileid"],
                  "status %d" % st)
    except (OSError, EOFError, N.RpcError, N.XdrError) as e:
        check("server answers after the connections closed", False, "%s: %s" % (type(e).__name__, e))
    sys.exit(1 if N.failures() else 0)


if __name__ == "__main__":
    main()
