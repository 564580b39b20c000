/* Test helper: NFSv4 state driven through compound_testlib.h: 4.0
 * clients (SETCLIENTID, OPEN, READ/WRITE, LOCK, LOCKU, CLOSE) and 4.1
 * sessions (EXCHANGE_ID, CREATE_SESSION, SEQUENCE), all on files of the
 * rw export rwdir (the suite fills it in before the first COMPOUND),
 * and a look into the server's stateid table. Include after
 * compound_testlib.h. */
#ifndef SNFS_TEST_STATE_TESTLIB_H
#define SNFS_TEST_STATE_TESTLIB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "compound_testlib.h"
#include "server/nfs4/state_int.h"

static char rwdir[96];

enum { T_UNCHECKED4 = 0, T_GUARDED4 = 1, T_EXCLUSIVE4_1 = 3 };
enum { T_NOCREATE = -1 };

/* OPEN4args of a CLAIM_NULL open of name. */
struct open_spec {
	uint32_t seqid, access, deny;
	uint64_t clientid;
	const char *owner;
	int how;          /* T_NOCREATE, or the createmode4 */
	const char *verf; /* EXCLUSIVE4_1: 8 bytes */
	uint32_t mode;    /* non-zero: a mode in the create attributes */
	bool mtime;       /* a time_modify_set (server time) in them too */
	const char *name;
};

/* fattr4 of the create attributes: mode (33), time_modify_set (54). */
static inline void put_create_attrs(struct xdr_out *x,
                                    const struct open_spec *o)
{
	uint32_t w1 =
	    (o->mode ? 1u << (33 - 32) : 0) | (o->mtime ? 1u << (54 - 32) : 0);

	if (!w1) {
		xdr_put_u32(x, 0);
		xdr_put_u32(x, 0);
		return;
	}
	xdr_put_u32(x, 2);
	xdr_put_u32(x, 0);
	xdr_put_u32(x, w1);
	xdr_put_u32(x, (o->mode ? 4 : 0) + (o->mtime ? 4 : 0));
	if (o->mode)
		xdr_put_u32(x, o->mode);
	if (o->mtime)
		xdr_put_u32(x, 0); /* SET_TO_SERVER_TIME4 */
}

static inline void op_open(struct cbuf *b, const struct open_spec *o)
{
	op(b, OP4_OPEN);
	xdr_put_u32(&b->x, o->seqid);
	xdr_put_u32(&b->x, o->access);
	xdr_put_u32(&b->x, o->deny);
	xdr_put_u64(&b->x, o->clientid);
	xdr_put_string(&b->x, o->owner);
	if (o->how == T_NOCREATE) {
		xdr_put_u32(&b->x, 0);
	} else {
		xdr_put_u32(&b->x, 1); /* OPEN4_CREATE */
		xdr_put_u32(&b->x, (uint32_t)o->how);
		if (o->how == T_EXCLUSIVE4_1)
			xdr_put_fixed(&b->x, o->verf, 8);
		put_create_attrs(&b->x, o);
	}
	xdr_put_u32(&b->x, 0); /* CLAIM_NULL */
	xdr_put_string(&b->x, o->name);
}

/* OPEN4resok: the stateid, result flags, attrset and the delegation
 * (its type, and for OPEN_DELEGATE_NONE_EXT the reason). */
struct open_res {
	struct nfs4_stateid sid;
	uint32_t rflags;
	uint32_t attrset[3];
	uint32_t deleg, why;
	struct nfs4_stateid dsid; /* OPEN_DELEGATE_READ's */
	uint32_t ace_type;
};

