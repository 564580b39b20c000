/* The FUSE low-level operations: each request names inodes, the inode
 * table gives their handles, libsnfs does the work. Open files carry a
 * struct snfs_file in fi->fh, open directories a struct mdir. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "tools/mount.h"

static struct mnt *mnt_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* libsnfs errors to what a system call may return. Transport failures
 * (a dead server past the timeout, a garbled reply) are EIO; ENOSYS would
 * make the kernel stop sending that request for good. */
static int to_errno(int rc)
{
	int e = rc < 0 ? -rc : rc;
	switch (e) {
	case ETIMEDOUT:
	case EPROTO:
	case EPROTONOSUPPORT:
	case ECONNREFUSED:
	case ECONNRESET:
	case EPIPE:
	case ENOSYS:
		return EIO;
	case ENOTSUP:
		return EOPNOTSUPP;
	default:
		return e ? e : EIO;
	}
}

static void reply_err(fuse_req_t req, int rc)
{
	fuse_reply_err(req, rc < 0 ? to_errno(rc) : 0);
}

static mode_t type_bits(enum snfs_ftype t)
{
	switch (t) {
	case SNFS_REG:
		return S_IFREG;
	case SNFS_DIR:
		return S_IFDIR;
	case SNFS_BLK:
		return S_IFBLK;
	case SNFS_CHR:
		return S_IFCHR;
	case SNFS_LNK:
		return S_IFLNK;
	case SNFS_SOCK:
		return S_IFSOCK;
	case SNFS_FIFO:
		return S_IFIFO;
	}
	return 0;
}

static void to_stat(const struct snfs_stat *s, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = s->fileid;
	st->st_mode = type_bits(s->type) | (s->mode & 07777);
	st->st_nlink = s->nlink;
	st->st_uid = s->uid;
	st->st_gid = s->gid;
	st->st_size = (off_t)s->size;
	st->st_blocks = (blkcnt_t)((s->used + 511) / 512);
	st->st_blksize = 65536;
	st->st_rdev = makedev(s->rdev_major, s->rdev_minor);
	st->st_atim = s->atime;
	st->st_mtim = s->mtime;
	st->st_ctim = s->ctime;
}

/* Reply with a new entry: the handle goes into the table (one lookup). */
static void reply_entry(fuse_req_t req, const struct snfs_handle *h,
                        const struct snfs_stat *s)
{
	struct mnt *m = mnt_of(req);
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = itab_ref(m->it, h);
	if (!e.ino) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	to_stat(s, &e.attr);
	e.attr_timeout = m->attr_timeout;
	e.entry_timeout = m->entry_timeout;
	if (fuse_reply_entry(req, &e) == -ENOENT)
		itab_forget(m->it, e.ino, 1); /* the request was interrupted */
}

static void reply_attr(fuse_req_t req, const struct snfs_stat *s)
{
	struct stat st;
	to_stat(s, &st);
	fuse_reply_attr(req, &st, mnt_of(req)->attr_timeout);
}

/* ---- inodes ---- */

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mnt *m = mnt_of(req);
	struct snfs_handle dir, h;
	struct snfs_stat s;
	int rc = itab_handle(m->it, parent, &dir);
	if (rc == 0)
		rc = snfs_h_lookup(m->ctx, &dir, name, &h, &s);
	if (rc < 0)
		reply_err(req, rc);
	else
		reply_entry(req, &h, &s);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t n)
{
	itab_forget(mnt_of(req)->it, ino, n);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
                            struct fuse_forget_data *f)
{
	struct mnt *m = mnt_of(req);
	for (size_t i = 0; i < count; i++)
		itab_forget(m->it, f[i].ino, f[i].nlookup);
	fuse_reply_none(req);
}

static struct snfs_file *file_of(struct fuse_file_info *fi)
{
	return fi ? (struct snfs_file *)(uintptr_t)fi->fh : NULL;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
	struct mnt *m = mnt_of(req);
	struct snfs_handle h;
	struct snfs_stat s;
	struct snfs_file *f = file_of(fi);
	int rc;

