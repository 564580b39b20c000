/* NFS file handles and per-call access resolution.
 *
 * A handle is opaque to clients, at most 64 bytes: a version byte, the
 * export's fsid, the backend handle, and a MAC under a key kept in the state
 * directory. The MAC makes forged or bit-flipped handles fail (BADHANDLE)
 * without touching the file system, and keeps the handle valid across
 * restarts. */
#ifndef SNFS_FH_H
#define SNFS_FH_H

#include <stdint.h>

#include "backend/backend.h"
#include "rpc/rpc.h"
#include "server/exports.h"

#define NFS_FH_MAX 64

struct nfs_fh {
	uint32_t len;
	uint8_t data[NFS_FH_MAX];
};

struct snfsd;

int fh_make(const struct snfsd *s, const struct export *ex,
            const struct bk_handle *bh, struct nfs_fh *out);
/* Note each export's tag under s's key, for fh_make and fh_parse; a
 * table not prepared (or prepared under another key) works the same,
 * hashing the path on every call. Call before t is shared. */
void fh_prepare_table(const struct snfsd *s, struct export_table *t);
/* -EBADF: malformed or forged; -ESTALE: its export no longer exists. */
int fh_parse(const struct snfsd *s, const struct export_table *t,
             const uint8_t *p, uint32_t len, struct export **ex,
             struct bk_handle *bh);

/* Everything a protocol handler needs to act on one file for one call. */
struct nfs_req {
	struct snfsd *srv;
	struct export_table *tab; /* reference held until nfs_req_done */
	struct export *ex;
	const struct export_rule *rule;
	struct bk_cred cred; /* after squashing */
	struct bk_handle bh;
	bool rw;
};

/* Resolve a wire handle for call: parse it, find the export, check the
 * client's address and source port against the export's rules, squash the
 * credentials. Returns 0, -EBADF (BADHANDLE), -ESTALE, or -EACCES (client not
 * admitted or insecure port). Call nfs_req_done afterwards in every case. */
int nfs_req_resolve(struct rpc_call *call, const uint8_t *fh, uint32_t len,
                    struct nfs_req *r);
/* A second handle in the same call (RENAME, LINK): must be on the same
 * export, else -EXDEV. */
int nfs_req_resolve2(const struct nfs_req *first, const uint8_t *fh,
                     uint32_t len, struct bk_handle *bh);
void nfs_req_done(struct nfs_req *r);

#endif
