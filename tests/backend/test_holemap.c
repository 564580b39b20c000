/* Unit tests of the hole/data maps (src/backend/holemap.c) through the
 * backend's extents entry: exact maps for the seed file shapes, the cache
 * dropped by changes through the backend and by a write beside it, and
 * O(1) lseeks per call for a sequential read of an all-hole 1 GiB file,
 * FIEMAP batches (one call per 256 extents) and unwritten extents mapped
 * as lseek sees them.
 * Runs as root (handles are opened with open_by_handle_at). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "backend/backend.h"
#include "backend/posix_int.h"

#define MAXE 4096

static const struct bk_ops *ops = &bk_posix_ops;
static struct bk_export *ex;
static struct bk_handle root;
static char base[64];
static const struct bk_cred root_cr = {.uid = 0, .gid = 0};

static void path_of(char *buf, size_t sz, const char *rel)
{
	snprintf(buf, sz, "%s/%s", base, rel);
}

/* Wait past a timestamp tick, so a map found now is cached and a change
 * afterwards moves the ctime. */
static void settle(void)
{
	usleep(40000);
}

/* A file of size bytes alternating unit bytes of data and hole (data
 * first unless hole_first); unit 0: all data (size != 0) or all hole. */
static int make_shape(const char *name, uint64_t size, uint64_t unit,
                      bool hole_first, bool all_data, struct bk_handle *h)
{
	char path[128];
	struct bk_attr a;
	uint8_t *buf;
	int fd, rc = 0;

	path_of(path, sizeof(path), name);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0)
		return -errno;
	buf = malloc(1 << 20);
	memset(buf, 0xa5, 1 << 20);
	if (all_data) {
		for (uint64_t o = 0; o < size && rc == 0; o += 1 << 20)
			if (pwrite(fd, buf,
			           size - o < (1 << 20) ? size - o : 1 << 20,
			           (off_t)o) < 0)
				rc = -errno;
	} else if (unit) {
		for (uint64_t o = hole_first ? unit : 0; o < size && rc == 0;
		     o += 2 * unit)
			if (pwrite(fd, buf, unit, (off_t)o) < 0)
				rc = -errno;
	}
	if (rc == 0 && ftruncate(fd, (off_t)size) != 0)
		rc = -errno;
	fsync(fd);
	close(fd);
	free(buf);
	if (rc == 0)
		rc = ops->lookup(ex, &root_cr, &root, name, h, &a);
	return rc;
}

/* The file's map by SEEK_DATA/SEEK_HOLE straight from the kernel. */
static int real_map(const char *name, struct bk_extent *out, int max)
{
	char path[128];
	struct stat st;
	uint64_t pos = 0, size;
	int fd, n = 0;

	path_of(path, sizeof(path), name);
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) != 0)
		return -1;
	size = (uint64_t)st.st_size;
	while (pos < size && n < max) {
		off_t d = lseek(fd, (off_t)pos, SEEK_DATA);
		uint64_t dd = d < 0 ? size : (uint64_t)d, hh;

		if (dd > pos) {
			out[n++] = (struct bk_extent){pos, dd - pos, true};
			pos = dd;
			continue;
		}
		hh = (uint64_t)lseek(fd, (off_t)pos, SEEK_HOLE);
		out[n++] = (struct bk_extent){pos, hh - pos, false};
		pos = hh;
	}
	close(fd);
	return n;
}

/* The map through the backend, step bytes per call, holes under min_hole
 * merged: calls return whole extents, so a call may return again the
 * extent the last one ended with, or (merged data found on since) one
 * overlapping it: both are joined, as are data extents meeting at a call
 * boundary when merging (a small hole after the window's end). */
static int backend_map(const struct bk_handle *h, uint64_t size, uint64_t step,
                       uint64_t min_hole, struct bk_extent *out, int max)
{
	struct bk_extent e[64];
	uint64_t pos = 0;
	int n = 0, k, rc;

	while (pos < size) {
		rc = ops->extents(ex, &root_cr, h, pos, step, min_hole, e, 64,
		                  &k);
		if (rc || k == 0)
			return rc ? rc : -100;
		for (int i = 0; i < k; i++) {
			struct bk_extent *l = n ? &out[n - 1] : NULL;
			uint64_t lend = l ? l->off + l->len : 0;

			if (l &&
			    (e[i].off < lend || (min_hole && e[i].off == lend &&
			                         !l->hole && !e[i].hole))) {
				if (e[i].hole != l->hole || e[i].off < l->off)
					return -103;
				if (e[i].off + e[i].len > lend)
					l->len = e[i].off + e[i].len - l->off;
				continue;
			}
			if (n == max)
				return -101;
			out[n++] = e[i];
		}
		pos = out[n - 1].off + out[n - 1].len;
		if (pos > size)
			return -102;
	}
	return n;
}

