/* NLM_GRANTED call backs: telling a client's lock manager that a lock it
 * waits for is now its own (XNFS, NLM "GRANTED").
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

struct nlm_cb {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool stop;
	struct nlm_grant *head, *tail;
	unsigned queued;
	uint32_t xid;
};

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)
		                  ->sin_addr.s_addr) >>
		        24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(
		    &((const struct sockaddr_in6 *)ss)->sin6_addr);
	return false;
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
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
	if (is_loopback(&to) && port == s->cfg.port)
		return -ELOOP;
	set_port(&to, (uint16_t)port);
	return rpc_callout_connect((const struct sockaddr *)&to, peer_len,
	                           CB_TIMEOUT_S, true);
}

/* Call GRANTED on the client of g: its nlm4_stats, or -errno. */
static int call_granted(struct snfsd *s, struct nlm_cb *cb,
                        const struct nlm_grant *g)
{
	struct rpc_record_reader r;
	struct xdr_out a;
	struct xdr_in in;
	const uint8_t *cookie;
	uint32_t stat, cookielen;
	int fd, rc;

	fd = connect_service(s, &g->peer, g->peer_len, NLM_PROG, NLM4_VERS);
	if (fd < 0)
		return fd;
	if (xdr_out_init(&a, 512, 8192) < 0) {
		close(fd);
		return -ENOMEM;
	}
	put_granted_args(&a, g);
	rc = rpc_callout_call(fd, ++cb->xid, NLM_PROG, NLM4_VERS,
	                      NLMPROC4_GRANTED, &a, &r, &in);
	if (rc == 0 &&
	    (!xdr_get_opaque_ref(&in, &cookie, &cookielen, NLM_MAXNETOBJ) ||
	     !xdr_get_u32(&in, &stat)))
		rc = -EPROTO;
	rpc_record_free(&r);
	xdr_out_free(&a);
	close(fd);
	return rc < 0 ? rc : (int)stat;
}

/* SM_NOTIFY (stat_chge: our name, our new state) to the status monitor
 * of g's host. 0 or -errno. */
static int call_notify(struct snfsd *s, struct nlm_cb *cb,
                       const struct nlm_grant *g)
{
	struct rpc_record_reader r;
	struct xdr_out a;
	struct xdr_in in;
	int fd, rc;

	fd = connect_service(s, &g->peer, g->peer_len, NSM_PROG, NSM_VERS);
	if (fd < 0)
		return fd;
	if (xdr_out_init(&a, 64, 2048) < 0) {
		close(fd);
		return -ENOMEM;
	}
	xdr_put_string(&a, g->host);
	xdr_put_i32(&a, g->state);
	rc = rpc_callout_call(fd, ++cb->xid, NSM_PROG, NSM_VERS, SM_NOTIFY, &a,
	                      &r, &in);
	rpc_record_free(&r);
	xdr_out_free(&a);
	close(fd);
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
		if (g->notify)
			notify(s, cb, g);
		else
			deliver(s, cb, g);
		free(g);
		pthread_mutex_lock(&cb->lock);
	}
	pthread_mutex_unlock(&cb->lock);
	return NULL;
}

static struct nlm_cb *cb_start(struct snfsd *s)
{
	struct nlm_cb *cb;

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

void nlm_cb_queue(struct snfsd *s, struct nlm_grant *g)
{
	struct nlm_cb *cb = cb_start(s);

	if (!cb) {
		free(g); /* the client finds the lock when it asks again */
		return;
	}
	g->next = NULL;
	pthread_mutex_lock(&cb->lock);
	if (cb->queued >= CB_MAX_QUEUED) {
		pthread_mutex_unlock(&cb->lock);
		free(g);
		return;
	}
	if (cb->tail)
		cb->tail->next = g;
	else
		cb->head = g;
	cb->tail = g;
	cb->queued++;
	pthread_cond_signal(&cb->cond);
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
		free(g);
	}
	pthread_cond_destroy(&cb->cond);
	pthread_mutex_destroy(&cb->lock);
	free(cb);
	s->nlm_cb = NULL;
}
