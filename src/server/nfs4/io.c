/* NFSv4 OPEN and I/O (RFC 7530 16.16-16.20, 16.23, 16.36, RFC 8881
 * 18.16): OPEN (CLAIM_NULL, CLAIM_FH, CLAIM_PREVIOUS; UNCHECKED, GUARDED,
 * EXCLUSIVE4, EXCLUSIVE4_1), OPEN_CONFIRM, OPEN_DOWNGRADE, CLOSE, READ,
 * WRITE, COMMIT; CLAIM_DELEGATE_CUR and CLAIM_DELEG_CUR_FH for the
 * delegations of deleg.c. The open state itself is kept by stateid.c. */
#include <errno.h>
#include <string.h>

#include "server/nfs4/nfs4.h"
#include "server/readio.h"
#include "server/snfsd.h"

enum { OPEN4_NOCREATE = 0, OPEN4_CREATE = 1 };
enum { UNCHECKED4 = 0, GUARDED4 = 1, EXCLUSIVE4 = 2, EXCLUSIVE4_1 = 3 };
enum {
	CLAIM_NULL = 0,
	CLAIM_PREVIOUS = 1,
	CLAIM_DELEGATE_CUR = 2,
	CLAIM_DELEGATE_PREV = 3,
	CLAIM_FH = 4,
	CLAIM_DELEG_CUR_FH = 5,
	CLAIM_DELEG_PREV_FH = 6,
};
enum {
	OPEN4_RESULT_CONFIRM = 2,
	OPEN4_RESULT_LOCKTYPE_POSIX = 4,
	OPEN4_RESULT_MAY_NOTIFY_LOCK = 0x20
};
/* OPEN4_SHARE_ACCESS_WANT_*: 4.1 delegation wishes in share_access */
enum {
	WANT_DELEG_MASK = 0xff00,
	WANT_NO_DELEG = 0x0400,
	WANT_CANCEL = 0x0500,
};

struct open_req {
	struct nfs4_open_args a;
	uint32_t opentype, createmode;
	struct bk_setattr sa;
	uint32_t set[3];
	uint8_t verf[8];
	char name[BK_NAME_MAX + 1];
	struct nfs4_stateid dsid; /* CLAIM_DELEGATE_CUR, CLAIM_DELEG_CUR_FH */
	uint32_t want;            /* OPEN4_SHARE_ACCESS_WANT_* */
};

/* EXCLUSIVE4_1's cva_attrs: only what suppattr_exclcreat lists, else
 * INVAL (RFC 8881 18.16.3): a time set would overwrite the verifier the
 * times hold, and the retry of the create would then be EXIST. */
static uint32_t decode_exclcreat_attrs(struct nfs4_compound *c,
                                       struct open_req *o)
{
	uint32_t allowed[3], st = nfs4_decode_sattr(c, c->args, &o->sa, o->set);

	if (st)
		return st;
	nfs4_exclcreat_attrs(allowed);
	for (int i = 0; i < 3; i++)
		if (o->set[i] & ~allowed[i])
			return NFS4ERR_INVAL;
	return NFS4_OK;
}

static uint32_t decode_createhow(struct nfs4_compound *c, struct open_req *o)
{
	if (!xdr_get_u32(c->args, &o->createmode))
		return NFS4ERR_BADXDR;
	switch (o->createmode) {
	case UNCHECKED4:
	case GUARDED4:
		return nfs4_decode_sattr(c, c->args, &o->sa, o->set);
	case EXCLUSIVE4:
		return xdr_get_fixed(c->args, o->verf, 8) ? NFS4_OK
		                                          : NFS4ERR_BADXDR;
	case EXCLUSIVE4_1:
		if (c->minor < 1)
			return NFS4ERR_BADXDR;
		if (!xdr_get_fixed(c->args, o->verf, 8))
			return NFS4ERR_BADXDR;
		return decode_exclcreat_attrs(c, o);
	}
	return NFS4ERR_BADXDR;
}

