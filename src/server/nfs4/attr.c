/* NFSv4 attributes (RFC 7530 5, RFC 8881 5): fattr4 encoding for GETATTR
 * and READDIR, decoding for SETATTR/CREATE/OPEN, VERIFY and NVERIFY.
 *
 * Owners travel as numeric strings ("0", "1000") unless the export says
 * idmap=names: RFC 7530 5.9 allows numbers with AUTH_SYS, and the Linux
 * client (nfs4_disable_idmapping, the default for AUTH_SYS) sends and
 * reads them without an idmapper. With idmap=names, ids with a passwd or
 * group entry go as "name@domain" (idmap.c), the others as numbers.
 * SETATTR, OPEN and CREATE take numbers and names of our domain on every
 * export. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/idmap.h"
#include "server/nfs4/nfs4.h"
#include "server/snfsd.h"

enum {
	A_SUPPORTED_ATTRS = 0,
	A_TYPE = 1,
	A_FH_EXPIRE_TYPE = 2,
	A_CHANGE = 3,
	A_SIZE = 4,
	A_LINK_SUPPORT = 5,
	A_SYMLINK_SUPPORT = 6,
	A_NAMED_ATTR = 7,
	A_FSID = 8,
	A_UNIQUE_HANDLES = 9,
	A_LEASE_TIME = 10,
	A_RDATTR_ERROR = 11,
	A_ACL = 12,
	A_ACLSUPPORT = 13,
	A_CANSETTIME = 15,
	A_CASE_INSENSITIVE = 16,
	A_CASE_PRESERVING = 17,
	A_CHOWN_RESTRICTED = 18,
	A_FILEHANDLE = 19,
	A_FILEID = 20,
	A_FILES_AVAIL = 21,
	A_FILES_FREE = 22,
	A_FILES_TOTAL = 23,
	A_HOMOGENEOUS = 26,
	A_MAXFILESIZE = 27,
	A_MAXLINK = 28,
	A_MAXNAME = 29,
	A_MAXREAD = 30,
	A_MAXWRITE = 31,
	A_MODE = 33,
	A_NO_TRUNC = 34,
	A_NUMLINKS = 35,
	A_OWNER = 36,
	A_OWNER_GROUP = 37,
	A_RAWDEV = 41,
	A_SPACE_AVAIL = 42,
	A_SPACE_FREE = 43,
	A_SPACE_TOTAL = 44,
	A_SPACE_USED = 45,
	A_TIME_ACCESS = 47,
	A_TIME_ACCESS_SET = 48,
	A_TIME_DELTA = 51,
	A_TIME_METADATA = 52,
	A_TIME_MODIFY = 53,
	A_TIME_MODIFY_SET = 54,
	A_MOUNTED_ON_FILEID = 55,
	A_SUPPATTR_EXCLCREAT = 75,
	A_LAST = 75,
};

#define BIT(a) (1u << ((a)&31))
#define WORD(a) ((a) >> 5)

static bool bm_has(const uint32_t bm[3], unsigned a)
{
	return WORD(a) < 3 && (bm[WORD(a)] & BIT(a));
}

static void bm_set(uint32_t bm[3], unsigned a)
{
	bm[WORD(a)] |= BIT(a);
}

void nfs4_supported_attrs(uint32_t minor, uint32_t bm[3])
{
	static const uint8_t attrs[] = {
	    A_SUPPORTED_ATTRS,
	    A_TYPE,
	    A_FH_EXPIRE_TYPE,
	    A_CHANGE,
	    A_SIZE,
	    A_LINK_SUPPORT,
	    A_SYMLINK_SUPPORT,
	    A_NAMED_ATTR,
	    A_FSID,
	    A_UNIQUE_HANDLES,
	    A_LEASE_TIME,
	    A_RDATTR_ERROR,
	    A_ACLSUPPORT,
	    A_CANSETTIME,
	    A_CASE_INSENSITIVE,
	    A_CASE_PRESERVING,
	    A_CHOWN_RESTRICTED,
	    A_FILEHANDLE,
	    A_FILEID,
	    A_FILES_AVAIL,
	    A_FILES_FREE,
	    A_FILES_TOTAL,
	    A_HOMOGENEOUS,
	    A_MAXFILESIZE,
	    A_MAXLINK,
	    A_MAXNAME,
	    A_MAXREAD,
	    A_MAXWRITE,
	    A_MODE,
	    A_NO_TRUNC,
	    A_NUMLINKS,
	    A_OWNER,
	    A_OWNER_GROUP,
	    A_RAWDEV,
	    A_SPACE_AVAIL,
	    A_SPACE_FREE,
	    A_SPACE_TOTAL,
	    A_SPACE_USED,
	    A_TIME_ACCESS,
	    A_TIME_ACCESS_SET,
	    A_TIME_DELTA,
	    A_TIME_METADATA,
	    A_TIME_MODIFY,
	    A_TIME_MODIFY_SET,
	    A_MOUNTED_ON_FILEID,
	};

	bm[0] = bm[1] = bm[2] = 0;
	for (size_t i = 0; i < sizeof(attrs); i++)
		bm_set(bm, attrs[i]);
	/* suppattr_exclcreat is a 4.1 attribute (RFC 8881 5.8.1.14). */
	if (minor >= 1)
		bm_set(bm, A_SUPPATTR_EXCLCREAT);
}