static bool same_map(const struct bk_extent *a, int na,
                     const struct bk_extent *b, int nb)
{
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
		if (a[i].off != b[i].off || a[i].len != b[i].len ||
		    a[i].hole != b[i].hole)
			return false;
	return true;
}

static bool map_matches(const char *name, const struct bk_handle *h,
                        uint64_t size, uint64_t step)
{
	static struct bk_extent a[MAXE], b[MAXE];
	int na = real_map(name, a, MAXE);
	int nb = backend_map(h, size, step, 0, b, MAXE);

	return na > 0 && same_map(a, na, b, nb);
}

static void test_shapes(void)
{
	static const struct {
		const char *name;
		uint64_t unit;
		bool hole_first, all_data;
	} sh[] = {
	    {"data", 0, false, true},
	    {"hole", 0, false, false},
	    {"mixed-4d", 4096, false, false},
	    {"mixed-4h", 4096, true, false},
	    {"mixed-8d", 8192, false, false},
	    {"mixed-8h", 8192, true, false},
	    {"mixed-16d", 16384, false, false},
	    {"mixed-16h", 16384, true, false},
	    {"mixed-32d", 32768, false, false},
	    {"mixed-32h", 32768, true, false},
	};
	const uint64_t size = 2 << 20;
	char msg[96];

	for (size_t i = 0; i < sizeof(sh) / sizeof(sh[0]); i++) {
		struct bk_handle h;
		struct bk_extent e[4];
		int n;

		CHECK(make_shape(sh[i].name, size, sh[i].unit, sh[i].hole_first,
		                 sh[i].all_data, &h) == 0,
		      "make a seed shape");
		snprintf(msg, sizeof(msg), "%s: map exact (64 KiB calls)",
		         sh[i].name);
		CHECK(map_matches(sh[i].name, &h, size, 65536), msg);
		snprintf(msg, sizeof(msg),
		         "%s: map exact (1 MiB calls, cached)", sh[i].name);
		CHECK(map_matches(sh[i].name, &h, size, 1 << 20), msg);
		/* A call starting inside an extent returns that extent. */
		snprintf(msg, sizeof(msg), "%s: mid-extent start", sh[i].name);
		CHECK(ops->extents(ex, &root_cr, &h, 4100, 10, 0, e, 4, &n) ==
		              0 &&
		          n == 1 && e[0].off <= 4100 &&
		          e[0].off + e[0].len > 4100,
		      msg);
		CHECK(ops->extents(ex, &root_cr, &h, size, 10, 0, e, 4, &n) ==
		              0 &&
		          n == 0,
		      "no extents at EOF");
	}
}

/* The map a with every hole under min_hole made data, joined with the
 * data around it. */
static int merged_map(const struct bk_extent *a, int na, uint64_t min_hole,
                      struct bk_extent *out)
{
	int n = 0;

	for (int i = 0; i < na; i++) {
		bool hole = a[i].hole && a[i].len >= min_hole;

		if (n && !hole && !out[n - 1].hole)
			out[n - 1].len += a[i].len;
		else
			out[n++] = (struct bk_extent){a[i].off, a[i].len, hole};
	}
	return n;
}

/* Holes under min_hole come merged into the data around them, across
 * FIEMAP batches and window extensions, in calls of any size: the file
 * alternates 4 KiB of data and hole for 2 MiB (512 extents), then a hole
 * to 3 MiB, 64 KiB of data, an 8 KiB hole, 4 KiB of data and a hole to
 * 4 MiB. */
