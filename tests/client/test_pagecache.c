/* Page cache logic against an in-memory mock server: range sets, a write
 * then a read of the same bytes sends no READ, partial pages keep our
 * bytes, write-back with UNSTABLE + COMMIT, and a verifier change (server
 * restart) makes the uncommitted ranges go out again. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/pagecache.h"
#include "cto.h"
#include "test.h"

#define SRV_SIZE (4u << 20)

static struct {
	uint8_t data[SRV_SIZE];      /* what the server serves */
	uint8_t committed[SRV_SIZE]; /* what survives a restart */
	uint64_t size, committed_size;
	uint8_t verf[8];
	int reads, writes, commits;
	uint32_t max_reply; /* if set: replies carry at most this much */
	bool file_sync;     /* WRITE replies say FILE_SYNC */
	int vec_calls, vec_fail_at; /* vectored: fail op #n once (-1 never) */
} srv;

struct mock_req {
	uint64_t off;
	uint32_t count;
	bool write;
};

static int m_read_start(struct snfs_ctx *c, const struct snfs_fh *fh,
                        uint64_t off, uint32_t count, struct rpc_req **r)
{
	(void)c, (void)fh;
	struct mock_req *m = calloc(1, sizeof(*m));
	m->off = off;
	m->count = count;
	srv.reads++;
	*r = (struct rpc_req *)m;
	return 0;
}

static int m_read_finish(struct snfs_ctx *c, struct rpc_req *r, void *buf,
                         uint32_t count, struct snfs_read_res *res)
{
	(void)c, (void)count;
	struct mock_req *m = (struct mock_req *)r;
	memset(res, 0, sizeof(*res));
	uint64_t end = m->off + m->count;
	if (end > srv.size)
		end = srv.size;
	res->count = end > m->off ? (uint32_t)(end - m->off) : 0;
	if (srv.max_reply && res->count > srv.max_reply)
		res->count = srv.max_reply;
	memcpy(buf, srv.data + m->off, res->count);
	res->eof = m->off + res->count >= srv.size;
	free(m);
	return 0;
}

static int m_write_start(struct snfs_ctx *c, const struct snfs_fh *fh,
                         uint64_t off, const void *buf, uint32_t count,
                         int stable, struct rpc_req **r)
{
	(void)c, (void)fh, (void)stable;
	memcpy(srv.data + off, buf, count);
	if (off + count > srv.size)
		srv.size = off + count;
	struct mock_req *m = calloc(1, sizeof(*m));
	m->count = count;
	m->write = true;
	srv.writes++;
	*r = (struct rpc_req *)m;
	return 0;
}

static int m_write_finish(struct snfs_ctx *c, struct rpc_req *r,
                          struct snfs_write_res *res)
{
	(void)c;
	struct mock_req *m = (struct mock_req *)r;
	res->count = m->count;
	res->committed = srv.file_sync ? SNFS_FILE_SYNC : SNFS_UNSTABLE;
	memcpy(res->verf, srv.verf, 8);
	free(m);
	return 0;
}

static int m_commit(struct snfs_ctx *c, const struct snfs_fh *fh,
                    uint8_t verf[8], struct snfs_stat *post, bool *have)
{
	(void)c, (void)fh, (void)post;
	srv.commits++;
	memcpy(srv.committed, srv.data, SRV_SIZE);
	srv.committed_size = srv.size;
	memcpy(verf, srv.verf, 8);
	*have = false;
	return 0;
}

static int m_setattr(struct snfs_ctx *c, const struct snfs_fh *fh,
                     const struct snfs_setattr *sa, struct snfs_stat *post,
                     bool *have)
{
	(void)c, (void)fh, (void)post;
	if (sa->mask & SNFS_SET_SIZE) {
		if (sa->size < srv.size)
			memset(srv.data + sa->size, 0, srv.size - sa->size);
		srv.size = sa->size;
	}
	*have = false;
	return 0;
}

