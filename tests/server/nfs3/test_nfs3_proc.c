/* NFSv3 procedures end to end: a server context with a read-write and a
 * read-only export in a temp dir, every call hand-encoded and sent through
 * rpc_service_handle(), every reply decoded and checked. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../test.h"
#include "../file_testlib.h"
#include "server/exports.h"
#include "server/fh.h"
#include "server/nfs3/nfs3_xdr.h"
#include "server/programs.h"
#include "server/snfsd.h"
#include "util/log.h"

static struct snfsd S;
static char base[64], rwdir[96], rodir[96], asdir[96];
static uint32_t next_xid = 1;

/* ---- call encoding ---- */

static void put_fh(struct xdr_out *a, const struct nfs_fh *fh)
{
	xdr_put_opaque(a, fh->data, fh->len);
}

static void put_diropargs(struct xdr_out *a, const struct nfs_fh *dir,
                          const char *name)
{
	put_fh(a, dir);
	xdr_put_string(a, name);
}

/* sattr3 that sets nothing */
static void put_sattr_none(struct xdr_out *a)
{
	for (int i = 0; i < 4; i++)
		xdr_put_bool(a, false);
	xdr_put_u32(a, DONT_CHANGE);
	xdr_put_u32(a, DONT_CHANGE);
}

static void put_sattr_mode(struct xdr_out *a, uint32_t mode)
{
	xdr_put_bool(a, true);
	xdr_put_u32(a, mode);
	for (int i = 0; i < 3; i++)
		xdr_put_bool(a, false);
	xdr_put_u32(a, DONT_CHANGE);
	xdr_put_u32(a, DONT_CHANGE);
}

/* The AUTH_SYS uid of the calls: root unless a test says otherwise. */
static uint32_t call_uid;

/* The RPC call header with AUTH_SYS uid call_uid (gid the same). */
static void put_call_header(struct xdr_out *r, uint32_t proc)
{
	xdr_put_u32(r, next_xid++);
	xdr_put_u32(r, 0); /* CALL */
	xdr_put_u32(r, 2); /* RPC version */
	xdr_put_u32(r, NFS_PROGRAM);
	xdr_put_u32(r, 3);
	xdr_put_u32(r, proc);
	xdr_put_u32(r, RPC_AUTH_SYS);
	xdr_put_u32(r, 24);
	xdr_put_u32(r, 0); /* stamp */
	xdr_put_string(r, "test");
	xdr_put_u32(r, call_uid); /* uid */
	xdr_put_u32(r, call_uid); /* gid */
	xdr_put_u32(r, 0);        /* gids */
	xdr_put_u32(r, RPC_AUTH_NONE);
	xdr_put_u32(r, 0);
}

struct reply {
	struct xdr_out buf;
	struct xdr_in res; /* the procedure's results */
	int stat;          /* accept_stat, or -1 */
};

/* Send proc with the first alen bytes of args; decode the reply header. */
static void call_n(uint32_t proc, const struct xdr_out *args, size_t alen,
                   struct reply *rep)
{
	struct sockaddr_in peer = {.sin_family = AF_INET,
	                           .sin_port = htons(800)};
	struct xdr_out rec;
	struct xdr_in in;
	uint32_t v, vlen;

	peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	xdr_out_init(&rec, 4096, 4u << 20);
	put_call_header(&rec, proc);
	xdr_put_fixed(&rec, args->buf, alen); /* alen is 4-aligned or cut */
	rec.len -= xdr_pad(alen);
	xdr_out_free(&rep->buf);
	xdr_out_init(&rep->buf, 4096, RPC_DEFAULT_MAX_RECORD + 4);
	rep->stat = -1;
	if (rpc_service_handle(S.svc, rec.buf, rec.len,
	                       (struct sockaddr *)&peer, sizeof(peer), RPC_TCP,
	                       NULL, &rep->buf) == 0) {
		xdr_in_init(&in, rep->buf.buf, rep->buf.len);
		xdr_get_u32(&in, &v); /* xid */
		xdr_get_u32(&in, &v); /* REPLY */
		xdr_get_u32(&in, &v); /* MSG_ACCEPTED */
		xdr_get_u32(&in, &v); /* verf flavor */
		xdr_get_u32(&in, &vlen);
		xdr_skip(&in, vlen);
		if (xdr_get_u32(&in, &v) && v == 0 && !in.err)
			rep->stat = 0;
		else if (!in.err)
			rep->stat = (int)v;
		rep->res = in;
	}
	xdr_out_free(&rec);
}

static void call(uint32_t proc, const struct xdr_out *args, struct reply *rep)
{
	call_n(proc, args, args->len, rep);
}

/* The nfsstat3 of a successful RPC, or a value no status has. */
static uint32_t status(struct reply *rep)
{
	uint32_t st;

	if (rep->stat != 0 || !xdr_get_u32(&rep->res, &st))
		return 0xdeadu;
	return st;
}

static struct xdr_out args_new(void)
{
	struct xdr_out a;
	xdr_out_init(&a, 4096, 4u << 20);
	return a;
}

/* ---- reply decoding ---- */

struct fattr {
	uint32_t type, mode, nlink;
	uint64_t size, fsid, fileid;
	uint32_t ctime_s, ctime_ns;
};

static bool get_fattr(struct xdr_in *x, struct fattr *f)
{
	uint32_t v;
	uint64_t w;

	xdr_get_u32(x, &f->type);
	xdr_get_u32(x, &f->mode);
	xdr_get_u32(x, &f->nlink);
	xdr_get_u32(x, &v); /* uid */
	xdr_get_u32(x, &v); /* gid */
	xdr_get_u64(x, &f->size);
	xdr_get_u64(x, &w); /* used */
	xdr_get_u32(x, &v); /* rdev */
	xdr_get_u32(x, &v);
	xdr_get_u64(x, &f->fsid);
	xdr_get_u64(x, &f->fileid);
	xdr_get_u64(x, &w); /* atime */
	xdr_get_u64(x, &w); /* mtime */
	xdr_get_u32(x, &f->ctime_s);
	xdr_get_u32(x, &f->ctime_ns);
	return !x->err;
}

/* post_op_attr: true when attributes followed (and decoded into f). */
static bool get_post_op(struct xdr_in *x, struct fattr *f)
{
	bool follows = false;
	struct fattr tmp;

	if (!xdr_get_bool(x, &follows) || !follows)
		return false;
	return get_fattr(x, f ? f : &tmp);
}

static bool get_pre_op(struct xdr_in *x, uint64_t *size)
{
	bool follows = false;
	uint64_t t;

	if (!xdr_get_bool(x, &follows) || !follows)
		return false;
	xdr_get_u64(x, size);
	xdr_get_u64(x, &t);
	xdr_get_u64(x, &t);
	return !x->err;
}

static bool get_fh(struct xdr_in *x, struct nfs_fh *fh)
{
	return xdr_get_opaque(x, fh->data, &fh->len, NFS_FH_MAX);
}

static bool get_post_op_fh(struct xdr_in *x, struct nfs_fh *fh)
{
	bool follows = false;
	return xdr_get_bool(x, &follows) && follows && get_fh(x, fh);
}

/* ---- setup ---- */

static int root_fh(size_t i, struct nfs_fh *fh)
{
	struct export *ex = &S.exports->v[i];
	struct bk_handle bh;
	int rc = ex->ops->root(ex->bk, &bh);

	return rc ? rc : fh_make(&S, ex, &bh, fh);
}

static int setup(void)
{
	const char *specs[3];
	char spec_rw[160], spec_ro[160], spec_as[160], err[256];
	struct export_table *t;
	int rc;

	snprintf(base, sizeof(base), "/tmp/snfs-nfs3-XXXXXX");
	if (!mkdtemp(base))
		return -errno;
	snprintf(rwdir, sizeof(rwdir), "%s/rw", base);
	snprintf(rodir, sizeof(rodir), "%s/ro", base);
	mkdir(rwdir, 0755);
	mkdir(rodir, 0755);
	snprintf(asdir, sizeof(asdir), "%s/as", base);
	mkdir(asdir, 0755);
	snprintf(spec_as, sizeof(spec_as),
	         "%s:rw,async,insecure,no_root_squash", asdir);
	snprintf(spec_rw, sizeof(spec_rw), "%s:rw,insecure,no_root_squash",
	         rwdir);
	snprintf(spec_ro, sizeof(spec_ro), "%s:ro,insecure,no_root_squash",
	         rodir);
	specs[0] = spec_rw;
	specs[1] = spec_ro;
	specs[2] = spec_as;
	rc = exports_load(NULL, specs, 3, &t, err, sizeof(err));
	if (rc) {
		printf("# exports_load: %s\n", err);
		return rc;
	}
	pthread_mutex_init(&S.exports_lock, NULL);
	pthread_mutex_init(&S.mounts_lock, NULL);
	S.exports = t;
	for (int i = 0; i < 16; i++)
		S.fh_key[i] = (uint8_t)(i * 7 + 3);
	memcpy(S.write_verf, "VERF1234", 8);
	S.svc = rpc_service_new(&S);
	if (!S.svc)
		return -ENOMEM;
	return programs_register(S.svc);
}

static void teardown(void)
{
	char cmd[200];

	rpc_service_free(S.svc);
	exports_release(S.exports);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		printf("# cleanup of %s failed\n", base);
}

/* ---- procedures ---- */

static struct nfs_fh root, roroot, asroot;

static uint32_t lookup(const struct nfs_fh *dir, const char *name,
                       struct nfs_fh *out, struct fattr *attr)
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	uint32_t st;

	put_diropargs(&a, dir, name);
	call(NFSPROC3_LOOKUP, &a, &rep);
	st = status(&rep);
	if (st == NFS3_OK) {
		get_fh(&rep.res, out);
		get_post_op(&rep.res, attr);
	}
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
	return st;
}

