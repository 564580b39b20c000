/* NFSv4 COMPOUND end to end: a server context with two exports in a temp
 * dir, COMPOUNDs hand-encoded and sent through rpc_service_handle(), the
 * replies decoded and checked. Covers the pseudo root, 4.0 and 4.1 state,
 * share reservations and locks between two clients, the limits, and
 * truncated and mutated COMPOUNDs (which must never crash). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../test.h"
#include "compound_testlib.h"
#include "stream.h"
#include "server/exports.h"
#include "server/nfs4/nfs4.h"
#include "server/nfs4/share.h"
#include "server/programs.h"
#include "server/snfsd.h"
#include "state_testlib.h"
#include "util/log.h"

static char base[64], rodir[96];

/* NFSv3 READ (6), WRITE (7) or SETATTR of the size (2) of the file with
 * handle bh: its nfsstat3. */
static uint32_t v3_io(struct export *ex, const struct bk_handle *bh,
                      uint32_t proc)
{
	struct nfs_fh fh;
	struct xdr_out a;
	struct reply rep = {0};
	uint32_t st = 0xdead;

	if (fh_make(&S, ex, bh, &fh))
		return st;
	xdr_out_init(&a, 256, 4096);
	xdr_put_opaque(&a, fh.data, fh.len);
	if (proc == 2) {            /* sattr3 with just a size; no guard */
		xdr_put_u32(&a, 0); /* mode, uid, gid: unset */
		xdr_put_u32(&a, 0);
		xdr_put_u32(&a, 0);
		xdr_put_u32(&a, 1);
		xdr_put_u64(&a, 1);
		xdr_put_u32(&a, 0); /* atime, mtime: unchanged; no guard */
		xdr_put_u32(&a, 0);
		xdr_put_u32(&a, 0);
	} else {
		xdr_put_u64(&a, 0);
		xdr_put_u32(&a, 1);
		if (proc == 7) {
			xdr_put_u32(&a, 2); /* FILE_SYNC */
			xdr_put_opaque(&a, "z", 1);
		}
	}
	send_raw_v(3, a.buf, a.len, proc, &rep);
	if (rep.stat == 0)
		xdr_get_u32(&rep.res, &st);
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
	return st;
}

/* ---- setup ---- */

static int setup(void)
{
	const char *specs[2];
	char spec_rw[160], spec_ro[200], err[256];
	struct export_table *t;
	int rc;

	snprintf(base, sizeof(base), "/tmp/snfs-nfs4-XXXXXX");
	if (!mkdtemp(base))
		return -errno;
	snprintf(rwdir, sizeof(rwdir), "%s/a/rw", base);
	snprintf(rodir, sizeof(rodir), "%s/ro", base);
	snprintf(spec_rw, sizeof(spec_rw), "%s/a", base);
	mkdir(spec_rw, 0755);
	mkdir(rwdir, 0755);
	mkdir(rodir, 0755);
	snprintf(spec_rw, sizeof(spec_rw),
	         "%s:rw,insecure,no_root_squash,zerocopy", rwdir);
	snprintf(spec_ro, sizeof(spec_ro),
	         "%s:ro,insecure,no_root_squash,no_zerocopy,mapped,"
	         "mapped_min=64k",
	         rodir);
	specs[0] = spec_rw;
	specs[1] = spec_ro;
	rc = exports_load(NULL, specs, 2, &t, err, sizeof(err));
	if (rc) {
		printf("# exports_load: %s\n", err);
		return rc;
	}
	return testsrv_start(t, base);
}

/* ---- tests ---- */

static void test_header(void)
{
	struct reply rep = {0};
	struct cbuf b;

	send_raw(NULL, 0, 0, &rep);
	CHECK(rep.stat == 0, "NULL procedure answers");

	c_begin(&b, 3);
	op(&b, OP4_PUTROOTFH);
	CHECK(c_send(&b, &rep) == NFS4ERR_MINOR_VERS_MISMATCH && rep.nres == 0,
	      "minor version 3: MINOR_VERS_MISMATCH, no results");

	c_begin(&b, 0);
	op(&b, 99);
	CHECK(c_send(&b, &rep) == NFS4ERR_OP_ILLEGAL && rep.nres == 1 &&
	          res_next(&rep, OP4_ILLEGAL) == NFS4ERR_OP_ILLEGAL,
	      "unknown op: OP_ILLEGAL result named OP_ILLEGAL");

	c_begin(&b, 0);
	op(&b, OP4_SEQUENCE);
	CHECK(c_send(&b, &rep) == NFS4ERR_OP_ILLEGAL,
	      "4.1 op in a 4.0 COMPOUND is OP_ILLEGAL");

	c_begin(&b, 1);
	op(&b, OP4_PUTROOTFH);
	CHECK(c_send(&b, &rep) == NFS4ERR_OP_NOT_IN_SESSION,
	      "4.1 without SEQUENCE: OP_NOT_IN_SESSION");

	c_begin(&b, 0);
	op(&b, OP4_GETFH);
	CHECK(c_send(&b, &rep) == NFS4ERR_NOFILEHANDLE,
	      "GETFH without a file handle: NOFILEHANDLE");

	/* 10,000 operations are refused before any runs. */
	c_begin(&b, 0);
	for (int i = 0; i < 10000; i++)
		op(&b, OP4_PUTROOTFH);
	CHECK(c_send(&b, &rep) == NFS4ERR_RESOURCE && rep.nres == 0,
	      "4.0 COMPOUND of 10000 ops: RESOURCE");
	c_begin(&b, 1);
	for (int i = 0; i < 10000; i++)
		op(&b, OP4_PUTROOTFH);
	CHECK(c_send(&b, &rep) == NFS4ERR_TOO_MANY_OPS,
	      "4.1 COMPOUND of 10000 ops: TOO_MANY_OPS");

	/* An over-long tag. */
	{
		char tag[2000];
		memset(tag, 'x', sizeof(tag) - 1);
		tag[sizeof(tag) - 1] = 0;
		xdr_out_init(&b.x, 4096, 1 << 20);
		xdr_put_string(&b.x, tag);
		xdr_put_u32(&b.x, 0);
		xdr_put_u32(&b.x, 1);
		xdr_put_u32(&b.x, OP4_PUTROOTFH);
		CHECK(c_send(&b, &rep) == NFS4ERR_RESOURCE,
		      "over-long tag refused");
	}
	rep_free(&rep);
}

