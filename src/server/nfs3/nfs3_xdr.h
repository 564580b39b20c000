/* NFSv3 (RFC 1813) wire types and the codecs every procedure shares:
 * nfs_fh3, filename3, sattr3, fattr3, post_op_attr, pre_op_attr, wcc_data,
 * post_op_fh3, and the errno -> nfsstat3 mapping. */
#ifndef SNFS_NFS3_XDR_H
#define SNFS_NFS3_XDR_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "server/fh.h"
#include "xdr/xdr.h"

/* RFC 1813 section 2.6: nfsstat3 */
enum nfsstat3 {
	NFS3_OK = 0,
	NFS3ERR_PERM = 1,
	NFS3ERR_NOENT = 2,
	NFS3ERR_IO = 5,
	NFS3ERR_NXIO = 6,
	NFS3ERR_ACCES = 13,
	NFS3ERR_EXIST = 17,
	NFS3ERR_XDEV = 18,
	NFS3ERR_NODEV = 19,
	NFS3ERR_NOTDIR = 20,
	NFS3ERR_ISDIR = 21,
	NFS3ERR_INVAL = 22,
	NFS3ERR_FBIG = 27,
	NFS3ERR_NOSPC = 28,
	NFS3ERR_ROFS = 30,
	NFS3ERR_MLINK = 31,
	NFS3ERR_NAMETOOLONG = 63,
	NFS3ERR_NOTEMPTY = 66,
	NFS3ERR_DQUOT = 69,
	NFS3ERR_STALE = 70,
	NFS3ERR_REMOTE = 71,
	NFS3ERR_BADHANDLE = 10001,
	NFS3ERR_NOT_SYNC = 10002,
	NFS3ERR_BAD_COOKIE = 10003,
	NFS3ERR_NOTSUPP = 10004,
	NFS3ERR_TOOSMALL = 10005,
	NFS3ERR_SERVERFAULT = 10006,
	NFS3ERR_BADTYPE = 10007,
	NFS3ERR_JUKEBOX = 10008,
};

/* ftype3 values equal enum bk_ftype (NF3REG = 1 ... NF3FIFO = 7). */
enum {
	NF3REG = 1,
	NF3DIR = 2,
	NF3BLK = 3,
	NF3CHR = 4,
	NF3LNK = 5,
	NF3SOCK = 6,
	NF3FIFO = 7,
};

enum nfs3_proc_num {
	NFSPROC3_NULL = 0,
	NFSPROC3_GETATTR = 1,
	NFSPROC3_SETATTR = 2,
	NFSPROC3_LOOKUP = 3,
	NFSPROC3_ACCESS = 4,
	NFSPROC3_READLINK = 5,
	NFSPROC3_READ = 6,
	NFSPROC3_WRITE = 7,
	NFSPROC3_CREATE = 8,
	NFSPROC3_MKDIR = 9,
	NFSPROC3_SYMLINK = 10,
	NFSPROC3_MKNOD = 11,
	NFSPROC3_REMOVE = 12,
	NFSPROC3_RMDIR = 13,
	NFSPROC3_RENAME = 14,
	NFSPROC3_LINK = 15,
	NFSPROC3_READDIR = 16,
	NFSPROC3_READDIRPLUS = 17,
	NFSPROC3_FSSTAT = 18,
	NFSPROC3_FSINFO = 19,
	NFSPROC3_PATHCONF = 20,
	NFSPROC3_COMMIT = 21,
	NFS3_NPROCS = 22,
};

/* time_how (RFC 1813 section 2.6, sattr3) */
enum { DONT_CHANGE = 0, SET_TO_SERVER_TIME = 1, SET_TO_CLIENT_TIME = 2 };

/* The largest READ/WRITE/READDIR payload snfsd serves (FSINFO rtmax etc.). */
#define NFS3_MAX_IO (1024u * 1024u)
#define NFS3_NAME_MAX 255u
#define NFS3_PATH_MAX 4096u
/* Names and paths decode with this larger bound so an over-long one can be
 * answered NAMETOOLONG instead of GARBAGE_ARGS. */
#define NFS3_DECODE_STR_MAX 65536u

#define NFS3_FATTR_SIZE 84u /* encoded fattr3 */
#define NFS3_POST_OP_ATTR_SIZE (4u + NFS3_FATTR_SIZE)

/* An nfs_fh3 as decoded: points into the call's arguments. */
struct nfs3_fh {
	const uint8_t *data;
	uint32_t len;
};

/* A filename3 as decoded. Over-long or NUL/'/'-holding names decode fine
 * and are flagged, so the procedure can pick the RFC's status. */
struct nfs3_name {
	char s[NFS3_NAME_MAX + 1];
	uint32_t len;
	bool too_long;
	bool bad_char; /* holds '/' or NUL */
};

struct nfs3_path {
	char s[NFS3_PATH_MAX + 1];
	uint32_t len;
	bool too_long;
	bool bad_char; /* holds NUL */
};

/* ---- decoders: false on malformed input (sticky x->err) ---- */
bool nfs3_get_fh(struct xdr_in *x, struct nfs3_fh *fh);
bool nfs3_get_name(struct xdr_in *x, struct nfs3_name *n);
/* diropargs3: dir handle and name */
bool nfs3_get_diropargs(struct xdr_in *x, struct nfs3_fh *dir,
                        struct nfs3_name *n);
bool nfs3_get_path(struct xdr_in *x, struct nfs3_path *p);
bool nfs3_get_sattr(struct xdr_in *x, struct bk_setattr *sa);

/* Check a name decoded for an operation: 0 when usable, else the
 * nfsstat3 to answer (NAMETOOLONG, ACCES for "" or bad characters). */
uint32_t nfs3_name_check(const struct nfs3_name *n);
bool nfs3_name_is_dot(const struct nfs3_name *n); /* "." or ".." */

/* ---- encoders: false when the reply buffer is full ---- */
/* Write an fattr3 into 84 bytes at p (also used to patch a reserved
 * region, see READ). */
void nfs3_fattr_bytes(uint8_t p[NFS3_FATTR_SIZE], const struct bk_attr *a,
                      uint32_t fsid);
bool nfs3_put_fattr(struct xdr_out *x, const struct bk_attr *a, uint32_t fsid);
/* post_op_attr: a == NULL encodes attributes_follow = FALSE. */
bool nfs3_put_post_op_attr(struct xdr_out *x, const struct bk_attr *a,
                           uint32_t fsid);
bool nfs3_put_pre_op_attr(struct xdr_out *x, const struct bk_wcc_attr *w);
bool nfs3_put_wcc(struct xdr_out *x, const struct bk_wcc_attr *pre,
                  const struct bk_attr *post, uint32_t fsid);
/* post_op_fh3: fh == NULL encodes handle_follows = FALSE. */
bool nfs3_put_post_op_fh(struct xdr_out *x, const struct nfs_fh *fh);
bool nfs3_put_time(struct xdr_out *x, const struct timespec *t);

void nfs3_wcc_from_attr(const struct bk_attr *a, struct bk_wcc_attr *w);

/* errno (positive or negative) -> nfsstat3 (RFC 1813 section 2.6). */
uint32_t nfs3_stat_from_errno(int err);

#endif
