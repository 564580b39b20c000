/* NFSv4.2 operations (RFC 7862): READ_PLUS, SEEK, ALLOCATE, DEALLOCATE,
 * COPY (intra-server, synchronous) and CLONE. Holes and data come from
 * the backend's hole map (never lseek here); space and copy operations are
 * the backend's optional entries, NOTSUPP where it has none. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>

#include "server/nfs4/nfs4.h"
#include "server/readio.h"
#include "server/snfsd.h"

enum { CONTENT_DATA = 0, CONTENT_HOLE = 1 };
#define SEG_HDR 20    /* type, offset, and a length or data count */
#define MAX_SEGS 4096 /* per READ_PLUS reply */
#define MAX_EXT 512   /* extents asked of the backend at a time */
#define ZERO_BLOCK 4096u
/* Data runs separated by holes up to this long are read by one backend
 * call (read_pieces): a 4 KiB-alternating file would cost a call (an
 * fd-cache lookup, a permission check) per 4 KiB otherwise, which made
 * READ_PLUS 2x slower than READ on it (measured, mixed-4d). The backend
 * reads cached pieces one by one and skips the holes; uncached ones by
 * one preadv, the holes' bytes into scratch, so longer holes would cost
 * copies there. 64 KiB against 16 KiB: mixed-32d 1 GiB warm 0.214 s
 * against 0.224 s (medians of 10, snfs cat). */
#define GAP_MAX (64u << 10)
/* The most of a file one READ_PLUS covers, holes included, however
 * large its count: bounds the hole map walk of one call. */
#define RP_RANGE_MAX (16u << 20)
#define BATCH_MAX 1024 /* pieces per read_pieces call */

/* A regular file on a writable or readable export, with its stateid. */
/* The attributes of the current file: through the backend's cached I/O
 * fd where it has one (an open by handle per READ_PLUS cost three system
 * calls of about ten per reply); anything else, and any failure, by
 * handle, which tells the errors apart. */
static int io_getattr(const struct nfs4_fh *fh, struct bk_attr *a)
{
	const struct bk_ops *ops = fh->ex->ops;

	if (ops->io_getattr && ops->io_getattr(fh->ex->bk, &fh->bh, a) == 0)
		return 0;
	return ops->getattr(fh->ex->bk, &fh->bh, a);
}

