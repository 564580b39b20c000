/* snfs-mount: mount an NFS export through FUSE.
 *
 *   snfs-mount nfs://host/export /mnt [-o opt[,opt...]] [-f] [-d]
 *
 * Options for libsnfs go into the URL (version, uid, gid, rsize, wsize,
 * readdir-buffer, nfsport, mountport, cache, timeout); attr_timeout,
 * entry_timeout, kernel_cache and stats_file are ours; anything else goes
 * to FUSE (ro, allow_other, default_permissions, ...). Without -f the
 * program forks and the parent exits once the mount is up, with the
 * child's status, so a bad URL or a dead server fails the command itself.
 * SIGUSR1 writes libsnfs's counters to the stats file (or stderr). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/mount.h"

#define DEFAULT_TIMEOUT_S 30
#define DEFAULT_ATTR_TIMEOUT 1.0

struct cmdline {
	const char *url, *mountpoint;
	char *full_url;   /* url with the libsnfs options appended */
	char *fuse_opts;  /* comma list for FUSE's -o */
	char *stats_file; /* absolute; NULL: SIGUSR1 writes to stderr */
	bool foreground, debug, timeout_given;
	struct mnt m;
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: snfs-mount nfs://host[:port]/export[/path] MOUNTPOINT "
	        "[-o OPTIONS] [-f] [-d]\n"
	        "  -o version=3|4.1|4.2,ro,attr_timeout=S,entry_timeout=S,\n"
	        "     kernel_cache,stats_file=PATH,timeout=S,cache=SIZE|0,"
	        "uid=N,gid=N,\n"
	        "     rsize=N,wsize=N,nfsport=N,mountport=N,readdir-buffer=N, "
	        "or any FUSE\n"
	        "     mount option\n"
	        "  -f  stay in the foreground   -d  FUSE debug output\n"
	        "Unmount with: fusermount3 -u MOUNTPOINT (or umount as root); "
	        "kill -USR1\n"
	        "writes the RPC counters to the stats file (or stderr)\n");
}

/* Append ",s" (or "s") to a malloc'd comma list. */
static int list_add(char **list, const char *s)
{
	char *n;
	if (asprintf(&n, "%s%s%s", *list ? *list : "", *list ? "," : "", s) < 0)
		return -ENOMEM;
	free(*list);
	*list = n;
	return 0;
}

/* Add key=value to the URL's query. */
static int url_add(struct cmdline *c, const char *kv)
{
	char *n;
	const char *sep = strchr(c->full_url, '?') ? "&" : "?";
	if (asprintf(&n, "%s%s%s", c->full_url, sep, kv) < 0)
		return -ENOMEM;
	free(c->full_url);
	c->full_url = n;
	return 0;
}

static bool parse_seconds(const char *v, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || end == v || *end || d < 0 || d > 1e6)
		return false;
	*out = d;
	return true;
}

static const char *const url_keys[] = {
    "version", "uid",       "gid",   "rsize",          "wsize",
    "nfsport", "mountport", "cache", "readdir-buffer", "timeout",
};

/* One -o item. Returns 0 or -EINVAL. */
static int one_opt(struct cmdline *c, char *o)
{
	char *eq = strchr(o, '=');
	size_t klen = eq ? (size_t)(eq - o) : strlen(o);
	const char *v = eq ? eq + 1 : NULL;

	for (size_t i = 0; i < sizeof(url_keys) / sizeof(url_keys[0]); i++)
		if (strlen(url_keys[i]) == klen &&
		    !strncmp(o, url_keys[i], klen)) {
			if (!v)
				return -EINVAL;
			if (!strcmp(url_keys[i], "timeout"))
				c->timeout_given = true;
			return url_add(c, o);
		}
	if (!strncmp(o, "attr_timeout=", 13))
		return parse_seconds(v, &c->m.attr_timeout) ? 0 : -EINVAL;
	if (!strncmp(o, "entry_timeout=", 14))
		return parse_seconds(v, &c->m.entry_timeout) ? 0 : -EINVAL;
	if (!strcmp(o, "kernel_cache")) {
		c->m.kernel_cache = true;
		return 0;
	}
	if (!strncmp(o, "stats_file=", 11)) {
		/* absolute: the daemon changes to / */
		if (!v[0])
			return -EINVAL;
		char *cwd = v[0] == '/' ? NULL : getcwd(NULL, 0);
		if (v[0] != '/' && !cwd)
			return -EINVAL;
		free(c->stats_file);
		int n = asprintf(&c->stats_file, "%s%s%s", cwd ? cwd : "",
		                 cwd ? "/" : "", v);
		free(cwd);
		if (n < 0) {
			c->stats_file = NULL;
			return -ENOMEM;
		}
		return 0;
	}
	return list_add(&c->fuse_opts, o);
}

