/* The public API: mounting, path resolution, files, names, counters.
 * Protocol work goes through ctx->ops; caching through pagecache.c and
 * readdir.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"
#include "client/pagecache.h"
#include "client/readdir.h"

#define DEFAULT_IO (1u << 20)
#define DEFAULT_DIRBUF (1u << 20)
#define DEFAULT_CACHE ((size_t)128 << 20)
#define DIRCACHE_BYTES ((size_t)64 << 20)
#define MAX_SYMLINKS 40
#define COPY_CHUNK (4u << 20)

static _Thread_local char last_error[512];

int snfs_fail(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}

const char *snfs_last_error(void)
{
	return last_error;
}

/* Fail with "what: strerror" unless a more precise message was set by a
 * lower layer for this very error. */
static int fail_op(int err, const char *what)
{
	return snfs_fail(err, "%s: %s", what,
	                 strerror(err == -SNFS_EBADCOOKIE ? EIO : -err));
}

struct snfs_file {
	struct snfs_ctx *c;
	struct pc_file *pf;
	int flags;
	void *proto_state;
	struct snfs_stat open_st; /* fetched at open (close-to-open) */
	bool open_changed;        /* ... and they showed a change */
};

static const struct snfs_proto_ops *proto_for(enum snfs_version v)
{
	if (v == SNFS_V3)
		return &snfs_nfs3_ops;
	return &snfs_nfs4_ops; /* NULL unless NFSv4 is linked in */
}

static void fill_groups(struct rpc_clnt_cfg *cfg, bool given)
{
	gid_t g[64];
	int n;

	cfg->ngids = 0;
	if (given)
		return;
	n = getgroups(64, g);
	for (int i = 0; i < n && cfg->ngids < RPC_CLNT_MAX_GIDS; i++)
		cfg->gids[cfg->ngids++] = (uint32_t)g[i];
}

static void ctx_free(struct snfs_ctx *c)
{
	if (c->rpc)
		rpc_clnt_close(c->rpc);
	pc_cache_free(c->pc);
	rd_cache_free(c->rd);
	snfs_url_free(&c->url);
	free(c->export);
	free(c->url_path);
	free(c);
}

static void apply_opts(struct snfs_ctx *c, const struct snfs_mount_opts *o)
{
	c->rsize = c->wsize = DEFAULT_IO;
	c->dirbuf = DEFAULT_DIRBUF;
	c->cache_size = DEFAULT_CACHE;
	c->rpc_cfg.timeout_ms = 60000;
	if (o) {
		if (o->rsize)
			c->rsize = o->rsize;
		if (o->wsize)
			c->wsize = o->wsize;
		if (o->readdir_buffer)
			c->dirbuf = o->readdir_buffer;
		if (o->cache_size)
			c->cache_size =
			    o->cache_size == SIZE_MAX ? 0 : o->cache_size;
		if (o->timeout_ms)
			c->rpc_cfg.timeout_ms = o->timeout_ms;
	}
	if (c->url.rsize)
		c->rsize = c->url.rsize;
	if (c->url.wsize)
		c->wsize = c->url.wsize;
	if (c->url.readdir_buffer)
		c->dirbuf = c->url.readdir_buffer;
	if (c->url.cache_given)
		c->cache_size = c->url.cache_size;
	if (c->url.timeout_ms)
		c->rpc_cfg.timeout_ms = c->url.timeout_ms;
	c->pagecache = o ? o->pagecache : SNFS_PC_DEFAULT;
	if (c->url.pagecache != SNFS_PC_DEFAULT)
		c->pagecache = c->url.pagecache;
	if (c->pagecache == SNFS_PC_OFF)
		c->cache_size = 0;
	if (c->rsize < 4096)
		c->rsize = 4096;
	if (c->wsize < 4096)
		c->wsize = 4096;
	if (c->dirbuf < 1024)
		c->dirbuf = 1024;
	if (c->dirbuf > (1u << 20))
		c->dirbuf = 1u << 20;
}

