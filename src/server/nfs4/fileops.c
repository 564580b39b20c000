/* NFSv4 file handle, name space and directory operations (RFC 7530 16,
 * RFC 8881 18): PUTROOTFH, PUTPUBFH, PUTFH, GETFH, SAVEFH, RESTOREFH,
 * LOOKUP, LOOKUPP, ACCESS, READLINK, CREATE, REMOVE, RENAME, LINK,
 * READDIR, SECINFO, SECINFO_NO_NAME. */
#include <errno.h>
#include <string.h>

#include "server/nfs4/nfs4.h"
#include "server/snfsd.h"

#define NFS4_FHSIZE 128
#define ACCESS4_ALL 0x3f

uint32_t nfs4_need_export(struct nfs4_compound *c)
{
	if (c->cfh.kind == FH4_EXPORT)
		return NFS4_OK;
	return c->cfh.kind == FH4_PSEUDO ? NFS4ERR_ISDIR : NFS4ERR_NOFILEHANDLE;
}

/* Changes are refused on the pseudo file system and read-only exports. */
uint32_t nfs4_need_write(struct nfs4_compound *c)
{
	if (c->cfh.kind == FH4_NONE)
		return NFS4ERR_NOFILEHANDLE;
	if (c->cfh.kind == FH4_PSEUDO || !c->cfh.rw)
		return NFS4ERR_ROFS;
	return NFS4_OK;
}

uint32_t nfs4_cfh_type(struct nfs4_compound *c, enum bk_ftype *type)
{
	struct bk_attr a;
	int rc;

	if (c->cfh.kind == FH4_PSEUDO) {
		*type = BK_DIR;
		return NFS4_OK;
	}
	if (c->cfh.kind != FH4_EXPORT)
		return NFS4ERR_NOFILEHANDLE;
	rc = c->cfh.ex->ops->getattr(c->cfh.ex->bk, &c->cfh.bh, &a);
	if (rc)
		return nfs4_errno(rc);
	*type = a.type;
	return NFS4_OK;
}

/* The current fh must be a directory (NOTDIR, or SYMLINK for a link as
 * RFC 8881 18.15.3 asks of LOOKUP). */
static uint32_t need_dir(struct nfs4_compound *c)
{
	enum bk_ftype t = BK_REG;
	uint32_t st = nfs4_cfh_type(c, &t);

	if (st)
		return st;
	if (t == BK_LNK)
		return NFS4ERR_SYMLINK;
	return t == BK_DIR ? NFS4_OK : NFS4ERR_NOTDIR;
}

static uint64_t change_of(const struct nfs4_fh *fh)
{
	struct bk_attr a;

	if (fh->kind != FH4_EXPORT ||
	    fh->ex->ops->getattr(fh->ex->bk, &fh->bh, &a))
		return 0;
	return a.change;
}

uint32_t nfs4_op_putrootfh(struct nfs4_compound *c)
{
	return nfs4_fh_root(c, &c->cfh);
}

/* The public fh is the root here (RFC 7530 16.21: may equal it). */
uint32_t nfs4_op_putpubfh(struct nfs4_compound *c)
{
	return nfs4_fh_root(c, &c->cfh);
}

uint32_t nfs4_op_putfh(struct nfs4_compound *c)
{
	const uint8_t *p;
	uint32_t n;
	struct nfs4_fh fh;
	uint32_t st;

	c->putfh_arg_len = 0; /* not an earlier PUTFH's */
	if (!xdr_get_opaque_ref(c->args, &p, &n, NFS4_FHSIZE))
		return NFS4ERR_BADXDR;
	rpc_call_set_fh(c->call, p, n); /* for the COMPOUND's error log */
	c->putfh_arg = p;               /* for this op's */
	c->putfh_arg_len = n;
	st = nfs4_fh_from_wire(c, p, n, &fh);
	if (st)
		return st;
	c->cfh = fh;
	return NFS4_OK;
}

