/* Namespace changes and attribute setting of the POSIX backend.
 *
 * Each call opens its handles as the server, then runs the changing system
 * call under the client's credentials so that the kernel enforces
 * permissions, sticky and set-group-ID directories, and the ownership of
 * what is created. Changed directories are fsync'ed before returning:
 * RFC 1813 section 3.3 (and the WRITE/COMMIT discussion of section 4.8)
 * requires the server to make modifications stable before replying.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend/posix_int.h"

#define DEFAULT_FILE_MODE 0644
#define DEFAULT_DIR_MODE 0755
#define EXCL_FILE_MODE 0600

static void proc_path(char *buf, size_t sz, int fd)
{
	snprintf(buf, sz, "/proc/self/fd/%d", fd);
}

/* Size changes need a writable fd, which only the server can open by
 * handle: opened before taking the client's credentials. */
static int setattr_size_check(const struct stat *st)
{
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	return 0;
}

static struct timespec time_arg(const struct bk_setattr *sa, uint32_t set,
                                uint32_t now, const struct timespec *t)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = UTIME_OMIT};

	if (sa->mask & now)
		ts.tv_nsec = UTIME_NOW;
	else if (sa->mask & set)
		ts = *t;
	return ts;
}

/* Under the client's credentials, in the order that keeps what was asked:
 * chown first (it clears set-id bits), then mode, size, and the times last
 * (a size change moves mtime). Linux cannot chmod a symlink; as nfsd does,
 * the mode of one is ignored. */
static int setattr_as_client(int fd, const struct stat *st,
                             const struct bk_cred *cr,
                             const struct bk_setattr *sa, int iofd)
{
	char path[64];
	uint32_t m = sa->mask;
	int rc = 0;

	if (m & (BK_SET_UID | BK_SET_GID)) {
		uid_t uid = (m & BK_SET_UID) ? sa->uid : (uid_t)-1;
		gid_t gid = (m & BK_SET_GID) ? sa->gid : (gid_t)-1;

		if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH) != 0)
			return -errno;
	}
	if ((m & BK_SET_MODE) && !S_ISLNK(st->st_mode)) {
		proc_path(path, sizeof(path), fd);
		if (fchmodat(AT_FDCWD, path, sa->mode & 07777, 0) != 0)
			return -errno;
	}
	if (m & BK_SET_SIZE) {
		rc = posix_io_permitted(iofd, st, cr, W_OK);
		if (rc == 0 && ftruncate(iofd, (off_t)sa->size) != 0)
			rc = -errno;
		if (rc != 0)
			return rc;
	}
	if (m & (BK_SET_ATIME | BK_SET_ATIME_NOW | BK_SET_MTIME |
	         BK_SET_MTIME_NOW)) {
		struct timespec ts[2];

		ts[0] =
		    time_arg(sa, BK_SET_ATIME, BK_SET_ATIME_NOW, &sa->atime);
		ts[1] =
		    time_arg(sa, BK_SET_MTIME, BK_SET_MTIME_NOW, &sa->mtime);
		if (utimensat(fd, "", ts, AT_EMPTY_PATH) != 0)
			return -errno;
	}
	return 0;
}

/* SETATTR is answered once the change is stable (RFC 1813 section 3.3.2
 * with 4.8). Regular files and directories are fsync'ed through a real
 * fd (iofd if the caller has one); the few attributes of symlinks and
 * special files are left to the file system's journal. */
static int sync_object(struct bk_export *ex, const struct bk_handle *h,
                       const struct stat *st, int iofd)
{
	struct fd_ref ref;
	struct stat now;
	int fd, rc;

	if (S_ISREG(st->st_mode) && iofd >= 0)
		return fsync(iofd) == 0 ? 0 : -errno;
	if (S_ISREG(st->st_mode)) {
		rc = fd_cache_get(ex, h, false, &ref, &now);
		if (rc != 0)
			return rc;
		rc = fsync(ref.fd) == 0 ? 0 : -errno;
		fd_cache_put(ex->fds, &ref);
		return rc;
	}
	if (!S_ISDIR(st->st_mode))
		return 0;
	fd = posix_open(ex, h, O_RDONLY | O_DIRECTORY, &now);
	if (fd < 0)
		return fd;
	rc = posix_commit_dir(fd);
	close(fd);
	return rc;
}

