/* NFSv4.2 operations (RFC 7862): READ_PLUS, SEEK, ALLOCATE, DEALLOCATE,
 * COPY (intra-server, synchronous) and CLONE. Holes and data come from
 * the backend's seek (never lseek here); space and copy operations are
 * the backend's optional entries, NOTSUPP where it has none. */
#include <errno.h>
#include <string.h>

#include "server/nfs4/nfs4.h"
#include "server/snfsd.h"

enum { CONTENT_DATA = 0, CONTENT_HOLE = 1 };
#define SEG_HDR 20    /* type, offset, and a length or data count */
#define MAX_SEGS 4096 /* per READ_PLUS reply */
#define FREE_HDRS 16  /* headers not charged to the data budget */

/* A regular file on a writable or readable export, with its stateid. */
static uint32_t io_prologue(struct nfs4_compound *c, struct nfs4_stateid *sid,
                            int mode, struct bk_attr *a)
{
	uint32_t st = nfs4_need_export(c);
	int rc;

	if (!st && mode == STID_WRITE)
		st = nfs4_need_write(c);
	if (st)
		return st;
	rc = c->cfh.ex->ops->getattr(c->cfh.ex->bk, &c->cfh.bh, a);
	if (rc)
		return nfs4_errno(rc);
	if (a->type == BK_DIR)
		return NFS4ERR_ISDIR;
	if (a->type != BK_REG)
		return NFS4ERR_WRONG_TYPE;
	st = nfs4_resolve_stateid(c, sid);
	if (!st)
		st = nfs4_check_io_stateid(c, sid, mode);
	return st;
}

/* Where the next data (or hole) at or after off begins; the file's size
 * when there is none (a hole always ends at EOF, RFC 7862 4.2). */
static uint64_t next_extent(struct nfs4_compound *c, uint64_t off, bool data,
                            uint64_t size)
{
	const struct bk_ops *ops = c->cfh.ex->ops;
	uint64_t found;
	bool eof;

	if (!ops->seek)
		return data ? off : size; /* no map: all data */
	if (ops->seek(c->cfh.ex->bk, &c->cfh.bh, off, data, &found, &eof))
		return size;
	return found < size ? found : size;
}

static void put_hole(struct xdr_out *x, uint64_t off, uint64_t len)
{
	xdr_put_u32(x, CONTENT_HOLE);
	xdr_put_u64(x, off);
	xdr_put_u64(x, len);
}

/* One data segment of up to len bytes read at off. Returns the bytes
 * read (0 at a concurrent truncation) or -errno. */
static ssize_t put_data(struct nfs4_compound *c, uint64_t off, uint64_t len)
{
	struct xdr_out *x = c->res;
	size_t start = x->len, data;
	bool eof = false;
	uint8_t *p;
	ssize_t n;

	xdr_put_u32(x, CONTENT_DATA);
	xdr_put_u64(x, off);
	xdr_put_u32(x, 0);
	data = x->len;
	p = xdr_put_reserve(x, (size_t)len);
	if (!p)
		return -ENOMEM;
	n = c->cfh.ex->ops->read(c->cfh.ex->bk, &c->cfh.cred, &c->cfh.bh, p,
	                         (size_t)len, off, &eof);
	if (n <= 0) {
		xdr_out_truncate(x, start);
		return n;
	}
	if ((uint64_t)n > len)
		n = (ssize_t)len;
	memset(x->buf + data + n, 0, xdr_pad((size_t)n));
	xdr_out_truncate(x, data + (size_t)n + xdr_pad((size_t)n));
	xdr_patch_u32(x, data - 4, (uint32_t)n);
	return n;
}

/* READ_PLUS (RFC 7862 15.10): the range as DATA and HOLE segments, every
 * hole in it encoded as a hole. Data bytes are bounded by count (and the
 * session's reply size); holes cost only their header. */
