/* READDIR(PLUS) replies: the decoder (iterative, bounds-checked), the
 * listing's cookie lookup, and recovery from BAD_COOKIE when the
 * directory changes mid-listing (every surviving entry exactly once). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/nfs3_xdr.h"
#include "client/readdir.h"
#include "client/transport.h"
#include "test.h"

/* Encode a READDIRPLUS (plus) or READDIR reply body. */
static int dir_gen = -1; /* >= 0: send directory attributes, ctime = gen */

static void put_dir_attr(struct xdr_out *x)
{
	xdr_put_bool(x, dir_gen >= 0);
	if (dir_gen < 0)
		return;
	xdr_put_u32(x, 2); /* NF3DIR */
	xdr_put_u32(x, 0755);
	for (int k = 0; k < 3; k++)
		xdr_put_u32(x, 1);
	for (int k = 0; k < 5; k++)
		xdr_put_u64(x, 0);
	for (int k = 0; k < 4; k++)
		xdr_put_u32(x, 0);
	xdr_put_u32(x, (uint32_t)dir_gen); /* ctime */
	xdr_put_u32(x, 0);
}

static void encode_reply(struct xdr_out *x, bool plus, char **names,
                         const uint64_t *cookies, int n, bool eof,
                         uint32_t verf)
{
	xdr_out_init(x, 4096, 64u << 20);
	xdr_put_u32(x, 0); /* NFS3_OK */
	put_dir_attr(x);
	xdr_put_u32(x, 0);
	xdr_put_u32(x, verf);
	for (int i = 0; i < n; i++) {
		xdr_put_bool(x, true);
		xdr_put_u64(x, 1000 + cookies[i]);
		xdr_put_string(x, names[i]);
		xdr_put_u64(x, cookies[i]);
		if (plus) {
			xdr_put_bool(x, true); /* fattr3 */
			xdr_put_u32(x, 1);
			xdr_put_u32(x, 0644);
			for (int k = 0; k < 3; k++)
				xdr_put_u32(x, 1);
			xdr_put_u64(x, cookies[i] * 10); /* size */
			for (int k = 0; k < 4; k++)
				xdr_put_u64(x, 0);
			for (int k = 0; k < 6; k++)
				xdr_put_u32(x, 0);
			xdr_put_bool(x, true);
			xdr_put_opaque(x, "fh", 2);
		}
	}
	xdr_put_bool(x, false);
	xdr_put_bool(x, eof);
}

static struct rd_page *page_from(struct xdr_out *x, bool plus, int *rc)
{
	struct rd_page *p = calloc(1, sizeof(*p));
	p->buf = rpc_buf_alloc(x->len);
	memcpy(p->buf, x->buf, x->len);
	p->data = p->buf;
	p->dlen = x->len;
	*rc = nfs3_decode_readdir(p->buf, x->len, plus, p);
	xdr_out_free(x);
	return p;
}

/* Look every cookie 1..n up; returns how many were found where they
 * belong. */
static int rd_find_cookie_all(const struct rd_list *l, int n)
{
	int good = 0;
	for (int i = 1; i <= n; i++) {
		uint64_t idx;
		if (rd_list_find_cookie(l, (uint64_t)i, &idx) == 0 &&
		    idx == (uint64_t)i)
			good++;
	}
	return good;
}

