"""A small ONC RPC / portmap / MOUNT v3 / NFSv3 client for tests (stdlib only).

RFC 5531 (RPC, record marking in section 11), RFC 1833 (portmap),
RFC 1813 (NFSv3 and MOUNT v3). Only what the interop and stress suites need:

    c = Client("127.0.0.1", port)
    root = c.mnt("/export/path")
    st, fh, attr = c.create(root, "f")
    st, count, committed, verf = c.write(fh, 0, b"data", UNSTABLE)

Every NFS procedure returns the NFS status first; attributes come back as a
dict (see parse_fattr3). build_call() gives the raw bytes of a call so that
fuzzers can mutate them; send_raw()/recv_record() speak record marking and
take_records() splits records out of a non-blocking socket's buffer.

The test scripts print their results with check() and info() and exit with
failures() != 0 (see "test output" at the end).
"""

import os
import socket
import struct
import time

# programs
PMAP_PROG, MOUNT_PROG, NFS_PROG = 100000, 100005, 100003
# message types, reply and accept states
CALL, REPLY = 0, 1
MSG_ACCEPTED, MSG_DENIED = 0, 1
SUCCESS, PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL, GARBAGE_ARGS, SYSTEM_ERR = range(6)
AUTH_NONE, AUTH_SYS = 0, 1
# NFSv3 procedures (RFC 1813 section 3.3)
(NFSPROC3_NULL, NFSPROC3_GETATTR, NFSPROC3_SETATTR, NFSPROC3_LOOKUP,
 NFSPROC3_ACCESS, NFSPROC3_READLINK, NFSPROC3_READ, NFSPROC3_WRITE,
 NFSPROC3_CREATE, NFSPROC3_MKDIR, NFSPROC3_SYMLINK, NFSPROC3_MKNOD,
 NFSPROC3_REMOVE, NFSPROC3_RMDIR, NFSPROC3_RENAME, NFSPROC3_LINK,
 NFSPROC3_READDIR, NFSPROC3_READDIRPLUS, NFSPROC3_FSSTAT, NFSPROC3_FSINFO,
 NFSPROC3_PATHCONF, NFSPROC3_COMMIT) = range(22)
# MOUNT v3 procedures
MOUNTPROC3_NULL, MOUNTPROC3_MNT, MOUNTPROC3_DUMP, MOUNTPROC3_UMNT, \
    MOUNTPROC3_UMNTALL, MOUNTPROC3_EXPORT = range(6)
# stable_how
UNSTABLE, DATA_SYNC, FILE_SYNC = 0, 1, 2
# createmode3
UNCHECKED, GUARDED, EXCLUSIVE = 0, 1, 2
# nfsstat3 values used by the tests
NFS3_OK = 0
NFS3ERR_PERM, NFS3ERR_NOENT, NFS3ERR_IO = 1, 2, 5
NFS3ERR_ACCES, NFS3ERR_EXIST, NFS3ERR_NOTDIR, NFS3ERR_ISDIR = 13, 17, 20, 21
NFS3ERR_INVAL, NFS3ERR_STALE, NFS3ERR_BADHANDLE = 22, 70, 10001
IPPROTO_TCP, IPPROTO_UDP = 6, 17

MAX_RECORD = 64 << 20


class RpcError(Exception):
    """The server refused a call (denied or accept_stat != SUCCESS)."""

    def __init__(self, msg, stat=None):
        super().__init__(msg)
        self.stat = stat


class XdrError(Exception):
    pass


class Packer:
    """XDR encoder (RFC 4506): big-endian, 4-byte aligned."""

    def __init__(self):
        self.parts = []

    def u32(self, v):
        self.parts.append(struct.pack(">I", v & 0xFFFFFFFF))
        return self

    def i32(self, v):
        self.parts.append(struct.pack(">i", v))
        return self

    def u64(self, v):
        self.parts.append(struct.pack(">Q", v & 0xFFFFFFFFFFFFFFFF))
        return self

    def bool(self, v):
        return self.u32(1 if v else 0)

    def fixed(self, b):
        self.parts.append(bytes(b) + b"\0" * ((4 - len(b) % 4) % 4))
        return self

    def opaque(self, b):
        self.u32(len(b))
        return self.fixed(b)

    def string(self, s):
        return self.opaque(s.encode() if isinstance(s, str) else s)

    def raw(self, b):
        self.parts.append(bytes(b))
        return self

    def bytes(self):
        return b"".join(self.parts)


