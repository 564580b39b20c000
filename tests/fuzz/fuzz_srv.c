/* Server fixture shared by the server targets; see fuzz_srv.h.
 *
 * Global state is fine here: a fuzz target is one process running one
 * input at a time on one thread. */
#include "fuzz_srv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/nlm4_const.h"
#include "rpc/portmap.h"
#include "server/exports.h"
#include "server/fh.h"
#include "server/programs.h"
#include "server/snfsd.h"
#include "util/log.h"

#include "../server/nfs4/stream.h"

/* Largest file the fuzzer may make: WRITE and SETATTR size get EFBIG past
 * it instead of filling the disk between two tree rebuilds. */
#define FUZZ_FSIZE_LIMIT (64u << 20)
#define FUZZ_RESET_DEFAULT 1000
#define MANY_ENTRIES 40
/* Beside the exports: must never change (see outside_check). */
#define FUZZ_OUTSIDE FUZZ_BASE "/outside"

static const char *const specs[] = {
    FUZZ_EXPORT ":rw,insecure,no_root_squash,delegations",
    FUZZ_RO_EXPORT ":ro,insecure,root_squash",
};
static const char *const export_dirs[] = {FUZZ_EXPORT, FUZZ_RO_EXPORT};

/* The known tree. Indexes are what placeholders name: append only. */
struct tnode {
	int exp; /* index into export_dirs */
	const char *path;
	char type;       /* d dir, f file, s sparse file, l symlink, p fifo */
	const char *arg; /* file contents or symlink target */
	bool later;      /* mkcorpus.sh's traffic makes it (nfs-cp uploads) */
};

static const struct tnode tree[] = {
    {0, "", 'd', NULL, false},
    {0, "dir", 'd', NULL, false},
    {0, "dir/sub", 'd', NULL, false},
    {0, "dir/inner", 'f', "inner file\n", false},
    {0, "file", 'f', "hello, fuzzer: a few bytes of text to read back\n",
     false},
    {0, "empty", 'f', "", false},
    {0, "big", 's', NULL, false},
    {0, "link", 'l', "file", false},
    {0, "abs", 'l', "/etc/passwd", false},
    {0, "up", 'l', "../../../etc", false},
    {0, "fifo", 'p', NULL, false},
    {0, "many", 'd', NULL, false},
    {0, "many/entry-with-a-rather-long-name-00", 'f', "0", false},
    {0, "up.bin", 'f', "", true},
    {0, "up.txt", 'f', "", true},
    {0, "dir/sub/deep", 'f', "deep\n", false},
    {1, "", 'd', NULL, false},
    {1, "rofile", 'f', "read-only export\n", false},
    {1, "rodir", 'd', NULL, false},
    {0, "out", 'l', "../outside", false},
};
#define NTREE (sizeof(tree) / sizeof(tree[0]))

static struct snfsd S;
static struct nfs_fh handles[NTREE];
static struct fuzz_proc procs[256];
static size_t nprocs;
static unsigned long calls, reset_every = FUZZ_RESET_DEFAULT;
static const char *fhmap; /* FUZZ_FHMAP: "create", "print" or NULL */
static bool trace;        /* FUZZ_TRACE: one line per call on stdout */

static void die(const char *what)
{
	fprintf(stderr, "fuzz_srv: %s: %s\n", what, strerror(errno));
	abort();
}

static void write_file(const char *path, const void *p, size_t n, off_t off)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0 || pwrite(fd, p, n, off) != (ssize_t)n)
		die(path);
	close(fd);
}

/* A file with data, a hole, and data again, for READ across holes. */
static void make_sparse(const char *path)
{
	char block[8192];

	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (char)('a' + i % 26);
	write_file(path, block, sizeof(block), 0);
	write_file(path, block, sizeof(block), 1 << 20);
}

