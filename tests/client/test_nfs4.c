/* NFSv4 client codecs (owner strings, fattr4, READDIR4 replies, result
 * headers) on crafted and truncated input, and, against a real server
 * (SNFS_TEST_URL, set by tests/client/t_snfs_v4.sh), the library over
 * NFSv4.1/4.2: write then read without READ, READ_PLUS segments, SEEK,
 * ALLOCATE/DEALLOCATE, COPY, and the name operations' errors. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/nfs4.h"
#include "client/nfs4_xdr.h"
#include "cto.h"
#include "test.h"

/* ---- codecs ---- */

static void test_owner(void)
{
	CHECK(nfs4_owner_to_id((const uint8_t *)"1000", 4, false) == 1000,
	      "owner: numeric");
	CHECK(nfs4_owner_to_id((const uint8_t *)"root@localdomain", 16,
	                       false) == 0,
	      "owner: user@domain through passwd");
	CHECK(nfs4_owner_to_id((const uint8_t *)"root@x", 6, true) == 0,
	      "owner_group: group@domain through group");
	CHECK(nfs4_owner_to_id((const uint8_t *)"nosuchuser-zz@x", 15, false) ==
	          65534,
	      "owner: unknown name maps to nobody");
	CHECK(nfs4_owner_to_id((const uint8_t *)"12@dom", 6, false) == 12,
	      "owner: numeric with a domain");
	CHECK(nfs4_owner_to_id((const uint8_t *)"a\0b", 3, false) == 65534,
	      "owner: embedded NUL refused");
	CHECK(nfs4_owner_to_id((const uint8_t *)"", 0, false) == 65534,
	      "owner: empty");
}

/* A fattr4 with type, size, mode, owner "1000", owner_group "bin@x". */
static void put_fattr(struct xdr_out *x, uint32_t type, uint64_t size)
{
	struct nfs4_bitmap b = {0};
	bm_set(&b, FA4_TYPE);
	bm_set(&b, FA4_SIZE);
	bm_set(&b, FA4_FILEID);
	bm_set(&b, FA4_MODE);
	bm_set(&b, FA4_OWNER);
	bm_set(&b, FA4_OWNER_GROUP);
	bm_set(&b, FA4_TIME_MODIFY);
	nfs4_put_bitmap(x, &b);
	size_t lp = x->len;
	xdr_put_u32(x, 0);
	xdr_put_u32(x, type);
	xdr_put_u64(x, size);
	xdr_put_u64(x, 77);
	xdr_put_u32(x, 0640);
	xdr_put_string(x, "1000");
	xdr_put_string(x, "bin@x");
	xdr_put_u64(x, 1234);
	xdr_put_u32(x, 5);
	xdr_patch_u32(x, lp, (uint32_t)(x->len - lp - 4));
}

static void test_fattr(void)
{
	struct xdr_out o;
	struct xdr_in x;
	struct nfs4_fattr fa;

	xdr_out_init(&o, 256, 4096);
	put_fattr(&o, 1, 4096);
	xdr_in_init(&x, o.buf, o.len);
	CHECK(nfs4_get_fattr(&x, &fa) && !x.err, "fattr: decodes");
	CHECK(fa.st.type == SNFS_REG && fa.st.size == 4096 &&
	          fa.st.mode == 0640 && fa.st.uid == 1000 &&
	          fa.st.fileid == 77 && fa.st.mtime.tv_sec == 1234 &&
	          fa.st.mtime.tv_nsec == 5,
	      "fattr: values");
	int bad = 0;
	for (size_t n = 0; n < o.len; n++) {
		xdr_in_init(&x, o.buf, n);
		if (nfs4_get_fattr(&x, &fa))
			bad++;
	}
	CHECK(bad == 0, "fattr: every truncation fails");
	/* an attribute we cannot skip (acl) in the bitmap */
	struct xdr_out a;
	xdr_out_init(&a, 64, 4096);
	struct nfs4_bitmap b = {0};
	bm_set(&b, 12);
	nfs4_put_bitmap(&a, &b);
	xdr_put_u32(&a, 4);
	xdr_put_u32(&a, 0);
	xdr_in_init(&x, a.buf, a.len);
	CHECK(!nfs4_get_fattr(&x, &fa), "fattr: unknown attribute refused");
	xdr_out_free(&a);
	xdr_out_free(&o);
}

static void put_entry(struct xdr_out *x, uint64_t cookie, const char *name)
{
	xdr_put_bool(x, true);
	xdr_put_u64(x, cookie);
	xdr_put_string(x, name);
	put_fattr(x, 1, 10);
}

