#!/usr/bin/env python3
"""Export-security cases against a running snfsd (driven by t_exports.sh).

Usage: exports_cases.py PORT SNFSD_PID TDIR

TDIR holds srv/<export> directories (see t_exports.sh), secret/ (not
exported, with a canary file), state/ (the server's key) and conf/exports,
conf/exports.2 (the table after the SIGHUP reload). Each case prints "ok - ..."
or "not ok - ..."; the exit status is the number of failures (capped).
"""

import os
import random
import signal
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import secrpc as S  # noqa: E402
from secrpc import report, try_call  # noqa: E402

PORT = int(sys.argv[1])
PID = int(sys.argv[2])
TDIR = sys.argv[3]
SRV = os.path.join(TDIR, "srv")
SECRET = os.path.join(TDIR, "secret")
GARBAGE_ARGS = 4
R = random.Random(7)


def ex(name):
    return os.path.join(SRV, name)


def client(uid=0, gid=0, gids=()):
    return S.Client("127.0.0.1", PORT, cred=S.auth_sys(uid, gid, gids))


def snapshot(path):
    """(content, mtime_ns, uid, gid, mode) of a file, or the names of a
    directory, to prove an operation changed nothing."""
    st = os.lstat(path)
    if os.path.isdir(path) and not os.path.islink(path):
        return ("dir", sorted(os.listdir(path)), st.st_mtime_ns, st.st_mode)
    with open(path, "rb") as f:
        return ("file", f.read(), st.st_mtime_ns, st.st_uid, st.st_gid, st.st_mode)


