/* NFSv4.1/4.2 client codecs (see nfs4_xdr.h). */
#include "client/nfs4_xdr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/idcache.h"

#define NOBODY 65534
#define OWNER_MAX 1024

void nfs4_bm_stat(struct nfs4_bitmap *b)
{
	static const unsigned bits[] = {
	    FA4_TYPE,          FA4_CHANGE,     FA4_SIZE,       FA4_FSID,
	    FA4_FILEID,        FA4_MODE,       FA4_NUMLINKS,   FA4_OWNER,
	    FA4_OWNER_GROUP,   FA4_RAWDEV,     FA4_SPACE_USED, FA4_TIME_ACCESS,
	    FA4_TIME_METADATA, FA4_TIME_MODIFY};
	memset(b, 0, sizeof(*b));
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		bm_set(b, bits[i]);
}

void nfs4_bm_statvfs(struct nfs4_bitmap *b)
{
	memset(b, 0, sizeof(*b));
	bm_set(b, FA4_FILES_AVAIL);
	bm_set(b, FA4_FILES_FREE);
	bm_set(b, FA4_FILES_TOTAL);
	bm_set(b, FA4_SPACE_AVAIL);
	bm_set(b, FA4_SPACE_FREE);
	bm_set(b, FA4_SPACE_TOTAL);
}

int nfs4_errno(uint32_t s)
{
	switch (s) {
	case NFS4_OK:
		return 0;
	case NFS4ERR_PERM:
		return -EPERM;
	case NFS4ERR_NOENT:
		return -ENOENT;
	case NFS4ERR_IO:
		return -EIO;
	case NFS4ERR_NXIO:
		return -ENXIO;
	case NFS4ERR_ACCESS:
	case NFS4ERR_WRONGSEC:
		return -EACCES;
	case NFS4ERR_EXIST:
		return -EEXIST;
	case NFS4ERR_XDEV:
		return -EXDEV;
	case NFS4ERR_NOTDIR:
		return -ENOTDIR;
	case NFS4ERR_ISDIR:
		return -EISDIR;
	case NFS4ERR_INVAL:
	case NFS4ERR_BADTYPE:
	case NFS4ERR_BADXDR:
	case NFS4ERR_BADOWNER:
	case NFS4ERR_BADCHAR:
	case NFS4ERR_BADNAME:
	case NFS4ERR_BAD_RANGE:
		return -EINVAL;
	case NFS4ERR_FBIG:
		return -EFBIG;
	case NFS4ERR_NOSPC:
		return -ENOSPC;
	case NFS4ERR_ROFS:
		return -EROFS;
	case NFS4ERR_MLINK:
		return -EMLINK;
	case NFS4ERR_NAMETOOLONG:
		return -ENAMETOOLONG;
	case NFS4ERR_NOTEMPTY:
		return -ENOTEMPTY;
	case NFS4ERR_DQUOT:
		return -EDQUOT;
	case NFS4ERR_STALE:
	case NFS4ERR_BADHANDLE:
	case NFS4ERR_FHEXPIRED:
		return -ESTALE;
	case NFS4ERR_BAD_COOKIE:
	case NFS4ERR_NOT_SAME:
		return -SNFS_EBADCOOKIE;
	case NFS4ERR_NOTSUPP:
	case NFS4ERR_ATTRNOTSUPP:
	case NFS4ERR_OP_ILLEGAL:
		return -EOPNOTSUPP;
	case NFS4ERR_TOOSMALL:
		return -EOVERFLOW;
	case NFS4ERR_DELAY:
	case NFS4ERR_GRACE:
	case NFS4ERR_LOCKED:
		return -EAGAIN;
	case NFS4ERR_SHARE_DENIED:
	case NFS4ERR_FILE_OPEN:
		return -EBUSY;
	case NFS4ERR_SYMLINK:
		return -ELOOP;
	case NFS4ERR_OPENMODE:
		return -EBADF;
	case NFS4ERR_WRONG_TYPE:
		return -EINVAL;
	case NFS4ERR_MINOR_VERS_MISMATCH:
		return -EPROTONOSUPPORT;
	case NFS4ERR_REQ_TOO_BIG:
	case NFS4ERR_REP_TOO_BIG:
		return -EMSGSIZE;
	default:
		return -EIO;
	}
}