static void test_pseudofs(void)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st, n, v, w[3], len;
	uint64_t fsid_major, fsid_minor;
	const uint8_t *p;
	char comp[64];

	/* The root is a read-only directory, fsid {0,0}. */
	c_begin(&b, 0);
	op(&b, OP4_PUTROOTFH);
	op_getattr(&b, (1u << 1) | (1u << 8), 0);
	st = c_send(&b, &rep);
	CHECK(st == NFS4_OK, "PUTROOTFH GETATTR ok");
	res_next(&rep, OP4_PUTROOTFH);
	res_next(&rep, OP4_GETATTR);
	nfs4_get_bitmap(&rep.res, w);
	xdr_get_u32(&rep.res, &len);
	xdr_get_u32(&rep.res, &v);
	xdr_get_u64(&rep.res, &fsid_major);
	xdr_get_u64(&rep.res, &fsid_minor);
	CHECK(w[0] == ((1u << 1) | (1u << 8)) && len == 20 && v == NF4DIR &&
	          fsid_major == 0 && fsid_minor == 0,
	      "pseudo root: type DIR, fsid 0,0");

	/* READDIR of the root names the first component of base. */
	c_begin(&b, 0);
	op(&b, OP4_PUTROOTFH);
	op(&b, OP4_READDIR);
	xdr_put_u64(&b.x, 0);
	xdr_put_u64(&b.x, 0);
	xdr_put_u32(&b.x, 4096);
	xdr_put_u32(&b.x, 8192);
	xdr_put_u32(&b.x, 1);
	xdr_put_u32(&b.x, 1u << 20); /* fileid */
	st = c_send(&b, &rep);
	res_next(&rep, OP4_PUTROOTFH);
	res_next(&rep, OP4_READDIR);
	xdr_skip(&rep.res, 8);
	xdr_get_u32(&rep.res, &v); /* value follows */
	xdr_skip(&rep.res, 8);     /* cookie */
	xdr_get_opaque_ref(&rep.res, &p, &n, 255);
	CHECK(st == NFS4_OK && v == 1 && n == 3 && !memcmp(p, "tmp", 3),
	      "READDIR of the pseudo root lists \"tmp\"");

	/* Walking to the rw export crosses into fsid {export, 1}. */
	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_getattr(&b, 1u << 8, 1u << (55 - 32));
	st = c_send(&b, &rep);
	CHECK(st == NFS4_OK, "LOOKUP path to the export");
	for (uint32_t i = 0; i + 1 < rep.nres; i++) {
		uint32_t o;
		xdr_get_u32(&rep.res, &o);
		xdr_get_u32(&rep.res, &v);
	}
	res_next(&rep, OP4_GETATTR);
	nfs4_get_bitmap(&rep.res, w);
	xdr_get_u32(&rep.res, &len);
	xdr_get_u64(&rep.res, &fsid_major);
	xdr_get_u64(&rep.res, &fsid_minor);
	CHECK(fsid_minor == 1 && len == 24, "export root has its own fsid");

	/* Lookup of a missing name in the pseudo tree. */
	c_begin(&b, 0);
	op(&b, OP4_PUTROOTFH);
	op_name(&b, OP4_LOOKUP, "no-such-dir");
	CHECK(c_send(&b, &rep) == NFS4ERR_NOENT, "pseudo LOOKUP: NOENT");

	/* The pseudo tree is read-only. */
	c_begin(&b, 0);
	op(&b, OP4_PUTROOTFH);
	op(&b, OP4_CREATE);
	xdr_put_u32(&b.x, NF4DIR);
	xdr_put_string(&b.x, "newdir");
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, 0);
	CHECK(c_send(&b, &rep) == NFS4ERR_ROFS, "CREATE in pseudo root: ROFS");

	/* Names: too long, empty, dot-dot. */
	memset(comp, 'n', sizeof(comp));
	c_begin(&b, 0);
	op(&b, OP4_PUTROOTFH);
	op(&b, OP4_LOOKUP);
	{
		char longname[400];
		memset(longname, 'a', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = 0;
		xdr_put_string(&b.x, longname);
	}
	CHECK(c_send(&b, &rep) == NFS4ERR_NAMETOOLONG,
	      "LOOKUP of a 399-byte name: NAMETOOLONG");
	c_begin(&b, 0);
	op(&b, OP4_PUTROOTFH);
	op_name(&b, OP4_LOOKUP, "");
	CHECK(c_send(&b, &rep) == NFS4ERR_INVAL, "LOOKUP of \"\": INVAL");
	c_begin(&b, 0);
	op(&b, OP4_PUTROOTFH);
	op_name(&b, OP4_LOOKUP, "..");
	CHECK(c_send(&b, &rep) == NFS4ERR_BADNAME, "LOOKUP of \"..\": BADNAME");

	/* A read-only export refuses changes. */
	c_begin(&b, 0);
	op_walk(&b, rodir);
	op(&b, OP4_CREATE);
	xdr_put_u32(&b.x, NF4DIR);
	xdr_put_string(&b.x, "newdir");
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, 0);
	CHECK(c_send(&b, &rep) == NFS4ERR_ROFS, "CREATE in a ro export: ROFS");

	/* LOOKUPP from the export root comes back into the pseudo tree. */
	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op(&b, OP4_LOOKUPP);
	op_getattr(&b, 1u << 8, 0);
	st = c_send(&b, &rep);
	for (uint32_t i = 0; i + 1 < rep.nres; i++) {
		uint32_t o;
		xdr_get_u32(&rep.res, &o);
		xdr_get_u32(&rep.res, &v);
	}
	res_next(&rep, OP4_GETATTR);
	nfs4_get_bitmap(&rep.res, w);
	xdr_get_u32(&rep.res, &len);
	xdr_get_u64(&rep.res, &fsid_major);
	xdr_get_u64(&rep.res, &fsid_minor);
	CHECK(st == NFS4_OK && fsid_major == 0 && fsid_minor == 0,
	      "LOOKUPP from the export root reaches the pseudo tree");
	rep_free(&rep);
}