static void test_decode(void)
{
	char *names[3] = {"a", "bb", "ccc"};
	uint64_t cookies[3] = {5, 9, 12};
	struct xdr_out x;
	int rc;

	encode_reply(&x, true, names, cookies, 3, true, 7);
	size_t full = x.len;
	uint8_t *copy = malloc(full);
	memcpy(copy, x.buf, full);
	struct rd_page *p = page_from(&x, true, &rc);
	CHECK(rc == 0 && p->n == 3 && p->eof, "READDIRPLUS reply decodes");
	CHECK(p->ents[1].name_len == 2 &&
	          !memcmp(p->data + p->ents[1].name_off, "bb", 2) &&
	          p->ents[1].cookie == 9 && p->ents[1].fileid == 1009,
	      "entry fields");
	struct snfs_stat st;
	CHECK(p->ents[2].attr_off &&
	          p->decode_attr(p->data, p->dlen, p->ents[2].attr_off, &st) ==
	              0 &&
	          st.size == 120 && st.type == SNFS_REG,
	      "entry attributes decode lazily");
	CHECK(p->ents[0].fh_len == 2, "entry handle");
	rd_page_free(p);

	/* every truncation of the reply fails cleanly */
	int bad = 0;
	for (size_t len = 0; len < full; len++) {
		struct rd_page q = {0};
		if (nfs3_decode_readdir(copy, len, true, &q) == 0)
			bad++;
		free(q.ents);
	}
	CHECK(bad == 0, "every truncated reply is refused");
	/* a huge name length */
	struct rd_page q = {0};
	copy[4 + 4 + 8 + 4 + 8 + 3] = 0xff; /* name length's low byte */
	copy[4 + 4 + 8 + 4 + 8] = 0x7f;
	CHECK(nfs3_decode_readdir(copy, full, true, &q) == -EPROTO,
	      "huge name length refused");
	free(q.ents);
	free(copy);

	char *slash[1] = {"a/b"};
	encode_reply(&x, false, slash, cookies, 1, true, 1);
	p = page_from(&x, false, &rc);
	CHECK(rc == -EPROTO, "a name holding '/' is refused");
	rd_page_free(p);

	/* a long list decodes without recursion */
	int n = 200000;
	char **many = malloc(sizeof(char *) * (size_t)n);
	uint64_t *ck = malloc(sizeof(uint64_t) * (size_t)n);
	for (int i = 0; i < n; i++) {
		many[i] = malloc(16);
		snprintf(many[i], 16, "f%06d", i);
		ck[i] = (uint64_t)i + 1;
	}
	encode_reply(&x, false, many, ck, n, true, 1);
	p = page_from(&x, false, &rc);
	CHECK(rc == 0 && p->n == (uint32_t)n, "200,000 entries in one reply");

	struct rd_list l;
	rd_list_init(&l);
	rd_list_append(&l, p);
	uint64_t idx;
	uint64_t probes = rd_find_cookie_probes;
	CHECK(l.monotonic && rd_list_find_cookie(&l, 150000, &idx) == 0 &&
	          idx == 150000,
	      "binary search by cookie");
	/* ceil(log2(200,000)) = 18: a scan would compare 150,000 */
	probes = rd_find_cookie_probes - probes;
	printf("# cookie 150000 of 200,000: %llu comparisons\n",
	       (unsigned long long)probes);
	CHECK(probes >= 1 && probes <= 18,
	      "binary search by cookie: at most 18 comparisons");
	probes = rd_find_cookie_probes;
	CHECK(rd_find_cookie_all(&l, n) == n,
	      "binary search by cookie: every cookie found at its place");
	probes = rd_find_cookie_probes - probes;
	CHECK(probes <= (uint64_t)n * 18,
	      "binary search by cookie: every cookie in O(log n)");
	probes = rd_find_cookie_probes;
	CHECK(rd_list_find_cookie(&l, 999999, &idx) == -ENOENT,
	      "unknown cookie");
	CHECK(rd_find_cookie_probes - probes <= 19,
	      "unknown cookie: O(log n) comparisons");
	rd_list_free(&l);
	for (int i = 0; i < n; i++)
		free(many[i]);
	free(many);
	free(ck);
}

static void test_list_pages(void)
{
	struct rd_list l;
	char *names[2] = {"x", "y"};
	struct xdr_out x;
	int rc;
	rd_list_init(&l);
	for (int pg = 0; pg < 5; pg++) {
		uint64_t ck[2] = {(uint64_t)pg * 2 + 1, (uint64_t)pg * 2 + 2};
		encode_reply(&x, false, names, ck, pg == 2 ? 0 : 2, pg == 4, 1);
		rd_list_append(&l, page_from(&x, false, &rc));
	}
	CHECK(l.nents == 8 && l.complete, "list of pages (one empty)");
	const struct rd_page *pg;
	CHECK(rd_list_get(&l, 5, &pg)->cookie == 8, "entry by index");
	uint64_t idx;
	CHECK(rd_list_find_cookie(&l, 7, &idx) == 0 && idx == 5,
	      "cookie across pages");
	rd_list_free(&l);

	/* 100,000 entries in 500 replies: the search crosses pages */
	rd_list_init(&l);
	char *many[200];
	for (int i = 0; i < 200; i++) {
		many[i] = malloc(16);
		snprintf(many[i], 16, "e%03d", i);
	}
	for (int pg = 0; pg < 500; pg++) {
		uint64_t ck[200];
		for (int i = 0; i < 200; i++)
			ck[i] = (uint64_t)pg * 200 + (uint64_t)i + 1;
		encode_reply(&x, false, many, ck, 200, pg == 499, 1);
		rd_list_append(&l, page_from(&x, false, &rc));
	}
	uint64_t probes = rd_find_cookie_probes;
	CHECK(l.monotonic && l.nents == 100000 &&
	          rd_list_find_cookie(&l, 77777, &idx) == 0 && idx == 77777,
	      "cookie in a list of 500 replies");
	probes = rd_find_cookie_probes - probes;
	CHECK(probes >= 1 && probes <= 17,
	      "cookie in a list of 500 replies: at most 17 comparisons");
	probes = rd_find_cookie_probes;
	CHECK(rd_find_cookie_all(&l, 100000) == 100000 &&
	          rd_find_cookie_probes - probes <= 100000u * 17,
	      "every cookie of 500 replies in O(log n)");
	rd_list_free(&l);
	for (int i = 0; i < 200; i++)
		free(many[i]);

	/* non-monotonic cookies fall back to a scan (which the counter
	 * sees: it counts what a linear lookup would cost) */
	rd_list_init(&l);
	uint64_t ck[2] = {50, 3};
	encode_reply(&x, false, names, ck, 2, true, 1);
	rd_list_append(&l, page_from(&x, false, &rc));
	probes = rd_find_cookie_probes;
	CHECK(!l.monotonic && rd_list_find_cookie(&l, 3, &idx) == 0 && idx == 2,
	      "hashed cookies: linear lookup");
	CHECK(rd_find_cookie_probes - probes == 2,
	      "hashed cookies: the scan's comparisons are counted");
	rd_list_free(&l);
}