bool nfs4_attrs_from_dirent(uint32_t minor, const uint32_t req[3])
{
	/* Constants, those of the export (fsid, lease time) and the two
	 * that a directory entry carries. */
	static const uint8_t attrs[] = {
	    A_SUPPORTED_ATTRS,
	    A_TYPE,
	    A_FH_EXPIRE_TYPE,
	    A_LINK_SUPPORT,
	    A_SYMLINK_SUPPORT,
	    A_NAMED_ATTR,
	    A_FSID,
	    A_UNIQUE_HANDLES,
	    A_LEASE_TIME,
	    A_RDATTR_ERROR,
	    A_ACLSUPPORT,
	    A_CANSETTIME,
	    A_CASE_INSENSITIVE,
	    A_CASE_PRESERVING,
	    A_CHOWN_RESTRICTED,
	    A_FILEID,
	    A_HOMOGENEOUS,
	    A_MAXFILESIZE,
	    A_MAXNAME,
	    A_MAXREAD,
	    A_MAXWRITE,
	    A_NO_TRUNC,
	    A_TIME_ACCESS_SET,
	    A_TIME_DELTA,
	    A_TIME_MODIFY_SET,
	    A_MOUNTED_ON_FILEID,
	    A_SUPPATTR_EXCLCREAT,
	};
	uint32_t ok[3] = {0, 0, 0}, sup[3];

	nfs4_supported_attrs(minor, sup);
	for (size_t i = 0; i < sizeof(attrs); i++)
		bm_set(ok, attrs[i]);
	for (int i = 0; i < 3; i++)
		if (req[i] & sup[i] & ~ok[i])
			return false;
	return true;
}

/* What EXCLUSIVE4_1 may set with the verifier: not the times, which hold
 * the verifier (RFC 8881 18.16.3). */
void nfs4_exclcreat_attrs(uint32_t bm[3])
{
	bm[0] = bm[1] = bm[2] = 0;
	bm_set(bm, A_SIZE);
	bm_set(bm, A_MODE);
	bm_set(bm, A_OWNER);
	bm_set(bm, A_OWNER_GROUP);
}

static void pseudo_attr(const struct nfs4_compound *c, const struct nfs4_fh *fh,
                        struct bk_attr *a)
{
	uint64_t boot = c->srv->boot_time_ns;

