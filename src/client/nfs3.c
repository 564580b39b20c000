/* NFSv3 procedures (RFC 1813 section 3.3) as the client's operations
 * table. The MOUNT side (finding the export) is in mount3.c.
 *
 * Every procedure has the same shape: its arguments start with an nfs_fh3,
 * its results with an nfsstat3. args3() starts the arguments, call3()
 * sends them and reply3() reads the status and hands the rest of the body
 * to the procedure's decoder, so a procedure is its encoding plus a
 * decoder. Decoders report malformed input through the xdr_in's sticky
 * error flag, which reply3() turns into -EPROTO. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/mount3.h"
#include "client/nfs3_xdr.h"
#include "client/pagecache.h"

#define ARGS_SMALL 1024

/* Decode the results after the nfsstat3 s into out (the procedure's own
 * result type). */
typedef void (*dec3_fn)(struct xdr_in *x, uint32_t s, void *out);

/* Start an argument body with its leading file handle; extra is the room
 * needed beyond a small fixed part (WRITE data, SYMLINK target). */
static int args3(struct xdr_out *a, size_t extra, const struct snfs_fh *fh)
{
	if (xdr_out_init(a, ARGS_SMALL + extra, ARGS_SMALL + extra + 4096) < 0)
		return -ENOMEM;
	nfs3_put_fh(a, fh);
	return 0;
}

/* Read the nfsstat3, let dec (may be NULL) take the rest, free the reply.
 * A decode error becomes -EPROTO, else the status maps to -errno. */
static int reply3(struct rpc_reply *rep, dec3_fn dec, void *out)
{
	uint32_t s;
	int rc;

	if (!xdr_get_u32(&rep->res, &s)) {
		rpc_reply_free(rep);
		return -EPROTO;
	}
	if (dec)
		dec(&rep->res, s, out);
	rc = rep->res.err ? -EPROTO : nfs3_errno(s);
	rpc_reply_free(rep);
	return rc;
}

/* Send proc with the arguments in a (taken over) and decode its reply. */
static int call3(struct snfs_ctx *c, uint32_t proc, struct xdr_out *a,
                 dec3_fn dec, void *out)
{
	struct rpc_reply rep;
	int rc =
	    rpc_call(c->rpc, NFS3_PROG, NFS3_VERS, proc, (int)proc, a, &rep);

	return rc < 0 ? rc : reply3(&rep, dec, out);
}

/* Where a post_op_attr or a wcc_data's post-operation attributes go. */
struct attr3 {
	struct snfs_stat *st;
	bool *have;
};

static void dec_wcc(struct xdr_in *x, uint32_t s, void *out)
{
	struct attr3 *r = out;

	(void)s; /* wcc_data stands in both arms (section 3.3.2) */
	nfs3_skip_wcc(x, r->st, r->have);
}

static void dec_getattr(struct xdr_in *x, uint32_t s, void *out)
{
	if (s == 0)
		nfs3_get_fattr(x, out);
}

static int nfs3_getattr(struct snfs_ctx *c, const struct snfs_fh *fh,
                        struct snfs_stat *st)
{
	struct xdr_out a;

	if (args3(&a, 0, fh) < 0)
		return -ENOMEM;
	return call3(c, C3_GETATTR, &a, dec_getattr, st);
}

static int nfs3_setattr(struct snfs_ctx *c, const struct snfs_fh *fh,
                        const struct snfs_setattr *sa, struct snfs_stat *post,
                        bool *have_post)
{
	struct xdr_out a;
	struct attr3 r = {post, have_post};

	if (args3(&a, 0, fh) < 0)
		return -ENOMEM;
	nfs3_put_sattr(&a, sa);
	xdr_put_bool(&a, false); /* no guard */
	return call3(c, C3_SETATTR, &a, dec_wcc, &r);
}

struct lookup3 {
	struct snfs_fh *fh;
	struct attr3 attr;
};

static void dec_lookup(struct xdr_in *x, uint32_t s, void *out)
{
	struct lookup3 *r = out;

	if (s == 0) {
		nfs3_get_fh(x, r->fh);
		nfs3_get_post_attr(x, r->attr.st, r->attr.have);
	}
}

static int nfs3_lookup(struct snfs_ctx *c, const struct snfs_fh *dir,
                       const char *name, struct snfs_fh *out,
                       struct snfs_stat *st, bool *have_attr)
{
	struct xdr_out a;
	struct lookup3 r = {out, {st, have_attr}};

