#!/usr/bin/env python3
"""NLM v4 against a running snfsd, from raw RPC: what a lock manager client
sends, byte for byte, and what it must get back.

usage: nlm_cases.py PORT RW_EXPORT RO_EXPORT [--callbacks]
       nlm_cases.py PORT RW_EXPORT RO_EXPORT --restart-before
       nlm_cases.py PORT RW_EXPORT RO_EXPORT --restart-peer FILE
       nlm_cases.py PORT RW_EXPORT RO_EXPORT --restart-after FILE
       nlm_cases.py PORT RW_EXPORT RO_EXPORT --statd SM_DIR

The export directories must each hold a regular file "f". With
--callbacks this script also plays the client's side of NLM_GRANTED: a
portmapper on 127.0.0.1:111 (which snfsd asks for the client's lock
manager, the client being on 127.0.0.1) and a lock manager answering
GRANTED, to check that a blocked lock is granted when the bytes come free
and the client called back, that CANCEL and a refused call back release
it, that a client that cannot be called back gets the lock when it
asks again, and that the _MSG forms (macOS's) are answered by _RES
calls to that lock manager. The --restart-* steps check a restart: before it a client
takes a lock; during it this script's portmapper and status monitor
(--restart-peer, in the background) receive snfsd's SM_NOTIFY; after it
(run with a short lease) only reclaims are granted until the grace
period ends, and the reclaimed lock holds. --statd runs where snfsd is
registered with a real rpcbind and rpc.statd (t_nlm_statd.sh: loopback
carries 10.9.0.2-5 too): lock holders are put under rpc.statd's watch
(records in SM_DIR), and a holder's SM_NOTIFY to rpc.statd, relayed to
snfsd, drops that host's locks and only its. Prints ok / not ok lines;
exits with the number of failures.
"""
import os
import socket
import socketserver
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "interop"))
import nfsrpc as N  # noqa: E402

NLM_PROG, NLM_VERS = 100021, 4
TEST, LOCK, CANCEL, UNLOCK, GRANTED = 1, 2, 3, 4, 5
TEST_MSG, LOCK_MSG, CANCEL_MSG, UNLOCK_MSG, GRANTED_MSG = 6, 7, 8, 9, 10
TEST_RES, LOCK_RES, CANCEL_RES, UNLOCK_RES, GRANTED_RES = 11, 12, 13, 14, 15
SHARE, NM_LOCK, FREE_ALL = 20, 22, 23
(GRANTED_S, DENIED, DENIED_NOLOCKS, BLOCKED, DENIED_GRACE, DEADLCK, ROFS,
 STALE_FH, FBIG, FAILED) = range(10)
TO_END = 0  # l_len 0: to the end of the file and beyond


class Owner:
    """One lock owner: caller_name, svid and oh, as Linux makes them."""

    def __init__(self, host, svid):
        self.host, self.svid = host, svid
        self.oh = ("%d@%s" % (svid, host)).encode()


def lock_obj(p, who, fh, off, ln):
    p.string(who.host).opaque(fh).opaque(who.oh).i32(who.svid).u64(off).u64(ln)