	memset(a, 0, sizeof(*a));
	a->type = BK_DIR;
	a->mode = 0555;
	a->nlink = 2;
	a->size = 4096;
	a->used = 4096;
	a->fileid = nfs4_pseudo_fileid(fh);
	a->atime.tv_sec = (time_t)(boot / 1000000000u);
	a->atime.tv_nsec = (long)(boot % 1000000000u);
	a->mtime = a->ctime = a->atime;
	a->change = boot;
}

uint32_t nfs4_attr_load(struct nfs4_compound *c, const struct nfs4_fh *fh,
                        struct nfs4_attr_src *src)
{
	int rc;

	src->fh = fh;
	if (fh->kind == FH4_PSEUDO) {
		pseudo_attr(c, fh, &src->a);
		return NFS4_OK;
	}
	if (fh->kind != FH4_EXPORT)
		return NFS4ERR_NOFILEHANDLE;
	rc = fh->ex->ops->getattr(fh->ex->bk, &fh->bh, &src->a);
	return rc ? nfs4_errno(rc) : NFS4_OK;
}

/* The domain of owner names for fh's export, or NULL for numbers: those
 * of pseudo directories too, which belong to no export. */
static const char *owner_domain(const struct nfs4_compound *c,
                                const struct nfs4_fh *fh)
{
	if (!fh->rule || !(fh->rule->flags & EXP_IDMAP_NAMES))
		return NULL;
	return c->srv->idmap_domain[0] ? c->srv->idmap_domain : NULL;
}

/* "name@domain" when domain is set and the id has a name (RFC 7530 5.9),
 * else the id in decimal, as snprintf "%u" would write it; by hand, as
 * READDIR encodes two per entry. */
static bool put_owner(struct xdr_out *x, uint32_t id, bool group,
                      const char *domain)
{
	char buf[10];
	size_t n = sizeof(buf);

	if (domain) {
		char name[IDMAP_OWNER_MAX];
		size_t len = idmap_owner_name(domain, id, group, name);

		if (len)
			return xdr_put_opaque(x, name, (uint32_t)len);
	}
	do {
		buf[--n] = (char)('0' + id % 10);
		id /= 10;
	} while (id != 0);
	return xdr_put_opaque(x, buf + n, (uint32_t)(sizeof(buf) - n));
}

/* fs-wide figures: the export's, or for a pseudo directory those of the
 * export below it (so `df` on `mount host:/` shows something real). */
static uint32_t load_statfs(const struct nfs4_fh *fh, struct bk_statfs *st)
{
	struct bk_handle root;
	int rc;

	memset(st, 0, sizeof(*st));
	if (!fh->ex)
		return NFS4_OK;
	if (fh->kind == FH4_EXPORT)
		rc = fh->ex->ops->statfs(fh->ex->bk, &fh->bh, st);
	else if (!(rc = fh->ex->ops->root(fh->ex->bk, &root)))
		rc = fh->ex->ops->statfs(fh->ex->bk, &root, st);
	return rc ? nfs4_errno(rc) : NFS4_OK;
}

static bool put_fsid(struct xdr_out *x, const struct nfs4_fh *fh)
{
	/* Pseudo file system {0,0}; each export {fsid, 1}: the client sees
	 * a crossing wherever the fsid changes (RFC 8881 7.7). */
	if (fh->kind == FH4_PSEUDO)
		return xdr_put_u64(x, 0) && xdr_put_u64(x, 0);
	return xdr_put_u64(x, fh->ex->fsid) && xdr_put_u64(x, 1);
}

/* One attribute's value. */
static uint32_t put_attr(struct nfs4_compound *c, struct xdr_out *x,
                         unsigned id, struct nfs4_attr_src *s,
                         struct bk_statfs *sf, bool *have_sf)
{
	const struct bk_attr *a = &s->a;
	uint32_t bm[3], st;
	struct nfs_fh wire;
	struct timespec delta = {0, 1};