static uint32_t create(const struct nfs_fh *dir, const char *name, uint32_t how,
                       struct nfs_fh *out)
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	uint32_t st;

	put_diropargs(&a, dir, name);
	xdr_put_u32(&a, how);
	if (how == 2)
		xdr_put_fixed(&a, "exclverf", 8);
	else
		put_sattr_mode(&a, 0644);
	call(NFSPROC3_CREATE, &a, &rep);
	st = status(&rep);
	if (st == NFS3_OK && out && !get_post_op_fh(&rep.res, out))
		st = 0xbad;
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
	return st;
}

static uint32_t getattr(const struct nfs_fh *fh, struct fattr *f)
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	uint32_t st;

	put_fh(&a, fh);
	call(NFSPROC3_GETATTR, &a, &rep);
	st = status(&rep);
	if (st == NFS3_OK && !get_fattr(&rep.res, f))
		st = 0xbad;
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
	return st;
}

static uint32_t simple_dirop(uint32_t proc, const struct nfs_fh *dir,
                             const char *name)
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	uint32_t st;

	put_diropargs(&a, dir, name);
	call(proc, &a, &rep);
	st = status(&rep);
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
	return st;
}

static void test_basic(void)
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	struct fattr f;
	struct nfs_fh fh, fh2;
	uint64_t presize = 99;
	uint32_t v, count;
	bool eof;
	uint8_t verf[8], data[64];

	call(NFSPROC3_NULL, &a, &rep);
	CHECK(rep.stat == 0 && xdr_in_remaining(&rep.res) == 0,
	      "NULL answers with nothing");

	CHECK(getattr(&root, &f) == NFS3_OK && f.type == NF3DIR &&
	          f.fsid == S.exports->v[0].fsid,
	      "GETATTR of the root: a directory with the export's fsid");

	CHECK(create(&root, "f", 0, &fh) == NFS3_OK, "CREATE UNCHECKED");
	CHECK(create(&root, "f", 1, NULL) == NFS3ERR_EXIST,
	      "CREATE GUARDED of an existing name: EXIST");
	CHECK(create(&root, "f", 0, &fh2) == NFS3_OK,
	      "CREATE UNCHECKED of an existing name: OK");
	CHECK(create(&root, "x", 2, &fh2) == NFS3_OK &&
	          create(&root, "x", 2, NULL) == NFS3_OK,
	      "CREATE EXCLUSIVE twice with the same verifier: OK");
	CHECK(create(&root, ".", 0, NULL) == NFS3ERR_EXIST,
	      "CREATE '.': EXIST");
	CHECK(create(&root, "a/b", 0, NULL) == NFS3ERR_ACCES,
	      "CREATE 'a/b': ACCES");

	CHECK(lookup(&root, "f", &fh2, &f) == NFS3_OK && f.type == NF3REG &&
	          (f.mode & 0777) == 0644 && f.size == 0,
	      "LOOKUP finds the created file, mode 0644");
	CHECK(fh2.len == fh.len && !memcmp(fh2.data, fh.data, fh.len),
	      "LOOKUP handle equals CREATE handle");
	CHECK(lookup(&root, "nope", &fh2, NULL) == NFS3ERR_NOENT,
	      "LOOKUP of a missing name: NOENT");
	CHECK(lookup(&root, "", &fh2, NULL) == NFS3ERR_NOENT,
	      "LOOKUP of '': NOENT");
	CHECK(lookup(&root, "..", &fh2, &f) == NFS3_OK && fh2.len == root.len &&
	          !memcmp(fh2.data, root.data, root.len),
	      "LOOKUP '..' of the export root is the root");
	char longname[300];
	memset(longname, 'n', 256);
	longname[256] = 0;
	CHECK(lookup(&root, longname, &fh2, NULL) == NFS3ERR_NAMETOOLONG,
	      "LOOKUP 256-byte name: NAMETOOLONG");
	CHECK(create(&root, longname, 0, NULL) == NFS3ERR_NAMETOOLONG,
	      "CREATE 256-byte name: NAMETOOLONG");

	/* WRITE */
	xdr_out_truncate(&a, 0);
	put_fh(&a, &fh);
	xdr_put_u64(&a, 0);
	xdr_put_u32(&a, 11);
	xdr_put_u32(&a, 2); /* FILE_SYNC */
	xdr_put_opaque(&a, "hello world", 11);
	call(NFSPROC3_WRITE, &a, &rep);
	CHECK(status(&rep) == NFS3_OK, "WRITE: OK");
	CHECK(get_pre_op(&rep.res, &presize) && presize == 0,
	      "WRITE: wcc pre size 0");
	CHECK(get_post_op(&rep.res, &f) && f.size == 11,
	      "WRITE: wcc post size 11");
	xdr_get_u32(&rep.res, &count);
	xdr_get_u32(&rep.res, &v);
	xdr_get_fixed(&rep.res, verf, 8);
	CHECK(!rep.res.err && count == 11 && v == 2 &&
	          !memcmp(verf, S.write_verf, 8),
	      "WRITE: count, FILE_SYNC, verifier = write_verf");

	/* a data length that disagrees with count */
	xdr_out_truncate(&a, 0);
	put_fh(&a, &fh);
	xdr_put_u64(&a, 0);
	xdr_put_u32(&a, 12);
	xdr_put_u32(&a, 0);
	xdr_put_opaque(&a, "hello world", 11);
	call(NFSPROC3_WRITE, &a, &rep);
	CHECK(rep.stat == RPC_GARBAGE_ARGS, "WRITE count != length: GARBAGE");

	/* READ */
	xdr_out_truncate(&a, 0);
	put_fh(&a, &fh);
	xdr_put_u64(&a, 0);
	xdr_put_u32(&a, 100);
	call(NFSPROC3_READ, &a, &rep);
	CHECK(status(&rep) == NFS3_OK, "READ: OK");
	CHECK(get_post_op(&rep.res, &f) && f.size == 11, "READ: attributes");
	xdr_get_u32(&rep.res, &count);
	xdr_get_bool(&rep.res, &eof);
	xdr_get_opaque(&rep.res, data, &v, sizeof(data));
	CHECK(!rep.res.err && count == 11 && v == 11 && eof &&
	          !memcmp(data, "hello world", 11) &&
	          xdr_in_remaining(&rep.res) == 0,
	      "READ: whole file, eof, padded");

	xdr_out_truncate(&a, 0);
	put_fh(&a, &fh);
	xdr_put_u64(&a, 2);
	xdr_put_u32(&a, 3);
	call(NFSPROC3_READ, &a, &rep);
	CHECK(status(&rep) == NFS3_OK, "READ part: OK");
	get_post_op(&rep.res, NULL);
	xdr_get_u32(&rep.res, &count);
	xdr_get_bool(&rep.res, &eof);
	xdr_get_opaque(&rep.res, data, &v, sizeof(data));
	CHECK(!rep.res.err && count == 3 && !eof && !memcmp(data, "llo", 3),
	      "READ part: 3 bytes, not eof");

	xdr_out_truncate(&a, 0);
	put_fh(&a, &fh);
	xdr_put_u64(&a, 1000);
	xdr_put_u32(&a, 10);
	call(NFSPROC3_READ, &a, &rep);
	CHECK(status(&rep) == NFS3_OK, "READ past end: OK");
	get_post_op(&rep.res, NULL);
	xdr_get_u32(&rep.res, &count);
	xdr_get_bool(&rep.res, &eof);
	CHECK(!rep.res.err && count == 0 && eof, "READ past end: 0 bytes, eof");

	xdr_out_truncate(&a, 0);
	put_fh(&a, &root);
	xdr_put_u64(&a, 0);
	xdr_put_u32(&a, 10);
	call(NFSPROC3_READ, &a, &rep);
	CHECK(status(&rep) == NFS3ERR_ISDIR, "READ of a directory: ISDIR");

	/* COMMIT */
	xdr_out_truncate(&a, 0);
	put_fh(&a, &fh);
	xdr_put_u64(&a, 0);
	xdr_put_u32(&a, 0);
	call(NFSPROC3_COMMIT, &a, &rep);
	CHECK(status(&rep) == NFS3_OK, "COMMIT: OK");
	get_pre_op(&rep.res, &presize);
	get_post_op(&rep.res, NULL);
	xdr_get_fixed(&rep.res, verf, 8);
	CHECK(!rep.res.err && !memcmp(verf, S.write_verf, 8),
	      "COMMIT: verifier = write_verf");

	/* SETATTR with a guard */
	getattr(&fh, &f);
	xdr_out_truncate(&a, 0);
	put_fh(&a, &fh);
	put_sattr_mode(&a, 0600);
	xdr_put_bool(&a, true);
	xdr_put_u32(&a, f.ctime_s + 1);
	xdr_put_u32(&a, f.ctime_ns);
	call(NFSPROC3_SETATTR, &a, &rep);
	CHECK(status(&rep) == NFS3ERR_NOT_SYNC,
	      "SETATTR guard mismatch: NOT_SYNC");
	CHECK(get_pre_op(&rep.res, &presize) && get_post_op(&rep.res, &f) &&
	          (f.mode & 0777) == 0644,
	      "SETATTR NOT_SYNC: wcc present, mode unchanged");

	xdr_out_truncate(&a, 0);
	put_fh(&a, &fh);
	xdr_put_bool(&a, true); /* mode */
	xdr_put_u32(&a, 0600);
	xdr_put_bool(&a, false);
	xdr_put_bool(&a, false);
	xdr_put_bool(&a, true); /* size */
	xdr_put_u64(&a, 5);
	xdr_put_u32(&a, SET_TO_SERVER_TIME);
	xdr_put_u32(&a, SET_TO_CLIENT_TIME);
	xdr_put_u32(&a, 1000000);
	xdr_put_u32(&a, 5);
	xdr_put_bool(&a, true);
	xdr_put_u32(&a, f.ctime_s);
	xdr_put_u32(&a, f.ctime_ns);
	call(NFSPROC3_SETATTR, &a, &rep);
	CHECK(status(&rep) == NFS3_OK, "SETATTR guard match: OK");
	CHECK(getattr(&fh, &f) == NFS3_OK && (f.mode & 07777) == 0600 &&
	          f.size == 5,
	      "SETATTR: mode and size applied");

	/* ACCESS */
	xdr_out_truncate(&a, 0);
	put_fh(&a, &fh);
	xdr_put_u32(&a, 0x3f);
	call(NFSPROC3_ACCESS, &a, &rep);
	CHECK(status(&rep) == NFS3_OK && get_post_op(&rep.res, NULL),
	      "ACCESS: OK with attributes");
	xdr_get_u32(&rep.res, &v);
	CHECK(!rep.res.err && (v & 0x1) && (v & 0x4),
	      "ACCESS: root may read and modify");

	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
}

