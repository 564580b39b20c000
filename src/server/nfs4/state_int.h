/* NFSv4 state objects, shared by state.c (clients, sessions, leases,
 * grace) and stateid.c (opens, share reservations, byte-range locks).
 * Everything here is guarded by nfs4_server.lock. */
#ifndef SNFS_NFS4_STATE_INT_H
#define SNFS_NFS4_STATE_INT_H

#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#include "server/nfs4/nfs4.h"
#include "server/nfs4/clientrec.h"
#include "server/fh.h"

struct nfs4_client;

/* ---- the back channel (callback.c) ---- */

#define NFS4_CB_SEC_UNUSABLE 0xffffffffu
/* How calls back authenticate: the flavor and its encoded body. */
struct nfs4_cb_sec {
	uint32_t flavor; /* RPC_AUTH_NONE, RPC_AUTH_SYS, or UNUSABLE */
	uint32_t len;
	uint8_t body[400];
};

struct nfs4_cb_op;
struct nfs4_cb_wait;

/* A session's back channel: one slot, one call in flight. */
struct nfs4_backchan {
	struct rpc_conn *conn; /* held; NULL while none is bound */
	bool wanted;           /* asked for: SEQUENCE reports its loss */
	uint32_t prog;         /* cb_program */
	uint32_t minor;        /* of CREATE_SESSION's COMPOUND */
	struct nfs4_cb_sec sec;
	uint32_t seq; /* slot 0's seqid of the last call the client took */
	struct nfs4_cb_op *inflight; /* the call on the slot */
	uint32_t xid;     /* its answer awaited; 0: not sent (yet, again) */
	time_t sent;      /* ... sent then */
	uint32_t retries; /* ... sent again after RETRY_UNCACHED_REP */
	struct nfs4_cb_op *q, *qtail; /* calls waiting for the slot */
	uint32_t nq;
};

/* The connection calls the back channel makes; tests replace it. */
struct nfs4_cb_io {
	void (*hold)(struct rpc_conn *c);
	void (*release)(struct rpc_conn *c);
	bool (*is_open)(struct rpc_conn *c);
	int (*send)(struct rpc_conn *c, const uint8_t *msg, size_t len);
};
extern const struct nfs4_cb_io *nfs4_cb_io;

struct nfs4_slot {
	uint32_t seqid;
	bool busy;
	bool uncached; /* the last reply was not kept */
	uint8_t *reply;
	size_t len;
};

struct nfs4_session {
	struct nfs4_session *next;
	uint8_t id[NFS4_SESSIONID_SIZE];
	struct nfs4_client *cl; /* NULL once unlinked */
	uint32_t nslots;
	uint32_t maxreq, maxresp, maxresp_cached, maxops;
	int refs; /* COMPOUNDs running on it */
	bool dead;
	struct nfs4_backchan cb;
	struct nfs4_slot slots[NFS4_MAX_SLOTS];
};

/* An open-owner or lock-owner. */
struct nfs4_owner {
	struct nfs4_owner *next;
	struct nfs4_client *cl;
	uint64_t id;
	bool lock;
	uint8_t *data;
	uint32_t len;
	uint32_t seqid; /* 4.0: the last seqid seen */
	bool confirmed; /* 4.0 open-owner */
	uint8_t *reply; /* 4.0: the last reply, for a retransmission */
	size_t reply_len;
	/* 4.0 open-owner whose last seqid-bearing request was a CLOSE: the
	 * open it closed, kept for a retransmission of that CLOSE until the
	 * owner's next seqid goes on (stateid.c, RFC 7530 9.1.7). */
	struct nfs4_stid *closed;
};

/* A byte range [start, end] (inclusive) held by a lock stateid. */
struct nfs4_range {
	struct nfs4_range *next;
	uint64_t start, end;
	bool write;
};

struct nfs4_file;

