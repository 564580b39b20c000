/* READ replies in place: see readio.h.
 *
 * Why: a copied READ reply costs two copies per byte on the server (file
 * into the reply, reply into the socket); sendfile hands the page cache's
 * pages to the socket instead. Where copies are dear (an emulated CPU:
 * 64 MiB over loopback 1.25-1.60 s copied vs 0.39-0.44 s by sendfile in
 * the QEMU guest, /tmp/hb/mb/sf.c) that is most of a read's cost. */
#include "server/readio.h"

#include <errno.h>
#include <unistd.h>

#include "server/exports.h"

bool srv_inplace_allowed(const struct export *ex,
                         const struct export_rule *rule)
{
	return ex->ops->read_ref && !(rule && (rule->flags & EXP_NO_ZEROCOPY));
}

uint32_t srv_inplace_min(const struct export_rule *rule)
{
	return rule ? rule->zerocopy_min : EXP_ZEROCOPY_MIN_DEFAULT;
}

int srv_read_inplace(struct xdr_out *x, const struct export *ex,
                     const struct export_rule *rule, const struct bk_cred *cr,
                     const struct bk_handle *h, uint64_t off, size_t count,
                     size_t *n, bool *eof, struct bk_attr *attr)
{
	int fd, rc;

	if (count < srv_inplace_min(rule) || !srv_inplace_allowed(ex, rule) ||
	    !xdr_out_may_take_file(x))
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
	return xdr_put_file(x, off, *n) ? 1 : -ENOMEM;
}
