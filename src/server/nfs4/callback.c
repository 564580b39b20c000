/* The NFSv4.1 back channel (RFC 8881 2.10.3.1, 18.33-18.36, 20): calls
 * from snfsd to a client, over the connection the client bound to its
 * session: CB_RECALL of delegations (deleg.c), and CB_NOTIFY_LOCK
 * (RFC 8881 20.11), which tells a lock-owner that was refused a blocking LOCK
 * (READW_LT, WRITEW_LT) that bytes of that file came free. A client told by
 * OPEN that such notices come (OPEN4_RESULT_MAY_NOTIFY_LOCK) sleeps until one
 * arrives instead of polling: Linux then asks again only every 30 s, so
 * every release of a lock must notify (nfs4_cb_lock_wake is called from
 * nfs4_nlm_wake, which runs wherever locked bytes come free).
 *
 * The back channel has one slot (we never use more): one CB_COMPOUND is
 * in flight per session, the rest wait in the session's queue. Its answer
 * arrives as an RPC reply on a connection we serve (nfs4_cb_reply).
 * Everything here runs under nfs4_server.lock; sends never wait for the
 * socket (rpc_conn_send queues what it cannot send now). */
#include <stdlib.h>
#include <string.h>

#include "server/nfs4/state_int.h"
#include "server/snfsd.h"
#include "util/log.h"

enum { OP_CB_SEQUENCE = 11, OP_CB_NOTIFY_LOCK = 13 };
enum { CB_VERS = 1, CB_PROC_COMPOUND = 1 };
#define CB_QUEUE_MAX 256 /* calls waiting per session */
#define CB_REPLY_WAIT 30 /* s: an unanswered call is given up */
#define CB_WAIT_STALE 95 /* s: a refused blocking LOCK is forgotten */
#define CB_MAX_WAITS 4096

/* A call waiting for the session's slot: one operation after CB_SEQUENCE. */
struct nfs4_cb_op {
	struct nfs4_cb_op *next;
	uint32_t opnum;
	uint32_t len;
	uint8_t body[];
};

/* A lock-owner refused a blocking LOCK on a file: notified when the
 * file's locked bytes change. */
struct nfs4_cb_wait {
	struct nfs4_cb_wait *next;
	uint64_t clientid;
	time_t asked;
	uint32_t fhlen, ownerlen;
	uint8_t fh[NFS_FH_MAX];
	uint8_t owner[NFS4_OPAQUE_LIMIT];
};

static const struct nfs4_cb_io rpc_io = {
    .hold = rpc_conn_hold,
    .release = rpc_conn_release,
    .is_open = rpc_conn_is_open,
    .send = rpc_conn_send,
};
const struct nfs4_cb_io *nfs4_cb_io = &rpc_io;

/* ---- security of the calls (callback_sec_parms4) ---- */

/* Parse callback_sec_parms4<>, keeping the first flavor we can send:
 * AUTH_NONE, or AUTH_SYS with the client's own authsys_parms (sent back
 * as they came). False on bad XDR; a list without either leaves
 * b->flavor at NFS4_CB_SEC_UNUSABLE. */
bool nfs4_cb_sec_parse(struct xdr_in *x, struct nfs4_cb_sec *b)
{
	uint32_t n, flavor, v, len;
	const uint8_t *p;

	b->flavor = NFS4_CB_SEC_UNUSABLE;
	b->len = 0;
	if (!xdr_get_u32(x, &n) || n > 16)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		size_t at;

		if (!xdr_get_u32(x, &flavor))
			return false;
		at = x->pos;
		if (flavor == RPC_AUTH_SYS) {
			if (!xdr_get_u32(x, &v) ||
			    !xdr_get_opaque_ref(x, &p, &len, 255) ||
			    !xdr_get_u32(x, &v) || !xdr_get_u32(x, &v) ||
			    !xdr_get_u32(x, &len) || len > 16)
				return false;
			for (uint32_t g = 0; g < len; g++)
				if (!xdr_get_u32(x, &v))
					return false;
		} else if (flavor == RPC_RPCSEC_GSS) {
			if (!xdr_get_u32(x, &v) ||
			    !xdr_get_opaque_ref(x, &p, &len, 0xffff) ||
			    !xdr_get_opaque_ref(x, &p, &len, 0xffff))
				return false;
			continue; /* no GSS here */
		} else if (flavor != RPC_AUTH_NONE) {
			return false;
		}
		if (b->flavor != NFS4_CB_SEC_UNUSABLE ||
		    x->pos - at > sizeof(b->body))
			continue;
		b->flavor = flavor;
		b->len = (uint32_t)(x->pos - at);
		memcpy(b->body, x->buf + at, b->len);
	}
	return true;
}