class Nlm:
    def __init__(self, port, source=None):
        self.c = nsm_client(port, source) if source else N.Client("127.0.0.1", port)

    def _res(self, u, cookie):
        got = u.opaque(1024)
        if got != cookie:
            raise N.XdrError("cookie %r, sent %r" % (got, cookie))
        return u.u32()

    def test(self, who, fh, off, ln, excl=True, cookie=b"t"):
        p = N.Packer().opaque(cookie).bool(excl)
        lock_obj(p, who, fh, off, ln)
        u = self.c.call(NLM_PROG, NLM_VERS, TEST, p.bytes())
        st = self._res(u, cookie)
        holder = None
        if st == DENIED:
            holder = (u.bool(), u.i32(), u.opaque(1024), u.u64(), u.u64())
        u.done()
        return st, holder

    def lock(self, who, fh, off, ln, excl=True, block=False, reclaim=False,
             cookie=b"l", proc=LOCK):
        p = N.Packer().opaque(cookie).bool(block).bool(excl)
        lock_obj(p, who, fh, off, ln)
        p.bool(reclaim).i32(1)
        u = self.c.call(NLM_PROG, NLM_VERS, proc, p.bytes())
        st = self._res(u, cookie)
        u.done()
        return st

    def cancel(self, who, fh, off, ln, excl=True, cookie=b"c"):
        p = N.Packer().opaque(cookie).bool(True).bool(excl)
        lock_obj(p, who, fh, off, ln)
        u = self.c.call(NLM_PROG, NLM_VERS, CANCEL, p.bytes())
        st = self._res(u, cookie)
        u.done()
        return st

    def unlock(self, who, fh, off, ln, cookie=b"u"):
        p = N.Packer().opaque(cookie)
        lock_obj(p, who, fh, off, ln)
        u = self.c.call(NLM_PROG, NLM_VERS, UNLOCK, p.bytes())
        st = self._res(u, cookie)
        u.done()
        return st

    def free_all(self, name):
        self.c.call(NLM_PROG, NLM_VERS, FREE_ALL, N.Packer().string(name).i32(3).bytes()).done()

    def raw(self, proc, args):
        """accept_stat of a call (0 for success)."""
        try:
            self.c.call(NLM_PROG, NLM_VERS, proc, args)
            return N.SUCCESS
        except N.RpcError as e:
            return e.stat


NSM_PROG, SM_NOTIFY = 100024, 6


def nsm_client(port, source):
    """An RPC client whose calls come from another loopback address."""
    c = N.Client("127.0.0.1", port, connect=False)
    c.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.sock.settimeout(10)
    c.sock.bind((source, 0))
    c.sock.connect(("127.0.0.1", port))
    return c


def sm_notify(c, name, state):
    c.call(NSM_PROG, 1, SM_NOTIFY, N.Packer().string(name).i32(state).bytes()).done()


def handle_of(port, export, name):
    with N.Client("127.0.0.1", port) as c:
        root = c.mnt(export)
        st, fh, _ = c.lookup(root, name)
        if st != 0:
            raise N.RpcError("LOOKUP %s: %d" % (name, st), st)
        return fh


