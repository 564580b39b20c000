/* NFSv3 (NLM) byte-range locks, kept beside the NFSv4 ones on the same
 * nfs4_file and under the same mutex, so that each protocol's locks
 * conflict with the other's (stateid.c asks nfs4_nlm_conflict; the
 * functions here walk the file's NFSv4 lock stateids).
 *
 * An owner is (caller_name, svid, oh) as the client sends it; within one
 * owner POSIX rules apply (a new range replaces what it overlaps, unlock
 * cuts). A blocked request waits on its file, oldest first, and is
 * granted when the bytes come free (nfs4_nlm_wake, called wherever a
 * lock goes away); the entry then stays, marked granted, until the
 * client has heard of it (the call back succeeded or it asked again), so
 * that a CANCEL arriving in between releases the lock instead of leaving
 * it with an owner that believes it never got it. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/nfs4/state_int.h"
#include "server/nlm/nlm.h"
#include "util/log.h"

/* Linux asks again every 30 s while it waits; an entry three retries old
 * belongs to a client that went away. */
#define NLM_WAIT_STALE 95
/* Bounds on what clients can make the server keep. */
#define NLM_MAX_OWNERS 65536
#define NLM_MAX_WAITS 4096

struct nfs4_nlm_wait {
	struct nfs4_nlm_wait *next;
	struct nlm_grant *g; /* the request, and the call back to make */
	uint64_t start, end;
	time_t asked; /* last LOCK for it (monotonic seconds) */
	bool granted;
};

static bool same_owner(const struct nfs4_nlm_owner *o, const char *host,
                       int32_t svid, const uint8_t *oh, uint32_t ohlen)
{
	return o->svid == svid && o->ohlen == ohlen &&
	       !memcmp(o->oh, oh, ohlen) && !strcmp(o->host, host);
}

static struct nfs4_nlm_owner *owner_find(const struct nfs4_file *f,
                                         const struct nlm_req *r)
{
	for (struct nfs4_nlm_owner *o = f->nlm; o; o = o->next)
		if (same_owner(o, r->host, r->svid, r->oh, r->ohlen))
			return o;
	return NULL;
}

static struct nfs4_nlm_owner *
owner_new(struct nfs4_server *st, struct nfs4_file *f, const struct nlm_req *r)
{
	struct nfs4_nlm_owner *o;

	if (st->nlm_owners >= NLM_MAX_OWNERS)
		return NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->host = strdup(r->host);
	o->oh = malloc(r->ohlen ? r->ohlen : 1);
	if (!o->host || !o->oh) {
		free(o->host);
		free(o->oh);
		free(o);
		return NULL;
	}
	memcpy(o->oh, r->oh, r->ohlen);
	if (r->peer)
		o->peer = *r->peer;
	o->ohlen = r->ohlen;
	o->svid = r->svid;
	o->next = f->nlm;
	f->nlm = o;
	st->nlm_owners++;
	return o;
}

/* Free o if it holds nothing any more. */
static void owner_put(struct nfs4_server *st, struct nfs4_file *f,
                      struct nfs4_nlm_owner *o)
{
	if (o->ranges)
		return;
	for (struct nfs4_nlm_owner **pp = &f->nlm; *pp; pp = &(*pp)->next)
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	free(o->host);
	free(o->oh);
	free(o);
	st->nlm_owners--;
}

static bool overlaps(const struct nfs4_range *g, uint64_t start, uint64_t end,
                     bool write)
{
	return g->start <= end && start <= g->end && (write || g->write);
}

const struct nfs4_range *nfs4_nlm_conflict(const struct nfs4_file *f,
                                           const struct nfs4_nlm_owner *self,
                                           uint64_t start, uint64_t end,
                                           bool write,
                                           const struct nfs4_nlm_owner **owner)
{
	for (const struct nfs4_nlm_owner *o = f->nlm; o; o = o->next) {
		if (o == self)
			continue;
		for (const struct nfs4_range *g = o->ranges; g; g = g->next)
			if (overlaps(g, start, end, write)) {
				*owner = o;
				return g;
			}
	}
	return NULL;
}

/* Whether anyone but self (NLM owner; NULL: nobody) holds bytes that
 * conflict with [start, end]; if so and h is given, who. */
