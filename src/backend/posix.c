/* The local POSIX file system as a snfsd backend: exports, handles,
 * attributes, lookup, access and I/O. Namespace changes are in posix_ns.c,
 * directory listing in dircursor.c.
 *
 * Handles are the file system's own (name_to_handle_at): stable across
 * restarts, and -ESTALE once the object is gone. A bk_handle holds the
 * handle type (4 bytes, little endian) and then the f_handle bytes.
 * Symlinks are never followed: objects are opened with O_PATH|O_NOFOLLOW
 * or by handle, and *at calls use AT_SYMLINK_NOFOLLOW or AT_EMPTY_PATH.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backend/posix_copy.h"
#include "backend/posix_int.h"
#include "util/cachestat.h"

#define HANDLE_TYPE_LEN 4
#define FH_BYTES_MAX (BK_HANDLE_MAX - HANDLE_TYPE_LEN)

/* struct file_handle ends in a flexible array; this gives it room. */
struct fh_buf {
	struct file_handle fh;
	unsigned char room[FH_BYTES_MAX];
};

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int posix_handle_of(int fd, const char *name, struct bk_handle *out)
{
	struct fh_buf f;
	int mount_id;
	int flags = name[0] ? 0 : AT_EMPTY_PATH;

	f.fh.handle_bytes = FH_BYTES_MAX;
	if (name_to_handle_at(fd, name, &f.fh, &mount_id, flags) != 0)
		return -errno;
	if (f.fh.handle_bytes == 0 || f.fh.handle_bytes > FH_BYTES_MAX ||
	    f.fh.handle_type < 0)
		return -EOVERFLOW;
	memset(out, 0, sizeof(*out));
	out->len = HANDLE_TYPE_LEN + f.fh.handle_bytes;
	put_le32(out->data, (uint32_t)f.fh.handle_type);
	memcpy(out->data + HANDLE_TYPE_LEN, f.fh.f_handle, f.fh.handle_bytes);
	return 0;
}

/* Types are small numbers (FILEID_*, 0xff is FILEID_INVALID) plus at most
 * the two user flag bits of newer kernels. */
static int decode_handle(const struct bk_handle *h, struct fh_buf *f)
{
	uint32_t type;

	if (h == NULL || h->len <= HANDLE_TYPE_LEN || h->len > BK_HANDLE_MAX)
		return -EBADF;
	type = get_le32(h->data);
	if (type > 0x3ffff || (type & 0xffff) >= 0xff)
		return -EBADF;
	f->fh.handle_type = (int)type;
	f->fh.handle_bytes = h->len - HANDLE_TYPE_LEN;
	memcpy(f->fh.f_handle, h->data + HANDLE_TYPE_LEN, f->fh.handle_bytes);
	return 0;
}

/* An object that is deleted but still open somewhere (our fd cache, a
 * local process) can still be opened by handle: nlink 0 says it is gone. */
static int check_opened(struct bk_export *ex, int fd, struct stat *st)
{
	if (fstat(fd, st) != 0)
		return -errno;
	if (st->st_dev != ex->dev)
		return -EXDEV;
	if (st->st_nlink == 0)
		return -ESTALE;
	return 0;
}

int posix_open(struct bk_export *ex, const struct bk_handle *h, int flags,
               struct stat *st)
{
	struct fh_buf f;
	int fd, rc;

	rc = decode_handle(h, &f);
	if (rc != 0)
		return rc;
	fd = open_by_handle_at(ex->root_fd, &f.fh, flags | O_CLOEXEC);
	if (fd < 0) {
		rc = errno;
		/* The file system found the handle malformed. */
		if (rc == EINVAL)
			return -EBADF;
		/* A symlink opened as a directory. */
		if (rc == ELOOP && (flags & O_DIRECTORY))
			return -ENOTDIR;
		return -rc;
	}
	rc = check_opened(ex, fd, st);
	if (rc != 0) {
		close(fd);
		return rc;
	}
	return fd;
}

/* A mount point inside the export leads to another device: -EXDEV (the
 * protocol layer answers ACCES). snfsd does not cross mounts, and cannot
 * name the directory underneath the mount. */
int posix_open_child(struct bk_export *ex, int dirfd, const char *name,
                     struct stat *st)
{
	int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return -errno;
	rc = check_opened(ex, fd, st);
	if (rc != 0) {
		close(fd);
		return rc;
	}
	return fd;
}

static enum bk_ftype ftype_of(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return BK_REG;
	case S_IFDIR:
		return BK_DIR;
	case S_IFBLK:
		return BK_BLK;
	case S_IFCHR:
		return BK_CHR;
	case S_IFLNK:
		return BK_LNK;
	case S_IFSOCK:
		return BK_SOCK;
	default:
		return BK_FIFO;
	}
}

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

