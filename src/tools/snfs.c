/* snfs: NFS without a mount. cp (sparse-aware), cat, ls, stat, holes,
 * mkdir, rm, mv, df over libsnfs; messages and exit codes follow
 * coreutils (0 success, 1 failure, 2 for usage errors of ls-like
 * commands is not used: every usage error exits 1 with a hint). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "snfs/snfs.h"
#include "tools/snfs_bench.h"

/* 16 rsize-sized calls in flight per read (libsnfs pipelines them) */
#define CHUNK (16u << 20)
/* snfs cat reads this much per snfs_read_pieces: no buffer is needed,
 * and a long span lets a hole reply spare the calls for the rest of it */
#define CAT_SPAN ((size_t)1 << 30)
#define ZBLOCK 4096u
#define MIB (1ull << 20)

static const char *prog = "snfs";
static bool quiet, show_stats;

static void err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void err_msg(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s%s%s: ", prog, cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", prog);
	return 1;
}

/* The error text libsnfs gives is "what: why"; coreutils prints
 * "cannot X 'path': why", so keep only the why. */
static const char *why(int rc)
{
	return strerror(-rc == 10003 ? EIO : -rc);
}

static void print_stats(struct snfs_ctx *c, const char *label)
{
	struct snfs_stats s;
	if (!show_stats || !c)
		return;
	snfs_stats(c, &s);
	fprintf(stderr, "stats %s: calls=%" PRIu64, label, s.total_calls);
	for (int i = 0; i < SNFS_OP_MAX; i++)
		if (s.calls[i])
			fprintf(stderr, " %s=%" PRIu64,
			        snfs_op_name((enum snfs_op)i), s.calls[i]);
	fprintf(stderr,
	        " retransmits=%" PRIu64 " reconnects=%" PRIu64
	        " write_resends=%" PRIu64 " readdir_resumes=%" PRIu64
	        " readdir_restarts=%" PRIu64 " sent=%" PRIu64
	        " received=%" PRIu64 "\n",
	        s.retransmits, s.reconnects, s.write_resends, s.readdir_resumes,
	        s.readdir_restarts, s.bytes_sent, s.bytes_received);
}

/* ---- mounts: one per URL argument ---- */

struct target {
	struct snfs_ctx *ctx; /* NULL: a local path */
	const char *arg;
	const char *local;
};

static int open_target(const char *arg, struct target *t)
{
	memset(t, 0, sizeof(*t));
	t->arg = arg;
	if (!snfs_is_url(arg)) {
		t->local = arg;
		return 0;
	}
	int rc = snfs_mount(arg, NULL, &t->ctx);
	if (rc < 0) {
		err_msg("%s", snfs_last_error());
		return rc;
	}
	return 0;
}

static void close_target(struct target *t)
{
	if (t->ctx) {
		print_stats(t->ctx, t->arg);
		snfs_umount(t->ctx);
	}
	t->ctx = NULL;
}

/* ---- a progress bar on a terminal ---- */

struct progress {
	bool on;
	uint64_t total, done;
	struct timespec start, last;
};