uint32_t nfs4_op_getfh(struct nfs4_compound *c)
{
	struct nfs_fh wire;
	uint32_t st = nfs4_fh_to_wire(c, &c->cfh, &wire);

	if (st)
		return st;
	xdr_put_opaque(c->res, wire.data, wire.len);
	return NFS4_OK;
}

/* The saved fh carries the current stateid along (RFC 8881 16.2.3.1.2). */
uint32_t nfs4_op_savefh(struct nfs4_compound *c)
{
	c->sfh = c->cfh;
	c->saved_sid = c->cur_sid;
	c->saved_sid_set = c->cur_sid_set;
	return NFS4_OK;
}

uint32_t nfs4_op_restorefh(struct nfs4_compound *c)
{
	if (c->sfh.kind == FH4_NONE)
		return NFS4ERR_RESTOREFH;
	c->cfh = c->sfh;
	c->cur_sid = c->saved_sid;
	c->cur_sid_set = c->saved_sid_set;
	return NFS4_OK;
}

static uint32_t lookup_name(struct nfs4_compound *c, const char *name)
{
	struct bk_handle bh;
	struct bk_attr a;
	uint32_t st = need_dir(c);
	int rc;

	if (st)
		return st;
	if (c->cfh.kind == FH4_PSEUDO) {
		struct nfs4_fh fh;
		st = nfs4_pseudo_lookup(c, &c->cfh, name, &fh);
		if (!st)
			c->cfh = fh;
		return st;
	}
	rc = c->cfh.ex->ops->lookup(c->cfh.ex->bk, &c->cfh.cred, &c->cfh.bh,
	                            name, &bh, &a);
	if (rc)
		return nfs4_errno(rc);
	c->cfh.bh = bh;
	return NFS4_OK;
}

uint32_t nfs4_op_lookup(struct nfs4_compound *c)
{
	char name[BK_NAME_MAX + 1];
	uint32_t st = nfs4_get_name(c->args, name);

	if (st)
		return st;
	return lookup_name(c, name);
}

uint32_t nfs4_op_lookupp(struct nfs4_compound *c)
{
	struct nfs4_fh fh;
	uint32_t st = need_dir(c);

	if (st)
		return st;
	st = nfs4_lookupp(c, &c->cfh, &fh);
	if (!st)
		c->cfh = fh;
	return st;
}

uint32_t nfs4_op_access(struct nfs4_compound *c)
{
	uint32_t want, granted = 0;
	int rc;

	if (!xdr_get_u32(c->args, &want))
		return NFS4ERR_BADXDR;
	want &= ACCESS4_ALL;
	if (c->cfh.kind == FH4_PSEUDO) {
		granted = want & (BK_ACCESS_READ | BK_ACCESS_LOOKUP |
		                  BK_ACCESS_EXECUTE);
	} else {
		rc = c->cfh.ex->ops->access(c->cfh.ex->bk, &c->cfh.cred,
		                            &c->cfh.bh, want, &granted);
		if (rc)
			return nfs4_errno(rc);
		if (!c->cfh.rw)
			granted &=
			    ~(uint32_t)(BK_ACCESS_MODIFY | BK_ACCESS_EXTEND |
			                BK_ACCESS_DELETE);
		granted &= want;
	}
	xdr_put_u32(c->res, want);
	xdr_put_u32(c->res, granted);
	return NFS4_OK;
}

uint32_t nfs4_op_readlink(struct nfs4_compound *c)
{
	char buf[BK_PATH_MAX + 1];
	enum bk_ftype t = BK_REG;
	uint32_t st = nfs4_cfh_type(c, &t);
	int rc;

	if (st)
		return st;
	if (t != BK_LNK)
		return t == BK_DIR ? NFS4ERR_ISDIR : NFS4ERR_INVAL;
	rc = c->cfh.ex->ops->readlink(c->cfh.ex->bk, &c->cfh.cred, &c->cfh.bh,
	                              buf, sizeof(buf));
	if (rc < 0)
		return nfs4_errno(rc);
	buf[sizeof(buf) - 1] = 0;
	xdr_put_string(c->res, buf);
	return NFS4_OK;
}