static void make_node(const struct tnode *n)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", export_dirs[n->exp], n->path);
	switch (n->type) {
	case 'd':
		if (mkdir(path, 0755) && errno != EEXIST)
			die(path);
		chmod(path, 0755);
		break;
	case 'f':
		write_file(path, n->arg, strlen(n->arg), 0);
		break;
	case 's':
		make_sparse(path);
		break;
	case 'l':
		if (symlink(n->arg, path) && errno != EEXIST)
			die(path);
		break;
	case 'p':
		if (mkfifo(path, 0644) && errno != EEXIST)
			die(path);
		break;
	}
}

/* Directory entries enough for several READDIR pages. */
static void make_many(void)
{
	char path[512];

	for (int i = 1; i < MANY_ENTRIES; i++) {
		snprintf(path, sizeof(path),
		         "%s/many/entry-with-a-rather-long-name-%02d",
		         FUZZ_EXPORT, i);
		write_file(path, "x", 1, 0);
	}
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (ftw->level > 0 && remove(path)) {
		/* A directory the fuzzer made unsearchable still goes:
		 * we run as root. Anything else is worth stopping for. */
		if (errno != ENOENT)
			die(path);
	}
	return 0;
}

/* What must never change while fuzzing: the base directory, a directory
 * beside the exports (the rw export's symlink "out" points at it) with a
 * file in it, and the read-only export. Access times are left out: reads
 * of the ro export are allowed. */
static const char *const watched[] = {
    FUZZ_BASE,
    FUZZ_OUTSIDE,
    FUZZ_OUTSIDE "/secret",
    FUZZ_RO_EXPORT,
    FUZZ_RO_EXPORT "/rofile",
    FUZZ_RO_EXPORT "/rodir",
};
#define NWATCHED (sizeof(watched) / sizeof(watched[0]))
static struct stat snapshot[NWATCHED];

