/* NFSv3 directory listing: READDIR and READDIRPLUS (RFC 1813 sections
 * 3.3.16, 3.3.17).
 *
 * The backend calls fill_entry once per entry; each entry is encoded
 * straight into the reply until the next would not fit, and then the
 * listing stops before consuming it. The entry list is encoded in one pass
 * (value_follows TRUE before each entry, FALSE after the last): no
 * recursion and no second pass, so a 1 MiB reply of ~10,000 entries costs
 * linear time. */
#include <errno.h>
#include <string.h>

#include "server/nfs3/nfs3_proc.h"
#include "server/snfsd.h"

/* value_follows FALSE and eof after the last entry */
#define LIST_TRAILER 8u

struct dir_fill {
	struct nfs_req *r;
	struct xdr_out *res;
	size_t start;   /* reply offset of the status word */
	size_t max;     /* reply bytes allowed from start (count/maxcount) */
	size_t dirmax;  /* READDIRPLUS dircount */
	size_t dirused; /* bytes counted against dirmax */
	bool plus;
	uint32_t nentries;
	bool full; /* stopped at an entry that did not fit */
};

/* The entry of a READDIRPLUS reply: attributes and handle of the name,
 * looked up now. A lookup that fails (the entry was removed meanwhile)
 * leaves them out rather than failing the listing. */
struct plus_info {
	bool have_attr, have_fh;
	struct bk_attr attr;
	struct nfs_fh fh;
};

static void plus_lookup(const struct dir_fill *f, const struct bk_dirent *e,
                        struct plus_info *pi)
{
	char name[BK_NAME_MAX + 1];
	struct nfs_req *r = f->r;
	struct bk_handle h;

	pi->have_attr = pi->have_fh = false;
	if (e->namelen == 0 || e->namelen > BK_NAME_MAX)
		return;
	if (e->handle && e->attr) { /* found by readdir_plus */
		pi->attr = *e->attr;
		pi->have_attr = true;
		pi->have_fh = fh_make(r->srv, r->ex, e->handle, &pi->fh) == 0;
		return;
	}
	memcpy(name, e->name, e->namelen);
	name[e->namelen] = 0;
	if (r->ex->ops->lookup(r->ex->bk, &r->cred, &r->bh, name, &h,
	                       &pi->attr) != 0)
		return;
	pi->have_attr = true;
	pi->have_fh = fh_make(r->srv, r->ex, &h, &pi->fh) == 0;
}

static int fill_entry(void *arg, const struct bk_dirent *e)
{
	struct dir_fill *f = arg;
	size_t name_xdr = 4 + (size_t)e->namelen + xdr_pad(e->namelen);
	/* fileid, name, cookie: what dircount counts (section 3.3.17) */
	size_t dir_bytes = 8 + name_xdr + 8;
	size_t need = 4 + dir_bytes, used = f->res->len - f->start;
	struct plus_info pi;

	if (e->namelen > NFS3_NAME_MAX)
		return 0; /* cannot be named over NFSv3; skip it */
	if (f->plus) {
		plus_lookup(f, e, &pi);
		need += pi.have_attr ? NFS3_POST_OP_ATTR_SIZE : 4;
		need += pi.have_fh ? 8 + pi.fh.len + xdr_pad(pi.fh.len) : 4;
	}
	/* The first entry is always sent if maxcount allows, however small
	 * dircount is, so every reply makes progress. */
	if (used + need + LIST_TRAILER > f->max ||
	    (f->nentries > 0 && f->dirused + dir_bytes > f->dirmax)) {
		f->full = true;
		return 1;
	}
	xdr_put_bool(f->res, true);
	xdr_put_u64(f->res, e->fileid);
	xdr_put_opaque(f->res, e->name, e->namelen);
	xdr_put_u64(f->res, e->cookie);
	if (f->plus) {
		nfs3_put_post_op_attr(f->res, pi.have_attr ? &pi.attr : NULL,
		                      f->r->ex->fsid);
		nfs3_put_post_op_fh(f->res, pi.have_fh ? &pi.fh : NULL);
	}
	if (f->res->err)
		return -ENOSPC;
	f->dirused += dir_bytes;
	f->nentries++;
	return 0;
}