static inline bool get_open_res(struct xdr_in *x, struct open_res *r)
{
	bool b;

	memset(r, 0, sizeof(*r));
	r->why = UINT32_MAX;
	if (!nfs4_get_stateid(x, &r->sid) || !xdr_skip(x, 20) ||
	    !xdr_get_u32(x, &r->rflags) || !nfs4_get_bitmap(x, r->attrset) ||
	    !xdr_get_u32(x, &r->deleg))
		return false;
	if (r->deleg == 1) { /* OPEN_DELEGATE_READ: stateid, recall, ace */
		uint32_t v;
		const uint8_t *who;
		return nfs4_get_stateid(x, &r->dsid) && xdr_get_bool(x, &b) &&
		       !b && xdr_get_u32(x, &r->ace_type) &&
		       xdr_get_u32(x, &v) && xdr_get_u32(x, &v) &&
		       xdr_get_opaque_ref(x, &who, &v, 1024);
	}
	if (r->deleg != 3) /* no write delegation is ever granted */
		return r->deleg == 0;
	if (!xdr_get_u32(x, &r->why))
		return false;
	/* WND4_CONTENTION, WND4_RESOURCE carry a bool */
	return (r->why != 1 && r->why != 2) || xdr_get_bool(x, &b);
}

/* Skip n results of fixed shape (a status word; SEQUENCE's body when
 * sequence is set and it comes first), leaving res at the next. */
static inline void skip_n(struct reply *rep, uint32_t n, bool sequence)
{
	uint32_t o, v;

	for (uint32_t i = 0; i < n; i++) {
		xdr_get_u32(&rep->res, &o);
		xdr_get_u32(&rep->res, &v);
		if (i == 0 && sequence)
			xdr_skip(&rep->res, 16 + 5 * 4);
	}
}

/* Skip the results of the ops before the last one (SEQUENCE, PUTROOTFH,
 * LOOKUPs: fixed shapes the walk makes), leaving res at the last. */
static inline void skip_to_last(struct reply *rep, bool sequence)
{
	if (rep->nres > 0)
		skip_n(rep, rep->nres - 1, sequence);
}

/* LOCK by a new lock-owner (open_to_lock_owner4) and by a known one
 * (exist_lock_owner4), LOCKU: the ops' arguments. */
static inline void op_lock_new(struct cbuf *b, bool write, uint64_t off,
                               uint64_t len, uint32_t open_seqid,
                               const struct nfs4_stateid *open_sid,
                               uint64_t clientid, const char *lock_owner)
{
	op(b, OP4_LOCK);
	xdr_put_u32(&b->x, write ? 2 : 1);
	xdr_put_bool(&b->x, false);
	xdr_put_u64(&b->x, off);
	xdr_put_u64(&b->x, len);
	xdr_put_bool(&b->x, true); /* new lock owner */
	xdr_put_u32(&b->x, open_seqid);
	nfs4_put_stateid(&b->x, open_sid);
	xdr_put_u32(&b->x, 1); /* the lock-owner's first seqid */
	xdr_put_u64(&b->x, clientid);
	xdr_put_string(&b->x, lock_owner);
}

static inline void op_lock_old(struct cbuf *b, bool write, uint64_t off,
                               uint64_t len, const struct nfs4_stateid *sid,
                               uint32_t lock_seqid)
{
	op(b, OP4_LOCK);
	xdr_put_u32(&b->x, write ? 2 : 1);
	xdr_put_bool(&b->x, false);
	xdr_put_u64(&b->x, off);
	xdr_put_u64(&b->x, len);
	xdr_put_bool(&b->x, false);
	nfs4_put_stateid(&b->x, sid);
	xdr_put_u32(&b->x, lock_seqid);
}

static inline void op_locku(struct cbuf *b, uint32_t seqid,
                            const struct nfs4_stateid *sid, uint64_t off,
                            uint64_t len)
{
	op(b, OP4_LOCKU);
	xdr_put_u32(&b->x, 2);
	xdr_put_u32(&b->x, seqid);
	nfs4_put_stateid(&b->x, sid);
	xdr_put_u64(&b->x, off);
	xdr_put_u64(&b->x, len);
}

/* ---- 4.0 ---- */

struct client40 {
	uint64_t clientid;
	const char *owner;
	uint32_t seqid; /* open-owner seqid */
};

