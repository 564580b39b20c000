/* snfsd: the user-space NFS server. Parses the command line, builds the
 * server context (state, exports), registers the programs and runs the RPC
 * server until SIGTERM/SIGINT; SIGHUP re-reads the exports. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rpc/portmap.h"
#include "server/control.h"
#include "server/exports.h"
#include "server/idmap.h"
#include "server/mount/mount3.h"
#include "server/nfs4/nfs4.h"
#include "server/nlm/nlm.h"
#include "server/programs.h"
#include "server/snfsd.h"
#include "server/state.h"
#include "util/cpulist.h"
#include "util/log.h"

#define SNFSD_VERSION "0.1.0"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: snfsd [OPTION]...\n"
	    "User-space NFS server: NFSv3 with MOUNT, NFSv4.0, 4.1 and 4.2.\n"
	    "\n"
	    "  -e, --export DIR[:OPTIONS]  export DIR; OPTIONS is an option "
	    "list for\n"
	    "                              all clients (rw,insecure,...) or "
	    "HOST(OPTS)\n"
	    "                              elements; -e defaults: rw,insecure\n"
	    "                              (repeatable)\n"
	    "  -f, --exports FILE          read exports from FILE "
	    "(exports(5) syntax)\n"
	    "  -l, --listen ADDR           listen address (default "
	    "127.0.0.1)\n"
	    "  -p, --port PORT             TCP/UDP port (default 2049)\n"
	    "  -t, --threads N             worker threads (default 8)\n"
	    "      --cpus LIST             run every thread on these CPUs "
	    "only\n"
	    "                              (a list such as 1 or 2-5,8; "
	    "default: all)\n"
	    "  -s, --state-dir DIR         state directory (default "
	    "%s)\n"
	    "  -v, --verbose               more log output (repeatable)\n"
	    "      --no-portmap            neither answer nor register "
	    "with portmap\n"
	    "      --metrics-port PORT     serve Prometheus metrics on "
	    "127.0.0.1:PORT\n"
	    "      --stats                 print the statistics of the "
	    "snfsd running\n"
	    "                              with this state directory "
	    "(-s) and exit\n"
	    "  -h, --help                  show this help and exit\n"
	    "      --version               show the version and exit\n"
	    "\n"
	    "SIGHUP re-reads the exports; SIGTERM or SIGINT stops the "
	    "server.\n"
	    "See snfsd(8).\n",
	    SNFSD_STATE_DIR_DEFAULT);
}

enum {
	OPT_NO_PORTMAP = 256,
	OPT_VERSION,
	OPT_STATS,
	OPT_METRICS_PORT,
	OPT_CPUS
};

static bool parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* Returns 0 to run, 1 to exit successfully (--help, --version), -1 on a
 * usage error (already reported). */