/* ---- 4.0 state ---- */

static void test_state40(void)
{
	struct client40 a, bcl;
	struct nfs4_stateid sa, sb, la, lb;
	struct reply rep = {0}, rep2 = {0};
	char buf[64];
	uint32_t st;

	CHECK(setclientid(&a, "client-a") == NFS4_OK,
	      "4.0 SETCLIENTID + CONFIRM (a)");
	CHECK(setclientid(&bcl, "client-b") == NFS4_OK,
	      "4.0 SETCLIENTID + CONFIRM (b)");
	st = open40(&a, "f1", 3, 2 /* deny write */, &sa, &rep, 1);
	CHECK(st == NFS4_OK, "4.0 OPEN (create) + OPEN_CONFIRM");
	CHECK(io40("f1", true, &sa, "hello v4", NULL, 0) == NFS4_OK,
	      "WRITE with the open stateid");
	CHECK(io40("f1", false, &sa, NULL, buf, sizeof(buf)) == NFS4_OK &&
	          !strcmp(buf, "hello v4"),
	      "READ it back");
	CHECK(io40("f1", true, &(struct nfs4_stateid){0}, "x", NULL, 0) ==
	          NFS4ERR_LOCKED,
	      "anonymous WRITE against DENY_WRITE: LOCKED");
	st = open40(&bcl, "f1", 2, 0, &sb, &rep2, 1);
	CHECK(st == NFS4ERR_SHARE_DENIED,
	      "second client's write open: SHARE_DENIED");
	st = open40(&bcl, "f1", 1, 0, &sb, &rep2, bcl.seqid);
	CHECK(st == NFS4_OK, "second client's read open is allowed");

	/* NFSv3 I/O (no stateid) meets the same deny mode. */
	{
		struct export *ex = exports_by_path(S.exports, rwdir);
		struct bk_handle root, h;
		struct bk_attr at;
		int ok = ex && !ex->ops->root(ex->bk, &root) &&
		         !ex->ops->lookup(ex->bk, &(struct bk_cred){0}, &root,
		                          "f1", &h, &at);
		CHECK(ok && nfs4_share_check(&S, ex, &h, true) == -EACCES &&
		          nfs4_share_check(&S, ex, &h, false) == 0,
		      "nfs4_share_check: NFSv3 write denied, read allowed");
		CHECK(ok && v3_io(ex, &h, 7) == 13 /* NFS3ERR_ACCES */,
		      "NFSv3 WRITE against DENY_WRITE: ACCES");
		CHECK(ok && v3_io(ex, &h, 2) == 13,
		      "NFSv3 SETATTR size against DENY_WRITE: ACCES");
		CHECK(ok && v3_io(ex, &h, 6) == 0,
		      "NFSv3 READ against DENY_WRITE: allowed");
	}

	/* Seqid replay: the same OPEN again gives the same bytes. */
	{
		struct reply r1 = {0}, r2 = {0};
		struct nfs4_stateid s1, s2;
		uint32_t seq = a.seqid;
		open40(&a, "f2", 1, 0, &s1, &r1, seq);
		a.seqid = seq;
		/* open40 confirms only new owners; a is confirmed now */
		st = open40(&a, "f2", 1, 0, &s2, &r2, seq);
		CHECK(st == NFS4_OK && r1.buf.len == r2.buf.len &&
		          !memcmp(r1.buf.buf + 4, r2.buf.buf + 4,
		                  r1.buf.len - 4) &&
		          !memcmp(&s1, &s2, sizeof(s1)),
		      "4.0 OPEN retransmission is answered from the replay "
		      "cache");
		st = open40(&a, "f2", 1, 0, &s2, &r2, seq + 5);
		CHECK(st == NFS4ERR_BAD_SEQID, "out-of-order seqid: BAD_SEQID");
		a.seqid = seq + 1;
		rep_free(&r1);
		rep_free(&r2);
	}

	/* Byte-range locks between a and b (b has a read open). */
	CHECK(lock40(&a, "f1", true, 0, 10, &sa, &la, false) == NFS4_OK,
	      "client a: write LOCK [0,10)");
	CHECK(lock40(&bcl, "f1", false, 5, 10, NULL, NULL, true) ==
	          NFS4ERR_DENIED,
	      "client b: LOCKT overlapping: DENIED");
	CHECK(lock40(&bcl, "f1", false, 20, 10, NULL, NULL, true) == NFS4_OK,
	      "client b: LOCKT disjoint: OK");
	CHECK(lock40(&bcl, "f1", false, 0, 1, &sb, &lb, false) ==
	          NFS4ERR_DENIED,
	      "client b: read LOCK overlapping: DENIED");
	CHECK(locku40("f1", 2, &la, 0, 10) == NFS4_OK, "client a: LOCKU");
	CHECK(lock40(&bcl, "f1", false, 0, 1, &sb, &lb, false) == NFS4_OK,
	      "client b: read LOCK after the unlock");
	CHECK(lock40(&a, "f1", true, 0, 0, &sa, &la, false) == NFS4ERR_INVAL,
	      "LOCK of length 0: INVAL");
	rep_free(&rep);
	rep_free(&rep2);
}

