/* NFSv3 shared codecs: see nfs3_xdr.h. */
#include "server/nfs3/nfs3_xdr.h"

#include <errno.h>
#include <string.h>

bool nfs3_get_fh(struct xdr_in *x, struct nfs3_fh *fh)
{
	/* RFC 1813 section 2.4: nfs_fh3 is opaque<NFS3_FHSIZE = 64>; a
	 * longer one is malformed (GARBAGE_ARGS). */
	return xdr_get_opaque_ref(x, &fh->data, &fh->len, NFS_FH_MAX);
}

bool nfs3_get_name(struct xdr_in *x, struct nfs3_name *n)
{
	const uint8_t *p;
	uint32_t len;

	if (!xdr_get_opaque_ref(x, &p, &len, NFS3_DECODE_STR_MAX))
		return false;
	n->len = len;
	n->too_long = len > NFS3_NAME_MAX;
	n->bad_char = false;
	n->s[0] = 0;
	if (n->too_long)
		return true;
	if (len && (memchr(p, '/', len) || memchr(p, 0, len)))
		n->bad_char = true;
	memcpy(n->s, p, len);
	n->s[len] = 0;
	return true;
}

bool nfs3_get_diropargs(struct xdr_in *x, struct nfs3_fh *dir,
                        struct nfs3_name *n)
{
	return nfs3_get_fh(x, dir) && nfs3_get_name(x, n);
}

bool nfs3_get_path(struct xdr_in *x, struct nfs3_path *path)
{
	const uint8_t *p;
	uint32_t len;

	if (!xdr_get_opaque_ref(x, &p, &len, NFS3_DECODE_STR_MAX))
		return false;
	path->len = len;
	path->too_long = len > NFS3_PATH_MAX;
	path->bad_char = false;
	path->s[0] = 0;
	if (path->too_long)
		return true;
	if (len && memchr(p, 0, len))
		path->bad_char = true;
	memcpy(path->s, p, len);
	path->s[len] = 0;
	return true;
}

static bool get_time(struct xdr_in *x, struct timespec *t)
{
	uint32_t sec, nsec;

	if (!xdr_get_u32(x, &sec) || !xdr_get_u32(x, &nsec))
		return false;
	t->tv_sec = sec;
	/* An nseconds field of a billion or more is not a time. */
	if (nsec >= 1000000000u) {
		x->err = true;
		return false;
	}
	t->tv_nsec = nsec;
	return true;
}

/* set_atime / set_mtime: a time_how discriminant, then a time only for
 * SET_TO_CLIENT_TIME. */
static bool get_set_time(struct xdr_in *x, struct timespec *t, uint32_t *mask,
                         uint32_t set_client, uint32_t set_server)
{
	uint32_t how;

	if (!xdr_get_u32(x, &how))
		return false;
	switch (how) {
	case DONT_CHANGE:
		return true;
	case SET_TO_SERVER_TIME:
		*mask |= set_server;
		return true;
	case SET_TO_CLIENT_TIME:
		*mask |= set_client;
		return get_time(x, t);
	default:
		x->err = true;
		return false;
	}
}

/* RFC 1813 section 2.6, sattr3: each field is an optional (bool + value). */
bool nfs3_get_sattr(struct xdr_in *x, struct bk_setattr *sa)
{
	bool set;

	memset(sa, 0, sizeof(*sa));
	if (!xdr_get_bool(x, &set))
		return false;
	if (set) {
		if (!xdr_get_u32(x, &sa->mode))
			return false;
		sa->mode &= 07777;
		sa->mask |= BK_SET_MODE;
	}
	if (!xdr_get_bool(x, &set))
		return false;
	if (set) {
		if (!xdr_get_u32(x, &sa->uid))
			return false;
		sa->mask |= BK_SET_UID;
	}
	if (!xdr_get_bool(x, &set))
		return false;
	if (set) {
		if (!xdr_get_u32(x, &sa->gid))
			return false;
		sa->mask |= BK_SET_GID;
	}
	if (!xdr_get_bool(x, &set))
		return false;
	if (set) {
		if (!xdr_get_u64(x, &sa->size))
			return false;
		sa->mask |= BK_SET_SIZE;
	}
	return get_set_time(x, &sa->atime, &sa->mask, BK_SET_ATIME,
	                    BK_SET_ATIME_NOW) &&
	       get_set_time(x, &sa->mtime, &sa->mask, BK_SET_MTIME,
	                    BK_SET_MTIME_NOW);
}

uint32_t nfs3_name_check(const struct nfs3_name *n)
{
	if (n->too_long)
		return NFS3ERR_NAMETOOLONG;
	/* A component may be neither empty nor hold a separator: the RFC
	 * leaves the status open; Linux nfsd and most servers say ACCES. */
	if (n->len == 0 || n->bad_char)
		return NFS3ERR_ACCES;
	return NFS3_OK;
}

bool nfs3_name_is_dot(const struct nfs3_name *n)
{
	return !n->too_long &&
	       (strcmp(n->s, ".") == 0 || strcmp(n->s, "..") == 0);
}

static uint8_t *be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
	return p + 4;
}

