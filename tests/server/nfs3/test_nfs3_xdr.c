/* NFSv3 shared codecs: sattr3 decoding, fattr3/wcc encoding, names,
 * handles, and the errno -> nfsstat3 table. */
#include <errno.h>
#include <string.h>

#include "server/nfs3/nfs3_xdr.h"
#include "../../test.h"

/* A tiny big-endian writer for hand-built inputs and expectations. */
struct buf {
	uint8_t b[512];
	size_t n;
};

static void w32(struct buf *b, uint32_t v)
{
	b->b[b->n++] = v >> 24;
	b->b[b->n++] = v >> 16;
	b->b[b->n++] = v >> 8;
	b->b[b->n++] = v;
}

static void w64(struct buf *b, uint64_t v)
{
	w32(b, (uint32_t)(v >> 32));
	w32(b, (uint32_t)v);
}

static void wbytes(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
	while (b->n & 3)
		b->b[b->n++] = 0;
}

/* Encode a sattr3 whose fields are set per bit of `set` (mode, uid, gid,
 * size) and whose times use the given time_how values. */
static void enc_sattr(struct buf *b, unsigned set, uint32_t ahow, uint32_t mhow)
{
	w32(b, set & 1);
	if (set & 1)
		w32(b, 0100755); /* type bits must be dropped */
	w32(b, !!(set & 2));
	if (set & 2)
		w32(b, 1001);
	w32(b, !!(set & 4));
	if (set & 4)
		w32(b, 2002);
	w32(b, !!(set & 8));
	if (set & 8)
		w64(b, 0x123456789abcdefULL);
	w32(b, ahow);
	if (ahow == SET_TO_CLIENT_TIME) {
		w32(b, 111);
		w32(b, 222);
	}
	w32(b, mhow);
	if (mhow == SET_TO_CLIENT_TIME) {
		w32(b, 333);
		w32(b, 444);
	}
}

static bool sattr_matches(const struct bk_setattr *sa, unsigned set,
                          uint32_t ahow, uint32_t mhow)
{
	uint32_t want = 0;

	if (set & 1)
		want |= BK_SET_MODE;
	if (set & 2)
		want |= BK_SET_UID;
	if (set & 4)
		want |= BK_SET_GID;
	if (set & 8)
		want |= BK_SET_SIZE;
	if (ahow == SET_TO_SERVER_TIME)
		want |= BK_SET_ATIME_NOW;
	if (ahow == SET_TO_CLIENT_TIME)
		want |= BK_SET_ATIME;
	if (mhow == SET_TO_SERVER_TIME)
		want |= BK_SET_MTIME_NOW;
	if (mhow == SET_TO_CLIENT_TIME)
		want |= BK_SET_MTIME;
	if (sa->mask != want)
		return false;
	if ((set & 1) && sa->mode != 0755)
		return false;
	if ((set & 2) && sa->uid != 1001)
		return false;
	if ((set & 4) && sa->gid != 2002)
		return false;
	if ((set & 8) && sa->size != 0x123456789abcdefULL)
		return false;
	if (ahow == SET_TO_CLIENT_TIME &&
	    (sa->atime.tv_sec != 111 || sa->atime.tv_nsec != 222))
		return false;
	if (mhow == SET_TO_CLIENT_TIME &&
	    (sa->mtime.tv_sec != 333 || sa->mtime.tv_nsec != 444))
		return false;
	return true;
}

static void test_sattr(void)
{
	int good = 0, total = 0, short_ok = 1;

	for (unsigned set = 0; set < 16; set++)
		for (uint32_t a = 0; a < 3; a++)
			for (uint32_t m = 0; m < 3; m++) {
				struct buf b = {.n = 0};
				struct bk_setattr sa;
				struct xdr_in x;

				enc_sattr(&b, set, a, m);
				xdr_in_init(&x, b.b, b.n);
				total++;
				if (nfs3_get_sattr(&x, &sa) && x.pos == b.n &&
				    sattr_matches(&sa, set, a, m))
					good++;
				/* every truncation must fail */
				for (size_t cut = 0; cut < b.n; cut++) {
					xdr_in_init(&x, b.b, cut);
					if (nfs3_get_sattr(&x, &sa))
						short_ok = 0;
				}
			}
	CHECK(good == total, "sattr3: all 144 set_it/time_how combinations");
	CHECK(short_ok, "sattr3: every truncation fails");

	struct buf b = {.n = 0};
	struct bk_setattr sa;
	struct xdr_in x;
	enc_sattr(&b, 0, 3, 0);
	xdr_in_init(&x, b.b, b.n);
	CHECK(!nfs3_get_sattr(&x, &sa), "sattr3: time_how 3 rejected");
	b.n = 0;
	w32(&b, 2); /* bool neither 0 nor 1 */
	w32(&b, 0);
	xdr_in_init(&x, b.b, b.n);
	CHECK(!nfs3_get_sattr(&x, &sa), "sattr3: bool 2 rejected");
	b.n = 0;
	enc_sattr(&b, 0, SET_TO_CLIENT_TIME, 0);
	b.b[b.n - 8 + 0] = 0x3b; /* nseconds 0x3b9aca00 = 1e9 */
	b.b[b.n - 8 + 1] = 0x9a;
	b.b[b.n - 8 + 2] = 0xca;
	b.b[b.n - 8 + 3] = 0x00;
	xdr_in_init(&x, b.b, b.n);
	CHECK(!nfs3_get_sattr(&x, &sa), "sattr3: nseconds >= 1e9 rejected");
}

