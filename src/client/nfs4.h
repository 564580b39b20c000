/* NFSv4.1/4.2 client internals: the session (RFC 8881 section 2.10) with
 * its slot table, the open state, and the COMPOUND engine that every
 * operation in nfs4.c goes through. */
#ifndef SNFS_CLIENT_NFS4_H
#define SNFS_CLIENT_NFS4_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "client/client.h"
#include "client/nfs4_xdr.h"

#define NFS4_SLOTS 64 /* we ask for this many; the server may grant fewer */

/* OPEN4_SHARE_ACCESS_* / DENY */
enum { SHARE_READ = 1, SHARE_WRITE = 2, SHARE_BOTH = 3 };

/* One OPEN: an open-owner of its own and the stateid it got. */
struct nfs4_open {
	struct snfs_fh fh;
	struct nfs4_stateid sid;
	uint32_t access;
	uint64_t owner;
	bool lost;   /* reclaim failed: I/O uses the anonymous stateid */
	bool orphan; /* made by create, waiting for open_state to adopt */
	struct nfs4_open *prev, *next;
};

/* A lock-owner's lock stateid on a file (LOCK's answer). */
struct nfs4_lock {
	struct snfs_fh fh;
	uint64_t owner;
	uint32_t pid;
	struct nfs4_stateid sid;
	struct nfs4_lock *next;
};

struct nfs4_state {
	uint32_t minor;
	pthread_mutex_t lock; /* everything below */
	pthread_cond_t cond;  /* slots freed, session changes */
	/* the renewal thread's own: woken by every slot release, it would
	 * run once per call */
	pthread_cond_t renew_cond;

	/* client and session */
	uint8_t verifier[8];
	char owner_id[160];
	uint64_t clientid;
	uint32_t cs_seq; /* CREATE_SESSION sequence (section 18.36) */
	uint8_t sessionid[NFS4_SESSIONID_SIZE];
	uint64_t gen; /* bumped with every new session */
	bool have_session;
	uint32_t nslots;
	uint32_t slot_seq[NFS4_SLOTS];
	bool slot_busy[NFS4_SLOTS];
	uint32_t lease_s;
	struct timespec last_sent;
	uint32_t max_ops;

	/* Recovery is serialised by recover_lock. While a new session or
	 * client is being set up and the opens reclaimed, recovering is set
	 * and no other caller gets a slot, so nothing goes out with a
	 * stateid of the server's previous instance, and the recovering
	 * thread always finds the (new, empty) slot table free. */
	pthread_mutex_t recover_lock;
	bool recovering;

	/* opens, and the lock stateids of lock-owners */
	struct nfs4_open opens;
	struct nfs4_lock *locks;
	uint64_t next_owner;
	bool reclaiming;
	uint64_t open_gen; /* bumped whenever the opens were (re)claimed */

	/* what the server turned out not to do */
	bool no_read_plus, no_copy, no_verify;
	bool read_plus_ok; /* a READ_PLUS reply parsed: the server has it */
	bool rp_narrow;    /* READ_PLUS covers no more than rsize per call */

	/* lease renewal */
	pthread_t renew;
	bool renew_running, stopping;
};

static inline struct nfs4_state *nfs4_st(struct snfs_ctx *c)
{
	return c->proto;
}

/* One COMPOUND call. build encodes the operations after SEQUENCE; it runs
 * again for a retry, so it must read current state (stateids) afresh.
 * parse walks the results after SEQUENCE's; it runs only when the
 * compound was not retried, whatever its status. */
struct nfs4_call;
typedef int (*nfs4_build_fn)(struct snfs_ctx *c, struct nfs4_req *rq,
                             void *arg);
typedef int (*nfs4_parse_fn)(struct snfs_ctx *c, struct xdr_in *x, void *arg);

struct nfs4_call {
	int counter;  /* SNFS_OP_* the call counts under */
	size_t extra; /* payload bytes beyond the usual argument size */
	nfs4_build_fn build;
	nfs4_parse_fn parse;
	void *arg;
	/* in flight */
	struct rpc_req *req;
	uint32_t slot;
	uint64_t gen;
	uint64_t open_gen; /* s->open_gen when the call was built */
	bool slot_kept;    /* a retry goes out on the slot still held */
	bool deferred;     /* no slot was free at start: sent at finish */
	bool hold;         /* first start: written by rpc_flush (or finish) */
	uint8_t *rbuf;     /* the reply (parse may point into it) */
	size_t rlen;
};

/* Run a call to completion, with retries (DELAY, GRACE) and recovery
 * (session or client lost, stateids revoked). Returns parse's result. */
int nfs4_call(struct snfs_ctx *c, struct nfs4_call *call);
/* Pipelined form: start now (or defer when no slot is free), finish
 * later. finish retries like nfs4_call. Frees nothing of call. */
int nfs4_call_start(struct snfs_ctx *c, struct nfs4_call *call);
int nfs4_call_finish(struct snfs_ctx *c, struct nfs4_call *call);
/* Forget a started call (its slot is released). */
void nfs4_call_drop(struct snfs_ctx *c, struct nfs4_call *call);
/* Free the reply buffer a finished call kept. */
void nfs4_call_done(struct nfs4_call *call);

/* How often a quiet client renews its lease (ms). */
uint64_t nfs4_renew_period_ms(uint32_t lease_s);

/* Session setup and teardown (nfs4_session.c). */
int nfs4_session_init(struct snfs_ctx *c);
void nfs4_session_destroy(struct snfs_ctx *c);

/* Open state (nfs4.c), used by recovery. RECLAIM_PREVIOUS: after a
 * server restart, reclaim every open (CLAIM_PREVIOUS, section 8.4.2.1)
 * and mark the ones refused lost; REOPEN_LOST: open those again by handle
 * (CLAIM_FH; only after RECLAIM_COMPLETE, section 18.51.3); REOPEN_ALL:
 * stateids were revoked, open every file again by handle. */
enum nfs4_reclaim { RECLAIM_PREVIOUS, REOPEN_LOST, REOPEN_ALL };
int nfs4_reclaim_opens(struct snfs_ctx *c, enum nfs4_reclaim how);
/* The stateid to use for I/O on fh (anonymous when nothing is open). */
void nfs4_io_stateid(struct snfs_ctx *c, const struct snfs_fh *fh, bool write,
                     struct nfs4_stateid *out);

#endif