def case(fn):
    """Run one case; an unexpected exception is a failure of that case."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - any error fails the case
        report(False, fn.__doc__.strip().splitlines()[0], "exception %s: %s" % (type(e).__name__, e))


C = client()
ROOT = {n: C.mnt(ex(n)) for n in ("rw", "rw2", "ro", "rsq", "asq", "only9", "gone")}
_, FILE_FH, FILE_ATTR = C.lookup(ROOT["rw"], "f")
# Handles inside "wide" taken before the SIGHUP narrows it to wide/public.
WIDE = {"root": C.mnt(ex("wide"))}
WIDE["private"] = C.lookup(WIDE["root"], "private")[1]
WIDE["file"] = C.lookup(WIDE["private"], "file")[1]
WIDE["public"] = C.lookup(WIDE["root"], "public")[1]
WIDE["pfile"] = C.lookup(WIDE["public"], "pfile")[1]


# ---- forged and damaged handles ----

def forged_random():
    """forged handles: random bytes of every length 0..64 -> BADHANDLE"""
    bad = []
    for n in list(range(0, 65)) * 3:
        fh = bytes(R.getrandbits(8) for _ in range(n))
        st = S.getattr_st(C, fh)
        if st != S.BADHANDLE:
            bad.append((n, st))
    # Well-formed header (version 1, real fsid, consistent length) with a
    # random MAC: only the MAC can refuse it.
    for _ in range(64):
        f = bytearray(FILE_FH)
        for i in range(len(f) - 8, len(f)):
            f[i] = R.getrandbits(8)
        st = S.getattr_st(C, bytes(f))
        if st != S.BADHANDLE:
            bad.append(("mac", st))
    report(not bad, "forged handles: 195 random + 64 random-MAC -> BADHANDLE", "got %s" % bad[:5])


def forged_oversize():
    """forged handles longer than NFS3_FHSIZE (65, 200 bytes) -> refused"""
    bad = []
    for n in (65, 200, 4096):
        args = S.Packer().opaque(bytes(R.getrandbits(8) for _ in range(n))).bytes()
        r = try_call(S.getattr_raw, C, args)
        if not (r == ("rpc", GARBAGE_ARGS) or r == ("ok", S.BADHANDLE)):
            bad.append((n, r))
    # The length word says 64 but the body is cut short.
    r = try_call(S.getattr_raw, C, struct.pack(">I", 64) + b"\1" * 20)
    if r != ("rpc", GARBAGE_ARGS):
        bad.append(("short", r))
    C.connect()
    report(not bad, "over-long/short handle opaque -> GARBAGE_ARGS or BADHANDLE", "got %s" % bad)


def bit_flips():
    """every single-bit flip of a real handle -> BADHANDLE or STALE, never OK"""
    bad = []
    for fh in (FILE_FH, ROOT["rw"]):
        for bit in range(len(fh) * 8):
            f = bytearray(fh)
            f[bit // 8] ^= 1 << (bit % 8)
            st = S.getattr_st(C, bytes(f))
            if st not in (S.BADHANDLE, S.STALE):
                bad.append((bit, st))
        for f in (fh[:-1], fh + b"\0", fh[1:]):
            st = S.getattr_st(C, f)
            if st not in (S.BADHANDLE, S.STALE):
                bad.append(("len%d" % len(f), st))
    ok = not bad and S.getattr_st(C, FILE_FH) == S.NFS3_OK
    report(ok, "bit-flipped handles (%d flips) -> BADHANDLE/STALE; original still OK"
           % (8 * (len(FILE_FH) + len(ROOT["rw"]))), "got %s" % bad[:5])


def unexported_spliced():
    """handle of a non-exported dir crafted without the key -> BADHANDLE"""
    bk = S.kernel_handle(SECRET)
    fsid = S.handle_fsid(ROOT["rw"])
    tries = [
        S.make_handle(None, fsid, bk, mac=ROOT["rw"][-8:], tag=S.handle_tag(ROOT["rw"])),  # MAC of the root
        S.make_handle(None, fsid, bk, mac=b"\0" * 8, tag=S.handle_tag(ROOT["rw"])),
        S.make_handle(None, fsid, bk, mac=bytes(R.getrandbits(8) for _ in range(8)), tag=S.handle_tag(ROOT["rw"])),
        S.make_handle(None, S.handle_fsid(FILE_FH), bk, mac=FILE_FH[-8:], tag=S.handle_tag(FILE_FH)),
    ]
    sts = [S.getattr_st(C, t) for t in tries]
    sts += [S.readdir_names(C, t)[0] for t in tries]
    report(all(s == S.BADHANDLE for s in sts),
           "non-exported dir: backend handle spliced into export handle -> BADHANDLE", "got %s" % sts)


def unexported_keyed():
    """the handle key is the trust boundary: only root can read it, and
    without it no handle can be made (spliced/forged cases above). A holder
    of the key could forge handles of any object on the export's file
    system (as with Linux nfsd's no_subtree_check); that is documented in
    snfsd(8), so here we check the key is private and that our knowledge of
    the handle format is right (a crafted root handle equals the real one)."""
    kp = os.path.join(TDIR, "state", "fh.key")
    st = os.stat(kp)
    with open(kp, "rb") as f:
        key = f.read()
    fsid = S.handle_fsid(ROOT["rw"])
    same = S.make_handle(key, fsid, S.kernel_handle(ex("rw")), path=ex("rw")) == ROOT["rw"]
    private = (st.st_mode & 0o077) == 0 and st.st_uid == 0
    report(same and private, "handle key is private (0600 root) and the handle format is as documented",
           "craft matches real root: %s; key mode %o uid %d" % (same, st.st_mode & 0o777, st.st_uid))


# ---- names ----

def dotdot_root():
    """'..' and '.' at the export root give the root itself (fileid)"""
    bad = []
    _, rattr = C.getattr(ROOT["rw"])
    parent = os.stat(SRV).st_ino
    for name in ("..", "."):
        st, fh, a = C.lookup(ROOT["rw"], name)
        if st != S.NFS3_OK or a["fileid"] != rattr["fileid"] or a["fileid"] == parent:
            bad.append((name, st, a and a["fileid"]))
        elif fh and S.readdir_names(C, fh)[1] and "secret" in S.readdir_names(C, fh)[1]:
            bad.append((name, "lists parent"))
    # and upward from a subdirectory: sub/.. is the root, sub/../.. too
    _, sub, _ = C.lookup(ROOT["rw"], "sub")
    st, up, a = C.lookup(sub, "..")
    st2, up2, a2 = C.lookup(up, "..") if st == S.NFS3_OK else (st, None, None)
    if st2 != S.NFS3_OK or a["fileid"] != rattr["fileid"] or a2["fileid"] != rattr["fileid"]:
        bad.append(("sub/../..", st, st2))
    for n in ("ro", "only9"):
        st, _, a = C.lookup(ROOT[n], "..")
        if st != S.NFS3_OK or a["fileid"] != os.stat(ex(n)).st_ino:
            bad.append((n, st))
    report(not bad and rattr["fileid"] == os.stat(ex("rw")).st_ino,
           "'..' at export root -> root itself (fileid), never the parent", "got %s" % bad)


def names_with_slash():
    """LOOKUP of names holding '/', NUL or "" -> error, never an object"""
    bad = []
    for name in ("out/canary", "../secret", "/", "/etc", "sub/..", "..//..", "", "f\0x", "sub\0"):
        st, fh, _ = C.lookup(ROOT["rw"], name)
        if st == S.NFS3_OK:
            bad.append((name, st))
    for name in ("x/y", "", "a\0b"):
        st, _, _ = C.create(ROOT["rw"], name)
        if st == S.NFS3_OK:
            bad.append(("create " + repr(name), st))
    if sorted(os.listdir(ex("rw"))) != RW_LIST or os.path.exists(os.path.join(ex("rw"), "x")):
        bad.append(("listing changed", os.listdir(ex("rw"))))
    report(not bad, "names with '/', NUL or empty -> error, nothing created", "got %s" % bad)


def long_names():
    """names of 256+ bytes -> NAMETOOLONG; 255 -> NOENT (boundary)"""
    got = {}
    for n in (255, 256, 1000, 65536):
        st, _, _ = C.lookup(ROOT["rw"], "n" * n)
        got["lookup%d" % n] = st
    got["create256"] = C.create(ROOT["rw"], "c" * 256)[0]
    got["mkdir256"] = C.mkdir(ROOT["rw"], "d" * 256)[0]
    got["symlink256"] = S.symlink(C, ROOT["rw"], "s" * 256, "t")
    got["rename256"] = S.rename(C, ROOT["rw"], "f", ROOT["rw"], "r" * 256)
    got["link256"] = S.link(C, FILE_FH, ROOT["rw"], "l" * 256)
    r = try_call(S.nfs_status, C, 3, S.Packer().opaque(ROOT["rw"]).string("z" * 70000).bytes())
    C.connect()
    want = {k: S.NAMETOOLONG for k in got}
    want["lookup255"] = S.NOENT
    ok = got == want and r in (("rpc", GARBAGE_ARGS), ("ok", S.NAMETOOLONG))
    ok = ok and sorted(os.listdir(ex("rw"))) == RW_LIST
    report(ok, "names of 256/1000/65536 bytes -> NAMETOOLONG (255 -> NOENT), 70000 -> GARBAGE_ARGS",
           "got %s, 70000: %s" % (got, r))


def long_symlink():
    """SYMLINK with a target over 4096 bytes -> NAMETOOLONG, nothing made"""
    got = [try_call(S.symlink, C, ROOT["rw"], "longlink", "x/" * 2049),
           try_call(S.symlink, C, ROOT["rw"], "longlink", "y" * 70000)]
    C.connect()
    # 70000 bytes is past the decoder's string limit: GARBAGE_ARGS is fine
    ok = got[0] == ("ok", S.NAMETOOLONG) and got[1] in (
        ("ok", S.NAMETOOLONG), ("rpc", GARBAGE_ARGS))
    ok = ok and not os.path.lexists(os.path.join(ex("rw"), "longlink"))
    # control: a long-but-legal target is stored verbatim
    st = S.symlink(C, ROOT["rw"], "oklink", "../" * 300)
    ok = ok and st == S.NFS3_OK and os.readlink(os.path.join(ex("rw"), "oklink")) == "../" * 300
    C.remove(ROOT["rw"], "oklink")
    report(ok, "SYMLINK targets of 4098 bytes -> NAMETOOLONG, 70000 -> GARBAGE_ARGS/NAMETOOLONG; 900 bytes stored verbatim",
           "got %s, control %s" % (got, st))


# ---- MOUNT ----

def mnt_outside():
    """MNT of paths outside every export -> MNT3ERR_ACCES"""
    got = {p: S.mnt_status(C, p)[0] for p in (SECRET, SRV, TDIR, "/", "/etc", SECRET + "/canary",
                                              ex("rw") + "x", "relative/path", "")}
    report(all(v == S.MNT3ERR_ACCES for v in got.values()),
           "MNT outside any export -> ACCES", "got %s" % got)


def mnt_dotdot():
    """MNT of '/export/../sibling' style paths -> refused, no handle"""
    paths = [ex("rw") + "/../../secret", ex("rw") + "/..", ex("rw") + "/sub/../../ro",
             ex("rw") + "/./../rw2", ex("rw") + "//..//..", ex("rw") + "/sub/.."]
    got = {p: S.mnt_status(C, p) for p in paths}
    report(all(st != 0 and fh is None for st, fh in got.values()),
           "MNT with '..' components -> refused", "got %s" % {p: v[0] for p, v in got.items()})


def mnt_symlink():
    """MNT through a symlink pointing outside -> refused; real subdir ok"""
    got = {p: S.mnt_status(C, ex("rw") + p) for p in ("/out", "/abs", "/out/canary", "/dirlink")}
    st_sub, fh_sub = S.mnt_status(C, ex("rw") + "/sub")
    ok = all(st != 0 and fh is None for st, fh in got.values())
    ok = ok and st_sub == 0 and C.getattr(fh_sub)[1]["fileid"] == os.stat(ex("rw") + "/sub").st_ino
    report(ok, "MNT through symlinks to outside -> error; MNT of real subdir -> its handle",
           "got %s, sub %s" % ({p: v[0] for p, v in got.items()}, st_sub))


def mnt_long():
    """MNT of over-long paths -> error, no handle"""
    got = [try_call(S.mnt_status, C, ex("rw") + "/" + "a" * 1100),
           try_call(S.mnt_status, C, ex("rw") + "/" + "b" * 300),
           try_call(S.mnt_status, C, ex("rw") + "/" + "c/" * 3000)]
    C.connect()
    ok = all(r[0] == "rpc" or (r[0] == "ok" and r[1][0] != 0) for r in got)
    report(ok, "MNT of 1100/300-byte-name/6000-byte paths -> error",
           "got %s" % [(r[0], r[1] if r[0] != "ok" else r[1][0]) for r in got])


# ---- symlinks ----

def symlinks_not_followed():
    """symlinks to outside: READLINK returns the text, nothing follows it"""
    bad = []
    for name, target in (("out", "../../secret"), ("abs", os.path.join(SECRET, "canary")),
                         ("dirlink", "/")):
        st, fh, a = C.lookup(ROOT["rw"], name)
        if st != S.NFS3_OK or a["type"] != S.NF3LNK:
            bad.append((name, "lookup", st, a and a["type"]))
            continue
        st, text = S.readlink(C, fh)
        if st != S.NFS3_OK or text != target:
            bad.append((name, "readlink", st, text))
        st, data, _ = C.read(fh, 0, 4096)
        if st == S.NFS3_OK:
            bad.append((name, "READ gave", data[:20]))
        st, names = S.readdir_names(C, fh)
        if st == S.NFS3_OK:
            bad.append((name, "READDIR gave", names))
        st, _, _ = C.lookup(fh, "canary")
        if st == S.NFS3_OK:
            bad.append((name, "LOOKUP through it"))
        st, _, _ = C.create(fh, "planted")
        if st == S.NFS3_OK:
            bad.append((name, "CREATE through it"))
        st, cnt, _, _ = C.write(fh, 0, b"overwrite", S.FILE_SYNC)
        if st == S.NFS3_OK:
            bad.append((name, "WRITE through it"))
    report(not bad, "symlinks pointing outside: LNK type, READLINK text, READ/READDIR/LOOKUP/"
           "CREATE/WRITE through them refused", "got %s" % bad)


def setattr_symlink():
    """SETATTR (size/mode) on a symlink to outside never reaches the target"""
    _, fh, _ = C.lookup(ROOT["rw"], "abs")
    st1, _ = C.setattr(fh, size=0)
    st2, _ = C.setattr(fh, mode=0o777)
    # mode on a symlink is meaningless on Linux; an OK here must not have
    # changed the canary (checked again at the end by t_exports.sh).
    canary = os.stat(os.path.join(SECRET, "canary"))
    ok = st1 != S.NFS3_OK and canary.st_size == CANARY_SIZE and (canary.st_mode & 0o777) == 0o600
    report(ok, "SETATTR size/mode on a symlink to outside -> target untouched",
           "size %s mode %s, canary size %d mode %o" % (st1, st2, canary.st_size, canary.st_mode & 0o777))


# ---- cross-export rename and link ----

def rename_xdev():
    """RENAME into another export, or from another export's handle -> XDEV"""
    got = {
        "rw->rw2": S.rename(C, ROOT["rw"], "f", ROOT["rw2"], "f-moved"),
        "rw2->rw": S.rename(C, ROOT["rw2"], "g", ROOT["rw"], "g-moved"),
        "rw->ro": S.rename(C, ROOT["rw"], "f", ROOT["ro"], "f-moved"),
    }
    ro_src = S.rename(C, ROOT["ro"], "f", ROOT["rw"], "stolen")
    ok = all(v == S.XDEV for v in got.values()) and ro_src in (S.XDEV, S.ROFS)
    ok = ok and os.path.exists(os.path.join(ex("rw"), "f")) and os.path.exists(os.path.join(ex("rw2"), "g"))
    ok = ok and os.path.exists(os.path.join(ex("ro"), "f"))
    ok = ok and not any(os.path.lexists(os.path.join(ex(d), n)) for d, n in
                        (("rw2", "f-moved"), ("rw", "g-moved"), ("ro", "f-moved"), ("rw", "stolen")))
    report(ok, "RENAME across exports -> XDEV, both sides unchanged", "got %s, ro->rw %s" % (got, ro_src))


def rename_dotdot():
    """RENAME to '..', '.', 'a/b' names -> error, nothing moves up"""
    got = [S.rename(C, ROOT["rw"], "f", ROOT["rw"], n) for n in ("..", ".", "../escaped", "sub/../x")]
    got += [S.rename(C, ROOT["rw"], n, ROOT["rw"], "x") for n in ("..", ".")]
    ok = all(s != S.NFS3_OK for s in got) and os.path.exists(os.path.join(ex("rw"), "f"))
    ok = ok and not os.path.lexists(os.path.join(SRV, "escaped"))
    report(ok, "RENAME to/from '..', '.', 'a/b' -> error", "got %s" % got)


def link_xdev():
    """LINK across exports -> XDEV"""
    _, gfh, _ = C.lookup(ROOT["rw2"], "g")
    got = [S.link(C, FILE_FH, ROOT["rw2"], "hl"), S.link(C, gfh, ROOT["rw"], "hl"),
           S.link(C, FILE_FH, ROOT["ro"], "hl")]
    ok = got[:2] == [S.XDEV, S.XDEV] and got[2] in (S.XDEV, S.ROFS)
    ok = ok and not any(os.path.lexists(os.path.join(ex(d), "hl")) for d in ("rw", "rw2", "ro"))
    ok = ok and os.stat(os.path.join(ex("rw"), "f")).st_nlink == 1
    report(ok, "LINK across exports -> XDEV, no link made", "got %s" % got)


# ---- read-only export ----

def ro_export():
    """CREATE/WRITE/SETATTR/REMOVE/MKDIR/RENAME/... on a ro export -> ROFS"""
    before = (snapshot(ex("ro")), snapshot(os.path.join(ex("ro"), "f")),
              snapshot(os.path.join(ex("ro"), "d")))
    r = ROOT["ro"]
    _, ffh, _ = C.lookup(r, "f")
    _, dfh, _ = C.lookup(r, "d")
    got = {
        "CREATE": C.create(r, "new")[0],
        "CREATE existing": C.create(r, "f")[0],
        "WRITE": C.write(ffh, 0, b"XXXX", S.FILE_SYNC)[0],
        "SETATTR size": C.setattr(ffh, size=0)[0],
        "SETATTR mode": C.setattr(ffh, mode=0o777)[0],
        "SETATTR mtime": C.setattr(ffh, mtime=(1, 0))[0],
        "REMOVE": C.remove(r, "f"),
        "MKDIR": C.mkdir(r, "newdir")[0],
        "RMDIR": S.rmdir(C, r, "d"),
        "RENAME": S.rename(C, r, "f", r, "f2"),
        "SYMLINK": S.symlink(C, r, "sl", "f"),
        "LINK": S.link(C, ffh, r, "f3"),
        "CREATE in subdir": C.create(dfh, "x")[0],
    }
    after = (snapshot(ex("ro")), snapshot(os.path.join(ex("ro"), "f")),
             snapshot(os.path.join(ex("ro"), "d")))
    st, data, _ = C.read(ffh, 0, 100)
    bad = {k: v for k, v in got.items() if v != S.ROFS}
    ok = not bad and before == after and st == S.NFS3_OK and data == b"read-only data\n"
    report(ok, "ro export: 13 modifying calls -> ROFS, files unchanged, READ still works",
           "not ROFS: %s; unchanged: %s" % (bad, before == after))


# ---- squashing ----

def owner(export, name):
    st = os.lstat(os.path.join(ex(export), name))
    return st.st_uid, st.st_gid


def root_squash():
    """root_squash: uid 0 creates as 65534 and cannot chown to root"""
    st, _ = S.create_as(C, ROOT["rsq"], "byroot", S.auth_sys(0, 0))
    o = owner("rsq", "byroot") if st == S.NFS3_OK else None
    _, fh, _ = C.lookup(ROOT["rsq"], "byroot")
    st2, _ = S.setattr_as(C, fh, S.auth_sys(0, 0), uid=0) if fh else (None, None)
    st3, _ = S.setattr_as(C, fh, S.auth_sys(0, 0), gid=0) if fh else (None, None)
    # mkdir and symlink squash too
    st4, _ = C.mkdir(ROOT["rsq"], "rootdir")
    o4 = owner("rsq", "rootdir") if st4 == S.NFS3_OK else None
    ok = st == S.NFS3_OK and o == (65534, 65534) and st2 == S.PERM and st3 == S.PERM
    ok = ok and owner("rsq", "byroot") == (65534, 65534) and o4 == (65534, 65534)
    report(ok, "root_squash: uid 0 creates as 65534:65534, chown to 0 -> PERM",
           "create %s owner %s chown %s chgrp %s mkdir owner %s" % (st, o, st2, st3, o4))


def root_squash_file_of_root():
    """root_squash: a root-owned 0600 file is not readable/writable as root"""
    _, fh, _ = C.lookup(ROOT["rsq"], "rootfile")
    st_r, _, _ = C.read(fh, 0, 100)
    st_w, _, _, _ = C.write(fh, 0, b"pwn", S.FILE_SYNC)
    st_c, _ = S.setattr_as(C, fh, S.auth_sys(0, 0), mode=0o666)
    with open(os.path.join(ex("rsq"), "rootfile"), "rb") as f:
        data = f.read()
    ok = st_r == S.ACCES and st_w == S.ACCES and st_c == S.PERM and data == b"root only\n"
    report(ok, "root_squash: root's 0600 file -> READ/WRITE ACCES, chmod PERM",
           "read %s write %s chmod %s" % (st_r, st_w, st_c))


def root_squash_controls():
    """squash controls: uid 1000 on root_squash keeps 1000; no_root_squash keeps 0"""
    st1, _ = S.create_as(C, ROOT["rsq"], "by1000", S.auth_sys(1000, 1000))
    st2, _ = S.create_as(C, ROOT["rw"], "byroot", S.auth_sys(0, 0))
    ok = st1 == S.NFS3_OK and owner("rsq", "by1000") == (1000, 1000)
    ok = ok and st2 == S.NFS3_OK and owner("rw", "byroot") == (0, 0)
    C.remove(ROOT["rw"], "byroot")
    report(ok, "controls: uid 1000 not squashed by root_squash; uid 0 kept on no_root_squash",
           "%s %s" % (st1, st2))


def all_squash():
    """all_squash anonuid=1234 anongid=4321: everyone creates as 1234:4321"""
    res = {}
    for uid, gid in ((1000, 1000), (0, 0), (4242, 7, )):
        name = "by%d" % uid
        st, _ = S.create_as(C, ROOT["asq"], name, S.auth_sys(uid, gid, (0, 10)))
        res[uid] = (st, owner("asq", name) if st == S.NFS3_OK else None)
    _, fh, _ = C.lookup(ROOT["asq"], "by1000")
    st, _ = S.setattr_as(C, fh, S.auth_sys(1000, 1000), uid=1000)
    ok = all(v == (S.NFS3_OK, (1234, 4321)) for v in res.values()) and st == S.PERM
    report(ok, "all_squash: uid 1000/0/4242 create as 1234:4321; chown back -> PERM",
           "got %s, chown %s" % (res, st))


# ---- SIGHUP reload: removed export, address not allowed ----

def reload_exports():
    os.replace(os.path.join(TDIR, "conf", "exports.2"), os.path.join(TDIR, "conf", "exports"))
    os.kill(PID, signal.SIGHUP)
    deadline = time.time() + 10
    while time.time() < deadline:
        if S.mnt_status(C, ex("gone"))[0] != 0:
            return True
        time.sleep(0.05)
    return False


def removed_export():
    """handle from export A used after A is removed by SIGHUP -> STALE"""
    _, hfh, _ = C.lookup(ROOT["gone"], "h")
    pre = S.getattr_st(C, hfh)
    reloaded = reload_exports()
    got = [S.getattr_st(C, ROOT["gone"]), S.getattr_st(C, hfh), C.read(hfh, 0, 10)[0],
           C.create(ROOT["gone"], "new")[0], C.lookup(ROOT["gone"], "h")[0]]
    still = S.getattr_st(C, ROOT["rw"]) == S.NFS3_OK and S.getattr_st(C, FILE_FH) == S.NFS3_OK
    ok = pre == S.NFS3_OK and reloaded and all(s == S.STALE for s in got) and still
    ok = ok and sorted(os.listdir(ex("gone"))) == ["h"]
    report(ok, "export removed by SIGHUP: its handles -> STALE; other exports' handles still OK",
           "before %s reloaded %s after %s others ok %s" % (pre, reloaded, got, still))


def address_not_allowed():
    """export admitting only 10.9.9.9: MNT ACCES, NFS calls refused"""
    st_m, fh = S.mnt_status(C, ex("only9"))
    old = ROOT["only9"]
    res = {
        "GETATTR": try_call(S.getattr_st, C, old),
        "READDIR": try_call(lambda: S.readdir_names(C, old)[0]),
        "CREATE": try_call(lambda: C.create(old, "evil")[0]),
        "LOOKUP": try_call(lambda: C.lookup(old, "secretfile")[0]),
    }
    C.connect()

    def refused(r):
        return (r[0] == "ok" and r[1] in (S.ACCES, S.PERM)) or (r[0] == "rpc" and r[1][0] == "auth")
    ok = st_m == S.MNT3ERR_ACCES and fh is None and all(refused(r) for r in res.values())
    ok = ok and sorted(os.listdir(ex("only9"))) == ["secretfile"]
    report(ok, "client address not allowed: MNT -> ACCES, NFS calls -> %s" %
           sorted(set(str(r[1]) for r in res.values())), "MNT %s, %s" % (st_m, res))


def narrowed_export():
    """export narrowed by SIGHUP keeping its fsid: handles now outside it refused"""
    # Runs after removed_export (which did the reload): "wide" (fsid 4242)
    # is now "wide/public" (fsid 4242).
    got = {k: S.getattr_st(C, WIDE[k]) for k in ("root", "private", "file")}
    st_rd, data, _ = C.read(WIDE["file"], 0, 100)
    st_ls, names = S.readdir_names(C, WIDE["root"])
    st_cr = C.create(WIDE["private"], "planted")[0]
    ctl = S.getattr_st(C, WIDE["pfile"])
    ok = all(v != S.NFS3_OK for v in got.values()) and st_rd != S.NFS3_OK
    # Handles are bound to the export they were issued under (its path is
    # in the MAC'd handle), so even one inside the narrowed export is STALE:
    # clients mount the new export afresh.
    ok = ok and st_ls != S.NFS3_OK and st_cr != S.NFS3_OK and ctl == S.STALE
    ok = ok and not os.path.exists(os.path.join(ex("wide"), "private", "planted"))
    report(ok, "export narrowed to a subdirectory (same fsid): old handles refused (STALE)",
           "GETATTR %s, READ private file %s %r, READDIR old root %s %s, CREATE %s, inside ctl %s"
           % (got, st_rd, data, st_ls, names, st_cr, ctl))


# ---- secure ----

def secure_unpriv():
    """`secure` export from an unprivileged source port -> refused"""
    st_m, _ = S.mnt_status(C, ex("sec"))
    p = S.PrivClient("127.0.0.1", PORT)
    fh = p.mnt(ex("sec"))
    p.close()
    port = C.sock.getsockname()[1]
    got = [S.getattr_st(C, fh), C.create(fh, "unpriv")[0], S.readdir_names(C, fh)[0]]
    ok = port >= 1024 and st_m == S.MNT3ERR_ACCES and all(s == S.ACCES for s in got)
    ok = ok and not os.path.exists(os.path.join(ex("sec"), "unpriv"))
    report(ok, "secure export from port %d: MNT -> ACCES, NFS calls -> ACCES" % port,
           "MNT %s, calls %s" % (st_m, got))


def secure_priv():
    """`secure` export from a privileged source port -> allowed"""
    p = S.PrivClient("127.0.0.1", PORT)
    port = p.source_port()
    st_m, fh = S.mnt_status(p, ex("sec"))
    st_g = S.getattr_st(p, fh) if fh else None
    st_c = p.create(fh, "priv")[0] if fh else None
    p.close()
    ok = port < 1024 and st_m == 0 and st_g == S.NFS3_OK and st_c == S.NFS3_OK
    ok = ok and os.path.exists(os.path.join(ex("sec"), "priv"))
    report(ok, "secure export from privileged port %d: MNT, GETATTR, CREATE allowed" % port,
           "MNT %s GETATTR %s CREATE %s" % (st_m, st_g, st_c))


# ---- oversized requests ----

def big_write():
    """WRITE of 1 MiB + 1 -> refused or clamped to wtmax, never more"""
    st0, rtmax, wtmax = S.fsinfo(C, ROOT["rw"])
    st, fh, _ = C.create(ROOT["rw"], "big")
    n = (1 << 20) + 1
    r = try_call(S.write_count, C, fh, 0, b"w" * n, n)
    C.connect()
    size = os.stat(os.path.join(ex("rw"), "big")).st_size
    if r[0] == "ok" and r[1][0] == S.NFS3_OK:
        ok = r[1][1] <= wtmax and size == r[1][1]
    else:
        ok = r in (("ok", (S.INVAL, 0)), ("ok", (S.FBIG, 0)), ("rpc", GARBAGE_ARGS)) or r[0] == "closed"
        ok = ok and size == 0
    # count word larger than the data that follows: must not write past it
    r2 = try_call(S.write_count, C, fh, 0, b"abc", 1000)
    C.connect()
    size2 = os.stat(os.path.join(ex("rw"), "big")).st_size
    ok = ok and (r2[0] != "ok" or r2[1][0] != S.NFS3_OK or r2[1][1] <= 3)
    ok = ok and size2 in (size, 3) and C.getattr(fh)[0] == S.NFS3_OK
    report(ok and st0 == S.NFS3_OK, "WRITE count 1 MiB+1 (wtmax %s) -> %s, file %d bytes; count > data -> %s"
           % (wtmax, r, size, r2), "")


def big_read():
    """READ count 64 MiB -> clamped to rtmax, data correct"""
    _, rtmax, _ = S.fsinfo(C, ROOT["rw"])
    _, fh, _ = C.lookup(ROOT["rw"], "twomeg")
    st, data, eof = C.read(fh, 0, 64 << 20)
    with open(os.path.join(ex("rw"), "twomeg"), "rb") as f:
        want = f.read()
    ok = st == S.NFS3_OK and 0 < len(data) <= rtmax and data == want[:len(data)] and not eof
    st2, data2, _ = C.read(fh, 0, 0xFFFFFFFF)
    ok = ok and st2 == S.NFS3_OK and len(data2) <= rtmax
    report(ok, "READ count 64 MiB / 4 GiB-1 -> clamped to rtmax %s (got %s bytes)"
           % (rtmax, len(data) if data else None), "status %s/%s" % (st, st2))


def huge_record():
    """a record declaring 100 MiB -> connection closed, server alive"""
    results = []
    for hdr in ((0x80000000 | (100 << 20)), (100 << 20), 0x7FFFFFFF):
        s = socket.create_connection(("127.0.0.1", PORT), 5)
        s.settimeout(5)
        t0 = time.time()
        try:
            s.sendall(struct.pack(">I", hdr) + b"\0" * 65536)
            got = s.recv(100)
            results.append(("closed" if got == b"" else "data", round(time.time() - t0, 1)))
        except (ConnectionError, BrokenPipeError):
            results.append(("reset", round(time.time() - t0, 1)))
        except socket.timeout:
            results.append(("still open", 5))
        s.close()
    # many 1 MiB fragments, none last: past the record limit -> closed
    s = socket.create_connection(("127.0.0.1", PORT), 5)
    s.settimeout(5)
    try:
        for _ in range(4):
            s.sendall(struct.pack(">I", 1 << 20) + b"\0" * (1 << 20))
        got = s.recv(100)
        results.append("closed" if got == b"" else "data")
    except (ConnectionError, BrokenPipeError):
        results.append("reset")
    except socket.timeout:
        results.append("still open")
    s.close()
    alive = try_call(client().null)[0] == "ok"
    ok = alive and all(r[0] in ("closed", "reset") if isinstance(r, tuple) else r in ("closed", "reset")
                       for r in results)
    report(ok, "records declaring 100 MiB / 2 GiB, and 4 MiB of fragments -> closed; server alive",
           "got %s alive %s" % (results, alive))


# ---- credentials ----

def auth_cases():
    """AUTH_SYS with 17 gids or a 300-byte machine name, RPCSEC_GSS -> AUTH_ERROR"""
    c = client()
    args = S.Packer().opaque(ROOT["rw"]).bytes()

    def sysbody(machine, gids, pad=b""):
        p = S.Packer().u32(0).string(machine).u32(0).u32(0).u32(len(gids))
        for g in gids:
            p.u32(g)
        return p.bytes() + pad

    creds = {
        "16 gids": (S.AUTH_SYS, sysbody("m", range(16))),
        "17 gids": (S.AUTH_SYS, sysbody("m", range(17))),
        "1000 gids": (S.AUTH_SYS, sysbody("m", range(1000))),
        "255-byte machine": (S.AUTH_SYS, sysbody("m" * 255, ())),
        "300-byte machine": (S.AUTH_SYS, sysbody("m" * 300, ())),
        "trailing bytes": (S.AUTH_SYS, sysbody("m", (), b"\0" * 8)),
        "gid count lies": (S.AUTH_SYS, sysbody("m", ())[:-4] + struct.pack(">I", 5)),
        "RPCSEC_GSS": (S.RPCSEC_GSS, S.Packer().u32(1).u32(0).u32(0).u32(1).opaque(b"ctx").bytes()),
        "flavor 12345": (12345, b""),
        "500-byte body": (S.AUTH_SYS, b"\0" * 500),
    }
    got = {}
    for k, cred in creds.items():
        r = S.raw_call(c, S.NFS_PROG, 3, S.NFSPROC3_GETATTR, args, cred)
        if r[0] == "ok":
            got[k] = ("ok", r[1].u32())
        elif r[0] == "rpc":
            got[k] = r[1]
        else:
            got[k] = "closed"
            c.connect()
    want_ok = {"16 gids", "255-byte machine"}
    bad = {k: v for k, v in got.items()
           if (k in want_ok and v != ("ok", 0)) or (k not in want_ok and not (
               isinstance(v, tuple) and v[0] == "auth") and v != "closed")}
    report(not bad, "AUTH_SYS with 17/1000 gids, 300-byte machine, malformed body; RPCSEC_GSS; "
           "unknown flavor -> AUTH_ERROR (16 gids, 255 bytes accepted)", "got %s" % bad)


def squash_via_mount_auth():
    """AUTH_NONE on a no_root_squash export is not treated as root"""
    st, _ = S.create_as(C, ROOT["rw"], "bynone", (0, b""))
    o = owner("rw", "bynone") if st == S.NFS3_OK else None
    ok = st != S.NFS3_OK or o != (0, 0)
    if st == S.NFS3_OK:
        C.remove(ROOT["rw"], "bynone")
    report(ok, "AUTH_NONE is not root on a no_root_squash export", "create %s owner %s" % (st, o))


# ---- run ----

RW_LIST = sorted(os.listdir(ex("rw")))
CANARY_SIZE = os.stat(os.path.join(SECRET, "canary")).st_size

for fn in (forged_random, forged_oversize, bit_flips, unexported_spliced, unexported_keyed,
           dotdot_root, names_with_slash, long_names, long_symlink,
           mnt_outside, mnt_dotdot, mnt_symlink, mnt_long,
           symlinks_not_followed, setattr_symlink,
           rename_xdev, rename_dotdot, link_xdev, ro_export,
           root_squash, root_squash_file_of_root, root_squash_controls, all_squash,
           squash_via_mount_auth,
           secure_unpriv, secure_priv,
           big_write, big_read, huge_record, auth_cases,
           removed_export, narrowed_export, address_not_allowed):
    if fn.__name__ in os.environ.get("SEC_SKIP", "").split(","):
        continue  # for debugging only: SEC_SKIP=case1,case2
    case(fn)
    if C.sock is None:
        C.connect()

sys.exit(min(S.failures(), 100))
