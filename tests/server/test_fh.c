/* File handles: SipHash vectors, round trip, tamper and length checks,
 * stale exports, other keys, and nfs_req_resolve's admission rules. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "server/exports.h"
#include "server/fh.h"
#include "server/siphash.h"
#include "server/snfsd.h"

static char tmp[256];

static void test_siphash(void)
{
	uint8_t key[16], msg[64];

	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	/* The paper's appendix A example: 15 bytes 00..0e. */
	CHECK(siphash24(key, msg, 15) == 0xa129ca6149be45e5ULL,
	      "siphash paper example");
	/* First and last of the reference vectors (message 00..len-1). */
	CHECK(siphash24(key, msg, 0) == 0x726fdb47dd0e0e31ULL,
	      "siphash empty message");
	CHECK(siphash24(key, msg, 63) == 0x958a324ceb064572ULL,
	      "siphash 63-byte message");
	CHECK(siphash24(key, msg, 8) == 0x93f5f5799a932462ULL,
	      "siphash 8-byte message");
	/* Words are loaded unaligned: a handle sits anywhere in a call. */
	uint8_t off[80];
	memcpy(off + 3, msg, 63);
	CHECK(siphash24(key, off + 3, 63) == 0x958a324ceb064572ULL &&
	          siphash24(key, off + 3, 15) == 0xa129ca6149be45e5ULL,
	      "siphash of an unaligned message");
}

static struct sockaddr_storage ip(const char *a, uint16_t port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (void *)&ss;

	memset(&ss, 0, sizeof(ss));
	inet_pton(AF_INET, a, &s4->sin_addr);
	s4->sin_family = AF_INET;
	s4->sin_port = htons(port);
	return ss;
}

static void setup_server(struct snfsd *s)
{
	char a[300], b[300], specs[2][400];
	const char *sp[2] = {specs[0], specs[1]};
	char err[512];

	snprintf(tmp, sizeof(tmp), "/tmp/snfs-test-fh.XXXXXX");
	if (!mkdtemp(tmp))
		exit(1);
	snprintf(a, sizeof(a), "%s/a", tmp);
	snprintf(b, sizeof(b), "%s/b", tmp);
	mkdir(a, 0755);
	mkdir(b, 0755);
	snprintf(specs[0], sizeof(specs[0]),
	         "%s:127.0.0.1(rw) 10.0.0.0/8(ro,secure)", a);
	snprintf(specs[1], sizeof(specs[1]), "%s:*(ro,secure,all_squash)", b);
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->exports_lock, NULL);
	for (int i = 0; i < 16; i++)
		s->fh_key[i] = (uint8_t)(0xa0 + i);
	if (exports_load(NULL, sp, 2, &s->exports, err, sizeof(err))) {
		printf("not ok - setup: %s\n", err);
		exit(1);
	}
}

