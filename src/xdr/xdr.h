/* Bounded XDR (RFC 4506) cursors.
 *
 * Decoding reads from a caller-owned buffer and never reads past its end:
 * every getter returns false and sets a sticky error flag when the input is
 * short or a length exceeds its bound, so a decoder may chain calls and test
 * x->err once at the end. Encoding appends to a growable, page-aligned
 * buffer with a hard size limit; past the limit it fails the same way.
 */
#ifndef SNFS_XDR_H
#define SNFS_XDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xdr_in {
	const uint8_t *buf;
	size_t len;
	size_t pos;
	bool err;
};

void xdr_in_init(struct xdr_in *x, const void *buf, size_t len);
size_t xdr_in_remaining(const struct xdr_in *x);

/* xdr_get_u32 and xdr_get_u64 are inline below: a READ_PLUS reply of
 * 4 KiB segments or a big READDIR is thousands of them, and the call
 * cost more than the decoding (measured: 6% of snfs cat's CPU). */
bool xdr_get_u32_slow(struct xdr_in *x, uint32_t *v);
bool xdr_get_u64_slow(struct xdr_in *x, uint64_t *v);
bool xdr_get_i32(struct xdr_in *x, int32_t *v);
/* XDR bool: only 0 and 1 are valid; anything else is a decode error. */
bool xdr_get_bool(struct xdr_in *x, bool *v);
/* Fixed-length opaque of n bytes plus padding, copied into dst. */
bool xdr_get_fixed(struct xdr_in *x, void *dst, size_t n);
/* Variable-length opaque<max>: *p points into the input buffer (no copy). */
bool xdr_get_opaque_ref(struct xdr_in *x, const uint8_t **p, uint32_t *len,
                        uint32_t max);
/* Variable-length opaque<max> copied into dst (dst must hold max bytes). */
bool xdr_get_opaque(struct xdr_in *x, void *dst, uint32_t *len, uint32_t max);
/* string<max> copied into dst and NUL-terminated; dstsz must exceed max.
 * A string holding a NUL byte is rejected (it would truncate silently). */
bool xdr_get_string(struct xdr_in *x, char *dst, size_t dstsz, uint32_t max);
/* Skip n bytes plus padding. */
bool xdr_skip(struct xdr_in *x, size_t n);

/* Bytes of a file that go out in place instead of being read into the
 * buffer: they follow buffer position at in the reply's stream. Sent by
 * sendfile, or, mapped, by sendmsg from a mapping of the file (one copy,
 * one system call for many parts: rpc/send.c). */
struct xdr_file_part {
	size_t at;
	uint64_t off, len;
	bool mapped;
};

struct xdr_out {
	uint8_t *buf;
	size_t len; /* bytes in buf; positions (patch, truncate) are in buf */
	size_t cap;
	size_t limit; /* buf plus file parts never grow past this */
	bool err;
	/* File parts, all of one file (fd, owned): only on a reply that a
	 * transport sends as a stream (xdr_out_allow_file). */
	bool file_ok, has_fd;
	int fd;
	struct xdr_file_part *parts;
	uint32_t nparts, parts_cap;
	uint64_t part_bytes; /* the sum of the parts' lengths */
};

/* Returns 0 or -ENOMEM. The buffer starts page-aligned. */
int xdr_out_init(struct xdr_out *x, size_t initial, size_t limit);
void xdr_out_free(struct xdr_out *x);
/* Make room for n more bytes now, so a later reserve cannot move the buffer. */
bool xdr_out_ensure(struct xdr_out *x, size_t n);
/* Truncating to a position at or before a file part drops the part. */
void xdr_out_truncate(struct xdr_out *x, size_t len);
/* The reply's length on the wire: the buffer and its file parts. */
static inline uint64_t xdr_out_size(const struct xdr_out *x)
{
	return x->len + x->part_bytes;
}

