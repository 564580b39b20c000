/* NFSv3 procedures (RFC 1813 section 3.3) as the client's operations
 * table. The MOUNT side (finding the export) is in mount3.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/mount3.h"
#include "client/nfs3_xdr.h"

#define ARGS_SMALL 1024

static int args_init(struct xdr_out *x, size_t extra)
{
	return xdr_out_init(x, ARGS_SMALL + extra, ARGS_SMALL + extra + 4096);
}

/* Send proc and read its nfsstat3. On 0 the caller owns rep. */
static int call3(struct snfs_ctx *c, uint32_t proc, struct xdr_out *a,
                 struct rpc_reply *rep, uint32_t *status)
{
	int rc =
	    rpc_call(c->rpc, NFS3_PROG, NFS3_VERS, proc, (int)proc, a, rep);
	if (rc < 0)
		return rc;
	if (!xdr_get_u32(&rep->res, status)) {
		rpc_reply_free(rep);
		return -EPROTO;
	}
	return 0;
}

/* Finish a reply: a decode error becomes -EPROTO, else status maps. */
static int finish(struct rpc_reply *rep, uint32_t status)
{
	int rc = rep->res.err ? -EPROTO : nfs3_errno(status);
	rpc_reply_free(rep);
	return rc;
}

static int nfs3_getattr(struct snfs_ctx *c, const struct snfs_fh *fh,
                        struct snfs_stat *st)
{
	struct xdr_out a;
	struct rpc_reply rep;
	uint32_t s;
	int rc;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, fh);
	if ((rc = call3(c, C3_GETATTR, &a, &rep, &s)) < 0)
		return rc;
	if (s == 0)
		nfs3_get_fattr(&rep.res, st);
	return finish(&rep, s);
}

static int nfs3_setattr(struct snfs_ctx *c, const struct snfs_fh *fh,
                        const struct snfs_setattr *sa, struct snfs_stat *post,
                        bool *have_post)
{
	struct xdr_out a;
	struct rpc_reply rep;
	uint32_t s;
	int rc;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, fh);
	nfs3_put_sattr(&a, sa);
	xdr_put_bool(&a, false); /* no guard */
	if ((rc = call3(c, C3_SETATTR, &a, &rep, &s)) < 0)
		return rc;
	nfs3_skip_wcc(&rep.res, post, have_post);
	return finish(&rep, s);
}

static int nfs3_lookup(struct snfs_ctx *c, const struct snfs_fh *dir,
                       const char *name, struct snfs_fh *out,
                       struct snfs_stat *st, bool *have_attr)
{
	struct xdr_out a;
	struct rpc_reply rep;
	uint32_t s;
	int rc;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, dir);
	xdr_put_string(&a, name);
	if ((rc = call3(c, C3_LOOKUP, &a, &rep, &s)) < 0)
		return rc;
	if (s == 0) {
		nfs3_get_fh(&rep.res, out);
		nfs3_get_post_attr(&rep.res, st, have_attr);
	}
	return finish(&rep, s);
}

static int nfs3_readlink(struct snfs_ctx *c, const struct snfs_fh *fh,
                         char *buf, size_t size)
{
	struct xdr_out a;
	struct rpc_reply rep;
	const uint8_t *p;
	uint32_t s, n = 0;
	int rc;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, fh);
	if ((rc = call3(c, C3_READLINK, &a, &rep, &s)) < 0)
		return rc;
	nfs3_get_post_attr(&rep.res, NULL, NULL);
	if (s == 0 && xdr_get_opaque_ref(&rep.res, &p, &n, 65536) && size) {
		size_t k = n < size - 1 ? n : size - 1;
		memcpy(buf, p, k);
		buf[k] = 0;
		n = (uint32_t)k;
	}
	rc = finish(&rep, s);
	return rc < 0 ? rc : (int)n;
}

static int nfs3_read_start(struct snfs_ctx *c, const struct snfs_fh *fh,
                           uint64_t off, uint32_t count, struct rpc_req **r)
{
	struct xdr_out a;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, fh);
	xdr_put_u64(&a, off);
	xdr_put_u32(&a, count);
	return rpc_call_start(c->rpc, NFS3_PROG, NFS3_VERS, C3_READ, C3_READ,
	                      &a, r);
}