/* SETCLIENTID and SETCLIENTID_CONFIRM of id with the client verifier
 * boot (8 bytes): a new one is a client that rebooted, whose confirmed
 * record and state the confirm replaces. */
static inline uint32_t setclientid_boot(struct client40 *cl, const char *id,
                                        const char *boot)
{
	struct reply rep = {0};
	struct cbuf b;
	uint8_t verf[8];
	uint32_t st;

	c_begin(&b, 0);
	op(&b, OP4_SETCLIENTID);
	xdr_put_fixed(&b.x, boot, 8);
	xdr_put_string(&b.x, id);
	xdr_put_u32(&b.x, 0x40000000);
	xdr_put_string(&b.x, "tcp");
	xdr_put_string(&b.x, "127.0.0.1.3.4");
	xdr_put_u32(&b.x, 1);
	st = c_send(&b, &rep);
	if (st == NFS4_OK) {
		res_next(&rep, OP4_SETCLIENTID);
		xdr_get_u64(&rep.res, &cl->clientid);
		xdr_get_fixed(&rep.res, verf, 8);
		c_begin(&b, 0);
		op(&b, OP4_SETCLIENTID_CONFIRM);
		xdr_put_u64(&b.x, cl->clientid);
		xdr_put_fixed(&b.x, verf, 8);
		st = c_send(&b, &rep);
	}
	cl->owner = id;
	cl->seqid = 1;
	rep_free(&rep);
	return st;
}

static inline uint32_t setclientid(struct client40 *cl, const char *id)
{
	return setclientid_boot(cl, id, "verifier");
}

/* OPEN (create unchecked) name in the rw export; sid and the reply's
 * raw bytes out. */
static inline uint32_t open40(struct client40 *cl, const char *name,
                              uint32_t access, uint32_t deny,
                              struct nfs4_stateid *sid, struct reply *rep,
                              uint32_t seqid)
{
	struct open_spec o = {.seqid = seqid,
	                      .access = access,
	                      .deny = deny,
	                      .clientid = cl->clientid,
	                      .owner = cl->owner,
	                      .how = T_UNCHECKED4,
	                      .name = name};
	struct open_res r;
	struct cbuf b;
	uint32_t st, v;

	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_open(&b, &o);
	st = c_send(&b, rep);
	if (st != NFS4_OK)
		return st;
	skip_to_last(rep, false);
	res_next(rep, OP4_OPEN);
	get_open_res(&rep->res, &r);
	*sid = r.sid;
	if (r.rflags & 2) { /* OPEN_CONFIRM needed */
		struct reply r2 = {0};
		c_begin(&b, 0);
		op_walk(&b, rwdir);
		op_name(&b, OP4_LOOKUP, name);
		op(&b, OP4_OPEN_CONFIRM);
		nfs4_put_stateid(&b.x, sid);
		xdr_put_u32(&b.x, seqid + 1);
		st = c_send(&b, &r2);
		if (st == NFS4_OK) {
			for (uint32_t i = 0; i + 1 < r2.nres; i++) {
				uint32_t o;
				xdr_get_u32(&r2.res, &o);
				xdr_get_u32(&r2.res, &v);
			}
			res_next(&r2, OP4_OPEN_CONFIRM);
			nfs4_get_stateid(&r2.res, sid);
		}
		cl->seqid = seqid + 2;
		rep_free(&r2);
	} else {
		cl->seqid = seqid + 1;
	}
	return st;
}

