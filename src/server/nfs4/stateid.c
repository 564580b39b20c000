/* NFSv4 stateids: opens with share reservations, byte-range locks, and
 * the 4.0 owner seqids with replay of the last reply (RFC 7530 9,
 * RFC 8881 8-9). LOCK, LOCKT, LOCKU, RELEASE_LOCKOWNER, TEST_STATEID,
 * FREE_STATEID live here; OPEN's file system half is in io.c.
 *
 * A stateid's "other" is the server's boot epoch and a unique id, so one
 * from a previous instance is recognised as stale. Locks are kept here,
 * per lock stateid, and enforced between NFSv4 clients.
 *
 * A 4.0 CLOSE is answered again, from its owner's saved reply, when it
 * is retransmitted (RFC 7530 9.1.7): the retransmission names the open
 * just closed, so that open is not freed but kept as its owner's
 * ->closed, in the stateid table only, until the owner's next seqid
 * goes on, the owner goes or its client does. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/nfs4/share.h"
#include "server/nfs4/state_int.h"
#include "server/snfsd.h"
#include "util/log.h"

enum { READ_LT = 1, WRITE_LT = 2, READW_LT = 3, WRITEW_LT = 4 };
enum { SHARE_READ = 1, SHARE_WRITE = 2 };

/* ---- owners ---- */

static void owner_drop_closed(struct nfs4_server *st, struct nfs4_owner *o);

/* The owner's closed open, if any, must be dropped first. */
void nfs4_owner_free(struct nfs4_owner *o)
{
	free(o->data);
	free(o->reply);
	free(o);
}

static struct nfs4_owner *owner_find(struct nfs4_client *cl, bool lock,
                                     const uint8_t *p, uint32_t n)
{
	for (struct nfs4_owner *o = cl->owners; o; o = o->next)
		if (o->lock == lock && o->len == n && !memcmp(o->data, p, n))
			return o;
	return NULL;
}

static struct nfs4_owner *owner_by_id(struct nfs4_server *st, uint64_t id)
{
	for (struct nfs4_client *cl = st->clients; cl; cl = cl->next)
		for (struct nfs4_owner *o = cl->owners; o; o = o->next)
			if (o->id == id)
				return o;
	return NULL;
}

static struct nfs4_owner *owner_new(struct nfs4_server *st,
                                    struct nfs4_client *cl, bool lock,
                                    const uint8_t *p, uint32_t n,
                                    uint32_t seqid)
{
	struct nfs4_owner *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->data = malloc(n ? n : 1);
	if (!o->data) {
		free(o);
		return NULL;
	}
	memcpy(o->data, p, n);
	o->len = n;
	o->lock = lock;
	o->cl = cl;
	o->id = nfs4_new_id(st);
	o->seqid = seqid - 1; /* so the first request checks as next */
	o->next = cl->owners;
	cl->owners = o;
	return o;
}

static void owner_unlink(struct nfs4_server *st, struct nfs4_owner *o)
{
	for (struct nfs4_owner **pp = &o->cl->owners; *pp; pp = &(*pp)->next)
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	owner_drop_closed(st, o);
	nfs4_owner_free(o);
}

void nfs4_owner_save_reply(struct nfs4_server *st, uint64_t owner_id,
                           const uint8_t *p, size_t len)
{
	struct nfs4_owner *o;

	pthread_mutex_lock(&st->lock);
	o = owner_by_id(st, owner_id);
	if (o) {
		uint8_t *r = malloc(len ? len : 1);
		if (r) {
			memcpy(r, p, len);
			free(o->reply);
			o->reply = r;
			o->reply_len = len;
		}
	}
	pthread_mutex_unlock(&st->lock);
}

/* 4.0 seqid rules (RFC 7530 9.1.7): the next seqid goes on; the last one
 * again is a retransmission, answered with the saved reply; anything
 * else is BAD_SEQID. 4.1 has sessions for this and ignores seqids. Once
 * the seqid goes on, the saved reply is no longer a CLOSE's: the open
 * that CLOSE closed is dropped. */
static uint32_t seqid_check(struct nfs4_compound *c, struct nfs4_owner *o,
                            uint32_t seqid)
{
	if (c->minor > 0)
		return NFS4_OK;
	if (seqid == o->seqid && o->reply) {
		xdr_out_truncate(c->res, c->oppos);
		xdr_put_fixed(c->res, o->reply, o->reply_len);
		return NFS4_REPLAYED;
	}
	if (seqid != o->seqid + 1)
		return NFS4ERR_BAD_SEQID;
	owner_drop_closed(c->st, o);
	o->seqid = seqid;
	c->replay_owner = o->id;
	c->replay_owner_set = true;
	return NFS4_OK;
}

/* ---- files and stateids ---- */

static uint32_t file_bucket(uint32_t fsid, const struct bk_handle *bh)
{
	uint32_t h = 2166136261u ^ fsid;

	for (size_t i = 0; i < bh->len; i++)
		h = (h ^ bh->data[i]) * 16777619u;
	return h & (NFS4_HASH - 1);
}

static struct nfs4_file *file_find(struct nfs4_server *st, uint32_t fsid,
                                   const struct bk_handle *bh)
{
	struct nfs4_file *f = st->file_hash[file_bucket(fsid, bh)];

	for (; f; f = f->hnext)
		if (f->fsid == fsid && f->bh.len == bh->len &&
		    !memcmp(f->bh.data, bh->data, bh->len))
			return f;
	return NULL;
}

