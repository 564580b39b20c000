/* NFSv4.1/4.2 operations (RFC 8881 section 18, RFC 7862 section 15) as
 * the client's operations table. Every call is one COMPOUND run by the
 * engine in nfs4_session.c: SEQUENCE, PUTFH, the operation, and often a
 * GETATTR or GETFH after it. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/nfs4.h"
#include "client/pagecache.h"

#define READLINK_MAX 4096
#define SEGS_MAX 65536
/* What a READ_PLUS segment costs of a reply's room besides its data
 * (type, offset, length; snfsd charges 20 bytes, 24 leaves a margin). */
#define SEG_COST 24
#define OPEN_OWNER_PREFIX "snfs-open-"

enum { NF4REG = 1, NF4DIR = 2, NF4LNK = 5 };
enum { CONTENT_DATA = 0, CONTENT_HOLE = 1 };
enum { OPEN4_NOCREATE = 0, OPEN4_CREATE = 1 };
enum { UNCHECKED4 = 0, GUARDED4 = 1 };
enum { CLAIM_NULL = 0, CLAIM_PREVIOUS = 1, CLAIM_FH = 4 };

static const struct nfs4_stateid anon_stateid;

static int run(struct snfs_ctx *c, int counter, nfs4_build_fn b,
               nfs4_parse_fn p, void *arg, size_t extra)
{
	struct nfs4_call call = {.counter = counter,
	                         .extra = extra,
	                         .build = b,
	                         .parse = p,
	                         .arg = arg};
	int rc = nfs4_call(c, &call);
	nfs4_call_done(&call);
	return rc;
}

static int get_fattr(struct xdr_in *x, struct snfs_stat *st)
{
	struct nfs4_fattr fa;
	if (!nfs4_get_fattr(x, &fa))
		return -EPROTO;
	if (st)
		*st = fa.st;
	return 0;
}

/* ---- GETATTR ---- */

struct fh_arg {
	const struct snfs_fh *fh;
	struct snfs_stat *st;
	struct nfs4_fattr *fa;
	struct nfs4_bitmap bm;
};

static int b_getattr(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct fh_arg *a = arg;
	(void)c;
	nfs4_put_fh(rq, a->fh);
	nfs4_put_getattr(rq, &a->bm);
	return 0;
}

static int p_getattr(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct fh_arg *a = arg;
	int rc;
	(void)c;
	if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0 ||
	    (rc = nfs4_expect(x, OP4_GETATTR, NULL)) < 0)
		return rc;
	if (a->fa)
		return nfs4_get_fattr(x, a->fa) ? 0 : -EPROTO;
	return get_fattr(x, a->st);
}

static int nfs4_getattr(struct snfs_ctx *c, const struct snfs_fh *fh,
                        struct snfs_stat *st)
{
	struct fh_arg a = {.fh = fh, .st = st};
	nfs4_bm_stat(&a.bm);
	return run(c, SNFS_OP_GETATTR, b_getattr, p_getattr, &a, 0);
}

/* ---- SETATTR ---- */

struct setattr_arg {
	const struct snfs_fh *fh;
	const struct snfs_setattr *sa;
	struct snfs_stat *post;
	bool *have_post;
};

static int b_setattr(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct setattr_arg *a = arg;
	struct nfs4_stateid sid = anon_stateid;
	struct nfs4_bitmap bm;

	/* Section 18.30: a size change needs a stateid for the share
	 * reservation; use our OPEN's when we have one. */
	if (a->sa->mask & SNFS_SET_SIZE)
		nfs4_io_stateid(c, a->fh, true, &sid);
	nfs4_put_fh(rq, a->fh);
	nfs4_put_op(rq, OP4_SETATTR);
	nfs4_put_stateid(&rq->x, &sid);
	nfs4_put_sattr(&rq->x, a->sa);
	nfs4_bm_stat(&bm);
	nfs4_put_getattr(rq, &bm);
	return 0;
}

static int p_setattr(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct setattr_arg *a = arg;
	struct nfs4_bitmap set;
	int rc;
	(void)c;
	if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0)
		return rc;
	rc = nfs4_expect(x, OP4_SETATTR, NULL);
	if (rc == -EPROTO)
		return rc;
	if (!nfs4_get_bitmap(x, &set))
		return -EPROTO;
	if (rc < 0)
		return rc;
	if (nfs4_expect(x, OP4_GETATTR, NULL) == 0 &&
	    get_fattr(x, a->post) == 0 && a->have_post)
		*a->have_post = true;
	return 0;
}

static int nfs4_setattr(struct snfs_ctx *c, const struct snfs_fh *fh,
                        const struct snfs_setattr *sa, struct snfs_stat *post,
                        bool *have_post)
{
	struct snfs_stat tmp;
	struct setattr_arg a = {fh, sa, post ? post : &tmp, have_post};
	if (have_post)
		*have_post = false;
	return run(c, SNFS_OP_SETATTR, b_setattr, p_setattr, &a, 0);
}

/* ---- LOOKUP ---- */

struct lookup_arg {
	const struct snfs_fh *dir;
	const char *name;
	struct snfs_fh *out;
	struct snfs_stat *st;
	bool *have;
};

static int b_lookup(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct lookup_arg *a = arg;
	struct nfs4_bitmap bm;
	(void)c;
	nfs4_put_fh(rq, a->dir);
	nfs4_put_op(rq, OP4_LOOKUP);
	xdr_put_string(&rq->x, a->name);
	nfs4_put_op(rq, OP4_GETFH);
	nfs4_bm_stat(&bm);
	nfs4_put_getattr(rq, &bm);
	return 0;
}

static int p_lookup(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct lookup_arg *a = arg;
	int rc;
	(void)c;
	if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0 ||
	    (rc = nfs4_expect(x, OP4_LOOKUP, NULL)) < 0 ||
	    (rc = nfs4_expect(x, OP4_GETFH, NULL)) < 0)
		return rc;
	if (!nfs4_get_fh(x, a->out))
		return -EPROTO;
	if (nfs4_expect(x, OP4_GETATTR, NULL) == 0 && a->st &&
	    get_fattr(x, a->st) == 0 && a->have)
		*a->have = true;
	return 0;
}

static int nfs4_lookup(struct snfs_ctx *c, const struct snfs_fh *dir,
                       const char *name, struct snfs_fh *out,
                       struct snfs_stat *st, bool *have_attr)
{
	struct lookup_arg a = {dir, name, out, st, have_attr};
	if (have_attr)
		*have_attr = false;
	return run(c, SNFS_OP_LOOKUP, b_lookup, p_lookup, &a, strlen(name));
}

/* ---- READLINK ---- */

struct readlink_arg {
	const struct snfs_fh *fh;
	char *buf;
	size_t size;
	int len;
};

static int b_readlink(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct readlink_arg *a = arg;
	(void)c;
	nfs4_put_fh(rq, a->fh);
	nfs4_put_op(rq, OP4_READLINK);
	return 0;
}

static int p_readlink(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct readlink_arg *a = arg;
	const uint8_t *p;
	uint32_t n;
	int rc;
	(void)c;
	if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0 ||
	    (rc = nfs4_expect(x, OP4_READLINK, NULL)) < 0)
		return rc;
	if (!xdr_get_opaque_ref(x, &p, &n, 65536))
		return -EPROTO;
	if (a->size) {
		size_t k = n < a->size - 1 ? n : a->size - 1;
		memcpy(a->buf, p, k);
		a->buf[k] = 0;
		a->len = (int)k;
	}
	return 0;
}

static int nfs4_readlink(struct snfs_ctx *c, const struct snfs_fh *fh,
                         char *buf, size_t size)
{
	struct readlink_arg a = {fh, buf, size, 0};
	int rc = run(c, SNFS_OP_READLINK, b_readlink, p_readlink, &a, 0);
	return rc < 0 ? rc : a.len;
}

/* ---- READ, READ_PLUS, WRITE (pipelined) ---- */

struct io_call {
	struct nfs4_call call; /* first: the page cache's handle is this */
	struct snfs_fh fh;
	uint64_t off;
	uint32_t count;
	bool plus, write;
	int stable;
	uint8_t *data; /* WRITE: our copy, for retries */
	/* results */
	uint8_t *buf;
	bool zero_fill; /* plain reads: holes become zeros in buf */
	bool unsupported;
	uint32_t got;
	bool eof;
	bool had_data;    /* READ_PLUS: some segment was DATA, */
	uint64_t data_at; /* the first at this offset */
	uint64_t hole_to; /* READ_PLUS: the reply ended in a hole going on
	                   * to here, past what we asked for */
	bool known_hole;  /* no call: [off, off + count) is a hole we know */
	bool segs_full;   /* the reply ended early: our segment list is full */
	uint64_t used;    /* READ_PLUS: data and segment headers received */
	struct snfs_segment *segs;
	size_t max_segs, nsegs;
	struct snfs_write_res *wres;
	/* snfs_read_pieces: no buf; the reply's pieces go to pieces_fn once
	 * the whole reply parsed, and its answer to pieces_rc */
	snfs_pieces_fn pieces_fn;
	void *pieces_arg;
	struct snfs_piece *pv;
	size_t npv;
	int pieces_rc;
};

static int b_io(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct io_call *io = arg;
	struct nfs4_stateid sid;

	nfs4_io_stateid(c, &io->fh, io->write, &sid);
	nfs4_put_fh(rq, &io->fh);
	if (io->write) {
		nfs4_put_op(rq, OP4_WRITE);
		nfs4_put_stateid(&rq->x, &sid);
		xdr_put_u64(&rq->x, io->off);
		xdr_put_u32(&rq->x, (uint32_t)io->stable);
		xdr_put_opaque(&rq->x, io->data, io->count);
		return 0;
	}
	nfs4_put_op(rq, io->plus ? OP4_READ_PLUS : OP4_READ);
	nfs4_put_stateid(&rq->x, &sid);
	xdr_put_u64(&rq->x, io->off);
	xdr_put_u32(&rq->x, io->count);
	return 0;
}

static int p_read(struct snfs_ctx *c, struct xdr_in *x, struct io_call *io)
{
	const uint8_t *p;
	uint32_t n;
	int rc = nfs4_expect(x, OP4_READ, NULL);
	if (rc < 0)
		return rc;
	/* Trust no count: the data must fit what we asked for. */
	if (!xdr_get_bool(x, &io->eof) ||
	    !xdr_get_opaque_ref(x, &p, &n, io->count))
		return -EPROTO;
	if (io->pieces_fn && n) {
		struct snfs_piece v = {io->off, n, p};
		io->pieces_rc = io->pieces_fn(io->pieces_arg, &v, 1);
	} else if (io->buf) { /* none: a call drained after a stop */
		memcpy(io->buf, p, n);
	}
	io->got = n;
	if (io->segs && n) {
		io->segs[0] = (struct snfs_segment){io->off, n, false};
		io->nsegs = 1;
	}
	counter_add(&c->stats.read_bytes, n);
	return 0;
}