static inline uint32_t io40(const char *name, bool write,
                            const struct nfs4_stateid *sid, const char *data,
                            char *out, size_t outsz)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st, v, n;
	const uint8_t *p;
	bool eof;

	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_name(&b, OP4_LOOKUP, name);
	op(&b, write ? OP4_WRITE : OP4_READ);
	nfs4_put_stateid(&b.x, sid);
	xdr_put_u64(&b.x, 0);
	if (write) {
		xdr_put_u32(&b.x, 2);
		xdr_put_string(&b.x, data);
	} else {
		xdr_put_u32(&b.x, 4096);
	}
	st = c_send(&b, &rep);
	if (st == NFS4_OK && !write && out) {
		for (uint32_t i = 0; i + 1 < rep.nres; i++) {
			uint32_t o;
			xdr_get_u32(&rep.res, &o);
			xdr_get_u32(&rep.res, &v);
		}
		res_next(&rep, OP4_READ);
		xdr_get_bool(&rep.res, &eof);
		xdr_get_opaque_ref(&rep.res, &p, &n, 4096);
		snprintf(out, outsz, "%.*s", (int)n, (const char *)p);
	}
	rep_free(&rep);
	return st;
}

/* LOCK (a new lock-owner "lock-<owner>" from open_sid) or LOCKT of a
 * range of name; the reply stays in *rep. */
static inline uint32_t lock40_rep(struct client40 *cl, const char *name,
                                  bool write, uint64_t off, uint64_t len,
                                  const struct nfs4_stateid *open_sid,
                                  struct nfs4_stateid *lock_sid, bool test,
                                  struct reply *rep)
{
	struct cbuf b;
	uint32_t st;
	char lo[64];

	snprintf(lo, sizeof(lo), "lock-%s", cl->owner);
	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_name(&b, OP4_LOOKUP, name);
	if (test) {
		op(&b, OP4_LOCKT);
		xdr_put_u32(&b.x, write ? 2 : 1);
		xdr_put_u64(&b.x, off);
		xdr_put_u64(&b.x, len);
		xdr_put_u64(&b.x, cl->clientid);
		xdr_put_string(&b.x, lo);
	} else {
		op_lock_new(&b, write, off, len, cl->seqid, open_sid,
		            cl->clientid, lo);
	}
	st = c_send(&b, rep);
	if (!test && st != NFS4ERR_BAD_SEQID)
		cl->seqid++;
	if (st == NFS4_OK && !test) {
		skip_to_last(rep, false);
		res_next(rep, OP4_LOCK);
		nfs4_get_stateid(&rep->res, lock_sid);
	}
	return st;
}

static inline uint32_t lock40(struct client40 *cl, const char *name, bool write,
                              uint64_t off, uint64_t len,
                              const struct nfs4_stateid *open_sid,
                              struct nfs4_stateid *lock_sid, bool test)
{
	struct reply rep = {0};
	uint32_t st = lock40_rep(cl, name, write, off, len, open_sid, lock_sid,
	                         test, &rep);

	rep_free(&rep);
	return st;
}

static inline uint32_t locku40(const char *name, uint32_t seqid,
                               struct nfs4_stateid *lock_sid, uint64_t off,
                               uint64_t len)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_name(&b, OP4_LOOKUP, name);
	op_locku(&b, seqid, lock_sid, off, len);
	st = c_send(&b, &rep);
	rep_free(&rep);
	return st;
}

/* CLOSE name's open (4.0); the reply stays in *rep, the stateid CLOSE
 * returned goes to *out. */
static inline uint32_t close40_rep(const char *name, uint32_t seqid,
                                   const struct nfs4_stateid *sid,
                                   struct reply *rep, struct nfs4_stateid *out)
{
	struct cbuf b;
	uint32_t st;

	c_begin(&b, 0);
	op_walk(&b, rwdir);
	op_name(&b, OP4_LOOKUP, name);
	op(&b, OP4_CLOSE);
	xdr_put_u32(&b.x, seqid);
	nfs4_put_stateid(&b.x, sid);
	st = c_send(&b, rep);
	if (st == NFS4_OK && out) {
		skip_to_last(rep, false);
		res_next(rep, OP4_CLOSE);
		nfs4_get_stateid(&rep->res, out);
	}
	return st;
}

static inline uint32_t close40(const char *name, uint32_t seqid,
                               const struct nfs4_stateid *sid)
{
	struct reply rep = {0};
	uint32_t st = close40_rep(name, seqid, sid, &rep, NULL);

	rep_free(&rep);
	return st;
}

