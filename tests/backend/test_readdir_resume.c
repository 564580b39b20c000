/* Resuming a listing in the middle of a huge directory costs what
 * continuing it costs (src/backend/dircursor.c keeps the open stream a
 * listing stopped at, keyed by handle and cookie), counted, not timed:
 * the backend's getdents64 calls and the records they returned. A resume
 * at entry 50,000 of 100,000 must read about one reply's entries, not the
 * 50,000 before it, also after other listings ran in between. A resume
 * whose stream is gone (the LRU evicted it, or the export was closed and
 * opened again, as at a restart) opens the directory afresh and seeks: it
 * lists the right entries and still reads no more than a reply's worth
 * (the cookie is a file system offset, so nothing is re-read from the
 * start). RFC 1813 section 3.3.16 cookies; NFSv4 READDIR the same. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "backend/backend.h"
#include "backend/posix_int.h"

#define NFILES 100000
#define CHUNK 1000
/* What one reply of CHUNK entries may read: CHUNK itself and at most two
 * getdents64 buffers around it (128 KiB of 32-byte records each). Far
 * below the 50,000 a re-read from the start costs. */
#define ONE_REPLY (CHUNK + 2 * 4096)

static const struct bk_ops *ops = &bk_posix_ops;
static struct bk_export *ex;
static const struct bk_cred root_cr = {.uid = 0, .gid = 0};
static char base[64];

/* Entries in listing order: index of the name fNNNNNN, -1 for a dot. */
struct order {
	int *idx;
	uint64_t *cookie;
	int n, cap;
};

/* One call's worth: takes up to chunk entries into o. */
struct taker {
	struct order *o;
	int chunk, taken;
};

static int take(void *arg, const struct bk_dirent *e)
{
	struct taker *t = arg;
	int idx = -1;

	if (t->chunk && t->taken == t->chunk)
		return 1;
	if (e->namelen == 7 && e->name[0] == 'f')
		idx = atoi(e->name + 1);
	if (t->o->n < t->o->cap) {
		t->o->idx[t->o->n] = idx;
		t->o->cookie[t->o->n] = e->cookie;
	}
	t->o->n++;
	t->taken++;
	return 0;
}

/* One readdir call at cookie taking up to chunk entries (0: all). */
static int one_call(const struct bk_handle *d, uint64_t cookie, int chunk,
                    struct order *o, bool *eof)
{
	struct taker t = {.o = o, .chunk = chunk};

	return ops->readdir(ex, &root_cr, d, cookie, take, &t, eof);
}

struct cost {
	uint64_t opens, calls, records;
};

static struct cost cost_now(void)
{
	struct dir_cursor_stats st;

	dir_cursor_stats(&st);
	return (struct cost){st.opens, st.getdents, st.records};
}

static struct cost cost_since(struct cost a)
{
	struct cost b = cost_now();

	return (struct cost){b.opens - a.opens, b.calls - a.calls,
	                     b.records - a.records};
}

static void order_init(struct order *o, int cap)
{
	o->idx = calloc((size_t)cap, sizeof(int));
	o->cookie = calloc((size_t)cap, sizeof(uint64_t));
	o->n = 0;
	o->cap = cap;
}

/* Whether got holds want[from..from+n) in order. */
static bool same_run(const struct order *got, const struct order *want,
                     int from, int n)
{
	if (got->n != n || from + n > want->n)
		return false;
	for (int i = 0; i < n; i++)
		if (got->idx[i] != want->idx[from + i] ||
		    got->cookie[i] != want->cookie[from + i])
			return false;
	return true;
}

static void make_dir(const char *name, int n)
{
	char p[128];
	int dfd;

	snprintf(p, sizeof(p), "%s/%s", base, name);
	mkdir(p, 0755);
	dfd = open(p, O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "f%06d", i);
		close(openat(dfd, p, O_CREAT | O_WRONLY, 0644));
	}
	close(dfd);
}

