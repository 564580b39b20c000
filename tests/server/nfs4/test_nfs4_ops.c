/* NFSv4 operations and rules one by one, end to end through
 * rpc_service_handle(): the 4.1 reply limits, the current stateid,
 * READDIR cookies, CREATE_SESSION flags and OPEN's delegations, VERIFY,
 * NVERIFY, PUTPUBFH, OPEN_DOWNGRADE, DELEGRETURN, BIND_CONN_TO_SESSION,
 * TEST_STATEID, FREE_STATEID, SECINFO, DESTROY_CLIENTID, the 4.0
 * lock-owner (RELEASE_LOCKOWNER, seqid replay), the 4.0 CLOSE
 * retransmitted, OPEN's create modes, the operations a minor version
 * lacks, root_squash, the limits GETATTR tells and WRITE past maxwrite.
 * Each check holds the server to a status or value of RFC 7530 (4.0),
 * RFC 8881 (4.1) or RFC 7862 (4.2). */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../test.h"
#include "../file_testlib.h"
#include "compound_testlib.h"
#include "server/exports.h"
#include "server/nfs4/nfs4.h"
#include "server/nlm/nlm.h"
#include "state_testlib.h"
#include "util/log.h"

static char base[64], rodir[96], sqdir[96];

#define ANON_ID 65534u /* exports(5) anonuid/anongid default */
#define BIG_SIZE 20000

/* Attribute numbers (RFC 8881 5.6, 5.7). */
enum {
	AT_SUPPORTED = 0,
	AT_TYPE = 1,
	AT_SIZE = 4,
	AT_RDATTR_ERROR = 11,
	AT_ACL = 12,
	AT_FILEHANDLE = 19,
	AT_FILEID = 20,
	AT_MAXREAD = 30,
	AT_MAXWRITE = 31,
	AT_MODE = 33,
	AT_TIME_ACCESS_SET = 48,
	AT_TIME_MODIFY_SET = 54,
	AT_MOUNTED_ON = 55,
	AT_EXCLCREAT = 75,
};

static void bm_add(uint32_t bm[3], unsigned a)
{
	bm[a / 32] |= 1u << (a % 32);
}

static bool bm_has(const uint32_t bm[3], unsigned a)
{
	return (bm[a / 32] >> (a % 32)) & 1;
}

/* ---- setup ---- */

static bool write_file(const char *dir, const char *name, size_t n)
{
	char path[200];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return false;
	ok = true;
	for (size_t i = 0; i < n && ok; i++)
		ok = fputc((int)(i * 7 % 251), f) != EOF;
	return fclose(f) == 0 && ok;
}

static int setup(void)
{
	const char *specs[3];
	char spec_rw[160], spec_ro[160], spec_sq[160], err[256];
	struct export_table *t;
	int rc;

	snprintf(base, sizeof(base), "/tmp/snfs-nfs4ops-XXXXXX");
	if (!mkdtemp(base))
		return -errno;
	snprintf(rwdir, sizeof(rwdir), "%s/a/rw", base);
	snprintf(rodir, sizeof(rodir), "%s/ro", base);
	snprintf(sqdir, sizeof(sqdir), "%s/sq", base);
	snprintf(spec_rw, sizeof(spec_rw), "%s/a", base);
	mkdir(spec_rw, 0755);
	mkdir(rwdir, 0755);
	mkdir(rodir, 0755);
	mkdir(sqdir, 0777);
	/* the squashed uid must be able to create there */
	if (chmod(sqdir, 0777) || !write_file(rwdir, "big", BIG_SIZE))
		return -errno;
	snprintf(spec_rw, sizeof(spec_rw), "%s:rw,insecure,no_root_squash",
	         rwdir);
	snprintf(spec_ro, sizeof(spec_ro), "%s:ro,insecure,no_root_squash",
	         rodir);
	snprintf(spec_sq, sizeof(spec_sq), "%s:rw,insecure,root_squash", sqdir);
	specs[0] = spec_rw;
	specs[1] = spec_ro;
	specs[2] = spec_sq;
	rc = exports_load(NULL, specs, 3, &t, err, sizeof(err));
	if (rc) {
		printf("# exports_load: %s\n", err);
		return rc;
	}
	return testsrv_start(t, base);
}

/* ---- helpers ---- */

/* How many ops op_walk makes for path. */
static uint32_t walk_ops(const char *path)
{
	uint32_t n = 1;

	for (const char *p = path; *p; p++)
		if (*p == '/' && p[1] && p[1] != '/')
			n++;
	return n;
}

/* Whether the last result in rep is op's with status st (those before
 * it of fixed shape: SEQUENCE, the walk, LOOKUP). */
static bool last_is(struct reply *rep, bool sequence, uint32_t opnum,
                    uint32_t st)
{
	skip_to_last(rep, sequence);
	return res_next(rep, opnum) == st;
}

static void op_getattr_bm(struct cbuf *b, const uint32_t bm[3])
{
	op(b, OP4_GETATTR);
	xdr_put_u32(&b->x, 3);
	for (int i = 0; i < 3; i++)
		xdr_put_u32(&b->x, bm[i]);
}

/* GETATTR of bm on dir (and name in it): the fattr4's bitmap and values
 * (a cursor over the attrlist) out; the reply stays in *rep. */
static uint32_t getattr_of(uint32_t minor, const char *dir, const char *name,
                           const uint32_t bm[3], uint32_t got[3],
                           struct reply *rep)
{
	struct cbuf b;
	uint32_t st, len;

	if (minor)
		c41(&b, dir);
	else {
		c_begin(&b, 0);
		op_walk(&b, dir);
	}
	if (name)
		op_name(&b, OP4_LOOKUP, name);
	op_getattr_bm(&b, bm);
	st = c_send(&b, rep);
	if (st != NFS4_OK)
		return st;
	skip_to_last(rep, minor > 0);
	if (res_next(rep, OP4_GETATTR) != NFS4_OK ||
	    !nfs4_get_bitmap(&rep->res, got) || !xdr_get_u32(&rep->res, &len))
		return 0xbad;
	return NFS4_OK;
}

/* ---- 4.1 reply limits (RFC 8881 2.10.6.4, 18.36.3) ---- */

/* GETATTR of every readable attribute (not the two write-only times). */
static void op_getattr_all(struct cbuf *b)
{
	op_getattr(b, 0xffffffff,
	           0xffffffff & ~(1u << (AT_TIME_ACCESS_SET - 32)) &
	               ~(1u << (AT_TIME_MODIFY_SET - 32)));
}

/* SEQUENCE (cachethis), PUTROOTFH, GETATTR of everything. */
static uint32_t getattr_all41(bool cachethis, struct reply *rep)
{
	struct cbuf b;

	c_begin(&b, 1);
	op_sequence_c(&b, ++slot_seq, cachethis);
	op(&b, OP4_PUTROOTFH);
	op_getattr_all(&b);
	return c_send(&b, rep);
}

/* A reply that would pass ca_maxresponsesize is REP_TOO_BIG, one asked
 * to be cached past ca_maxresponsesize_cached REP_TOO_BIG_TO_CACHE; the
 * error reply itself fits the limit. */
static void test_reply_limits(void)
{
	struct session_opts small = {300, 8192, 0},
	                    tiny_cache = {1 << 20, 256, 0};
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	CHECK(session41("limits-small", &small) == NFS4_OK,
	      "limits: session with a 300-byte ca_maxresponsesize");
	st = getattr_all41(false, &rep);
	CHECK(st == NFS4ERR_REP_TOO_BIG && rep.nres == 3 &&
	          rep.buf.len <= 300 &&
	          last_is(&rep, true, OP4_GETATTR, NFS4ERR_REP_TOO_BIG),
	      "limits: GETATTR of everything past 300 bytes: REP_TOO_BIG, the "
	      "reply within the limit");
	c_begin(&b, 1);
	op_sequence(&b, ++slot_seq);
	op(&b, OP4_PUTROOTFH);
	op(&b, OP4_GETFH);
	st = c_send(&b, &rep);
	CHECK(st == NFS4_OK && rep.buf.len <= 300,
	      "limits: a reply that fits 300 bytes is sent");

	CHECK(session41("limits-cache", &tiny_cache) == NFS4_OK,
	      "limits: session with a 256-byte ca_maxresponsesize_cached");
	st = getattr_all41(true, &rep);
	CHECK(
	    st == NFS4ERR_REP_TOO_BIG_TO_CACHE &&
	        last_is(&rep, true, OP4_GETATTR, NFS4ERR_REP_TOO_BIG_TO_CACHE),
	    "limits: cachethis GETATTR past 256 bytes: REP_TOO_BIG_TO_CACHE");
	CHECK(getattr_all41(false, &rep) == NFS4_OK && rep.buf.len > 256,
	      "limits: the same GETATTR not to be cached is sent whole");
	rep_free(&rep);
}

/* READ and READDIR asked to be cached make their replies fit
 * ca_maxresponsesize_cached (a short READ, fewer entries; RFC 8881
 * 18.22.3, 18.23.3 let them), and the retry gets that reply again. */