static bool same_stat(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
	       a->st_nlink == b->st_nlink && a->st_uid == b->st_uid &&
	       a->st_gid == b->st_gid && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static void outside_snapshot(void)
{
	for (size_t i = 0; i < NWATCHED; i++)
		if (lstat(watched[i], &snapshot[i]))
			die(watched[i]);
}

/* A change here means a call reached past its export (a followed
 * symlink, a rename or link out) or wrote to the read-only one. */
static bool outside_changed(const char **which)
{
	struct stat st;

	for (size_t i = 0; i < NWATCHED; i++) {
		if (lstat(watched[i], &st) || !same_stat(&st, &snapshot[i])) {
			*which = watched[i];
			return true;
		}
	}
	return false;
}

/* Empty both export directories (keeping the directories themselves, the
 * backend holds them open) and build the known tree again. */
static void tree_rebuild(void)
{
	umask(022);
	for (size_t i = 0; i < sizeof(export_dirs) / sizeof(export_dirs[0]);
	     i++) {
		if (mkdir(export_dirs[i], 0755) && errno != EEXIST)
			die(export_dirs[i]);
		chmod(export_dirs[i], 0755);
		if (nftw(export_dirs[i], rm_one, 16, FTW_DEPTH | FTW_PHYS))
			die(export_dirs[i]);
	}
	for (size_t i = 0; i < NTREE; i++)
		if (!fhmap || !tree[i].later)
			make_node(&tree[i]);
	make_many();
	if (mkdir(FUZZ_OUTSIDE, 0755) && errno != EEXIST)
		die(FUZZ_OUTSIDE);
	write_file(FUZZ_OUTSIDE "/secret", "secret\n", 7, 0);
	outside_snapshot();
}

/* The backend handle of tree node i, walking from its export's root.
 * False when some component is missing. */
static bool node_handle(size_t i, struct export **exp, struct bk_handle *bh)
{
	struct bk_cred root = {0};
	struct export *ex =
	    exports_by_path(S.exports, export_dirs[tree[i].exp]);
	struct bk_handle next;
	struct bk_attr attr;
	char comp[512], *save = NULL;

	if (!ex || ex->ops->root(ex->bk, bh))
		die("export root");
	*exp = ex;
	snprintf(comp, sizeof(comp), "%s", tree[i].path);
	for (char *c = strtok_r(comp, "/", &save); c;
	     c = strtok_r(NULL, "/", &save)) {
		if (ex->ops->lookup(ex->bk, &root, bh, c, &next, &attr))
			return false;
		*bh = next;
	}
	return true;
}

/* Current handle of every tree node. For mkcorpus.sh (fhmap) a missing
 * node just gets no handle (length 0); while fuzzing it is a bug here. */
static void handles_compute(void)
{
	for (size_t i = 0; i < NTREE; i++) {
		struct export *ex;
		struct bk_handle bh;

		handles[i].len = 0;
		if (!node_handle(i, &ex, &bh)) {
			if (fhmap)
				continue;
			errno = ENOENT;
			die(tree[i].path);
		}
		if (fh_make(&S, ex, &bh, &handles[i]))
			die("fh_make");
	}
}

static void add_version(uint32_t prog, uint32_t vers)
{
	const struct rpc_program *p = rpc_service_find(S.svc, prog);

	for (uint32_t v = 0; p && v < p->nversions; v++) {
		const struct rpc_version *rv = &p->versions[v];

		if (rv->vers != vers)
			continue;
		for (uint32_t i = 0; i < rv->nprocs; i++) {
			if (nprocs == sizeof(procs) / sizeof(procs[0]))
				return;
			procs[nprocs++] = (struct fuzz_proc){prog, vers, i};
		}
	}
}

static bool have_version(uint32_t prog, uint32_t vers)
{
	for (size_t i = 0; i < nprocs; i++)
		if (procs[i].prog == prog && procs[i].vers == vers)
			return true;
	return false;
}

static void procs_build(void)
{
	static const uint32_t fixed[][2] = {
	    {NFS_PROGRAM, 3},  {MOUNT_PROGRAM, 3}, {MOUNT_PROGRAM, 1},
	    {PMAP_PROGRAM, 2}, {PMAP_PROGRAM, 3},  {PMAP_PROGRAM, 4},
	};
	static const uint32_t progs[] = {NFS_PROGRAM, MOUNT_PROGRAM,
	                                 PMAP_PROGRAM, NLM_PROG, NSM_PROG};

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		add_version(fixed[i][0], fixed[i][1]);
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		const struct rpc_program *p = rpc_service_find(S.svc, progs[i]);

		for (uint32_t v = 0; p && v < p->nversions; v++)
			if (!have_version(p->prog, p->versions[v].vers))
				add_version(p->prog, p->versions[v].vers);
	}
}

size_t fuzz_srv_procs(const struct fuzz_proc **v)
{
	*v = procs;
	return nprocs;
}

static void print_fixture(void)
{
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		printf("export %s\n", specs[i]);
	printf("key %s\n", FUZZ_FH_KEY);
	for (size_t i = 0; i < NTREE; i++) {
		if (handles[i].len == 0)
			continue;
		printf("fh %zu ", i);
		for (uint32_t j = 0; j < handles[i].len; j++)
			printf("%02x", handles[i].data[j]);
		printf(" %s:%s\n", export_dirs[tree[i].exp], tree[i].path);
	}
	for (size_t i = 0; i < nprocs; i++)
		printf("proc %zu %u %u %u\n", i, procs[i].prog, procs[i].vers,
		       procs[i].proc);
	fflush(stdout);
}