int main(void)
{
	struct order all, o;
	struct bk_handle root, d, small;
	struct bk_attr a;
	struct cost c, cont;
	bool eof = false;
	int rc, calls, mid;
	char cmd[128];

	snprintf(base, sizeof(base), "/tmp/snfs-rdresume.XXXXXX");
	if (mkdtemp(base) == NULL) {
		printf("not ok - mkdtemp\n");
		return 1;
	}
	make_dir("huge", NFILES);
	make_dir("small", 10);
	CHECK(ops->export_open(base, &ex) == 0 && ops->root(ex, &root) == 0 &&
	          ops->lookup(ex, &root_cr, &root, "huge", &d, &a) == 0 &&
	          ops->lookup(ex, &root_cr, &root, "small", &small, &a) == 0,
	      "export open, huge and small looked up");

	/* The reference: the whole listing in one call. */
	order_init(&all, NFILES + 2);
	c = cost_now();
	rc = one_call(&d, 0, 0, &all, &eof);
	c = cost_since(c);
	CHECK(rc == 0 && eof && all.n == NFILES + 2,
	      "one call lists all 100,002 entries");
	CHECK(c.records == NFILES + 2 && c.calls > 1,
	      "the counters see every record read (and several getdents64)");

	/* In chunks of CHUNK up to entry 50,000: what continuing costs. */
	order_init(&o, NFILES + 2);
	uint64_t cookie = 0;
	c = cost_now();
	for (calls = 0; calls < 50; calls++) {
		int before = o.n;
		rc = one_call(&d, cookie, CHUNK, &o, &eof);
		if (rc != 0 || o.n != before + CHUNK)
			break;
		cookie = o.cookie[o.n - 1];
	}
	c = cost_since(c);
	mid = o.n;
	CHECK(calls == 50 && mid == 50 * CHUNK && same_run(&o, &all, 0, mid),
	      "50 calls of 1000 list the first 50,000 entries in order");
	CHECK(c.records >= (uint64_t)mid,
	      "reaching entry 50,000 read at least 50,000 records");
	o.n = 0;
	cont = cost_now();
	rc = one_call(&d, cookie, CHUNK, &o, &eof);
	cont = cost_since(cont);
	CHECK(rc == 0 && same_run(&o, &all, mid, CHUNK) && cont.opens == 0,
	      "continuing at entry 50,000: the next 1000 entries, on the "
	      "stream kept");
	cookie = o.cookie[o.n - 1];
	mid += CHUNK;

	/* Other listings in between (another client, the same directory
	 * from the start, a second directory), then the resume. */
	for (int i = 0; i < 5; i++) {
		o.n = 0;
		one_call(&d, 0, 10, &o, &eof);
		one_call(&small, 0, 3, &o, &eof);
	}
	o.n = 0;
	c = cost_now();
	rc = one_call(&d, cookie, CHUNK, &o, &eof);
	c = cost_since(c);
	printf("# entry %d: continuing read %llu records in %llu getdents64, "
	       "resuming %llu in %llu\n",
	       mid, (unsigned long long)cont.records,
	       (unsigned long long)cont.calls, (unsigned long long)c.records,
	       (unsigned long long)c.calls);
	CHECK(rc == 0 && same_run(&o, &all, mid, CHUNK),
	      "resuming at entry 51,000 after other listings: the right 1000 "
	      "entries");
	CHECK(c.opens == 0, "resuming takes the stream kept for that cookie");
	CHECK(c.records <= ONE_REPLY && c.calls <= 2,
	      "resuming at entry 51,000 reads one reply's records, not 51,000");
	CHECK(c.records <= cont.records + 4096 && c.calls <= cont.calls + 1,
	      "resuming costs what continuing costs");
	cookie = o.cookie[o.n - 1];
	mid += CHUNK;

	/* The stream evicted: more listings stopped mid-way than the cache
	 * holds (64) push it out, least recently used first (by the second:
	 * so let one pass). */
	sleep(2);
	for (int i = 0; i < 80; i++) {
		o.n = 0;
		one_call(&d, all.cookie[i * 7], 1, &o, &eof);
	}
	o.n = 0;
	c = cost_now();
	rc = one_call(&d, cookie, CHUNK, &o, &eof);
	c = cost_since(c);
	printf("# after eviction: %llu records in %llu getdents64\n",
	       (unsigned long long)c.records, (unsigned long long)c.calls);
	CHECK(rc == 0 && same_run(&o, &all, mid, CHUNK),
	      "resuming at entry 52,000 after its stream was evicted: the "
	      "right 1000 entries");
	CHECK(c.opens == 1 && c.calls >= 1 && c.records <= ONE_REPLY,
	      "an evicted stream is opened afresh and sought: one reply's "
	      "records");
	cookie = o.cookie[o.n - 1];
	mid += CHUNK;

	/* The export closed and opened again (a restart): every stream is
	 * gone, the cookie still resumes. */
	ops->export_close(ex);
	CHECK(ops->export_open(base, &ex) == 0, "export opened again");
	o.n = 0;
	c = cost_now();
	rc = one_call(&d, cookie, 0, &o, &eof);
	c = cost_since(c);
	CHECK(rc == 0 && eof && same_run(&o, &all, mid, all.n - mid),
	      "after a restart the cookie of entry 53,000 lists the rest");
	CHECK(c.opens == 1 && c.records == (uint64_t)(all.n - mid),
	      "and reads only the rest");

	/* A cookie taken from the middle with no listing ever stopped there
	 * (a client re-reading one page of its cache). */
	int at = 77777;
	o.n = 0;
	c = cost_now();
	rc = one_call(&d, all.cookie[at - 1], CHUNK, &o, &eof);
	c = cost_since(c);
	CHECK(rc == 0 && same_run(&o, &all, at, CHUNK) && c.opens == 1 &&
	          c.records <= ONE_REPLY,
	      "a cookie where no listing stopped: the right entries, one "
	      "reply's records");

	/* A kept stream has read names ahead; two of them go, one through
	 * the backend, one beside it, and a name is added. The resume lists
	 * the directory as it is now (no removed name), still on the kept
	 * stream, read again from the cookie: one reply's records. */
	int s0 = 90000, g1 = s0 + CHUNK + 10, g2 = s0 + CHUNK + 20;
	char name[32], p[128];
	o.n = 0;
	rc = one_call(&d, all.cookie[s0 - 1], CHUNK, &o, &eof);
	cookie = o.cookie[o.n - 1];
	while (all.idx[g1] < 0)
		g1++;
	while (all.idx[g2] < 0 || g2 == g1)
		g2++;
	snprintf(name, sizeof(name), "f%06d", all.idx[g1]);
	snprintf(p, sizeof(p), "%s/huge/f%06d", base, all.idx[g2]);
	CHECK(rc == 0 && ops->remove(ex, &root_cr, &d, name) == 0 &&
	          unlink(p) == 0,
	      "two names read ahead by a kept stream removed");
	snprintf(p, sizeof(p), "%s/huge/new", base);
	close(open(p, O_CREAT | O_WRONLY, 0644));
	struct order want;
	order_init(&want, CHUNK + 1);
	for (int i = s0 + CHUNK; want.n < CHUNK + 1 && i < all.n; i++)
		if (i != g1 && i != g2) {
			want.idx[want.n] = all.idx[i];
			want.cookie[want.n++] = all.cookie[i];
		}
	o.n = 0;
	c = cost_now();
	rc = one_call(&d, cookie, CHUNK + 1, &o, &eof);
	c = cost_since(c);
	/* "new" (idx -1 with a cookie of its own) may land anywhere */
	int kept = 0, news = 0, wrong = 0;
	for (int i = 0; i < o.n; i++) {
		if (o.idx[i] < 0)
			news++;
		else if (kept < want.n && o.idx[i] == want.idx[kept])
			kept++;
		else
			wrong++;
	}
	CHECK(rc == 0 && o.n == CHUNK + 1 && news <= 1 && wrong == 0 &&
	          kept == CHUNK + 1 - news,
	      "resumed after the removes: the names as they are now, none "
	      "removed");
	CHECK(c.opens == 0 && c.records <= ONE_REPLY,
	      "on the kept stream, read again from the cookie: one reply's "
	      "records");
	free(want.idx);
	free(want.cookie);

	ops->export_close(ex);
	free(all.idx);
	free(all.cookie);
	free(o.idx);
	free(o.cookie);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	if (system(cmd) != 0)
		printf("# cleanup of %s failed\n", base);
	TEST_EXIT();
}
