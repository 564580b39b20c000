#!/usr/bin/env python3
"""Export-security cases over NFSv4.1 (and 4.0 where it differs), against
the snfsd that t_exports.sh runs for exports_cases.py (NFSv3/MOUNT).

Usage: exports_cases4.py PORT SNFSD_PID TDIR pre|post

"pre" runs before exports_cases.py and leaves in TDIR/cases4.json the
handles that "post" needs: exports_cases.py ends by reloading the exports
(SIGHUP: "gone" removed, only9 admitting 10.9.9.9 only, "wide" narrowed
to wide/public), and "post" checks what NFSv4 clients see after that.
The tree is the one t_exports.sh builds; the canary outside the exports
and the listing of everything outside them are checked by t_exports.sh
after both scripts. Each case prints "ok - v4 ..." or "not ok - v4 ...";
the exit status is the number of failures (capped).

Statuses are those of RFC 8881 (4.1) section 15 and 18, RFC 7530 (4.0).
"""

import json
import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import secrpc as S  # noqa: E402
import secrpc4 as V  # noqa: E402
from secrpc import report, try_call  # noqa: E402
from secrpc4 import (  # noqa: E402
    putfh, putfh_raw, putrootfh, putpubfh, getfh, lookup, lookupp, getattr_, savefh,
    readdir, readlink, create, remove, rename, link, setattr_, read, write,
    NFS4_OK, OP_GETFH, OP_GETATTR, OP_READ, OP_READLINK, OP_WRITE, OP_SEQUENCE,
)

PORT = int(sys.argv[1])
PID = int(sys.argv[2])
TDIR = sys.argv[3]
PHASE = sys.argv[4]
SRV = os.path.join(TDIR, "srv")
SECRET = os.path.join(TDIR, "secret")
STATE_FILE = os.path.join(TDIR, "cases4.json")
GARBAGE_ARGS = 4
R = random.Random(41)
PSEUDO_MAGIC = bytes([0xF4]) + b"SNFS4P\0"  # src/server/nfs4/pseudofs.c
EXPORTS = ["rw", "rw2", "ro", "rsq", "asq", "sec", "only9", "gone", "wide"]
EXPORTS_AFTER = ["rw", "rw2", "ro", "rsq", "asq", "sec", "wide"]


def ex(name):
    return os.path.join(SRV, name)


def conn(priv=False):
    return (S.PrivClient if priv else S.Client)("127.0.0.1", PORT)


def v4(minor=1, priv=False, **kw):
    return V.V4(conn(priv), minor=minor, **kw)


def names(d):
    return sorted(os.listdir(d))


def snapshot(path):
    st = os.lstat(path)
    if os.path.isdir(path) and not os.path.islink(path):
        return ("dir", names(path), st.st_mtime_ns, st.st_mode)
    with open(path, "rb") as f:
        return ("file", f.read(), st.st_mtime_ns, st.st_uid, st.st_gid, st.st_mode, st.st_nlink)


def owner(export, name):
    st = os.lstat(os.path.join(ex(export), name))
    return st.st_uid, st.st_gid


