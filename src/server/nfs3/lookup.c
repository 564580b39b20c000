/* NFSv3 name resolution: LOOKUP and READLINK (RFC 1813 sections 3.3.3,
 * 3.3.5). */
#include <errno.h>
#include <string.h>

#include "server/nfs3/nfs3_proc.h"
#include "server/snfsd.h"

/* RFC 1813 section 3.3.3: the object's handle and attributes, plus the
 * directory's attributes on success and failure alike. "." and ".." are
 * ordinary names here; ".." of the export root is the root. */
int nfs3_proc_lookup(struct rpc_call *call, struct xdr_out *res)
{
	struct bk_handle obj;
	struct bk_attr oattr;
	struct nfs3_name name;
	struct nfs3_fh dir;
	struct nfs_fh fh;
	struct nfs_req r;
	uint32_t st;

	if (!nfs3_get_diropargs(&call->args, &dir, &name))
		return nfs3_garbage(call, "LOOKUP");
	st = nfs3_resolve(call, &dir, &r);
	if (st == NFS3_OK && name.len == 0)
		st = NFS3ERR_NOENT; /* nothing is called "" */
	if (st == NFS3_OK)
		st = nfs3_name_check(&name);
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(r.ex->ops->lookup(
		    r.ex->bk, &r.cred, &r.bh, name.s, &obj, &oattr));
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(fh_make(r.srv, r.ex, &obj, &fh));
	xdr_put_u32(res, st);
	if (st == NFS3_OK) {
		xdr_put_opaque(res, fh.data, fh.len);
		nfs3_put_post_op_attr(res, &oattr, r.ex->fsid);
	}
	nfs3_put_attr_of(res, &r, &r.bh);
	nfs_req_done(&r);
	return nfs3_done(res);
}

/* RFC 1813 section 3.3.5 */
int nfs3_proc_readlink(struct rpc_call *call, struct xdr_out *res)
{
	char target[BK_PATH_MAX + 1];
	struct bk_attr a;
	struct nfs3_fh fh;
	struct nfs_req r;
	uint32_t st;
	bool have_attr = false;
	int n = 0;

	if (!nfs3_get_fh(&call->args, &fh))
		return nfs3_garbage(call, "READLINK");
	st = nfs3_resolve(call, &fh, &r);
	if (st == NFS3_OK) {
		st = nfs3_stat_from_errno(nfs3_getattr(&r, &r.bh, &a));
		have_attr = st == NFS3_OK;
	}
	/* READLINK of anything but a symlink is INVAL (section 3.3.5). */
	if (st == NFS3_OK && a.type != BK_LNK)
		st = NFS3ERR_INVAL;
	if (st == NFS3_OK) {
		memset(target, 0, sizeof(target));
		n = r.ex->ops->readlink(r.ex->bk, &r.cred, &r.bh, target,
		                        sizeof(target));
		if (n < 0)
			st = nfs3_stat_from_errno(n);
		else if (n == 0 || n > BK_PATH_MAX)
			/* a backend may answer 0 and a NUL-ended string */
			n = (int)strnlen(target, BK_PATH_MAX);
	}
	xdr_put_u32(res, st);
	nfs3_put_post_op_attr(res, have_attr ? &a : NULL,
	                      have_attr ? r.ex->fsid : 0);
	if (st == NFS3_OK)
		xdr_put_opaque(res, target, (uint32_t)n);
	nfs_req_done(&r);
	return nfs3_done(res);
}