static int nfs3_read_finish(struct snfs_ctx *c, struct rpc_req *r, void *buf,
                            uint32_t count, struct snfs_read_res *res)
{
	struct rpc_reply rep;
	const uint8_t *p;
	uint32_t s, n, dlen;
	int rc = rpc_call_wait(c->rpc, r, &rep);

	memset(res, 0, sizeof(*res));
	if (rc < 0)
		return rc;
	struct xdr_in *x = &rep.res;
	if (!xdr_get_u32(x, &s) ||
	    !nfs3_get_post_attr(x, &res->attr, &res->have_attr)) {
		rpc_reply_free(&rep);
		return -EPROTO;
	}
	if (s == 0) {
		xdr_get_u32(x, &n);
		xdr_get_bool(x, &res->eof);
		/* Trust neither count: the data must fit what we asked. */
		if (xdr_get_opaque_ref(x, &p, &dlen, count) && !x->err) {
			memcpy(buf, p, dlen);
			res->count = dlen;
			counter_add(&c->stats.read_bytes, dlen);
		}
	}
	return finish(&rep, s);
}

static int nfs3_write_start(struct snfs_ctx *c, const struct snfs_fh *fh,
                            uint64_t off, const void *buf, uint32_t count,
                            int stable, struct rpc_req **r)
{
	struct xdr_out a;

	if (args_init(&a, count) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, fh);
	xdr_put_u64(&a, off);
	xdr_put_u32(&a, count);
	xdr_put_u32(&a, (uint32_t)stable);
	xdr_put_opaque(&a, buf, count);
	counter_add(&c->stats.write_bytes, count);
	return rpc_call_start(c->rpc, NFS3_PROG, NFS3_VERS, C3_WRITE, C3_WRITE,
	                      &a, r);
}

static int nfs3_write_finish(struct snfs_ctx *c, struct rpc_req *r,
                             struct snfs_write_res *res)
{
	struct rpc_reply rep;
	uint32_t s, committed;
	int rc = rpc_call_wait(c->rpc, r, &rep);

	memset(res, 0, sizeof(*res));
	if (rc < 0)
		return rc;
	struct xdr_in *x = &rep.res;
	if (!xdr_get_u32(x, &s) || !nfs3_skip_wcc(x, NULL, NULL)) {
		rpc_reply_free(&rep);
		return -EPROTO;
	}
	if (s == 0) {
		xdr_get_u32(x, &res->count);
		xdr_get_u32(x, &committed);
		xdr_get_fixed(x, res->verf, 8);
		res->committed = committed > 2 ? 0 : (int)committed;
	}
	return finish(&rep, s);
}

static int nfs3_commit(struct snfs_ctx *c, const struct snfs_fh *fh,
                       uint8_t verf[8], struct snfs_stat *post, bool *have_post)
{
	struct xdr_out a;
	struct rpc_reply rep;
	uint32_t s;
	int rc;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, fh);
	xdr_put_u64(&a, 0);
	xdr_put_u32(&a, 0); /* 0: to the end of the file */
	if ((rc = call3(c, C3_COMMIT, &a, &rep, &s)) < 0)
		return rc;
	nfs3_skip_wcc(&rep.res, post, have_post);
	if (s == 0)
		xdr_get_fixed(&rep.res, verf, 8);
	return finish(&rep, s);
}

/* diropres3 of CREATE, MKDIR, SYMLINK: post_op_fh3, post_op_attr, wcc. */
static int decode_diropres(struct rpc_reply *rep, uint32_t s,
                           struct snfs_fh *out, bool *have_fh)
{
	bool h = false;
	*have_fh = false;
	if (s == 0) {
		if (xdr_get_bool(&rep->res, &h) && h)
			nfs3_get_fh(&rep->res, out);
		*have_fh = h;
	}
	return finish(rep, s);
}