def basics(port, rw, ro):
    chk = N.check
    fh = handle_of(port, rw, "f")
    rofh = handle_of(port, ro, "f")
    a, b, c = Owner("hostA", 101), Owner("hostB", 202), Owner("hostC", 303)
    n = Nlm(port)

    chk("NULL answers", n.raw(0, b"") == N.SUCCESS)
    u = Nlm.__new__(Nlm)
    u.c = N.Client("127.0.0.1", port, proto="udp")
    chk("over UDP: LOCK granted", u.lock(a, fh, 500, 1) == GRANTED_S)
    chk("over UDP: TEST sees it", n.test(b, fh, 500, 1)[0] == DENIED)
    chk("over UDP: UNLOCK", u.unlock(a, fh, 500, 1) == GRANTED_S)
    u.c.close()
    chk("TEST of free bytes: GRANTED", n.test(a, fh, 0, 100) == (GRANTED_S, None))
    chk("LOCK write 0-99: GRANTED", n.lock(a, fh, 0, 100) == GRANTED_S)
    st, h = n.test(b, fh, 50, 100)
    chk("TEST by another owner over it: DENIED", st == DENIED, st)
    chk("... naming the holder (write, svid, oh, range)",
        h == (True, a.svid, a.oh, 0, 100), h)
    chk("non-blocking LOCK over it: DENIED", n.lock(b, fh, 50, 100) == DENIED)
    chk("LOCK next to it (100-199): GRANTED", n.lock(b, fh, 100, 100) == GRANTED_S)
    chk("the holder may TEST its own bytes: GRANTED", n.test(a, fh, 0, 100)[0] == GRANTED_S)
    chk("same LOCK again (a retransmission): GRANTED", n.lock(a, fh, 0, 100) == GRANTED_S)
    # The owner is (caller_name, svid, oh): the same svid from another host
    # is someone else.
    a2 = Owner("hostA2", a.svid)
    chk("same svid, other caller_name: DENIED", n.lock(a2, fh, 0, 1) == DENIED)

    # POSIX within one owner: an unlock in the middle splits the range.
    chk("UNLOCK 40-59 of 0-99: GRANTED", n.unlock(a, fh, 40, 20) == GRANTED_S)
    chk("bytes 45-54 now free", n.test(c, fh, 45, 10)[0] == GRANTED_S)
    st, h = n.test(c, fh, 10, 10)
    chk("bytes 10-19 still held", st == DENIED and h[3:] == (0, 40), h)
    st, h = n.test(c, fh, 70, 5)
    chk("bytes 70-74 still held", st == DENIED and h[3:] == (60, 40), h)
    chk("UNLOCK of bytes not held: GRANTED", n.unlock(c, fh, 0, 1000) == GRANTED_S)
    n.unlock(a, fh, 0, TO_END)
    n.unlock(b, fh, 0, TO_END)
    chk("after the UNLOCKs everything is free", n.test(c, fh, 0, TO_END)[0] == GRANTED_S)

    # Read locks share; a write lock conflicts with either.
    chk("read lock by A", n.lock(a, fh, 1000, 100, excl=False) == GRANTED_S)
    chk("read lock by B over it: GRANTED", n.lock(b, fh, 1050, 100, excl=False) == GRANTED_S)
    st, h = n.test(c, fh, 1090, 1)
    chk("write TEST over both: DENIED, a read holder", st == DENIED and h[0] is False, h)
    chk("read TEST over both: GRANTED", n.test(c, fh, 1090, 1, excl=False)[0] == GRANTED_S)
    chk("A upgrades part of its read lock where B is not: GRANTED",
        n.lock(a, fh, 1000, 50) == GRANTED_S)
    chk("A's upgrade where B reads: DENIED", n.lock(a, fh, 1000, 60) == DENIED)
    chk("B's read now conflicts with A's write at 1000-1049",
        n.test(b, fh, 1040, 5, excl=False)[0] == DENIED)
    n.unlock(a, fh, 0, TO_END)
    n.unlock(b, fh, 0, TO_END)

    # l_len 0 and ranges past the end of the offset space.
    chk("LOCK from 5000 to the end", n.lock(a, fh, 5000, TO_END) == GRANTED_S)
    st, h = n.test(b, fh, 1 << 62, 1)
    chk("a byte at 2^62 is held, length 0 reported", st == DENIED and h[3:] == (5000, 0), h)
    chk("LOCK running past 2^64 is to the end",
        n.lock(b, fh, 2, (1 << 64) - 1) == DENIED)
    n.unlock(a, fh, 0, TO_END)

    # FREE_ALL drops every lock of one caller_name, no one else's.
    n.lock(a, fh, 0, 10)
    n.lock(a, fh, 20, 10)
    n.lock(b, fh, 40, 10)
    n.free_all("hostA")
    chk("FREE_ALL hostA: its locks are gone", n.test(c, fh, 0, 30)[0] == GRANTED_S)
    chk("FREE_ALL hostA: hostB's lock stays", n.test(c, fh, 40, 1)[0] == DENIED)
    n.unlock(b, fh, 0, TO_END)
    # SM_NOTIFY: a restarted client names itself; its locks go, but only
    # when the notification comes from the address the locks came from.
    n.lock(a, fh, 0, 10)
    n.lock(b, fh, 40, 10)
    other = nsm_client(port, "127.0.0.2")
    sm_notify(other, "hostA", 3)
    chk("SM_NOTIFY for hostA from another address: its locks stay",
        n.test(c, fh, 0, 10)[0] == DENIED)
    other.close()
    sm_notify(n.c, "HOSTA", 5)
    chk("SM_NOTIFY for HOSTA (any case) from its address: its locks go",
        n.test(c, fh, 0, 10)[0] == GRANTED_S)
    chk("... not hostB's", n.test(c, fh, 40, 1)[0] == DENIED)
    try:
        n.c.call(NSM_PROG, 1, SM_NOTIFY, N.Packer().u32(5000).bytes())
        st = N.SUCCESS
    except N.RpcError as e:
        st = e.stat
    chk("SM_NOTIFY cut short: GARBAGE_ARGS", st == N.GARBAGE_ARGS, st)
    n.unlock(b, fh, 0, TO_END)
    chk("NM_LOCK (no monitoring) locks too", n.lock(a, fh, 0, 1, proc=NM_LOCK) == GRANTED_S)
    chk("... and conflicts", n.test(b, fh, 0, 1)[0] == DENIED)
    n.unlock(a, fh, 0, 1)

    # Handles, exports, arguments.
    bad = bytearray(fh)
    bad[-1] ^= 1
    chk("forged handle: STALE_FH", n.lock(a, bytes(bad), 0, 1) == STALE_FH)
    chk("handle of 3 bytes: STALE_FH", n.test(a, b"abc", 0, 1)[0] == STALE_FH)
    chk("write lock on a read-only export: ROFS", n.lock(a, rofh, 0, 1) == ROFS)
    chk("read lock on a read-only export: GRANTED", n.lock(a, rofh, 0, 1, excl=False) == GRANTED_S)
    chk("UNLOCK on a read-only export: GRANTED", n.unlock(a, rofh, 0, 1) == GRANTED_S)
    chk("CANCEL of nothing waiting: DENIED", n.cancel(a, fh, 0, 1) == DENIED)
    long_name = Owner("h" * 1025, 1)
    p = N.Packer().opaque(b"x").bool(True)
    lock_obj(p, long_name, fh, 0, 1)
    chk("caller_name over 1024 bytes: GARBAGE_ARGS", n.raw(TEST, p.bytes()) == N.GARBAGE_ARGS)
    p = N.Packer().opaque(b"x").bool(False).bool(True)
    lock_obj(p, a, fh, 0, 1)
    chk("LOCK args cut short: GARBAGE_ARGS", n.raw(LOCK, p.bytes()) == N.GARBAGE_ARGS)
    chk("oh over 1024 bytes: GARBAGE_ARGS",
        n.raw(UNLOCK, N.Packer().opaque(b"").string("h").opaque(fh).opaque(b"o" * 1025)
              .i32(1).u64(0).u64(1).bytes()) == N.GARBAGE_ARGS)
    chk("LOCK_MSG with no arguments: GARBAGE_ARGS", n.raw(LOCK_MSG, b"") == N.GARBAGE_ARGS)
    chk("SHARE: PROC_UNAVAIL", n.raw(SHARE, b"") == N.PROC_UNAVAIL)
    chk("a procedure past the table: PROC_UNAVAIL", n.raw(99, b"") == N.PROC_UNAVAIL)
    chk("the server still answers after all that", n.test(a, fh, 0, 1)[0] == GRANTED_S)
    # Many owners and waiting requests stay bounded; the server survives.
    for i in range(300):
        n.lock(Owner("many", i), fh, 10000 + i, 1)
    chk("300 owners hold a byte each", n.test(c, fh, 10000, 300)[0] == DENIED)
    n.free_all("many")
    chk("FREE_ALL frees all 300", n.test(c, fh, 10000, 300)[0] == GRANTED_S)


