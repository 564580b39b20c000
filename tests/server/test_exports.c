/* Exports: parsing, errors with line numbers, host matching, squashing,
 * -e specs, fsid stability and table reference counting. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "server/exports.h"
#include "server/snfsd.h"

static char tmp[256];
static char efile[300];
static char err[1024];

static void write_file(const char *text)
{
	FILE *f = fopen(efile, "w");
	fputs(text, f);
	fclose(f);
}

/* Load an exports file made from text (with %1$s standing for tmp). */
static int load_text(const char *fmt, struct export_table **t)
{
	char text[4096];

	snprintf(text, sizeof(text), fmt, tmp);
	write_file(text);
	return exports_load(efile, NULL, 0, t, err, sizeof(err));
}

static struct sockaddr_storage ip(const char *a, uint16_t port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (void *)&ss;
	struct sockaddr_in6 *s6 = (void *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, a, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
	} else if (inet_pton(AF_INET6, a, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
	}
	return ss;
}

static const struct export_rule *match(const struct export *ex, const char *a)
{
	struct sockaddr_storage ss = ip(a, 700);
	return export_match(ex, (struct sockaddr *)&ss);
}

static void setup(void)
{
	char p[400];

	snprintf(tmp, sizeof(tmp), "/tmp/snfs-test-exports.XXXXXX");
	if (!mkdtemp(tmp))
		exit(1);
	snprintf(efile, sizeof(efile), "%s/exports", tmp);
	const char *dirs[] = {"a", "b", "c", "with space", "d"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", tmp, dirs[i]);
		mkdir(p, 0755);
	}
	snprintf(p, sizeof(p), "%s/file", tmp);
	FILE *f = fopen(p, "w");
	fclose(f);
}

static void cleanup(void)
{
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		fprintf(stderr, "cleanup failed\n");
}

static void test_good_file(void)
{
	struct export_table *t;
	int rc = load_text(
	    "# a comment line\n"
	    "\n"
	    "%1$s/a 127.0.0.1(rw,no_root_squash,insecure,async) "
	    "10.0.0.0/8(ro) # trailing comment\n"
	    "%1$s/b \\\n"
	    "   192.168.0.0/255.255.0.0(rw,all_squash,anonuid=1000,"
	    "anongid=1001,fsid=77,no_subtree_check,wdelay,hide,crossmnt,"
	    "sec=sys) \\\n"
	    "   fd00::/8(rw) ::1(ro)\n"
	    "\"%1$s/with space\"\n"
	    "%1$s/c -rw,insecure 127.0.0.2 *(ro)\n"
	    "%1$s/d/ (rw)\n",
	    &t);
	CHECK(rc == 0, "good file loads");
	if (rc) {
		printf("# %s\n", err);
		return;
	}
	CHECK(t->n == 5, "good file: five exports");
	char p[400];
	snprintf(p, sizeof(p), "%s/a", tmp);
	struct export *a = exports_by_path(t, p);
	CHECK(a && a->nrules == 2, "export a has two rules");
	if (a && a->nrules == 2) {
		const struct export_rule *r = &a->rules[0];
		CHECK(r->kind == MATCH_ADDR, "127.0.0.1 is an address rule");
		CHECK(r->flags == (EXP_RW | EXP_ZEROCOPY_AUTO | EXP_NO_MAPPED),
		      "rw,no_root_squash,insecure,async");
		r = &a->rules[1];
		CHECK(r->kind == MATCH_CIDR && r->prefix == 8, "10.0.0.0/8");
		CHECK(r->flags == (EXP_ROOT_SQUASH | EXP_SECURE | EXP_SYNC |
		                   EXP_ZEROCOPY_AUTO | EXP_NO_MAPPED),
		      "defaults: ro,root_squash,secure,sync,zerocopy=auto");
		CHECK(r->anonuid == 65534 && r->anongid == 65534,
		      "default anon ids 65534");
	}
	snprintf(p, sizeof(p), "%s/b", tmp);
	struct export *b = exports_by_path(t, p);
	CHECK(b && b->nrules == 3, "continued line: export b has 3 rules");
	if (b && b->nrules == 3) {
		CHECK(b->fsid == 77, "fsid=77");
		CHECK(exports_by_fsid(t, 77) == b, "exports_by_fsid");
		CHECK(b->rules[0].kind == MATCH_CIDR &&
		          b->rules[0].prefix == 16,
		      "netmask form gives /16");
		CHECK(b->rules[0].flags & EXP_ALL_SQUASH, "all_squash");
		CHECK(b->rules[0].anonuid == 1000 &&
		          b->rules[0].anongid == 1001,
		      "anonuid/anongid");
		CHECK(b->rules[1].kind == MATCH_CIDR &&
		          b->rules[1].prefix == 8 &&
		          b->rules[1].addr.ss_family == AF_INET6,
		      "IPv6 CIDR");
		CHECK(b->rules[2].kind == MATCH_ADDR &&
		          b->rules[2].addr.ss_family == AF_INET6,
		      "IPv6 address");
	}
	snprintf(p, sizeof(p), "%s/with space", tmp);
	struct export *w = exports_by_path(t, p);
	CHECK(w != NULL, "quoted path with a space");
	CHECK(w && w->nrules == 1 && w->rules[0].kind == MATCH_ANY &&
	          !(w->rules[0].flags & EXP_RW),
	      "bare path: * with defaults (ro)");
	snprintf(p, sizeof(p), "%s/c", tmp);
	struct export *c = exports_by_path(t, p);
	CHECK(c && c->nrules == 2 && (c->rules[0].flags & EXP_RW) &&
	          !(c->rules[0].flags & EXP_SECURE),
	      "-rw,insecure line defaults apply to a host without options");
	CHECK(c && c->nrules == 2 && c->rules[1].kind == MATCH_ANY &&
	          !(c->rules[1].flags & EXP_RW) &&
	          !(c->rules[1].flags & EXP_SECURE),
	      "host options override line defaults");
	snprintf(p, sizeof(p), "%s/d", tmp);
	struct export *d = exports_by_path(t, p);
	CHECK(d && d->nrules == 1 && d->rules[0].kind == MATCH_ANY &&
	          (d->rules[0].flags & EXP_RW),
	      "trailing slash cleaned; (rw) alone means *");
	for (size_t i = 0; i < t->n; i++)
		CHECK(t->v[i].bk != NULL && t->v[i].ops != NULL,
		      "backend opened for every export");
	exports_free(t);
}

/* Each bad line gives "file:LINE: reason" for the right line. */
static void expect_error(const char *text, int line, const char *what,
                         const char *name)
{
	struct export_table *t = NULL;
	char want[400], msg[600];
	int rc = load_text(text, &t);

	snprintf(want, sizeof(want), "%s:%d: ", efile, line);
	snprintf(msg, sizeof(msg), "error: %s", name);
	CHECK(rc < 0 && t == NULL && !strncmp(err, want, strlen(want)) &&
	          strstr(err, what),
	      msg);
	if (rc == 0)
		exports_free(t);
	else if (strncmp(err, want, strlen(want)) || !strstr(err, what))
		printf("# got '%s', wanted '%s...%s'\n", err, want, what);
}

static void test_errors(void)
{
	expect_error("# ok\n%1$s/a *(rw)\n%1$s/b *(rw,bogus)\n", 3,
	             "unknown option 'bogus'", "unknown option");
	expect_error("\n\n\n*(rw)\n", 4, "missing export path", "missing path");
	expect_error("%1$s/a\nrelative/dir *(rw)\n", 2, "not absolute",
	             "relative path");
	expect_error("%1$s/file *(rw)\n", 1, "not a directory",
	             "path is a file");
	expect_error("%1$s/a\n%1$s/nonexistent\n", 2,
	             "No such file or directory", "missing directory");
	expect_error("%1$s/a *(fsid=5)\n%1$s/b \\\n *(fsid=5)\n", 2,
	             "duplicate fsid 5", "duplicate fsid");
	expect_error("%1$s/a 10.0.0.0/33(rw)\n", 1, "bad prefix",
	             "bad CIDR prefix");
	expect_error("%1$s/a 10.0.0.0/255.0.255.0(rw)\n", 1, "bad netmask",
	             "non-contiguous netmask");
	expect_error("%1$s/a *(fsid=root)\n", 1, "fsid=root is not supported",
	             "fsid=root rejected");
	expect_error("%1$s/a *(anonuid=-2)\n", 1, "anonuid=-2",
	             "negative anonuid");
	expect_error("%1$s/a *(sec=krb5)\n", 1, "only sec=sys",
	             "sec=krb5 rejected");
	expect_error("%1$s/a *(rw\n", 1, "missing ')'", "missing paren");
	expect_error("%1$s/a @group(rw)\n", 1, "netgroups",
	             "netgroup rejected");
	expect_error("%1$s/a\n%1$s/a/ *(rw)\n", 2, "exported twice",
	             "duplicate path");
	expect_error("\"%1$s/a *(rw)\n", 1, "unterminated quote",
	             "unterminated quote");
	expect_error("%1$s/a *(fsid=1) 127.0.0.1(fsid=2)\n", 1,
	             "conflicting fsid", "conflicting fsid");

	struct export_table *t = NULL;
	int rc =
	    exports_load("/nonexistent/exports", NULL, 0, &t, err, sizeof(err));
	CHECK(rc == -ENOENT && strstr(err, "/nonexistent/exports"),
	      "missing exports file is an error naming it");
}

static void test_matching(void)
{
	struct export_table *t;
	int rc = load_text("%1$s/a 192.168.1.5(rw) 10.0.0.0/8(ro) "
	                   "fd00::/16(rw) ::1(rw,insecure) "
	                   "172.16.0.0/255.240.0.0(rw,no_root_squash) "
	                   "localhost(rw,all_squash)\n"
	                   "%1$s/b 10.1.0.0/16(rw) 10.0.0.0/8(ro) *(rw)\n",
	                   &t);
	CHECK(rc == 0, "matching table loads");
	if (rc) {
		printf("# %s\n", err);
		return;
	}
	struct export *a = &t->v[0], *b = &t->v[1];
	CHECK(match(a, "192.168.1.5") == &a->rules[0], "exact IPv4");
	CHECK(match(a, "192.168.1.6") == NULL, "other IPv4 refused");
	CHECK(match(a, "10.200.3.4") == &a->rules[1], "IPv4 CIDR");
	CHECK(match(a, "11.0.0.1") == NULL, "outside CIDR refused");
	CHECK(match(a, "fd00:1::1") == &a->rules[2], "IPv6 CIDR");
	CHECK(match(a, "fd01::1") == NULL, "outside IPv6 CIDR refused");
	CHECK(match(a, "::1") == &a->rules[3], "exact IPv6");
	CHECK(match(a, "172.31.255.255") == &a->rules[4], "netmask network");
	CHECK(match(a, "172.32.0.0") == NULL, "outside netmask refused");
	CHECK(match(a, "::ffff:10.9.9.9") == &a->rules[1],
	      "IPv4-mapped IPv6 peer matches IPv4 rule");
	const struct export_rule *lr = match(a, "127.0.0.1");
	CHECK(lr && lr->kind == MATCH_ADDR && lr->pattern &&
	          !strcmp(lr->pattern, "localhost") &&
	          (lr->flags & EXP_ALL_SQUASH),
	      "hostname resolved at load time");
	CHECK(match(b, "10.1.2.3") == &b->rules[0], "first match wins");
	CHECK(match(b, "10.2.2.3") == &b->rules[1], "second rule");
	CHECK(match(b, "8.8.8.8") == &b->rules[2], "* matches anyone");
	CHECK(match(b, "2001:db8::1") == &b->rules[2], "* matches IPv6");
	exports_free(t);
	rc = load_text("%1$s/a *.example.com(rw) 10.0.0.1(ro)\n", &t);
	CHECK(rc == 0 && t->v[0].nrules == 2 &&
	          t->v[0].rules[0].kind == MATCH_NAME &&
	          !strcmp(t->v[0].rules[0].pattern, "*.example.com"),
	      "wildcard hostname kept as a name rule");
	if (rc)
		return;
	CHECK(match(&t->v[0], "127.0.0.1") == NULL &&
	          match(&t->v[0], "10.0.0.1") == &t->v[0].rules[1],
	      "wildcard hostname never matches (no reverse lookups)");
	exports_free(t);
}

static void test_squash(void)
{
	struct export_rule r = {.kind = MATCH_ANY,
	                        .flags = EXP_ROOT_SQUASH,
	                        .anonuid = 65534,
	                        .anongid = 65533};
	struct rpc_cred in = {.flavor = RPC_AUTH_SYS,
	                      .uid = 0,
	                      .gid = 0,
	                      .ngids = 3,
	                      .gids = {0, 10, 0}};
	struct bk_cred out;

	export_squash(&r, &in, &out);
	CHECK(out.uid == 65534 && out.gid == 65533,
	      "root_squash: uid/gid 0 mapped");
	CHECK(out.ngids == 3 && out.gids[0] == 65533 && out.gids[1] == 10 &&
	          out.gids[2] == 65533,
	      "root_squash: supplementary gid 0 mapped");
	in.uid = 1000;
	in.gid = 100;
	export_squash(&r, &in, &out);
	CHECK(out.uid == 1000 && out.gid == 100,
	      "root_squash leaves other users");
	r.flags = 0;
	in.uid = 0;
	in.gid = 0;
	export_squash(&r, &in, &out);
	CHECK(out.uid == 0 && out.gid == 0 && out.gids[0] == 0,
	      "no_root_squash keeps root");
	r.flags = EXP_ALL_SQUASH;
	in.uid = 1000;
	export_squash(&r, &in, &out);
	CHECK(out.uid == 65534 && out.gid == 65533 && out.ngids == 0,
	      "all_squash maps everyone");
	r.flags = 0;
	in.flavor = RPC_AUTH_NONE;
	export_squash(&r, &in, &out);
	CHECK(out.uid == 65534 && out.gid == 65533 && out.ngids == 0,
	      "AUTH_NONE gets anon ids");
}

static void test_specs(void)
{
	struct export_table *t;
	char s1[400], s2[400], s3[400];
	snprintf(s1, sizeof(s1), "%s/a", tmp);
	snprintf(s2, sizeof(s2), "%s/b:ro,no_root_squash,fsid=9", tmp);
	snprintf(s3, sizeof(s3), "%s/c:127.0.0.1(rw) 10.0.0.0/8(ro,secure)",
	         tmp);
	const char *specs[] = {s1, s2, s3};
	int rc = exports_load(NULL, specs, 3, &t, err, sizeof(err));
	CHECK(rc == 0, "-e specs load");
	if (rc) {
		printf("# %s\n", err);
		return;
	}
	CHECK(t->n == 3, "three -e exports");
	const struct export_rule *r = &t->v[0].rules[0];
	CHECK(t->v[0].nrules == 1 && r->kind == MATCH_ANY &&
	          r->flags == (EXP_RW | EXP_ROOT_SQUASH | EXP_SYNC |
	                       EXP_ZEROCOPY_AUTO | EXP_NO_MAPPED),
	      "-e DIR: *(rw,insecure,root_squash,sync,zerocopy=auto)");
	r = &t->v[1].rules[0];
	CHECK(r->kind == MATCH_ANY &&
	          r->flags == (EXP_SYNC | EXP_ZEROCOPY_AUTO | EXP_NO_MAPPED) &&
	          t->v[1].fsid == 9,
	      "-e DIR:opts applies to *");
	CHECK(t->v[2].nrules == 2 && t->v[2].rules[0].kind == MATCH_ADDR &&
	          (t->v[2].rules[0].flags & EXP_RW) &&
	          !(t->v[2].rules[0].flags & EXP_SECURE) &&
	          !(t->v[2].rules[1].flags & EXP_RW) &&
	          (t->v[2].rules[1].flags & EXP_SECURE),
	      "-e DIR:host(opts) host(opts)");
	exports_free(t);

	/* A relative DIR is taken from the current directory. */
	char cwd[4096];
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = '\0';
	const char *rel[] = {"a:rw"};
	rc = chdir(tmp);
	rc = rc ? rc : exports_load(NULL, rel, 1, &t, err, sizeof(err));
	CHECK(rc == 0 && t->n == 1 && t->v[0].path[0] == '/' &&
	          strstr(t->v[0].path, "/a"),
	      "-e relative DIR made absolute");
	if (rc == 0)
		exports_free(t);
	if (chdir(cwd))
		printf("# chdir back failed\n");

	char bad[400];
	snprintf(bad, sizeof(bad), "%s/a:rw,frobnicate", tmp);
	const char *bspec[] = {bad};
	t = NULL;
	rc = exports_load(NULL, bspec, 1, &t, err, sizeof(err));
	CHECK(rc < 0 && t == NULL && !strncmp(err, "-e ", 3) &&
	          strstr(err, "unknown option 'frobnicate'"),
	      "-e bad option reported with the spec");
	const char *nspec[] = {"/nonexistent-snfs-dir"};
	rc = exports_load(NULL, nspec, 1, &t, err, sizeof(err));
	CHECK(rc < 0 && strstr(err, "/nonexistent-snfs-dir"),
	      "-e missing directory reported");

	/* File and -e together; duplicate fsid across them is refused. */
	snprintf(s1, sizeof(s1), "%s/c:fsid=3", tmp);
	const char *dspec[] = {s1};
	write_file("");
	{
		char text[400];
		snprintf(text, sizeof(text), "%s/a *(fsid=3)\n", tmp);
		write_file(text);
	}
	rc = exports_load(efile, dspec, 1, &t, err, sizeof(err));
	CHECK(rc < 0 && strstr(err, "duplicate fsid 3"),
	      "duplicate fsid between file and -e");
}

/* idmap=names|numeric (NFSv4 owners): numeric by default, per rule, in
 * files and -e specs, the last one given wins; other values refused. */
static void test_idmap_option(void)
{
	struct export_table *t;
	char spec[400], p[400];
	int rc = load_text("%1$s/a 127.0.0.1(rw,idmap=names) "
	                   "10.0.0.0/8(idmap=names,idmap=numeric) *(ro)\n",
	                   &t);

	CHECK(rc == 0, "idmap options load");
	if (rc) {
		printf("# %s\n", err);
		return;
	}
	snprintf(p, sizeof(p), "%s/a", tmp);
	struct export *a = exports_by_path(t, p);
	CHECK(a && a->nrules == 3 && (a->rules[0].flags & EXP_IDMAP_NAMES) &&
	          (a->rules[0].flags & EXP_RW),
	      "idmap=names sets the rule's flag");
	CHECK(a && a->nrules == 3 && !(a->rules[1].flags & EXP_IDMAP_NAMES),
	      "idmap=numeric after idmap=names: the last wins");
	CHECK(a && a->nrules == 3 && !(a->rules[2].flags & EXP_IDMAP_NAMES),
	      "idmap default: numeric");
	exports_free(t);

	snprintf(spec, sizeof(spec), "%s/b:rw,idmap=names", tmp);
	const char *specs[] = {spec};
	rc = exports_load(NULL, specs, 1, &t, err, sizeof(err));
	CHECK(rc == 0 && (t->v[0].rules[0].flags & EXP_IDMAP_NAMES),
	      "-e DIR:idmap=names");
	if (rc == 0)
		exports_free(t);
	expect_error("%1$s/a *(idmap=nfsidmap)\n", 1,
	             "idmap=nfsidmap: give idmap=names or idmap=numeric",
	             "idmap with another value rejected");
	expect_error("%1$s/a *(idmap)\n", 1, "unknown option 'idmap'",
	             "idmap without a value rejected");
}

/* zerocopy=auto by default; zerocopy and no_zerocopy force it either
 * way, zerocopy=auto takes it back; the last one given wins. */
static void test_zerocopy_option(void)
{
	const uint32_t zc = EXP_ZEROCOPY_AUTO | EXP_NO_ZEROCOPY;
	struct export_table *t;
	char p[400];
	int rc = load_text("%1$s/a 127.0.0.1(zerocopy) 10.0.0.1(no_zerocopy) "
	                   "10.0.0.2(no_zerocopy,zerocopy=auto) "
	                   "10.0.0.3(zerocopy=auto,zerocopy) *(ro)\n",
	                   &t);

	CHECK(rc == 0, "zerocopy options load");
	if (rc) {
		printf("# %s\n", err);
		return;
	}
	snprintf(p, sizeof(p), "%s/a", tmp);
	struct export *a = exports_by_path(t, p);
	CHECK(a && a->nrules == 5, "five rules");
	if (a && a->nrules == 5) {
		CHECK((a->rules[0].flags & zc) == 0, "zerocopy: always");
		CHECK((a->rules[1].flags & zc) == EXP_NO_ZEROCOPY,
		      "no_zerocopy: never");
		CHECK((a->rules[2].flags & zc) == EXP_ZEROCOPY_AUTO,
		      "zerocopy=auto after no_zerocopy: auto");
		CHECK((a->rules[3].flags & zc) == 0,
		      "zerocopy after zerocopy=auto: always");
		CHECK((a->rules[4].flags & zc) == EXP_ZEROCOPY_AUTO &&
		          a->rules[4].zerocopy_min == EXP_ZEROCOPY_MIN_UNSET,
		      "default: zerocopy=auto, zerocopy_min unset");
	}
	exports_free(t);
	expect_error("%1$s/a *(zerocopy=yes)\n", 1,
	             "unknown option 'zerocopy=yes'",
	             "zerocopy with a value other than auto rejected");
}

static void test_fsid_stability(void)
{
	struct export_table *t1, *t2;
	int rc1 = load_text("%1$s/a\n%1$s/b\n", &t1);
	int rc2 = load_text("%1$s/b\n%1$s/a\n%1$s/c\n", &t2);

	CHECK(rc1 == 0 && rc2 == 0, "fsid tables load");
	if (rc1 || rc2) {
		exports_free(rc1 ? NULL : t1);
		exports_free(rc2 ? NULL : t2);
		return;
	}
	CHECK(t1->v[0].fsid == t2->v[1].fsid && t1->v[1].fsid == t2->v[0].fsid,
	      "hashed fsid is stable across loads and order");
	CHECK(t1->v[0].fsid != t1->v[1].fsid, "different paths, fsids differ");
	exports_free(t1);
	exports_free(t2);
}

static void test_refcount(void)
{
	struct snfsd s = {0};
	struct export_table *t1, *t2, *held;

	pthread_mutex_init(&s.exports_lock, NULL);
	CHECK(load_text("%1$s/a\n", &t1) == 0, "refcount: table 1");
	CHECK(load_text("%1$s/b\n", &t2) == 0, "refcount: table 2");
	if (!t1 || !t2) {
		exports_free(t1);
		exports_free(t2);
		return;
	}
	s.exports = t1;
	held = exports_acquire(&s);
	CHECK(held == t1 && atomic_load(&t1->refs) == 2, "acquire adds a ref");
	exports_replace(&s, t2);
	/* t1 must still be usable here (ASan would flag a use after free). */
	CHECK(held->n == 1 && strstr(held->v[0].path, "/a"),
	      "old table alive while held");
	exports_release(held);
	held = exports_acquire(&s);
	CHECK(held == t2, "new table after replace");
	exports_release(held);
	exports_replace(&s, NULL);
	CHECK(exports_acquire(&s) == NULL, "no table after final replace");
	pthread_mutex_destroy(&s.exports_lock);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	setup();
	test_good_file();
	test_errors();
	test_matching();
	test_squash();
	test_specs();
	test_idmap_option();
	test_zerocopy_option();
	test_fsid_stability();
	test_refcount();
	cleanup();
	TEST_EXIT();
}