static uint8_t *be64(uint8_t *p, uint64_t v)
{
	return be32(be32(p, (uint32_t)(v >> 32)), (uint32_t)v);
}

/* nfstime3 carries unsigned 32-bit seconds; times before 1970 or after
 * 2106 wrap, as on every NFSv3 server. */
static uint8_t *be_time(uint8_t *p, const struct timespec *t)
{
	return be32(be32(p, (uint32_t)t->tv_sec), (uint32_t)t->tv_nsec);
}

/* RFC 1813 section 2.6, fattr3: 21 words in this order. fsid is the
 * export's so every export is its own file system to clients. */
void nfs3_fattr_bytes(uint8_t p[NFS3_FATTR_SIZE], const struct bk_attr *a,
                      uint32_t fsid)
{
	p = be32(p, (uint32_t)a->type);
	p = be32(p, a->mode & 07777);
	p = be32(p, a->nlink);
	p = be32(p, a->uid);
	p = be32(p, a->gid);
	p = be64(p, a->size);
	p = be64(p, a->used);
	p = be32(p, a->rdev_major);
	p = be32(p, a->rdev_minor);
	p = be64(p, fsid);
	p = be64(p, a->fileid);
	p = be_time(p, &a->atime);
	p = be_time(p, &a->mtime);
	be_time(p, &a->ctime);
}

bool nfs3_put_fattr(struct xdr_out *x, const struct bk_attr *a, uint32_t fsid)
{
	uint8_t *p = xdr_put_reserve(x, NFS3_FATTR_SIZE);

	if (!p)
		return false;
	nfs3_fattr_bytes(p, a, fsid);
	return true;
}

bool nfs3_put_post_op_attr(struct xdr_out *x, const struct bk_attr *a,
                           uint32_t fsid)
{
	if (!a)
		return xdr_put_bool(x, false);
	return xdr_put_bool(x, true) && nfs3_put_fattr(x, a, fsid);
}

bool nfs3_put_time(struct xdr_out *x, const struct timespec *t)
{
	return xdr_put_u32(x, (uint32_t)t->tv_sec) &&
	       xdr_put_u32(x, (uint32_t)t->tv_nsec);
}

/* pre_op_attr: wcc_attr is size, mtime, ctime (RFC 1813 section 2.6). */
bool nfs3_put_pre_op_attr(struct xdr_out *x, const struct bk_wcc_attr *w)
{
	if (!w)
		return xdr_put_bool(x, false);
	return xdr_put_bool(x, true) && xdr_put_u64(x, w->size) &&
	       nfs3_put_time(x, &w->mtime) && nfs3_put_time(x, &w->ctime);
}

bool nfs3_put_wcc(struct xdr_out *x, const struct bk_wcc_attr *pre,
                  const struct bk_attr *post, uint32_t fsid)
{
	return nfs3_put_pre_op_attr(x, pre) &&
	       nfs3_put_post_op_attr(x, post, fsid);
}

bool nfs3_put_post_op_fh(struct xdr_out *x, const struct nfs_fh *fh)
{
	if (!fh)
		return xdr_put_bool(x, false);
	return xdr_put_bool(x, true) && xdr_put_opaque(x, fh->data, fh->len);
}

void nfs3_wcc_from_attr(const struct bk_attr *a, struct bk_wcc_attr *w)
{
	w->size = a->size;
	w->mtime = a->mtime;
	w->ctime = a->ctime;
}

uint32_t nfs3_stat_from_errno(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return NFS3_OK;
	case EPERM:
		return NFS3ERR_PERM;
	case ENOENT:
		return NFS3ERR_NOENT;
	case EIO:
		return NFS3ERR_IO;
	case ENXIO:
		return NFS3ERR_NXIO;
	case EACCES:
		return NFS3ERR_ACCES;
	case EEXIST:
		return NFS3ERR_EXIST;
	case EXDEV:
		return NFS3ERR_XDEV;
	case ENODEV:
		return NFS3ERR_NODEV;
	case ENOTDIR:
	case ELOOP: /* a symlink where a directory was needed */
		return NFS3ERR_NOTDIR;
	case EISDIR:
		return NFS3ERR_ISDIR;
	case EINVAL:
		return NFS3ERR_INVAL;
	case EFBIG:
		return NFS3ERR_FBIG;
	case ENOSPC:
		return NFS3ERR_NOSPC;
	case EROFS:
		return NFS3ERR_ROFS;
	case EMLINK:
		return NFS3ERR_MLINK;
	case ENAMETOOLONG:
		return NFS3ERR_NAMETOOLONG;
	case ENOTEMPTY:
		return NFS3ERR_NOTEMPTY;
	case EDQUOT:
		return NFS3ERR_DQUOT;
	case ESTALE:
		return NFS3ERR_STALE;
	case EBADF:
		return NFS3ERR_BADHANDLE;
	case EOPNOTSUPP:
		return NFS3ERR_NOTSUPP;
	case EAGAIN:
		/* Transient: tell the client to retry later. */
		return NFS3ERR_JUKEBOX;
	case EBUSY:
	case ETXTBSY:
		return NFS3ERR_ACCES;
	case EOVERFLOW:
		return NFS3ERR_FBIG;
	default:
		return NFS3ERR_SERVERFAULT;
	}
}
