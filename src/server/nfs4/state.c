/* NFSv4 clients, sessions, leases and grace.
 *
 * 4.0 (RFC 7530 16.33-16.34, 9.5): SETCLIENTID, SETCLIENTID_CONFIRM,
 * RENEW. 4.1 (RFC 8881 18.35-18.51): EXCHANGE_ID, CREATE_SESSION,
 * DESTROY_SESSION, DESTROY_CLIENTID, SEQUENCE with a slot table and a
 * reply cache, BIND_CONN_TO_SESSION, RECLAIM_COMPLETE.
 *
 * Leases are checked lazily: at most once a second a COMPOUND sweeps out
 * clients that have not renewed for a lease period. A grace period after
 * a restart lets the clients named in the state directory's record
 * reclaim their opens and locks. The back channel is callback.c's, the
 * read delegations deleg.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/nfs4/state_int.h"
#include "server/nlm/nlm.h"
#include "server/snfsd.h"
#include "util/log.h"

#define LEASE_DEFAULT 30
#define RECORD_FILE "nfs4_clients"
#define SLOT_CACHE_SMALL 2048 /* replies this small are always kept */
#define MAX_REQ (NFS4_MAXIO + 64 * 1024)
#define MAX_RESP (NFS4_MAXIO + 64 * 1024)
#define MAX_RESP_CACHED (64 * 1024)
#define MIN_RESP 80 /* RPC header + an empty-tag SEQUENCE reply */

enum {
	EXCHGID4_FLAG_SUPP_MOVED_REFER = 0x1,
	EXCHGID4_FLAG_SUPP_MOVED_MIGR = 0x2,
	EXCHGID4_FLAG_BIND_PRINC_STATEID = 0x100,
	EXCHGID4_FLAG_USE_NON_PNFS = 0x10000,
	EXCHGID4_FLAG_UPD_CONFIRMED_REC_A = 0x40000000,
	EXCHGID4_FLAG_CONFIRMED_R = 0x80000000,
};

time_t nfs4_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

uint64_t nfs4_new_id(struct nfs4_server *st)
{
	return ++st->next_id;
}

/* ---- the record of clients granted state (grace after restart) ---- */

static void hex_encode(const uint8_t *p, size_t n, char *out)
{
	static const char hx[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hx[p[i] >> 4];
		out[2 * i + 1] = hx[p[i] & 15];
	}
	out[2 * n] = 0;
}

static bool in_reclaim_list(const struct nfs4_server *st, const char *hex)
{
	for (size_t i = 0; i < st->nreclaim; i++)
		if (st->reclaim[i] && !strcmp(st->reclaim[i], hex))
			return true;
	return false;
}

/* Whether a confirmed client (of any minor version) has this owner. */
static bool owner_confirmed(const struct nfs4_server *st, const uint8_t *owner,
                            size_t len)
{
	for (const struct nfs4_client *cl = st->clients; cl; cl = cl->next)
		if (cl->confirmed && cl->ownerlen == len &&
		    !memcmp(cl->owner, owner, len))
			return true;
	return false;
}

static bool hex_decode(const char *hex, uint8_t *out, size_t *len)
{
	size_t n = strlen(hex);

	if (n % 2 || n / 2 > NFS4_OPAQUE_LIMIT)
		return false;
	for (size_t i = 0; i < n; i += 2) {
		char b[3] = {hex[i], hex[i + 1], 0};
		out[i / 2] = (uint8_t)strtoul(b, NULL, 16);
	}
	*len = n / 2;
	return true;
}

/* A confirmed client went (cl, already unlinked): its owner leaves the
 * record unless another confirmed client has it or, in grace, the
 * previous instance's client of that name may still reclaim. durable:
 * see clientrec.h (only a client that destroyed itself holds no state). */
static void record_forget(struct nfs4_server *st, const struct nfs4_client *cl,
                          bool durable)
{
	char hex[2 * NFS4_OPAQUE_LIMIT + 1];

	if (owner_confirmed(st, cl->owner, cl->ownerlen))
		return;
	hex_encode(cl->owner, cl->ownerlen, hex);
	if (nfs4_grace_locked(st) && in_reclaim_list(st, hex))
		return;
	nfs4_record_remove(&st->record, hex, durable);
}

/* Grace ended with clients of the previous instance not back: their
 * lines go, synced, before anything that might conflict with their old
 * state is granted (RFC 8881 8.4.3). */
static void record_grace_over(struct nfs4_server *st)
{
	uint8_t owner[NFS4_OPAQUE_LIMIT];
	size_t len;

	for (size_t i = 0; i < st->nreclaim; i++)
		if (st->reclaim[i] && hex_decode(st->reclaim[i], owner, &len) &&
		    !owner_confirmed(st, owner, len))
			nfs4_record_remove(&st->record, st->reclaim[i], true);
}

void nfs4_client_record(struct nfs4_server *st, struct nfs4_client *cl)
{
	char hex[2 * NFS4_OPAQUE_LIMIT + 1];

	if (cl->recorded)
		return;
	hex_encode(cl->owner, cl->ownerlen, hex);
	nfs4_record_add(&st->record, hex); /* writes only if not there */
	cl->recorded = true;
}

