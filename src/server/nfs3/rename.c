/* NFSv3 procedures on two objects: RENAME and LINK (RFC 1813 sections
 * 3.3.14, 3.3.15). The second handle must be on the same export. */
#include <errno.h>
#include <string.h>

#include "server/nfs3/nfs3_proc.h"
#include "server/nfs4/share.h"
#include "server/snfsd.h"

/* Resolve the second handle of a call into bh (same export as r). */
static uint32_t resolve_second(const struct nfs_req *r,
                               const struct nfs3_fh *fh, struct bk_handle *bh)
{
	int err = nfs_req_resolve2(r, fh->data, fh->len, bh);

	/* -EXDEV: a handle of another export (RFC 1813: XDEV). */
	return err == -EBADF ? NFS3ERR_BADHANDLE : nfs3_stat_from_errno(err);
}

/* A name RENAME may use on either side: not ".", "..". Linux nfsd and
 * rename(2) say INVAL for those. */
static uint32_t rename_name_status(const struct nfs3_name *name)
{
	uint32_t st = nfs3_name_check(name);

	if (st == NFS3_OK && nfs3_name_is_dot(name))
		st = NFS3ERR_INVAL;
	return st;
}

/* RFC 1813 section 3.3.14: from and to directories may differ; the reply
 * carries wcc_data for both. */
int nfs3_proc_rename(struct rpc_call *call, struct xdr_out *res)
{
	struct nfs3_wcc fw = {0}, tw = {0};
	struct nfs3_name from, to;
	struct nfs3_fh fdir, tdir;
	struct bk_handle tbh;
	struct nfs_req r;
	bool have_to = false;
	uint32_t st;

	if (!nfs3_get_diropargs(&call->args, &fdir, &from) ||
	    !nfs3_get_diropargs(&call->args, &tdir, &to))
		return nfs3_garbage(call, "RENAME");
	st = nfs3_resolve(call, &fdir, &r);
	if (st == NFS3_OK) {
		st = resolve_second(&r, &tdir, &tbh);
		have_to = st == NFS3_OK;
	}
	if (st == NFS3_OK) {
		nfs3_wcc_pre(&r, &r.bh, &fw);
		nfs3_wcc_pre(&r, &tbh, &tw);
		st = rename_name_status(&from);
	}
	if (st == NFS3_OK)
		st = rename_name_status(&to);
	if (st == NFS3_OK && !r.rw)
		st = NFS3ERR_ROFS;
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(
		    nfs4_deleg_break_name(r.srv, r.ex, &r.cred, &r.bh, from.s));
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(
		    nfs4_deleg_break_name(r.srv, r.ex, &r.cred, &tbh, to.s));
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(r.ex->ops->rename(
		    r.ex->bk, &r.cred, &r.bh, from.s, &tbh, to.s));
	if (nfs3_resolved(&r))
		nfs3_wcc_post(&r, &r.bh, &fw);
	if (have_to)
		nfs3_wcc_post(&r, &tbh, &tw);
	xdr_put_u32(res, st);
	nfs3_put_wcc_data(res, &r, &fw);
	nfs3_put_wcc_data(res, &r, &tw);
	nfs_req_done(&r);
	return nfs3_done(res);
}

/* RFC 1813 section 3.3.15: the file's attributes (its nlink changed) and
 * the directory's wcc_data. */
int nfs3_proc_link(struct rpc_call *call, struct xdr_out *res)
{
	struct nfs3_wcc dw = {0};
	struct nfs3_fh file, dir;
	struct nfs3_name name;
	struct bk_handle dbh;
	struct nfs_req r;
	bool have_dir = false;
	uint32_t st;

	if (!nfs3_get_fh(&call->args, &file) ||
	    !nfs3_get_diropargs(&call->args, &dir, &name))
		return nfs3_garbage(call, "LINK");
	st = nfs3_resolve(call, &file, &r);
	if (st == NFS3_OK) {
		st = resolve_second(&r, &dir, &dbh);
		have_dir = st == NFS3_OK;
	}
	if (st == NFS3_OK) {
		nfs3_wcc_pre(&r, &dbh, &dw);
		st = nfs3_name_check(&name);
	}
	if (st == NFS3_OK && nfs3_name_is_dot(&name))
		st = NFS3ERR_EXIST;
	if (st == NFS3_OK && !r.rw)
		st = NFS3ERR_ROFS;
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(nfs4_deleg_break(r.srv, r.ex, &r.bh));
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(
		    r.ex->ops->link(r.ex->bk, &r.cred, &r.bh, &dbh, name.s));
	if (have_dir)
		nfs3_wcc_post(&r, &dbh, &dw);
	xdr_put_u32(res, st);
	nfs3_put_attr_of(res, &r, &r.bh);
	nfs3_put_wcc_data(res, &r, &dw);
	nfs_req_done(&r);
	return nfs3_done(res);
}
