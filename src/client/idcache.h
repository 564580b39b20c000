/* libsnfs's cache of NFSv4 owner names: user and group names (the part
 * of an owner or owner_group string before the '@') to uids and gids.
 *
 * Why: every fattr4 with an owner from an idmap=names export costs two
 * passwd/group lookups, and `snfs ls -l` of a directory of 1.5 million
 * entries took 230-382 s doing one getpwnam_r and one getgrnam_r per
 * entry. The cache is one fixed table for the process (1,024 names,
 * kept inline: 90 KiB of static storage), under one lock: libsnfs decodes
 * replies on many threads (snfs-mount, pipelined calls). An entry is
 * kept IDCACHE_TTL seconds, as nscd and rpc.idmapd do, so a changed
 * passwd file shows within ten minutes; "no such name" is kept as long
 * (an unknown owner would otherwise cost a lookup per entry too), a
 * failed lookup (an NSS error, not "no entry") only IDCACHE_ERROR_TTL. */
#ifndef SNFS_CLIENT_IDCACHE_H
#define SNFS_CLIENT_IDCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDCACHE_WAYS 4
#define IDCACHE_SET_BITS 8
#define IDCACHE_ENTRIES (IDCACHE_WAYS << IDCACHE_SET_BITS) /* 1024 */
/* Bytes of a name with its NUL; longer names are looked up every time. */
#define IDCACHE_NAME 64
#define IDCACHE_TTL 600      /* seconds, for ids and for "no such name" */
#define IDCACHE_ERROR_TTL 10 /* seconds, for a lookup that failed */

/* The id of a user (group false) or group name: 0 with it in *id,
 * -ENOENT when the passwd or group database has no such name, or
 * another -errno when the lookup failed. Thread-safe. */
int idcache_lookup(const char *name, bool group, uint32_t *id);

/* Where the cache gets ids and the time; tests replace them. */
struct idcache_ops {
	/* As idcache_lookup, without the cache. */
	int (*lookup)(const char *name, bool group, uint32_t *id);
	uint64_t (*now)(void); /* monotonic seconds */
};

/* getpwnam_r/getgrnam_r, and CLOCK_MONOTONIC_COARSE: the defaults. */
int idcache_system_lookup(const char *name, bool group, uint32_t *id);
uint64_t idcache_system_now(void);

/* For tests: use ops (NULL: the defaults) and empty the table. */
void idcache_set_ops(const struct idcache_ops *ops);
/* For tests: the entries in use (expired ones included). */
size_t idcache_used(void);

#endif