	/* An open file answers even after its name is gone, and counts
	 * bytes not yet written back. */
	if (f)
		rc = snfs_fstat(f, &s);
	else if ((rc = itab_handle(m->it, ino, &h)) == 0)
		rc = snfs_h_getattr(m->ctx, &h, &s);
	if (rc < 0)
		reply_err(req, rc);
	else
		reply_attr(req, &s);
}

static void time_arg(const struct timespec *t, bool now, unsigned given,
                     unsigned now_bit, struct snfs_setattr *sa,
                     struct timespec *dst)
{
	if (now) {
		sa->mask |= now_bit;
	} else {
		sa->mask |= given;
		*dst = *t;
	}
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                       int to_set, struct fuse_file_info *fi)
{
	struct mnt *m = mnt_of(req);
	struct snfs_setattr sa = {0};
	struct snfs_handle h;
	struct snfs_stat s;
	(void)fi;

	if (to_set & FUSE_SET_ATTR_MODE) {
		sa.mask |= SNFS_SET_MODE;
		sa.mode = attr->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.mask |= SNFS_SET_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.mask |= SNFS_SET_GID;
		sa.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		sa.mask |= SNFS_SET_SIZE;
		sa.size = (uint64_t)attr->st_size;
	}
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW))
		time_arg(&attr->st_atim, to_set & FUSE_SET_ATTR_ATIME_NOW,
		         SNFS_SET_ATIME, SNFS_SET_ATIME_NOW, &sa, &sa.atime);
	if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))
		time_arg(&attr->st_mtim, to_set & FUSE_SET_ATTR_MTIME_NOW,
		         SNFS_SET_MTIME, SNFS_SET_MTIME_NOW, &sa, &sa.mtime);
	int rc = itab_handle(m->it, ino, &h);
	if (rc == 0)
		rc = snfs_h_setattr(m->ctx, &h, &sa, &s);
	if (rc < 0)
		reply_err(req, rc);
	else
		reply_attr(req, &s);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct mnt *m = mnt_of(req);
	struct snfs_handle h;
	char buf[4097];
	int rc = itab_handle(m->it, ino, &h);
	if (rc == 0)
		rc = snfs_h_readlink(m->ctx, &h, buf, sizeof(buf));
	if (rc < 0)
		reply_err(req, rc);
	else
		fuse_reply_readlink(req, buf);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct mnt *m = mnt_of(req);
	struct snfs_handle h;
	struct snfs_statvfs sv;
	struct statvfs st;
	const uint64_t bs = 4096;
	int rc = itab_handle(m->it, ino, &h);

	if (rc == -ESTALE)
		rc = itab_handle(m->it, FUSE_ROOT_ID, &h);
	if (rc == 0)
		rc = snfs_h_statvfs(m->ctx, &h, &sv);
	if (rc < 0) {
		reply_err(req, rc);
		return;
	}
	memset(&st, 0, sizeof(st));
	st.f_bsize = bs;
	st.f_frsize = bs;
	st.f_blocks = sv.tbytes / bs;
	st.f_bfree = sv.fbytes / bs;
	st.f_bavail = sv.abytes / bs;
	st.f_files = sv.tfiles;
	st.f_ffree = sv.ffiles;
	st.f_favail = sv.afiles;
	st.f_namemax = 255;
	fuse_reply_statfs(req, &st);
}

/* ---- names ---- */

/* Run a call that makes name in parent and reply with the new entry. */
typedef int (*make_fn)(struct mnt *m, const struct snfs_handle *dir,
                       const char *name, const void *arg,
                       struct snfs_handle *out, struct snfs_stat *st);

static void make_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
                       make_fn fn, const void *arg)
{
	struct mnt *m = mnt_of(req);
	struct snfs_handle dir, h;
	struct snfs_stat s;
	int rc = itab_handle(m->it, parent, &dir);
	if (rc == 0)
		rc = fn(m, &dir, name, arg, &h, &s);
	if (rc < 0)
		reply_err(req, rc);
	else
		reply_entry(req, &h, &s);
}

