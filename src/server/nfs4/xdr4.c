/* NFSv4 codec helpers shared by the operations: stateids, bitmaps, names,
 * times, change_info4, and errno to nfsstat4. */
#include <errno.h>
#include <string.h>

#include "server/nfs4/nfs4.h"

/* Backend errnos to nfsstat4 (RFC 7530 13, RFC 8881 15). */
uint32_t nfs4_errno(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return NFS4_OK;
	case EPERM:
		return NFS4ERR_PERM;
	case ENOENT:
		return NFS4ERR_NOENT;
	case ENXIO:
		return NFS4ERR_NXIO;
	case EACCES:
		return NFS4ERR_ACCESS;
	case EEXIST:
		return NFS4ERR_EXIST;
	case EXDEV:
		return NFS4ERR_XDEV;
	case ENOTDIR:
		return NFS4ERR_NOTDIR;
	case EISDIR:
		return NFS4ERR_ISDIR;
	case EINVAL:
	case EOVERFLOW:
		return NFS4ERR_INVAL;
	case EFBIG:
		return NFS4ERR_FBIG;
	case ENOSPC:
		return NFS4ERR_NOSPC;
	case EROFS:
		return NFS4ERR_ROFS;
	case EMLINK:
		return NFS4ERR_MLINK;
	case ENAMETOOLONG:
		return NFS4ERR_NAMETOOLONG;
	case ENOTEMPTY:
		return NFS4ERR_NOTEMPTY;
	case EDQUOT:
		return NFS4ERR_DQUOT;
	case ESTALE:
		return NFS4ERR_STALE;
	case EBADF:
		return NFS4ERR_BADHANDLE;
	case ENOTSUP:
		return NFS4ERR_NOTSUPP;
	case EAGAIN:
	case EINTR:
		return NFS4ERR_DELAY;
	case ELOOP:
		return NFS4ERR_SYMLINK;
	case ENOMEM:
		return NFS4ERR_DELAY;
	default:
		return NFS4ERR_IO;
	}
}

bool nfs4_get_stateid(struct xdr_in *x, struct nfs4_stateid *s)
{
	return xdr_get_u32(x, &s->seqid) &&
	       xdr_get_fixed(x, s->other, NFS4_OTHER_SIZE);
}

bool nfs4_put_stateid(struct xdr_out *x, const struct nfs4_stateid *s)
{
	return xdr_put_u32(x, s->seqid) &&
	       xdr_put_fixed(x, s->other, NFS4_OTHER_SIZE);
}

/* Words past the third name attributes we do not have: they are read so
 * the cursor stays in step, and kept only if zero-valued attributes are
 * asked (the caller treats set bits there as unsupported). */
bool nfs4_get_bitmap(struct xdr_in *x, uint32_t bm[3])
{
	uint32_t n, w;

	bm[0] = bm[1] = bm[2] = 0;
	if (!xdr_get_u32(x, &n))
		return false;
	if (n > 64) {
		x->err = true;
		return false;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!xdr_get_u32(x, &w))
			return false;
		if (i < 3)
			bm[i] = w;
	}
	return true;
}

bool nfs4_put_bitmap(struct xdr_out *x, const uint32_t bm[3])
{
	uint32_t n = bm[2] ? 3 : bm[1] ? 2 : bm[0] ? 1 : 0;

	if (!xdr_put_u32(x, n))
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (!xdr_put_u32(x, bm[i]))
			return false;
	return true;
}

/* component4 (RFC 7530 12.7, RFC 8881 14.2): empty is INVAL, "." and ".."
 * and names holding '/' or NUL are BADNAME, long ones NAMETOOLONG. */
uint32_t nfs4_get_name(struct xdr_in *x, char name[BK_NAME_MAX + 1])
{
	const uint8_t *p;
	uint32_t n;

	if (!xdr_get_opaque_ref(x, &p, &n, 0xffffff))
		return NFS4ERR_BADXDR;
	if (n == 0)
		return NFS4ERR_INVAL;
	if (n > BK_NAME_MAX)
		return NFS4ERR_NAMETOOLONG;
	if (memchr(p, '/', n) || memchr(p, 0, n))
		return NFS4ERR_BADNAME;
	if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
		return NFS4ERR_BADNAME;
	memcpy(name, p, n);
	name[n] = 0;
	return NFS4_OK;
}

bool nfs4_put_time(struct xdr_out *x, const struct timespec *t)
{
	return xdr_put_u64(x, (uint64_t)(int64_t)t->tv_sec) &&
	       xdr_put_u32(x, (uint32_t)t->tv_nsec);
}

bool nfs4_put_cinfo(struct xdr_out *x, bool atomic, uint64_t before,
                    uint64_t after)
{
	return xdr_put_bool(x, atomic) && xdr_put_u64(x, before) &&
	       xdr_put_u64(x, after);
}
