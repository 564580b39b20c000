/* fsrand: random operations on one file, every read checked against an
 * in-memory model of what the file must hold.
 *
 *   fsrand [-n OPS] [-s SEED] [-m MAXSIZE] [-x LETTERS] [-u] [-v] [-C]
 *          [-2 PATH2] [-t THREADS] FILE
 *   fsrand -H FILE   (print size and hash of FILE, as a run ends)
 *
 * Made for network mounts: writes go through the client's page cache,
 * by O_DIRECT and through a shared mapping; reads come from the cache, by
 * O_DIRECT (straight from the server: READ or READ_PLUS with its holes)
 * and from the mapping, with truncation, hole punching (DEALLOCATE),
 * allocation (ALLOCATE), copy_file_range (COPY) and SEEK_DATA/SEEK_HOLE
 * walks in between, so a server that keeps stale hole maps, encodes a
 * segment wrong or loses part of a write is caught at the next read of
 * the bytes. An operation the file system refuses (EOPNOTSUPP: a v3
 * mount has no DEALLOCATE) is dropped from the mix and counted.
 *
 * Letters (-x picks a subset; default all): w write, W direct write,
 * r read, d direct read, m mapped write, M mapped read, t truncate,
 * p punch hole, a allocate, k allocate keeping the size, c copy within
 * the file, x copy from FILE.src (made first), s seek walk, f fsync, o close
 * and reopen, e evict the cached pages (fsync + POSIX_FADV_DONTNEED). -u lets
 * direct I/O use any offset and length (NFS allows it); without it they are 4
 * KiB aligned, which every local file system accepts.
 *
 * -2 PATH2 names the same file by another way (a second client's mount,
 * or the server's directory): reopens then switch between the two, which
 * tests close-to-open consistency across clients. -v prints each
 * operation as it starts; -C changes one byte behind the
 * model's back before the final check (which must then fail: the test
 * of the checker).
 *
 * On the first wrong byte it prints the offset, both values and the last
 * operations, and exits 1. At the end it prints "fsrand: ok ..." with the
 * operation counts and "size N hash H" of the model; `fsrand -H` prints
 * the same line for a file, so a caller compares the server's copy. */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ALIGN 4096
#define HISTORY 48

struct run {
	const char *path;
	const char *path2; /* -2: the same file by another way, or NULL */
	int fd, dfd;       /* dfd: O_DIRECT, or -1 */
	int sfd;           /* FILE.src: fixed bytes to copy from (op x) */
	uint8_t *src;
	size_t src_size;
	uint8_t *model;
	size_t size, max;
	uint8_t *buf; /* ALIGN-aligned, max + ALIGN bytes */
	uint64_t rng;
	bool unaligned, trace, corrupt;
	const char *path1; /* the FILE argument: -u applies there only */
	size_t base;       /* -t: this thread's part of the file starts here */
	int tid;           /* -t: the thread's number, from 1 */
	char ops[32];      /* enabled letters */
	unsigned long count[128]; /* per letter done */
	unsigned long refused[128];
	char hist[HISTORY][96];
	unsigned long nops;
};

