/* TCP record marking (RFC 5531 section 11).
 *
 * A record is a sequence of fragments, each preceded by a 4-byte mark: the
 * high bit flags the last fragment, the other 31 bits give its length. The
 * reader reassembles one record at a time into a buffer that grows as bytes
 * arrive (never just because a mark promises them), up to max_record.
 */
#include "rpc/rpc.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Buffers above this size are released between records so an idle
 * connection does not pin the memory of its largest call. */
#define RECORD_KEEP_CAP (64 * 1024)
#define RECORD_MIN_CAP 1024

/* Reset r to an empty reader for records of at most max_record bytes (the
 * default when 0). */
void rpc_record_init(struct rpc_record_reader *r, size_t max_record)
{
	memset(r, 0, sizeof(*r));
	r->max_record = max_record ? max_record : RPC_DEFAULT_MAX_RECORD;
}

/* Release the buffer; r can be initialized again. */
void rpc_record_free(struct rpc_record_reader *r)
{
	free(r->buf);
	r->buf = NULL;
	r->len = r->cap = 0;
}

/* A record is complete from the end of its last fragment until next(). */
static bool record_complete(const struct rpc_record_reader *r)
{
	return r->last && !r->in_frag;
}

/* Make room for n more bytes, growing geometrically but never past the end
 * of the current fragment, except to RECORD_MIN_CAP: a buffer that small
 * costs nothing a mark could abuse, and the server hands finished calls'
 * buffers to the next records, which then fit without a realloc however
 * the small calls' sizes vary. False when out of memory. */
static bool record_grow(struct rpc_record_reader *r, size_t n)
{
	size_t need = r->len + n, end = r->len + r->frag_left, cap;
	uint8_t *p;

	if (need <= r->cap)
		return true;
	cap = r->cap ? r->cap * 2 : RECORD_MIN_CAP;
	if (cap > end)
		cap = end > RECORD_MIN_CAP ? end : RECORD_MIN_CAP;
	if (cap < need)
		cap = need;
	p = realloc(r->buf, cap);
	if (!p)
		return false;
	r->buf = p;
	r->cap = cap;
	return true;
}

/* Take a complete fragment mark from r->hdr. False when the record would
 * grow past max_record. Empty fragments are legal (RFC 5531 section 11
 * puts no lower bound on a fragment) and cost no more than any 4 bytes. */
static bool record_start_fragment(struct rpc_record_reader *r)
{
	uint32_t v = (uint32_t)r->hdr[0] << 24 | (uint32_t)r->hdr[1] << 16 |
	             (uint32_t)r->hdr[2] << 8 | r->hdr[3];
	uint32_t flen = v & ~RPC_LAST_FRAG;

	r->hdr_have = 0;
	r->last = (v & RPC_LAST_FRAG) != 0;
	if (flen > r->max_record || r->len > r->max_record - flen)
		return false;
	r->frag_left = flen;
	r->in_frag = true;
	return true;
}

/* See rpc.h. */
long rpc_record_feed(struct rpc_record_reader *r, const uint8_t *p, size_t n,
                     bool *done)
{
	size_t used = 0;

	*done = false;
	if (record_complete(r)) {
		*done = true;
		return 0;
	}
	if (n > LONG_MAX)
		n = LONG_MAX;
	while (used < n) {
		if (!r->in_frag) {
			r->hdr[r->hdr_have++] = p[used++];
			if (r->hdr_have < 4)
				continue;
			if (!record_start_fragment(r))
				return -1;
		}
		if (r->frag_left > 0 && used < n) {
			size_t take = n - used;
			if (take > r->frag_left)
				take = r->frag_left;
			if (!record_grow(r, take))
				return -1;
			memcpy(r->buf + r->len, p + used, take);
			r->len += take;
			r->frag_left -= (uint32_t)take;
			used += take;
		}
		if (r->frag_left == 0) {
			r->in_frag = false;
			if (r->last) {
				*done = true;
				break;
			}
		}
	}
	return (long)used;
}

/* Forget the complete record and get ready for the next one. */
void rpc_record_next(struct rpc_record_reader *r)
{
	if (r->cap > RECORD_KEEP_CAP)
		rpc_record_free(r);
	r->len = 0;
	r->hdr_have = 0;
	r->frag_left = 0;
	r->last = false;
	r->in_frag = false;
}

/* See rpc.h. */
uint8_t *rpc_record_take(struct rpc_record_reader *r, size_t *len)
{
	uint8_t *buf = NULL;

	*len = 0;
	if (!record_complete(r))
		return NULL;
	if (r->len > 0) {
		buf = r->buf;
		*len = r->len;
		r->buf = NULL;
		r->len = r->cap = 0;
	}
	rpc_record_next(r);
	return buf;
}
