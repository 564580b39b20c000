/* NFSv4 owner and owner_group (RFC 7530 5.9) end to end: COMPOUNDs sent
 * through rpc_service_handle() to two exports, one with idmap=names and
 * one with the default (numeric):
 *   GETATTR and READDIR give "name@domain" for ids with a passwd or group
 *   entry on the names export, numbers for the rest and on the default;
 *   SETATTR and CREATE take numbers and names of our domain on both and
 *   refuse other domains, unknown and bare names with BADOWNER.
 * Then the domain's sources: idmapd.conf, resolv.conf, the fallback.
 * Runs as root (chown, SETATTR owner). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../test.h"
#include "compound_testlib.h"
#include "server/exports.h"
#include "server/idmap.h"
#include "server/nfs4/nfs4.h"
#include "server/snfsd.h"
#include "util/log.h"

/* Mixed case: clients may write the domain in any case (DNS names). */
#define DOMAIN "Snfs.Test"
#define OWNER_BIT (1u << (36 - 32))
#define GROUP_BIT (1u << (37 - 32))

static char base[64], names[96], numeric[96];
static uint32_t noname_id; /* no passwd and no group entry */

/* ---- COMPOUND plumbing for owners ---- */

/* The results of op_walk's PUTROOTFH and LOOKUPs: NFS4_OK or the first
 * failure. */
static uint32_t walk_results(struct reply *rep, const char *path)
{
	uint32_t st = res_next(rep, OP4_PUTROOTFH);

	for (const char *c = path; *c && !st; c++)
		if (c[0] != '/' && (c == path || c[-1] == '/'))
			st = res_next(rep, OP4_LOOKUP);
	return st;
}

static void get_string(struct xdr_in *x, char *out, size_t n)
{
	const uint8_t *p = NULL;
	uint32_t len = 0;

	if (!xdr_get_opaque_ref(x, &p, &len, 1024) || len >= n)
		len = 0;
	memcpy(out, p ? (const char *)p : "", len);
	out[len] = '\0';
}

/* A fattr4 of owner and owner_group (after its bitmap) into the two. */
static bool get_owners(struct xdr_in *x, char owner[512], char group[512])
{
	uint32_t nw, w[2] = {0, 0}, alen;

	if (!xdr_get_u32(x, &nw) || nw != 2 || !xdr_get_u32(x, &w[0]) ||
	    !xdr_get_u32(x, &w[1]) || w[1] != (OWNER_BIT | GROUP_BIT) ||
	    !xdr_get_u32(x, &alen))
		return false;
	get_string(x, owner, 512);
	get_string(x, group, 512);
	return !x->err;
}

/* GETATTR owner and owner_group of path: NFS4_OK with the strings. */
static uint32_t getattr_owners(const char *path, char owner[512],
                               char group[512])
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	owner[0] = group[0] = '\0';
	c_begin(&b, 0);
	op_walk(&b, path);
	op_getattr(&b, 0, OWNER_BIT | GROUP_BIT);
	st = c_send(&b, &rep);
	if (st == NFS4_OK &&
	    (walk_results(&rep, path) || res_next(&rep, OP4_GETATTR) ||
	     !get_owners(&rep.res, owner, group)))
		st = 0xbad;
	rep_free(&rep);
	return st;
}

/* fattr4 with one owner attribute. */
static void put_owner_attr(struct xdr_out *x, bool group, const char *s)
{
	size_t n = strlen(s);

	xdr_put_u32(x, 2);
	xdr_put_u32(x, 0);
	xdr_put_u32(x, group ? GROUP_BIT : OWNER_BIT);
	xdr_put_u32(x, (uint32_t)(4 + n + xdr_pad(n)));
	xdr_put_opaque(x, s, (uint32_t)n);
}

/* SETATTR owner (or owner_group) of path to s: the COMPOUND's status. */
static uint32_t setattr_owner(const char *path, bool group, const char *s)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	c_begin(&b, 0);
	op_walk(&b, path);
	op(&b, OP4_SETATTR);
	xdr_put_u32(&b.x, 0); /* the anonymous stateid */
	xdr_put_fixed(&b.x, "\0\0\0\0\0\0\0\0\0\0\0\0", 12);
	put_owner_attr(&b.x, group, s);
	st = c_send(&b, &rep);
	rep_free(&rep);
	return st;
}

/* CREATE of directory name in dir with owner s: the COMPOUND's status. */
static uint32_t mkdir_owner(const char *dir, const char *name, const char *s)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	c_begin(&b, 0);
	op_walk(&b, dir);
	op(&b, OP4_CREATE);
	xdr_put_u32(&b.x, NF4DIR);
	xdr_put_string(&b.x, name);
	put_owner_attr(&b.x, false, s);
	st = c_send(&b, &rep);
	rep_free(&rep);
	return st;
}