/* Record a segment, merging with the previous one of its kind. */
static bool add_seg(struct io_call *io, uint64_t off, uint64_t len, bool hole)
{
	if (!io->segs)
		return true;
	if (io->nsegs) {
		struct snfs_segment *l = &io->segs[io->nsegs - 1];
		if (l->hole == hole && l->off + l->len == off) {
			l->len += len;
			return true;
		}
	}
	if (io->nsegs == io->max_segs)
		return false;
	io->segs[io->nsegs++] = (struct snfs_segment){off, len, hole};
	return true;
}

/* READ_PLUS4resok (RFC 7862 section 15.10): eof and a list of DATA and
 * HOLE segments. Segments must follow on from each other inside what we
 * asked for; the reply ends at the first that does not. */
static int p_read_plus(struct snfs_ctx *c, struct xdr_in *x, struct io_call *io)
{
	uint32_t st, nseg;
	int rc = nfs4_expect(x, OP4_READ_PLUS, &st);
	if (rc == -EOPNOTSUPP || st == NFS4ERR_NOTSUPP) {
		io->unsupported = true;
		return -EOPNOTSUPP;
	}
	if (rc < 0)
		return rc;
	if (!xdr_get_bool(x, &io->eof) || !xdr_get_u32(x, &nseg) ||
	    nseg > SEGS_MAX)
		return -EPROTO;
	uint64_t pos = io->off, end = io->off + io->count;
	bool stop = false;
	if (io->pieces_fn) {
		free(io->pv);
		io->npv = 0;
		io->pv = malloc((nseg ? nseg : 1) * sizeof(*io->pv));
		if (!io->pv)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < nseg; i++) {
		uint32_t what, n;
		uint64_t soff, slen;
		const uint8_t *p = NULL;
		if (!xdr_get_u32(x, &what) || !xdr_get_u64(x, &soff))
			return -EPROTO;
		if (what == CONTENT_DATA) {
			if (!xdr_get_opaque_ref(x, &p, &n, io->count))
				return -EPROTO;
			slen = n;
		} else if (what == CONTENT_HOLE) {
			if (!xdr_get_u64(x, &slen))
				return -EPROTO;
		} else {
			return -EPROTO;
		}
		/* 15.10.3: a segment may start before the offset asked for
		 * and a hole may go on past the range; keep our part */
		if (!stop && soff < pos && slen > pos - soff) {
			if (p)
				p += pos - soff;
			slen -= pos - soff;
			soff = pos;
		}
		if (stop || soff != pos || slen == 0)
			continue; /* a gap or overlap: keep what came before */
		if (slen > end - pos) {
			if (!p)
				io->hole_to = slen > UINT64_MAX - pos
				                  ? UINT64_MAX
				                  : pos + slen;
			slen = end - pos;
		}
		if (p && !io->had_data) {
			io->had_data = true;
			io->data_at = pos;
		}
		if (io->pieces_fn)
			io->pv[io->npv++] = (struct snfs_piece){pos, slen, p};
		else if (p && io->buf)
			memcpy(io->buf + (pos - io->off), p, slen);
		else if (io->zero_fill && io->buf)
			memset(io->buf + (pos - io->off), 0, slen);
		if (!add_seg(io, pos, slen, p == NULL)) {
			io->segs_full = stop = true;
			continue;
		}
		io->used += SEG_COST + (p ? slen : 0);
		if (p)
			counter_add(&c->stats.read_bytes, slen);
		pos += slen;
		if (pos == end)
			stop = true;
	}
	/* a short reply is fine: the caller asks again for the rest */
	io->got = (uint32_t)(pos - io->off);
	if (pos < end)
		io->eof = io->eof && !stop;
	/* Some servers (ganesha 4.3) answer every READ_PLUS with one empty
	 * DATA segment and eof false: no progress, so no READ_PLUS. */
	if (io->got == 0 && !io->eof) {
		io->unsupported = true;
		return -EOPNOTSUPP;
	}
	if (io->pieces_fn && io->npv)
		io->pieces_rc = io->pieces_fn(io->pieces_arg, io->pv, io->npv);
	__atomic_store_n(&nfs4_st(c)->read_plus_ok, true, __ATOMIC_RELAXED);
	return 0;
}

static int p_io(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct io_call *io = arg;
	int rc = nfs4_expect(x, OP4_PUTFH, NULL);
	if (rc < 0)
		return rc;
	if (!io->write)
		return io->plus ? p_read_plus(c, x, io) : p_read(c, x, io);
	uint32_t committed;
	struct snfs_write_res *w = io->wres;
	if ((rc = nfs4_expect(x, OP4_WRITE, NULL)) < 0)
		return rc;
	if (!xdr_get_u32(x, &w->count) || !xdr_get_u32(x, &committed) ||
	    !xdr_get_fixed(x, w->verf, 8))
		return -EPROTO;
	w->committed = committed > 2 ? 0 : (int)committed;
	return 0;
}

static struct io_call *io_new(struct snfs_ctx *c, const struct snfs_fh *fh,
                              uint64_t off, uint32_t count, bool write)
{
	struct io_call *io = calloc(1, sizeof(*io));
	if (!io)
		return NULL;
	io->fh = *fh;
	io->off = off;
	io->count = count;
	io->write = write;
	io->plus =
	    !write && nfs4_st(c)->minor >= 2 &&
	    !__atomic_load_n(&nfs4_st(c)->no_read_plus, __ATOMIC_RELAXED);
	io->call.counter = write      ? SNFS_OP_WRITE
	                   : io->plus ? SNFS_OP_READ_PLUS
	                              : SNFS_OP_READ;
	io->call.extra = write ? count : 0;
	io->call.build = b_io;
	io->call.parse = p_io;
	io->call.arg = io;
	return io;
}

static void io_free(struct io_call *io)
{
	nfs4_call_done(&io->call);
	free(io->pv);
	free(io->data);
	free(io);
}

/* READ_PLUS turned out missing or broken: note it and use READ. */
static int read_fallback(struct snfs_ctx *c, struct io_call *io)
{
	__atomic_store_n(&nfs4_st(c)->no_read_plus, true, __ATOMIC_RELAXED);
	nfs4_call_done(&io->call);
	io->plus = false;
	io->unsupported = false;
	io->nsegs = 0;
	io->call.counter = SNFS_OP_READ;
	io->call.req = NULL;
	io->call.deferred = false;
	return nfs4_call(c, &io->call);
}

static int nfs4_read_start(struct snfs_ctx *c, const struct snfs_fh *fh,
                           uint64_t off, uint32_t count, struct rpc_req **r)
{
	struct io_call *io = io_new(c, fh, off, count, false);
	if (!io)
		return -ENOMEM;
	int rc = nfs4_call_start(c, &io->call);
	if (rc < 0) {
		io_free(io);
		return rc;
	}
	*r = (struct rpc_req *)(void *)io;
	return 0;
}

static int nfs4_read_finish(struct snfs_ctx *c, struct rpc_req *r, void *buf,
                            uint32_t count, struct snfs_read_res *res)
{
	struct io_call *io = (struct io_call *)(void *)r;
	memset(res, 0, sizeof(*res));
	io->buf = buf;
	io->zero_fill = true;
	if (count < io->count)
		io->count = count;
	int rc = nfs4_call_finish(c, &io->call);
	if (rc == -EOPNOTSUPP && io->unsupported)
		rc = read_fallback(c, io);
	if (rc == 0) {
		res->count = io->got;
		res->eof = io->eof;
	}
	io_free(io);
	return rc;
}

static int nfs4_write_start(struct snfs_ctx *c, const struct snfs_fh *fh,
                            uint64_t off, const void *buf, uint32_t count,
                            int stable, struct rpc_req **r)
{
	struct io_call *io = io_new(c, fh, off, count, true);
	if (!io)
		return -ENOMEM;
	io->stable = stable;
	io->data = malloc(count ? count : 1);
	if (!io->data) {
		io_free(io);
		return -ENOMEM;
	}
	memcpy(io->data, buf, count);
	counter_add(&c->stats.write_bytes, count);
	int rc = nfs4_call_start(c, &io->call);
	if (rc < 0) {
		io_free(io);
		return rc;
	}
	*r = (struct rpc_req *)(void *)io;
	return 0;
}

static int nfs4_write_finish(struct snfs_ctx *c, struct rpc_req *r,
                             struct snfs_write_res *res)
{
	struct io_call *io = (struct io_call *)(void *)r;
	memset(res, 0, sizeof(*res));
	io->wres = res;
	int rc = nfs4_call_finish(c, &io->call);
	io_free(io);
	return rc;
}

/* Vectored WRITE: PUTFH and n WRITEs in one COMPOUND (RFC 8881 section
 * 2.10.6 lets a compound carry as many as the session allows). Small
 * scattered writes (a random 2 KiB mix) then cost one round trip per
 * batch instead of one per write. */
struct wv_call {
	struct nfs4_call call; /* first: the page cache's handle is this */
	struct snfs_fh fh;
	uint32_t n, done;
	int stable;
	struct snfs_wseg *v;
	uint8_t *data; /* our copy of the bytes, for retries */
	struct snfs_write_res *res;
};

static int b_wv(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct wv_call *w = arg;
	struct nfs4_stateid sid;
	size_t at = 0;

	nfs4_io_stateid(c, &w->fh, true, &sid);
	nfs4_put_fh(rq, &w->fh);
	for (uint32_t i = 0; i < w->n; i++) {
		nfs4_put_op(rq, OP4_WRITE);
		nfs4_put_stateid(&rq->x, &sid);
		xdr_put_u64(&rq->x, w->v[i].off);
		xdr_put_u32(&rq->x, (uint32_t)w->stable);
		xdr_put_opaque(&rq->x, w->data + at, w->v[i].len);
		at += w->v[i].len;
	}
	return 0;
}

static int p_wv(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct wv_call *w = arg;
	uint32_t committed;
	int rc = nfs4_expect(x, OP4_PUTFH, NULL);

	(void)c;
	w->done = 0;
	for (uint32_t i = 0; rc == 0 && i < w->n; i++) {
		struct snfs_write_res *r = &w->res[i];
		if ((rc = nfs4_expect(x, OP4_WRITE, NULL)) < 0)
			break;
		if (!xdr_get_u32(x, &r->count) || !xdr_get_u32(x, &committed) ||
		    !xdr_get_fixed(x, r->verf, 8))
			return -EPROTO;
		r->committed = committed > 2 ? 0 : (int)committed;
		w->done = i + 1;
	}
	return rc;
}

static void wv_free(struct wv_call *w)
{
	nfs4_call_done(&w->call);
	free(w->v);
	free(w->data);
	free(w);
}

static int nfs4_write_vec_start(struct snfs_ctx *c, const struct snfs_fh *fh,
                                const struct snfs_wseg *v, uint32_t n,
                                const void *buf, int stable, struct rpc_req **r)
{
	size_t total = 0;
	if (n == 0 || n > c->max_write_ops)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		total += v[i].len;
	struct wv_call *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->v = malloc(n * sizeof(*v));
	w->data = malloc(total ? total : 1);
	if (!w->v || !w->data) {
		wv_free(w);
		return -ENOMEM;
	}
	memcpy(w->v, v, n * sizeof(*v));
	memcpy(w->data, buf, total);
	w->fh = *fh;
	w->n = n;
	w->stable = stable;
	w->call.counter = SNFS_OP_WRITE;
	w->call.extra = total + (size_t)n * 40;
	w->call.build = b_wv;
	w->call.parse = p_wv;
	w->call.arg = w;
	counter_add(&c->stats.write_bytes, total);
	int rc = nfs4_call_start(c, &w->call);
	if (rc < 0) {
		wv_free(w);
		return rc;
	}
	*r = (struct rpc_req *)(void *)w;
	return 0;
}