int posix_setattr_fd(struct bk_export *ex, const struct bk_cred *cr,
                     const struct bk_handle *h, int fd, const struct stat *st,
                     const struct bk_setattr *sa)
{
	struct fd_ref ref = {.fd = -1, .slot = NULL};
	struct stat iost;
	int rc;

	if (sa == NULL || sa->mask == 0)
		return 0;
	if (sa->mask & BK_SET_SIZE) {
		rc = setattr_size_check(st);
		if (rc == 0 && sa->size > INT64_MAX)
			rc = -EFBIG;
		if (rc == 0)
			rc = fd_cache_get(ex, h, true, &ref, &iost);
		if (rc != 0)
			return rc;
	}
	rc = cred_enter(cr);
	if (rc == 0) {
		rc = setattr_as_client(fd, st, cr, sa, ref.fd);
		cred_leave();
	}
	if (sa->mask & BK_SET_SIZE)
		hole_map_invalidate(ex->holes, h);
	if (rc == 0)
		rc = sync_object(ex, h, st, ref.fd);
	if (ref.fd >= 0)
		fd_cache_put(ex->fds, &ref);
	return rc;
}

/* The directory of a namespace change, opened readable so that it can be
 * fsync'ed afterwards. */
static int open_dir(struct bk_export *ex, const struct bk_handle *dir)
{
	struct stat st;

	return posix_open(ex, dir, O_RDONLY | O_DIRECTORY, &st);
}

/* Run one namespace system call under cr. */
#define AS_CLIENT(cr, rc, call)                                                \
	do {                                                                   \
		(rc) = cred_enter(cr);                                         \
		if ((rc) == 0) {                                               \
			(rc) = (call) == 0 ? 0 : -errno;                       \
			cred_leave();                                          \
		}                                                              \
	} while (0)

/* After creating name in dfd with mode: the rest of sa, the mode again if
 * the process umask took bits away, durability, and the reply. A set-group-
 * ID bit the kernel gave a new directory is kept. */
static int finish_new(struct bk_export *ex, const struct bk_cred *cr, int dfd,
                      const char *name, int mode, const struct bk_setattr *sa,
                      struct bk_handle *out, struct bk_attr *attr)
{
	struct bk_setattr rest = {0};
	struct stat st;
	int fd, rc;

	fd = posix_open_child(ex, dfd, name, &st);
	if (fd < 0)
		return fd;
	rc = posix_handle_of(fd, "", out);
	if (sa != NULL)
		rest = *sa;
	rest.mask &= ~BK_SET_MODE;
	if (mode >= 0 && !S_ISLNK(st.st_mode) &&
	    (st.st_mode & 07777) != (mode_t)mode) {
		rest.mask |= BK_SET_MODE;
		rest.mode = (uint32_t)mode;
		if (S_ISDIR(st.st_mode))
			rest.mode |= st.st_mode & S_ISGID;
	}
	if (rc == 0)
		rc = posix_setattr_fd(ex, cr, out, fd, &st, &rest);
	if (rc == 0)
		rc = posix_commit_dir(dfd);
	if (rc == 0 && attr != NULL) {
		rc = fstat(fd, &st) == 0 ? 0 : -errno;
		if (rc == 0)
			posix_fill_attr(ex, &st, attr);
	}
	close(fd);
	return rc;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* As Linux nfsd: the exclusive-create verifier lives in the seconds of
 * atime (first 4 bytes) and mtime (last 4), high bit cleared so that every
 * file system can hold them. */
static void verf_times(const uint8_t verf[8], struct timespec ts[2])
{
	ts[0].tv_sec = get_be32(verf) & 0x7fffffff;
	ts[0].tv_nsec = 0;
	ts[1].tv_sec = get_be32(verf + 4) & 0x7fffffff;
	ts[1].tv_nsec = 0;
}

/* An existing name met by CREATE. UNCHECKED opens a regular file (only a
 * size in sa applies, as nfsd); EXCLUSIVE succeeds only for the retry of
 * the same create, recognized by its verifier (RFC 1813 section 3.3.8). */
static int create_existing(struct bk_export *ex, const struct bk_cred *cr,
                           int dfd, const char *name, enum bk_create_mode how,
                           const struct bk_setattr *sa, const uint8_t verf[8],
                           struct bk_handle *out, struct bk_attr *attr)
{
	struct bk_setattr size_only = {0};
	struct timespec ts[2];
	struct stat st;
	int fd, rc;