static uint64_t rnd(struct run *r)
{
	/* splitmix64: one state word, good enough to pick offsets. */
	uint64_t z = (r->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static size_t below(struct run *r, size_t n) /* 0..n-1, n > 0 */
{
	return (size_t)(rnd(r) % n);
}

/* Offsets and lengths that favour page and block edges, where client and
 * server code splits ranges, over uniformly random ones. */
static size_t pick_off(struct run *r, size_t limit)
{
	size_t o = below(r, limit + 1);

	switch (below(r, 4)) {
	case 0:
		return o & ~(size_t)(ALIGN - 1);
	case 1:
		o = (o & ~(size_t)(ALIGN - 1)) + ALIGN - 1 - below(r, 3);
		return o > limit ? limit : o;
	default:
		return o;
	}
}

static size_t pick_len(struct run *r, size_t limit)
{
	size_t n;

	if (limit == 0)
		return 0;
	switch (below(r, 5)) {
	case 0:
		n = 1 + below(r, 64);
		break;
	case 1:
		n = ALIGN * (1 + below(r, 16));
		break;
	case 2:
		n = 1 + below(r, 256 * 1024);
		break;
	default:
		n = 1 + below(r, 32 * 1024);
	}
	return n > limit ? limit : n;
}

static void note(struct run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(struct run *r, const char *fmt, ...)
{
	va_list ap;
	char *h = r->hist[r->nops % HISTORY];
	int n = r->tid ? snprintf(h, sizeof(r->hist[0]), "t%d %lu: ", r->tid,
	                          r->nops)
	               : snprintf(h, sizeof(r->hist[0]), "%lu: ", r->nops);

	va_start(ap, fmt);
	vsnprintf(h + n, sizeof(r->hist[0]) - (size_t)n, fmt, ap);
	va_end(ap);
	if (r->trace)
		fprintf(stderr, "%s\n", h);
}

static void history(const struct run *r)
{
	unsigned long first = r->nops + 1 > HISTORY ? r->nops + 1 - HISTORY : 0;

	fprintf(stderr, "fsrand: last operations (seed and -n repeat them):\n");
	for (unsigned long i = first; i <= r->nops; i++)
		if (r->hist[i % HISTORY][0])
			fprintf(stderr, "  %s\n", r->hist[i % HISTORY]);
}

static void fail(const struct run *r, const char *what, int err)
{
	fprintf(stderr, "fsrand: %s: %s: %s\n", r->path, what,
	        err ? strerror(err) : "wrong result");
	history(r);
	exit(1);
}

/* The bytes [off, off+len) just read into got must be the model's. */
static void compare(const struct run *r, const char *how, const uint8_t *got,
                    size_t off, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (got[i] == r->model[off + i])
			continue;
		size_t j = i;
		while (j < len && got[j] != r->model[off + j])
			j++;
		fprintf(
		    stderr,
		    "fsrand: %s of %zu+%zu: byte %zu is 0x%02x, model 0x%02x "
		    "(%zu wrong bytes from there; file size %zu)\n",
		    how, off, len, off + i, got[i], r->model[off + i], j - i,
		    r->size);
		history(r);
		exit(1);
	}
}

static void fill(struct run *r, uint8_t *p, size_t n)
{
	/* Mostly nonzero bytes, so a hole where data belongs shows; some
	 * writes are zeros, which a server may well store as data. */
	if (below(r, 8) == 0) {
		memset(p, 0, n);
		return;
	}
	uint64_t v = rnd(r);
	for (size_t i = 0; i < n; i++) {
		if (i % 8 == 0)
			v = rnd(r);
		p[i] = (uint8_t)(v >> (8 * (i % 8))) | 1;
	}
}

static void set_size(struct run *r, size_t n)
{
	if (n > r->size)
		memset(r->model + r->size, 0, n - r->size);
	r->size = n;
}

static int open_src(struct run *r, bool create)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s.src", r->path);
	fd = open(path, O_RDWR | (create ? O_CREAT | O_TRUNC : 0), 0644);
	if (fd < 0)
		fail(r, "open FILE.src", errno);
	return fd;
}

static int open_file(struct run *r, int flags)
{
	int fd = open(r->path, O_RDWR | flags, 0644);

	if (fd < 0 && !(flags & O_DIRECT))
		fail(r, "open", errno);
	return fd;
}

/* Close and open again; with -2, half the time through the other path
 * to the file (another client's mount, or the server's own directory):
 * close-to-open consistency says the new open sees everything written
 * and closed through the old one. */
static void reopen(struct run *r)
{
	if (fsync(r->fd) != 0)
		fail(r, "fsync", errno);
	if (close(r->fd) != 0)
		fail(r, "close", errno);
	if (r->path2 && below(r, 2)) {
		const char *t = r->path;
		r->path = r->path2;
		r->path2 = t;
		close(r->sfd);
		r->sfd = open_src(r, false);
	}
	note(r, "reopen %s", r->path);
	r->fd = open_file(r, 0);
	if (r->dfd >= 0)
		close(r->dfd);
	r->dfd = open_file(r, O_DIRECT);
}

/* Direct I/O range: anything with -u, else whole aligned blocks. */
static void direct_range(struct run *r, size_t limit, size_t *off, size_t *len)
{
	*off = pick_off(r, limit);
	*len = pick_len(r, r->max - *off);
	if (r->unaligned && r->path == r->path1)
		return;
	*off &= ~(size_t)(ALIGN - 1);
	*len = (*len + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	if (*off + *len > r->max)
		*len = (r->max - *off) & ~(size_t)(ALIGN - 1);
}

static void op_write(struct run *r, bool direct)
{
	size_t off, len;
	int fd = direct ? r->dfd : r->fd;

	if (direct)
		direct_range(r, r->size < r->max ? r->size : r->max, &off,
		             &len);
	else {
		off = pick_off(r, r->size + ALIGN < r->max ? r->size + ALIGN
		                                           : r->max - 1);
		len = pick_len(r, r->max - off);
	}
	if (len == 0)
		return;
	note(r, "%s %zu+%zu", direct ? "dwrite" : "write", off, len);
	fill(r, r->buf, len);
	ssize_t n = pwrite(fd, r->buf, len, (off_t)(r->base + off));
	if (n < 0)
		fail(r, "pwrite", errno);
	if ((size_t)n != len)
		fail(r, "short pwrite", 0);
	if (off + len > r->size)
		set_size(r, off + len);
	memcpy(r->model + off, r->buf, len);
}

static void op_read(struct run *r, bool direct)
{
	size_t off, len;
	int fd = direct ? r->dfd : r->fd;

	if (direct)
		direct_range(r, r->size, &off, &len);
	else {
		off = pick_off(r, r->size);
		len = pick_len(r, r->max - off);
	}
	if (len == 0)
		return;
	note(r, "%s %zu+%zu (size %zu)", direct ? "dread" : "read", off, len,
	     r->size);
	memset(r->buf, 0xa5, len);
	ssize_t n = pread(fd, r->buf, len, (off_t)(r->base + off));
	if (n < 0)
		fail(r, "pread", errno);
	size_t want = off >= r->size        ? 0
	              : r->size - off < len ? r->size - off
	                                    : len;
	if ((size_t)n != want) {
		fprintf(stderr,
		        "fsrand: read of %zu+%zu got %zd bytes, not %zu\n", off,
		        len, n, want);
		fail(r, "read length", 0);
	}
	compare(r, direct ? "direct read" : "read", r->buf, off, want);
}

/* A shared mapping of the whole file: writes inside the size (a mapping
 * cannot grow the file), then msync; or a read of any part of it. */
static void op_mapped(struct run *r, bool writing)
{
	if (r->size == 0)
		return;
	size_t off = pick_off(r, r->size - 1);
	size_t len = pick_len(r, r->size - off);
	uint8_t *p = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED,
	                  r->fd, (off_t)r->base);

	if (p == MAP_FAILED)
		fail(r, "mmap", errno);
	note(r, "%s %zu+%zu", writing ? "mwrite" : "mread", off, len);
	if (writing) {
		fill(r, r->buf, len);
		memcpy(p + off, r->buf, len);
		memcpy(r->model + off, r->buf, len);
		if (msync(p, r->size, MS_SYNC) != 0)
			fail(r, "msync", errno);
	} else {
		compare(r, "mapped read", p + off, off, len);
	}
	if (munmap(p, r->size) != 0)
		fail(r, "munmap", errno);
}

static void op_truncate(struct run *r)
{
	size_t n =
	    below(r, 3) == 0 ? pick_off(r, r->max) : pick_off(r, r->size);

	note(r, "truncate %zu (from %zu)", n, r->size);
	if (ftruncate(r->fd, (off_t)n) != 0)
		fail(r, "ftruncate", errno);
	if (n < r->size)
		r->size = n;
	else
		set_size(r, n);
}

/* fallocate; false when the file system does not offer this mode.
 * KEEP_SIZE stays inside the file: NFS's ALLOCATE past the end makes the
 * file longer (RFC 7862 15.1), so clients either refuse that or extend. */
static bool op_fallocate(struct run *r, int mode, char letter)
{
	size_t off = pick_off(r, (r->size < r->max ? r->size : r->max - 1));
	size_t len = pick_len(r, r->max - off);

	if (mode == FALLOC_FL_KEEP_SIZE)
		len = off >= r->size ? 0 : pick_len(r, r->size - off);

	if (len == 0)
		return true;
	note(r, "fallocate %c %zu+%zu (size %zu)", letter, off, len, r->size);
	if (fallocate(r->fd, mode, (off_t)(r->base + off), (off_t)len) != 0) {
		if (errno == EOPNOTSUPP)
			return false;
		fail(r, "fallocate", errno);
	}
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		size_t end = off + len < r->size ? off + len : r->size;
		if (off < end)
			memset(r->model + off, 0, end - off);
	} else if (!(mode & FALLOC_FL_KEEP_SIZE) && off + len > r->size) {
		set_size(r, off + len);
	}
	return true;
}

