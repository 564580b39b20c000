/* NFSv3 data procedures: READ, WRITE, COMMIT (RFC 1813 sections 3.3.6,
 * 3.3.7, 3.3.21). */
#include <errno.h>
#include <string.h>

#include "server/exports.h"
#include "server/nfs3/nfs3_proc.h"
#include "server/nfs4/share.h"
#include "server/readio.h"
#include "server/snfsd.h"

/* READ and WRITE act on regular files only: ISDIR for a directory, INVAL
 * for anything else (RFC 1813 sections 3.3.6, 3.3.7). */
static uint32_t regular_file(const struct bk_attr *a)
{
	if (a->type == BK_REG)
		return NFS3_OK;
	return a->type == BK_DIR ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
}

/* Bytes of READ3resok before the data: post_op_attr (always with
 * attributes here), count, eof, the opaque's length. */
#define READ_HDR (NFS3_POST_OP_ATTR_SIZE + 4 + 4 + 4)

static void be32_at(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* Write READ3resok's header, reserved at hdr_pos, for n bytes. */
static void put_read_hdr(struct nfs_req *r, struct xdr_out *res, size_t hdr_pos,
                         const struct bk_attr *after, size_t n, bool eof)
{
	uint8_t *hdr = res->buf + hdr_pos;

	be32_at(hdr, 1); /* attributes_follow */
	nfs3_fattr_bytes(hdr + 4, after, r->ex->fsid);
	be32_at(hdr + NFS3_POST_OP_ATTR_SIZE, (uint32_t)n);
	be32_at(hdr + NFS3_POST_OP_ATTR_SIZE + 4, eof ? 1 : 0);
	be32_at(hdr + NFS3_POST_OP_ATTR_SIZE + 8, (uint32_t)n);
}

/* Encode READ3resok with the data in place (readio.h) or read straight
 * into the reply buffer: the header is reserved, the data put after it,
 * then the header is written and the buffer cut to the bytes actually
 * read. The attributes go before the data but are taken after the read,
 * so their region has a fixed size. In place, they are the file's as
 * the reply is made. With before NULL the backend's read_attr reads and
 * takes them from its open fd in one go; otherwise a getattr follows the
 * read (before stands in if it fails). */
static uint32_t read_into_reply(struct nfs_req *r, struct xdr_out *res,
                                uint64_t off, uint32_t count,
                                const struct bk_attr *before)
{
	size_t start = res->len, room, hdr_pos, got;
	struct bk_attr after;
	uint8_t *data;
	bool eof = false;
	ssize_t n;
	int rc;

	room = res->limit > res->len + 4 + READ_HDR + 4
	           ? res->limit - res->len - 4 - READ_HDR - 4
	           : 0;
	if (count > room)
		count = (uint32_t)(room & ~(size_t)3);
	xdr_put_u32(res, NFS3_OK);
	hdr_pos = res->len;
	if (!xdr_put_reserve(res, READ_HDR)) {
		xdr_out_truncate(res, start);
		return NFS3ERR_SERVERFAULT;
	}
	rc = srv_read_inplace(res, r->ex, r->rule, &r->cred, &r->bh, off, count,
	                      &got, &eof, &after);
	if (rc != 0) {
		if (rc < 0) {
			xdr_out_truncate(res, start);
			return nfs3_stat_from_errno(rc);
		}
		put_read_hdr(r, res, hdr_pos, &after, got, eof);
		return NFS3_OK;
	}
	if (!xdr_out_ensure(res, (size_t)count + 4) ||
	    !(data = xdr_put_reserve(res, count))) {
		xdr_out_truncate(res, start);
		return NFS3ERR_SERVERFAULT;
	}
	if (before)
		n = r->ex->ops->read(r->ex->bk, &r->cred, &r->bh, data, count,
		                     off, &eof);
	else
		n = r->ex->ops->read_attr(r->ex->bk, &r->cred, &r->bh, data,
		                          count, off, &eof, &after);
	if (n < 0 || (size_t)n > count) {
		xdr_out_truncate(res, start);
		return n < 0 ? nfs3_stat_from_errno((int)n)
		             : NFS3ERR_SERVERFAULT;
	}
	if (before && nfs3_getattr(r, &r->bh, &after) != 0)
		after = *before;
	/* RFC 1813 section 3.3.6: eof when the read reached the end. */
	if (off + (uint64_t)n >= after.size)
		eof = true;
	put_read_hdr(r, res, hdr_pos, &after, (size_t)n, eof);
	xdr_out_truncate(res, (size_t)(data - res->buf) + (size_t)n +
	                          xdr_pad((size_t)n));
	memset(data + n, 0, xdr_pad((size_t)n));
	return NFS3_OK;
}

/* READ of a resolved handle no OPEN denies reading, without the getattr
 * by handle before and after the read: the backend checks the type as it
 * opens (ISDIR, INVAL) and takes the post-op attributes from its open fd.
 * A failure is then answered as the full path would: a getattr error or
 * the wrong type first, with the attributes in the reply. */
static uint32_t read_fast(struct nfs_req *r, struct xdr_out *res, uint64_t off,
                          uint32_t count, struct bk_attr *a, bool *have_attr)
{
	uint32_t st = read_into_reply(r, res, off, count, NULL);
	int rc;

	if (st == NFS3_OK)
		return st;
	rc = nfs3_getattr(r, &r->bh, a);
	if (rc != 0)
		return nfs3_stat_from_errno(rc);
	*have_attr = true;
	return regular_file(a) != NFS3_OK ? regular_file(a) : st;
}

int nfs3_proc_read(struct rpc_call *call, struct xdr_out *res)
{
	struct nfs3_fh fh;
	struct nfs_req r;
	struct bk_attr a;
	uint64_t off;
	uint32_t count, st;
	bool have_attr = false;

	if (!nfs3_get_fh(&call->args, &fh) || !xdr_get_u64(&call->args, &off) ||
	    !xdr_get_u32(&call->args, &count))
		return nfs3_garbage(call, "READ");
	if (count > NFS3_MAX_IO)
		count = NFS3_MAX_IO; /* the client may ask more than rtmax */
	st = nfs3_resolve(call, &fh, &r);
	if (st == NFS3_OK && r.ex->ops->read_attr &&
	    !nfs4_share_check(r.srv, r.ex, &r.bh, false)) {
		st = read_fast(&r, res, off, count, &a, &have_attr);
	} else {
		if (st == NFS3_OK) {
			st = nfs3_stat_from_errno(nfs3_getattr(&r, &r.bh, &a));
			have_attr = st == NFS3_OK;
		}
		if (st == NFS3_OK)
			st = regular_file(&a);
		/* No stateid: an NFSv4 OPEN denying reads stops us (RFC
		 * 7530 9.1.4.3, as for the anonymous stateid). */
		if (st == NFS3_OK &&
		    nfs4_share_check(r.srv, r.ex, &r.bh, false))
			st = NFS3ERR_ACCES;
		if (st == NFS3_OK)
			st = read_into_reply(&r, res, off, count, &a);
	}
	if (st != NFS3_OK) {
		xdr_put_u32(res, st);
		nfs3_put_post_op_attr(res, have_attr ? &a : NULL,
		                      have_attr ? r.ex->fsid : 0);
	}
	nfs_req_done(&r);
	return nfs3_done(res);
}

static enum bk_stable write_stability(const struct nfs_req *r, uint32_t how)
{
	/* The export option "sync" makes every write stable (exports(5)). */
	if (how == BK_UNSTABLE && r->rule && (r->rule->flags & EXP_SYNC))
		return BK_FILE_SYNC;
	return (enum bk_stable)how;
}

/* RFC 1813 section 3.3.7 */
int nfs3_proc_write(struct rpc_call *call, struct xdr_out *res)
{
	struct snfsd *s = call->ctx;
	enum bk_stable committed = BK_UNSTABLE;
	struct nfs3_wcc w = {0};
	const uint8_t *data;
	struct nfs3_fh fh;
	struct nfs_req r;
	struct bk_attr a;
	uint32_t count, how, len, st;
	uint64_t off;
	ssize_t n = 0;

	if (!nfs3_get_fh(&call->args, &fh) || !xdr_get_u64(&call->args, &off) ||
	    !xdr_get_u32(&call->args, &count) ||
	    !xdr_get_u32(&call->args, &how) ||
	    !xdr_get_opaque_ref(&call->args, &data, &len, UINT32_MAX) ||
	    how > BK_FILE_SYNC || len != count)
		return nfs3_garbage(call, "WRITE");
	st = nfs3_resolve(call, &fh, &r);
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(nfs3_getattr(&r, &r.bh, &a));
	if (st == NFS3_OK) {
		w.have_pre = true;
		nfs3_wcc_from_attr(&a, &w.pre);
		st = regular_file(&a);
	}
	if (st == NFS3_OK && !r.rw)
		st = NFS3ERR_ROFS;
	if (st == NFS3_OK && nfs4_share_check(r.srv, r.ex, &r.bh, true))
		st = NFS3ERR_ACCES;
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(nfs4_deleg_break(r.srv, r.ex, &r.bh));
	if (st == NFS3_OK && count > NFS3_MAX_IO)
		st = NFS3ERR_INVAL; /* more than wtmax */
	if (st == NFS3_OK && off > (uint64_t)INT64_MAX - count)
		st = NFS3ERR_FBIG;
	if (st == NFS3_OK) {
		n = r.ex->ops->write(r.ex->bk, &r.cred, &r.bh, data, count, off,
		                     write_stability(&r, how), &committed);
		if (n < 0)
			st = nfs3_stat_from_errno((int)n);
	}
	if (nfs3_resolved(&r))
		nfs3_wcc_post(&r, &r.bh, &w);
	xdr_put_u32(res, st);
	nfs3_put_wcc_data(res, &r, &w);
	if (st == NFS3_OK) {
		xdr_put_u32(res, (uint32_t)n);
		xdr_put_u32(res, (uint32_t)committed);
		xdr_put_fixed(res, s->write_verf, sizeof(s->write_verf));
	}
	nfs_req_done(&r);
	return nfs3_done(res);
}

/* RFC 1813 section 3.3.21: the verifier lets the client see a restart
 * that lost its unstable writes. */
int nfs3_proc_commit(struct rpc_call *call, struct xdr_out *res)
{
	struct snfsd *s = call->ctx;
	struct nfs3_wcc w = {0};
	struct nfs3_fh fh;
	struct nfs_req r;
	struct bk_attr a;
	uint64_t off;
	uint32_t count, st;

	if (!nfs3_get_fh(&call->args, &fh) || !xdr_get_u64(&call->args, &off) ||
	    !xdr_get_u32(&call->args, &count))
		return nfs3_garbage(call, "COMMIT");
	st = nfs3_resolve(call, &fh, &r);
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(nfs3_getattr(&r, &r.bh, &a));
	if (st == NFS3_OK) {
		w.have_pre = true;
		nfs3_wcc_from_attr(&a, &w.pre);
		st = regular_file(&a);
	}
	if (st == NFS3_OK && !r.rw)
		st = NFS3ERR_ROFS;
	if (st == NFS3_OK && off > UINT64_MAX - count)
		st = NFS3ERR_INVAL;
	if (st == NFS3_OK && export_commit_flushes(r.rule))
		st = nfs3_stat_from_errno(
		    r.ex->ops->commit(r.ex->bk, &r.bh, off, count));
	if (nfs3_resolved(&r))
		nfs3_wcc_post(&r, &r.bh, &w);
	xdr_put_u32(res, st);
	nfs3_put_wcc_data(res, &r, &w);
	if (st == NFS3_OK)
		xdr_put_fixed(res, s->write_verf, sizeof(s->write_verf));
	nfs_req_done(&r);
	return nfs3_done(res);
}