struct nfs4_stid {
	struct nfs4_stid *next, *prev; /* all stateids */
	struct nfs4_stid *hnext;       /* in its stid_hash bucket */
	struct nfs4_stid *fnext;       /* on its file */
	uint64_t id;
	uint32_t seqid;
	bool lock;
	struct nfs4_owner *owner;
	struct nfs4_client *cl;
	struct nfs4_file *file;
	uint32_t access, deny;     /* open */
	struct nfs4_stid *open;    /* lock: the open it came from */
	struct nfs4_range *ranges; /* lock */
	/* A 4.0 open closed, its owner's ->closed: only in stid_hash, on
	 * neither list, good for nothing but a replay of its CLOSE. */
	bool closed;
	/* A read delegation (deleg.c): no owner, access SHARE_READ. */
	bool deleg;
	bool revoked;      /* not returned in time: kept for FREE_STATEID */
	time_t recalled;   /* CB_RECALL queued then; 0: not recalled */
	struct nfs_fh *fh; /* its wire handle, for CB_RECALL */
	/* the backend's watch for changes beside us (NULL: none, or let
	 * go before the holder's own change) */
	struct bk_lease *lease;
	const struct bk_ops *lops;
};

/* An NFSv3 client's lock-owner on one file (NLM: caller_name, svid,
 * oh) and the bytes it holds; nlmlock.c. */
struct nfs4_nlm_owner {
	struct nfs4_nlm_owner *next;
	struct sockaddr_storage peer; /* the client's address */
	char *host;
	int32_t svid;
	uint32_t ohlen;
	uint8_t *oh;
	struct nfs4_range *ranges;
};

struct nfs4_nlm_wait;

struct nfs4_file {
	struct nfs4_file *next, *prev; /* all files with state */
	struct nfs4_file *hnext;       /* in its file_hash bucket */
	uint32_t fsid;
	struct bk_handle bh;
	struct nfs4_stid *stids;
	uint32_t nclosed; /* closed stateids kept on it (not in stids) */
	/* NFSv3 (NLM) locks, and the blocked requests, oldest first */
	struct nfs4_nlm_owner *nlm;
	struct nfs4_nlm_wait *waiting;
	/* NFSv4.1 lock-owners refused a blocking LOCK (callback.c) */
	struct nfs4_cb_wait *cb_waiting;
};

struct nfs4_client {
	struct nfs4_client *next;
	uint64_t clientid;
	uint8_t verifier[NFS4_VERIFIER_SIZE];
	uint8_t *owner;
	uint32_t ownerlen;
	uint32_t minor;
	bool confirmed;
	uint8_t confirm[NFS4_VERIFIER_SIZE]; /* 4.0 SETCLIENTID_CONFIRM */
	uint32_t cs_seq;                     /* 4.1: next CREATE_SESSION */
	uint8_t *cs_reply;                   /* the last CREATE_SESSION reply */
	size_t cs_len;
	time_t renewed; /* monotonic seconds */
	bool reclaim_complete;
	bool may_reclaim; /* named in the previous instance's record */
	bool recorded;    /* in the record now (nfs4_client_record) */
	bool linux_impl;  /* EXCHANGE_ID named the Linux kernel client */
	struct nfs4_session *sessions;
	struct nfs4_owner *owners;
	uint32_t nrevoked; /* its delegations revoked, not yet freed */
};

#define NFS4_HASH 4096       /* buckets of the stateid and file tables */
#define NFS4_COOL_SLOTS 1024 /* deleg.c's files recalled lately */