/* ---- files ---- */

static void path_of(char *out, size_t n, const char *dir, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

/* A file in dir owned by uid:gid. */
static int make_file(const char *dir, const char *name, uint32_t uid,
                     uint32_t gid)
{
	char p[256];
	int fd;

	path_of(p, sizeof(p), dir, name);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	return chown(p, uid, gid) ? -errno : 0;
}

static bool owned_by(const char *dir, const char *name, uint32_t uid,
                     uint32_t gid)
{
	char p[256];
	struct stat sb;

	path_of(p, sizeof(p), dir, name);
	return !stat(p, &sb) && sb.st_uid == uid && sb.st_gid == gid;
}

static uint32_t find_noname_id(void)
{
	for (uint32_t id = 54321;; id++)
		if (!getpwuid(id) && !getgrgid(id))
			return id;
}

/* "name@DOMAIN" of a passwd (or group) entry. */
static void name_at(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s@%s", name, DOMAIN);
}

/* ---- tests ---- */

static void test_getattr(void)
{
	char p[256], owner[512], group[512], want[300];
	struct passwd *nobody = getpwnam("nobody");

	path_of(p, sizeof(p), names, "byroot");
	CHECK(getattr_owners(p, owner, group) == NFS4_OK &&
	          !strcmp(owner, "root@" DOMAIN) &&
	          !strcmp(group, "root@" DOMAIN),
	      "idmap=names: a root file's owner and group are root@DOMAIN");
	path_of(p, sizeof(p), names, "noname");
	snprintf(want, sizeof(want), "%u", noname_id);
	CHECK(getattr_owners(p, owner, group) == NFS4_OK &&
	          !strcmp(owner, want) && !strcmp(group, want),
	      "idmap=names: an id without an entry goes as its number");
	if (nobody) {
		struct group *gr = getgrgid(nobody->pw_gid);

		path_of(p, sizeof(p), names, "bynobody");
		name_at(want, sizeof(want), nobody->pw_name);
		CHECK(getattr_owners(p, owner, group) == NFS4_OK &&
		          !strcmp(owner, want),
		      "idmap=names: nobody's file: nobody@DOMAIN");
		if (gr)
			name_at(want, sizeof(want), gr->gr_name);
		CHECK(gr && !strcmp(group, want),
		      "idmap=names: owner_group is the group's name");
	}
	CHECK(getattr_owners(names, owner, group) == NFS4_OK &&
	          !strcmp(owner, "root@" DOMAIN),
	      "idmap=names: the export root too");
	path_of(p, sizeof(p), numeric, "byroot");
	CHECK(getattr_owners(p, owner, group) == NFS4_OK &&
	          !strcmp(owner, "0") && !strcmp(group, "0"),
	      "default export: owners are numbers");
	path_of(p, sizeof(p), numeric, "noname");
	snprintf(want, sizeof(want), "%u", noname_id);
	CHECK(getattr_owners(p, owner, group) == NFS4_OK &&
	          !strcmp(owner, want),
	      "default export: an id without an entry, a number too");
	/* Pseudo directories belong to no export: numbers. */
	CHECK(getattr_owners("/", owner, group) == NFS4_OK &&
	          !strcmp(owner, "0"),
	      "pseudo root: numeric owner");
}

/* READDIR of dir asking owner and owner_group: how many entries were
 * seen, and how many had owner want_root (for "byroot") and want_noname
 * (for "noname"). */
static int readdir_owners(const char *dir, const char *want_root,
                          const char *want_noname, int *good)
{
	char name[256], owner[512], group[512];
	struct reply rep = {0};
	struct cbuf b;
	uint32_t more = 0;
	const uint8_t *p;
	uint32_t n;
	uint64_t cookie;
	int seen = 0;

	*good = 0;
	c_begin(&b, 0);
	op_walk(&b, dir);
	op(&b, OP4_READDIR);
	xdr_put_u64(&b.x, 0);
	xdr_put_u64(&b.x, 0);
	xdr_put_u32(&b.x, 8192);
	xdr_put_u32(&b.x, 32768);
	xdr_put_u32(&b.x, 2);
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, OWNER_BIT | GROUP_BIT);
	if (c_send(&b, &rep) != NFS4_OK || walk_results(&rep, dir) ||
	    res_next(&rep, OP4_READDIR)) {
		rep_free(&rep);
		return -1;
	}
	xdr_skip(&rep.res, 8); /* cookieverf */
	while (xdr_get_u32(&rep.res, &more) && more) {
		xdr_get_u64(&rep.res, &cookie);
		xdr_get_opaque_ref(&rep.res, &p, &n, 255);
		snprintf(name, sizeof(name), "%.*s", (int)n, (const char *)p);
		if (!get_owners(&rep.res, owner, group))
			break;
		seen++;
		if (!strcmp(name, "byroot") && !strcmp(owner, want_root) &&
		    !strcmp(group, want_root))
			(*good)++;
		if (!strcmp(name, "noname") && !strcmp(owner, want_noname))
			(*good)++;
	}
	rep_free(&rep);
	return seen;
}