static void test_reply_limits_cached_io(void)
{
	struct session_opts so = {1 << 20, 4096, 0};
	struct nfs4_stateid anon = {0};
	struct reply rep = {0}, rep2 = {0};
	const uint8_t *p;
	uint32_t st = 0, n = 0, seq = 0;
	bool eof = true, same = true;
	char dir[160];
	struct cbuf b;

	CHECK(session41("limits-io", &so) == NFS4_OK,
	      "limits: session with a 4096-byte ca_maxresponsesize_cached");
	for (int pass = 0; pass < 2; pass++) {
		c_begin(&b, 1);
		if (pass == 0)
			seq = ++slot_seq;
		op_sequence_c(&b, seq, true);
		op_walk(&b, rwdir);
		op_name(&b, OP4_LOOKUP, "big");
		op(&b, OP4_READ);
		nfs4_put_stateid(&b.x, &anon);
		xdr_put_u64(&b.x, 0);
		xdr_put_u32(&b.x, 16000);
		st = c_send(&b, pass ? &rep2 : &rep);
	}
	skip_to_last(&rep, true);
	if (st == NFS4_OK && res_next(&rep, OP4_READ) == NFS4_OK &&
	    xdr_get_bool(&rep.res, &eof) &&
	    xdr_get_opaque_ref(&rep.res, &p, &n, 16000))
		for (uint32_t i = 0; i < n; i++)
			same &= p[i] == (uint8_t)(i * 7 % 251);
	CHECK(st == NFS4_OK && rep.buf.len <= 4096 && n > 0 && n < 16000 &&
	          !eof && same,
	      "limits: cachethis READ of 16000 bytes is short, fits the "
	      "4096-byte cached limit");
	CHECK(rep2.buf.len == rep.buf.len &&
	          !memcmp(rep.buf.buf + 4, rep2.buf.buf + 4, rep.buf.len - 4),
	      "limits: its retry gets the cached reply");

	snprintf(dir, sizeof(dir), "%s/many", rwdir);
	mkdir(dir, 0755);
	for (int i = 0; i < 100; i++) {
		char path[400];
		int fd;

		snprintf(
		    path, sizeof(path),
		    "%s/a-long-name-so-that-the-listing-outgrows-the-cache-"
		    "%03d",
		    dir, i);
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		if (fd >= 0)
			close(fd);
	}
	c_begin(&b, 1);
	op_sequence_c(&b, ++slot_seq, true);
	op_walk(&b, dir);
	op(&b, OP4_READDIR);
	xdr_put_u64(&b.x, 0);
	xdr_put_u64(&b.x, 0);
	xdr_put_u32(&b.x, 8192);
	xdr_put_u32(&b.x, 65536);
	xdr_put_u32(&b.x, 1);
	xdr_put_u32(&b.x, 1u << AT_FILEHANDLE);
	st = c_send(&b, &rep);
	CHECK(st == NFS4_OK && rep.buf.len <= 4096,
	      "limits: cachethis READDIR fits the cached limit");
	rep_free(&rep);
	rep_free(&rep2);
}

/* ---- the current stateid (RFC 8881 16.2.3.1.2) ---- */

static const struct nfs4_stateid cur_sid = {.seqid = 1};

static void put_write(struct cbuf *b, const struct nfs4_stateid *sid,
                      const char *data)
{
	op(b, OP4_WRITE);
	nfs4_put_stateid(&b->x, sid);
	xdr_put_u64(&b->x, 0);
	xdr_put_u32(&b->x, 2); /* FILE_SYNC4 */
	xdr_put_string(&b->x, data);
}

static void put_read(struct cbuf *b, const struct nfs4_stateid *sid)
{
	op(b, OP4_READ);
	nfs4_put_stateid(&b->x, sid);
	xdr_put_u64(&b->x, 0);
	xdr_put_u32(&b->x, 100);
}

static void put_close(struct cbuf *b, const struct nfs4_stateid *sid)
{
	op(b, OP4_CLOSE);
	xdr_put_u32(&b->x, 0);
	nfs4_put_stateid(&b->x, sid);
}

/* OPEN, WRITE, READ and CLOSE of one file in one COMPOUND, each after
 * OPEN naming its stateid as "the current one". */
static void test_current_open_write_read_close(void)
{
	struct open_spec o = spec41("csid", "cs1", T_UNCHECKED4);
	struct reply rep = {0};
	struct open_res r;
	struct cbuf b;
	const uint8_t *p;
	uint32_t st, v, n = 0;
	bool eof, ok;

	c41(&b, rwdir);
	op_open(&b, &o);
	put_write(&b, &cur_sid, "abc");
	put_read(&b, &cur_sid);
	put_close(&b, &cur_sid);
	st = c_send(&b, &rep);
	skip_n(&rep, 1 + walk_ops(rwdir), true);
	ok = res_next(&rep, OP4_OPEN) == NFS4_OK &&
	     get_open_res(&rep.res, &r) &&
	     res_next(&rep, OP4_WRITE) == NFS4_OK &&
	     xdr_get_u32(&rep.res, &v) && v == 3 && xdr_skip(&rep.res, 12) &&
	     res_next(&rep, OP4_READ) == NFS4_OK &&
	     xdr_get_bool(&rep.res, &eof) &&
	     xdr_get_opaque_ref(&rep.res, &p, &n, 100) && n == 3 &&
	     !memcmp(p, "abc", 3) && res_next(&rep, OP4_CLOSE) == NFS4_OK;
	CHECK(st == NFS4_OK && ok,
	      "current stateid: OPEN WRITE READ CLOSE in one COMPOUND");
	rep_free(&rep);
}

/* Without an op that set it, or after a PUTROOTFH/LOOKUP cleared it, the
 * current stateid is BAD_STATEID; SAVEFH/RESTOREFH carry it along. */
static void test_current_cleared_and_saved(void)
{
	struct open_spec o = spec41("csid", "cs1", T_NOCREATE);
	struct reply rep = {0};
	struct open_res r;
	struct cbuf b;
	uint32_t st;

	c41(&b, rwdir);
	op_name(&b, OP4_LOOKUP, "cs1");
	put_read(&b, &cur_sid);
	st = c_send(&b, &rep);
	CHECK(st == NFS4ERR_BAD_STATEID &&
	          last_is(&rep, true, OP4_READ, NFS4ERR_BAD_STATEID),
	      "current stateid: none set: BAD_STATEID");

	c41(&b, rwdir);
	op_open(&b, &o);
	op_walk(&b, rwdir);
	op_name(&b, OP4_LOOKUP, "cs1");
	put_close(&b, &cur_sid);
	st = c_send(&b, &rep);
	skip_n(&rep, 1 + walk_ops(rwdir), true);
	CHECK(st == NFS4ERR_BAD_STATEID &&
	          res_next(&rep, OP4_OPEN) == NFS4_OK &&
	          get_open_res(&rep.res, &r) &&
	          rep.nres == 4 + 2 * walk_ops(rwdir),
	      "current stateid: OPEN, then PUTROOTFH+LOOKUPs clear it: "
	      "CLOSE gets BAD_STATEID");

	c41(&b, rwdir);
	op_open(&b, &o);
	op(&b, OP4_SAVEFH);
	op(&b, OP4_PUTROOTFH);
	op(&b, OP4_RESTOREFH);
	put_write(&b, &cur_sid, "xyz");
	st = c_send(&b, &rep);
	CHECK(st == NFS4_OK,
	      "current stateid: SAVEFH, PUTROOTFH, RESTOREFH bring it back");

	c41(&b, rwdir);
	op_open(&b, &o);
	op(&b, OP4_GETFH);
	op(&b, OP4_SETATTR);
	nfs4_put_stateid(&b.x, &cur_sid);
	xdr_put_u32(&b.x, 1);
	xdr_put_u32(&b.x, 1u << AT_SIZE);
	xdr_put_u32(&b.x, 8);
	xdr_put_u64(&b.x, 8);
	op(&b, OP4_FREE_STATEID);
	nfs4_put_stateid(&b.x, &cur_sid);
	st = c_send(&b, &rep);
	CHECK(st == NFS4ERR_LOCKS_HELD && rep.nres == walk_ops(rwdir) + 5,
	      "current stateid: GETFH keeps it; SETATTR of the size with it; "
	      "FREE_STATEID of the open: LOCKS_HELD");
	CHECK(sid_op41(OP4_CLOSE, "cs1", &r.sid, NULL) == NFS4_OK,
	      "current stateid: the open closes (stateid seqid 0)");
	rep_free(&rep);
}

/* LOCK from the current (open) stateid, WRITE and LOCKU with the current
 * (lock) stateid; 4.0 has no current stateid. */
static void test_current_lock(void)
{
	struct open_spec o = spec41("csid", "cs2", T_UNCHECKED4);
	struct client40 cl;
	struct reply rep = {0};
	struct open_res r;
	struct cbuf b;
	uint32_t st;

	c41(&b, rwdir);
	op_open(&b, &o);
	op_lock_new(&b, true, 0, UINT64_MAX, 0, &cur_sid, 0, "csid-lock");
	put_write(&b, &cur_sid, "lk");
	op_locku(&b, 0, &cur_sid, 0, UINT64_MAX);
	st = c_send(&b, &rep);
	skip_n(&rep, 1 + walk_ops(rwdir), true);
	CHECK(st == NFS4_OK && res_next(&rep, OP4_OPEN) == NFS4_OK &&
	          get_open_res(&rep.res, &r),
	      "current stateid: OPEN LOCK WRITE LOCKU in one COMPOUND");
	CHECK(sid_op41(OP4_CLOSE, "cs2", &r.sid, NULL) == NFS4_OK,
	      "current stateid: ... and the open closes");

	CHECK(setclientid(&cl, "csid40") == NFS4_OK, "current stateid: 4.0 "
	                                             "client");
	o.seqid = 1;
	o.clientid = cl.clientid;
	o.owner = cl.owner;
	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_open(&b, &o);
	put_write(&b, &cur_sid, "no");
	st = c_send(&b, &rep);
	CHECK(st == NFS4ERR_BAD_STATEID,
	      "current stateid: none in 4.0 (seqid 1, other 0 is a reserved "
	      "stateid: BAD_STATEID, RFC 7530 9.1.4.3)");
	rep_free(&rep);
}

static void test_current_stateid(void)
{
	CHECK(session41("csid", NULL) == NFS4_OK, "current stateid: session");
	test_current_open_write_read_close();
	test_current_cleared_and_saved();
	test_current_lock();
}

/* ---- READDIR cookies (RFC 7530 16.24.4, RFC 8881 18.23.3) ---- */

/* READDIR of dir from cookie with verifier verf (4.0); the reply's
 * verifier, the last cookie and eof out. */
static uint32_t readdir_at(const char *dir, uint64_t cookie,
                           const uint8_t verf[8], uint8_t verf_out[8],
                           uint64_t *last, bool *eof)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st, more = 0, bm[3], n;
	const uint8_t *p;

	c_begin(&b, 0);
	op_walk(&b, dir);
	op(&b, OP4_READDIR);
	xdr_put_u64(&b.x, cookie);
	xdr_put_fixed(&b.x, verf, 8);
	xdr_put_u32(&b.x, 256);
	xdr_put_u32(&b.x, 512);
	xdr_put_u32(&b.x, 0); /* no attributes */
	st = c_send(&b, &rep);
	if (st == NFS4_OK) {
		skip_to_last(&rep, false);
		res_next(&rep, OP4_READDIR);
		xdr_get_fixed(&rep.res, verf_out, 8);
		while (xdr_get_u32(&rep.res, &more) && more &&
		       xdr_get_u64(&rep.res, last) &&
		       xdr_get_opaque_ref(&rep.res, &p, &n, 255) &&
		       nfs4_get_bitmap(&rep.res, bm) &&
		       xdr_get_opaque_ref(&rep.res, &p, &n, 4096))
			;
		xdr_get_bool(&rep.res, eof);
		if (rep.res.err)
			st = 0xbad;
	}
	rep_free(&rep);
	return st;
}