struct node_arg {
	mode_t mode;
	dev_t rdev;
};

static int do_mknod(struct mnt *m, const struct snfs_handle *dir,
                    const char *name, const void *arg, struct snfs_handle *out,
                    struct snfs_stat *st)
{
	const struct node_arg *a = arg;
	enum snfs_ftype t;

	switch (a->mode & S_IFMT) {
	case 0:
	case S_IFREG:
		return snfs_h_create(m->ctx, dir, name, a->mode & 07777, true,
		                     out, st);
	case S_IFIFO:
		t = SNFS_FIFO;
		break;
	case S_IFSOCK:
		t = SNFS_SOCK;
		break;
	case S_IFCHR:
		t = SNFS_CHR;
		break;
	case S_IFBLK:
		t = SNFS_BLK;
		break;
	default:
		return -EINVAL;
	}
	return snfs_h_mknod(m->ctx, dir, name, t, a->mode & 07777,
	                    major(a->rdev), minor(a->rdev), out, st);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
                     mode_t mode, dev_t rdev)
{
	struct node_arg a = {mode, rdev};
	make_entry(req, parent, name, do_mknod, &a);
}

static int do_mkdir(struct mnt *m, const struct snfs_handle *dir,
                    const char *name, const void *arg, struct snfs_handle *out,
                    struct snfs_stat *st)
{
	const mode_t *mode = arg;
	return snfs_h_mkdir(m->ctx, dir, name, *mode & 07777, out, st);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
                     mode_t mode)
{
	make_entry(req, parent, name, do_mkdir, &mode);
}

static int do_symlink(struct mnt *m, const struct snfs_handle *dir,
                      const char *name, const void *arg,
                      struct snfs_handle *out, struct snfs_stat *st)
{
	return snfs_h_symlink(m->ctx, dir, name, arg, out, st);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
                       const char *name)
{
	make_entry(req, parent, name, do_symlink, target);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                    const char *newname)
{
	struct mnt *m = mnt_of(req);
	struct snfs_handle h, dir;
	struct snfs_stat s;
	int rc = itab_handle(m->it, ino, &h);
	if (rc == 0)
		rc = itab_handle(m->it, newparent, &dir);
	if (rc == 0)
		rc = snfs_h_link(m->ctx, &h, &dir, newname);
	if (rc == 0)
		rc = snfs_h_getattr(m->ctx, &h, &s); /* the new link count */
	if (rc < 0)
		reply_err(req, rc);
	else
		reply_entry(req, &h, &s);
}

typedef int (*remove_fn)(struct snfs_ctx *, const struct snfs_handle *,
                         const char *);

static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name,
                        remove_fn fn)
{
	struct mnt *m = mnt_of(req);
	struct snfs_handle dir;
	int rc = itab_handle(m->it, parent, &dir);
	if (rc == 0)
		rc = fn(m->ctx, &dir, name);
	reply_err(req, rc);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, snfs_h_unlink);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, snfs_h_rmdir);
}

/* Neither NFSv3 RENAME (RFC 1813 section 3.3.14) nor NFSv4 RENAME (RFC
 * 8881 section 18.26) can refuse to replace a target or swap two names,
 * and checking first would race with other clients, so RENAME_NOREPLACE
 * and RENAME_EXCHANGE get EINVAL, which tells callers (mv, glibc) to fall
 * back to a plain rename. */
static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                      fuse_ino_t newparent, const char *newname,
                      unsigned int flags)
{
	struct mnt *m = mnt_of(req);
	struct snfs_handle from, to;

	if (flags) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	int rc = itab_handle(m->it, parent, &from);
	if (rc == 0)
		rc = itab_handle(m->it, newparent, &to);
	if (rc == 0)
		rc = snfs_h_rename(m->ctx, &from, name, &to, newname);
	reply_err(req, rc);
}

/* ---- files ---- */

