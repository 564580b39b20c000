/* The owner-name cache of libsnfs (see idcache.h for why). A 4-way set
 * associative table of IDCACHE_ENTRIES names in static storage: nothing
 * to allocate, nothing to free, and no more memory however many distinct
 * owners a server sends. A full set gives up its entries in turn.
 * Lookups run outside the lock, so a slow NSS source (LDAP, sssd) holds
 * up no other thread; two threads missing on one name at once may both
 * look it up, and the later answer stays. */
#include "client/idcache.h"

#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <string.h>
#include <time.h>

#define IDC_SETS (1u << IDCACHE_SET_BITS)
#define IDC_USED 1
#define IDC_GROUP 2

struct idc_entry {
	uint64_t expires; /* idcache_ops.now() seconds */
	uint32_t hash;
	uint32_t id;
	int32_t rc; /* what the lookup returned */
	uint8_t flags;
	uint8_t len; /* of name, without the NUL */
	char name[IDCACHE_NAME];
};

struct idc_set {
	struct idc_entry e[IDCACHE_WAYS];
	uint8_t next; /* the way given up last when all were in use */
};

static const struct idcache_ops system_ops = {
    .lookup = idcache_system_lookup,
    .now = idcache_system_now,
};

static pthread_mutex_t idc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct idc_set idc_table[IDC_SETS]; /* under idc_lock */
static struct idcache_ops idc_ops = {
    .lookup = idcache_system_lookup,
    .now = idcache_system_now,
};                       /* under idc_lock */
static unsigned idc_gen; /* under idc_lock: counts idcache_set_ops calls */

/* The errors getpwnam_r(3) lists for "the name was not found". */
static int not_found(int rc, bool found)
{
	if (rc == ENOENT || rc == ESRCH || rc == EBADF || rc == EPERM)
		return -ENOENT;
	if (rc)
		return -rc;
	return found ? 0 : -ENOENT;
}

int idcache_system_lookup(const char *name, bool group, uint32_t *id)
{
	char buf[4096];
	int rc;

	if (group) {
		struct group gr, *res = NULL;

		rc = getgrnam_r(name, &gr, buf, sizeof(buf), &res);
		if (!rc && res)
			*id = (uint32_t)res->gr_gid;
		return not_found(rc, res != NULL);
	}
	struct passwd pw, *res = NULL;

	rc = getpwnam_r(name, &pw, buf, sizeof(buf), &res);
	if (!rc && res)
		*id = (uint32_t)res->pw_uid;
	return not_found(rc, res != NULL);
}

uint64_t idcache_system_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec;
}

/* FNV-1a of the name, then the group bit, spread by a multiply. */
static uint32_t hash_of(const char *name, size_t len, bool group)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 16777619u;
	return (h ^ (group ? 0x9e3779b9u : 0)) * 2654435761u;
}

static struct idc_set *set_of(uint32_t hash)
{
	return &idc_table[hash >> (32 - IDCACHE_SET_BITS)];
}

/* The entry holding (name, group) in set, or NULL. */
static struct idc_entry *find(struct idc_set *set, uint32_t hash,
                              const char *name, size_t len, uint8_t flags)
{
	for (int w = 0; w < IDCACHE_WAYS; w++) {
		struct idc_entry *e = &set->e[w];

		if (e->hash == hash && e->flags == flags && e->len == len &&
		    !memcmp(e->name, name, len))
			return e;
	}
	return NULL;
}

/* The entry to fill: an empty or expired one, else the next in turn
 * (the set's oldest, as its entries were filled in turn). */
static struct idc_entry *victim(struct idc_set *set, uint64_t now)
{
	for (int w = 0; w < IDCACHE_WAYS; w++) {
		struct idc_entry *e = &set->e[w];

		if (!e->flags || e->expires <= now)
			return e;
	}
	set->next = (uint8_t)((set->next + 1) % IDCACHE_WAYS);
	return &set->e[set->next];
}

int idcache_lookup(const char *name, bool group, uint32_t *id)
{
	size_t len = strlen(name);
	uint8_t flags = IDC_USED | (group ? IDC_GROUP : 0);
	uint32_t hash = hash_of(name, len, group), v = 0;
	struct idc_set *set = set_of(hash);
	struct idc_entry *e;
	struct idcache_ops ops;
	uint64_t now;
	unsigned gen;
	int rc;

	pthread_mutex_lock(&idc_lock);
	ops = idc_ops;
	gen = idc_gen;
	if (len >= IDCACHE_NAME) {
		pthread_mutex_unlock(&idc_lock);
		return ops.lookup(name, group, id);
	}
	now = ops.now();
	e = find(set, hash, name, len, flags);
	if (e && e->expires > now) {
		rc = e->rc;
		if (!rc)
			*id = e->id;
		pthread_mutex_unlock(&idc_lock);
		return rc;
	}
	pthread_mutex_unlock(&idc_lock);

	rc = ops.lookup(name, group, &v);

	pthread_mutex_lock(&idc_lock);
	if (gen != idc_gen) /* the table was emptied meanwhile */
		goto out;
	e = find(set, hash, name, len, flags);
	if (!e)
		e = victim(set, now);
	e->expires =
	    now + (rc && rc != -ENOENT ? IDCACHE_ERROR_TTL : IDCACHE_TTL);
	e->hash = hash;
	e->id = v;
	e->rc = rc;
	e->flags = flags;
	e->len = (uint8_t)len;
	memcpy(e->name, name, len);
out:
	pthread_mutex_unlock(&idc_lock);
	if (!rc)
		*id = v;
	return rc;
}

void idcache_set_ops(const struct idcache_ops *ops)
{
	pthread_mutex_lock(&idc_lock);
	idc_ops = ops ? *ops : system_ops;
	idc_gen++;
	memset(idc_table, 0, sizeof(idc_table));
	pthread_mutex_unlock(&idc_lock);
}

size_t idcache_used(void)
{
	size_t n = 0;

	pthread_mutex_lock(&idc_lock);
	for (unsigned s = 0; s < IDC_SETS; s++)
		for (int w = 0; w < IDCACHE_WAYS; w++)
			n += idc_table[s].e[w].flags != 0;
	pthread_mutex_unlock(&idc_lock);
	return n;
}