/* File parts (zero-copy replies). A transport that can send them says so
 * on the reply; an encoder then asks whether the reply may take a file
 * (allowed, none yet, and few enough held server-wide: each queued reply
 * holds a descriptor), hands it one (the reply owns and closes it), and
 * puts parts of it: len bytes from off, then zero padding in the buffer.
 * False when not possible; the encoder then copies the bytes instead. */
void xdr_out_allow_file(struct xdr_out *x);
bool xdr_out_may_take_file(const struct xdr_out *x);
bool xdr_out_take_file(struct xdr_out *x, int fd);
bool xdr_put_file(struct xdr_out *x, uint64_t off, uint64_t len);
/* xdr_put_file, the part sent from a mapping when mapped is true. */
static inline bool xdr_put_file_as(struct xdr_out *x, uint64_t off,
                                   uint64_t len, bool mapped)
{
	if (!xdr_put_file(x, off, len))
		return false;
	x->parts[x->nparts - 1].mapped = mapped;
	return true;
}
/* The most descriptors all replies together may hold (default 256). */
void xdr_set_file_limit(unsigned n);

/* xdr_put_u32 and xdr_put_u64 are inline below (see xdr_get_u32). */
bool xdr_put_u32_slow(struct xdr_out *x, uint32_t v);
bool xdr_put_u64_slow(struct xdr_out *x, uint64_t v);
bool xdr_put_i32(struct xdr_out *x, int32_t v);
bool xdr_put_bool(struct xdr_out *x, bool v);
/* Fixed-length opaque: n bytes plus zero padding. */
bool xdr_put_fixed(struct xdr_out *x, const void *src, size_t n);
/* Variable-length opaque: length, bytes, zero padding. */
bool xdr_put_opaque(struct xdr_out *x, const void *src, uint32_t n);
bool xdr_put_string(struct xdr_out *x, const char *s);
/* Reserve n bytes (plus zeroed padding) and return where to write them, or
 * NULL. The pointer is valid until the next call that may grow the buffer. */
uint8_t *xdr_put_reserve(struct xdr_out *x, size_t n);
/* Overwrite a u32 already encoded at byte offset off (for counts and
 * lengths only known after the items that follow them). */
void xdr_patch_u32(struct xdr_out *x, size_t off, uint32_t v);

static inline size_t xdr_pad(size_t n)
{
	return (4 - (n & 3)) & 3;
}

static inline uint32_t xdr_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline void xdr_set_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The fast paths: n bytes there to take (or room to put, within the
 * limit); anything else goes the checked way, which sets err. */
static inline bool xdr_in_has(const struct xdr_in *x, size_t n)
{
	return !x->err && x->len - x->pos >= n;
}

static inline bool xdr_out_has(const struct xdr_out *x, size_t n)
{
	return !x->err && x->cap - x->len >= n &&
	       x->len + x->part_bytes + n <= x->limit;
}

static inline bool xdr_get_u32(struct xdr_in *x, uint32_t *v)
{
	if (!xdr_in_has(x, 4))
		return xdr_get_u32_slow(x, v);
	*v = xdr_be32(x->buf + x->pos);
	x->pos += 4;
	return true;
}

static inline bool xdr_get_u64(struct xdr_in *x, uint64_t *v)
{
	if (!xdr_in_has(x, 8))
		return xdr_get_u64_slow(x, v);
	*v = (uint64_t)xdr_be32(x->buf + x->pos) << 32 |
	     xdr_be32(x->buf + x->pos + 4);
	x->pos += 8;
	return true;
}

static inline bool xdr_put_u32(struct xdr_out *x, uint32_t v)
{
	if (!xdr_out_has(x, 4))
		return xdr_put_u32_slow(x, v);
	xdr_set_be32(x->buf + x->len, v);
	x->len += 4;
	return true;
}

static inline bool xdr_put_u64(struct xdr_out *x, uint64_t v)
{
	if (!xdr_out_has(x, 8))
		return xdr_put_u64_slow(x, v);
	xdr_set_be32(x->buf + x->len, (uint32_t)(v >> 32));
	xdr_set_be32(x->buf + x->len + 4, (uint32_t)v);
	x->len += 8;
	return true;
}

#endif
