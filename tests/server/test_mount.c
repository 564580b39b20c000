/* MOUNT v3 handlers called directly with a fake rpc_call on a temporary
 * export: MNT (export root, subdirectories, refusals), DUMP, UMNT,
 * UMNTALL, EXPORT and GARBAGE_ARGS. */
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
#include "server/mount/mount3.h"
#include "server/snfsd.h"

enum { P_NULL, P_MNT, P_DUMP, P_UMNT, P_UMNTALL, P_EXPORT };

static char tmp[256];
static struct snfsd srv;

struct reply {
	int stat; /* accept_stat the handler returned */
	struct xdr_out out;
	struct xdr_in in; /* reading the results back */
};

/* Call MOUNT v3 procedure proc from addr:port with the encoded args. */
static void call3(struct reply *r, int proc, const struct xdr_out *args,
                  const char *addr, uint16_t port)
{
	struct rpc_call c;
	struct sockaddr_in *s4 = (void *)&c.peer;

	memset(&c, 0, sizeof(c));
	c.prog = MOUNT_PROGRAM;
	c.vers = 3;
	c.proc = (uint32_t)proc;
	c.ctx = &srv;
	s4->sin_family = AF_INET;
	inet_pton(AF_INET, addr, &s4->sin_addr);
	s4->sin_port = htons(port);
	c.peer_len = sizeof(*s4);
	c.transport = RPC_UDP;
	c.cred.flavor = RPC_AUTH_SYS;
	xdr_in_init(&c.args, args ? args->buf : NULL, args ? args->len : 0);
	xdr_out_init(&r->out, 4096, 1 << 20);
	r->stat = mount3_version.procs[proc].fn(&c, &r->out);
	xdr_in_init(&r->in, r->out.buf, r->out.len);
}

static void path_args(struct xdr_out *a, const char *path)
{
	xdr_out_init(a, 4096, 1 << 20);
	xdr_put_string(a, path);
}

/* MNT path; returns the mountstat3 (or -1 if the call itself failed)
 * and the handle. */
static int mnt(const char *path, const char *addr, uint16_t port,
               struct nfs_fh *fh)
{
	struct xdr_out a;
	struct reply r;
	uint32_t st = 0, n = 0, flavor = 0;
	int ret = -1;

	path_args(&a, path);
	call3(&r, P_MNT, &a, addr, port);
	if (r.stat == RPC_SUCCESS && xdr_get_u32(&r.in, &st)) {
		ret = (int)st;
		if (st == 0) {
			if (!xdr_get_opaque(&r.in, fh->data, &fh->len,
			                    NFS_FH_MAX) ||
			    !xdr_get_u32(&r.in, &n) || n != 1 ||
			    !xdr_get_u32(&r.in, &flavor) || flavor != 1 ||
			    xdr_in_remaining(&r.in))
				ret = -2;
		}
	}
	xdr_out_free(&a);
	xdr_out_free(&r.out);
	return ret;
}

/* DUMP as "host path;host path;" */
static void dump(char *buf, size_t n)
{
	struct reply r;
	bool more;
	size_t len = 0;

	buf[0] = '\0';
	call3(&r, P_DUMP, NULL, "127.0.0.1", 700);
	while (xdr_get_bool(&r.in, &more) && more) {
		char host[256], dir[1025];
		if (!xdr_get_string(&r.in, host, sizeof(host), 255) ||
		    !xdr_get_string(&r.in, dir, sizeof(dir), 1024))
			break;
		len +=
		    (size_t)snprintf(buf + len, n - len, "%s %s;", host, dir);
	}
	if (r.in.err)
		snprintf(buf, n, "DECODE ERROR");
	xdr_out_free(&r.out);
}

static void setup(void)
{
	char p[400], a[300], b[300], specs[3][400];
	const char *sp[3] = {specs[0], specs[1], specs[2]};
	char err[512];

	snprintf(tmp, sizeof(tmp), "/tmp/snfs-test-mount.XXXXXX");
	if (!mkdtemp(tmp))
		exit(1);
	snprintf(a, sizeof(a), "%s/exp", tmp);
	snprintf(b, sizeof(b), "%s/other", tmp);
	mkdir(a, 0755);
	mkdir(b, 0755);
	snprintf(p, sizeof(p), "%s/sub", a);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/sub/deeper", a);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/file", a);
	fclose(fopen(p, "w"));
	snprintf(p, sizeof(p), "%s/link", a);
	if (symlink("sub", p))
		printf("# symlink failed\n");
	snprintf(p, sizeof(p), "%s/secure", tmp);
	mkdir(p, 0755);
	snprintf(specs[0], sizeof(specs[0]), "%s:127.0.0.0/8(rw) *(ro)", a);
	snprintf(specs[1], sizeof(specs[1]), "%s:10.0.0.1(rw)", b);
	snprintf(specs[2], sizeof(specs[2]), "%s/secure:ro,secure", tmp);
	pthread_mutex_init(&srv.exports_lock, NULL);
	pthread_mutex_init(&srv.mounts_lock, NULL);
	for (int i = 0; i < 16; i++)
		srv.fh_key[i] = (uint8_t)(i * 3);
	if (exports_load(NULL, sp, 3, &srv.exports, err, sizeof(err))) {
		printf("not ok - setup: %s\n", err);
		exit(1);
	}
}

