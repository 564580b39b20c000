/* NFSv4.1 read delegations (RFC 8881 10.2, 10.4, 18.6, 20.2).
 *
 * Why: a client holding one opens, stats and reads the file from its own
 * cache with no OPEN, GETATTR or ACCESS on the wire, and its cached data
 * stays valid across closes. The export option `delegations` turns them
 * on (off by default, as in nfs-ganesha: see the lease's limits below).
 *
 * Granted by OPEN for reading only, to a 4.1+ client whose session takes
 * calls back, when nobody has the file open for writing. The holder's
 * own changes go on at once (and recall it: see recall_locked). Any
 * change through snfsd by another client (an OPEN for writing or denying reads,
 * WRITE, SETATTR, REMOVE, RENAME, LINK, the 4.2 writes, and every NFSv3
 * change) recalls it with CB_RECALL; the changer waits a moment for the
 * DELEGRETURN and, if it has not come, hears NFS4ERR_DELAY (NFSv3:
 * JUKEBOX) and asks again. A delegation not returned a lease period
 * after its recall is revoked: kept, answering DELEG_REVOKED, until the
 * client frees it (SEQUENCE says SEQ4_STATUS_RECALLABLE_STATE_REVOKED
 * meanwhile). A file just recalled gets no new delegation for a while,
 * or readers and a writer would trade recalls forever.
 *
 * Changes beside snfsd: each delegation holds the backend's lease on the
 * file (bk_ops.lease), broken by a local open for writing or truncation,
 * which then waits while we recall. Not by a local rename, unlink or
 * chmod: a holder may keep such attributes until it revalidates. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "server/nfs4/share.h"
#include "server/nfs4/state_int.h"
#include "server/snfsd.h"
#include "util/log.h"

enum { OP_CB_RECALL = 4 };
enum { SHARE_READ = 1, SHARE_WRITE = 2 };
enum { ACE4_ACCESS_ALLOWED_ACE_TYPE = 0 };
#define DELEG_MAX 65536     /* delegations in force, server-wide */
#define DELEG_COOLDOWN 30   /* s: no new one on a file after a recall */
#define DELEG_WAIT_MS 500   /* a changer waits this long for the return */
#define DELEG_WAITERS_MAX 4 /* threads that may wait at once */

/* Files recalled lately (DELEG_COOLDOWN) are in st->cool, indexed by a
 * hash of the file: its nfs4_file goes with its last stateid, so the
 * time cannot live there. A collision only withholds a delegation. */
static uint64_t file_key(const struct nfs4_file *f)
{
	uint64_t h = 1469598103934665603ull ^ f->fsid;

	for (size_t i = 0; i < f->bh.len; i++)
		h = (h ^ f->bh.data[i]) * 1099511628211ull;
	return h;
}

static void cool_set(struct nfs4_server *st, const struct nfs4_file *f,
                     time_t until)
{
	uint64_t k = file_key(f);

	st->cool[k % NFS4_COOL_SLOTS].key = k;
	st->cool[k % NFS4_COOL_SLOTS].until = until;
}

static bool cooling(const struct nfs4_server *st, const struct nfs4_file *f,
                    time_t now)
{
	uint64_t k = file_key(f);

	return st->cool[k % NFS4_COOL_SLOTS].key == k &&
	       now < st->cool[k % NFS4_COOL_SLOTS].until;
}

/* DELEG_MAX, or a quarter of the descriptors we may open if fewer: each
 * lease keeps one, and connections and the fd cache need theirs. */
static uint32_t deleg_max(void)
{
	static uint32_t max;
	struct rlimit r;

	if (!max) {
		max = DELEG_MAX;
		if (getrlimit(RLIMIT_NOFILE, &r) == 0 &&
		    r.rlim_cur != RLIM_INFINITY && r.rlim_cur / 4 < max)
			max = (uint32_t)(r.rlim_cur / 4);
	}
	return max;
}

static void count_held(struct nfs4_server *st, int by)
{
	__atomic_add_fetch(&st->ndelegs, (uint32_t)by, __ATOMIC_RELEASE);
}

static void lease_drop(struct nfs4_stid *s)
{
	if (s->lease) {
		s->lops->lease_end(s->lease);
		s->lease = NULL;
	}
}

/* The backend saw a change beside us start on the file of delegation id
 * (a local open for writing): every delegation of the file is recalled;
 * the change waits until they are back (or revoked). Runs on the
 * backend's thread. */