static size_t clamp_count(uint32_t count, const struct xdr_out *res)
{
	size_t room = res->limit > res->len ? res->limit - res->len : 0;
	size_t n = count > NFS3_MAX_IO ? NFS3_MAX_IO : count;

	return n < room ? n : room;
}

static int readdir_common(struct rpc_call *call, struct xdr_out *res, bool plus)
{
	const char *pname = plus ? "READDIRPLUS" : "READDIR";
	struct dir_fill f = {.res = res, .plus = plus};
	uint8_t verf[8], cverf[8];
	uint32_t count, dircount = 0, st;
	struct bk_attr da;
	struct nfs3_fh fh;
	struct nfs_req r;
	bool have_attr = false, eof = false;
	uint64_t cookie, v = 0;
	int err;

	if (!nfs3_get_fh(&call->args, &fh) ||
	    !xdr_get_u64(&call->args, &cookie) ||
	    !xdr_get_fixed(&call->args, cverf, sizeof(cverf)) ||
	    (plus && !xdr_get_u32(&call->args, &dircount)) ||
	    !xdr_get_u32(&call->args, &count))
		return nfs3_garbage(call, pname);
	st = nfs3_resolve(call, &fh, &r);
	if (st == NFS3_OK) {
		st = nfs3_stat_from_errno(nfs3_getattr(&r, &r.bh, &da));
		have_attr = st == NFS3_OK;
	}
	if (st == NFS3_OK && da.type != BK_DIR)
		st = NFS3ERR_NOTDIR;
	/* RFC 1813 section 3.3.16 lets a server answer BAD_COOKIE when the
	 * cookieverf no longer matches. snfsd does not: its cookies are the
	 * file system's own directory offsets, stable for the life of an
	 * entry, so a listing resumes correctly even after the directory
	 * changed (the RFC calls a verifier that changes with every
	 * modification "overly restrictive" if used to refuse), and a
	 * cookieverf of 0 resumes too. The verifier sent is still the
	 * directory's current one, changing with it. Only a cookie the
	 * backend cannot resume is BAD_COOKIE: one over 2^63, which no
	 * offset is. A cookie past the end lists nothing, with eof; one
	 * inside the range that was never issued resumes at that position,
	 * which the file system cannot tell from an issued one. */
	if (st == NFS3_OK && r.ex->ops->dir_verifier(r.ex->bk, &r.bh, &v) != 0)
		v = 0;
	for (int i = 0; i < 8; i++)
		verf[i] = (uint8_t)(v >> (56 - 8 * i));
	f.r = &r;
	f.start = res->len;
	f.max = clamp_count(count, res);
	f.dirmax =
	    plus ? (dircount > NFS3_MAX_IO ? NFS3_MAX_IO : dircount) : SIZE_MAX;
	if (st == NFS3_OK) {
		xdr_put_u32(res, NFS3_OK);
		nfs3_put_post_op_attr(res, &da, r.ex->fsid);
		xdr_put_fixed(res, verf, sizeof(verf));
		err = (plus && r.ex->ops->readdir_plus ? r.ex->ops->readdir_plus
		                                       : r.ex->ops->readdir)(
		    r.ex->bk, &r.cred, &r.bh, cookie, fill_entry, &f, &eof);
		if (err == -EINVAL && cookie != 0)
			st = NFS3ERR_BAD_COOKIE;
		else if (err < 0)
			st = nfs3_stat_from_errno(err);
		else if (f.nentries == 0 && f.full)
			st = NFS3ERR_TOOSMALL; /* not even one entry fits */
	}
	if (st == NFS3_OK) {
		xdr_put_bool(res, false);
		xdr_put_bool(res, eof && !f.full);
	} else {
		xdr_out_truncate(res, f.start);
		res->err = false; /* a listing that overran is undone */
		xdr_put_u32(res, st);
		nfs3_put_post_op_attr(res, have_attr ? &da : NULL,
		                      have_attr ? r.ex->fsid : 0);
	}
	nfs_req_done(&r);
	return nfs3_done(res);
}

/* RFC 1813 section 3.3.16 */
int nfs3_proc_readdir(struct rpc_call *call, struct xdr_out *res)
{
	return readdir_common(call, res, false);
}

/* RFC 1813 section 3.3.17 */
int nfs3_proc_readdirplus(struct rpc_call *call, struct xdr_out *res)
{
	return readdir_common(call, res, true);
}
