/* Test helper: a reply's bytes as the TCP transport sends them (its
 * buffer with the file parts read in, as rpc/send.c sends them). */
#ifndef SNFS_TEST_STREAM_H
#define SNFS_TEST_STREAM_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xdr/xdr.h"

/* A malloc'ed copy of x's stream (xdr_out_size bytes); NULL when out of
 * memory. Bytes of a part the file no longer has read as 0xee. */
static inline uint8_t *reply_stream_of(const struct xdr_out *x)
{
	uint8_t *s = malloc(xdr_out_size(x) + 1);
	size_t n = 0, prev = 0;

	for (uint32_t i = 0; s && i <= x->nparts; i++) {
		size_t at = i < x->nparts ? x->parts[i].at : x->len;
		memcpy(s + n, x->buf + prev, at - prev);
		n += at - prev;
		prev = at;
		if (i == x->nparts)
			break;
		if (pread(x->fd, s + n, x->parts[i].len,
		          (off_t)x->parts[i].off) != (ssize_t)x->parts[i].len)
			memset(s + n, 0xee, x->parts[i].len);
		n += x->parts[i].len;
	}
	return s;
}

#endif