static int parse_args(int argc, char **argv, struct snfsd_config *cfg)
{
	static const struct option longopts[] = {
	    {"export", required_argument, NULL, 'e'},
	    {"exports", required_argument, NULL, 'f'},
	    {"listen", required_argument, NULL, 'l'},
	    {"port", required_argument, NULL, 'p'},
	    {"threads", required_argument, NULL, 't'},
	    {"state-dir", required_argument, NULL, 's'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"no-portmap", no_argument, NULL, OPT_NO_PORTMAP},
	    {"version", no_argument, NULL, OPT_VERSION},
	    {"stats", no_argument, NULL, OPT_STATS},
	    {"metrics-port", required_argument, NULL, OPT_METRICS_PORT},
	    {"cpus", required_argument, NULL, OPT_CPUS},
	    {NULL, 0, NULL, 0},
	};
	long v;
	int c;

	cfg->listen_addr = "127.0.0.1";
	cfg->port = 2049;
	cfg->threads = 8;
	cfg->state_dir = SNFSD_STATE_DIR_DEFAULT;
	while ((c = getopt_long(argc, argv, "e:f:l:p:t:s:vh", longopts,
	                        NULL)) != -1) {
		switch (c) {
		case 'e':
			if (cfg->ncli_exports == SNFSD_MAX_CLI_EXPORTS) {
				fprintf(stderr,
				        "snfsd: at most %d -e options\n",
				        SNFSD_MAX_CLI_EXPORTS);
				return -1;
			}
			cfg->cli_exports[cfg->ncli_exports++] = optarg;
			break;
		case 'f':
			cfg->exports_file = optarg;
			break;
		case 'l':
			cfg->listen_addr = optarg;
			break;
		case 'p':
			if (!parse_long(optarg, 0, 65535, &v)) {
				fprintf(stderr, "snfsd: bad port '%s'\n",
				        optarg);
				return -1;
			}
			cfg->port = (uint16_t)v;
			break;
		case 't':
			if (!parse_long(optarg, 1, 1024, &v)) {
				fprintf(
				    stderr,
				    "snfsd: bad thread count '%s' (1-1024)\n",
				    optarg);
				return -1;
			}
			cfg->threads = (int)v;
			break;
		case 's':
			cfg->state_dir = optarg;
			break;
		case 'v':
			cfg->verbose++;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case OPT_NO_PORTMAP:
			cfg->no_portmap = true;
			break;
		case OPT_VERSION:
			printf("snfsd %s\n", SNFSD_VERSION);
			return 1;
		case OPT_STATS:
			cfg->stats_client = true;
			break;
		case OPT_METRICS_PORT:
			if (!parse_long(optarg, 1, 65535, &v)) {
				fprintf(stderr,
				        "snfsd: bad metrics port '%s'\n",
				        optarg);
				return -1;
			}
			cfg->metrics_port = (uint16_t)v;
			break;
		case OPT_CPUS:
			if (util_cpulist_parse(optarg, &cfg->cpu_set) != 0) {
				fprintf(stderr,
				        "snfsd: bad CPU list '%s' (e.g. 1 or "
				        "0-3,6)\n",
				        optarg);
				return -1;
			}
			cfg->cpus = optarg;
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "snfsd: unexpected argument '%s'\n",
		        argv[optind]);
		usage(stderr);
		return -1;
	}
	if (!cfg->stats_client && !cfg->exports_file &&
	    cfg->ncli_exports == 0) {
		fprintf(stderr, "snfsd: nothing to export: give -e DIR or -f "
		                "FILE (see --help)\n");
		return -1;
	}
	return 0;
}

/* Whether any rule follows rpc_sendfile_pays (zerocopy=auto). */
static bool uses_zerocopy_auto(const struct export_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		for (size_t j = 0; j < t->v[i].nrules; j++)
			if (t->v[i].rules[j].flags & EXP_ZEROCOPY_AUTO)
				return true;
	return false;
}

/* Build the export table from the configuration. Returns 0 or -errno with
 * "file:line: reason" in err. An empty table is an error too: a server
 * with nothing to serve is a configuration mistake. */
static int load_exports(const struct snfsd_config *cfg,
                        struct export_table **out, char *err, size_t errsz)
{
	int rc = exports_load(cfg->exports_file, cfg->cli_exports,
	                      cfg->ncli_exports, out, err, errsz);

	if (rc)
		return rc;
	if ((*out)->n == 0) {
		snprintf(err, errsz, "%s: no exports",
		         cfg->exports_file ? cfg->exports_file : "-e");
		exports_free(*out);
		*out = NULL;
		return -ENOENT;
	}
	/* zerocopy=auto: timed now, not in the first READ */
	if (uses_zerocopy_auto(*out))
		(void)rpc_sendfile_pays();
	return 0;
}