static void test_fattr(void)
{
	struct bk_attr a = {
	    .type = BK_CHR,
	    .mode = 0104644, /* only 07777 goes out */
	    .nlink = 3,
	    .uid = 1000,
	    .gid = 100,
	    .size = 0x0102030405060708ULL,
	    .used = 0x1112131415161718ULL,
	    .rdev_major = 8,
	    .rdev_minor = 17,
	    .fsid = 0xdeadbeef, /* the backend's: must NOT go out */
	    .fileid = 0x2122232425262728ULL,
	    .atime = {.tv_sec = 1700000001, .tv_nsec = 11},
	    .mtime = {.tv_sec = 1700000002, .tv_nsec = 22},
	    .ctime = {.tv_sec = 1700000003, .tv_nsec = 999999999},
	};
	struct buf want = {.n = 0};
	struct xdr_out out;

	w32(&want, 4);
	w32(&want, 04644);
	w32(&want, 3);
	w32(&want, 1000);
	w32(&want, 100);
	w64(&want, 0x0102030405060708ULL);
	w64(&want, 0x1112131415161718ULL);
	w32(&want, 8);
	w32(&want, 17);
	w64(&want, 42); /* export fsid */
	w64(&want, 0x2122232425262728ULL);
	w32(&want, 1700000001);
	w32(&want, 11);
	w32(&want, 1700000002);
	w32(&want, 22);
	w32(&want, 1700000003);
	w32(&want, 999999999);
	CHECK(want.n == NFS3_FATTR_SIZE, "fattr3: 84 bytes expected");

	xdr_out_init(&out, 256, 4096);
	CHECK(nfs3_put_fattr(&out, &a, 42), "fattr3: encodes");
	CHECK(out.len == NFS3_FATTR_SIZE, "fattr3: length 84");
	CHECK(out.len == want.n && memcmp(out.buf, want.b, want.n) == 0,
	      "fattr3: byte-by-byte layout");

	xdr_out_truncate(&out, 0);
	nfs3_put_post_op_attr(&out, &a, 42);
	CHECK(out.len == 88 && out.buf[3] == 1 &&
	          memcmp(out.buf + 4, want.b, want.n) == 0,
	      "post_op_attr: TRUE + fattr3");
	xdr_out_truncate(&out, 0);
	nfs3_put_post_op_attr(&out, NULL, 42);
	CHECK(out.len == 4 && out.buf[3] == 0, "post_op_attr: FALSE");

	struct bk_wcc_attr w = {.size = 77,
	                        .mtime = {.tv_sec = 5, .tv_nsec = 6},
	                        .ctime = {.tv_sec = 7, .tv_nsec = 8}};
	struct buf ww = {.n = 0};
	w32(&ww, 1);
	w64(&ww, 77);
	w32(&ww, 5);
	w32(&ww, 6);
	w32(&ww, 7);
	w32(&ww, 8);
	w32(&ww, 1);
	wbytes(&ww, want.b, want.n);
	xdr_out_truncate(&out, 0);
	nfs3_put_wcc(&out, &w, &a, 42);
	CHECK(out.len == ww.n && memcmp(out.buf, ww.b, ww.n) == 0,
	      "wcc_data: pre_op_attr + post_op_attr layout");
	xdr_out_truncate(&out, 0);
	nfs3_put_wcc(&out, NULL, NULL, 42);
	CHECK(out.len == 8 && out.buf[3] == 0 && out.buf[7] == 0,
	      "wcc_data: both absent");

	uint8_t fhb[] = {1, 2, 3, 4, 5};
	struct nfs_fh fh = {.len = 5};
	memcpy(fh.data, fhb, 5);
	xdr_out_truncate(&out, 0);
	nfs3_put_post_op_fh(&out, &fh);
	CHECK(out.len == 16 && out.buf[3] == 1 && out.buf[7] == 5 &&
	          out.buf[8] == 1 && out.buf[12] == 5 && out.buf[13] == 0,
	      "post_op_fh3: TRUE, opaque, padding");
	xdr_out_free(&out);
}