/* ---- binding connections ---- */

static void drop_queue(struct nfs4_backchan *b)
{
	free(b->inflight);
	b->inflight = NULL;
	b->xid = 0;
	while (b->q) {
		struct nfs4_cb_op *op = b->q;
		b->q = op->next;
		free(op);
	}
	b->qtail = NULL;
	b->nq = 0;
}

static void pump(struct nfs4_server *st, struct nfs4_session *ses);

void nfs4_cb_bind(struct nfs4_server *st, struct nfs4_session *ses,
                  struct rpc_conn *conn)
{
	struct nfs4_backchan *b = &ses->cb;

	b->wanted = true;
	if (b->conn == conn)
		return;
	if (b->conn)
		nfs4_cb_io->release(b->conn);
	nfs4_cb_io->hold(conn);
	b->conn = conn;
	/* A call in flight on the old connection goes again on this one
	 * with the same seqid (a client that had taken it answers
	 * RETRY_UNCACHED_REP, and it goes once more with the next). */
	b->xid = 0;
	pump(st, ses);
}

void nfs4_cb_unbind(struct nfs4_session *ses)
{
	struct nfs4_backchan *b = &ses->cb;

	if (b->conn)
		nfs4_cb_io->release(b->conn);
	b->conn = NULL;
	drop_queue(b);
}

bool nfs4_cb_up(const struct nfs4_session *ses)
{
	return ses->cb.conn && ses->cb.sec.flavor != NFS4_CB_SEC_UNUSABLE &&
	       nfs4_cb_io->is_open(ses->cb.conn);
}

bool nfs4_cb_path_down(const struct nfs4_session *ses)
{
	return ses->cb.wanted && !nfs4_cb_up(ses);
}

/* ---- sending ---- */

/* The CB_COMPOUND carrying op, on slot 0 with the next seqid. */
static bool encode_call(struct xdr_out *x, const struct nfs4_session *ses,
                        uint32_t xid, const struct nfs4_cb_op *op)
{
	const struct nfs4_backchan *b = &ses->cb;

	xdr_put_u32(x, xid);
	xdr_put_u32(x, 0); /* CALL */
	xdr_put_u32(x, 2); /* RPC version */
	xdr_put_u32(x, b->prog);
	xdr_put_u32(x, CB_VERS);
	xdr_put_u32(x, CB_PROC_COMPOUND);
	xdr_put_u32(x, b->sec.flavor);
	xdr_put_opaque(x, b->sec.body, b->sec.len);
	xdr_put_u32(x, RPC_AUTH_NONE); /* verifier */
	xdr_put_u32(x, 0);
	xdr_put_u32(x, 0); /* tag: empty */
	xdr_put_u32(x, b->minor);
	xdr_put_u32(x, 0); /* callback_ident: unused in 4.1 */
	xdr_put_u32(x, 2); /* ops */
	xdr_put_u32(x, OP_CB_SEQUENCE);
	xdr_put_fixed(x, ses->id, NFS4_SESSIONID_SIZE);
	xdr_put_u32(x, b->seq + 1);
	xdr_put_u32(x, 0);      /* slot */
	xdr_put_u32(x, 0);      /* highest slot */
	xdr_put_bool(x, false); /* cachethis */
	xdr_put_u32(x, 0);      /* referring call lists */
	xdr_put_u32(x, op->opnum);
	xdr_put_fixed(x, op->body, op->len);
	return !x->err;
}

static void drop_inflight(struct nfs4_backchan *b)
{
	free(b->inflight);
	b->inflight = NULL;
	b->xid = 0;
}

/* Send the call on the session's slot: the one in flight again when its
 * connection went (xid 0), else the next waiting one. */
static void pump(struct nfs4_server *st, struct nfs4_session *ses)
{
	struct nfs4_backchan *b = &ses->cb;
	struct nfs4_cb_op *op;
	struct xdr_out x;
	uint32_t xid;

	if (b->xid && nfs4_now() - b->sent > CB_REPLY_WAIT) {
		/* never answered: its seqid is used again, and a client
		 * that did take it says RETRY_UNCACHED_REP */
		st->cb_failed++;
		drop_inflight(b);
	}
	if (b->xid)
		return;
	if (!b->inflight && b->q) {
		b->inflight = b->q;
		b->q = b->q->next;
		if (!b->q)
			b->qtail = NULL;
		b->nq--;
		b->retries = 0;
	}
	op = b->inflight;
	if (!op || !nfs4_cb_up(ses))
		return;
	if (xdr_out_init(&x, 256 + op->len, 512 + op->len) != 0)
		return;
	xid = (uint32_t)nfs4_new_id(st) | 0x80000000u;
	if (encode_call(&x, ses, xid, op) &&
	    nfs4_cb_io->send(b->conn, x.buf, x.len) == 0) {
		b->xid = xid;
		b->sent = nfs4_now();
		st->cb_sent++;
	}
	xdr_out_free(&x);
}