static void test_namespace(void)
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	struct nfs_fh d, l, p, f;
	struct fattr fa;
	char buf[64];
	uint32_t v;

	/* MKDIR */
	put_diropargs(&a, &root, "d");
	put_sattr_mode(&a, 0755);
	call(NFSPROC3_MKDIR, &a, &rep);
	CHECK(status(&rep) == NFS3_OK && get_post_op_fh(&rep.res, &d) &&
	          get_post_op(&rep.res, &fa) && fa.type == NF3DIR,
	      "MKDIR: handle and directory attributes");
	CHECK(simple_dirop(NFSPROC3_RMDIR, &root, ".") == NFS3ERR_INVAL,
	      "RMDIR '.': INVAL");

	/* SYMLINK + READLINK */
	xdr_out_truncate(&a, 0);
	put_diropargs(&a, &root, "l");
	put_sattr_none(&a);
	xdr_put_string(&a, "target/path");
	call(NFSPROC3_SYMLINK, &a, &rep);
	CHECK(status(&rep) == NFS3_OK && get_post_op_fh(&rep.res, &l),
	      "SYMLINK: OK with handle");
	xdr_out_truncate(&a, 0);
	put_fh(&a, &l);
	call(NFSPROC3_READLINK, &a, &rep);
	CHECK(status(&rep) == NFS3_OK && get_post_op(&rep.res, &fa) &&
	          fa.type == NF3LNK,
	      "READLINK: OK, a symlink");
	memset(buf, 0, sizeof(buf));
	CHECK(xdr_get_opaque(&rep.res, buf, &v, sizeof(buf) - 1) &&
	          !strcmp(buf, "target/path"),
	      "READLINK: the target");
	xdr_out_truncate(&a, 0);
	put_fh(&a, &root);
	call(NFSPROC3_READLINK, &a, &rep);
	CHECK(status(&rep) == NFS3ERR_INVAL, "READLINK of a directory: INVAL");

	/* SYMLINK target too long */
	static char longpath[5000];
	memset(longpath, 'p', 4097);
	longpath[4097] = 0;
	xdr_out_truncate(&a, 0);
	put_diropargs(&a, &root, "l2");
	put_sattr_none(&a);
	xdr_put_string(&a, longpath);
	call(NFSPROC3_SYMLINK, &a, &rep);
	CHECK(status(&rep) == NFS3ERR_NAMETOOLONG,
	      "SYMLINK 4097-byte target: NAMETOOLONG");

	/* MKNOD */
	xdr_out_truncate(&a, 0);
	put_diropargs(&a, &root, "p");
	xdr_put_u32(&a, NF3FIFO);
	put_sattr_mode(&a, 0600);
	call(NFSPROC3_MKNOD, &a, &rep);
	CHECK(status(&rep) == NFS3_OK && get_post_op_fh(&rep.res, &p) &&
	          get_post_op(&rep.res, &fa) && fa.type == NF3FIFO,
	      "MKNOD FIFO");
	xdr_out_truncate(&a, 0);
	put_fh(&a, &p);
	xdr_put_u64(&a, 0);
	xdr_put_u32(&a, 10);
	call(NFSPROC3_READ, &a, &rep);
	CHECK(status(&rep) == NFS3ERR_INVAL, "READ of a FIFO: INVAL");
	xdr_out_truncate(&a, 0);
	put_diropargs(&a, &root, "r");
	xdr_put_u32(&a, NF3REG);
	call(NFSPROC3_MKNOD, &a, &rep);
	CHECK(status(&rep) == NFS3ERR_BADTYPE, "MKNOD NF3REG: BADTYPE");
	/* Device nodes: the POSIX backend does not declare BK_CAP_DEVICES,
	 * so it makes none for anyone (a client's device node on the server
	 * would open the server's hardware to whoever can reach it): EPERM,
	 * NFS3ERR_PERM, even for root on this no_root_squash export and with
	 * the test itself running as root, where mknod(2) would work. */
	static const uint32_t devtype[] = {NF3CHR, NF3BLK};
	for (int i = 0; i < 2; i++) {
		const char *what = devtype[i] == NF3CHR ? "CHR" : "BLK";
		char name[32];
		for (uint32_t uid = 0; uid <= 1000; uid += 1000) {
			snprintf(name, sizeof(name), "dev%s%u", what, uid);
			call_uid = uid;
			xdr_out_truncate(&a, 0);
			put_diropargs(&a, &root, name);
			xdr_put_u32(&a, devtype[i]);
			put_sattr_mode(&a, 0600);
			xdr_put_u32(&a, 1);
			xdr_put_u32(&a, 3); /* /dev/null's numbers */
			call(NFSPROC3_MKNOD, &a, &rep);
			v = status(&rep);
			call_uid = 0;
			snprintf(buf, sizeof(buf),
			         "MKNOD NF3%s as uid %u: PERM", what, uid);
			CHECK(v == NFS3ERR_PERM &&
			          lookup(&root, name, &l, NULL) ==
			              NFS3ERR_NOENT,
			      buf);
		}
	}
	xdr_out_truncate(&a, 0);
	put_diropargs(&a, &root, "s");
	xdr_put_u32(&a, NF3SOCK);
	put_sattr_mode(&a, 0600);
	call(NFSPROC3_MKNOD, &a, &rep);
	CHECK(status(&rep) == NFS3_OK && get_post_op_fh(&rep.res, &p) &&
	          get_post_op(&rep.res, &fa) && fa.type == NF3SOCK &&
	          (fa.mode & 07777) == 0600,
	      "MKNOD NF3SOCK: OK, a socket, mode 0600");

	/* LINK, RENAME, REMOVE */
	create(&root, "g", 0, &f);
	xdr_out_truncate(&a, 0);
	put_fh(&a, &f);
	put_diropargs(&a, &root, "g2");
	call(NFSPROC3_LINK, &a, &rep);
	CHECK(status(&rep) == NFS3_OK && get_post_op(&rep.res, &fa) &&
	          fa.nlink == 2,
	      "LINK: nlink 2");
	xdr_out_truncate(&a, 0);
	put_diropargs(&a, &root, "g2");
	put_diropargs(&a, &d, "g3");
	call(NFSPROC3_RENAME, &a, &rep);
	uint64_t sz;
	CHECK(status(&rep) == NFS3_OK && get_pre_op(&rep.res, &sz) &&
	          get_post_op(&rep.res, NULL) && get_pre_op(&rep.res, &sz) &&
	          get_post_op(&rep.res, NULL),
	      "RENAME across directories: OK, both wcc");
	CHECK(lookup(&d, "g3", &l, NULL) == NFS3_OK &&
	          lookup(&root, "g2", &l, NULL) == NFS3ERR_NOENT,
	      "RENAME moved the name");
	CHECK(simple_dirop(NFSPROC3_RMDIR, &root, "d") == NFS3ERR_NOTEMPTY,
	      "RMDIR of a non-empty directory: NOTEMPTY");
	CHECK(simple_dirop(NFSPROC3_REMOVE, &d, "g3") == NFS3_OK, "REMOVE: OK");
	CHECK(simple_dirop(NFSPROC3_RMDIR, &root, "d") == NFS3_OK, "RMDIR: OK");
	CHECK(simple_dirop(NFSPROC3_REMOVE, &root, "g") == NFS3_OK &&
	          getattr(&f, &fa) == NFS3ERR_STALE,
	      "GETATTR after REMOVE: STALE");
	CHECK(simple_dirop(NFSPROC3_REMOVE, &root, "nope") == NFS3ERR_NOENT,
	      "REMOVE of a missing name: NOENT");

	/* a forged handle */
	struct nfs_fh bad = root;
	bad.data[bad.len - 1] ^= 0x55;
	CHECK(getattr(&bad, &fa) == NFS3ERR_BADHANDLE,
	      "GETATTR of a bit-flipped handle: BADHANDLE");
	xdr_out_truncate(&a, 0);
	xdr_put_u32(&a, 65);
	xdr_put_fixed(&a, longpath, 65);
	call(NFSPROC3_GETATTR, &a, &rep);
	CHECK(rep.stat == RPC_GARBAGE_ARGS, "GETATTR 65-byte handle: GARBAGE");

	/* FSSTAT, FSINFO, PATHCONF */
	xdr_out_truncate(&a, 0);
	put_fh(&a, &root);
	call(NFSPROC3_FSSTAT, &a, &rep);
	uint64_t tb = 0, fb = 0;
	CHECK(status(&rep) == NFS3_OK && get_post_op(&rep.res, NULL) &&
	          xdr_get_u64(&rep.res, &tb) && xdr_get_u64(&rep.res, &fb) &&
	          tb > 0 && fb <= tb,
	      "FSSTAT: sizes");
	/* FSINFO: test_fsinfo */
	call(NFSPROC3_PATHCONF, &a, &rep);
	uint32_t linkmax = 0, name_max = 0;
	CHECK(status(&rep) == NFS3_OK && get_post_op(&rep.res, NULL) &&
	          xdr_get_u32(&rep.res, &linkmax) &&
	          xdr_get_u32(&rep.res, &name_max) && name_max == 255,
	      "PATHCONF: name_max 255");

	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
}

