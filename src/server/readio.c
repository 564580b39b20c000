/* READ replies in place: see readio.h.
 *
 * Why: a copied READ reply costs two copies per byte on the server (file
 * into the reply, reply into the socket). sendfile hands the page cache's
 * pages to the socket instead; where copies are dear (an emulated CPU:
 * 64 MiB over loopback 1.25-1.60 s copied vs 0.39-0.44 s by sendfile in
 * the QEMU guest, /tmp/hb/mb/sf.c) that is most of a read's cost, but a
 * sendfile per small piece costs more than its copy on a real CPU. A
 * mapping sends every piece of a reply with one copy and one sendmsg:
 * measured on the host, 1 GiB cached through snfs cat in 1 MiB calls,
 * READ 10-30% faster, READ_PLUS of 4 KiB-segment files no faster, small
 * calls slower (exports.h; doc/HACKING.md, stop 25). */
#include "server/readio.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "rpc/rpc.h"
#include "server/exports.h"
#include "util/cachestat.h"

uint64_t srv_sendfile_from(const struct export_rule *rule)
{
	uint32_t flags = rule ? rule->flags : 0;
	uint32_t v = rule ? rule->zerocopy_min : EXP_ZEROCOPY_MIN_UNSET;

	if (flags & EXP_NO_ZEROCOPY)
		return UINT64_MAX;
	if (flags & EXP_ZEROCOPY_AUTO) {
		uint64_t from = rpc_sendfile_from();

		if (from == UINT64_MAX)
			return UINT64_MAX;
		return v != EXP_ZEROCOPY_MIN_UNSET ? v : from;
	}
	return v != EXP_ZEROCOPY_MIN_UNSET ? v : EXP_ZEROCOPY_MIN_DEFAULT;
}

enum srv_inplace srv_inplace_how(const struct export *ex,
                                 const struct export_rule *rule, uint64_t count,
                                 uint64_t len)
{
	uint32_t flags = rule ? rule->flags : 0;
	uint32_t map_min = rule ? rule->mapped_min : EXP_MAPPED_MIN_DEFAULT;

	if (!ex->ops->read_ref)
		return SRV_COPY;
	if (len >= srv_sendfile_from(rule))
		return SRV_SENDFILE;
	if (!(flags & EXP_NO_MAPPED) && count >= map_min)
		return SRV_MAPPED;
	return SRV_COPY;
}

int srv_read_inplace_as(struct xdr_out *x, const struct export *ex,
                        const struct bk_cred *cr, const struct bk_handle *h,
                        uint64_t off, size_t count, enum srv_inplace how,
                        size_t *n, bool *eof, struct bk_attr *attr)
{
	int fd, rc;

	if (how == SRV_COPY || !xdr_out_may_take_file(x))
		return 0;
	rc = ex->ops->read_ref(ex->bk, cr, h, off, count, &fd, n, eof, attr);
	if (rc != 0)
		return rc;
	if (*n == 0) {
		close(fd);
		return 1;
	}
	if (!xdr_out_take_file(x, fd)) {
		close(fd);
		return 0;
	}
	return xdr_put_file_as(x, off, *n, how == SRV_MAPPED) ? 1 : -ENOMEM;
}

int srv_read_inplace(struct xdr_out *x, const struct export *ex,
                     const struct export_rule *rule, const struct bk_cred *cr,
                     const struct bk_handle *h, uint64_t off, size_t count,
                     size_t *n, bool *eof, struct bk_attr *attr)
{
	return srv_read_inplace_as(x, ex, cr, h, off, count,
	                           srv_inplace_how(ex, rule, count, count), n,
	                           eof, attr);
}

void srv_inplace_prefetch(const struct xdr_out *x, uint64_t off, uint64_t len)
{
	const uint64_t pg = 4096;
	struct util_cachestat cs;

	if (!x->has_fd || len == 0)
		return;
	if (util_cachestat(x->fd, off, len, &cs) &&
	    cs.nr_cache >= (off + len + pg - 1) / pg - off / pg)
		return;
	(void)posix_fadvise(x->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}
