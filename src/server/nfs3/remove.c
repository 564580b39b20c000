/* NFSv3 removal: REMOVE and RMDIR (RFC 1813 sections 3.3.12, 3.3.13). */
#include <string.h>

#include "server/nfs3/nfs3_proc.h"
#include "server/nfs4/share.h"
#include "server/snfsd.h"

/* "." and ".." are never removed by name. Linux nfsd answers ACCES for
 * REMOVE; RMDIR says INVAL as rmdir(2) does for ".". */
static uint32_t remove_name_status(int proc, const struct nfs3_name *name)
{
	uint32_t st = nfs3_name_check(name);

	if (st != NFS3_OK)
		return st;
	if (nfs3_name_is_dot(name))
		return proc == NFSPROC3_RMDIR ? NFS3ERR_INVAL : NFS3ERR_ACCES;
	return NFS3_OK;
}

/* Both procedures answer the directory's wcc_data and nothing else. */
static int remove_common(struct rpc_call *call, struct xdr_out *res, int proc)
{
	const char *pname = proc == NFSPROC3_RMDIR ? "RMDIR" : "REMOVE";
	struct nfs3_wcc w = {0};
	struct nfs3_name name;
	struct nfs3_fh dir;
	struct nfs_req r;
	uint32_t st;
	int err;

	if (!nfs3_get_diropargs(&call->args, &dir, &name))
		return nfs3_garbage(call, pname);
	st = nfs3_resolve(call, &dir, &r);
	if (st == NFS3_OK) {
		nfs3_wcc_pre(&r, &r.bh, &w);
		st = remove_name_status(proc, &name);
	}
	if (st == NFS3_OK && !r.rw)
		st = NFS3ERR_ROFS;
	if (st == NFS3_OK && proc == NFSPROC3_REMOVE)
		st = nfs3_stat_from_errno(
		    nfs4_deleg_break_name(r.srv, r.ex, &r.cred, &r.bh, name.s));
	if (st == NFS3_OK) {
		if (proc == NFSPROC3_RMDIR)
			err =
			    r.ex->ops->rmdir(r.ex->bk, &r.cred, &r.bh, name.s);
		else
			err =
			    r.ex->ops->remove(r.ex->bk, &r.cred, &r.bh, name.s);
		st = nfs3_stat_from_errno(err);
	}
	if (nfs3_resolved(&r))
		nfs3_wcc_post(&r, &r.bh, &w);
	xdr_put_u32(res, st);
	nfs3_put_wcc_data(res, &r, &w);
	nfs_req_done(&r);
	return nfs3_done(res);
}

/* RFC 1813 section 3.3.12 */
int nfs3_proc_remove(struct rpc_call *call, struct xdr_out *res)
{
	return remove_common(call, res, NFSPROC3_REMOVE);
}

/* RFC 1813 section 3.3.13 */
int nfs3_proc_rmdir(struct rpc_call *call, struct xdr_out *res)
{
	return remove_common(call, res, NFSPROC3_RMDIR);
}
