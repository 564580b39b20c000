/* Close-to-open against a live server, shared by the live parts of
 * test_pagecache (NFSv3) and test_nfs4 (NFSv4.x): a file libsnfs holds in
 * its page cache is changed behind its back, by a write on the export
 * itself (dir: the export directory as a local path) that keeps the size
 * and puts the old mtime back, so only ctime and the change attribute
 * move, and by another client (a second mount). A new open must drop the
 * cached bytes and read the new ones. */
#ifndef SNFS_TEST_CTO_H
#define SNFS_TEST_CTO_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "snfs/snfs.h"
#include "test.h"

#define CTO_LEN 8192

static uint64_t cto_reads(struct snfs_ctx *c)
{
	struct snfs_stats st;
	snfs_stats(c, &st);
	return st.calls[SNFS_OP_READ] + st.calls[SNFS_OP_READ_PLUS];
}

/* Open name, read it whole; true if it holds want. *reads: the READ and
 * READ_PLUS calls that took. */
static bool cto_read_is(struct snfs_ctx *c, const char *name, const char *want,
                        uint64_t *reads)
{
	struct snfs_file *f;
	char got[CTO_LEN];
	if (snfs_open(c, name, O_RDONLY, 0, &f) < 0)
		return false;
	snfs_stats_reset(c);
	bool same = snfs_pread(f, got, CTO_LEN, 0) == CTO_LEN &&
	            !memcmp(got, want, CTO_LEN);
	*reads = cto_reads(c);
	snfs_close(f);
	return same;
}

static void cto_sleep_tick(void)
{
	/* past the file system's timestamp granularity (a jiffy) */
	struct timespec ts = {0, 50 * 1000 * 1000};
	nanosleep(&ts, NULL);
}

static void test_close_to_open(struct snfs_ctx *c, const char *url,
                               const char *dir)
{
	static char a[CTO_LEN], b[CTO_LEN], d[CTO_LEN];
	struct snfs_file *f;
	uint64_t reads;
	char path[4096];

	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	memset(d, 'd', sizeof(d));
	snfs_unlink(c, "cto");
	CHECK(snfs_open(c, "cto", O_RDWR | O_CREAT | O_TRUNC, 0644, &f) == 0 &&
	          snfs_pwrite(f, a, CTO_LEN, 0) == CTO_LEN &&
	          snfs_close(f) == 0,
	      "cto: write a file through libsnfs");
	CHECK(cto_read_is(c, "cto", a, &reads), "cto: reopen reads our bytes");
	printf("# cto: reopen after our own write: %llu reads\n",
	       (unsigned long long)reads);
	/* nfs-ganesha caches attributes (MDCACHE) and does not see a change
	 * made on its export's file system behind its back until they
	 * expire, so it goes on saying the file is unchanged */
	const char *server = getenv("SNFS_TEST_SERVER");
	if (dir && server && !strncmp(server, "ganesha", 7)) {
		printf("# cto: %s: no write on the export behind its back "
		       "(it caches attributes)\n",
		       server);
		dir = NULL;
	}
	if (dir) {
		struct stat before, after;
		snprintf(path, sizeof(path), "%s/cto", dir);
		cto_sleep_tick();
		int fd = open(path, O_WRONLY);
		bool wrote = fd >= 0 && fstat(fd, &before) == 0 &&
		             pwrite(fd, b, CTO_LEN, 0) == CTO_LEN;
		/* the old mtime back: size and mtime as they were, only
		 * ctime (the change attribute) moves */
		struct timespec t[2] = {before.st_atim, before.st_mtim};
		wrote = wrote && futimens(fd, t) == 0 && fstat(fd, &after) == 0;
		if (fd >= 0)
			close(fd);
		CHECK(wrote && after.st_size == before.st_size &&
		          after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
		          after.st_mtim.tv_nsec == before.st_mtim.tv_nsec,
		      "cto: rewrite it on the export, same size and mtime");
		CHECK(cto_read_is(c, "cto", b, &reads) && reads >= 1,
		      "cto: a new open sees the export's bytes (only the "
		      "change attribute moved)");
	}
	struct snfs_ctx *c2;
	if (snfs_mount(url, NULL, &c2) < 0) {
		printf("not ok - cto: second mount: %s\n", snfs_last_error());
		test_failures++;
		return;
	}
	cto_sleep_tick();
	CHECK(snfs_open(c2, "cto", O_WRONLY, 0, &f) == 0 &&
	          snfs_pwrite(f, d, CTO_LEN, 0) == CTO_LEN &&
	          snfs_close(f) == 0,
	      "cto: another client rewrites it");
	snfs_umount(c2);
	CHECK(cto_read_is(c, "cto", d, &reads) && reads >= 1,
	      "cto: a new open sees the other client's bytes");
	CHECK(cto_read_is(c, "cto", d, &reads) && reads == 0,
	      "cto: and keeps them cached while the file stands still");
	snfs_unlink(c, "cto");
}

#endif