static int nfs3_create(struct snfs_ctx *c, const struct snfs_fh *dir,
                       const char *name, uint32_t mode, bool excl,
                       struct snfs_fh *out)
{
	struct xdr_out a;
	struct rpc_reply rep;
	struct snfs_setattr sa = {.mask = SNFS_SET_MODE, .mode = mode};
	uint32_t s;
	bool have;
	int rc;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, dir);
	xdr_put_string(&a, name);
	xdr_put_u32(&a, excl ? 1 : 0); /* GUARDED or UNCHECKED */
	nfs3_put_sattr(&a, &sa);
	if ((rc = call3(c, C3_CREATE, &a, &rep, &s)) < 0)
		return rc;
	rc = decode_diropres(&rep, s, out, &have);
	if (rc == 0 && !have)
		rc = nfs3_lookup(c, dir, name, out, NULL, NULL);
	return rc;
}

static int nfs3_mkdir(struct snfs_ctx *c, const struct snfs_fh *dir,
                      const char *name, uint32_t mode)
{
	struct xdr_out a;
	struct rpc_reply rep;
	struct snfs_setattr sa = {.mask = SNFS_SET_MODE, .mode = mode};
	struct snfs_fh fh;
	uint32_t s;
	bool have;
	int rc;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, dir);
	xdr_put_string(&a, name);
	nfs3_put_sattr(&a, &sa);
	if ((rc = call3(c, C3_MKDIR, &a, &rep, &s)) < 0)
		return rc;
	return decode_diropres(&rep, s, &fh, &have);
}

static int nfs3_symlink(struct snfs_ctx *c, const struct snfs_fh *dir,
                        const char *name, const char *target)
{
	struct xdr_out a;
	struct rpc_reply rep;
	struct snfs_fh fh;
	uint32_t s;
	bool have;
	int rc;

	if (args_init(&a, strlen(target)) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, dir);
	xdr_put_string(&a, name);
	nfs3_put_sattr(&a, NULL);
	xdr_put_string(&a, target);
	if ((rc = call3(c, C3_SYMLINK, &a, &rep, &s)) < 0)
		return rc;
	return decode_diropres(&rep, s, &fh, &have);
}

static int dir_name_call(struct snfs_ctx *c, uint32_t proc,
                         const struct snfs_fh *dir, const char *name)
{
	struct xdr_out a;
	struct rpc_reply rep;
	uint32_t s;
	int rc;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, dir);
	xdr_put_string(&a, name);
	if ((rc = call3(c, proc, &a, &rep, &s)) < 0)
		return rc;
	return finish(&rep, s);
}

static int nfs3_remove(struct snfs_ctx *c, const struct snfs_fh *dir,
                       const char *name)
{
	return dir_name_call(c, C3_REMOVE, dir, name);
}

static int nfs3_rmdir(struct snfs_ctx *c, const struct snfs_fh *dir,
                      const char *name)
{
	return dir_name_call(c, C3_RMDIR, dir, name);
}

static int nfs3_rename(struct snfs_ctx *c, const struct snfs_fh *fdir,
                       const char *fname, const struct snfs_fh *tdir,
                       const char *tname)
{
	struct xdr_out a;
	struct rpc_reply rep;
	uint32_t s;
	int rc;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, fdir);
	xdr_put_string(&a, fname);
	nfs3_put_fh(&a, tdir);
	xdr_put_string(&a, tname);
	if ((rc = call3(c, C3_RENAME, &a, &rep, &s)) < 0)
		return rc;
	return finish(&rep, s);
}

static int nfs3_link(struct snfs_ctx *c, const struct snfs_fh *fh,
                     const struct snfs_fh *dir, const char *name)
{
	struct xdr_out a;
	struct rpc_reply rep;
	uint32_t s;
	int rc;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, fh);
	nfs3_put_fh(&a, dir);
	xdr_put_string(&a, name);
	if ((rc = call3(c, C3_LINK, &a, &rep, &s)) < 0)
		return rc;
	return finish(&rep, s);
}