	rc = cred_enter(cr);
	if (rc != 0)
		return rc;
	fd = posix_open_child(ex, dfd, name, &st);
	cred_leave();
	if (fd < 0)
		return fd;
	rc = S_ISREG(st.st_mode) ? 0 : -EEXIST;
	if (rc == 0 && how == BK_CREATE_EXCLUSIVE) {
		verf_times(verf, ts);
		if (st.st_atim.tv_sec != ts[0].tv_sec ||
		    st.st_mtim.tv_sec != ts[1].tv_sec)
			rc = -EEXIST;
	}
	if (rc == 0)
		rc = posix_handle_of(fd, "", out);
	if (rc == 0 && how == BK_CREATE_UNCHECKED && sa != NULL &&
	    (sa->mask & BK_SET_SIZE)) {
		size_only.mask = BK_SET_SIZE;
		size_only.size = sa->size;
		rc = posix_setattr_fd(ex, cr, out, fd, &st, &size_only);
		if (rc == 0 && fstat(fd, &st) != 0)
			rc = -errno;
	}
	if (rc == 0 && attr != NULL)
		posix_fill_attr(ex, &st, attr);
	close(fd);
	return rc;
}

/* mknodat makes a regular file without opening it, so that no open mode
 * has to be checked against a file that may exist (UNCHECKED). */
int posix_create(struct bk_export *ex, const struct bk_cred *cr,
                 const struct bk_handle *dir, const char *name,
                 enum bk_create_mode how, const struct bk_setattr *sa,
                 const uint8_t verf[8], struct bk_handle *out,
                 struct bk_attr *attr)
{
	struct bk_setattr excl = {0};
	int mode = DEFAULT_FILE_MODE;
	int dfd, rc;

	rc = posix_check_name(name);
	if (rc != 0)
		return rc;
	if (posix_is_dot_or_dotdot(name))
		return -EEXIST;
	if (how == BK_CREATE_EXCLUSIVE && verf == NULL)
		return -EINVAL;
	if (how == BK_CREATE_EXCLUSIVE)
		mode = EXCL_FILE_MODE;
	if (sa != NULL && (sa->mask & BK_SET_MODE))
		mode = (int)(sa->mode & 07777);
	dfd = open_dir(ex, dir);
	if (dfd < 0)
		return dfd;
	AS_CLIENT(cr, rc, mknodat(dfd, name, S_IFREG | (mode_t)mode, 0));
	if (rc == -EEXIST && how != BK_CREATE_GUARDED) {
		rc = create_existing(ex, cr, dfd, name, how, sa, verf, out,
		                     attr);
	} else if (rc == 0 && how == BK_CREATE_EXCLUSIVE) {
		struct timespec ts[2];

		verf_times(verf, ts);
		excl.mask = BK_SET_ATIME | BK_SET_MTIME;
		excl.atime = ts[0];
		excl.mtime = ts[1];
		rc = finish_new(ex, cr, dfd, name, mode, &excl, out, attr);
	} else if (rc == 0) {
		rc = finish_new(ex, cr, dfd, name, mode, sa, out, attr);
	}
	close(dfd);
	return rc;
}

int posix_mkdir(struct bk_export *ex, const struct bk_cred *cr,
                const struct bk_handle *dir, const char *name,
                const struct bk_setattr *sa, struct bk_handle *out,
                struct bk_attr *attr)
{
	int mode = DEFAULT_DIR_MODE;
	int dfd, rc;

