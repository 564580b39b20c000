/* NLM v4, the lock protocol of NFSv3 clients.
 *
 * nlm4.c decodes the calls and answers them; the locks themselves live in
 * the NFSv4 state (src/server/nfs4/nlmlock.c), under its one mutex, so an
 * NFSv3 client's lock and an NFSv4 client's lock on the same bytes
 * conflict as they would between two local processes. A blocked lock is
 * granted when the bytes come free, and the client told by an
 * NLM_GRANTED call back to its lock manager (nlm_cb.c); a client that
 * cannot be reached that way finds the lock granted at its next retry of
 * the LOCK (Linux retries every 30 s). */
#ifndef SNFS_NLM_H
#define SNFS_NLM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "backend/backend.h"
#include "proto/nlm4_const.h"
#include "rpc/rpc.h"

struct nfs4_server;
struct snfsd;

/* The program's only version, for programs.c; and NSM's (nsm.c). */
extern const struct rpc_version nlm4_version;
extern const struct rpc_version nsm1_version;

/* A lock owner is (caller_name, svid, oh); the range is inclusive. peer
 * is where the request came from (kept with the owner: a status
 * notification must come from there to drop its locks). */
struct nlm_req {
	const struct sockaddr_storage *peer;
	const struct sockaddr_storage
	    *local; /* our address it called (or NULL) */
	const char *host;
	int32_t svid;
	const uint8_t *oh;
	uint32_t ohlen;
	uint64_t start, end;
	bool write;
};

/* The last byte of l_offset/l_len: l_len 0 is "to the end of the file
 * and beyond", and so is a range running past the end of the offset
 * space (as Linux's lockd clamps it). */
static inline uint64_t nlm_range_end(uint64_t off, uint64_t len)
{
	return len == 0 || len - 1 > UINT64_MAX - off ? UINT64_MAX
	                                              : off + len - 1;
}

/* Who holds a conflicting lock, for TEST's DENIED reply. */
struct nlm_holder {
	bool write;
	int32_t svid;
	uint32_t ohlen;
	uint8_t oh[NLM_MAXNETOBJ];
	uint64_t start, end;
};

/* What an NLM_GRANTED call back needs: where the client called from and
 * the lock as it asked for it (echoed, cookie and handle included). */
struct nlm_grant {
	struct nlm_grant *next;
	/* Not always a grant: NLM_JOB_NOTIFY is an SM_NOTIFY telling peer
	 * that we restarted, host holding the name it knows us by (nsm.c);
	 * NLM_JOB_MONITOR an SM_MON asking this host's rpc.statd to watch
	 * peer (nlm_monitor). */
	enum nlm_job {
		NLM_JOB_GRANT,
		NLM_JOB_NOTIFY,
		NLM_JOB_MONITOR,
		NLM_JOB_RES, /* proc (an X_RES) with body to peer */
	} kind;
	uint32_t proc;
	uint8_t *body; /* malloc'ed; freed with the job */
	size_t bodylen;
	int32_t state;
	struct sockaddr_storage local;
	uint64_t id;   /* the waiting entry, for nfs4_nlm_granted */
	uint32_t fsid; /* the file */
	struct bk_handle bh;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	uint32_t cookielen, fhlen, ohlen;
	uint8_t cookie[NLM_MAXNETOBJ];
	uint8_t fh[NLM_MAXNETOBJ];
	uint8_t oh[NLM_MAXNETOBJ];
	char host[NLM_MAXSTRLEN + 1];
	int32_t svid;
	uint64_t off, len; /* as on the wire */
	bool write;
};

/* ---- the lock table (nfs4/nlmlock.c), each under the state mutex ----
 * All return an nlm4_stats value. */

/* NLM4_GRANTED when req could be had, else NLM4_DENIED and the holder. */
uint32_t nfs4_nlm_test(struct nfs4_server *st, uint32_t fsid,
                       const struct bk_handle *bh, const struct nlm_req *req,
                       struct nlm_holder *holder);
/* Take req. On a conflict: NLM4_BLOCKED with wait (the call back to make
 * once granted, copied) queued behind it, or NLM4_DENIED without. */