/* A listing resumed across a change of the directory, or with a
 * verifier the server never gave, is NOT_SAME; cookies 1 and 2 and one
 * the directory has no place for are BAD_COOKIE. */
static void test_readdir_cookies(void)
{
	static const uint8_t zero[8], bogus[8] = "bogusvrf";
	struct timespec old[2] = {{1000000000, 0}, {1000000000, 0}};
	char dir[160], path[200];
	uint8_t v1[8], v2[8], vx[8];
	uint64_t c1 = 0, cx;
	bool eof = true, eofx;
	int fd;

	snprintf(dir, sizeof(dir), "%s/rdc", rwdir);
	mkdir(dir, 0755);
	for (int i = 0; i < 40; i++) {
		snprintf(path, sizeof(path), "%s/entry-%02d", dir, i);
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		if (fd >= 0)
			close(fd);
	}
	/* An old mtime, so the next change gives another verifier even
	 * within one tick of the file system's clock. */
	utimensat(AT_FDCWD, dir, old, 0);
	CHECK(readdir_at(dir, 0, zero, v1, &c1, &eof) == NFS4_OK && !eof &&
	          c1 > 2,
	      "readdir: first page, not the end");
	CHECK(readdir_at(dir, c1, v1, vx, &cx, &eofx) == NFS4_OK &&
	          !memcmp(vx, v1, 8),
	      "readdir: resumed with its verifier: the same verifier");
	CHECK(readdir_at(dir, c1, bogus, vx, &cx, &eofx) == NFS4ERR_NOT_SAME,
	      "readdir: a verifier the server never gave: NOT_SAME");
	snprintf(path, sizeof(path), "%s/new-entry", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
	CHECK(readdir_at(dir, c1, v1, vx, &cx, &eofx) == NFS4ERR_NOT_SAME,
	      "readdir: resumed after the directory changed: NOT_SAME");
	CHECK(readdir_at(dir, 0, zero, v2, &cx, &eofx) == NFS4_OK &&
	          memcmp(v2, v1, 8) &&
	          readdir_at(dir, c1, v2, vx, &cx, &eofx) == NFS4_OK,
	      "readdir: a new listing gets a new verifier that resumes");
	CHECK(readdir_at(dir, 1, v2, vx, &cx, &eofx) == NFS4ERR_BAD_COOKIE &&
	          readdir_at(dir, 2, v2, vx, &cx, &eofx) == NFS4ERR_BAD_COOKIE,
	      "readdir: cookies 1 and 2 (reserved): BAD_COOKIE");
	CHECK(readdir_at(dir, (1ull << 63) | 5, v2, vx, &cx, &eofx) ==
	          NFS4ERR_BAD_COOKIE,
	      "readdir: a cookie past every entry's place: BAD_COOKIE");
	CHECK(readdir_at(base, 1, zero, vx, &cx, &eofx) == NFS4ERR_BAD_COOKIE,
	      "readdir: cookie 1 in a pseudo directory: BAD_COOKIE");
}

/* ---- CREATE_SESSION flags, OPEN's delegation (RFC 8881 18.36.3,
 * 18.16.3) ---- */

enum {
	CS_PERSIST = 1,
	CS_CONN_BACK_CHAN = 2,
	CS_CONN_RDMA = 4,
	WANT_READ_DELEG = 0x100,
	WANT_ANY_DELEG = 0x300,
	WANT_NO_DELEG = 0x400,
	WANT_CANCEL = 0x500,
	WANT_SIGNAL = 0x10000,
	OPEN_DELEGATE_NONE = 0,
	OPEN_DELEGATE_NONE_EXT = 3,
	WND4_NOT_WANTED = 0,
	WND4_CONTENTION = 1,
	WND4_RESOURCE = 2,
	WND4_NOT_SUPP_FTYPE = 3,
	WND4_CANCELLED = 7,
};

/* No reply cache survives a restart, no back channel and no RDMA: the
 * flags asking for them come back clear. */
static void test_session_flags(void)
{
	struct session_opts so = {
	    1 << 20, 8192, CS_PERSIST | CS_CONN_BACK_CHAN | CS_CONN_RDMA};
	uint32_t rflags = 0xdead;

	CHECK(exchange_and_session_opts("flags", &so, &rflags) == NFS4_OK &&
	          rflags == 0,
	      "CREATE_SESSION asking PERSIST|CONN_BACK_CHAN|CONN_RDMA: "
	      "csr_flags 0");
}

/* Whether r offers no delegation, as the want allows: NONE, or NONE_EXT
 * with a reason a server without delegations may give. */
static bool no_delegation(const struct open_res *r, uint32_t want)
{
	if (r->deleg == OPEN_DELEGATE_NONE)
		return true;
	if (r->deleg != OPEN_DELEGATE_NONE_EXT)
		return false;
	switch (want & 0xff00) {
	case WANT_NO_DELEG:
		return r->why == WND4_NOT_WANTED;
	case WANT_CANCEL:
		return r->why == WND4_CANCELLED;
	}
	return r->why == WND4_NOT_SUPP_FTYPE || r->why == WND4_CONTENTION ||
	       r->why == WND4_RESOURCE;
}

static void test_open_delegations(void)
{
	static const uint32_t wants[] = {0,
	                                 WANT_READ_DELEG,
	                                 WANT_ANY_DELEG,
	                                 WANT_NO_DELEG,
	                                 WANT_CANCEL,
	                                 WANT_READ_DELEG | WANT_SIGNAL};
	struct open_spec o = spec41("deleg", "dl", T_UNCHECKED4);
	struct client40 cl;
	struct reply rep = {0};
	struct open_res r;
	struct cbuf b;
	char name[64];
	bool ok = true;

	CHECK(session41("deleg", NULL) == NFS4_OK, "delegations: session");
	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		o.access = 1 | wants[i];
		r.deleg = 0xbad;
		if (open41(&o, &r) != NFS4_OK || !no_delegation(&r, wants[i])) {
			printf("# want %#x: deleg %u why %u\n", wants[i],
			       r.deleg, r.why);
			ok = false;
		}
	}
	CHECK(ok, "4.1 OPEN with each delegation want: OK, no delegation");

	CHECK(setclientid(&cl, "deleg40") == NFS4_OK,
	      "delegations: 4.0 client");
	snprintf(name, sizeof(name), "dl40");
	o = spec41(cl.owner, name, T_UNCHECKED4);
	o.seqid = 1;
	o.clientid = cl.clientid;
	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_open(&b, &o);
	ok = c_send(&b, &rep) == NFS4_OK;
	skip_to_last(&rep, false);
	CHECK(ok && res_next(&rep, OP4_OPEN) == NFS4_OK &&
	          get_open_res(&rep.res, &r) && r.deleg == OPEN_DELEGATE_NONE,
	      "4.0 OPEN: OPEN_DELEGATE_NONE");
	rep_free(&rep);
}

/* ---- VERIFY, NVERIFY (RFC 7530 16.35, 16.15), PUTPUBFH (16.21) ---- */

/* walk rwdir, LOOKUP name, VERIFY or NVERIFY of type and size (or the
 * attributes of extra alone). */
static uint32_t verify_op(uint32_t opnum, const char *name, uint64_t size,
                          unsigned extra)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_name(&b, OP4_LOOKUP, name);
	op(&b, opnum);
	xdr_put_u32(&b.x, 1);
	if (extra) {
		xdr_put_u32(&b.x, 1u << extra);
		xdr_put_u32(&b.x, 4);
		xdr_put_u32(&b.x, 0);
	} else {
		xdr_put_u32(&b.x, (1u << AT_TYPE) | (1u << AT_SIZE));
		xdr_put_u32(&b.x, 12);
		xdr_put_u32(&b.x, NF4REG);
		xdr_put_u64(&b.x, size);
	}
	op(&b, OP4_GETFH);
	st = c_send(&b, &rep);
	/* the GETFH after runs only when the check passed */
	if (st == NFS4_OK && rep.nres != walk_ops(rwdir) + 3)
		st = 0xbad;
	rep_free(&rep);
	return st;
}

static void test_verify(void)
{
	CHECK(write_file(rwdir, "vf", 5), "verify: a 5-byte file");
	CHECK(verify_op(OP4_VERIFY, "vf", 5, 0) == NFS4_OK,
	      "VERIFY of the right type and size: OK, the COMPOUND goes on");
	CHECK(verify_op(OP4_VERIFY, "vf", 6, 0) == NFS4ERR_NOT_SAME,
	      "VERIFY of another size: NOT_SAME");
	CHECK(verify_op(OP4_NVERIFY, "vf", 5, 0) == NFS4ERR_SAME,
	      "NVERIFY of the right type and size: SAME");
	CHECK(verify_op(OP4_NVERIFY, "vf", 6, 0) == NFS4_OK,
	      "NVERIFY of another size: OK");
	CHECK(verify_op(OP4_VERIFY, "vf", 0, AT_RDATTR_ERROR) == NFS4ERR_INVAL,
	      "VERIFY of rdattr_error: INVAL");
	CHECK(verify_op(OP4_NVERIFY, "vf", 0, AT_ACL) == NFS4ERR_ATTRNOTSUPP,
	      "NVERIFY of an unsupported attribute (acl): ATTRNOTSUPP");
}

/* The GETFH after op (PUTROOTFH or PUTPUBFH) in minor. */
static bool fh_after(uint32_t minor, uint32_t opnum, uint8_t *fh, uint32_t *len)
{
	struct reply rep = {0};
	struct cbuf b;
	const uint8_t *p;
	bool ok;

	if (minor)
		c41(&b, NULL);
	else
		c_begin(&b, 0);
	op(&b, opnum);
	op(&b, OP4_GETFH);
	ok = c_send(&b, &rep) == NFS4_OK;
	skip_to_last(&rep, minor > 0);
	ok = ok && res_next(&rep, OP4_GETFH) == NFS4_OK &&
	     xdr_get_opaque_ref(&rep.res, &p, len, 128);
	if (ok)
		memcpy(fh, p, *len);
	rep_free(&rep);
	return ok;
}

static void test_putpubfh(void)
{
	uint8_t root[128], pub[128];
	uint32_t rl = 0, pl = 1;

	CHECK(fh_after(0, OP4_PUTROOTFH, root, &rl) &&
	          fh_after(0, OP4_PUTPUBFH, pub, &pl) && rl == pl &&
	          !memcmp(root, pub, rl),
	      "4.0 PUTPUBFH: the root's file handle");
	CHECK(session41("pubfh", NULL) == NFS4_OK &&
	          fh_after(1, OP4_PUTPUBFH, pub, &pl) && rl == pl &&
	          !memcmp(root, pub, rl),
	      "4.1 PUTPUBFH: the root's file handle");
}

