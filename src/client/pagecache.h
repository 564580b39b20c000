/* The page cache: per file, pages of PC_PAGE_SIZE bytes that record which
 * byte ranges hold valid data, which are dirty (written by us, not yet
 * sent) and which are unstable (sent with an UNSTABLE WRITE, not yet
 * committed). A write never reads the page first; a read inside valid
 * ranges sends nothing. Dirty ranges go back as UNSTABLE WRITEs, then
 * COMMIT; when the server's write verifier changes (a restart lost
 * uncommitted data), the unstable ranges turn dirty and are sent again
 * (RFC 1813 section 3.3.7 and 3.3.21). */
#ifndef SNFS_CLIENT_PAGECACHE_H
#define SNFS_CLIENT_PAGECACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/client.h"

#define PC_PAGE_SHIFT 16
#define PC_PAGE_SIZE (1u << PC_PAGE_SHIFT)
/* The page of a classic cache (pagecache=full), which must be read whole
 * before it takes a partial write: Linux's 4 KiB. */
#define PC_CLASSIC_PAGE 4096u

/* A sorted set of disjoint, non-adjacent byte ranges [s, e) of one page. */
struct rrange {
	uint32_t s, e;
};
struct rset {
	uint32_t n, cap;
	struct rrange *r;
};

/* Add [s, e); returns the bytes newly covered, or -ENOMEM. */
int64_t rset_add(struct rset *rs, uint32_t s, uint32_t e);
/* Remove [s, e); returns the bytes removed, or -ENOMEM. */
int64_t rset_del(struct rset *rs, uint32_t s, uint32_t e);
bool rset_covers(const struct rset *rs, uint32_t s, uint32_t e);
uint64_t rset_bytes(const struct rset *rs);
/* The parts of [s, e) not in rs, into out (room for rs->n + 1). */
uint32_t rset_gaps(const struct rset *rs, uint32_t s, uint32_t e,
                   struct rrange *out);
void rset_clear(struct rset *rs);
void rset_free(struct rset *rs);

struct pc_page {
	uint64_t index;
	uint8_t *data;
	struct rset valid, dirty, unstable;
	struct pc_page *hnext;         /* hash chain */
	struct pc_page *lprev, *lnext; /* LRU, oldest first */
};

struct pc_file {
	struct snfs_ctx *c;
	struct snfs_fh fh;
	pthread_mutex_t lock;
	int refs; /* guarded by the cache lock */
	struct pc_page **buckets;
	size_t nbuckets, npages;
	struct pc_page lru;
	uint64_t size; /* what we believe the size is */
	uint64_t wend; /* end of data written since the last COMMIT */
	struct snfs_stat validator; /* attributes our cache matches */
	bool have_validator;
	uint64_t checked_ns; /* CLOCK_MONOTONIC of the last validation */
	uint64_t dirty_bytes, unstable_bytes;
	uint8_t wverf[8];
	bool have_wverf, verf_mixed;
	int werr; /* a write-behind error, reported by the next flush */
	uint64_t next_read;
	uint32_t ra;
	struct pc_file *prev, *next; /* in the cache's file list */
};

struct pc_cache {
	pthread_mutex_t lock;
	size_t budget; /* bytes of pages; 0: cache off */
	size_t used;   /* atomic */
	bool classic;  /* SNFS_PC_FULL: whole PC_CLASSIC_PAGE pages only */
	struct pc_file files;
};

int pc_cache_new(struct pc_cache **out, size_t budget);
void pc_cache_free(struct pc_cache *pc);

/* The file object for fh, with a reference; NULL on ENOMEM. */
struct pc_file *pc_file_get(struct snfs_ctx *c, const struct snfs_fh *fh);
void pc_file_put(struct pc_file *f);
/* Close-to-open: attributes fetched at open; drop the cache if the file
 * changed since we last saw it. True when it had been seen before and
 * changed. */
bool pc_file_validate(struct pc_file *f, const struct snfs_stat *st);

ssize_t pc_read(struct pc_file *f, void *buf, size_t count, uint64_t off);
ssize_t pc_write(struct pc_file *f, const void *buf, size_t count,
                 uint64_t off);
/* Send dirty ranges; with commit, COMMIT them too (and resend after a
 * verifier change). Returns 0 or -errno. */
int pc_flush(struct pc_file *f, bool commit);
/* Set the size on the server and in the cache. */
int pc_truncate(struct pc_file *f, uint64_t size);
uint64_t pc_size(struct pc_file *f);

#endif
