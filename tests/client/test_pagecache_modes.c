/* pagecache=partial|full|off: the URL argument, and the classic cache
 * (full) against an in-memory mock server: a write that covers a 4 KiB
 * page in part READs that page first, a whole-page write reads nothing,
 * a read miss fetches whole pages; the partial cache reads nothing before
 * a write. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/pagecache.h"
#include "test.h"

#define SRV_SIZE (1u << 20)
#define MAX_LOG 64

static struct {
	uint8_t data[SRV_SIZE];
	uint64_t size;
	int reads, writes;
	struct {
		uint64_t off;
		uint32_t len;
	} rlog[MAX_LOG];
} srv;

struct mock_req {
	uint64_t off;
	uint32_t count;
};

static int m_read_start(struct snfs_ctx *c, const struct snfs_fh *fh,
                        uint64_t off, uint32_t count, struct rpc_req **r)
{
	(void)c, (void)fh;
	struct mock_req *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->off = off;
	m->count = count;
	if (srv.reads < MAX_LOG) {
		srv.rlog[srv.reads].off = off;
		srv.rlog[srv.reads].len = count;
	}
	srv.reads++;
	*r = (struct rpc_req *)m;
	return 0;
}

static int m_read_finish(struct snfs_ctx *c, struct rpc_req *r, void *buf,
                         uint32_t count, struct snfs_read_res *res)
{
	(void)c, (void)count;
	struct mock_req *m = (struct mock_req *)r;
	uint64_t end = m->off + m->count;
	memset(res, 0, sizeof(*res));
	if (end > srv.size)
		end = srv.size;
	res->count = end > m->off ? (uint32_t)(end - m->off) : 0;
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
	struct mock_req *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	memcpy(srv.data + off, buf, count);
	if (off + count > srv.size)
		srv.size = off + count;
	m->count = count;
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
	res->committed = SNFS_UNSTABLE;
	memset(res->verf, 7, 8);
	free(m);
	return 0;
}

static int m_commit(struct snfs_ctx *c, const struct snfs_fh *fh,
                    uint8_t verf[8], struct snfs_stat *post, bool *have)
{
	(void)c, (void)fh, (void)post;
	memset(verf, 7, 8);
	*have = false;
	return 0;
}

static const struct snfs_proto_ops mock_ops = {
    .name = "mock",
    .read_start = m_read_start,
    .read_finish = m_read_finish,
    .write_start = m_write_start,
    .write_finish = m_write_finish,
    .commit = m_commit,
};

static void srv_reset(uint64_t size)
{
	memset(&srv, 0, sizeof(srv));
	srv.size = size;
	for (uint32_t i = 0; i < SRV_SIZE; i++)
		srv.data[i] = (uint8_t)(i * 13 + 1);
}

static struct pc_file *setup(struct snfs_ctx *c, bool classic)
{
	static struct snfs_fh fh = {.len = 4, .data = "mock"};
	struct snfs_stat st = {.type = SNFS_REG};
	memset(c, 0, sizeof(*c));
	c->ops = &mock_ops;
	c->rsize = c->wsize = 65536;
	if (pc_cache_new(&c->pc, 8u << 20) < 0)
		return NULL;
	c->pc->classic = classic;
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

static void test_url(void)
{
	struct snfs_url u;
	static const struct {
		const char *arg;
		enum snfs_pagecache want;
	} ok[] = {{"pagecache=partial", SNFS_PC_PARTIAL},
	          {"pagecache=full", SNFS_PC_FULL},
	          {"pagecache=off", SNFS_PC_OFF},
	          {"pagecache=256", SNFS_PC_DEFAULT}, /* libnfs: pages */
	          {"version=3", SNFS_PC_DEFAULT}};
	char url[128];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(url, sizeof(url), "nfs://h/e?%s", ok[i].arg);
		int rc = snfs_url_parse(url, &u);
		printf("# %s\n", ok[i].arg);
		CHECK(rc == 0 && u.pagecache == ok[i].want,
		      "URL pagecache argument parsed");
		if (rc == 0)
			snfs_url_free(&u);
	}
	CHECK(snfs_url_parse("nfs://h/e?pagecache=sometimes", &u) == -EINVAL,
	      "pagecache=sometimes is refused");
	CHECK(snfs_url_parse("nfs://h/e?pagecache=", &u) == -EINVAL,
	      "an empty pagecache= is refused");
}

/* The bytes a reader sees: the server's, with [woff, woff+wlen) = 0xab. */
static bool looks_right(const uint8_t *got, uint64_t off, uint32_t len,
                        uint64_t woff, uint32_t wlen, const uint8_t *orig)
{
	for (uint32_t i = 0; i < len; i++) {
		uint64_t p = off + i;
		uint8_t want = p >= woff && p < woff + wlen ? 0xab : orig[p];
		if (got[i] != want)
			return false;
	}
	return true;
}