class Unpacker:
    """XDR decoder; every read is bounds-checked (XdrError when short)."""

    def __init__(self, data, pos=0):
        self.data = data
        self.pos = pos

    def _take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise XdrError("short XDR data at %d (+%d of %d)" % (self.pos, n, len(self.data)))
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def u32(self):
        return struct.unpack(">I", self._take(4))[0]

    def i32(self):
        return struct.unpack(">i", self._take(4))[0]

    def u64(self):
        return struct.unpack(">Q", self._take(8))[0]

    def bool(self):
        v = self.u32()
        if v > 1:
            raise XdrError("bad bool %d" % v)
        return v == 1

    def fixed(self, n):
        b = self._take(n)
        self._take((4 - n % 4) % 4)
        return b

    def opaque(self, limit=None):
        n = self.u32()
        if limit is not None and n > limit:
            raise XdrError("opaque of %d > %d" % (n, limit))
        return self.fixed(n)

    def string(self, limit=None):
        return self.opaque(limit).decode("utf-8", "surrogateescape")

    def remaining(self):
        return len(self.data) - self.pos

    def done(self):
        if self.pos != len(self.data):
            raise XdrError("%d trailing bytes" % (len(self.data) - self.pos))


# ---- record marking (RFC 5531 section 11) ----

def record_mark(payload, last=True):
    return struct.pack(">I", (0x80000000 if last else 0) | len(payload)) + payload


def frame(payload, fragsize=None):
    """One record, optionally split into fragments of fragsize bytes."""
    if not fragsize or len(payload) <= fragsize:
        return record_mark(payload)
    out = []
    for i in range(0, len(payload), fragsize):
        chunk = payload[i:i + fragsize]
        out.append(record_mark(chunk, i + fragsize >= len(payload)))
    return b"".join(out)


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return bytes(buf)


def recv_record(sock):
    """Read one whole record (all fragments). EOFError if the peer closes."""
    out = []
    total = 0
    while True:
        hdr = struct.unpack(">I", recv_exact(sock, 4))[0]
        n = hdr & 0x7FFFFFFF
        total += n
        if total > MAX_RECORD:
            raise XdrError("reply record too large (%d)" % total)
        out.append(recv_exact(sock, n))
        if hdr & 0x80000000:
            return b"".join(out)


def take_records(buf):
    """Remove the complete records (all fragments in) at the front of buf, a
    bytearray filled from a socket, and return them; an incomplete one stays
    in buf for more bytes."""
    recs, frags, pos, used = [], [], 0, 0
    while pos + 4 <= len(buf):
        hdr = struct.unpack_from(">I", buf, pos)[0]
        n = hdr & 0x7FFFFFFF
        if pos + 4 + n > len(buf):
            break
        frags.append(bytes(buf[pos + 4:pos + 4 + n]))
        pos += 4 + n
        if hdr & 0x80000000:
            recs.append(b"".join(frags))
            frags, used = [], pos
    del buf[:used]
    return recs


# ---- call and reply ----

def auth_sys(uid=0, gid=0, gids=(), machine="snfs-test", stamp=0):
    p = Packer().u32(stamp).string(machine).u32(uid).u32(gid).u32(len(gids))
    for g in gids:
        p.u32(g)
    return (AUTH_SYS, p.bytes())


AUTH_NULL = (AUTH_NONE, b"")


def build_call(xid, prog, vers, proc, args=b"", cred=None, verf=AUTH_NULL, rpcvers=2):
    """The bytes of one RPC call message (no record mark)."""
    if cred is None:
        cred = auth_sys()
    p = Packer().u32(xid).u32(CALL).u32(rpcvers).u32(prog).u32(vers).u32(proc)
    p.u32(cred[0]).opaque(cred[1]).u32(verf[0]).opaque(verf[1])
    return p.bytes() + args