static void test_mnt(void)
{
	char p[400], list[4096], want[1200];
	struct nfs_fh fh, fh2;
	struct export *ex;
	struct bk_handle bh, root;
	int st;

	snprintf(p, sizeof(p), "%s/exp", tmp);
	st = mnt(p, "127.0.0.1", 900, &fh);
	CHECK(st == 0, "MNT export root");
	CHECK(st == 0 &&
	          fh_parse(&srv, srv.exports, fh.data, fh.len, &ex, &bh) == 0 &&
	          ex == &srv.exports->v[0] &&
	          ex->ops->root(ex->bk, &root) == 0 && root.len == bh.len &&
	          !memcmp(root.data, bh.data, bh.len),
	      "MNT handle is the export root");

	snprintf(p, sizeof(p), "%s/exp//sub/./deeper/", tmp);
	st = mnt(p, "127.0.0.1", 900, &fh2);
	CHECK(st == 0 &&
	          (fh2.len != fh.len || memcmp(fh2.data, fh.data, fh.len)),
	      "MNT subdirectory gives its own handle");
	snprintf(p, sizeof(p), "%s/exp/nope", tmp);
	CHECK(mnt(p, "127.0.0.1", 900, &fh2) == MNT3ERR_NOENT,
	      "MNT missing subdirectory: NOENT");
	snprintf(p, sizeof(p), "%s/exp/file", tmp);
	CHECK(mnt(p, "127.0.0.1", 900, &fh2) == MNT3ERR_NOTDIR,
	      "MNT of a file: NOTDIR");
	snprintf(p, sizeof(p), "%s/exp/link", tmp);
	CHECK(mnt(p, "127.0.0.1", 900, &fh2) == MNT3ERR_NOTDIR,
	      "MNT through a symlink: refused, never followed");
	snprintf(p, sizeof(p), "%s/exp/sub/../../other", tmp);
	CHECK(mnt(p, "127.0.0.1", 900, &fh2) == MNT3ERR_ACCES,
	      "MNT with '..': ACCES");
	CHECK(mnt("/", "127.0.0.1", 900, &fh2) == MNT3ERR_ACCES,
	      "MNT of an unexported path: ACCES");
	CHECK(mnt("relative", "127.0.0.1", 900, &fh2) == MNT3ERR_ACCES,
	      "MNT of a relative path: ACCES");
	snprintf(p, sizeof(p), "%s/exported-not", tmp);
	CHECK(mnt(p, "127.0.0.1", 900, &fh2) == MNT3ERR_ACCES,
	      "MNT sibling with a common prefix: ACCES");
	snprintf(p, sizeof(p), "%s/other", tmp);
	CHECK(mnt(p, "127.0.0.1", 900, &fh2) == MNT3ERR_ACCES,
	      "MNT by a client not admitted: ACCES");
	CHECK(mnt(p, "10.0.0.1", 900, &fh2) == 0, "MNT by the admitted host");
	snprintf(p, sizeof(p), "%s/secure", tmp);
	CHECK(mnt(p, "127.0.0.1", 40000, &fh2) == MNT3ERR_ACCES,
	      "MNT of a secure export from port >= 1024: ACCES");
	CHECK(mnt(p, "127.0.0.1", 800, &fh2) == 0,
	      "MNT of a secure export from a privileged port");

	dump(list, sizeof(list));
	snprintf(want, sizeof(want), "127.0.0.1 %s/exp;", tmp);
	CHECK(strstr(list, want) != NULL, "DUMP lists the root mount");
	snprintf(want, sizeof(want), "127.0.0.1 %s/exp/sub/deeper;", tmp);
	CHECK(strstr(list, want) != NULL, "DUMP lists the cleaned subdir");
	snprintf(want, sizeof(want), "10.0.0.1 %s/other;", tmp);
	CHECK(strstr(list, want) != NULL, "DUMP lists the other host");
	CHECK(!strstr(list, "nope"), "DUMP omits failed mounts");

	/* Mounting twice records once. */
	snprintf(p, sizeof(p), "%s/exp", tmp);
	mnt(p, "127.0.0.1", 900, &fh2);
	dump(list, sizeof(list));
	snprintf(want, sizeof(want), "127.0.0.1 %s/exp;", tmp);
	char *first = strstr(list, want);
	CHECK(first && !strstr(first + 1, want), "repeated MNT recorded once");

	/* UMNT removes one entry for that host. */
	struct xdr_out a;
	struct reply r;
	path_args(&a, p);
	call3(&r, P_UMNT, &a, "127.0.0.1", 900);
	CHECK(r.stat == RPC_SUCCESS && r.out.len == 0, "UMNT: void reply");
	xdr_out_free(&a);
	xdr_out_free(&r.out);
	dump(list, sizeof(list));
	CHECK(!strstr(list, want) && strstr(list, "/exp/sub/deeper"),
	      "UMNT removed only that mount");

	call3(&r, P_UMNTALL, NULL, "127.0.0.1", 900);
	CHECK(r.stat == RPC_SUCCESS && r.out.len == 0, "UMNTALL: void reply");
	xdr_out_free(&r.out);
	dump(list, sizeof(list));
	snprintf(want, sizeof(want), "10.0.0.1 %s/other;", tmp);
	CHECK(!strstr(list, "127.0.0.1") && !strcmp(list, want),
	      "UMNTALL removed every mount of that host only");
}

