/* Directory listings: every READDIR(PLUS) reply is kept whole (struct
 * rd_page) and indexed; a listing (struct rd_list) is the chain of replies
 * from cookie 0 to eof. Cookies are looked up by binary search while they
 * grow monotonically, linearly otherwise. */
#ifndef SNFS_CLIENT_READDIR_H
#define SNFS_CLIENT_READDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/client.h"

/* Internal status for NFS3ERR_BAD_COOKIE / NFS4ERR_NOT_SAME. */
#define SNFS_EBADCOOKIE 10003

struct rd_entry {
	uint64_t fileid, cookie;
	uint32_t name_off, name_len; /* into the page's reply buffer */
	uint32_t attr_off;           /* 0: no attributes */
	uint32_t fh_off, fh_len;     /* fh_len 0: no handle */
};

struct rd_page {
	uint8_t *buf;        /* the whole reply, owned (freed with the page) */
	const uint8_t *data; /* the decoded body inside buf; offsets are */
	size_t dlen;         /* relative to data */
	struct rd_entry *ents;
	uint32_t n, cap;
	bool eof;
	uint8_t verf[8];
	bool have_dir_attr;
	struct snfs_stat dir_attr;
	/* decodes the attributes an entry's attr_off points at */
	int (*decode_attr)(const uint8_t *buf, size_t len, uint32_t off,
	                   struct snfs_stat *st);
};

/* Append an entry (grows ents). Returns 0 or -ENOMEM. */
int rd_page_add(struct rd_page *p, const struct rd_entry *e);
void rd_page_free(struct rd_page *p);

struct rd_list {
	struct rd_page **pages;
	uint32_t npages, cap;
	uint64_t *first_index; /* global index of each page's first entry */
	uint64_t nents;
	bool complete;  /* the last page had eof */
	bool monotonic; /* cookies strictly increase across the list */
	uint64_t last_cookie;
};

void rd_list_init(struct rd_list *l);
void rd_list_free(struct rd_list *l);
/* Take over page p (appended at the end). */
int rd_list_append(struct rd_list *l, struct rd_page *p);
/* Entry number i (0-based) of the listing, with its page. */
const struct rd_entry *rd_list_get(const struct rd_list *l, uint64_t i,
                                   const struct rd_page **page);
/* The index of the entry after the one with this cookie (cookie 0: 0).
 * Returns 0 and *index, or -ENOENT. O(log n) on monotonic cookies. */
int rd_list_find_cookie(const struct rd_list *l, uint64_t cookie,
                        uint64_t *index);
/* Test hook: cookies rd_list_find_cookie compared so far (all threads). */
extern uint64_t rd_find_cookie_probes;

/* The per-context cache of complete listings, checked against the
 * directory's change attribute. */
struct rd_cache;
int rd_cache_new(struct rd_cache **out, size_t max_bytes);
void rd_cache_free(struct rd_cache *rc);

#endif