uint32_t nfs4_nlm_lock(struct nfs4_server *st, uint32_t fsid,
                       const struct bk_handle *bh, const struct nlm_req *req,
                       const struct nlm_grant *wait);
uint32_t nfs4_nlm_unlock(struct nfs4_server *st, uint32_t fsid,
                         const struct bk_handle *bh, const struct nlm_req *req);
/* Withdraw a blocked request; one granted but not yet told to the client
 * is released. */
uint32_t nfs4_nlm_cancel(struct nfs4_server *st, uint32_t fsid,
                         const struct bk_handle *bh, const struct nlm_req *req);
/* The call back g (a copy of what the wait queued) reached the client. */
void nfs4_nlm_granted(struct nfs4_server *st, const struct nlm_grant *g);
/* FREE_ALL, SM_NOTIFY: every lock and waiting request of caller_name
 * host (any case; any name when NULL) taken from peer's address. The
 * number of owners dropped. */
unsigned nfs4_nlm_free_host(struct nfs4_server *st, const char *host,
                            const struct sockaddr_storage *peer);

/* ---- restarts (nsm.c, nlmlock.c) ----
 * Every NFSv3 client host granted a lock is recorded in the state
 * directory ("PEER LOCAL", hex); a restarted snfsd holds a
 * grace period for them and tells each by SM_NOTIFY, naming itself by the
 * address the client called, so that its lock manager reclaims. */

/* The record line for a client host (its address and ours as it called
 * us; what a notification needs): false if it does not fit in n. */
bool nlm_host_key(const struct sockaddr_storage *peer,
                  const struct sockaddr_storage *local, char *hex, size_t n);
/* Load the record (at the first use of the NFSv4 state): grace when it
 * names hosts. Under no lock: called while the state is made. */
void nfs4_nlm_record_load(struct nfs4_server *st, const char *state_dir);
/* The hosts of the last instance, handed over once (*n 0 after that).
 * They stay on record, to be told again at the next restart (one may
 * not have reclaimed yet), until telling one fails: a host that cannot
 * be reached has restarted itself or is gone, and holds no locks. */
void nfs4_nlm_take_notify(struct nfs4_server *st, char ***names, size_t *n);
void nfs4_nlm_forget_host(struct nfs4_server *st, const char *key);
/* At start: send SM_NOTIFY to the hosts of the last instance. */
void nlm_restart_notify(struct snfsd *s);

/* ---- restarts of clients where rpcbind runs (nlm_cb.c, nsm.c) ----
 * There a client's statd tells the host's rpc.statd of its restart, not
 * us. So each client host that takes a lock is put under rpc.statd's
 * watch (SM_MON, naming the host by its address), and rpc.statd relays
 * the news to NLM procedure 16 (nsm_relayed_notify), as it does for
 * Linux's lockd; the host's locks are then dropped. */

/* Have peer watched, once per address (retried a minute after a
 * failure); a no-op unless s->nsm_via_statd. Never blocks. */
void nlm_monitor(struct snfsd *s, const struct sockaddr_storage *peer);
/* NLMPROC4_NSM_NOTIFY (status: mon_name, state, priv), from rpc.statd
 * only: a loopback address and a reserved port. */
int nsm_relayed_notify(struct rpc_call *call, struct xdr_out *res);

/* ---- call backs (nlm_cb.c) ---- */

/* Hand g (malloc'ed; taken over) to the call-back thread. Never blocks:
 * called under the state mutex. */
void nlm_cb_queue(struct snfsd *s, struct nlm_grant *g);
/* Send results (the encoded nlm4_res or nlm4_testres of an X_MSG call)
 * as a call of proc (its X_RES) to the lock manager on peer's host. */
void nlm_cb_result(struct snfsd *s, const struct sockaddr_storage *peer,
                   socklen_t peer_len, uint32_t proc, const uint8_t *body,
                   size_t len);
/* Stop the thread and drop what is still queued. */
void nlm_cb_shutdown(struct snfsd *s);

#endif