def parse_reply(data, xid=None):
    """Return an Unpacker positioned at the results of an accepted,
    successful reply; RpcError otherwise."""
    u = Unpacker(data)
    rxid = u.u32()
    if xid is not None and rxid != xid:
        raise XdrError("xid mismatch: %#x != %#x" % (rxid, xid))
    if u.u32() != REPLY:
        raise XdrError("not a reply")
    rstat = u.u32()
    if rstat == MSG_DENIED:
        why = u.u32()
        if why == 0:
            lo, hi = u.u32(), u.u32()
            raise RpcError("RPC_MISMATCH %d-%d" % (lo, hi), ("denied", why))
        raise RpcError("AUTH_ERROR %d" % u.u32(), ("auth", why))
    if rstat != MSG_ACCEPTED:
        raise XdrError("bad reply_stat %d" % rstat)
    u.u32()  # verifier flavor
    u.opaque(400)
    astat = u.u32()
    if astat == PROG_MISMATCH:
        lo, hi = u.u32(), u.u32()
        raise RpcError("PROG_MISMATCH %d-%d" % (lo, hi), astat)
    if astat != SUCCESS:
        raise RpcError("accept_stat %d" % astat, astat)
    return u


def reply_xid(data):
    return struct.unpack(">I", data[:4])[0] if len(data) >= 4 else None


# ---- NFSv3 data types ----

def parse_fattr3(u):
    a = {}
    a["type"], a["mode"], a["nlink"], a["uid"], a["gid"] = (u.u32() for _ in range(5))
    a["size"], a["used"] = u.u64(), u.u64()
    a["rdev"] = (u.u32(), u.u32())
    a["fsid"], a["fileid"] = u.u64(), u.u64()
    a["atime"] = (u.u32(), u.u32())
    a["mtime"] = (u.u32(), u.u32())
    a["ctime"] = (u.u32(), u.u32())
    return a


def parse_post_op_attr(u):
    return parse_fattr3(u) if u.bool() else None


def skip_pre_op_attr(u):
    if u.bool():
        u.u64()
        u.u64()
        u.u64()


def parse_wcc(u):
    skip_pre_op_attr(u)
    return parse_post_op_attr(u)


def parse_post_op_fh(u):
    return u.opaque(64) if u.bool() else None


def sattr3(mode=None, uid=None, gid=None, size=None, atime=None, mtime=None):
    """atime/mtime: None (don't change), "server" or (sec, nsec)."""
    p = Packer()
    for v in (mode, uid, gid):
        p.bool(v is not None)
        if v is not None:
            p.u32(v)
    p.bool(size is not None)
    if size is not None:
        p.u64(size)
    for t in (atime, mtime):
        if t is None:
            p.u32(0)
        elif t == "server":
            p.u32(1)
        else:
            p.u32(2).u32(t[0]).u32(t[1])
    return p.bytes()


# ---- the client ----

