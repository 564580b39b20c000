/* NLM_GRANTED call backs: telling a client's lock manager that a lock it
 * waits for is now its own (XNFS, NLM "GRANTED"). The same thread makes
 * snfsd's other calls out: SM_NOTIFY after a restart (nsm.c) and SM_MON
 * to the host's rpc.statd (nlm_monitor).
 *
 * Grants are queued under the state mutex (nlmlock.c) and sent by one
 * thread, so a client that does not answer delays only other call
 * backs, never a request. The client's lock manager is found through
 * the portmapper on the host the LOCK came from. A client that cannot be
 * reached keeps the lock and learns of it when it asks again; one that
 * answers DENIED no longer wants it, and the lock is released. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rpc/callout.h"
#include "server/nfs4/nfs4.h"
#include "server/nlm/nlm.h"
#include "server/snfsd.h"
#include "util/log.h"

#define CB_TIMEOUT_S 5
#define CB_MAX_QUEUED 1024
#define MON_BUCKETS 1024
#define MON_MAX 65536      /* hosts watched; more go unwatched */
#define MON_RETRY_S 60     /* after a failed SM_MON */
#define MON_STATUS_PROC 16 /* where rpc.statd relays (NLMPROC4_NSM_NOTIFY) */

/* A client host put under rpc.statd's watch, by address. */
struct mon_host {
	struct mon_host *next;
	time_t retry_at; /* 0: watched; else when to ask again */
	char addr[INET6_ADDRSTRLEN];
};

struct nlm_cb {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool stop;
	struct nlm_grant *head, *tail;
	unsigned queued;
	uint32_t xid;
	struct mon_host *mon[MON_BUCKETS]; /* under lock */
	unsigned nmon;
	bool warned_no_statd, warned_full;
};

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static void job_free(struct nlm_grant *g)
{
	if (g)
		free(g->body);
	free(g);
}

/* nlm4_testargs: cookie, exclusive, and the lock as the client sent it. */
static void put_granted_args(struct xdr_out *a, const struct nlm_grant *g)
{
	xdr_put_opaque(a, g->cookie, g->cookielen);
	xdr_put_bool(a, g->write);
	xdr_put_string(a, g->host);
	xdr_put_opaque(a, g->fh, g->fhlen);
	xdr_put_opaque(a, g->oh, g->ohlen);
	xdr_put_u32(a, (uint32_t)g->svid);
	xdr_put_u64(a, g->off);
	xdr_put_u64(a, g->len);
}

/* A stream to (prog, vers) on the host of peer, found through its
 * portmapper. fd or -errno. */
static int connect_service(struct snfsd *s, const struct sockaddr_storage *peer,
                           socklen_t peer_len, uint32_t prog, uint32_t vers)
{
	struct sockaddr_storage to = *peer;
	int port = rpc_callout_getport((const struct sockaddr *)&to, peer_len,
	                               prog, vers, CB_TIMEOUT_S);

	if (port <= 0)
		return port < 0 ? port : -ENOENT;
	/* Server and client on one host share one portmapper, where the
	 * lock manager registered is ours: never call ourselves. */
	if (rpc_addr_is_loopback((const struct sockaddr *)&to) &&
	    port == s->cfg.port)
		return -ELOOP;
	set_port(&to, (uint16_t)port);
	return rpc_callout_connect((const struct sockaddr *)&to, peer_len,
	                           CB_TIMEOUT_S, true);
}

/* One call of proc to (prog, vers) on the host of peer, with args;
 * decode (if not NULL) reads the results into out. 0 or -errno. */
static int call_host(struct snfsd *s, struct nlm_cb *cb,
                     const struct sockaddr_storage *peer, socklen_t peer_len,
                     uint32_t prog, uint32_t vers, uint32_t proc,
                     const struct xdr_out *args,
                     bool (*decode)(struct xdr_in *, void *), void *out)
{
	struct rpc_record_reader r;
	struct xdr_in in;
	int rc, fd = connect_service(s, peer, peer_len, prog, vers);

	if (fd < 0)
		return fd;
	rc = rpc_callout_call(fd, ++cb->xid, prog, vers, proc, args, &r, &in);
	if (rc == 0 && decode && !decode(&in, out))
		rc = -EPROTO;
	rpc_record_free(&r);
	close(fd);
	return rc;
}

/* nlm4_res: cookie, stat. */
static bool get_nlm4_res(struct xdr_in *in, void *stat)
{
	const uint8_t *cookie;
	uint32_t cookielen;

	return xdr_get_opaque_ref(in, &cookie, &cookielen, NLM_MAXNETOBJ) &&
	       xdr_get_u32(in, stat);
}