/* ---- OPEN_DOWNGRADE (RFC 7530 16.19), DELEGRETURN (16.8) ---- */

static uint32_t open_downgrade40(const char *name, uint32_t seqid,
                                 struct nfs4_stateid *sid, uint32_t access,
                                 uint32_t deny)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_name(&b, OP4_LOOKUP, name);
	op(&b, OP4_OPEN_DOWNGRADE);
	nfs4_put_stateid(&b.x, sid);
	xdr_put_u32(&b.x, seqid);
	xdr_put_u32(&b.x, access);
	xdr_put_u32(&b.x, deny);
	st = c_send(&b, &rep);
	if (st == NFS4_OK) {
		skip_to_last(&rep, false);
		res_next(&rep, OP4_OPEN_DOWNGRADE);
		nfs4_get_stateid(&rep.res, sid);
	}
	rep_free(&rep);
	return st;
}

/* a opens for both, b's open denying writes is refused; a downgrades to
 * read: b's open goes through, a's stateid no longer writes. */
static void test_open_downgrade(void)
{
	struct client40 a, bcl;
	struct nfs4_stateid sa, sa_old, sb;
	struct reply rep = {0};

	CHECK(setclientid(&a, "dg-a") == NFS4_OK &&
	          setclientid(&bcl, "dg-b") == NFS4_OK,
	      "downgrade: two 4.0 clients");
	CHECK(open40(&a, "dg", 3, 0, &sa, &rep, 1) == NFS4_OK,
	      "downgrade: a opens read+write");
	CHECK(open40(&bcl, "dg", 1, 2, &sb, &rep, 1) == NFS4ERR_SHARE_DENIED,
	      "downgrade: b's read open denying write: SHARE_DENIED");
	sa_old = sa;
	CHECK(open_downgrade40("dg", a.seqid++, &sa, 3, 2) == NFS4ERR_INVAL,
	      "downgrade: to a deny mode a does not hold: INVAL");
	CHECK(open_downgrade40("dg", a.seqid++, &sa, 1, 0) == NFS4_OK &&
	          sa.seqid == sa_old.seqid + 1 &&
	          !memcmp(sa.other, sa_old.other, 12),
	      "downgrade: to read only: OK, the stateid's seqid goes on");
	CHECK(open_downgrade40("dg", a.seqid++, &sa, 3, 0) == NFS4ERR_INVAL,
	      "downgrade: back up to read+write: INVAL");
	CHECK(io40("dg", true, &sa, "w", NULL, 0) == NFS4ERR_OPENMODE,
	      "downgrade: WRITE with the read-only stateid: OPENMODE");
	CHECK(io40("dg", false, &sa_old, NULL, NULL, 0) == NFS4ERR_OLD_STATEID,
	      "downgrade: the stateid before it: OLD_STATEID");
	CHECK(open40(&bcl, "dg", 1, 2, &sb, &rep, 1) == NFS4_OK,
	      "downgrade: now b's read open denying write is granted");
	rep_free(&rep);
}

static uint32_t delegreturn40(const char *name, const struct nfs4_stateid *s)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_name(&b, OP4_LOOKUP, name);
	op(&b, OP4_DELEGRETURN);
	nfs4_put_stateid(&b.x, s);
	st = c_send(&b, &rep);
	rep_free(&rep);
	return st;
}

/* No delegation is ever granted, so none can be returned. */
static void test_delegreturn(void)
{
	struct client40 cl;
	struct nfs4_stateid s = {0}, forged;
	struct open_res r;
	struct reply rep = {0};
	struct open_spec o = spec41("dr41", "dr", T_UNCHECKED4);

	CHECK(setclientid(&cl, "dr") == NFS4_OK &&
	          open40(&cl, "dr", 3, 0, &s, &rep, 1) == NFS4_OK,
	      "delegreturn: a 4.0 open");
	forged = s;
	forged.other[11] ^= 0x5a;
	CHECK(delegreturn40("dr", &s) == NFS4ERR_BAD_STATEID,
	      "4.0 DELEGRETURN of an open stateid: BAD_STATEID");
	CHECK(delegreturn40("dr", &forged) == NFS4ERR_BAD_STATEID,
	      "4.0 DELEGRETURN of a stateid never given: BAD_STATEID");
	CHECK(session41("dr41", NULL) == NFS4_OK && open41(&o, &r) == NFS4_OK &&
	          sid_op41(OP4_DELEGRETURN, "dr", &r.sid, NULL) ==
	              NFS4ERR_BAD_STATEID,
	      "4.1 DELEGRETURN of an open stateid: BAD_STATEID");
	rep_free(&rep);
}

/* ---- BIND_CONN_TO_SESSION (RFC 8881 18.34) ---- */

enum {
	CDFC4_FORE = 1,
	CDFC4_BACK = 2,
	CDFC4_FORE_OR_BOTH = 3,
	CDFC4_BACK_OR_BOTH = 7
};

static uint32_t bind_conn(const uint8_t id[16], uint32_t dir, uint32_t *rdir,
                          bool *id_same)
{
	struct reply rep = {0};
	struct cbuf b;
	uint8_t rid[16];
	uint32_t st;
	bool rdma = true;

	c_begin(&b, 1);
	op(&b, OP4_BIND_CONN_TO_SESSION);
	xdr_put_fixed(&b.x, id, 16);
	xdr_put_u32(&b.x, dir);
	xdr_put_bool(&b.x, false);
	st = c_send(&b, &rep);
	if (st == NFS4_OK) {
		res_next(&rep, OP4_BIND_CONN_TO_SESSION);
		if (!xdr_get_fixed(&rep.res, rid, 16) ||
		    !xdr_get_u32(&rep.res, rdir) ||
		    !xdr_get_bool(&rep.res, &rdma) || rdma)
			st = 0xbad;
		*id_same = !memcmp(rid, id, 16);
	}
	rep_free(&rep);
	return st;
}

/* Every connection serves the fore channel; there is no back channel to
 * bind, so a direction that needs one is refused rather than answered
 * with a channel the client did not ask for. */
static void test_bind_conn(void)
{
	uint8_t bogus[16] = "no-such-session";
	struct reply rep = {0};
	struct cbuf b;
	uint32_t dir = 0;
	bool same = false;

	CHECK(session41("bind", NULL) == NFS4_OK, "bind_conn: session");
	CHECK(bind_conn(sessionid, CDFC4_FORE, &dir, &same) == NFS4_OK &&
	          same && dir == CDFC4_FORE,
	      "BIND_CONN_TO_SESSION FORE: OK, CDFS4_FORE");
	CHECK(bind_conn(sessionid, CDFC4_FORE_OR_BOTH, &dir, &same) ==
	              NFS4_OK &&
	          same && dir == CDFC4_FORE,
	      "BIND_CONN_TO_SESSION FORE_OR_BOTH: CDFS4_FORE (no back "
	      "channel)");
	CHECK(bind_conn(sessionid, CDFC4_BACK, &dir, &same) == NFS4ERR_INVAL &&
	          bind_conn(sessionid, CDFC4_BACK_OR_BOTH, &dir, &same) ==
	              NFS4ERR_INVAL,
	      "BIND_CONN_TO_SESSION BACK, BACK_OR_BOTH: INVAL (no back "
	      "channel)");
	CHECK(bind_conn(sessionid, 4, &dir, &same) == NFS4ERR_INVAL,
	      "BIND_CONN_TO_SESSION of an undefined direction: INVAL");
	CHECK(bind_conn(bogus, CDFC4_FORE, &dir, &same) == NFS4ERR_BADSESSION,
	      "BIND_CONN_TO_SESSION of an unknown session: BADSESSION");
	c41(&b, NULL);
	op(&b, OP4_BIND_CONN_TO_SESSION);
	xdr_put_fixed(&b.x, sessionid, 16);
	xdr_put_u32(&b.x, CDFC4_FORE);
	xdr_put_bool(&b.x, false);
	CHECK(c_send(&b, &rep) == NFS4ERR_NOT_ONLY_OP,
	      "BIND_CONN_TO_SESSION after SEQUENCE: NOT_ONLY_OP");
	rep_free(&rep);
}

/* ---- TEST_STATEID, FREE_STATEID (RFC 8881 18.48, 18.38) ---- */

static void test_test_stateid(void)
{
	struct open_spec o = spec41("ts", "ts1", T_UNCHECKED4);
	struct open_res r1, r2, other;
	struct nfs4_stateid v[8];
	uint32_t want[8], got, n = 0;
	struct reply rep = {0};
	struct cbuf b;
	bool ok;

	CHECK(session41("ts-other", NULL) == NFS4_OK &&
	          open41(&(struct open_spec){.access = 1,
	                                     .owner = "o",
	                                     .how = T_UNCHECKED4,
	                                     .name = "ts-o"},
	                 &other) == NFS4_OK,
	      "test_stateid: another client's open");
	CHECK(session41("ts", NULL) == NFS4_OK && open41(&o, &r1) == NFS4_OK &&
	          open41(&o, &r2) == NFS4_OK && r2.sid.seqid == 2,
	      "test_stateid: an open, opened again (stateid seqid 2)");
	v[0] = r2.sid, want[0] = NFS4_OK;
	v[1] = r1.sid, want[1] = NFS4ERR_OLD_STATEID;
	v[2] = r2.sid, v[2].seqid = 0, want[2] = NFS4_OK;
	v[3] = r2.sid, v[3].seqid = 9, want[3] = NFS4ERR_BAD_STATEID;
	v[4] = r2.sid, v[4].other[11] ^= 0x77, want[4] = NFS4ERR_BAD_STATEID;
	memset(&v[5], 0, sizeof(v[5])), want[5] = NFS4ERR_BAD_STATEID;
	memset(&v[6], 0xff, sizeof(v[6])), want[6] = NFS4ERR_BAD_STATEID;
	v[7] = other.sid, want[7] = NFS4ERR_BAD_STATEID;
	c41(&b, NULL);
	op(&b, OP4_TEST_STATEID);
	xdr_put_u32(&b.x, 8);
	for (int i = 0; i < 8; i++)
		nfs4_put_stateid(&b.x, &v[i]);
	ok = c_send(&b, &rep) == NFS4_OK;
	skip_to_last(&rep, true);
	ok = ok && res_next(&rep, OP4_TEST_STATEID) == NFS4_OK &&
	     xdr_get_u32(&rep.res, &n) && n == 8;
	for (uint32_t i = 0; ok && i < n; i++) {
		ok = xdr_get_u32(&rep.res, &got) && got == want[i];
		if (!ok)
			printf("# stateid %u: %u, want %u\n", i, got, want[i]);
	}
	CHECK(ok, "TEST_STATEID of 8 (current, old, seqid 0, future seqid, "
	          "unknown, anonymous, all-ones, another client's): each "
	          "its status");
	rep_free(&rep);
}