uint32_t nfs4_op_read_plus(struct nfs4_compound *c)
{
	struct nfs4_stateid sid;
	struct bk_attr a;
	uint64_t off, end, pos;
	uint32_t count, st, nseg = 0;
	size_t eofpos, cntpos, budget;
	bool full = false;

	if (!nfs4_get_stateid(c->args, &sid) || !xdr_get_u64(c->args, &off) ||
	    !xdr_get_u32(c->args, &count))
		return NFS4ERR_BADXDR;
	st = io_prologue(c, &sid, STID_READ, &a);
	if (st)
		return st;
	/* The range is [off, off + count) as far as the reply has room;
	 * the first segment headers have room of their own, later ones
	 * come out of the data budget. */
	budget = nfs4_io_room(c, count, 64 + FREE_HDRS * SEG_HDR);
	end = off < a.size ? (a.size - off > budget ? off + budget : a.size)
	                   : off;
	eofpos = c->res->len;
	xdr_put_bool(c->res, false);
	cntpos = c->res->len;
	xdr_put_u32(c->res, 0);
	for (pos = off; pos < end && !full; nseg++) {
		uint64_t d = next_extent(c, pos, true, a.size), len;
		ssize_t n;

		if (nseg >= FREE_HDRS) {
			if (nseg >= MAX_SEGS || budget < SEG_HDR + 4)
				break;
			budget -= SEG_HDR;
		}
		if (d > pos) {
			len = (d < end ? d : end) - pos;
			put_hole(c->res, pos, len);
			pos += len;
			continue;
		}
		len = next_extent(c, pos, false, a.size);
		len = (len < end ? len : end) - pos;
		if (len > budget) {
			len = budget & ~(uint64_t)3;
			full = true;
		}
		n = put_data(c, pos, len);
		if (n < 0) {
			xdr_out_truncate(c->res, eofpos);
			return nfs4_errno((int)n);
		}
		if (n == 0)
			break; /* truncated under us: stop here */
		budget -= (size_t)n;
		pos += (uint64_t)n;
	}
	xdr_patch_u32(c->res, cntpos, nseg);
	xdr_patch_u32(c->res, eofpos, pos >= a.size);
	return NFS4_OK;
}

/* SEEK (RFC 7862 15.11): NXIO at or past EOF; no data after the offset is
 * sr_eof true. */
uint32_t nfs4_op_seek(struct nfs4_compound *c)
{
	struct nfs4_stateid sid;
	struct bk_attr a;
	uint64_t off, found;
	uint32_t what, st;
	bool eof = false;
	int rc;

	if (!nfs4_get_stateid(c->args, &sid) || !xdr_get_u64(c->args, &off) ||
	    !xdr_get_u32(c->args, &what))
		return NFS4ERR_BADXDR;
	if (what != CONTENT_DATA && what != CONTENT_HOLE)
		return NFS4ERR_UNION_NOTSUPP;
	st = io_prologue(c, &sid, STID_READ, &a);
	if (st)
		return st;
	if (off >= a.size)
		return NFS4ERR_NXIO;
	if (!c->cfh.ex->ops->seek) {
		found = what == CONTENT_DATA ? off : a.size;
		eof = what == CONTENT_HOLE;
	} else {
		rc = c->cfh.ex->ops->seek(c->cfh.ex->bk, &c->cfh.bh, off,
		                          what == CONTENT_DATA, &found, &eof);
		if (rc == -ENXIO) {
			/* No data after off: the implied hole at EOF. */
			found = a.size;
			eof = true;
		} else if (rc) {
			return nfs4_errno(rc);
		}
	}
	xdr_put_bool(c->res, eof);
	xdr_put_u64(c->res, found);
	return NFS4_OK;
}

static uint32_t space_op(struct nfs4_compound *c, bool punch)
{
	struct nfs4_stateid sid;
	struct bk_attr a;
	uint64_t off, len;
	uint32_t st;
	int rc;

	if (!nfs4_get_stateid(c->args, &sid) || !xdr_get_u64(c->args, &off) ||
	    !xdr_get_u64(c->args, &len))
		return NFS4ERR_BADXDR;
	if ((punch ? c->cfh.ex && !c->cfh.ex->ops->punch
	           : c->cfh.ex && !c->cfh.ex->ops->allocate) &&
	    c->cfh.kind == FH4_EXPORT)
		return NFS4ERR_NOTSUPP;
	st = io_prologue(c, &sid, STID_WRITE, &a);
	if (st)
		return st;
	if (len == 0 || len > UINT64_MAX - off)
		return NFS4ERR_INVAL;
	rc = punch ? c->cfh.ex->ops->punch(c->cfh.ex->bk, &c->cfh.cred,
	                                   &c->cfh.bh, off, len)
	           : c->cfh.ex->ops->allocate(c->cfh.ex->bk, &c->cfh.cred,
	                                      &c->cfh.bh, off, len);
	return nfs4_errno(rc);
}

uint32_t nfs4_op_allocate(struct nfs4_compound *c)
{
	return space_op(c, false);
}

uint32_t nfs4_op_deallocate(struct nfs4_compound *c)
{
	return space_op(c, true);
}

/* The source of COPY/CLONE is the saved fh: check its stateid there. */
static uint32_t check_source(struct nfs4_compound *c, struct nfs4_stateid *sid,
                             struct bk_attr *a)
{
	struct nfs4_fh cur = c->cfh;
	struct nfs4_stateid cur_sid = c->cur_sid;
	uint32_t st;