static void record_load(struct nfs4_server *st, const char *path)
{
	nfs4_record_open(&st->record, path, &st->reclaim, &st->nreclaim);
	if (st->nreclaim) {
		st->grace_end = nfs4_now() + st->lease;
		log_info("nfs4: grace period of %us for %zu client(s)",
		         st->lease, st->nreclaim);
	}
}

bool nfs4_grace_locked(struct nfs4_server *st)
{
	if (st->grace_end && nfs4_now() >= st->grace_end) {
		st->grace_end = 0;
		st->nlm_grace = false;
		log_info("nfs4: grace period over");
		record_grace_over(st);
	}
	return st->grace_end != 0;
}

bool nfs4_in_grace(struct nfs4_server *st)
{
	bool g;

	pthread_mutex_lock(&st->lock);
	g = nfs4_grace_locked(st);
	pthread_mutex_unlock(&st->lock);
	return g;
}

/* A reclaiming client is done (RECLAIM_COMPLETE): end grace early when
 * every client of the record is. */
static void reclaim_done(struct nfs4_server *st, struct nfs4_client *cl)
{
	char hex[2 * NFS4_OPAQUE_LIMIT + 1];
	bool left = false;

	hex_encode(cl->owner, cl->ownerlen, hex);
	for (size_t i = 0; i < st->nreclaim; i++) {
		if (st->reclaim[i] && !strcmp(st->reclaim[i], hex)) {
			free(st->reclaim[i]);
			st->reclaim[i] = NULL;
		}
		left |= st->reclaim[i] != NULL;
	}
	if (!left && st->grace_end && !st->nlm_grace) {
		st->grace_end = 0;
		log_info("nfs4: every client reclaimed; grace period over");
	}
}

/* ---- server ---- */

/* Waits on it are bounded in nfs4_now()'s clock (deleg.c). */
static void cond_init_monotonic(pthread_cond_t *cv)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
}

static struct nfs4_server *server_new(struct snfsd *s)
{
	struct nfs4_server *st = calloc(1, sizeof(*st));
	const char *env = getenv("SNFSD_NFS4_LEASE");

