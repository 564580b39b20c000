/* Directory listing through kept-open directory streams ("cursors").
 *
 * Cookies are the file system's own getdents64 d_off values: the cookie of
 * an entry is where the listing continues after it, 0 is the start. A
 * cursor is an open directory fd with its getdents buffer and the cookie
 * of its first unconsumed entry. When a READDIR resumes at a cookie where
 * a cursor stopped, it continues from that cursor without seeking or
 * re-reading, so resuming in the middle of a huge directory costs the same
 * as continuing. Otherwise the directory is opened by handle and sought to
 * the cookie. Entries the callback refused stay in the buffer, read
 * ahead; they are dropped (and read again from the cookie) when the
 * directory's ctime says it changed since, so a resumed listing does not
 * name entries removed before the call (as far as the ctime's
 * granularity tells).
 *
 * The cache is bounded (LRU) and idle cursors are closed after a while. A
 * cursor in use is out of the cache, so each is used by one thread.
 *
 * A plain listing marks entries "exact" when their d_ino and d_type are
 * what a stat of the name would give, so that a caller wanting only type
 * and fileid (an NFSv4 READDIR for `ls -f`) needs no syscall per name.
 * That holds on the file systems named in fs_exact() (whose d_ino is the
 * inode number and which have no hidden sub-devices such as btrfs
 * subvolumes) except for names covered by a mount: there getdents gives
 * the covered inode and stat the mounted root. So a directory is exact only
 * while no mount point lies directly in it, judged from
 * /proc/self/mountinfo, read again whenever poll says the table changed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backend/posix_int.h"

#define CURSOR_SLOTS 64
#define CURSOR_IDLE_SEC 60
#define CURSOR_BUF (128 * 1024)

/* The kernel's record, as getdents64(2) describes it. */
struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

struct dir_cursor {
	struct bk_handle h;
	int fd;
	uint64_t next;   /* cookie of the first unconsumed entry */
	size_t len, pos; /* bytes in buf, offset of that entry */
	bool end;        /* getdents64 returned 0 */
	bool broken;     /* getdents64 failed */
	/* the directory's ctime just before buf was filled: a later one
	 * means names in buf may be gone and new ones missing */
	struct timespec filled_ctime;
	time_t used;    /* CLOCK_MONOTONIC seconds */
	bool judged;    /* no_mounts is known for mount table judged_gen */
	bool no_mounts; /* no mount point lies directly in this directory */
	unsigned judged_gen;
	char buf[CURSOR_BUF];
};

/* The directories that directly hold a mount point, sorted. */
struct mount_dirs {
	int fd;        /* /proc/self/mountinfo, kept open to poll; -1 */
	bool unusable; /* unreadable: no directory is ever exact */
	unsigned gen;  /* bumped on every reread */
	char **dirs;
	size_t n;
};

/* Directory streams opened, getdents64 calls made and the records they
 * returned, by every cursor since start: tests check that resuming a
 * listing in the middle of a huge directory takes the stream it left
 * and reads one reply's worth, not everything before it. */
static atomic_uint_fast64_t stat_opens, stat_getdents, stat_records;

void dir_cursor_stats(struct dir_cursor_stats *out)
{
	out->opens = atomic_load(&stat_opens);
	out->getdents = atomic_load(&stat_getdents);
	out->records = atomic_load(&stat_records);
}

struct dir_cursor_cache {
	pthread_mutex_t lock;
	struct dir_cursor *c[CURSOR_SLOTS];
	pthread_mutex_t mlock; /* fs_kind and mounts */
	int fs_kind;           /* 0 not yet known, 1 exact, -1 not */
	struct mount_dirs mounts;
};

static time_t now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static void cursor_close(struct dir_cursor *c)
{
	if (c == NULL)
		return;
	close(c->fd);
	free(c);
}

int dir_cursor_cache_new(struct dir_cursor_cache **out)
{
	struct dir_cursor_cache *dc = calloc(1, sizeof(*dc));

	if (dc == NULL)
		return -ENOMEM;
	pthread_mutex_init(&dc->lock, NULL);
	pthread_mutex_init(&dc->mlock, NULL);
	dc->mounts.fd = -1;
	*out = dc;
	return 0;
}

static void mount_dirs_clear(struct mount_dirs *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->dirs[i]);
	free(m->dirs);
	m->dirs = NULL;
	m->n = 0;
}