/* What the names export should send for id: name@DOMAIN, or the number
 * for an id without an entry ("root" for 0 in any case). */
static void expected_owner(uint32_t id, bool group, char *out, size_t n)
{
	struct passwd *pw = group ? NULL : getpwuid(id);
	struct group *gr = group ? getgrgid(id) : NULL;
	const char *name = pw ? pw->pw_name : gr ? gr->gr_name : NULL;

	if (!name && id == 0)
		name = "root";
	if (name)
		name_at(out, n, name);
	else
		snprintf(out, n, "%u", id);
}

/* A directory of n files owned by every passwd and group entry's id in
 * turn, and ids without entries between them: the cache holds many
 * names and misses at once. */
static int make_many(const char *dir, int n)
{
	uint32_t uids[64], gids[64];
	size_t nu = 0, ng = 0;
	struct passwd *pw;
	struct group *gr;
	char name[32];
	int rc = 0;

	setpwent();
	while (nu < 64 && (pw = getpwent()))
		uids[nu++] = pw->pw_uid;
	endpwent();
	setgrent();
	while (ng < 64 && (gr = getgrent()))
		gids[ng++] = gr->gr_gid;
	endgrent();
	mkdir(dir, 0755);
	for (int i = 0; i < n && !rc; i++) {
		uint32_t u = i % 2 && nu ? uids[i / 2 % nu] : noname_id + i;
		uint32_t g = i % 3 && ng ? gids[i / 3 % ng] : noname_id + i;

		snprintf(name, sizeof(name), "m%04d", i);
		rc = make_file(dir, name, u, g);
	}
	return rc;
}

/* READDIR of dir (one reply): the entries seen, and in *bad those whose
 * owner or group is not what expected_owner says of the file's ids. */
static int readdir_check(const char *dir, int *bad)
{
	char name[256], owner[512], group[512], want[300], p[512];
	struct reply rep = {0};
	struct cbuf b;
	uint32_t more = 0, n;
	const uint8_t *np;
	uint64_t cookie;
	struct stat sb;
	int seen = 0;

	*bad = 0;
	c_begin(&b, 0);
	op_walk(&b, dir);
	op(&b, OP4_READDIR);
	xdr_put_u64(&b.x, 0);
	xdr_put_u64(&b.x, 0);
	xdr_put_u32(&b.x, 1u << 20);
	xdr_put_u32(&b.x, 1u << 20);
	xdr_put_u32(&b.x, 2);
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, OWNER_BIT | GROUP_BIT);
	if (c_send(&b, &rep) != NFS4_OK || walk_results(&rep, dir) ||
	    res_next(&rep, OP4_READDIR)) {
		rep_free(&rep);
		return -1;
	}
	xdr_skip(&rep.res, 8);
	while (xdr_get_u32(&rep.res, &more) && more) {
		xdr_get_u64(&rep.res, &cookie);
		xdr_get_opaque_ref(&rep.res, &np, &n, 255);
		snprintf(name, sizeof(name), "%.*s", (int)n, (const char *)np);
		if (!get_owners(&rep.res, owner, group))
			break;
		seen++;
		path_of(p, sizeof(p), dir, name);
		if (stat(p, &sb)) {
			(*bad)++;
			continue;
		}
		expected_owner(sb.st_uid, false, want, sizeof(want));
		*bad += strcmp(owner, want) != 0;
		expected_owner(sb.st_gid, true, want, sizeof(want));
		*bad += strcmp(group, want) != 0;
	}
	rep_free(&rep);
	return seen;
}