	if (!st)
		return NULL;
	pthread_mutex_init(&st->lock, NULL);
	cond_init_monotonic(&st->deleg_cv);
	st->srv = s;
	st->lease = LEASE_DEFAULT;
	if (env && atoi(env) >= 2 && atoi(env) <= 3600)
		st->lease = (uint32_t)atoi(env);
	{
		/* Differs between two starts even within one second, so a
		 * stateid or clientid of the last instance is never ours. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		st->epoch = (uint32_t)((uint64_t)ts.tv_sec * 1000000u +
		                       (uint64_t)ts.tv_nsec / 1000u);
	}
	st->last_sweep = nfs4_now();
	if (s->cfg.state_dir) {
		char path[BK_PATH_MAX + sizeof(RECORD_FILE) + 2];

		snprintf(path, sizeof(path), "%s/%s", s->cfg.state_dir,
		         RECORD_FILE);
		record_load(st, path);
	} else {
		record_load(st, NULL);
	}
	nfs4_nlm_record_load(st, s->cfg.state_dir);
	return st;
}

struct nfs4_server *nfs4_server_get(struct snfsd *s)
{
	struct nfs4_server *st = __atomic_load_n(&s->nfs4, __ATOMIC_ACQUIRE);
	struct nfs4_server *expect = NULL;

	if (st)
		return st;
	st = server_new(s);
	if (!st)
		return NULL;
	if (!__atomic_compare_exchange_n(&s->nfs4, &expect, st, false,
	                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		nfs4_server_free(st);
		return expect;
	}
	return st;
}

static void session_free(struct nfs4_session *ses)
{
	nfs4_cb_unbind(ses);
	for (uint32_t i = 0; i < ses->nslots; i++)
		free(ses->slots[i].reply);
	free(ses);
}

/* Unlink a session from its client; freed now or when the last COMPOUND
 * running on it ends. */
static void session_kill(struct nfs4_session *ses)
{
	ses->dead = true;
	ses->cl = NULL;
	if (ses->refs == 0)
		session_free(ses);
}

static void client_free(struct nfs4_server *st, struct nfs4_client *cl)
{
	struct nfs4_session *ses, *sn;

	nfs4_client_drop_state(st, cl);
	for (ses = cl->sessions; ses; ses = sn) {
		sn = ses->next;
		session_kill(ses);
	}
	while (cl->owners) {
		struct nfs4_owner *o = cl->owners;
		cl->owners = o->next;
		nfs4_owner_free(o);
	}
	free(cl->owner);
	free(cl->cs_reply);
	free(cl);
}

static void client_unlink(struct nfs4_server *st, struct nfs4_client *cl)
{
	for (struct nfs4_client **pp = &st->clients; *pp; pp = &(*pp)->next)
		if (*pp == cl) {
			*pp = cl->next;
			break;
		}
}

/* durable: whether the record's removal of a confirmed client must be
 * synced (record_forget). */
static void client_destroy(struct nfs4_server *st, struct nfs4_client *cl,
                           bool durable)
{
	client_unlink(st, cl);
	if (cl->confirmed)
		record_forget(st, cl, durable);
	client_free(st, cl);
}

void nfs4_server_free(struct nfs4_server *st)
{
	if (!st)
		return;
	nfs4_nlm_free_all(st);
	while (st->clients) {
		struct nfs4_client *cl = st->clients;
		st->clients = cl->next;
		client_free(st, cl);
	}
	for (size_t i = 0; i < st->nreclaim; i++)
		free(st->reclaim[i]);
	free(st->reclaim);
	nfs4_record_close(&st->record);
	nfs4_record_close(&st->nlm_hosts);
	for (size_t i = 0; i < st->nnlm_notify; i++)
		free(st->nlm_notify[i]);
	free(st->nlm_notify);
	pthread_cond_destroy(&st->deleg_cv);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

uint32_t nfs4_lease_time(const struct nfs4_server *st)
{
	return st->lease;
}

static bool client_busy(const struct nfs4_client *cl)
{
	for (struct nfs4_session *s = cl->sessions; s; s = s->next)
		if (s->refs)
			return true;
	return false;
}

void nfs4_state_sweep(struct nfs4_server *st)
{
	time_t now = nfs4_now();
	struct nfs4_client *cl, *next;

	/* Cheap check first: most COMPOUNDs come within the same second. */
	if (now - __atomic_load_n(&st->last_sweep, __ATOMIC_RELAXED) < 1)
		return;
	pthread_mutex_lock(&st->lock);
	if (now - st->last_sweep < 1) {
		pthread_mutex_unlock(&st->lock);
		return;
	}
	__atomic_store_n(&st->last_sweep, now, __ATOMIC_RELAXED);
	for (cl = st->clients; cl; cl = next) {
		next = cl->next;
		if (now - cl->renewed <= (time_t)st->lease || client_busy(cl))
			continue;
		log_info("nfs4: client %016llx lease expired; its state is "
		         "freed",
		         (unsigned long long)cl->clientid);
		client_destroy(st, cl, true);
	}
	nfs4_deleg_sweep(st);
	pthread_mutex_unlock(&st->lock);
}

/* ---- clients ---- */

struct nfs4_client *nfs4_client_find(struct nfs4_server *st, uint64_t id,
                                     bool confirmed_only)
{
	for (struct nfs4_client *cl = st->clients; cl; cl = cl->next)
		if (cl->clientid == id && (cl->confirmed || !confirmed_only))
			return cl;
	return NULL;
}

static uint32_t clientid_error(const struct nfs4_server *st, uint64_t id)
{
	/* From another instance: STALE; ours but gone: EXPIRED. */
	return (uint32_t)(id >> 32) == st->epoch ? NFS4ERR_EXPIRED
	                                         : NFS4ERR_STALE_CLIENTID;
}

uint32_t nfs4_client_of(struct nfs4_compound *c, uint64_t clientid,
                        struct nfs4_client **out)
{
	struct nfs4_client *cl;

	if (c->minor > 0)
		clientid = c->clientid;
	cl = nfs4_client_find(c->st, clientid, true);
	if (!cl)
		return c->minor > 0 ? NFS4ERR_BADSESSION
		                    : clientid_error(c->st, clientid);
	cl->renewed = nfs4_now();
	*out = cl;
	return NFS4_OK;
}

static struct nfs4_client *client_by_owner(struct nfs4_server *st,
                                           const uint8_t *p, uint32_t n,
                                           bool confirmed, uint32_t minor)
{
	for (struct nfs4_client *cl = st->clients; cl; cl = cl->next)
		if (cl->confirmed == confirmed && cl->ownerlen == n &&
		    (cl->minor > 0) == (minor > 0) && !memcmp(cl->owner, p, n))
			return cl;
	return NULL;
}

static struct nfs4_client *client_new(struct nfs4_server *st,
                                      const uint8_t *owner, uint32_t n,
                                      const uint8_t verf[8], uint32_t minor)
{
	struct nfs4_client *cl = calloc(1, sizeof(*cl));
	char hex[2 * NFS4_OPAQUE_LIMIT + 1];

	if (!cl)
		return NULL;
	cl->owner = malloc(n ? n : 1);
	if (!cl->owner) {
		free(cl);
		return NULL;
	}
	memcpy(cl->owner, owner, n);
	cl->ownerlen = n;
	memcpy(cl->verifier, verf, 8);
	cl->minor = minor;
	cl->clientid = (uint64_t)st->epoch << 32 | (uint32_t)nfs4_new_id(st);
	cl->cs_seq = 1;
	cl->renewed = nfs4_now();
	hex_encode(owner, n, hex);
	cl->may_reclaim = nfs4_grace_locked(st) && in_reclaim_list(st, hex);
	for (size_t i = 0; i < 8; i++)
		cl->confirm[i] = (uint8_t)(cl->clientid >> (8 * i)) ^
		                 (uint8_t)(st->next_id * 131 + i);
	cl->next = st->clients;
	st->clients = cl;
	return cl;
}

/* A client becomes confirmed: a confirmed record of the same owner (a
 * client that rebooted) is replaced and its state dropped. */
static void client_confirm(struct nfs4_server *st, struct nfs4_client *cl)
{
	struct nfs4_client *old =
	    client_by_owner(st, cl->owner, cl->ownerlen, true, cl->minor);

	/* confirmed first: the old record's owner is the new one's, and its
	 * line stays in the record (a client that rebooted writes nothing) */
	cl->confirmed = true;
	cl->renewed = nfs4_now();
	if (old && old != cl)
		client_destroy(st, old, true);
}

/* ---- 4.0: SETCLIENTID, SETCLIENTID_CONFIRM, RENEW ---- */

uint32_t nfs4_op_setclientid(struct nfs4_compound *c)
{
	uint8_t verf[8];
	const uint8_t *id;
	uint32_t idlen, prog, ident;
	char netid[64], addr[128];
	struct nfs4_client *conf, *uncf, *cl;

	if (!xdr_get_fixed(c->args, verf, 8) ||
	    !xdr_get_opaque_ref(c->args, &id, &idlen, NFS4_OPAQUE_LIMIT) ||
	    !xdr_get_u32(c->args, &prog) ||
	    !xdr_get_string(c->args, netid, sizeof(netid), sizeof(netid) - 1) ||
	    !xdr_get_string(c->args, addr, sizeof(addr), sizeof(addr) - 1) ||
	    !xdr_get_u32(c->args, &ident))
		return NFS4ERR_BADXDR;
	pthread_mutex_lock(&c->st->lock);
	conf = client_by_owner(c->st, id, idlen, true, 0);
	uncf = client_by_owner(c->st, id, idlen, false, 0);
	if (uncf)
		client_destroy(c->st, uncf, true);
	cl = client_new(c->st, id, idlen, verf, 0);
	if (cl && conf && !memcmp(conf->verifier, verf, 8))
		cl->clientid = conf->clientid; /* a callback update */
	pthread_mutex_unlock(&c->st->lock);
	if (!cl)
		return NFS4ERR_RESOURCE;
	xdr_put_u64(c->res, cl->clientid);
	xdr_put_fixed(c->res, cl->confirm, 8);
	return NFS4_OK;
}

uint32_t nfs4_op_setclientid_confirm(struct nfs4_compound *c)
{
	uint64_t id;
	uint8_t verf[8];
	uint32_t st = NFS4_OK;
	struct nfs4_client *cl, *found = NULL;

	if (!xdr_get_u64(c->args, &id) || !xdr_get_fixed(c->args, verf, 8))
		return NFS4ERR_BADXDR;
	pthread_mutex_lock(&c->st->lock);
	for (cl = c->st->clients; cl; cl = cl->next)
		if (cl->clientid == id && cl->minor == 0 &&
		    !memcmp(cl->confirm, verf, 8) && (!found || !cl->confirmed))
			found = cl;
	if (!found) {
		st = clientid_error(c->st, id);
	} else if (!found->confirmed) {
		/* A callback update keeps the clientid: the old record
		 * goes, its state moves to the new one. */
		struct nfs4_client *old = nfs4_client_find(c->st, id, true);
		if (old && !memcmp(old->verifier, found->verifier, 8)) {
			client_unlink(c->st, old);
			client_unlink(c->st, found);
			old->confirmed = true;
			memcpy(old->confirm, found->confirm, 8);
			old->next = c->st->clients;
			c->st->clients = old;
			client_free(c->st, found);
			old->renewed = nfs4_now();
		} else {
			client_confirm(c->st, found);
		}
	}
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

uint32_t nfs4_op_renew(struct nfs4_compound *c)
{
	uint64_t id;
	struct nfs4_client *cl;
	uint32_t st;

	if (!xdr_get_u64(c->args, &id))
		return NFS4ERR_BADXDR;
	pthread_mutex_lock(&c->st->lock);
	st = nfs4_client_of(c, id, &cl);
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

/* ---- 4.1: EXCHANGE_ID ---- */

/* The client's implementation id (eia_client_impl_id<1>): only whether
 * it is the Linux kernel's (domain "kernel.org", name "Linux <release>
 * ..."), whose READ_PLUS decoding wants fewer, larger segments
 * (EXP_READPLUS_MIN_HOLE_LINUX). */
static bool read_impl_id(struct xdr_in *x, bool *linux_impl)
{
	uint32_t n, dlen, nlen;
	const uint8_t *dom, *name;
	uint64_t sec;
	uint32_t nsec;

	*linux_impl = false;
	if (!xdr_get_u32(x, &n) || n > 1)
		return false;
	if (n == 0)
		return true;
	if (!xdr_get_opaque_ref(x, &dom, &dlen, NFS4_OPAQUE_LIMIT) ||
	    !xdr_get_opaque_ref(x, &name, &nlen, NFS4_OPAQUE_LIMIT) ||
	    !xdr_get_u64(x, &sec) || !xdr_get_u32(x, &nsec))
		return false;
	*linux_impl = dlen == 10 && memcmp(dom, "kernel.org", 10) == 0 &&
	              nlen >= 6 && memcmp(name, "Linux ", 6) == 0;
	return true;
}

uint32_t nfs4_op_exchange_id(struct nfs4_compound *c)
{
	static const char major[] = "snfsd";
	uint8_t verf[8];
	const uint8_t *owner;
	uint32_t olen, flags, how, rflags;
	struct nfs4_client *conf, *uncf, *cl;
	uint32_t st = NFS4_OK;
	bool linux_impl;

	if (!xdr_get_fixed(c->args, verf, 8) ||
	    !xdr_get_opaque_ref(c->args, &owner, &olen, NFS4_OPAQUE_LIMIT) ||
	    !xdr_get_u32(c->args, &flags) || !xdr_get_u32(c->args, &how))
		return NFS4ERR_BADXDR;
	/* State protection needs RPCSEC_GSS (MACH_CRED) or SSV; over
	 * AUTH_SYS only SP4_NONE makes sense (as Linux nfsd answers). */
	if (how != 0)
		return NFS4ERR_INVAL;
	if (!read_impl_id(c->args, &linux_impl))
		return NFS4ERR_BADXDR;
	if (flags &
	    ~(EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_SUPP_MOVED_MIGR |
	      EXCHGID4_FLAG_BIND_PRINC_STATEID | 0x30000u | 0x40000u |
	      EXCHGID4_FLAG_UPD_CONFIRMED_REC_A))
		return NFS4ERR_INVAL;
	pthread_mutex_lock(&c->st->lock);
	conf = client_by_owner(c->st, owner, olen, true, 1);
	uncf = client_by_owner(c->st, owner, olen, false, 1);
	if (flags & EXCHGID4_FLAG_UPD_CONFIRMED_REC_A) {
		if (!conf)
			st = NFS4ERR_NOENT;
		else if (memcmp(conf->verifier, verf, 8))
			st = NFS4ERR_NOT_SAME;
		cl = conf;
	} else if (conf && !memcmp(conf->verifier, verf, 8)) {
		cl = conf; /* the same instance again: keep its state */
	} else {
		/* New, or rebooted (the confirmed record goes when the new
		 * one is confirmed by CREATE_SESSION). */
		if (uncf)
			client_destroy(c->st, uncf, true);
		cl = client_new(c->st, owner, olen, verf, 1);
		if (!cl)
			st = NFS4ERR_DELAY;
	}
	if (st == NFS4_OK) {
		cl->linux_impl = linux_impl;
		rflags = EXCHGID4_FLAG_USE_NON_PNFS;
		if (cl->confirmed)
			rflags |= EXCHGID4_FLAG_CONFIRMED_R;
		xdr_put_u64(c->res, cl->clientid);
		xdr_put_u32(c->res, cl->cs_seq);
		xdr_put_u32(c->res, rflags);
		xdr_put_u32(c->res, 0); /* SP4_NONE */
		xdr_put_u64(c->res, 0); /* so_minor_id */
		xdr_put_opaque(c->res, major, sizeof(major) - 1);
		xdr_put_opaque(c->res, major, sizeof(major) - 1); /* scope */
		xdr_put_u32(c->res, 0); /* no server_impl_id */
	}
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

/* ---- CREATE_SESSION ---- */

struct chan_attrs {
	uint32_t padsize, maxreq, maxresp, maxresp_cached, maxops, maxreqs;
	uint32_t nird, ird;
};

static bool get_chan(struct xdr_in *x, struct chan_attrs *a)
{
	if (!xdr_get_u32(x, &a->padsize) || !xdr_get_u32(x, &a->maxreq) ||
	    !xdr_get_u32(x, &a->maxresp) ||
	    !xdr_get_u32(x, &a->maxresp_cached) ||
	    !xdr_get_u32(x, &a->maxops) || !xdr_get_u32(x, &a->maxreqs) ||
	    !xdr_get_u32(x, &a->nird) || a->nird > 1)
		return false;
	return a->nird == 0 || xdr_get_u32(x, &a->ird);
}

static void put_chan(struct xdr_out *x, const struct chan_attrs *a)
{
	xdr_put_u32(x, a->padsize);
	xdr_put_u32(x, a->maxreq);
	xdr_put_u32(x, a->maxresp);
	xdr_put_u32(x, a->maxresp_cached);
	xdr_put_u32(x, a->maxops);
	xdr_put_u32(x, a->maxreqs);
	xdr_put_u32(x, 0); /* no RDMA */
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* Fore channel (RFC 8881 18.36.3): never more than the client asked,
 * and not fewer ops than it asked (Linux refuses that). */
static uint32_t negotiate_fore(struct chan_attrs *f)
{
	if (f->maxresp < MIN_RESP || f->maxreq < MIN_RESP)
		return NFS4ERR_TOOSMALL;
	f->padsize = 0;
	f->maxreq = min_u32(f->maxreq, MAX_REQ);
	f->maxresp = min_u32(f->maxresp, MAX_RESP);
	f->maxresp_cached = min_u32(f->maxresp_cached, MAX_RESP_CACHED);
	f->maxops = min_u32(f->maxops, NFS4_MAX_OPS);
	f->maxreqs = min_u32(f->maxreqs ? f->maxreqs : 1, NFS4_MAX_SLOTS);
	f->nird = 0;
	return NFS4_OK;
}

static struct nfs4_session *session_new(struct nfs4_server *st,
                                        struct nfs4_client *cl,
                                        const struct chan_attrs *f)
{
	struct nfs4_session *ses = calloc(1, sizeof(*ses));
	uint64_t n = nfs4_new_id(st);

	if (!ses)
		return NULL;
	for (int i = 0; i < 8; i++) {
		ses->id[i] = (uint8_t)(cl->clientid >> (56 - 8 * i));
		ses->id[8 + i] = (uint8_t)(n >> (56 - 8 * i));
	}
	ses->cl = cl;
	ses->nslots = f->maxreqs;
	ses->maxreq = f->maxreq;
	ses->maxresp = f->maxresp;
	ses->maxresp_cached = f->maxresp_cached;
	ses->maxops = f->maxops;
	ses->next = cl->sessions;
	cl->sessions = ses;
	return ses;
}

uint32_t nfs4_op_create_session(struct nfs4_compound *c)
{
	uint64_t id;
	uint32_t seq, flags, cbprog, st = NFS4_OK;
	struct chan_attrs fore, back;
	struct nfs4_cb_sec sec;
	struct nfs4_client *cl;
	struct nfs4_session *ses;
	struct rpc_conn *conn = c->call ? c->call->conn : NULL;
	size_t pos = c->res->len;

	if (!xdr_get_u64(c->args, &id) || !xdr_get_u32(c->args, &seq) ||
	    !xdr_get_u32(c->args, &flags) || !get_chan(c->args, &fore) ||
	    !get_chan(c->args, &back) || !xdr_get_u32(c->args, &cbprog) ||
	    !nfs4_cb_sec_parse(c->args, &sec))
		return NFS4ERR_BADXDR;
	pthread_mutex_lock(&c->st->lock);
	cl = nfs4_client_find(c->st, id, false);
	if (!cl || cl->minor == 0) {
		/* RFC 8881 18.36.4: an unknown client ID is stale, also
		 * one whose lease ran out. */
		st = NFS4ERR_STALE_CLIENTID;
		goto out;
	}
	if (seq == cl->cs_seq - 1 && cl->cs_reply) {
		/* A retransmission: the same reply (RFC 8881 18.36.4). */
		xdr_put_fixed(c->res, cl->cs_reply, cl->cs_len);
		goto out;
	}
	if (seq != cl->cs_seq) {
		st = NFS4ERR_SEQ_MISORDERED;
		goto out;
	}
	st = negotiate_fore(&fore);
	if (st)
		goto out;
	if (!cl->confirmed)
		client_confirm(c->st, cl);
	ses = session_new(c->st, cl, &fore);
	if (!ses) {
		st = NFS4ERR_DELAY;
		goto out;
	}
	cl->cs_seq++;
	cl->renewed = nfs4_now();
	ses->cb.prog = cbprog;
	ses->cb.minor = c->minor; /* Linux matches it to its mount's */
	ses->cb.sec = sec;
	/* The back channel on this connection when the client asks for it
	 * and offers a flavor we can call with (RFC 8881 18.36.3); no
	 * persistence (a restart loses every session anyway). */
	if ((flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN) && conn &&
	    back.maxreqs > 0 && sec.flavor != NFS4_CB_SEC_UNUSABLE)
		nfs4_cb_bind(c->st, ses, conn);
	else
		flags &= ~CREATE_SESSION4_FLAG_CONN_BACK_CHAN;
	xdr_put_fixed(c->res, ses->id, NFS4_SESSIONID_SIZE);
	xdr_put_u32(c->res, seq);
	xdr_put_u32(c->res, flags & CREATE_SESSION4_FLAG_CONN_BACK_CHAN);
	put_chan(c->res, &fore);
	back.nird = 0;
	put_chan(c->res, &back);
	if (!c->res->err) {
		free(cl->cs_reply);
		cl->cs_len = c->res->len - pos;
		cl->cs_reply = malloc(cl->cs_len);
		if (cl->cs_reply)
			memcpy(cl->cs_reply, c->res->buf + pos, cl->cs_len);
	}
out:
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

static struct nfs4_session *session_find(struct nfs4_server *st,
                                         const uint8_t id[16])
{
	for (struct nfs4_client *cl = st->clients; cl; cl = cl->next)
		for (struct nfs4_session *s = cl->sessions; s; s = s->next)
			if (!memcmp(s->id, id, NFS4_SESSIONID_SIZE))
				return s;
	return NULL;
}

static void session_unlink(struct nfs4_session *ses)
{
	struct nfs4_client *cl = ses->cl;

	for (struct nfs4_session **pp = &cl->sessions; *pp; pp = &(*pp)->next)
		if (*pp == ses) {
			*pp = ses->next;
			break;
		}
	session_kill(ses);
}

uint32_t nfs4_op_destroy_session(struct nfs4_compound *c)
{
	uint8_t id[NFS4_SESSIONID_SIZE];
	struct nfs4_session *ses;
	uint32_t st = NFS4_OK;

	if (!xdr_get_fixed(c->args, id, sizeof(id)))
		return NFS4ERR_BADXDR;
	pthread_mutex_lock(&c->st->lock);
	ses = session_find(c->st, id);
	if (!ses) {
		st = NFS4ERR_BADSESSION;
	} else {
		if (ses == c->session)
			c->destroyed_session = true;
		session_unlink(ses);
	}
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

uint32_t nfs4_op_destroy_clientid(struct nfs4_compound *c)
{
	uint64_t id;
	struct nfs4_client *cl;
	uint32_t st = NFS4_OK;

	if (!xdr_get_u64(c->args, &id))
		return NFS4ERR_BADXDR;
	pthread_mutex_lock(&c->st->lock);
	cl = nfs4_client_find(c->st, id, false);
	/* RFC 8881 18.50.3: a client ID not known (gone, or never given)
	 * is STALE_CLIENTID; EXPIRED is no error of DESTROY_CLIENTID. It is
	 * busy while it has sessions, opens or locks. */
	if (!cl || cl->minor == 0)
		st = NFS4ERR_STALE_CLIENTID;
	else if (cl->sessions || nfs4_client_has_state(c->st, cl))
		st = NFS4ERR_CLIENTID_BUSY;
	else /* it holds no state: its record line need not be synced */
		client_destroy(c->st, cl, false);
	pthread_mutex_unlock(&c->st->lock);
	return st;
}

enum {
	CDFC4_FORE = 1,
	CDFC4_BACK = 2,
	CDFC4_FORE_OR_BOTH = 3,
	CDFC4_BACK_OR_BOTH = 7,
	CDFS4_FORE = 1,
	CDFS4_BACK = 2,
	CDFS4_BOTH = 3
};

/* RFC 8881 18.34.3. Every connection serves the fore channel. The back
 * channel goes to the connection when asked for (BACK, BACK_OR_BOTH)
 * and, for FORE_OR_BOTH, when the session has none that works: Linux
 * answers SEQ4_STATUS_CB_PATH_DOWN_SESSION with FORE_OR_BOTH on its new
 * connection, and an answer of FORE would leave the path down. */
uint32_t nfs4_op_bind_conn_to_session(struct nfs4_compound *c)
{
	uint8_t id[NFS4_SESSIONID_SIZE];
	uint32_t dir, res = CDFS4_FORE;
	bool rdma;
	struct nfs4_session *ses;
	struct rpc_conn *conn = c->call ? c->call->conn : NULL;
	uint32_t st = NFS4_OK;

	if (!xdr_get_fixed(c->args, id, sizeof(id)) ||
	    !xdr_get_u32(c->args, &dir) || !xdr_get_bool(c->args, &rdma))
		return NFS4ERR_BADXDR;
	if (dir != CDFC4_FORE && dir != CDFC4_BACK &&
	    dir != CDFC4_FORE_OR_BOTH && dir != CDFC4_BACK_OR_BOTH)
		return NFS4ERR_INVAL;
	pthread_mutex_lock(&c->st->lock);
	ses = session_find(c->st, id);
	if (!ses || ses->dead) {
		st = NFS4ERR_BADSESSION;
	} else if (dir == CDFC4_BACK || dir == CDFC4_BACK_OR_BOTH ||
	           (dir == CDFC4_FORE_OR_BOTH && ses->cb.wanted &&
	            !nfs4_cb_up(ses))) {
		if (!conn || ses->cb.sec.flavor == NFS4_CB_SEC_UNUSABLE) {
			/* UDP, or no flavor to call with */
			if (dir != CDFC4_FORE_OR_BOTH)
				st = NFS4ERR_INVAL;
		} else {
			nfs4_cb_bind(c->st, ses, conn);
			res = dir == CDFC4_BACK ? CDFS4_BACK : CDFS4_BOTH;
		}
	}
	pthread_mutex_unlock(&c->st->lock);
	if (st)
		return st;
	xdr_put_fixed(c->res, id, sizeof(id));
	xdr_put_u32(c->res, res);
	xdr_put_bool(c->res, false);
	return NFS4_OK;
}

/* RFC 8881 18.33: a new program number or flavor for the calls back of
 * this COMPOUND's session. */
uint32_t nfs4_op_backchannel_ctl(struct nfs4_compound *c)
{
	uint32_t prog;
	struct nfs4_cb_sec sec;

	if (!xdr_get_u32(c->args, &prog) || !nfs4_cb_sec_parse(c->args, &sec))
		return NFS4ERR_BADXDR;
	if (sec.flavor == NFS4_CB_SEC_UNUSABLE)
		return NFS4ERR_INVAL;
	pthread_mutex_lock(&c->st->lock);
	c->session->cb.prog = prog;
	c->session->cb.sec = sec;
	pthread_mutex_unlock(&c->st->lock);
	return NFS4_OK;
}

/* ---- SEQUENCE and the reply cache (RFC 8881 2.10.6) ---- */

static void replay_slot(struct nfs4_compound *c, const struct nfs4_slot *sl)
{
	xdr_out_truncate(c->res, c->res_start);
	xdr_put_fixed(c->res, sl->reply, sl->len);
	c->replayed = true;
}

uint32_t nfs4_op_sequence(struct nfs4_compound *c)
{
	uint8_t id[NFS4_SESSIONID_SIZE];
	uint32_t seq, slotid, high, st = NFS4_OK;
	bool cachethis;
	struct nfs4_session *ses;
	struct nfs4_slot *sl;

	if (!xdr_get_fixed(c->args, id, sizeof(id)) ||
	    !xdr_get_u32(c->args, &seq) || !xdr_get_u32(c->args, &slotid) ||
	    !xdr_get_u32(c->args, &high) || !xdr_get_bool(c->args, &cachethis))
		return NFS4ERR_BADXDR;
	pthread_mutex_lock(&c->st->lock);
	ses = session_find(c->st, id);
	if (!ses || ses->dead) {
		st = NFS4ERR_BADSESSION;
		goto out;
	}
	if (slotid >= ses->nslots) {
		st = NFS4ERR_BADSLOT;
		goto out;
	}
	sl = &ses->slots[slotid];
	if (seq == sl->seqid && sl->seqid != 0) {
		if (sl->busy) {
			st = NFS4ERR_DELAY;
		} else if (sl->reply) {
			replay_slot(c, sl);
			st = NFS4_REPLAYED;
		} else {
			/* Not kept: SEQUENCE answers, the next op says
			 * RETRY_UNCACHED_REP (RFC 8881 2.10.6.1.3). */
			c->retry_uncached = true;
		}
		if (st != NFS4_OK)
			goto out;
	} else if (seq != sl->seqid + 1) {
		st = NFS4ERR_SEQ_MISORDERED;
		goto out;
	} else if (c->call->args.len > ses->maxreq) {
		st = NFS4ERR_REQ_TOO_BIG;
		goto out;
	} else if (c->nops > ses->maxops) {
		st = NFS4ERR_TOO_MANY_OPS;
		goto out;
	}
	if (sl->busy) {
		st = NFS4ERR_DELAY;
		goto out;
	}
	sl->busy = true;
	if (!c->retry_uncached) {
		sl->seqid = seq;
		free(sl->reply);
		sl->reply = NULL;
		sl->len = 0;
	}
	ses->refs++;
	c->session = ses;
	c->slotid = slotid;
	c->cachethis = cachethis;
	/* a reply kept for replay must hold its bytes: no file parts */
	if (cachethis)
		c->res->file_ok = false;
	c->maxresp = ses->maxresp;
	c->maxresp_cached = ses->maxresp_cached;
	c->clientid = ses->cl->clientid;
	c->client_linux = ses->cl->linux_impl;
	ses->cl->renewed = nfs4_now();
	xdr_put_fixed(c->res, id, sizeof(id));
	xdr_put_u32(c->res, seq);
	xdr_put_u32(c->res, slotid);
	xdr_put_u32(c->res, ses->nslots - 1);
	xdr_put_u32(c->res, ses->nslots - 1);
	xdr_put_u32(
	    c->res,
	    (nfs4_cb_path_down(ses) ? SEQ4_STATUS_CB_PATH_DOWN_SESSION : 0) |
	        (ses->cl->nrevoked ? SEQ4_STATUS_RECALLABLE_STATE_REVOKED : 0));
out:
	pthread_mutex_unlock(&c->st->lock);
	return st == NFS4_REPLAYED ? NFS4_OK : st;
}

void nfs4_session_done(struct nfs4_compound *c, const uint8_t *reply,
                       size_t len)
{
	struct nfs4_session *ses = c->session;
	struct nfs4_slot *sl = &ses->slots[c->slotid];

	pthread_mutex_lock(&c->st->lock);
	sl->busy = false;
	if (!c->retry_uncached && !sl->reply && c->res->nparts == 0 &&
	    (c->cachethis || len <= SLOT_CACHE_SMALL)) {
		sl->reply = malloc(len ? len : 1);
		if (sl->reply) {
			memcpy(sl->reply, reply, len);
			sl->len = len;
		}
	}
	c->session = NULL;
	if (--ses->refs == 0 && ses->dead)
		session_free(ses);
	pthread_mutex_unlock(&c->st->lock);
}

uint32_t nfs4_op_reclaim_complete(struct nfs4_compound *c)
{
	bool one_fs;
	struct nfs4_client *cl;
	uint32_t st;

	if (!xdr_get_bool(c->args, &one_fs))
		return NFS4ERR_BADXDR;
	if (one_fs) /* per-fs reclaim (migration) is not needed here */
		return NFS4_OK;
	pthread_mutex_lock(&c->st->lock);
	st = nfs4_client_of(c, 0, &cl);
	if (!st) {
		if (cl->reclaim_complete) {
			st = NFS4ERR_COMPLETE_ALREADY;
		} else {
			cl->reclaim_complete = true;
			if (cl->may_reclaim)
				reclaim_done(c->st, cl);
		}
	}
	pthread_mutex_unlock(&c->st->lock);
	return st;
}