/* copy_file_range of len bytes from fd `from` (its bytes `bytes`, this
 * part of it at file offset `base`) at src, into this part of FILE at
 * dst, the model following each piece the call copies. False when the
 * file system does not copy. */
static bool copy_into(struct run *r, int from, const uint8_t *bytes,
                      size_t base, size_t src, size_t dst, size_t len)
{
	loff_t in = (loff_t)(base + src), out = (loff_t)(r->base + dst);
	size_t left = len;

	while (left > 0) {
		ssize_t n = copy_file_range(from, &in, r->fd, &out, left, 0);
		if (n < 0) {
			if (errno == EOPNOTSUPP || errno == EXDEV)
				return false;
			fail(r, "copy_file_range", errno);
		}
		if (n == 0)
			fail(r, "copy_file_range copied nothing", 0);
		size_t s = (size_t)in - (size_t)n - base;
		size_t d = (size_t)out - (size_t)n - r->base;
		if (d + (size_t)n > r->size)
			set_size(r, d + (size_t)n);
		memmove(r->model + d, bytes + s, (size_t)n);
		left -= (size_t)n;
	}
	return true;
}

/* copy_file_range within the file, ranges apart (the call forbids an
 * overlap within one file). */
static bool op_copy(struct run *r)
{
	if (r->size == 0)
		return true;
	size_t src = pick_off(r, r->size - 1);
	size_t len = pick_len(r, r->size - src);
	size_t dst = pick_off(r, r->max - len);

	if (dst < src + len && src < dst + len)
		return true; /* overlapping: pick again next time */
	note(r, "copy %zu+%zu -> %zu (size %zu)", src, len, dst, r->size);
	return copy_into(r, r->fd, r->model, r->base, src, dst, len);
}

