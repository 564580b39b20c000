#!/usr/bin/env python3
"""Calls libnfs's tools never make, for seed corpora (mkcorpus.sh).

    traffic.py PORT EXPORT RO_EXPORT

Speaks through tests/interop/nfsrpc.py to PORT (the recording proxy): every
NFSv3 procedure, MOUNT v3 and v1, portmap v2 and RPCBIND v3/v4, with
ordinary arguments and a few edge values (zero counts, huge offsets, long
names). Replies are not checked: only the calls matter.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "interop"))
import nfsrpc as R  # noqa: E402
from nfsrpc import Packer  # noqa: E402

NFS, MNT, PMAP = R.NFS_PROG, R.MOUNT_PROG, R.PMAP_PROG


def sattr(mode=None, size=None, uid=None, gid=None, times=False):
    p = Packer()
    for v in (mode, uid, gid):
        p.bool(v is not None)
        if v is not None:
            p.u32(v)
    p.bool(size is not None)
    if size is not None:
        p.u64(size)
    if times:
        p.u32(2).u32(1700000000).u32(5)  # SET_TO_CLIENT_TIME
        p.u32(1)                          # SET_TO_SERVER_TIME
    else:
        p.u32(0).u32(0)
    return p.bytes()


def main():
    port, export, ro = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    c = R.Client("127.0.0.1", port)

    def call(prog, vers, proc, args=b""):
        try:
            return c.call(prog, vers, proc, args)
        except (R.RpcError, R.XdrError, ValueError):
            return None

    def nfs(proc, args=b""):
        return call(NFS, 3, proc, args)

    def fh_of(dirfh, name):
        u = nfs(R.NFSPROC3_LOOKUP, Packer().opaque(dirfh).string(name).bytes())
        if u is None or u.u32() != 0:
            return dirfh
        return u.opaque(64)

    # portmap v2 and rpcbind v3/v4
    call(PMAP, 2, 0)
    call(PMAP, 2, 3, Packer().u32(NFS).u32(3).u32(6).u32(0).bytes())
    call(PMAP, 2, 3, Packer().u32(MNT).u32(3).u32(17).u32(0).bytes())
    call(PMAP, 2, 4)
    rpcb = Packer().u32(NFS).u32(3).string("tcp").string("").string("fuzz")
    call(PMAP, 3, 3, rpcb.bytes())
    call(PMAP, 4, 3, rpcb.bytes())
    call(PMAP, 3, 4)
    call(PMAP, 4, 4)
    call(PMAP, 3, 6)  # GETTIME
    call(PMAP, 4, 8, Packer().string("tcp").string("127.0.0.1.8.1").bytes())
    call(PMAP, 4, 12, rpcb.bytes())  # GETADDRLIST

    # MOUNT v1 and v3
    for v in (1, 3):
        call(MNT, v, 0)
        call(MNT, v, 2)
        call(MNT, v, 5)
    root = c.mnt(export)
    rort = c.mnt(ro)
    call(MNT, 3, 1, Packer().string("/not/exported").bytes())
    call(MNT, 3, 1, Packer().string(export + "/dir").bytes())

    f = fh_of(root, "file")
    d = fh_of(root, "dir")
    lnk = fh_of(root, "link")
    big = fh_of(root, "big")
    many = fh_of(root, "many")
    rofile = fh_of(rort, "rofile")
    fh = lambda h: Packer().opaque(h)  # noqa: E731

    nfs(R.NFSPROC3_NULL)
    nfs(R.NFSPROC3_GETATTR, fh(f).bytes())
    nfs(R.NFSPROC3_SETATTR, fh(f).raw(sattr(mode=0o640, times=True)).bool(False).bytes())
    nfs(R.NFSPROC3_SETATTR, fh(f).raw(sattr(size=100)).bool(True).u32(1).u32(2).bytes())
    nfs(R.NFSPROC3_SETATTR, fh(rofile).raw(sattr(mode=0o600)).bool(False).bytes())
    nfs(R.NFSPROC3_LOOKUP, fh(root).string("..").bytes())
    nfs(R.NFSPROC3_LOOKUP, fh(d).string("sub").bytes())
    nfs(R.NFSPROC3_LOOKUP, fh(root).string("n" * 300).bytes())
    nfs(R.NFSPROC3_ACCESS, fh(f).u32(0x3f).bytes())
    nfs(R.NFSPROC3_READLINK, fh(lnk).bytes())
    nfs(R.NFSPROC3_READ, fh(big).u64(4000).u32(8192).bytes())
    nfs(R.NFSPROC3_READ, fh(big).u64(1 << 62).u32(10).bytes())
    nfs(R.NFSPROC3_READ, fh(f).u64(0).u32(0).bytes())
    for stable in (0, 1, 2):
        nfs(R.NFSPROC3_WRITE, fh(f).u64(10).u32(5).u32(stable).opaque(b"abcde").bytes())
    nfs(R.NFSPROC3_WRITE, fh(f).u64(0).u32(9).u32(0).opaque(b"abc").bytes())
    nfs(R.NFSPROC3_WRITE, fh(rofile).u64(0).u32(3).u32(2).opaque(b"abc").bytes())
    nfs(R.NFSPROC3_CREATE, fh(root).string("newfile").u32(0).raw(sattr(mode=0o600)).bytes())
    nfs(R.NFSPROC3_CREATE, fh(root).string("newfile").u32(1).raw(sattr()).bytes())
    nfs(R.NFSPROC3_CREATE, fh(root).string("excl").u32(2).fixed(b"verifier").bytes())
    nfs(R.NFSPROC3_MKDIR, fh(root).string("newdir").raw(sattr(mode=0o700)).bytes())
    nfs(R.NFSPROC3_SYMLINK, fh(root).string("newlink").raw(sattr()).string("file").bytes())
    for ftype in (7, 6, 3):  # FIFO, SOCK, CHR
        p = fh(root).string("node%d" % ftype).u32(ftype).raw(sattr())
        if ftype in (3, 4):
            p.u32(1).u32(3)
        nfs(R.NFSPROC3_MKNOD, p.bytes())
    nfs(R.NFSPROC3_LINK, fh(f).raw(fh(d).bytes()).string("hardlink").bytes())
    nfs(R.NFSPROC3_RENAME, fh(root).string("newfile").raw(fh(d).bytes()).string("moved").bytes())
    nfs(R.NFSPROC3_RENAME, fh(root).string("file").raw(fh(rort).bytes()).string("x").bytes())
    nfs(R.NFSPROC3_REMOVE, fh(d).string("moved").bytes())
    nfs(R.NFSPROC3_RMDIR, fh(root).string("newdir").bytes())
    nfs(R.NFSPROC3_RMDIR, fh(root).string("..").bytes())
    nfs(R.NFSPROC3_READDIR, fh(many).u64(0).fixed(b"\0" * 8).u32(512).bytes())
    u = nfs(R.NFSPROC3_READDIRPLUS, fh(many).u64(0).fixed(b"\0" * 8).u32(256).u32(1024).bytes())
    if u is not None and u.u32() == 0:
        # Resume with the last cookie and the verifier of the first page.
        if u.bool():
            u.fixed(84)
        verf = u.fixed(8)
        cookie = 0
        while u.bool():
            u.u64()
            u.string()
            cookie = u.u64()
            if u.bool():
                u.fixed(84)
            if u.bool():
                u.opaque(64)
        nfs(R.NFSPROC3_READDIRPLUS, fh(many).u64(cookie).fixed(verf).u32(256).u32(1024).bytes())
        nfs(R.NFSPROC3_READDIR, fh(many).u64(cookie).fixed(verf).u32(512).bytes())
    nfs(R.NFSPROC3_FSSTAT, fh(root).bytes())
    nfs(R.NFSPROC3_FSINFO, fh(rort).bytes())
    nfs(R.NFSPROC3_PATHCONF, fh(d).bytes())
    nfs(R.NFSPROC3_COMMIT, fh(f).u64(0).u32(0).bytes())
    nfs(R.NFSPROC3_COMMIT, fh(big).u64(4096).u32(100).bytes())

    call(MNT, 3, 3, Packer().string(export).bytes())  # UMNT
    call(MNT, 3, 4)  # UMNTALL
    c.close()


if __name__ == "__main__":
    main()