void dir_cursor_cache_free(struct dir_cursor_cache *dc)
{
	if (dc == NULL)
		return;
	for (int i = 0; i < CURSOR_SLOTS; i++)
		cursor_close(dc->c[i]);
	mount_dirs_clear(&dc->mounts);
	if (dc->mounts.fd >= 0)
		close(dc->mounts.fd);
	pthread_mutex_destroy(&dc->mlock);
	pthread_mutex_destroy(&dc->lock);
	free(dc);
}

static bool cursor_is(const struct dir_cursor *c, const struct bk_handle *h)
{
	return c->h.len == h->len && memcmp(c->h.data, h->data, h->len) == 0;
}

/* Take out the cursor stopped at cookie in dir, closing idle ones on the
 * way (moved to *idle, closed by the caller outside the lock). */
static struct dir_cursor *cursor_take(struct dir_cursor_cache *dc,
                                      const struct bk_handle *h,
                                      uint64_t cookie, struct dir_cursor **idle,
                                      int *nidle)
{
	struct dir_cursor *found = NULL;
	time_t now = now_sec();

	*nidle = 0;
	pthread_mutex_lock(&dc->lock);
	for (int i = 0; i < CURSOR_SLOTS; i++) {
		struct dir_cursor *c = dc->c[i];

		if (c == NULL)
			continue;
		if (found == NULL && c->next == cookie && cursor_is(c, h)) {
			found = c;
			dc->c[i] = NULL;
		} else if (now - c->used > CURSOR_IDLE_SEC) {
			idle[(*nidle)++] = c;
			dc->c[i] = NULL;
		}
	}
	pthread_mutex_unlock(&dc->lock);
	return found;
}

/* Keep c for a later resume; the least recently used one makes room. */
static void cursor_keep(struct dir_cursor_cache *dc, struct dir_cursor *c)
{
	struct dir_cursor *old = NULL;
	int slot = -1;

	c->used = now_sec();
	pthread_mutex_lock(&dc->lock);
	for (int i = 0; i < CURSOR_SLOTS; i++) {
		if (dc->c[i] == NULL) {
			slot = i;
			break;
		}
		if (slot < 0 || dc->c[i]->used < dc->c[slot]->used)
			slot = i;
	}
	old = dc->c[slot];
	dc->c[slot] = c;
	pthread_mutex_unlock(&dc->lock);
	cursor_close(old);
}

void dir_cursor_forget(struct dir_cursor_cache *dc, const struct bk_handle *h)
{
	struct dir_cursor *gone[CURSOR_SLOTS];
	int n = 0;

	pthread_mutex_lock(&dc->lock);
	for (int i = 0; i < CURSOR_SLOTS; i++) {
		if (dc->c[i] != NULL && cursor_is(dc->c[i], h)) {
			gone[n++] = dc->c[i];
			dc->c[i] = NULL;
		}
	}
	pthread_mutex_unlock(&dc->lock);
	for (int i = 0; i < n; i++)
		cursor_close(gone[i]);
}

/* A new cursor on dir at cookie. A cookie the directory cannot seek to
 * is -EINVAL (NFS3ERR_BAD_COOKIE). */
static int cursor_open(struct bk_export *ex, const struct bk_handle *h,
                       uint64_t cookie, struct dir_cursor **out)
{
	struct dir_cursor *c;
	struct stat st;
	int fd;

	if (cookie > INT64_MAX)
		return -EINVAL;
	fd = posix_open(ex, h, O_RDONLY | O_DIRECTORY, &st);
	if (fd < 0)
		return fd;
	atomic_fetch_add_explicit(&stat_opens, 1, memory_order_relaxed);
	if (cookie != 0 && lseek(fd, (off_t)cookie, SEEK_SET) < 0) {
		close(fd);
		return -EINVAL;
	}
	c = malloc(sizeof(*c));
	if (c == NULL) {
		close(fd);
		return -ENOMEM;
	}
	c->h = *h;
	c->fd = fd;
	c->next = cookie;
	c->len = c->pos = 0;
	c->end = false;
	c->broken = false;
	c->filled_ctime = (struct timespec){0, 0};
	c->judged = false;
	*out = c;
	return 0;
}