/* ---- 4.1 sessions ---- */

/* More opens than the stateid and file tables have buckets: every
 * stateid is found, closed ones are not, and what stays open still
 * works after its bucket neighbours went. */
#define MANY 4500
static void test_many_opens(void)
{
	static struct nfs4_stateid sid[MANY];
	struct client40 cl;
	struct reply rep = {0};
	char name[32], buf[16];
	bool ok = true;

	CHECK(setclientid(&cl, "client-many") == NFS4_OK, "many: SETCLIENTID");
	for (int i = 0; i < MANY && ok; i++) {
		snprintf(name, sizeof(name), "many-%d", i);
		ok =
		    open40(&cl, name, 3, 0, &sid[i], &rep, cl.seqid) == NFS4_OK;
		rep_free(&rep);
	}
	CHECK(ok, "many: 4500 opens");
	for (int i = 0; i < MANY && ok; i += 2) {
		snprintf(name, sizeof(name), "many-%d", i);
		ok = close40(name, cl.seqid++, &sid[i]) == NFS4_OK;
	}
	CHECK(ok, "many: every other one closed");
	for (int i = 0; i < MANY && ok; i++) {
		snprintf(name, sizeof(name), "many-%d", i);
		uint32_t st = io40(name, true, &sid[i], "zz", NULL, 0);
		ok = i % 2 ? st == NFS4_OK
		           : st == NFS4ERR_BAD_STATEID ||
		                 st == NFS4ERR_OLD_STATEID;
	}
	CHECK(ok, "many: open stateids work, closed ones are refused");
	snprintf(name, sizeof(name), "many-%d", MANY - 1);
	CHECK(io40(name, false, &sid[MANY - 1], NULL, buf, sizeof(buf)) ==
	              NFS4_OK &&
	          !strcmp(buf, "zz"),
	      "many: the last one reads back");
}

/* A reply's stream as the transport sends it; rep->res re-pointed at
 * the results in it (no part comes before them). */
static uint8_t *stream_of(struct reply *rep)
{
	uint8_t *s = reply_stream_of(&rep->buf);

	if (s) {
		size_t pos = rep->res.pos;
		xdr_in_init(&rep->res, s, xdr_out_size(&rep->buf));
		rep->res.pos = pos;
	}
	return s;
}

/* A COMPOUND reading count bytes at off of dir/big (anonymous stateid),
 * with SEQUENCE (seq, cachethis) for minor 1. Returns its status. */
static uint32_t read_big(struct reply *rep, uint32_t minor, uint32_t seq,
                         bool cachethis, const char *dir, uint64_t off,
                         uint32_t count, int nreads)
{
	struct nfs4_stateid anon = {0};
	struct cbuf b;

	c_begin(&b, minor);
	if (minor)
		op_sequence_c(&b, seq, cachethis);
	op_walk(&b, dir);
	op_name(&b, OP4_LOOKUP, "big");
	for (int k = 0; k < nreads; k++) {
		op(&b, OP4_READ);
		nfs4_put_stateid(&b.x, &anon);
		xdr_put_u64(&b.x, off);
		xdr_put_u32(&b.x, count);
	}
	return c_send(&b, rep);
}

/* Whether the last result in rep (a READ) holds want's n bytes, eof
 * unset, decoded from the reply's stream. */
static bool read_result_is(struct reply *rep, bool sequence,
                           const uint8_t *want, uint32_t want_n)
{
	uint8_t *s = stream_of(rep);
	const uint8_t *p;
	uint32_t n;
	bool eof, ok;

	skip_to_last(rep, sequence);
	ok = s && res_next(rep, OP4_READ) == NFS4_OK &&
	     xdr_get_bool(&rep->res, &eof) && !eof &&
	     xdr_get_opaque_ref(&rep->res, &p, &n, 1 << 20) && n == want_n &&
	     !memcmp(p, want, n);
	free(s);
	return ok;
}

static bool write_big(const char *dir, const uint8_t *data, size_t n)
{
	char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/big", dir);
	f = fopen(path, "w");
	return f && fwrite(data, 1, n, f) == n && fclose(f) == 0;
}

/* READ with the data in place: decoded from the stream, equal to the
 * file; a 4.1 reply with file parts is not kept for replay (the retry is
 * RETRY_UNCACHED_REP), one asked to be cached holds its bytes; the
 * session's reply limit counts bytes in place; no_zerocopy sends from a
 * mapping, or copies a READ under mapped_min. */