/* Call GRANTED on the client of g: its nlm4_stats, or -errno. */
static int call_granted(struct snfsd *s, struct nlm_cb *cb,
                        const struct nlm_grant *g)
{
	struct xdr_out a;
	uint32_t stat = 0;
	int rc;

	if (xdr_out_init(&a, 512, 8192) < 0)
		return -ENOMEM;
	put_granted_args(&a, g);
	rc = call_host(s, cb, &g->peer, g->peer_len, NLM_PROG, NLM4_VERS,
	               NLMPROC4_GRANTED, &a, get_nlm4_res, &stat);
	xdr_out_free(&a);
	return rc < 0 ? rc : (int)stat;
}

/* The answer to an X_MSG call, as a call of X_RES (its results are
 * void). 0 or -errno. */
static int call_result(struct snfsd *s, struct nlm_cb *cb,
                       const struct nlm_grant *g)
{
	struct xdr_out a;
	uint8_t *p;
	int rc;

	if (xdr_out_init(&a, g->bodylen + 16, g->bodylen + 16) < 0)
		return -ENOMEM;
	if (!(p = xdr_put_reserve(&a, g->bodylen))) {
		xdr_out_free(&a);
		return -ENOMEM;
	}
	memcpy(p, g->body, g->bodylen);
	rc = call_host(s, cb, &g->peer, g->peer_len, NLM_PROG, NLM4_VERS,
	               g->proc, &a, NULL, NULL);
	xdr_out_free(&a);
	return rc;
}

static void answer(struct snfsd *s, struct nlm_cb *cb,
                   const struct nlm_grant *g)
{
	int rc = call_result(s, cb, g);
	char who[80];

	if (rc && rc != -ELOOP)
		log_info("nlm: cannot send %s its answer (procedure %u): %s",
		         rpc_host_str((const struct sockaddr *)&g->peer, who,
		                      sizeof(who)),
		         g->proc, strerror(-rc));
}

/* SM_NOTIFY (stat_chge: our name, our new state) to the status monitor
 * of g's host. 0 or -errno. */
static int call_notify(struct snfsd *s, struct nlm_cb *cb,
                       const struct nlm_grant *g)
{
	struct xdr_out a;
	int rc;

	if (xdr_out_init(&a, 64, 2048) < 0)
		return -ENOMEM;
	xdr_put_string(&a, g->host);
	xdr_put_i32(&a, g->state);
	rc = call_host(s, cb, &g->peer, g->peer_len, NSM_PROG, NSM_VERS,
	               SM_NOTIFY, &a, NULL, NULL);
	xdr_out_free(&a);
	return rc;
}

static void notify(struct snfsd *s, struct nlm_cb *cb,
                   const struct nlm_grant *g)
{
	char who[80];
	int rc = call_notify(s, cb, g);

	rpc_host_str((const struct sockaddr *)&g->peer, who, sizeof(who));
	if (rc) {
		char key[2 * (2 * 64 + 2) + 1];
		struct nfs4_server *st = nfs4_server_get(s);

		log_warn("nsm: cannot tell %s of the restart: %s; its locks "
		         "are not reclaimed",
		         who, strerror(-rc));
		if (st && nlm_host_key(&g->peer, &g->local, key, sizeof(key)))
			nfs4_nlm_forget_host(st, key);
	} else {
		log_info("nsm: told %s of the restart (as %s, state %d)", who,
		         g->host, g->state);
	}
}

/* sm_stat_res: res_stat, state; STAT_SUCC or not. */
static bool get_sm_stat_res(struct xdr_in *in, void *ok)
{
	uint32_t res;
	int32_t state;

	if (!xdr_get_u32(in, &res) || !xdr_get_i32(in, &state))
		return false;
	*(bool *)ok = res == NSM_STAT_SUCC;
	return true;
}

/* mon: mon_id (mon_name, my_id (my_name, my_prog, my_vers, my_proc)),
 * priv[16]. rpc.statd accepts it only from a loopback address and only
 * for a call back to NLM procedure 16 (or 24); it answers sm_stat_res
 * (res_stat, state). 0, -EPERM when it refused, or -errno. */
static int call_mon(struct snfsd *s, struct nlm_cb *cb, const char *mon_name)
{
	static const uint8_t priv[NSM_PRIV_SIZE] = "snfsd nlm v4";
	struct sockaddr_storage lo;
	struct xdr_out a;
	bool ok = false;
	int rc;

	memset(&lo, 0, sizeof(lo));
	lo.ss_family = AF_INET;
	((struct sockaddr_in *)&lo)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (xdr_out_init(&a, 128, 2048) < 0)
		return -ENOMEM;
	xdr_put_string(&a, mon_name);
	xdr_put_string(&a, "127.0.0.1");
	xdr_put_u32(&a, NLM_PROG);
	xdr_put_u32(&a, NLM4_VERS);
	xdr_put_u32(&a, MON_STATUS_PROC);
	xdr_put_fixed(&a, priv, sizeof(priv));
	rc = call_host(s, cb, &lo, sizeof(struct sockaddr_in), NSM_PROG,
	               NSM_VERS, SM_MON, &a, get_sm_stat_res, &ok);
	xdr_out_free(&a);
	return rc ? rc : ok ? 0 : -EPERM;
}