	if (args3(&a, 0, dir) < 0)
		return -ENOMEM;
	xdr_put_string(&a, name);
	return call3(c, C3_LOOKUP, &a, dec_lookup, &r);
}

struct readlink3 {
	char *buf;
	size_t size;
	uint32_t n;
};

static void dec_readlink(struct xdr_in *x, uint32_t s, void *out)
{
	struct readlink3 *r = out;
	const uint8_t *p;

	nfs3_get_post_attr(x, NULL, NULL);
	if (s == 0 && xdr_get_opaque_ref(x, &p, &r->n, 65536) && r->size) {
		size_t k = r->n < r->size - 1 ? r->n : r->size - 1;
		memcpy(r->buf, p, k);
		r->buf[k] = 0;
		r->n = (uint32_t)k;
	}
}

static int nfs3_readlink(struct snfs_ctx *c, const struct snfs_fh *fh,
                         char *buf, size_t size)
{
	struct xdr_out a;
	struct readlink3 r = {buf, size, 0};
	int rc;

	if (args3(&a, 0, fh) < 0)
		return -ENOMEM;
	rc = call3(c, C3_READLINK, &a, dec_readlink, &r);
	return rc < 0 ? rc : (int)r.n;
}

static int nfs3_read_start(struct snfs_ctx *c, const struct snfs_fh *fh,
                           uint64_t off, uint32_t count, struct rpc_req **r)
{
	struct xdr_out a;

	if (args3(&a, 0, fh) < 0)
		return -ENOMEM;
	xdr_put_u64(&a, off);
	xdr_put_u32(&a, count);
	return rpc_call_start(c->rpc, NFS3_PROG, NFS3_VERS, C3_READ, C3_READ,
	                      &a, r);
}

struct read3 {
	struct snfs_ctx *c;
	void *buf;
	uint32_t count;
	struct snfs_read_res *res;
};

/* READ3res after the status (section 3.3.6): attributes, eof and the
 * data's length into res; returns where the data stands in the reply, or
 * NULL for an error status or a malformed reply. */
static const uint8_t *get_read3(struct snfs_ctx *c, struct xdr_in *x,
                                uint32_t s, uint32_t count,
                                struct snfs_read_res *res)
{
	const uint8_t *p;
	uint32_t n, dlen;

	if (!nfs3_get_post_attr(x, &res->attr, &res->have_attr) || s != 0)
		return NULL;
	xdr_get_u32(x, &n);
	xdr_get_bool(x, &res->eof);
	/* Trust neither count: the data must fit what we asked. */
	if (!xdr_get_opaque_ref(x, &p, &dlen, count) || x->err)
		return NULL;
	res->count = dlen;
	counter_add(&c->stats.read_bytes, dlen);
	return p;
}

static void dec_read(struct xdr_in *x, uint32_t s, void *out)
{
	struct read3 *r = out;
	const uint8_t *p = get_read3(r->c, x, s, r->count, r->res);

	if (p)
		memcpy(r->buf, p, r->res->count);
}

static int nfs3_read_finish(struct snfs_ctx *c, struct rpc_req *req, void *buf,
                            uint32_t count, struct snfs_read_res *res)
{
	struct rpc_reply rep;
	struct read3 r = {c, buf, count, res};
	int rc = rpc_call_wait(c->rpc, req, &rep);

	memset(res, 0, sizeof(*res));
	return rc < 0 ? rc : reply3(&rep, dec_read, &r);
}

/* ---- snfs_read_pieces ----
 * READ calls of rsize each, PIECES_INFLIGHT outstanding, each reply's data
 * handed on where it stands in the reply buffer: no copy (through the page
 * cache, snfs_pread copied every byte into the caller's buffer, which made
 * `snfs cat` over NFSv3 twice as slow as over NFSv4.1). Calls are sent in
 * batches when half the window is free (one sendmsg, one wake-up of the
 * server for the lot). Past the size the file is believed to have, calls
 * go one at a time until a full reply shows it grew. The first short
 * reply ends the read; the calls after it are only drained. */
#define PIECES_INFLIGHT 16

struct pieces3 {
	struct snfs_ctx *c;
	snfs_pieces_fn fn;
	void *arg;
	uint64_t off;
	uint32_t count;
	struct snfs_read_res res;
	int rc; /* fn's answer */
};

