/* NFSv3 (RFC 1813) client codecs: the shared types and the READDIR(PLUS)
 * reply decoder. Every decoder is bounds-checked through xdr_in. */
#ifndef SNFS_CLIENT_NFS3_XDR_H
#define SNFS_CLIENT_NFS3_XDR_H

#include <stdbool.h>
#include <stdint.h>

#include "client/client.h"
#include "client/readdir.h"
#include "proto/nfs3_const.h"
#include "xdr/xdr.h"

#define MOUNT_PROG 100005
#define MOUNT_VERS 3
#define PMAP_PROG 100000
#define PMAP_VERS 2
#define NFS3_FATTR_BYTES NFS3_FATTR_SIZE

/* The client's short names for the procedures (RFC names in
 * proto/nfs3_const.h). */
enum {
	C3_NULL = NFSPROC3_NULL,
	C3_GETATTR = NFSPROC3_GETATTR,
	C3_SETATTR = NFSPROC3_SETATTR,
	C3_LOOKUP = NFSPROC3_LOOKUP,
	C3_ACCESS = NFSPROC3_ACCESS,
	C3_READLINK = NFSPROC3_READLINK,
	C3_READ = NFSPROC3_READ,
	C3_WRITE = NFSPROC3_WRITE,
	C3_CREATE = NFSPROC3_CREATE,
	C3_MKDIR = NFSPROC3_MKDIR,
	C3_SYMLINK = NFSPROC3_SYMLINK,
	C3_MKNOD = NFSPROC3_MKNOD,
	C3_REMOVE = NFSPROC3_REMOVE,
	C3_RMDIR = NFSPROC3_RMDIR,
	C3_RENAME = NFSPROC3_RENAME,
	C3_LINK = NFSPROC3_LINK,
	C3_READDIR = NFSPROC3_READDIR,
	C3_READDIRPLUS = NFSPROC3_READDIRPLUS,
	C3_FSSTAT = NFSPROC3_FSSTAT,
	C3_FSINFO = NFSPROC3_FSINFO,
	C3_PATHCONF = NFSPROC3_PATHCONF,
	C3_COMMIT = NFSPROC3_COMMIT,
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