int snfs_mount(const char *url, const struct snfs_mount_opts *opts,
               struct snfs_ctx **out)
{
	struct snfs_ctx *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return snfs_fail(-ENOMEM, "out of memory");
	last_error[0] = 0;
	rc = snfs_url_parse(url, &c->url);
	if (rc < 0) {
		free(c);
		return rc;
	}
	c->version = c->url.version;
	c->ops = proto_for(c->version);
	if (!c->ops) {
		int v = c->version; /* c is freed below */
		ctx_free(c);
		return snfs_fail(-EPROTONOSUPPORT,
		                 "NFS version %d.%d is not built in", v / 10,
		                 v % 10);
	}
	apply_opts(c, opts);
	c->rpc_cfg.host = c->url.host;
	c->rpc_cfg.uid = c->url.uid;
	c->rpc_cfg.gid = c->url.gid;
	fill_groups(&c->rpc_cfg, c->url.uid_given || c->url.gid_given);
	size_t big = c->rsize > c->dirbuf ? c->rsize : c->dirbuf;
	c->rpc_cfg.max_reply = big + (256u << 10);
	rc = pc_cache_new(&c->pc, c->cache_size);
	if (rc == 0)
		c->pc->classic = c->pagecache == SNFS_PC_FULL;
	if (rc == 0)
		rc = rd_cache_new(&c->rd, DIRCACHE_BYTES);
	if (rc == 0)
		rc = c->ops->mount(c);
	if (rc < 0) {
		if (!last_error[0])
			fail_op(rc, url);
		ctx_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int snfs_umount(struct snfs_ctx *c)
{
	if (!c)
		return 0;
	if (c->ops->umount)
		c->ops->umount(c);
	ctx_free(c);
	return 0;
}

const char *snfs_export(const struct snfs_ctx *c)
{
	return c->export;
}

const char *snfs_url_path(const struct snfs_ctx *c)
{
	return c->url_path;
}

enum snfs_version snfs_get_version(const struct snfs_ctx *c)
{
	return c->version;
}

/* ---- paths ---- */

/* The path as seen from the export root, without leading '/'. */
static char *full_path(struct snfs_ctx *c, const char *path)
{
	char *s;
	if (path[0] == '/')
		return strdup(path + 1);
	if (!c->url_path[0])
		return strdup(path);
	if (!path[0] || !strcmp(path, "."))
		return strdup(c->url_path);
	if (asprintf(&s, "%s/%s", c->url_path, path) < 0)
		return NULL;
	return s;
}

struct walk {
	struct snfs_fh *stack; /* handles from the root down */
	size_t depth, cap;
};

static int walk_push(struct walk *w, const struct snfs_fh *fh)
{
	if (w->depth == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 8;
		struct snfs_fh *s = realloc(w->stack, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		w->stack = s;
		w->cap = cap;
	}
	w->stack[w->depth++] = *fh;
	return 0;
}

/* Walk path from the export root, component by component; '.' and '..'
 * are taken lexically (never above the root); symlinks are expanded,
 * absolute ones from the export root. */
static int walk_path(struct snfs_ctx *c, const char *path, bool follow,
                     struct snfs_fh *out, struct snfs_stat *st, bool *have_st)
{
	struct walk w = {0};
	char *work = strdup(path);
	int rc = 0, links = 0;

	*have_st = false;
	if (!work || walk_push(&w, &c->root) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	char *p = work;
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);
		char name[256];
		if (n > 255) {
			rc = -ENAMETOOLONG;
			goto out;
		}
		memcpy(name, p, n);
		name[n] = 0;
		char *rest = end;
		while (*rest == '/')
			rest++;
		p = rest;
		*have_st = false;
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			if (w.depth > 1)
				w.depth--;
			continue;
		}
		struct snfs_fh fh;
		bool have = false;
		rc = c->ops->lookup(c, &w.stack[w.depth - 1], name, &fh, st,
		                    &have);
		if (rc < 0)
			goto out;
		if (!have) {
			rc = c->ops->getattr(c, &fh, st);
			if (rc < 0)
				goto out;
		}
		*have_st = true;
		bool last = *rest == 0;
		if (st->type == SNFS_LNK && (!last || follow)) {
			char target[4096];
			if (++links > MAX_SYMLINKS) {
				rc = -ELOOP;
				goto out;
			}
			rc = c->ops->readlink(c, &fh, target, sizeof(target));
			if (rc < 0)
				goto out;
			char *nw;
			if (asprintf(&nw, "%s/%s", target, rest) < 0) {
				rc = -ENOMEM;
				goto out;
			}
			if (target[0] == '/')
				w.depth = 1;
			free(work);
			work = p = nw;
			*have_st = false;
			continue;
		}
		if (!last && st->type != SNFS_DIR) {
			rc = -ENOTDIR;
			goto out;
		}
		if ((rc = walk_push(&w, &fh)) < 0)
			goto out;
	}
	*out = w.stack[w.depth - 1];
out:
	free(work);
	free(w.stack);
	return rc;
}

int snfs_resolve(struct snfs_ctx *c, const char *path, bool follow,
                 struct snfs_fh *fh, struct snfs_stat *st)
{
	struct snfs_stat tmp;
	bool have;
	char *full = full_path(c, path);
	if (!full)
		return -ENOMEM;
	int rc = walk_path(c, full, follow, fh, st ? st : &tmp, &have);
	free(full);
	if (rc == 0 && st && !have)
		rc = c->ops->getattr(c, fh, st);
	return rc;
}

/* Split path into its parent directory (resolved) and last name. */
static int resolve_parent(struct snfs_ctx *c, const char *path,
                          struct snfs_fh *dir, char name[256])
{
	char *full = full_path(c, path);
	if (!full)
		return -ENOMEM;
	size_t n = strlen(full);
	while (n > 0 && full[n - 1] == '/')
		full[--n] = 0;
	char *slash = strrchr(full, '/');
	const char *last = slash ? slash + 1 : full;
	int rc = 0;
	if (!*last || !strcmp(last, ".") || !strcmp(last, ".."))
		rc = -EINVAL;
	else if (strlen(last) > 255)
		rc = -ENAMETOOLONG;
	if (rc == 0) {
		strcpy(name, last);
		if (slash)
			*slash = 0;
		else
			full[0] = 0;
		struct snfs_stat st;
		bool have;
		rc = walk_path(c, full, true, dir, &st, &have);
		if (rc == 0 && have && st.type != SNFS_DIR)
			rc = -ENOTDIR;
	}
	free(full);
	return rc;
}

/* ---- attributes ---- */

static int stat_common(struct snfs_ctx *c, const char *path, bool follow,
                       struct snfs_stat *st)
{
	struct snfs_fh fh;
	int rc = snfs_resolve(c, path, follow, &fh, st);
	return rc < 0 ? fail_op(rc, path) : 0;
}

int snfs_stat(struct snfs_ctx *c, const char *path, struct snfs_stat *st)
{
	return stat_common(c, path, true, st);
}

int snfs_lstat(struct snfs_ctx *c, const char *path, struct snfs_stat *st)
{
	return stat_common(c, path, false, st);
}

int snfs_setattr(struct snfs_ctx *c, const char *path,
                 const struct snfs_setattr *sa)
{
	struct snfs_fh fh;
	struct snfs_stat post;
	bool have;
	int rc = snfs_resolve(c, path, true, &fh, NULL);
	if (rc == 0 && (sa->mask & SNFS_SET_SIZE)) {
		struct pc_file *pf = pc_file_get(c, &fh);
		rc = pf ? pc_truncate(pf, sa->size) : -ENOMEM;
		if (pf)
			pc_file_put(pf);
	}
	struct snfs_setattr rest = *sa;
	rest.mask &= ~(unsigned)SNFS_SET_SIZE;
	if (rc == 0 && rest.mask)
		rc = c->ops->setattr(c, &fh, &rest, &post, &have);
	return rc < 0 ? fail_op(rc, path) : 0;
}

int snfs_truncate(struct snfs_ctx *c, const char *path, uint64_t size)
{
	struct snfs_setattr sa = {.mask = SNFS_SET_SIZE, .size = size};
	return snfs_setattr(c, path, &sa);
}

int snfs_statvfs(struct snfs_ctx *c, const char *path, struct snfs_statvfs *sv)
{
	struct snfs_fh fh;
	int rc = snfs_resolve(c, path, true, &fh, NULL);
	if (rc == 0)
		rc = c->ops->statvfs(c, &fh, sv);
	return rc < 0 ? fail_op(rc, path) : 0;
}

/* ---- files ---- */

static int open_create(struct snfs_ctx *c, const char *path, int flags,
                       mode_t mode, struct snfs_fh *fh, struct snfs_stat *st)
{
	struct snfs_fh dir;
	char name[256];
	bool have = false;
	int rc = resolve_parent(c, path, &dir, name);
	if (rc < 0)
		return rc;
	rc = c->ops->lookup(c, &dir, name, fh, st, &have);
	if (rc == 0 && (flags & O_EXCL))
		return -EEXIST;
	if (rc == -ENOENT) {
		rc = c->ops->create(c, &dir, name, mode & 07777,
		                    (flags & O_EXCL) != 0, fh);
		have = false;
	}
	if (rc == 0 && !have)
		rc = c->ops->getattr(c, fh, st);
	if (rc == 0 && st->type == SNFS_LNK) /* follow it like open(2) */
		rc = snfs_resolve(c, path, true, fh, st);
	return rc;
}

int snfs_open(struct snfs_ctx *c, const char *path, int flags, mode_t mode,
              struct snfs_file **out)
{
	struct snfs_fh fh;
	struct snfs_stat st;
	int acc = flags & O_ACCMODE, rc;

