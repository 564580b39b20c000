/* Test helper: what a file of an export directory holds, read past the
 * server (the NFSv3 and NFSv4 suites check that a refused WRITE left it
 * as it was). */
#ifndef SNFS_TEST_FILE_TESTLIB_H
#define SNFS_TEST_FILE_TESTLIB_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether dir/name holds exactly the n bytes of want: its size and every
 * byte. */
static inline bool file_holds(const char *dir, const char *name,
                              const void *want, size_t n)
{
	char path[512];
	struct stat sb;
	uint8_t *got = malloc(n ? n : 1);
	ssize_t r = -1;
	bool same;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	if (got && fd >= 0 && !fstat(fd, &sb) && sb.st_size == (off_t)n)
		r = pread(fd, got, n, 0);
	if (fd >= 0)
		close(fd);
	same = r == (ssize_t)n && !memcmp(got, want, n);
	free(got);
	return same;
}

#endif