static int nfs3_readdir(struct snfs_ctx *c, const struct snfs_fh *dir,
                        bool plus, uint64_t cookie, const uint8_t verf[8],
                        uint32_t bufsize, struct rd_page *page)
{
	struct xdr_out a;
	struct rpc_reply rep;
	uint32_t proc = plus ? C3_READDIRPLUS : C3_READDIR;
	int rc;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, dir);
	xdr_put_u64(&a, cookie);
	xdr_put_fixed(&a, verf, 8);
	if (plus)
		xdr_put_u32(&a, bufsize); /* dircount */
	xdr_put_u32(&a, bufsize);
	rc = rpc_call(c->rpc, NFS3_PROG, NFS3_VERS, proc, (int)proc, &a, &rep);
	if (rc < 0)
		return rc;
	const uint8_t *body = rep.res.buf + rep.res.pos;
	size_t blen = rep.res.len - rep.res.pos;
	rc = nfs3_decode_readdir(body, blen, plus, page);
	if (rc < 0) {
		rpc_reply_free(&rep);
		return rc;
	}
	page->buf = rep.buf;
	page->data = body;
	page->dlen = blen;
	return 0;
}

static int nfs3_statvfs(struct snfs_ctx *c, const struct snfs_fh *fh,
                        struct snfs_statvfs *sv)
{
	struct xdr_out a;
	struct rpc_reply rep;
	uint32_t s;
	int rc;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, fh);
	if ((rc = call3(c, C3_FSSTAT, &a, &rep, &s)) < 0)
		return rc;
	nfs3_get_post_attr(&rep.res, NULL, NULL);
	if (s == 0) {
		xdr_get_u64(&rep.res, &sv->tbytes);
		xdr_get_u64(&rep.res, &sv->fbytes);
		xdr_get_u64(&rep.res, &sv->abytes);
		xdr_get_u64(&rep.res, &sv->tfiles);
		xdr_get_u64(&rep.res, &sv->ffiles);
		xdr_get_u64(&rep.res, &sv->afiles);
	}
	return finish(&rep, s);
}

/* FSINFO (section 3.3.19): the server's transfer limits. */
int nfs3_fsinfo(struct snfs_ctx *c, uint32_t *rtmax, uint32_t *wtmax,
                uint32_t *dtpref)
{
	struct xdr_out a;
	struct rpc_reply rep;
	uint32_t s, v;
	int rc;

	if (args_init(&a, 0) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, &c->root);
	if ((rc = call3(c, C3_FSINFO, &a, &rep, &s)) < 0)
		return rc;
	nfs3_get_post_attr(&rep.res, NULL, NULL);
	if (s == 0) {
		xdr_get_u32(&rep.res, rtmax);
		xdr_get_u32(&rep.res, &v); /* rtpref */
		xdr_get_u32(&rep.res, &v); /* rtmult */
		xdr_get_u32(&rep.res, wtmax);
		xdr_get_u32(&rep.res, &v);
		xdr_get_u32(&rep.res, &v);
		xdr_get_u32(&rep.res, dtpref);
	}
	return finish(&rep, s);
}

const struct snfs_proto_ops snfs_nfs3_ops = {
    .name = "nfs3",
    .mount = nfs3_mount,
    .umount = nfs3_umount,
    .getattr = nfs3_getattr,
    .setattr = nfs3_setattr,
    .lookup = nfs3_lookup,
    .readlink = nfs3_readlink,
    .read_start = nfs3_read_start,
    .read_finish = nfs3_read_finish,
    .write_start = nfs3_write_start,
    .write_finish = nfs3_write_finish,
    .commit = nfs3_commit,
    .create = nfs3_create,
    .mkdir = nfs3_mkdir,
    .symlink = nfs3_symlink,
    .remove = nfs3_remove,
    .rmdir = nfs3_rmdir,
    .rename = nfs3_rename,
    .link = nfs3_link,
    .readdir = nfs3_readdir,
    .statvfs = nfs3_statvfs,
    /* NFSv3 has no SEEK, ALLOCATE, DEALLOCATE, COPY or READ_PLUS: the
     * API layer answers -EOPNOTSUPP or falls back. */
};