static void test_inplace_read(void)
{
	static uint8_t file[200 * 1024];
	struct session_opts cached64k = {1 << 20, 65536, 0};
	struct reply rep = {0}, rep2 = {0};
	uint32_t st, count;

	for (size_t i = 0; i < sizeof(file); i++)
		file[i] = (uint8_t)(i * 7 + (i >> 12));
	CHECK(write_big(rwdir, file, sizeof(file)), "inplace: file written");
	allow_files = true;

	st = read_big(&rep, 0, 0, false, rwdir, 1001, 150001, 1);
	CHECK(st == NFS4_OK && rep.buf.nparts == 1,
	      "inplace: 4.0 READ reply has a file part");
	CHECK(read_result_is(&rep, false, file + 1001, 150001),
	      "inplace: 4.0 READ data from the stream equal the file");

	CHECK(exchange_and_session_opts("inplace", &cached64k, NULL) == NFS4_OK,
	      "inplace: session (64 KiB cached replies)");
	for (int cache = 0; cache <= 1; cache++) {
		/* one to be cached must fit ca_maxresponsesize_cached */
		count = cache ? 40000 : 150001;
		st =
		    read_big(&rep, 1, ++slot_seq, cache, rwdir, 1001, count, 1);
		CHECK(st == NFS4_OK && rep.buf.nparts == (cache ? 0 : 1),
		      cache ? "inplace: cachethis READ is copied"
		            : "inplace: 4.1 READ reply has a file part");
		CHECK(read_result_is(&rep, true, file + 1001, count),
		      "inplace: 4.1 READ data from the stream equal the file");
		st = read_big(&rep2, 1, slot_seq, cache, rwdir, 1001, count, 1);
		if (cache)
			CHECK(st == NFS4_OK && rep2.buf.len == rep.buf.len &&
			          !memcmp(rep2.buf.buf + 4, rep.buf.buf + 4,
			                  rep.buf.len - 4),
			      "inplace: cached READ replays whole");
		else
			CHECK(st == NFS4ERR_RETRY_UNCACHED_REP,
			      "inplace: a reply with file parts is not kept "
			      "(RETRY_UNCACHED_REP)");
	}

	CHECK(exchange_and_session("inplace-small", 200000) == NFS4_OK,
	      "inplace: session with a 200000-byte reply limit");
	st = read_big(&rep, 1, ++slot_seq, false, rwdir, 0, 150000, 2);
	CHECK(st == NFS4_OK && rep.buf.nparts == 1 &&
	          xdr_out_size(&rep.buf) + 4 <= 200000,
	      "inplace: two READs fit the session's reply limit");

	CHECK(write_big(rodir, file, sizeof(file)),
	      "inplace: file written on the no_zerocopy export");
	st = read_big(&rep, 0, 0, false, rodir, 0, 150000, 1);
	CHECK(st == NFS4_OK && rep.buf.nparts == 1 && rep.buf.parts[0].mapped &&
	          read_result_is(&rep, false, file, 150000),
	      "inplace: no_zerocopy export: READ from a mapping, data equal");
	st = read_big(&rep, 0, 0, false, rodir, 0, 65535, 1);
	CHECK(st == NFS4_OK && rep.buf.nparts == 0 &&
	          read_result_is(&rep, false, file, 65535),
	      "inplace: no_zerocopy export: READ under mapped_min (64k) "
	      "copied");
	allow_files = false;
	rep_free(&rep);
	rep_free(&rep2);
}

static void test_sessions(void)
{
	struct reply rep = {0}, rep2 = {0};
	struct cbuf b;
	uint32_t st;

	c_begin(&b, 1);
	op(&b, OP4_EXCHANGE_ID);
	xdr_put_fixed(&b.x, "verifie1", 8);
	xdr_put_string(&b.x, "x");
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, 0);
	op(&b, OP4_PUTROOTFH);
	CHECK(c_send(&b, &rep) == NFS4ERR_NOT_ONLY_OP,
	      "EXCHANGE_ID + PUTROOTFH: NOT_ONLY_OP");

	CHECK(exchange_and_session("client41", 1 << 20) == NFS4_OK,
	      "EXCHANGE_ID + CREATE_SESSION");
	CHECK(exchange_and_session("tiny", 40) == NFS4ERR_TOOSMALL,
	      "CREATE_SESSION with a 40-byte reply limit: TOOSMALL");
	CHECK(exchange_and_session("client41", 1 << 20) == NFS4_OK,
	      "EXCHANGE_ID again + a second session");

	c_begin(&b, 1);
	op_sequence(&b, ++slot_seq);
	op(&b, OP4_PUTROOTFH);
	op(&b, OP4_OPEN);
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, 1);
	xdr_put_u32(&b.x, 0);
	xdr_put_u64(&b.x, 0);
	xdr_put_string(&b.x, "o");
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, 0);
	xdr_put_string(&b.x, "x");
	CHECK(c_send(&b, &rep) == NFS4ERR_GRACE,
	      "OPEN before RECLAIM_COMPLETE: GRACE");

	c_begin(&b, 1);
	op_sequence(&b, ++slot_seq);
	op(&b, OP4_RECLAIM_COMPLETE);
	xdr_put_bool(&b.x, false);
	CHECK(c_send(&b, &rep) == NFS4_OK, "SEQUENCE + RECLAIM_COMPLETE");

	/* A retransmission on the slot gets the cached reply. */
	c_begin(&b, 1);
	op_sequence(&b, ++slot_seq);
	op_walk(&b, rwdir);
	op(&b, OP4_GETFH);
	st = c_send(&b, &rep);
	c_begin(&b, 1);
	op_sequence(&b, slot_seq);
	op_walk(&b, rwdir);
	op(&b, OP4_GETFH);
	c_send(&b, &rep2);
	CHECK(st == NFS4_OK && rep.buf.len == rep2.buf.len &&
	          !memcmp(rep.buf.buf + 4, rep2.buf.buf + 4, rep.buf.len - 4),
	      "SEQUENCE retry: the slot's reply again");
	c_begin(&b, 1);
	op_sequence(&b, slot_seq + 5);
	CHECK(c_send(&b, &rep) == NFS4ERR_SEQ_MISORDERED,
	      "SEQUENCE skipping ahead: SEQ_MISORDERED");
	c_begin(&b, 1);
	op_sequence(&b, ++slot_seq);
	op(&b, OP4_SEQUENCE);
	xdr_put_fixed(&b.x, sessionid, 16);
	xdr_put_u32(&b.x, 1);
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, 0);
	xdr_put_bool(&b.x, false);
	CHECK(c_send(&b, &rep) == NFS4ERR_SEQUENCE_POS,
	      "second SEQUENCE: SEQUENCE_POS");
	c_begin(&b, 1);
	op_sequence(&b, ++slot_seq);
	op(&b, OP4_SETCLIENTID);
	CHECK(c_send(&b, &rep) == NFS4ERR_NOTSUPP,
	      "SETCLIENTID in 4.1: NOTSUPP");

	c_begin(&b, 1);
	op(&b, OP4_DESTROY_SESSION);
	xdr_put_fixed(&b.x, sessionid, 16);
	CHECK(c_send(&b, &rep) == NFS4_OK, "DESTROY_SESSION");
	c_begin(&b, 1);
	op_sequence(&b, ++slot_seq);
	CHECK(c_send(&b, &rep) == NFS4ERR_BADSESSION,
	      "SEQUENCE on a destroyed session: BADSESSION");
	rep_free(&rep);
	rep_free(&rep2);
}

