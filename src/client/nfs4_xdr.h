/* NFSv4.1/4.2 client codecs (RFC 8881, RFC 7862): COMPOUND building and
 * reply walking, fattr4 encoding and decoding, and the READDIR reply
 * decoder. Every decoder is bounds-checked through xdr_in. The protocol's
 * numbers (operations, nfsstat4, attributes) are in proto/nfs4_const.h. */
#ifndef SNFS_CLIENT_NFS4_XDR_H
#define SNFS_CLIENT_NFS4_XDR_H

#include <stdbool.h>
#include <stdint.h>

#include "client/client.h"
#include "client/readdir.h"
#include "proto/nfs4_const.h"
#include "xdr/xdr.h"

#define NFS4_MAX_OPS 48
#define NFS4_NAME_MAX 255

/* Attribute bitmaps hold 3 words (attribute numbers below this). */
enum { FA4_MAX = 96 };

/* Attribute requests: up to 3 bitmap words. */
struct nfs4_bitmap {
	uint32_t n;
	uint32_t w[3];
};

static inline void bm_set(struct nfs4_bitmap *b, unsigned bit)
{
	unsigned wi = bit / 32;
	if (wi >= 3)
		return;
	if (b->n <= wi)
		b->n = wi + 1;
	b->w[wi] |= 1u << (bit % 32);
}

static inline bool bm_isset(const struct nfs4_bitmap *b, unsigned bit)
{
	return bit / 32 < b->n && (b->w[bit / 32] >> (bit % 32)) & 1;
}

/* What a decoded fattr4 held besides struct snfs_stat. */
struct nfs4_fattr {
	struct snfs_stat st;
	struct nfs4_bitmap have;
	uint32_t rdattr_error;
	uint32_t lease_time;
	uint64_t maxread, maxwrite;
	uint64_t files_avail, files_free, files_total;
	uint64_t space_avail, space_free, space_total;
	uint64_t mounted_on_fileid;
};

/* The attribute sets we ask for. */
void nfs4_bm_stat(struct nfs4_bitmap *b); /* what snfs_stat needs */
void nfs4_bm_statvfs(struct nfs4_bitmap *b);

/* nfsstat4 to -errno. */
int nfs4_errno(uint32_t status);

/* ---- building a COMPOUND ---- */

struct nfs4_req {
	struct xdr_out x;
	size_t nops_pos;
	uint32_t nops;
	uint32_t ops[NFS4_MAX_OPS];
};

/* Start COMPOUND4args (tag, minorversion, the count patched later). */
int nfs4_req_init(struct nfs4_req *rq, uint32_t minor, size_t extra);
/* Begin an operation: records opnum and encodes it. */
void nfs4_put_op(struct nfs4_req *rq, uint32_t op);
/* Patch in the operation count; the request is ready to send. */
void nfs4_req_finish(struct nfs4_req *rq);

void nfs4_put_fh(struct nfs4_req *rq, const struct snfs_fh *fh); /* PUTFH */
void nfs4_put_stateid(struct xdr_out *x, const struct nfs4_stateid *s);
void nfs4_put_bitmap(struct xdr_out *x, const struct nfs4_bitmap *b);
void nfs4_put_getattr(struct nfs4_req *rq, const struct nfs4_bitmap *b);
/* fattr4 for SETATTR/CREATE/OPEN: the settable part of sa. */
void nfs4_put_sattr(struct xdr_out *x, const struct snfs_setattr *sa);
/* fattr4 holding just a type (for VERIFY/NVERIFY). */
void nfs4_put_type_fattr(struct xdr_out *x, uint32_t nf4type);

/* ---- walking a COMPOUND4res ---- */

/* Read the next result's header: 0 if it is op and succeeded, -errno for
 * its failure status (with *status set), -EPROTO on a mismatch. */
int nfs4_expect(struct xdr_in *x, uint32_t op, uint32_t *status);
bool nfs4_get_fh(struct xdr_in *x, struct snfs_fh *fh);
bool nfs4_get_stateid(struct xdr_in *x, struct nfs4_stateid *s);
bool nfs4_get_bitmap(struct xdr_in *x, struct nfs4_bitmap *b);
bool nfs4_skip_change_info(struct xdr_in *x);
/* fattr4: bitmap and attribute values, decoded into fa. Fails on an
 * attribute we cannot skip. */
bool nfs4_get_fattr(struct xdr_in *x, struct nfs4_fattr *fa);
/* Owner strings: "1000", or "user@domain" mapped through the local
 * passwd/group database, else nobody (65534). */
uint32_t nfs4_owner_to_id(const uint8_t *s, uint32_t n, bool group);

/* decode_attr hook for rd_page: a fattr4 at buf + off. */
int nfs4_decode_attr_at(const uint8_t *buf, size_t len, uint32_t off,
                        struct snfs_stat *st);
/* Decode a READDIR4resok (after the op's status) into page: cookieverf,
 * entries, eof. Offsets are relative to base. plus: keep attributes. */
int nfs4_decode_readdir(struct xdr_in *x, const uint8_t *base, bool plus,
                        struct rd_page *page);

#endif