static void set_open_flags(struct mnt *m, struct fuse_file_info *fi,
                           struct snfs_file *f)
{
	fi->fh = (uint64_t)(uintptr_t)f;
	fi->direct_io = 0;
	fi->keep_cache = m->kernel_cache;
}

/* Only what libsnfs acts on; the kernel has done the rest. */
static int open_flags(int flags)
{
	return flags & (O_ACCMODE | O_TRUNC | O_APPEND);
}

/* Close-to-open for the kernel's attribute cache too. libsnfs checks the
 * file at every open, but the kernel trusts the size it holds for
 * attr_timeout and uses it without asking (copy_file_range, mmap,
 * O_APPEND, reads it thinks are past the end): another client's changes
 * went unseen for up to a second (tests/interop/fsrand -2 found it:
 * copies of nothing, SIGBUS in a mapping). When the open shows a change,
 * drop the kernel's attributes; and when no other file is open on the
 * inode here, give it the new size at once: a store of the file's last
 * byte (a store of nothing leaves the size as it is), which the kernel
 * drops with the other pages as the open ends. With other files open
 * (a mapping keeps its file open) the kernel may hold that byte dirty,
 * newer than the server's: no store then (fsrand -t found the stale
 * byte written back), and the size comes at the next stat. */
static void kernel_cto(struct mnt *m, fuse_ino_t ino, struct snfs_file *f,
                       bool alone)
{
	struct snfs_stat s;
	uint8_t last;
	struct fuse_bufvec one = FUSE_BUFVEC_INIT(1);

	if (!m->se || !snfs_open_attrs(f, &s))
		return;
	(void)fuse_lowlevel_notify_inval_inode(m->se, ino, -1, 0);
	if (!alone || s.size == 0 || snfs_pread(f, &last, 1, s.size - 1) != 1)
		return;
	one.buf[0].mem = &last;
	(void)fuse_lowlevel_notify_store(m->se, ino, (off_t)(s.size - 1), &one,
	                                 0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mnt *m = mnt_of(req);
	struct snfs_handle h;
	struct snfs_file *f = NULL;
	int rc = itab_handle(m->it, ino, &h);
	if (rc == 0)
		rc = snfs_h_open(m->ctx, &h, open_flags(fi->flags), &f);
	if (rc < 0) {
		reply_err(req, rc);
		return;
	}
	kernel_cto(m, ino, f, itab_opens(m->it, ino, 1) == 1);
	set_open_flags(m, fi, f);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		snfs_close(f); /* interrupted: no RELEASE will come */
		itab_opens(m->it, ino, -1);
	}
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
                      mode_t mode, struct fuse_file_info *fi)
{
	struct mnt *m = mnt_of(req);
	struct snfs_handle dir, h;
	struct snfs_stat s;
	struct snfs_file *f = NULL;
	struct fuse_entry_param e;
	int rc = itab_handle(m->it, parent, &dir);

	if (rc == 0)
		rc = snfs_h_create(m->ctx, &dir, name, mode & 07777,
		                   (fi->flags & O_EXCL) != 0, &h, &s);
	if (rc == 0)
		rc = snfs_h_open(m->ctx, &h, open_flags(fi->flags), &f);
	if (rc == 0 && (fi->flags & O_TRUNC))
		rc = snfs_fstat(f, &s);
	if (rc < 0) {
		if (f)
			snfs_close(f);
		reply_err(req, rc);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = itab_ref(m->it, &h);
	if (!e.ino) {
		snfs_close(f);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	to_stat(&s, &e.attr);
	e.attr_timeout = m->attr_timeout;
	e.entry_timeout = m->entry_timeout;
	set_open_flags(m, fi, f);
	itab_opens(m->it, e.ino, 1);
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		itab_opens(m->it, e.ino, -1);
		itab_forget(m->it, e.ino, 1);
		snfs_close(f);
	}
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
	void *buf = malloc(size ? size : 1);
	(void)ino;
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ssize_t n = snfs_pread(file_of(fi), buf, size, (uint64_t)off);
	if (n < 0)
		reply_err(req, (int)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
                     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct snfs_file *f = file_of(fi);
	struct snfs_stat s;
	size_t asked = size;
	(void)ino;

	/* A page written back from a mapping (there is no writeback cache,
	 * so nothing else comes this way) cannot make the file longer; the
	 * kernel cuts it at the size it holds, which can be older than a
	 * truncation by another client (see kernel_cto): without this cut
	 * the page's tail came back to life past the new end. Past the size
	 * libsnfs knows, the server's size decides (one GETATTR, only then):
	 * the kernel may have learnt of a longer file before libsnfs did. */
	if (fi->writepage) {
		(void)snfs_open_attrs(f, &s);
		if ((uint64_t)off + size > s.size && snfs_fstat(f, &s) < 0)
			s.size = UINT64_MAX; /* not known: write it all */
		if ((uint64_t)off >= s.size)
			size = 0;
		else if (size > s.size - (uint64_t)off)
			size = (size_t)(s.size - (uint64_t)off);
		if (size == 0) {
			fuse_reply_write(req, asked);
			return;
		}
	}
	ssize_t n = snfs_pwrite(f, buf, size, (uint64_t)off);
	if (n < 0)
		reply_err(req, (int)n);
	else
		fuse_reply_write(req, (size_t)n == size ? asked : (size_t)n);
}

/* close(2): write back and commit, so close reports a failed write and
 * the next open elsewhere sees the data (close-to-open). */
/* close(2) of a descriptor: POSIX drops the process's locks on the file
 * (whichever descriptor took them), and FUSE leaves that to us. */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* every pid: the one closing is the only one with this owner */
	struct snfs_flock all = {.type = F_UNLCK, .owner = fi->lock_owner};
	int rc = snfs_fsync(file_of(fi));

	(void)ino;
	if (snfs_get_version(mnt_of(req)->ctx) != SNFS_V3)
		(void)snfs_setlk(file_of(fi), &all, false);
	reply_err(req, rc);
}

/* ---- byte-range locks: the server's (NFSv4; NFSv3 mounts keep the
 * kernel's local locks, op_init) ---- */

static void to_snfs_flock(const struct flock *fl, uint64_t owner,
                          struct snfs_flock *l)
{
	l->type = fl->l_type;
	l->start = (uint64_t)fl->l_start;
	l->len = (uint64_t)fl->l_len; /* the kernel gives it absolute */
	l->owner = owner;
	/* the locking process (its tgid); 0 in an unlock: every process of
	 * this owner, of which only the caller lives */
	l->pid = (uint32_t)fl->l_pid;
}

/* The process (thread group) of thread tid, which F_GETLK's lock-owner
 * needs: the kernel sends GETLK without it, and the server must not count
 * the caller's own locks. 0 when it cannot be read. */
static uint32_t tgid_of(pid_t tid)
{
	char path[64], line[128];
	unsigned long tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %lu", &tgid) == 1)
			break;
	if (f)
		fclose(f);
	return (uint32_t)tgid;
}

static void op_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                     struct flock *fl)
{
	struct snfs_flock l;
	int rc;

	(void)ino;
	to_snfs_flock(fl, fi->lock_owner, &l);
	l.pid = tgid_of(fuse_req_ctx(req)->pid);
	rc = snfs_getlk(file_of(fi), &l);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fl->l_type = (short)l.type;
	if (l.type != F_UNLCK) {
		fl->l_whence = SEEK_SET;
		fl->l_start = (off_t)l.start;
		fl->l_len = (off_t)l.len;
		fl->l_pid = 0; /* another client's, or unknown */
	}
	fuse_reply_lock(req, fl);
}