static void test_free_stateid(void)
{
	struct open_spec o = spec41("fs", "fs1", T_UNCHECKED4);
	struct nfs4_stateid ls = {0};
	struct reply rep = {0};
	struct open_res r;
	struct cbuf b;
	uint32_t st, inner = 0;

	CHECK(session41("fs", NULL) == NFS4_OK && open41(&o, &r) == NFS4_OK,
	      "free_stateid: an open");
	c41(&b, rwdir);
	op_name(&b, OP4_LOOKUP, "fs1");
	op_lock_new(&b, true, 0, 10, 0, &r.sid, 0, "fs-lock");
	st = c_send(&b, &rep);
	skip_to_last(&rep, true);
	CHECK(st == NFS4_OK && res_next(&rep, OP4_LOCK) == NFS4_OK &&
	          nfs4_get_stateid(&rep.res, &ls),
	      "free_stateid: a lock from it");
	CHECK(sid_op41(OP4_FREE_STATEID, NULL, &r.sid, NULL) ==
	          NFS4ERR_LOCKS_HELD,
	      "FREE_STATEID of an open with locks: LOCKS_HELD");
	CHECK(sid_op41(OP4_FREE_STATEID, NULL, &ls, NULL) == NFS4ERR_LOCKS_HELD,
	      "FREE_STATEID of a lock stateid holding a range: LOCKS_HELD");
	c41(&b, rwdir);
	op_name(&b, OP4_LOOKUP, "fs1");
	op_locku(&b, 0, &ls, 0, 10);
	st = c_send(&b, &rep);
	skip_to_last(&rep, true);
	CHECK(st == NFS4_OK && res_next(&rep, OP4_LOCKU) == NFS4_OK &&
	          nfs4_get_stateid(&rep.res, &ls),
	      "free_stateid: LOCKU of the range");
	CHECK(sid_op41(OP4_FREE_STATEID, NULL, &ls, NULL) == NFS4_OK,
	      "FREE_STATEID of a lock stateid without locks: OK");
	CHECK(sid_op41(OP4_TEST_STATEID, NULL, &ls, &inner) == NFS4_OK &&
	          inner == NFS4ERR_BAD_STATEID,
	      "free_stateid: the freed stateid tests BAD_STATEID");
	CHECK(sid_op41(OP4_FREE_STATEID, NULL, &r.sid, NULL) ==
	          NFS4ERR_LOCKS_HELD,
	      "FREE_STATEID of an open (its share reservation): LOCKS_HELD");
	CHECK(sid_op41(OP4_CLOSE, "fs1", &r.sid, NULL) == NFS4_OK &&
	          sid_op41(OP4_FREE_STATEID, NULL, &r.sid, NULL) ==
	              NFS4ERR_BAD_STATEID,
	      "free_stateid: after CLOSE the open stateid is BAD_STATEID");
	rep_free(&rep);
}

/* ---- SECINFO, SECINFO_NO_NAME (RFC 7530 16.31, RFC 8881 18.29,
 * 18.45) ---- */

/* Whether res holds a SECINFO4resok of just AUTH_SYS. */
static bool auth_sys_only(struct xdr_in *x)
{
	uint32_t n = 0, flavor = 0;

	return xdr_get_u32(x, &n) && n == 1 && xdr_get_u32(x, &flavor) &&
	       flavor == RPC_AUTH_SYS;
}

/* SECINFO of name (or SECINFO_NO_NAME of style, name NULL) at dir, then
 * GETFH; the SECINFO result checked for AUTH_SYS. */
static uint32_t secinfo_at(uint32_t minor, const char *dir, const char *name,
                           uint32_t style, bool *sys, uint32_t *getfh)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st, n = walk_ops(dir) + (minor ? 1 : 0);

	if (minor)
		c41(&b, dir);
	else {
		c_begin(&b, 0);
		op_walk(&b, dir);
	}
	if (name)
		op_name(&b, OP4_SECINFO, name);
	else {
		op(&b, OP4_SECINFO_NO_NAME);
		xdr_put_u32(&b.x, style);
	}
	op(&b, OP4_GETFH);
	st = c_send(&b, &rep);
	skip_n(&rep, n, minor > 0);
	*sys = res_next(&rep, name ? OP4_SECINFO : OP4_SECINFO_NO_NAME) ==
	           NFS4_OK &&
	       auth_sys_only(&rep.res);
	*getfh = rep.nres == n + 2 ? res_next(&rep, OP4_GETFH) : 0xbad;
	rep_free(&rep);
	return st;
}

static void test_secinfo(void)
{
	uint32_t st, fhst = 0;
	bool sys = false;

	CHECK(write_file(rwdir, "sec", 1), "secinfo: a file");
	st = secinfo_at(0, rwdir, "sec", 0, &sys, &fhst);
	CHECK(st == NFS4_OK && sys && fhst == NFS4_OK,
	      "4.0 SECINFO: AUTH_SYS; the directory stays the current fh");
	CHECK(secinfo_at(0, rwdir, "nope", 0, &sys, &fhst) == NFS4ERR_NOENT,
	      "4.0 SECINFO of a missing name: NOENT");
	CHECK(session41("secinfo", NULL) == NFS4_OK, "secinfo: session");
	st = secinfo_at(1, rwdir, "sec", 0, &sys, &fhst);
	CHECK(st == NFS4ERR_NOFILEHANDLE && sys && fhst == NFS4ERR_NOFILEHANDLE,
	      "4.1 SECINFO: AUTH_SYS, and it consumes the current fh "
	      "(GETFH: NOFILEHANDLE)");
	st = secinfo_at(1, rwdir, NULL, 0, &sys, &fhst);
	CHECK(st == NFS4ERR_NOFILEHANDLE && sys && fhst == NFS4ERR_NOFILEHANDLE,
	      "SECINFO_NO_NAME CURRENT_FH: AUTH_SYS, the fh consumed");
	st = secinfo_at(1, rwdir, NULL, 1, &sys, &fhst);
	CHECK(st == NFS4ERR_NOFILEHANDLE && sys,
	      "SECINFO_NO_NAME PARENT of an export root: AUTH_SYS");
	CHECK(secinfo_at(1, "/", NULL, 1, &sys, &fhst) == NFS4ERR_NOENT,
	      "SECINFO_NO_NAME PARENT of the root: NOENT");
}

/* ---- DESTROY_CLIENTID (RFC 8881 18.50) ---- */

/* A client ID with a session, or with opens, is busy; without either it
 * goes, and is then unknown (STALE_CLIENTID). */
static void test_destroy_clientid(void)
{
	struct open_spec o = spec41("dc", "dc1", T_UNCHECKED4);
	struct open_res r;
	uint64_t id;

	CHECK(session41("dc", NULL) == NFS4_OK && open41(&o, &r) == NFS4_OK,
	      "destroy_clientid: a client with a session and an open");
	id = session_clientid;
	CHECK(destroy_clientid(id, false) == NFS4ERR_CLIENTID_BUSY,
	      "DESTROY_CLIENTID with a session: CLIENTID_BUSY");
	CHECK(destroy_clientid(id, true) == NFS4ERR_CLIENTID_BUSY,
	      "DESTROY_CLIENTID on its own session: CLIENTID_BUSY");
	CHECK(destroy_session() == NFS4_OK &&
	          destroy_clientid(id, false) == NFS4ERR_CLIENTID_BUSY,
	      "DESTROY_CLIENTID with no session but an open: CLIENTID_BUSY");
	CHECK(exchange_and_session("dc", 1 << 20) == NFS4_OK &&
	          session_clientid == id &&
	          sid_op41(OP4_CLOSE, "dc1", &r.sid, NULL) == NFS4_OK,
	      "destroy_clientid: a new session of the same client closes it");
	CHECK(destroy_session() == NFS4_OK &&
	          destroy_clientid(id, false) == NFS4_OK,
	      "DESTROY_CLIENTID after DESTROY_SESSION: OK");
	CHECK(destroy_clientid(id, false) == NFS4ERR_STALE_CLIENTID &&
	          destroy_clientid(0, false) == NFS4ERR_STALE_CLIENTID,
	      "DESTROY_CLIENTID of a client ID gone or never given: "
	      "STALE_CLIENTID");
}

/* ---- 4.0 lock-owners (RFC 7530 9.1.7, 16.37) ---- */

static uint32_t release_lockowner(const struct client40 *cl, const char *lo)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	c_begin(&b, 0);
	op(&b, OP4_RELEASE_LOCKOWNER);
	xdr_put_u64(&b.x, cl->clientid);
	xdr_put_string(&b.x, lo);
	st = c_send(&b, &rep);
	rep_free(&rep);
	return st;
}

/* LOCK of rl1 by the known lock-owner of sid (4.0); reply in *rep. */
static uint32_t lock_old40(const struct nfs4_stateid *sid, uint32_t seqid,
                           uint64_t off, struct reply *rep,
                           struct nfs4_stateid *out)
{
	struct cbuf b;
	uint32_t st;

	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_name(&b, OP4_LOOKUP, "rl1");
	op_lock_old(&b, true, off, 10, sid, seqid);
	st = c_send(&b, rep);
	if (st == NFS4_OK) {
		skip_to_last(rep, false);
		res_next(rep, OP4_LOCK);
		nfs4_get_stateid(&rep->res, out);
	}
	return st;
}

static bool same_reply(const struct reply *a, const struct reply *b)
{
	/* past the xid */
	return a->buf.len == b->buf.len &&
	       !memcmp(a->buf.buf + 4, b->buf.buf + 4, a->buf.len - 4);
}