static int parse_opts(struct cmdline *c, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	int rc = copy ? 0 : -ENOMEM;
	for (char *o = copy ? strtok_r(copy, ",", &save) : NULL; o && rc == 0;
	     o = strtok_r(NULL, ",", &save)) {
		rc = one_opt(c, o);
		if (rc == -EINVAL)
			fprintf(stderr, "snfs-mount: bad option '%s'\n", o);
	}
	free(copy);
	return rc;
}

static int parse_args(struct cmdline *c, int argc, char **argv)
{
	const char *opts[64];
	int nopts = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "-f")) {
			c->foreground = true;
		} else if (!strcmp(a, "-d")) {
			c->debug = c->foreground = true;
		} else if (!strcmp(a, "-o") && i + 1 < argc && nopts < 64) {
			opts[nopts++] = argv[++i];
		} else if (!strncmp(a, "-o", 2) && a[2] && nopts < 64) {
			opts[nopts++] = a + 2;
		} else if (a[0] != '-' && !c->url) {
			c->url = a;
		} else if (a[0] != '-' && !c->mountpoint) {
			c->mountpoint = a;
		} else {
			fprintf(stderr, "snfs-mount: unexpected '%s'\n", a);
			return -EINVAL;
		}
	}
	if (!c->url || !c->mountpoint || !snfs_is_url(c->url)) {
		usage(stderr);
		return -EINVAL;
	}
	c->full_url = strdup(c->url);
	if (!c->full_url)
		return -ENOMEM;
	for (int i = 0; i < nopts; i++) {
		int rc = parse_opts(c, opts[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* FUSE's own arguments: program name, -o fsname=URL,subtype=snfs,...,
 * and -d. */
static int fuse_argv(struct cmdline *c, struct fuse_args *args)
{
	char *fs = NULL;
	int rc = 0;

	if (asprintf(&fs, "fsname=%s,subtype=snfs", c->url) < 0)
		return -ENOMEM;
	if (fuse_opt_add_arg(args, "snfs-mount") ||
	    fuse_opt_add_arg(args, "-o") || fuse_opt_add_arg(args, fs))
		rc = -ENOMEM;
	if (rc == 0 && c->fuse_opts &&
	    (fuse_opt_add_arg(args, "-o") ||
	     fuse_opt_add_arg(args, c->fuse_opts)))
		rc = -ENOMEM;
	if (rc == 0 && c->debug && fuse_opt_add_arg(args, "-d"))
		rc = -ENOMEM;
	free(fs);
	return rc;
}

/* Mount the export, then the FUSE file system. */
static int start(struct cmdline *c, struct fuse_session **se)
{
	struct snfs_mount_opts mo = {0};
	struct snfs_handle root;
	struct snfs_stat st;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);

	if (!c->timeout_given)
		mo.timeout_ms = DEFAULT_TIMEOUT_S * 1000;
	int rc = snfs_mount(c->full_url, &mo, &c->m.ctx);
	if (rc < 0) {
		fprintf(stderr, "snfs-mount: %s\n", snfs_last_error());
		return rc;
	}
	rc = snfs_h_base(c->m.ctx, &root, &st);
	if (rc == 0 && st.type != SNFS_DIR)
		rc = -ENOTDIR;
	if (rc == 0)
		rc = itab_new(&c->m.it, &root);
	if (rc == 0)
		rc = fuse_argv(c, &args);
	if (rc < 0) {
		fprintf(stderr, "snfs-mount: %s: %s\n", c->url, strerror(-rc));
		fuse_opt_free_args(&args);
		return rc;
	}
	*se = fuse_session_new(&args, &mount_ops, sizeof(mount_ops), &c->m);
	fuse_opt_free_args(&args);
	if (!*se)
		return -EINVAL;
	c->m.se = *se;
	if (fuse_session_mount(*se, c->mountpoint) != 0) {
		fuse_session_destroy(*se);
		*se = NULL;
		return -EIO;
	}
	return 0;
}

/* Fork; the parent waits for the child's verdict on the pipe. Returns
 * in the child with the write end in *fd. */
static void background(int *fd)
{
	int p[2];
	if (pipe(p) < 0) {
		perror("snfs-mount: pipe");
		exit(1);
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("snfs-mount: fork");
		exit(1);
	}
	if (pid > 0) {
		char ok = 1;
		close(p[1]);
		if (read(p[0], &ok, 1) != 1) {
			int st;
			waitpid(pid, &st, 0);
		}
		_exit(ok == 0 ? 0 : 1);
	}
	close(p[0]);
	setsid();
	*fd = p[1];
}

/* Tell the parent, detach from the terminal. */
static void detach(int fd, char verdict)
{
	if (fd < 0)
		return;
	if (write(fd, &verdict, 1) != 1)
		perror("snfs-mount: pipe");
	close(fd);
	if (verdict != 0)
		return;
	if (chdir("/") < 0)
		perror("snfs-mount: chdir");
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (null > 2)
			close(null);
	}
}

/* ---- SIGUSR1: the counters ----
 * SIGUSR1 is blocked in every thread (libsnfs's and FUSE's inherit the
 * mask), and one thread takes it with sigwait, so the counters are read
 * outside a signal handler. */
struct stats_thread {
	pthread_t t;
	struct snfs_ctx *ctx;
	const char *path;
	bool stop;
};

static const char *version_name(enum snfs_version v)
{
	switch (v) {
	case SNFS_V3:
		return "3";
	case SNFS_V41:
		return "4.1";
	case SNFS_V42:
		return "4.2";
	}
	return "?";
}

/* "name value" lines; a file is replaced whole (written aside, renamed)
 * so a reader never sees half of it. */
static void write_stats(struct snfs_ctx *ctx, const char *path)
{
	struct snfs_stats s;
	char *tmp = NULL;
	FILE *f = stderr;

	if (path) {
		if (asprintf(&tmp, "%s.tmp", path) < 0)
			return;
		f = fopen(tmp, "w");
		if (!f) {
			free(tmp);
			return;
		}
	}
	snfs_stats(ctx, &s);
	fprintf(f, "version %s\n", version_name(snfs_get_version(ctx)));
	for (int i = 0; i < SNFS_OP_MAX; i++)
		fprintf(f, "%s %" PRIu64 "\n", snfs_op_name((enum snfs_op)i),
		        s.calls[i]);
	fprintf(f,
	        "total_calls %" PRIu64 "\nretransmits %" PRIu64
	        "\nreconnects %" PRIu64 "\nbytes_sent %" PRIu64
	        "\nbytes_received %" PRIu64 "\nread_bytes %" PRIu64
	        "\nwrite_bytes %" PRIu64 "\ncache_hits %" PRIu64
	        "\ncache_misses %" PRIu64 "\nwrite_resends %" PRIu64 "\n",
	        s.total_calls, s.retransmits, s.reconnects, s.bytes_sent,
	        s.bytes_received, s.read_bytes, s.write_bytes, s.cache_hits,
	        s.cache_misses, s.write_resends);
	if (path) {
		if (fclose(f) != 0 || rename(tmp, path) != 0)
			unlink(tmp);
		free(tmp);
	} else {
		fflush(f);
	}
}

static void *stats_main(void *arg)
{
	struct stats_thread *st = arg;
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	while (sigwait(&set, &sig) == 0 &&
	       !__atomic_load_n(&st->stop, __ATOMIC_ACQUIRE))
		write_stats(st->ctx, st->path);
	return NULL;
}

static void block_usr1(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

static bool stats_start(struct stats_thread *st, struct snfs_ctx *ctx,
                        const char *path)
{
	st->ctx = ctx;
	st->path = path;
	st->stop = false;
	return pthread_create(&st->t, NULL, stats_main, st) == 0;
}

static void stats_stop(struct stats_thread *st)
{
	__atomic_store_n(&st->stop, true, __ATOMIC_RELEASE);
	pthread_kill(st->t, SIGUSR1);
	pthread_join(st->t, NULL);
}

int main(int argc, char **argv)
{
	struct cmdline c = {0};
	struct fuse_session *se = NULL;
	struct stats_thread stt;
	int fd = -1, rc;

	c.m.attr_timeout = c.m.entry_timeout = DEFAULT_ATTR_TIMEOUT;
	rc = parse_args(&c, argc, argv);
	if (rc < 0) {
		free(c.full_url);
		free(c.fuse_opts);
		free(c.stats_file);
		return 2;
	}
	c.m.debug = c.debug;
	if (!c.foreground)
		background(&fd);
	block_usr1(); /* before libsnfs and FUSE start threads */
	rc = start(&c, &se);
	detach(fd, rc == 0 ? 0 : 1);
	if (rc == 0) {
		struct fuse_loop_config *lc = fuse_loop_cfg_create();
		bool stats = stats_start(&stt, c.m.ctx, c.stats_file);
		if (fuse_set_signal_handlers(se) != 0 || !lc) {
			rc = -EIO;
		} else {
			fuse_loop_cfg_set_max_threads(lc, 32);
			fuse_loop_cfg_set_idle_threads(lc, 8);
			rc = fuse_session_loop_mt(se, lc);
			fuse_remove_signal_handlers(se);
		}
		if (stats)
			stats_stop(&stt);
		fuse_loop_cfg_destroy(lc);
		fuse_session_unmount(se);
	}
	if (se)
		fuse_session_destroy(se);
	itab_free(c.m.it);
	if (c.m.ctx)
		snfs_umount(c.m.ctx);
	free(c.full_url);
	free(c.fuse_opts);
	free(c.stats_file);
	return rc == 0 ? 0 : 1;
}