static void test_rofs(void)
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	struct nfs_fh f;
	char path[200];
	int fd;
	uint32_t v;

	snprintf(path, sizeof(path), "%s/file", rodir);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
	CHECK(create(&roroot, "new", 0, NULL) == NFS3ERR_ROFS,
	      "CREATE on a ro export: ROFS");
	CHECK(simple_dirop(NFSPROC3_REMOVE, &roroot, "file") == NFS3ERR_ROFS,
	      "REMOVE on a ro export: ROFS");
	CHECK(lookup(&roroot, "file", &f, NULL) == NFS3_OK,
	      "LOOKUP on a ro export: OK");
	put_fh(&a, &f);
	xdr_put_u64(&a, 0);
	xdr_put_u32(&a, 1);
	xdr_put_u32(&a, 0);
	xdr_put_opaque(&a, "z", 1);
	call(NFSPROC3_WRITE, &a, &rep);
	CHECK(status(&rep) == NFS3ERR_ROFS, "WRITE on a ro export: ROFS");
	xdr_out_truncate(&a, 0);
	put_fh(&a, &f);
	put_sattr_mode(&a, 0600);
	xdr_put_bool(&a, false);
	call(NFSPROC3_SETATTR, &a, &rep);
	CHECK(status(&rep) == NFS3ERR_ROFS, "SETATTR on a ro export: ROFS");
	xdr_out_truncate(&a, 0);
	put_fh(&a, &f);
	xdr_put_u32(&a, 0x3f);
	call(NFSPROC3_ACCESS, &a, &rep);
	CHECK(status(&rep) == NFS3_OK && get_post_op(&rep.res, NULL) &&
	          xdr_get_u32(&rep.res, &v) && (v & 1) && !(v & 0x1c),
	      "ACCESS on a ro export: read only");
	/* a handle of the ro export in a call on the rw one */
	xdr_out_truncate(&a, 0);
	put_fh(&a, &f);
	put_diropargs(&a, &root, "xlink");
	call(NFSPROC3_LINK, &a, &rep);
	CHECK(status(&rep) == NFS3ERR_XDEV, "LINK across exports: XDEV");
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
}

/* WRITE UNSTABLE: the export option "sync" (the default) makes it
 * FILE_SYNC; "async" leaves it to the backend. */
static uint32_t write_unstable(const struct nfs_fh *dir, uint32_t *committed)
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	struct nfs_fh f;
	uint64_t sz;
	uint32_t st, n = 0;

	st = create(dir, "u", 0, &f);
	if (st == NFS3_OK) {
		put_fh(&a, &f);
		xdr_put_u64(&a, 0);
		xdr_put_u32(&a, 4);
		xdr_put_u32(&a, 0); /* UNSTABLE */
		xdr_put_opaque(&a, "data", 4);
		call(NFSPROC3_WRITE, &a, &rep);
		st = status(&rep);
		get_pre_op(&rep.res, &sz);
		get_post_op(&rep.res, NULL);
		xdr_get_u32(&rep.res, &n);
		xdr_get_u32(&rep.res, committed);
		if (rep.res.err || n != 4)
			st = 0xbad;
	}
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
	return st;
}

/* The backend's commit, counted: what COMMIT asks of the disk. */
static struct bk_ops counted_ops;
static int (*real_commit)(struct bk_export *, const struct bk_handle *,
                          uint64_t, uint64_t);
static int commits;

static int counted_commit(struct bk_export *ex, const struct bk_handle *h,
                          uint64_t off, uint64_t count)
{
	commits++;
	return real_commit(ex, h, off, count);
}

/* COMMIT on dir/"u"; the reply's status, its verifier in verf. */
static uint32_t commit_u(const struct nfs_fh *dir, uint8_t verf[8])
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	struct nfs_fh f;
	uint64_t sz;
	uint32_t st = lookup(dir, "u", &f, NULL);

	if (st == NFS3_OK) {
		put_fh(&a, &f);
		xdr_put_u64(&a, 0);
		xdr_put_u32(&a, 0);
		call(NFSPROC3_COMMIT, &a, &rep);
		st = status(&rep);
		get_pre_op(&rep.res, &sz);
		get_post_op(&rep.res, NULL);
		if (st == NFS3_OK && !xdr_get_fixed(&rep.res, verf, 8))
			st = 0xbad;
	}
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
	return st;
}

static void test_stability(void)
{
	uint32_t c = 99;
	uint8_t verf[8];

	CHECK(write_unstable(&root, &c) == NFS3_OK && c == 2,
	      "WRITE UNSTABLE on a sync export: FILE_SYNC");
	c = 99;
	CHECK(write_unstable(&asroot, &c) == NFS3_OK && c == 0,
	      "WRITE UNSTABLE on an async export: UNSTABLE");

	/* sync flushes at COMMIT; async (exports(5), as knfsd) answers
	 * without flushing */
	struct export *sx = &S.exports->v[0], *ax = &S.exports->v[2];
	const struct bk_ops *saved = sx->ops;
	counted_ops = *saved;
	real_commit = saved->commit;
	counted_ops.commit = counted_commit;
	sx->ops = ax->ops = &counted_ops;
	commits = 0;
	CHECK(commit_u(&root, verf) == NFS3_OK && commits == 1 &&
	          !memcmp(verf, S.write_verf, 8),
	      "COMMIT on a sync export flushes");
	commits = 0;
	CHECK(commit_u(&asroot, verf) == NFS3_OK && commits == 0 &&
	          !memcmp(verf, S.write_verf, 8),
	      "COMMIT on an async export answers without flushing");
	sx->ops = ax->ops = saved;
}

/* cachestat(2) (Linux 6.5): pages of a file in the page cache, dirty and
 * under writeback. Debian 12's headers predate it. */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif
struct cs_range {
	uint64_t off, len;
};
struct cs_stat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted,
	    nr_recently_evicted;
};

static int cachestat_path(const char *path, struct cs_stat *out)
{
	struct cs_range r = {0, 0}; /* len 0: to the end of the file */
	int fd = open(path, O_RDONLY), rc;

	if (fd < 0)
		return -errno;
	rc = syscall(__NR_cachestat, fd, &r, out, 0) != 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* The stability the server asked of the backend's write. */
static ssize_t (*real_write)(struct bk_export *, const struct bk_cred *,
                             const struct bk_handle *, const void *, size_t,
                             uint64_t, enum bk_stable, enum bk_stable *);
static int write_asked;

static ssize_t recorded_write(struct bk_export *ex, const struct bk_cred *cr,
                              const struct bk_handle *h, const void *buf,
                              size_t count, uint64_t off, enum bk_stable stable,
                              enum bk_stable *committed)
{
	write_asked = (int)stable;
	return real_write(ex, cr, h, buf, count, off, stable, committed);
}

/* WRITE len bytes of data at 0 with stable_how how: the status, the
 * count written and committed from the reply. */
static uint32_t write_how(const struct nfs_fh *fh, const void *data,
                          uint32_t len, uint32_t how, uint32_t *n,
                          uint32_t *committed, uint8_t verf[8])
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	uint64_t sz;
	uint32_t st;

	put_fh(&a, fh);
	xdr_put_u64(&a, 0);
	xdr_put_u32(&a, len);
	xdr_put_u32(&a, how);
	xdr_put_opaque(&a, data, len);
	call(NFSPROC3_WRITE, &a, &rep);
	st = status(&rep);
	get_pre_op(&rep.res, &sz);
	get_post_op(&rep.res, NULL);
	if (st == NFS3_OK &&
	    (!xdr_get_u32(&rep.res, n) || !xdr_get_u32(&rep.res, committed) ||
	     !xdr_get_fixed(&rep.res, verf, 8)))
		st = 0xbad;
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
	return st;
}

/* RFC 1813 section 3.3.7: DATA_SYNC asks that the data (and the metadata
 * needed to read it back) be on stable storage before the reply, which
 * says committed DATA_SYNC or FILE_SYNC. Over the wire on the sync and
 * the async export: the reply, what the backend was asked, and the page
 * cache afterwards (cachestat: no dirty or writeback page left). */