/* ---- encoding ---- */

int nfs4_req_init(struct nfs4_req *rq, uint32_t minor, size_t extra)
{
	memset(rq, 0, sizeof(*rq));
	if (xdr_out_init(&rq->x, 2048 + extra, 8192 + extra) < 0)
		return -ENOMEM;
	xdr_put_u32(&rq->x, 0); /* empty tag */
	xdr_put_u32(&rq->x, minor);
	rq->nops_pos = rq->x.len;
	xdr_put_u32(&rq->x, 0);
	return 0;
}

void nfs4_put_op(struct nfs4_req *rq, uint32_t op)
{
	if (rq->nops >= NFS4_MAX_OPS) {
		rq->x.err = true;
		return;
	}
	rq->ops[rq->nops++] = op;
	xdr_put_u32(&rq->x, op);
}

void nfs4_req_finish(struct nfs4_req *rq)
{
	if (!rq->x.err)
		xdr_patch_u32(&rq->x, rq->nops_pos, rq->nops);
}

void nfs4_put_fh(struct nfs4_req *rq, const struct snfs_fh *fh)
{
	nfs4_put_op(rq, OP4_PUTFH);
	xdr_put_opaque(&rq->x, fh->data, fh->len);
}

void nfs4_put_stateid(struct xdr_out *x, const struct nfs4_stateid *s)
{
	xdr_put_u32(x, s->seqid);
	xdr_put_fixed(x, s->other, 12);
}

void nfs4_put_bitmap(struct xdr_out *x, const struct nfs4_bitmap *b)
{
	xdr_put_u32(x, b->n);
	for (uint32_t i = 0; i < b->n; i++)
		xdr_put_u32(x, b->w[i]);
}

void nfs4_put_getattr(struct nfs4_req *rq, const struct nfs4_bitmap *b)
{
	nfs4_put_op(rq, OP4_GETATTR);
	nfs4_put_bitmap(&rq->x, b);
}

static void put_id_string(struct xdr_out *x, uint32_t id)
{
	char s[16];
	snprintf(s, sizeof(s), "%u", id);
	xdr_put_string(x, s);
}

static void put_settime(struct xdr_out *x, bool now, const struct timespec *t)
{
	if (now) {
		xdr_put_u32(x, 0); /* SET_TO_SERVER_TIME4 */
		return;
	}
	xdr_put_u32(x, 1); /* SET_TO_CLIENT_TIME4 */
	xdr_put_u64(x, (uint64_t)(int64_t)t->tv_sec);
	xdr_put_u32(x, (uint32_t)t->tv_nsec);
}

/* Section 5.8: attribute values follow the bitmap in bit order. */
void nfs4_put_sattr(struct xdr_out *x, const struct snfs_setattr *sa)
{
	struct nfs4_bitmap b = {0};
	unsigned m = sa ? sa->mask : 0;

	if (m & SNFS_SET_SIZE)
		bm_set(&b, FA4_SIZE);
	if (m & SNFS_SET_MODE)
		bm_set(&b, FA4_MODE);
	if (m & SNFS_SET_UID)
		bm_set(&b, FA4_OWNER);
	if (m & SNFS_SET_GID)
		bm_set(&b, FA4_OWNER_GROUP);
	if (m & (SNFS_SET_ATIME | SNFS_SET_ATIME_NOW))
		bm_set(&b, FA4_TIME_ACCESS_SET);
	if (m & (SNFS_SET_MTIME | SNFS_SET_MTIME_NOW))
		bm_set(&b, FA4_TIME_MODIFY_SET);
	nfs4_put_bitmap(x, &b);
	size_t lenpos = x->len;
	xdr_put_u32(x, 0);
	if (m & SNFS_SET_SIZE)
		xdr_put_u64(x, sa->size);
	if (m & SNFS_SET_MODE)
		xdr_put_u32(x, sa->mode & 07777);
	if (m & SNFS_SET_UID)
		put_id_string(x, sa->uid);
	if (m & SNFS_SET_GID)
		put_id_string(x, sa->gid);
	if (m & (SNFS_SET_ATIME | SNFS_SET_ATIME_NOW))
		put_settime(x, m & SNFS_SET_ATIME_NOW, &sa->atime);
	if (m & (SNFS_SET_MTIME | SNFS_SET_MTIME_NOW))
		put_settime(x, m & SNFS_SET_MTIME_NOW, &sa->mtime);
	if (!x->err)
		xdr_patch_u32(x, lenpos, (uint32_t)(x->len - lenpos - 4));
}