struct nfs4_server {
	pthread_mutex_t lock;
	struct snfsd *srv;
	uint32_t epoch; /* boot time: in clientids and stateids */
	uint64_t next_id;
	uint32_t lease;
	struct nfs4_client *clients;
	struct nfs4_file *files;
	struct nfs4_stid *stids;
	/* Every READ, WRITE and NFSv3 access looks a stateid or a file up:
	 * hashed, not a walk of every open file of every client. */
	struct nfs4_stid *stid_hash[NFS4_HASH];
	struct nfs4_file *file_hash[NFS4_HASH];
	time_t last_sweep;
	/* Grace (RFC 8881 8.4.2): owners of the clients confirmed by the
	 * previous instance; they may reclaim until grace_end. */
	time_t grace_end;
	char **reclaim;
	size_t nreclaim;
	struct nfs4_record record;      /* the owners a restart lets reclaim */
	uint32_t nlm_owners, nlm_waits; /* nlmlock.c, for its bounds */
	/* NFSv3 client hosts that hold locks (nlmlock.c), and those of the
	 * previous instance still to be told of the restart. */
	struct nfs4_record nlm_hosts;
	char **nlm_notify;
	size_t nnlm_notify;
	bool nlm_grace; /* grace holds its full length for NLM reclaims */
	/* callback.c: remembered refused LOCKs; calls back and answers */
	uint32_t cb_waits;
	uint64_t cb_sent, cb_ok, cb_failed;
	/* deleg.c: delegations in force (read without the lock for the
	 * fast path of every write), recalled and not yet back, and the
	 * threads waiting for one to come back */
	uint32_t ndelegs, nrecalling, deleg_waiters;
	pthread_cond_t deleg_cv; /* a delegation went */
	struct nfs4_deleg_stats dstats;
	struct {
		uint64_t key; /* a file's hash */
		time_t until;
	} cool[NFS4_COOL_SLOTS]; /* files recalled lately */
};

time_t nfs4_now(void);
/* Before cl is granted state (an OPEN or LOCK, reclaims too): its owner
 * in the record on stable storage, so a restarted server lets it reclaim
 * (RFC 8881 8.4.3). A client that never holds state has nothing to
 * reclaim and is not recorded: it costs no sync, and a restart with only
 * such clients mounted has no grace period to wait out. Under the
 * state lock. */
void nfs4_client_record(struct nfs4_server *st, struct nfs4_client *cl);
struct nfs4_client *nfs4_client_find(struct nfs4_server *st, uint64_t id,
                                     bool confirmed_only);
/* The client of this COMPOUND: the session's (4.1) or clientid's (4.0).
 * Renews its lease. */
uint32_t nfs4_client_of(struct nfs4_compound *c, uint64_t clientid,
                        struct nfs4_client **out);
uint64_t nfs4_new_id(struct nfs4_server *st);
bool nfs4_grace_locked(struct nfs4_server *st);
/* stateid.c: drop every open and lock of a client, and the closed
 * opens its owners keep for replay. */
void nfs4_client_drop_state(struct nfs4_server *st, struct nfs4_client *cl);
/* Whether a client holds any open or lock. */
bool nfs4_client_has_state(const struct nfs4_server *st,
                           const struct nfs4_client *cl);
void nfs4_owner_free(struct nfs4_owner *o);
/* The file with state for (fsid, bh), made when create; nfs4_file_put
 * frees it once nothing refers to it any more. */
struct nfs4_file *nfs4_file_lookup(struct nfs4_server *st, uint32_t fsid,
                                   const struct bk_handle *bh, bool create);
void nfs4_file_put(struct nfs4_server *st, struct nfs4_file *f);
/* Set [start, end] of a lock-owner's list to write or read, or clear it
 * (unlock), cutting the ranges it overlaps. 0 or -ENOMEM. */
int nfs4_range_set(struct nfs4_range **head, uint64_t start, uint64_t end,
                   bool unlock, bool write);
void nfs4_ranges_free(struct nfs4_range *r);
/* nlmlock.c: the first NLM range of f, of an owner other than self,
 * that conflicts with [start, end]; its owner in *owner. */
const struct nfs4_range *nfs4_nlm_conflict(const struct nfs4_file *f,
                                           const struct nfs4_nlm_owner *self,
                                           uint64_t start, uint64_t end,
                                           bool write,
                                           const struct nfs4_nlm_owner **owner);
/* Bytes of f came free: grant the NFSv3 requests waiting for them. */
void nfs4_nlm_wake(struct nfs4_server *st, struct nfs4_file *f);
/* Drop every NLM owner and waiting request (at shutdown). */
void nfs4_nlm_free_all(struct nfs4_server *st);