void fuzz_srv_init(void)
{
	const char *reset = getenv("FUZZ_RESET");
	const char *lvl = getenv("FUZZ_LOG_LEVEL");
	struct rlimit rl = {FUZZ_FSIZE_LIMIT, FUZZ_FSIZE_LIMIT};
	struct export_table *t;
	char err[512];

	fhmap = getenv("FUZZ_FHMAP");
	trace = getenv("FUZZ_TRACE") != NULL;
	if (reset && atol(reset) > 0)
		reset_every = (unsigned long)atol(reset);
	/* Every log line is formatted (so its format and arguments are
	 * checked) even when stderr goes nowhere (-close_fd_mask=2). */
	log_set_level(lvl ? atoi(lvl) : LOG_DEBUG);
	signal(SIGXFSZ, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (mkdir(FUZZ_BASE, 0755) && errno != EEXIST)
		die(FUZZ_BASE);
	if (!fhmap || strcmp(fhmap, "print"))
		tree_rebuild();
	if (exports_load(NULL, specs, 2, &t, err, sizeof(err))) {
		fprintf(stderr, "fuzz_srv: exports_load: %s\n", err);
		abort();
	}
	pthread_mutex_init(&S.exports_lock, NULL);
	pthread_mutex_init(&S.mounts_lock, NULL);
	S.exports = t;
	memcpy(S.fh_key, FUZZ_FH_KEY, sizeof(S.fh_key));
	memcpy(S.write_verf, "FUZZVERF", sizeof(S.write_verf));
	S.boot_time_ns = 1700000000ull * 1000000000ull;
	S.cfg.listen_addr = "127.0.0.1";
	S.cfg.port = 2049;
	S.cfg.no_callouts = true;
	S.svc = rpc_service_new(&S);
	if (!S.svc || programs_register(S.svc) ||
	    rpc_service_add(S.svc, &pmap_program))
		die("rpc service");
	pmap_set_local(S.svc, 2049, 2049, "127.0.0.1");
	procs_build();
	handles_compute();
	if (fhmap) {
		print_fixture();
		exit(0);
	}
	/* Set last: building the tree must not be limited. */
	setrlimit(RLIMIT_FSIZE, &rl);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static bool is_placeholder(const uint8_t *p, size_t left)
{
	return left >= 12 && get_be32(p) == 8 && !memcmp(p + 4, FUZZ_MAGIC, 4);
}

/* Copy rec into a new exactly-sized buffer (so ASan sees any overread),
 * replacing placeholders by real handles. */
static uint8_t *substitute(const uint8_t *rec, size_t len, size_t *outlen)
{
	size_t n = 0, i = 0, cap = len + (len / 12 + 1) * (NFS_FH_MAX + 4);
	uint8_t *tmp = malloc(cap ? cap : 1), *out;

	if (!tmp)
		abort();
	while (i < len) {
		if ((i & 3) == 0 && is_placeholder(rec + i, len - i)) {
			const struct nfs_fh *fh =
			    &handles[get_be32(rec + i + 8) % NTREE];
			uint32_t be = htonl(fh->len);

			memcpy(tmp + n, &be, 4);
			memcpy(tmp + n + 4, fh->data, fh->len);
			memset(tmp + n + 4 + fh->len, 0, xdr_pad(fh->len));
			n += 4 + fh->len + xdr_pad(fh->len);
			i += 12;
		} else {
			tmp[n++] = rec[i++];
		}
	}
	out = malloc(n ? n : 1);
	if (!out)
		abort();
	memcpy(out, tmp, n);
	free(tmp);
	*outlen = n;
	return out;
}

#define GUARD 0xa5a5a5a5u

/* On stdout: the fuzz scripts close stderr (-close_fd_mask=2). */
static void fail(const char *what, long long v)
{
	printf("fuzz_srv: %s (%lld)\n", what, v);
	fflush(stdout);
	abort();
}

/* What every caller of rpc_service_handle relies on (rpc.h). */
static void check_reply(int rc, const uint8_t *rec, size_t len,
                        const struct xdr_out *reply, size_t limit)
{
	if (get_be32(reply->buf) != GUARD)
		fail("bytes before the reply changed", 0);
	if (rc == RPC_REPLY_DROP) {
		if (reply->len != 4)
			fail("dropped call left reply bytes",
			     (long long)reply->len - 4);
		return;
	}
	if (rc != 0)
		fail("rpc_service_handle returned", rc);
	if (reply->len < 4 + 12 || xdr_out_size(reply) > limit ||
	    (xdr_out_size(reply) - 4) % 4 != 0)
		fail("bad reply length", (long long)xdr_out_size(reply) - 4);
	/* file parts (TCP): in order, inside the buffer, summed right */
	uint64_t sum = 0;
	for (uint32_t i = 0; i < reply->nparts; i++) {
		if (reply->parts[i].at > reply->len ||
		    (i && reply->parts[i].at < reply->parts[i - 1].at) ||
		    reply->parts[i].len == 0)
			fail("bad file part", (long long)i);
		sum += reply->parts[i].len;
	}
	if (sum != reply->part_bytes || (reply->nparts && !reply->has_fd))
		fail("file parts do not add up", (long long)sum);
	if (len < 4 || memcmp(reply->buf + 4, rec, 4) ||
	    get_be32(reply->buf + 8) != 1)
		fail("reply xid or message type wrong", 0);
}

/* FUZZ_TRACE: program, version, procedure, accept_stat and the first
 * result word (the NFS or MOUNT status) of one call, to see what seeds
 * reach. A reply with a verifier body is not decoded further. */
static void trace_call(int rc, const uint8_t *rec, size_t len,
                       const struct xdr_out *reply)
{
	const uint8_t *r = reply->buf + 4;
	size_t rlen = reply->len - 4;

	if (len < 24) {
		printf("trace short call\n");
		return;
	}
	printf("trace %u/%u/%u", get_be32(rec + 12), get_be32(rec + 16),
	       get_be32(rec + 20));
	if (rc)
		printf(" dropped\n");
	else if (rlen >= 28 && get_be32(r + 8) == 0 && get_be32(r + 16) == 0)
		printf(" accept=%u res=%u\n", get_be32(r + 20),
		       get_be32(r + 24));
	else if (rlen >= 24 && get_be32(r + 8) == 0)
		printf(" accept=%u\n", get_be32(r + 20));
	else
		printf(" denied\n");
}

void fuzz_srv_call(const uint8_t *rec, size_t len, enum rpc_transport t)
{
	fuzz_srv_call_reply(rec, len, t, NULL, NULL);
}

void fuzz_srv_call_reply(const uint8_t *rec, size_t len, enum rpc_transport t,
                         uint8_t **out, size_t *outlen)
{
	struct sockaddr_in peer = {.sin_family = AF_INET,
	                           .sin_port = htons(800)};
	/* The guard word stands where TCP puts its record mark. */
	size_t limit = 4 + (t == RPC_UDP ? 65507 : RPC_DEFAULT_MAX_RECORD);
	struct xdr_out reply;
	const char *which;
	size_t n;
	uint8_t *buf;
	int rc;

	/* libFuzzer installs a SIGXFSZ handler after initialization that
	 * calls a file-size overrun a crash: here it is the EFBIG we want. */
	if (calls == 0)
		signal(SIGXFSZ, SIG_IGN);
	if (++calls % reset_every == 0) {
		tree_rebuild();
		handles_compute();
	}
	buf = substitute(rec, len, &n);
	peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* Like the TCP transport: room for the record mark first. */
	if (xdr_out_init(&reply, 4096, limit) || !xdr_put_u32(&reply, GUARD))
		abort();
	if (t == RPC_TCP)
		xdr_out_allow_file(&reply);
	rc = rpc_service_handle(S.svc, buf, n, (struct sockaddr *)&peer,
	                        sizeof(peer), t, NULL, &reply);
	check_reply(rc, buf, n, &reply, limit);
	if (outside_changed(&which)) {
		printf("fuzz_srv: %s changed: a call reached outside the rw "
		       "export\n",
		       which);
		fflush(stdout);
		abort();
	}
	if (trace)
		trace_call(rc, buf, n, &reply);
	if (out) {
		uint8_t *s = reply_stream_of(&reply);
		*outlen = xdr_out_size(&reply) - 4;
		*out = malloc(*outlen ? *outlen : 1);
		if (!s || !*out)
			abort();
		memcpy(*out, s + 4, *outlen);
		free(s);
	}
	xdr_out_free(&reply);
	free(buf);
}