static bool conflict(const struct nfs4_file *f,
                     const struct nfs4_nlm_owner *self, uint64_t start,
                     uint64_t end, bool write, struct nlm_holder *h)
{
	const struct nfs4_nlm_owner *o;
	const struct nfs4_range *g = NULL;

	for (const struct nfs4_stid *s = f->stids; s && !g; s = s->fnext) {
		if (!s->lock)
			continue;
		for (g = s->ranges; g; g = g->next)
			if (overlaps(g, start, end, write))
				break;
		if (g && h) { /* an NFSv4 owner: svid 0, its owner bytes */
			h->svid = 0;
			h->ohlen = s->owner->len < NLM_MAXNETOBJ
			               ? s->owner->len
			               : NLM_MAXNETOBJ;
			memcpy(h->oh, s->owner->data, h->ohlen);
		}
	}
	if (!g) {
		g = nfs4_nlm_conflict(f, self, start, end, write, &o);
		if (g && h) {
			h->svid = o->svid;
			h->ohlen = o->ohlen;
			memcpy(h->oh, o->oh, o->ohlen);
		}
	}
	if (g && h) {
		h->write = g->write;
		h->start = g->start;
		h->end = g->end;
	}
	return g != NULL;
}

static bool same_request(const struct nfs4_nlm_wait *w, const struct nlm_req *r)
{
	const struct nlm_grant *g = w->g;

	return w->start == r->start && w->end == r->end &&
	       g->write == r->write && g->svid == r->svid &&
	       g->ohlen == r->ohlen && !memcmp(g->oh, r->oh, r->ohlen) &&
	       !strcmp(g->host, r->host);
}

static struct nfs4_nlm_wait **wait_find(struct nfs4_file *f,
                                        const struct nlm_req *r)
{
	struct nfs4_nlm_wait **pp;

	for (pp = &f->waiting; *pp; pp = &(*pp)->next)
		if (same_request(*pp, r))
			return pp;
	return NULL;
}

static void wait_unlink(struct nfs4_server *st, struct nfs4_nlm_wait **pp)
{
	struct nfs4_nlm_wait *w = *pp;

	*pp = w->next;
	free(w->g);
	free(w);
	st->nlm_waits--;
}

static uint32_t wait_add(struct nfs4_server *st, struct nfs4_file *f,
                         const struct nlm_req *r, const struct nlm_grant *g)
{
	struct nfs4_nlm_wait *w, **pp;

	if (st->nlm_waits >= NLM_MAX_WAITS)
		return NLM4_DENIED_NOLOCKS;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->g = malloc(sizeof(*g)))) {
		free(w);
		return NLM4_DENIED_NOLOCKS;
	}
	*w->g = *g;
	w->g->next = NULL;
	/* The waiting owner is the request's, whatever the caller filled. */
	snprintf(w->g->host, sizeof(w->g->host), "%s", r->host);
	w->g->svid = r->svid;
	w->g->ohlen = r->ohlen;
	memcpy(w->g->oh, r->oh, r->ohlen);
	w->g->write = r->write;
	if (r->peer && r->peer->ss_family != w->g->peer.ss_family) {
		w->g->peer = *r->peer;
		w->g->peer_len = r->peer->ss_family == AF_INET6
		                     ? sizeof(struct sockaddr_in6)
		                     : sizeof(struct sockaddr_in);
	}
	w->g->id = nfs4_new_id(st);
	w->g->fsid = f->fsid;
	w->g->bh = f->bh;
	w->start = r->start;
	w->end = r->end;
	w->asked = nfs4_now();
	for (pp = &f->waiting; *pp; pp = &(*pp)->next)
		;
	*pp = w;
	st->nlm_waits++;
	return NLM4_BLOCKED;
}

uint32_t nfs4_nlm_test(struct nfs4_server *st, uint32_t fsid,
                       const struct bk_handle *bh, const struct nlm_req *req,
                       struct nlm_holder *holder)
{
	struct nfs4_file *f;
	uint32_t rc = NLM4_GRANTED;

	pthread_mutex_lock(&st->lock);
	f = nfs4_file_lookup(st, fsid, bh, false);
	if (f && conflict(f, owner_find(f, req), req->start, req->end,
	                  req->write, holder))
		rc = NLM4_DENIED;
	pthread_mutex_unlock(&st->lock);
	return rc;
}

/* The host of req in the record of lock holders, on stable storage
 * before its lock is granted (a restart must be able to tell it). */
static void record_host(struct nfs4_server *st, const struct nlm_req *req)
{
	char key[2 * (2 * 64 + 2) + 1];

	if (req->peer &&
	    nlm_host_key(req->peer, req->local, key, sizeof(key)) &&
	    !nfs4_record_has(&st->nlm_hosts, key))
		nfs4_record_add(&st->nlm_hosts, key);
}

/* Give req's owner its bytes (no conflict checked). */
static uint32_t take(struct nfs4_server *st, struct nfs4_file *f,
                     struct nfs4_nlm_owner *o, const struct nlm_req *req)
{
	record_host(st, req);
	if (!o)
		o = owner_new(st, f, req);
	if (!o)
		return NLM4_DENIED_NOLOCKS;
	if (nfs4_range_set(&o->ranges, req->start, req->end, false,
	                   req->write)) {
		owner_put(st, f, o);
		return NLM4_DENIED_NOLOCKS;
	}
	return NLM4_GRANTED;
}