void posix_fill_attr(const struct bk_export *ex, const struct stat *st,
                     struct bk_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->type = ftype_of(st->st_mode);
	a->mode = st->st_mode & 07777;
	a->nlink = (uint32_t)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->size = (uint64_t)st->st_size;
	a->used = (uint64_t)st->st_blocks * 512;
	a->rdev_major = major(st->st_rdev);
	a->rdev_minor = minor(st->st_rdev);
	a->fsid = (uint64_t)ex->dev;
	a->fileid = st->st_ino;
	a->atime = st->st_atim;
	a->mtime = st->st_mtim;
	a->ctime = st->st_ctim;
	/* ctime moves on every data or metadata change. */
	a->change = ts_ns(&st->st_ctim);
}

int posix_check_name(const char *name)
{
	size_t len;

	if (name == NULL || name[0] == '\0')
		return -EINVAL;
	len = strnlen(name, BK_NAME_MAX + 1);
	if (len > BK_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) != NULL)
		return -EINVAL;
	return 0;
}

bool posix_is_dot_or_dotdot(const char *name)
{
	return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

int posix_commit_dir(int dirfd)
{
	return fsync(dirfd) == 0 ? 0 : -errno;
}

void posix_victim_handle(int dirfd, const char *name, struct bk_handle *h)
{
	if (posix_handle_of(dirfd, name, h) != 0)
		memset(h, 0, sizeof(*h));
}

void posix_forget(struct bk_export *ex, const struct bk_handle *h)
{
	if (h->len == 0)
		return;
	fd_cache_forget(ex->fds, h);
	dir_cursor_forget(ex->dirs, h);
	hole_map_invalidate(ex->holes, h);
}

/* Mode bits alone, for kernels without faccessat2 (before 5.8): glibc's
 * emulation would judge the effective uid, not the fsuid. */
static int access_by_mode(const struct stat *st, const struct bk_cred *cr,
                          int want)
{
	unsigned bits;
	bool member = cr->gid == st->st_gid;

	if (cr->uid == 0) {
		if (!(want & X_OK) || S_ISDIR(st->st_mode) ||
		    (st->st_mode & 0111))
			return 0;
		return -EACCES;
	}
	for (uint32_t i = 0; i < cr->ngids && i < BK_MAX_GIDS; i++)
		member = member || cr->gids[i] == st->st_gid;
	if (cr->uid == st->st_uid)
		bits = (st->st_mode >> 6) & 7;
	else if (member)
		bits = (st->st_mode >> 3) & 7;
	else
		bits = st->st_mode & 7;
	return ((unsigned)want & ~bits) ? -EACCES : 0;
}

int posix_access_fd(int fd, const struct stat *st, const struct bk_cred *cr,
                    int want)
{
	static const char empty[] = "";

	if (syscall(SYS_faccessat2, fd, empty, want,
	            AT_EACCESS | AT_EMPTY_PATH) == 0)
		return 0;
	if (errno == ENOSYS)
		return access_by_mode(st, cr, want);
	return -errno;
}

/* NFS lets the owner read and write whatever the mode says (Linux nfsd's
 * NFSD_MAY_OWNER_OVERRIDE): a client creating a 0444 file writes it
 * afterwards. Reading is also allowed with execute permission alone, so
 * that a client can page in a program it may only run. */
int posix_io_permitted(int fd, const struct stat *st, const struct bk_cred *cr,
                       int want)
{
	int rc;

	if (cr->uid == st->st_uid)
		return 0;
	rc = posix_access_fd(fd, st, cr, want);
	if (rc == -EACCES && want == R_OK)
		rc = posix_access_fd(fd, st, cr, X_OK);
	return rc;
}

static int px_export_open(const char *path, struct bk_export **out)
{
	struct bk_export *ex = calloc(1, sizeof(*ex));
	struct stat st;
	int rc, fd;

	if (ex == NULL)
		return -ENOMEM;
	/* mount_fd may not be O_PATH: the kernel takes it with fdget(). */
	ex->root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ex->root_fd < 0) {
		rc = -errno;
		goto err_free;
	}
	rc = -errno;
	if (fstat(ex->root_fd, &st) != 0)
		goto err_close;
	ex->dev = st.st_dev;
	ex->root_ino = st.st_ino;
	rc = posix_handle_of(ex->root_fd, "", &ex->root);
	if (rc != 0)
		goto err_close;
	/* Fails without CAP_DAC_READ_SEARCH: better now than per call. */
	fd = posix_open(ex, &ex->root, O_PATH, &st);
	if (fd < 0) {
		rc = fd;
		goto err_close;
	}
	close(fd);
	rc = fd_cache_new(&ex->fds);
	if (rc != 0)
		goto err_close;
	rc = dir_cursor_cache_new(&ex->dirs);
	if (rc != 0)
		goto err_fds;
	rc = hole_map_cache_new(&ex->holes);
	if (rc != 0)
		goto err_dirs;
	(void)posix_merge_gap(); /* timed now, not in the first READ_PLUS */
	*out = ex;
	return 0;
err_dirs:
	dir_cursor_cache_free(ex->dirs);
err_fds:
	fd_cache_free(ex->fds);
err_close:
	close(ex->root_fd);
err_free:
	free(ex);
	return rc;
}