/* F_SETLKW: the server is asked again, 10 ms doubling to 1 s apart,
 * until it grants or the waiter is interrupted (a signal). */
static void op_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                     struct flock *fl, int sleep)
{
	struct snfs_flock l;
	long wait_ms = 10;
	int rc;

	(void)ino;
	to_snfs_flock(fl, fi->lock_owner, &l);
	while ((rc = snfs_setlk(file_of(fi), &l, sleep != 0)) == -EAGAIN &&
	       sleep && !fuse_req_interrupted(req)) {
		struct timespec ts = {wait_ms / 1000, wait_ms % 1000 * 1000000};
		nanosleep(&ts, NULL);
		wait_ms = wait_ms * 2 > 1000 ? 1000 : wait_ms * 2;
	}
	if (rc == -EAGAIN && sleep)
		rc = -EINTR;
	reply_err(req, rc);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                     struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	reply_err(req, snfs_fsync(file_of(fi)));
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
	snfs_close(file_of(fi)); /* errors were reported by FLUSH */
	itab_opens(mnt_of(req)->it, ino, -1);
	fuse_reply_err(req, 0);
}

/* SEEK_DATA / SEEK_HOLE (NFSv4.2 SEEK, RFC 7862 section 15.11). Without
 * SEEK (NFSv3) the whole file is data, as lseek(2) allows: data at off,
 * the hole at the end, ENXIO at or past the end. */