static void dec_read_pieces(struct xdr_in *x, uint32_t s, void *out)
{
	struct pieces3 *r = out;
	const uint8_t *p = get_read3(r->c, x, s, r->count, &r->res);

	if (p && r->res.count && r->fn) {
		struct snfs_piece v = {r->off, r->res.count, p};
		r->rc = r->fn(r->arg, &v, 1);
	}
}

struct call3 {
	struct rpc_req *req;
	uint64_t off;
	uint32_t count;
};

/* Wait for one READ and hand its data to fn (NULL: drain). */
static int pieces_finish(struct snfs_ctx *c, const struct call3 *k,
                         struct pieces3 *r)
{
	struct rpc_reply rep;
	int rc = rpc_call_wait(c->rpc, k->req, &rep);

	r->off = k->off;
	r->count = k->count;
	if (rc == 0)
		rc = reply3(&rep, dec_read_pieces, r);
	return rc < 0 ? rc : r->rc;
}

/* Start READs over [*next, end) until the window is full, held and sent
 * together. */
static int pieces_fill(struct snfs_ctx *c, const struct snfs_fh *fh,
                       struct call3 *q, size_t head, size_t *tail,
                       uint64_t *next, uint64_t end, uint64_t ahead)
{
	struct rpc_req *held[PIECES_INFLIGHT];
	int nheld = 0, rc = 0;

	while (*tail - head < PIECES_INFLIGHT && *next < end &&
	       (*next < ahead || head == *tail)) {
		uint32_t n =
		    end - *next < c->rsize ? (uint32_t)(end - *next) : c->rsize;
		struct xdr_out a;
		struct call3 *k = &q[*tail % PIECES_INFLIGHT];
		if (args3(&a, 0, fh) < 0) {
			rc = -ENOMEM;
			break;
		}
		xdr_put_u64(&a, *next);
		xdr_put_u32(&a, n);
		rc = rpc_call_hold(c->rpc, NFS3_PROG, NFS3_VERS, C3_READ,
		                   C3_READ, &a, &k->req);
		if (rc < 0)
			break;
		k->off = *next;
		k->count = n;
		held[nheld++] = k->req;
		++*tail;
		*next += n;
	}
	if (nheld)
		rpc_flush(c->rpc, held, nheld);
	return rc;
}

static ssize_t nfs3_read_pieces(struct snfs_ctx *c, struct snfs_file *f,
                                uint64_t off, size_t count, snfs_pieces_fn fn,
                                void *arg, bool *eof)
{
	struct pc_file *pf = snfs_file_pc(f);
	struct call3 q[PIECES_INFLIGHT];
	size_t head = 0, tail = 0;
	uint64_t next = off, end = off + count, covered = off;
	uint64_t ahead = pc_size(pf);
	bool stop = false;
	int rc = 0;

	*eof = false;
	for (;;) {
		if (rc == 0 && !stop && tail - head <= PIECES_INFLIGHT / 2)
			rc = pieces_fill(c, &pf->fh, q, head, &tail, &next, end,
			                 ahead);
		if (head == tail)
			break;
		bool mine = rc == 0 && !stop;
		struct pieces3 r = {.c = c, .fn = mine ? fn : NULL, .arg = arg};
		int e = pieces_finish(c, &q[head++ % PIECES_INFLIGHT], &r);
		if (!mine)
			continue;
		if (e < 0) {
			rc = e;
			continue;
		}
		covered = r.off + r.res.count;
		*eof = r.res.eof;
		stop = r.res.eof || r.res.count < r.count;
		if (r.res.have_attr && r.res.attr.size > ahead)
			ahead = r.res.attr.size;
		if (!stop && covered >= ahead)
			ahead = covered + (uint64_t)PIECES_INFLIGHT * c->rsize;
	}
	/* An error after some replies: return those; the next call sees it. */
	if (rc < 0 && covered == off)
		return rc;
	return (ssize_t)(covered - off);
}

static int nfs3_write_start(struct snfs_ctx *c, const struct snfs_fh *fh,
                            uint64_t off, const void *buf, uint32_t count,
                            int stable, struct rpc_req **r)
{
	struct xdr_out a;

	if (args3(&a, count, fh) < 0)
		return -ENOMEM;
	xdr_put_u64(&a, off);
	xdr_put_u32(&a, count);
	xdr_put_u32(&a, (uint32_t)stable);
	xdr_put_opaque(&a, buf, count);
	counter_add(&c->stats.write_bytes, count);
	return rpc_call_start(c->rpc, NFS3_PROG, NFS3_VERS, C3_WRITE, C3_WRITE,
	                      &a, r);
}