	rc = posix_check_name(name);
	if (rc != 0)
		return rc;
	if (posix_is_dot_or_dotdot(name))
		return -EEXIST;
	if (sa != NULL && (sa->mask & BK_SET_MODE))
		mode = (int)(sa->mode & 07777);
	dfd = open_dir(ex, dir);
	if (dfd < 0)
		return dfd;
	AS_CLIENT(cr, rc, mkdirat(dfd, name, (mode_t)mode));
	if (rc == 0)
		rc = finish_new(ex, cr, dfd, name, mode, sa, out, attr);
	close(dfd);
	return rc;
}

int posix_symlink(struct bk_export *ex, const struct bk_cred *cr,
                  const struct bk_handle *dir, const char *name,
                  const char *target, const struct bk_setattr *sa,
                  struct bk_handle *out, struct bk_attr *attr)
{
	int dfd, rc;

	rc = posix_check_name(name);
	if (rc != 0)
		return rc;
	if (posix_is_dot_or_dotdot(name))
		return -EEXIST;
	if (target == NULL)
		return -EINVAL;
	if (strnlen(target, BK_PATH_MAX + 1) > BK_PATH_MAX)
		return -ENAMETOOLONG;
	dfd = open_dir(ex, dir);
	if (dfd < 0)
		return dfd;
	AS_CLIENT(cr, rc, symlinkat(target, dfd, name));
	if (rc == 0)
		rc = finish_new(ex, cr, dfd, name, -1, sa, out, attr);
	close(dfd);
	return rc;
}

/* Devices are refused: this backend does not declare BK_CAP_DEVICES. */
int posix_mknod(struct bk_export *ex, const struct bk_cred *cr,
                const struct bk_handle *dir, const char *name,
                enum bk_ftype type, uint32_t major, uint32_t minor,
                const struct bk_setattr *sa, struct bk_handle *out,
                struct bk_attr *attr)
{
	int mode = DEFAULT_FILE_MODE;
	mode_t fmt;
	int dfd, rc;

