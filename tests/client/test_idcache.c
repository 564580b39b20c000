/* libsnfs's owner-name cache (src/client/idcache.c): it gives what
 * getpwnam_r/getgrnam_r give, fattr4 decodes of one owner cost one
 * lookup, "no such name" is kept too, entries expire (a clock of our
 * own, no sleeping), the table stays bounded under many distinct names,
 * and four threads sharing it get right answers (run under ASan+UBSan
 * by `make asan`). */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/idcache.h"
#include "client/nfs4_xdr.h"
#include "test.h"

#define NOBODY 65534u
#define UNKNOWN "nosuchuser-idcache-zz"

/* ---- a counting lookup and a clock of our own ---- */

static atomic_ulong lookups;
static _Atomic uint64_t clock_now = 1000;
static atomic_int fail_with; /* an errno the lookup fails with, or 0 */
static _Atomic uint32_t alice_uid = 1000;

/* "u<N>" is user N (names the test makes up), "alice" is alice_uid,
 * other names go to the passwd and group databases. */
static int counting_lookup(const char *name, bool group, uint32_t *id)
{
	char *end;

	atomic_fetch_add(&lookups, 1);
	if (atomic_load(&fail_with))
		return -atomic_load(&fail_with);
	if (name[0] == 'u' && name[1] >= '0' && name[1] <= '9') {
		unsigned long v = strtoul(name + 1, &end, 10);
		if (*end == 0) {
			*id = (uint32_t)v + (group ? 500000 : 0);
			return 0;
		}
	}
	if (!strcmp(name, "alice")) {
		*id = atomic_load(&alice_uid);
		return 0;
	}
	return idcache_system_lookup(name, group, id);
}

static uint64_t test_now(void)
{
	return atomic_load(&clock_now);
}

static const struct idcache_ops test_ops = {.lookup = counting_lookup,
                                            .now = test_now};

static void reset(void)
{
	idcache_set_ops(&test_ops);
	atomic_store(&lookups, 0);
	atomic_store(&fail_with, 0);
}

static uint32_t owner(const char *s, bool group)
{
	return nfs4_owner_to_id((const uint8_t *)s, (uint32_t)strlen(s), group);
}

/* ---- against the system databases ---- */

/* What getpwnam_r/getgrnam_r say of name: its id, or NOBODY. */
static uint32_t system_id(const char *name, bool group)
{
	char buf[4096];

	if (group) {
		struct group gr, *res = NULL;
		if (getgrnam_r(name, &gr, buf, sizeof(buf), &res) == 0 && res)
			return (uint32_t)res->gr_gid;
		return NOBODY;
	}
	struct passwd pw, *res = NULL;
	if (getpwnam_r(name, &pw, buf, sizeof(buf), &res) == 0 && res)
		return (uint32_t)res->pw_uid;
	return NOBODY;
}

static void test_system(void)
{
	static const char *users[] = {"root", "nobody", UNKNOWN};
	static const char *groups[] = {"root", "nogroup", "nobody", UNKNOWN};
	char s[128], msg[160];
	uint32_t id = 7;

	idcache_set_ops(NULL);
	for (int pass = 0; pass < 2; pass++) { /* a miss, then a hit */
		for (size_t i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
			snprintf(s, sizeof(s), "%s@localdomain", users[i]);
			snprintf(msg, sizeof(msg), "system: user %s (%s)",
			         users[i], pass ? "cached" : "looked up");
			CHECK(owner(s, false) == system_id(users[i], false),
			      msg);
		}
		for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]);
		     i++) {
			snprintf(s, sizeof(s), "%s@localdomain", groups[i]);
			snprintf(msg, sizeof(msg), "system: group %s (%s)",
			         groups[i], pass ? "cached" : "looked up");
			CHECK(owner(s, true) == system_id(groups[i], true),
			      msg);
		}
	}
	CHECK(idcache_lookup("root", false, &id) == 0 && id == 0,
	      "system: root is uid 0");
	CHECK(idcache_lookup(UNKNOWN, false, &id) == -ENOENT,
	      "system: an unknown user is ENOENT");
	CHECK(idcache_lookup(UNKNOWN, true, &id) == -ENOENT,
	      "system: an unknown group is ENOENT");
	/* behaviour kept: the client does not check the domain */
	CHECK(owner("root@some.other.domain", false) == 0,
	      "system: any domain is taken, as before the cache");
}

