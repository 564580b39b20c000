/* NFSv3 client codecs (RFC 1813 section 2.6 and 3.3.16/3.3.17). */
#include "client/nfs3_xdr.h"

#include <errno.h>
#include <string.h>

int nfs3_errno(uint32_t status)
{
	switch (status) {
	case NFS3_OK:
		return 0;
	case NFS3ERR_PERM:
		return -EPERM;
	case NFS3ERR_NOENT:
		return -ENOENT;
	case NFS3ERR_IO:
		return -EIO;
	case NFS3ERR_NXIO:
		return -ENXIO;
	case NFS3ERR_ACCES:
		return -EACCES;
	case NFS3ERR_EXIST:
		return -EEXIST;
	case NFS3ERR_XDEV:
		return -EXDEV;
	case NFS3ERR_NODEV:
		return -ENODEV;
	case NFS3ERR_NOTDIR:
		return -ENOTDIR;
	case NFS3ERR_ISDIR:
		return -EISDIR;
	case NFS3ERR_INVAL:
		return -EINVAL;
	case NFS3ERR_FBIG:
		return -EFBIG;
	case NFS3ERR_NOSPC:
		return -ENOSPC;
	case NFS3ERR_ROFS:
		return -EROFS;
	case NFS3ERR_MLINK:
		return -EMLINK;
	case NFS3ERR_NAMETOOLONG:
		return -ENAMETOOLONG;
	case NFS3ERR_NOTEMPTY:
		return -ENOTEMPTY;
	case NFS3ERR_DQUOT:
		return -EDQUOT;
	case NFS3ERR_STALE:
	case NFS3ERR_BADHANDLE:
		return -ESTALE;
	case NFS3ERR_REMOTE:
		return -EREMOTE;
	case NFS3ERR_BAD_COOKIE:
		return -SNFS_EBADCOOKIE;
	case NFS3ERR_NOTSUPP:
		return -EOPNOTSUPP;
	case NFS3ERR_TOOSMALL:
		return -EOVERFLOW; /* TOOSMALL: buffer too small */
	case NFS3ERR_JUKEBOX:
		return -EAGAIN; /* JUKEBOX */
	case NFS3ERR_NOT_SYNC:
	case NFS3ERR_BADTYPE:
		return -EINVAL;
	default:
		return -EIO;
	}
}

bool nfs3_put_fh(struct xdr_out *x, const struct snfs_fh *fh)
{
	return xdr_put_opaque(x, fh->data, fh->len);
}

bool nfs3_get_fh(struct xdr_in *x, struct snfs_fh *fh)
{
	return xdr_get_opaque(x, fh->data, &fh->len, NFS3_FHSIZE);
}

static bool put_time_how(struct xdr_out *x, bool set, bool now,
                         const struct timespec *t)
{
	if (!set && !now)
		return xdr_put_u32(x, DONT_CHANGE);
	if (now)
		return xdr_put_u32(x, SET_TO_SERVER_TIME);
	return xdr_put_u32(x, SET_TO_CLIENT_TIME) &&
	       xdr_put_u32(x, (uint32_t)t->tv_sec) &&
	       xdr_put_u32(x, (uint32_t)t->tv_nsec);
}

/* sattr3 (section 2.6): each field behind its own discriminant. */
bool nfs3_put_sattr(struct xdr_out *x, const struct snfs_setattr *sa)
{
	unsigned m = sa ? sa->mask : 0;

	xdr_put_bool(x, m & SNFS_SET_MODE);
	if (m & SNFS_SET_MODE)
		xdr_put_u32(x, sa->mode & 07777);
	xdr_put_bool(x, m & SNFS_SET_UID);
	if (m & SNFS_SET_UID)
		xdr_put_u32(x, sa->uid);
	xdr_put_bool(x, m & SNFS_SET_GID);
	if (m & SNFS_SET_GID)
		xdr_put_u32(x, sa->gid);
	xdr_put_bool(x, m & SNFS_SET_SIZE);
	if (m & SNFS_SET_SIZE)
		xdr_put_u64(x, sa->size);
	put_time_how(x, m & SNFS_SET_ATIME, m & SNFS_SET_ATIME_NOW,
	             sa ? &sa->atime : NULL);
	put_time_how(x, m & SNFS_SET_MTIME, m & SNFS_SET_MTIME_NOW,
	             sa ? &sa->mtime : NULL);
	return !x->err;
}

static bool get_time(struct xdr_in *x, struct timespec *t)
{
	uint32_t s, ns;
	if (!xdr_get_u32(x, &s) || !xdr_get_u32(x, &ns))
		return false;
	t->tv_sec = s;
	t->tv_nsec = ns < 1000000000u ? ns : 999999999;
	return true;
}