/* A long 4.0 COMPOUND cut at every length, then randomly mutated: each
 * must give an answer or GARBAGE_ARGS, never a crash (the sanitizer build
 * checks memory). */
static void test_truncation_and_mutation(void)
{
	struct client40 cl;
	struct reply rep = {0};
	struct cbuf b;
	uint8_t *copy;
	size_t len;
	int bad = 0, answered = 0;

	setclientid(&cl, "client-fuzz");
	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_getattr(&b, 0xffffffff, 0xffffffff);
	op(&b, OP4_SAVEFH);
	op(&b, OP4_OPEN);
	xdr_put_u32(&b.x, 1);
	xdr_put_u32(&b.x, 3);
	xdr_put_u32(&b.x, 0);
	xdr_put_u64(&b.x, cl.clientid);
	xdr_put_string(&b.x, "fuzz-owner");
	xdr_put_u32(&b.x, 1);
	xdr_put_u32(&b.x, 1);
	xdr_put_u32(&b.x, 2);
	xdr_put_u32(&b.x, 1u << 4);
	xdr_put_u32(&b.x, 8);
	xdr_put_u64(&b.x, 0);
	xdr_put_u32(&b.x, 0);
	xdr_put_string(&b.x, "fuzzfile");
	op(&b, OP4_WRITE);
	xdr_put_u32(&b.x, 1);
	xdr_put_fixed(&b.x, "\0\0\0\0\0\0\0\0\0\0\0\0", 12);
	xdr_put_u64(&b.x, 0);
	xdr_put_u32(&b.x, 0);
	xdr_put_string(&b.x, "data");
	op(&b, OP4_READDIR);
	xdr_put_u64(&b.x, 0);
	xdr_put_u64(&b.x, 0);
	xdr_put_u32(&b.x, 1024);
	xdr_put_u32(&b.x, 4096);
	xdr_put_u32(&b.x, 2);
	xdr_put_u32(&b.x, 0xffffffff);
	xdr_put_u32(&b.x, 0xffffffff);
	op(&b, OP4_RESTOREFH);
	op_name(&b, OP4_REMOVE, "fuzzfile");
	len = b.x.len;
	copy = malloc(len);
	memcpy(copy, b.x.buf, len);
	xdr_out_free(&b.x);
	for (size_t n = 0; n <= len; n++) {
		send_raw(copy, n, 1, &rep);
		if (rep.stat == 0)
			answered++;
		else if (rep.stat != RPC_GARBAGE_ARGS)
			bad++;
	}
	CHECK(bad == 0, "truncated COMPOUNDs: a reply or GARBAGE_ARGS each");
	CHECK(answered > 0, "some truncated COMPOUNDs still answered");
	srand(4242);
	bad = 0;
	for (int i = 0; i < 10000; i++) {
		uint8_t *m = malloc(len);
		int flips = 1 + rand() % 8;
		memcpy(m, copy, len);
		for (int f = 0; f < flips; f++) {
			size_t at = (size_t)rand() % len;
			switch (rand() % 3) {
			case 0:
				m[at] ^= (uint8_t)(1u << (rand() % 8));
				break;
			case 1:
				m[at] = (uint8_t)rand();
				break;
			default:
				if (at + 4 <= len)
					memset(m + at, 0xff, 4);
			}
		}
		send_raw(m, (size_t)rand() % (len + 1), 1, &rep);
		if (rep.stat != 0 && rep.stat != RPC_GARBAGE_ARGS)
			bad++;
		free(m);
	}
	CHECK(bad == 0,
	      "10000 mutated COMPOUNDs: a reply or GARBAGE_ARGS each");
	free(copy);
	rep_free(&rep);
}

/* Random operation sequences with random arguments, in 4.0 and (after a
 * real SEQUENCE) in 4.2, some starting from the rw export: every decoder
 * sees garbage; the answer must be a reply or GARBAGE_ARGS. */
static void test_random_compounds(void)
{
	struct reply rep = {0};
	struct cbuf b;
	int bad = 0, n = 0;

	exchange_and_session("client-random", 1 << 20);
	c_begin(&b, 1);
	op_sequence(&b, ++slot_seq);
	op(&b, OP4_RECLAIM_COMPLETE);
	xdr_put_bool(&b.x, false);
	c_send(&b, &rep);
	srand(777);
	for (int i = 0; i < 6000; i++) {
		uint32_t minor = (i & 1) ? 2 : 0;
		int nops = 1 + rand() % 6;

		c_begin(&b, minor);
		if (minor)
			op_sequence(&b, ++slot_seq);
		if (rand() % 2)
			op_walk(&b, rwdir);
		for (int k = 0; k < nops; k++) {
			int words = rand() % 24;
			uint32_t o = (uint32_t)(rand() % 78);
			/* ALLOCATE could reserve real disk space. */
			op(&b, o == OP4_ALLOCATE ? OP4_DEALLOCATE : o);
			for (int w = 0; w < words; w++)
				xdr_put_u32(&b.x, rand() % 3
				                      ? (uint32_t)(rand() % 8)
				                      : (uint32_t)rand());
		}
		send_raw(b.x.buf, b.x.len, 1, &rep);
		xdr_out_free(&b.x);
		n++;
		if (rep.stat != 0 && rep.stat != RPC_GARBAGE_ARGS)
			bad++;
	}
	CHECK(bad == 0 && n == 6000,
	      "6000 random COMPOUNDs (4.0 and 4.2): a reply or GARBAGE_ARGS "
	      "each");
	rep_free(&rep);
}

