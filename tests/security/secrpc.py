"""Helpers for the export-security suite (python3 stdlib only).

Adds to tests/interop/nfsrpc.py what the security cases need and it lacks:
the remaining NFSv3 procedures as status-returning calls (RFC 1813 section
3.3), a client bound to a privileged source port (exports(5) "secure"), a
call that reports RPC-level refusals as values instead of exceptions,
SipHash-2-4 and name_to_handle_at(2) so a test can build a handle the way
src/server/fh.c does (to prove that forging needs the server's key, and to
see what a handle with a valid MAC can reach).
"""

import ctypes
import errno
import os
import random
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))

from nfsrpc import (  # noqa: E402  (path set up above)
    Client, Packer, RpcError, XdrError, auth_sys, build_call, frame, AUTH_SYS,
    parse_reply, parse_post_op_attr, parse_wcc, parse_post_op_fh, sattr3,
    reply_xid, NFS_PROG, MOUNT_PROG, MOUNTPROC3_MNT,
    NFSPROC3_GETATTR, NFSPROC3_READLINK, NFSPROC3_SYMLINK, NFSPROC3_RENAME,
    NFSPROC3_LINK, NFSPROC3_FSINFO, NFSPROC3_READDIR, NFSPROC3_RMDIR,
    NFSPROC3_WRITE, NFSPROC3_READ, UNSTABLE, FILE_SYNC, NFS3_OK,
    check, failures,  # failures() is the exit status of exports_cases.py
)

# nfsstat3 (RFC 1813 section 2.6) used by the cases
PERM, NOENT, ACCES, EXIST, XDEV, NOTDIR, ISDIR, INVAL = 1, 2, 13, 17, 18, 20, 21, 22
FBIG, ROFS, NAMETOOLONG, STALE, BADHANDLE = 27, 30, 63, 70, 10001
# mountstat3
MNT3_OK, MNT3ERR_ACCES, MNT3ERR_NOTDIR, MNT3ERR_NAMETOOLONG = 0, 13, 20, 63
# ftype3
NF3REG, NF3DIR, NF3LNK = 1, 2, 5
RPCSEC_GSS = 6


def report(ok, name, detail=""):
    """Print one TAP-style line; remember failures for the exit status."""
    return check(name, ok, detail)


# ---- clients ----

class PrivClient(Client):
    """A TCP client whose source port is privileged (< 1024); needs root.
    exports(5) "secure" admits only such clients."""

    def connect(self):
        self.close()
        last = None
        ports = list(range(600, 1024))
        random.shuffle(ports)
        for port in ports[:200]:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
                s.settimeout(self.timeout)
                s.connect((self.host, self.port))
            except OSError as e:
                s.close()
                last = e
                continue
            self.sock = s
            return
        raise OSError("no privileged port could be bound: %s" % last)

    def source_port(self):
        return self.sock.getsockname()[1]


def try_call(fn, *a, **kw):
    """Run fn; return ("ok", result), ("rpc", RpcError.stat) for a refused
    call, or ("closed", str) when the server dropped the connection."""
    try:
        return "ok", fn(*a, **kw)
    except RpcError as e:
        return "rpc", e.stat
    except (EOFError, ConnectionError, socket.timeout, OSError) as e:
        return "closed", str(e)


# ---- NFSv3 procedures nfsrpc.Client does not wrap (status first) ----

def nfs_status(c, proc, args, cred=None):
    """Just the nfsstat3 of a call."""
    return c.call(NFS_PROG, 3, proc, args, cred=cred).u32()


def getattr_st(c, fh, cred=None):
    return nfs_status(c, NFSPROC3_GETATTR, Packer().opaque(fh).bytes(), cred)


def getattr_raw(c, fh_bytes_xdr, cred=None):
    """GETATTR with arguments given as raw XDR (for malformed handles)."""
    return nfs_status(c, NFSPROC3_GETATTR, fh_bytes_xdr, cred)


def readlink(c, fh):
    u = c.nfs(NFSPROC3_READLINK, Packer().opaque(fh).bytes())
    st = u.u32()
    parse_post_op_attr(u)
    return st, (u.string(1 << 16) if st == NFS3_OK else None)


def symlink(c, dirfh, name, target, cred=None):
    p = Packer().opaque(dirfh).string(name).raw(sattr3(mode=0o777)).string(target)
    return nfs_status(c, NFSPROC3_SYMLINK, p.bytes(), cred)


def rename(c, fdir, fname, tdir, tname, cred=None):
    p = Packer().opaque(fdir).string(fname).opaque(tdir).string(tname)
    return nfs_status(c, NFSPROC3_RENAME, p.bytes(), cred)


def link(c, fh, dirfh, name, cred=None):
    p = Packer().opaque(fh).opaque(dirfh).string(name)
    return nfs_status(c, NFSPROC3_LINK, p.bytes(), cred)


def rmdir(c, dirfh, name):
    return nfs_status(c, NFSPROC3_RMDIR, Packer().opaque(dirfh).string(name).bytes())


def create_as(c, dirfh, name, cred, mode=0o644):
    """CREATE UNCHECKED with the given credential: (status, attr)."""
    p = Packer().opaque(dirfh).string(name).u32(0).raw(sattr3(mode=mode))
    u = c.call(NFS_PROG, 3, 8, p.bytes(), cred=cred)
    st = u.u32()
    if st != NFS3_OK:
        return st, None
    parse_post_op_fh(u)
    return st, parse_post_op_attr(u)