	if ((id == A_FILES_AVAIL || id == A_FILES_FREE || id == A_FILES_TOTAL ||
	     id == A_MAXLINK || id == A_SPACE_AVAIL || id == A_SPACE_FREE ||
	     id == A_SPACE_TOTAL) &&
	    !*have_sf) {
		st = load_statfs(s->fh, sf);
		if (st)
			return st;
		*have_sf = true;
	}
	switch (id) {
	case A_SUPPORTED_ATTRS:
		nfs4_supported_attrs(c->minor, bm);
		nfs4_put_bitmap(x, bm);
		break;
	case A_TYPE:
		xdr_put_u32(x, a->type ? (uint32_t)a->type : NF4REG);
		break;
	case A_FH_EXPIRE_TYPE:
		xdr_put_u32(x, 0); /* FH4_PERSISTENT */
		break;
	case A_CHANGE:
		xdr_put_u64(x, a->change);
		break;
	case A_SIZE:
		xdr_put_u64(x, a->size);
		break;
	case A_LINK_SUPPORT:
	case A_SYMLINK_SUPPORT:
	case A_UNIQUE_HANDLES:
	case A_CANSETTIME:
	case A_CASE_PRESERVING:
	case A_CHOWN_RESTRICTED:
	case A_HOMOGENEOUS:
	case A_NO_TRUNC:
		xdr_put_bool(x, true);
		break;
	case A_NAMED_ATTR:
	case A_CASE_INSENSITIVE:
		xdr_put_bool(x, false);
		break;
	case A_FSID:
		put_fsid(x, s->fh);
		break;
	case A_LEASE_TIME:
		xdr_put_u32(x, nfs4_lease_time(c->st));
		break;
	case A_RDATTR_ERROR:
		xdr_put_u32(x, s->rdattr_error);
		break;
	case A_ACLSUPPORT:
		xdr_put_u32(x, 0);
		break;
	case A_FILEHANDLE:
		st = nfs4_fh_to_wire(c, s->fh, &wire);
		if (st)
			return st;
		xdr_put_opaque(x, wire.data, wire.len);
		break;
	case A_FILEID:
		xdr_put_u64(x, a->fileid);
		break;
	case A_FILES_AVAIL:
		xdr_put_u64(x, sf->afiles);
		break;
	case A_FILES_FREE:
		xdr_put_u64(x, sf->ffiles);
		break;
	case A_FILES_TOTAL:
		xdr_put_u64(x, sf->tfiles);
		break;
	case A_MAXFILESIZE:
		xdr_put_u64(x, INT64_MAX);
		break;
	case A_MAXLINK:
		xdr_put_u32(x, sf->link_max ? sf->link_max : 255);
		break;
	case A_MAXNAME:
		xdr_put_u32(x, BK_NAME_MAX);
		break;
	case A_MAXREAD:
	case A_MAXWRITE:
		xdr_put_u64(x, NFS4_MAXIO);
		break;
	case A_MODE:
		xdr_put_u32(x, a->mode & 07777);
		break;
	case A_NUMLINKS:
		xdr_put_u32(x, a->nlink);
		break;
	case A_OWNER:
		put_owner(x, a->uid, false, owner_domain(c, s->fh));
		break;
	case A_OWNER_GROUP:
		put_owner(x, a->gid, true, owner_domain(c, s->fh));
		break;
	case A_RAWDEV:
		xdr_put_u32(x, a->rdev_major);
		xdr_put_u32(x, a->rdev_minor);
		break;
	case A_SPACE_AVAIL:
		xdr_put_u64(x, sf->abytes);
		break;
	case A_SPACE_FREE:
		xdr_put_u64(x, sf->fbytes);
		break;
	case A_SPACE_TOTAL:
		xdr_put_u64(x, sf->tbytes);
		break;
	case A_SPACE_USED:
		xdr_put_u64(x, a->used);
		break;
	case A_TIME_ACCESS:
		nfs4_put_time(x, &a->atime);
		break;
	case A_TIME_DELTA:
		nfs4_put_time(x, &delta);
		break;
	case A_TIME_METADATA:
		nfs4_put_time(x, &a->ctime);
		break;
	case A_TIME_MODIFY:
		nfs4_put_time(x, &a->mtime);
		break;
	case A_MOUNTED_ON_FILEID:
		xdr_put_u64(x, s->mounted_on_set ? s->mounted_on : a->fileid);
		break;
	case A_SUPPATTR_EXCLCREAT:
		nfs4_exclcreat_attrs(bm);
		nfs4_put_bitmap(x, bm);
		break;
	default:
		return NFS4ERR_ATTRNOTSUPP;
	}
	return NFS4_OK;
}