static void lease_broken(void *ctx, uint64_t id)
{
	struct nfs4_server *st = ctx;
	struct nfs4_stid *s;

	pthread_mutex_lock(&st->lock);
	s = nfs4_stid_by_id(st, id);
	if (s && s->deleg && !s->revoked) {
		log_info("nfs4: a delegated file is being changed beside "
		         "snfsd: recalling its delegations");
		nfs4_deleg_recall_locked(st, s->file, 0);
	}
	pthread_mutex_unlock(&st->lock);
}

/* Watch the file for changes beside us: a delegation goes only with a
 * watch (without one, a local write would leave the holder's cache
 * stale). */
static bool lease_take(struct nfs4_compound *c, struct nfs4_stid *d)
{
	static bool told;
	const struct bk_ops *ops = c->cfh.ex->ops;
	int rc = ops->lease(c->cfh.ex->bk, &c->cfh.bh, lease_broken, c->st,
	                    d->id, &d->lease);

	if (rc == -EACCES || rc == -EPERM || rc == -ENOSYS) {
		if (!told)
			log_warn("nfs4: cannot watch files for local changes "
			         "(%s; snfsd needs CAP_LEASE): no delegations "
			         "granted",
			         strerror(-rc));
		told = true;
	}
	if (rc)
		return false;
	d->lops = ops;
	return true;
}

bool nfs4_deleg_grant(struct nfs4_compound *c, struct nfs4_file *f,
                      struct nfs4_client *cl, struct nfs4_stateid *sid)
{
	struct nfs4_server *st = c->st;
	struct nfs_fh wire;
	struct nfs4_stid *d;

	if (st->ndelegs >= deleg_max() || cooling(st, f, nfs4_now()))
		return false;
	for (const struct nfs4_stid *s = f->stids; s; s = s->fnext) {
		if (s->deleg && s->cl == cl)
			return false; /* one per client and file */
		if (!s->lock && !s->deleg && (s->access & SHARE_WRITE))
			return false; /* somebody writes it */
	}
	if (!c->cfh.ex->ops->lease ||
	    nfs4_fh_to_wire(c, &c->cfh, &wire) != NFS4_OK)
		return false;
	d = nfs4_stid_new(st, cl, NULL, f, false);
	if (!d)
		return false;
	d->fh = malloc(sizeof(*d->fh));
	if (!d->fh || !lease_take(c, d)) {
		free(d->fh);
		d->fh = NULL;
		nfs4_stid_free(st, d); /* not yet counted: forget skips it */
		return false;
	}
	*d->fh = wire;
	d->deleg = true;
	d->access = SHARE_READ;
	count_held(st, 1);
	st->dstats.granted++;
	nfs4_stid_to_wire(st, d, sid);
	return true;
}

void nfs4_deleg_forget(struct nfs4_server *st, struct nfs4_stid *s)
{
	if (!s->fh)
		return; /* never counted (grant failed half way) */
	lease_drop(s);
	if (s->revoked) {
		s->cl->nrevoked--;
	} else {
		count_held(st, -1);
		if (s->recalled)
			st->nrecalling--;
	}
	free(s->fh);
	s->fh = NULL;
	pthread_cond_broadcast(&st->deleg_cv);
}

static void revoke(struct nfs4_server *st, struct nfs4_stid *s)
{
	log_warn("nfs4: client %016llx did not return a delegation within "
	         "%u s of its recall; revoked",
	         (unsigned long long)s->cl->clientid, st->lease);
	s->revoked = true;
	lease_drop(s); /* the change held back beside us goes on */
	count_held(st, -1);
	st->nrecalling--;
	s->cl->nrevoked++;
	st->dstats.revoked++;
	pthread_cond_broadcast(&st->deleg_cv);
}

/* CB_RECALL (RFC 8881 20.2): the stateid, truncate (never: we recall
 * read delegations only), and the file's handle. Queued even when the
 * back channel is down: it goes once the client binds one, and the
 * revocation clock runs either way. */