/* ---- counting lookups ---- */

/* A fattr4 with just owner and owner_group. */
static void put_owners(struct xdr_out *x, const char *user, const char *grp)
{
	struct nfs4_bitmap b = {0};

	bm_set(&b, FA4_OWNER);
	bm_set(&b, FA4_OWNER_GROUP);
	nfs4_put_bitmap(x, &b);
	size_t lp = x->len;
	xdr_put_u32(x, 0);
	xdr_put_string(x, user);
	xdr_put_string(x, grp);
	xdr_patch_u32(x, lp, (uint32_t)(x->len - lp - 4));
}

static void test_counts(void)
{
	struct xdr_out o;
	struct xdr_in x;
	struct nfs4_fattr fa;
	int bad = 0;

	reset();
	xdr_out_init(&o, 128, 4096);
	put_owners(&o, "root@localdomain", "root@localdomain");
	for (int i = 0; i < 100000; i++) {
		xdr_in_init(&x, o.buf, o.len);
		if (!nfs4_get_fattr(&x, &fa) || fa.st.uid != 0 ||
		    fa.st.gid != 0)
			bad++;
	}
	xdr_out_free(&o);
	CHECK(bad == 0, "count: 100,000 fattr4 decodes give root:root");
	CHECK(atomic_load(&lookups) == 2,
	      "count: 100,000 decodes of one owner and group cost 2 lookups");

	reset();
	for (int i = 0; i < 100000; i++)
		if (owner(UNKNOWN "@localdomain", false) != NOBODY ||
		    owner(UNKNOWN "@localdomain", true) != NOBODY)
			bad++;
	CHECK(bad == 0, "count: an unknown name is nobody");
	CHECK(atomic_load(&lookups) == 2,
	      "count: an unknown name and group are looked up once each");

	reset();
	for (int i = 0; i < 1000; i++)
		if (owner("1000", false) != 1000 || owner("12@dom", true) != 12)
			bad++;
	CHECK(bad == 0 && atomic_load(&lookups) == 0,
	      "count: numeric owners are never looked up");

	/* a name too long to keep is right, looked up each time */
	char longname[IDCACHE_NAME + 16];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[0] = 'u';
	longname[1] = '7';
	longname[sizeof(longname) - 1] = 0;
	reset();
	uint32_t id = 0;
	CHECK(idcache_lookup(longname, false, &id) == -ENOENT &&
	          idcache_lookup(longname, false, &id) == -ENOENT &&
	          atomic_load(&lookups) == 2 && idcache_used() == 0,
	      "count: a name longer than the cache keeps is not kept");
}

/* ---- expiry ---- */

/* At time t, name's lookup returns rc (0: with id want), and n lookups
 * have been made since reset(). */
static bool at(uint64_t t, const char *name, bool group, int rc, uint32_t want,
               unsigned long n)
{
	uint32_t id = 0;

	atomic_store(&clock_now, t);
	return idcache_lookup(name, group, &id) == rc && (rc || id == want) &&
	       atomic_load(&lookups) == n;
}

static void test_expiry(void)
{
	uint64_t t0 = atomic_load(&clock_now) + 1;

	reset();
	atomic_store(&alice_uid, 1000);
	CHECK(at(t0, "alice", false, 0, 1000, 1), "expiry: alice looked up");
	atomic_store(&alice_uid, 2000); /* the passwd file changes */
	CHECK(at(t0 + IDCACHE_TTL - 1, "alice", false, 0, 1000, 1),
	      "expiry: still cached a second before the TTL");
	CHECK(at(t0 + IDCACHE_TTL, "alice", false, 0, 2000, 2),
	      "expiry: looked up again after the TTL, the change seen");

	/* "no such name" expires the same way */
	reset();
	CHECK(at(t0, UNKNOWN, true, -ENOENT, 0, 1), "expiry: unknown group");
	CHECK(at(t0 + IDCACHE_TTL - 1, UNKNOWN, true, -ENOENT, 0, 1),
	      "expiry: negative entry kept");
	CHECK(at(t0 + IDCACHE_TTL, UNKNOWN, true, -ENOENT, 0, 2),
	      "expiry: negative entry expires");

	/* a failed lookup is kept only IDCACHE_ERROR_TTL */
	reset();
	atomic_store(&fail_with, EIO);
	CHECK(at(t0, "alice", false, -EIO, 0, 1) &&
	          owner("alice@x", false) == NOBODY &&
	          atomic_load(&lookups) == 1,
	      "expiry: a failed lookup is kept, as nobody");
	atomic_store(&fail_with, 0);
	CHECK(at(t0 + IDCACHE_ERROR_TTL - 1, "alice", false, -EIO, 0, 1),
	      "expiry: within the error TTL no new lookup");
	CHECK(at(t0 + IDCACHE_ERROR_TTL, "alice", false, 0, 2000, 2),
	      "expiry: after the error TTL the lookup is tried again");
}