static void test_merged(void)
{
	static struct bk_extent a[MAXE], want[MAXE], b[MAXE];
	static const uint64_t mins[] = {0, 4096, 8192, 16384, 2 << 20, 4 << 20};
	const uint64_t size = 4 << 20, steps[] = {65536, 1 << 20, 4 << 20};
	struct bk_handle h;
	struct bk_extent e[2];
	char path[128], msg[128];
	uint8_t blk[65536];
	int fd, na, n;

	CHECK(make_shape("merge", 2 << 20, 4096, false, false, &h) == 0,
	      "make 2 MiB of 4 KiB alternation");
	path_of(path, sizeof(path), "merge");
	memset(blk, 0x5a, sizeof(blk));
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, blk, 65536, 3 << 20) == 65536 &&
	          pwrite(fd, blk, 4096, (3 << 20) + 65536 + 8192) == 4096 &&
	          ftruncate(fd, (off_t)size) == 0 && fsync(fd) == 0,
	      "add the tail");
	if (fd >= 0)
		close(fd);
	settle();
	na = real_map("merge", a, MAXE);
	/* First, cold: one call for the whole file, the window extended
	 * under the merged extent while it is being built. */
	CHECK(ops->extents(ex, &root_cr, &h, 0, size, 8192, e, 2, &n) == 0 &&
	          n == 2 && !e[0].hole && e[0].off == 0 &&
	          e[0].len == (2 << 20) - 4096 && e[1].hole &&
	          e[1].off == (2 << 20) - 4096 && e[1].len == (1 << 20) + 4096,
	      "min_hole 8 KiB, cold: 2 MiB - 4 KiB of data, then the hole");
	for (size_t m = 0; m < sizeof(mins) / sizeof(mins[0]); m++) {
		int nw = merged_map(a, na, mins[m], want);

		for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
			int nb =
			    backend_map(&h, size, steps[k], mins[m], b, MAXE);

			snprintf(msg, sizeof(msg),
			         "min_hole %llu, %llu KiB calls: %d extents, "
			         "as merged from the real map",
			         (unsigned long long)mins[m],
			         (unsigned long long)steps[k] >> 10, nb);
			CHECK(na > 0 && same_map(want, nw, b, nb), msg);
		}
	}
	CHECK(merged_map(a, na, 16384, want) == 4 && want[2].len == 77824,
	      "min_hole 16 KiB: the 8 KiB hole inside the tail's data");
	/* A call inside merged data: one extent, from the start of the real
	 * extent holding off to the end of the last one the range touches
	 * (a small hole inside the range is data). */
	CHECK(ops->extents(ex, &root_cr, &h, (1 << 20) + 2048, 8192, 16384, e,
	                   2, &n) == 0 &&
	          n == 1 && !e[0].hole && e[0].off == 1 << 20 &&
	          e[0].len == 12288,
	      "a call inside merged data: one data extent over the range");
}

/* The extent holding off, looked up through the backend. */
static bool extent_at(const struct bk_handle *h, uint64_t off,
                      struct bk_extent *out)
{
	int n;

	return ops->extents(ex, &root_cr, h, off, 1, 0, out, 1, &n) == 0 &&
	       n == 1;
}