static void recall(struct nfs4_server *st, struct nfs4_stid *s, time_t now)
{
	struct nfs4_stateid sid;
	struct xdr_out body;

	nfs4_stid_to_wire(st, s, &sid);
	if (xdr_out_init(&body, 64 + s->fh->len, 64 + s->fh->len) == 0) {
		nfs4_put_stateid(&body, &sid);
		xdr_put_bool(&body, false);
		xdr_put_opaque(&body, s->fh->data, s->fh->len);
		if (!nfs4_cb_call(st, s->cl->clientid, OP_CB_RECALL, &body))
			log_info("nfs4: client %016llx has no back channel "
			         "to recall a delegation on",
			         (unsigned long long)s->cl->clientid);
		xdr_out_free(&body);
	}
	s->recalled = now ? now : 1;
	st->nrecalling++;
	st->dstats.recalled++;
}

bool nfs4_deleg_recall_locked(struct nfs4_server *st, struct nfs4_file *f,
                              uint64_t clientid)
{
	time_t now = nfs4_now();
	bool stands = false;

	for (struct nfs4_stid *s = f->stids; s; s = s->fnext) {
		if (!s->deleg || s->revoked)
			continue;
		if (s->cl->clientid == clientid) {
			/* The holder changes the file itself, through us: its
			 * cache stays right, so nothing waits; but the lease
			 * would hold our own change back, and without it a
			 * change beside us would go unseen: the delegation is
			 * recalled all the same, the change going on now. */
			lease_drop(s);
			if (!s->recalled)
				recall(st, s, now);
			continue;
		}
		if (!s->recalled) {
			recall(st, s, now);
		} else if (now - s->recalled > (time_t)st->lease) {
			revoke(st, s);
			continue;
		}
		stands = true;
	}
	if (stands)
		cool_set(st, f, now + DELEG_COOLDOWN);
	return stands;
}

void nfs4_deleg_sweep(struct nfs4_server *st)
{
	time_t now = nfs4_now();

	if (!st->nrecalling)
		return;
	for (struct nfs4_stid *s = st->stids; s; s = s->next)
		if (s->deleg && !s->revoked && s->recalled &&
		    now - s->recalled > (time_t)st->lease)
			revoke(st, s);
}

static bool none_held(struct nfs4_server *st)
{
	return !st || !__atomic_load_n(&st->ndelegs, __ATOMIC_ACQUIRE);
}

/* Recall the other clients' delegations of (fsid, bh) and wait up to
 * DELEG_WAIT_MS for them to come back: 0 once none stands in the way,
 * -EAGAIN otherwise. The wait spares the changer a retry (Linux's NFSv3
 * client waits 5 s after JUKEBOX) in the usual case, where the holder
 * returns a read delegation in a round trip; the bound on waiters keeps
 * worker threads free to take those DELEGRETURNs. */
static int deleg_break(struct nfs4_server *st, uint32_t fsid,
                       const struct bk_handle *bh, uint64_t clientid)
{
	struct timespec deadline;
	bool last = false;
	int rc = 0;

	if (none_held(st))
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_nsec += DELEG_WAIT_MS * 1000000L;
	deadline.tv_sec += deadline.tv_nsec / 1000000000L;
	deadline.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&st->lock);
	for (;;) {
		/* f goes when its last stateid does: looked up anew */
		struct nfs4_file *f = nfs4_file_lookup(st, fsid, bh, false);

		if (!f || !nfs4_deleg_recall_locked(st, f, clientid))
			break;
		if (last || st->deleg_waiters >= DELEG_WAITERS_MAX) {
			rc = -EAGAIN;
			break;
		}
		st->deleg_waiters++;
		last = pthread_cond_timedwait(&st->deleg_cv, &st->lock,
		                              &deadline) == ETIMEDOUT;
		st->deleg_waiters--;
	}
	pthread_mutex_unlock(&st->lock);
	return rc;
}

static struct nfs4_server *nfs4_of(struct snfsd *s)
{
	return __atomic_load_n(&s->nfs4, __ATOMIC_ACQUIRE);
}

int nfs4_deleg_break(struct snfsd *s, const struct export *ex,
                     const struct bk_handle *bh)
{
	return deleg_break(nfs4_of(s), ex->fsid, bh, 0);
}

/* deleg_break for the object name in dir, when it is a regular file. */
static int break_name(struct nfs4_server *st, const struct export *ex,
                      const struct bk_cred *cred, const struct bk_handle *dir,
                      const char *name, uint64_t clientid)
{
	struct bk_handle h;
	struct bk_attr a;

	if (none_held(st) || ex->ops->lookup(ex->bk, cred, dir, name, &h, &a) ||
	    a.type != BK_REG)
		return 0;
	return deleg_break(st, ex->fsid, &h, clientid);
}