struct create_args {
	uint32_t type;
	char link[BK_PATH_MAX + 1];
	uint32_t major, minor;
	char name[BK_NAME_MAX + 1];
	struct bk_setattr sa;
	uint32_t set[3];
};

static uint32_t decode_create(struct nfs4_compound *c, struct create_args *a)
{
	const uint8_t *p;
	uint32_t st, n;

	if (!xdr_get_u32(c->args, &a->type))
		return NFS4ERR_BADXDR;
	switch (a->type) {
	case NF4LNK:
		if (!xdr_get_opaque_ref(c->args, &p, &n, 0xffffff))
			return NFS4ERR_BADXDR;
		if (n > BK_PATH_MAX)
			return NFS4ERR_NAMETOOLONG;
		if (n == 0)
			return NFS4ERR_INVAL;
		if (memchr(p, 0, n))
			return NFS4ERR_BADCHAR;
		memcpy(a->link, p, n);
		a->link[n] = 0;
		break;
	case NF4BLK:
	case NF4CHR:
		if (!xdr_get_u32(c->args, &a->major) ||
		    !xdr_get_u32(c->args, &a->minor))
			return NFS4ERR_BADXDR;
		break;
	case NF4SOCK:
	case NF4FIFO:
	case NF4DIR:
		break;
	case NF4REG:
		return NFS4ERR_BADTYPE;
	default:
		return NFS4ERR_BADXDR;
	}
	st = nfs4_get_name(c->args, a->name);
	if (st)
		return st;
	return nfs4_decode_sattr(c, c->args, &a->sa, a->set);
}

uint32_t nfs4_op_create(struct nfs4_compound *c)
{
	struct create_args a;
	struct nfs4_fh *d = &c->cfh;
	struct bk_handle out;
	struct bk_attr attr;
	uint64_t before, after;
	uint32_t st;
	int rc;

	memset(&a, 0, sizeof(a));
	st = decode_create(c, &a);
	if (st)
		return st;
	if ((st = need_dir(c)) || (st = nfs4_need_write(c)))
		return st;
	before = change_of(d);
	switch (a.type) {
	case NF4DIR:
		rc = d->ex->ops->mkdir(d->ex->bk, &d->cred, &d->bh, a.name,
		                       &a.sa, &out, &attr);
		break;
	case NF4LNK:
		rc = d->ex->ops->symlink(d->ex->bk, &d->cred, &d->bh, a.name,
		                         a.link, &a.sa, &out, &attr);
		break;
	default:
		rc = d->ex->ops->mknod(d->ex->bk, &d->cred, &d->bh, a.name,
		                       (enum bk_ftype)a.type, a.major, a.minor,
		                       &a.sa, &out, &attr);
		break;
	}
	if (rc)
		return nfs4_errno(rc);
	after = change_of(d);
	nfs4_put_cinfo(c->res, false, before, after);
	nfs4_put_bitmap(c->res, a.set);
	d->bh = out;
	c->cur_sid_set = false;
	return NFS4_OK;
}

uint32_t nfs4_op_remove(struct nfs4_compound *c)
{
	char name[BK_NAME_MAX + 1];
	struct nfs4_fh *d = &c->cfh;
	struct bk_handle h;
	struct bk_attr a;
	uint64_t before;
	uint32_t st = nfs4_get_name(c->args, name);
	int rc;

	if (st)
		return st;
	if ((st = need_dir(c)) || (st = nfs4_need_write(c)))
		return st;
	rc = d->ex->ops->lookup(d->ex->bk, &d->cred, &d->bh, name, &h, &a);
	if (rc)
		return nfs4_errno(rc);
	if (a.type == BK_REG && (st = nfs4_deleg_conflict(c, &h)))
		return st;
	before = change_of(d);
	if (a.type == BK_DIR)
		rc = d->ex->ops->rmdir(d->ex->bk, &d->cred, &d->bh, name);
	else
		rc = d->ex->ops->remove(d->ex->bk, &d->cred, &d->bh, name);
	if (rc)
		return nfs4_errno(rc == -EEXIST ? -ENOTEMPTY : rc);
	nfs4_put_cinfo(c->res, false, before, change_of(d));
	return NFS4_OK;
}