static void test_data_sync(void)
{
	static uint8_t data[65536], back[65536];
	const struct nfs_fh *dirs[2] = {&root, &asroot};
	const char *paths[2] = {rwdir, asdir}, *names[2] = {"sync", "async"};
	struct export *sx = &S.exports->v[0], *ax = &S.exports->v[2];
	const struct bk_ops *saved = sx->ops;
	struct cs_stat cs;
	char path[200], name[128];
	uint32_t n, c;
	uint8_t verf[8];
	struct nfs_fh f;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 1);
	counted_ops = *saved;
	real_write = saved->write;
	counted_ops.write = recorded_write;
	sx->ops = ax->ops = &counted_ops;
	for (int i = 0; i < 2; i++) {
		n = c = 99;
		write_asked = -1;
		snprintf(name, sizeof(name),
		         "WRITE DATA_SYNC on the %s export: all written, "
		         "committed >= DATA_SYNC, the backend asked for it",
		         names[i]);
		CHECK(create(dirs[i], "ds", 0, &f) == NFS3_OK &&
		          write_how(&f, data, sizeof(data), 1, &n, &c, verf) ==
		              NFS3_OK &&
		          n == sizeof(data) && c >= 1 && c <= 2 &&
		          !memcmp(verf, S.write_verf, 8) &&
		          write_asked >= BK_DATA_SYNC,
		      name);
		snprintf(path, sizeof(path), "%s/ds", paths[i]);
		int rc = cachestat_path(path, &cs);
		snprintf(name, sizeof(name),
		         "WRITE DATA_SYNC on the %s export: no page left dirty "
		         "or under writeback (cachestat)",
		         names[i]);
		if (rc == -ENOSYS)
			printf("ok - # SKIP %s (no cachestat)\n", name);
		else
			CHECK(rc == 0 && cs.nr_cache > 0 && cs.nr_dirty == 0 &&
			          cs.nr_writeback == 0,
			      name);
		int fd = open(path, O_RDONLY);
		snprintf(name, sizeof(name),
		         "WRITE DATA_SYNC on the %s export: the file holds the "
		         "data",
		         names[i]);
		CHECK(fd >= 0 &&
		          pread(fd, back, sizeof(back), 0) ==
		              (ssize_t)sizeof(back) &&
		          !memcmp(back, data, sizeof(data)),
		      name);
		if (fd >= 0)
			close(fd);
	}
	/* exports(5) "sync": an UNSTABLE WRITE is answered FILE_SYNC, so
	 * it must be as stable as that. */
	if (create(&root, "ds_sync", 0, &f) == NFS3_OK &&
	    write_how(&f, data, sizeof(data), 0, &n, &c, verf) == NFS3_OK) {
		snprintf(path, sizeof(path), "%s/ds_sync", rwdir);
		int rc = cachestat_path(path, &cs);
		const char *what = "WRITE UNSTABLE on the sync export: "
		                   "FILE_SYNC, no page left dirty (cachestat)";
		if (rc == -ENOSYS)
			printf("ok - # SKIP %s\n", what);
		else
			CHECK(rc == 0 && c == 2 && cs.nr_cache > 0 &&
			          cs.nr_dirty == 0 && cs.nr_writeback == 0,
			      what);
	} else {
		CHECK(false, "WRITE UNSTABLE on the sync export");
	}
	/* What the cachestat check would see of a write left unstable. */
	if (create(&asroot, "ds_unstable", 0, &f) == NFS3_OK &&
	    write_how(&f, data, sizeof(data), 0, &n, &c, verf) == NFS3_OK) {
		snprintf(path, sizeof(path), "%s/ds_unstable", asdir);
		if (cachestat_path(path, &cs) == 0)
			printf("# control: UNSTABLE on the async export "
			       "(committed %u) left %llu of %llu pages dirty\n",
			       c, (unsigned long long)cs.nr_dirty,
			       (unsigned long long)cs.nr_cache);
	}
	sx->ops = ax->ops = saved;
}

/* FSINFO properties (RFC 1813 section 3.3.19) */
#define FSF3_LINK 0x0001u
#define FSF3_SYMLINK 0x0002u
#define FSF3_HOMOGENEOUS 0x0008u
#define FSF3_CANSETTIME 0x0010u

/* RFC 1813 section 3.3.19. snfsd moves up to 1 MiB per READ, WRITE and
 * READDIR and prefers the same (src/server/nfs3/attr.c), in multiples of
 * a 4 KiB page; files may grow to what WRITE accepts (an offset plus
 * count up to 2^63-1, FBIG past it); times are kept to the nanosecond;
 * hard links, symlinks and setting times work, and PATHCONF is the same
 * for every object of an export (mount points are never crossed). The
 * sizes are checked against READ and WRITE, too. */
static void test_fsinfo(void)
{
	static uint8_t big[(1u << 20) + 1], other[(1u << 20) + 1],
	    back[1u << 20];
	struct xdr_out a = args_new();
	struct reply rep = {0};
	uint32_t rtmax = 0, rtpref = 0, rtmult = 0, wtmax = 0, wtpref = 0,
	         wtmult = 0, dtpref = 0, td_s = 9, td_ns = 9, props = 0, n = 0,
	         c = 0;
	uint64_t maxfilesize = 0;
	struct fattr fa;
	struct nfs_fh f;
	uint8_t verf[8];
	bool attr;

	put_fh(&a, &root);
	call(NFSPROC3_FSINFO, &a, &rep);
	CHECK(status(&rep) == NFS3_OK, "FSINFO: OK");
	attr = get_post_op(&rep.res, &fa);
	xdr_get_u32(&rep.res, &rtmax);
	xdr_get_u32(&rep.res, &rtpref);
	xdr_get_u32(&rep.res, &rtmult);
	xdr_get_u32(&rep.res, &wtmax);
	xdr_get_u32(&rep.res, &wtpref);
	xdr_get_u32(&rep.res, &wtmult);
	xdr_get_u32(&rep.res, &dtpref);
	xdr_get_u64(&rep.res, &maxfilesize);
	xdr_get_u32(&rep.res, &td_s);
	xdr_get_u32(&rep.res, &td_ns);
	xdr_get_u32(&rep.res, &props);
	CHECK(!rep.res.err && xdr_in_remaining(&rep.res) == 0 && attr &&
	          fa.type == NF3DIR,
	      "FSINFO: the whole reply decodes, with the root's attributes");
	CHECK(rtmax == 1u << 20 && rtpref == 1u << 20,
	      "FSINFO: rtmax and rtpref 1 MiB");
	CHECK(wtmax == 1u << 20 && wtpref == 1u << 20,
	      "FSINFO: wtmax and wtpref 1 MiB");
	CHECK(dtpref == 1u << 20, "FSINFO: dtpref 1 MiB");
	CHECK(rtmult == 4096 && wtmult == 4096, "FSINFO: rtmult, wtmult 4096");
	CHECK(maxfilesize == (uint64_t)INT64_MAX, "FSINFO: maxfilesize 2^63-1");
	CHECK(td_s == 0 && td_ns == 1, "FSINFO: time_delta 1 ns");
	CHECK(props == (FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS |
	                FSF3_CANSETTIME),
	      "FSINFO: properties LINK, SYMLINK, HOMOGENEOUS, CANSETTIME");

	/* The sizes hold: a wtmax WRITE is taken whole, one byte more is
	 * refused (INVAL) with nothing written (not even a short write of
	 * wtmax), an opaque cut off by the end of the call is GARBAGE_ARGS,
	 * an rtmax READ gives all it asked; past maxfilesize is FBIG. */
	for (size_t i = 0; i < sizeof(big); i++) {
		big[i] = (uint8_t)(i * 13 + 5);
		other[i] = (uint8_t)(i * 5 + 1);
	}
	CHECK(create(&root, "fsinfo_io", 0, &f) == NFS3_OK &&
	          write_how(&f, big, wtmax, 0, &n, &c, verf) == NFS3_OK &&
	          n == wtmax,
	      "WRITE of wtmax bytes: all written");
	CHECK(file_holds(rwdir, "fsinfo_io", big, wtmax),
	      "WRITE of wtmax bytes: the file holds them");
	xdr_out_truncate(&a, 0);
	put_fh(&a, &f);
	xdr_put_u64(&a, 0);
	xdr_put_u32(&a, wtmax + 1);
	xdr_put_u32(&a, 0);
	xdr_put_u32(&a, wtmax + 1);
	xdr_put_fixed(&a, other, 8);
	call(NFSPROC3_WRITE, &a, &rep);
	CHECK(rep.stat == RPC_GARBAGE_ARGS,
	      "WRITE whose data says wtmax + 1 bytes, 8 there: GARBAGE_ARGS");
	CHECK(file_holds(rwdir, "fsinfo_io", big, wtmax),
	      "WRITE of cut-off data: nothing written");
	CHECK(write_how(&f, other, wtmax + 1, 0, &n, &c, verf) == NFS3ERR_INVAL,
	      "WRITE of wtmax + 1 bytes: INVAL");
	CHECK(file_holds(rwdir, "fsinfo_io", big, wtmax),
	      "WRITE of wtmax + 1 bytes: the file keeps its size and bytes");
	xdr_out_truncate(&a, 0);
	put_fh(&a, &f);
	xdr_put_u64(&a, 0);
	xdr_put_u32(&a, rtmax);
	call(NFSPROC3_READ, &a, &rep);
	uint32_t count = 0, len = 0;
	bool eof = false;
	CHECK(status(&rep) == NFS3_OK && get_post_op(&rep.res, NULL) &&
	          xdr_get_u32(&rep.res, &count) &&
	          xdr_get_bool(&rep.res, &eof) && rtmax <= sizeof(back) &&
	          xdr_get_opaque(&rep.res, back, &len, rtmax) &&
	          count == rtmax && len == rtmax && eof &&
	          !memcmp(back, big, rtmax),
	      "READ of rtmax bytes: all of them, eof");
	xdr_out_truncate(&a, 0);
	put_fh(&a, &f);
	xdr_put_u64(&a, maxfilesize);
	xdr_put_u32(&a, 1);
	xdr_put_u32(&a, 0);
	xdr_put_opaque(&a, "z", 1);
	call(NFSPROC3_WRITE, &a, &rep);
	CHECK(status(&rep) == NFS3ERR_FBIG, "WRITE at maxfilesize: FBIG");
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
}

/* One READDIR or READDIRPLUS round; counts names into seen[]. */
struct listing {
	int seen[3000];
	int dots, other, calls, attrs, handles;
	bool too_big, bad;
};

static bool list_round(const struct nfs_fh *dir, bool plus, uint64_t *cookie,
                       uint8_t cverf[8], uint32_t count, struct listing *l)
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	bool more, eof = false;
	char name[300];
	uint32_t nlen;
	uint64_t fileid;
	struct nfs_fh fh;

	put_fh(&a, dir);
	xdr_put_u64(&a, *cookie);
	xdr_put_fixed(&a, cverf, 8);
	if (plus)
		xdr_put_u32(&a, count / 4); /* dircount */
	xdr_put_u32(&a, count);
	call(plus ? NFSPROC3_READDIRPLUS : NFSPROC3_READDIR, &a, &rep);
	l->calls++;
	size_t before = rep.res.pos;
	if (status(&rep) != NFS3_OK) {
		l->bad = true;
		goto out;
	}
	get_post_op(&rep.res, NULL);
	xdr_get_fixed(&rep.res, cverf, 8);
	while (xdr_get_bool(&rep.res, &more) && more) {
		xdr_get_u64(&rep.res, &fileid);
		memset(name, 0, sizeof(name));
		if (!xdr_get_opaque(&rep.res, name, &nlen, 255))
			break;
		xdr_get_u64(&rep.res, cookie);
		if (plus) {
			if (get_post_op(&rep.res, NULL))
				l->attrs++;
			if (get_post_op_fh(&rep.res, &fh))
				l->handles++;
		}
		int i;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			l->dots++;
		else if (sscanf(name, "e%d", &i) == 1 && i >= 0 && i < 3000)
			l->seen[i]++;
		else
			l->other++;
	}
	xdr_get_bool(&rep.res, &eof);
	if (rep.res.err)
		l->bad = true;
	if (rep.res.len - before > count)
		l->too_big = true;