static void dec_write(struct xdr_in *x, uint32_t s, void *out)
{
	struct snfs_write_res *res = out;
	uint32_t committed;

	if (!nfs3_skip_wcc(x, NULL, NULL) || s != 0)
		return;
	xdr_get_u32(x, &res->count);
	xdr_get_u32(x, &committed);
	xdr_get_fixed(x, res->verf, 8);
	res->committed = committed > 2 ? 0 : (int)committed;
}

static int nfs3_write_finish(struct snfs_ctx *c, struct rpc_req *r,
                             struct snfs_write_res *res)
{
	struct rpc_reply rep;
	int rc = rpc_call_wait(c->rpc, r, &rep);

	memset(res, 0, sizeof(*res));
	return rc < 0 ? rc : reply3(&rep, dec_write, res);
}

struct commit3 {
	uint8_t *verf;
	struct attr3 attr;
};

static void dec_commit(struct xdr_in *x, uint32_t s, void *out)
{
	struct commit3 *r = out;

	nfs3_skip_wcc(x, r->attr.st, r->attr.have);
	if (s == 0)
		xdr_get_fixed(x, r->verf, 8);
}

static int nfs3_commit(struct snfs_ctx *c, const struct snfs_fh *fh,
                       uint8_t verf[8], struct snfs_stat *post, bool *have_post)
{
	struct xdr_out a;
	struct commit3 r = {verf, {post, have_post}};

	if (args3(&a, 0, fh) < 0)
		return -ENOMEM;
	xdr_put_u64(&a, 0);
	xdr_put_u32(&a, 0); /* 0: to the end of the file */
	return call3(c, C3_COMMIT, &a, dec_commit, &r);
}

/* diropres3 of CREATE, MKDIR, SYMLINK: post_op_fh3, post_op_attr, wcc. */
struct diropres3 {
	struct snfs_fh *fh;
	bool have;
};

static void dec_diropres(struct xdr_in *x, uint32_t s, void *out)
{
	struct diropres3 *r = out;
	bool h = false;

	if (s == 0) {
		if (xdr_get_bool(x, &h) && h)
			nfs3_get_fh(x, r->fh);
		r->have = h;
	}
}

/* Send a CREATE, MKDIR or SYMLINK whose arguments are in a; out and have
 * may be NULL when the new handle is not wanted. */
static int call_diropres(struct snfs_ctx *c, uint32_t proc, struct xdr_out *a,
                         struct snfs_fh *out, bool *have)
{
	struct snfs_fh fh;
	struct diropres3 r = {out ? out : &fh, false};
	int rc = call3(c, proc, a, dec_diropres, &r);

	if (have)
		*have = r.have;
	return rc;
}

static int nfs3_create(struct snfs_ctx *c, const struct snfs_fh *dir,
                       const char *name, uint32_t mode, bool excl,
                       struct snfs_fh *out)
{
	struct xdr_out a;
	struct snfs_setattr sa = {.mask = SNFS_SET_MODE, .mode = mode};
	bool have;
	int rc;

	if (args3(&a, 0, dir) < 0)
		return -ENOMEM;
	xdr_put_string(&a, name);
	xdr_put_u32(&a, excl ? 1 : 0); /* GUARDED or UNCHECKED */
	nfs3_put_sattr(&a, &sa);
	rc = call_diropres(c, C3_CREATE, &a, out, &have);
	if (rc == 0 && !have)
		rc = nfs3_lookup(c, dir, name, out, NULL, NULL);
	return rc;
}

static int nfs3_mkdir(struct snfs_ctx *c, const struct snfs_fh *dir,
                      const char *name, uint32_t mode)
{
	struct xdr_out a;
	struct snfs_setattr sa = {.mask = SNFS_SET_MODE, .mode = mode};

	if (args3(&a, 0, dir) < 0)
		return -ENOMEM;
	xdr_put_string(&a, name);
	nfs3_put_sattr(&a, &sa);
	return call_diropres(c, C3_MKDIR, &a, NULL, NULL);
}