static unsigned mon_bucket(const char *addr)
{
	uint32_t h = 2166136261u;

	for (; *addr; addr++)
		h = (h ^ (uint8_t)*addr) * 16777619u;
	return h % MON_BUCKETS;
}

static struct mon_host *mon_find(struct nlm_cb *cb, const char *addr)
{
	struct mon_host *m = cb->mon[mon_bucket(addr)];

	while (m && strcmp(m->addr, addr))
		m = m->next;
	return m;
}

static void monitor(struct snfsd *s, struct nlm_cb *cb,
                    const struct nlm_grant *g)
{
	struct mon_host *m;
	int rc = call_mon(s, cb, g->host);
	const char *why;
	bool warn;

	pthread_mutex_lock(&cb->lock);
	if ((m = mon_find(cb, g->host)))
		m->retry_at = rc ? time(NULL) + MON_RETRY_S : 0;
	warn = rc && !cb->warned_no_statd;
	cb->warned_no_statd |= warn;
	pthread_mutex_unlock(&cb->lock);
	why = rc == -ENOENT ? "no status monitor registered with rpcbind"
	                    : strerror(-rc);
	if (!rc)
		log_info("nsm: rpc.statd watches %s for us", g->host);
	else if (warn)
		log_warn("nsm: rpc.statd will not watch %s: %s (is rpc.statd "
		         "running?); an NFSv3 client that restarts keeps "
		         "its locks here until it frees them",
		         g->host, why);
	else if (rc != -ENOENT) /* no statd at all: said once, above */
		log_info("nsm: rpc.statd will not watch %s: %s", g->host, why);
}

static void deliver(struct snfsd *s, struct nlm_cb *cb, struct nlm_grant *g)
{
	struct nfs4_server *st = nfs4_server_get(s);
	char who[80];
	int rc = call_granted(s, cb, g);
	struct nlm_req req = {.peer = &g->peer,
	                      .host = g->host,
	                      .svid = g->svid,
	                      .oh = g->oh,
	                      .ohlen = g->ohlen,
	                      .start = g->off,
	                      .end = nlm_range_end(g->off, g->len),
	                      .write = g->write};

	rpc_peer_str((const struct sockaddr *)&g->peer, who, sizeof(who));
	if (!st)
		return;
	if (rc == NLM4_GRANTED) {
		nfs4_nlm_granted(st, g);
	} else if (rc > 0 && rc != NLM4_DENIED_GRACE_PERIOD) {
		/* The client does not want it any more. */
		log_info("nlm: %s (%s) refused a granted lock (%d): released",
		         who, g->host, rc);
		nfs4_nlm_cancel(st, g->fsid, &g->bh, &req);
	} else if (rc < 0 && rc != -ELOOP) {
		log_info("nlm: cannot call %s (%s) back: %s; it gets the lock "
		         "when it asks again",
		         who, g->host, strerror(-rc));
	}
}

static void *cb_main(void *arg)
{
	struct snfsd *s = arg;
	struct nlm_cb *cb = s->nlm_cb;

	pthread_mutex_lock(&cb->lock);
	for (;;) {
		struct nlm_grant *g;

		while (!cb->head && !cb->stop)
			pthread_cond_wait(&cb->cond, &cb->lock);
		if (cb->stop)
			break;
		g = cb->head;
		cb->head = g->next;
		if (!cb->head)
			cb->tail = NULL;
		cb->queued--;
		pthread_mutex_unlock(&cb->lock);
		if (g->kind == NLM_JOB_NOTIFY)
			notify(s, cb, g);
		else if (g->kind == NLM_JOB_MONITOR)
			monitor(s, cb, g);
		else if (g->kind == NLM_JOB_RES)
			answer(s, cb, g);
		else
			deliver(s, cb, g);
		job_free(g);
		pthread_mutex_lock(&cb->lock);
	}
	pthread_mutex_unlock(&cb->lock);
	return NULL;
}

static struct nlm_cb *cb_start(struct snfsd *s)
{
	struct nlm_cb *cb;

	if (s->cfg.no_callouts)
		return NULL;
	pthread_mutex_lock(&start_lock);
	cb = s->nlm_cb;
	if (!cb && (cb = calloc(1, sizeof(*cb)))) {
		pthread_mutex_init(&cb->lock, NULL);
		pthread_cond_init(&cb->cond, NULL);
		cb->xid = (uint32_t)time(NULL) << 8;
		s->nlm_cb = cb;
		if (pthread_create(&cb->thread, NULL, cb_main, s)) {
			s->nlm_cb = NULL;
			pthread_cond_destroy(&cb->cond);
			pthread_mutex_destroy(&cb->lock);
			free(cb);
			cb = NULL;
		}
	}
	pthread_mutex_unlock(&start_lock);
	return cb;
}

