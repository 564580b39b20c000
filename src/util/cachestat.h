/* cachestat(2) (Linux 6.5): how many pages of a file range are in the
 * page cache, and how many of them dirty or under writeback. Debian 12's
 * headers predate it, so the call goes by number. */
#ifndef SNFS_CACHESTAT_H
#define SNFS_CACHESTAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_cachestat
#define __NR_cachestat 451 /* the same on every architecture */
#endif

struct util_cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted;
	uint64_t nr_recently_evicted;
};

/* The counts for [off, off + len) of fd (len 0: to the end). False where
 * the kernel lacks cachestat or refuses it (it wants the file open for
 * writing, or the caller to own it or be privileged). */
static inline bool util_cachestat(int fd, uint64_t off, uint64_t len,
                                  struct util_cachestat *cs)
{
	struct {
		uint64_t off, len;
	} r = {off, len};

	return syscall(__NR_cachestat, fd, &r, cs, 0) == 0;
}

#endif