uint32_t nfs4_nlm_lock(struct nfs4_server *st, uint32_t fsid,
                       const struct bk_handle *bh, const struct nlm_req *req,
                       const struct nlm_grant *wait)
{
	struct nfs4_nlm_wait **pp;
	struct nfs4_nlm_owner *o;
	struct nfs4_file *f;
	uint32_t rc;

	pthread_mutex_lock(&st->lock);
	f = nfs4_file_lookup(st, fsid, bh, true);
	if (!f) {
		pthread_mutex_unlock(&st->lock);
		return NLM4_DENIED_NOLOCKS;
	}
	o = owner_find(f, req);
	pp = wait_find(f, req);
	if (!conflict(f, o, req->start, req->end, req->write, NULL)) {
		/* Asked again for one granted while it waited: it knows. */
		if (pp)
			wait_unlink(st, pp);
		rc = take(st, f, o, req);
	} else if (pp) {
		(*pp)->asked = nfs4_now();
		rc = NLM4_BLOCKED;
	} else {
		rc = wait ? wait_add(st, f, req, wait) : NLM4_DENIED;
	}
	if (rc == NLM4_GRANTED && !req->write)
		nfs4_nlm_wake(st, f); /* a downgrade lets readers in */
	nfs4_file_put(st, f);
	pthread_mutex_unlock(&st->lock);
	return rc;
}

/* Clear [start, end] of o's locks and let waiting requests in. */
static void release(struct nfs4_server *st, struct nfs4_file *f,
                    struct nfs4_nlm_owner *o, uint64_t start, uint64_t end)
{
	/* Unlocking only cuts ranges: a split that cannot allocate keeps
	 * more locked than asked, never less; say so. */
	if (nfs4_range_set(&o->ranges, start, end, true, false))
		log_warn("nlm: out of memory splitting a lock of %s", o->host);
	owner_put(st, f, o);
	nfs4_nlm_wake(st, f);
}

uint32_t nfs4_nlm_unlock(struct nfs4_server *st, uint32_t fsid,
                         const struct bk_handle *bh, const struct nlm_req *req)
{
	struct nfs4_nlm_owner *o;
	struct nfs4_file *f;

	pthread_mutex_lock(&st->lock);
	f = nfs4_file_lookup(st, fsid, bh, false);
	if (f && (o = owner_find(f, req))) {
		release(st, f, o, req->start, req->end);
		nfs4_file_put(st, f);
	}
	pthread_mutex_unlock(&st->lock);
	return NLM4_GRANTED;
}

uint32_t nfs4_nlm_cancel(struct nfs4_server *st, uint32_t fsid,
                         const struct bk_handle *bh, const struct nlm_req *req)
{
	struct nfs4_nlm_wait **pp;
	struct nfs4_nlm_owner *o;
	struct nfs4_file *f;
	bool granted;

	pthread_mutex_lock(&st->lock);
	f = nfs4_file_lookup(st, fsid, bh, false);
	pp = f ? wait_find(f, req) : NULL;
	if (pp) {
		granted = (*pp)->granted;
		wait_unlink(st, pp);
		if (granted && (o = owner_find(f, req)))
			release(st, f, o, req->start, req->end);
		nfs4_file_put(st, f);
	}
	pthread_mutex_unlock(&st->lock);
	/* XNFS: CANCEL of a request the server does not hold is DENIED. */
	return pp ? NLM4_GRANTED : NLM4_DENIED;
}

void nfs4_nlm_granted(struct nfs4_server *st, const struct nlm_grant *g)
{
	struct nfs4_nlm_wait **pp;
	struct nfs4_file *f;

	pthread_mutex_lock(&st->lock);
	f = nfs4_file_lookup(st, g->fsid, &g->bh, false);
	for (pp = f ? &f->waiting : NULL; pp && *pp; pp = &(*pp)->next)
		if ((*pp)->granted && (*pp)->g->id == g->id) {
			wait_unlink(st, pp);
			nfs4_file_put(st, f);
			break;
		}
	pthread_mutex_unlock(&st->lock);
}