void nfs4_put_type_fattr(struct xdr_out *x, uint32_t nf4type)
{
	struct nfs4_bitmap b = {0};
	bm_set(&b, FA4_TYPE);
	nfs4_put_bitmap(x, &b);
	xdr_put_u32(x, 4);
	xdr_put_u32(x, nf4type);
}

/* ---- decoding ---- */

int nfs4_expect(struct xdr_in *x, uint32_t op, uint32_t *status)
{
	uint32_t got, s;
	if (status)
		*status = 0;
	if (!xdr_get_u32(x, &got) || !xdr_get_u32(x, &s))
		return -EPROTO;
	if (got != op) {
		/* OP_ILLEGAL answers an operation the server does not know */
		if (got == OP4_ILLEGAL && s != NFS4_OK) {
			if (status)
				*status = s;
			return -EOPNOTSUPP;
		}
		return -EPROTO;
	}
	if (status)
		*status = s;
	return s == NFS4_OK ? 0 : nfs4_errno(s);
}

bool nfs4_get_fh(struct xdr_in *x, struct snfs_fh *fh)
{
	uint32_t n;
	if (!xdr_get_opaque(x, fh->data, &n, SNFS_FH_MAX))
		return false;
	fh->len = n;
	return true;
}

bool nfs4_get_stateid(struct xdr_in *x, struct nfs4_stateid *s)
{
	return xdr_get_u32(x, &s->seqid) && xdr_get_fixed(x, s->other, 12);
}

/* A bitmap4; words past the third must be zero for us to follow it. */
bool nfs4_get_bitmap(struct xdr_in *x, struct nfs4_bitmap *b)
{
	uint32_t n, w;
	memset(b, 0, sizeof(*b));
	if (!xdr_get_u32(x, &n) || n > 8)
		return x->err = true, false;
	for (uint32_t i = 0; i < n; i++) {
		if (!xdr_get_u32(x, &w))
			return false;
		if (i < 3) {
			b->w[i] = w;
			if (w)
				b->n = i + 1;
		} else if (w) {
			return x->err = true, false;
		}
	}
	return true;
}

bool nfs4_skip_change_info(struct xdr_in *x)
{
	bool atomic;
	uint64_t v;
	return xdr_get_bool(x, &atomic) && xdr_get_u64(x, &v) &&
	       xdr_get_u64(x, &v);
}

static bool get_time(struct xdr_in *x, struct timespec *t)
{
	uint64_t s;
	uint32_t ns;
	if (!xdr_get_u64(x, &s) || !xdr_get_u32(x, &ns))
		return false;
	t->tv_sec = (time_t)(int64_t)s;
	t->tv_nsec = ns < 1000000000u ? (long)ns : 0;
	return true;
}

/* A user or group name to its id through libsnfs's cache (idcache.h):
 * nobody when the database has no such name or the lookup failed. */
static uint32_t name_to_id(const char *name, bool group)
{
	uint32_t id;
	return idcache_lookup(name, group, &id) == 0 ? id : NOBODY;
}

uint32_t nfs4_owner_to_id(const uint8_t *s, uint32_t n, bool group)
{
	char name[OWNER_MAX + 1];
	if (n == 0 || n > OWNER_MAX)
		return NOBODY;
	memcpy(name, s, n);
	name[n] = 0;
	if (memchr(name, 0, n))
		return NOBODY;
	char *end;
	unsigned long v = strtoul(name, &end, 10);
	if (end != name && *end == 0 && name[0] >= '0' && name[0] <= '9' &&
	    v <= UINT32_MAX)
		return (uint32_t)v;
	char *at = strchr(name, '@');
	if (at)
		*at = 0;
	/* "1000@domain" from servers that add the domain to numbers */
	v = strtoul(name, &end, 10);
	if (end != name && *end == 0 && name[0] >= '0' && name[0] <= '9' &&
	    v <= UINT32_MAX)
		return (uint32_t)v;
	return name_to_id(name, group);
}