/* copy_file_range from FILE.src: between two files, which NFSv4.2
 * clients send as COPY (Linux copies within one file by itself). */
static bool op_copy_from(struct run *r)
{
	size_t src = pick_off(r, r->src_size - 1);
	size_t len = pick_len(r, r->src_size - src < r->max ? r->src_size - src
	                                                    : r->max);
	size_t dst =
	    pick_off(r, r->size < r->max - len ? r->size : r->max - len);

	note(r, "copy src %zu+%zu -> %zu (size %zu)", src, len, dst, r->size);
	return copy_into(r, r->sfd, r->src, 0, src, dst, len);
}

/* FILE.src: half of MAXSIZE of random bytes with a hole in the middle,
 * written and synced before the run. */
static void make_src(struct run *r)
{
	r->src_size = r->max / 2;
	r->src = malloc(r->src_size);
	if (!r->src)
		exit(1);
	fill(r, r->src, r->src_size);
	memset(r->src + r->src_size / 4, 0, r->src_size / 4);
	r->sfd = open_src(r, true);
	if (pwrite(r->sfd, r->src, r->src_size / 4, 0) !=
	        (ssize_t)(r->src_size / 4) ||
	    pwrite(r->sfd, r->src + r->src_size / 2,
	           r->src_size - r->src_size / 2, (off_t)(r->src_size / 2)) !=
	        (ssize_t)(r->src_size - r->src_size / 2) ||
	    fsync(r->sfd) != 0)
		fail(r, "write FILE.src", errno);
}

/* SEEK_DATA / SEEK_HOLE from a random offset, then a whole walk: a hole
 * must read as zeros in the model; data may hold zeros. */
static void op_seek(struct run *r)
{
	note(r, "seek walk (size %zu)", r->size);
	off_t pos = 0;
	while ((size_t)pos < r->size) {
		off_t d = lseek(r->fd, pos, SEEK_DATA);
		if (d < 0 && errno != ENXIO)
			fail(r, "SEEK_DATA", errno);
		size_t hole_end = d < 0 ? r->size : (size_t)d;
		if (hole_end > r->size || (d >= 0 && d < pos)) {
			fprintf(
			    stderr,
			    "fsrand: SEEK_DATA from %jd says %jd (size %zu)\n",
			    (intmax_t)pos, (intmax_t)d, r->size);
			fail(r, "SEEK_DATA out of range", 0);
		}
		for (size_t i = (size_t)pos; i < hole_end; i++)
			if (r->model[i] != 0) {
				fprintf(stderr,
				        "fsrand: SEEK_DATA from %jd says %jd, "
				        "but byte %zu is 0x%02x\n",
				        (intmax_t)pos, (intmax_t)d, i,
				        r->model[i]);
				fail(r, "hole over data", 0);
			}
		if (d < 0)
			break;
		off_t h = lseek(r->fd, d, SEEK_HOLE);
		if (h < 0)
			fail(r, "SEEK_HOLE", errno);
		if (h <= d || (size_t)h > r->size) {
			fprintf(
			    stderr,
			    "fsrand: SEEK_HOLE from %jd says %jd (SEEK_DATA "
			    "from %jd said %jd; size %zu)\n",
			    (intmax_t)d, (intmax_t)h, (intmax_t)pos,
			    (intmax_t)d, r->size);
			fail(r, "SEEK_HOLE out of range", 0);
		}
		pos = h;
	}
	if (lseek(r->fd, (off_t)r->size, SEEK_DATA) >= 0 || errno != ENXIO)
		fail(r, "SEEK_DATA at the end of file", 0);
}