def setattr_as(c, fh, cred, **kw):
    p = Packer().opaque(fh).raw(sattr3(**kw)).bool(False)
    u = c.call(NFS_PROG, 3, 2, p.bytes(), cred=cred)
    st = u.u32()
    return st, parse_wcc(u)


def fsinfo(c, fh):
    """(status, rtmax, wtmax)."""
    u = c.nfs(NFSPROC3_FSINFO, Packer().opaque(fh).bytes())
    st = u.u32()
    parse_post_op_attr(u)
    if st != NFS3_OK:
        return st, None, None
    rtmax, _rtpref, _rtmult, wtmax = u.u32(), u.u32(), u.u32(), u.u32()
    return st, rtmax, wtmax


def readdir_names(c, dirfh):
    """(status, [names]) of one READDIR reply (small directories)."""
    p = Packer().opaque(dirfh).u64(0).fixed(b"\0" * 8).u32(65536)
    u = c.nfs(NFSPROC3_READDIR, p.bytes())
    st = u.u32()
    parse_post_op_attr(u)
    if st != NFS3_OK:
        return st, []
    u.fixed(8)
    names = []
    while u.bool():
        u.u64()
        names.append(u.string(1024))
        u.u64()
    return st, names


def write_count(c, fh, offset, data, count):
    """WRITE whose declared count may differ from the data: (status,
    count)."""
    p = Packer().opaque(fh).u64(offset).u32(count).u32(FILE_SYNC).opaque(data)
    u = c.nfs(NFSPROC3_WRITE, p.bytes())
    st = u.u32()
    parse_wcc(u)
    return st, (u.u32() if st == NFS3_OK else 0)


def mnt_status(c, path):
    """MNT of a raw path (str or bytes): (status, fh or None)."""
    u = c.call(MOUNT_PROG, 3, MOUNTPROC3_MNT, Packer().string(path).bytes())
    st = u.u32()
    return st, (u.opaque(64) if st == 0 else None)


# ---- handle construction as src/server/fh.c does it ----

def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & 0xFFFFFFFFFFFFFFFF


def siphash24(key, data):
    """SipHash-2-4 (Aumasson and Bernstein), little-endian words."""
    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D,
         k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]
    m = 0xFFFFFFFFFFFFFFFF

    def rnd():
        v[0] = (v[0] + v[1]) & m; v[1] = _rotl(v[1], 13); v[1] ^= v[0]; v[0] = _rotl(v[0], 32)  # noqa: E702
        v[2] = (v[2] + v[3]) & m; v[3] = _rotl(v[3], 16); v[3] ^= v[2]  # noqa: E702
        v[0] = (v[0] + v[3]) & m; v[3] = _rotl(v[3], 21); v[3] ^= v[0]  # noqa: E702
        v[2] = (v[2] + v[1]) & m; v[1] = _rotl(v[1], 17); v[1] ^= v[2]; v[2] = _rotl(v[2], 32)  # noqa: E702

    full = len(data) // 8 * 8
    for i in range(0, full, 8):
        w = struct.unpack("<Q", data[i:i + 8])[0]
        v[3] ^= w
        rnd()
        rnd()
        v[0] ^= w
    last = (len(data) & 0xFF) << 56
    for i, b in enumerate(data[full:]):
        last |= b << (8 * i)
    v[3] ^= last
    rnd()
    rnd()
    v[0] ^= last
    v[2] ^= 0xFF
    for _ in range(4):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


class _FileHandle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int),
                ("f_handle", ctypes.c_ubyte * 128)]


def kernel_handle(path):
    """The backend handle of path: handle type (le32) + f_handle, as
    src/backend/posix.c stores it."""
    libc = ctypes.CDLL(None, use_errno=True)
    fh = _FileHandle()
    fh.handle_bytes = 36
    mount_id = ctypes.c_int()
    AT_FDCWD = -100
    if libc.name_to_handle_at(AT_FDCWD, path.encode(), ctypes.byref(fh),
                              ctypes.byref(mount_id), 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "name_to_handle_at %s: %s" % (path, errno.errorcode.get(e, e)))
    return struct.pack("<I", fh.handle_type) + bytes(fh.f_handle[:fh.handle_bytes])


def make_handle(key, fsid, bk, mac=None, tag=None, path=None):
    """[version 2][fsid be32][export path tag be32][len][backend handle]
    [MAC 8] (fh.c). The tag is siphash(key, export path) or given."""
    if tag is None:
        tag = struct.pack(">I", siphash24(key, path.encode()) & 0xffffffff) if key else b"\0" * 4
    body = bytes([2]) + struct.pack(">I", fsid) + tag + bytes([len(bk)]) + bk
    if mac is None:
        mac = struct.pack("<Q", siphash24(key, body))
    return body + mac


def handle_fsid(fh):
    return struct.unpack(">I", fh[1:5])[0]


def handle_tag(fh):
    return fh[5:9]


# ---- raw records ----

def raw_call(c, prog, vers, proc, args, cred):
    """Send one call with an arbitrary credential; return ("ok", Unpacker),
    ("rpc", stat) or ("closed", why)."""
    xid = c.next_xid()
    msg = build_call(xid, prog, vers, proc, args, cred)

    def go():
        c.send_raw(frame(msg))
        while True:
            data = c.recv()
            if reply_xid(data) == xid:
                return parse_reply(data, xid)
    return try_call(go)