static uint32_t decode_open(struct nfs4_compound *c, struct open_req *o)
{
	uint32_t st, deleg;

	if (!xdr_get_u32(c->args, &o->a.seqid) ||
	    !xdr_get_u32(c->args, &o->a.access) ||
	    !xdr_get_u32(c->args, &o->a.deny) ||
	    !xdr_get_u64(c->args, &o->a.clientid) ||
	    !xdr_get_opaque_ref(c->args, &o->a.owner, &o->a.ownerlen,
	                        NFS4_OPAQUE_LIMIT) ||
	    !xdr_get_u32(c->args, &o->opentype))
		return NFS4ERR_BADXDR;
	if (o->opentype == OPEN4_CREATE) {
		st = decode_createhow(c, o);
		if (st)
			return st;
	} else if (o->opentype != OPEN4_NOCREATE) {
		return NFS4ERR_BADXDR;
	}
	if (!xdr_get_u32(c->args, &o->a.claim))
		return NFS4ERR_BADXDR;
	switch (o->a.claim) {
	case CLAIM_NULL:
	case CLAIM_DELEGATE_PREV:
		return nfs4_get_name(c->args, o->name);
	case CLAIM_PREVIOUS:
		return xdr_get_u32(c->args, &deleg) ? NFS4_OK : NFS4ERR_BADXDR;
	case CLAIM_DELEGATE_CUR:
		if (!nfs4_get_stateid(c->args, &o->dsid))
			return NFS4ERR_BADXDR;
		return nfs4_get_name(c->args, o->name);
	case CLAIM_FH:
	case CLAIM_DELEG_PREV_FH:
		return c->minor ? NFS4_OK : NFS4ERR_BADXDR;
	case CLAIM_DELEG_CUR_FH:
		if (!c->minor)
			return NFS4ERR_BADXDR;
		return nfs4_get_stateid(c->args, &o->dsid) ? NFS4_OK
		                                           : NFS4ERR_BADXDR;
	}
	return NFS4ERR_BADXDR;
}

static uint64_t dir_change(const struct nfs4_fh *d)
{
	struct bk_attr a;

	if (d->ex->ops->getattr(d->ex->bk, &d->bh, &a))
		return 0;
	return a.change;
}

/* CLAIM_NULL: find or make name in the current directory; the current fh
 * becomes the file. */
static uint32_t open_by_name(struct nfs4_compound *c, struct open_req *o,
                             uint64_t *before, uint64_t *after)
{
	struct nfs4_fh *d = &c->cfh;
	struct bk_handle h;
	struct bk_attr a;
	enum bk_ftype t = BK_REG;
	uint32_t st = nfs4_cfh_type(c, &t);
	int rc;

	if (st)
		return st;
	if (t != BK_DIR)
		return t == BK_LNK ? NFS4ERR_SYMLINK : NFS4ERR_NOTDIR;
	if (d->kind == FH4_PSEUDO) {
		struct nfs4_fh fh;
		if (o->opentype == OPEN4_CREATE)
			return NFS4ERR_ROFS;
		st = nfs4_pseudo_lookup(c, d, o->name, &fh);
		return st ? st : NFS4ERR_ISDIR;
	}
	*before = dir_change(d);
	rc = d->ex->ops->lookup(d->ex->bk, &d->cred, &d->bh, o->name, &h, &a);
	if (o->opentype == OPEN4_NOCREATE ||
	    (rc == 0 && o->createmode == UNCHECKED4)) {
		if (rc)
			return nfs4_errno(rc);
		/* UNCHECKED on an existing file sets only the size
		 * (RFC 7530 16.16.5: "truncate" semantics). */
		o->sa.mask &= BK_SET_SIZE;
		o->set[0] &= 1u << 4;
		o->set[1] = o->set[2] = 0;
	} else {
		st = nfs4_need_write(c);
		if (st)
			return st;
		if (o->createmode == EXCLUSIVE4 ||
		    o->createmode == EXCLUSIVE4_1) {
			rc = d->ex->ops->create(d->ex->bk, &d->cred, &d->bh,
			                        o->name, BK_CREATE_EXCLUSIVE,
			                        NULL, o->verf, &h, &a);
			if (o->createmode == EXCLUSIVE4)
				o->set[0] = o->set[1] = o->set[2] = 0;
		} else {
			rc = d->ex->ops->create(
			    d->ex->bk, &d->cred, &d->bh, o->name,
			    o->createmode == GUARDED4 ? BK_CREATE_GUARDED
			                              : BK_CREATE_UNCHECKED,
			    &o->sa, NULL, &h, &a);
			o->sa.mask = 0; /* applied by create */
		}
		if (rc)
			return nfs4_errno(rc);
		o->a.created = true;
	}
	*after = dir_change(d);
	d->bh = h;
	return NFS4_OK;
}

