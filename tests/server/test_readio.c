/* server/readio: how READ data goes into a reply (srv_inplace_how) by
 * export options and by whether sendfile pays on the machine (set both
 * ways here), and srv_inplace_prefetch: a cold range of the reply's file
 * is read into the page cache as a whole, before anything is sent. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "rpc/rpc.h"
#include "server/exports.h"
#include "server/readio.h"
#include "util/cachestat.h"
#include "util/log.h"

static int fake_read_ref(struct bk_export *ex, const struct bk_cred *cr,
                         const struct bk_handle *h, uint64_t off, size_t count,
                         int *fd, size_t *n, bool *eof, struct bk_attr *attr)
{
	(void)ex, (void)cr, (void)h, (void)off, (void)count, (void)fd;
	(void)n, (void)eof, (void)attr;
	return -ENOSYS;
}

static const struct bk_ops with_ref = {.read_ref = fake_read_ref};
static const struct bk_ops without_ref = {0};

static enum srv_inplace how(const struct bk_ops *ops, uint32_t flags,
                            uint32_t zc_min, uint64_t count, uint64_t len)
{
	struct export ex = {.ops = ops};
	struct export_rule rule = {.flags = flags,
	                           .zerocopy_min = zc_min,
	                           .mapped_min = EXP_MAPPED_MIN_DEFAULT};

	return srv_inplace_how(&ex, &rule, count, len);
}

static void test_how(void)
{
	const uint32_t unset = EXP_ZEROCOPY_MIN_UNSET;
	const uint32_t nomap = EXP_NO_MAPPED;

	rpc_sendfile_pays_set(false);
	CHECK(how(&with_ref, EXP_ZEROCOPY_AUTO | nomap, unset, 1 << 20,
	          1 << 20) == SRV_COPY,
	      "zerocopy=auto, sendfile does not pay: copied, even 1 MiB");
	rpc_sendfile_pays_set(true);
	CHECK(how(&with_ref, EXP_ZEROCOPY_AUTO | nomap, unset, 1 << 20, 4096) ==
	          SRV_SENDFILE,
	      "zerocopy=auto, sendfile pays: a page by sendfile");
	CHECK(how(&with_ref, EXP_ZEROCOPY_AUTO | nomap, unset, 1 << 20, 4095) ==
	          SRV_COPY,
	      "zerocopy=auto, sendfile pays: under a page copied");
	CHECK(how(&with_ref, EXP_ZEROCOPY_AUTO | nomap, 65536, 1 << 20,
	          32768) == SRV_COPY,
	      "zerocopy=auto with zerocopy_min=64k: 32 KiB copied");
	CHECK(how(&without_ref, EXP_ZEROCOPY_AUTO | nomap, unset, 1 << 20,
	          1 << 20) == SRV_COPY,
	      "a backend without descriptors: always copied");
	CHECK(how(&with_ref, EXP_NO_ZEROCOPY | nomap, unset, 1 << 20,
	          1 << 20) == SRV_COPY,
	      "no_zerocopy: copied where sendfile pays");
	rpc_sendfile_pays_set(false);
	CHECK(how(&with_ref, nomap, unset, 1 << 20, 32768) == SRV_SENDFILE,
	      "zerocopy: 32 KiB by sendfile where it does not pay");
	CHECK(how(&with_ref, nomap, unset, 1 << 20, 16384) == SRV_COPY,
	      "zerocopy, zerocopy_min unset: 16 KiB copied");
	CHECK(how(&with_ref, EXP_NO_ZEROCOPY, unset, 1 << 20, 4096) ==
	          SRV_MAPPED,
	      "no_zerocopy,mapped: a 1 MiB call mapped");
}

/* Pages of [0, len) of fd in the page cache, or -1. */
static long cached(int fd, uint64_t len)
{
	struct util_cachestat cs;

	return util_cachestat(fd, 0, len, &cs) ? (long)cs.nr_cache : -1;
}

static void test_prefetch(void)
{
	char path[] = "/tmp/snfs-readio-XXXXXX";
	const size_t len = 256 << 10;
	uint8_t *buf = malloc(len);
	struct xdr_out x;
	long n = -1;
	int fd = mkstemp(path);

	if (fd < 0 || !buf) {
		CHECK(0, "a test file");
		free(buf);
		return;
	}
	unlink(path);
	memset(buf, 0x5a, len);
	CHECK(pwrite(fd, buf, len, 0) == (ssize_t)len && fsync(fd) == 0,
	      "256 KiB written");
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (cached(fd, len) != 0) {
		printf("# cannot evict the file or count its pages: skipped\n");
		goto out;
	}
	xdr_out_init(&x, 4096, 1 << 20);
	xdr_out_allow_file(&x);
	CHECK(xdr_out_take_file(&x, dup(fd)), "the reply takes the file");
	CHECK(cached(fd, len) == 0, "taking the file reads nothing");
	srv_inplace_prefetch(&x, 0, len);
	for (int i = 0; i < 200 && n < 64; i++) {
		n = cached(fd, len);
		if (n < 64)
			usleep(10000);
	}
	char msg[120];
	snprintf(msg, sizeof(msg),
	         "prefetch: the cold range read as a whole (%ld of 64 pages)",
	         n);
	CHECK(n == 64, msg);
	srv_inplace_prefetch(&x, 0, len); /* warm: nothing to do */
	CHECK(cached(fd, len) == 64,
	      "prefetch of a cached range: still cached");
	xdr_out_free(&x);
out:
	close(fd);
	free(buf);
}

int main(void)
{
	log_set_level(LOG_WARN);
	test_how();
	test_prefetch();
	TEST_EXIT();
}