/* Whether the server's stateid table holds the stateid with sid's
 * "other" (whatever its seqid): an open or lock, or a 4.0 open closed
 * and kept for a retransmission of its CLOSE. Looks into the server's
 * state (state_int.h). */
static inline bool stid_hashed(const struct nfs4_stateid *sid)
{
	struct nfs4_server *st = S.nfs4;
	uint64_t id = 0;
	bool found = false;

	for (int i = 0; i < 8; i++)
		id = id << 8 | sid->other[4 + i];
	pthread_mutex_lock(&st->lock);
	for (const struct nfs4_stid *s = st->stid_hash[id & (NFS4_HASH - 1)]; s;
	     s = s->hnext)
		found |= s->id == id;
	pthread_mutex_unlock(&st->lock);
	return found;
}

/* ---- 4.1 sessions ---- */

/* The session SEQUENCE names, its last slot seqid and its client. */
static uint8_t sessionid[16];
static uint32_t slot_seq;
static uint64_t session_clientid;

/* What CREATE_SESSION asks for the fore channel, and its flags. */
struct session_opts {
	uint32_t maxresp, maxresp_cached, flags;
};

static inline void put_chan(struct xdr_out *x, uint32_t maxresp,
                            uint32_t maxresp_cached)
{
	xdr_put_u32(x, 0);
	xdr_put_u32(x, 1 << 20);
	xdr_put_u32(x, maxresp);
	xdr_put_u32(x, maxresp_cached);
	xdr_put_u32(x, 16);
	xdr_put_u32(x, 8);
	xdr_put_u32(x, 0);
}

/* EXCHANGE_ID and CREATE_SESSION; the new session becomes the one
 * SEQUENCE names. The reply's csr_flags go to *rflags if asked. */
static inline uint32_t exchange_and_session_opts(const char *owner,
                                                 const struct session_opts *so,
                                                 uint32_t *rflags)
{
	struct reply rep = {0};
	struct cbuf b;
	uint64_t clientid;
	uint32_t seq, st, v;

	c_begin(&b, 1);
	op(&b, OP4_EXCHANGE_ID);
	xdr_put_fixed(&b.x, "verifie1", 8);
	xdr_put_string(&b.x, owner);
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, 0); /* SP4_NONE */
	xdr_put_u32(&b.x, 0); /* no impl id */
	st = c_send(&b, &rep);
	if (st)
		goto out;
	res_next(&rep, OP4_EXCHANGE_ID);
	xdr_get_u64(&rep.res, &clientid);
	xdr_get_u32(&rep.res, &seq);
	c_begin(&b, 1);
	op(&b, OP4_CREATE_SESSION);
	xdr_put_u64(&b.x, clientid);
	xdr_put_u32(&b.x, seq);
	xdr_put_u32(&b.x, so->flags);
	put_chan(&b.x, so->maxresp, so->maxresp_cached);
	put_chan(&b.x, 4096, 4096);
	xdr_put_u32(&b.x, 0x40000000);
	xdr_put_u32(&b.x, 1);
	xdr_put_u32(&b.x, RPC_AUTH_NONE);
	st = c_send(&b, &rep);
	if (st)
		goto out;
	res_next(&rep, OP4_CREATE_SESSION);
	xdr_get_fixed(&rep.res, sessionid, 16);
	xdr_get_u32(&rep.res, &v); /* csr_sequence */
	xdr_get_u32(&rep.res, &v);
	if (rflags)
		*rflags = v;
	slot_seq = 0;
	session_clientid = clientid;
out:
	rep_free(&rep);
	return st;
}

static inline uint32_t exchange_and_session(const char *owner, uint32_t maxresp)
{
	struct session_opts so = {maxresp, 8192, 0};

	return exchange_and_session_opts(owner, &so, NULL);
}

static inline void op_sequence_c(struct cbuf *b, uint32_t seq, bool cachethis)
{
	op(b, OP4_SEQUENCE);
	xdr_put_fixed(&b->x, sessionid, 16);
	xdr_put_u32(&b->x, seq);
	xdr_put_u32(&b->x, 0);
	xdr_put_u32(&b->x, 0);
	xdr_put_bool(&b->x, cachethis);
}