static void test_invalidation(void)
{
	struct bk_handle h;
	struct bk_extent e;
	struct bk_setattr sa = {.mask = BK_SET_SIZE};
	enum bk_stable com;
	uint8_t blk[4096];
	uint64_t before;
	char path[128];
	int fd;

	memset(blk, 0x5a, sizeof(blk));
	CHECK(make_shape("inv", 8 << 20, 0, false, false, &h) == 0,
	      "make an all-hole file");
	settle();
	CHECK(extent_at(&h, 0, &e) && e.hole && e.len == 8 << 20,
	      "all-hole map");
	before = hole_map_lseeks();
	CHECK(extent_at(&h, 4 << 20, &e) && e.hole, "second lookup answered");
	CHECK(hole_map_lseeks() == before, "second lookup from the cache");

	/* WRITE through the backend */
	CHECK(ops->write(ex, &root_cr, &h, blk, sizeof(blk), 1 << 20,
	                 BK_FILE_SYNC, &com) == sizeof(blk),
	      "write a block");
	CHECK(extent_at(&h, 1 << 20, &e) && !e.hole && e.off == 1 << 20 &&
	          e.len == 4096,
	      "write: data where written");
	CHECK(extent_at(&h, 0, &e) && e.hole && e.len == 1 << 20,
	      "write: hole before it");

	/* SETATTR size */
	settle();
	extent_at(&h, 0, &e);
	sa.size = 16 << 20;
	CHECK(ops->setattr(ex, &root_cr, &h, &sa, NULL) == 0,
	      "grow by setattr");
	CHECK(extent_at(&h, 12 << 20, &e) && e.hole &&
	          e.off + e.len == 16 << 20,
	      "setattr size: hole to the new EOF");
	sa.size = 1 << 20;
	CHECK(ops->setattr(ex, &root_cr, &h, &sa, NULL) == 0,
	      "shrink by setattr");
	CHECK(extent_at(&h, 0, &e) && e.hole && e.len == 1 << 20,
	      "setattr size: the data cut off");

	/* DEALLOCATE (punch) */
	CHECK(ops->write(ex, &root_cr, &h, blk, sizeof(blk), 0, BK_FILE_SYNC,
	                 &com) == sizeof(blk),
	      "write block 0");
	settle();
	CHECK(extent_at(&h, 0, &e) && !e.hole, "block 0 is data");
	CHECK(ops->punch(ex, &root_cr, &h, 0, 4096) == 0, "punch block 0");
	CHECK(extent_at(&h, 0, &e) && e.hole && e.len == 1 << 20,
	      "punch: a hole again");

	/* ALLOCATE: the map may read unwritten space either way, but it
	 * must be found again. */
	settle();
	extent_at(&h, 0, &e);
	before = hole_map_lseeks();
	extent_at(&h, 0, &e);
	CHECK(hole_map_lseeks() == before, "cached before allocate");
	CHECK(ops->allocate(ex, &root_cr, &h, 0, 65536) == 0, "allocate");
	CHECK(extent_at(&h, 0, &e) && hole_map_lseeks() > before,
	      "allocate: map found again");

	/* A write beside snfsd: ctime moves, the map is found again. */
	settle();
	extent_at(&h, 512 << 10, &e);
	CHECK(e.hole, "hole at 512 KiB before the write beside");
	path_of(path, sizeof(path), "inv");
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, blk, sizeof(blk), 512 << 10) == 4096,
	      "pwrite beside the backend");
	close(fd);
	CHECK(extent_at(&h, 512 << 10, &e) && !e.hole && e.off == 512 << 10,
	      "write beside: revalidated by ctime");
}

/* Reading an all-hole 1 GiB file front to back in 1 MiB calls costs O(1)
 * lseeks per call (one in all), not a walk of the hole each time. */
static void test_big_hole(void)
{
	const uint64_t size = 1ull << 30;
	struct bk_handle h;
	struct bk_extent e[8];
	uint64_t before, worst = 0;
	bool ok = true;
	int n;

	CHECK(make_shape("big", size, 0, false, false, &h) == 0,
	      "make a 1 GiB all-hole file");
	settle();
	before = hole_map_lseeks();
	for (uint64_t pos = 0; pos < size; pos += 1 << 20) {
		uint64_t b = hole_map_lseeks(), d;

		if (ops->extents(ex, &root_cr, &h, pos, 1 << 20, 0, e, 8, &n) ||
		    n != 1 || !e[0].hole || e[0].off + e[0].len != size)
			ok = false;
		d = hole_map_lseeks() - b;
		worst = d > worst ? d : worst;
	}
	CHECK(ok, "1 GiB hole: one hole extent to EOF each call");
	CHECK(worst <= 2, "1 GiB hole: at most 2 lseeks in any call");
	CHECK(hole_map_lseeks() - before <= 4,
	      "1 GiB hole: a handful of lseeks for 1024 calls");
}

/* Two clients share the map: a second reader costs no lseeks. */
static void test_shared(void)
{
	struct bk_handle h;
	struct bk_extent e[600];
	struct bk_cred other = {.uid = 1000, .gid = 1000};
	uint64_t before;
	int n;

	CHECK(make_shape("shared", 1 << 20, 4096, false, false, &h) == 0,
	      "make mixed-4d 1 MiB");
	settle();
	CHECK(ops->extents(ex, &root_cr, &h, 0, 1 << 20, 0, e, 600, &n) == 0 &&
	          n == 256,
	      "256 extents in 1 MiB of 4 KiB alternation");
	before = hole_map_lseeks();
	CHECK(ops->extents(ex, &other, &h, 0, 1 << 20, 0, e, 600, &n) == 0 &&
	          n == 256 && hole_map_lseeks() == before,
	      "another client reuses the map");
	CHECK(ops->extents(ex, &root_cr, &h, 0, 1 << 20, 0, e, 10, &n) == 0 &&
	          n == 10,
	      "max caps the extents returned");
}