static void test_readdir(void)
{
	char many[128], num[16];
	int good, bad, bad2;

	snprintf(num, sizeof(num), "%u", noname_id);
	CHECK(readdir_owners(names, "root@" DOMAIN, num, &good) >= 3 &&
	          good == 2,
	      "idmap=names READDIR: names, and numbers for ids without one");
	CHECK(readdir_owners(numeric, "0", num, &good) >= 2 && good == 2,
	      "default export READDIR: numbers");
	path_of(many, sizeof(many), names, "many");
	CHECK(make_many(many, 600) == 0, "600 files of many owners");
	CHECK(readdir_check(many, &bad) == 600 && bad == 0 &&
	          readdir_check(many, &bad2) == 600 && bad2 == 0,
	      "READDIR of many owners, twice (cache cold, warm): all right");
}

static void test_setattr(void)
{
	struct passwd *nobody = getpwnam("nobody");
	char p[256], s[300];

	path_of(p, sizeof(p), names, "target");
	if (nobody) {
		name_at(s, sizeof(s), "nobody");
		CHECK(setattr_owner(p, false, s) == NFS4_OK &&
		          owned_by(names, "target", nobody->pw_uid, 0),
		      "SETATTR owner nobody@DOMAIN: the uid is nobody's");
	}
	CHECK(setattr_owner(p, false, "root@snfs.TEST") == NFS4_OK &&
	          owned_by(names, "target", 0, 0),
	      "SETATTR owner root@domain in another case: uid 0");
	CHECK(setattr_owner(p, false, "12345") == NFS4_OK &&
	          owned_by(names, "target", 12345, 0),
	      "SETATTR owner \"12345\": uid 12345");
	CHECK(setattr_owner(p, false, "x@otherdomain") == NFS4ERR_BADOWNER &&
	          owned_by(names, "target", 12345, 0),
	      "SETATTR owner x@otherdomain: BADOWNER, owner unchanged");
	CHECK(setattr_owner(p, false, "root@otherdomain") == NFS4ERR_BADOWNER,
	      "SETATTR owner: a known name of another domain is BADOWNER");
	CHECK(setattr_owner(p, false, "no-such-user-snfs@" DOMAIN) ==
	          NFS4ERR_BADOWNER,
	      "SETATTR owner: an unknown name of our domain is BADOWNER");
	CHECK(setattr_owner(p, false, "root") == NFS4ERR_BADOWNER &&
	          setattr_owner(p, false, "@" DOMAIN) == NFS4ERR_BADOWNER &&
	          setattr_owner(p, false, "4294967296") == NFS4ERR_BADOWNER,
	      "SETATTR owner: bare name, empty name, id overflow: BADOWNER");
	CHECK(setattr_owner(p, true, "root@" DOMAIN) == NFS4_OK &&
	          setattr_owner(p, false, "0") == NFS4_OK &&
	          owned_by(names, "target", 0, 0),
	      "SETATTR owner_group root@DOMAIN: gid 0");
	CHECK(setattr_owner(p, true, "777@" DOMAIN) == NFS4_OK &&
	          owned_by(names, "target", 0, 777),
	      "SETATTR owner_group \"777@DOMAIN\" taken as a number");
	/* Input does not depend on the export's idmap. */
	path_of(p, sizeof(p), numeric, "target");
	if (nobody) {
		name_at(s, sizeof(s), "nobody");
		CHECK(setattr_owner(p, false, s) == NFS4_OK &&
		          owned_by(numeric, "target", nobody->pw_uid, 0),
		      "default export: SETATTR owner nobody@DOMAIN too");
	}
	CHECK(setattr_owner(p, false, "x@otherdomain") == NFS4ERR_BADOWNER,
	      "default export: another domain is BADOWNER too");
}

static void test_create(void)
{
	char p[256];
	struct stat sb;

	CHECK(mkdir_owner(names, "d1", "x@otherdomain") == NFS4ERR_BADOWNER,
	      "CREATE with owner x@otherdomain: BADOWNER");
	path_of(p, sizeof(p), names, "d1");
	CHECK(stat(p, &sb) != 0, "CREATE refused: no directory made");
	CHECK(mkdir_owner(names, "d2", "4242") == NFS4_OK &&
	          owned_by(names, "d2", 4242, 0),
	      "CREATE with owner \"4242\": the directory is uid 4242's");
}