/* A restart: uncommitted data is gone and the verifier changes. */
static void srv_restart(void)
{
	memcpy(srv.data, srv.committed, SRV_SIZE);
	srv.size = srv.committed_size;
	srv.verf[0]++;
}

struct mock_vec {
	uint32_t n, done, len[64];
	int rc;
};

/* A vectored WRITE: the ops before vec_fail_at land, that one fails
 * (once) and the rest are not done, as in a COMPOUND. */
static int m_write_vec_start(struct snfs_ctx *c, const struct snfs_fh *fh,
                             const struct snfs_wseg *v, uint32_t n,
                             const void *buf, int stable, struct rpc_req **r)
{
	(void)c, (void)fh, (void)stable;
	struct mock_vec *m = calloc(1, sizeof(*m));
	const uint8_t *p = buf;
	m->n = n;
	srv.vec_calls++;
	for (uint32_t i = 0; i < n; i++) {
		if ((int)i == srv.vec_fail_at) {
			srv.vec_fail_at = -1;
			m->rc = -EIO;
			break;
		}
		memcpy(srv.data + v[i].off, p, v[i].len);
		if (v[i].off + v[i].len > srv.size)
			srv.size = v[i].off + v[i].len;
		p += v[i].len;
		m->len[i] = v[i].len;
		m->done = i + 1;
	}
	*r = (struct rpc_req *)m;
	return 0;
}

static int m_write_vec_finish(struct snfs_ctx *c, struct rpc_req *r,
                              struct snfs_write_res *res, uint32_t *done)
{
	(void)c;
	struct mock_vec *m = (struct mock_vec *)r;
	for (uint32_t i = 0; i < m->done; i++) {
		res[i].count = m->len[i];
		res[i].committed = SNFS_UNSTABLE;
		memcpy(res[i].verf, srv.verf, 8);
	}
	*done = m->done;
	int rc = m->rc;
	free(m);
	return rc;
}

static int m_getattr(struct snfs_ctx *c, const struct snfs_fh *fh,
                     struct snfs_stat *st)
{
	(void)c, (void)fh;
	memset(st, 0, sizeof(*st));
	st->type = SNFS_REG;
	st->size = srv.size;
	st->change = srv.size; /* enough to tell versions apart here */
	return 0;
}

static const struct snfs_proto_ops mock_ops = {
    .name = "mock",
    .read_start = m_read_start,
    .read_finish = m_read_finish,
    .write_start = m_write_start,
    .write_finish = m_write_finish,
    .commit = m_commit,
    .setattr = m_setattr,
    .getattr = m_getattr,
};

static const struct snfs_proto_ops mock_vec_ops = {
    .name = "mock-vec",
    .read_start = m_read_start,
    .read_finish = m_read_finish,
    .write_start = m_write_start,
    .write_finish = m_write_finish,
    .write_vec_start = m_write_vec_start,
    .write_vec_finish = m_write_vec_finish,
    .commit = m_commit,
    .setattr = m_setattr,
};

static void test_rset(void)
{
	struct rset rs = {0};
	CHECK(rset_add(&rs, 10, 20) == 10, "add counts new bytes");
	CHECK(rset_add(&rs, 30, 40) == 10 && rs.n == 2, "disjoint ranges");
	CHECK(rset_add(&rs, 15, 35) == 10 && rs.n == 1 && rs.r[0].s == 10 &&
	          rs.r[0].e == 40,
	      "overlap merges into one range");
	CHECK(rset_add(&rs, 40, 50) == 10 && rs.n == 1 && rs.r[0].e == 50,
	      "adjacent ranges merge");
	CHECK(rset_add(&rs, 12, 18) == 0, "covered add adds nothing");
	CHECK(rset_covers(&rs, 10, 50) && !rset_covers(&rs, 5, 15), "covers");
	CHECK(rset_del(&rs, 20, 30) == 10 && rs.n == 2, "delete splits");
	struct rrange g[4];
	uint32_t ng = rset_gaps(&rs, 0, 60, g);
	CHECK(ng == 3 && g[0].s == 0 && g[0].e == 10 && g[1].s == 20 &&
	          g[1].e == 30 && g[2].s == 50 && g[2].e == 60,
	      "gaps");
	CHECK(rset_del(&rs, 0, 100) == 30 && rs.n == 0, "delete all");
	CHECK(rset_bytes(&rs) == 0, "empty");
	/* many small ranges, then one that spans them */
	for (uint32_t i = 0; i < 100; i++)
		rset_add(&rs, i * 10, i * 10 + 5);
	CHECK(rs.n == 100 && rset_bytes(&rs) == 500, "100 ranges");
	CHECK(rset_add(&rs, 0, 1000) == 500 && rs.n == 1, "spanning merge");
	rset_free(&rs);
}