static void test_handles(struct snfsd *s)
{
	struct export *ex = &s->exports->v[0], *got;
	struct bk_handle bh = {.len = 12}, out;
	struct nfs_fh fh, bad;
	int rc, flips = 0, nflip = 0;

	for (uint32_t i = 0; i < bh.len; i++)
		bh.data[i] = (uint8_t)(i * 7 + 1);
	CHECK(fh_make(s, ex, &bh, &fh) == 0, "fh_make");
	CHECK(fh.len == 10 + 12 + 8 && fh.len <= NFS_FH_MAX, "handle length");
	rc = fh_parse(s, s->exports, fh.data, fh.len, &got, &out);
	CHECK(rc == 0 && got == ex && out.len == bh.len &&
	          !memcmp(out.data, bh.data, bh.len),
	      "round trip");

	/* Every single-bit flip anywhere in the handle is caught. */
	for (uint32_t i = 0; i < fh.len * 8; i++) {
		bad = fh;
		bad.data[i / 8] ^= (uint8_t)(1u << (i % 8));
		nflip++;
		if (fh_parse(s, s->exports, bad.data, bad.len, &got, &out) ==
		    -EBADF)
			flips++;
	}
	CHECK(flips == nflip, "every single-bit flip gives -EBADF");

	int shorts = 0;
	for (uint32_t n = 0; n < fh.len; n++)
		if (fh_parse(s, s->exports, fh.data, n, &got, &out) == -EBADF)
			shorts++;
	CHECK(shorts == (int)fh.len, "every truncation gives -EBADF");
	bad = fh;
	bad.data[fh.len] = 0;
	CHECK(fh_parse(s, s->exports, bad.data, fh.len + 1, &got, &out) ==
	          -EBADF,
	      "one extra byte gives -EBADF");
	uint8_t big[NFS_FH_MAX + 8] = {0};
	memcpy(big, fh.data, fh.len);
	CHECK(fh_parse(s, s->exports, big, NFS_FH_MAX + 1, &got, &out) ==
	          -EBADF,
	      "over 64 bytes gives -EBADF");

	/* Largest backend handle fits. */
	struct bk_handle maxh = {.len = BK_HANDLE_MAX};
	memset(maxh.data, 0x5a, sizeof(maxh.data));
	CHECK(fh_make(s, ex, &maxh, &fh) == 0 && fh.len <= NFS_FH_MAX &&
	          fh_parse(s, s->exports, fh.data, fh.len, &got, &out) == 0 &&
	          out.len == BK_HANDLE_MAX,
	      "BK_HANDLE_MAX handle round trip");
	struct bk_handle toobig = {.len = BK_HANDLE_MAX + 1};
	CHECK(fh_make(s, ex, &toobig, &fh) == -EINVAL,
	      "over-long backend handle refused");

	/* A genuine handle of an export that is gone: stale. */
	struct export gone = *ex;
	gone.fsid = ex->fsid ^ 0x5555;
	fh_make(s, &gone, &bh, &fh);
	CHECK(fh_parse(s, s->exports, fh.data, fh.len, &got, &out) == -ESTALE,
	      "unknown fsid gives -ESTALE");

	/* Another server key: forged. */
	struct snfsd other = *s;
	other.fh_key[3] ^= 1;
	fh_make(&other, ex, &bh, &fh);
	CHECK(fh_parse(s, s->exports, fh.data, fh.len, &got, &out) == -EBADF,
	      "handle under another key gives -EBADF");
}

/* The export's path tag in handles, noted when a table is installed
 * (fh_prepare_table) rather than hashed per call: the same handles as
 * before, an export that reuses a gone export's fsid under another path
 * still makes its handles stale, and a server with another key sharing
 * the table does not use the noted tags. */
static void test_tags(struct snfsd *s)
{
	struct export *a = &s->exports->v[0], *b = &s->exports->v[1], *got;
	struct bk_handle bh = {.len = 6, .data = {9, 8, 7, 6, 5, 4}}, out;
	struct nfs_fh before, after, fo, fp;
	struct snfsd other = *s;

	/* /a's fsid taken by an export of /b's path (say /a unexported and
	 * /b given its fsid= on SIGHUP) */
	struct export imposter = *a;
	imposter.path = b->path;
	struct export_table moved = {.v = &imposter, .n = 1};

	fh_make(s, a, &bh, &before);
	CHECK(fh_parse(s, &moved, before.data, before.len, &got, &out) ==
	          -ESTALE,
	      "tags: fsid reused under another path gives -ESTALE");
	fh_prepare_table(s, &moved);
	CHECK(imposter.fh_tag_set &&
	          fh_parse(s, &moved, before.data, before.len, &got, &out) ==
	              -ESTALE,
	      "tags: noted, still -ESTALE");

	fh_prepare_table(s, s->exports);
	fh_make(s, a, &bh, &after);
	CHECK(a->fh_tag_set && after.len == before.len &&
	          memcmp(after.data, before.data, before.len) == 0,
	      "tags: noted tags make the same handles");
	CHECK(fh_parse(s, s->exports, before.data, before.len, &got, &out) ==
	              0 &&
	          got == a && out.len == bh.len,
	      "tags: a handle made before parses after");

	/* its handles carry its own tag, as from a table never prepared */
	struct export plain = *a;
	plain.fh_tag_set = false;
	other.fh_key[0] ^= 0x40;
	CHECK(fh_make(&other, a, &bh, &fo) == 0 &&
	          fh_make(&other, &plain, &bh, &fp) == 0 &&
	          memcmp(fo.data, fp.data, fo.len) == 0 &&
	          fh_parse(&other, s->exports, fo.data, fo.len, &got, &out) ==
	              0 &&
	          got == a,
	      "tags: another key sharing the table hashes its own tags");
	CHECK(fh_parse(&other, s->exports, before.data, before.len, &got,
	               &out) == -EBADF,
	      "tags: and refuses this key's handles");
}