class Client:
    """One TCP (or UDP) connection to an RPC server."""

    def __init__(self, host="127.0.0.1", port=2049, proto="tcp", timeout=10.0,
                 cred=None, connect=True):
        self.host, self.port, self.proto = host, port, proto
        self.timeout = timeout
        self.cred = cred if cred is not None else auth_sys()
        self.xid = (os.getpid() << 16 ^ int(time.time() * 1000)) & 0x7FFFFFFF
        self.sock = None
        if connect:
            self.connect()

    def connect(self):
        self.close()
        if self.proto == "tcp":
            self.sock = socket.create_connection((self.host, self.port), self.timeout)
        else:
            fam = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            self.sock = socket.socket(fam, socket.SOCK_DGRAM)
            self.sock.settimeout(self.timeout)
            self.sock.connect((self.host, self.port))

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def next_xid(self):
        self.xid = (self.xid + 1) & 0xFFFFFFFF
        return self.xid

    def send_raw(self, data):
        """Send bytes as they are (the caller does the record marking)."""
        if self.proto == "tcp":
            self.sock.sendall(data)
        else:
            self.sock.send(data)

    def recv(self):
        if self.proto == "tcp":
            return recv_record(self.sock)
        return self.sock.recv(65536)

    def call(self, prog, vers, proc, args=b"", cred=None, fragsize=None):
        """Send one call and return an Unpacker on its results."""
        xid = self.next_xid()
        msg = build_call(xid, prog, vers, proc, args, cred or self.cred)
        self.send_raw(frame(msg, fragsize) if self.proto == "tcp" else msg)
        while True:
            data = self.recv()
            if reply_xid(data) == xid:
                return parse_reply(data, xid)

    # -- portmap v2 (RFC 1833 section 3) --
    def pmap_getport(self, prog, vers, prot=IPPROTO_TCP):
        u = self.call(PMAP_PROG, 2, 3, Packer().u32(prog).u32(vers).u32(prot).u32(0).bytes())
        return u.u32()

    def pmap_dump(self):
        u = self.call(PMAP_PROG, 2, 4)
        out = []
        while u.bool():
            out.append((u.u32(), u.u32(), u.u32(), u.u32()))
        return out

    # -- MOUNT v3 --
    def mnt_null(self):
        self.call(MOUNT_PROG, 3, MOUNTPROC3_NULL).done()

    def mnt_raw(self, path):
        """(status, fh or None, auth flavors)."""
        u = self.call(MOUNT_PROG, 3, MOUNTPROC3_MNT, Packer().string(path).bytes())
        st = u.u32()
        if st != 0:
            return st, None, []
        fh = u.opaque(64)
        flavors = [u.u32() for _ in range(u.u32())]
        return st, fh, flavors

    def mnt(self, path):
        st, fh, _ = self.mnt_raw(path)
        if st != 0:
            raise RpcError("MNT %s: status %d" % (path, st), st)
        return fh

    def mnt_dump(self):
        """The server's mount list: [(hostname, directory)]."""
        u = self.call(MOUNT_PROG, 3, MOUNTPROC3_DUMP)
        out = []
        while u.bool():
            out.append((u.string(255), u.string(1024)))
        return out

    def umnt(self, path):
        self.call(MOUNT_PROG, 3, MOUNTPROC3_UMNT, Packer().string(path).bytes())

    def mnt_export(self):
        u = self.call(MOUNT_PROG, 3, MOUNTPROC3_EXPORT)
        out = []
        while u.bool():
            d = u.string(1024)
            groups = []
            while u.bool():
                groups.append(u.string(255))
            out.append((d, groups))
        return out

    # -- NFSv3 --
    def nfs(self, proc, args=b""):
        return self.call(NFS_PROG, 3, proc, args)

    def null(self):
        self.nfs(NFSPROC3_NULL).done()

    def getattr(self, fh):
        u = self.nfs(NFSPROC3_GETATTR, Packer().opaque(fh).bytes())
        st = u.u32()
        return st, (parse_fattr3(u) if st == NFS3_OK else None)

    def setattr(self, fh, **kw):
        u = self.nfs(NFSPROC3_SETATTR, Packer().opaque(fh).raw(sattr3(**kw)).bool(False).bytes())
        st = u.u32()
        return st, parse_wcc(u)

    def lookup(self, dirfh, name):
        u = self.nfs(NFSPROC3_LOOKUP, Packer().opaque(dirfh).string(name).bytes())
        st = u.u32()
        if st != NFS3_OK:
            parse_post_op_attr(u)
            return st, None, None
        fh = u.opaque(64)
        attr = parse_post_op_attr(u)
        parse_post_op_attr(u)
        return st, fh, attr

    def create(self, dirfh, name, mode=0o644, how=UNCHECKED, verf=b"\0" * 8):
        p = Packer().opaque(dirfh).string(name).u32(how)
        if how == EXCLUSIVE:
            p.fixed(verf)
        else:
            p.raw(sattr3(mode=mode))
        u = self.nfs(NFSPROC3_CREATE, p.bytes())
        st = u.u32()
        if st != NFS3_OK:
            parse_wcc(u)
            return st, None, None
        fh = parse_post_op_fh(u)
        attr = parse_post_op_attr(u)
        parse_wcc(u)
        return st, fh, attr

    def mkdir(self, dirfh, name, mode=0o755):
        u = self.nfs(NFSPROC3_MKDIR, Packer().opaque(dirfh).string(name).raw(sattr3(mode=mode)).bytes())
        st = u.u32()
        if st != NFS3_OK:
            return st, None
        fh = parse_post_op_fh(u)
        parse_post_op_attr(u)
        parse_wcc(u)
        return st, fh

    def write(self, fh, offset, data, stable=UNSTABLE):
        """(status, count, committed, verf)."""
        p = Packer().opaque(fh).u64(offset).u32(len(data)).u32(stable).opaque(data)
        u = self.nfs(NFSPROC3_WRITE, p.bytes())
        st = u.u32()
        parse_wcc(u)
        if st != NFS3_OK:
            return st, 0, None, None
        count, committed = u.u32(), u.u32()
        verf = u.fixed(8)
        return st, count, committed, verf

    def commit(self, fh, offset=0, count=0):
        """(status, verf)."""
        u = self.nfs(NFSPROC3_COMMIT, Packer().opaque(fh).u64(offset).u32(count).bytes())
        st = u.u32()
        parse_wcc(u)
        if st != NFS3_OK:
            return st, None
        return st, u.fixed(8)

    def read(self, fh, offset, count):
        """(status, data, eof)."""
        u = self.nfs(NFSPROC3_READ, Packer().opaque(fh).u64(offset).u32(count).bytes())
        st = u.u32()
        parse_post_op_attr(u)
        if st != NFS3_OK:
            return st, None, None
        n = u.u32()
        eof = u.bool()
        data = u.opaque()
        if n != len(data):
            raise XdrError("READ count %d != data length %d" % (n, len(data)))
        return st, data, eof

    def read_all(self, fh, chunk=65536):
        out = bytearray()
        while True:
            st, data, eof = self.read(fh, len(out), chunk)
            if st != NFS3_OK:
                raise RpcError("READ status %d" % st, st)
            out += data
            if eof or not data:
                return bytes(out)

    def remove(self, dirfh, name):
        u = self.nfs(NFSPROC3_REMOVE, Packer().opaque(dirfh).string(name).bytes())
        st = u.u32()
        parse_wcc(u)
        return st

    def readdirplus(self, dirfh, cookie=0, verf=b"\0" * 8, dircount=4096, maxcount=32768):
        """(status, [(fileid, name, cookie, attr, fh)], eof, cookieverf)."""
        p = Packer().opaque(dirfh).u64(cookie).fixed(verf).u32(dircount).u32(maxcount)
        u = self.nfs(NFSPROC3_READDIRPLUS, p.bytes())
        st = u.u32()
        parse_post_op_attr(u)
        if st != NFS3_OK:
            return st, [], None, None
        cverf = u.fixed(8)
        ents = []
        while u.bool():
            fileid = u.u64()
            name = u.string(1024)
            ck = u.u64()
            attr = parse_post_op_attr(u)
            fh = parse_post_op_fh(u)
            ents.append((fileid, name, ck, attr, fh))
        return st, ents, u.bool(), cverf