static struct pc_file *setup(struct snfs_ctx *c, size_t budget)
{
	static struct snfs_fh fh = {.len = 4, .data = "mock"};
	struct snfs_stat st = {.type = SNFS_REG};
	memset(c, 0, sizeof(*c));
	c->ops = &mock_ops;
	c->rsize = c->wsize = 65536;
	pc_cache_new(&c->pc, budget);
	struct pc_file *f = pc_file_get(c, &fh);
	st.size = srv.size;
	pc_file_validate(f, &st);
	return f;
}

static void teardown(struct snfs_ctx *c, struct pc_file *f)
{
	pc_file_put(f);
	pc_cache_free(c->pc);
}

static void test_write_then_read(void)
{
	struct snfs_ctx c;
	uint8_t buf[8192], out[8192];
	memset(&srv, 0, sizeof(srv));
	srv.size = 1 << 20;
	for (uint32_t i = 0; i < srv.size; i++)
		srv.data[i] = (uint8_t)(i * 7);
	memcpy(srv.committed, srv.data, SRV_SIZE);
	srv.committed_size = srv.size;
	struct pc_file *f = setup(&c, 8u << 20);

	memset(buf, 0xab, sizeof(buf));
	CHECK(pc_write(f, buf, 2048, 100000) == 2048, "write 2 KiB");
	CHECK(srv.reads == 0, "a write reads nothing first");
	CHECK(pc_read(f, out, 2048, 100000) == 2048 && !memcmp(out, buf, 2048),
	      "read back the bytes written");
	CHECK(srv.reads == 0, "write then read of the same bytes: no READ");
	CHECK(pc_read(f, out, 100, 100500) == 100 && srv.reads == 0,
	      "a read inside the written range: no READ");

	/* partial page: read around the written bytes */
	CHECK(pc_read(f, out, 4096, 100000 - 1000) == 4096, "straddling read");
	CHECK(srv.reads > 0, "the unwritten part is read");
	bool ok = true;
	for (int i = 0; i < 4096; i++) {
		uint64_t o = 100000 - 1000 + (uint64_t)i;
		uint8_t want =
		    o >= 100000 && o < 102048 ? 0xab : (uint8_t)(o * 7);
		if (out[i] != want)
			ok = false;
	}
	CHECK(ok, "our bytes survive the server's data around them");
	int r = srv.reads;
	CHECK(pc_read(f, out, 4096, 100000 - 1000) == 4096 && srv.reads == r,
	      "now the whole range is valid: no READ");

	CHECK(pc_flush(f, true) == 0, "flush");
	CHECK(srv.writes == 1 && srv.commits == 1, "one WRITE, one COMMIT");
	CHECK(memcmp(srv.committed + 100000, buf, 2048) == 0,
	      "server has the data");
	CHECK(pc_flush(f, true) == 0 && srv.writes == 1 && srv.commits == 1,
	      "clean flush sends nothing");

	/* two writes to the same page with a gap: two ranges, two WRITEs */
	pc_write(f, buf, 10, 300000);
	pc_write(f, buf, 10, 300020);
	pc_write(f, buf, 10, 300010); /* fills the gap: one range */
	pc_flush(f, true);
	CHECK(srv.writes == 2, "merged dirty ranges go out as one WRITE");

	/* A 2 KiB read miss fetches its whole 4 KiB block (less the bytes
	 * held): the other half is then a hit, as in a classic cache. */
	r = srv.reads;
	CHECK(pc_read(f, out, 2048, 409600) == 2048 && srv.reads == r + 1 &&
	          out[0] == (uint8_t)(409600 * 7),
	      "a 2 KiB read miss: one READ");
	CHECK(pc_read(f, out, 2048, 409600 + 2048) == 2048 &&
	          srv.reads == r + 1 && out[0] == (uint8_t)(411648 * 7),
	      "the other half of its block: no READ");
	/* a read inside written bytes fetches nothing, even if the rest of
	 * its block is missing */
	pc_write(f, buf, 2048, 520192);
	CHECK(pc_read(f, out, 2048, 520192) == 2048 && srv.reads == r + 1,
	      "a read of written bytes in a missing block: no READ");
	CHECK(pc_read(f, out, 4096, 520192 - 2048) == 4096 &&
	          srv.reads == r + 2 && out[0] == (uint8_t)(518144 * 7) &&
	          out[2048] == 0xab,
	      "a read across into written bytes: one READ, ours kept");

	teardown(&c, f);
}