static double secs_since(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) +
	       (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static void progress_init(struct progress *p, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->on = !quiet && isatty(STDERR_FILENO);
	p->total = total;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	p->last = p->start;
}

static void progress_show(struct progress *p, bool final)
{
	if (!p->on || (!final && secs_since(&p->last) < 0.1))
		return;
	clock_gettime(CLOCK_MONOTONIC, &p->last);
	double t = secs_since(&p->start);
	double rate = t > 0 ? (double)p->done / t : 0;
	char eta[32] = "--:--";
	if (p->total && rate > 0 && p->done <= p->total) {
		unsigned s = (unsigned)((double)(p->total - p->done) / rate);
		snprintf(eta, sizeof(eta), "%u:%02u", s / 60, s % 60);
	}
	int pct = p->total ? (int)(p->done * 100 / p->total) : 100;
	int bar = pct * 30 / 100;
	fprintf(stderr, "\r[%.*s%*s] %3d%% %8.1f MiB %7.1f MiB/s ETA %s ", bar,
	        "==============================", 30 - bar, "", pct,
	        (double)p->done / MIB, rate / MIB, eta);
	if (final)
		fputc('\n', stderr);
}

/* ---- files on either side ---- */

struct file {
	int fd;
	struct snfs_file *nf;
	uint64_t size;
	bool seekable; /* local SEEK_DATA works */
};

static ssize_t file_pread(struct file *f, void *buf, size_t n, uint64_t off)
{
	if (f->nf)
		return snfs_pread(f->nf, buf, n, off);
	ssize_t r;
	do
		r = f->seekable ? pread(f->fd, buf, n, (off_t)off)
		                : read(f->fd, buf, n);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

static ssize_t file_pwrite(struct file *f, const void *buf, size_t n,
                           uint64_t off)
{
	if (f->nf)
		return snfs_pwrite(f->nf, buf, n, off);
	size_t done = 0;
	while (done < n) {
		ssize_t r = pwrite(f->fd, (const char *)buf + done, n - done,
		                   (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		done += (size_t)r;
	}
	return (ssize_t)n;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	static const uint8_t zero[ZBLOCK];
	while (n >= ZBLOCK) {
		if (memcmp(p, zero, ZBLOCK))
			return false;
		p += ZBLOCK;
		n -= ZBLOCK;
	}
	return n == 0 || memcmp(p, zero, n) == 0;
}

/* Write buf at off, leaving all-zero 4 KiB blocks (aligned in the file)
 * unwritten, so they stay holes in the freshly truncated target. */
static int write_sparse(struct file *dst, const uint8_t *buf, size_t n,
                        uint64_t off)
{
	size_t i = 0;
	while (i < n) {
		size_t blk = ZBLOCK - (size_t)((off + i) % ZBLOCK);
		if (blk > n - i)
			blk = n - i;
		if (all_zero(buf + i, blk)) {
			i += blk;
			continue;
		}
		/* extend a run of non-zero blocks */
		size_t j = i + blk;
		while (j < n) {
			size_t b = ZBLOCK < n - j ? ZBLOCK : n - j;
			if (all_zero(buf + j, b))
				break;
			j += b;
		}
		ssize_t w = file_pwrite(dst, buf + i, j - i, off + i);
		if (w < 0)
			return (int)w;
		i = j;
	}
	return 0;
}

/* The next data segment of a local file at or after off: [*d, *h). */
static bool local_next_data(struct file *f, uint64_t off, uint64_t *d,
                            uint64_t *h)
{
	off_t a = lseek(f->fd, (off_t)off, SEEK_DATA);
	if (a < 0)
		return false;
	off_t b = lseek(f->fd, a, SEEK_HOLE);
	if (b < 0)
		b = (off_t)f->size;
	*d = (uint64_t)a;
	*h = (uint64_t)b;
	return true;
}

static int open_src(struct target *t, const char *path, struct file *f)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	if (t->ctx) {
		struct snfs_stat st;
		int rc = snfs_open(t->ctx, path, O_RDONLY, 0, &f->nf);
		if (rc == 0)
			rc = snfs_fstat(f->nf, &st);
		if (rc < 0)
			return rc;
		if (st.type == SNFS_DIR)
			return -EISDIR;
		f->size = st.size;
		return 0;
	}
	struct stat st;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0 || fstat(f->fd, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	f->size = (uint64_t)st.st_size;
	f->seekable = S_ISREG(st.st_mode) || S_ISBLK(st.st_mode);
	return 0;
}

static int close_file(struct file *f)
{
	int rc = 0;
	if (f->nf)
		rc = snfs_close(f->nf);
	if (f->fd >= 0 && close(f->fd) < 0 && rc == 0)
		rc = -errno;
	f->nf = NULL;
	f->fd = -1;
	return rc;
}

static const char *base_name(const char *p)
{
	static char buf[4096];
	snprintf(buf, sizeof(buf), "%s", p);
	size_t n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = 0;
	const char *s = strrchr(buf, '/');
	if (snfs_is_url(p)) {
		char *q = strchr(buf, '?');
		if (q)
			*q = 0;
		s = strrchr(buf, '/');
	}
	return s ? s + 1 : buf;
}

/* Where cp writes: into DST itself, or DST/basename(SRC) when DST is a
 * directory. Returns an allocated path (relative for NFS). */
static char *dst_path(struct target *dt, const char *srcarg)
{
	char *out = NULL;
	if (dt->ctx) {
		struct snfs_stat st;
		if (snfs_stat(dt->ctx, "", &st) == 0 && st.type == SNFS_DIR)
			return strdup(base_name(srcarg));
		return strdup("");
	}
	struct stat st;
	if (stat(dt->local, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (asprintf(&out, "%s/%s", dt->local, base_name(srcarg)) < 0)
			return NULL;
		return out;
	}
	return strdup(dt->local);
}

static int open_dst(struct target *t, const char *path, struct file *f)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	if (t->ctx)
		return snfs_open(t->ctx, path, O_WRONLY | O_CREAT | O_TRUNC,
		                 0644, &f->nf);
	f->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	return f->fd < 0 ? -errno : 0;
}

static int set_size(struct file *f, uint64_t size)
{
	if (f->nf)
		return snfs_ftruncate(f->nf, size);
	struct stat st;
	if (fstat(f->fd, &st) == 0 && !S_ISREG(st.st_mode))
		return 0;
	return ftruncate(f->fd, (off_t)size) < 0 ? -errno : 0;
}

/* snfs_read_pieces callback of copy_range: data to dst at its offset,
 * holes left as holes. */
static int cp_pieces(void *arg, const struct snfs_piece *v, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++)
		if (v[i].data)
			rc = write_sparse(arg, v[i].data, (size_t)v[i].len,
			                  v[i].off);
	return rc;
}

/* Copy [d, h) of src to dst through buf (or straight from the replies). */
static int copy_range(struct file *src, struct file *dst, uint8_t *buf,
                      uint64_t d, uint64_t h, uint64_t *end,
                      struct progress *pg)
{
	uint64_t off = d;
	while (off < h) {
		size_t want = h - off < CHUNK ? (size_t)(h - off) : CHUNK;
		ssize_t n;
		int rc = 0;
		if (src->nf) {
			/* READ_PLUS on NFSv4.2: hole segments are never sent
			 * as zeros and stay holes in the target; data goes
			 * from the replies to the target without a copy */
			bool eof;
			n = snfs_read_pieces(src->nf, off, want, cp_pieces, dst,
			                     &eof);
		} else {
			n = file_pread(src, buf, want, off);
			if (n > 0)
				rc = write_sparse(dst, buf, (size_t)n, off);
		}
		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		if (rc < 0)
			return rc;
		off += (uint64_t)n;
		if (off > *end)
			*end = off;
		pg->done += (uint64_t)n;
		progress_show(pg, false);
	}
	return 0;
}

static int copy_data(struct file *src, struct file *dst, const char *what)
{
	uint8_t *buf;
	uint64_t end = 0;
	struct progress pg;
	int rc = 0;

	if (posix_memalign((void **)&buf, 4096, CHUNK))
		return -ENOMEM;
	progress_init(&pg, src->size);
	if (src->seekable && !src->nf) {
		uint64_t d, h, off = 0;
		bool any = false;
		while (off < src->size && local_next_data(src, off, &d, &h)) {
			any = true;
			pg.done += d - off;
			rc = copy_range(src, dst, buf, d, h, &end, &pg);
			if (rc < 0)
				break;
			off = h;
		}
		if (!any && errno != ENXIO && src->size)
			rc = copy_range(src, dst, buf, 0, src->size, &end, &pg);
		end = src->size;
	} else if (src->nf) {
		rc = copy_range(src, dst, buf, 0, src->size, &end, &pg);
		if (end < src->size)
			end = src->size;
	} else {
		rc = copy_range(src, dst, buf, 0, UINT64_MAX, &end, &pg);
	}
	if (rc == 0)
		rc = set_size(dst, end);
	pg.done = pg.total ? pg.total : pg.done;
	progress_show(&pg, true);
	free(buf);
	(void)what;
	return rc;
}

static int cmd_cp(int argc, char **argv)
{
	int opt;
	optind = 1;
	while ((opt = getopt(argc, argv, "q")) != -1) {
		if (opt == 'q')
			quiet = true;
		else
			return usage_error("cp", "bad option");
	}
	if (argc - optind != 2)
		return usage_error("cp",
		                   argc - optind < 2
		                       ? "missing destination file operand"
		                       : "extra operand '%s'",
		                   argv[optind + 2]);
	const char *sarg = argv[optind], *darg = argv[optind + 1];
	struct target st, dt;
	struct file src, dst;
	int rc;

	if (open_target(sarg, &st) < 0)
		return 1;
	if (open_target(darg, &dt) < 0) {
		close_target(&st);
		return 1;
	}
	rc = open_src(&st, st.ctx ? "" : st.local, &src);
	if (rc < 0) {
		err_msg("cannot open '%s' for reading: %s", sarg, why(rc));
		goto out;
	}
	char *dp = dst_path(&dt, sarg);
	rc = dp ? open_dst(&dt, dp, &dst) : -ENOMEM;
	if (rc < 0) {
		err_msg("cannot create regular file '%s': %s", darg, why(rc));
		free(dp);
		close_file(&src);
		goto out;
	}
	free(dp);
	rc = copy_data(&src, &dst, darg);
	if (rc < 0)
		err_msg("error copying '%s' to '%s': %s", sarg, darg, why(rc));
	int r = close_file(&dst);
	if (r < 0 && rc == 0) {
		err_msg("error writing '%s': %s", darg, why(r));
		rc = r;
	}
	close_file(&src);
out:
	close_target(&st);
	close_target(&dt);
	return rc < 0 ? 1 : 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Enough zeros for any hole, written from one buffer: a hole costs no
 * memset. */
static const uint8_t zero[1u << 20];

/* Write v[0..n) whole, however the kernel splits it. */
static int writev_all(int fd, struct iovec *v, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, v, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		while (n > 0 && (size_t)w >= v->iov_len) {
			w -= (ssize_t)v->iov_len;
			v++;
			n--;
		}
		if (n > 0) {
			v->iov_base = (uint8_t *)v->iov_base + w;
			v->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/* An NFS file to stdout, straight from the replies (snfs_read_pieces):
 * one writev per reply, data from the reply buffers and holes from the
 * zero buffer, so no byte is copied in user space. */
#define CAT_IOV 1024

static int cat_pieces(void *arg, const struct snfs_piece *v, size_t n)
{
	struct iovec iov[CAT_IOV];
	int k = 0, rc = 0;

	(void)arg;
	for (size_t i = 0; i < n && rc == 0; i++) {
		uint64_t len = v[i].len;
		const uint8_t *p = v[i].data;

		while (len > 0 && rc == 0) {
			size_t m = p || len < sizeof(zero) ? (size_t)len
			                                   : sizeof(zero);
			if (k == CAT_IOV) {
				rc = writev_all(STDOUT_FILENO, iov, k);
				k = 0;
			}
			iov[k++] = (struct iovec){(void *)(p ? p : zero), m};
			len -= m;
			if (p)
				p += m;
		}
	}
	if (rc == 0 && k)
		rc = writev_all(STDOUT_FILENO, iov, k);
	return rc;
}

static int cat_one(const char *arg, uint8_t *buf)
{
	struct target t;
	struct file f;
	if (open_target(arg, &t) < 0)
		return 1;
	int rc = open_src(&t, t.ctx ? "" : t.local, &f);
	uint64_t off = 0;
	bool eof;
	while (rc == 0) {
		ssize_t n = f.nf ? snfs_read_pieces(f.nf, off, CAT_SPAN,
		                                    cat_pieces, NULL, &eof)
		                 : file_pread(&f, buf, CHUNK, off);
		if (n <= 0) {
			rc = (int)n;
			break;
		}
		if (!f.nf)
			rc = write_all(STDOUT_FILENO, buf, (size_t)n);
		off += (uint64_t)n;
		if (f.nf && eof)
			break; /* no call past the end to learn it again */
	}
	if (rc < 0)
		err_msg("%s: %s", arg, why(rc));
	close_file(&f);
	close_target(&t);
	return rc < 0;
}

static int cmd_cat(int argc, char **argv)
{
	int status = 0;
	uint8_t *buf;

	if (argc < 2)
		return usage_error("cat", "missing operand");
	/* page-aligned: the kernel copies to and from it faster */
	if (posix_memalign((void **)&buf, 4096, CHUNK))
		return 1;
	for (int i = 1; i < argc; i++)
		status |= cat_one(argv[i], buf);
	free(buf);
	return status;
}

/* ---- ls ---- */

struct ls_opts {
	bool l, R, a, f;
};

static void mode_string(const struct snfs_stat *st, char out[11])
{
	static const char types[] = "?-dbclsp";
	out[0] = types[st->type <= 7 ? st->type : 0];
	const char *rwx = "rwxrwxrwx";
	for (int i = 0; i < 9; i++)
		out[1 + i] = (st->mode & (1u << (8 - i))) ? rwx[i] : '-';
	if (st->mode & 04000)
		out[3] = out[3] == 'x' ? 's' : 'S';
	if (st->mode & 02000)
		out[6] = out[6] == 'x' ? 's' : 'S';
	if (st->mode & 01000)
		out[9] = out[9] == 'x' ? 't' : 'T';
	out[10] = 0;
}

static void print_long(const char *name, const struct snfs_stat *st)
{
	char m[11], tb[32];
	struct tm tm;
	time_t t = st->mtime.tv_sec;
	mode_string(st, m);
	localtime_r(&t, &tm);
	strftime(tb, sizeof(tb), "%b %e %H:%M", &tm);
	printf("%s %3u %5u %5u %10" PRIu64 " %s %s\n", m, st->nlink, st->uid,
	       st->gid, st->size, tb, name);
}

struct ent {
	char *name;
	bool have;
	struct snfs_stat st;
};

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name,
	              ((const struct ent *)b)->name);
}

static int ls_dir(struct snfs_ctx *c, const char *path, const char *label,
                  const struct ls_opts *o, bool header)
{
	struct snfs_dir *d;
	struct snfs_dirent de;
	struct ent *v = NULL;
	size_t n = 0, cap = 0;
	int rc;

	rc = snfs_opendir(c, path, o->l ? SNFS_DIR_PLUS : 0, &d);
	if (rc < 0) {
		err_msg("cannot open directory '%s': %s", label, why(rc));
		return 1;
	}
	if (header)
		printf("%s:\n", label);
	while ((rc = snfs_readdir(d, &de)) > 0) {
		bool dot = de.name[0] == '.';
		if (dot && !o->a && !o->f)
			continue;
		if (o->f && !o->l && !o->R) { /* unsorted, straight out */
			puts(de.name);
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			struct ent *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[n].name = strdup(de.name);
		v[n].have = de.have_attr;
		v[n].st = de.attr;
		n++;
	}
	snfs_closedir(d);
	int status = 0;
	if (rc < 0) {
		err_msg("reading directory '%s': %s", label, why(rc));
		status = 1;
	}
	if (!o->f && n) /* v4 lists no "." or "..": v may be NULL */
		qsort(v, n, sizeof(*v), ent_cmp);
	for (size_t i = 0; i < n; i++) {
		if (o->l) {
			if (!v[i].have) {
				char *p;
				if (asprintf(&p, "%s%s%s", path,
				             path[0] ? "/" : "",
				             v[i].name) >= 0) {
					v[i].have =
					    snfs_lstat(c, p, &v[i].st) == 0;
					free(p);
				}
			}
			if (v[i].have)
				print_long(v[i].name, &v[i].st);
			else
				printf("?????????? %s\n", v[i].name);
		} else {
			puts(v[i].name);
		}
	}
	for (size_t i = 0; o->R && i < n; i++) {
		if (!strcmp(v[i].name, ".") || !strcmp(v[i].name, ".."))
			continue;
		struct snfs_stat st = v[i].st;
		char *p, *lab;
		if (asprintf(&p, "%s%s%s", path, path[0] ? "/" : "",
		             v[i].name) < 0)
			break;
		if (!v[i].have && snfs_lstat(c, p, &st) < 0) {
			free(p);
			continue;
		}
		if (st.type == SNFS_DIR &&
		    asprintf(&lab, "%s/%s", label, v[i].name) >= 0) {
			putchar('\n');
			status |= ls_dir(c, p, lab, o, true);
			free(lab);
		}
		free(p);
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	return status;
}

static int cmd_ls(int argc, char **argv)
{
	struct ls_opts o = {0};
	int opt, status = 0;
	optind = 1;
	while ((opt = getopt(argc, argv, "lRaf")) != -1) {
		switch (opt) {
		case 'l':
			o.l = true;
			break;
		case 'R':
			o.R = true;
			break;
		case 'a':
			o.a = true;
			break;
		case 'f':
			o.f = true;
			break;
		default:
			return usage_error("ls", "bad option");
		}
	}
	if (optind >= argc)
		return usage_error("ls", "missing operand");
	for (int i = optind; i < argc; i++) {
		struct target t;
		struct snfs_stat st;
		if (!snfs_is_url(argv[i])) {
			err_msg("'%s' is not an nfs:// URL", argv[i]);
			status = 2;
			continue;
		}
		if (open_target(argv[i], &t) < 0) {
			status = 2;
			continue;
		}
		int rc = snfs_lstat(t.ctx, "", &st);
		if (rc < 0) {
			err_msg("cannot access '%s': %s", argv[i], why(rc));
			status = 2;
		} else if (st.type == SNFS_DIR) {
			status |= ls_dir(t.ctx, "", argv[i], &o,
			                 o.R || argc - optind > 1);
		} else if (o.l) {
			print_long(argv[i], &st);
		} else {
			puts(argv[i]);
		}
		close_target(&t);
	}
	return status;
}

/* ---- stat ---- */

static const char *type_name(enum snfs_ftype t)
{
	switch (t) {
	case SNFS_REG:
		return "regular file";
	case SNFS_DIR:
		return "directory";
	case SNFS_LNK:
		return "symbolic link";
	case SNFS_BLK:
		return "block special file";
	case SNFS_CHR:
		return "character special file";
	case SNFS_SOCK:
		return "socket";
	case SNFS_FIFO:
		return "fifo";
	}
	return "unknown";
}

static void print_time(const char *label, const struct timespec *ts)
{
	char b[64];
	struct tm tm;
	time_t t = ts->tv_sec;
	localtime_r(&t, &tm);
	strftime(b, sizeof(b), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s: %s.%09ld\n", label, b, ts->tv_nsec);
}

static int cmd_stat(int argc, char **argv)
{
	int status = 0;
	if (argc < 2)
		return usage_error("stat", "missing operand");
	for (int i = 1; i < argc; i++) {
		struct target t;
		struct snfs_stat st;
		char m[11];
		if (open_target(argv[i], &t) < 0 || !t.ctx) {
			if (!t.ctx && t.local)
				err_msg("'%s' is not an nfs:// URL", argv[i]);
			status = 1;
			continue;
		}
		int rc = snfs_lstat(t.ctx, "", &st);
		if (rc < 0) {
			err_msg("cannot stat '%s': %s", argv[i], why(rc));
			status = 1;
			close_target(&t);
			continue;
		}
		mode_string(&st, m);
		printf("  File: %s\n", argv[i]);
		printf("  Size: %-15" PRIu64 " Blocks: %-10" PRIu64 " %s\n",
		       st.size, st.used / 512, type_name(st.type));
		printf("Device: %" PRIx64 "\tInode: %" PRIu64 "\tLinks: %u\n",
		       st.fsid, st.fileid, st.nlink);
		printf("Access: (%04o/%s)  Uid: %u  Gid: %u\n", st.mode, m,
		       st.uid, st.gid);
		print_time("Access", &st.atime);
		print_time("Modify", &st.mtime);
		print_time("Change", &st.ctime);
		close_target(&t);
	}
	return status;
}

/* ---- holes ---- */

struct holemap {
	uint64_t size, hole_bytes, aligned_hole_bytes;
	uint64_t last_end; /* end of the previous data segment */
};

/* Count a hole [s, e): all of it, and the 1 MiB-aligned blocks inside. */
static void add_hole(struct holemap *m, uint64_t s, uint64_t e)
{
	if (e <= s)
		return;
	printf("hole %" PRIu64 " %" PRIu64 "\n", s, e - s);
	m->hole_bytes += e - s;
	uint64_t a = (s + MIB - 1) & ~(MIB - 1), b = e & ~(MIB - 1);
	if (b > a)
		m->aligned_hole_bytes += b - a;
}

static void add_data(struct holemap *m, uint64_t s, uint64_t e)
{
	add_hole(m, m->last_end, s);
	printf("data %" PRIu64 " %" PRIu64 "\n", s, e - s);
	m->last_end = e;
}

static int holes_local(const char *path, struct holemap *m)
{
	struct file f;
	struct target t = {.local = path};
	int rc = open_src(&t, path, &f);
	if (rc < 0)
		return rc;
	m->size = f.size;
	uint64_t off = 0, d, h;
	while (off < f.size && local_next_data(&f, off, &d, &h)) {
		add_data(m, d, h);
		off = h;
	}
	close_file(&f);
	return 0;
}

/* Over NFSv4.2 SEEK gives the map; NFSv3 has none, so the map is of
 * all-zero 4 KiB blocks, read from the file. */
static int holes_nfs(struct snfs_ctx *c, struct holemap *m, bool *scanned)
{
	struct file f;
	struct target t = {.ctx = c};
	int rc = open_src(&t, "", &f);
	if (rc < 0)
		return rc;
	m->size = f.size;
	int64_t d = snfs_seek_data(f.nf, 0);
	if (d != -EOPNOTSUPP) {
		uint64_t off = 0;
		while (off < f.size) {
			d = snfs_seek_data(f.nf, off);
			if (d < 0)
				break;
			int64_t h = snfs_seek_hole(f.nf, (uint64_t)d);
			if (h < 0)
				h = (int64_t)f.size;
			add_data(m, (uint64_t)d, (uint64_t)h);
			off = (uint64_t)h;
		}
		rc = d < 0 && d != -ENXIO ? (int)d : 0;
		close_file(&f);
		return rc;
	}
	*scanned = true;
	uint8_t *buf = malloc(CHUNK);
	uint64_t off = 0, ds = 0;
	bool in_data = false;
	rc = buf ? 0 : -ENOMEM;
	while (rc == 0 && off < f.size) {
		ssize_t n = snfs_pread(f.nf, buf, CHUNK, off);
		if (n <= 0) {
			rc = (int)n;
			break;
		}
		for (size_t i = 0; i < (size_t)n; i += ZBLOCK) {
			size_t b =
			    (size_t)n - i < ZBLOCK ? (size_t)n - i : ZBLOCK;
			bool z = all_zero(buf + i, b);
			if (!z && !in_data) {
				ds = off + i;
				in_data = true;
			} else if (z && in_data) {
				add_data(m, ds, off + i);
				in_data = false;
			}
		}
		off += (uint64_t)n;
	}
	if (in_data)
		add_data(m, ds, off);
	free(buf);
	close_file(&f);
	return rc;
}

static int cmd_holes(int argc, char **argv)
{
	if (argc != 2)
		return usage_error("holes", "expects one FILE");
	struct holemap m = {0};
	struct target t;
	bool scanned = false;
	int rc;
	if (open_target(argv[1], &t) < 0)
		return 1;
	rc = t.ctx ? holes_nfs(t.ctx, &m, &scanned) : holes_local(argv[1], &m);
	if (rc < 0) {
		err_msg("%s: %s", argv[1], why(rc));
		close_target(&t);
		return 1;
	}
	add_hole(&m, m.last_end, m.size);
	printf("size %" PRIu64 " holes %" PRIu64 " (%.1f%%) aligned-1MiB-holes "
	       "%" PRIu64 " (%.1f%%)%s\n",
	       m.size, m.hole_bytes,
	       m.size ? 100.0 * (double)m.hole_bytes / (double)m.size : 0.0,
	       m.aligned_hole_bytes,
	       m.size ? 100.0 * (double)m.aligned_hole_bytes / (double)m.size
	              : 0.0,
	       scanned ? " (no SEEK over NFSv3: zero blocks)" : "");
	close_target(&t);
	return 0;
}

/* ---- mkdir, rm, mv, df ---- */

static int mkdir_p(struct snfs_ctx *c, const char *path)
{
	char *p = strdup(path);
	int rc = 0;
	if (!p)
		return -ENOMEM;
	for (char *s = p + (p[0] == '/'); rc == 0; s++) {
		if (*s != '/' && *s)
			continue;
		char save = *s;
		*s = 0;
		struct snfs_stat st;
		if (p[0] && snfs_stat(c, p, &st) < 0)
			rc = snfs_mkdir(c, p, 0755);
		else if (p[0] && st.type != SNFS_DIR)
			rc = -ENOTDIR;
		*s = save;
		if (!save)
			break;
	}
	free(p);
	return rc;
}

static int cmd_mkdir(int argc, char **argv)
{
	bool parents = false;
	int opt, status = 0;
	optind = 1;
	while ((opt = getopt(argc, argv, "p")) != -1) {
		if (opt != 'p')
			return usage_error("mkdir", "bad option");
		parents = true;
	}
	if (optind >= argc)
		return usage_error("mkdir", "missing operand");
	for (int i = optind; i < argc; i++) {
		struct target t;
		if (open_target(argv[i], &t) < 0 || !t.ctx) {
			status = 1;
			continue;
		}
		/* The URL names the new directory: work from the export. */
		char *p;
		if (asprintf(&p, "/%s", snfs_url_path(t.ctx)) < 0)
			p = NULL;
		int rc = !p        ? -ENOMEM
		         : parents ? mkdir_p(t.ctx, p)
		                   : snfs_mkdir(t.ctx, p, 0755);
		if (rc < 0) {
			err_msg("cannot create directory '%s': %s", argv[i],
			        why(rc));
			status = 1;
		}
		free(p);
		close_target(&t);
	}
	return status;
}

static int rm_tree(struct snfs_ctx *c, const char *path, const char *label,
                   bool recursive, bool force)
{
	struct snfs_stat st;
	int rc = snfs_lstat(c, path, &st);
	if (rc < 0) {
		if (force && rc == -ENOENT)
			return 0;
		err_msg("cannot remove '%s': %s", label, why(rc));
		return 1;
	}
	if (st.type != SNFS_DIR) {
		rc = snfs_unlink(c, path);
		if (rc < 0) {
			err_msg("cannot remove '%s': %s", label, why(rc));
			return 1;
		}
		return 0;
	}
	if (!recursive) {
		err_msg("cannot remove '%s': Is a directory", label);
		return 1;
	}
	int status = 0;
	for (;;) {
		/* Remove what a listing shows, then list again, so removals
		 * never race our own cookies. */
		struct snfs_dir *d;
		struct snfs_dirent de;
		int removed = 0;
		if (snfs_opendir(c, path, 0, &d) < 0)
			break;
		while (snfs_readdir(d, &de) > 0) {
			if (!strcmp(de.name, ".") || !strcmp(de.name, ".."))
				continue;
			char *p, *l;
			if (asprintf(&p, "%s/%s", path, de.name) < 0)
				break;
			if (asprintf(&l, "%s/%s", label, de.name) < 0) {
				free(p);
				break;
			}
			int s = rm_tree(c, p, l, recursive, force);
			status |= s;
			removed += s == 0;
			free(p);
			free(l);
		}
		snfs_closedir(d);
		if (!removed)
			break;
	}
	rc = snfs_rmdir(c, path);
	if (rc < 0) {
		err_msg("cannot remove '%s': %s", label, why(rc));
		return 1;
	}
	return status;
}

static int cmd_rm(int argc, char **argv)
{
	bool rec = false, force = false;
	int opt, status = 0;
	optind = 1;
	while ((opt = getopt(argc, argv, "rRf")) != -1) {
		if (opt == 'r' || opt == 'R')
			rec = true;
		else if (opt == 'f')
			force = true;
		else
			return usage_error("rm", "bad option");
	}
	if (optind >= argc)
		return force ? 0 : usage_error("rm", "missing operand");
	for (int i = optind; i < argc; i++) {
		struct target t;
		if (open_target(argv[i], &t) < 0 || !t.ctx) {
			status = 1;
			continue;
		}
		char *p;
		if (asprintf(&p, "/%s", snfs_url_path(t.ctx)) < 0) {
			status = 1;
		} else {
			status |= rm_tree(t.ctx, p, argv[i], rec, force);
			free(p);
		}
		close_target(&t);
	}
	return status;
}

static int cmd_mv(int argc, char **argv)
{
	if (argc != 3)
		return usage_error("mv", "expects SOURCE and DEST");
	struct target s, d;
	int rc = 1;
	if (open_target(argv[1], &s) < 0)
		return 1;
	if (open_target(argv[2], &d) < 0) {
		close_target(&s);
		return 1;
	}
	struct snfs_url su, du;
	if (!s.ctx || !d.ctx) {
		err_msg("mv works within one NFS export (use cp and rm)");
	} else if (snfs_url_parse(argv[1], &su) == 0) {
		if (snfs_url_parse(argv[2], &du) == 0) {
			if (strcmp(su.host, du.host) ||
			    su.nfsport != du.nfsport ||
			    strcmp(snfs_export(s.ctx), snfs_export(d.ctx))) {
				err_msg("cannot move '%s' to '%s': Invalid "
				        "cross-device link",
				        argv[1], argv[2]);
			} else {
				char *from, *to;
				struct snfs_stat st;
				const char *dp = snfs_url_path(d.ctx);
				bool into = snfs_stat(s.ctx, "/", &st) == 0 &&
				            dp[0] &&
				            snfs_stat(d.ctx, "", &st) == 0 &&
				            st.type == SNFS_DIR;
				if (asprintf(&from, "/%s",
				             snfs_url_path(s.ctx)) >= 0 &&
				    (into ? asprintf(&to, "/%s/%s", dp,
				                     base_name(argv[1]))
				          : asprintf(&to, "/%s", dp)) >= 0) {
					int r = snfs_rename(s.ctx, from, to);
					if (r < 0)
						err_msg("cannot move '%s' to "
						        "'%s': %s",
						        argv[1], argv[2],
						        why(r));
					else
						rc = 0;
					free(to);
				}
				free(from);
			}
			snfs_url_free(&du);
		}
		snfs_url_free(&su);
	}
	close_target(&s);
	close_target(&d);
	return rc;
}

static int cmd_df(int argc, char **argv)
{
	int status = 0;
	if (argc < 2)
		return usage_error("df", "missing operand");
	printf("%-30s %12s %12s %12s %4s %s\n", "Filesystem", "1K-blocks",
	       "Used", "Available", "Use%", "Mounted on");
	for (int i = 1; i < argc; i++) {
		struct target t;
		struct snfs_statvfs sv;
		struct snfs_url u;
		if (open_target(argv[i], &t) < 0 || !t.ctx) {
			status = 1;
			continue;
		}
		int rc = snfs_statvfs(t.ctx, "", &sv);
		if (rc < 0 || snfs_url_parse(argv[i], &u) < 0) {
			err_msg("%s: %s", argv[i], why(rc < 0 ? rc : -EINVAL));
			status = 1;
			close_target(&t);
			continue;
		}
		char fs[300];
		snprintf(fs, sizeof(fs), "%s:%s", u.host, snfs_export(t.ctx));
		uint64_t used = sv.tbytes - sv.fbytes;
		uint64_t pct = used + sv.abytes
		                   ? (used * 100 + used + sv.abytes - 1) /
		                         (used + sv.abytes)
		                   : 0;
		printf("%-30s %12" PRIu64 " %12" PRIu64 " %12" PRIu64
		       " %3" PRIu64 "%% %s\n",
		       fs, sv.tbytes / 1024, used / 1024, sv.abytes / 1024, pct,
		       argv[i]);
		snfs_url_free(&u);
		close_target(&t);
	}
	return status;
}

static void help(void)
{
	printf("Usage: %s [--stats] [-q] COMMAND [OPTION]... ARG...\n"
	       "NFS without a mount. URLs: "
	       "nfs://host[:port]/export/"
	       "path?version=3|4.1|4.2&uid=&gid=&rsize=&wsize=\n"
	       "  &readdir-buffer=&nfsport=&mountport=&cache=&timeout=\n"
	       "  &pagecache=partial|full|off\n\n"
	       "Commands:\n"
	       "  cp [-q] SRC DST     copy local<->NFS or NFS->NFS; holes are "
	       "kept\n"
	       "  cat URL...          write files to standard output\n"
	       "  ls [-lRaf] URL...   list directories (-f: unsorted, all)\n"
	       "  stat URL...         show attributes\n"
	       "  holes FILE          data/hole map of a local or NFS file\n"
	       "  mkdir [-p] URL...   make directories\n"
	       "  rm [-rf] URL...     remove files or directories\n"
	       "  mv SRC DST          rename within one export\n"
	       "  df URL...           space on the export\n"
	       "%s\n"
	       "Options:\n"
	       "  --stats   print RPC counters to standard error at the end\n"
	       "  -q        quiet: no progress bar\n"
	       "  --help    this help\n\n"
	       "Exit status: 0 on success, 1 on failure (ls: 2 when an operand "
	       "cannot be accessed).\n",
	       prog, snfs_bench_help);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {{"cp", cmd_cp},       {"cat", cmd_cat},
	            {"ls", cmd_ls},       {"stat", cmd_stat},
	            {"holes", cmd_holes}, {"mkdir", cmd_mkdir},
	            {"rm", cmd_rm},       {"mv", cmd_mv},
	            {"df", cmd_df},       {"bench", snfs_cmd_bench}};
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			help();
			return 0;
		} else if (!strcmp(argv[i], "--stats")) {
			show_stats = true;
		} else if (!strcmp(argv[i], "-q")) {
			quiet = true;
		} else {
			return usage_error(NULL, "unrecognized option '%s'",
			                   argv[i]);
		}
	}
	if (i >= argc)
		return usage_error(NULL, "missing command");
	for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++)
		if (!strcmp(argv[i], cmds[k].name)) {
			if (argc - i > 1 && !strcmp(argv[i + 1], "--help")) {
				help();
				return 0;
			}
			return cmds[k].fn(argc - i, argv + i);
		}
	return usage_error(NULL, "unknown command '%s'", argv[i]);
}