void nfs4_fattr_plan_init(uint32_t minor, const uint32_t req[3],
                          struct nfs4_fattr_plan *p)
{
	uint32_t sup[3];

	nfs4_supported_attrs(minor, sup);
	for (int i = 0; i < 3; i++) {
		p->req[i] = req[i];
		p->give[i] = req[i] & sup[i];
	}
	/* Write-only attributes are never returned. */
	p->give[WORD(A_TIME_ACCESS_SET)] &= ~BIT(A_TIME_ACCESS_SET);
	p->give[WORD(A_TIME_MODIFY_SET)] &= ~BIT(A_TIME_MODIFY_SET);
}

uint32_t nfs4_encode_fattr_plan(struct nfs4_compound *c, struct xdr_out *x,
                                const struct nfs4_fattr_plan *p,
                                struct nfs4_attr_src *src)
{
	uint32_t give[3] = {p->give[0], p->give[1], p->give[2]};
	struct bk_statfs sf;
	bool have_sf = false;
	size_t lenpos, start;
	uint32_t st;

	if (src->rdattr_error) {
		/* RFC 7530 5.8.1.12: only rdattr_error, if it was asked. */
		if (!bm_has(p->req, A_RDATTR_ERROR))
			return src->rdattr_error;
		give[0] = BIT(A_RDATTR_ERROR);
		give[1] = give[2] = 0;
	}
	nfs4_put_bitmap(x, give);
	lenpos = x->len;
	xdr_put_u32(x, 0);
	start = x->len;
	/* Values in attribute number order (RFC 7530 5.5): set bits only. */
	for (unsigned w = 0; w < 3; w++) {
		for (uint32_t bits = give[w]; bits; bits &= bits - 1) {
			unsigned id = w * 32 + (unsigned)__builtin_ctz(bits);

			st = put_attr(c, x, id, src, &sf, &have_sf);
			if (st)
				return st;
		}
	}
	xdr_patch_u32(x, lenpos, (uint32_t)(x->len - start));
	return NFS4_OK;
}

uint32_t nfs4_encode_fattr(struct nfs4_compound *c, struct xdr_out *x,
                           const uint32_t req[3], struct nfs4_attr_src *src)
{
	struct nfs4_fattr_plan p;

	nfs4_fattr_plan_init(c->minor, req, &p);
	return nfs4_encode_fattr_plan(c, x, &p, src);
}

static bool get_settime(struct xdr_in *x, uint32_t *mask, uint32_t set_bit,
                        uint32_t now_bit, struct timespec *t)
{
	uint32_t how, nsec;
	uint64_t sec;

	if (!xdr_get_u32(x, &how))
		return false;
	if (how == 0) { /* SET_TO_SERVER_TIME4 */
		*mask |= now_bit;
		return true;
	}
	if (how != 1 || !xdr_get_u64(x, &sec) || !xdr_get_u32(x, &nsec)) {
		x->err = true;
		return false;
	}
	if (nsec >= 1000000000u) {
		x->err = true;
		return false;
	}
	t->tv_sec = (time_t)(int64_t)sec;
	t->tv_nsec = nsec;
	*mask |= set_bit;
	return true;
}

/* owner or owner_group: a number or a name of our domain, whatever the
 * export's idmap (RFC 7530 5.9: BADOWNER for what we cannot map). */