static int nfs4_write_vec_finish(struct snfs_ctx *c, struct rpc_req *r,
                                 struct snfs_write_res *res, uint32_t *done)
{
	struct wv_call *w = (struct wv_call *)(void *)r;
	memset(res, 0, w->n * sizeof(*res));
	w->res = res;
	int rc = nfs4_call_finish(c, &w->call);
	*done = w->done;
	wv_free(w);
	return rc;
}

/* snfs_read_segments and snfs_read_pieces: READ_PLUS calls (READ for
 * pieces where the server has no READ_PLUS) of rsize each over count
 * bytes, SEG_INFLIGHT outstanding. Replies are parsed in order, into one
 * segment list with holes left untouched in buf, or handed to a pieces
 * function; the first short one (eof, the segment list full, a server
 * sending less) ends the read, and the calls after it are only drained.
 * A reply whose last hole goes on past its range (snfsd says how far)
 * spares the calls for the rest of that hole: the range goes in the
 * queue as a known hole. Should a reply from inside it carry data after
 * all (the file changed), the read ends at the first known hole, and the
 * caller asks again from there. */
#define SEG_INFLIGHT 16
struct seg_read {
	void *buf; /* NULL: pieces */
	struct snfs_segment *segs;
	size_t max_segs, *nsegs;
	snfs_pieces_fn fn;
	void *arg;
};

#define KNOWN_HOLE_MAX (1u << 30) /* one queue entry's share of a hole */

/* How much of the file one READ_PLUS asks for. A reply carries at most
 * rsize bytes of data and segment headers, but a sparse range needs far
 * less than its length: asking for more of it per call (snfsd covers up
 * to count bytes of the file, however little of that is data) takes
 * fewer calls, and every call costs both sides wake-ups and a reply's
 * fixed work (measured: 1 GiB of 4 KiB data and holes, 1 MiB spans 1024
 * calls, 0.48 s of client and server CPU; 1.75 MiB spans 586 calls,
 * 0.42 s). The span is sized from the last reply so that data and
 * headers fill 7/8 of rsize. A reply that comes back short anyway (the
 * file got denser) is completed by a call for the rest; a server that
 * covers no more than rsize per call whatever the count (knfsd caps it
 * at its maxread) shows it on the first wide call, and gets rsize from
 * then on. */
#define SPAN_MAX_RSIZES 4

static uint32_t next_span(const struct snfs_ctx *c, const struct io_call *io)
{
	uint64_t want, max = (uint64_t)SPAN_MAX_RSIZES * c->rsize;

	if (!io->plus || io->got == 0 || io->used == 0)
		return c->rsize;
	want = (uint64_t)io->got * (c->rsize / 8 * 7) / io->used;
	want = want > max ? max : want & ~(uint64_t)4095;
	return want < c->rsize ? c->rsize : (uint32_t)want;
}

/* A wide call answered with no more than rsize of the file, its data
 * and headers well short of filling the reply (a reply cut by its room
 * is full to within a segment header): the server caps the range. */
static bool span_capped(const struct snfs_ctx *c, const struct io_call *io)
{
	return io->count > c->rsize && io->got <= c->rsize &&
	       io->used < c->rsize / 16 * 15;
}

/* A queue entry for [off, off + count) of a hole we know: no call. */
static struct io_call *known_hole(uint64_t off, uint32_t count)
{
	struct io_call *io = calloc(1, sizeof(*io));
	if (io) {
		io->off = off;
		io->count = count;
		io->known_hole = true;
	}
	return io;
}

/* Hand a known hole on like a reply's hole segment. */
static int known_hole_put(struct io_call *io, const struct seg_read *sr)
{
	if (!sr->buf) {
		struct snfs_piece v = {io->off, io->count, NULL};
		int rc = sr->fn(sr->arg, &v, 1);
		if (rc == 0)
			io->got = io->count;
		return rc;
	}
	if (add_seg(io, io->off, io->count, true))
		io->got = io->count; /* else full: the read ends here */
	return 0;
}

/* The rest of a short READ_PLUS reply's range, asked for now and put at
 * the head of the queue (the slot io had is free), so replies are still
 * handed on in file order. */
static int queue_rest(struct snfs_ctx *c, struct snfs_file *f,
                      const struct seg_read *sr, uint64_t off,
                      const struct io_call *io, struct io_call **q,
                      size_t *head)
{
	uint64_t at = io->off + io->got;
	struct io_call *rest =
	    io_new(c, &snfs_file_pc(f)->fh, at, io->count - io->got, false);
	int rc;

	if (!rest)
		return -ENOMEM;
	if (sr->buf)
		rest->buf = (uint8_t *)sr->buf + (at - off);
	rc = nfs4_call_start(c, &rest->call);
	if (rc < 0) {
		io_free(rest);
		return rc;
	}
	q[--*head % SEG_INFLIGHT] = rest;
	return 0;
}

static ssize_t read_pipelined(struct snfs_ctx *c, struct snfs_file *f,
                              uint64_t off, size_t count,
                              const struct seg_read *sr, bool *eof)
{
	struct nfs4_state *s = nfs4_st(c);
	struct io_call *q[SEG_INFLIGHT];
	size_t head = 0, tail = 0;
	uint64_t next = off, end = off + count, covered = off;
	/* Past the size we believe the file has, calls go one at a time
	 * until a full reply shows it grew: a small file costs one call,
	 * not SEG_INFLIGHT that all answer eof. */
	uint64_t ahead = pc_size(snfs_file_pc(f));
	uint64_t known_end = 0; /* a reply showed a hole up to here */
	bool stop = false, unsupported = false, stale = false;
	uint32_t span = c->rsize; /* READ_PLUS: see next_span */
	int rc = 0;

	*eof = false;
	for (;;) {
		/* Refill the window when half of it is free, the calls held
		 * and written together: one sendmsg, and one wake-up of the
		 * server for the lot, instead of one of each per call. */
		struct rpc_req *held[SEG_INFLIGHT];
		int nheld = 0;
		bool refill = tail - head <= SEG_INFLIGHT / 2;
		/* Until a READ_PLUS reply shows the server has it, one call
		 * goes alone: a server without it (NFS4ERR_NOTSUPP) then costs
		 * one refused call, not a window of them. */
		bool probe =
		    s->minor >= 2 &&
		    !__atomic_load_n(&s->no_read_plus, __ATOMIC_RELAXED) &&
		    !__atomic_load_n(&s->read_plus_ok, __ATOMIC_RELAXED);
		while (refill && rc == 0 && !stop &&
		       tail - head < SEG_INFLIGHT && next < end &&
		       (next < ahead || head == tail) &&
		       (!probe || head == tail)) {
			if (next < known_end && !stale) {
				uint64_t e = known_end < end ? known_end : end;
				uint32_t n = e - next < KNOWN_HOLE_MAX
				                 ? (uint32_t)(e - next)
				                 : KNOWN_HOLE_MAX;
				struct io_call *io = known_hole(next, n);
				if (!io) {
					rc = -ENOMEM;
					break;
				}
				q[tail++ % SEG_INFLIGHT] = io;
				next += n;
				continue;
			}
			uint32_t n = probe || __atomic_load_n(&s->rp_narrow,
			                                      __ATOMIC_RELAXED)
			                 ? c->rsize
			                 : span;
			if (end - next < n)
				n = (uint32_t)(end - next);
			struct io_call *io =
			    io_new(c, &snfs_file_pc(f)->fh, next, n, false);
			if (!io) {
				rc = -ENOMEM;
				break;
			}
			if (sr->buf)
				io->buf = (uint8_t *)sr->buf + (next - off);
			io->call.hold = true;
			rc = nfs4_call_start(c, &io->call);
			if (rc < 0) {
				io_free(io);
				break;
			}
			if (io->call.req)
				held[nheld++] = io->call.req;
			q[tail++ % SEG_INFLIGHT] = io;
			next += n;
		}
		if (nheld)
			rpc_flush(c->rpc, held, nheld);
		if (head == tail)
			break;
		struct io_call *io = q[head++ % SEG_INFLIGHT];
		bool mine = rc == 0 && !stop;
		if (mine && sr->buf) { /* append to (and merge with) ours */
			io->segs = sr->segs;
			io->nsegs = *sr->nsegs;
			io->max_segs = sr->max_segs;
		} else if (mine) {
			io->pieces_fn = sr->fn;
			io->pieces_arg = sr->arg;
		}
		int r = 0;
		if (io->known_hole && mine && stale)
			stop = true; /* the caller reads it again */
		else if (io->known_hole && mine)
			r = known_hole_put(io, sr);
		else if (!io->known_hole)
			r = nfs4_call_finish(c, &io->call);
		if (stop && io->known_hole) {
			io_free(io);
			continue;
		}
		if (r == -EOPNOTSUPP && io->unsupported)
			unsupported = true;
		if (mine && r == 0 && io->pieces_rc < 0)
			r = io->pieces_rc;
		if (mine && r < 0)
			rc = r;
		if (mine && r == 0) {
			if (sr->buf)
				*sr->nsegs = io->nsegs;
			*eof = io->eof;
			covered = io->off + io->got;
			if (io->had_data && io->data_at < known_end)
				stale = true;
			if (io->hole_to > known_end)
				known_end = io->hole_to;
			/* a READ_PLUS short of its span, not at the end: the
			 * rest is asked for at once, ahead of the queue */
			bool fill = io->plus && !io->eof && io->got > 0 &&
			            io->got < io->count && !io->segs_full &&
			            !stale;
			if (fill && span_capped(c, io))
				__atomic_store_n(&s->rp_narrow, true,
				                 __ATOMIC_RELAXED);
			span = next_span(c, io);
			/* eof on a full reply (a file of whole rsizes):
			 * nothing follows, so no window of calls past the
			 * end to learn it again */
			stop = (io->got < io->count && !fill) || io->eof;
			if (fill)
				rc = queue_rest(c, f, sr, off, io, q, &head);
			if (!stop && covered >= ahead)
				ahead = covered + (uint64_t)SEG_INFLIGHT * span;
		}
		io_free(io);
	}
	if (unsupported && rc == -EOPNOTSUPP) {
		__atomic_store_n(&s->no_read_plus, true, __ATOMIC_RELAXED);
		return -EOPNOTSUPP;
	}
	/* An error after some replies: return those; the next call sees it. */
	if (rc < 0 && covered == off)
		return rc;
	return (ssize_t)(covered - off);
}

