/* NFSv3 object creation: CREATE, MKDIR, SYMLINK, MKNOD (RFC 1813 sections
 * 3.3.8-3.3.11). All four answer the same shape: the new object's handle
 * and attributes, and the directory's wcc_data. */
#include <errno.h>
#include <string.h>

#include "server/nfs3/nfs3_proc.h"
#include "server/nfs4/share.h"
#include "server/snfsd.h"

/* createmode3 */
enum { UNCHECKED = 0, GUARDED = 1, EXCLUSIVE = 2 };

/* What to make, decoded from the procedure's arguments. */
struct make_args {
	int proc;
	struct bk_setattr sa;
	uint32_t how;                /* CREATE */
	uint8_t verf[8];             /* CREATE EXCLUSIVE */
	struct nfs3_path path;       /* SYMLINK */
	uint32_t type, major, minor; /* MKNOD */
};

static int backend_make(struct nfs_req *r, const struct make_args *m,
                        const char *name, struct bk_handle *out,
                        struct bk_attr *attr)
{
	const struct bk_ops *ops = r->ex->ops;
	struct bk_export *bk = r->ex->bk;

	int rc;

	switch (m->proc) {
	case NFSPROC3_CREATE:
		/* UNCHECKED on an existing file sets its attributes (a
		 * truncation, typically): NFSv4 delegations of it first. */
		if (m->how == UNCHECKED && m->sa.mask &&
		    (rc = nfs4_deleg_break_name(r->srv, r->ex, &r->cred, &r->bh,
		                                name)))
			return rc;
		return ops->create(
		    bk, &r->cred, &r->bh, name, (enum bk_create_mode)m->how,
		    m->how == EXCLUSIVE ? NULL : &m->sa,
		    m->how == EXCLUSIVE ? m->verf : NULL, out, attr);
	case NFSPROC3_MKDIR:
		return ops->mkdir(bk, &r->cred, &r->bh, name, &m->sa, out,
		                  attr);
	case NFSPROC3_SYMLINK:
		return ops->symlink(bk, &r->cred, &r->bh, name, m->path.s,
		                    &m->sa, out, attr);
	case NFSPROC3_MKNOD:
		return ops->mknod(bk, &r->cred, &r->bh, name,
		                  (enum bk_ftype)m->type, m->major, m->minor,
		                  &m->sa, out, attr);
	}
	return -EINVAL;
}

/* A status the arguments alone decide, before touching the directory. */
static uint32_t args_status(const struct make_args *m)
{
	if (m->proc == NFSPROC3_SYMLINK) {
		if (m->path.too_long)
			return NFS3ERR_NAMETOOLONG;
		if (m->path.len == 0 || m->path.bad_char)
			return NFS3ERR_INVAL;
	}
	/* RFC 1813 section 3.3.11: MKNOD makes only special files. */
	if (m->proc == NFSPROC3_MKNOD &&
	    (m->type == NF3REG || m->type == NF3DIR || m->type == NF3LNK))
		return NFS3ERR_BADTYPE;
	return NFS3_OK;
}

static int make_object(struct rpc_call *call, struct xdr_out *res,
                       const struct nfs3_fh *dir, const struct nfs3_name *name,
                       const struct make_args *m)
{
	struct nfs3_wcc w = {0};
	struct bk_handle obj;
	struct bk_attr oattr;
	struct nfs_fh fh;
	struct nfs_req r;
	bool have_fh = false;
	uint32_t st;

	st = nfs3_resolve(call, dir, &r);
	if (st == NFS3_OK)
		nfs3_wcc_pre(&r, &r.bh, &w);
	if (st == NFS3_OK)
		st = nfs3_name_check(name);
	/* Linux nfsd answers EXIST for creating "." or "..": they exist. */
	if (st == NFS3_OK && nfs3_name_is_dot(name))
		st = NFS3ERR_EXIST;
	if (st == NFS3_OK)
		st = args_status(m);
	if (st == NFS3_OK && !r.rw)
		st = NFS3ERR_ROFS;
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(
		    backend_make(&r, m, name->s, &obj, &oattr));
	/* Without a handle the client does a LOOKUP (post_op_fh3). */
	if (st == NFS3_OK)
		have_fh = fh_make(r.srv, r.ex, &obj, &fh) == 0;
	if (nfs3_resolved(&r))
		nfs3_wcc_post(&r, &r.bh, &w);
	xdr_put_u32(res, st);
	if (st == NFS3_OK) {
		nfs3_put_post_op_fh(res, have_fh ? &fh : NULL);
		nfs3_put_post_op_attr(res, &oattr, r.ex->fsid);
	}
	nfs3_put_wcc_data(res, &r, &w);
	nfs_req_done(&r);
	return nfs3_done(res);
}