# ---- raw call builders (for fuzzers) ----

def call_args(proc, fh=b"", name="x", offset=0, count=4096, data=b""):
    """Arguments of a few NFSv3 calls, for building valid records to mutate."""
    p = Packer()
    if proc == NFSPROC3_NULL:
        return b""
    p.opaque(fh)
    if proc == NFSPROC3_GETATTR:
        pass
    elif proc == NFSPROC3_LOOKUP:
        p.string(name)
    elif proc == NFSPROC3_READ:
        p.u64(offset).u32(count)
    elif proc == NFSPROC3_WRITE:
        p.u64(offset).u32(len(data)).u32(UNSTABLE).opaque(data)
    elif proc == NFSPROC3_READDIRPLUS:
        p.u64(0).fixed(b"\0" * 8).u32(4096).u32(32768)
    elif proc == NFSPROC3_COMMIT:
        p.u64(0).u32(0)
    else:
        raise ValueError("no builder for proc %d" % proc)
    return p.bytes()


# ---- test output (TAP-like lines that tests/lib.sh counts) ----

_failures = 0


def check(name, cond, detail=""):
    """Print "ok - name" or "not ok - name (detail)"; return cond."""
    global _failures
    if cond:
        print("ok - %s" % name, flush=True)
    else:
        _failures += 1
        print("not ok - %s%s" % (name, " (%s)" % (detail,) if detail else ""), flush=True)
    return cond


def info(msg):
    print("# %s" % msg, flush=True)


def failures():
    """How many check()s failed so far (the script's exit status)."""
    return _failures


def rss_kib(pid, field="VmRSS"):
    """A /proc/PID/status size field in KiB, or -1 if unreadable."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1