static ssize_t nfs4_read_segments(struct snfs_ctx *c, struct snfs_file *f,
                                  void *buf, size_t count, uint64_t off,
                                  struct snfs_segment *segs, size_t max_segs,
                                  size_t *nsegs, bool *eof)
{
	struct nfs4_state *s = nfs4_st(c);
	struct seg_read sr = {
	    .buf = buf, .segs = segs, .max_segs = max_segs, .nsegs = nsegs};

	*nsegs = 0;
	*eof = false;
	if (s->minor < 2 || __atomic_load_n(&s->no_read_plus, __ATOMIC_RELAXED))
		return -EOPNOTSUPP;
	return read_pipelined(c, f, off, count, &sr, eof);
}

static ssize_t nfs4_read_pieces(struct snfs_ctx *c, struct snfs_file *f,
                                uint64_t off, size_t count, snfs_pieces_fn fn,
                                void *arg, bool *eof)
{
	struct seg_read sr = {.fn = fn, .arg = arg};

	return read_pipelined(c, f, off, count, &sr, eof);
}

/* ---- COMMIT ---- */

struct commit_arg {
	const struct snfs_fh *fh;
	uint8_t *verf;
	struct snfs_stat *post;
	bool *have_post;
};

static int b_commit(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct commit_arg *a = arg;
	struct nfs4_bitmap bm;
	(void)c;
	nfs4_put_fh(rq, a->fh);
	nfs4_put_op(rq, OP4_COMMIT);
	xdr_put_u64(&rq->x, 0);
	xdr_put_u32(&rq->x, 0); /* to the end of the file */
	nfs4_bm_stat(&bm);
	nfs4_put_getattr(rq, &bm);
	return 0;
}

static int p_commit(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct commit_arg *a = arg;
	int rc;
	(void)c;
	if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0 ||
	    (rc = nfs4_expect(x, OP4_COMMIT, NULL)) < 0)
		return rc;
	if (!xdr_get_fixed(x, a->verf, 8))
		return -EPROTO;
	if (nfs4_expect(x, OP4_GETATTR, NULL) == 0 &&
	    get_fattr(x, a->post) == 0 && a->have_post)
		*a->have_post = true;
	return 0;
}

static int nfs4_commit(struct snfs_ctx *c, const struct snfs_fh *fh,
                       uint8_t verf[8], struct snfs_stat *post, bool *have_post)
{
	struct snfs_stat tmp;
	struct commit_arg a = {fh, verf, post ? post : &tmp, have_post};
	if (have_post)
		*have_post = false;
	return run(c, SNFS_OP_COMMIT, b_commit, p_commit, &a, 0);
}

/* ---- OPEN and CLOSE ---- */

struct open_arg {
	const struct snfs_fh *fh;  /* CLAIM_FH / CLAIM_PREVIOUS: the file */
	const struct snfs_fh *dir; /* CLAIM_NULL: the directory */
	const char *name;
	uint32_t claim;
	uint32_t access;
	uint64_t owner;
	bool create, excl;
	uint32_t mode;
	/* results */
	struct nfs4_stateid sid;
	struct nfs4_stateid deleg;
	bool have_deleg;
	struct snfs_fh out;
};

static void put_owner(struct snfs_ctx *c, struct xdr_out *x, uint64_t owner)
{
	struct nfs4_state *s = nfs4_st(c);
	uint8_t o[sizeof(OPEN_OWNER_PREFIX) - 1 + 8];
	pthread_mutex_lock(&s->lock);
	uint64_t clientid = s->clientid;
	pthread_mutex_unlock(&s->lock);
	memcpy(o, OPEN_OWNER_PREFIX, sizeof(OPEN_OWNER_PREFIX) - 1);
	memcpy(o + sizeof(OPEN_OWNER_PREFIX) - 1, &owner, 8);
	xdr_put_u64(x, clientid);
	xdr_put_opaque(x, o, sizeof(o));
}

/* OPEN4args (section 18.16). We ask for no delegation: we have no
 * callback channel to have one recalled through. */
static int b_open(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct open_arg *a = arg;

	nfs4_put_fh(rq, a->claim == CLAIM_NULL ? a->dir : a->fh);
	nfs4_put_op(rq, OP4_OPEN);
	xdr_put_u32(&rq->x, 0); /* seqid: ignored in 4.1 */
	xdr_put_u32(&rq->x, a->access);
	xdr_put_u32(&rq->x, 0); /* deny none */
	put_owner(c, &rq->x, a->owner);
	if (a->create) {
		struct snfs_setattr sa = {.mask = SNFS_SET_MODE,
		                          .mode = a->mode};
		xdr_put_u32(&rq->x, OPEN4_CREATE);
		xdr_put_u32(&rq->x, a->excl ? GUARDED4 : UNCHECKED4);
		nfs4_put_sattr(&rq->x, &sa);
	} else {
		xdr_put_u32(&rq->x, OPEN4_NOCREATE);
	}
	xdr_put_u32(&rq->x, a->claim);
	if (a->claim == CLAIM_NULL)
		xdr_put_string(&rq->x, a->name);
	else if (a->claim == CLAIM_PREVIOUS)
		xdr_put_u32(&rq->x, 0); /* OPEN_DELEGATE_NONE */
	nfs4_put_op(rq, OP4_GETFH);
	return 0;
}

static bool skip_ace(struct xdr_in *x)
{
	uint32_t v;
	const uint8_t *p;
	return xdr_get_u32(x, &v) && xdr_get_u32(x, &v) && xdr_get_u32(x, &v) &&
	       xdr_get_opaque_ref(x, &p, &v, 1024);
}

/* open_delegation4: we asked for none, but a server may grant one. */
static bool get_delegation(struct xdr_in *x, struct open_arg *a)
{
	uint32_t type, v;
	bool b;
	uint64_t u;
	if (!xdr_get_u32(x, &type))
		return false;
	switch (type) {
	case 0: /* OPEN_DELEGATE_NONE */
		return true;
	case 1: /* READ */
	case 2: /* WRITE */
		if (!nfs4_get_stateid(x, &a->deleg) || !xdr_get_bool(x, &b))
			return false;
		a->have_deleg = true;
		if (type == 2) {
			if (!xdr_get_u32(x, &v))
				return false;
			if (v == 1 && !xdr_get_u64(x, &u))
				return false;
			if (v == 2 &&
			    (!xdr_get_u32(x, &v) || !xdr_get_u32(x, &v)))
				return false;
			if (v != 1 && v != 2 && x->err)
				return false;
		}
		return skip_ace(x);
	case 3: /* OPEN_DELEGATE_NONE_EXT */
		if (!xdr_get_u32(x, &v))
			return false;
		if (v == 1 || v == 2) /* WND4_CONTENTION, WND4_RESOURCE */
			return xdr_get_bool(x, &b);
		return true;
	default:
		return false;
	}
}

static int p_open(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct open_arg *a = arg;
	struct nfs4_bitmap bm;
	uint32_t rflags;
	int rc;
	(void)c;
	if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0 ||
	    (rc = nfs4_expect(x, OP4_OPEN, NULL)) < 0)
		return rc;
	if (!nfs4_get_stateid(x, &a->sid) || !nfs4_skip_change_info(x) ||
	    !xdr_get_u32(x, &rflags) || !nfs4_get_bitmap(x, &bm) ||
	    !get_delegation(x, a))
		return -EPROTO;
	if ((rc = nfs4_expect(x, OP4_GETFH, NULL)) < 0)
		return rc;
	return nfs4_get_fh(x, &a->out) ? 0 : -EPROTO;
}

struct sid_arg {
	const struct snfs_fh *fh;
	struct nfs4_stateid sid;
	uint32_t op;
};

static int b_sid(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct sid_arg *a = arg;
	(void)c;
	nfs4_put_fh(rq, a->fh);
	nfs4_put_op(rq, a->op);
	if (a->op == OP4_CLOSE)
		xdr_put_u32(&rq->x, 0); /* seqid: ignored in 4.1 */
	nfs4_put_stateid(&rq->x, &a->sid);
	return 0;
}

static int p_sid(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct sid_arg *a = arg;
	int rc;
	(void)c;
	if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0 ||
	    (rc = nfs4_expect(x, a->op, NULL)) < 0)
		return rc;
	if (a->op == OP4_CLOSE && !nfs4_get_stateid(x, &a->sid))
		return -EPROTO;
	return 0;
}

static int do_open(struct snfs_ctx *c, struct open_arg *a)
{
	int rc = run(c, SNFS_OP_COMPOUND, b_open, p_open, a,
	             a->name ? strlen(a->name) : 0);
	if (rc == 0 && a->have_deleg) {
		/* hand back a delegation nobody could recall */
		struct sid_arg d = {&a->out, a->deleg, OP4_DELEGRETURN};
		run(c, SNFS_OP_COMPOUND, b_sid, p_sid, &d, 0);
	}
	return rc;
}

static uint64_t new_owner(struct nfs4_state *s)
{
	pthread_mutex_lock(&s->lock);
	uint64_t o = ++s->next_owner;
	pthread_mutex_unlock(&s->lock);
	return o;
}

static struct nfs4_open *track_open(struct nfs4_state *s,
                                    const struct snfs_fh *fh,
                                    const struct open_arg *a, bool orphan)
{
	struct nfs4_open *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->fh = *fh;
	o->sid = a->sid;
	o->access = a->access;
	o->owner = a->owner;
	o->orphan = orphan;
	pthread_mutex_lock(&s->lock);
	o->next = &s->opens;
	o->prev = s->opens.prev;
	o->prev->next = o;
	s->opens.prev = o;
	pthread_mutex_unlock(&s->lock);
	return o;
}

static void untrack_open(struct nfs4_state *s, struct nfs4_open *o)
{
	pthread_mutex_lock(&s->lock);
	o->prev->next = o->next;
	o->next->prev = o->prev;
	pthread_mutex_unlock(&s->lock);
}

static int close_open(struct snfs_ctx *c, struct nfs4_open *o)
{
	struct nfs4_state *s = nfs4_st(c);
	pthread_mutex_lock(&s->lock);
	struct sid_arg a = {&o->fh, o->sid, OP4_CLOSE};
	bool lost = o->lost;
	pthread_mutex_unlock(&s->lock);
	untrack_open(s, o);
	int rc = lost ? 0 : run(c, SNFS_OP_COMPOUND, b_sid, p_sid, &a, 0);
	free(o);
	/* a stateid the server forgot (it restarted) is closed anyway */
	if (rc == -ESTALE || rc == -EIO)
		rc = 0;
	return rc;
}

/* CREATE with OPEN (section 18.16.3): the open is kept for open_state to
 * adopt, so creating and opening costs one OPEN. */
static int nfs4_create(struct snfs_ctx *c, const struct snfs_fh *dir,
                       const char *name, uint32_t mode, bool excl,
                       struct snfs_fh *out)
{
	struct nfs4_state *s = nfs4_st(c);
	struct open_arg a = {.dir = dir,
	                     .name = name,
	                     .claim = CLAIM_NULL,
	                     .access = SHARE_BOTH,
	                     .owner = new_owner(s),
	                     .create = true,
	                     .excl = excl,
	                     .mode = mode};
	int rc = do_open(c, &a);
	if (rc < 0)
		return rc;
	*out = a.out;
	if (!track_open(s, &a.out, &a, true)) {
		struct sid_arg cl = {&a.out, a.sid, OP4_CLOSE};
		run(c, SNFS_OP_COMPOUND, b_sid, p_sid, &cl, 0);
	}
	return 0;
}