static void px_export_close(struct bk_export *ex)
{
	if (ex == NULL)
		return;
	hole_map_cache_free(ex->holes);
	dir_cursor_cache_free(ex->dirs);
	fd_cache_free(ex->fds);
	close(ex->root_fd);
	free(ex);
}

static int px_root(struct bk_export *ex, struct bk_handle *out)
{
	*out = ex->root;
	return 0;
}

static int px_getattr(struct bk_export *ex, const struct bk_handle *h,
                      struct bk_attr *attr)
{
	struct stat st;
	int fd = posix_open(ex, h, O_PATH, &st);

	if (fd < 0)
		return fd;
	close(fd);
	posix_fill_attr(ex, &st, attr);
	return 0;
}

static int px_setattr(struct bk_export *ex, const struct bk_cred *cr,
                      const struct bk_handle *h, const struct bk_setattr *sa,
                      struct bk_attr *after)
{
	struct stat st;
	int fd = posix_open(ex, h, O_PATH, &st);
	int rc;

	if (fd < 0)
		return fd;
	rc = posix_setattr_fd(ex, cr, h, fd, &st, sa);
	if (rc == 0 && after != NULL) {
		rc = fstat(fd, &st) == 0 ? 0 : -errno;
		if (rc == 0)
			posix_fill_attr(ex, &st, after);
	}
	close(fd);
	return rc;
}

static bool is_export_root(const struct bk_export *ex, const struct stat *st)
{
	return st->st_dev == ex->dev && st->st_ino == ex->root_ino;
}

/* RFC 1813 section 3.3.3. Searching needs execute permission on the
 * directory, which openat checks under the client's credentials. */
static int px_lookup(struct bk_export *ex, const struct bk_cred *cr,
                     const struct bk_handle *dir, const char *name,
                     struct bk_handle *out, struct bk_attr *attr)
{
	struct stat dst, st;
	int dfd, fd, rc;

	rc = posix_check_name(name);
	if (rc != 0)
		return rc;
	dfd = posix_open(ex, dir, O_PATH, &dst);
	if (dfd < 0)
		return dfd;
	if (!S_ISDIR(dst.st_mode)) {
		close(dfd);
		return -ENOTDIR;
	}
	/* Nothing above the export root is ever reached. */
	if (strcmp(name, "..") == 0 && is_export_root(ex, &dst))
		name = ".";
	rc = cred_enter(cr);
	if (rc != 0) {
		close(dfd);
		return rc;
	}
	fd = posix_open_child(ex, dfd, name, &st);
	cred_leave();
	close(dfd);
	if (fd < 0)
		return fd;
	rc = posix_handle_of(fd, "", out);
	close(fd);
	if (rc == 0 && attr != NULL)
		posix_fill_attr(ex, &st, attr);
	return rc;
}

/* Which access bits each permission grants, as Linux nfsd's tables: a
 * directory is modified, extended and emptied by writing and searching it. */
static uint32_t access_granted(bool dir, bool r, bool w, bool x)
{
	uint32_t g = r ? BK_ACCESS_READ : 0;

	if (dir) {
		if (x)
			g |= BK_ACCESS_LOOKUP;
		if (w && x)
			g |= BK_ACCESS_MODIFY | BK_ACCESS_EXTEND |
			     BK_ACCESS_DELETE;
	} else {
		if (x)
			g |= BK_ACCESS_EXECUTE;
		if (w)
			g |= BK_ACCESS_MODIFY | BK_ACCESS_EXTEND;
	}
	return g;
}

/* RFC 1813 section 3.3.4 */
static int px_access(struct bk_export *ex, const struct bk_cred *cr,
                     const struct bk_handle *h, uint32_t want,
                     uint32_t *granted)
{
	struct stat st;
	bool r, w, x;
	int fd = posix_open(ex, h, O_PATH, &st);
	int rc;

	if (fd < 0)
		return fd;
	rc = cred_enter(cr);
	if (rc != 0) {
		close(fd);
		return rc;
	}
	r = posix_access_fd(fd, &st, cr, R_OK) == 0;
	w = posix_access_fd(fd, &st, cr, W_OK) == 0;
	x = posix_access_fd(fd, &st, cr, X_OK) == 0;
	cred_leave();
	close(fd);
	*granted = want & access_granted(S_ISDIR(st.st_mode), r, w, x);
	return 0;
}