static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
                     struct fuse_file_info *fi)
{
	struct snfs_file *f = file_of(fi);
	struct snfs_stat s;
	int64_t r;
	(void)ino;

	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	r = whence == SEEK_DATA ? snfs_seek_data(f, (uint64_t)off)
	                        : snfs_seek_hole(f, (uint64_t)off);
	if (r == -EOPNOTSUPP || r == -ENOTSUP) {
		int rc = snfs_fstat(f, &s);
		if (rc < 0)
			r = rc;
		else if ((uint64_t)off >= s.size)
			r = -ENXIO;
		else
			r = whence == SEEK_DATA ? off : (int64_t)s.size;
	}
	if (r < 0)
		reply_err(req, (int)r);
	else
		fuse_reply_lseek(req, (off_t)r);
}

/* ALLOCATE / DEALLOCATE (RFC 7862 sections 15.1, 15.4); NFSv3 has
 * neither, so EOPNOTSUPP (posix_fallocate then writes zeros itself).
 * ALLOCATE past the end extends the file (snfsd and Linux's nfsd do what
 * fallocate(2) with mode 0 does), so FALLOC_FL_KEEP_SIZE can be honoured
 * only inside the file: a range reaching past the end gets EOPNOTSUPP
 * and nothing is done. */
static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
                         off_t len, struct fuse_file_info *fi)
{
	struct snfs_file *f = file_of(fi);
	struct snfs_stat s;
	int rc;
	(void)ino;

	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if (off < 0 || len <= 0 || off > INT64_MAX - len) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		rc = snfs_punch_hole(f, (uint64_t)off, (uint64_t)len);
	} else if (mode & FALLOC_FL_KEEP_SIZE) {
		rc = snfs_fstat(f, &s);
		if (rc == 0 && (uint64_t)off + (uint64_t)len > s.size)
			rc = -EOPNOTSUPP;
		if (rc == 0)
			rc = snfs_allocate(f, (uint64_t)off, (uint64_t)len);
	} else {
		rc = snfs_allocate(f, (uint64_t)off, (uint64_t)len);
		/* Without KEEP_SIZE the file reaches off + len, whatever
		 * the server's ALLOCATE did to the size. */
		if (rc == 0 && !(mode & FALLOC_FL_KEEP_SIZE) &&
		    (rc = snfs_fstat(f, &s)) == 0 &&
		    s.size < (uint64_t)off + (uint64_t)len)
			rc = snfs_ftruncate(f, (uint64_t)off + (uint64_t)len);
	}
	reply_err(req, rc);
}

/* Server-side COPY on NFSv4.2 (RFC 7862 section 15.2); libsnfs reads and
 * writes through its cache elsewhere. */