out:
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
	return eof || l->bad;
}

static void test_readdir(void)
{
	static struct listing l;
	struct nfs_fh big;
	char path[200];
	uint8_t cverf[8];
	uint64_t cookie;
	int once, fd;

	snprintf(path, sizeof(path), "%s/big", rwdir);
	mkdir(path, 0755);
	for (int i = 0; i < 3000; i++) {
		snprintf(path, sizeof(path), "%s/big/e%d", rwdir, i);
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		if (fd >= 0)
			close(fd);
	}
	CHECK(lookup(&root, "big", &big, NULL) == NFS3_OK, "LOOKUP big dir");

	memset(&l, 0, sizeof(l));
	memset(cverf, 0, 8);
	cookie = 0;
	while (!list_round(&big, false, &cookie, cverf, 1024, &l) &&
	       l.calls < 10000)
		;
	once = 0;
	for (int i = 0; i < 3000; i++)
		once += l.seen[i] == 1;
	CHECK(!l.bad && once == 3000 && l.other == 0 && l.dots == 2,
	      "READDIR 1 KiB replies: each of 3000 entries exactly once");
	CHECK(l.calls > 50, "READDIR: many small replies");
	CHECK(!l.too_big, "READDIR: replies within count");

	memset(&l, 0, sizeof(l));
	memset(cverf, 0, 8);
	cookie = 0;
	while (!list_round(&big, true, &cookie, cverf, 4096, &l) &&
	       l.calls < 10000)
		;
	once = 0;
	for (int i = 0; i < 3000; i++)
		once += l.seen[i] == 1;
	CHECK(!l.bad && once == 3000 && l.dots == 2,
	      "READDIRPLUS 4 KiB: each of 3000 entries exactly once");
	CHECK(!l.too_big, "READDIRPLUS: reply size <= maxcount");
	CHECK(l.attrs == 3002 && l.handles == 3002,
	      "READDIRPLUS: every entry has attributes and a handle");

	/* One 1 MiB READDIRPLUS holds everything. */
	memset(&l, 0, sizeof(l));
	memset(cverf, 0, 8);
	cookie = 0;
	CHECK(list_round(&big, true, &cookie, cverf, 1 << 20, &l) && !l.bad &&
	          l.calls == 1 && !l.too_big,
	      "READDIRPLUS 1 MiB: whole directory in one reply");
	/* A huge maxcount is clamped, not refused. */
	memset(&l, 0, sizeof(l));
	memset(cverf, 0, 8);
	cookie = 0;
	CHECK(list_round(&big, false, &cookie, cverf, 0xffffffffu, &l) &&
	          !l.bad,
	      "READDIR count 4 GiB: clamped");

	/* too small for one entry */
	memset(&l, 0, sizeof(l));
	memset(cverf, 0, 8);
	cookie = 0;
	struct xdr_out a = args_new();
	struct reply rep = {0};
	put_fh(&a, &big);
	xdr_put_u64(&a, 0);
	xdr_put_fixed(&a, cverf, 8);
	xdr_put_u32(&a, 16);
	call(NFSPROC3_READDIR, &a, &rep);
	CHECK(status(&rep) == NFS3ERR_TOOSMALL, "READDIR count 16: TOOSMALL");
	/* bad cookies: test_readdir_cookies */
	struct nfs_fh f;
	lookup(&root, "f", &f, NULL);
	xdr_out_truncate(&a, 0);
	put_fh(&a, &f);
	xdr_put_u64(&a, 0);
	xdr_put_fixed(&a, cverf, 8);
	xdr_put_u32(&a, 4096);
	call(NFSPROC3_READDIR, &a, &rep);
	CHECK(status(&rep) == NFS3ERR_NOTDIR, "READDIR of a file: NOTDIR");
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
}

/* ---- READDIR cookies, cookieverf and counts (RFC 1813 3.3.16, 3.3.17) */

#define RD_MAX 4096

/* One entry of a READDIR(PLUS) reply, as it came. */
struct rd_entry {
	char name[64];
	uint64_t cookie;
	size_t dir_bytes;  /* fileid, name, cookie: what dircount counts */
	size_t wire_bytes; /* the whole entry, its value_follows included */
};

/* One reply, every entry kept in order. */
struct rd_page {
	uint32_t st;
	bool dir_attr; /* the directory's post_op_attr came */
	uint8_t verf[8];
	int n;
	struct rd_entry e[RD_MAX];
	bool eof;
	size_t len; /* reply bytes from the status word on */
	bool bad;   /* did not decode, or more entries than RD_MAX */
};

static const uint8_t zero_verf[8];

static void rd(const struct nfs_fh *dir, bool plus, uint64_t cookie,
               const uint8_t verf[8], uint32_t dircount, uint32_t count,
               struct rd_page *p)
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	char name[256];
	bool more = false;
	uint32_t nlen;
	uint64_t fileid;
	struct nfs_fh fh;
	size_t start, at;

	p->n = 0;
	p->eof = p->bad = p->dir_attr = false;
	memset(p->verf, 0, 8);
	put_fh(&a, dir);
	xdr_put_u64(&a, cookie);
	xdr_put_fixed(&a, verf, 8);
	if (plus)
		xdr_put_u32(&a, dircount);
	xdr_put_u32(&a, count);
	call(plus ? NFSPROC3_READDIRPLUS : NFSPROC3_READDIR, &a, &rep);
	start = rep.res.pos;
	p->st = status(&rep);
	if (rep.stat == 0)
		p->dir_attr = get_post_op(&rep.res, NULL);
	if (p->st == NFS3_OK) {
		xdr_get_fixed(&rep.res, p->verf, 8);
		for (;;) {
			at = rep.res.pos;
			if (!xdr_get_bool(&rep.res, &more) || !more)
				break;
			xdr_get_u64(&rep.res, &fileid);
			memset(name, 0, sizeof(name));
			if (!xdr_get_opaque(&rep.res, name, &nlen, 255) ||
			    p->n == RD_MAX) {
				p->bad = true;
				break;
			}
			struct rd_entry *e = &p->e[p->n++];
			xdr_get_u64(&rep.res, &e->cookie);
			if (plus) {
				get_post_op(&rep.res, NULL);
				get_post_op_fh(&rep.res, &fh);
			}
			memcpy(e->name, name, sizeof(e->name) - 1);
			e->name[sizeof(e->name) - 1] = 0;
			e->dir_bytes = 8 + 4 + nlen + xdr_pad(nlen) + 8;
			e->wire_bytes = rep.res.pos - at;
		}
		xdr_get_bool(&rep.res, &p->eof);
	}
	p->len = rep.res.len - start;
	if (rep.res.err || xdr_in_remaining(&rep.res) != 0)
		p->bad = true;
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
}

/* Whether the page holds exactly want[0..n) in that order. */
static bool page_is(const struct rd_page *p, const struct rd_entry *want, int n)
{
	if (p->bad || p->st != NFS3_OK || p->n != n)
		return false;
	for (int i = 0; i < n; i++)
		if (strcmp(p->e[i].name, want[i].name) != 0)
			return false;
	return true;
}

/* How often name occurs in the page. */
static int page_count(const struct rd_page *p, const char *name)
{
	int c = 0;

	for (int i = 0; i < p->n; i++)
		c += strcmp(p->e[i].name, name) == 0;
	return c;
}

/* A stale listing resumed: each of keep[0..nkeep) exactly once, none of
 * gone[0..ngone), nothing else but extra (a name added meanwhile, which
 * may or may not be listed). */
static bool page_resumes(const struct rd_page *p, const struct rd_entry *keep,
                         int nkeep, const struct rd_entry *gone, int ngone,
                         const char *extra)
{
	int known = 0;

	if (p->bad || p->st != NFS3_OK || !p->eof)
		return false;
	for (int i = 0; i < nkeep; i++)
		if (page_count(p, keep[i].name) != 1)
			return false;
	for (int i = 0; i < ngone; i++)
		if (page_count(p, gone[i].name) != 0)
			return false;
	known = nkeep + (extra ? page_count(p, extra) : 0);
	return p->n == known;
}

/* A change of the directory's mtime needs the clock to move on: with
 * coarse timestamps two changes in one tick look the same. */
static void next_tick(void)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 20 * 1000 * 1000};
	nanosleep(&ts, NULL);
}

/* RFC 1813 section 3.3.16. snfsd's cookies are the file system's own
 * directory offsets (src/server/nfs3/dir.c): a position that stays
 * meaningful when entries come and go, so a stale cookieverf is no
 * reason to refuse a resume (the RFC calls a verifier that changes with
 * every modification "overly restrictive"), and verf 0 resumes too. The
 * verifier is still the directory's current one, changing with it. Only a
 * cookie no offset can have (over 2^63) is BAD_COOKIE; one past the end
 * lists nothing with eof, and one inside the range that was never issued
 * resumes at that position. */