/* Whether the file system under base answers FIEMAP. */
static bool have_fiemap(void)
{
	struct fiemap fm = {.fm_length = ~0ull};
	char path[128];
	int fd, rc;

	path_of(path, sizeof(path), "probe");
	fd = open(path, O_CREAT | O_RDWR, 0644);
	if (fd < 0)
		return false;
	rc = ioctl(fd, FS_IOC_FIEMAP, &fm);
	close(fd);
	unlink(path);
	return rc == 0;
}

/* With FIEMAP, mapping 4 KiB alternation costs a call per 256 extents,
 * not two lseeks per extent. */
static void test_fiemap_batches(void)
{
	static struct bk_extent e[600];
	struct bk_handle h;
	uint64_t before;
	int n;

	if (!have_fiemap()) {
		printf("ok - skipped: no FIEMAP on %s\n", base);
		return;
	}
	CHECK(make_shape("batch", 2 << 20, 4096, false, false, &h) == 0,
	      "make mixed-4d 2 MiB");
	settle();
	before = hole_map_lseeks();
	CHECK(ops->extents(ex, &root_cr, &h, 0, 2 << 20, 0, e, 600, &n) == 0 &&
	          n == 512,
	      "512 extents in 2 MiB of 4 KiB alternation");
	CHECK(hole_map_lseeks() - before <= 3,
	      "FIEMAP: at most 3 calls for 512 extents");
}

/* A map longer than the always-kept 16,384 extents stays whole while
 * the maps' budget allows: a second sequential pass asks nothing. */
static void test_long_map_kept(void)
{
	static struct bk_extent e[300];
	const uint64_t size = 80 << 20; /* 20,480 extents */
	struct bk_handle h;
	uint64_t before;
	bool ok = true;
	int n;

	CHECK(make_shape("long", size, 4096, true, false, &h) == 0,
	      "make mixed-4h 80 MiB");
	settle();
	for (int pass = 0; pass < 2; pass++) {
		before = hole_map_lseeks();
		for (uint64_t pos = 0; pos < size; pos += 1 << 20)
			ok = ok &&
			     ops->extents(ex, &root_cr, &h, pos, 1 << 20, 0, e,
			                  300, &n) == 0 &&
			     n == 256;
	}
	CHECK(ok, "256 extents per MiB on both passes");
	CHECK(hole_map_lseeks() == before,
	      "second pass over 20,480 extents: no file system calls");

	/* One reader's calls, out of order across threads: a call 8 MiB
	 * ahead maps the gap, so the calls behind it find the map. */
	hole_map_invalidate(ex->holes, &h);
	CHECK(ops->extents(ex, &root_cr, &h, 0, 1 << 20, 0, e, 300, &n) == 0 &&
	          ops->extents(ex, &root_cr, &h, 8 << 20, 1 << 20, 0, e, 300,
	                       &n) == 0 &&
	          n == 256 && e[0].off == 8 << 20,
	      "a call 8 MiB ahead of the map");
	before = hole_map_lseeks();
	ok = true;
	for (uint64_t pos = 1 << 20; pos < 8 << 20; pos += 1 << 20)
		ok = ok &&
		     ops->extents(ex, &root_cr, &h, pos, 1 << 20, 0, e, 300,
		                  &n) == 0 &&
		     n == 256 && e[0].off == pos;
	CHECK(ok && hole_map_lseeks() == before,
	      "the calls behind it: answered from the map, no calls");
}

/* Data bytes of the backend's map of h. */
static uint64_t backend_data_bytes(const struct bk_handle *h, uint64_t size)
{
	static struct bk_extent b[MAXE];
	int nb = backend_map(h, size, 1 << 20, 0, b, MAXE);
	uint64_t d = 0;

	for (int i = 0; i < nb; i++)
		d += b[i].hole ? 0 : b[i].len;
	return nb > 0 ? d : UINT64_MAX;
}

/* The written-back file of test_unwritten read locally: the page cache
 * now holds the zeros of its unwritten space, which lseek may call data.
 * On xfs and ext4 the map still has them as holes (no dirty page there),
 * and only the two written blocks as data; a write into the unwritten
 * space, still in the page cache, is data again. */