static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
                               struct fuse_file_info *fi_in, fuse_ino_t ino_out,
                               off_t off_out, struct fuse_file_info *fi_out,
                               size_t len, int flags)
{
	(void)ino_in;
	(void)ino_out;
	if (flags) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	int64_t n = snfs_copy(file_of(fi_in), (uint64_t)off_in, file_of(fi_out),
	                      (uint64_t)off_out, len);
	if (n < 0)
		reply_err(req, (int)n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* ---- directories ----
 * The offset the kernel passes back is the NFS cookie of the last entry
 * it took, so a listing resumes wherever it stopped. */

struct mdir {
	pthread_mutex_t lock;
	struct snfs_hdir *d;
	bool plus;
	uint64_t fileid; /* of the directory, for a made-up "." */
};

/* NFSv4 READDIR returns neither "." nor ".." (RFC 8881 section 18.23.4)
 * but readdir(3) callers expect them: they are added at offsets 1 and 2,
 * cookie values a server must not use (same section). */
enum { DOT_OFF = 1, DOTDOT_OFF = 2 };

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
                       struct fuse_file_info *fi)
{
	struct mnt *m = mnt_of(req);
	struct snfs_handle h;
	struct snfs_stat s;
	int rc = itab_handle(m->it, ino, &h);
	if (rc == 0)
		rc = snfs_h_getattr(m->ctx, &h, &s);
	if (rc == 0 && s.type != SNFS_DIR)
		rc = -ENOTDIR;
	struct mdir *md = rc == 0 ? calloc(1, sizeof(*md)) : NULL;
	if (rc == 0 && !md)
		rc = -ENOMEM;
	if (rc < 0) {
		reply_err(req, rc);
		return;
	}
	pthread_mutex_init(&md->lock, NULL);
	md->fileid = s.fileid;
	fi->fh = (uint64_t)(uintptr_t)md;
	fi->cache_readdir = 0;
	if (fuse_reply_open(req, fi) == -ENOENT) {
		pthread_mutex_destroy(&md->lock);
		free(md);
	}
}

/* The stream for this mode, reopened if the kernel switched between
 * READDIR and READDIRPLUS. Called locked. */
static int dir_stream(struct mnt *m, fuse_ino_t ino, struct mdir *md, bool plus)
{
	struct snfs_handle h;
	if (md->d && md->plus == plus)
		return 0;
	snfs_h_closedir(md->d);
	md->d = NULL;
	int rc = itab_handle(m->it, ino, &h);
	if (rc == 0)
		rc = snfs_h_opendir(m->ctx, &h, plus ? SNFS_DIR_PLUS : 0,
		                    &md->d);
	md->plus = plus;
	return rc;
}

static bool dot_or_dotdot(const char *n)
{
	return n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]));
}

/* Add one entry to buf at *pos; false when it does not fit. For
 * READDIRPLUS an entry with a handle and attributes counts as a lookup
 * (the kernel keeps the inode); "." and ".." never do. */
static bool add_entry(fuse_req_t req, struct mnt *m, bool plus, char *buf,
                      size_t size, size_t *pos, const struct snfs_hdirent *ent)
{
	struct fuse_entry_param e;
	size_t need;

	memset(&e, 0, sizeof(e));
	if (ent->have_attr)
		to_stat(&ent->attr, &e.attr);
	e.attr.st_ino = ent->fileid;
	if (!plus) {
		need = fuse_add_direntry(req, NULL, 0, ent->name, &e.attr, 0);
		if (*pos + need > size)
			return false;
		fuse_add_direntry(req, buf + *pos, size - *pos, ent->name,
		                  &e.attr, (off_t)ent->cookie);
		*pos += need;
		return true;
	}
	need = fuse_add_direntry_plus(req, NULL, 0, ent->name, &e, 0);
	if (*pos + need > size)
		return false;
	if (ent->have_attr && ent->have_handle && !dot_or_dotdot(ent->name)) {
		e.ino = itab_ref(m->it, &ent->handle);
		e.attr_timeout = m->attr_timeout;
		e.entry_timeout = m->entry_timeout;
	}
	fuse_add_direntry_plus(req, buf + *pos, size - *pos, ent->name, &e,
	                       (off_t)ent->cookie);
	*pos += need;
	return true;
}