static void test_classic_write(void)
{
	static uint8_t orig[SRV_SIZE];
	uint8_t buf[16384], out[16384];
	struct snfs_ctx c;

	srv_reset(256u << 10);
	memcpy(orig, srv.data, SRV_SIZE);
	struct pc_file *f = setup(&c, true);
	memset(buf, 0xab, sizeof(buf));

	CHECK(pc_write(f, buf, 2048, 4096 + 1000) == 2048, "full: write 2 KiB");
	CHECK(srv.reads == 1 && srv.rlog[0].off == 4096 &&
	          srv.rlog[0].len == 4096,
	      "full: a partial write READs its 4 KiB page first");
	CHECK(pc_read(f, out, 4096, 4096) == 4096 && srv.reads == 1,
	      "full: the page is whole afterwards, a read sends nothing");
	CHECK(looks_right(out, 4096, 4096, 5096, 2048, orig),
	      "full: our bytes over the server's");

	CHECK(pc_write(f, buf, 4096, 64 * 1024) == 4096 && srv.reads == 1,
	      "full: a whole-page write reads nothing");
	CHECK(pc_write(f, buf, 8192, 100 * 1024 + 2048) == 8192 &&
	          srv.reads == 3 && srv.rlog[1].len == 4096 &&
	          srv.rlog[1].off == 100 * 1024 && srv.rlog[2].len == 4096 &&
	          srv.rlog[2].off == 108 * 1024,
	      "full: write over three pages reads the two partly covered");
	CHECK(pc_write(f, buf, 1024, 512u << 10) == 1024 && srv.reads == 3,
	      "full: nothing to read past the end of the file");
	CHECK(pc_flush(f, true) == 0 && srv.writes > 0, "full: flush");
	CHECK(looks_right(srv.data + 4096, 4096, 4096, 5096, 2048, orig),
	      "full: the server has our bytes after the flush");
	teardown(&c, f);
}

static void test_classic_read(void)
{
	uint8_t out[4096];
	struct snfs_ctx c;

	srv_reset(256u << 10);
	struct pc_file *f = setup(&c, true);
	CHECK(pc_read(f, out, 100, 20000) == 100 && srv.reads == 1 &&
	          srv.rlog[0].off == 16384 && srv.rlog[0].len == 4096,
	      "full: a read miss fetches the whole page");
	CHECK(pc_read(f, out, 100, 16384 + 4000) == 100,
	      "full: a read crossing into the next page");
	CHECK(srv.reads == 2 && srv.rlog[1].off == 20480 &&
	          srv.rlog[1].len == 4096,
	      "full: only the missing page is read");
	CHECK(pc_read(f, out, 100, 17000) == 100 && srv.reads == 2,
	      "full: a read inside a cached page sends nothing");
	CHECK(!memcmp(out, srv.data + 17000, 100), "full: read data");
	teardown(&c, f);
}

static void test_partial(void)
{
	uint8_t buf[2048], out[2048];
	struct snfs_ctx c;

	srv_reset(256u << 10);
	struct pc_file *f = setup(&c, false);
	memset(buf, 0xab, sizeof(buf));
	CHECK(pc_write(f, buf, 2048, 4096 + 1000) == 2048 && srv.reads == 0,
	      "partial: a 2 KiB write reads nothing");
	CHECK(pc_read(f, out, 2048, 4096 + 1000) == 2048 && srv.reads == 0 &&
	          !memcmp(out, buf, 2048),
	      "partial: reading it back sends nothing");
	CHECK(pc_read(f, out, 100, 20000) == 100 && srv.reads == 1 &&
	          srv.rlog[0].off == 16384 && srv.rlog[0].len == 4096 &&
	          !memcmp(out, srv.data + 20000, 100),
	      "partial: a read miss fetches its 4 KiB block");
	CHECK(pc_read(f, out, 100, 16384) == 100 && srv.reads == 1,
	      "partial: the rest of that block is then a hit");
	CHECK(pc_read(f, out, 2048, 4096) == 2048 && srv.reads == 2 &&
	          srv.rlog[1].off == 4096 && srv.rlog[1].len == 1000 &&
	          !memcmp(out + 1000, buf, 1048),
	      "partial: a miss next to our bytes fetches only the rest");
	teardown(&c, f);
}

int main(void)
{
	test_url();
	test_classic_write();
	test_classic_read();
	test_partial();
	TEST_EXIT();
}
