/* Unit tests of READ_PLUS pieces read by io_uring (src/backend/readring.c):
 * the bytes of every piece, in batches past the ring's size, and where it
 * stops: a piece cut short by the end of the file, a page not in the page
 * cache (no waiting for the disk: the caller reads on from there), and
 * io_uring turned off (-ENOSYS, nothing read). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../test.h"
#include "backend/posix_int.h"

#define SIZE 300000 /* not a page multiple */

static uint8_t file[SIZE], got[SIZE];

/* Pieces at offs[k] of lens[k] bytes, laid one after another in got. */
static int pieces(struct bk_piece *pc, const uint64_t (*at)[2], int n)
{
	size_t w = 0;

	for (int k = 0; k < n; k++) {
		pc[k] = (struct bk_piece){at[k][0], got + w, at[k][1]};
		w += at[k][1];
	}
	return n;
}

/* Whether the first n pieces hold the file's bytes, the n-th its first
 * skip bytes. */
static bool same(const struct bk_piece *pc, int n, size_t skip)
{
	for (int k = 0; k < n; k++)
		if (memcmp(pc[k].buf, file + pc[k].off, pc[k].len) != 0)
			return false;
	return skip == 0 || memcmp(pc[n].buf, file + pc[n].off, skip) == 0;
}

/* Whether the page at off of fd is in the page cache. */
static bool resident(int fd, off_t off)
{
	unsigned char v = 0;
	void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, off);

	if (m == MAP_FAILED)
		return false;
	if (mincore(m, 4096, &v) != 0)
		v = 0;
	munmap(m, 4096);
	return v & 1;
}

/* Whether io_uring may be refused here by the administrator. */
static bool ring_disabled(void)
{
	FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "r");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v != 0;
}

int main(void)
{
	char path[] = "/tmp/snfs-readring-XXXXXX";
	static uint64_t many[700][2];
	const uint64_t some[][2] = {
	    {0, 4096}, {8192, 4096}, {12288, 100}, {20000, 5000}, {150000, 1}};
	const uint64_t past[][2] = {{290000, 4096}, {296000, 8192}};
	struct bk_piece pc[700];
	size_t skip;
	ssize_t n;
	int fd, i;

	for (size_t k = 0; k < SIZE; k++)
		file[k] = (uint8_t)(k * 7 + (k >> 12));
	for (int k = 0; k < 700; k++) /* past the ring's 256 entries */
		many[k][0] = 400 * (uint64_t)k, many[k][1] = 200;
	fd = mkstemp(path);
	if (fd < 0 || write(fd, file, SIZE) != SIZE || fsync(fd) != 0) {
		perror("test file");
		return 1;
	}
	unlink(path);

	n = posix_ring_read(fd, pc, pieces(pc, some, 5), &i, &skip);
	if (n == -ENOSYS && ring_disabled()) {
		/* the server reads by preadv then (test_posix covers it) */
		CHECK(true, "io_uring disabled by kernel.io_uring_disabled");
		TEST_EXIT();
	}
	CHECK(n == 4096 + 4096 + 100 + 5000 + 1 && i == 5 && skip == 0 &&
	          same(pc, 5, 0),
	      "five cached pieces: every byte, in one submission");

	n = posix_ring_read(fd, pc, pieces(pc, many, 700), &i, &skip);
	CHECK(n == 140000 && i == 700 && same(pc, 700, 0),
	      "700 pieces: in batches of the ring's size");

	n = posix_ring_read(fd, pc, pieces(pc, past, 2), &i, &skip);
	CHECK(n == 4096 + 4000 && i == 1 && skip == 4000 && same(pc, 1, 4000),
	      "the file's end cuts the last piece short: stops in it");

	/* one page evicted: the read does not wait for it. The pages are
	 * cached one by one first, without readahead, so each sits in a
	 * folio of its own and one can leave alone (a large folio would go
	 * whole or not at all). */
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	for (off_t o = 0; o < 32768; o += 4096)
		if (pread(fd, got, 4096, o) != 4096)
			break;
	posix_fadvise(fd, 8192, 4096, POSIX_FADV_DONTNEED);
	CHECK(!resident(fd, 8192) && resident(fd, 4096) && resident(fd, 12288),
	      "one page evicted: only that page left the cache");
	n = posix_ring_read(fd, pc, pieces(pc, some, 5), &i, &skip);
	CHECK(n >= 4096 && i >= 1 && same(pc, i, skip) &&
	          (i < 5 || n == 4096 + 4096 + 100 + 5000 + 1),
	      "a page not cached: the pieces before it, whole");
	CHECK(i == 1 && skip == 0 && n == 4096,
	      "a page not cached: stops at its piece (no wait for the disk)");

	posix_ring_enable(false);
	CHECK(posix_ring_read(fd, pc, pieces(pc, some, 5), &i, &skip) ==
	          -ENOSYS,
	      "turned off: -ENOSYS, the caller reads by preadv");
	posix_ring_enable(true);
	if (pread(fd, got, SIZE, 0) != SIZE) /* every page cached again */
		perror("pread");
	n = posix_ring_read(fd, pc, pieces(pc, some, 5), &i, &skip);
	CHECK(n == 4096 + 4096 + 100 + 5000 + 1 && i == 5 && same(pc, 5, 0),
	      "turned on again: read by io_uring");
	close(fd);
	TEST_EXIT();
}