/* One line per export: path, fsid and who may use it how. */
static void log_exports(const struct export_table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct export *ex = &t->v[i];
		char line[768];
		size_t n = 0;

		for (size_t j = 0; j < ex->nrules && n < sizeof(line); j++) {
			const struct export_rule *r = &ex->rules[j];
			n += (size_t)snprintf(
			    line + n, sizeof(line) - n, " %s(%s%s%s%s%s%s)",
			    r->pattern ? r->pattern : "*",
			    r->flags & EXP_RW ? "rw" : "ro",
			    r->flags & EXP_ALL_SQUASH    ? ",all_squash"
			    : r->flags & EXP_ROOT_SQUASH ? ",root_squash"
			                                 : ",no_root_squash",
			    r->flags & EXP_SECURE ? ",secure" : ",insecure",
			    r->flags & EXP_SYNC ? ",sync" : ",async",
			    r->flags & EXP_IDMAP_NAMES ? ",idmap=names" : "",
			    r->flags & EXP_DELEGATIONS ? ",delegations" : "");
		}
		line[sizeof(line) - 1] = '\0';
		log_info("export %s fsid=%u:%s", ex->path, ex->fsid, line);
	}
}

/* SIGHUP: build a new table; only a complete, valid one replaces the old.
 * Calls in flight finish on the old table, and connections stay open. */
static void reload_exports(struct snfsd *s)
{
	struct export_table *t;
	char err[1024];

	if (load_exports(&s->cfg, &t, err, sizeof(err))) {
		log_err("reload failed, keeping the current exports: %s", err);
		return;
	}
	exports_replace(s, t);
	log_info("exports reloaded: %zu export%s", t->n, t->n == 1 ? "" : "s");
	log_exports(t);
}

struct signal_ctx {
	struct snfsd *s;
	sigset_t set;
};

/* The only thread that receives SIGHUP/SIGTERM/SIGINT (all threads block
 * them), so handlers run as ordinary code, not in signal context. */
static void *signal_thread(void *arg)
{
	struct signal_ctx *sc = arg;
	int sig;

	for (;;) {
		if (sigwait(&sc->set, &sig))
			continue;
		if (sig == SIGHUP) {
			reload_exports(sc->s);
			continue;
		}
		log_info("%s: shutting down", strsignal(sig));
		rpc_server_stop(sc->s->rpc);
		return NULL;
	}
}

static int listen_all(struct snfsd *s)
{
	const struct snfsd_config *cfg = &s->cfg;
	uint16_t port;
	int rc;

	rc =
	    rpc_server_listen(s->rpc, cfg->listen_addr, cfg->port, SOCK_STREAM);
	if (rc) {
		fprintf(stderr, "snfsd: cannot listen on %s:%u/tcp: %s\n",
		        cfg->listen_addr, cfg->port, strerror(-rc));
		return rc;
	}
	/* With -p 0 UDP takes the port TCP was given: one port for all. */
	port = rpc_server_port(s->rpc, SOCK_STREAM);
	s->cfg.port = port;
	rc = rpc_server_listen(s->rpc, cfg->listen_addr, port, SOCK_DGRAM);
	if (rc)
		fprintf(stderr, "snfsd: cannot listen on %s:%u/udp: %s\n",
		        cfg->listen_addr, port, strerror(-rc));
	return rc;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Set up everything up to a listening server. Returns 0 or an exit code. */
static int server_setup(struct snfsd *s)
{
	struct rpc_server_config rcfg = {.nthreads = s->cfg.threads};
	struct export_table *t;
	char err[1024];
	int rc;

	rc = state_open(s, s->cfg.state_dir, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "snfsd: %s\n", err);
		return 1;
	}
	/* Once, for the server's life: a SIGHUP reloads exports only, and
	 * owners must not change domain under the clients' caches. */
	log_info("NFSv4 owner domain %s (from %s)", s->idmap_domain,
	         idmap_origin_name(idmap_find_domain(&idmap_system_sources,
	                                             s->idmap_domain)));
	if (load_exports(&s->cfg, &t, err, sizeof(err))) {
		fprintf(stderr, "snfsd: %s\n", err);
		return 1;
	}
	exports_replace(s, t); /* with the handle tags noted */
	s->svc = rpc_service_new(s);
	if (!s->svc || programs_register(s->svc)) {
		fprintf(stderr, "snfsd: cannot register programs\n");
		return 1;
	}
	rpc_service_on_reply(s->svc, nfs4_cb_on_reply, s);
	s->rpc = rpc_server_new(s->svc, &rcfg);
	if (!s->rpc) {
		fprintf(stderr, "snfsd: cannot create the RPC server\n");
		return 1;
	}
	if (listen_all(s))
		return 1;
	return 0;
}

