/* libsnfs internals: the mount context, file handles, and the table of
 * operations each protocol version (NFSv3 today, NFSv4.x beside it)
 * implements. The API layer (api.c) resolves paths and drives the page
 * cache and the directory cache; it reaches the wire only through
 * ctx->ops, so a protocol is one table and its codecs. */
#ifndef SNFS_CLIENT_H
#define SNFS_CLIENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/counters.h"
#include "client/transport.h"
#include "snfs/snfs.h"

#define SNFS_FH_MAX 128 /* NFSv4 limit; v3 handles are at most 64 */

struct snfs_fh {
	uint32_t len;
	uint8_t data[SNFS_FH_MAX];
};

static inline bool fh_equal(const struct snfs_fh *a, const struct snfs_fh *b)
{
	return a->len == b->len &&
	       __builtin_memcmp(a->data, b->data, a->len) == 0;
}

/* Result of a WRITE. */
enum { SNFS_UNSTABLE = 0, SNFS_DATA_SYNC = 1, SNFS_FILE_SYNC = 2 };

struct snfs_write_res {
	uint32_t count;
	int committed;
	uint8_t verf[8];
};

/* One piece of a vectored WRITE. */
struct snfs_wseg {
	uint64_t off;
	uint32_t len;
};

struct snfs_read_res {
	uint32_t count;
	bool eof;
	bool have_attr;
	struct snfs_stat attr;
};

struct rd_page;
struct snfs_file;

/* One row per operation; NULL means the protocol lacks it (-EOPNOTSUPP).
 * Calls return 0 or -errno. The start and finish pairs let the page cache
 * keep several READs or WRITEs in flight. */
struct snfs_proto_ops {
	const char *name;
	/* Find and mount the export for ctx->url; fill ctx->root, ctx->export
	 * and ctx->url_path. */
	int (*mount)(struct snfs_ctx *c);
	void (*umount)(struct snfs_ctx *c);
	int (*getattr)(struct snfs_ctx *c, const struct snfs_fh *fh,
	               struct snfs_stat *st);
	int (*setattr)(struct snfs_ctx *c, const struct snfs_fh *fh,
	               const struct snfs_setattr *sa, struct snfs_stat *post,
	               bool *have_post);
	int (*lookup)(struct snfs_ctx *c, const struct snfs_fh *dir,
	              const char *name, struct snfs_fh *out,
	              struct snfs_stat *st, bool *have_attr);
	int (*readlink)(struct snfs_ctx *c, const struct snfs_fh *fh, char *buf,
	                size_t size);
	int (*read_start)(struct snfs_ctx *c, const struct snfs_fh *fh,
	                  uint64_t off, uint32_t count, struct rpc_req **r);
	int (*read_finish)(struct snfs_ctx *c, struct rpc_req *r, void *buf,
	                   uint32_t count, struct snfs_read_res *res);
	int (*write_start)(struct snfs_ctx *c, const struct snfs_fh *fh,
	                   uint64_t off, const void *buf, uint32_t count,
	                   int stable, struct rpc_req **r);
	int (*write_finish)(struct snfs_ctx *c, struct rpc_req *r,
	                    struct snfs_write_res *res);
	/* Optional (NFSv4: one COMPOUND): n WRITEs of one file in one call,
	 * n at most ctx->max_write_ops, their bytes in turn at buf. finish
	 * fills res[0..*done) for the WRITEs that succeeded; an error stops
	 * the rest (returned, with *done counting those before it). */
	int (*write_vec_start)(struct snfs_ctx *c, const struct snfs_fh *fh,
	                       const struct snfs_wseg *v, uint32_t n,
	                       const void *buf, int stable, struct rpc_req **r);
	int (*write_vec_finish)(struct snfs_ctx *c, struct rpc_req *r,
	                        struct snfs_write_res *res, uint32_t *done);
	int (*commit)(struct snfs_ctx *c, const struct snfs_fh *fh,
	              uint8_t verf[8], struct snfs_stat *post, bool *have_post);
	int (*create)(struct snfs_ctx *c, const struct snfs_fh *dir,
	              const char *name, uint32_t mode, bool excl,
	              struct snfs_fh *out);
	int (*mkdir)(struct snfs_ctx *c, const struct snfs_fh *dir,
	             const char *name, uint32_t mode);
	int (*symlink)(struct snfs_ctx *c, const struct snfs_fh *dir,
	               const char *name, const char *target);
	int (*remove)(struct snfs_ctx *c, const struct snfs_fh *dir,
	              const char *name);
	int (*rmdir)(struct snfs_ctx *c, const struct snfs_fh *dir,
	             const char *name);
	int (*rename)(struct snfs_ctx *c, const struct snfs_fh *fdir,
	              const char *fname, const struct snfs_fh *tdir,
	              const char *tname);
	int (*link)(struct snfs_ctx *c, const struct snfs_fh *fh,
	            const struct snfs_fh *dir, const char *name);
	/* One READDIR(PLUS) reply, decoded into *page (see readdir.h).
	 * -EBADCOOKIE when the cookie or verifier is no longer valid. */
	int (*readdir)(struct snfs_ctx *c, const struct snfs_fh *dir, bool plus,
	               uint64_t cookie, const uint8_t verf[8], uint32_t bufsize,
	               struct rd_page *page);
	int (*statvfs)(struct snfs_ctx *c, const struct snfs_fh *fh,
	               struct snfs_statvfs *sv);
	/* Optional: per-open state (NFSv4 OPEN/CLOSE stateids). */
	int (*open_state)(struct snfs_ctx *c, struct snfs_file *f, int flags);
	int (*close_state)(struct snfs_ctx *c, struct snfs_file *f);
	/* Optional: NFSv4.2. */
	int64_t (*seek)(struct snfs_ctx *c, struct snfs_file *f, uint64_t off,
	                bool data);
	int (*allocate)(struct snfs_ctx *c, struct snfs_file *f, uint64_t off,
	                uint64_t len);
	int (*deallocate)(struct snfs_ctx *c, struct snfs_file *f, uint64_t off,
	                  uint64_t len);
	int64_t (*copy)(struct snfs_ctx *c, struct snfs_file *src,
	                uint64_t soff, struct snfs_file *dst, uint64_t doff,
	                uint64_t len);
	ssize_t (*read_segments)(struct snfs_ctx *c, struct snfs_file *f,
	                         void *buf, size_t count, uint64_t off,
	                         struct snfs_segment *segs, size_t max_segs,
	                         size_t *nsegs, bool *eof);
	/* Required: snfs_read_pieces (READ_PLUS, or READ where the server
	 * has no READ_PLUS or over NFSv3). -EOPNOTSUPP: READ_PLUS just
	 * found missing, ask again. */
	ssize_t (*read_pieces)(struct snfs_ctx *c, struct snfs_file *f,
	                       uint64_t off, size_t count, snfs_pieces_fn fn,
	                       void *arg, bool *eof);
	/* Optional: byte-range locks (NFSv4). test: LOCKT instead. */
	int (*lock)(struct snfs_ctx *c, struct snfs_file *f,
	            struct snfs_flock *l, bool blocking, bool test);
	/* Optional: a FIFO, socket or device node (snfs_h_mknod). NFSv3's
	 * MKNOD is sent by fuse_support.c when this is NULL. */
	int (*mknod)(struct snfs_ctx *c, const struct snfs_fh *dir,
	             const char *name, enum snfs_ftype type, uint32_t mode,
	             uint32_t rdev_major, uint32_t rdev_minor);
};

