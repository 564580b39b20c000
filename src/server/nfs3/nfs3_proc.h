/* NFSv3 procedure handlers (one file per area) and the helpers they share.
 * Internal to src/server/nfs3. */
#ifndef SNFS_NFS3_PROC_H
#define SNFS_NFS3_PROC_H

#include "rpc/rpc.h"
#include "server/fh.h"
#include "server/nfs3/nfs3_xdr.h"

/* Weak cache consistency bookkeeping for one object (RFC 1813 section
 * 2.6, wcc_data): attributes just before and just after a change. */
struct nfs3_wcc {
	bool have_pre, have_post;
	struct bk_wcc_attr pre;
	struct bk_attr post;
};

/* Log one line naming the peer and procedure; returns RPC_GARBAGE_ARGS. */
int nfs3_garbage(struct rpc_call *call, const char *proc);
/* Resolve a handle into r (zeroed first). Returns NFS3_OK or BADHANDLE,
 * STALE, ACCES. The caller calls nfs_req_done(r) in every case. */
uint32_t nfs3_resolve(struct rpc_call *call, const struct nfs3_fh *fh,
                      struct nfs_req *r);
/* True once nfs3_resolve succeeded for r. */
static inline bool nfs3_resolved(const struct nfs_req *r)
{
	return r->ex != NULL;
}
int nfs3_getattr(const struct nfs_req *r, const struct bk_handle *h,
                 struct bk_attr *a);
void nfs3_wcc_pre(const struct nfs_req *r, const struct bk_handle *h,
                  struct nfs3_wcc *w);
void nfs3_wcc_post(const struct nfs_req *r, const struct bk_handle *h,
                   struct nfs3_wcc *w);
bool nfs3_put_wcc_data(struct xdr_out *x, const struct nfs_req *r,
                       const struct nfs3_wcc *w);
/* post_op_attr of h fetched now; FALSE when r is unresolved or the
 * getattr fails. */
bool nfs3_put_attr_of(struct xdr_out *x, const struct nfs_req *r,
                      const struct bk_handle *h);
/* The accept_stat for a reply whose results were encoded into res. */
int nfs3_done(struct xdr_out *res);

int nfs3_proc_getattr(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_setattr(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_access(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_fsstat(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_fsinfo(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_pathconf(struct rpc_call *call, struct xdr_out *res);

int nfs3_proc_lookup(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_readlink(struct rpc_call *call, struct xdr_out *res);

int nfs3_proc_read(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_write(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_commit(struct rpc_call *call, struct xdr_out *res);

int nfs3_proc_create(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_mkdir(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_symlink(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_mknod(struct rpc_call *call, struct xdr_out *res);

int nfs3_proc_remove(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_rmdir(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_rename(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_link(struct rpc_call *call, struct xdr_out *res);

int nfs3_proc_readdir(struct rpc_call *call, struct xdr_out *res);
int nfs3_proc_readdirplus(struct rpc_call *call, struct xdr_out *res);

#endif