struct nfs4_file *nfs4_file_lookup(struct nfs4_server *st, uint32_t fsid,
                                   const struct bk_handle *bh, bool create)
{
	struct nfs4_file *f = file_find(st, fsid, bh);
	uint32_t b;

	if (f || !create)
		return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->fsid = fsid;
	f->bh = *bh;
	f->next = st->files;
	if (st->files)
		st->files->prev = f;
	st->files = f;
	b = file_bucket(f->fsid, &f->bh);
	f->hnext = st->file_hash[b];
	st->file_hash[b] = f;
	return f;
}

static struct nfs4_file *file_get(struct nfs4_server *st,
                                  const struct nfs4_fh *fh, bool create)
{
	return nfs4_file_lookup(st, fh->ex->fsid, &fh->bh, create);
}

void nfs4_file_put(struct nfs4_server *st, struct nfs4_file *f)
{
	struct nfs4_file **pp;

	if (f->stids || f->nclosed || f->nlm || f->waiting)
		return;
	nfs4_cb_waits_drop(st, f);
	if (f->prev)
		f->prev->next = f->next;
	else
		st->files = f->next;
	if (f->next)
		f->next->prev = f->prev;
	for (pp = &st->file_hash[file_bucket(f->fsid, &f->bh)]; *pp;
	     pp = &(*pp)->hnext)
		if (*pp == f) {
			*pp = f->hnext;
			break;
		}
	free(f);
}

void nfs4_stid_to_wire(const struct nfs4_server *st, const struct nfs4_stid *s,
                       struct nfs4_stateid *out)
{
	out->seqid = s->seqid;
	for (int i = 0; i < 4; i++)
		out->other[i] = (uint8_t)(st->epoch >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		out->other[4 + i] = (uint8_t)(s->id >> (56 - 8 * i));
}

struct nfs4_stid *nfs4_stid_new(struct nfs4_server *st, struct nfs4_client *cl,
                                struct nfs4_owner *o, struct nfs4_file *f,
                                bool lock)
{
	struct nfs4_stid *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->id = nfs4_new_id(st);
	s->seqid = 1;
	s->lock = lock;
	s->owner = o;
	s->cl = cl;
	s->file = f;
	s->next = st->stids;
	if (st->stids)
		st->stids->prev = s;
	st->stids = s;
	s->hnext = st->stid_hash[s->id & (NFS4_HASH - 1)];
	st->stid_hash[s->id & (NFS4_HASH - 1)] = s;
	s->fnext = f->stids;
	f->stids = s;
	return s;
}

void nfs4_ranges_free(struct nfs4_range *r)
{
	while (r) {
		struct nfs4_range *n = r->next;
		free(r);
		r = n;
	}
}

/* Take a stateid off the list of all and its file's: what share
 * reservations, locks and a client's state are made of. */
static void stid_unlist(struct nfs4_server *st, struct nfs4_stid *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		st->stids = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
	for (struct nfs4_stid **pp = &s->file->stids; *pp; pp = &(*pp)->fnext)
		if (*pp == s) {
			*pp = s->fnext;
			break;
		}
}

void nfs4_stid_free(struct nfs4_server *st, struct nfs4_stid *s)
{
	struct nfs4_file *f = s->file;
	bool held;

	if (s->closed)
		f->nclosed--;
	else
		stid_unlist(st, s);
	for (struct nfs4_stid **pp = &st->stid_hash[s->id & (NFS4_HASH - 1)];
	     *pp; pp = &(*pp)->hnext)
		if (*pp == s) {
			*pp = s->hnext;
			break;
		}
	held = s->lock && s->ranges;
	if (s->deleg)
		nfs4_deleg_forget(st, s);
	nfs4_ranges_free(s->ranges);
	free(s);
	if (held) /* NFSv3 clients may be waiting for these bytes */
		nfs4_nlm_wake(st, f);
	nfs4_file_put(st, f);
}

static void open_locks_free(struct nfs4_server *st, struct nfs4_stid *open)
{
	struct nfs4_stid *s, *n;

	for (s = st->stids; s; s = n) {
		n = s->next;
		if (s->lock && s->open == open)
			nfs4_stid_free(st, s);
	}
}

/* An open goes with the lock stateids made from it. */
static void open_free(struct nfs4_server *st, struct nfs4_stid *open)
{
	open_locks_free(st, open);
	nfs4_stid_free(st, open);
}

/* A 4.0 CLOSE: the open's share reservation and locks go, but its
 * stateid stays findable, as its owner's ->closed, so that a
 * retransmission of the CLOSE is told apart from a stateid never given
 * and gets the saved reply (RFC 7530 9.1.7; knfsd keeps the same, its
 * oo_last_closed_stid). One per owner: the owner's next seqid drops it
 * (seqid_check), as do its end and its client's. */
static void open_close40(struct nfs4_server *st, struct nfs4_stid *open)
{
	struct nfs4_owner *o = open->owner;

	open_locks_free(st, open);
	owner_drop_closed(st, o);
	stid_unlist(st, open);
	open->closed = true;
	open->file->nclosed++;
	o->closed = open;
}

static void owner_drop_closed(struct nfs4_server *st, struct nfs4_owner *o)
{
	struct nfs4_stid *s = o->closed;

	if (s) {
		o->closed = NULL;
		nfs4_stid_free(st, s);
	}
}

void nfs4_client_drop_state(struct nfs4_server *st, struct nfs4_client *cl)
{
	struct nfs4_stid *s, *n;

	for (struct nfs4_owner *o = cl->owners; o; o = o->next)
		owner_drop_closed(st, o);
	for (s = st->stids; s; s = n) {
		n = s->next;
		if (s->cl == cl && s->lock)
			nfs4_stid_free(st, s);
	}
	for (s = st->stids; s; s = n) {
		n = s->next;
		if (s->cl == cl)
			nfs4_stid_free(st, s);
	}
}

bool nfs4_client_has_state(const struct nfs4_server *st,
                           const struct nfs4_client *cl)
{
	for (const struct nfs4_stid *s = st->stids; s; s = s->next)
		if (s->cl == cl)
			return true;
	return false;
}

static bool other_is(const struct nfs4_stateid *s, int fill)
{
	for (int i = 0; i < NFS4_OTHER_SIZE; i++)
		if (s->other[i] != (uint8_t)fill)
			return false;
	return true;
}

static bool sid_is(const struct nfs4_stateid *s, uint32_t seqid, int fill)
{
	return s->seqid == seqid && other_is(s, fill);
}

static bool sid_anonymous(const struct nfs4_stateid *s)
{
	return sid_is(s, 0, 0) || sid_is(s, UINT32_MAX, 0xff);
}

struct nfs4_stid *nfs4_stid_by_id(struct nfs4_server *st, uint64_t id)
{
	struct nfs4_stid *s = st->stid_hash[id & (NFS4_HASH - 1)];

