/* READ replies that send the file's bytes in place (no copy into the
 * reply): by sendfile, or from a mapping of the file (rpc/send.c). */
#ifndef SNFS_READIO_H
#define SNFS_READIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "xdr/xdr.h"

struct export;
struct export_rule;

/* How data goes into a reply: read into its buffer, or in place. */
enum srv_inplace { SRV_COPY, SRV_MAPPED, SRV_SENDFILE };

/* The shortest piece sent by sendfile under the rule's zerocopy options,
 * or UINT64_MAX for none (see srv_inplace_how). */
uint64_t srv_sendfile_from(const struct export_rule *rule);

/* How a piece of len bytes goes, in a call asking for count bytes of the
 * file: by sendfile with zerocopy when len reaches zerocopy_min (32 KiB
 * unset), or with zerocopy=auto when it reaches zerocopy_min or, unset,
 * the size from which sendfile pays on this machine (rpc_sendfile_from,
 * none where it never does); else
 * mapped unless no_mapped, when count reaches mapped_min (the mapping is
 * made once per reply, so the call's size decides, not the piece's);
 * else copied. Always copied without a backend giving descriptors. */
enum srv_inplace srv_inplace_how(const struct export *ex,
                                 const struct export_rule *rule, uint64_t count,
                                 uint64_t len);

/* Put count bytes of the file at off into x in place, as how says (not
 * SRV_COPY): a file part the transport sends straight from the page
 * cache, then the opaque's zero padding. Returns 1 done (*n bytes,
 * possibly 0; *eof; attr, if not NULL, the file's attributes), 0 when
 * not possible here (a reply that cannot take a file: the caller reads
 * into the buffer), or -errno as the backend's read would fail. */
int srv_read_inplace_as(struct xdr_out *x, const struct export *ex,
                        const struct bk_cred *cr, const struct bk_handle *h,
                        uint64_t off, size_t count, enum srv_inplace how,
                        size_t *n, bool *eof, struct bk_attr *attr);

/* READ's: srv_read_inplace_as as srv_inplace_how decides for count
 * bytes; 0 also when that is SRV_COPY. */
int srv_read_inplace(struct xdr_out *x, const struct export *ex,
                     const struct export_rule *rule, const struct bk_cred *cr,
                     const struct bk_handle *h, uint64_t off, size_t count,
                     size_t *n, bool *eof, struct bk_attr *attr);

/* Before pieces of [off, off + len) of x's file go in place one by one
 * (READ_PLUS DATA segments between holes): where the range is not all in
 * the page cache, start reading all of it now. Why: sendfile (or a
 * mapping's faults) reads what is missing as it goes, and pieces with
 * gaps between them look random
 * to the kernel's readahead, which then reads each piece on its own and
 * waits for it (cold mixed files in the guest, 4 KiB pieces: READ_PLUS
 * 1.6x READ, bench/results/stop26). The gaps' pages are read too (holes
 * come as pages of zeros), as the copying path's one read does. */
void srv_inplace_prefetch(const struct xdr_out *x, uint64_t off, uint64_t len);

#endif
