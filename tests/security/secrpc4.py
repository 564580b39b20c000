"""A small NFSv4.0/4.1 client for the export-security suite (stdlib only).

Written from RFC 7530 (NFSv4.0) and RFC 8881 (NFSv4.1); the XDR of every
argument and result is the one of those RFCs' sections 16 (7530) and 18
(8881). It rides on tests/interop/nfsrpc.py's RPC client (record marking,
AUTH_SYS credentials), so a secrpc.PrivClient gives it a privileged
source port.

    c = V4(secrpc.Client("127.0.0.1", port), minor=1)   # EXCHANGE_ID etc.
    r = c.compound([putrootfh(), lookup("srv"), getfh()])
    r.status, r.statuses(), r.value(OP_GETFH)

A COMPOUND is a list of Op (number, XDR of the arguments, decoder of the
result body). In 4.1 compound() puts SEQUENCE first (RFC 8881 2.10.6) and
keeps the slot's sequence id; 4.0 needs SETCLIENTID/SETCLIENTID_CONFIRM
for OPEN only (setclientid()). Results are decoded op by op; the decoder
of a failed op reads nothing unless the RFC gives a body with the error
(SETATTR's attrsset, SETCLIENTID's CLID_INUSE address).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))

from nfsrpc import NFS_PROG, Packer, Unpacker, XdrError  # noqa: E402

NFSPROC4_COMPOUND = 1

# operation numbers (RFC 8881 section 16.2, RFC 7530 section 15.2)
OP_ACCESS, OP_CLOSE, OP_COMMIT, OP_CREATE = 3, 4, 5, 6
OP_GETATTR, OP_GETFH, OP_LINK = 9, 10, 11
OP_LOOKUP, OP_LOOKUPP = 15, 16
OP_OPEN, OP_OPEN_CONFIRM = 18, 20
OP_PUTFH, OP_PUTPUBFH, OP_PUTROOTFH, OP_READ, OP_READDIR, OP_READLINK = 22, 23, 24, 25, 26, 27
OP_REMOVE, OP_RENAME, OP_RENEW, OP_RESTOREFH, OP_SAVEFH = 28, 29, 30, 31, 32
OP_SECINFO, OP_SETATTR, OP_SETCLIENTID, OP_SETCLIENTID_CONFIRM = 33, 34, 35, 36
OP_WRITE = 38
OP_EXCHANGE_ID, OP_CREATE_SESSION, OP_DESTROY_SESSION = 42, 43, 44
OP_SEQUENCE, OP_RECLAIM_COMPLETE = 53, 58
OP_ILLEGAL = 10044

# nfsstat4 (RFC 8881 section 15.1)
NFS4_OK = 0
PERM, NOENT, IO, ACCESS, EXIST, XDEV = 1, 2, 5, 13, 17, 18
NOTDIR, ISDIR, INVAL, FBIG, ROFS = 20, 21, 22, 27, 30
NAMETOOLONG, NOTEMPTY, STALE = 63, 66, 70
BADHANDLE, BAD_COOKIE, NOTSUPP, TOOSMALL, SERVERFAULT, BADTYPE = 10001, 10003, 10004, 10005, 10006, 10007
DELAY, GRACE, FHEXPIRED, SHARE_DENIED, WRONGSEC = 10008, 10013, 10014, 10015, 10016
RESOURCE, MOVED, NOFILEHANDLE, MINOR_VERS_MISMATCH = 10018, 10019, 10020, 10021
STALE_CLIENTID, BAD_STATEID, BAD_SEQID = 10022, 10025, 10026
SYMLINK, RESTOREFH, ATTRNOTSUPP, BADXDR = 10029, 10030, 10032, 10036
OPENMODE, BADOWNER, BADCHAR, BADNAME, OP_ILLEGAL_ERR = 10038, 10039, 10040, 10041, 10044
BADSESSION, SEQ_MISORDERED, REQ_TOO_BIG, REP_TOO_BIG = 10052, 10063, 10065, 10066
TOO_MANY_OPS, OP_NOT_IN_SESSION, WRONG_TYPE = 10070, 10071, 10083

# nfs_ftype4
NF4REG, NF4DIR, NF4BLK, NF4CHR, NF4LNK, NF4SOCK, NF4FIFO = range(1, 8)
# OPEN (RFC 8881 section 18.16)
SHARE_ACCESS_READ, SHARE_ACCESS_WRITE, SHARE_ACCESS_BOTH = 1, 2, 3
SHARE_DENY_NONE = 0
OPEN4_NOCREATE, OPEN4_CREATE = 0, 1
UNCHECKED4, GUARDED4, EXCLUSIVE4, EXCLUSIVE4_1 = 0, 1, 2, 3
CLAIM_NULL, CLAIM_PREVIOUS, CLAIM_FH = 0, 1, 4
OPEN4_RESULT_CONFIRM = 2
# stable_how4
UNSTABLE4, DATA_SYNC4, FILE_SYNC4 = 0, 1, 2

# fattr4 attribute numbers (RFC 8881 section 5.8)
A_SUPPORTED, A_TYPE, A_FH_EXPIRE_TYPE, A_CHANGE, A_SIZE = 0, 1, 2, 3, 4
A_FSID, A_RDATTR_ERROR, A_FILEHANDLE, A_FILEID = 8, 11, 19, 20
A_MAXNAME, A_MAXREAD, A_MAXWRITE = 29, 30, 31
A_MODE, A_NUMLINKS, A_OWNER, A_OWNER_GROUP = 33, 35, 36, 37
A_TIME_MODIFY_SET, A_MOUNTED_ON_FILEID = 54, 55

# the special stateids (RFC 8881 section 8.2.3)
ANON_STATEID = (0, b"\0" * 12)
CURRENT_STATEID = (1, b"\0" * 12)  # 4.1 only


class Op:
    """One operation of a COMPOUND: its number, the XDR of its arguments
    and a decoder of its result body (called only when its status is OK,
    unless errbody)."""

    def __init__(self, num, args=b"", decode=None, errbody=None):
        self.num, self.args, self.decode, self.errbody = num, args, decode, errbody


class Result:
    """A COMPOUND4res: status, tag and [(op, status, value)]."""

    def __init__(self, status, tag, ops):
        self.status, self.tag, self.ops = status, tag, ops

    def statuses(self):
        return [s for _, s, _ in self.ops]

    def last(self):
        """The status of the last op the server ran (the COMPOUND's)."""
        return self.ops[-1][1] if self.ops else self.status

    def value(self, num, i=-1):
        """The decoded result of the i-th (default last) op num that
        succeeded, or None."""
        vals = [v for n, s, v in self.ops if n == num and s == NFS4_OK]
        return vals[i] if vals and -len(vals) <= i < len(vals) else None


# ---- XDR pieces ----

def bitmap(attrs):
    words = []
    for a in attrs:
        while len(words) <= a // 32:
            words.append(0)
        words[a // 32] |= 1 << (a % 32)
    p = Packer().u32(len(words))
    for w in words:
        p.u32(w)
    return p.bytes()


def get_bitmap(u):
    n = u.u32()
    if n > 64:
        raise XdrError("bitmap of %d words" % n)
    words = [u.u32() for _ in range(n)]
    return sorted(32 * i + b for i, w in enumerate(words) for b in range(32) if w >> b & 1)


def name_bytes(name):
    return name.encode("utf-8", "surrogateescape") if isinstance(name, str) else bytes(name)


def component(name):
    return Packer().opaque(name_bytes(name)).bytes()


def fattr(attrs):
    """fattr4 of the attributes SETATTR/CREATE/OPEN take: a dict of mode,
    size, owner, owner_group (strings, e.g. "0") and mtime ((sec, nsec)
    or "server")."""
    ids = {"size": A_SIZE, "mode": A_MODE, "owner": A_OWNER, "owner_group": A_OWNER_GROUP,
           "mtime": A_TIME_MODIFY_SET}
    vals = Packer()
    for k in sorted(attrs, key=lambda k: ids[k]):
        v = attrs[k]
        if k == "size":
            vals.u64(v)
        elif k == "mode":
            vals.u32(v)
        elif k in ("owner", "owner_group"):
            vals.string(str(v))
        elif v == "server":
            vals.u32(0)  # SET_TO_SERVER_TIME4
        else:
            vals.u32(1).u64(v[0]).u32(v[1])  # SET_TO_CLIENT_TIME4, nfstime4
    return bitmap([ids[k] for k in attrs]) + Packer().opaque(vals.bytes()).bytes()


def parse_fattr(u):
    """fattr4 -> dict of the attributes this client knows; stops at the
    first it does not (the rest of attr_vals is then skipped)."""
    attrs = get_bitmap(u)
    vals = Unpacker(u.opaque(1 << 20))
    out = {}
    for a in attrs:
        if a == A_SUPPORTED:
            out["supported"] = get_bitmap(vals)
        elif a == A_TYPE:
            out["type"] = vals.u32()
        elif a == A_FH_EXPIRE_TYPE:
            out["fh_expire_type"] = vals.u32()
        elif a == A_CHANGE:
            out["change"] = vals.u64()
        elif a == A_SIZE:
            out["size"] = vals.u64()
        elif a == A_FSID:
            out["fsid"] = (vals.u64(), vals.u64())
        elif a == A_RDATTR_ERROR:
            out["rdattr_error"] = vals.u32()
        elif a == A_FILEHANDLE:
            out["filehandle"] = vals.opaque(128)
        elif a == A_FILEID:
            out["fileid"] = vals.u64()
        elif a in (A_MAXNAME,):
            out["maxname"] = vals.u32()
        elif a == A_MAXREAD:
            out["maxread"] = vals.u64()
        elif a == A_MAXWRITE:
            out["maxwrite"] = vals.u64()
        elif a == A_MODE:
            out["mode"] = vals.u32()
        elif a == A_NUMLINKS:
            out["numlinks"] = vals.u32()
        elif a == A_OWNER:
            out["owner"] = vals.string(1024)
        elif a == A_OWNER_GROUP:
            out["owner_group"] = vals.string(1024)
        elif a == A_MOUNTED_ON_FILEID:
            out["mounted_on_fileid"] = vals.u64()
        else:
            out["_unparsed_from"] = a
            break
    return out


def stateid(sid):
    return Packer().u32(sid[0]).fixed(sid[1]).bytes()


def get_stateid(u):
    return (u.u32(), u.fixed(12))


def get_cinfo(u):
    return (u.bool(), u.u64(), u.u64())


# ---- operations (RFC 8881 section 18; 4.0-only ones from RFC 7530 16) ----

def putrootfh():
    return Op(OP_PUTROOTFH)


def putpubfh():
    return Op(OP_PUTPUBFH)


def putfh(fh):
    return Op(OP_PUTFH, Packer().opaque(fh).bytes())


def putfh_raw(xdr):
    """PUTFH whose argument is given as raw XDR (malformed handles)."""
    return Op(OP_PUTFH, xdr)


def getfh():
    return Op(OP_GETFH, b"", lambda u: u.opaque(128))


def savefh():
    return Op(OP_SAVEFH)


def restorefh():
    return Op(OP_RESTOREFH)


def lookup(name):
    return Op(OP_LOOKUP, component(name))


def lookupp():
    return Op(OP_LOOKUPP)


DEFAULT_ATTRS = (A_TYPE, A_SIZE, A_FSID, A_FILEID, A_MODE, A_NUMLINKS, A_OWNER, A_OWNER_GROUP)


def getattr_(attrs=DEFAULT_ATTRS):
    return Op(OP_GETATTR, bitmap(attrs), parse_fattr)


def access(bits=0x3F):
    return Op(OP_ACCESS, Packer().u32(bits).bytes(), lambda u: (u.u32(), u.u32()))


def _readdir_res(u):
    verf = u.fixed(8)
    ents = []
    while u.bool():
        cookie = u.u64()
        name = u.string(1 << 16)
        ents.append((name, cookie, parse_fattr(u)))
    return {"verf": verf, "entries": ents, "eof": u.bool()}


def readdir(cookie=0, verf=b"\0" * 8, dircount=8192, maxcount=32768,
            attrs=(A_TYPE, A_FILEID, A_RDATTR_ERROR)):
    p = Packer().u64(cookie).fixed(verf).u32(dircount).u32(maxcount).raw(bitmap(attrs))
    return Op(OP_READDIR, p.bytes(), _readdir_res)


def readlink():
    return Op(OP_READLINK, b"", lambda u: u.string(1 << 16))


def _open_res(u):
    sid = get_stateid(u)
    cinfo = get_cinfo(u)
    rflags = u.u32()
    attrset = get_bitmap(u)
    dtype = u.u32()
    if dtype != 0:  # OPEN_DELEGATE_NONE; this server never delegates
        raise XdrError("delegation type %d not decoded" % dtype)
    return {"stateid": sid, "cinfo": cinfo, "rflags": rflags, "attrset": attrset}


def open_(name=None, access=SHARE_ACCESS_READ, deny=SHARE_DENY_NONE, clientid=0,
          owner=b"secrpc4", seqid=0, create=None, attrs=None, verf=b"\0" * 8, claim=None):
    """OPEN4args: create is None (OPEN4_NOCREATE) or a createmode4; claim
    is CLAIM_NULL with name, or CLAIM_FH (4.1) when name is None."""
    p = Packer().u32(seqid).u32(access).u32(deny).u64(clientid).opaque(owner)
    if create is None:
        p.u32(OPEN4_NOCREATE)
    else:
        p.u32(OPEN4_CREATE).u32(create)
        if create in (UNCHECKED4, GUARDED4):
            p.raw(fattr(attrs or {}))
        elif create == EXCLUSIVE4:
            p.fixed(verf)
        else:
            p.fixed(verf).raw(fattr(attrs or {}))
    if claim is None:
        claim = CLAIM_NULL if name is not None else CLAIM_FH
    p.u32(claim)
    if claim == CLAIM_NULL:
        p.raw(component(name))
    elif claim == CLAIM_PREVIOUS:
        p.u32(0)
    return Op(OP_OPEN, p.bytes(), _open_res)


def open_confirm(sid, seqid):
    return Op(OP_OPEN_CONFIRM, stateid(sid) + Packer().u32(seqid).bytes(), get_stateid)


def close(sid, seqid=0):
    return Op(OP_CLOSE, Packer().u32(seqid).bytes() + stateid(sid), get_stateid)


def create(objtype, name, attrs=None, linkdata=None, spec=(0, 0)):
    """CREATE4args: a directory, symlink (linkdata), fifo, socket or
    device (spec)."""
    p = Packer().u32(objtype)
    if objtype == NF4LNK:
        p.opaque(name_bytes(linkdata))
    elif objtype in (NF4BLK, NF4CHR):
        p.u32(spec[0]).u32(spec[1])
    p.raw(component(name)).raw(fattr(attrs or {}))
    return Op(OP_CREATE, p.bytes(), lambda u: (get_cinfo(u), get_bitmap(u)))


def remove(name):
    return Op(OP_REMOVE, component(name), get_cinfo)


def rename(old, new):
    """SAVED_FH is the source directory, CURRENT_FH the target's."""
    return Op(OP_RENAME, component(old) + component(new), lambda u: (get_cinfo(u), get_cinfo(u)))


def link(name):
    """SAVED_FH is the object, CURRENT_FH the directory of the new name."""
    return Op(OP_LINK, component(name), get_cinfo)


def setattr_(attrs, sid=ANON_STATEID):
    """SETATTR4res carries attrsset with any status."""
    return Op(OP_SETATTR, stateid(sid) + fattr(attrs), get_bitmap, errbody=get_bitmap)


def read(offset, count, sid=ANON_STATEID):
    p = stateid(sid) + Packer().u64(offset).u32(count).bytes()
    return Op(OP_READ, p, lambda u: (u.bool(), u.opaque(64 << 20)))


def write(offset, data, sid=ANON_STATEID, stable=FILE_SYNC4):
    p = stateid(sid) + Packer().u64(offset).u32(stable).opaque(data).bytes()
    return Op(OP_WRITE, p, lambda u: (u.u32(), u.u32(), u.fixed(8)))


def secinfo(name):
    def dec(u):
        out = []
        for _ in range(u.u32()):
            fl = u.u32()
            if fl == 6:  # RPCSEC_GSS: oid, qop, service
                u.opaque(1024)
                u.u32()
                u.u32()
            out.append(fl)
        return out
    return Op(OP_SECINFO, component(name), dec)


def raw_op(num, args=b""):
    """An op with arbitrary number and arguments; its result is not
    decoded (use it last)."""
    return Op(num, args, lambda u: None)


# -- session and client ops --

def exchange_id(owner, verf=b"secrpc4\0", flags=0):
    p = Packer().fixed(verf).opaque(owner).u32(flags).u32(0)  # SP4_NONE
    p.u32(0)  # no eia_client_impl_id

    def dec(u):
        r = {"clientid": u.u64(), "sequenceid": u.u32(), "flags": u.u32()}
        if u.u32() != 0:
            raise XdrError("state protection not SP4_NONE")
        r["minor_id"] = u.u64()
        r["major_id"] = u.opaque(1024)
        r["scope"] = u.opaque(1024)
        if u.u32():
            u.string(1024)
            u.string(1024)
            u.u64()
            u.u32()
        return r
    return Op(OP_EXCHANGE_ID, p.bytes(), dec)


def channel_attrs(maxreq, maxresp, maxcached=8192, maxops=64, maxreqs=4):
    return Packer().u32(0).u32(maxreq).u32(maxresp).u32(maxcached).u32(maxops).u32(maxreqs).u32(0).bytes()


def _get_chan(u):
    c = {k: u.u32() for k in ("padsize", "maxreq", "maxresp", "maxcached", "maxops", "maxreqs")}
    for _ in range(u.u32()):
        u.u32()
    return c


def create_session(clientid, seq, fore, back=None, cb_program=0x40000000):
    p = Packer().u64(clientid).u32(seq).u32(0).raw(fore).raw(back or channel_attrs(4096, 4096, 0, 2, 1))
    p.u32(cb_program).u32(1).u32(0)  # one callback_sec_parms4: AUTH_NONE

    def dec(u):
        return {"sessionid": u.fixed(16), "sequence": u.u32(), "flags": u.u32(),
                "fore": _get_chan(u), "back": _get_chan(u)}
    return Op(OP_CREATE_SESSION, p.bytes(), dec)


def sequence(sessionid, seqid, slot=0, highest=0, cachethis=False):
    p = Packer().fixed(sessionid).u32(seqid).u32(slot).u32(highest).bool(cachethis)

    def dec(u):
        return {"sessionid": u.fixed(16), "sequenceid": u.u32(), "slotid": u.u32(),
                "highest": u.u32(), "target_highest": u.u32(), "status_flags": u.u32()}
    return Op(OP_SEQUENCE, p.bytes(), dec)


def reclaim_complete(one_fs=False):
    return Op(OP_RECLAIM_COMPLETE, Packer().bool(one_fs).bytes())


def setclientid(idstr, verf=b"secrpc40"):
    p = Packer().fixed(verf).opaque(idstr).u32(0x40000000).string("tcp").string("127.0.0.1.0.0").u32(1)

    def dec(u):
        return {"clientid": u.u64(), "confirm": u.fixed(8)}

    def err(u):  # NFS4ERR_CLID_INUSE carries the client's address
        return None
    return Op(OP_SETCLIENTID, p.bytes(), dec, errbody=err)


def setclientid_confirm(clientid, confirm):
    return Op(OP_SETCLIENTID_CONFIRM, Packer().u64(clientid).fixed(confirm).bytes())


# ---- the client ----

class V4:
    """NFSv4 over one nfsrpc.Client (or secrpc.PrivClient) connection.
    minor 1 (and 2) set up a session at once; minor 0 sets up a client ID
    when it first needs one (OPEN)."""

    _serial = 0

    def __init__(self, conn, minor=1, maxreq=1 << 20 | 65536, maxresp=1 << 20 | 65536, maxops=64,
                 owner=None):
        V4._serial += 1
        self.conn, self.minor = conn, minor
        self.owner = owner or ("secrpc4-%d-%d" % (os.getpid(), V4._serial)).encode()
        self.clientid = None
        self.sessionid = None
        self.slot_seq = 0
        self.open_seq = 0  # numbers the open-owners (one per OPEN)
        self.session_attrs = None
        if minor >= 1:
            self.create_session(maxreq, maxresp, maxops)

    # -- transport --
    def call_raw(self, args, cred=None):
        """One COMPOUND (args: the whole COMPOUND4args XDR): an Unpacker
        on the COMPOUND4res (nfsrpc.RpcError if the call is refused)."""
        return self.conn.call(NFS_PROG, 4, NFSPROC4_COMPOUND, args, cred=cred)

    @staticmethod
    def pack(ops, minor, tag=b""):
        p = Packer().opaque(tag).u32(minor).u32(len(ops))
        for op in ops:
            p.u32(op.num).raw(op.args)
        return p.bytes()

    @staticmethod
    def parse(u, ops):
        status = u.u32()
        tag = u.opaque(1 << 16)
        n = u.u32()
        out = []
        for i in range(n):
            num = u.u32()
            st = u.u32()
            op = ops[i] if i < len(ops) else None
            val = None
            if op is not None and op.num == num:
                if st == NFS4_OK and op.decode:
                    val = op.decode(u)
                elif st != NFS4_OK and op.errbody:
                    val = op.errbody(u)
            elif num != OP_ILLEGAL and st == NFS4_OK:
                raise XdrError("result %d is op %d, asked %s" % (i, num, op and op.num))
            out.append((num, st, val))
            if st != NFS4_OK:
                break
        return Result(status, tag, out)

    def compound(self, ops, cred=None, seq=True, minor=None, tag=b""):
        """Run ops (with SEQUENCE first in 4.1 unless seq is False); the
        SEQUENCE result is left out of the Result."""
        minor = self.minor if minor is None else minor
        with_seq = seq and minor >= 1 and self.sessionid is not None
        if with_seq:
            ops = [sequence(self.sessionid, self.slot_seq + 1)] + list(ops)
        r = self.parse(self.call_raw(self.pack(ops, minor, tag), cred), ops)
        if with_seq:
            if r.ops and r.ops[0][0] == OP_SEQUENCE and r.ops[0][1] == NFS4_OK:
                self.slot_seq += 1
            r.sequence = r.ops[0] if r.ops else None
            r.ops = r.ops[1:] if r.ops and r.ops[0][1] == NFS4_OK else r.ops
        return r

    # -- setup --
    def create_session(self, maxreq, maxresp, maxops=64):
        r = self.compound([exchange_id(self.owner)], seq=False)
        if r.status != NFS4_OK:
            raise RuntimeError("EXCHANGE_ID: %d" % r.status)
        eid = r.value(OP_EXCHANGE_ID)
        self.clientid = eid["clientid"]
        r = self.compound([create_session(self.clientid, eid["sequenceid"],
                                          channel_attrs(maxreq, maxresp, 8192, maxops, 4))], seq=False)
        if r.status != NFS4_OK:
            raise RuntimeError("CREATE_SESSION: %d" % r.status)
        cs = r.value(OP_CREATE_SESSION)
        self.sessionid = cs["sessionid"]
        self.session_attrs = cs["fore"]
        self.slot_seq = 0
        r = self.compound([reclaim_complete()])
        if r.status != NFS4_OK:
            raise RuntimeError("RECLAIM_COMPLETE: %d" % r.status)

    def setclientid(self):
        """4.0: SETCLIENTID and SETCLIENTID_CONFIRM (RFC 7530 16.33-34)."""
        r = self.compound([setclientid(self.owner)])
        if r.status != NFS4_OK:
            raise RuntimeError("SETCLIENTID: %d" % r.status)
        v = r.value(OP_SETCLIENTID)
        r = self.compound([setclientid_confirm(v["clientid"], v["confirm"])])
        if r.status != NFS4_OK:
            raise RuntimeError("SETCLIENTID_CONFIRM: %d" % r.status)
        self.clientid = v["clientid"]

    # -- conveniences (each one COMPOUND) --
    def path_ops(self, path):
        """PUTROOTFH and a LOOKUP per component of an absolute path."""
        return [putrootfh()] + [lookup(p) for p in path.split("/") if p]

    def fh_of(self, path):
        r = self.compound(self.path_ops(path) + [getfh()])
        if r.status != NFS4_OK:
            raise RuntimeError("walk to %s: %s" % (path, r.statuses()))
        return r.value(OP_GETFH)

    def lookup_fh(self, dirfh, name):
        """(status, fh, attrs) of name in dirfh."""
        r = self.compound([putfh(dirfh), lookup(name), getfh(), getattr_()])
        return r.status, r.value(OP_GETFH), r.value(OP_GETATTR)

    def getattr(self, fh, attrs=DEFAULT_ATTRS, cred=None):
        r = self.compound([putfh(fh), getattr_(attrs)], cred=cred)
        return r.status, r.value(OP_GETATTR)

    def putfh_status(self, fh, then=None):
        """Status of PUTFH fh (+ GETATTR); the op that failed is last."""
        r = self.compound([putfh(fh), then or getattr_((A_TYPE,))])
        return r.status

    def readdir_names(self, fh, cred=None):
        """(status, [names]) of a whole listing (small directories)."""
        names, cookie, verf = [], 0, b"\0" * 8
        for _ in range(100):
            r = self.compound([putfh(fh), readdir(cookie, verf)], cred=cred)
            if r.status != NFS4_OK:
                return r.status, names
            v = r.value(OP_READDIR)
            names += [e[0] for e in v["entries"]]
            if v["eof"] or not v["entries"]:
                return NFS4_OK, names
            cookie, verf = v["entries"][-1][1], v["verf"]
        return NFS4_OK, names

    def open_ops(self, name=None, access=SHARE_ACCESS_READ, create=None, attrs=None, claim=None):
        """OPEN and GETFH. Each OPEN has an open-owner of its own, so 4.0
        seqids (RFC 7530 9.1.7) start at 0 and never get out of step
        when an OPEN fails."""
        if self.minor == 0 and self.clientid is None:
            self.setclientid()
        self.open_seq += 1
        owner = self.owner + b"-open-%d" % self.open_seq
        return [open_(name, access, SHARE_DENY_NONE, self.clientid or 0, owner, 0, create, attrs,
                      claim=claim), getfh()]

    def open(self, dirfh, name, access=SHARE_ACCESS_READ, create=None, attrs=None, cred=None):
        """OPEN by name in dirfh, then CLOSE; (status, fh, attrs). 4.0
        confirms the open (RFC 7530 16.18) before closing it."""
        ops = [putfh(dirfh)] + self.open_ops(name, access, create, attrs)
        r = self.compound(ops + [getattr_()], cred=cred)
        o = r.value(OP_OPEN)
        if o is None:
            return r.last(), None, None
        fh, attrs_ = r.value(OP_GETFH), r.value(OP_GETATTR)
        self._close(fh, o, cred)
        return NFS4_OK, fh, attrs_

    def open_fh(self, fh, access=SHARE_ACCESS_READ, cred=None):
        """4.1 OPEN with CLAIM_FH; closed again; the status."""
        r = self.compound([putfh(fh)] + self.open_ops(None, access), cred=cred)
        o = r.value(OP_OPEN)
        if o is not None:
            self._close(fh, o, cred)
        return r.last()

    def _close(self, fh, o, cred):
        sid, seq = o["stateid"], 1
        if self.minor == 0 and o["rflags"] & OPEN4_RESULT_CONFIRM:
            r = self.compound([putfh(fh), open_confirm(sid, seq)], cred=cred)
            sid, seq = r.value(OP_OPEN_CONFIRM) or sid, 2
        r = self.compound([putfh(fh), close(sid, seq)], cred=cred)
        if r.status != NFS4_OK:
            raise RuntimeError("CLOSE: %s" % r.statuses())
