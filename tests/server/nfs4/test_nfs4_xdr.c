/* NFSv4 codec helpers (src/server/nfs4/xdr4.c): component names, bitmaps,
 * stateids, errno mapping, every input truncated at every length. */
#include <errno.h>
#include <string.h>

#include "../../test.h"
#include "server/nfs4/nfs4.h"

static uint32_t name_of(const char *s, uint32_t len, char out[BK_NAME_MAX + 1])
{
	struct xdr_out x;
	struct xdr_in in;
	uint32_t st;

	xdr_out_init(&x, 1024, 1 << 16);
	xdr_put_opaque(&x, s, len);
	xdr_in_init(&in, x.buf, x.len);
	st = nfs4_get_name(&in, out);
	xdr_out_free(&x);
	return st;
}

static void test_names(void)
{
	char out[BK_NAME_MAX + 1], longname[300];

	CHECK(name_of("abc", 3, out) == NFS4_OK && !strcmp(out, "abc"),
	      "name: plain");
	CHECK(name_of("", 0, out) == NFS4ERR_INVAL, "name: empty is INVAL");
	CHECK(name_of(".", 1, out) == NFS4ERR_BADNAME, "name: . is BADNAME");
	CHECK(name_of("..", 2, out) == NFS4ERR_BADNAME, "name: .. is BADNAME");
	CHECK(name_of("a/b", 3, out) == NFS4ERR_BADNAME,
	      "name: a slash is BADNAME");
	CHECK(name_of("a\0b", 3, out) == NFS4ERR_BADNAME,
	      "name: a NUL is BADNAME");
	memset(longname, 'x', sizeof(longname));
	CHECK(name_of(longname, 255, out) == NFS4_OK && strlen(out) == 255,
	      "name: 255 bytes");
	CHECK(name_of(longname, 256, out) == NFS4ERR_NAMETOOLONG,
	      "name: 256 bytes is NAMETOOLONG");
	CHECK(name_of("...", 3, out) == NFS4_OK, "name: ... is a name");
}

static void test_bitmaps(void)
{
	struct xdr_out x;
	struct xdr_in in;
	uint32_t bm[3], back[3];

	xdr_out_init(&x, 1024, 1 << 16);
	xdr_put_u32(&x, 5);
	for (uint32_t i = 0; i < 5; i++)
		xdr_put_u32(&x, 0x11111111u * (i + 1));
	xdr_put_u32(&x, 0xabcdef01);
	xdr_in_init(&in, x.buf, x.len);
	CHECK(nfs4_get_bitmap(&in, bm) && bm[0] == 0x11111111 &&
	          bm[2] == 0x33333333,
	      "bitmap of 5 words: first 3 kept");
	CHECK(xdr_get_u32(&in, &back[0]) && back[0] == 0xabcdef01,
	      "bitmap of 5 words: cursor after all 5");
	xdr_out_free(&x);

	xdr_out_init(&x, 1024, 1 << 16);
	xdr_put_u32(&x, 1000);
	xdr_in_init(&in, x.buf, x.len);
	CHECK(!nfs4_get_bitmap(&in, bm), "bitmap of 1000 words refused");
	xdr_out_free(&x);

	bm[0] = 1;
	bm[1] = 0;
	bm[2] = 0;
	xdr_out_init(&x, 1024, 1 << 16);
	nfs4_put_bitmap(&x, bm);
	CHECK(x.len == 8, "bitmap encodes without trailing zero words");
	bm[0] = 0;
	bm[2] = 4;
	xdr_out_truncate(&x, 0);
	nfs4_put_bitmap(&x, bm);
	xdr_in_init(&in, x.buf, x.len);
	CHECK(x.len == 16 && nfs4_get_bitmap(&in, back) && back[2] == 4 &&
	          back[0] == 0,
	      "bitmap round trip with word 2");
	xdr_out_free(&x);
}

static void test_stateid_and_truncation(void)
{
	struct nfs4_stateid s = {.seqid = 7}, t;
	struct xdr_out x;
	struct xdr_in in;
	int bad = 0;

	memcpy(s.other, "abcdefghijkl", 12);
	xdr_out_init(&x, 1024, 1 << 16);
	nfs4_put_stateid(&x, &s);
	xdr_in_init(&in, x.buf, x.len);
	CHECK(x.len == 16 && nfs4_get_stateid(&in, &t) && t.seqid == 7 &&
	          !memcmp(t.other, s.other, 12),
	      "stateid round trip");
	for (size_t n = 0; n < x.len; n++) {
		xdr_in_init(&in, x.buf, n);
		if (nfs4_get_stateid(&in, &t))
			bad++;
	}
	CHECK(bad == 0, "stateid cut at every length fails to decode");
	xdr_out_free(&x);
}

static void test_errno(void)
{
	CHECK(nfs4_errno(0) == NFS4_OK, "errno 0 is OK");
	CHECK(nfs4_errno(-ENOENT) == NFS4ERR_NOENT, "ENOENT");
	CHECK(nfs4_errno(-ESTALE) == NFS4ERR_STALE, "ESTALE");
	CHECK(nfs4_errno(-EBADF) == NFS4ERR_BADHANDLE, "EBADF is BADHANDLE");
	CHECK(nfs4_errno(-ENOTEMPTY) == NFS4ERR_NOTEMPTY, "ENOTEMPTY");
	CHECK(nfs4_errno(-EROFS) == NFS4ERR_ROFS, "EROFS");
	CHECK(nfs4_errno(-EAGAIN) == NFS4ERR_DELAY, "EAGAIN is DELAY");
	CHECK(nfs4_errno(-EHWPOISON) == NFS4ERR_IO, "unknown errno is IO");
}

int main(void)
{
	test_names();
	test_bitmaps();
	test_stateid_and_truncation();
	test_errno();
	TEST_EXIT();
}