static void test_readdir_cookies(void)
{
	static struct rd_entry all[RD_MAX];
	static struct rd_page p, q;
	const int nfiles = 300;
	struct nfs_fh vd, f;
	char path[200];
	uint8_t v[8], v1[8];
	uint64_t c = 0;
	int nall = 0, calls = 0, fd, bad = 0;
	bool same_verf = true;

	snprintf(path, sizeof(path), "%s/vd", rwdir);
	mkdir(path, 0755);
	for (int i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/vd/e%d", rwdir, i);
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		if (fd >= 0)
			close(fd);
	}
	CHECK(lookup(&root, "vd", &vd, NULL) == NFS3_OK, "LOOKUP vd");

	/* The whole listing in 1 KiB replies, each carrying the verifier
	 * the previous one gave. */
	memcpy(v, zero_verf, 8);
	do {
		rd(&vd, false, c, v, 0, 1024, &p);
		if (p.st != NFS3_OK || p.bad || nall + p.n > RD_MAX)
			break;
		if (calls++ == 0)
			memcpy(v1, p.verf, 8);
		else if (memcmp(p.verf, v1, 8) != 0)
			same_verf = false;
		memcpy(v, p.verf, 8);
		memcpy(&all[nall], p.e, (size_t)p.n * sizeof(p.e[0]));
		nall += p.n;
		if (p.n > 0)
			c = p.e[p.n - 1].cookie;
	} while (!p.eof && calls < 1000);
	for (int i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "e%d", i);
		int n = 0;
		for (int j = 0; j < nall; j++)
			n += strcmp(all[j].name, path) == 0;
		bad += n != 1;
	}
	CHECK(p.st == NFS3_OK && p.eof && nall == nfiles + 2 && bad == 0,
	      "READDIR vd in 1 KiB replies: 300 names and the dots once");
	CHECK(calls > 5 && same_verf && memcmp(v1, zero_verf, 8) != 0,
	      "READDIR: one non-zero cookieverf over the listing of an "
	      "unchanged directory");
	if (nall != nfiles + 2)
		return;

	/* A valid cookie with verifier 0, by a fresh stream (no listing
	 * stopped there) and by the stream a listing left: each resumes
	 * right after the cookie's entry. */
	const int k = 150;
	rd(&vd, false, all[k].cookie, zero_verf, 0, 65536, &p);
	CHECK(page_is(&p, &all[k + 1], nall - k - 1) && p.eof,
	      "READDIR valid cookie, verf 0 (fresh stream): OK, the rest in "
	      "order");
	rd(&vd, false, all[k].cookie, v1, 0, 1024, &p);
	int j = k + p.n;
	CHECK(page_is(&p, &all[k + 1], p.n) && p.n > 0 && !p.eof &&
	          !memcmp(p.verf, v1, 8),
	      "READDIR valid cookie and verf: OK, the next entries");
	rd(&vd, false, all[j].cookie, zero_verf, 0, 65536, &p);
	CHECK(page_is(&p, &all[j + 1], nall - j - 1) && p.eof,
	      "READDIR valid cookie, verf 0 (the kept stream): OK, the rest");
	rd(&vd, true, all[k].cookie, zero_verf, 65536, 1 << 20, &p);
	CHECK(page_is(&p, &all[k + 1], nall - k - 1) && p.eof,
	      "READDIRPLUS valid cookie, verf 0: OK, the rest in order");

	/* Cookies never issued. */
	static const uint64_t impossible[] = {0x8000000000001234ull,
	                                      0xffffffffffffffffull};
	for (size_t i = 0; i < 2; i++) {
		rd(&vd, false, impossible[i], v1, 0, 4096, &p);
		CHECK(p.st == NFS3ERR_BAD_COOKIE && p.dir_attr && !p.bad,
		      "READDIR cookie over 2^63 (no offset has it): "
		      "BAD_COOKIE with the directory's attributes");
		rd(&vd, true, impossible[i], v1, 4096, 4096, &p);
		CHECK(p.st == NFS3ERR_BAD_COOKIE && p.dir_attr && !p.bad,
		      "READDIRPLUS cookie over 2^63: BAD_COOKIE");
	}
	rd(&vd, false, 0x7fffffffffff1234ull, v1, 0, 4096, &p);
	CHECK(p.st == NFS3_OK && !p.bad && p.n == 0 && p.eof,
	      "READDIR garbage cookie past the end: OK, empty, eof");
	rd(&vd, false, all[nall - 1].cookie, v1, 0, 4096, &p);
	CHECK(p.st == NFS3_OK && !p.bad && p.n == 0 && p.eof,
	      "READDIR at the last entry's cookie: OK, empty, eof");
	/* Between two issued cookies: a position like any other. */
	uint64_t lo = all[k].cookie, hi = all[k + 1].cookie;
	uint64_t mid = lo < hi ? lo + (hi - lo) / 2 : hi + (lo - hi) / 2;
	rd(&vd, false, mid, v1, 0, 65536, &p);
	CHECK(p.eof && (page_is(&p, &all[k + 1], nall - k - 1) ||
	                page_is(&p, &all[k + 2], nall - k - 2)),
	      "READDIR garbage cookie between two issued ones: OK, the tail "
	      "from that position");

	/* The verifier follows the directory over the wire. */
	uint8_t va[8], vb[8];
	rd(&vd, false, 0, zero_verf, 0, 1024, &p);
	memcpy(va, p.verf, 8);
	rd(&vd, true, 0, zero_verf, 1024, 4096, &q);
	CHECK(p.st == NFS3_OK && q.st == NFS3_OK && !memcmp(va, v1, 8) &&
	          !memcmp(q.verf, v1, 8),
	      "cookieverf unchanged when nothing changed (READDIR and "
	      "READDIRPLUS agree)");
	CHECK(lookup(&vd, "e0", &f, NULL) == NFS3_OK, "LOOKUP vd/e0");
	{
		struct xdr_out a = args_new();
		struct reply rep = {0};
		next_tick();
		put_fh(&a, &f);
		xdr_put_u64(&a, 0);
		xdr_put_u32(&a, 4);
		xdr_put_u32(&a, 2);
		xdr_put_opaque(&a, "data", 4);
		call(NFSPROC3_WRITE, &a, &rep);
		rd(&vd, false, 0, zero_verf, 0, 1024, &p);
		CHECK(status(&rep) == NFS3_OK && !memcmp(p.verf, v1, 8),
		      "cookieverf unchanged by a WRITE to a file in it");
		xdr_out_free(&a);
		xdr_out_free(&rep.buf);
	}
	next_tick();
	CHECK(create(&vd, "added", 1, NULL) == NFS3_OK, "CREATE vd/added");
	rd(&vd, false, 0, zero_verf, 0, 1024, &p);
	memcpy(vb, p.verf, 8);
	CHECK(p.st == NFS3_OK && memcmp(vb, v1, 8) != 0,
	      "cookieverf changes when an entry is added");
	rd(&vd, false, 0, v1, 0, 1024, &p);
	CHECK(p.st == NFS3_OK && !memcmp(p.verf, vb, 8),
	      "cookieverf the same again when nothing more changed");

	/* Stale verifier v1 (before "added"): the stream a listing left at
	 * j, and a fresh one at k, both resume as before. */
	rd(&vd, false, all[k].cookie, v1, 0, 1024, &p);
	j = k + p.n;
	rd(&vd, false, all[j].cookie, v1, 0, 65536, &q);
	CHECK(
	    page_resumes(&q, &all[j + 1], nall - j - 1, all, j + 1, "added") &&
	        !memcmp(q.verf, vb, 8),
	    "READDIR stale cookieverf after an entry was added (kept "
	    "stream): OK, the rest once each, the current verifier");
	rd(&vd, false, all[k].cookie, v1, 0, 65536, &q);
	CHECK(page_resumes(&q, &all[k + 1], nall - k - 1, all, k + 1, "added"),
	      "READDIR stale cookieverf after an entry was added (fresh "
	      "stream): OK, the rest once each");

	/* A listing stopped at j keeps its stream, names read ahead in its
	 * buffer; then a name after j and one beside the server go. */
	rd(&vd, false, all[k].cookie, vb, 0, 1024, &p);
	j = k + p.n;
	int r = j + 5, r2 = j + 9; /* names after the cookie, not dots */
	while (all[r].name[0] != 'e')
		r++;
	if (r2 <= r)
		r2 = r + 1;
	while (all[r2].name[0] != 'e')
		r2++;
	next_tick();
	snprintf(path, sizeof(path), "%s/vd/%s", rwdir, all[r2].name);
	CHECK(simple_dirop(NFSPROC3_REMOVE, &vd, "added") == NFS3_OK &&
	          simple_dirop(NFSPROC3_REMOVE, &vd, all[r].name) == NFS3_OK &&
	          unlink(path) == 0,
	      "REMOVE vd/added and a name after the cookie, unlink another");
	/* what is left after i: all[i+1..], less all[r] and all[r2] */
	static struct rd_entry left[RD_MAX];
	int nleft = 0;
	for (int i = j + 1; i < nall; i++)
		if (i != r && i != r2)
			left[nleft++] = all[i];
	rd(&vd, false, all[j].cookie, vb, 0, 65536, &q);
	CHECK(page_is(&q, left, nleft) && q.eof,
	      "READDIR stale cookieverf after removes (the kept stream): OK, "
	      "the rest without the removed names");
	rd(&vd, false, 0, zero_verf, 0, 1024, &p);
	CHECK(p.st == NFS3_OK && memcmp(p.verf, vb, 8) != 0 &&
	          memcmp(p.verf, v1, 8) != 0,
	      "cookieverf changes when an entry is removed");
	memcpy(v, p.verf, 8);
	nleft = 0;
	for (int i = k + 1; i < nall; i++)
		if (i != r && i != r2)
			left[nleft++] = all[i];
	rd(&vd, false, all[k].cookie, vb, 0, 65536, &q);
	CHECK(page_is(&q, left, nleft) && q.eof && !memcmp(q.verf, v, 8),
	      "READDIR stale cookieverf after removes (fresh stream): OK, the "
	      "rest without the removed names");

	next_tick();
	snprintf(path, sizeof(path), "%s/vd/local", rwdir);
	mkdir(path, 0755);
	rd(&vd, false, 0, zero_verf, 0, 1024, &p);
	CHECK(p.st == NFS3_OK && memcmp(p.verf, v, 8) != 0,
	      "cookieverf changes with a change made beside the server");
}

