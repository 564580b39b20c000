/* Server-side copy and clone for the POSIX backend.
 *
 * copy_file_range lets the file system share blocks (reflink on XFS and
 * Btrfs) or copy in the kernel; FICLONERANGE shares them or fails. Both
 * files are opened by handle as the server; the client's credentials are
 * checked on each (read the source, write the destination) before the
 * kernel is asked. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "backend/posix_copy.h"
#include "backend/posix_int.h"

#define COPY_CHUNK (64ull << 20) /* per copy_file_range call */

/* Open both files and check the client may read src and write dst. */
static int open_pair(struct bk_export *ex, const struct bk_cred *cr,
                     const struct bk_handle *src, const struct bk_handle *dst,
                     struct fd_ref *in, struct fd_ref *out)
{
	struct stat sst, dst_st;
	int rc = fd_cache_get(ex, src, false, in, &sst);

	if (rc)
		return rc;
	rc = fd_cache_get(ex, dst, true, out, &dst_st);
	if (rc) {
		fd_cache_put(ex->fds, in);
		return rc;
	}
	rc = cred_enter(cr);
	if (rc == 0)
		rc = posix_io_permitted(in->fd, &sst, cr, R_OK);
	if (rc == 0)
		rc = posix_io_permitted(out->fd, &dst_st, cr, W_OK);
	cred_leave();
	if (rc) {
		fd_cache_put(ex->fds, out);
		fd_cache_put(ex->fds, in);
	}
	return rc;
}

ssize_t posix_copy(struct bk_export *ex, const struct bk_cred *cr,
                   const struct bk_handle *src, uint64_t src_off,
                   const struct bk_handle *dst, uint64_t dst_off,
                   uint64_t count)
{
	struct fd_ref in, out;
	loff_t ioff = (loff_t)src_off, ooff = (loff_t)dst_off;
	uint64_t done = 0;
	ssize_t n = 0;
	int rc;

	if (src_off > INT64_MAX || dst_off > INT64_MAX ||
	    count > (uint64_t)INT64_MAX - dst_off)
		return -EINVAL;
	rc = open_pair(ex, cr, src, dst, &in, &out);
	if (rc)
		return rc;
	while (done < count) {
		size_t want =
		    count - done > COPY_CHUNK ? COPY_CHUNK : count - done;
		n = copy_file_range(in.fd, &ioff, out.fd, &ooff, want, 0);
		if (n < 0) {
			n = -errno;
			break;
		}
		if (n == 0)
			break; /* the source ended */
		done += (uint64_t)n;
	}
	fd_cache_put(ex->fds, &out);
	fd_cache_put(ex->fds, &in);
	hole_map_invalidate(ex->holes, dst);
	if (n < 0 && done == 0)
		return n;
	return (ssize_t)done;
}

int posix_clone(struct bk_export *ex, const struct bk_cred *cr,
                const struct bk_handle *src, uint64_t src_off,
                const struct bk_handle *dst, uint64_t dst_off, uint64_t count)
{
	struct file_clone_range r;
	struct fd_ref in, out;
	int rc;

	if (src_off > INT64_MAX || dst_off > INT64_MAX || count > INT64_MAX)
		return -EINVAL;
	rc = open_pair(ex, cr, src, dst, &in, &out);
	if (rc)
		return rc;
	r.src_fd = in.fd;
	r.src_offset = src_off;
	r.src_length = count; /* 0: to the end of the source */
	r.dest_offset = dst_off;
	if (ioctl(out.fd, FICLONERANGE, &r) != 0)
		rc = errno == EINVAL || errno == ENOTTY || errno == EXDEV
		         ? -EOPNOTSUPP
		         : -errno;
	fd_cache_put(ex->fds, &out);
	fd_cache_put(ex->fds, &in);
	hole_map_invalidate(ex->holes, dst);
	return rc;
}