static void test_lockowner40(void)
{
	struct client40 cl;
	struct nfs4_stateid so, l1, l1b, l2, l2b;
	struct reply r1 = {0}, r2 = {0};
	uint32_t seq;

	CHECK(setclientid(&cl, "rl") == NFS4_OK &&
	          open40(&cl, "rl1", 3, 0, &so, &r1, 1) == NFS4_OK,
	      "lock-owner: a 4.0 open");
	seq = cl.seqid;
	CHECK(lock40_rep(&cl, "rl1", true, 0, 10, &so, &l1, false, &r1) ==
	          NFS4_OK,
	      "lock-owner: LOCK by a new lock-owner");
	cl.seqid = seq;
	CHECK(lock40_rep(&cl, "rl1", true, 0, 10, &so, &l1b, false, &r2) ==
	              NFS4_OK &&
	          same_reply(&r1, &r2) && !memcmp(&l1, &l1b, sizeof(l1)),
	      "lock-owner: the LOCK retransmitted (same open seqid): the "
	      "cached reply");
	CHECK(lock_old40(&l1, 2, 20, &r1, &l2) == NFS4_OK &&
	          l2.seqid == l1.seqid + 1,
	      "lock-owner: LOCK by the known lock-owner, seqid 2");
	CHECK(lock_old40(&l1, 2, 20, &r2, &l2b) == NFS4_OK &&
	          same_reply(&r1, &r2) && !memcmp(&l2, &l2b, sizeof(l2)),
	      "lock-owner: that LOCK retransmitted (lock seqid 2 again): the "
	      "cached reply, not a second lock");
	CHECK(lock_old40(&l2, 7, 40, &r1, &l2b) == NFS4ERR_BAD_SEQID,
	      "lock-owner: a lock seqid out of order: BAD_SEQID");
	l2b = l2;
	l2b.seqid += 5;
	CHECK(lock_old40(&l2b, 3, 40, &r1, &l2b) == NFS4ERR_BAD_STATEID,
	      "lock-owner: a stateid seqid never given: BAD_STATEID (lock "
	      "seqid 3 is not used up: the LOCKU below has it)");
	CHECK(release_lockowner(&cl, "lock-rl") == NFS4ERR_LOCKS_HELD,
	      "RELEASE_LOCKOWNER while it holds locks: LOCKS_HELD");
	CHECK(locku40("rl1", 3, &l2, 0, UINT64_MAX) == NFS4_OK,
	      "lock-owner: LOCKU of everything");
	CHECK(release_lockowner(&cl, "lock-rl") == NFS4_OK,
	      "RELEASE_LOCKOWNER after LOCKU: OK");
	l2.seqid++;
	CHECK(locku40("rl1", 4, &l2, 0, UINT64_MAX) == NFS4ERR_BAD_STATEID,
	      "lock-owner: its lock stateid is gone after the release");
	CHECK(release_lockowner(&cl, "never-locked") == NFS4_OK,
	      "RELEASE_LOCKOWNER of an owner never seen: OK");
	rep_free(&r1);
	rep_free(&r2);
}

/* ---- 4.0 CLOSE retransmitted (RFC 7530 9.1.7-9.1.10, 16.2) ---- */

/* A 4.1 CLOSE of name's open on slot seqid seq, kept in the slot cache
 * (sa_cachethis); the reply stays in *rep. */
static uint32_t close41_on_slot(const char *name, uint32_t seq,
                                const struct nfs4_stateid *sid,
                                struct reply *rep)
{
	struct nfs4_stateid any = *sid;
	struct cbuf b;

	any.seqid = 0;
	c_begin(&b, 1);
	op_sequence_c(&b, seq, true);
	op_walk(&b, rwdir);
	op_name(&b, OP4_LOOKUP, name);
	op(&b, OP4_CLOSE);
	xdr_put_u32(&b.x, 0);
	nfs4_put_stateid(&b.x, &any);
	return c_send(&b, rep);
}

/* The reply to a 4.0 CLOSE can be lost and the CLOSE sent again, same
 * seqid, same stateid (the Linux client does): the server answers it
 * from the open-owner's saved reply (9.1.7), for which it keeps the
 * closed stateid until the owner's next seqid-bearing request. Nothing
 * else may use that stateid. */
static void test_close_replay40(void)
{
	struct client40 cl, cl2;
	struct nfs4_stateid so, c1, c2, s2, x, dg;
	struct open_spec o = spec41("cr41", "cr41", T_UNCHECKED4);
	struct reply r1 = {0}, r2 = {0};
	struct open_res r;
	uint32_t seq;
	char buf[16];

	CHECK(setclientid(&cl, "cr") == NFS4_OK &&
	          open40(&cl, "cr1", 3, 0, &so, &r1, 1) == NFS4_OK &&
	          io40("cr1", true, &so, "cr", NULL, 0) == NFS4_OK,
	      "close replay: a 4.0 OPEN, OPEN_CONFIRM and WRITE");
	seq = cl.seqid;
	CHECK(close40_rep("cr1", seq, &so, &r1, &c1) == NFS4_OK &&
	          c1.seqid == so.seqid + 1 &&
	          !memcmp(c1.other, so.other, sizeof(so.other)),
	      "close replay: CLOSE: OK");
	CHECK(stid_hashed(&so),
	      "close replay: the closed stateid is kept for a retransmission");
	CHECK(close40_rep("cr1", seq, &so, &r2, &c2) == NFS4_OK &&
	          same_reply(&r1, &r2) && !memcmp(&c1, &c2, sizeof(c1)),
	      "close replay: the CLOSE retransmitted (same seqid, same "
	      "stateid): the first reply again, OK and the same stateid");
	CHECK(close40_rep("cr1", seq + 1, &so, &r2, &x) == NFS4ERR_BAD_STATEID,
	      "close replay: a new CLOSE (the next seqid) of the closed "
	      "stateid: BAD_STATEID (9.1.4.4)");
	CHECK(close40_rep("cr1", seq + 1, &c1, &r2, &x) == NFS4ERR_BAD_STATEID,
	      "close replay: a new CLOSE with the stateid CLOSE returned: "
	      "BAD_STATEID");
	CHECK(close40_rep("cr1", seq + 5, &so, &r2, &x) == NFS4ERR_BAD_SEQID,
	      "close replay: a CLOSE of the closed stateid with a seqid out of "
	      "order: BAD_SEQID (9.1.9)");
	dg = so;
	CHECK(open_downgrade40("cr1", seq + 1, &dg, 1, 0) ==
	          NFS4ERR_BAD_STATEID,
	      "close replay: OPEN_DOWNGRADE of the closed stateid: "
	      "BAD_STATEID");
	CHECK(open_downgrade40("cr1", seq, &dg, 1, 0) == NFS4ERR_BAD_SEQID,
	      "close replay: OPEN_DOWNGRADE of the closed stateid with the "
	      "CLOSE's seqid: BAD_SEQID (9.1.9: not the op sent first), not "
	      "the CLOSE's reply");
	CHECK(close40_rep("cr1", seq, &so, &r2, &c2) == NFS4_OK &&
	          same_reply(&r1, &r2) && !memcmp(&c1, &c2, sizeof(c1)),
	      "close replay: those errors used up no seqid (9.1.7): a "
	      "retransmission still gets the first reply");
	CHECK(io40("cr1", false, &so, NULL, buf, sizeof(buf)) ==
	              NFS4ERR_BAD_STATEID &&
	          io40("cr1", false, &c1, NULL, buf, sizeof(buf)) ==
	              NFS4ERR_BAD_STATEID &&
	          io40("cr1", true, &so, "xx", NULL, 0) == NFS4ERR_BAD_STATEID,
	      "close replay: READ and WRITE with the closed stateid: "
	      "BAD_STATEID");
	CHECK(open40(&cl, "cr1", 3, 0, &s2, &r2, seq + 1) == NFS4_OK &&
	          memcmp(s2.other, so.other, sizeof(so.other)),
	      "close replay: the owner's next OPEN (the next seqid): OK, a "
	      "new stateid");
	CHECK(!stid_hashed(&so),
	      "close replay: that OPEN released the closed stateid");
	CHECK(close40_rep("cr1", seq, &so, &r2, &x) == NFS4ERR_BAD_STATEID,
	      "close replay: the old CLOSE once more, after the OPEN: "
	      "BAD_STATEID (9.1.10), not the OPEN's reply");
	CHECK(io40("cr1", false, &s2, NULL, buf, sizeof(buf)) == NFS4_OK &&
	          !strcmp(buf, "cr"),
	      "close replay: the new open reads");
	CHECK(close40_rep("cr1", cl.seqid, &s2, &r1, &c1) == NFS4_OK &&
	          stid_hashed(&s2),
	      "close replay: CLOSE of the new open, kept for a "
	      "retransmission");
	CHECK(setclientid_boot(&cl2, "cr", "rebooted") == NFS4_OK &&
	          !stid_hashed(&s2),
	      "close replay: the client reboots (a new verifier): the kept "
	      "stateid goes with the old client's state");
	CHECK(close40_rep("cr1", cl.seqid, &s2, &r2, &x) == NFS4ERR_BAD_STATEID,
	      "close replay: the old client's CLOSE retransmitted after the "
	      "reboot: BAD_STATEID");
	CHECK(session41("cr41", NULL) == NFS4_OK && open41(&o, &r) == NFS4_OK,
	      "close replay: a 4.1 open");
	seq = ++slot_seq;
	CHECK(close41_on_slot("cr41", seq, &r.sid, &r1) == NFS4_OK &&
	          !stid_hashed(&r.sid),
	      "close replay: a 4.1 CLOSE frees its stateid at once");
	CHECK(close41_on_slot("cr41", seq, &r.sid, &r2) == NFS4_OK &&
	          same_reply(&r1, &r2),
	      "close replay: the 4.1 CLOSE retransmitted on its slot: the "
	      "slot's cached reply");
	CHECK(close41_on_slot("cr41", ++slot_seq, &r.sid, &r2) ==
	          NFS4ERR_BAD_STATEID,
	      "close replay: a new 4.1 CLOSE of the closed stateid: "
	      "BAD_STATEID");
	rep_free(&r1);
	rep_free(&r2);
}

/* ---- OPEN's create modes (RFC 7530 16.16.5, RFC 8881 18.16.3) ---- */

