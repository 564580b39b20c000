/* Per-context RPC counters, updated with atomic adds from any thread. */
#ifndef SNFS_CLIENT_COUNTERS_H
#define SNFS_CLIENT_COUNTERS_H

#include <stdint.h>

#include "snfs/snfs.h"

struct snfs_counters {
	uint64_t calls[SNFS_OP_MAX];
	uint64_t retransmits, reconnects;
	uint64_t bytes_sent, bytes_received;
	uint64_t read_bytes, write_bytes;
	uint64_t cache_hits, cache_misses;
	uint64_t write_resends;
	uint64_t readdir_resumes, readdir_restarts;
};

static inline void counter_add(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static inline uint64_t counter_get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

#endif