bool nfs3_get_fattr(struct xdr_in *x, struct snfs_stat *st)
{
	uint32_t type;

	memset(st, 0, sizeof(*st));
	xdr_get_u32(x, &type);
	xdr_get_u32(x, &st->mode);
	xdr_get_u32(x, &st->nlink);
	xdr_get_u32(x, &st->uid);
	xdr_get_u32(x, &st->gid);
	xdr_get_u64(x, &st->size);
	xdr_get_u64(x, &st->used);
	xdr_get_u32(x, &st->rdev_major);
	xdr_get_u32(x, &st->rdev_minor);
	xdr_get_u64(x, &st->fsid);
	xdr_get_u64(x, &st->fileid);
	get_time(x, &st->atime);
	get_time(x, &st->mtime);
	get_time(x, &st->ctime);
	if (x->err)
		return false;
	if (type < SNFS_REG || type > SNFS_FIFO) {
		x->err = true;
		return false;
	}
	st->type = (enum snfs_ftype)type;
	st->mode &= 07777;
	/* v3 has no change attribute: ctime stands in for it. */
	st->change = (uint64_t)st->ctime.tv_sec * 1000000000u +
	             (uint64_t)st->ctime.tv_nsec;
	return true;
}

bool nfs3_get_post_attr(struct xdr_in *x, struct snfs_stat *st, bool *have)
{
	bool h = false;
	struct snfs_stat tmp;

	if (!xdr_get_bool(x, &h))
		return false;
	if (have)
		*have = h;
	if (!h)
		return true;
	return nfs3_get_fattr(x, st ? st : &tmp);
}

/* wcc_data: pre_op_attr (size, mtime, ctime) then post_op_attr. */
bool nfs3_skip_wcc(struct xdr_in *x, struct snfs_stat *post, bool *have_post)
{
	bool pre;
	if (!xdr_get_bool(x, &pre))
		return false;
	if (pre && !xdr_skip(x, 24))
		return false;
	return nfs3_get_post_attr(x, post, have_post);
}

int nfs3_decode_attr_at(const uint8_t *buf, size_t len, uint32_t off,
                        struct snfs_stat *st)
{
	struct xdr_in x;
	if (off >= len)
		return -EPROTO;
	xdr_in_init(&x, buf + off, len - off);
	return nfs3_get_fattr(&x, st) ? 0 : -EPROTO;
}

/* One entry3 / entryplus3 (sections 3.3.16, 3.3.17). */
static bool decode_entry(struct xdr_in *x, bool plus, struct rd_entry *e)
{
	const uint8_t *name;
	bool have;

	memset(e, 0, sizeof(*e));
	if (!xdr_get_u64(x, &e->fileid) ||
	    !xdr_get_opaque_ref(x, &name, &e->name_len, 255) ||
	    !xdr_get_u64(x, &e->cookie))
		return false;
	e->name_off = (uint32_t)(name - x->buf);
	if (e->name_len == 0 || memchr(name, 0, e->name_len) ||
	    memchr(name, '/', e->name_len)) {
		x->err = true; /* a name we could never hand out safely */
		return false;
	}
	if (!plus)
		return true;
	if (!xdr_get_bool(x, &have))
		return false;
	if (have) {
		struct snfs_stat st;
		e->attr_off = (uint32_t)x->pos;
		if (!nfs3_get_fattr(x, &st))
			return false;
	}
	if (!xdr_get_bool(x, &have))
		return false;
	if (have) {
		const uint8_t *fh;
		if (!xdr_get_opaque_ref(x, &fh, &e->fh_len, NFS3_FHSIZE))
			return false;
		e->fh_off = (uint32_t)(fh - x->buf);
	}
	return true;
}

int nfs3_decode_readdir(const uint8_t *buf, size_t len, bool plus,
                        struct rd_page *page)
{
	struct xdr_in x;
	uint32_t status;
	bool more;

	if (len > UINT32_MAX)
		return -EPROTO;
	xdr_in_init(&x, buf, len);
	if (!xdr_get_u32(&x, &status))
		return -EPROTO;
	if (!nfs3_get_post_attr(&x, &page->dir_attr, &page->have_dir_attr))
		return -EPROTO;
	if (status != 0)
		return nfs3_errno(status);
	if (!xdr_get_fixed(&x, page->verf, 8))
		return -EPROTO;
	page->decode_attr = nfs3_decode_attr_at;
	/* The list is "value follows, entry, value follows, ...": a loop,
	 * never recursion, however long the reply. */
	if (!xdr_get_bool(&x, &more))
		return -EPROTO;
	while (more) {
		struct rd_entry e;
		if (!decode_entry(&x, plus, &e) || !xdr_get_bool(&x, &more))
			return -EPROTO;
		if (rd_page_add(page, &e) < 0)
			return -ENOMEM;
	}
	if (!xdr_get_bool(&x, &page->eof))
		return -EPROTO;
	return 0;
}