static void test_open_create_modes(void)
{
	struct client40 cl;
	struct open_spec o;
	struct open_res r, r2;
	struct reply rep = {0};
	struct cbuf b;
	char path[200];
	struct stat sb;

	CHECK(setclientid(&cl, "cm") == NFS4_OK && write_file(rwdir, "cm0", 1),
	      "create modes: 4.0 client, an existing file");
	o = spec41(cl.owner, "cm0", T_GUARDED4);
	o.seqid = 1;
	o.clientid = cl.clientid;
	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_open(&b, &o);
	CHECK(c_send(&b, &rep) == NFS4ERR_EXIST,
	      "OPEN GUARDED4 of an existing file: EXIST");
	o.name = "cm-new";
	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_open(&b, &o);
	CHECK(c_send(&b, &rep) == NFS4_OK, "OPEN GUARDED4 of a new name: OK");

	CHECK(session41("cm41", NULL) == NFS4_OK, "create modes: session");
	o = spec41("cm41", "cx", T_EXCLUSIVE4_1);
	o.verf = "verf-one";
	o.mode = 0640;
	snprintf(path, sizeof(path), "%s/cx", rwdir);
	CHECK(open41(&o, &r) == NFS4_OK && bm_has(r.attrset, AT_MODE) &&
	          !stat(path, &sb) && (sb.st_mode & 07777) == 0640,
	      "OPEN EXCLUSIVE4_1 with a mode: OK, attrset has mode, the "
	      "file's mode is it");
	CHECK(open41(&o, &r2) == NFS4_OK &&
	          !memcmp(r.sid.other, r2.sid.other, 12),
	      "OPEN EXCLUSIVE4_1 retried with the same verifier: OK");
	o.verf = "verf-two";
	CHECK(open41(&o, &r2) == NFS4ERR_EXIST,
	      "OPEN EXCLUSIVE4_1 with another verifier: EXIST");
	o = spec41("cm41", "cx-times", T_EXCLUSIVE4_1);
	o.verf = "verf-3-3";
	o.mtime = true;
	snprintf(path, sizeof(path), "%s/cx-times", rwdir);
	CHECK(open41(&o, &r2) == NFS4ERR_INVAL && stat(path, &sb) != 0,
	      "OPEN EXCLUSIVE4_1 setting time_modify (not in "
	      "suppattr_exclcreat): INVAL, no file made");
	CHECK(sid_op41(OP4_CLOSE, "cx", &r.sid, NULL) == NFS4_OK,
	      "create modes: the exclusive open closes");
	rep_free(&rep);
}

/* ---- operations a minor version lacks (RFC 8881 15.1.3, 17; RFC
 * 7862 11) ---- */

/* SEQUENCE, walk to rwdir, LOOKUP big, then op with nwords zero words of
 * arguments: the status and the last result's op number. */
static uint32_t lone_op(uint32_t minor, uint32_t opnum, int nwords,
                        uint32_t *named)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st, o = 0, s;

	c_begin(&b, minor);
	op_sequence(&b, ++slot_seq);
	op_walk(&b, rwdir);
	op_name(&b, OP4_LOOKUP, "big");
	op(&b, opnum);
	for (int i = 0; i < nwords; i++)
		xdr_put_u32(&b.x, 0);
	st = c_send(&b, &rep);
	skip_to_last(&rep, true);
	if (!xdr_get_u32(&rep.res, &o) || !xdr_get_u32(&rep.res, &s) ||
	    rep.nres != walk_ops(rwdir) + 3)
		o = 0xbad;
	*named = o;
	rep_free(&rep);
	return st;
}

static void test_missing_ops(void)
{
	static const uint32_t layout_ops[] = {
	    OP4_LAYOUTGET, OP4_LAYOUTCOMMIT, OP4_LAYOUTRETURN,
	    OP4_GETDEVICEINFO, OP4_GETDEVICELIST};
	static const uint32_t v42_ops[] = {OP4_SEEK, OP4_READ_PLUS,
	                                   OP4_ALLOCATE};
	uint32_t named = 0;
	bool ok = true;

	CHECK(session41("missing", NULL) == NFS4_OK, "missing ops: session");
	for (size_t i = 0; i < sizeof(layout_ops) / sizeof(layout_ops[0]);
	     i++) {
		uint32_t st = lone_op(1, layout_ops[i], 24, &named);
		if (st != NFS4ERR_NOTSUPP || named != layout_ops[i]) {
			printf("# op %u: %u (result op %u)\n", layout_ops[i],
			       st, named);
			ok = false;
		}
	}
	CHECK(ok, "4.1 LAYOUTGET, LAYOUTCOMMIT, LAYOUTRETURN, GETDEVICEINFO, "
	          "GETDEVICELIST (no pNFS): NOTSUPP");
	ok = true;
	for (size_t i = 0; i < sizeof(v42_ops) / sizeof(v42_ops[0]); i++) {
		uint32_t st = lone_op(1, v42_ops[i], 8, &named);
		if (st != NFS4ERR_OP_ILLEGAL || named != OP4_ILLEGAL) {
			printf("# op %u: %u (result op %u)\n", v42_ops[i], st,
			       named);
			ok = false;
		}
	}
	CHECK(ok, "4.1 COMPOUND with SEEK, READ_PLUS or ALLOCATE (4.2 ops): "
	          "OP_ILLEGAL, the result named OP_ILLEGAL");
	CHECK(lone_op(2, OP4_SEEK, 8, &named) != NFS4ERR_OP_ILLEGAL &&
	          named == OP4_SEEK,
	      "the same SEEK in a 4.2 COMPOUND is no OP_ILLEGAL");
}

/* ---- root_squash (exports(5)) over NFSv4 ---- */

/* As uid 0 (what send_raw_v sends): OPEN-create file and CREATE dir sub
 * in dir. */
static uint32_t create_as_root(struct client40 *cl, const char *dir,
                               const char *file, const char *sub)
{
	struct open_spec o = {.seqid = cl->seqid,
	                      .access = 3,
	                      .clientid = cl->clientid,
	                      .owner = cl->owner,
	                      .how = T_UNCHECKED4,
	                      .name = file};
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	c_begin(&b, 0);
	op_walk(&b, dir);
	op(&b, OP4_SAVEFH);
	op_open(&b, &o);
	op(&b, OP4_RESTOREFH);
	op(&b, OP4_CREATE);
	xdr_put_u32(&b.x, NF4DIR);
	xdr_put_string(&b.x, sub);
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, 0);
	st = c_send(&b, &rep);
	rep_free(&rep);
	return st;
}

static bool owned_by(const char *dir, const char *name, uid_t uid, gid_t gid)
{
	char path[200];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !lstat(path, &sb) && sb.st_uid == uid && sb.st_gid == gid;
}

static void test_root_squash(void)
{
	struct client40 cl;

	CHECK(setclientid(&cl, "squash") == NFS4_OK, "root_squash: client");
	CHECK(create_as_root(&cl, sqdir, "sq-file", "sq-dir") == NFS4_OK,
	      "root_squash: uid 0 creates a file and a directory");
	CHECK(owned_by(sqdir, "sq-file", ANON_ID, ANON_ID) &&
	          owned_by(sqdir, "sq-dir", ANON_ID, ANON_ID),
	      "root_squash: both owned by the anonymous uid and gid");
	/* the open-owner is unconfirmed: seqid 1 starts it over */
	CHECK(create_as_root(&cl, rwdir, "nsq-file", "nsq-dir") == NFS4_OK &&
	          owned_by(rwdir, "nsq-file", 0, 0) &&
	          owned_by(rwdir, "nsq-dir", 0, 0),
	      "no_root_squash: uid 0 creates as root");
}

/* ---- limits and fileids GETATTR tells (RFC 8881 5.8.2, 5.8.1.14) ---- */

static void test_getattr_limits(void)
{
	uint32_t bm[3] = {0}, got[3];
	uint64_t rd = 0, wr = 0;
	struct reply rep = {0};

	bm_add(bm, AT_MAXREAD);
	bm_add(bm, AT_MAXWRITE);
	for (uint32_t minor = 0; minor <= 1; minor++) {
		bool ok =
		    getattr_of(minor, rwdir, "big", bm, got, &rep) == NFS4_OK &&
		    got[0] == bm[0] && xdr_get_u64(&rep.res, &rd) &&
		    xdr_get_u64(&rep.res, &wr);
		CHECK(ok && rd == 1048576 && wr == 1048576,
		      minor ? "4.1 GETATTR maxread, maxwrite: 1 MiB"
		            : "4.0 GETATTR maxread, maxwrite: 1 MiB");
		if (!minor)
			CHECK(session41("getattr", NULL) == NFS4_OK,
			      "getattr: session");
	}
	rep_free(&rep);
}

/* ---- WRITE past maxwrite (RFC 8881 5.8.2, 18.32, 15.1.1.4) ---- */

/* The 4.0 COMPOUND PUTROOTFH, LOOKUPs to rwdir/name, WRITE (anonymous
 * stateid, FILE_SYNC4, offset 0) of an opaque that says len bytes but
 * carries only have of data: WRITE's status and count out; 0xbad without
 * a reply or without WRITE's result. */
static uint32_t write40_len(const char *name, const uint8_t *data, uint32_t len,
                            uint32_t have, uint32_t *count)
{
	struct nfs4_stateid anon = {0};
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st = 0xbad;

	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_name(&b, OP4_LOOKUP, name);
	op(&b, OP4_WRITE);
	nfs4_put_stateid(&b.x, &anon);
	xdr_put_u64(&b.x, 0);
	xdr_put_u32(&b.x, 2); /* FILE_SYNC4 */
	xdr_put_u32(&b.x, len);
	xdr_put_fixed(&b.x, data, have);
	c_send(&b, &rep);
	*count = 0;
	if (rep.stat == 0 && rep.nres == walk_ops(rwdir) + 2) {
		skip_to_last(&rep, false);
		st = res_next(&rep, OP4_WRITE);
		if (st == NFS4_OK && !xdr_get_u32(&rep.res, count))
			st = 0xbad;
	}
	rep_free(&rep);
	return st;
}

/* maxwrite is 1 MiB (test_getattr_limits): a WRITE of one byte more is
 * NFS4ERR_INVAL and writes nothing, one of exactly maxwrite is written
 * whole; an opaque that runs past the request is still BADXDR. */