static struct nfs4_open *adopt_orphan(struct nfs4_state *s,
                                      const struct snfs_fh *fh)
{
	struct nfs4_open *found = NULL;
	pthread_mutex_lock(&s->lock);
	for (struct nfs4_open *o = s->opens.next; o != &s->opens; o = o->next)
		if (o->orphan && fh_equal(&o->fh, fh)) {
			o->orphan = false;
			found = o;
			break;
		}
	pthread_mutex_unlock(&s->lock);
	return found;
}

static int nfs4_open_state(struct snfs_ctx *c, struct snfs_file *f, int flags)
{
	struct nfs4_state *s = nfs4_st(c);
	struct pc_file *pf = snfs_file_pc(f);
	void **slot = snfs_file_state(f);
	int acc = flags & O_ACCMODE;

	*slot = NULL;
	if (pf->validator.type != SNFS_REG)
		return 0; /* directories and devices are not OPENed */
	struct nfs4_open *o = adopt_orphan(s, &pf->fh);
	if (o) {
		*slot = o;
		return 0;
	}
	struct open_arg a = {.fh = &pf->fh,
	                     .claim = CLAIM_FH,
	                     .access = acc == O_RDONLY   ? SHARE_READ
	                               : acc == O_WRONLY ? SHARE_WRITE
	                                                 : SHARE_BOTH,
	                     .owner = new_owner(s)};
	int rc = do_open(c, &a);
	if (rc < 0)
		return rc;
	o = track_open(s, &pf->fh, &a, false);
	if (!o) {
		struct sid_arg cl = {&pf->fh, a.sid, OP4_CLOSE};
		run(c, SNFS_OP_COMPOUND, b_sid, p_sid, &cl, 0);
		return -ENOMEM;
	}
	*slot = o;
	return 0;
}

static int nfs4_close_state(struct snfs_ctx *c, struct snfs_file *f)
{
	void **slot = snfs_file_state(f);
	struct nfs4_open *o = *slot;
	*slot = NULL;
	return o ? close_open(c, o) : 0;
}

/* ---- byte-range locks (RFC 8881 18.10-18.12) ----
 * A lock-owner's first LOCK on a file names the open it comes from
 * (open_to_lock_owner4); the server answers a lock stateid, which later
 * LOCKs and LOCKUs of that owner on that file use. The lock-owner on the
 * wire is the caller's (owner, pid), which the server scopes by client:
 * the pid keeps apart two processes the kernel gave one lock_owner (a
 * process's files_struct address, used again by the next one while the
 * first one's CLOSE, which ends its lock stateids, is still on its
 * way). */

enum { READ_LT = 1, WRITE_LT = 2, READW_LT = 3, WRITEW_LT = 4 };
static void file_stateid(struct snfs_ctx *c, struct snfs_file *f, bool write,
                         struct nfs4_stateid *out);
#define LOCK_GRACE_WAIT_S 120 /* a LOCK in the server's grace period */

struct lock_arg {
	const struct snfs_fh *fh;
	uint32_t op; /* OP4_LOCK, OP4_LOCKU, OP4_LOCKT */
	uint32_t type;
	uint64_t off, len;
	uint64_t clientid, owner;
	uint32_t pid;
	bool have_sid; /* the owner's lock stateid, else open's */
	struct nfs4_stateid sid;
	/* results: the new lock stateid, or the conflicting lock */
	uint32_t status;
	uint64_t doff, dlen;
	uint32_t dtype;
};

static void put_lock_owner(struct xdr_out *x, const struct lock_arg *a)
{
	uint8_t b[12];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(a->owner >> (56 - 8 * i));
	for (int i = 0; i < 4; i++)
		b[8 + i] = (uint8_t)(a->pid >> (24 - 8 * i));
	xdr_put_u64(x, a->clientid);
	xdr_put_opaque(x, b, sizeof(b));
}

static int b_lock(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct lock_arg *a = arg;
	(void)c;
	nfs4_put_fh(rq, a->fh);
	nfs4_put_op(rq, a->op);
	xdr_put_u32(&rq->x, a->type);
	if (a->op == OP4_LOCKU) {
		xdr_put_u32(&rq->x, 0); /* seqid: ignored in 4.1 */
		nfs4_put_stateid(&rq->x, &a->sid);
	} else if (a->op == OP4_LOCK) {
		xdr_put_bool(&rq->x, false); /* reclaim */
	}
	xdr_put_u64(&rq->x, a->off);
	xdr_put_u64(&rq->x, a->len);
	if (a->op == OP4_LOCKT) {
		put_lock_owner(&rq->x, a);
	} else if (a->op == OP4_LOCK) {
		xdr_put_bool(&rq->x, !a->have_sid); /* new lock-owner */
		if (a->have_sid) {
			nfs4_put_stateid(&rq->x, &a->sid);
			xdr_put_u32(&rq->x, 0);
		} else {
			xdr_put_u32(&rq->x, 0); /* open seqid */
			nfs4_put_stateid(&rq->x, &a->sid);
			xdr_put_u32(&rq->x, 0); /* lock seqid */
			put_lock_owner(&rq->x, a);
		}
	}
	return 0;
}

static int p_lock(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct lock_arg *a = arg;
	const uint8_t *p;
	uint32_t n;
	uint64_t clientid;
	int rc;
	(void)c;
	if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0)
		return rc;
	rc = nfs4_expect(x, a->op, &a->status);
	if (a->status == NFS4ERR_DENIED) {
		/* LOCK4denied: the lock in the way */
		if (!xdr_get_u64(x, &a->doff) || !xdr_get_u64(x, &a->dlen) ||
		    !xdr_get_u32(x, &a->dtype) || !xdr_get_u64(x, &clientid) ||
		    !xdr_get_opaque_ref(x, &p, &n, 1024))
			return -EPROTO;
		return -EAGAIN;
	}
	if (rc < 0)
		return rc;
	if (a->op != OP4_LOCKT && !nfs4_get_stateid(x, &a->sid))
		return -EPROTO;
	return 0;
}

/* The lock stateid of (fh, owner, pid), if we have one; pid 0: of any
 * pid (*pid says which). */
static bool lock_sid_get(struct nfs4_state *s, const struct snfs_fh *fh,
                         uint64_t owner, uint32_t *pid,
                         struct nfs4_stateid *out)
{
	bool found = false;

	pthread_mutex_lock(&s->lock);
	for (struct nfs4_lock *l = s->locks; l; l = l->next)
		if (l->owner == owner && (!*pid || l->pid == *pid) &&
		    fh_equal(&l->fh, fh)) {
			*out = l->sid;
			*pid = l->pid;
			found = true;
			break;
		}
	pthread_mutex_unlock(&s->lock);
	return found;
}

/* Remember (sid set) or forget (sid NULL) the lock stateid of (fh,
 * owner, pid). */
static void lock_sid_set(struct nfs4_state *s, const struct snfs_fh *fh,
                         uint64_t owner, uint32_t pid,
                         const struct nfs4_stateid *sid)
{
	struct nfs4_lock **pp, *l;

	pthread_mutex_lock(&s->lock);
	for (pp = &s->locks; (l = *pp); pp = &l->next)
		if (l->owner == owner && l->pid == pid && fh_equal(&l->fh, fh))
			break;
	if (l && sid) {
		l->sid = *sid;
	} else if (l) {
		*pp = l->next;
		free(l);
	} else if (sid && (l = calloc(1, sizeof(*l)))) {
		l->fh = *fh;
		l->owner = owner;
		l->pid = pid;
		l->sid = *sid;
		l->next = s->locks;
		s->locks = l;
	}
	pthread_mutex_unlock(&s->lock);
}

static uint32_t lock_type(const struct snfs_flock *l, bool blocking)
{
	if (l->type == F_WRLCK)
		return blocking ? WRITEW_LT : WRITE_LT;
	return blocking ? READW_LT : READ_LT;
}

/* One LOCK, LOCKU or LOCKT, waited out through the server's grace
 * period (LOCK is refused there, except reclaims). */
static int lock_call(struct snfs_ctx *c, struct lock_arg *a)
{
	struct timespec nap = {0, 200 * 1000 * 1000};
	int rc;

	for (int i = 0; i < LOCK_GRACE_WAIT_S * 5; i++) {
		rc = run(c, SNFS_OP_COMPOUND, b_lock, p_lock, a, 0);
		if (a->status != NFS4ERR_GRACE)
			return rc;
		nanosleep(&nap, NULL);
	}
	return rc;
}

/* A lock stateid the server no longer knows (it restarted, or the open it
 * came from was closed): the owner starts again from the open. */
static bool lock_sid_gone(uint32_t status)
{
	return status == NFS4ERR_BAD_STATEID || status == NFS4ERR_OLD_STATEID ||
	       status == NFS4ERR_STALE_STATEID || status == NFS4ERR_EXPIRED;
}

/* LOCKU of a->off, a->len for (owner, pid), or with pid 0 for each pid
 * of owner we hold a lock stateid for. A stateid the server no longer
 * knows holds nothing. */
static int unlock_all(struct snfs_ctx *c, struct lock_arg *a)
{
	struct nfs4_state *s = nfs4_st(c);
	uint32_t want = a->pid;
	int rc = 0;

	a->op = OP4_LOCKU;
	a->type = WRITE_LT;
	for (int n = 0; n < 4096; n++) {
		uint32_t pid = want;
		int r;

		if (!lock_sid_get(s, a->fh, a->owner, &pid, &a->sid))
			break;
		a->pid = pid;
		r = lock_call(c, a);
		if (r == 0 && want) {
			lock_sid_set(s, a->fh, a->owner, pid, &a->sid);
			break;
		}
		/* released (or gone): a later lock starts from an open */
		lock_sid_set(s, a->fh, a->owner, pid, NULL);
		if (r < 0 && !lock_sid_gone(a->status) && !rc)
			rc = r;
		if (want)
			break;
	}
	return rc;
}

static int nfs4_lock(struct snfs_ctx *c, struct snfs_file *f,
                     struct snfs_flock *l, bool blocking, bool test)
{
	struct nfs4_state *s = nfs4_st(c);
	const struct snfs_fh *fh = &snfs_file_pc(f)->fh;
	struct lock_arg a = {.fh = fh,
	                     .off = l->start,
	                     .len = l->len ? l->len : UINT64_MAX,
	                     .owner = l->owner,
	                     .pid = l->pid};
	int rc;