/* stateid.c, for deleg.c */
struct nfs4_stid *nfs4_stid_new(struct nfs4_server *st, struct nfs4_client *cl,
                                struct nfs4_owner *o, struct nfs4_file *f,
                                bool lock);
void nfs4_stid_free(struct nfs4_server *st, struct nfs4_stid *s);
/* The stateid of that id, in force or not; NULL when there is none. */
struct nfs4_stid *nfs4_stid_by_id(struct nfs4_server *st, uint64_t id);
void nfs4_stid_to_wire(const struct nfs4_server *st, const struct nfs4_stid *s,
                       struct nfs4_stateid *out);
/* A stateid in force and of the COMPOUND's client, its seqid checked. */
uint32_t nfs4_stid_lookup(struct nfs4_compound *c,
                          const struct nfs4_stateid *sid,
                          struct nfs4_stid **out);
bool nfs4_stid_on_cfh(const struct nfs4_compound *c, const struct nfs4_stid *s);

/* deleg.c. OPEN by cl of f for reading only: a read delegation, when
 * one may go (false otherwise). Under the lock. */
bool nfs4_deleg_grant(struct nfs4_compound *c, struct nfs4_file *f,
                      struct nfs4_client *cl, struct nfs4_stateid *sid);
/* Delegations of f held by other clients than clientid (0: none is
 * ours): recalled once, revoked once a lease went by since. True while
 * one still stands in the way. Under the lock. */
bool nfs4_deleg_recall_locked(struct nfs4_server *st, struct nfs4_file *f,
                              uint64_t clientid);
/* s, a delegation, goes (stateid.c's free). */
void nfs4_deleg_forget(struct nfs4_server *st, struct nfs4_stid *s);
/* Revoke the delegations recalled a lease ago (the sweep). */
void nfs4_deleg_sweep(struct nfs4_server *st);

/* callback.c: queue a CB_COMPOUND of one op (after CB_SEQUENCE) to a
 * session of the client; false when it has none that takes calls. */
bool nfs4_cb_call(struct nfs4_server *st, uint64_t clientid, uint32_t opnum,
                  const struct xdr_out *body);

/* callback.c. Parse callback_sec_parms4<> (false on bad XDR). */
bool nfs4_cb_sec_parse(struct xdr_in *x, struct nfs4_cb_sec *sec);
/* Make conn the session's back channel (it wants one from now on). */
void nfs4_cb_bind(struct nfs4_server *st, struct nfs4_session *ses,
                  struct rpc_conn *conn);
/* Let go of the connection and the waiting calls (session freed). */
void nfs4_cb_unbind(struct nfs4_session *ses);
bool nfs4_cb_up(const struct nfs4_session *ses);
/* The session wants a back channel and has none that works: SEQUENCE's
 * SEQ4_STATUS_CB_PATH_DOWN_SESSION, and the client binds a connection. */
bool nfs4_cb_path_down(const struct nfs4_session *ses);
/* A blocking LOCK by (clientid, owner) on f (handle fh) was refused. */
void nfs4_cb_lock_wait(struct nfs4_server *st, struct nfs4_file *f,
                       uint64_t clientid, const struct nfs_fh *fh,
                       const uint8_t *owner, uint32_t ownerlen);
/* Locked bytes of f came free: CB_NOTIFY_LOCK to its waiters. */
void nfs4_cb_lock_wake(struct nfs4_server *st, struct nfs4_file *f);
/* A client's answer to a CB_COMPOUND (an accepted RPC reply): false when
 * it is anything else or cut short. */
struct nfs4_cb_result {
	bool rpc_ok;       /* an accepted reply, SUCCESS: the call ran */
	uint32_t compound; /* the CB_COMPOUND's status */
	uint32_t seq;      /* CB_SEQUENCE's, when it was answered */
	bool seq_answered;
};
bool nfs4_cb_decode_reply(const uint8_t *rec, size_t len,
                          struct nfs4_cb_result *r);
/* f goes: forget its waiters. */
void nfs4_cb_waits_drop(struct nfs4_server *st, struct nfs4_file *f);

#endif
