/* The one server context: configuration, exports, keys and verifiers.
 * No other mutable global state exists in snfsd. */
#ifndef SNFS_SNFSD_H
#define SNFS_SNFSD_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "rpc/rpc.h"
#include "server/idmap.h"

struct export_table;
struct nfs4_server;
struct nlm_cb;
struct rpc_stats_optab;

#define SNFSD_MAX_CLI_EXPORTS 64

struct snfsd_config {
	const char *cli_exports[SNFSD_MAX_CLI_EXPORTS]; /* -e DIR[:OPTIONS] */
	int ncli_exports;
	const char *exports_file; /* -f */
	const char *listen_addr;  /* -l, default 127.0.0.1 */
	uint16_t port;            /* -p, default 2049 */
	int threads;              /* -t, default 8 */
	int verbose;              /* -v count */
	const char *state_dir;    /* -s, keys and client records */
	bool no_portmap;          /* do not answer or register on port 111 */
	uint16_t metrics_port;    /* --metrics-port; 0: no HTTP endpoint */
	bool stats_client;        /* --stats: print a running server's stats */
	const char *cpus;         /* --cpus LIST as given (NULL: all CPUs) */
	cpu_set_t cpu_set;        /* ... and as parsed */
	/* Never call other hosts (NLM_GRANTED, SM_NOTIFY, SM_MON): set by
	 * the fuzz harness, whose made-up locks must not reach whatever
	 * lock manager this machine's portmapper names. */
	bool no_callouts;
};

struct mount_entry {
	struct mount_entry *next;
	char host[64];
	char path[1024];
};

struct snfsd {
	struct snfsd_config cfg;

	pthread_mutex_t exports_lock; /* guards the exports pointer only */
	struct export_table *exports; /* swapped whole on SIGHUP */

	uint8_t fh_key[16];    /* signs file handles; kept in state_dir */
	uint8_t write_verf[8]; /* new at every start (WRITE/COMMIT) */
	uint64_t boot_time_ns;
	/* NFSv4 owner domain (idmap.h): read once at start, for exports
	 * with idmap=names and for "name@domain" owners clients send. */
	char idmap_domain[IDMAP_DOMAIN_MAX];

	pthread_mutex_t mounts_lock; /* MOUNT DUMP list */
	struct mount_entry *mounts;

	struct rpc_service *svc;
	struct rpc_server *rpc;

	/* NFSv4 state (clients, sessions, opens, locks): made on the first
	 * COMPOUND by nfs4_server_get(), freed by nfs4_server_free(). */
	struct nfs4_server *nfs4;
	/* NLM call backs (src/server/nlm/nlm_cb.c), started at the first. */
	struct nlm_cb *nlm_cb;
	/* Registered with the host's rpcbind: clients' restarts reach us
	 * through its rpc.statd (nlm_monitor). Set before requests run. */
	bool nsm_via_statd;
};

/* Per-version tables of the protocols snfsd serves. The NFS program
 * (100003) is assembled from nfs3_version (and later nfs4_version). */
extern const struct rpc_version nfs3_version;
extern const struct rpc_version nfs4_version; /* src/server/nfs4 */
/* Its COMPOUND's operations, counted each apart (rpc/stats.h). */
extern const struct rpc_stats_optab nfs4_op_stats;
extern const struct rpc_version mount3_version;
extern const struct rpc_program pmap_program; /* PMAP v2, RPCBIND v3/v4 */

#define NFS_PROGRAM 100003
#define MOUNT_PROGRAM 100005
#define PMAP_PROGRAM 100000

#endif