# ---- the client's side of call backs ----

def reply(xid, results):
    return N.Packer().u32(xid).u32(N.REPLY).u32(N.MSG_ACCEPTED).u32(0).opaque(b"") \
        .u32(N.SUCCESS).raw(results).bytes()


class Peer:
    """What snfsd finds when it calls the client back: a portmapper naming
    (or not) a lock manager, which records the GRANTED calls and answers
    with self.answer."""

    def __init__(self):
        self.granted = []
        self.res = []
        self.answer = GRANTED_S
        self.nlm_registered = True
        self.log = None
        self.cond = threading.Condition()
        peer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                try:
                    while True:
                        data = N.recv_record(self.request)
                        out = peer.serve(data)
                        if out is not None:
                            self.request.sendall(N.frame(out))
                except (OSError, N.XdrError, ConnectionError, EOFError):
                    pass

        class Srv(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True

        self.lockd = Srv(("127.0.0.1", 0), Handler)
        self.pmap = Srv(("127.0.0.1", 111), Handler)
        for s in (self.lockd, self.pmap):
            threading.Thread(target=s.serve_forever, daemon=True).start()

    def close(self):
        for s in (self.lockd, self.pmap):
            s.shutdown()
            s.server_close()

    def serve(self, data):
        u = N.Unpacker(data)
        xid, _, _, prog, vers, proc = (u.u32() for _ in range(6))
        u.u32()
        u.opaque(400)
        u.u32()
        u.opaque(400)
        if prog == N.PMAP_PROG and proc == 3:
            p, v, prot = u.u32(), u.u32(), u.u32()
            port = self.lockd.server_address[1] if (
                (self.nlm_registered and (p, v, prot) == (NLM_PROG, NLM_VERS, 6))
                or (p, v, prot) == (NSM_PROG, 1, 6)) else 0
            return reply(xid, N.Packer().u32(port).bytes())
        if prog == NLM_PROG and proc == 0:
            return reply(xid, b"")
        if prog == NSM_PROG and proc == SM_NOTIFY and vers == 1:
            g = ("notify", u.string(1024), u.i32())
            with self.cond:
                self.granted.append(g)
                self.cond.notify_all()
            if self.log:
                with open(self.log, "a") as f:
                    f.write("%s %d\n" % g[1:])
            return reply(xid, b"")
        if prog == NLM_PROG and proc == GRANTED:
            cookie = u.opaque(1024)
            excl = u.bool()
            g = (cookie, excl, u.string(1024), u.opaque(1024), u.opaque(1024), u.i32(),
                 u.u64(), u.u64())
            with self.cond:
                self.granted.append(g)
                self.cond.notify_all()
            return reply(xid, N.Packer().opaque(cookie).u32(self.answer).bytes())
        if prog == NLM_PROG and TEST_RES <= proc <= UNLOCK_RES:
            r = (proc, u.opaque(1024), u.u32())
            if proc == TEST_RES and r[2] == DENIED:
                r += ((u.bool(), u.i32(), u.opaque(1024), u.u64(), u.u64()),)
            with self.cond:
                self.res.append(r)
                self.cond.notify_all()
        return reply(xid, b"")

    def wait_res(self, cookie, timeout=10.0):
        """The _RES call answering the message sent with cookie."""
        end = time.time() + timeout
        with self.cond:
            while time.time() < end:
                for r in self.res:
                    if r[1] == cookie:
                        return r
                self.cond.wait(0.2)
        return None

    def wait_granted(self, n, timeout=10.0):
        end = time.time() + timeout
        with self.cond:
            while len(self.granted) < n and time.time() < end:
                self.cond.wait(0.2)
            return len(self.granted) >= n


NSM_NOTIFY_RELAY = 16


def eq(name, got, want):
    return N.check(name, got == want, "got %r, want %r" % (got, want))


def statd(port, rw, smdir):
    fh = handle_of(port, rw, "f")
    a, a2, b = Owner("clientA", 1), Owner("clientA-alias", 2), Owner("clientB", 1)
    c = Owner("clientC", 1)
    na, nb = Nlm(port, "10.9.0.2"), Nlm(port, "10.9.0.3")
    nc = Nlm(port)
    eq("statd: host A locks 0-9", na.lock(a, fh, 0, 10), GRANTED_S)
    eq("statd: host A under another caller_name locks 20-29",
               na.lock(a2, fh, 20, 10), GRANTED_S)
    eq("statd: host B locks 40-49", nb.lock(b, fh, 40, 10), GRANTED_S)
    eq("statd: NM_LOCK (unmonitored) from host E locks 60-69",
               Nlm(port, "10.9.0.5").lock(Owner("clientE", 1), fh, 60, 10, proc=NM_LOCK),
               GRANTED_S)
    watched = lambda: sorted(n for n in os.listdir(smdir) if n.startswith("10.9.0."))
    N.check("statd: rpc.statd watches hosts A and B (its records)",
            poll(watched, ["10.9.0.2", "10.9.0.3"]), watched())
    time.sleep(0.5)
    eq("statd: ... and not E, whose lock was NM_LOCK", watched(), ["10.9.0.2", "10.9.0.3"])

    with N.Client("127.0.0.1", 111) as pm:
        sport = pm.pmap_getport(NSM_PROG, 1)
    N.check("statd: rpc.statd is registered, not snfsd", sport not in (0, port), sport)

    def held(off):
        st = nc.lock(c, fh, off, 10)
        if st == GRANTED_S:
            nc.unlock(c, fh, off, 10)
        return st

    # Another host restarting frees nothing of A's or B's.
    sm_notify(nsm_client(sport, "10.9.0.4"), "clientD", 7)
    time.sleep(1.0)
    eq("statd: host D's restart leaves A's lock", held(0), DENIED)
    # A forged relay: loopback but no reserved port.
    forged = N.Packer().string("10.9.0.2").i32(9).fixed(b"\0" * 16).bytes()
    eq("statd: a relay from an unreserved port is refused (SYSTEM_ERR)",
               nc.raw(NSM_NOTIFY_RELAY, forged), N.SYSTEM_ERR)
    eq("statd: ... and A's lock stays", held(0), DENIED)
    eq("statd: a relay cut short is GARBAGE_ARGS",
               nc.raw(NSM_NOTIFY_RELAY, N.Packer().string("10.9.0.2").bytes()), N.GARBAGE_ARGS)
    # Host A restarts: its statd tells ours, under a name of its own
    # (rpc.statd matches it by the sender's address).
    t0 = time.monotonic()
    sm_notify(nsm_client(sport, "10.9.0.2"), "clientA.example", 3)
    N.check("statd: relayed by rpc.statd, A's restart frees its lock",
            poll(lambda: held(0), GRANTED_S))
    N.info("statd: from SM_NOTIFY to the lock granted to another: %.3f s"
           % (time.monotonic() - t0))
    eq("statd: ... and the one under its other caller_name", held(20), GRANTED_S)
    eq("statd: ... but not host B's", held(40), DENIED)
    eq("statd: host A locks again after its restart", na.lock(a, fh, 0, 10), GRANTED_S)
    eq("statd: ... and unlocks", na.unlock(a, fh, 0, 10), GRANTED_S)
    eq("statd: host B unlocks", nb.unlock(b, fh, 40, 10), GRANTED_S)


def poll(fn, want, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if fn() == want:
            return True
        time.sleep(0.1)
    return fn() == want


def callbacks(port, rw):
    chk = N.check
    fh = handle_of(port, rw, "f")
    a, b, c = Owner("hostA", 1), Owner("hostB", 2), Owner("hostC", 3)
    n = Nlm(port)
    try:
        peer = Peer()
    except OSError as e:
        chk("a fake portmapper on 127.0.0.1:111 (%s)" % e, False)
        return
    try:
        n.lock(a, fh, 0, 10)
        chk("blocking LOCK over a held lock: BLOCKED",
            n.lock(b, fh, 0, 10, block=True, cookie=b"wait-b") == BLOCKED)
        chk("asked again while waiting: still BLOCKED",
            n.lock(b, fh, 0, 10, block=True, cookie=b"wait-b") == BLOCKED)
        chk("no call back while the holder holds", not peer.wait_granted(1, 1.0))
        n.unlock(a, fh, 0, 10)
        chk("the holder's UNLOCK grants it: GRANTED called back", peer.wait_granted(1))
        g = peer.granted[0] if peer.granted else None
        chk("the call back echoes the blocked request (cookie, write, caller, fh, oh, svid, range)",
            g == (b"wait-b", True, "hostB", fh, b.oh, b.svid, 0, 10), g)
        st, h = n.test(c, fh, 0, 10)
        chk("... and B now holds the bytes", st == DENIED and h[1] == b.svid, h)
        chk("one waiting request made one call back", not peer.wait_granted(2, 1.0))
        n.unlock(b, fh, 0, 10)

        # CANCEL withdraws a waiting request: nothing granted later.
        n.lock(a, fh, 0, 10)
        n.lock(b, fh, 0, 10, block=True)
        chk("CANCEL of a waiting request: GRANTED", n.cancel(b, fh, 0, 10) == GRANTED_S)
        n.unlock(a, fh, 0, 10)
        chk("a cancelled request is not called back", not peer.wait_granted(2, 1.5))
        chk("... nor granted", n.test(c, fh, 0, 10)[0] == GRANTED_S)

        # Read waiters behind a writer all get in when it goes.
        n.lock(a, fh, 0, 10)
        n.lock(b, fh, 0, 10, excl=False, block=True)
        n.lock(c, fh, 5, 10, excl=False, block=True)
        n.unlock(a, fh, 0, 10)
        chk("two read waiters are both granted", peer.wait_granted(3))
        chk("... and hold together", n.test(a, fh, 0, 15)[0] == DENIED
            and n.test(a, fh, 0, 15, excl=False)[0] == GRANTED_S)
        n.unlock(b, fh, 0, TO_END)
        n.unlock(c, fh, 0, TO_END)

        # A client that answers DENIED to the call back no longer wants it.
        peer.answer = DENIED
        n.lock(a, fh, 0, 10)
        n.lock(b, fh, 0, 10, block=True)
        n.unlock(a, fh, 0, 10)
        chk("call back refused ...", peer.wait_granted(4))
        chk("... and the lock released", poll(lambda: n.test(c, fh, 0, 10)[0], GRANTED_S))
        peer.answer = GRANTED_S

        # A client that cannot be called back gets it when it asks again.
        peer.nlm_registered = False
        n.lock(a, fh, 0, 10)
        n.lock(b, fh, 0, 10, block=True)
        n.unlock(a, fh, 0, 10)
        chk("no lock manager to call: the bytes still go to the waiter",
            poll(lambda: n.test(c, fh, 0, 10)[0], DENIED))
        chk("... who gets GRANTED when it asks again", n.lock(b, fh, 0, 10, block=True) == GRANTED_S)
        n.unlock(b, fh, 0, 10)

        # A granted lock whose client cancels before hearing of it is
        # released (the client believes it never got it).
        n.lock(a, fh, 0, 10)
        n.lock(b, fh, 0, 10, block=True)
        n.unlock(a, fh, 0, 10)
        poll(lambda: n.test(c, fh, 0, 10)[0], DENIED)
        chk("CANCEL of a request granted but not heard of: GRANTED",
            n.cancel(b, fh, 0, 10) == GRANTED_S)
        chk("... and its lock released", n.test(c, fh, 0, 10)[0] == GRANTED_S)
        messages(port, fh, n, peer)
    finally:
        peer.close()


def messages(port, fh, n, peer):
    """The _MSG forms, as macOS's rpc.lockd sends them (over UDP, no
    answer awaited): each answered by a _RES call to the caller's lock
    manager (found through the portmapper this script plays)."""
    chk = N.check
    a, d = Owner("hostA", 1), Owner("hostD", 4)
    m = N.Client("127.0.0.1", port, proto="udp")
    peer.nlm_registered = True

    def msg(proc, who, off, ln, cookie, excl=True, block=False):
        p = N.Packer().opaque(cookie)
        if proc in (LOCK_MSG, CANCEL_MSG):
            p.bool(block)
        if proc != UNLOCK_MSG:
            p.bool(excl)
        lock_obj(p, who, fh, off, ln)
        if proc == LOCK_MSG:
            p.bool(False).i32(1)
        m.call(NLM_PROG, NLM_VERS, proc, p.bytes()).done()  # void reply
        return peer.wait_res(cookie)

    r = msg(TEST_MSG, d, 200, 10, b"m-test-1")
    chk("TEST_MSG of free bytes: TEST_RES GRANTED", r == (TEST_RES, b"m-test-1", GRANTED_S), r)
    r = msg(LOCK_MSG, d, 200, 10, b"m-lock-1")
    chk("LOCK_MSG: LOCK_RES GRANTED", r == (LOCK_RES, b"m-lock-1", GRANTED_S), r)
    chk("... and the lock is held", n.test(a, fh, 200, 10)[0] == DENIED)
    r = msg(TEST_MSG, a, 205, 1, b"m-test-2")
    chk("TEST_MSG over it: TEST_RES DENIED naming the holder",
        r == (TEST_RES, b"m-test-2", DENIED, (True, d.svid, d.oh, 200, 10)), r)
    r = msg(LOCK_MSG, a, 200, 10, b"m-lock-2", block=True)
    chk("blocking LOCK_MSG over it: LOCK_RES BLOCKED", r == (LOCK_RES, b"m-lock-2", BLOCKED), r)
    before = len(peer.granted)
    r = msg(UNLOCK_MSG, d, 200, 10, b"m-unlock-1")
    chk("UNLOCK_MSG: UNLOCK_RES GRANTED", r == (UNLOCK_RES, b"m-unlock-1", GRANTED_S), r)
    chk("... and the waiter is called back (GRANTED)", peer.wait_granted(before + 1))
    r = msg(LOCK_MSG, d, 200, 10, b"m-lock-3", block=True)
    chk("LOCK_MSG behind the new holder: BLOCKED", r == (LOCK_RES, b"m-lock-3", BLOCKED), r)
    r = msg(CANCEL_MSG, d, 200, 10, b"m-cancel-1")
    chk("CANCEL_MSG: CANCEL_RES GRANTED", r == (CANCEL_RES, b"m-cancel-1", GRANTED_S), r)
    n.unlock(a, fh, 200, 10)
    chk("... and nothing is granted to the cancelled request",
        not peer.wait_granted(before + 2, 1.0) and n.test(a, fh, 200, 10)[0] == GRANTED_S)
    bad = N.Packer().opaque(b"m-bad").bool(False).bool(True).string("hostD").bytes()
    try:
        m.call(NLM_PROG, NLM_VERS, LOCK_MSG, bad)
        st = N.SUCCESS
    except N.RpcError as e:
        st = e.stat
    chk("a LOCK_MSG cut short: GARBAGE_ARGS", st == N.GARBAGE_ARGS, st)
    chk("... and no answer is sent", peer.wait_res(b"m-bad", 1.0) is None)
    for proc in (GRANTED_MSG, TEST_RES, LOCK_RES, CANCEL_RES, UNLOCK_RES, GRANTED_RES):
        try:
            m.call(NLM_PROG, NLM_VERS, proc, N.Packer().opaque(b"x").u32(0).bytes()).done()
            st = N.SUCCESS
        except N.RpcError as e:
            st = e.stat
        chk("procedure %d (a client's to receive) is taken and dropped" % proc, st == N.SUCCESS, st)
    m.close()


def restart_before(port, rw):
    fh = handle_of(port, rw, "f")
    n = Nlm(port)
    N.check("before the restart: A locks bytes 0-9", n.lock(Owner("hostA", 1), fh, 0, 10) == GRANTED_S)


def restart_peer(log):
    """Play the client host's portmapper and statd until killed."""
    peer = Peer()
    peer.log = log
    open(log + ".ready", "w").close()
    time.sleep(120)
    peer.close()


def restart_after(port, rw, log):
    chk = N.check
    fh = handle_of(port, rw, "f")
    a, c = Owner("hostA", 1), Owner("hostC", 3)
    n = Nlm(port)
    end = time.time() + 15
    lines = []
    while time.time() < end and not lines:
        try:
            lines = open(log).read().split()
        except OSError:
            pass
        time.sleep(0.1)
    chk("the restarted server sent SM_NOTIFY to the client host's statd", len(lines) == 2, lines)
    if len(lines) == 2:
        chk("... naming itself by the address the client called (127.0.0.1)",
            lines[0] == "127.0.0.1", lines)
        chk("... with an odd (up) state number", int(lines[1]) % 2 == 1, lines)
    chk("in grace: a new LOCK waits (DENIED_GRACE_PERIOD)",
        n.lock(c, fh, 0, 10) == DENIED_GRACE)
    chk("in grace: TEST too", n.test(c, fh, 100, 10)[0] == DENIED_GRACE)
    chk("in grace: A reclaims its lock: GRANTED", n.lock(a, fh, 0, 10, reclaim=True) == GRANTED_S)
    ok = poll(lambda: n.lock(c, fh, 100, 10), GRANTED_S, timeout=20)
    chk("after grace new locks are granted again", ok)
    chk("... but not over the reclaimed lock", n.lock(c, fh, 0, 10) == DENIED)
    chk("a reclaim after grace: DENIED_GRACE_PERIOD",
        n.lock(c, fh, 200, 10, reclaim=True) == DENIED_GRACE)
    n.unlock(a, fh, 0, TO_END)
    n.unlock(c, fh, 0, TO_END)


def main():
    port, rw, ro = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    if "--restart-before" in sys.argv:
        restart_before(port, rw)
    elif "--restart-peer" in sys.argv:
        restart_peer(sys.argv[-1])
    elif "--restart-after" in sys.argv:
        restart_after(port, rw, sys.argv[-1])
    elif "--statd" in sys.argv:
        statd(port, rw, sys.argv[-1])
    elif "--callbacks" in sys.argv:
        callbacks(port, rw)
    else:
        basics(port, rw, ro)
    return N.failures()


if __name__ == "__main__":
    sys.exit(main())