/* May these credentials open the file with these share modes? */
static uint32_t open_access(struct nfs4_compound *c, uint32_t access)
{
	struct nfs4_fh *f = &c->cfh;
	uint32_t want = 0, granted = 0;
	struct bk_attr a;
	int rc;

	rc = f->ex->ops->getattr(f->ex->bk, &f->bh, &a);
	if (rc)
		return nfs4_errno(rc);
	if (a.type == BK_DIR)
		return NFS4ERR_ISDIR;
	if (a.type == BK_LNK)
		return NFS4ERR_SYMLINK;
	if (a.type != BK_REG)
		return c->minor ? NFS4ERR_WRONG_TYPE : NFS4ERR_INVAL;
	if ((access & 2) && !f->rw)
		return NFS4ERR_ROFS;
	if (access & 1)
		want |= BK_ACCESS_READ;
	if (access & 2)
		want |= BK_ACCESS_MODIFY;
	rc = f->ex->ops->access(f->ex->bk, &f->cred, &f->bh, want, &granted);
	if (rc)
		return nfs4_errno(rc);
	/* The owner may read a file it may write (as Linux nfsd allows,
	 * for the client's page cache). */
	if ((want & BK_ACCESS_READ) && !(granted & BK_ACCESS_READ) &&
	    a.uid == f->cred.uid && (granted & BK_ACCESS_MODIFY))
		granted |= BK_ACCESS_READ;
	return (granted & want) == want ? NFS4_OK : NFS4ERR_ACCESS;
}

static uint32_t open_apply_attrs(struct nfs4_compound *c, struct open_req *o)
{
	struct bk_attr after;
	int rc;

	if (!o->sa.mask)
		return NFS4_OK;
	if (!o->a.created) {
		/* Left after open_by_name: the size of an existing file
		 * opened with OPEN4_CREATE/UNCHECKED4 (RFC 8881 18.16.3,
		 * RFC 7530 16.16.5), a truncation. It changes the file as
		 * SETATTR would, so a read-only export (or the pseudo fs)
		 * refuses it with NFS4ERR_ROFS like SETATTR (RFC 8881
		 * 18.30.3); open_access checked the rest, and
		 * nfs4_open_finish truncates once the share modes allow. */
		if (nfs4_need_write(c))
			return NFS4ERR_ROFS;
		o->a.trunc = &o->sa;
		return NFS4_OK;
	}
	rc = c->cfh.ex->ops->setattr(c->cfh.ex->bk, &c->cfh.cred, &c->cfh.bh,
	                             &o->sa, &after);
	return nfs4_errno(rc);
}

/* A read delegation may go with this OPEN (deleg.c decides on the
 * file's state, nfs4_open_finish on the back channel): reading only,
 * denying nothing, not declined, on an export that grants them, in 4.1
 * or later. */
static bool deleg_wanted(const struct nfs4_compound *c,
                         const struct open_req *o)
{
	uint32_t want = o->want & WANT_DELEG_MASK;

	return c->minor >= 1 && c->cfh.rule &&
	       (c->cfh.rule->flags & EXP_DELEGATIONS) && o->a.access == 1 &&
	       !o->a.deny && !o->a.trunc && want != WANT_NO_DELEG &&
	       want != WANT_CANCEL &&
	       (o->a.claim == CLAIM_NULL || o->a.claim == CLAIM_FH);
}

