/* NFSv3 (RFC 1813): the dispatch table and helpers shared by the
 * procedure files. */
#include <errno.h>
#include <string.h>

#include "server/nfs3/nfs3_proc.h"
#include "server/snfsd.h"
#include "util/log.h"

int nfs3_garbage(struct rpc_call *call, const char *proc)
{
	char peer[128];

	log_warn("nfs3 %s from %s: malformed arguments", proc,
	         rpc_peer_str((const struct sockaddr *)&call->peer, peer,
	                      sizeof(peer)));
	return RPC_GARBAGE_ARGS;
}

/* nfsstat3 names (RFC 1813 section 2.6), for the error log. */
static const char *nfs3_status_name(uint32_t st)
{
	static const struct {
		uint32_t st;
		const char *name;
	} names[] = {
	    {NFS3_OK, "NFS3_OK"},
	    {NFS3ERR_PERM, "NFS3ERR_PERM"},
	    {NFS3ERR_NOENT, "NFS3ERR_NOENT"},
	    {NFS3ERR_IO, "NFS3ERR_IO"},
	    {NFS3ERR_NXIO, "NFS3ERR_NXIO"},
	    {NFS3ERR_ACCES, "NFS3ERR_ACCES"},
	    {NFS3ERR_EXIST, "NFS3ERR_EXIST"},
	    {NFS3ERR_XDEV, "NFS3ERR_XDEV"},
	    {NFS3ERR_NODEV, "NFS3ERR_NODEV"},
	    {NFS3ERR_NOTDIR, "NFS3ERR_NOTDIR"},
	    {NFS3ERR_ISDIR, "NFS3ERR_ISDIR"},
	    {NFS3ERR_INVAL, "NFS3ERR_INVAL"},
	    {NFS3ERR_FBIG, "NFS3ERR_FBIG"},
	    {NFS3ERR_NOSPC, "NFS3ERR_NOSPC"},
	    {NFS3ERR_ROFS, "NFS3ERR_ROFS"},
	    {NFS3ERR_MLINK, "NFS3ERR_MLINK"},
	    {NFS3ERR_NAMETOOLONG, "NFS3ERR_NAMETOOLONG"},
	    {NFS3ERR_NOTEMPTY, "NFS3ERR_NOTEMPTY"},
	    {NFS3ERR_DQUOT, "NFS3ERR_DQUOT"},
	    {NFS3ERR_STALE, "NFS3ERR_STALE"},
	    {NFS3ERR_REMOTE, "NFS3ERR_REMOTE"},
	    {NFS3ERR_BADHANDLE, "NFS3ERR_BADHANDLE"},
	    {NFS3ERR_NOT_SYNC, "NFS3ERR_NOT_SYNC"},
	    {NFS3ERR_BAD_COOKIE, "NFS3ERR_BAD_COOKIE"},
	    {NFS3ERR_NOTSUPP, "NFS3ERR_NOTSUPP"},
	    {NFS3ERR_TOOSMALL, "NFS3ERR_TOOSMALL"},
	    {NFS3ERR_SERVERFAULT, "NFS3ERR_SERVERFAULT"},
	    {NFS3ERR_BADTYPE, "NFS3ERR_BADTYPE"},
	    {NFS3ERR_JUKEBOX, "NFS3ERR_JUKEBOX"},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].st == st)
			return names[i].name;
	return NULL;
}

uint32_t nfs3_resolve(struct rpc_call *call, const struct nfs3_fh *fh,
                      struct nfs_req *r)
{
	int err;

	memset(r, 0, sizeof(*r));
	/* Every procedure but NULL resolves a handle and opens its results
	 * with an nfsstat3: tell the statistics (src/rpc/stats.h). */
	call->status_first = true;
	call->status_name = nfs3_status_name;
	rpc_call_set_fh(call, fh->data, fh->len);
	err = nfs_req_resolve(call, fh->data, fh->len, r);
	if (err == 0 && r->ex)
		return NFS3_OK;
	r->ex = NULL; /* nfs3_resolved() must say no */
	switch (err) {
	case -EBADF:
		return NFS3ERR_BADHANDLE;
	case -ESTALE:
		return NFS3ERR_STALE;
	case -EACCES:
		return NFS3ERR_ACCES;
	case 0:
		return NFS3ERR_SERVERFAULT;
	default:
		return nfs3_stat_from_errno(err);
	}
}