/* Queue g under cb->lock: false (g not taken) when the queue is full. */
static bool enqueue(struct nlm_cb *cb, struct nlm_grant *g)
{
	if (cb->queued >= CB_MAX_QUEUED)
		return false;
	g->next = NULL;
	if (cb->tail)
		cb->tail->next = g;
	else
		cb->head = g;
	cb->tail = g;
	cb->queued++;
	pthread_cond_signal(&cb->cond);
	return true;
}

void nlm_cb_queue(struct snfsd *s, struct nlm_grant *g)
{
	struct nlm_cb *cb = cb_start(s);
	bool queued = false;

	if (cb) {
		pthread_mutex_lock(&cb->lock);
		queued = enqueue(cb, g);
		pthread_mutex_unlock(&cb->lock);
	}
	if (!queued)
		job_free(g); /* a client finds a lock when it asks again */
}

void nlm_cb_result(struct snfsd *s, const struct sockaddr_storage *peer,
                   socklen_t peer_len, uint32_t proc, const uint8_t *body,
                   size_t len)
{
	struct nlm_grant *g = calloc(1, sizeof(*g));

	if (!g || !(g->body = malloc(len ? len : 1))) {
		free(g);
		return; /* the client asks again when no answer comes */
	}
	g->kind = NLM_JOB_RES;
	g->proc = proc;
	g->peer = *peer;
	g->peer_len = peer_len;
	memcpy(g->body, body, len);
	g->bodylen = len;
	nlm_cb_queue(s, g);
}

/* A host not yet asked for, or whose last SM_MON failed long enough ago:
 * its entry (made here), else NULL. Under cb->lock. */
static struct mon_host *mon_due(struct nlm_cb *cb, const char *addr)
{
	struct mon_host *m = mon_find(cb, addr);
	unsigned b;

	if (m) {
		if (!m->retry_at || m->retry_at > time(NULL))
			return NULL;
		m->retry_at = 0; /* one SM_MON in flight at a time */
		return m;
	}
	if (cb->nmon >= MON_MAX) {
		if (!cb->warned_full)
			log_warn("nsm: %u client hosts watched already; more "
			         "are not",
			         cb->nmon);
		cb->warned_full = true;
		return NULL;
	}
	if (!(m = calloc(1, sizeof(*m))))
		return NULL;
	snprintf(m->addr, sizeof(m->addr), "%s", addr);
	b = mon_bucket(addr);
	m->next = cb->mon[b];
	cb->mon[b] = m;
	cb->nmon++;
	return m;
}

void nlm_monitor(struct snfsd *s, const struct sockaddr_storage *peer)
{
	struct nlm_cb *cb;
	struct nlm_grant *g;
	char addr[INET6_ADDRSTRLEN];
	struct mon_host *m;

	if (!s->nsm_via_statd ||
	    !strcmp(
	        rpc_host_str((const struct sockaddr *)peer, addr, sizeof(addr)),
	        "?") ||
	    !(cb = cb_start(s)))
		return;
	pthread_mutex_lock(&cb->lock);
	m = mon_due(cb, addr);
	if (m && (g = calloc(1, sizeof(*g)))) {
		g->kind = NLM_JOB_MONITOR;
		snprintf(g->host, sizeof(g->host), "%s", addr);
		if (!enqueue(cb, g)) {
			free(g);
			g = NULL;
		}
	} else {
		g = NULL;
	}
	/* Not asked after all: ask at the next lock. */
	if (m && !g)
		m->retry_at = 1;
	pthread_mutex_unlock(&cb->lock);
}

void nlm_cb_shutdown(struct snfsd *s)
{
	struct nlm_cb *cb = s->nlm_cb;

	if (!cb)
		return;
	pthread_mutex_lock(&cb->lock);
	cb->stop = true;
	pthread_cond_signal(&cb->cond);
	pthread_mutex_unlock(&cb->lock);
	pthread_join(cb->thread, NULL);
	while (cb->head) {
		struct nlm_grant *g = cb->head;
		cb->head = g->next;
		job_free(g);
	}
	for (unsigned b = 0; b < MON_BUCKETS; b++)
		while (cb->mon[b]) {
			struct mon_host *m = cb->mon[b];
			cb->mon[b] = m->next;
			free(m);
		}
	pthread_cond_destroy(&cb->cond);
	pthread_mutex_destroy(&cb->lock);
	free(cb);
	s->nlm_cb = NULL;
}