/* The file system half: the current fh becomes the file opened, checked
 * for access; changes to it wait for other clients' delegations. */
static uint32_t open_file(struct nfs4_compound *c, struct open_req *o,
                          uint64_t *before, uint64_t *after)
{
	uint32_t st = NFS4_OK;
	bool by_name =
	    o->a.claim == CLAIM_NULL || o->a.claim == CLAIM_DELEGATE_CUR;

	if (by_name)
		st = open_by_name(c, o, before, after);
	else if (c->cfh.kind != FH4_EXPORT)
		st = NFS4ERR_ISDIR;
	if (!st && (o->a.claim == CLAIM_DELEGATE_CUR ||
	            o->a.claim == CLAIM_DELEG_CUR_FH))
		st = nfs4_deleg_claim_check(c, &o->dsid);
	if (!st && !o->a.created)
		st = open_access(c, o->a.access);
	if (!st)
		st = open_apply_attrs(c, o);
	/* Writing (a truncation too) or denying reads: other clients'
	 * delegations come back first (nfs4_open_finish checks again). */
	if (!st && ((o->a.access & 2) || o->a.deny || o->a.trunc))
		st = nfs4_deleg_conflict(c, &c->cfh.bh);
	return st;
}

uint32_t nfs4_op_open(struct nfs4_compound *c)
{
	struct open_req o;
	struct nfs4_open_res r;
	uint64_t before = 0, after = 0;
	uint32_t st;

	memset(&o, 0, sizeof(o));
	memset(&r, 0, sizeof(r));
	st = decode_open(c, &o);
	if (st)
		return st;
	/* The WANT_* delegation hints of 4.1 ride in the upper bits. */
	o.want = o.a.access;
	o.a.access &= 0xff;
	if (o.a.access < 1 || o.a.access > 3 || o.a.deny > 3)
		return NFS4ERR_INVAL;
	switch (o.a.claim) {
	case CLAIM_NULL:
	case CLAIM_FH:
	case CLAIM_PREVIOUS:
	case CLAIM_DELEGATE_CUR:
	case CLAIM_DELEG_CUR_FH:
		break;
	default:
		/* No delegation outlives its client or us: none to claim
		 * from a previous instance. */
		return NFS4ERR_RECLAIM_BAD;
	}
	if (o.a.claim != CLAIM_NULL && o.opentype == OPEN4_CREATE)
		return NFS4ERR_INVAL;
	st = nfs4_open_begin(c, &o.a);
	if (!st)
		st = open_file(c, &o, &before, &after);
	if (st)
		return st;
	o.a.want_deleg = deleg_wanted(c, &o);
	st = nfs4_open_finish(c, &o.a, &r);
	if (st)
		return st;
	nfs4_set_cur_stateid(c, &r.sid);
	nfs4_put_stateid(c->res, &r.sid);
	nfs4_put_cinfo(c->res, false, before, after);
	xdr_put_u32(c->res, OPEN4_RESULT_LOCKTYPE_POSIX |
	                        (r.confirm ? OPEN4_RESULT_CONFIRM : 0) |
	                        (r.cb_up ? OPEN4_RESULT_MAY_NOTIFY_LOCK : 0));
	nfs4_put_bitmap(c->res, o.set);
	nfs4_deleg_put(c->res, &r);
	return NFS4_OK;
}

uint32_t nfs4_op_open_confirm(struct nfs4_compound *c)
{
	struct nfs4_stateid sid;
	uint32_t seqid, st;

	if (!nfs4_get_stateid(c->args, &sid) || !xdr_get_u32(c->args, &seqid))
		return NFS4ERR_BADXDR;
	st = nfs4_need_export(c);
	if (!st)
		st = nfs4_open_confirm_state(c, seqid, &sid);
	if (st)
		return st;
	nfs4_put_stateid(c->res, &sid);
	return NFS4_OK;
}