void nfs4_nlm_wake(struct nfs4_server *st, struct nfs4_file *f)
{
	struct nfs4_nlm_wait **pp = &f->waiting, *w;
	time_t now = nfs4_now();
	struct nlm_req r;

	while ((w = *pp)) {
		if (now - w->asked > NLM_WAIT_STALE) {
			wait_unlink(st, pp); /* the lock, if granted, stays */
			continue;
		}
		r = (struct nlm_req){.peer = &w->g->peer,
		                     .local = &w->g->local,
		                     .host = w->g->host,
		                     .svid = w->g->svid,
		                     .oh = w->g->oh,
		                     .ohlen = w->g->ohlen,
		                     .start = w->start,
		                     .end = w->end,
		                     .write = w->g->write};
		if (!w->granted &&
		    !conflict(f, owner_find(f, &r), r.start, r.end, r.write,
		              NULL) &&
		    take(st, f, owner_find(f, &r), &r) == NLM4_GRANTED) {
			struct nlm_grant *cb = malloc(sizeof(*cb));

			w->granted = true;
			if (cb) {
				*cb = *w->g;
				nlm_cb_queue(st->srv, cb);
			}
		}
		pp = &w->next;
	}
	nfs4_cb_lock_wake(st, f); /* and the NFSv4.1 waiters */
}

/* The same host address (ports aside; IPv4 and its IPv6-mapped form
 * alike). */
static bool same_addr(const struct sockaddr_storage *a,
                      const struct sockaddr_storage *b)
{
	struct in6_addr x, y;

	if (a->ss_family == AF_INET && b->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	for (int i = 0; i < 2; i++) {
		const struct sockaddr_storage *s = i ? b : a;
		struct in6_addr *out = i ? &y : &x;

		if (s->ss_family == AF_INET6) {
			*out = ((const struct sockaddr_in6 *)s)->sin6_addr;
		} else if (s->ss_family == AF_INET) {
			memset(out, 0, sizeof(*out));
			out->s6_addr[10] = out->s6_addr[11] = 0xff;
			memcpy(&out->s6_addr[12],
			       &((const struct sockaddr_in *)s)->sin_addr, 4);
		} else {
			return false;
		}
	}
	return !memcmp(&x, &y, sizeof(x));
}

unsigned nfs4_nlm_free_host(struct nfs4_server *st, const char *host,
                            const struct sockaddr_storage *peer)
{
	unsigned n = 0;

	pthread_mutex_lock(&st->lock);
	for (struct nfs4_file *f = st->files, *next; f; f = next) {
		struct nfs4_nlm_wait **pp = &f->waiting;
		struct nfs4_nlm_owner *o, *on;

		next = f->next;
		while (*pp)
			if ((!host || !strcasecmp((*pp)->g->host, host)) &&
			    same_addr(&(*pp)->g->peer, peer))
				wait_unlink(st, pp);
			else
				pp = &(*pp)->next;
		for (o = f->nlm; o; o = on) {
			on = o->next;
			if ((!host || !strcasecmp(o->host, host)) &&
			    same_addr(&o->peer, peer)) {
				release(st, f, o, 0, UINT64_MAX);
				n++;
			}
		}
		nfs4_file_put(st, f);
	}
	pthread_mutex_unlock(&st->lock);
	return n;
}

void nfs4_nlm_free_all(struct nfs4_server *st)
{
	for (struct nfs4_file *f = st->files, *next; f; f = next) {
		next = f->next;
		while (f->waiting)
			wait_unlink(st, &f->waiting);
		while (f->nlm) {
			nfs4_ranges_free(f->nlm->ranges);
			f->nlm->ranges = NULL;
			owner_put(st, f, f->nlm);
		}
		nfs4_file_put(st, f);
	}
}

void nfs4_nlm_record_load(struct nfs4_server *st, const char *state_dir)
{
	char path[4096] = "";
	time_t end;

	if (state_dir)
		snprintf(path, sizeof(path), "%s/nlm.hosts", state_dir);
	if (nfs4_record_open(&st->nlm_hosts, state_dir ? path : NULL,
	                     &st->nlm_notify, &st->nnlm_notify))
		log_warn("nlm: cannot open %s: NFSv3 clients will not be told "
		         "of a restart",
		         path);
	if (!st->nnlm_notify)
		return;
	end = nfs4_now() + st->lease;
	if (end > st->grace_end)
		st->grace_end = end;
	st->nlm_grace = true;
	log_info("nlm: grace period of %us for %zu NFSv3 client host(s) to "
	         "reclaim their locks",
	         st->lease, st->nnlm_notify);
}

void nfs4_nlm_take_notify(struct nfs4_server *st, char ***names, size_t *n)
{
	pthread_mutex_lock(&st->lock);
	*names = st->nlm_notify;
	*n = st->nnlm_notify;
	st->nlm_notify = NULL;
	st->nnlm_notify = 0;
	pthread_mutex_unlock(&st->lock);
}

void nfs4_nlm_forget_host(struct nfs4_server *st, const char *key)
{
	pthread_mutex_lock(&st->lock);
	nfs4_record_remove(&st->nlm_hosts, key, false);
	pthread_mutex_unlock(&st->lock);
}