int nfs3_getattr(const struct nfs_req *r, const struct bk_handle *h,
                 struct bk_attr *a)
{
	if (!nfs3_resolved(r))
		return -ESTALE;
	return r->ex->ops->getattr(r->ex->bk, h, a);
}

void nfs3_wcc_pre(const struct nfs_req *r, const struct bk_handle *h,
                  struct nfs3_wcc *w)
{
	struct bk_attr a;

	w->have_pre = nfs3_getattr(r, h, &a) == 0;
	if (w->have_pre)
		nfs3_wcc_from_attr(&a, &w->pre);
}

void nfs3_wcc_post(const struct nfs_req *r, const struct bk_handle *h,
                   struct nfs3_wcc *w)
{
	w->have_post = nfs3_getattr(r, h, &w->post) == 0;
}

bool nfs3_put_wcc_data(struct xdr_out *x, const struct nfs_req *r,
                       const struct nfs3_wcc *w)
{
	uint32_t fsid = nfs3_resolved(r) ? r->ex->fsid : 0;

	return nfs3_put_wcc(x, w->have_pre ? &w->pre : NULL,
	                    w->have_post ? &w->post : NULL, fsid);
}

bool nfs3_put_attr_of(struct xdr_out *x, const struct nfs_req *r,
                      const struct bk_handle *h)
{
	struct bk_attr a;

	if (nfs3_getattr(r, h, &a) != 0)
		return nfs3_put_post_op_attr(x, NULL, 0);
	return nfs3_put_post_op_attr(x, &a, r->ex->fsid);
}

int nfs3_done(struct xdr_out *res)
{
	return res->err ? RPC_SYSTEM_ERR : RPC_SUCCESS;
}

/* RFC 1813 section 3.3.0: NULL does nothing, for pinging the server. */
static int nfs3_proc_null(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	return RPC_SUCCESS;
}

static const struct rpc_proc nfs3_procs[NFS3_NPROCS] = {
    [NFSPROC3_NULL] = {"NULL", nfs3_proc_null},
    [NFSPROC3_GETATTR] = {"GETATTR", nfs3_proc_getattr},
    [NFSPROC3_SETATTR] = {"SETATTR", nfs3_proc_setattr},
    [NFSPROC3_LOOKUP] = {"LOOKUP", nfs3_proc_lookup},
    [NFSPROC3_ACCESS] = {"ACCESS", nfs3_proc_access},
    [NFSPROC3_READLINK] = {"READLINK", nfs3_proc_readlink},
    [NFSPROC3_READ] = {"READ", nfs3_proc_read},
    [NFSPROC3_WRITE] = {"WRITE", nfs3_proc_write},
    [NFSPROC3_CREATE] = {"CREATE", nfs3_proc_create},
    [NFSPROC3_MKDIR] = {"MKDIR", nfs3_proc_mkdir},
    [NFSPROC3_SYMLINK] = {"SYMLINK", nfs3_proc_symlink},
    [NFSPROC3_MKNOD] = {"MKNOD", nfs3_proc_mknod},
    [NFSPROC3_REMOVE] = {"REMOVE", nfs3_proc_remove},
    [NFSPROC3_RMDIR] = {"RMDIR", nfs3_proc_rmdir},
    [NFSPROC3_RENAME] = {"RENAME", nfs3_proc_rename},
    [NFSPROC3_LINK] = {"LINK", nfs3_proc_link},
    [NFSPROC3_READDIR] = {"READDIR", nfs3_proc_readdir},
    [NFSPROC3_READDIRPLUS] = {"READDIRPLUS", nfs3_proc_readdirplus},
    [NFSPROC3_FSSTAT] = {"FSSTAT", nfs3_proc_fsstat},
    [NFSPROC3_FSINFO] = {"FSINFO", nfs3_proc_fsinfo},
    [NFSPROC3_PATHCONF] = {"PATHCONF", nfs3_proc_pathconf},
    [NFSPROC3_COMMIT] = {"COMMIT", nfs3_proc_commit},
};

const struct rpc_version nfs3_version = {
    .vers = 3,
    .procs = nfs3_procs,
    .nprocs = NFS3_NPROCS,
};