static void test_readdir(void)
{
	struct xdr_out o;
	struct xdr_in x;
	uint8_t verf[8] = {1, 2, 3, 4, 5, 6, 7, 8};

	xdr_out_init(&o, 4096, 1 << 20);
	xdr_put_fixed(&o, verf, 8);
	char name[32];
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "file-%03d", i);
		put_entry(&o, 3 + (uint64_t)i, name);
	}
	xdr_put_bool(&o, false);
	xdr_put_bool(&o, true);
	struct rd_page p = {0};
	xdr_in_init(&x, o.buf, o.len);
	int rc = nfs4_decode_readdir(&x, o.buf, true, &p);
	CHECK(rc == 0 && p.n == 100 && p.eof && !memcmp(p.verf, verf, 8),
	      "readdir4: 100 entries, eof, verifier");
	CHECK(p.n == 100 && p.ents[42].cookie == 45 &&
	          !memcmp(o.buf + p.ents[42].name_off, "file-042", 8) &&
	          p.ents[42].fileid == 77,
	      "readdir4: an entry's cookie, name and fileid");
	struct snfs_stat st;
	CHECK(p.n == 100 && p.ents[7].attr_off &&
	          nfs4_decode_attr_at(o.buf, o.len, p.ents[7].attr_off, &st) ==
	              0 &&
	          st.size == 10 && st.type == SNFS_REG,
	      "readdir4: attributes of an entry");
	free(p.ents);
	int bad = 0;
	for (size_t n = 0; n < o.len; n += 7) {
		struct rd_page q = {0};
		xdr_in_init(&x, o.buf, n);
		if (nfs4_decode_readdir(&x, o.buf, true, &q) == 0)
			bad++;
		free(q.ents);
	}
	CHECK(bad == 0, "readdir4: every truncation fails");
	/* a name with a slash is refused */
	xdr_out_truncate(&o, 0);
	xdr_put_fixed(&o, verf, 8);
	put_entry(&o, 3, "a/b");
	xdr_put_bool(&o, false);
	xdr_put_bool(&o, true);
	struct rd_page q = {0};
	xdr_in_init(&x, o.buf, o.len);
	CHECK(nfs4_decode_readdir(&x, o.buf, false, &q) == -EPROTO,
	      "readdir4: a name with '/' is refused");
	free(q.ents);
	xdr_out_free(&o);
}

static void test_expect(void)
{
	struct xdr_out o;
	struct xdr_in x;
	uint32_t st;
	xdr_out_init(&o, 64, 4096);
	xdr_put_u32(&o, OP4_PUTFH);
	xdr_put_u32(&o, 0);
	xdr_put_u32(&o, OP4_LOOKUP);
	xdr_put_u32(&o, NFS4ERR_NOENT);
	xdr_put_u32(&o, OP4_ILLEGAL);
	xdr_put_u32(&o, NFS4ERR_OP_ILLEGAL);
	xdr_in_init(&x, o.buf, o.len);
	CHECK(nfs4_expect(&x, OP4_PUTFH, &st) == 0, "expect: ok result");
	CHECK(nfs4_expect(&x, OP4_LOOKUP, &st) == -ENOENT &&
	          st == NFS4ERR_NOENT,
	      "expect: failed result maps to -errno");
	CHECK(nfs4_expect(&x, OP4_SEEK, &st) == -EOPNOTSUPP,
	      "expect: OP_ILLEGAL is not supported");
	CHECK(nfs4_expect(&x, OP4_SEEK, &st) == -EPROTO,
	      "expect: past the end is a protocol error");
	xdr_in_init(&x, o.buf, o.len);
	CHECK(nfs4_expect(&x, OP4_GETFH, &st) == -EPROTO,
	      "expect: wrong operation is a protocol error");
	CHECK(nfs4_errno(NFS4ERR_NOT_SAME) == -SNFS_EBADCOOKIE &&
	          nfs4_errno(NFS4ERR_BAD_COOKIE) == -SNFS_EBADCOOKIE,
	      "errno: NOT_SAME and BAD_COOKIE restart a listing");
	xdr_out_free(&o);
}

/* ---- live ---- */

static uint64_t reads(const struct snfs_stats *st)
{
	return st->calls[SNFS_OP_READ] + st->calls[SNFS_OP_READ_PLUS];
}

/* read_pieces checker: pieces follow on from pos and match want. */
struct pieces_check {
	const uint8_t *want;
	uint64_t len, pos;
	bool ok;
	int calls;
};

static int pieces_cb(void *arg, const struct snfs_piece *v, size_t n)
{
	struct pieces_check *pc = arg;
	static const uint8_t zero[4096];

	if (pc->calls++ == 0 && pc->pos == 0)
		pc->ok = true;
	for (size_t i = 0; i < n; i++) {
		if (v[i].off != pc->pos || v[i].off + v[i].len > pc->len)
			pc->ok = false;
		for (uint64_t o = 0; pc->ok && o < v[i].len; o += 4096) {
			size_t k = v[i].len - o < 4096 ? v[i].len - o : 4096;
			const void *got =
			    v[i].data ? (const uint8_t *)v[i].data + o : zero;
			pc->ok = !memcmp(got, pc->want + v[i].off + o, k);
		}
		pc->pos = v[i].off + v[i].len;
	}
	return 0;
}

static int pieces_sum(void *arg, const struct snfs_piece *v, size_t n)
{
	(void)arg, (void)v, (void)n;
	return 0;
}

static int pieces_stop(void *arg, const struct snfs_piece *v, size_t n)
{
	(void)arg, (void)v, (void)n;
	return -ECANCELED;
}

/* 64 MiB with 4 KiB of data at 0 and at 60 MiB, read in one
 * read_pieces: content right; on snfsd's READ_PLUS, the reply ending in
 * the long hole says where it ends, and the calls for the rest of it are
 * spared (16 in flight when it comes, then the data at 60 MiB). */