static void op_evict(struct run *r)
{
	note(r, "evict");
	if (fsync(r->fd) != 0)
		fail(r, "fsync", errno);
	(void)posix_fadvise(r->fd, 0, 0, POSIX_FADV_DONTNEED);
}

static bool do_op(struct run *r, char c)
{
	switch (c) {
	case 'w':
		op_write(r, false);
		return true;
	case 'W':
		if (r->dfd < 0)
			return false;
		op_write(r, true);
		return true;
	case 'r':
		op_read(r, false);
		return true;
	case 'd':
		if (r->dfd < 0)
			return false;
		op_read(r, true);
		return true;
	case 'm':
	case 'M':
		op_mapped(r, c == 'm');
		return true;
	case 't':
		op_truncate(r);
		return true;
	case 'p':
		return op_fallocate(
		    r, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, c);
	case 'a':
		return op_fallocate(r, 0, c);
	case 'k':
		return op_fallocate(r, FALLOC_FL_KEEP_SIZE, c);
	case 'c':
		return op_copy(r);
	case 'x':
		return op_copy_from(r);
	case 's':
		op_seek(r);
		return true;
	case 'f':
		note(r, "fsync");
		if (fsync(r->fd) != 0)
			fail(r, "fsync", errno);
		return true;
	case 'o':
		reopen(r);
		return true;
	case 'e':
		op_evict(r);
		return true;
	}
	return false;
}

/* FNV-1a over the bytes: the end-of-run line compared across machines. */
static uint64_t hash(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static int hash_file(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(path);
		return 1;
	}
	size_t n = (size_t)st.st_size;
	uint8_t *p = n ? malloc(n) : NULL;
	if (n && (!p || pread(fd, p, n, 0) != (ssize_t)n)) {
		perror(path);
		return 1;
	}
	printf("size %zu hash %016" PRIx64 "\n", n, hash(p, n));
	free(p);
	close(fd);
	return 0;
}

static void verify_all(struct run *r)
{
	struct stat st;

	note(r, "final check (size %zu)", r->size);
	if (fstat(r->fd, &st) != 0)
		fail(r, "fstat", errno);
	if ((size_t)st.st_size != r->size) {
		fprintf(stderr, "fsrand: size %jd, model %zu\n",
		        (intmax_t)st.st_size, r->size);
		fail(r, "file size", 0);
	}
	ssize_t n = pread(r->fd, r->buf, r->size, 0);
	if (n != (ssize_t)r->size)
		fail(r, "final read", n < 0 ? errno : 0);
	compare(r, "final read", r->buf, 0, r->size);
}

static void run_ops(struct run *r, unsigned long n)
{
	for (r->nops = 0; r->nops < n; r->nops++) {
		size_t nl = strlen(r->ops);
		if (nl == 0)
			break;
		char op = r->ops[below(r, nl)];
		if (do_op(r, op)) {
			r->count[(unsigned char)op]++;
			continue;
		}
		/* Refused: leave it out from now on. */
		r->refused[(unsigned char)op]++;
		memmove(strchr(r->ops, op), strchr(r->ops, op) + 1,
		        strlen(strchr(r->ops, op)));
	}
}

static void *thread_main(void *arg)
{
	struct run *t = arg;

	run_ops(t, t->nops);
	return NULL;
}

/* -t: the file cut into page-aligned parts, one per thread, each thread
 * working on its own part at once with the others (no truncation or
 * seek walks: the file's size and map are shared), through fds of its
 * own; the parts of the model are disjoint, so no locks. */