/* File systems whose getdents d_ino is the st_ino of the name and where
 * every name is on the same device unless a mount covers it. Not btrfs
 * (subvolumes are other devices), overlayfs or network file systems. */
static bool fs_exact(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) != 0)
		return false;
	switch ((unsigned long)sf.f_type) {
	case EXT4_SUPER_MAGIC: /* also ext2 and ext3 */
	case XFS_SUPER_MAGIC:
	case TMPFS_MAGIC:
	case F2FS_SUPER_MAGIC:
		return true;
	default:
		return false;
	}
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape_octal(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
			              (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
}

/* The fifth field of a mountinfo line (the mount point), unescaped and
 * cut to the directory holding it; NULL for the root or a bad line. */
static char *mount_parent(char *line)
{
	char *f = line, *slash;

	for (int i = 0; i < 4; i++) {
		f = strchr(f, ' ');
		if (f == NULL)
			return NULL;
		f++;
	}
	line = f;
	f = strchr(line, ' ');
	if (f != NULL)
		*f = 0;
	unescape_octal(line);
	slash = strrchr(line, '/');
	if (slash == NULL || line[0] != '/' || line[1] == 0)
		return NULL;
	if (slash == line)
		slash++; /* a mount on /x is in / */
	*slash = 0;
	return strdup(line);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The whole of the file at fd, NUL-terminated; NULL on failure. */
static char *read_all(int fd)
{
	size_t cap = 16384, len = 0;
	char *buf = malloc(cap), *nb;
	ssize_t n;

	if (buf == NULL || lseek(fd, 0, SEEK_SET) != 0)
		goto err;
	for (;;) {
		if (cap - len < 4096) {
			nb = realloc(buf, cap * 2);
			if (nb == NULL)
				goto err;
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto err;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = 0;
	return buf;
err:
	free(buf);
	return NULL;
}

static int mount_dirs_read(struct mount_dirs *m)
{
	char *text = read_all(m->fd), *line, *next, *d, **nd;
	size_t cap = 0;

	mount_dirs_clear(m);
	m->gen++;
	if (text == NULL)
		return -EIO;
	for (line = text; *line; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = 0;
		else
			next = line + strlen(line);
		d = mount_parent(line);
		if (d == NULL)
			continue;
		if (m->n == cap) {
			cap = cap ? cap * 2 : 64;
			nd = realloc(m->dirs, cap * sizeof(*nd));
			if (nd == NULL) {
				free(d);
				free(text);
				return -ENOMEM;
			}
			m->dirs = nd;
		}
		m->dirs[m->n++] = d;
	}
	free(text);
	if (m->n > 0)
		qsort(m->dirs, m->n, sizeof(*m->dirs), cmp_str);
	return 0;
}

/* Bring the table up to date: the kernel marks the open mountinfo with
 * POLLPRI (and POLLERR) once for every change to the mount namespace. A
 * table that cannot be read makes the directories inexact for good. */
static void mount_dirs_refresh(struct mount_dirs *m)
{
	struct pollfd p;
	int rc;

	if (m->unusable)
		return;
	if (m->fd < 0) {
		m->fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
		if (m->fd < 0 || mount_dirs_read(m) != 0)
			m->unusable = true;
		return;
	}
	p.fd = m->fd;
	p.events = POLLPRI;
	p.revents = 0;
	do
		rc = poll(&p, 1, 0);
	while (rc < 0 && errno == EINTR);
	if (rc < 0 ||
	    (rc > 0 && (p.revents & (POLLPRI | POLLERR | POLLNVAL)))) {
		if (rc < 0 || (p.revents & POLLNVAL) || mount_dirs_read(m))
			m->unusable = true;
	}
}

/* Whether some mount point lies directly in the directory open at fd
 * (true when its path cannot be told). */
static bool holds_mount(const struct mount_dirs *m, int fd)
{
	static const char deleted[] = " (deleted)";
	char link[64], path[PATH_MAX], *key = path;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || (size_t)n >= sizeof(path) - 1 || path[0] != '/')
		return true;
	path[n] = 0;
	if ((size_t)n >= sizeof(deleted) - 1 &&
	    strcmp(path + n - (sizeof(deleted) - 1), deleted) == 0)
		return true;
	return bsearch(&key, m->dirs, m->n, sizeof(*m->dirs), cmp_str) != NULL;
}

/* Whether the d_ino and d_type of c's names are what stat would say. */
static bool cursor_exact(struct dir_cursor_cache *dc, struct dir_cursor *c)
{
	bool exact = false;

	pthread_mutex_lock(&dc->mlock);
	if (dc->fs_kind == 0)
		dc->fs_kind = fs_exact(c->fd) ? 1 : -1;
	if (dc->fs_kind < 0)
		goto out;
	mount_dirs_refresh(&dc->mounts);
	if (dc->mounts.unusable)
		goto out;
	if (!c->judged || c->judged_gen != dc->mounts.gen) {
		c->no_mounts = !holds_mount(&dc->mounts, c->fd);
		c->judged_gen = dc->mounts.gen;
		c->judged = true;
	}
	exact = c->no_mounts;
out:
	pthread_mutex_unlock(&dc->mlock);
	return exact;
}

static enum bk_ftype ftype_of_dtype(unsigned char t)
{
	switch (t) {
	case DT_REG:
		return BK_REG;
	case DT_DIR:
		return BK_DIR;
	case DT_BLK:
		return BK_BLK;
	case DT_CHR:
		return BK_CHR;
	case DT_LNK:
		return BK_LNK;
	case DT_SOCK:
		return BK_SOCK;
	case DT_FIFO:
		return BK_FIFO;
	default:
		return 0;
	}
}

/* Refill an exhausted buffer. Returns 0, or -errno; sets c->end at the
 * end of the directory. */
static int cursor_fill(struct dir_cursor *c)
{
	struct stat st;
	long n;

	/* before the read, so that a change during it counts as later */
	if (fstat(c->fd, &st) == 0)
		c->filled_ctime = st.st_ctim;
	else
		c->filled_ctime = (struct timespec){0, 0};
	do
		n = syscall(SYS_getdents64, c->fd, c->buf, sizeof(c->buf));
	while (n < 0 && errno == EINTR);
	atomic_fetch_add_explicit(&stat_getdents, 1, memory_order_relaxed);
	if (n < 0) {
		c->broken = true;
		return -errno;
	}
	/* a pass over what the kernel just wrote, cheap beside the call */
	uint64_t records = 0;
	for (size_t at = 0;
	     at + offsetof(struct linux_dirent64, d_name) < (size_t)n;) {
		unsigned short len =
		    ((struct linux_dirent64 *)(c->buf + at))->d_reclen;
		if (len == 0)
			break; /* cursor_emit calls the buffer broken */
		at += len;
		records++;
	}
	atomic_fetch_add_explicit(&stat_records, records, memory_order_relaxed);
	c->len = (size_t)n;
	c->pos = 0;
	c->end = n == 0;
	return 0;
}

/* READDIRPLUS without a lookup per name: the handle and attributes of
 * an entry found from the open directory (2 syscalls instead of ~9). Left
 * out for "." and ".." (the caller's lookup keeps ".." of the export root
 * at the root) and for mount points, which the lookup path refuses. */
static void entry_plus(struct bk_export *ex, int dirfd, struct bk_dirent *e,
                       struct bk_handle *h, struct bk_attr *a)
{
	struct stat st;

	if (posix_is_dot_or_dotdot(e->name))
		return;
	if (fstatat(dirfd, e->name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
	    st.st_dev != ex->dev)
		return;
	if (posix_handle_of(dirfd, e->name, h) != 0)
		return;
	posix_fill_attr(ex, &st, a);
	e->handle = h;
	e->attr = a;
}

/* Hand entries to fn until it stops, fails or the directory ends; with
 * ex set, each entry carries its handle and attributes; with exact, the
 * names of a known type are marked exact. */
static int cursor_emit(struct dir_cursor *c, struct bk_export *ex, bool exact,
                       bk_dirent_fn fn, void *arg, bool *eof)
{
	const size_t hdr = offsetof(struct linux_dirent64, d_name);

	*eof = false;
	for (;;) {
		struct linux_dirent64 *d;
		struct bk_dirent e;
		struct bk_handle h;
		struct bk_attr a;
		int rc;

		if (c->pos >= c->len) {
			if (!c->end)
				rc = cursor_fill(c);
			else
				rc = 0;
			if (rc != 0)
				return rc;
			if (c->end) {
				*eof = true;
				return 0;
			}
		}
		d = (struct linux_dirent64 *)(c->buf + c->pos);
		if (c->len - c->pos < hdr + 1 || d->d_reclen <= hdr ||
		    d->d_reclen > c->len - c->pos) {
			c->broken = true; /* never from a sane kernel */
			return -EIO;
		}
		e.fileid = d->d_ino;
		e.cookie = (uint64_t)d->d_off;
		e.name = d->d_name;
		e.namelen = (uint32_t)strnlen(d->d_name, d->d_reclen - hdr);
		e.type = ftype_of_dtype(d->d_type);
		e.handle = NULL;
		e.attr = NULL;
		e.exact =
		    exact && e.type != 0 && !posix_is_dot_or_dotdot(e.name);
		if (ex != NULL)
			entry_plus(ex, c->fd, &e, &h, &a);
		rc = fn(arg, &e);
		if (rc != 0)
			return rc < 0 ? rc : 0;
		c->pos += d->d_reclen;
		c->next = e.cookie;
	}
}

/* RFC 1813 section 3.3.16: listing needs read permission on the directory
 * (as for a local reader and Linux nfsd), checked under the client's
 * credentials on the open stream. */
static int dir_readable(int fd, const struct bk_cred *cr, struct stat *st,
                        bool *searchable)
{
	int rc;

	if (fstat(fd, st) != 0)
		return -errno;
	rc = cred_enter(cr);
	if (rc != 0)
		return rc;
	rc = posix_access_fd(fd, st, cr, R_OK);
	/* Attributes of the names need search permission, as a lookup. */
	*searchable = rc == 0 && posix_access_fd(fd, st, cr, X_OK) == 0;
	cred_leave();
	return rc;
}

/* A kept stream read names ahead into its buffer. If the directory
 * changed since (its ctime moved: through snfsd or beside it), those may
 * name removed entries and miss new ones, so drop them and read on from
 * the cookie: the listing then sees the directory as it is now, as a
 * fresh stream would, for one refill. */
static int cursor_refresh(struct dir_cursor *c, const struct stat *st)
{
	if (c->pos >= c->len ||
	    (st->st_ctim.tv_sec == c->filled_ctime.tv_sec &&
	     st->st_ctim.tv_nsec == c->filled_ctime.tv_nsec))
		return 0;
	if (lseek(c->fd, (off_t)c->next, SEEK_SET) < 0) {
		c->broken = true;
		return -EINVAL;
	}
	c->len = c->pos = 0;
	c->end = false;
	return 0;
}

static int readdir_common(struct bk_export *ex, const struct bk_cred *cr,
                          const struct bk_handle *dir, uint64_t cookie,
                          bk_dirent_fn fn, void *arg, bool *eof, bool plus)
{
	bool searchable = false;
	struct dir_cursor *idle[CURSOR_SLOTS];
	struct dir_cursor *c;
	struct stat st;
	int nidle, rc;

	c = cursor_take(ex->dirs, dir, cookie, idle, &nidle);
	for (int i = 0; i < nidle; i++)
		cursor_close(idle[i]);
	if (c == NULL) {
		rc = cursor_open(ex, dir, cookie, &c);
		if (rc != 0)
			return rc;
	}
	rc = dir_readable(c->fd, cr, &st, &searchable);
	if (rc == 0)
		rc = cursor_refresh(c, &st);
	if (rc == 0)
		rc = cursor_emit(c, plus && searchable ? ex : NULL,
		                 !plus && searchable &&
		                     cursor_exact(ex->dirs, c),
		                 fn, arg, eof);
	/* A finished or broken stream is not worth keeping; one the client
	 * was refused, or whose callback failed, stays valid. */
	if (c->end || c->broken)
		cursor_close(c);
	else
		cursor_keep(ex->dirs, c);
	return rc;
}

int posix_readdir(struct bk_export *ex, const struct bk_cred *cr,
                  const struct bk_handle *dir, uint64_t cookie, bk_dirent_fn fn,
                  void *arg, bool *eof)
{
	return readdir_common(ex, cr, dir, cookie, fn, arg, eof, false);
}

int posix_readdir_plus(struct bk_export *ex, const struct bk_cred *cr,
                       const struct bk_handle *dir, uint64_t cookie,
                       bk_dirent_fn fn, void *arg, bool *eof)
{
	return readdir_common(ex, cr, dir, cookie, fn, arg, eof, true);
}