	pthread_mutex_lock(&s->lock);
	a.clientid = s->clientid;
	pthread_mutex_unlock(&s->lock);
	if (test) {
		a.op = OP4_LOCKT;
		a.type = lock_type(l, false);
		rc = lock_call(c, &a);
		if (rc == -EAGAIN) {
			l->type = a.dtype == WRITE_LT || a.dtype == WRITEW_LT
			              ? F_WRLCK
			              : F_RDLCK;
			l->start = a.doff;
			l->len = a.dlen == UINT64_MAX ? 0 : a.dlen;
			l->owner = 0;
			return 0;
		}
		if (rc == 0)
			l->type = F_UNLCK;
		return rc;
	}
	if (l->type == F_UNLCK)
		return unlock_all(c, &a);
	a.op = OP4_LOCK;
	a.type = lock_type(l, blocking);
	for (int attempt = 0; attempt < 2; attempt++) {
		a.have_sid =
		    a.pid && lock_sid_get(s, fh, l->owner, &a.pid, &a.sid);
		if (!a.have_sid)
			file_stateid(c, f, l->type == F_WRLCK, &a.sid);
		rc = lock_call(c, &a);
		if (rc == 0) {
			lock_sid_set(s, fh, l->owner, a.pid, &a.sid);
			return 0;
		}
		if (!a.have_sid || !lock_sid_gone(a.status))
			break;
		lock_sid_set(s, fh, l->owner, a.pid, NULL);
	}
	return rc;
}

void nfs4_io_stateid(struct snfs_ctx *c, const struct snfs_fh *fh, bool write,
                     struct nfs4_stateid *out)
{
	struct nfs4_state *s = nfs4_st(c);
	uint32_t need = write ? SHARE_WRITE : SHARE_READ;
	*out = anon_stateid;
	pthread_mutex_lock(&s->lock);
	for (struct nfs4_open *o = s->opens.next; o != &s->opens; o = o->next)
		if (!o->lost && (o->access & need) && fh_equal(&o->fh, fh)) {
			*out = o->sid;
			/* seqid 0: whatever the current one is (section
			 * 8.2.2), so an upgrade in flight does not matter */
			out->seqid = 0;
			break;
		}
	pthread_mutex_unlock(&s->lock);
}

/* Copy the opens that how applies to (the list may change while we call
 * the server, so we work on copies and match results back by owner). */
static size_t opens_to_reclaim(struct nfs4_state *s, enum nfs4_reclaim how,
                               struct nfs4_open **out)
{
	struct nfs4_open *v = NULL;
	size_t n = 0, cap = 0;

	for (struct nfs4_open *o = s->opens.next; o != &s->opens; o = o->next) {
		if (how == REOPEN_LOST && !o->lost)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			struct nfs4_open *nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[n++] = *o;
	}
	*out = v;
	return n;
}

int nfs4_reclaim_opens(struct snfs_ctx *c, enum nfs4_reclaim how)
{
	struct nfs4_state *s = nfs4_st(c);
	struct nfs4_open *v;

	pthread_mutex_lock(&s->lock);
	if (s->reclaiming) { /* a call of our own reclaim needed one */
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	s->reclaiming = true;
	size_t n = opens_to_reclaim(s, how, &v);
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < n; i++) {
		struct open_arg a = {.fh = &v[i].fh,
		                     .claim = how == RECLAIM_PREVIOUS
		                                  ? CLAIM_PREVIOUS
		                                  : CLAIM_FH,
		                     .access = v[i].access,
		                     .owner = v[i].owner};
		int rc = do_open(c, &a);
		pthread_mutex_lock(&s->lock);
		for (struct nfs4_open *o = s->opens.next; o != &s->opens;
		     o = o->next)
			if (o->owner == v[i].owner) {
				/* a lost open does its I/O with the anonymous
				 * stateid until it is opened again */
				o->lost = rc < 0;
				if (rc == 0)
					o->sid = a.sid;
			}
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_lock(&s->lock);
	s->reclaiming = false;
	s->open_gen++;
	pthread_mutex_unlock(&s->lock);
	free(v);
	return 0;
}

/* ---- CREATE (directories, symlinks) ---- */

struct mk_arg {
	const struct snfs_fh *dir;
	const char *name, *target;
	uint32_t mode;
	uint32_t type; /* 0: NF4DIR or NF4LNK, as target says */
	uint32_t major, minor;
};

static int b_mk(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct mk_arg *a = arg;
	(void)c;
	nfs4_put_fh(rq, a->dir);
	nfs4_put_op(rq, OP4_CREATE);
	if (a->type) {
		/* createtype4: devices carry specdata4; FIFOs and sockets
		 * nothing (nfs_ftype4 numbers match enum snfs_ftype) */
		xdr_put_u32(&rq->x, a->type);
		if (a->type == SNFS_BLK || a->type == SNFS_CHR) {
			xdr_put_u32(&rq->x, a->major);
			xdr_put_u32(&rq->x, a->minor);
		}
	} else if (a->target) {
		xdr_put_u32(&rq->x, NF4LNK);
		xdr_put_string(&rq->x, a->target);
	} else {
		xdr_put_u32(&rq->x, NF4DIR);
	}
	xdr_put_string(&rq->x, a->name);
	struct snfs_setattr sa = {
	    .mask = a->target && !a->type ? 0 : SNFS_SET_MODE, .mode = a->mode};
	nfs4_put_sattr(&rq->x, &sa);
	return 0;
}

static int p_mk(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct nfs4_bitmap bm;
	int rc;
	(void)c;
	(void)arg;
	if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0 ||
	    (rc = nfs4_expect(x, OP4_CREATE, NULL)) < 0)
		return rc;
	return nfs4_skip_change_info(x) && nfs4_get_bitmap(x, &bm) ? 0
	                                                           : -EPROTO;
}

static int nfs4_mkdir(struct snfs_ctx *c, const struct snfs_fh *dir,
                      const char *name, uint32_t mode)
{
	struct mk_arg a = {dir, name, NULL, mode, 0, 0, 0};
	return run(c, SNFS_OP_MKDIR, b_mk, p_mk, &a, strlen(name));
}

static int nfs4_symlink(struct snfs_ctx *c, const struct snfs_fh *dir,
                        const char *name, const char *target)
{
	struct mk_arg a = {dir, name, target, 0, 0, 0, 0};
	return run(c, SNFS_OP_SYMLINK, b_mk, p_mk, &a,
	           strlen(name) + strlen(target));
}

static int nfs4_mknod(struct snfs_ctx *c, const struct snfs_fh *dir,
                      const char *name, enum snfs_ftype type, uint32_t mode,
                      uint32_t rdev_major, uint32_t rdev_minor)
{
	if (type != SNFS_BLK && type != SNFS_CHR && type != SNFS_SOCK &&
	    type != SNFS_FIFO)
		return -EINVAL;
	struct mk_arg a = {dir, name, NULL, mode, type, rdev_major, rdev_minor};
	return run(c, SNFS_OP_MKNOD, b_mk, p_mk, &a, strlen(name));
}

/* ---- REMOVE: NFSv4 has one for files and directories ---- */

struct rm_arg {
	const struct snfs_fh *dir;
	const char *name;
	bool want_dir;
	bool check; /* [N]VERIFY the type first */
	uint32_t vstatus;
};

/* PUTFH LOOKUP [N]VERIFY(type DIR) PUTFH REMOVE: unlink refuses a
 * directory and rmdir a non-directory, in one compound. */
static int b_rm(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct rm_arg *a = arg;
	(void)c;
	if (a->check) {
		nfs4_put_fh(rq, a->dir);
		nfs4_put_op(rq, OP4_LOOKUP);
		xdr_put_string(&rq->x, a->name);
		nfs4_put_op(rq, a->want_dir ? OP4_VERIFY : OP4_NVERIFY);
		nfs4_put_type_fattr(&rq->x, NF4DIR);
	}
	nfs4_put_fh(rq, a->dir);
	nfs4_put_op(rq, OP4_REMOVE);
	xdr_put_string(&rq->x, a->name);
	return 0;
}

static int p_rm(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct rm_arg *a = arg;
	int rc;
	(void)c;
	if (a->check) {
		if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0 ||
		    (rc = nfs4_expect(x, OP4_LOOKUP, NULL)) < 0)
			return rc;
		rc = nfs4_expect(x, a->want_dir ? OP4_VERIFY : OP4_NVERIFY,
		                 &a->vstatus);
		if (a->vstatus == NFS4ERR_NOT_SAME)
			return -ENOTDIR;
		if (a->vstatus == NFS4ERR_SAME)
			return -EISDIR;
		if (rc < 0)
			return rc;
	}
	if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0 ||
	    (rc = nfs4_expect(x, OP4_REMOVE, NULL)) < 0)
		return rc;
	return nfs4_skip_change_info(x) ? 0 : -EPROTO;
}

static int remove_common(struct snfs_ctx *c, const struct snfs_fh *dir,
                         const char *name, bool want_dir)
{
	struct nfs4_state *s = nfs4_st(c);
	struct rm_arg a = {dir, name, want_dir, !s->no_verify, 0};
	int op = want_dir ? SNFS_OP_RMDIR : SNFS_OP_REMOVE;
	int rc = run(c, op, b_rm, p_rm, &a, strlen(name));
	if (rc == -EOPNOTSUPP && a.check) {
		/* no [N]VERIFY: look the type up on its own */
		s->no_verify = true;
		struct snfs_fh fh;
		struct snfs_stat st;
		bool have = false;
		rc = nfs4_lookup(c, dir, name, &fh, &st, &have);
		if (rc == 0 && have && (st.type == SNFS_DIR) != want_dir)
			rc = want_dir ? -ENOTDIR : -EISDIR;
		a.check = false;
		if (rc == 0)
			rc = run(c, op, b_rm, p_rm, &a, strlen(name));
	}
	return rc;
}

static int nfs4_remove(struct snfs_ctx *c, const struct snfs_fh *dir,
                       const char *name)
{
	return remove_common(c, dir, name, false);
}

static int nfs4_rmdir(struct snfs_ctx *c, const struct snfs_fh *dir,
                      const char *name)
{
	return remove_common(c, dir, name, true);
}

/* ---- RENAME, LINK: the saved handle is the source ---- */

struct two_arg {
	const struct snfs_fh *a, *b;
	const char *n1, *n2;
	uint32_t op;
};

static int b_two(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct two_arg *t = arg;
	(void)c;
	nfs4_put_fh(rq, t->a);
	nfs4_put_op(rq, OP4_SAVEFH);
	nfs4_put_fh(rq, t->b);
	nfs4_put_op(rq, t->op);
	if (t->op == OP4_RENAME)
		xdr_put_string(&rq->x, t->n1);
	xdr_put_string(&rq->x, t->n2);
	return 0;
}

static int p_two(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct two_arg *t = arg;
	int rc;
	(void)c;
	if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0 ||
	    (rc = nfs4_expect(x, OP4_SAVEFH, NULL)) < 0 ||
	    (rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0 ||
	    (rc = nfs4_expect(x, t->op, NULL)) < 0)
		return rc;
	if (!nfs4_skip_change_info(x))
		return -EPROTO;
	if (t->op == OP4_RENAME && !nfs4_skip_change_info(x))
		return -EPROTO;
	return 0;
}

static int nfs4_rename(struct snfs_ctx *c, const struct snfs_fh *fdir,
                       const char *fname, const struct snfs_fh *tdir,
                       const char *tname)
{
	struct two_arg t = {fdir, tdir, fname, tname, OP4_RENAME};
	return run(c, SNFS_OP_RENAME, b_two, p_two, &t,
	           strlen(fname) + strlen(tname));
}