/* ---- a mock server directory that changes mid-listing ---- */

#define MAXN 2000
static struct {
	char names[MAXN][16];
	uint64_t cookie[MAXN];
	bool alive[MAXN];
	int n, calls, gen, bad_cookies;
	int mutate_at;
	bool renumber; /* a change gives every entry a new cookie */
} dir;

static int m_getattr(struct snfs_ctx *c, const struct snfs_fh *fh,
                     struct snfs_stat *st)
{
	(void)c, (void)fh;
	memset(st, 0, sizeof(*st));
	st->type = SNFS_DIR;
	st->mode = 0755;
	st->nlink = 1;
	st->uid = st->gid = 1;
	st->ctime.tv_sec = dir.gen;
	st->change = (uint64_t)dir.gen * 1000000000u;
	return 0;
}

static void mutate(void)
{
	for (int i = 0; i < dir.n; i += 9) /* remove some, old and new */
		dir.alive[i] = false;
	for (int k = 0; k < 100 && dir.n < MAXN; k++, dir.n++) {
		snprintf(dir.names[dir.n], 16, "new%04d", k);
		dir.cookie[dir.n] = (uint64_t)dir.n + 1;
		dir.alive[dir.n] = true;
	}
	if (dir.renumber)
		for (int i = 0; i < dir.n; i++)
			dir.cookie[i] += 100000;
	dir.gen++;
}

static bool cookie_known(uint64_t cookie)
{
	for (int i = 0; i < dir.n; i++)
		if (dir.cookie[i] == cookie)
			return true;
	return false;
}

static int m_readdir(struct snfs_ctx *c, const struct snfs_fh *fh, bool plus,
                     uint64_t cookie, const uint8_t verf[8], uint32_t bufsize,
                     struct rd_page *page)
{
	(void)c, (void)fh, (void)bufsize;
	if (++dir.calls == dir.mutate_at)
		mutate();
	uint32_t v = (uint32_t)verf[4] << 24 | (uint32_t)verf[5] << 16 |
	             (uint32_t)verf[6] << 8 | verf[7];
	if (cookie != 0 && (v != (uint32_t)dir.gen || !cookie_known(cookie))) {
		dir.bad_cookies++;
		return -SNFS_EBADCOOKIE;
	}
	char *names[64];
	uint64_t ck[64];
	int k = 0, i = 0;
	while (i < dir.n && dir.cookie[i] <= cookie)
		i++;
	for (; i < dir.n && k < 64; i++)
		if (dir.alive[i]) {
			names[k] = dir.names[i];
			ck[k++] = dir.cookie[i];
		}
	struct xdr_out x;
	dir_gen = dir.gen;
	encode_reply(&x, plus, names, ck, k, i >= dir.n, (uint32_t)dir.gen);
	page->buf = rpc_buf_alloc(x.len);
	memcpy(page->buf, x.buf, x.len);
	page->data = page->buf;
	page->dlen = x.len;
	int rc = nfs3_decode_readdir(page->buf, x.len, plus, page);
	xdr_out_free(&x);
	return rc;
}

static const struct snfs_proto_ops dir_ops = {
    .name = "mockdir",
    .getattr = m_getattr,
    .readdir = m_readdir,
};

