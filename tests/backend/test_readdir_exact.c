/* The "exact" mark of the POSIX backend's plain readdir: an exact entry's
 * fileid and type equal a lookup's, "." and ".." are never exact, neither
 * are the names of a directory the caller cannot search, nor those of a
 * directory holding a mount point (a mount made or removed while the
 * export is open is noticed). Skipped where the file system under /tmp is
 * not one the backend trusts, and the mount checks where mounting is not
 * allowed. */
#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
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
	int entries, exact, dots_exact, mismatches;
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
	if (!e->exact)
		return 0;
	s->exact++;
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		s->dots_exact++;
		return 0;
	}
	if (ops->lookup(ex, s->cr, s->dir, name, &h, &a) != 0 ||
	    a.fileid != e->fileid || a.type != e->type)
		s->mismatches++;
	return 0;
}

static int list(const struct bk_cred *cr, const struct bk_handle *dir,
                struct seen *s)
{
	bool eof = false;
	int rc;

	memset(s, 0, sizeof(*s));
	s->cr = cr;
	s->dir = dir;
	rc = ops->readdir(ex, cr, dir, 0, check_entry, s, &eof);
	return rc == 0 && eof ? 0 : -1;
}

static bool trusted_fs(const char *path)
{
	struct statfs sf;

	if (statfs(path, &sf) != 0)
		return false;
	return sf.f_type == EXT4_SUPER_MAGIC || sf.f_type == XFS_SUPER_MAGIC ||
	       sf.f_type == TMPFS_MAGIC || sf.f_type == F2FS_SUPER_MAGIC;
}

static void mount_checks(const char *base, const struct bk_handle *dir)
{
	char mnt[300];
	struct seen s;

	snprintf(mnt, sizeof(mnt), "%s/m/under", base);
	if (mount("none", mnt, "tmpfs", 0, NULL) != 0) {
		printf("ok - # SKIP mount checks (mount: %s)\n",
		       strerror(errno));
		return;
	}
	CHECK(list(&root_cr, dir, &s) == 0 && s.entries == 5 && s.exact == 0,
	      "a directory holding a mount point has no exact names");
	CHECK(umount(mnt) == 0, "umount");
	CHECK(list(&root_cr, dir, &s) == 0 && s.exact == 3 && s.mismatches == 0,
	      "exact again once the mount is gone");
}

int main(void)
{
	char base[] = "/tmp/snfs-rdexact.XXXXXX", path[300];
	struct bk_handle root, sub, m, x;
	struct bk_attr a;
	struct bk_setattr sa = {.mask = BK_SET_MODE, .mode = 0744};
	struct seen s;

	if (!mkdtemp(base)) {
		printf("not ok - mkdtemp\n");
		return 1;
	}
	if (!trusted_fs(base)) {
		printf("ok - # SKIP %s is not ext4, xfs, tmpfs or f2fs\n",
		       base);
		rmdir(base);
		TEST_EXIT();
	}
	CHECK(ops->export_open(base, &ex) == 0, "export open");
	CHECK(ops->root(ex, &root) == 0, "root handle");
	for (int i = 0; i < 200; i++) {
		snprintf(path, sizeof(path), "f%03d", i);
		ops->create(ex, &root_cr, &root, path, BK_CREATE_GUARDED, NULL,
		            NULL, &x, &a);
	}
	ops->mkdir(ex, &root_cr, &root, "d", NULL, &x, &a);
	ops->symlink(ex, &root_cr, &root, "l", "/etc/passwd", NULL, &x, &a);

	CHECK(list(&root_cr, &root, &s) == 0 && s.entries == 204,
	      "readdir lists the whole directory");
	CHECK(s.exact == 202 && s.dots_exact == 0,
	      "every name but . and .. is exact");
	CHECK(s.mismatches == 0, "exact fileid and type equal a lookup's");

	/* 0744: uid 1000 may read the directory, not search it */
	ops->mkdir(ex, &root_cr, &root, "nox", NULL, &sub, &a);
	ops->create(ex, &root_cr, &sub, "inside", BK_CREATE_GUARDED, NULL, NULL,
	            &x, &a);
	ops->setattr(ex, &root_cr, &sub, &sa, &a);
	CHECK(list(&u1000, &sub, &s) == 0 && s.entries == 3 && s.exact == 0,
	      "no search permission: no exact names");
	CHECK(list(&root_cr, &sub, &s) == 0 && s.exact == 1 &&
	          s.mismatches == 0,
	      "the same directory is exact for root");

	/* m holds under (a mount point to be), a file and a symlink */
	ops->mkdir(ex, &root_cr, &root, "m", NULL, &m, &a);
	ops->mkdir(ex, &root_cr, &m, "under", NULL, &x, &a);
	ops->create(ex, &root_cr, &m, "file", BK_CREATE_GUARDED, NULL, NULL, &x,
	            &a);
	ops->symlink(ex, &root_cr, &m, "link", "file", NULL, &x, &a);
	CHECK(list(&root_cr, &m, &s) == 0 && s.exact == 3 && s.mismatches == 0,
	      "no mount yet: all three names exact");
	mount_checks(base, &m);

	ops->export_close(ex);
	snprintf(path, sizeof(path), "rm -rf %s", base);
	if (system(path) != 0)
		printf("# cleanup of %s failed\n", base);
	TEST_EXIT();
}