static void test_verifier_change(void)
{
	struct snfs_ctx c;
	uint8_t *buf = malloc(1 << 20);
	memset(&srv, 0, sizeof(srv));
	struct pc_file *f = setup(&c, 64u << 20);
	for (int i = 0; i < (1 << 20); i++)
		buf[i] = (uint8_t)(i ^ (i >> 8));
	CHECK(pc_write(f, buf, 1 << 20, 0) == 1 << 20, "write 1 MiB");
	CHECK(pc_flush(f, false) == 0 && srv.writes == 16 && srv.commits == 0,
	      "UNSTABLE writes sent, not committed");
	srv_restart();
	CHECK(srv.size == 0, "the restart lost the uncommitted data");
	CHECK(pc_flush(f, true) == 0, "commit after the restart succeeds");
	CHECK(srv.writes == 32, "every uncommitted range was sent again");
	CHECK(srv.commits == 2, "two COMMITs: mismatch, then match");
	CHECK(srv.committed_size == 1 << 20 &&
	          memcmp(srv.committed, buf, 1 << 20) == 0,
	      "the data is intact");

	/* a restart between writes: mixed verifiers */
	pc_write(f, buf, 65536, 0);
	pc_flush(f, false);
	srv_restart(); /* committed state already has it; verf changes */
	pc_write(f, buf, 65536, 65536 * 2);
	int w = srv.writes;
	CHECK(pc_flush(f, true) == 0, "flush with mixed verifiers");
	CHECK(srv.writes > w + 1, "mixed verifiers force a resend");
	teardown(&c, f);
	free(buf);
}

static void test_eviction(void)
{
	struct snfs_ctx c;
	uint8_t buf[65536];
	memset(&srv, 0, sizeof(srv));
	srv.size = SRV_SIZE;
	struct pc_file *f = setup(&c, 256u << 10); /* four pages */
	for (int i = 0; i < 32; i++)
		pc_read(f, buf, sizeof(buf), (uint64_t)i * 65536);
	CHECK(c.pc->used <= 256u << 10, "clean pages evicted to the budget");
	memset(buf, 1, sizeof(buf));
	for (int i = 0; i < 32; i++)
		pc_write(f, buf, sizeof(buf), (uint64_t)i * 65536);
	CHECK(pc_flush(f, true) == 0 && srv.commits >= 1,
	      "dirty pages over budget are written and committed");
	CHECK(srv.committed[SRV_SIZE / 2 - 1] == 1, "data reached the server");
	CHECK(pc_truncate(f, 1000) == 0 && srv.size == 1000 &&
	          pc_size(f) == 1000,
	      "truncate");
	CHECK(pc_read(f, buf, 65536, 0) == 1000, "read stops at the new size");
	teardown(&c, f);
}