static uint32_t io_prologue(struct nfs4_compound *c, struct nfs4_stateid *sid,
                            int mode, struct bk_attr *a)
{
	uint32_t st = nfs4_need_export(c);
	int rc;

	if (!st && mode == STID_WRITE)
		st = nfs4_need_write(c);
	if (st)
		return st;
	rc = io_getattr(&c->cfh, a);
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

/* ---- READ_PLUS (RFC 7862 15.10) ----
 *
 * The reply lists the range as DATA and HOLE segments from the backend's
 * hole map, every hole in it as a hole, except holes shorter than the
 * export's readplus_min_hole, which go as zeros inside the neighbouring
 * DATA segment (a tiny hole costs the client more as a segment than as
 * bytes). With detect_zeroes, blocks of zeros read from allocated space
 * become holes too. DATA is opaque<> with a 32-bit length (15.10.2; the
 * 2020 Wireshark expected 64 bits). Segment headers after the first are
 * charged to count: a Linux client lays the segments out in count bytes
 * of pages, so a reply may not carry more. */

struct rp_state {
	struct nfs4_compound *c;
	uint64_t end; /* the range is [off, end) */
	uint64_t pos; /* covered so far */
	size_t room;  /* data and later headers still allowed */
	uint32_t nseg;
	uint32_t min_hole;
	bool zeroes;   /* detect_zeroes */
	bool no_holes; /* the range is too short for a hole to pay */
	bool sized;    /* the reply has room for the rest of it */
	bool full;     /* no more room: stop */
	/* the last hole put: its offset, where its length went in the
	 * reply, its segment number and where it really ends */
	uint64_t hole_off, hole_end;
	size_t hole_len_at;
	uint32_t hole_seg;
	bool inplace;  /* the reply holds this file for its file parts */
	uint64_t size; /* the file's, when the op began */
	uint64_t want; /* bytes of the file the call covers: end - off */
};

/* Charge one more segment header; false when it does not fit. */
static bool rp_charge_hdr(struct rp_state *r)
{
	if (r->nseg >= MAX_SEGS) {
		r->full = true;
		return false;
	}
	if (r->nseg == 0)
		return true; /* the first is in the op's overhead */
	if (r->room < SEG_HDR + 4) {
		r->full = true;
		return false;
	}
	r->room -= SEG_HDR;
	return true;
}

/* A hole of len bytes at off, which really goes on to real_end. */
static void rp_put_hole(struct rp_state *r, uint64_t off, uint64_t len,
                        uint64_t real_end)
{
	if (!rp_charge_hdr(r))
		return;
	xdr_put_u32(r->c->res, CONTENT_HOLE);
	xdr_put_u64(r->c->res, off);
	r->hole_len_at = r->c->res->len;
	xdr_put_u64(r->c->res, len);
	r->nseg++;
	r->pos = off + len;
	r->hole_off = off;
	r->hole_end = real_end;
	r->hole_seg = r->nseg;
}

/* A range ending in a hole that goes on past it (15.10.3 lets a hole
 * segment extend past the range asked for): the whole hole, so a client
 * reading on learns it needs no calls for the rest of it. The Linux
 * client cuts the segment to its range. */
static void rp_extend_hole(struct rp_state *r)
{
	uint64_t len = r->hole_end - r->hole_off;

	if (r->hole_seg == 0 || r->hole_seg != r->nseg || r->pos != r->end ||
	    r->hole_end <= r->end)
		return;
	xdr_patch_u32(r->c->res, r->hole_len_at, (uint32_t)(len >> 32));
	xdr_patch_u32(r->c->res, r->hole_len_at + 4, (uint32_t)len);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* The first run of whole zero blocks of at least min bytes in the data
 * p[0, n) read at file offset off, blocks aligned in the file; false when
 * there is none. *zs, *ze: the run, as offsets into p. */
static bool find_zero_run(const uint8_t *p, size_t n, uint64_t off, size_t min,
                          size_t *zs, size_t *ze)
{
	size_t b = (size_t)((ZERO_BLOCK - off % ZERO_BLOCK) % ZERO_BLOCK);
	size_t run = 0;

	for (; b + ZERO_BLOCK <= n; b += ZERO_BLOCK) {
		if (all_zero(p + b, ZERO_BLOCK)) {
			if (run == 0)
				*zs = b;
			run += ZERO_BLOCK;
			continue;
		}
		if (run >= min) {
			*ze = b;
			return true;
		}
		run = 0;
	}
	if (run >= min) {
		*ze = *zs + run;
		return true;
	}
	return false;
}

/* detect_zeroes: the DATA segment whose header is at hdr (its n bytes
 * follow) is rewritten in place as DATA/HOLE segments, moving data toward
 * the front; each hole replaces at least a block by a header, so the
 * writer never overtakes the reader. Returns the new encoded end. */
static size_t rp_split_zeroes(struct rp_state *r, size_t hdr, uint64_t off,
                              size_t n)
{
	struct xdr_out *x = r->c->res;
	size_t min = r->min_hole > ZERO_BLOCK ? r->min_hole : ZERO_BLOCK;
	size_t src = 0, w = hdr, zs, ze;
	uint8_t *data = x->buf + hdr + 16;
	bool first = true;

	while (src < n && r->nseg + 2 < MAX_SEGS &&
	       find_zero_run(data + src, n - src, off + src, min, &zs, &ze)) {
		if (zs > 0) { /* the data before the zeros */
			if (!first)
				r->nseg++;
			xdr_patch_u32(x, w, CONTENT_DATA);
			xdr_patch_u32(x, w + 4, (uint32_t)((off + src) >> 32));
			xdr_patch_u32(x, w + 8, (uint32_t)(off + src));
			xdr_patch_u32(x, w + 12, (uint32_t)zs);
			memmove(x->buf + w + 16, data + src, zs);
			/* the padding lands on zeros already read */
			memset(x->buf + w + 16 + zs, 0, xdr_pad(zs));
			w += 16 + zs + xdr_pad(zs);
			first = false;
		}
		if (!first)
			r->nseg++;
		first = false;
		xdr_patch_u32(x, w, CONTENT_HOLE);
		xdr_patch_u32(x, w + 4, (uint32_t)((off + src + zs) >> 32));
		xdr_patch_u32(x, w + 8, (uint32_t)(off + src + zs));
		xdr_patch_u32(x, w + 12, (uint32_t)((uint64_t)(ze - zs) >> 32));
		xdr_patch_u32(x, w + 16, (uint32_t)(ze - zs));
		w += SEG_HDR;
		src += ze;
	}
	if (w == hdr)
		return hdr + 16 + n + xdr_pad(n); /* nothing found */
	if (src < n) {
		r->nseg++;
		xdr_patch_u32(x, w, CONTENT_DATA);
		xdr_patch_u32(x, w + 4, (uint32_t)((off + src) >> 32));
		xdr_patch_u32(x, w + 8, (uint32_t)(off + src));
		xdr_patch_u32(x, w + 12, (uint32_t)(n - src));
		memmove(x->buf + w + 16, data + src, n - src);
		w += 16 + (n - src);
		memset(x->buf + w, 0, xdr_pad(n - src));
		w += xdr_pad(n - src);
	}
	return w;
}

/* How a data piece of len bytes goes out (readio.h): the call's range
 * decides whether it may be mapped; detect_zeroes reads every piece (its
 * zeros are looked for in the reply's buffer). */
static enum srv_inplace rp_how(const struct rp_state *r, uint64_t len)
{
	const struct nfs4_fh *fh = &r->c->cfh;

	if (r->zeroes || !(r->inplace || xdr_out_may_take_file(r->c->res)))
		return SRV_COPY;
	return srv_inplace_how(fh->ex, fh->rule, r->want, len);
}

/* Whether the data piece at off, len bytes, goes out in place. */
static bool rp_big(const struct rp_state *r, uint64_t len)
{
	return rp_how(r, len) != SRV_COPY;
}

/* A DATA segment's bytes as a file part (readio.h): the first one takes
 * the file, later ones reuse it, up to the size the op started with (a
 * file shrunk since sends zeros, as a read racing a truncate may see).
 * Returns the bytes put, 0 at EOF, -EAGAIN when not in place (the
 * caller reads), or -errno. */
static ssize_t rp_put_inplace(struct rp_state *r, uint64_t off, uint64_t len)
{
	struct nfs4_compound *c = r->c;
	enum srv_inplace how = rp_how(r, len);
	size_t n;
	bool eof;
	int rc;

	if (how == SRV_COPY)
		return -EAGAIN;
	if (r->inplace) {
		if (off >= r->size)
			return 0;
		n = r->size - off < len ? (size_t)(r->size - off) : (size_t)len;
		return xdr_put_file_as(c->res, off, n, how == SRV_MAPPED)
		           ? (ssize_t)n
		           : -ENOMEM;
	}
	rc = srv_read_inplace_as(c->res, c->cfh.ex, &c->cfh.cred, &c->cfh.bh,
	                         off, (size_t)len, how, &n, &eof, NULL);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return -EAGAIN;
	r->inplace = n > 0;
	/* more pieces may follow this one: the range at once, not each
	 * piece as sendfile or the mapping's faults get to it (bounded by
	 * the reply's room, which a sparse range's holes may far exceed) */
	if (r->end - off > len)
		srv_inplace_prefetch(c->res, off,
		                     r->end - off < r->room + len
		                         ? r->end - off
		                         : r->room + len);
	return (ssize_t)n;
}

/* Room in the reply, once, for everything the rest of the range can
 * still put from off on (data and headers are bounded by room, a range
 * wider than that by its holes): no later segment moves (copies) the
 * reply. */
static bool rp_size_reply(struct rp_state *r, uint64_t off)
{
	uint64_t rest = r->end - off;

	if (r->sized)
		return true;
	r->sized = true;
	if (rest > r->room + SEG_HDR)
		rest = r->room + SEG_HDR;
	return xdr_out_ensure(r->c->res, (size_t)rest + 64);
}

/* One DATA segment of up to len bytes read straight into the reply.
 * Returns the bytes read (0 at a concurrent truncation) or -errno. */
static ssize_t rp_put_data(struct rp_state *r, uint64_t off, uint64_t len)
{
	struct nfs4_compound *c = r->c;
	struct xdr_out *x = c->res;
	size_t start = x->len, data;
	bool eof = false;
	uint8_t *p;
	ssize_t n;

	if (!rp_charge_hdr(r))
		return 0;
	if (len > r->room) {
		len = r->room & ~(uint64_t)3;
		r->full = true;
	}
	xdr_put_u32(x, CONTENT_DATA);
	xdr_put_u64(x, off);
	xdr_put_u32(x, 0);
	data = x->len;
	n = rp_put_inplace(r, off, len);
	if (n > 0) {
		xdr_patch_u32(x, data - 4, (uint32_t)n);
		r->nseg++;
		r->room -= (size_t)n;
		r->pos = off + (uint64_t)n;
		return n;
	}
	if (n < 0 && n != -EAGAIN) {
		xdr_out_truncate(x, start);
		return n;
	}
	if (!rp_size_reply(r, off))
		return -ENOMEM;
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
	r->nseg++;
	r->room -= (size_t)n;
	r->pos = off + (uint64_t)n;
	if (r->zeroes)
		xdr_out_truncate(x, rp_split_zeroes(r, start, off, (size_t)n));
	return n;
}

struct rp_piece {
	uint64_t off, len;
	bool hole;
	size_t at; /* data: where its bytes go in the reply */
};

/* The pieces (data runs and the small holes between them, the first and
 * last data) encoded at once, the data read by one backend call straight
 * into its place in the reply. Returns 0, 1 when the file came up short
 * (the caller encodes piece by piece, which copes), or -errno. */
static int rp_put_batch(struct rp_state *r, struct rp_piece *pc, int n)
{
	struct nfs4_compound *c = r->c;
	struct xdr_out *x = c->res;
	struct rp_state saved = *r;
	size_t start = x->len, total = 0;
	struct bk_piece bp[BATCH_MAX];
	int k, nb = 0;

	if (!rp_size_reply(r, pc[0].off))
		return -ENOMEM;
	for (k = 0; k < n && !r->full; k++) {
		if (!rp_charge_hdr(r))
			break;
		if (pc[k].hole) {
			xdr_put_u32(x, CONTENT_HOLE);
			xdr_put_u64(x, pc[k].off);
			xdr_put_u64(x, pc[k].len);
		} else {
			if (pc[k].len > r->room) {
				pc[k].len = r->room & ~(uint64_t)3;
				r->full = true;
			}
			xdr_put_u32(x, CONTENT_DATA);
			xdr_put_u64(x, pc[k].off);
			xdr_put_u32(x, (uint32_t)pc[k].len);
			pc[k].at = x->len;
			size_t padded = (size_t)pc[k].len + xdr_pad(pc[k].len);
			if (!xdr_put_reserve(x, padded))
				return -ENOMEM;
			r->room -= (size_t)pc[k].len;
			total += (size_t)pc[k].len;
		}
		r->nseg++;
		r->pos = pc[k].off + pc[k].len;
	}
	/* The reply buffer moves no more: pointers into it hold now. */
	for (int i = 0; i < k; i++)
		if (!pc[i].hole)
			bp[nb++] = (struct bk_piece){.off = pc[i].off,
			                             .buf = x->buf + pc[i].at,
			                             .len = (size_t)pc[i].len};
	bool eof = false;
	ssize_t got =
	    nb ? c->cfh.ex->ops->read_pieces(c->cfh.ex->bk, &c->cfh.cred,
	                                     &c->cfh.bh, bp, nb, &eof)
	       : 0;
	if (got < 0 || (size_t)got < total) {
		xdr_out_truncate(x, start);
		*r = saved;
		return got < 0 ? (int)got : 1;
	}
	for (int i = 0; i < k; i++)
		if (!pc[i].hole)
			memset(x->buf + pc[i].at + pc[i].len, 0,
			       xdr_pad(pc[i].len));
	return 0;
}

/* Encode the pieces: runs of small ones read by one read_pieces each, big
 * data pieces in place. Returns as rp_put_batch. */
static int rp_flush(struct rp_state *r, struct rp_piece *pc, int np)
{
	int i = 0, rc = 0;

	while (i < np && rc == 0 && !r->full) {
		int j = i;
		ssize_t got;

		while (j < np && (pc[j].hole || !rp_big(r, pc[j].len)))
			j++;
		if (j > i)
			rc = rp_put_batch(r, pc + i, j - i);
		if (rc != 0 || j == np || r->full)
			break;
		got = rp_put_data(r, pc[j].off, pc[j].len);
		if (got < 0)
			return (int)got;
		if ((uint64_t)got < pc[j].len)
			return r->full ? 0 : 1;
		i = j + 1;
	}
	return rc;
}

/* Cut the extents (holes under readplus_min_hole already data: backend.h)
 * into pieces for rp_put_batch, a batch ended by a hole longer than
 * GAP_MAX, which is encoded on its own. */
static int rp_batch_some(struct rp_state *r, const struct bk_extent *ext, int n)
{
	struct rp_piece pc[BATCH_MAX];
	int np = 0, rc = 0;

	for (int i = 0; i < n && !r->full && rc == 0; i++) {
		uint64_t s = ext[i].off > r->pos ? ext[i].off : r->pos;
		uint64_t e = ext[i].off + ext[i].len < r->end
		                 ? ext[i].off + ext[i].len
		                 : r->end;
		if (s >= e)
			continue;
		if (ext[i].hole && (np == 0 || e - s > GAP_MAX)) {
			if (np)
				rc = rp_flush(r, pc, np);
			np = 0;
			if (rc == 0 && !r->full)
				rp_put_hole(r, s, e - s,
				            ext[i].off + ext[i].len);
			continue;
		}
		pc[np++] = (struct rp_piece){
		    .off = s, .len = e - s, .hole = ext[i].hole};
		if (np == BATCH_MAX) {
			rc = rp_flush(r, pc, np);
			np = 0;
		}
	}
	if (np && rc == 0 && !r->full)
		rc = rp_flush(r, pc, np);
	return rc;
}

/* Encode the segments for up to MAX_EXT extents from r->pos on. Returns
 * 0, 1 when the file ended early (shrunk), or -errno. */
static int rp_encode_some(struct rp_state *r)
{
	const struct nfs4_fh *fh = &r->c->cfh;
	struct bk_extent ext[MAX_EXT];
	int n = 0, rc;

	if (fh->ex->ops->extents && !r->no_holes) {
		rc = fh->ex->ops->extents(fh->ex->bk, &fh->cred, &fh->bh,
		                          r->pos, r->end - r->pos, r->min_hole,
		                          ext, MAX_EXT, &n);
		if (rc)
			return rc;
	} else { /* no map: all data */
		ext[0] =
		    (struct bk_extent){.off = r->pos, .len = r->end - r->pos};
		n = 1;
	}
	if (n == 0)
		return 1;
	if (fh->ex->ops->read_pieces && !r->zeroes) {
		rc = rp_batch_some(r, ext, n);
		if (rc != 1)
			return rc;
		/* the file came up short: piece by piece finds where */
	}
	for (int i = 0; i < n && !r->full; i++) {
		uint64_t s = ext[i].off > r->pos ? ext[i].off : r->pos;
		uint64_t e = ext[i].off + ext[i].len;

		if (e > r->end)
			e = r->end;
		if (s >= e)
			continue;
		if (ext[i].hole) {
			rp_put_hole(r, s, e - s, ext[i].off + ext[i].len);
			continue;
		}
		ssize_t got = rp_put_data(r, s, e - s);
		if (got < 0)
			return (int)got;
		if ((uint64_t)got < e - s)
			return r->full ? 0 : 1; /* short: EOF moved */
	}
	return 0;
}

/* The export's readplus_min_hole, or unset, the one for this client
 * (exports.h): for a Linux kernel client whose pages of data go by
 * sendfile here, wider (zeros cost the server nothing to send). And
 * where sendfile pays only from a larger piece (zerocopy=auto on a real
 * CPU) and smaller pieces would be copied one by one (no_mapped), no
 * hole shorter than that piece: copying them costs more there than
 * sending the run with its holes as zeros by sendfile, as READ does, and
 * READ_PLUS must not be slower than READ (bench/results/stop29: 4 and 8
 * KiB holes as holes 1.25-1.5x the READ time on a 2-CPU VM host, as
 * zeros within its noise). From a kept mapping (the mapped option) they
 * cost less, and holes from 8 KiB go as holes
 * (EXP_READPLUS_MIN_HOLE_MAPPED). */
#define RP_HOLES_FROM 4 /* a range shorter than this goes as DATA */
#define RP_MIN_HOLE_FROM_MAX (64u << 10) /* larger: holes too dear as zeros */
static uint32_t rp_min_hole(const struct rp_state *r)
{
	const struct nfs4_compound *c = r->c;
	uint32_t v = c->cfh.rule ? c->cfh.rule->readplus_min_hole
	                         : EXP_READPLUS_MIN_HOLE_AUTO;
	uint64_t from;

	if (v != EXP_READPLUS_MIN_HOLE_AUTO)
		return v;
	if (!c->client_linux)
		v = EXP_READPLUS_MIN_HOLE_DEFAULT;
	else if (rp_how(r, EXP_READPLUS_MIN_HOLE_LINUX) == SRV_SENDFILE)
		v = EXP_READPLUS_MIN_HOLE_LINUX_ZC;
	else
		v = EXP_READPLUS_MIN_HOLE_LINUX;
	/* Pieces under the sendfile size copied one by one cost more than
	 * the holes between them sent as zeros, by sendfile, in one run;
	 * from a mapping (all in one sendmsg) they cost less, but for the
	 * smallest. */
	from = srv_sendfile_from(c->cfh.rule);
	if (from <= v || from > RP_MIN_HOLE_FROM_MAX ||
	    rp_how(r, from) != SRV_SENDFILE)
		return v;
	if (rp_how(r, v) == SRV_COPY)
		return (uint32_t)from;
	return v < EXP_READPLUS_MIN_HOLE_MAPPED ? EXP_READPLUS_MIN_HOLE_MAPPED
	                                        : v;
}

static uint32_t read_plus(struct nfs4_compound *c, struct nfs4_stateid *sid,
                          uint64_t off, uint32_t count)
{
	struct bk_attr a;
	struct rp_state r = {.c = c};
	uint32_t st;
	uint64_t range;
	size_t eofpos, cntpos;
	int rc = 0;

	st = io_prologue(c, sid, STID_READ, &a);
	if (st)
		return st;
	/* count bounds the range; the reply's data and headers stay within
	 * maxread and the session's reply size (room). A client may so ask
	 * for more of a sparse file than maxread in one call. */
	r.room = nfs4_io_room(c, count, 64 + SEG_HDR);
	range = count < RP_RANGE_MAX ? count : RP_RANGE_MAX;
	if (range < r.room)
		range = r.room;
	r.end =
	    off < a.size ? (a.size - off > range ? off + range : a.size) : off;
	r.pos = off;
	r.want = r.end - off;
	r.size = a.size;
	r.zeroes = c->cfh.rule && (c->cfh.rule->flags & EXP_DETECT_ZEROES);
	r.min_hole = rp_min_hole(&r);
	/* Under 4 bytes, zeros as DATA (at most 20 bytes with the header)
	 * are no longer than a HOLE segment (20), and the Linux 6.12 client
	 * fails such calls with EIO when the reply holds a hole (found by
	 * tests/interop/fsrand: O_DIRECT reads of 1-3 bytes in a hole, and
	 * the 1-3 byte calls it sends for the rest of a reply cut short). */
	r.no_holes = r.want < RP_HOLES_FROM;
	eofpos = c->res->len;
	xdr_put_bool(c->res, false);
	cntpos = c->res->len;
	xdr_put_u32(c->res, 0);
	while (r.pos < r.end && !r.full && rc == 0)
		rc = rp_encode_some(&r);
	if (rc < 0) {
		xdr_out_truncate(c->res, eofpos);
		return nfs4_errno(rc);
	}
	xdr_patch_u32(c->res, cntpos, r.nseg);
	xdr_patch_u32(c->res, eofpos, r.pos >= a.size);
	rp_extend_hole(&r);
	return NFS4_OK;
}

/* One backend scope for the op: its attributes, hole map and data are
 * one look at the file (one fstat, not three: backend.h io_scope). */
uint32_t nfs4_op_read_plus(struct nfs4_compound *c)
{
	struct nfs4_stateid sid;
	const struct bk_ops *ops = NULL;
	uint64_t off;
	uint32_t count, st;

	if (!nfs4_get_stateid(c->args, &sid) || !xdr_get_u64(c->args, &off) ||
	    !xdr_get_u32(c->args, &count))
		return NFS4ERR_BADXDR;
	if (nfs4_need_export(c) == NFS4_OK && c->cfh.ex->ops->io_scope)
		ops = c->cfh.ex->ops;
	if (ops)
		ops->io_scope(c->cfh.ex->bk, true);
	st = read_plus(c, &sid, off, count);
	if (ops)
		ops->io_scope(c->cfh.ex->bk, false);
	return st;
}

/* SEEK (RFC 7862 15.11) from the hole map: NXIO at or past EOF; no data
 * after the offset is sr_eof true with the offset of EOF; the implied
 * hole at EOF is always there. */
uint32_t nfs4_op_seek(struct nfs4_compound *c)
{
	const struct bk_ops *ops;
	struct nfs4_stateid sid;
	struct bk_extent ext[8];
	struct bk_attr a;
	uint64_t off, pos, found;
	uint32_t what, st;
	int n, rc;

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
	ops = c->cfh.ex->ops;
	found = what == CONTENT_DATA ? off : a.size; /* no map: all data */
	for (pos = off; ops->extents && pos < a.size;) {
		rc = ops->extents(c->cfh.ex->bk, &c->cfh.cred, &c->cfh.bh, pos,
		                  a.size - pos, 0, ext, 8, &n);
		if (rc)
			return nfs4_errno(rc);
		if (n == 0) {
			found = a.size; /* shrunk under us */
			break;
		}
		for (int i = 0; i < n; i++) {
			if (ext[i].hole == (what == CONTENT_HOLE)) {
				found = ext[i].off > off ? ext[i].off : off;
				goto done;
			}
		}
		found = a.size;
		pos = ext[n - 1].off + ext[n - 1].len;
	}
done:
	xdr_put_bool(c->res, found >= a.size);
	xdr_put_u64(c->res,
	            found >= a.size && what == CONTENT_DATA ? a.size : found);
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