static void test_long_hole(struct snfs_ctx *c)
{
	const uint64_t size = 64u << 20, far = 60u << 20;
	const char *server = getenv("SNFS_TEST_SERVER");
	uint8_t *want = calloc(1, size);
	struct snfs_file *f;
	struct snfs_stats st;
	bool eof = false;

	memset(want, 'a', 4096);
	memset(want + far, 'b', 4096);
	CHECK(snfs_open(c, "longhole", O_RDWR | O_CREAT | O_TRUNC, 0644, &f) ==
	              0 &&
	          snfs_pwrite(f, want, 4096, 0) == 4096 &&
	          snfs_pwrite(f, want + far, 4096, far) == 4096 &&
	          snfs_ftruncate(f, size) == 0 && snfs_fsync(f) == 0,
	      "live: a 64 MiB file with data at 0 and 60 MiB");
	snfs_close(f);
	CHECK(snfs_open(c, "longhole", O_RDONLY, 0, &f) == 0,
	      "live: open the long hole");
	struct pieces_check pc = {.want = want, .len = size};
	snfs_stats_reset(c);
	ssize_t n = snfs_read_pieces(f, 0, size + 4096, pieces_cb, &pc, &eof);
	snfs_stats(c, &st);
	CHECK(n == (ssize_t)size && eof && pc.ok && pc.pos == size,
	      "live: read_pieces over a long hole: content right");
	if (server && !strcmp(server, "snfsd-4.2"))
		CHECK(st.calls[SNFS_OP_READ_PLUS] <= 24 &&
		          st.calls[SNFS_OP_READ] == 0,
		      "live: the calls inside a hole we know are spared");
	printf("# long hole: %llu READ_PLUS, %llu READ calls for 64 MiB\n",
	       (unsigned long long)st.calls[SNFS_OP_READ_PLUS],
	       (unsigned long long)st.calls[SNFS_OP_READ]);
	snfs_close(f);
	snfs_unlink(c, "longhole");
	free(want);
}

static bool is_server(const char *prefix)
{
	const char *server = getenv("SNFS_TEST_SERVER");
	return server && !strncmp(server, prefix, strlen(prefix));
}

static bool write_file(struct snfs_ctx *c, const char *name, const void *buf,
                       size_t len)
{
	struct snfs_file *f;
	if (snfs_open(c, name, O_RDWR | O_CREAT | O_TRUNC, 0644, &f) < 0)
		return false;
	bool ok = snfs_pwrite(f, buf, len, 0) == (ssize_t)len;
	return snfs_close(f) == 0 && ok;
}

static bool export_has(const char *dir, const char *name, const void *want,
                       size_t len)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *fp = fopen(p, "rb");
	if (!fp)
		return false;
	uint8_t *got = malloc(len + 1);
	bool same =
	    got && fread(got, 1, len + 1, fp) == len && !memcmp(got, want, len);
	free(got);
	fclose(fp);
	return same;
}

/* snfs_copy of 4 MiB between two files of one mount: on NFSv4.2 a
 * server-side COPY, no byte of it through the client; elsewhere (4.1, or
 * a server that answers COPY with NOTSUPP) read and written. */
static void test_copy(struct snfs_ctx *c, const char *dir, bool v42)
{
	const size_t len = 4u << 20;
	uint8_t *src = malloc(len), *got = malloc(len);
	struct snfs_file *f, *g;
	struct snfs_stats st;

	for (size_t i = 0; i < len; i++)
		src[i] = (uint8_t)(i * 31 + i / 4096);
	CHECK(write_file(c, "cpsrc", src, len), "copy: a 4 MiB source");
	CHECK(snfs_open(c, "cpsrc", O_RDONLY, 0, &f) == 0 &&
	          snfs_open(c, "cpdst", O_RDWR | O_CREAT | O_TRUNC, 0644, &g) ==
	              0,
	      "copy: open both ends");
	snfs_stats_reset(c);
	int64_t n = snfs_copy(f, 0, g, 0, len);
	snfs_close(f);
	CHECK(n == (int64_t)len && snfs_close(g) == 0, "copy: 4 MiB copied");
	snfs_stats(c, &st);
	bool refused = nfs4_st(c)->no_copy;
	printf("# copy of 4 MiB: %llu COPY, %llu READ(_PLUS), %llu WRITE, "
	       "%llu bytes read, %llu written%s\n",
	       (unsigned long long)st.calls[SNFS_OP_COPY],
	       (unsigned long long)reads(&st),
	       (unsigned long long)st.calls[SNFS_OP_WRITE],
	       (unsigned long long)st.read_bytes,
	       (unsigned long long)st.write_bytes,
	       refused ? " (the server has no COPY)" : "");
	if (v42 && !refused) {
		CHECK(st.calls[SNFS_OP_COPY] >= 1 &&
		          st.calls[SNFS_OP_WRITE] == 0 && reads(&st) == 0 &&
		          st.read_bytes == 0 && st.write_bytes == 0,
		      "copy: server-side COPY, no READ or WRITE of the data");
	} else {
		CHECK(st.calls[SNFS_OP_COPY] == (v42 ? 1u : 0u) &&
		          st.write_bytes >= len,
		      v42 ? "copy: COPY refused once, then read and written"
		          : "copy: no COPY on 4.1: read and written");
	}
	if (is_server("snfsd") && v42)
		CHECK(!refused, "copy: snfsd offers COPY");
	if (dir)
		CHECK(export_has(dir, "cpdst", src, len),
		      "copy: the export's target has every byte");
	CHECK(snfs_open(c, "cpdst", O_RDONLY, 0, &g) == 0 &&
	          snfs_pread(g, got, len, 0) == (ssize_t)len &&
	          !memcmp(got, src, len),
	      "copy: the target reads back through libsnfs");
	snfs_close(g);
	snfs_unlink(c, "cpsrc");
	snfs_unlink(c, "cpdst");
	free(src);
	free(got);
}