static void test_names(void)
{
	struct buf b = {.n = 0};
	struct nfs3_name n;
	struct nfs3_fh fh;
	struct xdr_in x;
	char longname[300];

	w32(&b, 5);
	wbytes(&b, "hello", 5);
	xdr_in_init(&x, b.b, b.n);
	CHECK(nfs3_get_name(&x, &n) && n.len == 5 && !strcmp(n.s, "hello") &&
	          nfs3_name_check(&n) == NFS3_OK,
	      "filename3: plain name");

	memset(longname, 'a', sizeof(longname));
	b.n = 0;
	w32(&b, 256);
	wbytes(&b, longname, 256);
	xdr_in_init(&x, b.b, b.n);
	CHECK(nfs3_get_name(&x, &n) && n.too_long &&
	          nfs3_name_check(&n) == NFS3ERR_NAMETOOLONG,
	      "filename3: 256 bytes decodes, NAMETOOLONG");
	b.n = 0;
	w32(&b, 255);
	wbytes(&b, longname, 255);
	xdr_in_init(&x, b.b, b.n);
	CHECK(nfs3_get_name(&x, &n) && nfs3_name_check(&n) == NFS3_OK,
	      "filename3: 255 bytes fine");

	b.n = 0;
	w32(&b, 3);
	wbytes(&b, "a/b", 3);
	xdr_in_init(&x, b.b, b.n);
	CHECK(nfs3_get_name(&x, &n) && nfs3_name_check(&n) == NFS3ERR_ACCES,
	      "filename3: '/' is ACCES");
	b.n = 0;
	w32(&b, 3);
	wbytes(&b, "a\0b", 3);
	xdr_in_init(&x, b.b, b.n);
	CHECK(nfs3_get_name(&x, &n) && nfs3_name_check(&n) == NFS3ERR_ACCES,
	      "filename3: NUL is ACCES");
	b.n = 0;
	w32(&b, 0);
	xdr_in_init(&x, b.b, b.n);
	CHECK(nfs3_get_name(&x, &n) && nfs3_name_check(&n) == NFS3ERR_ACCES,
	      "filename3: empty is ACCES");
	b.n = 0;
	w32(&b, 2);
	wbytes(&b, "..", 2);
	xdr_in_init(&x, b.b, b.n);
	CHECK(nfs3_get_name(&x, &n) && nfs3_name_is_dot(&n),
	      "filename3: '..' is a dot name");
	b.n = 0;
	w32(&b, 100); /* length past the end */
	xdr_in_init(&x, b.b, b.n);
	CHECK(!nfs3_get_name(&x, &n), "filename3: short input fails");

	b.n = 0;
	w32(&b, 65);
	wbytes(&b, longname, 65);
	xdr_in_init(&x, b.b, b.n);
	CHECK(!nfs3_get_fh(&x, &fh), "nfs_fh3: 65 bytes rejected");
	b.n = 0;
	w32(&b, 64);
	wbytes(&b, longname, 64);
	xdr_in_init(&x, b.b, b.n);
	CHECK(nfs3_get_fh(&x, &fh) && fh.len == 64, "nfs_fh3: 64 bytes ok");
}

static void test_errno(void)
{
	static const struct {
		int err;
		uint32_t st;
	} t[] = {
	    {0, NFS3_OK},
	    {EPERM, NFS3ERR_PERM},
	    {ENOENT, NFS3ERR_NOENT},
	    {EIO, NFS3ERR_IO},
	    {ENXIO, NFS3ERR_NXIO},
	    {EACCES, NFS3ERR_ACCES},
	    {EEXIST, NFS3ERR_EXIST},
	    {EXDEV, NFS3ERR_XDEV},
	    {ENODEV, NFS3ERR_NODEV},
	    {ENOTDIR, NFS3ERR_NOTDIR},
	    {EISDIR, NFS3ERR_ISDIR},
	    {EINVAL, NFS3ERR_INVAL},
	    {EFBIG, NFS3ERR_FBIG},
	    {ENOSPC, NFS3ERR_NOSPC},
	    {EROFS, NFS3ERR_ROFS},
	    {EMLINK, NFS3ERR_MLINK},
	    {ENAMETOOLONG, NFS3ERR_NAMETOOLONG},
	    {ENOTEMPTY, NFS3ERR_NOTEMPTY},
	    {EDQUOT, NFS3ERR_DQUOT},
	    {ESTALE, NFS3ERR_STALE},
	    {EBADF, NFS3ERR_BADHANDLE},
	    {EOPNOTSUPP, NFS3ERR_NOTSUPP},
	    {ENOMEM, NFS3ERR_SERVERFAULT},
	    {EPROTO, NFS3ERR_SERVERFAULT},
	};
	int good = 0, n = (int)(sizeof(t) / sizeof(t[0]));

	for (int i = 0; i < n; i++) {
		uint32_t neg = nfs3_stat_from_errno(-t[i].err);
		uint32_t pos = nfs3_stat_from_errno(t[i].err);
		if (neg == t[i].st && pos == t[i].st)
			good++;
		else
			printf("# errno %d -> %u, want %u\n", t[i].err, neg,
			       t[i].st);
	}
	CHECK(good == n, "errno -> nfsstat3 table");
}

int main(void)
{
	test_sattr();
	test_fattr();
	test_names();
	test_errno();
	TEST_EXIT();
}