	if (flags & O_CREAT)
		rc = open_create(c, path, flags, mode, &fh, &st);
	else
		rc = snfs_resolve(c, path, true, &fh, &st);
	if (rc == 0 && st.type == SNFS_DIR && acc != O_RDONLY)
		rc = -EISDIR;
	if (rc < 0)
		return fail_op(rc, path);
	struct snfs_file *f = calloc(1, sizeof(*f));
	if (!f)
		return fail_op(-ENOMEM, path);
	f->c = c;
	f->flags = flags;
	f->pf = pc_file_get(c, &fh);
	if (!f->pf) {
		free(f);
		return fail_op(-ENOMEM, path);
	}
	/* Close-to-open: the attributes just fetched decide whether what we
	 * cached of this file is still good. */
	f->open_changed = pc_file_validate(f->pf, &st);
	f->open_st = st;
	if ((flags & O_TRUNC) && acc != O_RDONLY && st.size > 0)
		rc = pc_truncate(f->pf, 0);
	if (rc == 0 && c->ops->open_state)
		rc = c->ops->open_state(c, f, flags);
	if (rc < 0) {
		pc_file_put(f->pf);
		free(f);
		return fail_op(rc, path);
	}
	*out = f;
	return 0;
}

ssize_t snfs_pread(struct snfs_file *f, void *buf, size_t count, uint64_t off)
{
	if ((f->flags & O_ACCMODE) == O_WRONLY)
		return snfs_fail(-EBADF, "file not open for reading");
	ssize_t n = pc_read(f->pf, buf, count, off);
	return n < 0 ? fail_op((int)n, "read") : n;
}

ssize_t snfs_pwrite(struct snfs_file *f, const void *buf, size_t count,
                    uint64_t off)
{
	if ((f->flags & O_ACCMODE) == O_RDONLY)
		return snfs_fail(-EBADF, "file not open for writing");
	if (f->flags & O_APPEND)
		off = pc_size(f->pf);
	ssize_t n = pc_write(f->pf, buf, count, off);
	return n < 0 ? fail_op((int)n, "write") : n;
}

int snfs_fsync(struct snfs_file *f)
{
	int rc = pc_flush(f->pf, true);
	return rc < 0 ? fail_op(rc, "fsync") : 0;
}

int snfs_close(struct snfs_file *f)
{
	if (!f)
		return 0;
	int rc = pc_flush(f->pf, true);
	if (f->c->ops->close_state) {
		int r = f->c->ops->close_state(f->c, f);
		if (rc == 0)
			rc = r;
	}
	pc_file_put(f->pf);
	free(f);
	return rc < 0 ? fail_op(rc, "close") : 0;
}

int snfs_fstat(struct snfs_file *f, struct snfs_stat *st)
{
	int rc = f->c->ops->getattr(f->c, &f->pf->fh, st);
	if (rc < 0)
		return fail_op(rc, "fstat");
	uint64_t sz = pc_size(f->pf);
	if (sz > st->size)
		st->size = sz; /* writes not yet sent */
	return 0;
}

bool snfs_open_attrs(struct snfs_file *f, struct snfs_stat *st)
{
	*st = f->open_st;
	st->size = pc_size(f->pf); /* moved by our writes and truncations */
	return f->open_changed;
}

int snfs_ftruncate(struct snfs_file *f, uint64_t size)
{
	int rc = pc_truncate(f->pf, size);
	return rc < 0 ? fail_op(rc, "truncate") : 0;
}

int64_t snfs_seek_data(struct snfs_file *f, uint64_t off)
{
	if (!f->c->ops->seek)
		return snfs_fail(-EOPNOTSUPP, "SEEK needs NFSv4.2 (this is %s)",
		                 f->c->ops->name);
	int rc = pc_flush(f->pf, false);
	if (rc < 0)
		return fail_op(rc, "seek");
	int64_t r = f->c->ops->seek(f->c, f, off, true);
	return r < 0 ? fail_op((int)r, "seek") : r;
}

int64_t snfs_seek_hole(struct snfs_file *f, uint64_t off)
{
	if (!f->c->ops->seek)
		return snfs_fail(-EOPNOTSUPP, "SEEK needs NFSv4.2 (this is %s)",
		                 f->c->ops->name);
	int rc = pc_flush(f->pf, false);
	if (rc < 0)
		return fail_op(rc, "seek");
	int64_t r = f->c->ops->seek(f->c, f, off, false);
	return r < 0 ? fail_op((int)r, "seek") : r;
}

static int space_op(struct snfs_file *f, uint64_t off, uint64_t len, bool alloc)
{
	int (*op)(struct snfs_ctx *, struct snfs_file *, uint64_t, uint64_t) =
	    alloc ? f->c->ops->allocate : f->c->ops->deallocate;
	if (!op)
		return snfs_fail(-EOPNOTSUPP, "%s needs NFSv4.2",
		                 alloc ? "ALLOCATE" : "DEALLOCATE");
	int rc = pc_flush(f->pf, true);
	if (rc == 0)
		rc = op(f->c, f, off, len);
	/* DEALLOCATE leaves the cached bytes there stale; ALLOCATE past the
	 * end makes the file longer (RFC 7862 section 15.1.3), which reads
	 * of the new range must see. Take the server's size and attributes
	 * as after any change made on the server. */
	if (rc == 0) {
		struct snfs_stat st;
		if (f->c->ops->getattr(f->c, &f->pf->fh, &st) == 0) {
			pthread_mutex_lock(&f->pf->lock);
			f->pf->have_validator = false;
			pthread_mutex_unlock(&f->pf->lock);
			pc_file_validate(f->pf, &st);
		}
	}
	return rc < 0 ? fail_op(rc, alloc ? "allocate" : "punch hole") : 0;
}

/* snfs_setlk and snfs_getlk: -EAGAIN (a conflict, for setlk) is an
 * answer, not a failure to report. */
static int lock_op(struct snfs_file *f, struct snfs_flock *l, bool blocking,
                   bool test)
{
	int rc;

	if (!f->c->ops->lock)
		return snfs_fail(-ENOLCK, "locks need NFSv4 (this is %s)",
		                 f->c->ops->name);
	if (l->type != F_RDLCK && l->type != F_WRLCK &&
	    (test || l->type != F_UNLCK))
		return -EINVAL;
	rc = f->c->ops->lock(f->c, f, l, blocking, test);
	return rc < 0 && rc != -EAGAIN
	           ? fail_op(rc, test ? "lock test" : "lock")
	           : rc;
}

int snfs_setlk(struct snfs_file *f, const struct snfs_flock *l, bool blocking)
{
	struct snfs_flock copy = *l;

	return lock_op(f, &copy, blocking, false);
}

int snfs_getlk(struct snfs_file *f, struct snfs_flock *l)
{
	return lock_op(f, l, false, true);
}

int snfs_allocate(struct snfs_file *f, uint64_t off, uint64_t len)
{
	return space_op(f, off, len, true);
}

int snfs_punch_hole(struct snfs_file *f, uint64_t off, uint64_t len)
{
	return space_op(f, off, len, false);
}

int64_t snfs_copy(struct snfs_file *src, uint64_t soff, struct snfs_file *dst,
                  uint64_t doff, uint64_t len)
{
	struct snfs_ctx *c = src->c;

	if (c == dst->c && c->ops->copy) {
		int rc = pc_flush(src->pf, true);
		if (rc == 0)
			rc = pc_flush(dst->pf, true);
		if (rc < 0)
			return fail_op(rc, "copy");
		int64_t n = c->ops->copy(c, src, soff, dst, doff, len);
		if (n != -EOPNOTSUPP && n != -ENOTSUP)
			return n < 0 ? fail_op((int)n, "copy") : n;
	}
	/* No server-side COPY: read and write through the caches. */
	uint8_t *buf = malloc(COPY_CHUNK);
	int64_t done = 0;
	if (!buf)
		return snfs_fail(-ENOMEM, "out of memory");
	while ((uint64_t)done < len) {
		size_t want = len - (uint64_t)done < COPY_CHUNK
		                  ? (size_t)(len - (uint64_t)done)
		                  : COPY_CHUNK;
		ssize_t n = snfs_pread(src, buf, want, soff + (uint64_t)done);
		if (n <= 0) {
			if (n < 0)
				done = n;
			break;
		}
		ssize_t w =
		    snfs_pwrite(dst, buf, (size_t)n, doff + (uint64_t)done);
		if (w < 0) {
			done = w;
			break;
		}
		done += w;
	}
	free(buf);
	return done;
}

ssize_t snfs_read_segments(struct snfs_file *f, void *buf, size_t count,
                           uint64_t off, struct snfs_segment *segs,
                           size_t max_segs, size_t *nsegs, bool *eof)
{
	struct snfs_ctx *c = f->c;

	*nsegs = 0;
	if (max_segs == 0)
		return snfs_fail(-EINVAL, "no room for segments");
	if (c->ops->read_segments) {
		int rc = pc_flush(f->pf, false);
		if (rc < 0)
			return fail_op(rc, "read");
		ssize_t n = c->ops->read_segments(c, f, buf, count, off, segs,
		                                  max_segs, nsegs, eof);
		if (n != -EOPNOTSUPP)
			return n < 0 ? fail_op((int)n, "read") : n;
	}
	/* Without READ_PLUS all we know is data. */
	ssize_t n = snfs_pread(f, buf, count, off);
	if (n < 0)
		return n;
	*eof = (size_t)n < count;
	if (n > 0) {
		segs[0] = (struct snfs_segment){off, (uint64_t)n, false};
		*nsegs = 1;
	}
	return n;
}

ssize_t snfs_read_pieces(struct snfs_file *f, uint64_t off, size_t count,
                         snfs_pieces_fn fn, void *arg, bool *eof)
{
	struct snfs_ctx *c = f->c;
	ssize_t n;

	*eof = false;
	int rc = pc_flush(f->pf, false);
	if (rc < 0)
		return fail_op(rc, "read");
	n = c->ops->read_pieces(c, f, off, count, fn, arg, eof);
	if (n == -EOPNOTSUPP) /* no READ_PLUS after all: READ now */
		n = c->ops->read_pieces(c, f, off, count, fn, arg, eof);
	return n < 0 ? fail_op((int)n, "read") : n;
}

/* ---- names ---- */

typedef int (*dir_name_fn)(struct snfs_ctx *, const struct snfs_fh *,
                           const char *);

static int on_parent(struct snfs_ctx *c, const char *path, dir_name_fn fn)
{
	struct snfs_fh dir;
	char name[256];
	int rc = resolve_parent(c, path, &dir, name);
	if (rc == 0)
		rc = fn(c, &dir, name);
	return rc < 0 ? fail_op(rc, path) : 0;
}

int snfs_mkdir(struct snfs_ctx *c, const char *path, mode_t mode)
{
	struct snfs_fh dir;
	char name[256];
	int rc = resolve_parent(c, path, &dir, name);
	if (rc == 0)
		rc = c->ops->mkdir(c, &dir, name, mode & 07777);
	return rc < 0 ? fail_op(rc, path) : 0;
}

int snfs_rmdir(struct snfs_ctx *c, const char *path)
{
	return on_parent(c, path, c->ops->rmdir);
}

int snfs_unlink(struct snfs_ctx *c, const char *path)
{
	return on_parent(c, path, c->ops->remove);
}

int snfs_rename(struct snfs_ctx *c, const char *from, const char *to)
{
	struct snfs_fh fdir, tdir;
	char fname[256], tname[256];
	int rc = resolve_parent(c, from, &fdir, fname);
	if (rc < 0)
		return fail_op(rc, from);
	rc = resolve_parent(c, to, &tdir, tname);
	if (rc < 0)
		return fail_op(rc, to);
	rc = c->ops->rename(c, &fdir, fname, &tdir, tname);
	return rc < 0 ? snfs_fail(rc, "rename %s to %s: %s", from, to,
	                          strerror(-rc))
	              : 0;
}

int snfs_link(struct snfs_ctx *c, const char *target, const char *path)
{
	struct snfs_fh fh, dir;
	char name[256];
	int rc = snfs_resolve(c, target, false, &fh, NULL);
	if (rc < 0)
		return fail_op(rc, target);
	rc = resolve_parent(c, path, &dir, name);
	if (rc == 0)
		rc = c->ops->link(c, &fh, &dir, name);
	return rc < 0 ? fail_op(rc, path) : 0;
}

int snfs_symlink(struct snfs_ctx *c, const char *target, const char *path)
{
	struct snfs_fh dir;
	char name[256];
	int rc = resolve_parent(c, path, &dir, name);
	if (rc == 0)
		rc = c->ops->symlink(c, &dir, name, target);
	return rc < 0 ? fail_op(rc, path) : 0;
}

int snfs_readlink(struct snfs_ctx *c, const char *path, char *buf, size_t size)
{
	struct snfs_fh fh;
	int rc = snfs_resolve(c, path, false, &fh, NULL);
	if (rc == 0)
		rc = c->ops->readlink(c, &fh, buf, size);
	return rc < 0 ? fail_op(rc, path) : rc;
}

/* ---- counters ---- */

static const char *const op_names[SNFS_OP_MAX] = {
    [SNFS_OP_NULL] = "null",         [SNFS_OP_GETATTR] = "getattr",
    [SNFS_OP_SETATTR] = "setattr",   [SNFS_OP_LOOKUP] = "lookup",
    [SNFS_OP_ACCESS] = "access",     [SNFS_OP_READLINK] = "readlink",
    [SNFS_OP_READ] = "read",         [SNFS_OP_WRITE] = "write",
    [SNFS_OP_CREATE] = "create",     [SNFS_OP_MKDIR] = "mkdir",
    [SNFS_OP_SYMLINK] = "symlink",   [SNFS_OP_MKNOD] = "mknod",
    [SNFS_OP_REMOVE] = "remove",     [SNFS_OP_RMDIR] = "rmdir",
    [SNFS_OP_RENAME] = "rename",     [SNFS_OP_LINK] = "link",
    [SNFS_OP_READDIR] = "readdir",   [SNFS_OP_READDIRPLUS] = "readdirplus",
    [SNFS_OP_FSSTAT] = "fsstat",     [SNFS_OP_FSINFO] = "fsinfo",
    [SNFS_OP_PATHCONF] = "pathconf", [SNFS_OP_COMMIT] = "commit",
    [SNFS_OP_MOUNT] = "mount",       [SNFS_OP_GETPORT] = "getport",
    [SNFS_OP_COMPOUND] = "compound", [SNFS_OP_READ_PLUS] = "read_plus",
    [SNFS_OP_SEEK] = "seek",         [SNFS_OP_COPY] = "copy",
    [SNFS_OP_ALLOCATE] = "allocate", [SNFS_OP_DEALLOCATE] = "deallocate",
};

const char *snfs_op_name(enum snfs_op op)
{
	return op < SNFS_OP_MAX && op_names[op] ? op_names[op] : "?";
}

void snfs_stats(struct snfs_ctx *c, struct snfs_stats *o)
{
	const struct snfs_counters *s = &c->stats;
	memset(o, 0, sizeof(*o));
	for (int i = 0; i < SNFS_OP_MAX; i++) {
		o->calls[i] = counter_get(&s->calls[i]);
		o->total_calls += o->calls[i];
	}
	o->retransmits = counter_get(&s->retransmits);
	o->reconnects = counter_get(&s->reconnects);
	o->bytes_sent = counter_get(&s->bytes_sent);
	o->bytes_received = counter_get(&s->bytes_received);
	o->read_bytes = counter_get(&s->read_bytes);
	o->write_bytes = counter_get(&s->write_bytes);
	o->cache_hits = counter_get(&s->cache_hits);
	o->cache_misses = counter_get(&s->cache_misses);
	o->write_resends = counter_get(&s->write_resends);
	o->readdir_resumes = counter_get(&s->readdir_resumes);
	o->readdir_restarts = counter_get(&s->readdir_restarts);
}

void snfs_stats_reset(struct snfs_ctx *c)
{
	uint64_t *p = (uint64_t *)&c->stats;
	for (size_t i = 0; i < sizeof(c->stats) / sizeof(uint64_t); i++)
		__atomic_store_n(&p[i], 0, __ATOMIC_RELAXED);
}

/* ---- open by handle (snfs-mount; the rest of the handle API is in
 * fuse_support.c, which cannot see struct snfs_file) ---- */

int snfs_h_open(struct snfs_ctx *c, const struct snfs_handle *h, int flags,
                struct snfs_file **out)
{
	struct snfs_fh fh;
	struct snfs_stat st;
	int acc = flags & O_ACCMODE;