static void queue_op(struct nfs4_server *st, struct nfs4_session *ses,
                     uint32_t opnum, const struct xdr_out *body)
{
	struct nfs4_backchan *b = &ses->cb;
	struct nfs4_cb_op *op;

	if (b->nq >= CB_QUEUE_MAX || body->err)
		return;
	op = malloc(sizeof(*op) + body->len);
	if (!op)
		return;
	op->next = NULL;
	op->opnum = opnum;
	op->len = (uint32_t)body->len;
	memcpy(op->body, body->buf, body->len);
	if (b->qtail)
		b->qtail->next = op;
	else
		b->q = op;
	b->qtail = op;
	b->nq++;
	pump(st, ses);
}

/* ---- answers ---- */

bool nfs4_cb_decode_reply(const uint8_t *rec, size_t len,
                          struct nfs4_cb_result *r)
{
	struct xdr_in x;
	uint32_t v, n, opnum;
	const uint8_t *p;

	xdr_in_init(&x, rec, len);
	if (!xdr_get_u32(&x, &v) || !xdr_get_u32(&x, &v) || v != 1 ||
	    !xdr_get_u32(&x, &v) || v != 0 || /* MSG_ACCEPTED */
	    !xdr_get_u32(&x, &v) || !xdr_get_opaque_ref(&x, &p, &n, 400) ||
	    !xdr_get_u32(&x, &v) || v != 0) /* SUCCESS */
		return false;
	r->rpc_ok = true;
	if (!xdr_get_u32(&x, &r->compound) ||
	    !xdr_get_opaque_ref(&x, &p, &n, NFS4_OPAQUE_LIMIT) ||
	    !xdr_get_u32(&x, &n))
		return false;
	r->seq_answered = n > 0 && xdr_get_u32(&x, &opnum) &&
	                  opnum == OP_CB_SEQUENCE && xdr_get_u32(&x, &r->seq);
	return true;
}

/* What an answer means for the slot and the call in flight: true when
 * the call succeeded. The seqid moves on once the client took the call:
 * CB_SEQUENCE succeeded, or the client said it had seen that seqid
 * (RETRY_UNCACHED_REP: a call we had given up on reached it), or the
 * COMPOUND's results cannot be read (the RPC layer took the call; one it
 * refused, denied or not SUCCESS, never reached the slot). After
 * RETRY_UNCACHED_REP the call stays in flight, to go again with the
 * next seqid (twice at most); every other answer ends it. */
static bool answered(struct nfs4_backchan *b, bool ok,
                     const struct nfs4_cb_result *r)
{
	bool success = ok && r->seq_answered && r->seq == NFS4_OK &&
	               r->compound == NFS4_OK;

	if ((r->rpc_ok && !ok) ||
	    (r->seq_answered &&
	     (r->seq == NFS4_OK || r->seq == NFS4ERR_RETRY_UNCACHED_REP)))
		b->seq++;
	if (ok && r->seq_answered && r->seq == NFS4ERR_RETRY_UNCACHED_REP &&
	    b->retries < 2)
		return false;
	drop_inflight(b);
	return success;
}

static struct nfs4_session *session_by_xid(struct nfs4_server *st,
                                           struct rpc_conn *conn, uint32_t xid)
{
	for (struct nfs4_client *cl = st->clients; cl; cl = cl->next)
		for (struct nfs4_session *s = cl->sessions; s; s = s->next)
			if (s->cb.xid == xid && s->cb.conn == conn)
				return s;
	return NULL;
}

void nfs4_cb_reply(struct nfs4_server *st, struct rpc_conn *conn, uint32_t xid,
                   const uint8_t *rec, size_t len)
{
	struct nfs4_session *ses;
	struct nfs4_cb_result r = {0};
	bool ok;

	if (!xid)
		return;
	pthread_mutex_lock(&st->lock);
	ses = session_by_xid(st, conn, xid);
	if (!ses) {
		pthread_mutex_unlock(&st->lock);
		log_info("nfs4: a reply to no call of ours (xid %08x); "
		         "dropped",
		         xid);
		return;
	}
	ses->cb.xid = 0;
	ok = nfs4_cb_decode_reply(rec, len, &r);
	if (answered(&ses->cb, ok, &r)) {
		st->cb_ok++;
	} else if (ses->cb.inflight) {
		ses->cb.retries++; /* sent again: RETRY_UNCACHED_REP */
	} else {
		st->cb_failed++;
		log_warn("nfs4: client %016llx answered a call back with %s "
		         "%u",
		         (unsigned long long)(ses->cl ? ses->cl->clientid : 0),
		         ok ? "status" : "an undecodable reply",
		         ok ? (r.seq_answered && r.seq ? r.seq : r.compound)
		            : 0);
	}
	pump(st, ses);
	pthread_mutex_unlock(&st->lock);
}