static uint32_t ftype_from_nf4(uint32_t t)
{
	/* nfs_ftype4: REG 1, DIR 2, BLK 3, CHR 4, LNK 5, SOCK 6, FIFO 7,
	 * ATTRDIR 8, NAMEDATTR 9; ours match for 1..7 */
	if (t >= 1 && t <= 7)
		return t;
	return t == 8 ? SNFS_DIR : SNFS_REG;
}

/* One attribute value; false if it is malformed or one we cannot skip. */
static bool get_attr(struct xdr_in *x, unsigned bit, struct nfs4_fattr *fa)
{
	struct snfs_stat *st = &fa->st;
	uint32_t u, u2;
	uint64_t v, v2;
	bool b;
	const uint8_t *p;
	struct nfs4_bitmap bm;

	switch (bit) {
	case FA4_SUPPORTED_ATTRS:
		return nfs4_get_bitmap(x, &bm);
	case FA4_TYPE:
		if (!xdr_get_u32(x, &u))
			return false;
		st->type = (enum snfs_ftype)ftype_from_nf4(u);
		return true;
	case 2:  /* fh_expire_type */
	case 13: /* aclsupport */
	case 28: /* maxlink */
	case 29: /* maxname */
		return xdr_get_u32(x, &u);
	case FA4_CHANGE:
		return xdr_get_u64(x, &st->change);
	case FA4_SIZE:
		return xdr_get_u64(x, &st->size);
	case 5:
	case 6:
	case 7:
	case 9:
	case 14:
	case 15:
	case 16:
	case 17:
	case 18:
	case 25:
	case 26:
	case 34:
	case 46:
		return xdr_get_bool(x, &b);
	case FA4_FSID:
		if (!xdr_get_u64(x, &v) || !xdr_get_u64(x, &v2))
			return false;
		st->fsid = v ^ (v2 << 1 | v2 >> 63);
		return true;
	case FA4_LEASE_TIME:
		return xdr_get_u32(x, &fa->lease_time);
	case FA4_RDATTR_ERROR:
		return xdr_get_u32(x, &fa->rdattr_error);
	case 19: /* filehandle */
		return xdr_get_opaque_ref(x, &p, &u, SNFS_FH_MAX);
	case FA4_FILEID:
		return xdr_get_u64(x, &st->fileid);
	case FA4_FILES_AVAIL:
		return xdr_get_u64(x, &fa->files_avail);
	case FA4_FILES_FREE:
		return xdr_get_u64(x, &fa->files_free);
	case FA4_FILES_TOTAL:
		return xdr_get_u64(x, &fa->files_total);
	case 27: /* maxfilesize */
	case 38:
	case 39:
	case 40:
		return xdr_get_u64(x, &v);
	case FA4_MAXREAD:
		return xdr_get_u64(x, &fa->maxread);
	case FA4_MAXWRITE:
		return xdr_get_u64(x, &fa->maxwrite);
	case 32: /* mimetype */
		return xdr_get_opaque_ref(x, &p, &u, OWNER_MAX);
	case FA4_MODE:
		if (!xdr_get_u32(x, &u))
			return false;
		st->mode = u & 07777;
		return true;
	case FA4_NUMLINKS:
		return xdr_get_u32(x, &st->nlink);
	case FA4_OWNER:
	case FA4_OWNER_GROUP:
		if (!xdr_get_opaque_ref(x, &p, &u, OWNER_MAX))
			return false;
		if (bit == FA4_OWNER)
			st->uid = nfs4_owner_to_id(p, u, false);
		else
			st->gid = nfs4_owner_to_id(p, u, true);
		return true;
	case FA4_RAWDEV:
		if (!xdr_get_u32(x, &u) || !xdr_get_u32(x, &u2))
			return false;
		st->rdev_major = u;
		st->rdev_minor = u2;
		return true;
	case FA4_SPACE_AVAIL:
		return xdr_get_u64(x, &fa->space_avail);
	case FA4_SPACE_FREE:
		return xdr_get_u64(x, &fa->space_free);
	case FA4_SPACE_TOTAL:
		return xdr_get_u64(x, &fa->space_total);
	case FA4_SPACE_USED:
		return xdr_get_u64(x, &st->used);
	case FA4_TIME_ACCESS:
		return get_time(x, &st->atime);
	case FA4_TIME_METADATA:
		return get_time(x, &st->ctime);
	case FA4_TIME_MODIFY:
		return get_time(x, &st->mtime);
	case 49: /* time_backup */
	case 50: /* time_create */
	case 51: /* time_delta */
	{
		struct timespec t;
		return get_time(x, &t);
	}
	case FA4_MOUNTED_ON_FILEID:
		return xdr_get_u64(x, &fa->mounted_on_fileid);
	default:
		return false; /* acl, fs_locations, ...: never asked for */
	}
}