/* Returns the length of the target, which is also NUL-terminated. */
static int px_readlink(struct bk_export *ex, const struct bk_cred *cr,
                       const struct bk_handle *h, char *buf, size_t bufsz)
{
	struct stat st;
	ssize_t n;
	int fd = posix_open(ex, h, O_PATH, &st);

	(void)cr; /* reading a link needs no permission */
	if (fd < 0)
		return fd;
	if (!S_ISLNK(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	n = readlinkat(fd, "", buf, bufsz);
	close(fd);
	if (n < 0)
		return -errno;
	if ((size_t)n >= bufsz)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return (int)n;
}

/* Read permission granted by the kernel, remembered per worker thread so
 * that a client reading a file it does not own in many calls pays the
 * credential switch and access check (seven system calls) once, not per
 * call. A grant is for one inode as it was: its mode, owner, group and
 * ctime, and one credential. chmod, chown and ACL changes all move ctime
 * (or the mode), so they end the grant; to be sure a change within the
 * same timestamp tick cannot go unseen, only inodes whose ctime is some
 * seconds old are remembered. Denials are never remembered. */
#define READ_GRANTS 8
#define GRANT_SETTLE_S 2

struct read_grant {
	bool valid;
	dev_t dev;
	ino_t ino;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	struct timespec ctime;
	struct bk_cred cr;
};

static _Thread_local struct read_grant grants[READ_GRANTS];
static _Thread_local unsigned grant_next;

static bool same_cred(const struct bk_cred *a, const struct bk_cred *b)
{
	uint32_t n = a->ngids > BK_MAX_GIDS ? BK_MAX_GIDS : a->ngids;

	return a->uid == b->uid && a->gid == b->gid && a->ngids == b->ngids &&
	       memcmp(a->gids, b->gids, n * sizeof(a->gids[0])) == 0;
}

static bool grant_matches(const struct read_grant *g, const struct stat *st,
                          const struct bk_cred *cr)
{
	return g->valid && g->ino == st->st_ino && g->dev == st->st_dev &&
	       g->mode == st->st_mode && g->uid == st->st_uid &&
	       g->gid == st->st_gid && g->ctime.tv_sec == st->st_ctim.tv_sec &&
	       g->ctime.tv_nsec == st->st_ctim.tv_nsec && same_cred(&g->cr, cr);
}

static bool read_granted(const struct stat *st, const struct bk_cred *cr)
{
	for (int i = 0; i < READ_GRANTS; i++)
		if (grant_matches(&grants[i], st, cr))
			return true;
	return false;
}

/* Remember a grant if st's ctime is settled (see above). */
static void read_grant_keep(const struct stat *st, const struct bk_cred *cr)
{
	struct read_grant *g;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	if (st->st_ctim.tv_sec > now.tv_sec - GRANT_SETTLE_S)
		return;
	g = &grants[grant_next++ % READ_GRANTS];
	g->valid = true;
	g->dev = st->st_dev;
	g->ino = st->st_ino;
	g->mode = st->st_mode;
	g->uid = st->st_uid;
	g->gid = st->st_gid;
	g->ctime = st->st_ctim;
	g->cr = *cr;
}

/* May cr read the file open as fd (fresh stat st)? The owner always may
 * (posix_io_permitted); others as the kernel says, or said before. */
int posix_read_permitted(int fd, const struct stat *st,
                         const struct bk_cred *cr)
{
	int rc;

	if (cr->uid == st->st_uid || read_granted(st, cr))
		return 0;
	rc = cred_enter(cr);
	if (rc != 0)
		return rc;
	rc = posix_io_permitted(fd, st, cr, R_OK);
	cred_leave();
	if (rc == 0)
		read_grant_keep(st, cr);
	return rc;
}

/* The cached fd of h for a read by cr: 0 with *ref held, or -errno. */
static int read_fd_get(struct bk_export *ex, const struct bk_cred *cr,
                       const struct bk_handle *h, struct fd_ref *ref,
                       struct stat *st)
{
	int rc = fd_cache_get(ex, h, false, ref, st);

	if (rc != 0)
		return rc;
	rc = posix_read_permitted(ref->fd, st, cr);
	if (rc != 0)
		fd_cache_put(ex->fds, ref);
	return rc;
}

/* The read of px_read and px_read_attr; after (may be NULL) gets the
 * attributes from an fstat after the read, or the ones before it if that
 * fails (on an open fd it cannot, short of EIO). */
static ssize_t read_iov(struct bk_export *ex, const struct bk_cred *cr,
                        const struct bk_handle *h, const struct iovec *iov,
                        int iovcnt, uint64_t off, bool *eof,
                        struct bk_attr *after)
{
	struct fd_ref ref;
	struct stat st;
	size_t count = 0;
	ssize_t n;
	int rc;

	for (int i = 0; i < iovcnt; i++)
		count += iov[i].iov_len;
	if (count > SSIZE_MAX)
		return -EINVAL;
	rc = read_fd_get(ex, cr, h, &ref, &st);
	if (rc != 0)
		return rc;
	if (off >= (uint64_t)st.st_size || off > INT64_MAX) {
		n = 0;
	} else {
		do
			n = preadv(ref.fd, iov, iovcnt, (off_t)off);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			n = -errno;
	}
	if (n >= 0)
		*eof = (size_t)n < count ||
		       off + (uint64_t)n >= (uint64_t)st.st_size;
	if (n >= 0 && after != NULL) {
		struct stat post;

		/* A read of nothing changed nothing: the attributes just
		 * taken stand. */
		if (n > 0 && fstat(ref.fd, &post) == 0)
			st = post;
		posix_fill_attr(ex, &st, after);
	}
	fd_cache_put(ex->fds, &ref);
	return n;
}

/* ---- read_pieces ----
 *
 * A READ_PLUS reply of a file alternating 4 KiB of data and of hole wants
 * every other page. From the page cache, a read per piece costs a system
 * call per 4 KiB, and where a system call costs more than copying a few
 * pages, pieces go in groups, one read each, while the gap to the next
 * piece is at most posix_merge_gap() (readgap.c: timed at start, 0 to
 * 64 KiB), the gaps read into scratch. Measured (512 MiB seed files, snfs
 * cat, snfsd's CPU, medians of 7, stop 22, a system call ~1.8 us): with
 * a read per piece, mixed-4d 0.188 s / 0.19 s of CPU and mixed-8d
 * 0.184 s / 0.14 s; grouping gaps up to 16 KiB, 0.151 s / 0.10 s and
 * 0.156 s / 0.10 s. On stop 24's machine (a call ~0.3 us) a read per
 * piece was 8-10% faster on mixed-4d and 8d than 16 KiB groups.
 * From the disk, reads that skip every other page defeat readahead (a
 * cold 1 GiB of 4 KiB pieces: 8.3 s against 1.8 s). So pieces are read
 * in groups only where cachestat(2) finds their pages in the cache, and
 * without waiting (RWF_NOWAIT): from the first piece that is not there
 * after all, the rest goes by preadv over the span, gaps up to
 * GAP_SCRATCH included, with the readahead the disk needs. */
#define GAP_SCRATCH POSIX_MERGE_GAP_MAX /* from the disk: wider, new span */
#define SPAN_IOV 1024                   /* IOV_MAX */

/* Whether the pieces' pages look to be in the page cache: as many pages
 * of their span are as they need (a cached hole may stand in for a data
 * page evicted; the read without waiting finds that out). False where
 * cachestat is missing or refused (it wants root or a writer). */
static bool pieces_cached(int fd, const struct bk_piece *pc, int n)
{
	const uint64_t pg = 4096;
	struct util_cachestat cs;
	uint64_t need = 0;

	for (int i = 0; i < n; i++)
		need += (pc[i].off + pc[i].len + pg - 1) / pg - pc[i].off / pg;
	if (!util_cachestat(fd, pc[0].off,
	                    pc[n - 1].off + pc[n - 1].len - pc[0].off, &cs))
		return false;
	return cs.nr_cache >= need;
}

/* Where the gaps of a span are read to, and dropped. */
static _Thread_local uint8_t scratch[GAP_SCRATCH];

struct span {
	struct iovec iov[SPAN_IOV];
	bool gap[SPAN_IOV];
	int n;
	uint64_t off, end; /* the file range the iovecs read */
};

/* One preadv2 of the span (flags: RWF_*). Returns the bytes of its
 * pieces read (not its gaps'), or -errno; *ended when the read came short
 * (the file ended within it, or with RWF_NOWAIT a page was not cached). */
static ssize_t span_read(int fd, struct span *sp, int flags, bool *ended)
{
	size_t want = 0;
	ssize_t got, data = 0;

	for (int i = 0; i < sp->n; i++)
		want += sp->iov[i].iov_len;
	do
		got = preadv2(fd, sp->iov, sp->n, (off_t)sp->off, flags);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	*ended = (size_t)got < want;
	for (int i = 0; i < sp->n && got > 0; i++) {
		size_t k = (size_t)got < sp->iov[i].iov_len
		               ? (size_t)got
		               : sp->iov[i].iov_len;
		if (!sp->gap[i])
			data += (ssize_t)k;
		got -= (ssize_t)k;
	}
	sp->n = 0;
	return data;
}

static void span_add(struct span *sp, void *buf, size_t len, bool gap)
{
	sp->iov[sp->n] = (struct iovec){.iov_base = buf, .iov_len = len};
	sp->gap[sp->n++] = gap;
	sp->end += len;
}

/* The pieces from piece *i on (its first *skip bytes already read), by
 * preadv2 (flags: RWF_*) over spans: gaps up to gap_max are read into
 * scratch, a wider one or a full iovec array starts a new span. Stops at
 * the first short read (the file's end, or with RWF_NOWAIT a page not in
 * the cache) with *i the first piece not read whole and *skip its bytes
 * read; *i == n when all were read. Returns the bytes of the pieces read,
 * or -errno. */
static ssize_t pieces_spans(int fd, const struct bk_piece *pc, int n, int *i,
                            size_t *skip, size_t gap_max, int flags)
{
	struct span span, *sp = &span;
	ssize_t total = 0, got;
	bool ended = false;
	size_t d;
	int j;

	while (*i < n && !ended) {
		sp->n = 0;
		sp->off = sp->end = pc[*i].off + *skip;
		for (j = *i; j < n && sp->n + 2 <= SPAN_IOV; j++) {
			size_t k = j == *i ? *skip : 0;

			if (j > *i && pc[j].off - sp->end > gap_max)
				break;
			if (pc[j].off > sp->end)
				span_add(sp, scratch,
				         (size_t)(pc[j].off - sp->end), true);
			span_add(sp, (uint8_t *)pc[j].buf + k, pc[j].len - k,
			         false);
		}
		got = span_read(fd, sp, flags, &ended);
		if (flags && (got == -EAGAIN || got == -EOPNOTSUPP))
			got = 0, ended = true;
		if (got < 0)
			return got;
		total += got;
		for (d = (size_t)got + *skip; *i < j && d >= pc[*i].len;)
			d -= pc[(*i)++].len;
		*skip = *i < j ? d : 0;
	}
	return total;
}

/* The pieces from the page cache while they are there, in groups with
 * gaps up to posix_merge_gap(), the rest as spans that wait for the disk.
 * Returns the bytes read or -errno. */
static ssize_t pieces_read(int fd, const struct bk_piece *pc, int n,
                           uint64_t size)
{
	ssize_t total, rest;
	size_t skip = 0;
	int i = 0;

	/* One piece has no gap to skip: read as READ reads (a cold file
	 * read without waiting lost 20% on xfs). */
	if (n == 1 || !pieces_cached(fd, pc, n))
		return pieces_spans(fd, pc, n, &i, &skip, GAP_SCRATCH, 0);
	total =
	    pieces_spans(fd, pc, n, &i, &skip, posix_merge_gap(), RWF_NOWAIT);
	if (total < 0 || i == n || pc[i].off + skip >= size)
		return total; /* done, failed, or the end of the file */
	rest = pieces_spans(fd, pc, n, &i, &skip, GAP_SCRATCH, 0);
	return rest < 0 ? rest : total + rest;
}

static ssize_t px_read_pieces(struct bk_export *ex, const struct bk_cred *cr,
                              const struct bk_handle *h,
                              const struct bk_piece *pc, int n, bool *eof)
{
	struct fd_ref ref;
	struct stat st;
	size_t want = 0;
	ssize_t got;
	int rc;

	for (int i = 0; i < n; i++) {
		if (pc[i].len > SSIZE_MAX - want ||
		    (i > 0 && pc[i].off < pc[i - 1].off + pc[i - 1].len))
			return -EINVAL;
		want += pc[i].len;
	}
	rc = read_fd_get(ex, cr, h, &ref, &st);
	if (rc != 0)
		return rc;
	if (n == 0 || pc[0].off >= (uint64_t)st.st_size ||
	    pc[n - 1].off > INT64_MAX - pc[n - 1].len)
		got = 0;
	else
		got = pieces_read(ref.fd, pc, n, (uint64_t)st.st_size);
	if (got >= 0)
		*eof = (size_t)got < want ||
		       (n > 0 &&
		        pc[n - 1].off + pc[n - 1].len >= (uint64_t)st.st_size);
	fd_cache_put(ex->fds, &ref);
	return got;
}

static ssize_t px_read(struct bk_export *ex, const struct bk_cred *cr,
                       const struct bk_handle *h, void *buf, size_t count,
                       uint64_t off, bool *eof)
{
	struct iovec iov = {.iov_base = buf,
	                    .iov_len = count > SSIZE_MAX ? SSIZE_MAX : count};
	return read_iov(ex, cr, h, &iov, 1, off, eof, NULL);
}

/* NFSv3 READ: the post-op attributes come from the cached fd, not from
 * a second open by handle (RFC 1813 3.3.6 wants them after the read). */
static ssize_t px_read_attr(struct bk_export *ex, const struct bk_cred *cr,
                            const struct bk_handle *h, void *buf, size_t count,
                            uint64_t off, bool *eof, struct bk_attr *after)
{
	struct iovec iov = {.iov_base = buf,
	                    .iov_len = count > SSIZE_MAX ? SSIZE_MAX : count};
	return read_iov(ex, cr, h, &iov, 1, off, eof, after);
}

/* The cached fd's duplicate: the reply holding it may outlive the cache
 * entry. */
static int px_read_ref(struct bk_export *ex, const struct bk_cred *cr,
                       const struct bk_handle *h, uint64_t off, size_t count,
                       int *fd, size_t *n, bool *eof, struct bk_attr *attr)
{
	struct fd_ref ref;
	struct stat st;
	uint64_t size;
	int rc = fd_cache_get(ex, h, false, &ref, &st);

	if (rc != 0)
		return rc;
	rc = posix_read_permitted(ref.fd, &st, cr);
	if (rc == 0 && off > INT64_MAX)
		rc = -EINVAL;
	if (rc == 0) {
		*fd = fcntl(ref.fd, F_DUPFD_CLOEXEC, 0);
		if (*fd < 0)
			rc = -errno;
	}
	fd_cache_put(ex->fds, &ref);
	if (rc != 0)
		return rc;
	size = (uint64_t)st.st_size;
	*n = off >= size ? 0
	                 : (size - off < count ? (size_t)(size - off) : count);
	*eof = off + *n >= size;
	if (attr)
		posix_fill_attr(ex, &st, attr);
	return 0;
}

static void px_io_scope(struct bk_export *ex, bool begin)
{
	(void)ex;
	fd_cache_scope(begin);
}

static int px_io_getattr(struct bk_export *ex, const struct bk_handle *h,
                         struct bk_attr *out)
{
	struct fd_ref ref;
	struct stat st;
	int rc = fd_cache_get(ex, h, false, &ref, &st);

	if (rc != 0)
		return rc;
	posix_fill_attr(ex, &st, out);
	fd_cache_put(ex->fds, &ref);
	return 0;
}

/* One write, synced as asked. RWF_DSYNC/RWF_SYNC make the data (and for
 * FILE_SYNC all metadata) stable before returning; kernels without them
 * get an explicit fdatasync/fsync. */
static ssize_t write_stable(int fd, const void *buf, size_t count, off_t off,
                            enum bk_stable stable)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = count};
	int flags = stable == BK_FILE_SYNC   ? RWF_SYNC
	            : stable == BK_DATA_SYNC ? RWF_DSYNC
	                                     : 0;
	ssize_t n;
	int rc;

	n = pwritev2(fd, &iov, 1, off, flags);
	if (n >= 0 || flags == 0 || (errno != EOPNOTSUPP && errno != EINVAL))
		return n < 0 ? -errno : n;
	n = pwrite(fd, buf, count, off);
	if (n < 0)
		return -errno;
	rc = stable == BK_FILE_SYNC ? fsync(fd) : fdatasync(fd);
	return rc == 0 ? n : -errno;
}

