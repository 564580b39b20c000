/* NFSv3 (RFC 1813) client codecs: the shared types and the READDIR(PLUS)
 * reply decoder. Every decoder is bounds-checked through xdr_in. */
#ifndef SNFS_CLIENT_NFS3_XDR_H
#define SNFS_CLIENT_NFS3_XDR_H

#include <stdbool.h>
#include <stdint.h>

#include "client/client.h"
#include "client/readdir.h"
#include "xdr/xdr.h"

#define NFS3_PROG 100003
#define NFS3_VERS 3
#define MOUNT_PROG 100005
#define MOUNT_VERS 3
#define PMAP_PROG 100000
#define PMAP_VERS 2
#define NFS3_FHSIZE 64
#define NFS3_FATTR_BYTES 84

enum {
	C3_NULL = 0,
	C3_GETATTR = 1,
	C3_SETATTR = 2,
	C3_LOOKUP = 3,
	C3_ACCESS = 4,
	C3_READLINK = 5,
	C3_READ = 6,
	C3_WRITE = 7,
	C3_CREATE = 8,
	C3_MKDIR = 9,
	C3_SYMLINK = 10,
	C3_MKNOD = 11,
	C3_REMOVE = 12,
	C3_RMDIR = 13,
	C3_RENAME = 14,
	C3_LINK = 15,
	C3_READDIR = 16,
	C3_READDIRPLUS = 17,
	C3_FSSTAT = 18,
	C3_FSINFO = 19,
	C3_PATHCONF = 20,
	C3_COMMIT = 21,
};

/* nfsstat3 to -errno (Linux numbering differs from NFS's). */
int nfs3_errno(uint32_t status);

bool nfs3_put_fh(struct xdr_out *x, const struct snfs_fh *fh);
bool nfs3_get_fh(struct xdr_in *x, struct snfs_fh *fh);
bool nfs3_put_sattr(struct xdr_out *x, const struct snfs_setattr *sa);
bool nfs3_get_fattr(struct xdr_in *x, struct snfs_stat *st);
/* post_op_attr: *have tells whether attributes followed. */
bool nfs3_get_post_attr(struct xdr_in *x, struct snfs_stat *st, bool *have);
bool nfs3_skip_wcc(struct xdr_in *x, struct snfs_stat *post, bool *have_post);
/* decode_attr hook for rd_page (fattr3 at buf + off). */
int nfs3_decode_attr_at(const uint8_t *buf, size_t len, uint32_t off,
                        struct snfs_stat *st);

/* Decode a READDIR (plus=false) or READDIRPLUS reply body (from the
 * nfsstat3 on) held in buf into page; the entry list is walked
 * iteratively. Returns 0, a -errno from the status, or -EPROTO. page->buf
 * is not taken over. */
int nfs3_decode_readdir(const uint8_t *buf, size_t len, bool plus,
                        struct rd_page *page);

#endif
