/* NFSv4.1/4.2 client codecs (RFC 8881, RFC 7862): operation numbers,
 * status codes, COMPOUND building and reply walking, fattr4 encoding and
 * decoding, and the READDIR reply decoder. Every decoder is bounds-checked
 * through xdr_in. */
#ifndef SNFS_CLIENT_NFS4_XDR_H
#define SNFS_CLIENT_NFS4_XDR_H

#include <stdbool.h>
#include <stdint.h>

#include "client/client.h"
#include "client/readdir.h"
#include "xdr/xdr.h"

#define NFS4_PROG 100003
#define NFS4_VERS 4
#define NFS4_COMPOUND 1
#define NFS4_MAX_OPS 48
#define NFS4_SESSIONID_SIZE 16
#define NFS4_NAME_MAX 255

enum nfs4_op {
	OP4_ACCESS = 3,
	OP4_CLOSE = 4,
	OP4_COMMIT = 5,
	OP4_CREATE = 6,
	OP4_DELEGRETURN = 8,
	OP4_GETATTR = 9,
	OP4_GETFH = 10,
	OP4_LINK = 11,
	OP4_LOOKUP = 15,
	OP4_NVERIFY = 17,
	OP4_OPEN = 18,
	OP4_PUTFH = 22,
	OP4_PUTROOTFH = 24,
	OP4_READ = 25,
	OP4_READDIR = 26,
	OP4_READLINK = 27,
	OP4_REMOVE = 28,
	OP4_RENAME = 29,
	OP4_RESTOREFH = 31,
	OP4_SAVEFH = 32,
	OP4_SETATTR = 34,
	OP4_VERIFY = 37,
	OP4_WRITE = 38,
	OP4_EXCHANGE_ID = 42,
	OP4_CREATE_SESSION = 43,
	OP4_DESTROY_SESSION = 44,
	OP4_SEQUENCE = 53,
	OP4_DESTROY_CLIENTID = 57,
	OP4_RECLAIM_COMPLETE = 58,
	OP4_ALLOCATE = 59,
	OP4_COPY = 60,
	OP4_DEALLOCATE = 62,
	OP4_READ_PLUS = 68,
	OP4_SEEK = 69,
	OP4_ILLEGAL = 10044,
};

