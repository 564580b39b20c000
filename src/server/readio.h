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

/* The shortest piece sent in place: the rule's zerocopy_min
 * (EXP_ZEROCOPY_MIN_DEFAULT unless set; no rule, the default). */
uint32_t srv_inplace_min(const struct export_rule *rule);

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