static int nfs4_link(struct snfs_ctx *c, const struct snfs_fh *fh,
                     const struct snfs_fh *dir, const char *name)
{
	struct two_arg t = {fh, dir, NULL, name, OP4_LINK};
	return run(c, SNFS_OP_LINK, b_two, p_two, &t, strlen(name));
}

/* ---- READDIR ---- */

struct readdir_arg {
	const struct snfs_fh *dir;
	bool plus;
	uint64_t cookie;
	const uint8_t *verf;
	uint32_t bufsize;
	struct rd_page *page;
	uint32_t status;
};

static int b_readdir(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct readdir_arg *a = arg;
	struct nfs4_bitmap bm, dbm;
	(void)c;
	if (a->plus) {
		nfs4_bm_stat(&bm);
	} else {
		memset(&bm, 0, sizeof(bm));
		bm_set(&bm, FA4_TYPE);
		bm_set(&bm, FA4_FILEID);
	}
	bm_set(&bm, FA4_RDATTR_ERROR);
	bm_set(&bm, FA4_MOUNTED_ON_FILEID);
	nfs4_put_fh(rq, a->dir);
	nfs4_put_op(rq, OP4_READDIR);
	xdr_put_u64(&rq->x, a->cookie);
	xdr_put_fixed(&rq->x, a->verf, 8);
	xdr_put_u32(&rq->x, a->bufsize); /* dircount */
	xdr_put_u32(&rq->x, a->bufsize); /* maxcount */
	nfs4_put_bitmap(&rq->x, &bm);
	/* the directory's attributes after the read: the cache's validator */
	nfs4_bm_stat(&dbm);
	nfs4_put_getattr(rq, &dbm);
	return 0;
}

static int p_readdir(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct readdir_arg *a = arg;
	int rc;
	(void)c;
	if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0 ||
	    (rc = nfs4_expect(x, OP4_READDIR, &a->status)) < 0)
		return rc;
	rc = nfs4_decode_readdir(x, x->buf, a->plus, a->page);
	if (rc < 0)
		return rc;
	a->page->data = x->buf;
	a->page->dlen = x->len;
	if (nfs4_expect(x, OP4_GETATTR, NULL) == 0 &&
	    get_fattr(x, &a->page->dir_attr) == 0)
		a->page->have_dir_attr = true;
	return 0;
}

static int readdir_once(struct snfs_ctx *c, const struct snfs_fh *dir,
                        bool plus, uint64_t cookie, const uint8_t verf[8],
                        uint32_t bufsize, struct rd_page *page,
                        uint32_t *status)
{
	struct readdir_arg a = {dir, plus, cookie, verf, bufsize, page, 0};
	struct nfs4_call call = {.counter = plus ? SNFS_OP_READDIRPLUS
	                                         : SNFS_OP_READDIR,
	                         .build = b_readdir,
	                         .parse = p_readdir,
	                         .arg = &a};
	int rc = nfs4_call(c, &call);
	*status = a.status;
	if (rc < 0) {
		nfs4_call_done(&call);
		free(page->ents);
		page->ents = NULL;
		page->n = page->cap = 0;
		return rc;
	}
	/* The page keeps the whole reply; entry offsets point into the
	 * results part, which starts where the xdr cursor began. */
	page->buf = call.rbuf;
	call.rbuf = NULL;
	return 0;
}

/* NOT_SAME and BAD_COOKIE both come back as -SNFS_EBADCOOKIE; readdir.c
 * tries the cookie again with the directory's current verifier, and
 * restarts the listing only when that is refused too. */
static int nfs4_readdir(struct snfs_ctx *c, const struct snfs_fh *dir,
                        bool plus, uint64_t cookie, const uint8_t verf[8],
                        uint32_t bufsize, struct rd_page *page)
{
	uint32_t st = 0;
	return readdir_once(c, dir, plus, cookie, verf, bufsize, page, &st);
}

/* ---- statvfs ---- */

static int nfs4_statvfs(struct snfs_ctx *c, const struct snfs_fh *fh,
                        struct snfs_statvfs *sv)
{
	struct nfs4_fattr fa;
	struct fh_arg a = {.fh = fh, .fa = &fa};
	nfs4_bm_statvfs(&a.bm);
	int rc = run(c, SNFS_OP_FSSTAT, b_getattr, p_getattr, &a, 0);
	if (rc < 0)
		return rc;
	sv->tbytes = fa.space_total;
	sv->fbytes = fa.space_free;
	sv->abytes = fa.space_avail;
	sv->tfiles = fa.files_total;
	sv->ffiles = fa.files_free;
	sv->afiles = fa.files_avail;
	return 0;
}

/* ---- 4.2: SEEK, ALLOCATE, DEALLOCATE, COPY ---- */

/* Our OPEN's stateid for f (SEEK on some servers needs one). */
static void file_stateid(struct snfs_ctx *c, struct snfs_file *f, bool write,
                         struct nfs4_stateid *out)
{
	struct nfs4_state *s = nfs4_st(c);
	struct nfs4_open *o = *snfs_file_state(f);
	if (!o) {
		nfs4_io_stateid(c, &snfs_file_pc(f)->fh, write, out);
		return;
	}
	pthread_mutex_lock(&s->lock);
	*out = o->lost ? anon_stateid : o->sid;
	if (!o->lost)
		out->seqid = 0;
	pthread_mutex_unlock(&s->lock);
}

struct v42_arg {
	struct snfs_file *f, *dst;
	uint32_t op;
	uint64_t off, len, doff;
	bool data;
	/* results */
	bool eof;
	uint64_t result;
	int committed;
	bool async;
};

static int b_v42(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct v42_arg *a = arg;
	struct nfs4_stateid sid, dsid;

	file_stateid(c, a->f, a->op != OP4_SEEK && a->op != OP4_COPY, &sid);
	nfs4_put_fh(rq, &snfs_file_pc(a->f)->fh);
	if (a->op == OP4_COPY) {
		/* section 15.2: SAVED_FH the source, CURRENT_FH the target */
		file_stateid(c, a->dst, true, &dsid);
		nfs4_put_op(rq, OP4_SAVEFH);
		nfs4_put_fh(rq, &snfs_file_pc(a->dst)->fh);
		nfs4_put_op(rq, OP4_COPY);
		nfs4_put_stateid(&rq->x, &sid);
		nfs4_put_stateid(&rq->x, &dsid);
		xdr_put_u64(&rq->x, a->off);
		xdr_put_u64(&rq->x, a->doff);
		xdr_put_u64(&rq->x, a->len);
		xdr_put_bool(&rq->x, true); /* consecutive */
		xdr_put_bool(&rq->x, true); /* synchronous */
		xdr_put_u32(&rq->x, 0);     /* no source servers: intra */
		return 0;
	}
	nfs4_put_op(rq, a->op);
	nfs4_put_stateid(&rq->x, &sid);
	xdr_put_u64(&rq->x, a->off);
	if (a->op == OP4_SEEK)
		xdr_put_u32(&rq->x, a->data ? CONTENT_DATA : CONTENT_HOLE);
	else
		xdr_put_u64(&rq->x, a->len);
	return 0;
}