enum nfs4_status {
	NFS4_OK = 0,
	NFS4ERR_PERM = 1,
	NFS4ERR_NOENT = 2,
	NFS4ERR_IO = 5,
	NFS4ERR_NXIO = 6,
	NFS4ERR_ACCESS = 13,
	NFS4ERR_EXIST = 17,
	NFS4ERR_XDEV = 18,
	NFS4ERR_NOTDIR = 20,
	NFS4ERR_ISDIR = 21,
	NFS4ERR_INVAL = 22,
	NFS4ERR_FBIG = 27,
	NFS4ERR_NOSPC = 28,
	NFS4ERR_ROFS = 30,
	NFS4ERR_MLINK = 31,
	NFS4ERR_NAMETOOLONG = 63,
	NFS4ERR_NOTEMPTY = 66,
	NFS4ERR_DQUOT = 69,
	NFS4ERR_STALE = 70,
	NFS4ERR_BADHANDLE = 10001,
	NFS4ERR_BAD_COOKIE = 10003,
	NFS4ERR_NOTSUPP = 10004,
	NFS4ERR_TOOSMALL = 10005,
	NFS4ERR_SERVERFAULT = 10006,
	NFS4ERR_BADTYPE = 10007,
	NFS4ERR_DELAY = 10008,
	NFS4ERR_SAME = 10009,
	NFS4ERR_EXPIRED = 10011,
	NFS4ERR_LOCKED = 10012,
	NFS4ERR_GRACE = 10013,
	NFS4ERR_FHEXPIRED = 10014,
	NFS4ERR_SHARE_DENIED = 10015,
	NFS4ERR_WRONGSEC = 10016,
	NFS4ERR_RESOURCE = 10018,
	NFS4ERR_NOFILEHANDLE = 10020,
	NFS4ERR_MINOR_VERS_MISMATCH = 10021,
	NFS4ERR_STALE_CLIENTID = 10022,
	NFS4ERR_STALE_STATEID = 10023,
	NFS4ERR_OLD_STATEID = 10024,
	NFS4ERR_BAD_STATEID = 10025,
	NFS4ERR_BAD_SEQID = 10026,
	NFS4ERR_NOT_SAME = 10027,
	NFS4ERR_SYMLINK = 10029,
	NFS4ERR_ATTRNOTSUPP = 10032,
	NFS4ERR_NO_GRACE = 10033,
	NFS4ERR_RECLAIM_BAD = 10034,
	NFS4ERR_RECLAIM_CONFLICT = 10035,
	NFS4ERR_BADXDR = 10036,
	NFS4ERR_OPENMODE = 10038,
	NFS4ERR_BADOWNER = 10039,
	NFS4ERR_BADCHAR = 10040,
	NFS4ERR_BADNAME = 10041,
	NFS4ERR_BAD_RANGE = 10042,
	NFS4ERR_OP_ILLEGAL = 10044,
	NFS4ERR_FILE_OPEN = 10046,
	NFS4ERR_ADMIN_REVOKED = 10047,
	NFS4ERR_BADSESSION = 10052,
	NFS4ERR_BADSLOT = 10053,
	NFS4ERR_COMPLETE_ALREADY = 10054,
	NFS4ERR_CONN_NOT_BOUND_TO_SESSION = 10055,
	NFS4ERR_SEQ_MISORDERED = 10063,
	NFS4ERR_REQ_TOO_BIG = 10065,
	NFS4ERR_REP_TOO_BIG = 10066,
	NFS4ERR_RETRY_UNCACHED_REP = 10068,
	NFS4ERR_TOO_MANY_OPS = 10070,
	NFS4ERR_SEQ_FALSE_RETRY = 10076,
	NFS4ERR_BAD_HIGH_SLOT = 10077,
	NFS4ERR_DEADSESSION = 10078,
	NFS4ERR_WRONG_TYPE = 10083,
	NFS4ERR_DELEG_REVOKED = 10087,
	NFS4ERR_OFFLOAD_NO_REQS = 10094,
};

/* fattr4 attribute numbers (RFC 8881 section 5.8, RFC 7862 12.2). */
enum {
	FA4_SUPPORTED_ATTRS = 0,
	FA4_TYPE = 1,
	FA4_CHANGE = 3,
	FA4_SIZE = 4,
	FA4_FSID = 8,
	FA4_LEASE_TIME = 10,
	FA4_RDATTR_ERROR = 11,
	FA4_FILEID = 20,
	FA4_FILES_AVAIL = 21,
	FA4_FILES_FREE = 22,
	FA4_FILES_TOTAL = 23,
	FA4_MAXREAD = 30,
	FA4_MAXWRITE = 31,
	FA4_MODE = 33,
	FA4_NUMLINKS = 35,
	FA4_OWNER = 36,
	FA4_OWNER_GROUP = 37,
	FA4_RAWDEV = 41,
	FA4_SPACE_AVAIL = 42,
	FA4_SPACE_FREE = 43,
	FA4_SPACE_TOTAL = 44,
	FA4_SPACE_USED = 45,
	FA4_TIME_ACCESS = 47,
	FA4_TIME_ACCESS_SET = 48,
	FA4_TIME_METADATA = 52,
	FA4_TIME_MODIFY = 53,
	FA4_TIME_MODIFY_SET = 54,
	FA4_MOUNTED_ON_FILEID = 55,
	FA4_MAX = 96,
};

/* Attribute requests: up to 3 bitmap words. */
struct nfs4_bitmap {
	uint32_t n;
	uint32_t w[3];
};

static inline void bm_set(struct nfs4_bitmap *b, unsigned bit)
{
	unsigned wi = bit / 32;
	if (wi >= 3)
		return;
	if (b->n <= wi)
		b->n = wi + 1;
	b->w[wi] |= 1u << (bit % 32);
}