	if (c->sfh.kind != FH4_EXPORT)
		return c->sfh.kind == FH4_NONE ? NFS4ERR_NOFILEHANDLE
		                               : NFS4ERR_ISDIR;
	if (c->sfh.ex != c->cfh.ex)
		return NFS4ERR_XDEV;
	c->cfh = c->sfh;
	c->cur_sid = c->saved_sid;
	st = io_prologue(c, sid, STID_READ, a);
	c->cfh = cur;
	c->cur_sid = cur_sid;
	return st;
}

static bool skip_netlocs(struct xdr_in *x, uint32_t *n)
{
	uint32_t type, len;
	const uint8_t *p;

	if (!xdr_get_u32(x, n) || *n > 16)
		return false;
	for (uint32_t i = 0; i < *n; i++) {
		if (!xdr_get_u32(x, &type))
			return false;
		if (type == 1 || type == 2) { /* NL4_NAME, NL4_URL */
			if (!xdr_get_opaque_ref(x, &p, &len, 4096))
				return false;
		} else if (type == 3) { /* NL4_NETADDR */
			if (!xdr_get_opaque_ref(x, &p, &len, 4096) ||
			    !xdr_get_opaque_ref(x, &p, &len, 4096))
				return false;
		} else {
			return false;
		}
	}
	return true;
}

/* COPY (RFC 7862 15.2): saved fh to current fh, synchronously, in the
 * server; count 0 is "to the end of the source". */
uint32_t nfs4_op_copy(struct nfs4_compound *c)
{
	struct nfs4_stateid ssid, dsid;
	struct bk_attr sa, da;
	uint64_t soff, doff, count;
	bool consecutive, synchronous;
	uint32_t nloc, st;
	ssize_t n;

	if (!nfs4_get_stateid(c->args, &ssid) ||
	    !nfs4_get_stateid(c->args, &dsid) || !xdr_get_u64(c->args, &soff) ||
	    !xdr_get_u64(c->args, &doff) || !xdr_get_u64(c->args, &count) ||
	    !xdr_get_bool(c->args, &consecutive) ||
	    !xdr_get_bool(c->args, &synchronous) ||
	    !skip_netlocs(c->args, &nloc))
		return NFS4ERR_BADXDR;
	if (nloc) /* inter-server copy */
		return NFS4ERR_NOTSUPP;
	if (c->cfh.kind == FH4_EXPORT && !c->cfh.ex->ops->copy)
		return NFS4ERR_NOTSUPP;
	st = check_source(c, &ssid, &sa);
	if (!st)
		st = io_prologue(c, &dsid, STID_WRITE, &da);
	if (st)
		return st;
	if (soff > sa.size || (count && count > sa.size - soff))
		return NFS4ERR_INVAL;
	if (count == 0)
		count = sa.size - soff;
	if (doff > UINT64_MAX - count)
		return NFS4ERR_INVAL;
	n = count
	        ? c->cfh.ex->ops->copy(c->cfh.ex->bk, &c->cfh.cred, &c->sfh.bh,
	                               soff, &c->cfh.bh, doff, count)
	        : 0;
	if (n < 0)
		return nfs4_errno((int)n);
	xdr_put_u32(c->res, 0); /* no callback id: done synchronously */
	xdr_put_u64(c->res, (uint64_t)n);
	xdr_put_u32(c->res, BK_UNSTABLE);
	xdr_put_fixed(c->res, c->srv->write_verf, 8);
	xdr_put_bool(c->res, true); /* cr_consecutive */
	xdr_put_bool(c->res, true); /* cr_synchronous */
	return NFS4_OK;
}

/* CLONE (RFC 7862 15.13): shared blocks, or NOTSUPP. */
uint32_t nfs4_op_clone(struct nfs4_compound *c)
{
	struct nfs4_stateid ssid, dsid;
	struct bk_attr sa, da;
	uint64_t soff, doff, count;
	uint32_t st;
	int rc;

	if (!nfs4_get_stateid(c->args, &ssid) ||
	    !nfs4_get_stateid(c->args, &dsid) || !xdr_get_u64(c->args, &soff) ||
	    !xdr_get_u64(c->args, &doff) || !xdr_get_u64(c->args, &count))
		return NFS4ERR_BADXDR;
	if (c->cfh.kind == FH4_EXPORT && !c->cfh.ex->ops->clone)
		return NFS4ERR_NOTSUPP;
	st = check_source(c, &ssid, &sa);
	if (!st)
		st = io_prologue(c, &dsid, STID_WRITE, &da);
	if (st)
		return st;
	if (soff > sa.size || (count && count > sa.size - soff))
		return NFS4ERR_INVAL;
	rc = c->cfh.ex->ops->clone(c->cfh.ex->bk, &c->cfh.cred, &c->sfh.bh,
	                           soff, &c->cfh.bh, doff, count);
	if (rc == -EOPNOTSUPP || rc == -ENOTTY)
		return NFS4ERR_NOTSUPP;
	return nfs4_errno(rc);
}
