/* NFSv4.1 client ID and session (RFC 8881 sections 2.4, 2.10, 18.35,
 * 18.36, 18.46), the slot table, the COMPOUND engine with its retries and
 * recovery, and lease renewal.
 *
 * Every compound but the ones that set a session up or tear it down starts
 * with SEQUENCE on a slot of the table. A slot is held from send to reply;
 * its sequence ID advances when SEQUENCE succeeded (section 2.10.6.1) or
 * when the reply never came (the server may have seen it, and a mismatch
 * costs only a new session, whereas a reused ID could be answered from the
 * replay cache with another request's reply).
 */
#include "client/nfs4.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/counters.h"

#define RETRY_MAX 200
#define DELAY_MIN_MS 20
#define DELAY_MAX_MS 1000
#define GRACE_EXTRA_MS 120000
#define HEADROOM (64u << 10)
#define CB_PROGRAM 0x40000000u
#define EXCHGID4_FLAG_USE_NON_PNFS 0x00010000u

enum action { ACT_NONE, ACT_RETRY, ACT_SESSION, ACT_CLIENT, ACT_REOPEN };

/* Calls a thread has deferred for want of a slot. While it has any, it
 * defers every further call too, so it never blocks for a slot while
 * holding one (which could deadlock threads against each other). */
static _Thread_local int deferred_calls;
/* Set in the thread that runs recovery: its calls (CREATE_SESSION aside,
 * the reclaiming OPENs and RECLAIM_COMPLETE) get slots while everyone
 * else waits for it to finish. */
static _Thread_local bool in_recovery;

static void mono_now(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC, t);
}

static int64_t ms_since(const struct timespec *t)
{
	struct timespec n;
	mono_now(&n);
	return (int64_t)(n.tv_sec - t->tv_sec) * 1000 +
	       (n.tv_nsec - t->tv_nsec) / 1000000;
}

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* ---- slots ---- */

struct slot_ref {
	uint32_t slot, seq, highest;
	uint64_t gen, open_gen;
	uint8_t sessionid[NFS4_SESSIONID_SIZE];
};

static void slot_ref_fill(struct nfs4_state *s, uint32_t i, struct slot_ref *r)
{
	r->slot = i;
	r->seq = s->slot_seq[i];
	r->highest = s->nslots - 1;
	r->gen = s->gen;
	r->open_gen = s->open_gen;
	memcpy(r->sessionid, s->sessionid, NFS4_SESSIONID_SIZE);
	mono_now(&s->last_sent);
}

static int slot_get(struct nfs4_state *s, bool block, struct slot_ref *r)
{
	pthread_mutex_lock(&s->lock);
	for (;;) {
		if (s->stopping && !s->have_session) {
			pthread_mutex_unlock(&s->lock);
			return -ENOTCONN;
		}
		/* during recovery only the recovering thread gets slots */
		bool mine = !s->recovering || in_recovery;
		for (uint32_t i = 0; mine && s->have_session && i < s->nslots;
		     i++) {
			if (s->slot_busy[i])
				continue;
			s->slot_busy[i] = true;
			slot_ref_fill(s, i, r);
			pthread_mutex_unlock(&s->lock);
			return 0;
		}
		if (!block) {
			pthread_mutex_unlock(&s->lock);
			return -EAGAIN;
		}
		pthread_cond_wait(&s->cond, &s->lock);
	}
}

/* The slot a call kept for its retry, if its session is still the
 * current one (a retry never waits for a slot: a thread holding others for
 * pipelined calls could otherwise wait on threads that wait on it). */