static inline bool bm_isset(const struct nfs4_bitmap *b, unsigned bit)
{
	return bit / 32 < b->n && (b->w[bit / 32] >> (bit % 32)) & 1;
}

/* What a decoded fattr4 held besides struct snfs_stat. */
struct nfs4_fattr {
	struct snfs_stat st;
	struct nfs4_bitmap have;
	uint32_t rdattr_error;
	uint32_t lease_time;
	uint64_t maxread, maxwrite;
	uint64_t files_avail, files_free, files_total;
	uint64_t space_avail, space_free, space_total;
	uint64_t mounted_on_fileid;
};

struct nfs4_stateid {
	uint32_t seqid;
	uint8_t other[12];
};

/* The attribute sets we ask for. */
void nfs4_bm_stat(struct nfs4_bitmap *b); /* what snfs_stat needs */
void nfs4_bm_statvfs(struct nfs4_bitmap *b);

/* nfsstat4 to -errno. */
int nfs4_errno(uint32_t status);

/* ---- building a COMPOUND ---- */

struct nfs4_req {
	struct xdr_out x;
	size_t nops_pos;
	uint32_t nops;
	uint32_t ops[NFS4_MAX_OPS];
};

/* Start COMPOUND4args (tag, minorversion, the count patched later). */
int nfs4_req_init(struct nfs4_req *rq, uint32_t minor, size_t extra);
/* Begin an operation: records opnum and encodes it. */
void nfs4_put_op(struct nfs4_req *rq, uint32_t op);
/* Patch in the operation count; the request is ready to send. */
void nfs4_req_finish(struct nfs4_req *rq);

void nfs4_put_fh(struct nfs4_req *rq, const struct snfs_fh *fh); /* PUTFH */
void nfs4_put_stateid(struct xdr_out *x, const struct nfs4_stateid *s);
void nfs4_put_bitmap(struct xdr_out *x, const struct nfs4_bitmap *b);
void nfs4_put_getattr(struct nfs4_req *rq, const struct nfs4_bitmap *b);
/* fattr4 for SETATTR/CREATE/OPEN: the settable part of sa. */
void nfs4_put_sattr(struct xdr_out *x, const struct snfs_setattr *sa);
/* fattr4 holding just a type (for VERIFY/NVERIFY). */
void nfs4_put_type_fattr(struct xdr_out *x, uint32_t nf4type);

/* ---- walking a COMPOUND4res ---- */

/* Read the next result's header: 0 if it is op and succeeded, -errno for
 * its failure status (with *status set), -EPROTO on a mismatch. */
int nfs4_expect(struct xdr_in *x, uint32_t op, uint32_t *status);
bool nfs4_get_fh(struct xdr_in *x, struct snfs_fh *fh);
bool nfs4_get_stateid(struct xdr_in *x, struct nfs4_stateid *s);
bool nfs4_get_bitmap(struct xdr_in *x, struct nfs4_bitmap *b);
bool nfs4_skip_change_info(struct xdr_in *x);
/* fattr4: bitmap and attribute values, decoded into fa. Fails on an
 * attribute we cannot skip. */
bool nfs4_get_fattr(struct xdr_in *x, struct nfs4_fattr *fa);
/* Owner strings: "1000", or "user@domain" mapped through the local
 * passwd/group database, else nobody (65534). */
uint32_t nfs4_owner_to_id(const uint8_t *s, uint32_t n, bool group);

/* decode_attr hook for rd_page: a fattr4 at buf + off. */
int nfs4_decode_attr_at(const uint8_t *buf, size_t len, uint32_t off,
                        struct snfs_stat *st);
/* Decode a READDIR4resok (after the op's status) into page: cookieverf,
 * entries, eof. Offsets are relative to base. plus: keep attributes. */
int nfs4_decode_readdir(struct xdr_in *x, const uint8_t *base, bool plus,
                        struct rd_page *page);

#endif