/* RFC 1813 section 3.3.17: dircount bounds the directory information
 * (fileid, name, cookie of each entry), maxcount the whole reply; each
 * holds on its own. A reply stops only where the next entry would break
 * one of them (the first entry always goes if maxcount allows). */
static void test_readdir_counts(void)
{
	static struct rd_page p, q;
	struct nfs_fh big;
	size_t dsum = 0;

	CHECK(lookup(&root, "big", &big, NULL) == NFS3_OK, "LOOKUP big");
	rd(&big, true, 0, zero_verf, 512, 1 << 20, &p);
	for (int i = 0; i < p.n; i++)
		dsum += p.e[i].dir_bytes;
	rd(&big, true, p.n ? p.e[p.n - 1].cookie : 0, zero_verf, 512, 1 << 20,
	   &q);
	CHECK(p.st == NFS3_OK && !p.bad && p.n > 1 && !p.eof && dsum <= 512,
	      "READDIRPLUS dircount 512, maxcount 1 MiB: dircount limits the "
	      "entries");
	CHECK(q.st == NFS3_OK && q.n > 0 && dsum + q.e[0].dir_bytes > 512,
	      "READDIRPLUS dircount 512: as many entries as fit");
	printf("# dircount 512: %d entries, %zu directory bytes, %zu reply "
	       "bytes\n",
	       p.n, dsum, p.len);

	/* dircount large, maxcount small: maxcount alone limits. */
	rd(&big, true, 0, zero_verf, 1 << 20, 4096, &p);
	rd(&big, true, p.n ? p.e[p.n - 1].cookie : 0, zero_verf, 1 << 20, 4096,
	   &q);
	CHECK(p.st == NFS3_OK && !p.bad && p.n > 1 && p.len <= 4096,
	      "READDIRPLUS dircount 1 MiB, maxcount 4096: reply within "
	      "maxcount");
	CHECK(q.st == NFS3_OK && q.n > 0 && p.len + q.e[0].wire_bytes > 4096,
	      "READDIRPLUS maxcount 4096: as many entries as fit");

	/* READDIR has only count (the whole reply). */
	rd(&big, false, 0, zero_verf, 0, 1024, &p);
	rd(&big, false, p.n ? p.e[p.n - 1].cookie : 0, zero_verf, 0, 1024, &q);
	CHECK(p.st == NFS3_OK && !p.bad && p.n > 1 && p.len <= 1024 &&
	          q.st == NFS3_OK && q.n > 0 &&
	          p.len + q.e[0].wire_bytes > 1024,
	      "READDIR count 1024: within count, as many entries as fit");

	/* Every size from tiny to large: never over either bound. */
	int over = 0;
	for (uint32_t dc = 64; dc <= 8192; dc *= 2)
		for (uint32_t mc = 512; mc <= 65536; mc *= 4) {
			size_t ds = 0;
			rd(&big, true, 0, zero_verf, dc, mc, &p);
			for (int i = 1; i < p.n; i++)
				ds += p.e[i].dir_bytes;
			if (p.st != NFS3_OK || p.bad || p.len > mc ||
			    (p.n > 1 && ds + p.e[0].dir_bytes > dc))
				over++;
		}
	CHECK(over == 0, "READDIRPLUS dircount 64..8192 x maxcount "
	                 "512..64K: never over either");
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A 1 MiB READDIRPLUS holds ~10,000 entries; it must cost linear time. */
static void test_readdirplus_big(void)
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	struct nfs_fh dir, fh;
	char path[200];
	bool more = false;
	uint64_t cookie, fileid;
	uint32_t nlen, n = 0;
	double t0, dt;
	char name[256];
	int fd;

	snprintf(path, sizeof(path), "%s/huge", rwdir);
	mkdir(path, 0755);
	for (int i = 0; i < 12000; i++) {
		snprintf(path, sizeof(path), "%s/huge/n%07d", rwdir, i);
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		if (fd >= 0)
			close(fd);
	}
	lookup(&root, "huge", &dir, NULL);
	put_fh(&a, &dir);
	xdr_put_u64(&a, 0);
	xdr_put_u64(&a, 0);
	xdr_put_u32(&a, 1 << 20);
	xdr_put_u32(&a, 1 << 20);
	t0 = now();
	call(NFSPROC3_READDIRPLUS, &a, &rep);
	dt = now() - t0;
	size_t start = rep.res.pos;
	CHECK(status(&rep) == NFS3_OK, "READDIRPLUS 1 MiB of 12000: OK");
	get_post_op(&rep.res, NULL);
	xdr_get_u64(&rep.res, &cookie);
	while (xdr_get_bool(&rep.res, &more) && more) {
		xdr_get_u64(&rep.res, &fileid);
		xdr_get_opaque(&rep.res, name, &nlen, 255);
		xdr_get_u64(&rep.res, &cookie);
		get_post_op(&rep.res, NULL);
		get_post_op_fh(&rep.res, &fh);
		n++;
	}
	printf("# %u entries, %zu bytes in %.3f s\n", n, rep.res.len - start,
	       dt);
	CHECK(!rep.res.err && n > 5000 && rep.res.len - start <= (1u << 20),
	      "READDIRPLUS 1 MiB: thousands of entries, within maxcount");
	CHECK(dt < 5.0, "READDIRPLUS 1 MiB: fast (linear)");
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
}

/* Valid arguments for every procedure; every strict prefix must be
 * GARBAGE_ARGS, and the server must survive (ASan watches). */
static void test_truncation(void)
{
	struct xdr_out a = args_new();
	struct reply rep = {0};
	int bad = 0, full_bad = 0;
	struct nfs_fh f;

	lookup(&root, "f", &f, NULL);
	for (uint32_t proc = 1; proc < NFS3_NPROCS; proc++) {
		xdr_out_truncate(&a, 0);
		switch (proc) {
		case NFSPROC3_GETATTR:
		case NFSPROC3_READLINK:
		case NFSPROC3_FSSTAT:
		case NFSPROC3_FSINFO:
		case NFSPROC3_PATHCONF:
			put_fh(&a, &f);
			break;
		case NFSPROC3_SETATTR:
			put_fh(&a, &f);
			put_sattr_none(&a);
			xdr_put_bool(&a, true);
			xdr_put_u64(&a, 0);
			break;
		case NFSPROC3_LOOKUP:
		case NFSPROC3_REMOVE:
		case NFSPROC3_RMDIR:
			put_diropargs(&a, &root, "zz");
			break;
		case NFSPROC3_ACCESS:
			put_fh(&a, &f);
			xdr_put_u32(&a, 1);
			break;
		case NFSPROC3_READ:
		case NFSPROC3_COMMIT:
			put_fh(&a, &f);
			xdr_put_u64(&a, 0);
			xdr_put_u32(&a, 4);
			break;
		case NFSPROC3_WRITE:
			put_fh(&a, &f);
			xdr_put_u64(&a, 100);
			xdr_put_u32(&a, 3);
			xdr_put_u32(&a, 0);
			xdr_put_opaque(&a, "abc", 3);
			break;
		case NFSPROC3_CREATE:
			put_diropargs(&a, &root, "tc");
			xdr_put_u32(&a, 0);
			put_sattr_none(&a);
			break;
		case NFSPROC3_MKDIR:
			put_diropargs(&a, &root, "td");
			put_sattr_none(&a);
			break;
		case NFSPROC3_SYMLINK:
			put_diropargs(&a, &root, "ts");
			put_sattr_none(&a);
			xdr_put_string(&a, "tgt");
			break;
		case NFSPROC3_MKNOD:
			put_diropargs(&a, &root, "tn");
			xdr_put_u32(&a, NF3CHR);
			put_sattr_none(&a);
			xdr_put_u32(&a, 1);
			xdr_put_u32(&a, 2);
			break;
		case NFSPROC3_RENAME:
			put_diropargs(&a, &root, "zz1");
			put_diropargs(&a, &root, "zz2");
			break;
		case NFSPROC3_LINK:
			put_fh(&a, &f);
			put_diropargs(&a, &root, "tl");
			break;
		case NFSPROC3_READDIR:
			put_fh(&a, &root);
			xdr_put_u64(&a, 0);
			xdr_put_u64(&a, 0);
			xdr_put_u32(&a, 4096);
			break;
		case NFSPROC3_READDIRPLUS:
			put_fh(&a, &root);
			xdr_put_u64(&a, 0);
			xdr_put_u64(&a, 0);
			xdr_put_u32(&a, 1024);
			xdr_put_u32(&a, 4096);
			break;
		}
		for (size_t cut = 0; cut < a.len; cut++) {
			call_n(proc, &a, cut, &rep);
			if (rep.stat != RPC_GARBAGE_ARGS) {
				if (bad < 5)
					printf("# proc %u cut %zu: stat %d\n",
					       proc, cut, rep.stat);
				bad++;
			}
		}
		call(proc, &a, &rep);
		if (rep.stat != 0) {
			printf("# proc %u full args: stat %d\n", proc,
			       rep.stat);
			full_bad++;
		}
	}
	CHECK(bad == 0, "every truncation of every procedure: GARBAGE_ARGS");
	CHECK(full_bad == 0, "the untruncated arguments decode");
	xdr_out_free(&a);
	xdr_out_free(&rep.buf);
}

int main(void)
{
	int rc;

	log_set_level(LOG_ERR); /* the truncation test logs thousands */
	rc = setup();
	CHECK(rc == 0, "setup: exports and service");
	if (rc)
		TEST_EXIT();
	CHECK(root_fh(0, &root) == 0 && root_fh(1, &roroot) == 0 &&
	          root_fh(2, &asroot) == 0,
	      "root handles");
	test_basic();
	test_namespace();
	test_rofs();
	test_stability();
	test_data_sync();
	test_fsinfo();
	test_readdir();
	test_readdir_cookies();
	test_readdir_counts();
	test_readdirplus_big();
	test_truncation();
	teardown();
	TEST_EXIT();
}