static int slot_reuse(struct nfs4_state *s, uint32_t slot, uint64_t gen,
                      struct slot_ref *r)
{
	int rc = -ESTALE;
	pthread_mutex_lock(&s->lock);
	if (gen == s->gen && slot < s->nslots && s->slot_busy[slot] &&
	    (!s->recovering || in_recovery)) {
		slot_ref_fill(s, slot, r);
		rc = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static void slot_put(struct nfs4_state *s, uint32_t slot, uint64_t gen,
                     bool advance)
{
	pthread_mutex_lock(&s->lock);
	if (gen == s->gen && slot < s->nslots) {
		if (advance)
			s->slot_seq[slot]++;
		s->slot_busy[slot] = false;
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
}

/* ---- sending ---- */

static int send_call(struct snfs_ctx *c, struct nfs4_call *call,
                     const struct slot_ref *r)
{
	struct nfs4_state *s = nfs4_st(c);
	struct nfs4_req rq;

	if (nfs4_req_init(&rq, s->minor, call->extra) < 0)
		return -ENOMEM;
	/* SEQUENCE4args (section 18.46) */
	nfs4_put_op(&rq, OP4_SEQUENCE);
	xdr_put_fixed(&rq.x, r->sessionid, NFS4_SESSIONID_SIZE);
	xdr_put_u32(&rq.x, r->seq);
	xdr_put_u32(&rq.x, r->slot);
	xdr_put_u32(&rq.x, r->highest);
	xdr_put_bool(&rq.x, false); /* cachethis */
	int rc = call->build(c, &rq, call->arg);
	nfs4_req_finish(&rq);
	if (rc == 0 && rq.x.err)
		rc = -EINVAL;
	if (rc < 0) {
		xdr_out_free(&rq.x);
		return rc;
	}
	call->slot = r->slot;
	call->gen = r->gen;
	call->open_gen = r->open_gen;
	bool hold = call->hold;
	call->hold = false; /* a retry goes out at once */
	return (hold ? rpc_call_hold : rpc_call_start)(
	    c->rpc, NFS4_PROG, NFS4_VERS, NFS4_COMPOUND, call->counter, &rq.x,
	    &call->req);
}

static int start_locked_slot(struct snfs_ctx *c, struct nfs4_call *call,
                             bool block)
{
	struct slot_ref r;
	int rc = -ESTALE;
	if (call->slot_kept) {
		call->slot_kept = false;
		rc = slot_reuse(nfs4_st(c), call->slot, call->gen, &r);
		if (rc < 0) /* the session changed meanwhile */
			slot_put(nfs4_st(c), call->slot, call->gen, false);
	}
	if (rc < 0)
		rc = slot_get(nfs4_st(c), block, &r);
	if (rc < 0)
		return rc;
	rc = send_call(c, call, &r);
	if (rc < 0)
		slot_put(nfs4_st(c), r.slot, r.gen, false);
	return rc;
}

int nfs4_call_start(struct snfs_ctx *c, struct nfs4_call *call)
{
	call->req = NULL;
	call->rbuf = NULL;
	call->deferred = false;
	call->slot_kept = false;
	if (deferred_calls == 0) {
		int rc = start_locked_slot(c, call, false);
		if (rc != -EAGAIN)
			return rc;
	}
	call->deferred = true;
	deferred_calls++;
	return 0;
}

static void release_kept(struct snfs_ctx *c, struct nfs4_call *call)
{
	if (call->slot_kept) {
		call->slot_kept = false;
		slot_put(nfs4_st(c), call->slot, call->gen, false);
	}
}

void nfs4_call_drop(struct snfs_ctx *c, struct nfs4_call *call)
{
	release_kept(c, call);
	if (call->deferred) {
		call->deferred = false;
		deferred_calls--;
		return;
	}
	if (call->req) {
		rpc_call_cancel(c->rpc, call->req);
		call->req = NULL;
		slot_put(nfs4_st(c), call->slot, call->gen, true);
	}
}

void nfs4_call_done(struct nfs4_call *call)
{
	rpc_buf_free(call->rbuf);
	call->rbuf = NULL;
}

/* ---- replies ---- */

static enum action classify(uint32_t st)
{
	switch (st) {
	case NFS4ERR_DELAY:
	case NFS4ERR_GRACE:
		return ACT_RETRY;
	case NFS4ERR_BADSESSION:
	case NFS4ERR_DEADSESSION:
	case NFS4ERR_BADSLOT:
	case NFS4ERR_SEQ_MISORDERED:
	case NFS4ERR_CONN_NOT_BOUND_TO_SESSION:
	case NFS4ERR_SEQ_FALSE_RETRY:
	case NFS4ERR_BAD_HIGH_SLOT:
		return ACT_SESSION;
	case NFS4ERR_STALE_CLIENTID:
	case NFS4ERR_EXPIRED:
		return ACT_CLIENT;
	case NFS4ERR_BAD_STATEID:
	case NFS4ERR_STALE_STATEID:
	case NFS4ERR_ADMIN_REVOKED:
	case NFS4ERR_DELEG_REVOKED:
		return ACT_REOPEN;
	default:
		return ACT_NONE;
	}
}

/* Wait for the reply, check SEQUENCE, release the slot, and either ask for
 * a retry (*act) or hand the rest to parse. *status: the compound's. */
static int finish_once(struct snfs_ctx *c, struct nfs4_call *call,
                       enum action *act, uint32_t *status)
{
	struct nfs4_state *s = nfs4_st(c);
	struct rpc_reply rep;
	uint32_t top, n, seqst;
	const uint8_t *tag;

	*act = ACT_NONE;
	*status = 0;
	int rc = rpc_call_wait(c->rpc, call->req, &rep);
	call->req = NULL;
	if (rc < 0) {
		slot_put(s, call->slot, call->gen, true);
		return rc;
	}
	struct xdr_in *x = &rep.res;
	if (!xdr_get_u32(x, &top) || !xdr_get_opaque_ref(x, &tag, &n, 1024) ||
	    !xdr_get_u32(x, &n)) {
		slot_put(s, call->slot, call->gen, true);
		rpc_reply_free(&rep);
		return -EPROTO;
	}
	*status = top;
	rc = n == 0 ? (top ? nfs4_errno(top) : -EPROTO)
	            : nfs4_expect(x, OP4_SEQUENCE, &seqst);
	if (n == 0 || rc < 0) {
		rpc_reply_free(&rep);
		if (n && rc == -EPROTO) {
			slot_put(s, call->slot, call->gen, false);
			return rc;
		}
		*status = n ? seqst : top;
		*act = classify(*status);
		/* SEQUENCE did not run: the retry reuses the sequence ID */
		if (*act == ACT_RETRY)
			call->slot_kept = true;
		else
			slot_put(s, call->slot, call->gen, false);
		return rc;
	}
	uint8_t sid[NFS4_SESSIONID_SIZE];
	uint32_t v;
	xdr_get_fixed(x, sid, sizeof(sid));
	for (int i = 0; i < 5; i++) /* seq, slot, highest, target, flags */
		xdr_get_u32(x, &v);
	*act = x->err ? ACT_NONE : classify(top);
	if (*act == ACT_RETRY) {
		/* keep the slot, advanced, for the retry */
		pthread_mutex_lock(&s->lock);
		if (call->gen == s->gen && call->slot < s->nslots)
			s->slot_seq[call->slot]++;
		pthread_mutex_unlock(&s->lock);
		call->slot_kept = true;
	} else {
		slot_put(s, call->slot, call->gen, true);
	}
	if (x->err) {
		rpc_reply_free(&rep);
		return -EPROTO;
	}
	if (*act != ACT_NONE) {
		rpc_reply_free(&rep);
		return nfs4_errno(top);
	}
	call->rbuf = rep.buf;
	call->rlen = rep.len;
	rc = call->parse(c, x, call->arg);
	if (rc == 0 && x->err)
		rc = -EPROTO;
	return rc;
}

/* ---- client ID and session ---- */

/* A compound outside any session (EXCHANGE_ID, CREATE_SESSION, DESTROY_*):
 * one operation, whose status is returned with x at its results. */
static int call_nosession(struct snfs_ctx *c, struct nfs4_req *rq, uint32_t op,
                          struct rpc_reply *rep, uint32_t *status)
{
	uint32_t top, n;
	const uint8_t *tag;

	nfs4_req_finish(rq);
	if (rq->x.err) {
		xdr_out_free(&rq->x);
		return -EINVAL;
	}
	int rc = rpc_call(c->rpc, NFS4_PROG, NFS4_VERS, NFS4_COMPOUND,
	                  SNFS_OP_COMPOUND, &rq->x, rep);
	if (rc < 0)
		return rc;
	struct xdr_in *x = &rep->res;
	if (!xdr_get_u32(x, &top) || !xdr_get_opaque_ref(x, &tag, &n, 1024) ||
	    !xdr_get_u32(x, &n)) {
		rpc_reply_free(rep);
		return -EPROTO;
	}
	*status = top;
	if (n == 0) {
		rpc_reply_free(rep);
		return top ? nfs4_errno(top) : -EPROTO;
	}
	rc = nfs4_expect(x, op, status);
	if (rc < 0)
		rpc_reply_free(rep);
	return rc;
}

static int exchange_id(struct snfs_ctx *c)
{
	struct nfs4_state *s = nfs4_st(c);
	struct nfs4_req rq;
	struct rpc_reply rep;
	uint32_t st, flags, how, n;
	uint64_t clientid, minor_id;
	const uint8_t *p;
	int rc;

	if (nfs4_req_init(&rq, s->minor, 0) < 0)
		return -ENOMEM;
	/* EXCHANGE_ID4args (section 18.35): client_owner4, flags,
	 * SP4_NONE, no implementation id */
	nfs4_put_op(&rq, OP4_EXCHANGE_ID);
	xdr_put_fixed(&rq.x, s->verifier, 8);
	xdr_put_opaque(&rq.x, s->owner_id, (uint32_t)strlen(s->owner_id));
	xdr_put_u32(&rq.x, EXCHGID4_FLAG_USE_NON_PNFS);
	xdr_put_u32(&rq.x, 0);
	xdr_put_u32(&rq.x, 0);
	rc = call_nosession(c, &rq, OP4_EXCHANGE_ID, &rep, &st);
	if (rc < 0) {
		if (st == NFS4ERR_MINOR_VERS_MISMATCH)
			return snfs_fail(-EPROTONOSUPPORT,
			                 "the server does not speak NFSv4.%u",
			                 s->minor);
		return rc;
	}
	struct xdr_in *x = &rep.res;
	xdr_get_u64(x, &clientid);
	xdr_get_u32(x, &n);
	xdr_get_u32(x, &flags);
	xdr_get_u32(x, &how);
	xdr_get_u64(x, &minor_id);
	xdr_get_opaque_ref(x, &p, &st, 1024); /* server_owner major id */
	xdr_get_opaque_ref(x, &p, &st, 1024); /* server scope */
	rc = x->err || how != 0 ? -EPROTO : 0;
	rpc_reply_free(&rep);
	if (rc == 0) {
		pthread_mutex_lock(&s->lock);
		s->clientid = clientid;
		s->cs_seq = n;
		pthread_mutex_unlock(&s->lock);
	}
	return rc;
}

static void put_channel(struct xdr_out *x, uint32_t req, uint32_t resp,
                        uint32_t cached, uint32_t ops, uint32_t reqs)
{
	xdr_put_u32(x, 0); /* headerpadsize */
	xdr_put_u32(x, req);
	xdr_put_u32(x, resp);
	xdr_put_u32(x, cached);
	xdr_put_u32(x, ops);
	xdr_put_u32(x, reqs);
	xdr_put_u32(x, 0); /* no RDMA */
}

struct chan {
	uint32_t pad, req, resp, cached, ops, reqs;
};

static bool get_channel(struct xdr_in *x, struct chan *ch)
{
	uint32_t n, v;
	bool ok = xdr_get_u32(x, &ch->pad) && xdr_get_u32(x, &ch->req) &&
	          xdr_get_u32(x, &ch->resp) && xdr_get_u32(x, &ch->cached) &&
	          xdr_get_u32(x, &ch->ops) && xdr_get_u32(x, &ch->reqs) &&
	          xdr_get_u32(x, &n) && n <= 1;
	if (ok && n)
		ok = xdr_get_u32(x, &v);
	return ok;
}

static uint32_t round_io(uint32_t want, uint32_t limit)
{
	if (limit <= HEADROOM / 2 + 4096)
		return want;
	uint32_t max = (limit - HEADROOM / 2) & ~4095u;
	return want > max ? max : want;
}

/* CREATE_SESSION (section 18.36) on the current client ID. */
static int create_session(struct snfs_ctx *c)
{
	struct nfs4_state *s = nfs4_st(c);
	struct nfs4_req rq;
	struct rpc_reply rep;
	uint32_t st, seq, flags;
	uint8_t sid[NFS4_SESSIONID_SIZE];
	struct chan fore, back;
	int rc;

	uint32_t big = c->rsize > c->dirbuf ? c->rsize : c->dirbuf;
	if (nfs4_req_init(&rq, s->minor, 0) < 0)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	uint64_t clientid = s->clientid;
	uint32_t cs_seq = s->cs_seq;
	pthread_mutex_unlock(&s->lock);
	nfs4_put_op(&rq, OP4_CREATE_SESSION);
	xdr_put_u64(&rq.x, clientid);
	xdr_put_u32(&rq.x, cs_seq);
	xdr_put_u32(&rq.x, 0); /* no persistence, no back channel */
	/* 34 operations: SEQUENCE, PUTFH and 32 WRITEs of a vectored
	 * write-back; the server may grant fewer */
	put_channel(&rq.x, c->wsize + HEADROOM, big + HEADROOM, 16384, 34,
	            NFS4_SLOTS);
	put_channel(&rq.x, 4096, 4096, 0, 2, 1);
	xdr_put_u32(&rq.x, CB_PROGRAM);
	xdr_put_u32(&rq.x, 1); /* one callback security: AUTH_NONE */
	xdr_put_u32(&rq.x, 0);
	rc = call_nosession(c, &rq, OP4_CREATE_SESSION, &rep, &st);
	if (rc < 0)
		return st == NFS4ERR_STALE_CLIENTID ? -ESTALE : rc;
	struct xdr_in *x = &rep.res;
	xdr_get_fixed(x, sid, sizeof(sid));
	xdr_get_u32(x, &seq);
	xdr_get_u32(x, &flags);
	bool ok = get_channel(x, &fore) && get_channel(x, &back);
	rpc_reply_free(&rep);
	if (!ok || fore.reqs == 0)
		return -EPROTO;
	pthread_mutex_lock(&s->lock);
	memcpy(s->sessionid, sid, sizeof(sid));
	s->cs_seq = cs_seq + 1;
	s->gen++;
	s->have_session = true;
	s->nslots = fore.reqs < NFS4_SLOTS ? fore.reqs : NFS4_SLOTS;
	s->max_ops = fore.ops;
	for (uint32_t i = 0; i < NFS4_SLOTS; i++) {
		s->slot_seq[i] = 1; /* the first request on a slot uses 1 */
		s->slot_busy[i] = false;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	/* The server may grant less than we asked for: keep I/O within it. */
	c->wsize = round_io(c->wsize, fore.req);
	c->rsize = round_io(c->rsize, fore.resp);
	/* SEQUENCE and PUTFH come first in a vectored WRITE's COMPOUND */
	c->max_write_ops =
	    fore.ops > 2 ? (fore.ops - 2 < 32 ? fore.ops - 2 : 32) : 0;
	c->dirbuf = round_io(c->dirbuf, fore.resp);
	return 0;
}

static void destroy_session_id(struct snfs_ctx *c, const uint8_t *sid)
{
	struct nfs4_req rq;
	struct rpc_reply rep;
	uint32_t st;
	if (nfs4_req_init(&rq, nfs4_st(c)->minor, 0) < 0)
		return;
	nfs4_put_op(&rq, OP4_DESTROY_SESSION);
	xdr_put_fixed(&rq.x, sid, NFS4_SESSIONID_SIZE);
	if (call_nosession(c, &rq, OP4_DESTROY_SESSION, &rep, &st) == 0)
		rpc_reply_free(&rep);
}

static int build_reclaim_complete(struct snfs_ctx *c, struct nfs4_req *rq,
                                  void *arg)
{
	(void)c;
	(void)arg;
	nfs4_put_op(rq, OP4_RECLAIM_COMPLETE);
	xdr_put_bool(&rq->x, false); /* rca_one_fs */
	return 0;
}

static int parse_reclaim_complete(struct snfs_ctx *c, struct xdr_in *x,
                                  void *arg)
{
	uint32_t st;
	(void)c;
	(void)arg;
	int rc = nfs4_expect(x, OP4_RECLAIM_COMPLETE, &st);
	return st == NFS4ERR_COMPLETE_ALREADY ? 0 : rc;
}

static int reclaim_complete(struct snfs_ctx *c)
{
	struct nfs4_call call = {.counter = SNFS_OP_COMPOUND,
	                         .build = build_reclaim_complete,
	                         .parse = parse_reclaim_complete};
	int rc = nfs4_call(c, &call);
	nfs4_call_done(&call);
	return rc;
}

/* A new client ID (the server restarted or our lease ran out): reclaim
 * what we had open (section 8.4.2.1), then say we are done (section
 * 18.51). What could not be reclaimed is opened again by handle later, in
 * recover(): such an OPEN waits out the grace period, and the other files
 * need not wait with it. */
static int new_client(struct snfs_ctx *c)
{
	int rc = exchange_id(c);
	if (rc == 0)
		rc = create_session(c);
	if (rc == 0) {
		nfs4_reclaim_opens(c, RECLAIM_PREVIOUS);
		rc = reclaim_complete(c);
	}
	return rc;
}

static bool any_lost(struct nfs4_state *s)
{
	bool lost = false;
	pthread_mutex_lock(&s->lock);
	for (struct nfs4_open *o = s->opens.next; o != &s->opens; o = o->next)
		lost |= o->lost;
	pthread_mutex_unlock(&s->lock);
	return lost;
}

static void set_recovering(struct nfs4_state *s, bool on)
{
	pthread_mutex_lock(&s->lock);
	s->recovering = on;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* Recover from what a call saw on session generation gen, unless another
 * thread already has. Other callers get no slot meanwhile (see
 * nfs4_state.recovering); a call of the recovery that needs recovering
 * itself comes back here in the same thread (recover_lock is
 * recursive). */
static int recover(struct snfs_ctx *c, uint64_t gen, enum action act)
{
	struct nfs4_state *s = nfs4_st(c);
	bool outer = !in_recovery;
	int rc = 0;

	pthread_mutex_lock(&s->recover_lock);
	pthread_mutex_lock(&s->lock);
	bool done = s->gen != gen;
	uint8_t old[NFS4_SESSIONID_SIZE];
	memcpy(old, s->sessionid, sizeof(old));
	pthread_mutex_unlock(&s->lock);
	if (!done) {
		if (outer)
			set_recovering(s, true);
		in_recovery = true;
		if (act == ACT_SESSION) {
			rc = create_session(c);
			if (rc == 0)
				destroy_session_id(c, old);
		}
		if (act == ACT_CLIENT || rc == -ESTALE)
			rc = new_client(c);
		in_recovery = !outer;
		if (outer)
			set_recovering(s, false);
		if (outer && rc == 0 && any_lost(s))
			nfs4_reclaim_opens(c, REOPEN_LOST);
	}
	pthread_mutex_unlock(&s->recover_lock);
	return rc;
}

/* The server refused a stateid of ours (revoked, or from before a restart
 * we have not recovered from yet): open everything again by handle, unless
 * that happened since the call was built. True if this call did it. */
static bool reopen(struct snfs_ctx *c, uint64_t open_gen)
{
	struct nfs4_state *s = nfs4_st(c);

	pthread_mutex_lock(&s->recover_lock);
	pthread_mutex_lock(&s->lock);
	bool stale = s->open_gen == open_gen;
	pthread_mutex_unlock(&s->lock);
	if (stale)
		nfs4_reclaim_opens(c, REOPEN_ALL);
	pthread_mutex_unlock(&s->recover_lock);
	return stale;
}

/* ---- the engine ---- */

int nfs4_call(struct snfs_ctx *c, struct nfs4_call *call)
{
	struct timespec t0;
	uint32_t delay = DELAY_MIN_MS;
	int reopens = 0, recoveries = 0;

	mono_now(&t0);
	call->rbuf = NULL;
	for (int attempt = 0;; attempt++) {
		enum action act;
		uint32_t status;
		int rc = 0;
		if (call->deferred) {
			call->deferred = false;
			deferred_calls--;
			call->req = NULL;
		}
		if (!call->req)
			rc = start_locked_slot(c, call, true);
		if (rc < 0)
			return rc;
		uint64_t gen = call->gen;
		rc = finish_once(c, call, &act, &status);
		if (act == ACT_NONE || attempt >= RETRY_MAX) {
			release_kept(c, call);
			return rc;
		}
		int64_t limit = c->rpc_cfg.timeout_ms;
		if (status == NFS4ERR_GRACE)
			limit += GRACE_EXTRA_MS;
		switch (act) {
		case ACT_RETRY:
			if (ms_since(&t0) > limit) {
				release_kept(c, call);
				return rc;
			}
			sleep_ms(delay);
			delay =
			    delay * 2 > DELAY_MAX_MS ? DELAY_MAX_MS : delay * 2;
			break;
		case ACT_REOPEN:
			if (reopen(c, call->open_gen) && ++reopens > 2)
				return rc;
			break;
		default:
			if (++recoveries > 4)
				return rc;
			if (recover(c, gen, act) < 0)
				sleep_ms(delay);
			break;
		}
	}
}

int nfs4_call_finish(struct snfs_ctx *c, struct nfs4_call *call)
{
	if (!call->deferred) {
		enum action act;
		uint32_t status;
		uint64_t gen = call->gen;
		int rc = finish_once(c, call, &act, &status);
		if (act == ACT_NONE)
			return rc;
		if (act == ACT_SESSION || act == ACT_CLIENT)
			recover(c, gen, act);
		else if (act == ACT_REOPEN)
			reopen(c, call->open_gen);
		else if (act == ACT_RETRY)
			sleep_ms(DELAY_MIN_MS);
		call->req = NULL;
	}
	return nfs4_call(c, call);
}

/* ---- lease renewal ---- */

static int build_nothing(struct snfs_ctx *c, struct nfs4_req *rq, void *arg)
{
	(void)c;
	(void)rq;
	(void)arg;
	return 0;
}

static int parse_nothing(struct snfs_ctx *c, struct xdr_in *x, void *arg)
{
	(void)c;
	(void)x;
	(void)arg;
	return 0;
}

/* A third of the server's lease, in 64 bits (a huge lease_time must not
 * wrap to a period of 0: SEQUENCE back to back), the lease taken as 90 s
 * when the server gave none and clamped to [3 s, 1 h]. */
uint64_t nfs4_renew_period_ms(uint32_t lease_s)
{
	uint64_t l = lease_s ? lease_s : 90;
	if (l < 3)
		l = 3;
	if (l > 3600)
		l = 3600;
	return l * 1000 / 3;
}

/* Section 8.3: any SEQUENCE renews the lease; when we have been quiet
 * for a third of it, send one on its own. */
static void *renew_main(void *arg)
{
	struct snfs_ctx *c = arg;
	struct nfs4_state *s = nfs4_st(c);

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		int64_t period = (int64_t)nfs4_renew_period_ms(s->lease_s);
		int64_t idle = ms_since(&s->last_sent);
		if (idle < period) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t wait = (uint64_t)(period - idle);
			ts.tv_sec += (time_t)(wait / 1000);
			ts.tv_nsec += (long)(wait % 1000) * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&s->renew_cond, &s->lock, &ts);
			continue;
		}
		mono_now(&s->last_sent);
		pthread_mutex_unlock(&s->lock);
		struct nfs4_call call = {.counter = SNFS_OP_COMPOUND,
		                         .build = build_nothing,
		                         .parse = parse_nothing};
		nfs4_call(c, &call);
		nfs4_call_done(&call);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* ---- setup and teardown ---- */

int nfs4_session_init(struct snfs_ctx *c)
{
	struct nfs4_state *s = calloc(1, sizeof(*s));
	char host[64] = "snfs";
	struct timespec now;
	int rc;

	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	/* recursive: recovery's own calls may need recovering */
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&s->recover_lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_cond_init(&s->renew_cond, &ca);
	pthread_condattr_destroy(&ca);
	s->opens.next = s->opens.prev = &s->opens;
	s->minor = c->version == SNFS_V41 ? 1 : 2;
	s->max_ops = 16;
	c->proto = s;

	/* A client owner unique to this context (section 2.4): host, pid,
	 * the context's address and the time; the verifier changes with
	 * every context, so the server never confuses two of ours. */
	gethostname(host, sizeof(host) - 1);
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(s->owner_id, sizeof(s->owner_id), "snfs/%s/%d/%p/%lld.%09ld",
	         host, (int)getpid(), (void *)c, (long long)now.tv_sec,
	         now.tv_nsec);
	uint64_t v = (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 30) ^
	             ((uint64_t)getpid() << 16) ^ (uint64_t)(uintptr_t)c;
	memcpy(s->verifier, &v, 8);
	mono_now(&s->last_sent);

	rc = exchange_id(c);
	if (rc == 0)
		rc = create_session(c);
	if (rc == 0)
		rc = reclaim_complete(c);
	if (rc < 0)
		return rc;
	if (pthread_create(&s->renew, NULL, renew_main, c) == 0)
		s->renew_running = true;
	return 0;
}

void nfs4_session_destroy(struct snfs_ctx *c)
{
	struct nfs4_state *s = nfs4_st(c);
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_broadcast(&s->cond);
	pthread_cond_signal(&s->renew_cond);
	pthread_mutex_unlock(&s->lock);
	if (s->renew_running)
		pthread_join(s->renew, NULL);
	if (s->have_session && c->rpc) {
		struct nfs4_req rq;
		struct rpc_reply rep;
		uint32_t st;
		destroy_session_id(c, s->sessionid);
		if (nfs4_req_init(&rq, s->minor, 0) == 0) {
			nfs4_put_op(&rq, OP4_DESTROY_CLIENTID);
			xdr_put_u64(&rq.x, s->clientid);
			if (call_nosession(c, &rq, OP4_DESTROY_CLIENTID, &rep,
			                   &st) == 0)
				rpc_reply_free(&rep);
		}
	}
	while (s->opens.next != &s->opens) {
		struct nfs4_open *o = s->opens.next;
		o->prev->next = o->next;
		o->next->prev = o->prev;
		free(o);
	}
	while (s->locks) {
		struct nfs4_lock *l = s->locks;
		s->locks = l->next;
		free(l);
	}
	pthread_cond_destroy(&s->cond);
	pthread_cond_destroy(&s->renew_cond);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->recover_lock);
	free(s);
	c->proto = NULL;
}