	(void)major;
	(void)minor;
	if (type == BK_BLK || type == BK_CHR)
		return -EPERM;
	if (type != BK_FIFO && type != BK_SOCK)
		return -EINVAL;
	fmt = type == BK_FIFO ? S_IFIFO : S_IFSOCK;
	rc = posix_check_name(name);
	if (rc != 0)
		return rc;
	if (posix_is_dot_or_dotdot(name))
		return -EEXIST;
	if (sa != NULL && (sa->mask & BK_SET_MODE))
		mode = (int)(sa->mode & 07777);
	dfd = open_dir(ex, dir);
	if (dfd < 0)
		return dfd;
	AS_CLIENT(cr, rc, mknodat(dfd, name, fmt | (mode_t)mode, 0));
	if (rc == 0)
		rc = finish_new(ex, cr, dfd, name, mode, sa, out, attr);
	close(dfd);
	return rc;
}

/* remove and rmdir share this: unlink name under the client's
 * credentials, then drop whatever was cached for the victim. */
static int unlink_common(struct bk_export *ex, const struct bk_cred *cr,
                         const struct bk_handle *dir, const char *name,
                         int flags)
{
	struct bk_handle victim;
	int dfd, rc;

	dfd = open_dir(ex, dir);
	if (dfd < 0)
		return dfd;
	posix_victim_handle(dfd, name, &victim);
	AS_CLIENT(cr, rc, unlinkat(dfd, name, flags));
	if (rc == 0) {
		posix_forget(ex, &victim);
		rc = posix_commit_dir(dfd);
	}
	close(dfd);
	return rc;
}

/* RFC 1813 section 3.3.12. A directory is -EISDIR, as unlinkat says. */
int posix_remove(struct bk_export *ex, const struct bk_cred *cr,
                 const struct bk_handle *dir, const char *name)
{
	int rc = posix_check_name(name);

	if (rc != 0)
		return rc;
	if (posix_is_dot_or_dotdot(name))
		return -EISDIR;
	return unlink_common(ex, cr, dir, name, 0);
}

/* RFC 1813 section 3.3.13: "." is INVAL, ".." is not empty. */
int posix_rmdir(struct bk_export *ex, const struct bk_cred *cr,
                const struct bk_handle *dir, const char *name)
{
	int rc = posix_check_name(name);

	if (rc != 0)
		return rc;
	if (strcmp(name, ".") == 0)
		return -EINVAL;
	if (strcmp(name, "..") == 0)
		return -ENOTEMPTY;
	return unlink_common(ex, cr, dir, name, AT_REMOVEDIR);
}

static bool same_handle(const struct bk_handle *a, const struct bk_handle *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

/* RFC 1813 section 3.3.14. Both directories are in this export (the
 * protocol layer checks); "." and ".." are never renamed or replaced. */
int posix_rename(struct bk_export *ex, const struct bk_cred *cr,
                 const struct bk_handle *fromdir, const char *fromname,
                 const struct bk_handle *todir, const char *toname)
{
	struct bk_handle victim;
	int ffd, tfd, rc;

	rc = posix_check_name(fromname);
	if (rc == 0)
		rc = posix_check_name(toname);
	if (rc != 0)
		return rc;
	if (posix_is_dot_or_dotdot(fromname) || posix_is_dot_or_dotdot(toname))
		return -EINVAL;
	ffd = open_dir(ex, fromdir);
	if (ffd < 0)
		return ffd;
	tfd = open_dir(ex, todir);
	if (tfd < 0) {
		close(ffd);
		return tfd;
	}
	posix_victim_handle(tfd, toname, &victim);
	AS_CLIENT(cr, rc, renameat(ffd, fromname, tfd, toname));
	if (rc == 0) {
		posix_forget(ex, &victim);
		rc = posix_commit_dir(tfd);
		if (rc == 0 && !same_handle(fromdir, todir))
			rc = posix_commit_dir(ffd);
	}
	close(tfd);
	close(ffd);
	return rc;
}

/* RFC 1813 section 3.3.15. linkat(AT_EMPTY_PATH) would need
 * CAP_DAC_READ_SEARCH, which the client's credentials lack; linking
 * through /proc/self/fd needs nothing but what the kernel checks for the
 * client (write and search on dir, and the protected_hardlinks rules). */
int posix_link(struct bk_export *ex, const struct bk_cred *cr,
               const struct bk_handle *h, const struct bk_handle *dir,
               const char *name)
{
	char path[64];
	struct stat st;
	int fd, dfd, rc;

	rc = posix_check_name(name);
	if (rc != 0)
		return rc;
	if (posix_is_dot_or_dotdot(name))
		return -EEXIST;
	fd = posix_open(ex, h, O_PATH, &st);
	if (fd < 0)
		return fd;
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return -EPERM;
	}
	dfd = open_dir(ex, dir);
	if (dfd < 0) {
		close(fd);
		return dfd;
	}
	proc_path(path, sizeof(path), fd);
	AS_CLIENT(cr, rc, linkat(AT_FDCWD, path, dfd, name, AT_SYMLINK_FOLLOW));
	if (rc == 0)
		rc = posix_commit_dir(dfd);
	close(dfd);
	close(fd);
	return rc;
}