/* Two-handle ops: the saved fh must be on the same export. */
static uint32_t same_export(struct nfs4_compound *c)
{
	if (c->sfh.kind == FH4_NONE)
		return NFS4ERR_NOFILEHANDLE;
	if (c->sfh.kind == FH4_PSEUDO || c->cfh.kind == FH4_PSEUDO)
		return c->sfh.kind == c->cfh.kind ? NFS4ERR_ROFS : NFS4ERR_XDEV;
	if (c->sfh.ex != c->cfh.ex)
		return NFS4ERR_XDEV;
	return NFS4_OK;
}

uint32_t nfs4_op_rename(struct nfs4_compound *c)
{
	char from[BK_NAME_MAX + 1], to[BK_NAME_MAX + 1];
	struct nfs4_fh *s = &c->sfh, *d = &c->cfh;
	uint64_t sb, db;
	uint32_t st = nfs4_get_name(c->args, from);
	int rc;

	if (st == NFS4ERR_BADXDR)
		return st;
	if (st == NFS4_OK)
		st = nfs4_get_name(c->args, to);
	if (st)
		return st;
	if ((st = same_export(c)) || (st = need_dir(c)) ||
	    (st = nfs4_need_write(c)) ||
	    (st = nfs4_deleg_conflict_name(c, s, from)) ||
	    (st = nfs4_deleg_conflict_name(c, d, to)))
		return st;
	sb = change_of(s);
	db = change_of(d);
	rc = d->ex->ops->rename(d->ex->bk, &d->cred, &s->bh, from, &d->bh, to);
	if (rc)
		return nfs4_errno(rc == -EEXIST ? -ENOTEMPTY : rc);
	nfs4_put_cinfo(c->res, false, sb, change_of(s));
	nfs4_put_cinfo(c->res, false, db, change_of(d));
	return NFS4_OK;
}

uint32_t nfs4_op_link(struct nfs4_compound *c)
{
	char name[BK_NAME_MAX + 1];
	struct nfs4_fh *d = &c->cfh;
	uint64_t before;
	uint32_t st = nfs4_get_name(c->args, name);
	int rc;

	if (st)
		return st;
	if ((st = same_export(c)) || (st = need_dir(c)) ||
	    (st = nfs4_need_write(c)) ||
	    (st = nfs4_deleg_conflict(c, &c->sfh.bh)))
		return st;
	before = change_of(d);
	rc = d->ex->ops->link(d->ex->bk, &d->cred, &c->sfh.bh, &d->bh, name);
	if (rc)
		return nfs4_errno(rc);
	nfs4_put_cinfo(c->res, false, before, change_of(d));
	return NFS4_OK;
}

bool nfs4_put_dirent_plan(struct nfs4_compound *c, struct xdr_out *x,
                          size_t limit, uint64_t cookie, const char *name,
                          uint32_t namelen, const struct nfs4_fattr_plan *p,
                          struct nfs4_attr_src *src)
{
	size_t pos = x->len;
	uint32_t none[3] = {0, 0, 0};

	xdr_put_u32(x, 1);
	xdr_put_u64(x, cookie);
	xdr_put_opaque(x, name, namelen);
	if (nfs4_encode_fattr_plan(c, x, p, src) != NFS4_OK && !x->err) {
		/* Unreadable and rdattr_error not asked: no attributes. */
		xdr_out_truncate(x, pos);
		xdr_put_u32(x, 1);
		xdr_put_u64(x, cookie);
		xdr_put_opaque(x, name, namelen);
		nfs4_put_bitmap(x, none);
		xdr_put_u32(x, 0);
	}
	if (x->err || x->len > limit) {
		xdr_out_truncate(x, pos);
		x->err = false;
		return false;
	}
	return true;
}

