/* READ replies that send the file's bytes in place (zero copy). */
#ifndef SNFS_READIO_H
#define SNFS_READIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "xdr/xdr.h"

struct export;
struct export_rule;

/* Whether the export lets reads go in place at all. */
bool srv_inplace_allowed(const struct export *ex,
                         const struct export_rule *rule);

/* Pieces shorter than this are copied into the reply: a sendfile (and
 * the send of the header before it) per piece costs more than the copy
 * it saves. Measured on this host over loopback, per piece alternating
 * with holes (/tmp/hb/mb/sf.c): 8 KiB pieces 1.6x slower than readv and
 * send, 32 KiB and 64 KiB even; under the guest's emulated CPU every
 * copy is dear and sendfile wins at any size. */
#define READ_INPLACE_MIN (32u << 10)

/* Put count bytes of the file at off into x in place: a file part the
 * transport sends straight from the page cache, then the opaque's zero
 * padding. Returns 1 done (*n bytes, possibly 0; *eof; attr, if not NULL,
 * the file's attributes), 0 when not possible here (too small, a backend
 * without descriptors, an export with no_zerocopy, a reply that cannot
 * take a file: the caller reads into the buffer), or -errno as the
 * backend's read would fail. */
int srv_read_inplace(struct xdr_out *x, const struct export *ex,
                     const struct export_rule *rule, const struct bk_cred *cr,
                     const struct bk_handle *h, uint64_t off, size_t count,
                     size_t *n, bool *eof, struct bk_attr *attr);

#endif