static void test_export(void)
{
	struct reply r;
	bool more;
	char dir[1025], name[256], got[2048];
	size_t len = 0;

	call3(&r, P_EXPORT, NULL, "192.168.9.9", 900);
	CHECK(r.stat == RPC_SUCCESS, "EXPORT succeeds for anyone");
	got[0] = '\0';
	while (xdr_get_bool(&r.in, &more) && more) {
		if (!xdr_get_string(&r.in, dir, sizeof(dir), 1024))
			break;
		len += (size_t)snprintf(got + len, sizeof(got) - len,
		                        "%s:", strrchr(dir, '/') + 1);
		while (xdr_get_bool(&r.in, &more) && more) {
			if (!xdr_get_string(&r.in, name, sizeof(name), 255))
				break;
			len += (size_t)snprintf(got + len, sizeof(got) - len,
			                        " %s", name);
		}
		len += (size_t)snprintf(got + len, sizeof(got) - len, ";");
	}
	CHECK(!r.in.err && xdr_in_remaining(&r.in) == 0,
	      "EXPORT reply decodes completely");
	CHECK(!strcmp(got, "exp: 127.0.0.0/8 *;other: 10.0.0.1;secure: *;"),
	      "EXPORT lists exports with their groups");
	if (strcmp(got, "exp: 127.0.0.0/8 *;other: 10.0.0.1;secure: *;"))
		printf("# got '%s'\n", got);
	xdr_out_free(&r.out);
}

static void test_garbage(void)
{
	struct xdr_out a;
	struct reply r;

	/* A length that promises more bytes than follow. */
	xdr_out_init(&a, 64, 1024);
	xdr_put_u32(&a, 100);
	xdr_put_u32(&a, 0x2f2f2f2f);
	call3(&r, P_MNT, &a, "127.0.0.1", 900);
	CHECK(r.stat == RPC_GARBAGE_ARGS, "MNT truncated args: GARBAGE_ARGS");
	xdr_out_free(&r.out);
	call3(&r, P_UMNT, &a, "127.0.0.1", 900);
	CHECK(r.stat == RPC_GARBAGE_ARGS, "UMNT truncated args: GARBAGE_ARGS");
	xdr_out_free(&r.out);
	xdr_out_free(&a);

	call3(&r, P_MNT, NULL, "127.0.0.1", 900);
	CHECK(r.stat == RPC_GARBAGE_ARGS, "MNT without args: GARBAGE_ARGS");
	xdr_out_free(&r.out);

	/* dirpath longer than MNTPATHLEN. */
	char big[1100];
	memset(big, 'x', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	path_args(&a, big);
	call3(&r, P_MNT, &a, "127.0.0.1", 900);
	CHECK(r.stat == RPC_GARBAGE_ARGS, "MNT dirpath > 1024: GARBAGE_ARGS");
	xdr_out_free(&r.out);
	xdr_out_free(&a);

	call3(&r, P_NULL, NULL, "127.0.0.1", 900);
	CHECK(r.stat == RPC_SUCCESS && r.out.len == 0, "NULL");
	xdr_out_free(&r.out);
}

static void test_versions(void)
{
	CHECK(mount3_version.vers == 3 && mount3_version.nprocs == 6,
	      "mount3_version has six procedures");
	CHECK(mount_versions[0].vers == 1 && mount_versions[1].vers == 3 &&
	          mount_versions[0].procs[1].fn == NULL &&
	          mount_versions[0].procs[5].fn != NULL,
	      "MOUNT v1 offers EXPORT but not MNT");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	char cmd[400];

	setup();
	test_mnt();
	test_export();
	test_garbage();
	test_versions();
	mount_list_free(&srv);
	exports_replace(&srv, NULL);
	pthread_mutex_destroy(&srv.exports_lock);
	pthread_mutex_destroy(&srv.mounts_lock);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		printf("# cleanup failed\n");
	TEST_EXIT();
}