int nfs4_deleg_break_name(struct snfsd *s, const struct export *ex,
                          const struct bk_cred *cred,
                          const struct bk_handle *dir, const char *name)
{
	return break_name(nfs4_of(s), ex, cred, dir, name, 0);
}

uint32_t nfs4_deleg_conflict(struct nfs4_compound *c,
                             const struct bk_handle *bh)
{
	if (c->cfh.kind != FH4_EXPORT)
		return NFS4_OK;
	return deleg_break(c->st, c->cfh.ex->fsid, bh, c->clientid)
	           ? NFS4ERR_DELAY
	           : NFS4_OK;
}

uint32_t nfs4_deleg_conflict_name(struct nfs4_compound *c,
                                  const struct nfs4_fh *dir, const char *name)
{
	if (dir->kind != FH4_EXPORT)
		return NFS4_OK;
	return break_name(c->st, dir->ex, &dir->cred, &dir->bh, name,
	                  c->clientid)
	           ? NFS4ERR_DELAY
	           : NFS4_OK;
}

/* open_delegation4 of an OPEN's reply: OPEN_DELEGATE_READ with its
 * stateid, recall false, and an ACE that grants nothing beyond what the
 * client checks with ACCESS anyway (as Linux nfsd sends). */
void nfs4_deleg_put(struct xdr_out *x, const struct nfs4_open_res *r)
{
	if (!r->deleg) {
		xdr_put_u32(x, 0); /* OPEN_DELEGATE_NONE */
		return;
	}
	xdr_put_u32(x, 1); /* OPEN_DELEGATE_READ */
	nfs4_put_stateid(x, &r->dsid);
	xdr_put_bool(x, false);
	xdr_put_u32(x, ACE4_ACCESS_ALLOWED_ACE_TYPE);
	xdr_put_u32(x, 0); /* flag */
	xdr_put_u32(x, 0); /* access mask */
	xdr_put_u32(x, 0); /* who: "" */
}

/* CLAIM_DELEGATE_CUR, CLAIM_DELEG_CUR_FH: the client opens, on the
 * server, a file it opened locally under its delegation sid (a recall
 * makes it do so before DELEGRETURN). The delegation must be its own and
 * of the current file (nfs4_stid_lookup refuses another client's). */
uint32_t nfs4_deleg_claim_check(struct nfs4_compound *c,
                                const struct nfs4_stateid *sid)
{
	struct nfs4_stid *s;
	uint32_t st;

	pthread_mutex_lock(&c->st->lock);
	st = nfs4_stid_lookup(c, sid, &s);
	if (!st && (!s->deleg || !nfs4_stid_on_cfh(c, s)))
		st = NFS4ERR_BAD_STATEID;
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

uint32_t nfs4_op_delegreturn(struct nfs4_compound *c)
{
	struct nfs4_stateid sid;
	struct nfs4_stid *s;
	uint32_t st;

	if (!nfs4_get_stateid(c->args, &sid))
		return NFS4ERR_BADXDR;
	st = nfs4_need_export(c);
	if (!st)
		st = nfs4_resolve_stateid(c, &sid);
	if (st)
		return st;
	pthread_mutex_lock(&c->st->lock);
	st = nfs4_stid_lookup(c, &sid, &s);
	if (!st && (!s->deleg || !nfs4_stid_on_cfh(c, s)))
		st = NFS4ERR_BAD_STATEID;
	if (!st) {
		s->cl->renewed = nfs4_now();
		c->st->dstats.returned++;
		nfs4_stid_free(c->st, s);
	}
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

/* We keep no delegation across a restart, so there is none to purge
 * (RFC 7530 16.5: NOTSUPP without CLAIM_DELEGATE_PREV). */
uint32_t nfs4_op_delegpurge(struct nfs4_compound *c)
{
	uint64_t clientid;

	if (!xdr_get_u64(c->args, &clientid))
		return NFS4ERR_BADXDR;
	return NFS4ERR_NOTSUPP;
}

void nfs4_deleg_stats(struct nfs4_server *st, struct nfs4_deleg_stats *out)
{
	pthread_mutex_lock(&st->lock);
	*out = st->dstats;
	out->held = st->ndelegs;
	pthread_mutex_unlock(&st->lock);
}