	if (h->len > SNFS_FH_MAX)
		return snfs_fail(-EINVAL, "handle too long");
	fh.len = h->len;
	memcpy(fh.data, h->data, h->len);
	int rc = c->ops->getattr(c, &fh, &st);
	if (rc == 0 && st.type == SNFS_DIR && acc != O_RDONLY)
		rc = -EISDIR;
	if (rc < 0)
		return fail_op(rc, "open");
	struct snfs_file *f = calloc(1, sizeof(*f));
	if (!f)
		return fail_op(-ENOMEM, "open");
	f->c = c;
	f->flags = flags & ~(O_CREAT | O_EXCL);
	f->pf = pc_file_get(c, &fh);
	if (!f->pf) {
		free(f);
		return fail_op(-ENOMEM, "open");
	}
	f->open_changed = pc_file_validate(f->pf, &st); /* as in snfs_open */
	f->open_st = st;
	if ((flags & O_TRUNC) && acc != O_RDONLY && st.size > 0)
		rc = pc_truncate(f->pf, 0);
	if (rc == 0 && c->ops->open_state)
		rc = c->ops->open_state(c, f, f->flags);
	if (rc < 0) {
		pc_file_put(f->pf);
		free(f);
		return fail_op(rc, "open");
	}
	*out = f;
	return 0;
}

/* ---- accessors for protocol code (client.h) ---- */

struct pc_file *snfs_file_pc(struct snfs_file *f)
{
	return f->pf;
}

void **snfs_file_state(struct snfs_file *f)
{
	return &f->proto_state;
}