static int nfs3_symlink(struct snfs_ctx *c, const struct snfs_fh *dir,
                        const char *name, const char *target)
{
	struct xdr_out a;

	if (args3(&a, strlen(target), dir) < 0)
		return -ENOMEM;
	xdr_put_string(&a, name);
	nfs3_put_sattr(&a, NULL);
	xdr_put_string(&a, target);
	return call_diropres(c, C3_SYMLINK, &a, NULL, NULL);
}

/* REMOVE and RMDIR: diropargs3 in, wcc_data out (not kept). */
static int dir_name_call(struct snfs_ctx *c, uint32_t proc,
                         const struct snfs_fh *dir, const char *name)
{
	struct xdr_out a;

	if (args3(&a, 0, dir) < 0)
		return -ENOMEM;
	xdr_put_string(&a, name);
	return call3(c, proc, &a, NULL, NULL);
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

	if (args3(&a, 0, fdir) < 0)
		return -ENOMEM;
	xdr_put_string(&a, fname);
	nfs3_put_fh(&a, tdir);
	xdr_put_string(&a, tname);
	return call3(c, C3_RENAME, &a, NULL, NULL);
}

static int nfs3_link(struct snfs_ctx *c, const struct snfs_fh *fh,
                     const struct snfs_fh *dir, const char *name)
{
	struct xdr_out a;

	if (args3(&a, 0, fh) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, dir);
	xdr_put_string(&a, name);
	return call3(c, C3_LINK, &a, NULL, NULL);
}

/* READDIR(PLUS) keeps the reply: the page points into its buffer. */
static int nfs3_readdir(struct snfs_ctx *c, const struct snfs_fh *dir,
                        bool plus, uint64_t cookie, const uint8_t verf[8],
                        uint32_t bufsize, struct rd_page *page)
{
	struct xdr_out a;
	struct rpc_reply rep;
	uint32_t proc = plus ? C3_READDIRPLUS : C3_READDIR;
	int rc;

	if (args3(&a, 0, dir) < 0)
		return -ENOMEM;
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

static void dec_fsstat(struct xdr_in *x, uint32_t s, void *out)
{
	struct snfs_statvfs *sv = out;

	nfs3_get_post_attr(x, NULL, NULL);
	if (s == 0) {
		xdr_get_u64(x, &sv->tbytes);
		xdr_get_u64(x, &sv->fbytes);
		xdr_get_u64(x, &sv->abytes);
		xdr_get_u64(x, &sv->tfiles);
		xdr_get_u64(x, &sv->ffiles);
		xdr_get_u64(x, &sv->afiles);
	}
}

static int nfs3_statvfs(struct snfs_ctx *c, const struct snfs_fh *fh,
                        struct snfs_statvfs *sv)
{
	struct xdr_out a;

	if (args3(&a, 0, fh) < 0)
		return -ENOMEM;
	return call3(c, C3_FSSTAT, &a, dec_fsstat, sv);
}

struct fsinfo3 {
	uint32_t *rtmax, *wtmax, *dtpref;
};

static void dec_fsinfo(struct xdr_in *x, uint32_t s, void *out)
{
	struct fsinfo3 *r = out;
	uint32_t v;

	nfs3_get_post_attr(x, NULL, NULL);
	if (s == 0) {
		xdr_get_u32(x, r->rtmax);
		xdr_get_u32(x, &v); /* rtpref */
		xdr_get_u32(x, &v); /* rtmult */
		xdr_get_u32(x, r->wtmax);
		xdr_get_u32(x, &v);
		xdr_get_u32(x, &v);
		xdr_get_u32(x, r->dtpref);
	}
}

/* FSINFO (section 3.3.19): the server's transfer limits. */
int nfs3_fsinfo(struct snfs_ctx *c, uint32_t *rtmax, uint32_t *wtmax,
                uint32_t *dtpref)
{
	struct xdr_out a;
	struct fsinfo3 r = {rtmax, wtmax, dtpref};

	if (args3(&a, 0, &c->root) < 0)
		return -ENOMEM;
	return call3(c, C3_FSINFO, &a, dec_fsinfo, &r);
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
    .read_pieces = nfs3_read_pieces,
    /* NFSv3 has no SEEK, ALLOCATE, DEALLOCATE, COPY or READ_PLUS: the
     * API layer answers -EOPNOTSUPP or falls back. */
};