bool nfs4_put_dirent(struct nfs4_compound *c, struct xdr_out *x, size_t limit,
                     uint64_t cookie, const char *name, uint32_t namelen,
                     const uint32_t req[3], struct nfs4_attr_src *src)
{
	struct nfs4_fattr_plan p;

	nfs4_fattr_plan_init(c->minor, req, &p);
	return nfs4_put_dirent_plan(c, x, limit, cookie, name, namelen, &p,
	                            src);
}

struct rd_ctx {
	struct nfs4_compound *c;
	struct nfs4_fattr_plan plan;
	size_t limit;
	uint32_t n;
	bool light; /* the attributes asked follow from type and fileid */
};

/* An entry whose attributes need its handle or a stat: from readdir_plus
 * or by a lookup. Returns 0, or 1 to stop when it does not fit. */
static int rd_entry_full(struct rd_ctx *r, const struct bk_dirent *e)
{
	struct nfs4_compound *c = r->c;
	struct nfs4_attr_src src;
	struct nfs4_fh fh = c->cfh;
	char name[BK_NAME_MAX + 1];
	struct bk_handle h;
	int rc;

	memcpy(name, e->name, e->namelen);
	name[e->namelen] = 0;
	memset(&src, 0, sizeof(src));
	src.fh = &fh;
	if (e->handle && e->attr) { /* found by readdir_plus */
		h = *e->handle;
		src.a = *e->attr;
		rc = 0;
	} else {
		rc = c->cfh.ex->ops->lookup(c->cfh.ex->bk, &c->cfh.cred,
		                            &c->cfh.bh, name, &h, &src.a);
	}
	if (rc == -ENOENT)
		return 0; /* gone since the listing was read */
	if (rc)
		src.rdattr_error = nfs4_errno(rc);
	fh.bh = h;
	if (!nfs4_put_dirent_plan(c, c->res, r->limit, e->cookie, name,
	                          e->namelen, &r->plan, &src))
		return 1;
	r->n++;
	return 0;
}

static int rd_entry(void *arg, const struct bk_dirent *e)
{
	struct rd_ctx *r = arg;
	struct nfs4_attr_src src;

	if ((e->namelen == 1 && e->name[0] == '.') ||
	    (e->namelen == 2 && e->name[0] == '.' && e->name[1] == '.'))
		return 0;
	if (e->namelen > BK_NAME_MAX)
		return 0;
	if (!r->light || !e->exact)
		return rd_entry_full(r, e);
	/* Type and fileid are all the attributes need; no handle is
	 * encoded, and the directory's file handle gives the same fsid. */
	memset(&src, 0, sizeof(src));
	src.fh = &r->c->cfh;
	src.a.type = e->type;
	src.a.fileid = e->fileid;
	if (!nfs4_put_dirent_plan(r->c, r->c->res, r->limit, e->cookie, e->name,
	                          e->namelen, &r->plan, &src))
		return 1;
	r->n++;
	return 0;
}

/* READDIR (RFC 7530 16.24, RFC 8881 18.23): the backend's own cookies,
 * as NFSv3 gives them; the verifier is the backend's directory
 * verifier, so a listing resumed across a change gets NOT_SAME. */