/* ---- the domain ---- */

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_domain_sources(void)
{
	char conf[128], resolv[128], dom[IDMAP_DOMAIN_MAX];
	struct idmap_sources src = {.conf = conf, .resolv = resolv};
	enum idmap_origin o;

	snprintf(conf, sizeof(conf), "%s/idmapd.conf", base);
	snprintf(resolv, sizeof(resolv), "%s/resolv.conf", base);
	write_text(conf, "[General]\nVerbosity = 0\n"
	                 "# Domain = commented.example\n"
	                 "[Mapping]\nDomain = wrong.section\n"
	                 "[ general ]\n  domain=Example.COM.  \n");
	CHECK(idmap_conf_domain(conf, dom) == 0 && !strcmp(dom, "Example.COM"),
	      "idmapd.conf: [General] Domain, any case, trailing dot dropped");
	write_text(conf, "[General]\n# Domain = localdomain\n"
	                 "[Mapping]\nDomain = wrong.section\n");
	CHECK(idmap_conf_domain(conf, dom) == -ENOENT,
	      "idmapd.conf: commented and other sections' Domain do not count");
	write_text(conf, "[General]\nDomain = \"quoted.example\"\n");
	CHECK(idmap_conf_domain(conf, dom) == 0 &&
	          !strcmp(dom, "quoted.example"),
	      "idmapd.conf: a quoted value");
	write_text(conf, "[General]\nDomain = two words\n");
	CHECK(idmap_conf_domain(conf, dom) == -EINVAL,
	      "idmapd.conf: a domain with a space is refused");

	write_text(resolv, "nameserver 10.0.0.1\ndomain first.example\n"
	                   "search last.example other.example\n");
	CHECK(idmap_resolv_domain(resolv, dom) == 0 &&
	          !strcmp(dom, "last.example"),
	      "resolv.conf: the last domain/search line, its first name");

	write_text(conf, "[General]\nDomain = conf.example\n");
	CHECK(idmap_find_domain(&src, dom) == IDMAP_FROM_CONF &&
	          !strcmp(dom, "conf.example"),
	      "domain: idmapd.conf first");
	unlink(conf);
	CHECK(idmap_find_domain(&src, dom) == IDMAP_FROM_RESOLV &&
	          !strcmp(dom, "last.example"),
	      "domain: resolv.conf without idmapd.conf (DNS step off)");
	write_text(resolv, "nameserver 10.0.0.1\n");
	CHECK(idmap_find_domain(&src, dom) == IDMAP_FROM_FALLBACK &&
	          !strcmp(dom, "localdomain"),
	      "domain: localdomain when nothing names one");
	o = idmap_find_domain(&idmap_system_sources, dom);
	CHECK(dom[0] != '\0', "a domain for this host");
	printf("# this host's NFSv4 domain: %s (from %s)\n", dom,
	       idmap_origin_name(o));
}

/* ---- setup ---- */

static int setup(void)
{
	const char *specs[2];
	char spec_n[160], spec_d[160], err[256];
	struct export_table *t;
	int rc;

	snprintf(base, sizeof(base), "/tmp/snfs-idmap-XXXXXX");
	if (!mkdtemp(base))
		return -errno;
	snprintf(names, sizeof(names), "%s/names", base);
	snprintf(numeric, sizeof(numeric), "%s/numeric", base);
	mkdir(names, 0755);
	mkdir(numeric, 0755);
	noname_id = find_noname_id();
	rc = make_file(names, "byroot", 0, 0);
	if (!rc)
		rc = make_file(names, "noname", noname_id, noname_id);
	if (!rc)
		rc = make_file(names, "target", 0, 0);
	if (!rc && getpwnam("nobody"))
		rc = make_file(names, "bynobody", getpwnam("nobody")->pw_uid,
		               getpwnam("nobody")->pw_gid);
	if (!rc)
		rc = make_file(numeric, "byroot", 0, 0);
	if (!rc)
		rc = make_file(numeric, "noname", noname_id, noname_id);
	if (!rc)
		rc = make_file(numeric, "target", 0, 0);
	if (rc)
		return rc;
	snprintf(spec_n, sizeof(spec_n),
	         "%s:rw,insecure,no_root_squash,"
	         "idmap=names",
	         names);
	snprintf(spec_d, sizeof(spec_d), "%s:rw,insecure,no_root_squash",
	         numeric);
	specs[0] = spec_n;
	specs[1] = spec_d;
	rc = exports_load(NULL, specs, 2, &t, err, sizeof(err));
	if (rc) {
		printf("# exports_load: %s\n", err);
		return rc;
	}
	snprintf(S.idmap_domain, sizeof(S.idmap_domain), "%s", DOMAIN);
	return testsrv_start(t, base);
}

int main(void)
{
	int rc;

	log_set_level(LOG_ERR);
	if (geteuid() != 0) {
		printf("ok - # SKIP not root: chown and SETATTR owner\n");
		return 0;
	}
	rc = setup();
	CHECK(rc == 0, "setup: files, exports and service");
	if (rc)
		TEST_EXIT();
	test_getattr();
	test_readdir();
	test_setattr();
	test_create();
	test_domain_sources();
	testsrv_stop(base);
	TEST_EXIT();
}