static uint32_t decode_owner(const struct nfs4_compound *c, struct xdr_in *x,
                             bool group, uint32_t *id)
{
	const uint8_t *p;
	uint32_t n;
	int rc;

	if (!xdr_get_opaque_ref(x, &p, &n, NFS4_OPAQUE_LIMIT))
		return NFS4ERR_BADXDR;
	rc = idmap_owner_id(c->srv->idmap_domain, p, n, group, id);
	if (rc == -EINVAL)
		return NFS4ERR_BADOWNER;
	return rc ? NFS4ERR_DELAY : NFS4_OK;
}

static uint32_t decode_one(const struct nfs4_compound *c, struct xdr_in *x,
                           unsigned id, struct bk_setattr *sa)
{
	uint32_t st;

	switch (id) {
	case A_SIZE:
		if (!xdr_get_u64(x, &sa->size))
			return NFS4ERR_BADXDR;
		sa->mask |= BK_SET_SIZE;
		return NFS4_OK;
	case A_MODE:
		if (!xdr_get_u32(x, &sa->mode))
			return NFS4ERR_BADXDR;
		sa->mode &= 07777;
		sa->mask |= BK_SET_MODE;
		return NFS4_OK;
	case A_OWNER:
		st = decode_owner(c, x, false, &sa->uid);
		if (!st)
			sa->mask |= BK_SET_UID;
		return st;
	case A_OWNER_GROUP:
		st = decode_owner(c, x, true, &sa->gid);
		if (!st)
			sa->mask |= BK_SET_GID;
		return st;
	case A_TIME_ACCESS_SET:
		return get_settime(x, &sa->mask, BK_SET_ATIME, BK_SET_ATIME_NOW,
		                   &sa->atime)
		           ? NFS4_OK
		           : NFS4ERR_BADXDR;
	case A_TIME_MODIFY_SET:
		return get_settime(x, &sa->mask, BK_SET_MTIME, BK_SET_MTIME_NOW,
		                   &sa->mtime)
		           ? NFS4_OK
		           : NFS4ERR_BADXDR;
	}
	return NFS4ERR_INVAL;
}

uint32_t nfs4_decode_sattr(struct nfs4_compound *c, struct xdr_in *x,
                           struct bk_setattr *sa, uint32_t set[3])
{
	uint32_t bm[3], sup[3], n, st;
	const uint8_t *p;
	struct xdr_in al;

	memset(sa, 0, sizeof(*sa));
	set[0] = set[1] = set[2] = 0;
	if (!nfs4_get_bitmap(x, bm) || !xdr_get_opaque_ref(x, &p, &n, 0xffffff))
		return NFS4ERR_BADXDR;
	nfs4_supported_attrs(c->minor, sup);
	for (int i = 0; i < 3; i++)
		if (bm[i] & ~sup[i])
			return NFS4ERR_ATTRNOTSUPP;
	xdr_in_init(&al, p, n);
	for (unsigned id = 0; id <= A_LAST; id++) {
		if (!bm_has(bm, id))
			continue;
		st = decode_one(c, &al, id, sa);
		if (st)
			return st;
		bm_set(set, id);
	}
	if (al.err || xdr_in_remaining(&al))
		return NFS4ERR_BADXDR;
	return NFS4_OK;
}

uint32_t nfs4_op_getattr(struct nfs4_compound *c)
{
	struct nfs4_attr_src src;
	uint32_t req[3], st;

	if (!nfs4_get_bitmap(c->args, req))
		return NFS4ERR_BADXDR;
	if (bm_has(req, A_TIME_ACCESS_SET) || bm_has(req, A_TIME_MODIFY_SET))
		return NFS4ERR_INVAL;
	memset(&src, 0, sizeof(src));
	st = nfs4_attr_load(c, &c->cfh, &src);
	if (st)
		return st;
	if (nfs4_fh_is_export_root(&c->cfh)) {
		src.mounted_on_set = true;
		src.mounted_on = nfs4_export_mounted_on(c->cfh.ex);
	}
	return nfs4_encode_fattr(c, c->res, req, &src);
}