	while (s && s->id != id)
		s = s->hnext;
	return s;
}

/* Find a stateid by its "other", whatever its seqid: one of another
 * instance is stale (bad in 4.1), an unknown one bad, and in 4.1 one is
 * only good with its own client's session. A 4.0 open closed is found
 * too (stid_find leaves it out). */
static uint32_t stid_find_any(struct nfs4_compound *c,
                              const struct nfs4_stateid *sid,
                              struct nfs4_stid **out)
{
	uint32_t epoch = (uint32_t)sid->other[0] << 24 |
	                 (uint32_t)sid->other[1] << 16 |
	                 (uint32_t)sid->other[2] << 8 | sid->other[3];
	uint64_t id = 0;
	struct nfs4_stid *s;

	/* RFC 7530 9.1.4.3, RFC 8881 8.2.3: an "other" of all zeros or all
	 * ones is reserved, never a stateid of any instance: not stale but
	 * BAD_STATEID (in 4.0 too, where seqid 1 with zeros is no current
	 * stateid). */
	if (other_is(sid, 0) || other_is(sid, 0xff))
		return NFS4ERR_BAD_STATEID;
	if (epoch != c->st->epoch)
		return c->minor ? NFS4ERR_BAD_STATEID : NFS4ERR_STALE_STATEID;
	for (int i = 0; i < 8; i++)
		id = id << 8 | sid->other[4 + i];
	s = nfs4_stid_by_id(c->st, id);
	if (!s || (c->minor > 0 && s->cl->clientid != c->clientid))
		return NFS4ERR_BAD_STATEID;
	*out = s;
	return NFS4_OK;
}

/* A stateid in force: a closed open is BAD_STATEID (RFC 7530 9.1.4.4:
 * it no longer stands for any state) for READ, WRITE, SETATTR and every
 * other op but the replay of its CLOSE. */
static uint32_t stid_find(struct nfs4_compound *c,
                          const struct nfs4_stateid *sid,
                          struct nfs4_stid **out)
{
	uint32_t st = stid_find_any(c, sid, out);

	if (!st && (*out)->closed)
		return NFS4ERR_BAD_STATEID;
	if (!st && (*out)->revoked)
		return NFS4ERR_DELEG_REVOKED;
	return st;
}

/* The seqid of a stateid found (RFC 8881 8.2.2): 0 in 4.1 means "the
 * current one"; older is OLD_STATEID, newer BAD_STATEID. */
static uint32_t stid_seqid_check(const struct nfs4_compound *c,
                                 const struct nfs4_stateid *sid,
                                 const struct nfs4_stid *s)
{
	if (c->minor > 0 && sid->seqid == 0)
		return NFS4_OK;
	if (sid->seqid < s->seqid)
		return NFS4ERR_OLD_STATEID;
	return sid->seqid > s->seqid ? NFS4ERR_BAD_STATEID : NFS4_OK;
}

/* Find a stateid and check its seqid. */
uint32_t nfs4_stid_lookup(struct nfs4_compound *c,
                          const struct nfs4_stateid *sid,
                          struct nfs4_stid **out)
{
	uint32_t st = stid_find(c, sid, out);

