/* NFSv3 attribute procedures: GETATTR, SETATTR, ACCESS, FSSTAT, FSINFO,
 * PATHCONF (RFC 1813 sections 3.3.1-3.3.4, 3.3.18-3.3.20). */
#include <errno.h>

#include "server/nfs3/nfs3_proc.h"
#include "server/nfs4/share.h"
#include "server/snfsd.h"

/* RFC 1813 section 3.3.1 */
int nfs3_proc_getattr(struct rpc_call *call, struct xdr_out *res)
{
	struct nfs3_fh fh;
	struct nfs_req r;
	struct bk_attr a;
	uint32_t st;

	if (!nfs3_get_fh(&call->args, &fh))
		return nfs3_garbage(call, "GETATTR");
	st = nfs3_resolve(call, &fh, &r);
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(nfs3_getattr(&r, &r.bh, &a));
	xdr_put_u32(res, st);
	if (st == NFS3_OK)
		nfs3_put_fattr(res, &a, r.ex->fsid);
	nfs_req_done(&r);
	return nfs3_done(res);
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return (uint32_t)a->tv_sec == (uint32_t)b->tv_sec &&
	       a->tv_nsec == b->tv_nsec;
}

/* RFC 1813 section 3.3.2: the guard makes the change conditional on the
 * object's ctime still being what the client last saw. */
int nfs3_proc_setattr(struct rpc_call *call, struct xdr_out *res)
{
	struct nfs3_wcc w = {0};
	struct bk_setattr sa;
	struct timespec guard_ctime = {0};
	struct nfs3_fh fh;
	struct nfs_req r;
	struct bk_attr before;
	bool guard;
	uint32_t st, sec, nsec;
	int err;

	if (!nfs3_get_fh(&call->args, &fh) ||
	    !nfs3_get_sattr(&call->args, &sa) ||
	    !xdr_get_bool(&call->args, &guard))
		return nfs3_garbage(call, "SETATTR");
	if (guard) {
		if (!xdr_get_u32(&call->args, &sec) ||
		    !xdr_get_u32(&call->args, &nsec))
			return nfs3_garbage(call, "SETATTR");
		guard_ctime.tv_sec = sec;
		guard_ctime.tv_nsec = nsec;
	}
	st = nfs3_resolve(call, &fh, &r);
	if (st == NFS3_OK) {
		err = nfs3_getattr(&r, &r.bh, &before);
		st = nfs3_stat_from_errno(err);
	}
	if (st == NFS3_OK) {
		w.have_pre = true;
		nfs3_wcc_from_attr(&before, &w.pre);
		if (!r.rw)
			st = NFS3ERR_ROFS;
		else if (guard && !same_time(&guard_ctime, &before.ctime))
			st = NFS3ERR_NOT_SYNC;
		else if ((sa.mask & BK_SET_SIZE) && before.type == BK_REG &&
		         nfs4_share_check(r.srv, r.ex, &r.bh, true))
			st = NFS3ERR_ACCES; /* an NFSv4 OPEN denies writing */
		else
			st = nfs3_stat_from_errno(
			    nfs4_deleg_break(r.srv, r.ex, &r.bh));
	}
	if (st == NFS3_OK) {
		err =
		    r.ex->ops->setattr(r.ex->bk, &r.cred, &r.bh, &sa, &w.post);
		st = nfs3_stat_from_errno(err);
		w.have_post = err == 0;
	}
	if (nfs3_resolved(&r) && !w.have_post)
		nfs3_wcc_post(&r, &r.bh, &w);
	xdr_put_u32(res, st);
	nfs3_put_wcc_data(res, &r, &w);
	nfs_req_done(&r);
	return nfs3_done(res);
}

/* RFC 1813 section 3.3.4: the backend asks the file system; a read-only
 * export additionally withholds every right that would change data. */
int nfs3_proc_access(struct rpc_call *call, struct xdr_out *res)
{
	struct nfs3_fh fh;
	struct nfs_req r;
	uint32_t want, granted = 0, st;

	if (!nfs3_get_fh(&call->args, &fh) || !xdr_get_u32(&call->args, &want))
		return nfs3_garbage(call, "ACCESS");
	want &= BK_ACCESS_READ | BK_ACCESS_LOOKUP | BK_ACCESS_MODIFY |
	        BK_ACCESS_EXTEND | BK_ACCESS_DELETE | BK_ACCESS_EXECUTE;
	st = nfs3_resolve(call, &fh, &r);
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(r.ex->ops->access(
		    r.ex->bk, &r.cred, &r.bh, want, &granted));
	if (st == NFS3_OK && !r.rw)
		granted &= ~(uint32_t)(BK_ACCESS_MODIFY | BK_ACCESS_EXTEND |
		                       BK_ACCESS_DELETE);
	xdr_put_u32(res, st);
	nfs3_put_attr_of(res, &r, &r.bh);
	if (st == NFS3_OK)
		xdr_put_u32(res, granted & want);
	nfs_req_done(&r);
	return nfs3_done(res);
}