static void server_teardown(struct snfsd *s)
{
	rpc_server_free(s->rpc);
	s->rpc = NULL;
	rpc_service_free(s->svc);
	s->svc = NULL;
	exports_replace(s, NULL);
	mount_list_free(s);
	nlm_cb_shutdown(s);
	nfs4_server_free(s->nfs4);
	s->nfs4 = NULL;
}

/* Make the programs findable through port 111 (unless --no-portmap): if
 * a portmapper runs, return true and leave the registration to
 * portmap_register, called once nothing can fail any more (a start that
 * failed after registering would remove, at exit, the mappings of the
 * server still running); otherwise answer portmap requests ourselves on
 * ADDR:111 (before control_start, which fixes the stats table). */
static bool portmap_start(struct snfsd *s)
{
	uint16_t port = s->cfg.port;
	const char *addr = s->cfg.listen_addr;
	int rc;

	if (pmap_probe())
		return true;
	rc = rpc_service_add(s->svc, &pmap_program);
	if (rc) {
		log_warn("cannot serve portmap: %s", strerror(-rc));
		return false;
	}
	pmap_set_local(s->svc, port, port, addr);
	rc = rpc_server_listen(s->rpc, addr, PMAP_PORT, SOCK_STREAM);
	if (!rc)
		rc = rpc_server_listen(s->rpc, addr, PMAP_PORT, SOCK_DGRAM);
	if (rc)
		log_warn("no portmapper running and cannot listen on %s:%u: "
		         "%s; clients must be given port=%u,mountport=%u",
		         addr, PMAP_PORT, strerror(-rc), port, port);
	else
		log_info("no portmapper running: answering portmap on %s:%u",
		         addr, PMAP_PORT);
	return false;
}

/* Register with rpcbind. Returns true when registrations must be removed
 * at exit. */
static bool portmap_register(struct snfsd *s)
{
	uint16_t port = s->cfg.port;
	int rc = pmap_register_all(s->svc, port);

	if (rc) {
		log_warn("cannot register with rpcbind: %s; clients must be "
		         "given port=%u,mountport=%u",
		         strerror(-rc), port, port);
		return false;
	}
	log_info("registered nfs, mountd and nlockmgr with rpcbind");
	return true;
}

/* rpc.statd relays a client's restart to 127.0.0.1 whatever we said
 * (nlm_monitor), over UDP: a server listening on one other address also
 * takes UDP there. Loopback only, so no client reaches it. */
static void statd_relay_listen(struct snfsd *s)
{
	const char *addr = s->cfg.listen_addr;
	struct in6_addr a6;
	struct in_addr a4;
	int rc;

	if (inet_pton(AF_INET, addr, &a4) == 1) {
		if (a4.s_addr == htonl(INADDR_ANY) ||
		    ntohl(a4.s_addr) >> 24 == 127)
			return;
	} else if (inet_pton(AF_INET6, addr, &a6) != 1 ||
	           IN6_IS_ADDR_UNSPECIFIED(&a6) || IN6_IS_ADDR_LOOPBACK(&a6)) {
		return;
	}
	rc = rpc_server_listen(s->rpc, "127.0.0.1", s->cfg.port, SOCK_DGRAM);
	if (rc)
		log_warn("nsm: cannot listen on 127.0.0.1:%u/udp: %s; "
		         "rpc.statd cannot tell us of NFSv3 clients' restarts",
		         s->cfg.port, strerror(-rc));
}