static int p_v42(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct v42_arg *a = arg;
	int rc;
	(void)c;
	if ((rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0)
		return rc;
	if (a->op == OP4_COPY) {
		uint32_t n, committed;
		struct nfs4_stateid cb;
		uint8_t verf[8];
		bool b;
		if ((rc = nfs4_expect(x, OP4_SAVEFH, NULL)) < 0 ||
		    (rc = nfs4_expect(x, OP4_PUTFH, NULL)) < 0 ||
		    (rc = nfs4_expect(x, OP4_COPY, NULL)) < 0)
			return rc;
		if (!xdr_get_u32(x, &n) || n > 1)
			return -EPROTO;
		if (n && !nfs4_get_stateid(x, &cb))
			return -EPROTO;
		if (!xdr_get_u64(x, &a->result) ||
		    !xdr_get_u32(x, &committed) || !xdr_get_fixed(x, verf, 8) ||
		    !xdr_get_bool(x, &b) || !xdr_get_bool(x, &b))
			return -EPROTO;
		a->async = n != 0;
		a->committed = (int)committed;
		return 0;
	}
	if ((rc = nfs4_expect(x, a->op, NULL)) < 0)
		return rc;
	if (a->op == OP4_SEEK &&
	    (!xdr_get_bool(x, &a->eof) || !xdr_get_u64(x, &a->result)))
		return -EPROTO;
	return 0;
}

static int64_t nfs4_seek(struct snfs_ctx *c, struct snfs_file *f, uint64_t off,
                         bool data)
{
	if (nfs4_st(c)->minor < 2)
		return -EOPNOTSUPP;
	struct v42_arg a = {.f = f, .op = OP4_SEEK, .off = off, .data = data};
	int rc = run(c, SNFS_OP_SEEK, b_v42, p_v42, &a, 0);
	if (rc < 0)
		return rc;
	/* RFC 7862 section 15.11.3: no data past off is NFS4_OK with
	 * sr_eof set (ganesha) or NFS4ERR_NXIO (Linux); lseek says ENXIO. */
	if (data && a.eof)
		return -ENXIO;
	uint64_t size = pc_size(snfs_file_pc(f));
	if (!data && (a.eof || a.result < off) && a.result < size)
		a.result = size > off ? size : off; /* the hole at the end */
	if (a.result > INT64_MAX)
		return -EPROTO;
	return (int64_t)a.result;
}

static int space(struct snfs_ctx *c, struct snfs_file *f, uint64_t off,
                 uint64_t len, bool alloc)
{
	if (nfs4_st(c)->minor < 2)
		return -EOPNOTSUPP;
	struct v42_arg a = {.f = f,
	                    .op = alloc ? OP4_ALLOCATE : OP4_DEALLOCATE,
	                    .off = off,
	                    .len = len};
	return run(c, alloc ? SNFS_OP_ALLOCATE : SNFS_OP_DEALLOCATE, b_v42,
	           p_v42, &a, 0);
}

static int nfs4_allocate(struct snfs_ctx *c, struct snfs_file *f, uint64_t off,
                         uint64_t len)
{
	return space(c, f, off, len, true);
}

static int nfs4_deallocate(struct snfs_ctx *c, struct snfs_file *f,
                           uint64_t off, uint64_t len)
{
	return space(c, f, off, len, false);
}

/* After a server-side change to a file, what we cached of it is stale. */
static void invalidate(struct snfs_ctx *c, struct snfs_file *f)
{
	struct pc_file *pf = snfs_file_pc(f);
	struct snfs_stat st;
	if (nfs4_getattr(c, &pf->fh, &st) == 0) {
		pthread_mutex_lock(&pf->lock);
		pf->have_validator = false;
		pthread_mutex_unlock(&pf->lock);
		pc_file_validate(pf, &st);
	}
}

static int64_t nfs4_copy(struct snfs_ctx *c, struct snfs_file *src,
                         uint64_t soff, struct snfs_file *dst, uint64_t doff,
                         uint64_t len)
{
	struct nfs4_state *s = nfs4_st(c);
	uint64_t done = 0;

	if (s->minor < 2 || __atomic_load_n(&s->no_copy, __ATOMIC_RELAXED))
		return -EOPNOTSUPP;
	bool uncommitted = false;
	while (done < len) {
		struct v42_arg a = {.f = src,
		                    .dst = dst,
		                    .op = OP4_COPY,
		                    .off = soff + done,
		                    .doff = doff + done,
		                    .len = len - done};
		int rc = run(c, SNFS_OP_COPY, b_v42, p_v42, &a, 0);
		if (rc == -EOPNOTSUPP && done == 0) {
			__atomic_store_n(&s->no_copy, true, __ATOMIC_RELAXED);
			return rc;
		}
		if (rc < 0)
			return done ? (int64_t)done : rc;
		if (a.async) /* we asked for a synchronous copy */
			return done ? (int64_t)done : -EOPNOTSUPP;
		if (a.result == 0)
			break; /* the source ended */
		if (a.result > len - done)
			a.result = len - done;
		done += a.result;
		if (a.committed != SNFS_FILE_SYNC)
			uncommitted = true;
	}
	if (uncommitted) {
		uint8_t verf[8];
		int rc =
		    nfs4_commit(c, &snfs_file_pc(dst)->fh, verf, NULL, NULL);
		if (rc < 0)
			return rc;
	}
	invalidate(c, dst);
	return (int64_t)done;
}

/* ---- mount ---- */

/* The export: walk the URL path from the pseudo root; the deepest point
 * where the fsid changes is where an export is joined (RFC 8881 section
 * 7.7). Components past the last one found are left to the caller. */
#define WALK_MAX 12

struct walk_arg {
	const struct snfs_fh *start; /* NULL: PUTROOTFH */
	const char *const *names;
	uint32_t n;
	uint64_t start_fsid;
	uint32_t done;
	struct snfs_fh fh[WALK_MAX];
	uint64_t fsid[WALK_MAX];
	uint32_t type[WALK_MAX];
	struct snfs_fh start_fh;
};

static void walk_bitmap(struct nfs4_bitmap *b)
{
	memset(b, 0, sizeof(*b));
	bm_set(b, FA4_TYPE);
	bm_set(b, FA4_FSID);
}

static int b_walk(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	struct walk_arg *a = arg;
	struct nfs4_bitmap bm;
	(void)c;
	walk_bitmap(&bm);
	if (a->start)
		nfs4_put_fh(rq, a->start);
	else
		nfs4_put_op(rq, OP4_PUTROOTFH);
	nfs4_put_op(rq, OP4_GETFH);
	nfs4_put_getattr(rq, &bm);
	for (uint32_t i = 0; i < a->n; i++) {
		nfs4_put_op(rq, OP4_LOOKUP);
		xdr_put_string(&rq->x, a->names[i]);
		nfs4_put_op(rq, OP4_GETFH);
		nfs4_put_getattr(rq, &bm);
	}
	return 0;
}

static int p_walk(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	struct walk_arg *a = arg;
	struct snfs_stat st = {0};
	int rc;
	(void)c;
	rc = nfs4_expect(x, a->start ? OP4_PUTFH : OP4_PUTROOTFH, NULL);
	if (rc == 0)
		rc = nfs4_expect(x, OP4_GETFH, NULL);
	if (rc == 0 && !nfs4_get_fh(x, &a->start_fh))
		rc = -EPROTO;
	if (rc == 0)
		rc = nfs4_expect(x, OP4_GETATTR, NULL);
	if (rc == 0)
		rc = get_fattr(x, &st);
	if (rc < 0)
		return rc;
	a->start_fsid = st.fsid;
	for (uint32_t i = 0; i < a->n; i++) {
		if (nfs4_expect(x, OP4_LOOKUP, NULL) < 0)
			break;
		if ((rc = nfs4_expect(x, OP4_GETFH, NULL)) < 0 ||
		    !nfs4_get_fh(x, &a->fh[i]) ||
		    (rc = nfs4_expect(x, OP4_GETATTR, NULL)) < 0 ||
		    (rc = get_fattr(x, &st)) < 0)
			return rc < 0 ? rc : -EPROTO;
		a->fsid[i] = st.fsid;
		a->type[i] = st.type;
		a->done = i + 1;
	}
	return 0;
}

static int split_path(const char *path, char ***out, uint32_t *n)
{
	char *dup = strdup(path), *save = NULL;
	char **v = NULL;
	uint32_t k = 0;
	if (!dup)
		return -ENOMEM;
	for (char *t = strtok_r(dup, "/", &save); t;
	     t = strtok_r(NULL, "/", &save)) {
		if (!strcmp(t, ".") || strlen(t) > NFS4_NAME_MAX)
			continue;
		char **nv = realloc(v, (k + 1) * sizeof(*v));
		if (!nv)
			goto nomem;
		v = nv;
		if (!(v[k] = strdup(t)))
			goto nomem;
		k++;
	}
	free(dup);
	*out = v;
	*n = k;
	return 0;
nomem:
	for (uint32_t i = 0; i < k; i++)
		free(v[i]);
	free(v);
	free(dup);
	return -ENOMEM;
}

static int find_export(struct snfs_ctx *c)
{
	struct nfs4_state *s = nfs4_st(c);
	char **names;
	uint32_t n, found = 0, export_at = 0;
	struct snfs_fh cur, export_fh;
	uint64_t fsid = 0;
	int rc = split_path(c->url.path, &names, &n);
	if (rc < 0)
		return rc;
	uint32_t per = s->max_ops > 6 ? (s->max_ops - 4) / 3 : 1;
	if (per > WALK_MAX)
		per = WALK_MAX;
	bool first = true, stopped = false;
	while (rc == 0 && !stopped && (first || found < n)) {
		struct walk_arg a = {.start = first ? NULL : &cur,
		                     .names =
		                         (const char *const *)names + found,
		                     .n = n - found < per ? n - found : per};
		rc = run(c, SNFS_OP_LOOKUP, b_walk, p_walk, &a, 0);
		if (rc < 0)
			break;
		if (first) {
			fsid = a.start_fsid;
			export_fh = a.start_fh;
			first = false;
		}
		for (uint32_t i = 0; i < a.done; i++) {
			if (a.fsid[i] != fsid) {
				export_at = found + i + 1;
				export_fh = a.fh[i];
			}
			fsid = a.fsid[i];
			cur = a.fh[i];
		}
		found += a.done;
		if (a.done < a.n || (a.done && a.type[a.done - 1] != SNFS_DIR))
			stopped = true;
	}
	if (rc == 0) {
		/* "/a/b" of the export, and what follows it */
		size_t el = 1, rl = 1;
		for (uint32_t i = 0; i < n; i++)
			*(i < export_at ? &el : &rl) += strlen(names[i]) + 1;
		c->export = calloc(1, el + 1);
		c->url_path = calloc(1, rl + 1);
		if (!c->export || !c->url_path) {
			rc = -ENOMEM;
		} else {
			strcpy(c->export, export_at ? "" : "/");
			for (uint32_t i = 0; i < n; i++) {
				char *d =
				    i < export_at ? c->export : c->url_path;
				if (i < export_at)
					strcat(d, "/");
				else if (d[0])
					strcat(d, "/");
				strcat(d, names[i]);
			}
			c->root = export_fh;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

/* The server's limits and lease, from the export root. */
static void read_limits(struct snfs_ctx *c)
{
	struct nfs4_fattr fa;
	struct fh_arg a = {.fh = &c->root, .fa = &fa};
	memset(&a.bm, 0, sizeof(a.bm));
	bm_set(&a.bm, FA4_LEASE_TIME);
	bm_set(&a.bm, FA4_MAXREAD);
	bm_set(&a.bm, FA4_MAXWRITE);
	if (run(c, SNFS_OP_GETATTR, b_getattr, p_getattr, &a, 0) < 0)
		return;
	if (fa.maxread >= 4096 && c->rsize > fa.maxread)
		c->rsize = (uint32_t)fa.maxread;
	if (fa.maxwrite >= 4096 && c->wsize > fa.maxwrite)
		c->wsize = (uint32_t)fa.maxwrite;
	if (fa.lease_time) {
		struct nfs4_state *s = nfs4_st(c);
		pthread_mutex_lock(&s->lock);
		s->lease_s = fa.lease_time;
		pthread_cond_signal(&s->renew_cond); /* a shorter period */
		pthread_mutex_unlock(&s->lock);
	}
}

static void nfs4_umount(struct snfs_ctx *c)
{
	struct nfs4_state *s = nfs4_st(c);
	if (!s)
		return;
	/* files the caller left open: close them on the server */
	for (;;) {
		pthread_mutex_lock(&s->lock);
		struct nfs4_open *o =
		    s->opens.next != &s->opens ? s->opens.next : NULL;
		pthread_mutex_unlock(&s->lock);
		if (!o)
			break;
		close_open(c, o);
	}
	nfs4_session_destroy(c);
}

static int nfs4_mount(struct snfs_ctx *c)
{
	uint16_t port = c->url.nfsport ? c->url.nfsport : c->url.port;
	if (!port)
		port = 2049; /* NFSv4 needs no portmapper (RFC 8881 2.9.3) */
	c->rpc_cfg.port = port;
	c->rpc_cfg.stats = &c->stats;
	int rc = rpc_clnt_open(&c->rpc_cfg, &c->rpc);
	if (rc < 0)
		return snfs_fail(rc, "%s port %u: %s", c->url.host, port,
		                 strerror(-rc));
	rc = nfs4_session_init(c);
	if (rc == 0) {
		rc = find_export(c);
		if (rc < 0)
			snfs_fail(rc, "%s: %s", c->url.path, strerror(-rc));
	} else if (rc != -EPROTONOSUPPORT) {
		snfs_fail(rc, "%s: NFSv4.%d session: %s", c->url.host,
		          c->version == SNFS_V41 ? 1 : 2, strerror(-rc));
	}
	if (rc == 0)
		read_limits(c);
	if (rc < 0)
		nfs4_umount(c);
	return rc;
}

const struct snfs_proto_ops snfs_nfs4_ops = {
    .name = "nfs4",
    .mount = nfs4_mount,
    .umount = nfs4_umount,
    .getattr = nfs4_getattr,
    .setattr = nfs4_setattr,
    .lookup = nfs4_lookup,
    .readlink = nfs4_readlink,
    .read_start = nfs4_read_start,
    .read_finish = nfs4_read_finish,
    .write_vec_start = nfs4_write_vec_start,
    .write_vec_finish = nfs4_write_vec_finish,
    .write_start = nfs4_write_start,
    .write_finish = nfs4_write_finish,
    .commit = nfs4_commit,
    .create = nfs4_create,
    .mkdir = nfs4_mkdir,
    .symlink = nfs4_symlink,
    .remove = nfs4_remove,
    .rmdir = nfs4_rmdir,
    .rename = nfs4_rename,
    .link = nfs4_link,
    .readdir = nfs4_readdir,
    .statvfs = nfs4_statvfs,
    .open_state = nfs4_open_state,
    .close_state = nfs4_close_state,
    .seek = nfs4_seek,
    .allocate = nfs4_allocate,
    .deallocate = nfs4_deallocate,
    .copy = nfs4_copy,
    .read_segments = nfs4_read_segments,
    .read_pieces = nfs4_read_pieces,
    .mknod = nfs4_mknod,
    .lock = nfs4_lock,
};