void nfs4_cb_on_reply(void *ctx, struct rpc_conn *conn, uint32_t xid,
                      const uint8_t *rec, size_t len)
{
	struct snfsd *s = ctx;
	struct nfs4_server *st = __atomic_load_n(&s->nfs4, __ATOMIC_ACQUIRE);

	if (st)
		nfs4_cb_reply(st, conn, xid, rec, len);
}

/* ---- CB_NOTIFY_LOCK ---- */

void nfs4_cb_lock_wait(struct nfs4_server *st, struct nfs4_file *f,
                       uint64_t clientid, const struct nfs_fh *fh,
                       const uint8_t *owner, uint32_t ownerlen)
{
	struct nfs4_cb_wait *w;

	if (ownerlen > NFS4_OPAQUE_LIMIT || fh->len > NFS_FH_MAX)
		return;
	for (w = f->cb_waiting; w; w = w->next)
		if (w->clientid == clientid && w->ownerlen == ownerlen &&
		    !memcmp(w->owner, owner, ownerlen)) {
			w->asked = nfs4_now();
			return;
		}
	if (st->cb_waits >= CB_MAX_WAITS || !(w = malloc(sizeof(*w))))
		return;
	w->clientid = clientid;
	w->asked = nfs4_now();
	w->fhlen = fh->len;
	memcpy(w->fh, fh->data, fh->len);
	w->ownerlen = ownerlen;
	memcpy(w->owner, owner, ownerlen);
	w->next = f->cb_waiting;
	f->cb_waiting = w;
	st->cb_waits++;
}

/* A session of the waiter's client whose back channel works, else one
 * that wants one (its call waits there for the client to bind one). */
static struct nfs4_session *notify_session(struct nfs4_server *st,
                                           uint64_t clientid)
{
	struct nfs4_client *cl = nfs4_client_find(st, clientid, true);
	struct nfs4_session *want = NULL;

	for (struct nfs4_session *s = cl ? cl->sessions : NULL; s;
	     s = s->next) {
		if (s->dead)
			continue;
		if (nfs4_cb_up(s))
			return s;
		if (s->cb.wanted && !want)
			want = s;
	}
	return want;
}

bool nfs4_cb_call(struct nfs4_server *st, uint64_t clientid, uint32_t opnum,
                  const struct xdr_out *body)
{
	struct nfs4_session *ses = notify_session(st, clientid);

	if (!ses)
		return false;
	queue_op(st, ses, opnum, body);
	return true;
}

static void notify(struct nfs4_server *st, const struct nfs4_cb_wait *w)
{
	struct xdr_out body;

	if (xdr_out_init(&body, 64 + w->fhlen + w->ownerlen,
	                 64 + w->fhlen + w->ownerlen) != 0)
		return;
	xdr_put_opaque(&body, w->fh, w->fhlen);
	xdr_put_u64(&body, w->clientid);
	xdr_put_opaque(&body, w->owner, w->ownerlen);
	nfs4_cb_call(st, w->clientid, OP_CB_NOTIFY_LOCK, &body);
	xdr_out_free(&body);
}

/* Every waiter hears of it, whether or not the bytes it wants are free
 * now: a notice only makes the client ask again, and a LOCK refused again
 * puts it back here. */
static void waits_end(struct nfs4_server *st, struct nfs4_file *f, bool tell)
{
	time_t now = nfs4_now();

	while (f->cb_waiting) {
		struct nfs4_cb_wait *w = f->cb_waiting;

		f->cb_waiting = w->next;
		if (tell && now - w->asked <= CB_WAIT_STALE)
			notify(st, w);
		free(w);
		st->cb_waits--;
	}
}

void nfs4_cb_lock_wake(struct nfs4_server *st, struct nfs4_file *f)
{
	waits_end(st, f, true);
}

void nfs4_cb_waits_drop(struct nfs4_server *st, struct nfs4_file *f)
{
	waits_end(st, f, false);
}

void nfs4_cb_stats(struct nfs4_server *st, uint64_t *sent, uint64_t *ok,
                   uint64_t *failed)
{
	pthread_mutex_lock(&st->lock);
	*sent = st->cb_sent;
	*ok = st->cb_ok;
	*failed = st->cb_failed;
	pthread_mutex_unlock(&st->lock);
}