static void mock_dir(struct snfs_ctx *c, bool renumber)
{
	memset(c, 0, sizeof(*c));
	c->ops = &dir_ops;
	c->url_path = "";
	c->dirbuf = 8192;
	rd_cache_new(&c->rd, 1 << 20);
	memset(&dir, 0, sizeof(dir));
	dir.n = 1000;
	for (int i = 0; i < dir.n; i++) {
		snprintf(dir.names[i], 16, "f%04d", i);
		dir.cookie[i] = (uint64_t)i + 1;
		dir.alive[i] = true;
	}
	dir.mutate_at = 5;
	dir.renumber = renumber;
	dir_gen = 0;
}

/* List the mock directory, changing under us at its 5th READDIR; every
 * entry that survived, and every one added, exactly once. */
static void list_changing(struct snfs_ctx *c, const char *what)
{
	int *seen = calloc(MAXN, sizeof(int));
	struct snfs_dir *d;
	struct snfs_dirent de;
	int rc, dups = 0, unknown = 0;
	char name[160];

	snprintf(name, sizeof(name), "%s: opendir on the mock", what);
	CHECK(snfs_opendir(c, "", 0, &d) == 0, name);
	while ((rc = snfs_readdir(d, &de)) > 0) {
		int i;
		for (i = 0; i < dir.n && strcmp(dir.names[i], de.name); i++)
			;
		if (i == dir.n)
			unknown++;
		else if (seen[i]++)
			dups++;
	}
	snfs_closedir(d);
	snprintf(name, sizeof(name), "%s: listing ends cleanly", what);
	CHECK(rc == 0, name);
	snprintf(name, sizeof(name), "%s: no entry returned twice", what);
	CHECK(dups == 0 && unknown == 0, name);
	int missing = 0;
	for (int i = 0; i < 1000; i++)
		if (dir.alive[i] && !seen[i])
			missing++;
	snprintf(name, sizeof(name), "%s: every surviving entry returned",
	         what);
	CHECK(missing == 0, name);
	int added = 0;
	for (int i = 1000; i < dir.n; i++)
		added += seen[i];
	snprintf(name, sizeof(name), "%s: entries added meanwhile returned",
	         what);
	CHECK(added == 100, name);
	free(seen);
}

static void test_bad_cookie_restart(void)
{
	struct snfs_ctx c;
	struct snfs_dir *d;
	struct snfs_dirent de;

	/* cookies that stay valid across the change (snfsd's): only the
	 * verifier is refused, and the listing resumes with a fresh one */
	mock_dir(&c, false);
	list_changing(&c, "stable cookies");
	CHECK(dir.bad_cookies == 1, "stable cookies: the server refused once");
	CHECK(c.stats.readdir_resumes == 1 && c.stats.readdir_restarts == 0,
	      "stable cookies: resumed at the cookie (counters), no restart");
	rd_cache_free(c.rd);

	/* cookies renumbered by the change: refused with the new verifier
	 * too, so the listing starts over and skips what it returned */
	mock_dir(&c, true);
	list_changing(&c, "renumbered cookies");
	CHECK(dir.bad_cookies == 2,
	      "renumbered cookies: refused with the old and the new verifier");
	CHECK(c.stats.readdir_resumes == 0 && c.stats.readdir_restarts == 1,
	      "renumbered cookies: restarted from cookie 0 (counters)");
	rd_cache_free(c.rd);

	mock_dir(&c, false);
	dir.mutate_at = 5;

	list_changing(&c, "cache");
	/* an unchanged directory is listed again from the cache */
	dir.mutate_at = -1;
	int calls = dir.calls;
	snfs_opendir(&c, "", 0, &d);
	int n1 = 0;
	while (snfs_readdir(d, &de) > 0)
		n1++;
	snfs_closedir(d);
	calls = dir.calls - calls;
	snfs_opendir(&c, "", 0, &d);
	int n2 = 0, before = dir.calls;
	while (snfs_readdir(d, &de) > 0)
		n2++;
	snfs_closedir(d);
	CHECK(n1 == n2 && calls > 1 && dir.calls == before,
	      "second listing served from the cache, no READDIR");
	mutate();
	before = dir.calls;
	snfs_opendir(&c, "", 0, &d);
	while (snfs_readdir(d, &de) > 0)
		;
	snfs_closedir(d);
	CHECK(dir.calls > before, "a changed directory is read again");
	rd_cache_free(c.rd);
}

int main(void)
{
	test_decode();
	test_list_pages();
	test_bad_cookie_restart();
	TEST_EXIT();
}