/* Regression (found by tests/interop/fsrand over snfs-mount): bytes
 * written FILE_SYNC, then a truncation below them, then a revalidation
 * (as after an ALLOCATE) brought the old write end back as the size. */
static void test_truncate_after_stable_writes(void)
{
	struct snfs_ctx c;
	uint8_t buf[65536];
	memset(&srv, 0, sizeof(srv));
	srv.file_sync = true;
	struct pc_file *f = setup(&c, 8u << 20);
	memset(buf, 3, sizeof(buf));
	CHECK(pc_write(f, buf, sizeof(buf), 0) == (ssize_t)sizeof(buf) &&
	          pc_flush(f, true) == 0 && srv.commits == 0,
	      "FILE_SYNC writes need no COMMIT");
	CHECK(pc_truncate(f, 1000) == 0 && pc_size(f) == 1000,
	      "truncate below the written bytes");
	struct snfs_stat st = {.type = SNFS_REG, .size = 1000};
	st.mtime.tv_sec = 12345; /* a change made elsewhere: revalidate */
	pc_file_validate(f, &st);
	CHECK(pc_size(f) == 1000,
	      "size after revalidation is the server's, not the old write end");
	CHECK(pc_read(f, buf, sizeof(buf), 0) == 1000,
	      "a read stops at the truncated size");
	/* and a flush with nothing left unstable forgets the write end */
	CHECK(pc_write(f, buf, 100, 50000) == 100 && pc_flush(f, false) == 0,
	      "write past the end, sent FILE_SYNC");
	srv.size = 2000; /* truncated by another client */
	st.size = 2000;
	st.mtime.tv_sec = 12346;
	pc_file_validate(f, &st);
	CHECK(pc_size(f) == 2000, "another client's truncation is seen");
	teardown(&c, f);
}

/* pc_file_validate says whether the file changed since it was last
 * seen: what snfs_open_attrs reports, and snfs-mount then drops the
 * kernel's attributes (kernel_cto in src/tools/mount_ops.c). */
static void test_validate_reports_change(void)
{
	static struct snfs_fh fh = {.len = 4, .data = "mock"};
	struct snfs_ctx c;
	struct snfs_stat st = {.type = SNFS_REG, .size = 10};

	memset(&c, 0, sizeof(c));
	memset(&srv, 0, sizeof(srv));
	c.ops = &mock_ops;
	c.rsize = c.wsize = 65536;
	pc_cache_new(&c.pc, 1u << 20);
	struct pc_file *f = pc_file_get(&c, &fh);
	CHECK(!pc_file_validate(f, &st), "first look: not a change");
	CHECK(!pc_file_validate(f, &st), "same attributes: not a change");
	st.change = 7;
	CHECK(pc_file_validate(f, &st), "another change attribute: a change");
	st.size = 20;
	CHECK(pc_file_validate(f, &st) && pc_size(f) == 20,
	      "another size: a change, and the new size");
	CHECK(!pc_file_validate(f, &st), "then steady again");
	teardown(&c, f);
}

/* Regression (growth.py through snfs-mount: tail -f saw nothing new, a
 * mapping got SIGBUS): a read past the end known since the open asks the
 * server's size again, at most once a second. */
static void test_read_past_known_end(void)
{
	struct snfs_ctx c;
	uint8_t buf[256];

	memset(&srv, 0, sizeof(srv));
	srv.size = 100;
	memset(srv.data, 'a', 100);
	struct pc_file *f = setup(&c, 1u << 20);
	CHECK(pc_read(f, buf, sizeof(buf), 0) == 100, "read the 100 bytes");
	memset(srv.data + 100, 'b', 50); /* another client appends */
	srv.size = 150;
	CHECK(pc_read(f, buf, sizeof(buf), 100) == 0,
	      "within a second of the last look: still the end we knew");
	struct timespec ts = {1, 100000000};
	nanosleep(&ts, NULL);
	CHECK(pc_read(f, buf, sizeof(buf), 100) == 50 && buf[0] == 'b' &&
	          pc_size(f) == 150,
	      "a second later the read past the end finds the appended bytes");
	teardown(&c, f);
}