/* ALLOCATE: blocks on the export, inside the file and past its end (the
 * file grows, and libsnfs reads the new range as zeros). */
static void test_allocate(struct snfs_ctx *c, const char *dir)
{
	struct snfs_file *f;
	struct snfs_stat fs;
	struct stat a, b;
	char p[4096], data[4096], out[65536];

	memset(data, 'q', sizeof(data));
	snprintf(p, sizeof(p), "%s/alloc", dir);
	CHECK(snfs_open(c, "alloc", O_RDWR | O_CREAT | O_TRUNC, 0644, &f) ==
	              0 &&
	          snfs_pwrite(f, data, sizeof(data), 0) ==
	              (ssize_t)sizeof(data) &&
	          snfs_ftruncate(f, 1u << 20) == 0 && snfs_fsync(f) == 0,
	      "allocate: 4 KiB of data in a 1 MiB file");
	CHECK(stat(p, &a) == 0 && a.st_size == (1 << 20),
	      "allocate: the export's file is 1 MiB");
	CHECK(snfs_allocate(f, 256u << 10, 256u << 10) == 0,
	      "allocate: 256 KiB inside the hole");
	CHECK(stat(p, &b) == 0 && b.st_size == (1 << 20) &&
	          (b.st_blocks - a.st_blocks) * 512 >= (256 << 10),
	      "allocate: the export's file has 256 KiB more blocks, same "
	      "size");
	printf("# allocate: %lld -> %lld blocks of 512\n",
	       (long long)a.st_blocks, (long long)b.st_blocks);
	/* an allocated, unwritten range: data to SEEK where the export's
	 * file system says so (ext4 and xfs report it as a hole) */
	int fd = open(p, O_RDONLY);
	off_t local = fd >= 0 ? lseek(fd, 4096, SEEK_DATA) : -1;
	int64_t remote = snfs_seek_data(f, 4096);
	CHECK((local < 0 && remote == -ENXIO) || remote == (int64_t)local,
	      "allocate: SEEK_DATA after it agrees with the export's lseek");
	printf("# allocate: SEEK_DATA from 4096 after ALLOCATE: %lld (export "
	       "lseek %lld)\n",
	       (long long)remote, (long long)local);
	if (fd >= 0)
		close(fd);
	CHECK(snfs_allocate(f, 1u << 20, 1u << 20) == 0,
	      "allocate: 1 MiB past the end");
	CHECK(stat(p, &b) == 0 && b.st_size == (2 << 20),
	      "allocate: the export's file grew to 2 MiB");
	CHECK(snfs_fstat(f, &fs) == 0 && fs.size == (2u << 20),
	      "allocate: fstat says 2 MiB");
	memset(out, 'x', sizeof(out));
	CHECK(snfs_pread(f, out, sizeof(out), (3u << 20) / 2) ==
	              (ssize_t)sizeof(out) &&
	          out[0] == 0 && out[sizeof(out) - 1] == 0,
	      "allocate: the range past the old end reads as zeros");
	CHECK(snfs_pread(f, out, 100, 0) == 100 && out[0] == 'q',
	      "allocate: the data before it is intact");
	snfs_close(f);
	snfs_unlink(c, "alloc");
}

/* A listing that meets a change of the directory: snfsd answers the next
 * READDIR with NOT_SAME; the listing goes on (counted), every entry
 * exactly once. */
static void test_listing_change(struct snfs_ctx *c, const char *dir)
{
	const int n = 2000;
	char p[4096];
	struct snfs_dir *d;
	struct snfs_dirent de;
	struct snfs_stats st;
	int rc, got = 0, dups = 0;

	snprintf(p, sizeof(p), "%s/lsd", dir);
	bool made = mkdir(p, 0755) == 0;
	for (int i = 0; made && i < n; i++) {
		snprintf(p, sizeof(p), "%s/lsd/e%05d", dir, i);
		int fd = open(p, O_WRONLY | O_CREAT, 0644);
		made = fd >= 0 && close(fd) == 0;
	}
	CHECK(made, "listing: 2,000 files on the export");
	char *seen = calloc((size_t)n, 1);
	uint32_t dirbuf = c->dirbuf;
	c->dirbuf = 4096; /* many replies */
	snfs_stats_reset(c);
	CHECK(snfs_opendir(c, "lsd", 0, &d) == 0, "listing: opendir");
	for (int k = 0; (rc = snfs_readdir(d, &de)) > 0; k++) {
		int i;
		if (sscanf(de.name, "e%05d", &i) == 1 && i >= 0 && i < n) {
			dups += seen[i]++ != 0;
			got++;
		}
		if (k == 10) { /* the directory changes mid-listing */
			cto_sleep_tick();
			snprintf(p, sizeof(p), "%s/lsd/new", dir);
			int fd = open(p, O_WRONLY | O_CREAT, 0644);
			if (fd >= 0)
				close(fd);
		}
	}
	snfs_closedir(d);
	c->dirbuf = dirbuf;
	snfs_stats(c, &st);
	printf("# listing with a change: %llu READDIR, %llu resumed, %llu "
	       "restarted\n",
	       (unsigned long long)st.calls[SNFS_OP_READDIR],
	       (unsigned long long)st.readdir_resumes,
	       (unsigned long long)st.readdir_restarts);
	CHECK(rc == 0 && got == n && dups == 0,
	      "listing: across a change, every entry exactly once");
	if (is_server("snfsd"))
		CHECK(st.readdir_resumes + st.readdir_restarts >= 1,
		      "listing: snfsd refused the old verifier and the listing "
		      "recovered (counted)");
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/lsd/e%05d", dir, i);
		unlink(p);
	}
	snprintf(p, sizeof(p), "%s/lsd/new", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/lsd", dir);
	rmdir(p);
	free(seen);
}