static void test_write_maxwrite(void)
{
	static uint8_t old[100], big[NFS4_MAXIO + 1];
	uint32_t n;

	for (size_t i = 0; i < sizeof(old); i++)
		old[i] = (uint8_t)(i * 7 % 251);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 13 + 5);
	CHECK(write_file(rwdir, "wmax", sizeof(old)) &&
	          file_holds(rwdir, "wmax", old, sizeof(old)),
	      "WRITE past maxwrite: a 100-byte file to write over");
	CHECK(write40_len("wmax", big, NFS4_MAXIO + 1, NFS4_MAXIO + 1, &n) ==
	          NFS4ERR_INVAL,
	      "WRITE of maxwrite + 1 bytes: INVAL");
	CHECK(file_holds(rwdir, "wmax", old, sizeof(old)),
	      "WRITE of maxwrite + 1 bytes: the file keeps its size and "
	      "bytes");
	write_file(rwdir, "wmax", sizeof(old)); /* each case on its own */
	CHECK(write40_len("wmax", big, 0xffffffff, 8, &n) == NFS4ERR_BADXDR,
	      "WRITE whose opaque says 0xffffffff bytes, 8 there: BADXDR");
	CHECK(write40_len("wmax", big, NFS4_MAXIO + 1, 8, &n) == NFS4ERR_BADXDR,
	      "WRITE whose opaque says maxwrite + 1 bytes, 8 there: BADXDR");
	CHECK(file_holds(rwdir, "wmax", old, sizeof(old)),
	      "WRITE of a cut-off opaque: nothing written");
	CHECK(write40_len("wmax", big, NFS4_MAXIO, NFS4_MAXIO, &n) == NFS4_OK &&
	          n == NFS4_MAXIO,
	      "WRITE of exactly maxwrite bytes: OK, all of them");
	CHECK(file_holds(rwdir, "wmax", big, NFS4_MAXIO),
	      "WRITE of exactly maxwrite bytes: the file holds them");
}

static void test_getattr_exclcreat(void)
{
	uint32_t bm[3] = {0}, got[3], sup[3] = {0}, ex[3] = {0};
	struct reply rep = {0};
	bool ok;

	bm_add(bm, AT_SUPPORTED);
	bm_add(bm, AT_EXCLCREAT);
	ok = getattr_of(1, rwdir, NULL, bm, got, &rep) == NFS4_OK &&
	     !memcmp(got, bm, sizeof(got)) && nfs4_get_bitmap(&rep.res, sup) &&
	     nfs4_get_bitmap(&rep.res, ex);
	for (int i = 0; ok && i < 3; i++)
		ok = (ex[i] & ~sup[i]) == 0;
	CHECK(ok && bm_has(sup, AT_EXCLCREAT) && bm_has(ex, AT_MODE) &&
	          !bm_has(ex, AT_TIME_ACCESS_SET) &&
	          !bm_has(ex, AT_TIME_MODIFY_SET),
	      "4.1 suppattr_exclcreat: a subset of supported_attrs with mode, "
	      "without the times that hold the verifier");
	ok = getattr_of(0, rwdir, NULL, bm, got, &rep) == NFS4_OK &&
	     nfs4_get_bitmap(&rep.res, sup);
	CHECK(ok && !bm_has(got, AT_EXCLCREAT) && !bm_has(sup, AT_EXCLCREAT),
	      "4.0: no suppattr_exclcreat (a 4.1 attribute)");
	rep_free(&rep);
}

/* mounted_on_fileid of rwdir's entry in its pseudo parent's READDIR. */
static bool parent_listing_mounted_on(uint64_t *val)
{
	char parent[96];
	struct reply rep = {0};
	struct cbuf b;
	uint32_t more = 0, n, w[3];
	uint64_t cookie, fid = 0;
	const uint8_t *p;
	bool found = false;

	snprintf(parent, sizeof(parent), "%s/a", base);
	c_begin(&b, 0);
	op_walk(&b, parent);
	op(&b, OP4_READDIR);
	xdr_put_u64(&b.x, 0);
	xdr_put_u64(&b.x, 0);
	xdr_put_u32(&b.x, 4096);
	xdr_put_u32(&b.x, 8192);
	xdr_put_u32(&b.x, 2);
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, 1u << (AT_MOUNTED_ON - 32));
	if (c_send(&b, &rep) == NFS4_OK) {
		skip_to_last(&rep, false);
		res_next(&rep, OP4_READDIR);
		xdr_skip(&rep.res, 8);
		while (xdr_get_u32(&rep.res, &more) && more &&
		       xdr_get_u64(&rep.res, &cookie) &&
		       xdr_get_opaque_ref(&rep.res, &p, &n, 255)) {
			bool rw = n == 2 && !memcmp(p, "rw", 2);
			if (!nfs4_get_bitmap(&rep.res, w) ||
			    !xdr_get_u32(&rep.res, &n) ||
			    !xdr_get_u64(&rep.res, &fid))
				break;
			if (rw) {
				*val = fid;
				found = true;
			}
		}
	}
	rep_free(&rep);
	return found;
}

/* An export root's mounted_on_fileid is the fileid of the directory it
 * covers in the pseudo file system (what its parent's READDIR lists),
 * not its own; inside the export the two are one. */
static void test_mounted_on_fileid(void)
{
	uint32_t bm[3] = {0}, got[3];
	uint64_t fileid = 0, mounted = 0, listed = 1;
	struct reply rep = {0};
	struct stat sr, sf;
	char path[200];
	bool ok;

	bm_add(bm, AT_FILEID);
	bm_add(bm, AT_MOUNTED_ON);
	snprintf(path, sizeof(path), "%s/big", rwdir);
	ok = !stat(rwdir, &sr) && !stat(path, &sf) &&
	     getattr_of(0, rwdir, NULL, bm, got, &rep) == NFS4_OK &&
	     xdr_get_u64(&rep.res, &fileid) && xdr_get_u64(&rep.res, &mounted);
	CHECK(ok && fileid == sr.st_ino && mounted != sr.st_ino &&
	          parent_listing_mounted_on(&listed) && mounted == listed,
	      "export root: fileid its inode, mounted_on_fileid that of the "
	      "pseudo directory it covers (as READDIR of the parent lists)");
	ok = getattr_of(0, rwdir, "big", bm, got, &rep) == NFS4_OK &&
	     xdr_get_u64(&rep.res, &fileid) && xdr_get_u64(&rep.res, &mounted);
	CHECK(ok && fileid == sf.st_ino && mounted == sf.st_ino,
	      "a file in the export: mounted_on_fileid is its fileid");
	rep_free(&rep);
}

/* NFSv4 and NFSv3 (NLM) locks in one table: each refuses the other's
 * bytes, TEST and LOCKT name the other protocol's holder, an NFSv4
 * LOCKU grants the NLM request waiting behind it, and NLM's FREE_ALL
 * lets NFSv4 in. */
static void test_nlm_and_v4_locks(void)
{
	const struct export *ex = &S.exports->v[0];
	struct sockaddr_storage peer = {.ss_family = AF_INET};
	struct nlm_req a = {.peer = &peer,
	                    .host = "v3host",
	                    .svid = 7,
	                    .oh = (const uint8_t *)"7@v3host",
	                    .ohlen = 8,
	                    .start = 0,
	                    .end = 99,
	                    .write = true};
	struct nlm_req c = a;
	struct nlm_grant wait;
	struct nlm_holder h;
	struct client40 cl;
	struct nfs4_stateid so, ls;
	struct reply r = {0};
	struct bk_handle root, bh;
	struct bk_attr attr;
	struct bk_cred cred = {0};
	struct nfs4_server *st;

	c.host = "v3other";
	c.svid = 9;
	memset(&wait, 0, sizeof(wait)); /* the owner comes from the request */
	wait.len = 100;
	((struct sockaddr_in *)&peer)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(setclientid(&cl, "nlmx") == NFS4_OK &&
	          open40(&cl, "nlmf", 3, 0, &so, &r, 1) == NFS4_OK &&
	          lock40(&cl, "nlmf", true, 0, 10, &so, &ls, false) == NFS4_OK,
	      "nlm+v4: an NFSv4 write lock on bytes 0-9");
	rep_free(&r);
	st = nfs4_server_get(&S);
	CHECK(st && ex->ops->root(ex->bk, &root) == 0 &&
	          ex->ops->lookup(ex->bk, &cred, &root, "nlmf", &bh, &attr) ==
	              0,
	      "nlm+v4: the file's backend handle");
	if (!st)
		return;
	CHECK(nfs4_nlm_test(st, ex->fsid, &bh, &a, &h) == NLM4_DENIED &&
	          h.write && h.svid == 0 && h.start == 0 && h.end == 9,
	      "nlm+v4: NLM TEST sees the NFSv4 lock (svid 0, bytes 0-9)");
	CHECK(nfs4_nlm_lock(st, ex->fsid, &bh, &a, NULL) == NLM4_DENIED,
	      "nlm+v4: a non-blocking NLM LOCK over it: DENIED");
	CHECK(nfs4_nlm_lock(st, ex->fsid, &bh, &a, &wait) == NLM4_BLOCKED,
	      "nlm+v4: a blocking NLM LOCK waits: BLOCKED");
	CHECK(locku40("nlmf", 2, &ls, 0, 10) == NFS4_OK, "nlm+v4: NFSv4 LOCKU");
	CHECK(nfs4_nlm_test(st, ex->fsid, &bh, &c, &h) == NLM4_DENIED &&
	          h.svid == 7 && h.start == 0 && h.end == 99,
	      "nlm+v4: the LOCKU granted the waiting NLM request (held by "
	      "svid 7)");
	CHECK(lock40(&cl, "nlmf", false, 50, 1, &so, &ls, true) ==
	          NFS4ERR_DENIED,
	      "nlm+v4: NFSv4 LOCKT sees the NLM lock");
	CHECK(lock40(&cl, "nlmf", true, 100, 10, &so, &ls, false) == NFS4_OK,
	      "nlm+v4: NFSv4 LOCK beside it: OK");
	CHECK(nfs4_nlm_free_host(st, "V3HOST", &peer) == 1,
	      "nlm+v4: FREE_ALL of its host drops its one owner");
	CHECK(lock40(&cl, "nlmf", false, 50, 1, &so, &ls, true) == NFS4_OK,
	      "nlm+v4: NFSv4 LOCKT then finds the bytes free");
}

int main(void)
{
	int rc;

	log_set_level(LOG_ERR);
	rc = setup();
	CHECK(rc == 0, "setup: exports and service");
	if (rc)
		TEST_EXIT();
	test_reply_limits();
	test_reply_limits_cached_io();
	test_current_stateid();
	test_readdir_cookies();
	test_session_flags();
	test_open_delegations();
	test_verify();
	test_putpubfh();
	test_open_downgrade();
	test_delegreturn();
	test_bind_conn();
	test_test_stateid();
	test_free_stateid();
	test_secinfo();
	test_destroy_clientid();
	test_lockowner40();
	test_close_replay40();
	test_open_create_modes();
	test_missing_ops();
	test_root_squash();
	test_getattr_limits();
	test_write_maxwrite();
	test_getattr_exclcreat();
	test_mounted_on_fileid();
	test_nlm_and_v4_locks();
	testsrv_stop(base);
	TEST_EXIT();
}