static inline void op_sequence(struct cbuf *b, uint32_t seq)
{
	op_sequence_c(b, seq, false);
}

/* A 4.1 session of owner (the one SEQUENCE names from now on) that may
 * open: RECLAIM_COMPLETE said. */
static inline uint32_t session41(const char *owner,
                                 const struct session_opts *so)
{
	struct session_opts def = {1 << 20, 8192, 0};
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st = exchange_and_session_opts(owner, so ? so : &def, NULL);

	if (st)
		return st;
	c_begin(&b, 1);
	op_sequence(&b, ++slot_seq);
	op(&b, OP4_RECLAIM_COMPLETE);
	xdr_put_bool(&b.x, false);
	st = c_send(&b, &rep);
	rep_free(&rep);
	return st;
}

/* A 4.1 COMPOUND begun with SEQUENCE and the walk to dir. */
static inline void c41(struct cbuf *b, const char *dir)
{
	c_begin(b, 1);
	op_sequence(b, ++slot_seq);
	if (dir)
		op_walk(b, dir);
}

static inline struct open_spec spec41(const char *owner, const char *name,
                                      int how)
{
	struct open_spec o = {
	    .access = 3, .owner = owner, .how = how, .name = name};
	return o;
}

/* 4.1 OPEN in rwdir; the result in *r. */
static inline uint32_t open41(const struct open_spec *o, struct open_res *r)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	c41(&b, rwdir);
	op_open(&b, o);
	st = c_send(&b, &rep);
	if (st == NFS4_OK) {
		skip_to_last(&rep, true);
		res_next(&rep, OP4_OPEN);
		if (!get_open_res(&rep.res, r))
			st = 0xbad;
	}
	rep_free(&rep);
	return st;
}

/* A 4.1 COMPOUND on rwdir/name ending in op with a stateid argument
 * (CLOSE, FREE_STATEID, DELEGRETURN, TEST_STATEID of one): its status;
 * TEST_STATEID's one result in *inner. */
static inline uint32_t sid_op41(uint32_t opnum, const char *name,
                                const struct nfs4_stateid *sid, uint32_t *inner)
{
	struct nfs4_stateid any = *sid;
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st, n = 0;

	c41(&b, name ? rwdir : NULL);
	if (name)
		op_name(&b, OP4_LOOKUP, name);
	op(&b, opnum);
	if (opnum == OP4_CLOSE) {
		xdr_put_u32(&b.x, 0);
		any.seqid = 0; /* whatever its seqid now (RFC 8881 8.2.2) */
	}
	if (opnum == OP4_TEST_STATEID)
		xdr_put_u32(&b.x, 1);
	nfs4_put_stateid(&b.x, &any);
	st = c_send(&b, &rep);
	if (inner && st == NFS4_OK) {
		skip_to_last(&rep, true);
		res_next(&rep, opnum);
		if (!xdr_get_u32(&rep.res, &n) || n != 1 ||
		    !xdr_get_u32(&rep.res, inner))
			st = 0xbad;
	}
	rep_free(&rep);
	return st;
}

/* DESTROY_CLIENTID alone, or after SEQUENCE on the current session. */
static inline uint32_t destroy_clientid(uint64_t id, bool with_sequence)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	if (with_sequence)
		c41(&b, NULL);
	else
		c_begin(&b, 1);
	op(&b, OP4_DESTROY_CLIENTID);
	xdr_put_u64(&b.x, id);
	st = c_send(&b, &rep);
	rep_free(&rep);
	return st;
}

static inline uint32_t destroy_session(void)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	c_begin(&b, 1);
	op(&b, OP4_DESTROY_SESSION);
	xdr_put_fixed(&b.x, sessionid, 16);
	st = c_send(&b, &rep);
	rep_free(&rep);
	return st;
}

#endif