uint32_t nfs4_op_setattr(struct nfs4_compound *c)
{
	struct nfs4_stateid sid;
	struct bk_setattr sa;
	struct bk_attr after;
	uint32_t set[3] = {0, 0, 0}, none[3] = {0, 0, 0}, st;
	int rc;

	if (!nfs4_get_stateid(c->args, &sid)) {
		st = NFS4ERR_BADXDR;
		goto out;
	}
	st = nfs4_decode_sattr(c, c->args, &sa, set);
	if (st)
		goto out;
	st = nfs4_need_write(c);
	if (st)
		goto out;
	if (sa.mask & BK_SET_SIZE) {
		enum bk_ftype t = BK_REG;
		st = nfs4_cfh_type(c, &t);
		if (!st && t == BK_DIR)
			st = NFS4ERR_ISDIR;
		else if (!st && t != BK_REG)
			st = NFS4ERR_INVAL;
		if (!st)
			st = nfs4_resolve_stateid(c, &sid);
		if (!st)
			st = nfs4_check_io_stateid(c, &sid, STID_WRITE);
	} else {
		/* the attributes a delegation's holder caches */
		st = nfs4_deleg_conflict(c, &c->cfh.bh);
	}
	if (st)
		goto out;
	rc = c->cfh.ex->ops->setattr(c->cfh.ex->bk, &c->cfh.cred, &c->cfh.bh,
	                             &sa, &after);
	st = nfs4_errno(rc);
out:
	nfs4_put_bitmap(c->res, st ? none : set);
	return st;
}

/* VERIFY/NVERIFY (RFC 7530 16.35, 16.15): encode our values for the
 * client's bitmap and compare the attrlists byte for byte. */
static uint32_t verify_common(struct nfs4_compound *c, bool *same)
{
	uint32_t bm[3], sup[3], n, st;
	const uint8_t *p;
	struct nfs4_attr_src src;
	struct xdr_out ours;
	struct xdr_in in;
	uint32_t nw, w, len;

	if (!nfs4_get_bitmap(c->args, bm) ||
	    !xdr_get_opaque_ref(c->args, &p, &n, 0xffffff))
		return NFS4ERR_BADXDR;
	nfs4_supported_attrs(c->minor, sup);
	for (int i = 0; i < 3; i++)
		if (bm[i] & ~sup[i])
			return NFS4ERR_ATTRNOTSUPP;
	if (bm_has(bm, A_RDATTR_ERROR) || bm_has(bm, A_TIME_ACCESS_SET) ||
	    bm_has(bm, A_TIME_MODIFY_SET))
		return NFS4ERR_INVAL;
	memset(&src, 0, sizeof(src));
	st = nfs4_attr_load(c, &c->cfh, &src);
	if (st)
		return st;
	if (xdr_out_init(&ours, 1024, 65536))
		return NFS4ERR_DELAY;
	st = nfs4_encode_fattr(c, &ours, bm, &src);
	if (!st && ours.err)
		st = NFS4ERR_RESOURCE;
	if (!st) {
		/* Skip our bitmap (the same words as theirs) and length. */
		xdr_in_init(&in, ours.buf, ours.len);
		xdr_get_u32(&in, &nw);
		for (uint32_t i = 0; i < nw; i++)
			xdr_get_u32(&in, &w);
		xdr_get_u32(&in, &len);
		*same = !in.err && len == n && !memcmp(ours.buf + in.pos, p, n);
	}
	xdr_out_free(&ours);
	return st;
}

uint32_t nfs4_op_verify(struct nfs4_compound *c)
{
	bool same = false;
	uint32_t st = verify_common(c, &same);

	if (st)
		return st;
	return same ? NFS4_OK : NFS4ERR_NOT_SAME;
}

uint32_t nfs4_op_nverify(struct nfs4_compound *c)
{
	bool same = false;
	uint32_t st = verify_common(c, &same);

	if (st)
		return st;
	return same ? NFS4ERR_SAME : NFS4_OK;
}