/* Large reads of uncached bytes go straight into the caller's buffer:
 * right data, no pages, one READ per rsize; short replies and an EOF
 * that moved are handled; bytes of ours waiting to go out keep reads on
 * the cached path. */
static bool pattern_ok(const uint8_t *p, uint64_t off, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)((off + i) * 7 + ((off + i) >> 16)))
			return false;
	return true;
}

static void test_direct_read(void)
{
	struct snfs_ctx c;
	uint8_t *out = malloc(SRV_SIZE);
	memset(&srv, 0, sizeof(srv));
	srv.size = (3u << 20) + 5000;
	for (uint32_t i = 0; i < SRV_SIZE; i++)
		srv.data[i] = (uint8_t)(i * 7 + (i >> 16));
	struct pc_file *f = setup(&c, 64u << 20);
	c.rsize = 1u << 20;

	CHECK(pc_read(f, out, SRV_SIZE, 0) == (ssize_t)srv.size &&
	          pattern_ok(out, 0, srv.size),
	      "direct: a 4 MiB read of a 3 MiB + 5000 file");
	CHECK(srv.reads == 4, "direct: one READ per rsize");
	CHECK(c.pc->used == 0, "direct: no pages kept");

	srv.max_reply = 300000;
	srv.reads = 0;
	memset(out, 0, SRV_SIZE);
	CHECK(pc_read(f, out, 2u << 20, 4096) == 2u << 20 &&
	          pattern_ok(out, 4096, 2u << 20),
	      "direct: short replies without eof are asked again");
	CHECK(srv.reads > 2, "direct: more READs for short replies");
	srv.max_reply = 0;

	srv.size = (3u << 20) / 2; /* shrunk behind our back */
	CHECK(pc_read(f, out, 2u << 20, 0) == (ssize_t)srv.size &&
	          pattern_ok(out, 0, srv.size),
	      "direct: EOF earlier than we thought");
	CHECK(pc_size(f) == srv.size, "direct: the size follows the server");

	uint8_t mine[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	CHECK(pc_write(f, mine, 10, 1u << 20) == 10, "write 10 bytes");
	CHECK(pc_read(f, out, 1u << 20, 1u << 19) == 1u << 20 &&
	          !memcmp(out + (1u << 19), mine, 10) &&
	          pattern_ok(out, 1u << 19, 1u << 19),
	      "our unsent bytes show in a large read");
	teardown(&c, f);
	free(out);
}

/* Vectored write-back: scattered dirty ranges go in one call; when an
 * operation in it fails, it and the ones after it stay dirty and go out
 * with the next flush; nothing is lost. */
static void test_write_vec(void)
{
	struct snfs_ctx c;
	uint8_t buf[100];
	memset(&srv, 0, sizeof(srv));
	srv.vec_fail_at = -1;
	struct pc_file *f = setup(&c, 64u << 20);
	c.ops = &mock_vec_ops;
	c.wsize = 1u << 20;
	c.max_write_ops = 32;

	for (int i = 0; i < 10; i++) {
		memset(buf, 'a' + i, sizeof(buf));
		pc_write(f, buf, sizeof(buf), (uint64_t)i * 200000);
	}
	CHECK(pc_flush(f, true) == 0, "vec: flush");
	CHECK(srv.vec_calls == 1 && srv.writes == 0,
	      "vec: ten scattered ranges in one vectored call");
	bool ok = true;
	for (int i = 0; i < 10; i++)
		ok &= srv.committed[(uint64_t)i * 200000 + 99] == 'a' + i;
	CHECK(ok, "vec: every range committed");

	for (int i = 0; i < 10; i++) {
		memset(buf, 'A' + i, sizeof(buf));
		pc_write(f, buf, sizeof(buf), (uint64_t)i * 200000 + 50);
	}
	srv.vec_fail_at = 4;
	CHECK(pc_flush(f, true) == -EIO, "vec: a failed op fails the flush");
	CHECK(pc_flush(f, true) == 0, "vec: the next flush succeeds");
	ok = true;
	for (int i = 0; i < 10; i++)
		ok &= srv.committed[(uint64_t)i * 200000 + 149] == 'A' + i &&
		      srv.committed[(uint64_t)i * 200000 + 49] == 'a' + i;
	CHECK(ok, "vec: the failed op and those after it were sent again");
	teardown(&c, f);
}

/* Against a real server (SNFS_TEST_URL names a directory on it; set by
 * tests/client/t_snfs.sh): the counters show no READ after a write of the
 * same bytes, and none after close and reopen (close-to-open keeps a cache
 * our own COMMIT validated). */
static void test_live(const char *url, const char *dir)
{
	struct snfs_ctx *c;
	struct snfs_file *f;
	struct snfs_stats st;
	char buf[2048], out[2048];

	if (snfs_mount(url, NULL, &c) < 0) {
		printf("not ok - live: mount %s: %s\n", url, snfs_last_error());
		test_failures++;
		return;
	}
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 13 + 1);
	snfs_unlink(c, "wtr-file");
	CHECK(snfs_open(c, "wtr-file", O_RDWR | O_CREAT | O_TRUNC, 0644, &f) ==
	          0,
	      "live: create");
	snfs_stats_reset(c);
	CHECK(snfs_pwrite(f, buf, sizeof(buf), 5000) == (ssize_t)sizeof(buf),
	      "live: write 2 KiB at 5000");
	CHECK(snfs_pread(f, out, sizeof(out), 5000) == (ssize_t)sizeof(out) &&
	          !memcmp(buf, out, sizeof(buf)),
	      "live: read it back");
	snfs_stats(c, &st);
	CHECK(st.calls[SNFS_OP_READ] == 0 && st.total_calls == 0,
	      "live: write then read issues no RPC at all");
	CHECK(snfs_close(f) == 0, "live: close (WRITE + COMMIT)");
	snfs_stats(c, &st);
	CHECK(st.calls[SNFS_OP_WRITE] == 1 && st.calls[SNFS_OP_COMMIT] == 1,
	      "live: one WRITE, one COMMIT");
	CHECK(snfs_open(c, "wtr-file", O_RDONLY, 0, &f) == 0, "live: reopen");
	snfs_stats_reset(c);
	CHECK(snfs_pread(f, out, sizeof(out), 5000) == (ssize_t)sizeof(out) &&
	          !memcmp(buf, out, sizeof(buf)),
	      "live: read after reopen");
	snfs_stats(c, &st);
	CHECK(st.calls[SNFS_OP_READ] == 0,
	      "live: close-to-open keeps our validated cache: no READ");
	CHECK(snfs_pread(f, out, 100, 0) == 100 && out[0] == 0 && out[99] == 0,
	      "live: the hole before our bytes reads as zeros");
	snfs_stats(c, &st);
	CHECK(st.calls[SNFS_OP_READ] == 1, "live: an uncached range is READ");
	snfs_close(f);
	snfs_unlink(c, "wtr-file");
	test_close_to_open(c, url, dir);
	snfs_umount(c);
}

int main(void)
{
	const char *url = getenv("SNFS_TEST_URL");
	if (url) {
		test_live(url, getenv("SNFS_TEST_DIR"));
		TEST_EXIT();
	}
	test_rset();
	test_write_then_read();
	test_verifier_change();
	test_eviction();
	test_truncate_after_stable_writes();
	test_validate_reports_change();
	test_read_past_known_end();
	test_direct_read();
	test_write_vec();
	TEST_EXIT();
}