/* A client that stops renewing loses its locks after the lease (3 s
 * here); another client then gets them. The open it closed last, kept
 * for a retransmission of the CLOSE, goes too. */
static void test_lease(void)
{
	struct client40 a, bcl;
	struct nfs4_stateid sa, sb, la, lb, sc;
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st, cseq;

	setclientid(&a, "lease-a");
	CHECK(open40(&a, "leased", 3, 0, &sa, &rep, 1) == NFS4_OK &&
	          lock40(&a, "leased", true, 0, 100, &sa, &la, false) ==
	              NFS4_OK,
	      "lease: client a opens and locks");
	cseq = a.seqid;
	CHECK(open40(&a, "leased-c", 3, 0, &sc, &rep, cseq) == NFS4_OK &&
	          close40("leased-c", cseq + 1, &sc) == NFS4_OK &&
	          close40("leased-c", cseq + 1, &sc) == NFS4_OK &&
	          stid_hashed(&sc),
	      "lease: client a opens and closes another file (the CLOSE "
	      "retransmitted is replayed, its stateid kept for that)");
	sleep(nfs4_lease_time(S.nfs4) + 2);
	setclientid(&bcl, "lease-b");
	CHECK(open40(&bcl, "leased", 3, 0, &sb, &rep, 1) == NFS4_OK,
	      "lease: client b opens after a's lease ran out");
	st = lock40(&bcl, "leased", true, 0, 100, &sb, &lb, false);
	CHECK(st == NFS4_OK, "lease: client b gets the lock a held");
	c_begin(&b, 0);
	op(&b, OP4_RENEW);
	xdr_put_u64(&b.x, a.clientid);
	st = c_send(&b, &rep);
	CHECK(st == NFS4ERR_EXPIRED || st == NFS4ERR_STALE_CLIENTID,
	      "lease: RENEW of the expired client fails");
	CHECK(!stid_hashed(&sc) &&
	          close40("leased-c", cseq + 1, &sc) == NFS4ERR_BAD_STATEID,
	      "lease: the closed stateid kept went with the expired client: "
	      "its CLOSE retransmitted is BAD_STATEID");
	rep_free(&rep);
}

/* ---- the client record (server/nfs4/clientrec.c) ---- */

/* A client owner as the record writes it: lowercase hex (up to 60
 * bytes: the tests' owners are short). */
static void owner_hex(const char *owner, char hex[128])
{
	hex[0] = 0;
	for (size_t i = 0; owner[i] && i < 60; i++)
		snprintf(hex + 2 * i, 3, "%02x", (uint8_t)owner[i]);
}

/* Whether the state directory's record, replayed as a restart would,
 * names owner. */
static bool record_lists(const char *owner)
{
	char hex[128], path[128], *line = NULL;
	size_t cap = 0;
	bool in = false;
	FILE *f;

	owner_hex(owner, hex);
	snprintf(path, sizeof(path), "%s/nfs4_clients", base);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		char *p = line;
		bool add = true;

		line[strcspn(line, "\n")] = 0;
		if (*p == '+' || *p == '-')
			add = *p++ == '+';
		if (!strcmp(p, hex))
			in = add;
	}
	free(line);
	fclose(f);
	return in;
}

static bool reclaim_lists(const char *owner)
{
	char hex[128];

	owner_hex(owner, hex);
	for (size_t i = 0; i < S.nfs4->nreclaim; i++)
		if (S.nfs4->reclaim[i] && !strcmp(S.nfs4->reclaim[i], hex))
			return true;
	return false;
}

static off_t record_size(void)
{
	char path[128];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/nfs4_clients", base);
	return stat(path, &sb) == 0 ? sb.st_size : -1;
}

/* Clients that were granted state are in the record, clients gone are
 * not (one whose lease expired, one that destroyed itself), nor is one
 * that never opened a file; a restart gives a grace period to the
 * clients of the record only; a client of the record coming back writes
 * nothing; when grace ends, the clients that did not come back leave the
 * record. Run after test_lease (lease-a expired there) and last: the
 * restart starts a grace period. */
static void test_record(void)
{
	struct open_spec o = spec41("rec-owner", "rec-file", T_UNCHECKED4);
	struct open_res r;
	uint64_t id;
	off_t size;

	CHECK(record_lists("lease-b"),
	      "record: a 4.0 client that opened is in it");
	CHECK(!record_lists("lease-a") && !record_lists("client41"),
	      "record: clients whose lease expired are not");
	size = record_size();
	CHECK(session41("rec-gone", NULL) == NFS4_OK &&
	          !record_lists("rec-gone") && record_size() == size,
	      "record: a 4.1 mount that opened nothing is not (nothing "
	      "written)");
	CHECK(open41(&o, &r) == NFS4_OK && record_lists("rec-gone"),
	      "record: its first OPEN puts it in");
	id = session_clientid;
	CHECK(sid_op41(OP4_CLOSE, "rec-file", &r.sid, NULL) == NFS4_OK &&
	          destroy_session() == NFS4_OK &&
	          destroy_clientid(id, false) == NFS4_OK &&
	          !record_lists("rec-gone"),
	      "record: CLOSE and DESTROY_CLIENTID take it out");
	CHECK(session41("rec-back", NULL) == NFS4_OK &&
	          open41(&o, &r) == NFS4_OK,
	      "record: a client that stays, holding an open");
	CHECK(session41("rec-idle", NULL) == NFS4_OK,
	      "record: and one that stays mounted, holding nothing");

	nfs4_server_free(S.nfs4); /* a restart, as far as NFSv4 goes */
	S.nfs4 = NULL;
	CHECK(nfs4_server_get(&S) && nfs4_in_grace(S.nfs4),
	      "record: after a restart, grace");
	CHECK(reclaim_lists("rec-back") && reclaim_lists("lease-b") &&
	          !reclaim_lists("rec-gone") && !reclaim_lists("lease-a") &&
	          !reclaim_lists("rec-idle"),
	      "record: for the clients of the record only");
	size = record_size();
	CHECK(exchange_and_session("rec-back", 1 << 20) == NFS4_OK &&
	          record_size() == size,
	      "record: a client of the record coming back writes nothing");
	sleep(nfs4_lease_time(S.nfs4) + 1);
	CHECK(!nfs4_in_grace(S.nfs4), "record: grace ends after a lease");
	CHECK(record_lists("rec-back") && !record_lists("lease-b"),
	      "record: the clients that did not come back leave it then");
}