/* ---- many distinct names ---- */

static void test_bounded(void)
{
	char s[32];
	int bad = 0;
	size_t most = 0, used;
	uint32_t id = 0;

	reset();
	for (int i = 0; i < 100000; i++) {
		snprintf(s, sizeof(s), "u%d@localdomain", i);
		if (owner(s, i & 1) != (uint32_t)i + (i & 1 ? 500000 : 0))
			bad++;
		if (i % 100 == 0 && (used = idcache_used()) > most)
			most = used;
	}
	CHECK(bad == 0, "bounded: 100,000 distinct names map right");
	CHECK(atomic_load(&lookups) == 100000,
	      "bounded: each distinct name looked up once");
	CHECK(most <= IDCACHE_ENTRIES, "bounded: never more than the table");
	CHECK(most > IDCACHE_ENTRIES / 2, "bounded: the table is used");
	unsigned long before = atomic_load(&lookups);
	CHECK(idcache_lookup("u99999", true, &id) == 0 && id == 599999 &&
	          atomic_load(&lookups) == before,
	      "bounded: the last name is still kept");
	CHECK(idcache_lookup("u0", false, &id) == 0 && id == 0 &&
	          atomic_load(&lookups) == before + 1,
	      "bounded: the first name was given up, looked up again right");
}

/* ---- threads ---- */

#define THREADS 4
#define ROUNDS 50000

struct worker {
	int n;
	int bad;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint32_t root_gid = system_id("root", true);
	uint32_t nobody_uid = system_id("nobody", false);
	char s[48];

	for (int i = 0; i < ROUNDS; i++) {
		int k = (i * 7 + w->n * 13) % 2000;
		bool group = (i + w->n) & 1;

		snprintf(s, sizeof(s), "u%d@localdomain", k);
		if (owner(s, group) != (uint32_t)k + (group ? 500000 : 0))
			w->bad++;
		if (owner("root@localdomain", true) != root_gid ||
		    owner("nobody@localdomain", false) != nobody_uid ||
		    owner(UNKNOWN "@localdomain", false) != NOBODY ||
		    owner("4242@x", true) != 4242)
			w->bad++;
		if (w->n == 0 && i % 997 == 0) /* time goes by: expiries */
			atomic_fetch_add(&clock_now, IDCACHE_TTL / 3);
		if (w->n == 1 && i == ROUNDS / 2) /* a flush in the middle */
			idcache_set_ops(&test_ops);
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t t[THREADS];
	struct worker w[THREADS];
	int bad = 0, started = 0;

	reset();
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.n = i};
		if (pthread_create(&t[i], NULL, work, &w[i]) == 0)
			started++;
	}
	CHECK(started == THREADS, "threads: 4 started");
	for (int i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		bad += w[i].bad;
	}
	CHECK(bad == 0, "threads: every answer right on 4 threads");
	CHECK(idcache_used() <= IDCACHE_ENTRIES, "threads: table bounded");
	/* 4 names a round (2,000 users and groups do not all fit) */
	CHECK(atomic_load(&lookups) < (unsigned long)THREADS * ROUNDS * 4 / 2,
	      "threads: the cache answered most");
	printf("# threads: %lu lookups for %d owner strings\n",
	       atomic_load(&lookups), THREADS * ROUNDS * 5);
}

int main(void)
{
	test_system();
	test_counts();
	test_expiry();
	test_bounded();
	test_threads();
	idcache_set_ops(NULL);
	TEST_EXIT();
}
