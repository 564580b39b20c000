/* readdir_plus of the POSIX backend: every entry's handle and attributes
 * equal what a lookup gives, "." and ".." are left to the caller, and a
 * client without search permission gets names only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "backend/backend.h"

static const struct bk_ops *ops = &bk_posix_ops;
static struct bk_export *ex;
static const struct bk_cred root_cr = {.uid = 0, .gid = 0};
static const struct bk_cred u1000 = {.uid = 1000, .gid = 1000};

struct seen {
	const struct bk_cred *cr;
	const struct bk_handle *dir;
	int entries, with_plus, dots_plus, mismatches;
};

static int check_entry(void *arg, const struct bk_dirent *e)
{
	struct seen *s = arg;
	char name[BK_NAME_MAX + 1];
	struct bk_handle h;
	struct bk_attr a;

	memcpy(name, e->name, e->namelen);
	name[e->namelen] = 0;
	s->entries++;
	if (!e->handle || !e->attr)
		return 0;
	s->with_plus++;
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		s->dots_plus++;
		return 0;
	}
	if (ops->lookup(ex, s->cr, s->dir, name, &h, &a) != 0 ||
	    h.len != e->handle->len || memcmp(h.data, e->handle->data, h.len) ||
	    a.fileid != e->attr->fileid || a.type != e->attr->type ||
	    a.size != e->attr->size || a.mode != e->attr->mode ||
	    a.fileid != e->fileid)
		s->mismatches++;
	return 0;
}

int main(void)
{
	char base[] = "/tmp/snfs-rdplus.XXXXXX", path[256];
	struct bk_handle root, sub;
	struct bk_attr a;
	struct bk_setattr sa = {.mask = BK_SET_MODE, .mode = 0700};
	struct seen s;
	bool eof = false;

	if (!mkdtemp(base)) {
		printf("not ok - mkdtemp\n");
		return 1;
	}
	CHECK(ops->export_open(base, &ex) == 0, "export open");
	CHECK(ops->root(ex, &root) == 0, "root handle");
	for (int i = 0; i < 300; i++) {
		snprintf(path, sizeof(path), "f%03d", i);
		ops->create(ex, &root_cr, &root, path, BK_CREATE_GUARDED, NULL,
		            NULL, &sub, &a);
	}
	ops->mkdir(ex, &root_cr, &root, "d", NULL, &sub, &a);
	ops->symlink(ex, &root_cr, &root, "l", "/etc/passwd", NULL, &sub, &a);

	memset(&s, 0, sizeof(s));
	s.cr = &root_cr;
	s.dir = &root;
	CHECK(ops->readdir_plus(ex, &root_cr, &root, 0, check_entry, &s,
	                        &eof) == 0 && eof,
	      "readdir_plus lists the whole directory");
	CHECK(s.entries == 304, "every entry seen (300 files, d, l, ., ..)");
	CHECK(s.with_plus == 302 && s.dots_plus == 0,
	      "handle and attributes for every name but . and ..");
	CHECK(s.mismatches == 0, "handles and attributes equal a lookup's");

	memset(&s, 0, sizeof(s));
	s.cr = &root_cr;
	s.dir = &root;
	CHECK(ops->readdir(ex, &root_cr, &root, 0, check_entry, &s, &eof) == 0 &&
	          s.entries == 304 && s.with_plus == 0,
	      "plain readdir carries no handles");

	/* 0744 directory owned by root: uid 1000 may read it, not search it */
	ops->mkdir(ex, &root_cr, &root, "nox", &sa, &sub, &a);
	ops->create(ex, &root_cr, &sub, "inside", BK_CREATE_GUARDED, NULL, NULL,
	            &root, &a);
	ops->root(ex, &root);
	sa.mode = 0744;
	ops->setattr(ex, &root_cr, &sub, &sa, &a);
	memset(&s, 0, sizeof(s));
	s.cr = &u1000;
	s.dir = &sub;
	CHECK(ops->readdir_plus(ex, &u1000, &sub, 0, check_entry, &s, &eof) ==
	              0 &&
	          s.entries == 3 && s.with_plus == 0,
	      "no search permission: names without handles or attributes");

	ops->export_close(ex);
	snprintf(path, sizeof(path), "rm -rf %s", base);
	if (system(path) != 0)
		printf("# cleanup of %s failed\n", base);
	TEST_EXIT();
}