	return st ? st : stid_seqid_check(c, sid, *out);
}

bool nfs4_stid_on_cfh(const struct nfs4_compound *c, const struct nfs4_stid *s)
{
	const struct nfs4_file *f = s->file;

	return c->cfh.kind == FH4_EXPORT && f->fsid == c->cfh.ex->fsid &&
	       f->bh.len == c->cfh.bh.len &&
	       !memcmp(f->bh.data, c->cfh.bh.data, f->bh.len);
}

/* A closed open, named by a seqid-bearing op: the CLOSE that closed it
 * sent again, with its owner's last seqid, gets the saved reply
 * (RFC 7530 9.1.7). A new request (the next seqid) gets BAD_STATEID
 * (9.1.4.4: it stands for no state now) and uses up no seqid; any other
 * seqid, or the last one on another op, is BAD_SEQID (9.1.9). Either
 * way the replay stays as it was. */
static uint32_t closed_check(struct nfs4_compound *c, struct nfs4_owner *o,
                             uint32_t seqid)
{
	if (seqid == o->seqid + 1)
		return NFS4ERR_BAD_STATEID;
	if (seqid != o->seqid || c->opnum != OP4_CLOSE || !o->reply)
		return NFS4ERR_BAD_SEQID;
	return seqid_check(c, o, seqid);
}

/* A seqid-bearing op's stateid (4.0 CLOSE, OPEN_CONFIRM, OPEN_DOWNGRADE,
 * LOCK, LOCKU). RFC 7530 9.1.7: a retransmission carries the stateid it
 * had the first time, now old, and gets the saved reply, not
 * OLD_STATEID; a new request with an old stateid still uses up its
 * seqid, one with a BAD_STATEID does not. */
static uint32_t stid_lookup_seqid(struct nfs4_compound *c,
                                  const struct nfs4_stateid *sid, bool lock,
                                  uint32_t seqid, struct nfs4_stid **out)
{
	uint32_t st = stid_find_any(c, sid, out), sq;

	if (st)
		return st;
	if ((*out)->lock != lock || (*out)->deleg || !nfs4_stid_on_cfh(c, *out))
		return NFS4ERR_BAD_STATEID;
	st = stid_seqid_check(c, sid, *out);
	if (st == NFS4ERR_BAD_STATEID)
		return st;
	if ((*out)->closed)
		return closed_check(c, (*out)->owner, seqid);
	sq = seqid_check(c, (*out)->owner, seqid);
	return sq ? sq : st;
}

uint32_t nfs4_resolve_stateid(struct nfs4_compound *c, struct nfs4_stateid *sid)
{
	/* RFC 8881 16.2.3.1.2: seqid 1, other zero means the current
	 * stateid of the COMPOUND. */
	if (c->minor == 0 || !sid_is(sid, 1, 0))
		return NFS4_OK;
	if (!c->cur_sid_set)
		return NFS4ERR_BAD_STATEID;
	*sid = c->cur_sid;
	return NFS4_OK;
}

void nfs4_set_cur_stateid(struct nfs4_compound *c,
                          const struct nfs4_stateid *sid)
{
	c->cur_sid = *sid;
	c->cur_sid_set = true;
}

uint32_t nfs4_check_io_stateid(struct nfs4_compound *c,
                               const struct nfs4_stateid *sid, int mode)
{
	struct nfs4_stid *s, *open;
	struct nfs4_file *f;
	uint32_t st = NFS4_OK;

	if (c->cfh.kind != FH4_EXPORT)
		return NFS4_OK;
	pthread_mutex_lock(&c->st->lock);
	if (sid_anonymous(sid)) {
		/* No open of ours: other opens' deny modes still hold
		 * (RFC 7530 9.1.4.3). */
		f = file_get(c->st, &c->cfh, false);
		for (s = f ? f->stids : NULL; s && !st; s = s->fnext)
			if (!s->lock && (s->deny & (uint32_t)mode))
				st = NFS4ERR_LOCKED;
		goto out;
	}
	st = nfs4_stid_lookup(c, sid, &s);
	if (st)
		goto out;
	if (!nfs4_stid_on_cfh(c, s)) {
		st = NFS4ERR_BAD_STATEID;
		goto out;
	}
	s->cl->renewed = nfs4_now();
	open = s->lock ? s->open : s;
	/* READ with a write-only open is allowed, as Linux does (the
	 * client reads around partial page writes). A read delegation
	 * reads only. */
	if (mode == STID_WRITE && !(open->access & SHARE_WRITE))
		st = NFS4ERR_OPENMODE;
out:
	pthread_mutex_unlock(&c->st->lock);
	/* A write beside another client's read delegation recalls it. */
	if (!st && mode == STID_WRITE)
		st = nfs4_deleg_conflict(c, &c->cfh.bh);
	return st;
}

int nfs4_share_check(struct snfsd *s, const struct export *ex,
                     const struct bk_handle *bh, bool write)
{
	struct nfs4_server *st = __atomic_load_n(&s->nfs4, __ATOMIC_ACQUIRE);
	uint32_t mode = write ? SHARE_WRITE : SHARE_READ;
	int rc = 0;

	if (!st)
		return 0;
	pthread_mutex_lock(&st->lock);
	struct nfs4_file *f = file_find(st, ex->fsid, bh);
	for (struct nfs4_stid *o = f ? f->stids : NULL; o; o = o->fnext)
		if (!o->lock && (o->deny & mode))
			rc = -EACCES;
	pthread_mutex_unlock(&st->lock);
	return rc;
}

/* ---- OPEN ---- */

static uint32_t share_conflict(const struct nfs4_file *f,
                               const struct nfs4_stid *self, uint32_t access,
                               uint32_t deny)
{
	for (const struct nfs4_stid *s = f->stids; s; s = s->fnext) {
		/* delegations are recalled instead (nfs4_open_finish) */
		if (s == self || s->lock || s->deleg)
			continue;
		if ((access & s->deny) || (deny & s->access))
			return NFS4ERR_SHARE_DENIED;
	}
	return NFS4_OK;
}

/* Grace rules for an OPEN or LOCK (RFC 8881 8.4.2, 18.51.3). */
static uint32_t grace_check(struct nfs4_compound *c, struct nfs4_client *cl,
                            bool reclaim)
{
	bool grace = nfs4_grace_locked(c->st);

	if (reclaim) {
		if (!grace || !cl->may_reclaim || cl->reclaim_complete)
			return NFS4ERR_NO_GRACE;
		log_info("nfs4: client %016llx reclaims %s state",
		         (unsigned long long)cl->clientid,
		         c->opnum == OP4_OPEN ? "open" : "lock");
	} else if (grace) {
		return NFS4ERR_GRACE;
	} else if (c->minor > 0 && !cl->reclaim_complete) {
		/* A 4.1 client says RECLAIM_COMPLETE before new opens. */
		return NFS4ERR_GRACE;
	}
	nfs4_client_record(c->st, cl);
	return NFS4_OK;
}

uint32_t nfs4_open_begin(struct nfs4_compound *c,
                         const struct nfs4_open_args *a)
{
	struct nfs4_client *cl;
	struct nfs4_owner *o;
	uint32_t st;

	pthread_mutex_lock(&c->st->lock);
	st = nfs4_client_of(c, a->clientid, &cl);
	if (st)
		goto out;
	o = owner_find(cl, false, a->owner, a->ownerlen);
	if (o && c->minor == 0 && !o->confirmed) {
		/* An unconfirmed owner starts over (RFC 7530 16.16.5). */
		struct nfs4_stid *s, *n;
		for (s = c->st->stids; s; s = n) {
			n = s->next;
			if (s->owner == o)
				open_free(c->st, s);
		}
		owner_unlink(c->st, o);
		o = NULL;
	}
	if (!o) {
		o = owner_new(c->st, cl, false, a->owner, a->ownerlen,
		              a->seqid);
		if (!o) {
			st = NFS4ERR_RESOURCE;
			goto out;
		}
		o->confirmed = c->minor > 0 || a->claim == 1;
	}
	st = seqid_check(c, o, a->seqid);
	if (st)
		goto out;
	c->replay_owner = o->id;
	st = grace_check(c, cl, a->claim == 1 /* CLAIM_PREVIOUS */);
out:
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

uint32_t nfs4_open_finish(struct nfs4_compound *c,
                          const struct nfs4_open_args *a,
                          struct nfs4_open_res *r)
{
	struct nfs4_owner *o;
	struct nfs4_file *f;
	struct nfs4_stid *s;
	uint32_t st;

	pthread_mutex_lock(&c->st->lock);
	o = owner_by_id(c->st, c->replay_owner);
	f = o ? file_get(c->st, &c->cfh, true) : NULL;
	if (!f) {
		st = o ? NFS4ERR_RESOURCE : NFS4ERR_EXPIRED;
		goto out;
	}
	for (s = f->stids; s; s = s->fnext)
		if (!s->lock && !s->deleg && s->owner == o)
			break;
	/* Writing, or denying reads, conflicts with other clients' read
	 * delegations: recalled, and the client asks again (DELAY). One
	 * that raced in after io.c waited for them is caught here. */
	if ((a->access & SHARE_WRITE) || a->deny || a->trunc) {
		if (nfs4_deleg_recall_locked(c->st, f, o->cl->clientid)) {
			nfs4_file_put(c->st, f);
			st = NFS4ERR_DELAY;
			goto out;
		}
	}
	/* A truncating OPEN writes the file, whatever access it asks: an
	 * open elsewhere that denies writes refuses it (SHARE_DENIED,
	 * RFC 8881 18.16.3, 9.7). */
	st = share_conflict(f, s,
	                    a->access | (s ? s->access : 0) |
	                        (a->trunc ? SHARE_WRITE : 0),
	                    a->deny | (s ? s->deny : 0));
	if (!st && a->trunc) {
		/* An OPEN that fails has no effect: the truncation comes
		 * after the share check, and under the lock so that no
		 * conflicting open slips in between. */
		struct bk_attr after;
		int rc = c->cfh.ex->ops->setattr(c->cfh.ex->bk, &c->cfh.cred,
		                                 &c->cfh.bh, a->trunc, &after);
		st = nfs4_errno(rc);
	}
	if (st) {
		nfs4_file_put(c->st, f);
		goto out;
	}
	if (s) {
		/* The same owner opens again: modes add up (an upgrade). */
		s->access |= a->access;
		s->deny |= a->deny;
		s->seqid++;
	} else {
		s = nfs4_stid_new(c->st, o->cl, o, f, false);
		if (!s) {
			nfs4_file_put(c->st, f);
			st = NFS4ERR_RESOURCE;
			goto out;
		}
		s->access = a->access;
		s->deny = a->deny;
	}
	nfs4_stid_to_wire(c->st, s, &r->sid);
	r->confirm = c->minor == 0 && !o->confirmed;
	r->cb_up = c->session && nfs4_cb_up(c->session);
	r->deleg = a->want_deleg && r->cb_up &&
	           nfs4_deleg_grant(c, f, o->cl, &r->dsid);
out:
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

/* An open stateid on the current file, its owner's seqid checked. */
static uint32_t open_stid(struct nfs4_compound *c, uint32_t seqid,
                          const struct nfs4_stateid *sid,
                          struct nfs4_stid **out)
{
	struct nfs4_stid *s;
	uint32_t st = stid_lookup_seqid(c, sid, false, seqid, &s);

	if (st)
		return st;
	s->cl->renewed = nfs4_now();
	*out = s;
	return NFS4_OK;
}

uint32_t nfs4_open_confirm_state(struct nfs4_compound *c, uint32_t seqid,
                                 struct nfs4_stateid *sid)
{
	struct nfs4_stid *s;
	uint32_t st;

	pthread_mutex_lock(&c->st->lock);
	st = open_stid(c, seqid, sid, &s);
	if (!st) {
		if (s->owner->confirmed) {
			st = NFS4ERR_BAD_STATEID;
		} else {
			s->owner->confirmed = true;
			s->seqid++;
			nfs4_stid_to_wire(c->st, s, sid);
		}
	}
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

uint32_t nfs4_open_downgrade_state(struct nfs4_compound *c, uint32_t seqid,
                                   struct nfs4_stateid *sid, uint32_t access,
                                   uint32_t deny)
{
	struct nfs4_stid *s;
	uint32_t st;

	pthread_mutex_lock(&c->st->lock);
	st = open_stid(c, seqid, sid, &s);
	if (!st) {
		/* RFC 7530 16.19.4: only to modes it holds. */
		if (!access || (access & ~s->access) || (deny & ~s->deny)) {
			st = NFS4ERR_INVAL;
		} else {
			s->access = access;
			s->deny = deny;
			s->seqid++;
			nfs4_stid_to_wire(c->st, s, sid);
		}
	}
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

uint32_t nfs4_close_state(struct nfs4_compound *c, uint32_t seqid,
                          struct nfs4_stateid *sid)
{
	struct nfs4_stid *s;
	uint32_t st;

	pthread_mutex_lock(&c->st->lock);
	st = open_stid(c, seqid, sid, &s);
	if (!st) {
		s->seqid++;
		nfs4_stid_to_wire(c->st, s, sid);
		/* Its locks go too: the Linux client unlocks first; a
		 * client that does not loses them rather than leaking.
		 * 4.1 replays from the session's slot and keeps nothing. */
		if (c->minor == 0)
			open_close40(c->st, s);
		else
			open_free(c->st, s);
	}
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

/* ---- byte-range locks ---- */

struct lock_req {
	uint32_t type;
	uint64_t start, end;
	bool write;
};

/* offset/length to an inclusive range (RFC 7530 9.2: length all ones is
 * "to the end"; zero or past the end of the space is INVAL). */
static uint32_t lock_range(uint32_t type, uint64_t off, uint64_t len,
                           struct lock_req *r)
{
	if (type < READ_LT || type > WRITEW_LT)
		return NFS4ERR_INVAL;
	if (len == 0)
		return NFS4ERR_INVAL;
	if (len != UINT64_MAX && len - 1 > UINT64_MAX - off)
		return NFS4ERR_INVAL;
	r->type = type;
	r->start = off;
	r->end = len == UINT64_MAX ? UINT64_MAX : off + len - 1;
	r->write = type == WRITE_LT || type == WRITEW_LT;
	return NFS4_OK;
}

static const struct nfs4_range *lock_conflict(const struct nfs4_file *f,
                                              const struct nfs4_owner *self,
                                              const struct lock_req *r,
                                              const struct nfs4_stid **holder)
{
	for (const struct nfs4_stid *s = f->stids; s; s = s->fnext) {
		if (!s->lock || s->owner == self)
			continue;
		for (const struct nfs4_range *g = s->ranges; g; g = g->next)
			if (g->start <= r->end && r->start <= g->end &&
			    (r->write || g->write)) {
				*holder = s;
				return g;
			}
	}
	return NULL;
}

static void put_denied(struct xdr_out *x, const struct nfs4_range *g,
                       uint64_t clientid, const uint8_t *owner,
                       uint32_t ownerlen)
{
	xdr_put_u64(x, g->start);
	xdr_put_u64(x,
	            g->end == UINT64_MAX ? UINT64_MAX : g->end - g->start + 1);
	xdr_put_u32(x, g->write ? WRITE_LT : READ_LT);
	xdr_put_u64(x, clientid);
	xdr_put_opaque(x, owner, ownerlen);
}

/* NFS4ERR_DENIED, its LOCK4denied encoded, when another NFSv4 lock-owner
 * than self or any NFSv3 (NLM) owner holds bytes of r that conflict;
 * NFS4_OK otherwise. An NLM holder is reported as clientid 0 with its
 * owner handle. */
static uint32_t lock_denied(const struct nfs4_file *f,
                            const struct nfs4_owner *self,
                            const struct lock_req *r, struct xdr_out *x)
{
	const struct nfs4_stid *holder;
	const struct nfs4_nlm_owner *nh;
	const struct nfs4_range *g = lock_conflict(f, self, r, &holder);

	if (g) {
		put_denied(x, g, holder->cl->clientid, holder->owner->data,
		           holder->owner->len);
		return NFS4ERR_DENIED;
	}
	g = nfs4_nlm_conflict(f, NULL, r->start, r->end, r->write, &nh);
	if (g) {
		put_denied(x, g, 0, nh->oh, nh->ohlen);
		return NFS4ERR_DENIED;
	}
	return NFS4_OK;
}

/* Set [start, end] to type (write/read) or remove it (unlock), cutting
 * the ranges it overlaps: POSIX semantics within one owner. */
int nfs4_range_set(struct nfs4_range **head, uint64_t start, uint64_t end,
                   bool unlock, bool write)
{
	struct nfs4_range **pp = head, *g, *n;

	while ((g = *pp)) {
		if (g->end < start || g->start > end) {
			pp = &g->next;
			continue;
		}
		if (g->start < start && g->end > end) {
			/* Split in two around the new range. */
			n = malloc(sizeof(*n));
			if (!n)
				return -ENOMEM;
			*n = *g;
			n->start = end + 1;
			g->end = start - 1;
			g->next = n;
			pp = &n->next;
			continue;
		}
		if (g->start < start) {
			g->end = start - 1;
			pp = &g->next;
		} else if (g->end > end) {
			g->start = end + 1;
			pp = &g->next;
		} else {
			*pp = g->next;
			free(g);
		}
	}
	if (unlock)
		return 0;
	n = malloc(sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->start = start;
	n->end = end;
	n->write = write;
	n->next = *head;
	*head = n;
	return 0;
}

struct lock_args {
	uint32_t type;
	bool reclaim;
	uint64_t off, len;
	bool new_owner;
	uint32_t open_seqid, lock_seqid;
	struct nfs4_stateid open_sid, lock_sid;
	uint64_t clientid;
	const uint8_t *owner;
	uint32_t ownerlen;
};

static bool get_lock_args(struct xdr_in *x, struct lock_args *a)
{
	if (!xdr_get_u32(x, &a->type) || !xdr_get_bool(x, &a->reclaim) ||
	    !xdr_get_u64(x, &a->off) || !xdr_get_u64(x, &a->len) ||
	    !xdr_get_bool(x, &a->new_owner))
		return false;
	if (!a->new_owner)
		return nfs4_get_stateid(x, &a->lock_sid) &&
		       xdr_get_u32(x, &a->lock_seqid);
	return xdr_get_u32(x, &a->open_seqid) &&
	       nfs4_get_stateid(x, &a->open_sid) &&
	       xdr_get_u32(x, &a->lock_seqid) && xdr_get_u64(x, &a->clientid) &&
	       xdr_get_opaque_ref(x, &a->owner, &a->ownerlen,
	                          NFS4_OPAQUE_LIMIT);
}

/* The lock stateid for a LOCK: made from the open for a new lock-owner,
 * else the one given. Seqids per RFC 7530 9.1.7. */
static uint32_t lock_stid(struct nfs4_compound *c, const struct lock_args *a,
                          struct nfs4_stid **out)
{
	struct nfs4_stid *open, *s;
	struct nfs4_owner *lo;
	struct nfs4_stateid sid;
	uint32_t st;

	if (!a->new_owner) {
		sid = a->lock_sid;
		st = nfs4_resolve_stateid(c, &sid);
		if (!st)
			st =
			    stid_lookup_seqid(c, &sid, true, a->lock_seqid, &s);
		if (st)
			return st;
		*out = s;
		return NFS4_OK;
	}
	sid = a->open_sid;
	st = nfs4_resolve_stateid(c, &sid);
	if (!st)
		st = open_stid(c, a->open_seqid, &sid, &open);
	if (st)
		return st;
	lo = owner_find(open->cl, true, a->owner, a->ownerlen);
	if (!lo)
		lo = owner_new(c->st, open->cl, true, a->owner, a->ownerlen,
		               a->lock_seqid + 1);
	if (!lo)
		return NFS4ERR_RESOURCE;
	lo->seqid = a->lock_seqid;
	for (s = open->file->stids; s; s = s->fnext)
		if (s->lock && s->owner == lo)
			break;
	if (!s) {
		s = nfs4_stid_new(c->st, open->cl, lo, open->file, true);
		if (!s)
			return NFS4ERR_RESOURCE;
		s->open = open;
		s->seqid = 0; /* the first LOCK makes it 1 */
	}
	*out = s;
	return NFS4_OK;
}

/* A 4.1 lock-owner refused a blocking lock: CB_NOTIFY_LOCK when the
 * file's locks change (callback.c). */
static void lock_wait(struct nfs4_compound *c, const struct nfs4_stid *s)
{
	struct nfs_fh wire;

	if (nfs4_fh_to_wire(c, &c->cfh, &wire) == NFS4_OK)
		nfs4_cb_lock_wait(c->st, s->file, s->cl->clientid, &wire,
		                  s->owner->data, s->owner->len);
}

uint32_t nfs4_op_lock(struct nfs4_compound *c)
{
	struct lock_args a;
	struct lock_req r;
	struct nfs4_stid *s;
	struct nfs4_stateid sid;
	uint32_t st;

	memset(&a, 0, sizeof(a));
	if (!get_lock_args(c->args, &a))
		return NFS4ERR_BADXDR;
	st = nfs4_need_export(c);
	if (!st)
		st = lock_range(a.type, a.off, a.len, &r);
	if (st)
		return st;
	pthread_mutex_lock(&c->st->lock);
	st = lock_stid(c, &a, &s);
	if (st)
		goto out;
	st = grace_check(c, s->cl, a.reclaim);
	if (st)
		goto out;
	if (r.write && !(s->open->access & SHARE_WRITE)) {
		st = NFS4ERR_OPENMODE;
		goto out;
	}
	st = lock_denied(s->file, s->owner, &r, c->res);
	if (st == NFS4ERR_DENIED && c->session &&
	    (r.type == READW_LT || r.type == WRITEW_LT))
		lock_wait(c, s);
	if (st)
		goto out;
	if (nfs4_range_set(&s->ranges, r.start, r.end, false, r.write)) {
		st = NFS4ERR_RESOURCE;
		goto out;
	}
	if (!r.write) /* a downgrade frees bytes for readers */
		nfs4_nlm_wake(c->st, s->file);
	s->seqid++;
	s->cl->renewed = nfs4_now();
	nfs4_stid_to_wire(c->st, s, &sid);
	nfs4_put_stateid(c->res, &sid);
	nfs4_set_cur_stateid(c, &sid);
out:
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

uint32_t nfs4_op_lockt(struct nfs4_compound *c)
{
	uint32_t type, ownerlen, st;
	uint64_t off, len, clientid;
	const uint8_t *owner;
	struct lock_req r;
	struct nfs4_client *cl;
	struct nfs4_file *f;

	if (!xdr_get_u32(c->args, &type) || !xdr_get_u64(c->args, &off) ||
	    !xdr_get_u64(c->args, &len) || !xdr_get_u64(c->args, &clientid) ||
	    !xdr_get_opaque_ref(c->args, &owner, &ownerlen, NFS4_OPAQUE_LIMIT))
		return NFS4ERR_BADXDR;
	st = nfs4_need_export(c);
	if (!st)
		st = lock_range(type, off, len, &r);
	if (st)
		return st;
	pthread_mutex_lock(&c->st->lock);
	st = nfs4_client_of(c, clientid, &cl);
	if (st)
		goto out;
	if (nfs4_grace_locked(c->st)) {
		st = NFS4ERR_GRACE;
		goto out;
	}
	f = file_get(c->st, &c->cfh, false);
	if (f)
		st = lock_denied(f, owner_find(cl, true, owner, ownerlen), &r,
		                 c->res);
out:
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

uint32_t nfs4_op_locku(struct nfs4_compound *c)
{
	uint32_t type, seqid, st;
	uint64_t off, len;
	struct nfs4_stateid sid;
	struct lock_req r;
	struct nfs4_stid *s;

	if (!xdr_get_u32(c->args, &type) || !xdr_get_u32(c->args, &seqid) ||
	    !nfs4_get_stateid(c->args, &sid) || !xdr_get_u64(c->args, &off) ||
	    !xdr_get_u64(c->args, &len))
		return NFS4ERR_BADXDR;
	st = nfs4_need_export(c);
	if (!st)
		st = lock_range(type, off, len, &r);
	if (!st)
		st = nfs4_resolve_stateid(c, &sid);
	if (st)
		return st;
	pthread_mutex_lock(&c->st->lock);
	st = stid_lookup_seqid(c, &sid, true, seqid, &s);
	if (st)
		goto out;
	if (nfs4_range_set(&s->ranges, r.start, r.end, true, false)) {
		st = NFS4ERR_RESOURCE;
		goto out;
	}
	nfs4_nlm_wake(c->st, s->file);
	s->seqid++;
	s->cl->renewed = nfs4_now();
	nfs4_stid_to_wire(c->st, s, &sid);
	nfs4_put_stateid(c->res, &sid);
	nfs4_set_cur_stateid(c, &sid);
out:
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

uint32_t nfs4_op_release_lockowner(struct nfs4_compound *c)
{
	uint64_t clientid;
	const uint8_t *owner;
	uint32_t n, st;
	struct nfs4_client *cl;
	struct nfs4_owner *o;
	struct nfs4_stid *s, *next;

	if (!xdr_get_u64(c->args, &clientid) ||
	    !xdr_get_opaque_ref(c->args, &owner, &n, NFS4_OPAQUE_LIMIT))
		return NFS4ERR_BADXDR;
	pthread_mutex_lock(&c->st->lock);
	st = nfs4_client_of(c, clientid, &cl);
	if (st)
		goto out;
	o = owner_find(cl, true, owner, n);
	if (!o)
		goto out;
	for (s = c->st->stids; s; s = s->next)
		if (s->owner == o && s->ranges) {
			st = NFS4ERR_LOCKS_HELD;
			goto out;
		}
	for (s = c->st->stids; s; s = next) {
		next = s->next;
		if (s->owner == o)
			nfs4_stid_free(c->st, s);
	}
	owner_unlink(c->st, o);
out:
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

/* ---- TEST_STATEID, FREE_STATEID (RFC 8881 18.48, 18.38) ---- */

uint32_t nfs4_op_test_stateid(struct nfs4_compound *c)
{
	uint32_t n;
	struct nfs4_stateid sid;
	struct nfs4_stid *s;

	if (!xdr_get_u32(c->args, &n) || n > 1024)
		return NFS4ERR_BADXDR;
	xdr_put_u32(c->res, n);
	pthread_mutex_lock(&c->st->lock);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t st;
		if (!nfs4_get_stateid(c->args, &sid)) {
			pthread_mutex_unlock(&c->st->lock);
			return NFS4ERR_BADXDR;
		}
		st = sid_anonymous(&sid) ? NFS4ERR_BAD_STATEID
		                         : nfs4_stid_lookup(c, &sid, &s);
		xdr_put_u32(c->res, st);
	}
	pthread_mutex_unlock(&c->st->lock);
	return NFS4_OK;
}

uint32_t nfs4_op_free_stateid(struct nfs4_compound *c)
{
	struct nfs4_stateid sid;
	struct nfs4_stid *s;
	uint32_t st;

	if (!nfs4_get_stateid(c->args, &sid))
		return NFS4ERR_BADXDR;
	st = nfs4_resolve_stateid(c, &sid);
	if (st)
		return st;
	pthread_mutex_lock(&c->st->lock);
	/* A revoked delegation is what FREE_STATEID is for (RFC 8881
	 * 8.2.4, 18.38); one in force must be returned (DELEGRETURN). */
	st = stid_find_any(c, &sid, &s);
	if (!st && s->closed)
		st = NFS4ERR_BAD_STATEID;
	if (!st)
		st = stid_seqid_check(c, &sid, s);
	if (!st) {
		if (s->deleg ? !s->revoked : (!s->lock || s->ranges))
			st = NFS4ERR_LOCKS_HELD;
		else
			nfs4_stid_free(c->st, s);
	}
	pthread_mutex_unlock(&c->st->lock);
	return st;
}