/* RFC 1813 section 3.3.18 */
int nfs3_proc_fsstat(struct rpc_call *call, struct xdr_out *res)
{
	struct bk_statfs sf;
	struct nfs3_fh fh;
	struct nfs_req r;
	uint32_t st;

	if (!nfs3_get_fh(&call->args, &fh))
		return nfs3_garbage(call, "FSSTAT");
	st = nfs3_resolve(call, &fh, &r);
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(
		    r.ex->ops->statfs(r.ex->bk, &r.bh, &sf));
	xdr_put_u32(res, st);
	nfs3_put_attr_of(res, &r, &r.bh);
	if (st == NFS3_OK) {
		xdr_put_u64(res, sf.tbytes);
		xdr_put_u64(res, sf.fbytes);
		xdr_put_u64(res, sf.abytes);
		xdr_put_u64(res, sf.tfiles);
		xdr_put_u64(res, sf.ffiles);
		xdr_put_u64(res, sf.afiles);
		xdr_put_u32(res, 0); /* invarsec: the numbers may change */
	}
	nfs_req_done(&r);
	return nfs3_done(res);
}

/* FSINFO properties (RFC 1813 section 3.3.19) */
enum {
	FSF3_LINK = 0x0001,
	FSF3_SYMLINK = 0x0002,
	FSF3_HOMOGENEOUS = 0x0008,
	FSF3_CANSETTIME = 0x0010,
};

/* RFC 1813 section 3.3.19: snfsd moves up to 1 MiB per READ, WRITE and
 * READDIR; buffers are page sized so multiples of 4096 are best. */
int nfs3_proc_fsinfo(struct rpc_call *call, struct xdr_out *res)
{
	static const struct timespec delta = {.tv_sec = 0, .tv_nsec = 1};
	struct nfs3_fh fh;
	struct nfs_req r;
	uint32_t st;

	if (!nfs3_get_fh(&call->args, &fh))
		return nfs3_garbage(call, "FSINFO");
	st = nfs3_resolve(call, &fh, &r);
	xdr_put_u32(res, st);
	nfs3_put_attr_of(res, &r, &r.bh);
	if (st == NFS3_OK) {
		xdr_put_u32(res, NFS3_MAX_IO); /* rtmax */
		xdr_put_u32(res, NFS3_MAX_IO); /* rtpref */
		xdr_put_u32(res, 4096);        /* rtmult */
		xdr_put_u32(res, NFS3_MAX_IO); /* wtmax */
		xdr_put_u32(res, NFS3_MAX_IO); /* wtpref */
		xdr_put_u32(res, 4096);        /* wtmult */
		xdr_put_u32(res, NFS3_MAX_IO); /* dtpref */
		xdr_put_u64(res, INT64_MAX);   /* maxfilesize */
		nfs3_put_time(res, &delta);
		xdr_put_u32(res, FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS |
		                     FSF3_CANSETTIME);
	}
	nfs_req_done(&r);
	return nfs3_done(res);
}

/* RFC 1813 section 3.3.20 */
int nfs3_proc_pathconf(struct rpc_call *call, struct xdr_out *res)
{
	struct bk_statfs sf;
	struct nfs3_fh fh;
	struct nfs_req r;
	uint32_t st, name_max;

	if (!nfs3_get_fh(&call->args, &fh))
		return nfs3_garbage(call, "PATHCONF");
	st = nfs3_resolve(call, &fh, &r);
	if (st == NFS3_OK)
		st = nfs3_stat_from_errno(
		    r.ex->ops->statfs(r.ex->bk, &r.bh, &sf));
	xdr_put_u32(res, st);
	nfs3_put_attr_of(res, &r, &r.bh);
	if (st == NFS3_OK) {
		/* Names longer than 255 bytes never cross the wire. */
		name_max = sf.name_max && sf.name_max < NFS3_NAME_MAX
		               ? sf.name_max
		               : NFS3_NAME_MAX;
		xdr_put_u32(res, sf.link_max ? sf.link_max : 1);
		xdr_put_u32(res, name_max);
		xdr_put_bool(res, true);  /* no_trunc */
		xdr_put_bool(res, true);  /* chown_restricted */
		xdr_put_bool(res, false); /* case_insensitive */
		xdr_put_bool(res, true);  /* case_preserving */
	}
	nfs_req_done(&r);
	return nfs3_done(res);
}