static void run_threads(struct run *r, int threads, unsigned long n)
{
	size_t part = r->max / (size_t)threads / ALIGN * ALIGN;
	struct run *t = calloc((size_t)threads, sizeof(*t));
	pthread_t *th = calloc((size_t)threads, sizeof(*th));

	if (!t || !th || part < 2 * ALIGN) {
		fprintf(stderr, "fsrand: -t %d: parts too small\n", threads);
		exit(2);
	}
	r->size = part * (size_t)threads;
	if (ftruncate(r->fd, (off_t)r->size) != 0)
		fail(r, "ftruncate", errno);
	for (int i = 0; i < threads; i++) {
		char *p;
		t[i] = *r;
		t[i].tid = i + 1;
		t[i].base = part * (size_t)i;
		t[i].model = r->model + t[i].base;
		t[i].size = t[i].max = part;
		t[i].rng = r->rng * 1000003u + (uint64_t)i;
		t[i].path2 = NULL;
		t[i].nops = n;
		while ((p = strpbrk(t[i].ops, "ts")))
			memmove(p, p + 1, strlen(p));
		if (posix_memalign((void **)&t[i].buf, ALIGN, part + ALIGN))
			exit(1);
		t[i].fd = open_file(&t[i], 0);
		t[i].dfd = open_file(&t[i], O_DIRECT);
		t[i].sfd = open_src(&t[i], false);
		if (pthread_create(&th[i], NULL, thread_main, &t[i]) != 0)
			fail(r, "pthread_create", errno);
	}
	r->nops = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		r->nops += t[i].nops;
		for (int k = 0; k < 128; k++) {
			r->count[k] += t[i].count[k];
			r->refused[k] += t[i].refused[k];
		}
		close(t[i].fd);
		if (t[i].dfd >= 0)
			close(t[i].dfd);
		close(t[i].sfd);
		free(t[i].buf);
	}
	free(t);
	free(th);
}

static void usage(void)
{
	fprintf(stderr, "usage: fsrand [-n OPS] [-s SEED] [-m MAXSIZE] "
	                "[-x LETTERS] [-u] [-v] [-C] [-2 PATH2] [-t N] FILE\n"
	                "       fsrand -H FILE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct run r = {.max = 1 << 20, .dfd = -1};
	unsigned long n = 1000;
	uint64_t seed = 1;
	const char *letters = "wWrdmMtpakcxsfoe";
	int c, threads = 1;

	while ((c = getopt(argc, argv, "n:s:m:x:uvC2:t:H")) != -1) {
		switch (c) {
		case 'n':
			n = strtoul(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'm':
			r.max = strtoul(optarg, NULL, 0);
			break;
		case 'x':
			letters = optarg;
			break;
		case 'u':
			r.unaligned = true;
			break;
		case 'v':
			r.trace = true;
			break;
		case 'C':
			r.corrupt = true;
			break;
		case '2':
			r.path2 = optarg;
			break;
		case 't':
			threads = atoi(optarg);
			break;
		case 'H':
			if (optind != argc - 1)
				usage();
			return hash_file(argv[optind]);
		default:
			usage();
		}
	}
	if (optind != argc - 1 || r.max < 2 * ALIGN || threads < 1 ||
	    threads > 64 || strlen(letters) >= sizeof(r.ops))
		usage();
	r.path = r.path1 = argv[optind];
	r.rng = seed;
	strcpy(r.ops, letters);
	r.model = calloc(1, r.max);
	if (!r.model || posix_memalign((void **)&r.buf, ALIGN, r.max + ALIGN))
		return 1;
	make_src(&r);
	r.fd = open_file(&r, O_CREAT | O_TRUNC);
	r.dfd = open_file(&r, O_DIRECT);

	if (threads > 1)
		run_threads(&r, threads, n);
	else
		run_ops(&r, n);
	if (fsync(r.fd) != 0)
		fail(&r, "fsync", errno);
	if (r.corrupt && r.size > 0) {
		/* The negative control: one byte changed behind the model's
		 * back must fail the final check. */
		uint8_t b = r.model[r.size / 2] ^ 0x5a;
		if (pwrite(r.fd, &b, 1, (off_t)(r.size / 2)) != 1)
			fail(&r, "corrupting pwrite", errno);
	}
	verify_all(&r);
	printf("fsrand: ok %lu ops, seed %" PRIu64 ":", r.nops, seed);
	for (const char *p = letters; *p; p++)
		printf(" %c=%lu%s", *p, r.count[(unsigned char)*p],
		       r.refused[(unsigned char)*p] ? "(refused)" : "");
	printf("\nsize %zu hash %016" PRIx64 "\n", r.size,
	       hash(r.model, r.size));
	close(r.fd);
	close(r.sfd);
	free(r.src);
	if (r.dfd >= 0)
		close(r.dfd);
	free(r.model);
	free(r.buf);
	return 0;
}