static void unwritten_cached(int fd, const struct bk_handle *h)
{
	static uint8_t buf[2 << 20];
	uint8_t blk[4096];
	struct statfs sf;

	if (fstatfs(fd, &sf) != 0 ||
	    (sf.f_type != XFS_SUPER_MAGIC && sf.f_type != EXT4_SUPER_MAGIC)) {
		printf("ok - unwritten extents cached: skipped (not xfs or "
		       "ext4)\n");
		return;
	}
	CHECK(pread(fd, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf),
	      "read the whole file locally");
	hole_map_invalidate(ex->holes, h);
	CHECK(backend_data_bytes(h, 2 << 20) == 8192,
	      "unwritten extents, zeros in the page cache: holes still");
	memset(blk, 0x5e, sizeof(blk));
	CHECK(pwrite(fd, blk, sizeof(blk), 512 << 10) == 4096, "write inside");
	settle();
	uint64_t d = backend_data_bytes(h, 2 << 20);
	CHECK(d >= 3 * 4096 && d != UINT64_MAX,
	      "a dirty page in an unwritten extent: data (as lseek says)");
	struct bk_extent e[4];
	int k = 0;
	CHECK(ops->extents(ex, &root_cr, h, 512 << 10, 4096, 0, e, 4, &k) ==
	              0 &&
	          k >= 1 && !e[0].hole && e[0].off <= (512 << 10),
	      "the new write lies in data");
}

/* Unwritten (fallocated) space reads as zeros; lseek calls it data only
 * where the page cache holds written bytes. The map must agree with
 * lseek both before and after the writes reach the disk. */
static void test_unwritten(void)
{
	char path[128];
	uint8_t blk[4096];
	struct bk_handle h;
	struct bk_attr a;
	int fd;

	memset(blk, 0x3c, sizeof(blk));
	path_of(path, sizeof(path), "unwritten");
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	CHECK(fd >= 0 && pwrite(fd, blk, sizeof(blk), 0) == 4096 &&
	          fallocate(fd, 0, 64 << 10, 1 << 20) == 0 &&
	          pwrite(fd, blk, sizeof(blk), 256 << 10) == 4096 &&
	          ftruncate(fd, 2 << 20) == 0,
	      "data, fallocated space with a write inside, a hole");
	CHECK(ops->lookup(ex, &root_cr, &root, "unwritten", &h, &a) == 0,
	      "lookup");
	settle();
	CHECK(map_matches("unwritten", &h, 2 << 20, 1 << 20),
	      "unwritten extent, write in the page cache: as lseek says");
	CHECK(fsync(fd) == 0, "fsync");
	settle();
	hole_map_invalidate(ex->holes, &h);
	CHECK(map_matches("unwritten", &h, 2 << 20, 1 << 20),
	      "unwritten extent, write on disk: as lseek says");
	unwritten_cached(fd, &h);
	close(fd);

	/* Fresh writes not yet allocated (delayed allocation). */
	path_of(path, sizeof(path), "fresh");
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	for (int i = 0; i < 256 && fd >= 0; i++)
		if (pwrite(fd, blk, sizeof(blk), (off_t)i * 8192) != 4096)
			break;
	CHECK(fd >= 0 && ftruncate(fd, 2 << 20) == 0 &&
	          ops->lookup(ex, &root_cr, &root, "fresh", &h, &a) == 0,
	      "a fresh 4 KiB-alternating file, not synced");
	settle();
	CHECK(map_matches("fresh", &h, 2 << 20, 1 << 20),
	      "delayed allocations: as lseek says");
	close(fd);
}

int main(void)
{
	char cmd[128];

	if (geteuid() != 0) {
		printf("ok - skipped: needs root\n");
		return 0;
	}
	snprintf(base, sizeof(base), "/tmp/snfs-holemap.XXXXXX");
	if (mkdtemp(base) == NULL || chmod(base, 0755) != 0) {
		printf("not ok - mkdtemp\n");
		return 1;
	}
	CHECK(ops->export_open(base, &ex) == 0, "export_open");
	CHECK(ops->root(ex, &root) == 0, "root");
	CHECK(ops->extents != NULL, "posix backend has extents");
	test_shapes();
	test_invalidation();
	test_big_hole();
	test_shared();
	test_fiemap_batches();
	test_merged();
	test_long_map_kept();
	test_unwritten();
	ops->export_close(ex);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	if (system(cmd) != 0)
		printf("not ok - cleanup\n");
	TEST_EXIT();
}