def case(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - any error fails the case
        report(False, "v4 " + fn.__doc__.strip().splitlines()[0], "exception %s: %s" % (type(e).__name__, e))


def st_name(s):
    for k, v in vars(V).items():
        if k.isupper() and v == s and not k.startswith(("OP_", "A_", "AUTH", "NFSPROC", "NF4", "SHARE", "OPEN4", "CLAIM",
                                                         "UNCHECKED", "GUARDED", "EXCL", "UNSTABLE",
                                                         "DATA_SYNC", "FILE_SYNC")):
            return k
    return str(s)


def fmt(d):
    """A dict of statuses for a failure message, names not numbers."""
    if isinstance(d, dict):
        return "{%s}" % ", ".join("%s: %s" % (k, fmt(v)) for k, v in d.items())
    if isinstance(d, (list, tuple)):
        return "[%s]" % ", ".join(fmt(v) for v in d)
    return st_name(d) if isinstance(d, int) else repr(d)


def diff(got, want):
    """The entries of got that are not as want says (want[k] is one status
    or a tuple of acceptable ones)."""
    bad = {}
    for k, v in got.items():
        w = want[k] if isinstance(want, dict) else want
        if v not in (w if isinstance(w, tuple) else (w,)):
            bad[k] = v
    return bad


C = v4(1)
C0 = v4(0)


def fh(path, c=None):
    return (c or C).fh_of(path)


# ======================= pre: before the SIGHUP reload =======================

def setup_pre():
    global ROOT, FILE_FH, SRV_FH, PSEUDO_ROOT
    ROOT = {n: fh(ex(n)) for n in EXPORTS if n != "sec"}
    FILE_FH = fh(ex("rw") + "/f")
    SRV_FH = fh(SRV)
    PSEUDO_ROOT = C.compound([putrootfh(), getfh()]).value(OP_GETFH)
    p = V.V4(conn(True), 1)
    ROOT["sec"] = p.fh_of(ex("sec"))
    p.conn.close()
    keep = {"gone": ROOT["gone"], "gone_h": fh(ex("gone") + "/h"), "only9": ROOT["only9"],
            "only9_file": fh(ex("only9") + "/secretfile"), "wide": ROOT["wide"],
            "wide_private": fh(ex("wide") + "/private"), "wide_file": fh(ex("wide") + "/private/file"),
            "wide_public": fh(ex("wide") + "/public"), "wide_pfile": fh(ex("wide") + "/public/pfile"),
            "srv": SRV_FH, "rw": ROOT["rw"], "file": FILE_FH}
    with open(STATE_FILE, "w") as f:
        json.dump({k: v.hex() for k, v in keep.items()}, f)


# ---- forged and damaged handles ----

def forged_random():
    """PUTFH of forged handles: random bytes of every length 0..128, random MACs -> BADHANDLE"""
    bad = []
    for c in (C, C0):
        for n in list(range(0, 129)) * (2 if c is C else 1):
            f = bytes(R.getrandbits(8) for _ in range(n))
            st = c.putfh_status(f)
            if st != V.BADHANDLE:
                bad.append((c.minor, n, st))
        # real header, fsid and export tag, random MAC: only the key can refuse it
        for _ in range(64):
            f = bytearray(FILE_FH)
            for i in range(len(f) - 8, len(f)):
                f[i] = R.getrandbits(8)
            st = c.putfh_status(bytes(f))
            if st != V.BADHANDLE:
                bad.append((c.minor, "mac", st))
    report(not bad, "v4 forged handles: 387 random (4.1 and 4.0) + 128 random-MAC -> PUTFH BADHANDLE",
           "got %s" % bad[:5])


def forged_pseudo():
    """forged pseudo-fs handles (our magic, unknown path hash) -> STALE, never a node"""
    bad = []
    for _ in range(64):
        f = PSEUDO_MAGIC + bytes(R.getrandbits(8) for _ in range(8))
        st = C.putfh_status(f)
        if st != V.STALE:
            bad.append(st)
    # the magic with another length is no pseudo handle at all
    for n in (8, 15, 17, 24, 128):
        f = (PSEUDO_MAGIC + bytes(R.getrandbits(8) for _ in range(120)))[:n]
        st = C.putfh_status(f)
        if st != V.BADHANDLE:
            bad.append((n, st))
    report(not bad, "v4 forged pseudo handles: unknown hash -> STALE; other lengths -> BADHANDLE",
           "got %s" % fmt(bad[:5]))


def forged_oversize():
    """PUTFH with an opaque over NFS4_FHSIZE (129, 200, 4096) or cut short -> BADXDR"""
    got = {}
    for c in (C, C0):
        for n in (129, 200, 4096):
            r = try_call(c.compound, [putfh_raw(S.Packer().opaque(b"\1" * n).bytes()), getattr_()])
            got["%d.%d" % (c.minor, n)] = (r[1].last() if r[0] == "ok" else r[1])
        # the length word says 64, 20 bytes follow, then the record ends
        r = try_call(c.compound, [putfh_raw(struct.pack(">I", 64) + b"\1" * 20)])
        got["%d.short" % c.minor] = r[1].last() if r[0] == "ok" else r[1]
    bad = diff(got, (V.BADXDR, GARBAGE_ARGS))
    # an undecodable op after SEQUENCE still answers SEQUENCE
    ok = not bad and C.putfh_status(FILE_FH) == NFS4_OK
    report(ok, "v4 PUTFH opaque of 129/200/4096 bytes or cut short -> BADXDR (4.1, 4.0)", "got %s" % fmt(bad))


def bit_flips():
    """every single-bit flip of a file, export-root and pseudo handle -> BADHANDLE/STALE, never OK"""
    bad = []
    n = 0
    for c, handles in ((C, (FILE_FH, ROOT["rw"], SRV_FH)), (C0, (FILE_FH,))):
        for h in handles:
            for bit in range(len(h) * 8):
                f = bytearray(h)
                f[bit // 8] ^= 1 << (bit % 8)
                st = c.putfh_status(bytes(f))
                n += 1
                if st not in (V.BADHANDLE, V.STALE):
                    bad.append((c.minor, len(h), bit, st))
            for f in (h[:-1], h + b"\0", h[1:]):
                st = c.putfh_status(f)
                if st not in (V.BADHANDLE, V.STALE):
                    bad.append((c.minor, "len%d" % len(f), st))
    ok = not bad and C.putfh_status(FILE_FH) == NFS4_OK and C0.putfh_status(FILE_FH) == NFS4_OK
    # FH4_PERSISTENT (RFC 8881 4.2.3): FHEXPIRED is never an answer
    st, a = C.getattr(FILE_FH, (V.A_FH_EXPIRE_TYPE,))
    ok = ok and st == NFS4_OK and a["fh_expire_type"] == 0
    st, a = C.getattr(SRV_FH, (V.A_FH_EXPIRE_TYPE,))
    ok = ok and st == NFS4_OK and a["fh_expire_type"] == 0
    report(ok, "v4 bit-flipped handles (%d flips) -> BADHANDLE/STALE; originals OK; fh_expire_type "
           "PERSISTENT (no FHEXPIRED)" % n, "got %s" % fmt(bad[:5]))


def unexported_spliced():
    """handle of a non-exported dir spliced into an export handle -> PUTFH BADHANDLE"""
    bk = S.kernel_handle(SECRET)
    fsid = S.handle_fsid(ROOT["rw"])
    tag = S.handle_tag(ROOT["rw"])
    tries = [S.make_handle(None, fsid, bk, mac=ROOT["rw"][-8:], tag=tag),
             S.make_handle(None, fsid, bk, mac=b"\0" * 8, tag=tag),
             S.make_handle(None, fsid, bk, mac=bytes(R.getrandbits(8) for _ in range(8)), tag=tag),
             S.make_handle(None, S.handle_fsid(FILE_FH), S.kernel_handle(SRV), mac=FILE_FH[-8:], tag=tag)]
    sts = [C.putfh_status(t) for t in tries] + [C.putfh_status(t, readdir()) for t in tries]
    sts += [C0.putfh_status(t, readdir()) for t in tries]
    report(all(s == V.BADHANDLE for s in sts),
           "v4 non-exported dir (secret/, srv/): backend handle spliced into an export handle -> BADHANDLE",
           "got %s" % fmt(sts))


def same_handles():
    """NFSv4 handles are the MAC'd handles of NFSv3 (the v3 analysis covers them)"""
    v3 = S.Client("127.0.0.1", PORT)
    m = v3.mnt(ex("rw"))
    _, f3, _ = v3.lookup(m, "f")
    v3.close()
    ok = m == ROOT["rw"] and f3 == FILE_FH and fh(ex("rw"), C0) == m
    report(ok, "v4 GETFH of an export root and a file equals the NFSv3 MNT/LOOKUP handle (4.1, 4.0)",
           "v3 %s v4 %s" % (m.hex(), ROOT["rw"].hex()))


# ---- the pseudo file system ----

def pseudo_listing():
    """the pseudo fs shows only the exports' path components; nothing else is listed"""
    bad = []
    for c in (C, C0):
        parts = [p for p in SRV.split("/") if p]
        h = PSEUDO_ROOT
        for i, p in enumerate(parts):
            st, got = c.readdir_names(h)
            if st != NFS4_OK or got != [p]:
                bad.append((c.minor, "/" + "/".join(parts[:i]), st, got))
            st, h, a = c.lookup_fh(h, p)
            real = os.stat("/" + "/".join(parts[:i + 1]))
            # a pseudo directory is ours, not the real one: own handle, fileid
            if st != NFS4_OK or not h.startswith(PSEUDO_MAGIC) or a["fileid"] == real.st_ino \
                    or a["type"] != V.NF4DIR:
                bad.append((c.minor, p, st, h and h[:8], a))
        st, got = c.readdir_names(h)
        if st != NFS4_OK or sorted(got) != sorted(EXPORTS):
            bad.append((c.minor, "srv", st, got))
        # the real neighbours of the exports are not there
        for d, n in ((PSEUDO_ROOT, "etc"), (PSEUDO_ROOT, "proc"), (fh(TDIR, c), "secret"),
                     (fh(TDIR, c), "conf"), (fh(TDIR, c), "state"), (h, "not-exported-file"),
                     (h, "rwx"), (h, "r")):
            st, _, _ = c.lookup_fh(d, n)
            if st != V.NOENT:
                bad.append((c.minor, "LOOKUP " + n, st))
        # OPEN of a non-exported file in a pseudo dir: NOENT too
        st, _, _ = c.open(h, "not-exported-file")
        if st != V.NOENT:
            bad.append((c.minor, "OPEN not-exported-file", st))
    report(not bad, "v4 pseudo root: each pseudo dir lists only the next export path component, srv/ "
           "exactly the 9 exports; secret, conf, state, etc, not-exported-file -> NOENT (4.1, 4.0)",
           "got %s" % fmt(bad[:6]))


def lookupp_root():
    """LOOKUPP at an export root goes to the pseudo fs, never the real parent"""
    bad = []
    real_srv = os.stat(SRV).st_ino
    for c in (C, C0):
        for n in ("rw", "ro", "only9", "wide"):
            r = c.compound([putfh(ROOT[n]), lookupp(), getfh(), getattr_()])
            h, a = r.value(OP_GETFH), r.value(OP_GETATTR)
            if r.status != NFS4_OK or h != SRV_FH or a["fileid"] == real_srv:
                bad.append((c.minor, n, r.statuses(), a))
        # sub -> rw -> srv (pseudo) -> ... -> / -> NOENT (RFC 8881 18.14.3)
        depth = len([p for p in SRV.split("/") if p])
        ops = [putfh(fh(ex("rw") + "/sub", c)), lookupp(), getattr_((V.A_FILEID,)), lookupp(), getfh()]
        ops += [lookupp()] * depth + [getfh(), lookupp()]
        r = c.compound(ops)
        sts = r.statuses()
        want = [0] * (len(ops) - 1) + [V.NOENT]
        if sts != want or r.value(OP_GETATTR)["fileid"] != os.stat(ex("rw")).st_ino \
                or r.value(OP_GETFH, 0) != SRV_FH or r.value(OP_GETFH, 1) != PSEUDO_ROOT:
            bad.append((c.minor, "chain", sts))
        # what LOOKUPP reached lists the exports, not srv/'s real entries
        st, got = c.readdir_names(SRV_FH)
        if st != NFS4_OK or "secret" in got or "not-exported-file" in got:
            bad.append((c.minor, "listing", got))
        # ".." and "." are no names in NFSv4 (LOOKUPP is): BADNAME
        for d in (ROOT["rw"], SRV_FH, PSEUDO_ROOT):
            for nm in ("..", "."):
                st = c.compound([putfh(d), lookup(nm), getfh()]).status
                if st != V.BADNAME:
                    bad.append((c.minor, "LOOKUP " + nm, st))
    report(not bad, "v4 LOOKUPP at export roots -> the pseudo srv/ (not the real dir); up to / then "
           "NOENT; LOOKUP '..'/'.' -> BADNAME (4.1, 4.0)", "got %s" % fmt(bad[:6]))


def walk_outside():
    """walking from PUTROOTFH/PUTPUBFH to paths outside the exports -> NOENT; through symlinks -> SYMLINK"""
    got = {}
    paths = {"secret/canary": (SECRET + "/canary", V.NOENT),
             "conf/exports": (TDIR + "/conf/exports", V.NOENT),
             "srv/not-exported-file": (SRV + "/not-exported-file", V.NOENT),
             "/etc/passwd": ("/etc/passwd", V.NOENT),
             "rw/out/canary": (ex("rw") + "/out/canary", V.SYMLINK),
             "rw/dirlink/etc": (ex("rw") + "/dirlink/etc", V.SYMLINK),
             "rw/abs/x": (ex("rw") + "/abs/x", V.SYMLINK),
             "rw/sub": (ex("rw") + "/sub", NFS4_OK)}
    want = {}
    for c in (C, C0):
        for k, (p, w) in paths.items():
            for first in (putrootfh(), putpubfh()):
                ops = [first] + c.path_ops(p)[1:] + [getattr_((V.A_TYPE,))]
                r = c.compound(ops)
                key = "%d %s %s" % (c.minor, "pub" if first.num == V.OP_PUTPUBFH else "root", k)
                got[key], want[key] = r.status, w
    bad = diff(got, want)
    report(not bad, "v4 walk to secret/, conf/, srv/not-exported-file, /etc -> NOENT; through rw/out, "
           "rw/dirlink, rw/abs -> SYMLINK; rw/sub OK (PUTROOTFH, PUTPUBFH; 4.1, 4.0)", "got %s" % fmt(bad))


# ---- names ----

BAD_NAMES = {"": V.INVAL, ".": V.BADNAME, "..": V.BADNAME, "a/b": V.BADNAME, "/": V.BADNAME,
             "../secret": V.BADNAME, "sub/..": V.BADNAME, "f\0x": V.BADNAME}


def name_ops(c, d, n):
    """The name-taking ops on directory d with name n: {op: [ops]}."""
    return {
        "LOOKUP": [putfh(d), lookup(n)],
        "CREATE dir": [putfh(d), create(V.NF4DIR, n)],
        "CREATE symlink": [putfh(d), create(V.NF4LNK, n, linkdata="f")],
        "OPEN create": [putfh(d)] + c.open_ops(n, V.SHARE_ACCESS_BOTH, V.UNCHECKED4, {"mode": 0o644}),
        "OPEN": [putfh(d)] + c.open_ops(n),
        "REMOVE": [putfh(d), remove(n)],
        "RENAME from": [putfh(d), savefh(), rename(n, "renamed")],
        "RENAME to": [putfh(d), savefh(), rename("f", n)],
        "LINK": [putfh(FILE_FH), savefh(), putfh(d), link(n)],
        "SECINFO": [putfh(d), V.secinfo(n)],
    }


def bad_names():
    """names '', '.', '..', 'a/b', '/', NUL in LOOKUP/CREATE/OPEN/REMOVE/RENAME/LINK -> INVAL/BADNAME"""
    before = names(ex("rw"))
    got, want = {}, {}
    for c in (C, C0):
        for n, w in BAD_NAMES.items():
            for k, ops in name_ops(c, ROOT["rw"], n).items():
                r = c.compound(ops)
                key = "%d %s %r" % (c.minor, k, n)
                got[key], want[key] = r.last(), w
        for n in ("../secret", "a/b", ".."):  # the pseudo fs decodes names the same way
            key = "%d pseudo LOOKUP %r" % (c.minor, n)
            got[key], want[key] = c.compound([putfh(SRV_FH), lookup(n)]).last(), BAD_NAMES[n]
    bad = diff(got, want)
    ok = not bad and names(ex("rw")) == before and not os.path.lexists(os.path.join(SRV, "secret", "renamed"))
    ok = ok and not os.path.lexists(os.path.join(SRV, "renamed"))
    report(ok, "v4 names ''/'.'/'..'/'a/b'/'/'/NUL in LOOKUP, CREATE, OPEN, REMOVE, RENAME, LINK -> "
           "INVAL ('') / BADNAME (%d ops, 4.1 and 4.0); nothing made or moved" % len(got),
           "not as expected: %s; listing %s" % (fmt(bad), names(ex("rw")) if names(ex("rw")) != before else "same"))


def long_names():
    """names of 256/1000/65536 bytes -> NAMETOOLONG (255 -> NOENT)"""
    before = names(ex("rw"))
    got, want = {}, {}
    for c in (C, C0):
        for n in (256, 1000, 65536):
            for k, ops in name_ops(c, ROOT["rw"], "n" * n).items():
                r = c.compound(ops)
                key = "%d %s %d" % (c.minor, k, n)
                got[key], want[key] = r.last(), V.NAMETOOLONG
        key = "%d LOOKUP 255" % c.minor
        got[key], want[key] = c.compound([putfh(ROOT["rw"]), lookup("n" * 255)]).last(), V.NOENT
        key = "%d pseudo LOOKUP 256" % c.minor
        got[key], want[key] = c.compound([putfh(SRV_FH), lookup("n" * 256)]).last(), V.NAMETOOLONG
    r = try_call(C.compound, [putfh(ROOT["rw"]), lookup("z" * 70000)])
    got["LOOKUP 70000"] = r[1].last() if r[0] == "ok" else r[1]
    want["LOOKUP 70000"] = (V.NAMETOOLONG, V.BADXDR, GARBAGE_ARGS)
    bad = diff(got, want)
    ok = not bad and names(ex("rw")) == before
    report(ok, "v4 names of 256/1000/65536 bytes -> NAMETOOLONG in %d ops (255 -> NOENT, 70000 -> "
           "NAMETOOLONG)" % len(got), "not as expected: %s" % fmt(bad))


def long_symlink():
    """CREATE of a symlink with a target over 4096 bytes -> NAMETOOLONG; 900 bytes stored verbatim"""
    got = [C.compound([putfh(ROOT["rw"]), create(V.NF4LNK, "longlink", linkdata="x/" * 2049)]).last(),
           C.compound([putfh(ROOT["rw"]), create(V.NF4LNK, "longlink", linkdata="y" * 70000)]).last(),
           C0.compound([putfh(ROOT["rw"]), create(V.NF4LNK, "longlink", linkdata="x/" * 2049)]).last()]
    ok = got == [V.NAMETOOLONG] * 3 and not os.path.lexists(os.path.join(ex("rw"), "longlink"))
    r = C.compound([putfh(ROOT["rw"]), create(V.NF4LNK, "v4oklink", linkdata="../" * 300),
                    readlink()])
    ok = ok and r.status == NFS4_OK and r.value(OP_READLINK) == "../" * 300
    ok = ok and os.readlink(os.path.join(ex("rw"), "v4oklink")) == "../" * 300
    C.compound([putfh(ROOT["rw"]), remove("v4oklink")])
    report(ok, "v4 CREATE NF4LNK with 4098/70000-byte targets -> NAMETOOLONG; 900 bytes stored and "
           "READLINK verbatim", "got %s, control %s" % (fmt(got), fmt(r.statuses())))


# ---- symlinks ----

def symlinks_not_followed():
    """symlinks pointing outside: READLINK gives the text; OPEN is SYMLINK; nothing follows them"""
    got, want = {}, {}
    for c in (C, C0):
        sym = V.SYMLINK if c.minor else V.INVAL  # READ/WRITE: RFC 7530 has no SYMLINK there
        for name, target in (("out", "../../secret"), ("abs", os.path.join(SECRET, "canary")),
                             ("dirlink", "/")):
            st, h, a = c.lookup_fh(ROOT["rw"], name)
            k = "%d %s " % (c.minor, name)
            got[k + "type"], want[k + "type"] = (st, a and a["type"]), ((NFS4_OK, V.NF4LNK),)
            r = c.compound([putfh(h), readlink()])
            got[k + "READLINK"], want[k + "READLINK"] = (r.status, r.value(OP_READLINK)), ((NFS4_OK, target),)
            checks = {
                "OPEN by name": (c.open(ROOT["rw"], name)[0], V.SYMLINK),
                "OPEN by name for write": (c.open(ROOT["rw"], name, V.SHARE_ACCESS_WRITE)[0], V.SYMLINK),
                "OPEN create existing": (c.open(ROOT["rw"], name, V.SHARE_ACCESS_BOTH, V.UNCHECKED4,
                                                {"size": 0})[0], V.SYMLINK),
                "OPEN in it": (c.open(h, "canary")[0], V.SYMLINK),
                "READ": (c.compound([putfh(h), read(0, 4096)]).last(), sym),
                "WRITE": (c.compound([putfh(h), write(0, b"overwrite")]).last(), sym),
                "READDIR": (c.compound([putfh(h), readdir()]).last(), (V.SYMLINK, V.NOTDIR)),
                "LOOKUP in it": (c.compound([putfh(h), lookup("canary")]).last(), V.SYMLINK),
                "CREATE in it": (c.compound([putfh(h), create(V.NF4DIR, "planted")]).last(),
                                 (V.SYMLINK, V.NOTDIR)),
                "REMOVE in it": (c.compound([putfh(h), remove("canary")]).last(), (V.SYMLINK, V.NOTDIR)),
                "SETATTR size": (c.compound([putfh(h), setattr_({"size": 0})]).last(), V.INVAL),
            }
            if c.minor:
                checks["OPEN CLAIM_FH"] = (c.open_fh(h), V.SYMLINK)
            for kk, (s, w) in checks.items():
                got[k + kk], want[k + kk] = s, w
    bad = diff(got, want)
    canary = os.stat(os.path.join(SECRET, "canary"))
    ok = not bad and canary.st_size == CANARY_SIZE and (canary.st_mode & 0o777) == 0o600
    report(ok, "v4 symlinks to outside (out, abs, dirlink): NF4LNK, READLINK text; OPEN -> SYMLINK; "
           "READ/WRITE -> SYMLINK (4.1) / INVAL (4.0); LOOKUP/READDIR/CREATE/REMOVE in them refused; "
           "%d checks" % len(got), "not as expected: %s" % fmt(bad))


def setattr_symlink():
    """SETATTR mode/owner on a symlink to outside never reaches the target"""
    _, h, _ = C.lookup_fh(ROOT["rw"], "abs")
    sts = [C.compound([putfh(h), setattr_({"mode": 0o777})]).last(),
           C.compound([putfh(h), setattr_({"owner": "1000"})]).last(),
           C.compound([putfh(h), setattr_({"mtime": (1, 0)})]).last()]
    canary = os.stat(os.path.join(SECRET, "canary"))
    ok = canary.st_size == CANARY_SIZE and (canary.st_mode & 0o777) == 0o600 and canary.st_uid == 0
    report(ok, "v4 SETATTR mode/owner/mtime on a symlink to the canary -> target untouched (%s)" % fmt(sts),
           "canary mode %o uid %d" % (canary.st_mode & 0o777, canary.st_uid))


def special_files():
    """device nodes cannot be made over NFSv4; a fifo made is never read or written by the server"""
    got, want = {}, {}
    for c in (C, C0):
        for kind, nm in ((V.NF4CHR, "v4zero"), (V.NF4BLK, "v4blk")):
            for e in ("rw", "rsq"):
                k = "%d %s CREATE %s" % (c.minor, e, nm)
                got[k] = c.compound([putfh(ROOT[e]), create(kind, nm, spec=(1, 5))], cred=ROOT_CRED).last()
                want[k] = V.PERM
        n = "v4fifo%d" % c.minor
        r = c.compound([putfh(ROOT["rw"]), create(V.NF4FIFO, n), getfh()], cred=ROOT_CRED)
        got["%d CREATE fifo" % c.minor], want["%d CREATE fifo" % c.minor] = r.status, NFS4_OK
        h = r.value(OP_GETFH)
        if h:
            wrong = V.WRONG_TYPE if c.minor else V.INVAL  # RFC 8881 18.16.3 / RFC 7530 16.16.5
            for k, (s_, w) in {"READ": (c.compound([putfh(h), read(0, 64)]).last(), V.INVAL),
                               "WRITE": (c.compound([putfh(h), write(0, b"x")]).last(), V.INVAL),
                               "OPEN": (c.open(ROOT["rw"], n)[0], wrong),
                               "OPEN write": (c.open(ROOT["rw"], n, V.SHARE_ACCESS_WRITE)[0], wrong),
                               "SETATTR size": (c.compound([putfh(h), setattr_({"size": 0})]).last(),
                                                V.INVAL)}.items():
                got["%d fifo %s" % (c.minor, k)], want["%d fifo %s" % (c.minor, k)] = s_, w
            C.compound([putfh(ROOT["rw"]), remove(n)])
    bad = diff(got, want)
    ok = not bad and not any(os.path.lexists(os.path.join(ex(e), n)) for e in ("rw", "rsq")
                             for n in ("v4zero", "v4blk", "v4fifo0", "v4fifo1"))
    report(ok, "v4 CREATE NF4CHR/NF4BLK as root (rw, root_squash) -> PERM, nothing made; a fifo: READ, "
           "WRITE, SETATTR size -> INVAL, OPEN -> WRONG_TYPE (4.1) / INVAL (4.0)",
           "not as expected: %s" % fmt(bad))


# ---- cross-export rename and link ----

def rename_xdev():
    """RENAME between exports, or between an export and the pseudo fs -> XDEV"""
    got, want = {}, {}
    for c in (C, C0):
        cases = {
            "rw->rw2": (ROOT["rw"], "f", ROOT["rw2"], "f-moved", V.XDEV),
            "rw2->rw": (ROOT["rw2"], "g", ROOT["rw"], "g-moved", V.XDEV),
            "rw->ro": (ROOT["rw"], "f", ROOT["ro"], "f-moved", V.XDEV),
            "ro->rw": (ROOT["ro"], "f", ROOT["rw"], "stolen", (V.XDEV, V.ROFS)),
            "rw->srv (pseudo)": (ROOT["rw"], "f", SRV_FH, "escaped", V.XDEV),
            "srv (pseudo)->rw": (SRV_FH, "rw2", ROOT["rw"], "stolen", V.XDEV),
            "srv->srv (pseudo)": (SRV_FH, "rw", SRV_FH, "rw-moved", V.ROFS),
            "rw/sub->rw2": (fh(ex("rw") + "/sub", c), "x", ROOT["rw2"], "x", V.XDEV),
        }
        for k, (sd, sn, dd, dn, w) in cases.items():
            key = "%d %s" % (c.minor, k)
            got[key] = c.compound([putfh(sd), savefh(), putfh(dd), rename(sn, dn)]).last()
            want[key] = w
    bad = diff(got, want)
    ok = not bad and all(os.path.exists(p) for p in (ex("rw") + "/f", ex("rw2") + "/g", ex("ro") + "/f"))
    ok = ok and not any(os.path.lexists(p) for p in (ex("rw2") + "/f-moved", ex("rw") + "/g-moved",
                                                     ex("ro") + "/f-moved", ex("rw") + "/stolen",
                                                     SRV + "/escaped", SRV + "/rw-moved"))
    report(ok, "v4 RENAME rw<->rw2, rw->ro, export<->pseudo srv/ -> XDEV; inside the pseudo fs -> ROFS "
           "(4.1, 4.0); nothing moved", "not as expected: %s" % fmt(bad))


def link_xdev():
    """LINK between exports or into the pseudo fs -> XDEV"""
    _, gfh, _ = C.lookup_fh(ROOT["rw2"], "g")
    got, want = {}, {}
    for c in (C, C0):
        for k, (src, d, w) in {"rw/f->rw2": (FILE_FH, ROOT["rw2"], V.XDEV),
                               "rw2/g->rw": (gfh, ROOT["rw"], V.XDEV),
                               "rw/f->ro": (FILE_FH, ROOT["ro"], (V.XDEV, V.ROFS)),
                               "rw/f->srv (pseudo)": (FILE_FH, SRV_FH, V.XDEV),
                               "srv (pseudo)->rw": (SRV_FH, ROOT["rw"], V.XDEV)}.items():
            key = "%d %s" % (c.minor, k)
            got[key] = c.compound([putfh(src), savefh(), putfh(d), link("hl")]).last()
            want[key] = w
    bad = diff(got, want)
    ok = not bad and not any(os.path.lexists(os.path.join(p, "hl")) for p in (ex("rw"), ex("rw2"), ex("ro"), SRV))
    ok = ok and os.stat(ex("rw") + "/f").st_nlink == 1
    report(ok, "v4 LINK across exports and into the pseudo fs -> XDEV (4.1, 4.0); no link made",
           "not as expected: %s" % fmt(bad))


# ---- read-only export and the pseudo fs ----

def ro_export():
    """ro export: OPEN for write, OPEN create, CREATE, SETATTR, WRITE, REMOVE, RENAME, LINK -> ROFS"""
    paths = [ex("ro"), ex("ro") + "/f", ex("ro") + "/d"]
    before = [snapshot(p) for p in paths]
    r = ROOT["ro"]
    got, want = {}, {}
    for c in (C, C0):
        ffh = fh(ex("ro") + "/f", c)
        dfh = fh(ex("ro") + "/d", c)
        excl = V.EXCLUSIVE4_1 if c.minor else V.EXCLUSIVE4
        checks = {
            "OPEN WRITE": c.open(r, "f", V.SHARE_ACCESS_WRITE)[0],
            "OPEN BOTH": c.open(r, "f", V.SHARE_ACCESS_BOTH)[0],
            "OPEN create new": c.open(r, "new", V.SHARE_ACCESS_BOTH, V.UNCHECKED4, {"mode": 0o644})[0],
            "OPEN create GUARDED existing": c.open(r, "f", V.SHARE_ACCESS_BOTH, V.GUARDED4)[0],
            "OPEN create EXCLUSIVE new": c.open(r, "new", V.SHARE_ACCESS_BOTH, excl)[0],
            # a truncation of an existing file asked with read access only
            "OPEN create UNCHECKED size 0, READ": c.open(r, "f", V.SHARE_ACCESS_READ, V.UNCHECKED4,
                                                         {"size": 0})[0],
            "OPEN create in subdir": c.open(dfh, "x", V.SHARE_ACCESS_BOTH, V.UNCHECKED4)[0],
            "CREATE dir": c.compound([putfh(r), create(V.NF4DIR, "newdir")]).last(),
            "CREATE symlink": c.compound([putfh(r), create(V.NF4LNK, "sl", linkdata="f")]).last(),
            "CREATE fifo": c.compound([putfh(r), create(V.NF4FIFO, "fifo")]).last(),
            "CREATE dir in subdir": c.compound([putfh(dfh), create(V.NF4DIR, "x")]).last(),
            "SETATTR size": c.compound([putfh(ffh), setattr_({"size": 0})]).last(),
            "SETATTR mode": c.compound([putfh(ffh), setattr_({"mode": 0o777})]).last(),
            "SETATTR mtime": c.compound([putfh(ffh), setattr_({"mtime": (1, 0)})]).last(),
            "SETATTR owner": c.compound([putfh(ffh), setattr_({"owner": "1000"})]).last(),
            "SETATTR dir mode": c.compound([putfh(r), setattr_({"mode": 0o700})]).last(),
            "WRITE": c.compound([putfh(ffh), write(0, b"XXXX")]).last(),
            "REMOVE f": c.compound([putfh(r), remove("f")]).last(),
            "REMOVE d": c.compound([putfh(r), remove("d")]).last(),
            "RENAME": c.compound([putfh(r), savefh(), rename("f", "f2")]).last(),
            "LINK": c.compound([putfh(ffh), savefh(), putfh(r), link("f3")]).last(),
        }
        for k, s in checks.items():
            got["%d %s" % (c.minor, k)] = s
        # an existing file opened with OPEN4_CREATE and nothing to set is
        # an open for reading; either answer is fine if nothing changes
        got["%d OPEN create UNCHECKED existing, READ" % c.minor] = c.open(r, "f", V.SHARE_ACCESS_READ,
                                                                          V.UNCHECKED4)[0]
    want = {k: V.ROFS for k in got}
    for k in got:
        if k.endswith("UNCHECKED existing, READ"):
            want[k] = (NFS4_OK, V.ROFS)
    bad = diff(got, want)
    after = [snapshot(p) for p in paths]
    rd = C.compound([putfh(fh(ex("ro") + "/f")), read(0, 100)])
    # ACCESS grants no MODIFY (4), EXTEND (8) or DELETE (16) on a ro export
    acc = [C.compound([putfh(h), V.access()]).value(V.OP_ACCESS) for h in (r, fh(ex("ro") + "/f"))]
    ok_acc = all(a is not None and a[1] & 0x1C == 0 for a in acc)
    st_o, _, _ = C.open(r, "f")
    ok = not bad and before == after and rd.value(OP_READ) == (True, b"read-only data\n") and st_o == NFS4_OK
    ok = ok and ok_acc
    report(ok, "v4 ro export: %d modifying ops (OPEN for write/create, truncating OPEN, CREATE, SETATTR, "
           "WRITE, REMOVE, RENAME, LINK; 4.1, 4.0) -> ROFS; files unchanged; READ and OPEN for read work; "
           "ACCESS grants no MODIFY/EXTEND/DELETE"
           % len(got), "not ROFS: %s; unchanged %s; read %s; ACCESS %s" % (fmt(bad), before == after, rd.value(OP_READ), acc))


def pseudo_readonly():
    """the pseudo fs cannot be changed: CREATE, OPEN create, REMOVE, RENAME, SETATTR -> ROFS"""
    before = snapshot(SRV)
    got, want = {}, {}
    for c in (C, C0):
        for k, (ops, w) in {
            "CREATE dir": ([putfh(SRV_FH), create(V.NF4DIR, "planted")], V.ROFS),
            "CREATE symlink": ([putfh(SRV_FH), create(V.NF4LNK, "planted", linkdata="secret")], V.ROFS),
            "OPEN create": ([putfh(SRV_FH)] + c.open_ops("planted", V.SHARE_ACCESS_BOTH, V.UNCHECKED4), V.ROFS),
            "OPEN create existing name": ([putfh(SRV_FH)] + c.open_ops("not-exported-file", V.SHARE_ACCESS_BOTH,
                                                                       V.UNCHECKED4, {"size": 0}), V.ROFS),
            "OPEN export root": ([putfh(SRV_FH)] + c.open_ops("rw"), V.ISDIR),
            "REMOVE export": ([putfh(SRV_FH), remove("rw")], V.ROFS),
            "REMOVE not-exported-file": ([putfh(SRV_FH), remove("not-exported-file")], (V.ROFS, V.NOENT)),
            "RENAME": ([putfh(SRV_FH), savefh(), rename("rw", "moved")], V.ROFS),
            "SETATTR mode": ([putfh(SRV_FH), setattr_({"mode": 0o777})], V.ROFS),
            "SETATTR root mode": ([putrootfh(), setattr_({"mode": 0o777})], V.ROFS),
            "WRITE": ([putfh(SRV_FH), write(0, b"x")], (V.ISDIR, V.ROFS)),
        }.items():
            r = c.compound(ops)
            got["%d %s" % (c.minor, k)], want["%d %s" % (c.minor, k)] = r.last(), w
    bad = diff(got, want)
    ok = not bad and snapshot(SRV) == before
    ok = ok and open(SRV + "/not-exported-file").read() == "sibling\n"
    report(ok, "v4 pseudo fs: CREATE, OPEN create, REMOVE, RENAME, SETATTR -> ROFS; OPEN of an export "
           "-> ISDIR (4.1, 4.0); srv/ unchanged", "not as expected: %s" % fmt(bad))


# ---- squashing ----

ROOT_CRED = S.auth_sys(0, 0)


def root_squash():
    """root_squash: uid 0 creates as 65534:65534 and cannot chown to root"""
    res = {}
    for c in (C, C0):
        n = "v4byroot%d" % c.minor
        st, h, a = c.open(ROOT["rsq"], n, V.SHARE_ACCESS_BOTH, V.UNCHECKED4, {"mode": 0o644}, cred=ROOT_CRED)
        res[n] = (st, owner("rsq", n) if st == NFS4_OK else None, a and (a["owner"], a["owner_group"]))
        r = c.compound([putfh(ROOT["rsq"]), create(V.NF4DIR, "v4rootdir%d" % c.minor), getattr_()],
                       cred=ROOT_CRED)
        res["dir%d" % c.minor] = (r.status, owner("rsq", "v4rootdir%d" % c.minor) if r.status == 0 else None)
        res["chown%d" % c.minor] = c.compound([putfh(h), setattr_({"owner": "0"})], cred=ROOT_CRED).last() \
            if h else None
        res["chgrp%d" % c.minor] = c.compound([putfh(h), setattr_({"owner_group": "0"})],
                                              cred=ROOT_CRED).last() if h else None
    ok = all(res["v4byroot%d" % m] == (NFS4_OK, (65534, 65534), ("65534", "65534")) for m in (0, 1))
    ok = ok and all(res["dir%d" % m] == (NFS4_OK, (65534, 65534)) for m in (0, 1))
    ok = ok and all(res[k % m] == V.PERM for m in (0, 1) for k in ("chown%d", "chgrp%d"))
    ok = ok and owner("rsq", "v4byroot1") == (65534, 65534)
    report(ok, "v4 root_squash: uid 0 OPEN-creates and CREATEs as 65534:65534; SETATTR owner/group 0 -> "
           "PERM (4.1, 4.0)", "got %s" % fmt(res))


def root_squash_file_of_root():
    """root_squash: root's 0600 file: OPEN/READ/WRITE -> ACCESS, SETATTR mode -> PERM"""
    got = {}
    for c in (C, C0):
        _, h, _ = c.lookup_fh(ROOT["rsq"], "rootfile")
        for k, s in {
            "OPEN READ": c.open(ROOT["rsq"], "rootfile", cred=ROOT_CRED)[0],
            "OPEN WRITE": c.open(ROOT["rsq"], "rootfile", V.SHARE_ACCESS_WRITE, cred=ROOT_CRED)[0],
            "OPEN truncate": c.open(ROOT["rsq"], "rootfile", V.SHARE_ACCESS_READ, V.UNCHECKED4,
                                    {"size": 0}, cred=ROOT_CRED)[0],
            "OPEN CLAIM_FH": c.open_fh(h, cred=ROOT_CRED) if c.minor else V.ACCESS,
            "READ": c.compound([putfh(h), read(0, 100)], cred=ROOT_CRED).last(),
            "WRITE": c.compound([putfh(h), write(0, b"pwn")], cred=ROOT_CRED).last(),
            "SETATTR size": c.compound([putfh(h), setattr_({"size": 0})], cred=ROOT_CRED).last(),
        }.items():
            got["%d %s" % (c.minor, k)] = s
        got["%d SETATTR mode" % c.minor] = c.compound([putfh(h), setattr_({"mode": 0o666})],
                                                      cred=ROOT_CRED).last()
    want = {k: V.ACCESS for k in got}
    want["0 SETATTR mode"] = want["1 SETATTR mode"] = V.PERM
    bad = diff(got, want)
    with open(os.path.join(ex("rsq"), "rootfile"), "rb") as f:
        data = f.read()
    st = os.stat(os.path.join(ex("rsq"), "rootfile"))
    ok = not bad and data == b"root only\n" and (st.st_mode & 0o777) == 0o600
    report(ok, "v4 root_squash: root's 0600 file: OPEN read/write/truncate, READ, WRITE, SETATTR size "
           "-> ACCESS; chmod -> PERM (4.1, 4.0)", "not as expected: %s" % fmt(bad))


def squash_controls():
    """controls: uid 1000 on root_squash keeps 1000; uid 0 on no_root_squash keeps 0"""
    st1, _, _ = C.open(ROOT["rsq"], "v4by1000", V.SHARE_ACCESS_BOTH, V.UNCHECKED4, cred=S.auth_sys(1000, 1000))
    st2, _, _ = C.open(ROOT["rw"], "v4byroot", V.SHARE_ACCESS_BOTH, V.UNCHECKED4, cred=ROOT_CRED)
    ok = st1 == NFS4_OK and owner("rsq", "v4by1000") == (1000, 1000)
    ok = ok and st2 == NFS4_OK and owner("rw", "v4byroot") == (0, 0)
    C.compound([putfh(ROOT["rw"]), remove("v4byroot")])
    report(ok, "v4 controls: uid 1000 not squashed by root_squash; uid 0 kept on no_root_squash",
           "%s %s" % (fmt(st1), fmt(st2)))


def all_squash():
    """all_squash anonuid=1234 anongid=4321: every uid creates as 1234:4321"""
    res = {}
    for c in (C, C0):
        for uid, gid in ((1000, 1000), (0, 0), (4242, 7)):
            n = "v4by%d.%d" % (uid, c.minor)
            st, _, _ = c.open(ROOT["asq"], n, V.SHARE_ACCESS_BOTH, V.UNCHECKED4, {"mode": 0o644},
                              cred=S.auth_sys(uid, gid, (0, 10)))
            res[n] = (st, owner("asq", n) if st == NFS4_OK else None)
        r = c.compound([putfh(ROOT["asq"]), create(V.NF4DIR, "v4dir%d" % c.minor)], cred=ROOT_CRED)
        res["dir%d" % c.minor] = (r.last(), owner("asq", "v4dir%d" % c.minor) if r.last() == 0 else None)
    _, h, _ = C.lookup_fh(ROOT["asq"], "v4by1000.1")
    st = C.compound([putfh(h), setattr_({"owner": "1000"})], cred=S.auth_sys(1000, 1000)).last()
    ok = all(v == (NFS4_OK, (1234, 4321)) for v in res.values()) and st == V.PERM
    report(ok, "v4 all_squash: uid 1000/0/4242 OPEN-create and CREATE as 1234:4321; chown back -> PERM "
           "(4.1, 4.0)", "got %s, chown %s" % (fmt(res), fmt(st)))


def auth_none():
    """AUTH_NONE on a no_root_squash export is not root"""
    none = (0, b"")
    res = {}
    for c in (C, C0):
        n = "v4bynone%d" % c.minor
        st, _, _ = c.open(ROOT["rw"], n, V.SHARE_ACCESS_BOTH, V.UNCHECKED4, cred=none)
        res[n] = (st, owner("rw", n) if st == NFS4_OK else None)
        if st == NFS4_OK:
            C.compound([putfh(ROOT["rw"]), remove(n)])
    ok = all(s != NFS4_OK or o != (0, 0) for s, o in res.values())
    report(ok, "v4 AUTH_NONE is not root on a no_root_squash export (%s)" % fmt(res), "")


# ---- secure ----

def secure_unpriv():
    """`secure` export from an unprivileged port: LOOKUP, PUTFH -> ACCESS; nothing made"""
    got = {}
    for c in (C, C0):
        port = c.conn.sock.getsockname()[1]
        got["%d walk" % c.minor] = c.compound(c.path_ops(ex("sec")) + [getfh()]).last()
        got["%d PUTFH" % c.minor] = c.putfh_status(ROOT["sec"])
        got["%d PUTFH READDIR" % c.minor] = c.putfh_status(ROOT["sec"], readdir())
        got["%d OPEN create" % c.minor] = c.compound([putfh(ROOT["sec"])] + c.open_ops(
            "v4unpriv", V.SHARE_ACCESS_BOTH, V.UNCHECKED4)).last()
        # listed in srv/ (the address is admitted) without its attributes
        r = c.compound([putfh(SRV_FH), readdir()])
        ents = {e[0]: e[2] for e in r.value(V.OP_READDIR)["entries"]}
        got["%d READDIR entry" % c.minor] = ents.get("sec", {}).get("rdattr_error")
    bad = diff(got, V.ACCESS)
    ok = port >= 1024 and not bad and not os.path.exists(os.path.join(ex("sec"), "v4unpriv"))
    report(ok, "v4 secure export from port %d: walk/PUTFH/OPEN -> ACCESS; srv/ lists it with "
           "rdattr_error ACCESS (4.1, 4.0)" % port, "not ACCESS: %s" % fmt(bad))


def secure_priv():
    """`secure` export from a privileged port: allowed"""
    res = []
    for minor in (1, 0):
        p = V.V4(conn(True), minor)
        port = p.conn.source_port()
        h = p.fh_of(ex("sec"))
        st, _, _ = p.open(h, "v4priv%d" % minor, V.SHARE_ACCESS_BOTH, V.UNCHECKED4)
        res.append((port, h == ROOT["sec"], st))
        p.conn.close()
    ok = all(port < 1024 and same and st == NFS4_OK for port, same, st in res)
    ok = ok and all(os.path.exists(os.path.join(ex("sec"), "v4priv%d" % m)) for m in (0, 1))
    report(ok, "v4 secure export from privileged ports %s: walk and OPEN create allowed (4.1, 4.0)"
           % [r[0] for r in res], "got %s" % fmt(res))


# ---- oversized requests ----

def too_many_ops():
    """COMPOUND of 129 / 2^32-1 ops -> TOO_MANY_OPS (4.1) / RESOURCE (4.0), nothing run"""
    got = {}
    for c, want in ((C, V.TOO_MANY_OPS), (C0, V.RESOURCE)):
        ops = [putrootfh()] * 129
        if c.minor:
            ops = [V.sequence(c.sessionid, c.slot_seq + 1)] + ops[1:]
        r = c.parse(c.call_raw(c.pack(ops, c.minor)), ops)
        got["%d 129" % c.minor] = (r.status, len(r.ops)) == (want, 0)
        # the count says 2^32-1; two ops follow
        args = S.Packer().opaque(b"").u32(c.minor).u32(0xFFFFFFFF).u32(V.OP_PUTROOTFH).u32(V.OP_GETFH).bytes()
        r = c.parse(c.call_raw(args), [])
        got["%d 2^32-1" % c.minor] = (r.status, len(r.ops)) == (want, 0)
    # the slot was not used: the next SEQUENCE is the one after the last good one
    got["slot untouched"] = C.compound([putrootfh()]).status == NFS4_OK
    # a session that allows 8 ops: 9 -> SEQUENCE says TOO_MANY_OPS
    s = v4(1, maxops=8)
    neg = s.session_attrs["maxops"]
    r = s.compound([putrootfh()] * neg)
    got["%d ops of maxops %d" % (neg + 1, neg)] = (r.status, r.sequence[0]) == (V.TOO_MANY_OPS, OP_SEQUENCE)
    got["%d ops" % neg] = s.compound([putrootfh()] * (neg - 1)).status == NFS4_OK
    s.conn.close()
    report(all(got.values()), "v4 COMPOUND of 129 and 2^32-1 ops -> TOO_MANY_OPS (4.1) / RESOURCE (4.0) "
           "with no results; over the session's maxoperations -> SEQUENCE TOO_MANY_OPS",
           "failed: %s" % [k for k, v in got.items() if not v])


def big_requests():
    """over the session's maxrequestsize -> REQ_TOO_BIG, nothing written; over the record limit -> closed"""
    got = {}
    st, h, _ = C.open(ROOT["rw"], "v4big", V.SHARE_ACCESS_BOTH, V.UNCHECKED4)
    size = lambda: os.stat(os.path.join(ex("rw"), "v4big")).st_size  # noqa: E731
    s = v4(1, maxreq=65536)
    r = s.compound([putfh(h), write(0, b"w" * 100000)])
    got["write over maxreq"] = (r.status, r.sequence[0], size()) == (V.REQ_TOO_BIG, OP_SEQUENCE, 0)
    got["maxreq control"] = s.compound([putfh(h), write(0, b"w" * 60000)]).status == NFS4_OK and size() == 60000
    s.conn.close()
    # 1 MiB + 1 (maxwrite + 1) in a default session: never more than maxwrite written
    r = C.compound([putfh(h), write(0, b"v" * ((1 << 20) + 1))])
    w = r.value(OP_WRITE)
    big = "%s count %s" % (st_name(r.last()), w and w[0])
    got["1 MiB+1"] = (r.status == NFS4_OK and w[0] <= (1 << 20) and size() == max(w[0], 60000)) or \
        (r.status in (V.INVAL, V.FBIG, V.REQ_TOO_BIG) and size() == 60000)
    # a WRITE whose data length says 1000 bytes, 3 follow
    before = size()
    args = V.stateid(V.ANON_STATEID) + S.Packer().u64(0).u32(V.FILE_SYNC4).u32(1000).raw(b"abc\0").bytes()
    r = try_call(C.compound, [putfh(h), V.raw_op(V.OP_WRITE, args)])
    C.conn.connect() if r[0] == "closed" else None
    got["length lies"] = (r[0] == "rpc" and r[1] == GARBAGE_ARGS or r[0] == "ok" and r[1].last() == V.BADXDR) \
        and size() == before
    # a 2 MiB record: past the RPC record limit, the connection goes
    c = conn()
    body = V.V4.pack([putrootfh(), write(0, b"x" * (2 << 20))], 0)
    r = try_call(c.call, S.NFS_PROG, 4, 1, body)
    got["2 MiB record closed"] = r[0] == "closed" and size() == before
    c.close()
    # a 300-byte tag is refused whole (REQ_TOO_BIG / RESOURCE), not echoed
    for cc, want in ((C, V.REQ_TOO_BIG), (C0, V.RESOURCE)):
        ops = [V.sequence(cc.sessionid, cc.slot_seq + 1)] if cc.minor else []
        r = cc.parse(cc.call_raw(cc.pack(ops + [putrootfh()], cc.minor, b"t" * 300)), ops)
        got["%d tag 300" % cc.minor] = (r.status, r.tag, r.ops) == (want, b"", [])
    # READ of 64 MiB / 4 GiB-1: clamped to maxread, the data right
    st, a = C.getattr(ROOT["rw"], (V.A_MAXREAD, V.A_MAXWRITE))
    _, tm, _ = C.lookup_fh(ROOT["rw"], "twomeg")
    with open(os.path.join(ex("rw"), "twomeg"), "rb") as f:
        want = f.read()
    tfh = fh(ex("rw") + "/twomeg")
    for n in (64 << 20, 0xFFFFFFFF):
        r = C.compound([putfh(tfh), read(0, n)])
        v = r.value(OP_READ)
        got["READ %d" % n] = r.status == NFS4_OK and 0 < len(v[1]) <= a["maxread"] and want.startswith(v[1])
    # a session whose replies are at most 8 KiB: a 64 KiB READ fits or is REP_TOO_BIG
    s = v4(1, maxresp=8192)
    r = s.compound([putfh(tfh), read(0, 65536)])
    v = r.value(OP_READ)
    got["READ in 8 KiB maxresp"] = (r.status == NFS4_OK and len(v[1]) <= 8192 and want.startswith(v[1])) or \
        r.last() == V.REP_TOO_BIG
    s.conn.close()
    C.compound([putfh(ROOT["rw"]), remove("v4big")])
    alive = try_call(lambda: v4(1).compound([putrootfh()]).status)
    got["server alive"] = alive == ("ok", NFS4_OK)
    report(all(got.values()), "v4 WRITE over maxrequestsize -> REQ_TOO_BIG (nothing written); WRITE of "
           "1 MiB+1 -> %s (never more than maxwrite); lying length, 2 MiB record, 300-byte tag refused; READ "
           "64 MiB/4 GiB clamped (maxread %s)" % (big, a.get("maxread")),
           "failed: %s" % [k for k, v in got.items() if not v])


def truncate_share_denied():
    """a truncating OPEN refused by another open's DENY_WRITE leaves the file as it was"""
    path = os.path.join(ex("rw"), "v4share")
    with open(path, "wb") as f:
        f.write(b"shared data\n")
    a = v4(1)
    r = a.compound([putfh(ROOT["rw"]), V.open_("v4share", V.SHARE_ACCESS_READ, 2, a.clientid, b"holder"),
                    getfh()])  # OPEN4_SHARE_DENY_WRITE
    held, hfh = r.value(V.OP_OPEN), r.value(OP_GETFH)
    got = {"holder OPEN DENY_WRITE": r.status}
    for c in (C, C0):
        for acc in (V.SHARE_ACCESS_BOTH, V.SHARE_ACCESS_READ):
            k = "%d truncating OPEN access %d" % (c.minor, acc)
            got[k] = c.open(ROOT["rw"], "v4share", acc, V.UNCHECKED4, {"size": 0})[0]
    intact = open(path, "rb").read() == b"shared data\n"
    a.compound([putfh(hfh), V.close(held["stateid"])]) if held else None
    a.conn.close()
    # once the deny is gone the same OPEN truncates
    after = C.open(ROOT["rw"], "v4share", V.SHARE_ACCESS_BOTH, V.UNCHECKED4, {"size": 0})[0]
    size = os.path.getsize(path)
    os.unlink(path)
    want = {k: (NFS4_OK if k.startswith("holder") else V.SHARE_DENIED) for k in got}
    bad = diff(got, want)
    ok = not bad and intact and after == NFS4_OK and size == 0
    report(ok, "v4 OPEN4_CREATE/UNCHECKED4 size 0 (access BOTH or READ) while another client holds "
           "DENY_WRITE -> SHARE_DENIED, data kept (4.1, 4.0); truncates once that open is closed",
           "not as expected: %s; intact %s; after close %s size %d" % (fmt(bad), intact, fmt(after), size))


def auth_cases():
    """NFSv4 COMPOUND with RPCSEC_GSS, 17 gids or an unknown flavor -> AUTH_ERROR"""
    args = V.V4.pack([putrootfh(), getfh()], 0)
    creds = {"RPCSEC_GSS": (S.RPCSEC_GSS, S.Packer().u32(1).u32(0).u32(0).u32(1).opaque(b"ctx").bytes()),
             "17 gids": S.auth_sys(0, 0, range(17)),
             "flavor 12345": (12345, b"")}
    got = {}
    c = conn()
    for k, cred in creds.items():
        r = S.raw_call(c, S.NFS_PROG, 4, 1, args, cred)
        got[k] = r[1] if r[0] == "rpc" else r[0]
        if r[0] == "closed":
            c.connect()
    r = S.raw_call(c, S.NFS_PROG, 4, 1, args, S.auth_sys(0, 0, range(16)))
    c.close()
    ok = all(isinstance(v, tuple) and v[0] == "auth" or v == "closed" for v in got.values()) and r[0] == "ok"
    report(ok, "v4 COMPOUND with RPCSEC_GSS, 17 gids, unknown flavor -> AUTH_ERROR (16 gids accepted)",
           "got %s, 16 gids %s" % (got, r[0]))


# ======================= post: after the SIGHUP reload =======================

def load_post():
    global K, SRV_FH, ROOT
    with open(STATE_FILE) as f:
        K = {k: bytes.fromhex(v) for k, v in json.load(f).items()}
    SRV_FH = K["srv"]
    ROOT = {"rw": K["rw"]}


def removed_export():
    """export removed by SIGHUP: its handles -> STALE; gone from the pseudo fs"""
    got = {}
    for c in (C, C0):
        got["%d PUTFH root" % c.minor] = c.putfh_status(K["gone"]) == V.STALE
        got["%d PUTFH file" % c.minor] = c.putfh_status(K["gone_h"], read(0, 10)) == V.STALE
        got["%d LOOKUP" % c.minor] = c.compound([putfh(SRV_FH), lookup("gone")]).last() == V.NOENT
        st, ls = c.readdir_names(SRV_FH)
        got["%d listing" % c.minor] = st == NFS4_OK and "gone" not in ls
        got["%d others" % c.minor] = c.putfh_status(K["rw"]) == NFS4_OK and c.putfh_status(K["file"]) == NFS4_OK
    ok = all(got.values()) and names(ex("gone")) == ["h"]
    report(ok, "v4 export removed by SIGHUP: PUTFH of its handles -> STALE, LOOKUP -> NOENT, not listed; "
           "other handles OK (4.1, 4.0)", "failed: %s" % [k for k, v in got.items() if not v])


def narrowed_export():
    """export narrowed to a subdirectory (same fsid): old handles STALE; the pseudo dir shows only public"""
    got = {}
    for c in (C, C0):
        for k in ("wide", "wide_private", "wide_file", "wide_public", "wide_pfile"):
            got["%d %s" % (c.minor, k)] = c.putfh_status(K[k]) == V.STALE
        r = c.compound(c.path_ops(ex("wide")) + [getfh(), getattr_()])
        h, a = r.value(OP_GETFH), r.value(OP_GETATTR)
        got["%d wide is pseudo" % c.minor] = r.status == NFS4_OK and h.startswith(PSEUDO_MAGIC) and \
            a["fileid"] != os.stat(ex("wide")).st_ino
        st, ls = c.readdir_names(h) if h else (None, None)
        got["%d lists only public" % c.minor] = (st, ls) == (NFS4_OK, ["public"])
        got["%d private NOENT" % c.minor] = c.compound([putfh(h), lookup("private")]).last() == V.NOENT
        r = c.compound(c.path_ops(ex("wide") + "/public/pfile") + [read(0, 100)])
        got["%d new export reachable" % c.minor] = r.value(OP_READ) == (True, b"public\n")
        r = c.compound(c.path_ops(ex("wide") + "/public") + [lookupp(), getfh()])
        got["%d LOOKUPP from public -> pseudo wide" % c.minor] = r.value(OP_GETFH) == h
    ok = all(got.values()) and not os.path.exists(os.path.join(ex("wide"), "private", "planted"))
    report(ok, "v4 export narrowed to wide/public: old handles STALE; wide/ is a pseudo dir listing only "
           "public, private -> NOENT; LOOKUPP from public stays in the pseudo fs (4.1, 4.0)",
           "failed: %s" % [k for k, v in got.items() if not v])


def address_not_allowed():
    """export admitting only 10.9.9.9: invisible to 127.0.0.1, its handles -> ACCESS"""
    got = {}
    for c in (C, C0):
        got["%d LOOKUP" % c.minor] = c.compound([putfh(SRV_FH), lookup("only9")]).last() == V.NOENT
        st, ls = c.readdir_names(SRV_FH)
        got["%d listing" % c.minor] = (st, sorted(ls)) == (NFS4_OK, sorted(EXPORTS_AFTER))
        got["%d PUTFH root" % c.minor] = c.putfh_status(K["only9"]) == V.ACCESS
        got["%d PUTFH READDIR" % c.minor] = c.putfh_status(K["only9"], readdir()) == V.ACCESS
        got["%d PUTFH file READ" % c.minor] = c.putfh_status(K["only9_file"], read(0, 100)) == V.ACCESS
        got["%d OPEN" % c.minor] = c.compound([putfh(K["only9"])] + c.open_ops(
            "evil", V.SHARE_ACCESS_BOTH, V.UNCHECKED4)).last() == V.ACCESS
    ok = all(got.values()) and names(ex("only9")) == ["secretfile"]
    report(ok, "v4 client address not allowed: the export is not in the pseudo fs (LOOKUP NOENT), its "
           "handles -> ACCESS for PUTFH, READ, READDIR, OPEN (4.1, 4.0)",
           "failed: %s" % [k for k, v in got.items() if not v])


# ---- run ----

CANARY_SIZE = os.stat(os.path.join(SECRET, "canary")).st_size

if PHASE == "pre":
    setup_pre()
    CASES = (forged_random, forged_pseudo, forged_oversize, bit_flips, unexported_spliced, same_handles,
             pseudo_listing, lookupp_root, walk_outside,
             bad_names, long_names, long_symlink,
             symlinks_not_followed, setattr_symlink, special_files,
             rename_xdev, link_xdev, ro_export, pseudo_readonly,
             root_squash, root_squash_file_of_root, squash_controls, all_squash, auth_none,
             secure_unpriv, secure_priv,
             too_many_ops, big_requests, truncate_share_denied, auth_cases)
else:
    load_post()
    CASES = (removed_export, narrowed_export, address_not_allowed)

for fn in CASES:
    if fn.__name__ in os.environ.get("SEC_SKIP", "").split(","):
        continue
    case(fn)
    for c in (C, C0):
        if c.conn.sock is None:
            c.conn.connect()

sys.exit(min(S.failures(), 100))