uint32_t nfs4_op_readdir(struct nfs4_compound *c)
{
	uint64_t cookie, verf = 0;
	uint8_t cverf[8], vbuf[8];
	uint32_t dircount, maxcount, req[3], st;
	size_t body;
	struct rd_ctx r;
	bool eof = false;
	int rc;

	if (!xdr_get_u64(c->args, &cookie) ||
	    !xdr_get_fixed(c->args, cverf, 8) ||
	    !xdr_get_u32(c->args, &dircount) ||
	    !xdr_get_u32(c->args, &maxcount) || !nfs4_get_bitmap(c->args, req))
		return NFS4ERR_BADXDR;
	st = need_dir(c);
	if (st)
		return st;
	if (maxcount > NFS4_MAXIO)
		maxcount = NFS4_MAXIO;
	/* Fewer entries rather than a reply past the session's limits (the
	 * cached one for sa_cachethis). */
	if (maxcount > nfs4_reply_room(c))
		maxcount = (uint32_t)nfs4_reply_room(c);
	if (maxcount < 16)
		return NFS4ERR_TOOSMALL;
	if (c->cfh.kind == FH4_PSEUDO)
		return nfs4_pseudo_readdir(c, cookie, maxcount, req);
	if (cookie == 1 || cookie == 2)
		return NFS4ERR_BAD_COOKIE;
	rc = c->cfh.ex->ops->dir_verifier(c->cfh.ex->bk, &c->cfh.bh, &verf);
	if (rc)
		return nfs4_errno(rc);
	for (int i = 0; i < 8; i++)
		vbuf[i] = (uint8_t)(verf >> (56 - 8 * i));
	if (cookie != 0 && memcmp(cverf, "\0\0\0\0\0\0\0\0", 8) &&
	    memcmp(cverf, vbuf, 8))
		return NFS4ERR_NOT_SAME;
	body = c->res->len;
	xdr_put_fixed(c->res, vbuf, 8);
	memset(&r, 0, sizeof(r));
	r.c = c;
	nfs4_fattr_plan_init(c->minor, req, &r.plan);
	r.limit = body + maxcount - 8;
	/* For type and fileid alone (`ls -f`), the plain listing's exact
	 * entries need neither a stat nor a handle per name. */
	r.light = nfs4_attrs_from_dirent(c->minor, req);
	rc = (c->cfh.ex->ops->readdir_plus && !r.light
	          ? c->cfh.ex->ops->readdir_plus
	          : c->cfh.ex->ops->readdir)(c->cfh.ex->bk, &c->cfh.cred,
	                                     &c->cfh.bh, cookie, rd_entry, &r,
	                                     &eof);
	if (rc < 0) {
		xdr_out_truncate(c->res, body);
		return rc == -EINVAL ? NFS4ERR_BAD_COOKIE : nfs4_errno(rc);
	}
	if (r.n == 0 && !eof) {
		xdr_out_truncate(c->res, body);
		return NFS4ERR_TOOSMALL;
	}
	xdr_put_u32(c->res, 0);
	xdr_put_bool(c->res, eof);
	return NFS4_OK;
}

/* AUTH_SYS is the one flavor offered (RPCSEC_GSS is refused by the RPC
 * layer). */
static void put_secinfo(struct xdr_out *x)
{
	xdr_put_u32(x, 1);
	xdr_put_u32(x, RPC_AUTH_SYS);
}

uint32_t nfs4_op_secinfo(struct nfs4_compound *c)
{
	char name[BK_NAME_MAX + 1];
	uint32_t st = nfs4_get_name(c->args, name);
	struct nfs4_fh save = c->cfh;

	if (st)
		return st;
	st = lookup_name(c, name);
	c->cfh = save;
	if (st)
		return st;
	put_secinfo(c->res);
	/* RFC 8881 2.6.3.1.1.8: SECINFO consumes the current fh. */
	if (c->minor > 0)
		c->cfh.kind = FH4_NONE;
	return NFS4_OK;
}

uint32_t nfs4_op_secinfo_no_name(struct nfs4_compound *c)
{
	uint32_t style;

	if (!xdr_get_u32(c->args, &style))
		return NFS4ERR_BADXDR;
	if (style > 1)
		return NFS4ERR_INVAL;
	if (style == 1) {
		struct nfs4_fh fh;
		uint32_t st = nfs4_lookupp(c, &c->cfh, &fh);
		if (st)
			return st;
	}
	put_secinfo(c->res);
	c->cfh.kind = FH4_NONE;
	return NFS4_OK;
}