static void test_live(const char *url, const char *dir)
{
	struct snfs_ctx *c;
	struct snfs_file *f, *g;
	struct snfs_stats st;
	char buf[2048], out[2048];

	if (snfs_mount(url, NULL, &c) < 0) {
		printf("not ok - live: mount %s: %s\n", url, snfs_last_error());
		test_failures++;
		return;
	}
	bool v42 = snfs_get_version(c) == SNFS_V42;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 13 + 1);
	CHECK(snfs_open(c, "wtr", O_RDWR | O_CREAT | O_TRUNC, 0644, &f) == 0,
	      "live: create");
	snfs_stats_reset(c);
	CHECK(snfs_pwrite(f, buf, sizeof(buf), 5000) == (ssize_t)sizeof(buf),
	      "live: write 2 KiB at 5000");
	CHECK(snfs_pread(f, out, sizeof(out), 5000) == (ssize_t)sizeof(out) &&
	          !memcmp(buf, out, sizeof(buf)),
	      "live: read it back");
	snfs_stats(c, &st);
	CHECK(reads(&st) == 0 && st.total_calls == 0,
	      "live: write then read issues no RPC (no READ, no READ_PLUS)");
	CHECK(snfs_close(f) == 0, "live: close (WRITE, COMMIT, CLOSE)");
	snfs_stats(c, &st);
	CHECK(st.calls[SNFS_OP_WRITE] == 1, "live: one WRITE");
	/* Only a COMMIT brings back the attributes after our write; after
	 * a FILE_SYNC WRITE the cache cannot know the file is unchanged. */
	bool committed = st.calls[SNFS_OP_COMMIT] == 1;
	printf("# the WRITE was %s\n",
	       committed ? "UNSTABLE, then COMMIT" : "FILE_SYNC");
	CHECK(snfs_open(c, "wtr", O_RDONLY, 0, &f) == 0, "live: reopen");
	snfs_stats_reset(c);
	CHECK(snfs_pread(f, out, sizeof(out), 5000) == (ssize_t)sizeof(out) &&
	          !memcmp(buf, out, sizeof(buf)),
	      "live: read after reopen");
	snfs_stats(c, &st);
	if (committed)
		CHECK(reads(&st) == 0,
		      "live: close-to-open keeps the cache: no READ");
	snfs_stats_reset(c);
	CHECK(snfs_pread(f, out, 100, 0) == 100 && out[0] == 0 && out[99] == 0,
	      "live: the hole before our bytes reads as zeros");
	snfs_stats(c, &st);
	/* one READ_PLUS, or on a server whose READ_PLUS is broken, that
	 * one and the READ that replaces it */
	CHECK(reads(&st) == 1 || (st.calls[SNFS_OP_READ] == 1 &&
	                          st.calls[SNFS_OP_READ_PLUS] == 1),
	      "live: an uncached range is one READ(_PLUS)");
	/* A 16 MiB request of a 7 KiB file: one call, not one per rsize
	 * of the request that all come back empty (regression). */
	snfs_stats_reset(c);
	bool small_eof = false;
	ssize_t sn =
	    snfs_read_pieces(f, 0, 16u << 20, pieces_sum, NULL, &small_eof);
	snfs_stats(c, &st);
	CHECK(sn == 5000 + (ssize_t)sizeof(buf) && small_eof &&
	          (reads(&st) == 1 || (st.calls[SNFS_OP_READ] == 1 &&
	                               st.calls[SNFS_OP_READ_PLUS] == 1)),
	      "live: read_pieces of a small file is one call");
	snfs_close(f);

	/* a sparse file: 4 KiB of data at 1 MiB */
	CHECK(snfs_open(c, "sp", O_RDWR | O_CREAT | O_TRUNC, 0644, &f) == 0,
	      "live: create sparse");
	char *big = calloc(1, 2u << 20);
	memset(big + (1u << 20), 'x', 4096);
	CHECK(snfs_pwrite(f, big + (1u << 20), 4096, 1u << 20) == 4096,
	      "live: write at 1 MiB");
	CHECK(snfs_ftruncate(f, 2u << 20) == 0, "live: extend to 2 MiB");
	CHECK(snfs_fsync(f) == 0, "live: fsync");
	struct snfs_segment segs[16];
	size_t ns = 0, got = 0;
	bool eof = false, hole_seen = false, ok = true;
	char *rb = malloc(2u << 20);
	memset(rb, 0, 2u << 20);
	while (got < (2u << 20) && ok) {
		ssize_t n = snfs_read_segments(f, rb + got, (2u << 20) - got,
		                               got, segs, 16, &ns, &eof);
		if (n <= 0) {
			ok = n == 0;
			break;
		}
		uint64_t pos = got;
		for (size_t i = 0; i < ns; i++) {
			ok = ok && segs[i].off == pos;
			pos += segs[i].len;
			hole_seen = hole_seen || segs[i].hole;
		}
		ok = ok && pos == got + (size_t)n;
		got += (size_t)n;
	}
	CHECK(ok && got == (2u << 20) && !memcmp(rb, big, 2u << 20),
	      "live: read_segments covers the file in order, data intact");
	printf("# read_segments saw %s\n",
	       hole_seen ? "hole segments" : "data only (no READ_PLUS)");
	struct pieces_check pc = {.want = (const uint8_t *)big,
	                          .len = 2u << 20};
	snfs_stats_reset(c);
	ssize_t pn = snfs_read_pieces(f, 0, 16u << 20, pieces_cb, &pc, &eof);
	snfs_stats(c, &st);
	CHECK(pn == (2 << 20) && eof && pc.ok && pc.pos == (2u << 20) &&
	          pc.calls > 1,
	      "live: read_pieces covers the file in order, data intact");
	/* 2 MiB of 1 MiB calls, the second one eof: a window of calls
	 * past the end once followed it (regression) */
	CHECK(reads(&st) == 2 || (st.calls[SNFS_OP_READ_PLUS] == 1 &&
	                          st.calls[SNFS_OP_READ] == 2),
	      "live: read_pieces past the end of a file of whole rsizes: "
	      "a call per rsize");
	CHECK(snfs_read_pieces(f, 0, 2u << 20, pieces_stop, &pc, &eof) ==
	          -ECANCELED,
	      "live: read_pieces ends with the callback's error");
	CHECK(snfs_read_pieces(
	          f, (2u << 20) - 10, 100, pieces_cb,
	          &(struct pieces_check){.want = (const uint8_t *)big,
	                                 .len = 2u << 20,
	                                 .pos = (2u << 20) - 10,
	                                 .ok = true},
	          &eof) == 10 &&
	          eof,
	      "live: read_pieces short at EOF");
	if (v42) {
		CHECK(snfs_seek_data(f, 0) == (1 << 20), "live: SEEK data");
		int64_t h = snfs_seek_hole(f, 1u << 20);
		CHECK(h >= (1 << 20) + 4096 && h <= (2 << 20),
		      "live: SEEK hole");
		CHECK(snfs_seek_data(f, (1u << 20) + 65536) == -ENXIO,
		      "live: SEEK data past the last is ENXIO");
		CHECK(snfs_punch_hole(f, 1u << 20, 4096) == 0,
		      "live: DEALLOCATE");
		CHECK(snfs_pread(f, out, 100, 1u << 20) == 100 && out[0] == 0,
		      "live: the punched range reads as zeros");
		CHECK(snfs_allocate(f, 0, 65536) == 0, "live: ALLOCATE");
	} else {
		CHECK(snfs_seek_data(f, 0) == -EOPNOTSUPP,
		      "live: no SEEK on 4.1");
		CHECK(snfs_allocate(f, 0, 4096) == -EOPNOTSUPP,
		      "live: no ALLOCATE on 4.1");
	}
	snfs_close(f);
	free(big);
	free(rb);
	test_long_hole(c);
	test_copy(c, dir, v42);
	if (v42 && dir)
		test_allocate(c, dir);
	if (dir)
		test_listing_change(c, dir);
	test_close_to_open(c, url, dir);

	/* COPY (server-side where offered, else read and write) */
	CHECK(snfs_open(c, "wtr", O_RDONLY, 0, &f) == 0 &&
	          snfs_open(c, "wtr-copy", O_RDWR | O_CREAT | O_TRUNC, 0644,
	                    &g) == 0,
	      "live: open copy ends");
	CHECK(snfs_copy(f, 0, g, 0, 7048) == 7048, "live: copy 7048 bytes");
	CHECK(snfs_pread(g, out, sizeof(out), 5000) == (ssize_t)sizeof(out) &&
	          !memcmp(out, buf, sizeof(buf)),
	      "live: copied bytes");
	snfs_close(f);
	snfs_close(g);

	/* names */
	struct snfs_stat s1;
	CHECK(snfs_mkdir(c, "dd", 0755) == 0, "live: mkdir");
	CHECK(snfs_unlink(c, "dd") == -EISDIR, "live: unlink of a dir: EISDIR");
	CHECK(snfs_rmdir(c, "wtr") == -ENOTDIR,
	      "live: rmdir of a file: ENOTDIR");
	CHECK(snfs_symlink(c, "wtr", "ln") == 0, "live: symlink");
	char lb[64];
	CHECK(snfs_readlink(c, "ln", lb, sizeof(lb)) == 3 && !strcmp(lb, "wtr"),
	      "live: readlink");
	CHECK(snfs_stat(c, "ln", &s1) == 0 && s1.size == 7048,
	      "live: stat follows the link");
	CHECK(snfs_link(c, "wtr", "hard") == 0 &&
	          snfs_stat(c, "wtr", &s1) == 0 && s1.nlink == 2,
	      "live: link");
	CHECK(snfs_rename(c, "hard", "dd/hard2") == 0 &&
	          snfs_stat(c, "dd/hard2", &s1) == 0,
	      "live: rename");
	struct snfs_setattr sa = {.mask = SNFS_SET_MODE, .mode = 0600};
	CHECK(snfs_setattr(c, "wtr", &sa) == 0 &&
	          snfs_stat(c, "wtr", &s1) == 0 && s1.mode == 0600,
	      "live: setattr mode");
	CHECK(snfs_truncate(c, "wtr", 10) == 0 &&
	          snfs_stat(c, "wtr", &s1) == 0 && s1.size == 10,
	      "live: truncate");
	if (dir) {
		char p[4096];
		snprintf(p, sizeof(p), "%s/wtr", dir);
		struct stat ls;
		CHECK(stat(p, &ls) == 0 && ls.st_uid == s1.uid &&
		          ls.st_gid == s1.gid,
		      "live: owner and group match the server's file");
	}
	/* Scattered small writes go back in few COMPOUNDs (vectored
	 * WRITE); the server's file has every byte. */
	CHECK(snfs_open(c, "vec", O_RDWR | O_CREAT | O_TRUNC, 0644, &f) == 0,
	      "live: create vec");
	snfs_stats_reset(c);
	bool wok = true;
	for (int i = 0; i < 24; i++)
		wok &= snfs_pwrite(f, buf + i, 100, (uint64_t)i * 10000 + 7) ==
		       100;
	CHECK(wok && snfs_close(f) == 0, "live: 24 scattered writes, close");
	snfs_stats(c, &st);
	printf("# 24 scattered writes: %llu WRITE calls\n",
	       (unsigned long long)st.calls[SNFS_OP_WRITE]);
	CHECK(st.calls[SNFS_OP_WRITE] >= 1 && st.calls[SNFS_OP_WRITE] <= 4,
	      "live: scattered writes go in a few COMPOUNDs");
	if (dir) {
		char p[4096];
		snprintf(p, sizeof(p), "%s/vec", dir);
		FILE *fp = fopen(p, "rb");
		bool same = fp != NULL;
		for (int i = 0; same && i < 24; i++) {
			char got[100];
			same = fseek(fp, (long)i * 10000 + 7, SEEK_SET) == 0 &&
			       fread(got, 1, 100, fp) == 100 &&
			       !memcmp(got, buf + i, 100);
		}
		if (fp)
			fclose(fp);
		CHECK(same, "live: the server's file has every written byte");
	}
	snfs_unlink(c, "vec");
	CHECK(snfs_open(c, "nope", O_RDONLY, 0, &f) == -ENOENT,
	      "live: open of a missing file: ENOENT");
	CHECK(snfs_open(c, "wtr", O_WRONLY | O_CREAT | O_EXCL, 0644, &f) ==
	          -EEXIST,
	      "live: O_EXCL on an existing file: EEXIST");
	snfs_unlink(c, "dd/hard2");
	snfs_rmdir(c, "dd");
	snfs_unlink(c, "ln");
	snfs_unlink(c, "wtr");
	snfs_unlink(c, "wtr-copy");
	snfs_unlink(c, "sp");
	CHECK(snfs_umount(c) == 0, "live: umount");
}