uint32_t nfs4_op_open_downgrade(struct nfs4_compound *c)
{
	struct nfs4_stateid sid;
	uint32_t seqid, access, deny, st;

	if (!nfs4_get_stateid(c->args, &sid) || !xdr_get_u32(c->args, &seqid) ||
	    !xdr_get_u32(c->args, &access) || !xdr_get_u32(c->args, &deny))
		return NFS4ERR_BADXDR;
	access &= 0xff;
	st = nfs4_need_export(c);
	if (!st)
		st = nfs4_resolve_stateid(c, &sid);
	if (!st)
		st = nfs4_open_downgrade_state(c, seqid, &sid, access, deny);
	if (st)
		return st;
	nfs4_set_cur_stateid(c, &sid);
	nfs4_put_stateid(c->res, &sid);
	return NFS4_OK;
}

uint32_t nfs4_op_close(struct nfs4_compound *c)
{
	struct nfs4_stateid sid;
	uint32_t seqid, st;

	if (!xdr_get_u32(c->args, &seqid) || !nfs4_get_stateid(c->args, &sid))
		return NFS4ERR_BADXDR;
	st = nfs4_need_export(c);
	if (!st)
		st = nfs4_resolve_stateid(c, &sid);
	if (!st)
		st = nfs4_close_state(c, seqid, &sid);
	if (st)
		return st;
	nfs4_put_stateid(c->res, &sid);
	return NFS4_OK;
}

/* READ and WRITE work on regular files only. */
static uint32_t need_regular(struct nfs4_compound *c)
{
	enum bk_ftype t = BK_REG;
	uint32_t st = nfs4_need_export(c);

	if (!st)
		st = nfs4_cfh_type(c, &t);
	if (st)
		return st;
	if (t == BK_DIR)
		return NFS4ERR_ISDIR;
	if (t == BK_LNK && c->minor)
		return NFS4ERR_SYMLINK;
	return t == BK_REG ? NFS4_OK : NFS4ERR_INVAL;
}

/* READ's error st, unless the current fh's type (or a getattr of it)
 * gives another: the order of the checks is type first (need_regular). */
static uint32_t type_first(struct nfs4_compound *c, uint32_t st)
{
	uint32_t t = need_regular(c);

	return t ? t : st;
}

/* How many data bytes fit in this reply (4.1 ca_maxresponsesize, or
 * ca_maxresponsesize_cached for one to be cached): a short READ is what
 * RFC 8881 18.22.3 allows instead of REP_TOO_BIG(_TO_CACHE). */
uint32_t nfs4_io_room(const struct nfs4_compound *c, uint32_t count,
                      uint32_t overhead)
{
	size_t room = nfs4_reply_room(c);

	if (count > NFS4_MAXIO)
		count = NFS4_MAXIO;
	room = room > overhead ? room - overhead : 0;
	return count < room ? count : (uint32_t)(room & ~(size_t)3);
}