static void read_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     struct fuse_file_info *fi, bool plus)
{
	struct mnt *m = mnt_of(req);
	struct mdir *md = (struct mdir *)(uintptr_t)fi->fh;
	struct snfs_hdirent ent;
	size_t pos = 0;
	char *buf = malloc(size);

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&md->lock);
	int rc = dir_stream(m, ino, md, plus);
	uint64_t after = (uint64_t)off;
	if (snfs_get_version(m->ctx) != SNFS_V3) {
		struct snfs_hdirent dot = {.fileid = md->fileid,
		                           .have_attr = true,
		                           .attr.type = SNFS_DIR,
		                           .attr.fileid = md->fileid};
		if (after == 0) {
			dot.name = ".";
			dot.cookie = DOT_OFF;
			add_entry(req, m, plus, buf, size, &pos, &dot);
			after = DOT_OFF;
		}
		if (after == DOT_OFF) {
			dot.name = "..";
			dot.cookie = DOTDOT_OFF;
			add_entry(req, m, plus, buf, size, &pos, &dot);
			after = DOTDOT_OFF;
		}
		if (after == DOTDOT_OFF)
			after = 0; /* the server's own entries from the start */
	}
	while (rc == 0) {
		rc = snfs_h_readdir(md->d, after, &ent);
		if (rc <= 0)
			break;
		if (!add_entry(req, m, plus, buf, size, &pos, &ent)) {
			rc = 0;
			break;
		}
		after = ent.cookie;
	}
	pthread_mutex_unlock(&md->lock);
	/* Entries already in buf stand; an error after them comes back on
	 * the next call. */
	if (rc < 0 && pos == 0)
		reply_err(req, rc);
	else
		fuse_reply_buf(req, buf, pos);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
	read_dir(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
                           off_t off, struct fuse_file_info *fi)
{
	read_dir(req, ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
                          struct fuse_file_info *fi)
{
	struct mdir *md = (struct mdir *)(uintptr_t)fi->fh;
	(void)ino;
	snfs_h_closedir(md->d);
	pthread_mutex_destroy(&md->lock);
	free(md);
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
                        struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, 0); /* directory operations are synchronous */
}

/* ---- session ---- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct mnt *m = userdata;

	/* The kernel's page cache holds writes only with the writeback
	 * cache, which would bypass libsnfs's partial pages: keep it off. */
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	conn->want |= conn->capable & FUSE_CAP_ATOMIC_O_TRUNC;
	conn->want |= conn->capable & FUSE_CAP_ASYNC_READ;
	/* fcntl locks go to the server over NFSv4; flock(2) stays local
	 * (the kernel's, as NFS clients emulate it with whole-file locks
	 * that would conflict with fcntl's on the same file). */
	if (snfs_get_version(m->ctx) != SNFS_V3 &&
	    (conn->capable & FUSE_CAP_POSIX_LOCKS))
		conn->want |= FUSE_CAP_POSIX_LOCKS;
	else
		conn->want &= ~(unsigned)FUSE_CAP_POSIX_LOCKS;
	conn->want &= ~(unsigned)FUSE_CAP_FLOCK_LOCKS;
	if (conn->max_write < (1u << 20))
		conn->max_write = 1u << 20;
	conn->max_readahead = conn->max_readahead ? conn->max_readahead : 0;
}

const struct fuse_lowlevel_ops mount_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readlink = op_readlink,
    .mknod = op_mknod,
    .mkdir = op_mkdir,
    .unlink = op_unlink,
    .rmdir = op_rmdir,
    .symlink = op_symlink,
    .rename = op_rename,
    .link = op_link,
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .flush = op_flush,
    .getlk = op_getlk,
    .setlk = op_setlk,
    .release = op_release,
    .fsync = op_fsync,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .readdirplus = op_readdirplus,
    .releasedir = op_releasedir,
    .fsyncdir = op_fsyncdir,
    .statfs = op_statfs,
    .create = op_create,
    .lseek = op_lseek,
    .fallocate = op_fallocate,
    .copy_file_range = op_copy_file_range,
};