/* ---- a server without READ_PLUS and COPY (fake_server4.py noplus) ---- */

#define FAKE_LEN (300u << 10)

static void fake_pattern(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 7 + i / 4096) & 0xff);
}

static void test_fake_noplus(const char *url)
{
	char u[1024];
	struct snfs_ctx *c;
	struct snfs_file *f, *g;
	struct snfs_stats st;
	uint8_t *want = malloc(FAKE_LEN), *got = malloc(FAKE_LEN);
	bool eof;

	fake_pattern(want, FAKE_LEN);
	if (snfs_mount(url, NULL, &c) < 0) {
		printf("not ok - noplus: mount %s: %s\n", url,
		       snfs_last_error());
		test_failures++;
		free(want);
		free(got);
		return;
	}
	CHECK(snfs_get_version(c) == SNFS_V42, "noplus: mounted over 4.2");
	CHECK(snfs_open(c, "f", O_RDONLY, 0, &f) == 0, "noplus: open f");
	snfs_stats_reset(c);
	CHECK(snfs_pread(f, got, 65536, 0) == 65536 &&
	          !memcmp(got, want, 65536),
	      "noplus: pread gets the data");
	snfs_stats(c, &st);
	CHECK(st.calls[SNFS_OP_READ_PLUS] == 1 && st.calls[SNFS_OP_READ] == 1,
	      "noplus: one READ_PLUS refused, then READ");
	CHECK(snfs_pread(f, got, 65536, 128u << 10) == 65536 &&
	          !memcmp(got, want + (128u << 10), 65536),
	      "noplus: a second pread");
	snfs_stats(c, &st);
	CHECK(st.calls[SNFS_OP_READ_PLUS] == 1 && st.calls[SNFS_OP_READ] == 2,
	      "noplus: later reads go straight to READ");
	struct pieces_check pc = {.want = want, .len = FAKE_LEN};
	CHECK(snfs_read_pieces(f, 0, FAKE_LEN + 4096, pieces_cb, &pc, &eof) ==
	              (ssize_t)FAKE_LEN &&
	          eof && pc.ok && pc.pos == FAKE_LEN,
	      "noplus: read_pieces by READ, content right");
	struct snfs_segment segs[8];
	size_t ns = 0;
	CHECK(snfs_read_segments(f, got, FAKE_LEN, 0, segs, 8, &ns, &eof) ==
	              (ssize_t)FAKE_LEN &&
	          ns == 1 && !segs[0].hole && !memcmp(got, want, FAKE_LEN),
	      "noplus: read_segments: one data segment");
	snfs_stats(c, &st);
	CHECK(st.calls[SNFS_OP_READ_PLUS] == 1,
	      "noplus: READ_PLUS was asked once in all");
	CHECK(snfs_seek_data(f, 0) == -EOPNOTSUPP,
	      "noplus: SEEK refused: EOPNOTSUPP");

	/* snfs_copy: COPY refused, so read and write */
	CHECK(snfs_open(c, "g", O_RDWR | O_CREAT | O_TRUNC, 0644, &g) == 0,
	      "noplus: create g");
	snfs_stats_reset(c);
	CHECK(snfs_copy(f, 0, g, 0, FAKE_LEN) == (int64_t)FAKE_LEN,
	      "noplus: copy f to g");
	CHECK(snfs_close(g) == 0, "noplus: close g");
	snfs_stats(c, &st);
	CHECK(st.calls[SNFS_OP_COPY] == 1 && st.write_bytes == FAKE_LEN,
	      "noplus: COPY refused once, the bytes read and written");
	CHECK(snfs_open(c, "g", O_RDWR, 0, &g) == 0 &&
	          snfs_copy(f, 0, g, 0, 4096) == 4096 && snfs_close(g) == 0,
	      "noplus: a second copy");
	snfs_stats(c, &st);
	CHECK(st.calls[SNFS_OP_COPY] == 1,
	      "noplus: no COPY asked after the refusal");
	CHECK(snfs_open(c, "g", O_RDWR, 0, &g) == 0 &&
	          snfs_allocate(g, 0, 4096) == -EOPNOTSUPP,
	      "noplus: ALLOCATE refused: EOPNOTSUPP");
	snfs_close(g);
	snfs_close(f);
	snfs_umount(c);

	/* a fresh mount with 64 KiB reads: the first read_pieces asks one
	 * READ_PLUS, not a window of them, and reads the rest by READ; g
	 * holds what was copied */
	snprintf(u, sizeof(u), "%s&rsize=65536&cache=0", url);
	if (snfs_mount(u, NULL, &c) < 0) {
		printf("not ok - noplus: mount %s: %s\n", u, snfs_last_error());
		test_failures++;
		free(want);
		free(got);
		return;
	}
	CHECK(snfs_open(c, "g", O_RDONLY, 0, &g) == 0, "noplus: open g");
	snfs_stats_reset(c);
	pc = (struct pieces_check){.want = want, .len = FAKE_LEN};
	CHECK(snfs_read_pieces(g, 0, FAKE_LEN + 4096, pieces_cb, &pc, &eof) ==
	              (ssize_t)FAKE_LEN &&
	          pc.ok && pc.pos == FAKE_LEN,
	      "noplus: the copy has every byte");
	snfs_stats(c, &st);
	printf("# noplus: read_pieces of 300 KiB, rsize 64 KiB: %llu "
	       "READ_PLUS, %llu READ\n",
	       (unsigned long long)st.calls[SNFS_OP_READ_PLUS],
	       (unsigned long long)st.calls[SNFS_OP_READ]);
	CHECK(st.calls[SNFS_OP_READ_PLUS] == 1 &&
	          st.calls[SNFS_OP_READ] == (FAKE_LEN + 65535) / 65536,
	      "noplus: one READ_PLUS probe, then a READ per 64 KiB");
	snfs_close(g);
	snfs_umount(c);
	free(want);
	free(got);
}

int main(void)
{
	const char *url = getenv("SNFS_TEST_URL");
	const char *fake = getenv("SNFS_TEST_FAKE_NOPLUS");
	if (fake) {
		test_fake_noplus(fake);
		TEST_EXIT();
	}
	if (url) {
		test_live(url, getenv("SNFS_TEST_DIR"));
		TEST_EXIT();
	}
	test_owner();
	test_fattr();
	test_readdir();
	test_expect();
	/* a lease_time near 2^32 s once made the period wrap to 0 */
	CHECK(nfs4_renew_period_ms(536870912) == 1200000 &&
	          nfs4_renew_period_ms(4294967295u) == 1200000 &&
	          nfs4_renew_period_ms(90) == 30000 &&
	          nfs4_renew_period_ms(0) == 30000 &&
	          nfs4_renew_period_ms(1) == 1000,
	      "renew period: a third of the lease, clamped, never 0");
	TEST_EXIT();
}