uint32_t nfs4_op_read(struct nfs4_compound *c)
{
	struct nfs4_stateid sid;
	uint64_t off;
	uint32_t count, st;
	size_t eofpos, data;
	uint8_t *p;
	bool eof = false;
	ssize_t n;

	if (!nfs4_get_stateid(c->args, &sid) || !xdr_get_u64(c->args, &off) ||
	    !xdr_get_u32(c->args, &count))
		return NFS4ERR_BADXDR;
	/* The file's type is asked (a getattr by handle) only when
	 * something fails: the backend's read opens regular files only
	 * (-EISDIR, -EINVAL otherwise), and a failure answers the type's
	 * error first, as checking it first would. */
	st = nfs4_need_export(c);
	if (!st)
		st = nfs4_resolve_stateid(c, &sid);
	if (!st)
		st = nfs4_check_io_stateid(c, &sid, STID_READ);
	if (st)
		return type_first(c, st);
	count = nfs4_io_room(c, count, 16);
	eofpos = c->res->len;
	xdr_put_bool(c->res, false);
	xdr_put_u32(c->res, 0);
	data = c->res->len;
	size_t got;
	int rc = srv_read_inplace(c->res, c->cfh.ex, c->cfh.rule, &c->cfh.cred,
	                          &c->cfh.bh, off, count, &got, &eof, NULL);
	if (rc < 0) {
		xdr_out_truncate(c->res, eofpos);
		return type_first(c, nfs4_errno(rc));
	}
	if (rc > 0) {
		xdr_patch_u32(c->res, eofpos, eof);
		xdr_patch_u32(c->res, data - 4, (uint32_t)got);
		return NFS4_OK;
	}
	p = xdr_put_reserve(c->res, count);
	if (!p)
		return NFS4ERR_RESOURCE;
	n = c->cfh.ex->ops->read(c->cfh.ex->bk, &c->cfh.cred, &c->cfh.bh, p,
	                         count, off, &eof);
	if (n < 0) {
		xdr_out_truncate(c->res, eofpos);
		return type_first(c, nfs4_errno((int)n));
	}
	if ((size_t)n > count)
		n = count;
	memset(c->res->buf + data + n, 0, xdr_pad((size_t)n));
	xdr_out_truncate(c->res, data + (size_t)n + xdr_pad((size_t)n));
	xdr_patch_u32(c->res, eofpos, eof);
	xdr_patch_u32(c->res, data - 4, (uint32_t)n);
	return NFS4_OK;
}

uint32_t nfs4_op_write(struct nfs4_compound *c)
{
	struct nfs4_stateid sid;
	uint64_t off;
	uint32_t stable, len, st;
	const uint8_t *p;
	enum bk_stable committed = BK_UNSTABLE;
	ssize_t n;

	/* The data<> opaque has no bound in the XDR: one that runs past the
	 * request is BADXDR, one that is all there but longer than the
	 * maxwrite we tell (attr.c) is an argument we refuse: INVAL, with
	 * nothing written (RFC 8881 15.1.1.4, 18.32). */
	if (!nfs4_get_stateid(c->args, &sid) || !xdr_get_u64(c->args, &off) ||
	    !xdr_get_u32(c->args, &stable) ||
	    !xdr_get_opaque_ref(c->args, &p, &len, UINT32_MAX))
		return NFS4ERR_BADXDR;
	if (stable > BK_FILE_SYNC || len > NFS4_MAXIO)
		return NFS4ERR_INVAL;
	if (len > UINT64_MAX - off)
		return NFS4ERR_INVAL;
	st = need_regular(c);
	if (!st)
		st = nfs4_need_write(c);
	if (!st)
		st = nfs4_resolve_stateid(c, &sid);
	if (!st)
		st = nfs4_check_io_stateid(c, &sid, STID_WRITE);
	if (st)
		return st;
	if (c->cfh.rule && (c->cfh.rule->flags & EXP_SYNC))
		stable = BK_FILE_SYNC;
	n = c->cfh.ex->ops->write(c->cfh.ex->bk, &c->cfh.cred, &c->cfh.bh, p,
	                          len, off, (enum bk_stable)stable, &committed);
	if (n < 0)
		return nfs4_errno((int)n);
	xdr_put_u32(c->res, (uint32_t)n);
	xdr_put_u32(c->res, committed);
	xdr_put_fixed(c->res, c->srv->write_verf, 8);
	return NFS4_OK;
}

uint32_t nfs4_op_commit(struct nfs4_compound *c)
{
	uint64_t off;
	uint32_t count, st;
	int rc;

	if (!xdr_get_u64(c->args, &off) || !xdr_get_u32(c->args, &count))
		return NFS4ERR_BADXDR;
	st = need_regular(c);
	if (st)
		return st;
	rc = export_commit_flushes(c->cfh.rule)
	         ? c->cfh.ex->ops->commit(c->cfh.ex->bk, &c->cfh.bh, off, count)
	         : 0;
	if (rc)
		return nfs4_errno(rc);
	xdr_put_fixed(c->res, c->srv->write_verf, 8);
	return NFS4_OK;
}