/* --cpus: bind the process, before it starts any thread, so that every
 * thread inherits the set. Why offer it: where a server shares CPUs with
 * its clients (a client on the same host, in a VM), each call that wakes
 * the server on the CPU the client just left switches address spaces
 * there and back; measured in the emulated guest of bench/sparse_guest.sh
 * (whose CPU flushes its whole TLB at each switch), snfsd kept off the
 * reader's CPU spent 215 instead of 400 us of CPU on a 4 KiB READ_PLUS
 * (bench/results/stop34). Returns 0, or 1 after saying why not. */
static int bind_cpus(const struct snfsd_config *cfg)
{
	if (!cfg->cpus)
		return 0;
	if (sched_setaffinity(0, sizeof(cfg->cpu_set), &cfg->cpu_set) != 0) {
		fprintf(stderr, "snfsd: cannot run on CPUs %s: %s\n", cfg->cpus,
		        strerror(errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct snfsd srv = {0}; /* the one server context */
	struct snfsd *s = &srv;
	struct signal_ctx sc = {.s = s};
	struct control *ctl = NULL;
	bool use_rpcbind = false, pmap_registered = false;
	pthread_t sigt;
	int rc;

	rc = parse_args(argc, argv, &s->cfg);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (s->cfg.stats_client)
		return control_client(s->cfg.state_dir, "stats", stdout);
	if (bind_cpus(&s->cfg))
		return 1;
	log_set_level(s->cfg.verbose >= LOG_DEBUG - LOG_INFO
	                  ? LOG_DEBUG
	                  : LOG_INFO + s->cfg.verbose);

	/* Block the signals before any thread exists so every thread
	 * inherits the mask; only signal_thread takes them. */
	sigemptyset(&sc.set);
	sigaddset(&sc.set, SIGHUP);
	sigaddset(&sc.set, SIGTERM);
	sigaddset(&sc.set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sc.set, NULL);
	signal(SIGPIPE, SIG_IGN);

	pthread_mutex_init(&s->exports_lock, NULL);
	pthread_mutex_init(&s->mounts_lock, NULL);
	s->boot_time_ns = now_ns();

	rc = server_setup(s);
	if (!rc && !s->cfg.no_portmap)
		use_rpcbind = portmap_start(s);
	/* after every program is registered: the stats table is then fixed */
	if (!rc && control_start(s, &ctl))
		rc = 1;
	if (!rc && pthread_create(&sigt, NULL, signal_thread, &sc)) {
		fprintf(stderr, "snfsd: cannot start the signal thread\n");
		rc = 1;
	}
	if (!rc && use_rpcbind)
		s->nsm_via_statd = pmap_registered = portmap_register(s);
	if (s->nsm_via_statd)
		statd_relay_listen(s);
	if (!rc) {
		log_info("snfsd %s listening on %s port %u (tcp: nfs v3 and "
		         "v4.0-4.2, mount v1/v3, nlockmgr v4; udp: mount, "
		         "nlockmgr), %d threads%s%s, "
		         "state in %s",
		         SNFSD_VERSION, s->cfg.listen_addr, s->cfg.port,
		         s->cfg.threads, s->cfg.cpus ? " on CPUs " : "",
		         s->cfg.cpus ? s->cfg.cpus : "", s->cfg.state_dir);
		log_exports(s->exports);
		/* The sockets listen already: reclaims wait in the backlog. */
		nlm_restart_notify(s);
		rc = rpc_server_run(s->rpc) ? 1 : 0;
		if (rc)
			log_err("server stopped on an error");
		/* Wake the signal thread if the loop ended on its own. */
		pthread_kill(sigt, SIGTERM);
		pthread_join(sigt, NULL);
	}
	control_stop(ctl);
	if (pmap_registered && pmap_unregister_all(s->svc))
		log_warn("cannot unregister from rpcbind");
	server_teardown(s);
	pthread_mutex_destroy(&s->exports_lock);
	pthread_mutex_destroy(&s->mounts_lock);
	return rc;
}