bool nfs4_get_fattr(struct xdr_in *x, struct nfs4_fattr *fa)
{
	struct nfs4_bitmap b;
	const uint8_t *p;
	uint32_t len;

	memset(fa, 0, sizeof(*fa));
	if (!nfs4_get_bitmap(x, &b) ||
	    !xdr_get_opaque_ref(x, &p, &len, 1u << 20))
		return false;
	struct xdr_in v;
	xdr_in_init(&v, p, len);
	for (unsigned bit = 0; bit < b.n * 32; bit++) {
		if (!bm_isset(&b, bit))
			continue;
		if (!get_attr(&v, bit, fa) || v.err)
			return x->err = true, false;
		bm_set(&fa->have, bit);
	}
	return true;
}

int nfs4_decode_attr_at(const uint8_t *buf, size_t len, uint32_t off,
                        struct snfs_stat *st)
{
	struct xdr_in x;
	struct nfs4_fattr fa;
	if (off >= len)
		return -EPROTO;
	xdr_in_init(&x, buf + off, len - off);
	if (!nfs4_get_fattr(&x, &fa))
		return -EPROTO;
	if (!bm_isset(&fa.have, FA4_TYPE) || !bm_isset(&fa.have, FA4_MODE))
		return -EPROTO; /* a rdattr_error-only entry */
	*st = fa.st;
	return 0;
}

/* READDIR4resok: cookieverf, dirlist4 { entry4 *entries; bool eof }. The
 * list is walked iteratively (a "next" bool before each entry). */
int nfs4_decode_readdir(struct xdr_in *x, const uint8_t *base, bool plus,
                        struct rd_page *page)
{
	bool more;

	if (!xdr_get_fixed(x, page->verf, 8) || !xdr_get_bool(x, &more))
		return -EPROTO;
	page->decode_attr = nfs4_decode_attr_at;
	while (more) {
		struct rd_entry e = {0};
		const uint8_t *name;
		uint32_t nlen;
		if (!xdr_get_u64(x, &e.cookie) ||
		    !xdr_get_opaque_ref(x, &name, &nlen, NFS4_NAME_MAX))
			return -EPROTO;
		/* a name must be one component (RFC 8881 section 14.5) */
		if (nlen == 0 || memchr(name, 0, nlen) ||
		    memchr(name, '/', nlen))
			return -EPROTO;
		e.name_off = (uint32_t)(name - base);
		e.name_len = nlen;
		uint32_t aoff = (uint32_t)(x->buf + x->pos - base);
		struct nfs4_fattr fa;
		if (!nfs4_get_fattr(x, &fa))
			return -EPROTO;
		e.fileid = bm_isset(&fa.have, FA4_MOUNTED_ON_FILEID)
		               ? fa.mounted_on_fileid
		               : fa.st.fileid;
		if (plus && bm_isset(&fa.have, FA4_TYPE) &&
		    bm_isset(&fa.have, FA4_MODE))
			e.attr_off = aoff;
		int rc = rd_page_add(page, &e);
		if (rc < 0)
			return rc;
		if (!xdr_get_bool(x, &more))
			return -EPROTO;
	}
	if (!xdr_get_bool(x, &page->eof))
		return -EPROTO;
	return x->err ? -EPROTO : 0;
}