/* READDIR asking type, rdattr_error, fileid and mounted_on_fileid (what
 * `ls -f` needs; served from the directory entries without a stat) gives
 * each name's lstat type and inode, page after page. */
static int rdl_page(const char *dir, uint64_t *cookie, int *seen, int *bad,
                    bool *eof)
{
	char path[512], name[256];
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st, more = 0, nw, w[3], alen, type, err, e;
	uint64_t fileid, mounted;
	const uint8_t *p;
	uint32_t n;
	struct stat sb;

	c_begin(&b, 0);
	op_walk(&b, dir);
	op(&b, OP4_READDIR);
	xdr_put_u64(&b.x, *cookie);
	xdr_put_u64(&b.x, 0);
	xdr_put_u32(&b.x, 512);
	xdr_put_u32(&b.x, 512);
	xdr_put_u32(&b.x, 2);
	xdr_put_u32(&b.x, (1u << 1) | (1u << 11) | (1u << 20));
	xdr_put_u32(&b.x, 1u << (55 - 32));
	st = c_send(&b, &rep);
	if (st != NFS4_OK) {
		rep_free(&rep);
		return -1;
	}
	res_next(&rep, OP4_PUTROOTFH);
	for (const char *c = strchr(dir, '/'); c; c = strchr(c + 1, '/'))
		res_next(&rep, OP4_LOOKUP);
	res_next(&rep, OP4_READDIR);
	xdr_skip(&rep.res, 8);
	while (xdr_get_u32(&rep.res, &more) && more) {
		xdr_get_u64(&rep.res, cookie);
		xdr_get_opaque_ref(&rep.res, &p, &n, 255);
		snprintf(name, sizeof(name), "%.*s", (int)n, (const char *)p);
		xdr_get_u32(&rep.res, &nw);
		for (uint32_t i = 0; i < nw && i < 3; i++)
			xdr_get_u32(&rep.res, &w[i]);
		xdr_get_u32(&rep.res, &alen);
		xdr_get_u32(&rep.res, &type);
		xdr_get_u32(&rep.res, &err);
		xdr_get_u64(&rep.res, &fileid);
		xdr_get_u64(&rep.res, &mounted);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		e = lstat(path, &sb)       ? 0
		    : S_ISREG(sb.st_mode)  ? NF4REG
		    : S_ISDIR(sb.st_mode)  ? NF4DIR
		    : S_ISLNK(sb.st_mode)  ? NF4LNK
		    : S_ISFIFO(sb.st_mode) ? NF4FIFO
		                           : 0;
		if (nw != 2 || w[0] != ((1u << 1) | (1u << 11) | (1u << 20)) ||
		    w[1] != 1u << (55 - 32) || alen != 24 || err != 0 ||
		    e == 0 || type != e || fileid != sb.st_ino ||
		    mounted != sb.st_ino)
			(*bad)++;
		(*seen)++;
	}
	xdr_get_u32(&rep.res, &more);
	*eof = more != 0;
	st = rep.res.err ? 0xbad : 0;
	rep_free(&rep);
	return st ? -1 : 0;
}

static void test_readdir_light(void)
{
	char dir[160], path[200];
	uint64_t cookie = 0;
	int seen = 0, bad = 0, pages = 0, fd;
	bool eof = false;

	snprintf(dir, sizeof(dir), "%s/rdl", rwdir);
	mkdir(dir, 0755);
	for (int i = 0; i < 40; i++) {
		snprintf(path, sizeof(path), "%s/file%02d", dir, i);
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		if (fd >= 0)
			close(fd);
	}
	snprintf(path, sizeof(path), "%s/sub", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/ln", dir);
	if (symlink("file00", path) != 0)
		printf("# symlink failed\n");
	snprintf(path, sizeof(path), "%s/fifo", dir);
	mkfifo(path, 0644);
	while (!eof && pages < 100 &&
	       rdl_page(dir, &cookie, &seen, &bad, &eof) == 0)
		pages++;
	CHECK(eof && pages > 1, "light READDIR: pages of 512 bytes to eof");
	CHECK(seen == 43 && bad == 0,
	      "light READDIR: every name's type and fileid as lstat says");
}

int main(void)
{
	int rc;

	setenv("SNFSD_NFS4_LEASE", "3", 1);
	log_set_level(LOG_ERR);
	rc = setup();
	CHECK(rc == 0, "setup: exports and service");
	if (rc)
		TEST_EXIT();
	test_header();
	test_pseudofs();
	test_state40();
	test_many_opens();
	test_sessions();
	test_inplace_read();
	test_truncation_and_mutation();
	test_random_compounds();
	test_readdir_light();
	test_lease();
	test_record();
	testsrv_stop(base);
	TEST_EXIT();
}