extern const struct snfs_proto_ops snfs_nfs3_ops;
/* NFSv4.1/4.2 (ctx->version says which minor), in nfs4.c. (It was a weak
 * reference while nfs4.c did not exist; a weak reference does not pull an
 * object out of a static library, so it is a plain one now.) */
extern const struct snfs_proto_ops snfs_nfs4_ops;

struct pc_file;
struct pc_cache;
struct rd_cache;

struct snfs_ctx {
	struct snfs_url url;
	enum snfs_version version;
	const struct snfs_proto_ops *ops;
	struct rpc_clnt *rpc;
	struct rpc_clnt_cfg rpc_cfg; /* host, uid, gid, timeout */
	struct snfs_fh root;         /* export root */
	char *export;
	char *url_path;      /* below the export; "" for the root */
	struct snfs_fh base; /* what url_path names */
	uint32_t rsize, wsize, dirbuf;
	uint32_t max_write_ops; /* write_vec_start's limit (0: none) */
	size_t cache_size;
	enum snfs_pagecache pagecache; /* from the URL or the mount options */
	struct snfs_counters stats;
	struct pc_cache *pc;
	struct rd_cache *rd;
	void *proto; /* the protocol's private state */
};

/* Resolve path (see snfs.h for how paths are read) to a handle; st may
 * be NULL. follow: follow a symlink in the last component. */
int snfs_resolve(struct snfs_ctx *c, const char *path, bool follow,
                 struct snfs_fh *fh, struct snfs_stat *st);

/* For protocol code: an open file's page-cache object (its handle and the
 * attributes it was opened with) and the protocol's per-open state slot
 * (api.c owns struct snfs_file). */
struct pc_file *snfs_file_pc(struct snfs_file *f);
void **snfs_file_state(struct snfs_file *f);

/* Record msg for snfs_last_error() and return err (a -errno). */
int snfs_fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