/* Written under the client's credentials, so that the kernel clears
 * set-id bits as for a local writer. */
static ssize_t px_write(struct bk_export *ex, const struct bk_cred *cr,
                        const struct bk_handle *h, const void *buf,
                        size_t count, uint64_t off, enum bk_stable stable,
                        enum bk_stable *committed)
{
	struct fd_ref ref;
	struct stat st;
	size_t done = 0;
	ssize_t n = 0;
	int rc;

	if (count > SSIZE_MAX)
		count = SSIZE_MAX;
	if (off > INT64_MAX || count > INT64_MAX - off)
		return -EFBIG;
	rc = fd_cache_get(ex, h, true, &ref, &st);
	if (rc != 0)
		return rc;
	rc = cred_enter(cr);
	if (rc == 0)
		rc = posix_io_permitted(ref.fd, &st, cr, W_OK);
	while (rc == 0 && done < count) {
		n = write_stable(ref.fd, (const char *)buf + done, count - done,
		                 (off_t)(off + done), stable);
		if (n == -EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	cred_leave();
	fd_cache_put(ex->fds, &ref);
	if (done > 0)
		hole_map_invalidate(ex->holes, h);
	if (stable != BK_UNSTABLE)
		fd_cache_drop_writable(ex->fds, h);
	if (rc != 0)
		return rc;
	if (done == 0 && n < 0)
		return n;
	*committed = stable;
	return (ssize_t)done;
}

/* fsync makes every write of the file stable, through whichever fd. */
static int px_commit(struct bk_export *ex, const struct bk_handle *h,
                     uint64_t off, uint64_t count)
{
	struct fd_ref ref;
	struct stat st;
	int rc;

	(void)off;
	(void)count;
	rc = fd_cache_get(ex, h, false, &ref, &st);
	if (rc == -EISDIR) {
		int fd = posix_open(ex, h, O_RDONLY | O_DIRECTORY, &st);

		if (fd < 0)
			return fd;
		rc = posix_commit_dir(fd);
		close(fd);
		return rc;
	}
	if (rc != 0)
		return rc;
	rc = fsync(ref.fd) == 0 ? 0 : -errno;
	fd_cache_put(ex->fds, &ref);
	fd_cache_drop_writable(ex->fds, h);
	return rc;
}

static int px_dir_verifier(struct bk_export *ex, const struct bk_handle *dir,
                           uint64_t *verf)
{
	struct stat st;
	uint64_t v;
	int fd = posix_open(ex, dir, O_PATH, &st);

	if (fd < 0)
		return fd;
	close(fd);
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	v = ts_ns(&st.st_mtim) * 0x9e3779b97f4a7c15ull;
	v ^= ts_ns(&st.st_ctim) + (v << 6) + (v >> 2);
	*verf = v ? v : 1;
	return 0;
}

static int px_statfs(struct bk_export *ex, const struct bk_handle *h,
                     struct bk_statfs *out)
{
	struct statvfs sv;
	struct stat st;
	long link_max;
	int fd = posix_open(ex, h, O_PATH, &st);
	int rc = 0;

	if (fd < 0)
		return fd;
	if (fstatvfs(fd, &sv) != 0)
		rc = -errno;
	link_max = fpathconf(fd, _PC_LINK_MAX);
	close(fd);
	if (rc != 0)
		return rc;
	out->tbytes = (uint64_t)sv.f_blocks * sv.f_frsize;
	out->fbytes = (uint64_t)sv.f_bfree * sv.f_frsize;
	out->abytes = (uint64_t)sv.f_bavail * sv.f_frsize;
	out->tfiles = sv.f_files;
	out->ffiles = sv.f_ffree;
	out->afiles = sv.f_favail;
	out->name_max = sv.f_namemax ? (uint32_t)sv.f_namemax : BK_NAME_MAX;
	if (out->name_max > BK_NAME_MAX)
		out->name_max = BK_NAME_MAX;
	out->link_max =
	    link_max > 0 && link_max < UINT32_MAX ? (uint32_t)link_max : 65000;
	return 0;
}

static int px_seek(struct bk_export *ex, const struct bk_handle *h,
                   uint64_t off, bool data, uint64_t *found, bool *eof)
{
	struct fd_ref ref;
	struct stat st;
	off_t pos;
	int rc;

	if (off > INT64_MAX)
		return -ENXIO;
	rc = fd_cache_get(ex, h, false, &ref, &st);
	if (rc != 0)
		return rc;
	pos = lseek(ref.fd, (off_t)off, data ? SEEK_DATA : SEEK_HOLE);
	rc = pos < 0 ? -errno : 0;
	fd_cache_put(ex->fds, &ref);
	if (rc != 0)
		return rc;
	*found = (uint64_t)pos;
	*eof = pos >= st.st_size;
	return 0;
}

static int space_op(struct bk_export *ex, const struct bk_cred *cr,
                    const struct bk_handle *h, int mode, uint64_t off,
                    uint64_t len)
{
	struct fd_ref ref;
	struct stat st;
	int rc;

	if (off > INT64_MAX || len > INT64_MAX || len == 0)
		return -EINVAL;
	rc = fd_cache_get(ex, h, true, &ref, &st);
	if (rc != 0)
		return rc;
	rc = cred_enter(cr);
	if (rc == 0)
		rc = posix_io_permitted(ref.fd, &st, cr, W_OK);
	if (rc == 0 && fallocate(ref.fd, mode, (off_t)off, (off_t)len) != 0)
		rc = -errno;
	cred_leave();
	fd_cache_put(ex->fds, &ref);
	hole_map_invalidate(ex->holes, h);
	return rc;
}

static int px_allocate(struct bk_export *ex, const struct bk_cred *cr,
                       const struct bk_handle *h, uint64_t off, uint64_t len)
{
	return space_op(ex, cr, h, 0, off, len);
}

static int px_punch(struct bk_export *ex, const struct bk_cred *cr,
                    const struct bk_handle *h, uint64_t off, uint64_t len)
{
	return space_op(ex, cr, h, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	                off, len);
}

/* Cookies are hashes on ext4 and most others: not ordered. Clone works
 * only where the file system shares blocks (-EOPNOTSUPP elsewhere), so
 * it is offered but not declared. */
const struct bk_ops bk_posix_ops = {
    .name = "posix",
    .caps = BK_CAP_HOLE_MAP | BK_CAP_ALLOCATE | BK_CAP_PUNCH | BK_CAP_COPY,
    .export_open = px_export_open,
    .export_close = px_export_close,
    .root = px_root,
    .getattr = px_getattr,
    .setattr = px_setattr,
    .lookup = px_lookup,
    .access = px_access,
    .readlink = px_readlink,
    .read = px_read,
    .read_pieces = px_read_pieces,
    .read_attr = px_read_attr,
    .io_getattr = px_io_getattr,
    .read_ref = px_read_ref,
    .io_scope = px_io_scope,
    .write = px_write,
    .commit = px_commit,
    .create = posix_create,
    .mkdir = posix_mkdir,
    .symlink = posix_symlink,
    .mknod = posix_mknod,
    .remove = posix_remove,
    .rmdir = posix_rmdir,
    .rename = posix_rename,
    .link = posix_link,
    .readdir = posix_readdir,
    .readdir_plus = posix_readdir_plus,
    .dir_verifier = px_dir_verifier,
    .statfs = px_statfs,
    .seek = px_seek,
    .allocate = px_allocate,
    .punch = px_punch,
    .copy = posix_copy,
    .clone = posix_clone,
    .extents = posix_extents,
    .lease = posix_lease,
    .lease_end = posix_lease_end,
};