/* RFC 1813 section 3.3.8 */
int nfs3_proc_create(struct rpc_call *call, struct xdr_out *res)
{
	struct make_args m = {.proc = NFSPROC3_CREATE};
	struct nfs3_name name;
	struct nfs3_fh dir;
	struct xdr_in *x = &call->args;

	if (!nfs3_get_diropargs(x, &dir, &name) || !xdr_get_u32(x, &m.how))
		return nfs3_garbage(call, "CREATE");
	switch (m.how) {
	case UNCHECKED:
	case GUARDED:
		if (!nfs3_get_sattr(x, &m.sa))
			return nfs3_garbage(call, "CREATE");
		break;
	case EXCLUSIVE:
		if (!xdr_get_fixed(x, m.verf, sizeof(m.verf)))
			return nfs3_garbage(call, "CREATE");
		break;
	default:
		return nfs3_garbage(call, "CREATE");
	}
	return make_object(call, res, &dir, &name, &m);
}

/* RFC 1813 section 3.3.9 */
int nfs3_proc_mkdir(struct rpc_call *call, struct xdr_out *res)
{
	struct make_args m = {.proc = NFSPROC3_MKDIR};
	struct nfs3_name name;
	struct nfs3_fh dir;

	if (!nfs3_get_diropargs(&call->args, &dir, &name) ||
	    !nfs3_get_sattr(&call->args, &m.sa))
		return nfs3_garbage(call, "MKDIR");
	return make_object(call, res, &dir, &name, &m);
}

/* RFC 1813 section 3.3.10 */
int nfs3_proc_symlink(struct rpc_call *call, struct xdr_out *res)
{
	struct make_args m = {.proc = NFSPROC3_SYMLINK};
	struct nfs3_name name;
	struct nfs3_fh dir;

	if (!nfs3_get_diropargs(&call->args, &dir, &name) ||
	    !nfs3_get_sattr(&call->args, &m.sa) ||
	    !nfs3_get_path(&call->args, &m.path))
		return nfs3_garbage(call, "SYMLINK");
	return make_object(call, res, &dir, &name, &m);
}

/* RFC 1813 section 3.3.11: mknoddata3 is a union on the file type. */
int nfs3_proc_mknod(struct rpc_call *call, struct xdr_out *res)
{
	struct make_args m = {.proc = NFSPROC3_MKNOD};
	struct xdr_in *x = &call->args;
	struct nfs3_name name;
	struct nfs3_fh dir;

	if (!nfs3_get_diropargs(x, &dir, &name) || !xdr_get_u32(x, &m.type))
		return nfs3_garbage(call, "MKNOD");
	switch (m.type) {
	case NF3CHR:
	case NF3BLK:
		if (!nfs3_get_sattr(x, &m.sa) || !xdr_get_u32(x, &m.major) ||
		    !xdr_get_u32(x, &m.minor))
			return nfs3_garbage(call, "MKNOD");
		break;
	case NF3SOCK:
	case NF3FIFO:
		if (!nfs3_get_sattr(x, &m.sa))
			return nfs3_garbage(call, "MKNOD");
		break;
	case NF3REG:
	case NF3DIR:
	case NF3LNK:
		break; /* void arm; answered BADTYPE */
	default:
		return nfs3_garbage(call, "MKNOD");
	}
	return make_object(call, res, &dir, &name, &m);
}
