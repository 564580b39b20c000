/* NFSv3 (RFC 1813) wire types and the codecs every procedure shares:
 * nfs_fh3, filename3, sattr3, fattr3, post_op_attr, pre_op_attr, wcc_data,
 * post_op_fh3, and the errno -> nfsstat3 mapping. */
#ifndef SNFS_NFS3_XDR_H
#define SNFS_NFS3_XDR_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "proto/nfs3_const.h"
#include "server/fh.h"
#include "xdr/xdr.h"

/* The largest READ/WRITE/READDIR payload snfsd serves (FSINFO rtmax etc.). */
#define NFS3_MAX_IO (1024u * 1024u)
#define NFS3_NAME_MAX 255u
#define NFS3_PATH_MAX 4096u
/* Names and paths decode with this larger bound so an over-long one can be
 * answered NAMETOOLONG instead of GARBAGE_ARGS. */
#define NFS3_DECODE_STR_MAX 65536u

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