static void make_call(struct rpc_call *c, struct snfsd *s, const char *addr,
                      uint16_t port, uint32_t uid)
{
	memset(c, 0, sizeof(*c));
	c->ctx = s;
	c->peer = ip(addr, port);
	c->peer_len = sizeof(struct sockaddr_in);
	c->cred.flavor = RPC_AUTH_SYS;
	c->cred.uid = uid;
	c->cred.gid = uid;
}

static void test_resolve(struct snfsd *s)
{
	struct export *a = &s->exports->v[0], *b = &s->exports->v[1];
	struct bk_handle bh = {.len = 4, .data = {1, 2, 3, 4}}, bh2;
	struct nfs_fh fa, fb;
	struct rpc_call call;
	struct nfs_req r;
	int rc;

	fh_make(s, a, &bh, &fa);
	fh_make(s, b, &bh, &fb);

	make_call(&call, s, "127.0.0.1", 40000, 0);
	rc = nfs_req_resolve(&call, fa.data, fa.len, &r);
	CHECK(rc == 0 && r.ex == a && r.rw && r.cred.uid == 65534 &&
	          r.bh.len == 4 && r.tab == s->exports,
	      "resolve: admitted, rw, root squashed");
	CHECK(atomic_load(&s->exports->refs) == 2, "resolve holds the table");
	CHECK(nfs_req_resolve2(&r, fa.data, fa.len, &bh2) == 0,
	      "resolve2 same export");
	CHECK(nfs_req_resolve2(&r, fb.data, fb.len, &bh2) == -EXDEV,
	      "resolve2 other export gives -EXDEV");
	fa.data[7] ^= 1;
	CHECK(nfs_req_resolve2(&r, fa.data, fa.len, &bh2) == -EBADF,
	      "resolve2 bad handle gives -EBADF");
	fa.data[7] ^= 1;
	nfs_req_done(&r);
	CHECK(atomic_load(&s->exports->refs) == 1 && r.tab == NULL,
	      "done releases the table");

	make_call(&call, s, "10.1.2.3", 700, 1000);
	rc = nfs_req_resolve(&call, fa.data, fa.len, &r);
	CHECK(rc == 0 && !r.rw && r.cred.uid == 1000,
	      "resolve: second rule ro");
	nfs_req_done(&r);

	make_call(&call, s, "10.1.2.3", 2000, 1000);
	rc = nfs_req_resolve(&call, fa.data, fa.len, &r);
	CHECK(rc == -EACCES, "secure rule refuses port >= 1024");
	nfs_req_done(&r);

	make_call(&call, s, "192.168.0.1", 700, 1000);
	rc = nfs_req_resolve(&call, fa.data, fa.len, &r);
	CHECK(rc == -EACCES, "no matching rule gives -EACCES");
	nfs_req_done(&r);

	make_call(&call, s, "192.168.0.1", 700, 1000);
	rc = nfs_req_resolve(&call, fb.data, fb.len, &r);
	CHECK(rc == 0 && r.cred.uid == 65534 && !r.rw,
	      "all_squash export squashes everyone");
	nfs_req_done(&r);

	fb.data[fb.len - 1] ^= 0x80;
	rc = nfs_req_resolve(&call, fb.data, fb.len, &r);
	CHECK(rc == -EBADF, "resolve: forged handle gives -EBADF");
	nfs_req_done(&r);
	CHECK(atomic_load(&s->exports->refs) == 1,
	      "failed resolves release the table too");

	struct snfsd empty = *s;
	empty.exports = NULL;
	make_call(&call, &empty, "127.0.0.1", 700, 0);
	rc = nfs_req_resolve(&call, fb.data, fb.len, &r);
	CHECK(rc == -EBADF || rc == -ESTALE, "no table: refused");
	nfs_req_done(&r);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct snfsd s;
	char cmd[400];

	test_siphash();
	setup_server(&s);
	test_handles(&s);
	test_tags(&s);
	test_resolve(&s);
	exports_replace(&s, NULL);
	pthread_mutex_destroy(&s.exports_lock);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		printf("# cleanup failed\n");
	TEST_EXIT();
}
