/* The RPC server runtime: an event loop and a pool of workers.
 *
 * The loop (one thread at a time, "the loop thread" below) owns every
 * socket: it accepts connections, reads bytes,
 * reassembles records (record.c) and hands each complete call to a worker
 * (workers.c). A worker runs the call (service.c) and writes the reply
 * straight to the socket when the socket takes it whole; otherwise it queues
 * the rest and asks the loop, through an eventfd, to watch for writability.
 * One thread sends on a connection at a time (c->sending), outside its
 * mutex: a worker finishing while another sends queues its reply, and the
 * sender sends it next, so no worker sleeps on the mutex for the length
 * of a send (measured: with 16 calls in flight, those sleeps and their
 * wake-ups cost more than the calls). All epoll changes happen on the
 * loop thread; a connection's mutex orders the workers' writes with them.
 *
 * Back-pressure: a connection with max_inflight calls running or
 * max_out_bytes of replies queued is not read until it drains, so a client
 * that sends without reading costs bounded memory. Connections are
 * reference counted: the loop holds one while the socket is open, each call
 * in progress and each pending notification holds one more.
 *
 * The loop runs on the pool's threads, one at a time (leader and
 * followers): a pass that read calls keeps one, hands the loop to a waiting
 * thread (pool_handoff) and runs that call itself, so a call waits for no
 * thread to wake; the next thread wakes while the call runs. Measured with
 * the Linux client in the emulated guest, where a wake-up is dear: a
 * second hop from loop to worker added about 0.6 ms to each 4 KiB read.
 * With no thread waiting, the pass queues every call and loops on.
 */
#include "rpc/rpc_int.h"

#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "rpc/ev.h"
#include "rpc/workers.h"
#include "util/log.h"

#define MAX_LISTENERS 16
#define MAX_FIRED 256
#define READ_BUF_SIZE (64 * 1024) /* also the largest UDP datagram */
#define UDP_MAX_REPLY 65507       /* IPv4 UDP payload limit */
#define READS_PER_EVENT 16        /* fairness between busy connections */
#define ACCEPTS_PER_EVENT 64
#define UDP_JOBS_PER_THREAD 64 /* queued UDP calls before dropping */
#define REPLY_INITIAL 4096
#define BACKLOG_CHECK_MS 1 /* queued calls untaken this long: wake more */
/* Finished TCP jobs kept for the next calls, so the steady state makes no
 * allocation per call (a job and its record buffer cost ~650 instructions
 * of malloc and free per call under callgrind). Bounded so a burst over
 * many connections does not pin its peak memory: at most JOB_CACHE_MAX
 * jobs, each keeping a record buffer of JOB_KEEP_REC bytes at most. A
 * kept buffer is lent to a reader for its next record and stays with the
 * connection while it idles, so it is small: enough for every call but
 * large WRITEs, which allocate as before. */
#define JOB_CACHE_MAX 32
#define JOB_KEEP_REC (8 * 1024)
/* Popped queue entries a connection keeps for the next replies it queues:
 * under load the queue fills and drains in runs (measured: one spare
 * served 1 in 7 queued replies), a few serve nearly all. */
#define CHUNK_SPARE_MAX 8

/* What an epoll registration points at; first member of each source. */
enum source_kind { SRC_WAKE, SRC_LISTEN_TCP, SRC_UDP, SRC_CONN };

struct rpc_listener {
	enum source_kind kind;
	int fd;
	uint16_t port;
};

/* A queued reply: a whole record-marked reply buffer, sent from off on. */
struct out_chunk {
	struct out_chunk *next;
	struct xdr_out buf;
	size_t off;
};

struct rpc_conn {
	enum source_kind kind;
	int fd;
	atomic_int refs;
	struct rpc_server *srv;
	char peer_str[64];
	struct sockaddr_storage peer;
	socklen_t peer_len;

	/* loop thread only */
	struct rpc_conn *prev, *next; /* srv->conns */
	struct rpc_record_reader rr;
	uint8_t *stash; /* input read past a pause, fed on resume */
	size_t stash_len, stash_off;
	int mask; /* current epoll interest */

	/* under lock */
	pthread_mutex_t lock;
	bool closed;
	bool sending;       /* a thread sends, unlocked, on the fd it read */
	bool close_pending; /* closed while sending: the sender closes fd */
	bool paused;        /* reading stopped by back-pressure; loop writes */
	bool notified;      /* on srv->notify, holding a reference */
	int inflight;
	size_t out_bytes; /* memory held by the queue */
	struct out_chunk *out_head, *out_tail;
	struct rpc_conn *notify_next;
	struct out_chunk *spare_chunks; /* popped, for the next replies */
	int nspare_chunks;
};

struct rpc_server {
	struct rpc_service *svc;
	struct rpc_server_config cfg;
	size_t reply_limit;
	struct ev_loop *loop;
	enum source_kind wake_kind; /* the eventfd's epoll registration */
	int wake_fd;
	int spare_fd; /* closed to accept-and-drop when out of fds */
	struct rpc_listener listeners[MAX_LISTENERS];
	int nlisteners;
	struct rpc_conn *conns;
	int nconns;
	bool conns_full_logged;
	uint8_t *rbuf;
	struct worker_pool *pool;
	struct pool_batch batch; /* TCP calls read in this loop pass */
	int burst_wake;          /* threads woken for one batch at most */
	uint64_t backlog_since;  /* ms: calls queued and untaken since */
	atomic_bool stop;
	struct pool_job
	    loop_job;      /* the loop, when handed to a waiting thread */
	pthread_t watcher; /* releases the loop on standby (watch_main) */
	bool watcher_up;   /* started: lone calls run on the loop's thread */
	atomic_bool watch_stop;
	atomic_uint watch_gen;    /* armings of the watch (watch_disarm) */
	pthread_mutex_t run_lock; /* loop_done, loop_rc */
	pthread_cond_t run_cond;  /* the loop ended: rpc_server_run returns */
	bool loop_done;
	int loop_rc;
	atomic_int udp_jobs;
	pthread_mutex_t notify_lock;
	struct rpc_conn *notify;
	/* Idle TCP jobs. Workers push finished ones on jobs_returned; the
	 * loop thread takes that whole list at once into jobs_free, its own,
	 * when jobs_free runs out. Only the loop removes from jobs_returned,
	 * and only by taking all of it, so the push needs no ABA guard. */
	_Atomic(struct rpc_job *) jobs_returned;
	struct rpc_job *jobs_free; /* loop thread only */
	atomic_int jobs_cached;    /* on either list: bounds both */
};

/* A call on its way to a worker. */
struct rpc_job {
	struct pool_job job; /* first: the pool hands this pointer back */
	struct rpc_server *srv;
	struct rpc_conn *conn; /* NULL for UDP */
	int udp_fd;
	uint8_t *rec;
	size_t len;
	size_t cap; /* of rec, for lending it to a reader when cached (TCP) */
	struct rpc_job *cache_next;
	struct sockaddr_storage peer;
	socklen_t peer_len;
};

/* ---- connections: references, limits, notifications ---- */

/* Free everything a connection owns; its socket is already closed. */
static void conn_free(struct rpc_conn *c)
{
	struct out_chunk *o, *next;
	for (o = c->out_head; o; o = next) {
		next = o->next;
		xdr_out_free(&o->buf);
		free(o);
	}
	for (o = c->spare_chunks; o; o = next) {
		next = o->next;
		free(o);
	}
	rpc_record_free(&c->rr);
	free(c->stash);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Take a reference. */
static void conn_ref(struct rpc_conn *c)
{
	atomic_fetch_add(&c->refs, 1);
}

/* Drop a reference; the last one frees the connection (on any thread). */
static void conn_unref(struct rpc_conn *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1)
		conn_free(c);
}

/* Whether reading must stop (caller holds c->lock). */
static bool conn_over_limits(const struct rpc_conn *c)
{
	return c->inflight >= c->srv->cfg.max_inflight ||
	       c->out_bytes >= c->srv->cfg.max_out_bytes;
}

/* Ask the loop to look at c again (caller holds c->lock). Safe from any
 * thread; one pending notification per connection at most. */
static void conn_notify_locked(struct rpc_conn *c)
{
	struct rpc_server *srv = c->srv;
	uint64_t one = 1;

	if (c->notified || c->closed)
		return;
	c->notified = true;
	conn_ref(c);
	pthread_mutex_lock(&srv->notify_lock);
	c->notify_next = srv->notify;
	srv->notify = c;
	pthread_mutex_unlock(&srv->notify_lock);
	if (write(srv->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_err("rpc: cannot wake the event loop: %s", strerror(errno));
}

/* A queued reply around buf, sent from off on; NULL when out of memory.
 * Caller holds c->lock: a chunk kept by a pop is used first, since
 * replies queue behind a busy sender often on a busy connection. */
static struct out_chunk *chunk_new(struct rpc_conn *c, struct xdr_out *buf,
                                   size_t off)
{
	struct out_chunk *o = c->spare_chunks;

	if (o) {
		c->spare_chunks = o->next;
		c->nspare_chunks--;
	} else if (!(o = malloc(sizeof(*o)))) {
		return NULL;
	}
	o->next = NULL;
	o->buf = *buf;
	o->off = off;
	memset(buf, 0, sizeof(*buf));
	return o;
}

/* Count what a queued chunk costs in memory, not its payload: small
 * replies sit in page-sized buffers. File parts count in full: they pin
 * page cache, and the limit on queued bytes must bound them (and the
 * descriptors they hold) as it bounds copied replies. */
static size_t chunk_cost(const struct out_chunk *o)
{
	return o->buf.cap + (size_t)o->buf.part_bytes + sizeof(*o);
}

/* Append the unsent part of reply to c's queue (caller holds c->lock);
 * the queue takes ownership of the buffer. False when out of memory. */
static bool conn_queue_locked(struct rpc_conn *c, struct xdr_out *reply,
                              size_t off)
{
	struct out_chunk *o = chunk_new(c, reply, off);
	if (!o)
		return false;
	if (c->out_tail)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	c->out_bytes += chunk_cost(o);
	return true;
}

/* Put the unsent rest of buf back at the head of c's queue (it goes out
 * before whatever was queued behind it), and have the loop wait for
 * writability. Caller holds c->lock. */
static void conn_requeue_head_locked(struct rpc_conn *c, struct xdr_out *buf,
                                     size_t off)
{
	struct out_chunk *o = chunk_new(c, buf, off);
	if (!o) {
		log_err("%s: out of memory queueing a reply", c->peer_str);
		xdr_out_free(buf);
		return;
	}
	o->next = c->out_head;
	c->out_head = o;
	if (!c->out_tail)
		c->out_tail = o;
	c->out_bytes += chunk_cost(o);
	conn_notify_locked(c);
}

/* Take the head of c's (non-empty) queue: its reply into *buf, how much
 * of it went out into *off. Caller holds c->lock. */
static void conn_pop_locked(struct rpc_conn *c, struct xdr_out *buf,
                            size_t *off)
{
	struct out_chunk *o = c->out_head;

	c->out_head = o->next;
	if (!c->out_head)
		c->out_tail = NULL;
	c->out_bytes -= chunk_cost(o);
	*buf = o->buf;
	*off = o->off;
	if (c->nspare_chunks < CHUNK_SPARE_MAX) {
		o->next = c->spare_chunks;
		c->spare_chunks = o;
		c->nspare_chunks++;
	} else {
		free(o);
	}
}

/* A sender is done with c (caller holds c->lock): a close that came
 * meanwhile left the socket fd to it. */
static void conn_end_send_locked(struct rpc_conn *c, int fd)
{
	c->sending = false;
	if (c->close_pending) {
		close(fd);
		c->close_pending = false;
	}
}

/* Send reply, then whatever other workers queued meanwhile, with c->lock
 * released during each send (caller holds it; held again on return).
 * Stops at a full socket, the rest waiting in the queue for the loop. */
static void conn_send_locked(struct rpc_conn *c, struct xdr_out *reply,
                             size_t off)
{
	struct xdr_out cur = *reply;
	int fd = c->fd;

	memset(reply, 0, sizeof(*reply));
	c->sending = true;
	for (;;) {
		pthread_mutex_unlock(&c->lock);
		ssize_t n = rpc_send_stream(fd, &cur, off);
		pthread_mutex_lock(&c->lock);
		if (n >= 0 && off + (size_t)n < xdr_out_size(&cur) &&
		    !c->closed) {
			conn_requeue_head_locked(c, &cur, off + (size_t)n);
			break;
		}
		xdr_out_free(&cur);
		/* broken (n < 0): the loop sees the error itself */
		if (n < 0 || c->closed || !c->out_head)
			break;
		conn_pop_locked(c, &cur, &off);
	}
	/* the queue this send drained may have held c over its byte limit,
	 * and the calls that would notify may all have finished meanwhile */
	if (c->paused && !conn_over_limits(c))
		conn_notify_locked(c);
	conn_end_send_locked(c, fd);
}

/* Worker side end of a call: send or queue the reply (NULL for none), and
 * wake the loop when it may read again. A reply goes behind queued ones:
 * those of a sender busy right now, or those waiting for writability. */
static void conn_finish_call(struct rpc_conn *c, struct xdr_out *reply)
{
	pthread_mutex_lock(&c->lock);
	c->inflight--;
	if (reply && reply->len && !c->closed) {
		if (!c->sending && !c->out_head)
			conn_send_locked(c, reply, 0);
		else if (!conn_queue_locked(c, reply, 0))
			log_err("%s: out of memory queueing a reply",
			        c->peer_str);
	}
	if (c->paused && !conn_over_limits(c))
		conn_notify_locked(c);
	pthread_mutex_unlock(&c->lock);
	if (reply)
		xdr_out_free(reply);
}

/* See rpc.h. Like a reply, the call goes behind queued ones. */
int rpc_conn_send(struct rpc_conn *c, const uint8_t *msg, size_t len)
{
	struct xdr_out x;
	int rc = 0;

	if (len % 4 || len > RPC_DEFAULT_MAX_RECORD)
		return -EINVAL;
	if (xdr_out_init(&x, len + 4, len + 4) != 0)
		return -ENOMEM;
	xdr_put_u32(&x, RPC_LAST_FRAG | (uint32_t)len);
	xdr_put_fixed(&x, msg, len);
	pthread_mutex_lock(&c->lock);
	if (c->closed)
		rc = -EPIPE;
	else if (!c->sending && !c->out_head)
		conn_send_locked(c, &x, 0);
	else if (!conn_queue_locked(c, &x, 0))
		rc = -ENOMEM;
	pthread_mutex_unlock(&c->lock);
	xdr_out_free(&x);
	return rc;
}

void rpc_conn_hold(struct rpc_conn *c)
{
	conn_ref(c);
}

void rpc_conn_release(struct rpc_conn *c)
{
	conn_unref(c);
}

bool rpc_conn_is_open(struct rpc_conn *c)
{
	bool open;

	pthread_mutex_lock(&c->lock);
	open = !c->closed;
	pthread_mutex_unlock(&c->lock);
	return open;
}

/* Whether this thread runs a lone call with the loop watched
 * (loop_dispatch), and which arming of the watch is its own: once the
 * loop was released, another thread may have armed it anew. */
static _Thread_local bool watch_armed;
static _Thread_local unsigned watch_mine;

/* Before a lone call's reply goes: the watch off. The client may send its
 * next call as soon as the reply arrives, before this thread is back in
 * the loop; watched, that call would wake the watcher and move the loop
 * to another thread (measured: two context switches a call instead of
 * one). Only the send itself, bounded by one reply's file reads, goes
 * unwatched. */
static void watch_disarm(struct rpc_server *srv)
{
	if (watch_armed) {
		if (atomic_load(&srv->watch_gen) == watch_mine)
			ev_watch_arm(srv->loop, false);
		watch_armed = false;
	}
}

/* ---- workers: running calls ---- */

/* Free a job and what it holds (its connection reference excepted). */
static void job_free(struct rpc_job *job)
{
	free(job->rec);
	free(job);
}

/* Loop thread: a TCP job, from the cache when it has one (rec then holds
 * a spare record buffer of cap bytes, or NULL), else zeroed from the heap.
 * NULL when out of memory. */
static struct rpc_job *job_get(struct rpc_server *srv)
{
	struct rpc_job *job = srv->jobs_free;

	if (!job)
		job = atomic_exchange_explicit(&srv->jobs_returned, NULL,
		                               memory_order_acquire);
	if (!job)
		return calloc(1, sizeof(*job));
	srv->jobs_free = job->cache_next;
	atomic_fetch_sub_explicit(&srv->jobs_cached, 1, memory_order_relaxed);
	return job;
}

/* Any thread: a finished TCP job goes back to the cache, keeping its
 * record buffer when small, or is freed when the cache is full. */
static void job_put(struct rpc_server *srv, struct rpc_job *job)
{
	struct rpc_job *head;

	if (job->cap > JOB_KEEP_REC) {
		free(job->rec);
		job->rec = NULL;
		job->cap = 0;
	}
	if (atomic_fetch_add_explicit(&srv->jobs_cached, 1,
	                              memory_order_relaxed) >= JOB_CACHE_MAX) {
		atomic_fetch_sub_explicit(&srv->jobs_cached, 1,
		                          memory_order_relaxed);
		job_free(job);
		return;
	}
	/* release: the loop that takes the list sees the job's fields */
	head = atomic_load_explicit(&srv->jobs_returned, memory_order_relaxed);
	do
		job->cache_next = head;
	while (!atomic_compare_exchange_weak_explicit(
	    &srv->jobs_returned, &head, job, memory_order_release,
	    memory_order_relaxed));
}

/* Free the cached jobs: once no thread runs calls any more. */
static void job_cache_drain(struct rpc_server *srv)
{
	struct rpc_job *job, *next;

	for (int i = 0; i < 2; i++) {
		job = i ? atomic_exchange(&srv->jobs_returned, NULL)
		        : srv->jobs_free;
		for (; job; job = next) {
			next = job->cache_next;
			job_free(job);
		}
	}
	srv->jobs_free = NULL;
	atomic_store(&srv->jobs_cached, 0);
}

/* Pool callback for a TCP call: the reply gets 4 bytes of headroom for the
 * record mark so mark and reply leave in one send. */
static void tcp_job_run(struct pool_job *pj, bool cancelled)
{
	struct rpc_job *job = (struct rpc_job *)pj;
	struct rpc_conn *c = job->conn;
	struct xdr_out reply;
	bool have_reply = false;

	if (!cancelled &&
	    xdr_out_init(&reply, REPLY_INITIAL, job->srv->reply_limit) == 0) {
		have_reply = true;
		xdr_out_allow_file(&reply);
		xdr_put_u32(&reply, 0);
		if (rpc_service_handle(job->srv->svc, job->rec, job->len,
		                       (struct sockaddr *)&job->peer,
		                       job->peer_len, RPC_TCP, c, &reply) == 0)
			xdr_patch_u32(&reply, 0,
			              RPC_LAST_FRAG |
			                  (uint32_t)(xdr_out_size(&reply) - 4));
		else
			xdr_out_truncate(&reply, 0);
	}
	watch_disarm(job->srv);
	conn_finish_call(c, have_reply ? &reply : NULL);
	conn_unref(c);
	job_put(job->srv, job);
}

/* Pool callback for a UDP call: run it and send the datagram back. */
static void udp_job_run(struct pool_job *pj, bool cancelled)
{
	struct rpc_job *job = (struct rpc_job *)pj;
	struct xdr_out reply;

	if (!cancelled &&
	    xdr_out_init(&reply, REPLY_INITIAL, UDP_MAX_REPLY) == 0) {
		if (rpc_service_handle(job->srv->svc, job->rec, job->len,
		                       (struct sockaddr *)&job->peer,
		                       job->peer_len, RPC_UDP, NULL,
		                       &reply) == 0) {
			watch_disarm(job->srv);
			sendto(job->udp_fd, reply.buf, reply.len,
			       MSG_DONTWAIT | MSG_NOSIGNAL,
			       (struct sockaddr *)&job->peer, job->peer_len);
		}
		xdr_out_free(&reply);
	}
	atomic_fetch_sub(&job->srv->udp_jobs, 1);
	job_free(job);
}

/* ---- loop thread: connections ---- */

/* Recompute c's epoll interest from its state: read unless over a limit,
 * write while replies wait for the socket. */
static void conn_refresh(struct rpc_conn *c)
{
	int mask;

	pthread_mutex_lock(&c->lock);
	c->paused = conn_over_limits(c);
	/* replies queued behind a worker's send are its to send */
	mask = (c->paused ? 0 : EV_READ) |
	       (c->out_head && !c->sending ? EV_WRITE : 0);
	if (mask != c->mask && !c->closed) {
		ev_mod(c->srv->loop, c->fd, mask, c);
		c->mask = mask;
	}
	pthread_mutex_unlock(&c->lock);
}

/* Close c's socket and drop the loop's reference. Calls in progress finish
 * and find it closed; their replies are dropped. */
static void conn_close(struct rpc_conn *c)
{
	struct rpc_server *srv = c->srv;

	ev_del(srv->loop, c->fd);
	pthread_mutex_lock(&c->lock);
	c->closed = true;
	if (c->sending) { /* the sender closes it: no fd reuse under it */
		shutdown(c->fd, SHUT_RDWR);
		c->close_pending = true;
	} else {
		close(c->fd);
	}
	c->fd = -1;
	pthread_mutex_unlock(&c->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->nconns--;
	conn_unref(c);
}

/* Hand the complete record in c's reader to a worker. -1 when out of
 * memory (the connection is then closed). */
static int conn_dispatch(struct rpc_conn *c)
{
	struct rpc_job *job;
	size_t len, cap = c->rr.cap;
	uint8_t *rec = rpc_record_take(&c->rr, &len);

	if (!rec) {
		log_info("%s: empty RPC record ignored", c->peer_str);
		return 0;
	}
	job = job_get(c->srv);
	if (!job) {
		free(rec);
		return -1;
	}
	/* The reader, left empty by the take, reads the next record into the
	 * buffer of the call this job ran before: no allocation while calls
	 * fit in it. */
	if (job->rec) {
		c->rr.buf = job->rec;
		c->rr.cap = job->cap;
	}
	job->job.fn = tcp_job_run;
	job->srv = c->srv;
	job->conn = c;
	job->rec = rec;
	job->len = len;
	job->cap = cap;
	memcpy(&job->peer, &c->peer, c->peer_len);
	job->peer_len = c->peer_len;
	pthread_mutex_lock(&c->lock);
	c->inflight++;
	c->paused = conn_over_limits(c);
	pthread_mutex_unlock(&c->lock);
	conn_ref(c);
	pool_batch_add(&c->srv->batch, &job->job);
	return 0;
}

/* Whether c is paused by back-pressure right now. Only the loop thread
 * writes paused (conn_dispatch, conn_refresh), so the loop thread reads it
 * without the lock: no lock per record to contend with a worker sending a
 * reply under it. */
static bool conn_paused(struct rpc_conn *c)
{
	return c->paused;
}

/* Feed input to the record reader, dispatching each complete record, until
 * the input ends or back-pressure pauses c. Returns the bytes consumed or
 * -1 when the stream is malformed (logged) and c must close. */
static long conn_feed(struct rpc_conn *c, const uint8_t *p, size_t n)
{
	size_t used = 0;

	while (used < n && !conn_paused(c)) {
		bool done;
		long k = rpc_record_feed(&c->rr, p + used, n - used, &done);
		if (k < 0) {
			log_warn("%s: malformed RPC record marking or record "
			         "over %zu bytes; closing connection",
			         c->peer_str, c->rr.max_record);
			return -1;
		}
		used += (size_t)k;
		if (done && conn_dispatch(c) < 0)
			return -1;
	}
	return (long)used;
}

/* Keep input that arrived past a pause for when reading resumes. */
static int conn_stash(struct rpc_conn *c, const uint8_t *p, size_t n)
{
	c->stash = malloc(n);
	if (!c->stash)
		return -1;
	memcpy(c->stash, p, n);
	c->stash_len = n;
	c->stash_off = 0;
	return 0;
}

/* Feed the stash left by a pause. 0 when it is used up, 1 when c paused
 * again, -1 to close. */
static int conn_feed_stash(struct rpc_conn *c)
{
	long k =
	    conn_feed(c, c->stash + c->stash_off, c->stash_len - c->stash_off);
	if (k < 0)
		return -1;
	c->stash_off += (size_t)k;
	if (c->stash_off < c->stash_len)
		return 1;
	free(c->stash);
	c->stash = NULL;
	c->stash_len = c->stash_off = 0;
	return 0;
}

/* Read what the socket has (a bounded amount) and dispatch the calls in
 * it. -1 when c must close (EOF, error, malformed stream). */
static int conn_read(struct rpc_conn *c)
{
	uint8_t *buf = c->srv->rbuf;

	if (c->stash) {
		int r = conn_feed_stash(c);
		if (r != 0)
			return r < 0 ? -1 : 0;
	}
	for (int i = 0; i < READS_PER_EVENT && !conn_paused(c); i++) {
		ssize_t n = read(c->fd, buf, READ_BUF_SIZE);
		long k;
		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		k = conn_feed(c, buf, (size_t)n);
		if (k < 0)
			return -1;
		if (k < n)
			return conn_stash(c, buf + k, (size_t)(n - k));
		if (n < READ_BUF_SIZE)
			break;
	}
	return 0;
}

/* A queued reply with file parts is sent by a worker, not the loop: its
 * sendfile reads the file then, which on a cold cache waits for the disk,
 * and the loop must never wait for a disk. */
struct flush_job {
	struct pool_job job; /* first: the pool hands this pointer back */
	struct rpc_conn *conn;
	int fd; /* c->fd, which a close meanwhile leaves to this job */
};

static void flush_job_run(struct pool_job *pj, bool cancelled)
{
	struct flush_job *job = (struct flush_job *)pj;
	struct rpc_conn *c = job->conn;

	pthread_mutex_lock(&c->lock);
	if (cancelled || c->closed || !c->out_head) {
		conn_end_send_locked(c, job->fd);
	} else {
		struct xdr_out cur;
		size_t off;

		conn_pop_locked(c, &cur, &off);
		conn_send_locked(c, &cur, off);
	}
	/* The loop looks again: to watch for writability if replies are
	 * left, or to read again if draining ended a pause. */
	if (!c->closed)
		conn_notify_locked(c);
	pthread_mutex_unlock(&c->lock);
	conn_unref(c);
	free(job);
}

/* Hand the queue to a worker (caller holds c->lock, c->sending is clear).
 * False when no job could be made: the loop sends itself. */
static bool conn_flush_by_worker(struct rpc_conn *c)
{
	struct flush_job *job = malloc(sizeof(*job));

	if (!job)
		return false;
	job->job.fn = flush_job_run;
	job->conn = c;
	job->fd = c->fd;
	conn_ref(c);
	c->sending = true; /* workers finishing calls queue behind it */
	pool_submit(c->srv->pool, &job->job);
	return true;
}

/* Send queued replies while the socket takes them; one with file parts
 * goes to a worker. -1 on a broken connection. */
static int conn_flush(struct rpc_conn *c)
{
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	/* a worker sending right now sends the queue after its reply */
	while (c->out_head && !c->sending) {
		struct out_chunk *o = c->out_head;
		if (o->buf.nparts && conn_flush_by_worker(c))
			break;
		ssize_t n = rpc_send_stream(c->fd, &o->buf, o->off);
		if (n < 0) {
			rc = -1;
			break;
		}
		o->off += (size_t)n;
		if (o->off < xdr_out_size(&o->buf))
			break;
		struct xdr_out done;
		size_t off;
		conn_pop_locked(c, &done, &off);
		xdr_out_free(&done);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* End the loop's turn with c: recompute its interest and, while that ends
 * a pause with input stashed, feed the stash. A call may finish, or a
 * worker's send drain the queue, between the pause and this refresh; the
 * worker then saw a pause the refresh ends without reading, and no new
 * bytes may ever arrive to trigger a read. -1 when c must close. */
static int conn_settle(struct rpc_conn *c)
{
	conn_refresh(c);
	while (c->stash && !conn_paused(c)) {
		if (conn_read(c) < 0)
			return -1;
		conn_refresh(c);
	}
	return 0;
}

/* Serve readiness of c: error, writable, readable. Draining the queue may
 * end a pause, so input stashed by it is fed here too: no new bytes may
 * ever arrive to trigger a read. */
static void conn_event(struct rpc_conn *c, int mask)
{
	if ((mask & EV_ERROR) && !(mask & EV_READ)) {
		conn_close(c);
		return;
	}
	if ((mask & EV_WRITE) && conn_flush(c) < 0) {
		conn_close(c);
		return;
	}
	conn_refresh(c);
	if ((((mask & (EV_READ | EV_ERROR)) || c->stash) && conn_read(c) < 0) ||
	    conn_settle(c) < 0)
		conn_close(c);
}

/* A worker asked for attention: read again after a pause (stash first),
 * and arm or disarm writability. */
static void conn_resume(struct rpc_conn *c)
{
	bool closed;

	pthread_mutex_lock(&c->lock);
	c->notified = false;
	closed = c->closed;
	pthread_mutex_unlock(&c->lock);
	if (closed)
		return;
	conn_refresh(c);
	if ((!conn_paused(c) && conn_read(c) < 0) || conn_settle(c) < 0)
		conn_close(c);
}

/* Set up a connection for an accepted socket. */
static void conn_new(struct rpc_server *srv, int fd,
                     const struct sockaddr_storage *peer, socklen_t peer_len)
{
	struct rpc_conn *c = calloc(1, sizeof(*c));
	int one = 1;

	if (!c) {
		close(fd);
		return;
	}
	c->kind = SRC_CONN;
	c->fd = fd;
	atomic_init(&c->refs, 1);
	c->srv = srv;
	memcpy(&c->peer, peer, peer_len);
	c->peer_len = peer_len;
	rpc_peer_str((struct sockaddr *)&c->peer, c->peer_str,
	             sizeof(c->peer_str));
	rpc_record_init(&c->rr, srv->cfg.max_record);
	pthread_mutex_init(&c->lock, NULL);
	c->mask = EV_READ;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (ev_add(srv->loop, fd, EV_READ, c) < 0) {
		close(fd);
		conn_free(c);
		return;
	}
	c->next = srv->conns;
	if (srv->conns)
		srv->conns->prev = c;
	srv->conns = c;
	srv->nconns++;
}

/* ---- loop thread: listeners ---- */

/* Out of file descriptors: accept the oldest pending connection with the
 * spare fd and close it at once, so the listener stops firing. */
static void accept_shed(struct rpc_server *srv, int lfd)
{
	int fd;
	log_warn("rpc: out of file descriptors; refusing a connection");
	if (srv->spare_fd >= 0)
		close(srv->spare_fd);
	fd = accept(lfd, NULL, NULL);
	if (fd >= 0)
		close(fd);
	srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* Accept pending connections, closing those beyond max_conns. */
static void listener_accept(struct rpc_server *srv, struct rpc_listener *l)
{
	for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int fd = accept4(l->fd, (struct sockaddr *)&peer, &plen,
		                 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE)
				accept_shed(srv, l->fd);
			else if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_err("rpc: accept: %s", strerror(errno));
			return;
		}
		if (srv->nconns >= srv->cfg.max_conns) {
			if (!srv->conns_full_logged)
				log_warn("rpc: %d connections open; closing "
				         "new ones",
				         srv->nconns);
			srv->conns_full_logged = true;
			close(fd);
			continue;
		}
		srv->conns_full_logged = false;
		conn_new(srv, fd, &peer, plen);
	}
}

/* Receive pending datagrams and queue each as a call. */
static void listener_udp(struct rpc_server *srv, struct rpc_listener *l)
{
	int max_jobs = srv->cfg.nthreads * UDP_JOBS_PER_THREAD;

	for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
		struct rpc_job *job;
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		ssize_t n =
		    recvfrom(l->fd, srv->rbuf, READ_BUF_SIZE, MSG_DONTWAIT,
		             (struct sockaddr *)&peer, &plen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (atomic_load(&srv->udp_jobs) >= max_jobs)
			continue; /* overloaded: UDP clients retransmit */
		job = calloc(1, sizeof(*job));
		if (!job || !(job->rec = malloc(n ? (size_t)n : 1))) {
			free(job);
			continue;
		}
		memcpy(job->rec, srv->rbuf, (size_t)n);
		job->len = (size_t)n;
		job->job.fn = udp_job_run;
		job->srv = srv;
		job->udp_fd = l->fd;
		memcpy(&job->peer, &peer, plen);
		job->peer_len = plen;
		atomic_fetch_add(&srv->udp_jobs, 1);
		pool_submit(srv->pool, &job->job);
	}
}

/* ---- loop thread: wake-ups and the loop ---- */

/* Take the connections workers asked about; each holds a reference. */
static struct rpc_conn *notify_take(struct rpc_server *srv)
{
	struct rpc_conn *list;
	pthread_mutex_lock(&srv->notify_lock);
	list = srv->notify;
	srv->notify = NULL;
	pthread_mutex_unlock(&srv->notify_lock);
	return list;
}

/* Serve the notifications; with serve false only drop their references. */
static void notify_run(struct rpc_server *srv, bool serve)
{
	struct rpc_conn *c = notify_take(srv), *next;
	for (; c; c = next) {
		next = c->notify_next;
		if (serve)
			conn_resume(c);
		conn_unref(c);
	}
}

/* Drain the eventfd counter. */
static void wake_drain(struct rpc_server *srv)
{
	uint64_t v;
	while (read(srv->wake_fd, &v, sizeof(v)) > 0)
		;
}

/* Serve one batch of ready sources. Notifications are served after the
 * batch: they may close connections that later entries still point to. */
static void loop_batch(struct rpc_server *srv, struct ev_fired *fired, int n)
{
	bool woken = false;

	for (int i = 0; i < n; i++) {
		enum source_kind *kind = fired[i].data;
		switch (*kind) {
		case SRC_WAKE:
			wake_drain(srv);
			woken = true;
			break;
		case SRC_LISTEN_TCP:
			listener_accept(srv, fired[i].data);
			break;
		case SRC_UDP:
			listener_udp(srv, fired[i].data);
			break;
		case SRC_CONN:
			conn_event(fired[i].data, fired[i].mask);
			break;
		}
	}
	if (woken)
		notify_run(srv, true);
}

/* The calls read in this pass: the first for this thread to run, when a
 * waiting thread takes over the loop; the others queued at once, so a
 * client's burst of pipelined calls wakes burst_wake threads, not one per
 * call. A lone call with nothing queued is run here with the loop on
 * standby (*solo): offered to the pool and watched (watch_main), so
 * another thread takes the loop over only if a source becomes ready
 * before the call is done. Waking a thread to take the loop costs two
 * context switches a call; in the emulated guest, where each costs tens
 * of microseconds, that was ~10% of a small call's round trip, and a
 * watcher looking every few milliseconds instead cost the guest's NULL
 * round trip ~30 us and doubled its 90th percentile (bench/results/
 * stop25, stop27). Returns the kept call or NULL. */
static struct pool_job *loop_dispatch(struct rpc_server *srv, bool *solo)
{
	/* taken first: after the hand-off the next pass fills srv->batch */
	struct pool_batch b = srv->batch;
	struct pool_job *mine = b.head;

	srv->batch = (struct pool_batch){0};
	*solo = mine && b.n == 1 && srv->watcher_up &&
	        !pool_backlog(srv->pool) &&
	        pool_standby(srv->pool, &srv->loop_job);
	if (*solo) {
		watch_mine = atomic_fetch_add(&srv->watch_gen, 1) + 1;
		watch_armed = ev_watch_arm(srv->loop, true) == 0;
		if (watch_armed || !pool_reclaim(srv->pool, &srv->loop_job))
			return mine;
		*solo = false; /* cannot watch: hand off */
	}
	if (mine && pool_handoff(srv->pool, &srv->loop_job)) {
		b.head = mine->next;
		if (!b.head)
			b.tail = NULL;
		b.n--;
	} else {
		mine = NULL;
	}
	/* this thread runs calls too: the burst's share of wake-ups is
	 * one fewer, and it takes queued calls after its own */
	pool_submit_batch(srv->pool, &b,
	                  mine ? srv->burst_wake - 1 : srv->burst_wake);
	return mine;
}

/* After a lone call: whether the loop is still this thread's, or was
 * released to another meanwhile. Disarmed first (if the call did not,
 * watch_disarm), so a source ready from now on wakes only the loop's own
 * wait. */
static bool loop_take_back(struct rpc_server *srv)
{
	watch_disarm(srv);
	return pool_reclaim(srv->pool, &srv->loop_job);
}

/* The watcher thread: asleep until a watch armed by loop_dispatch fires
 * (a source ready while the loop's thread runs a lone call: a call on
 * another connection, the next one on this, room for a waiting reply),
 * then the loop is queued for another thread. No timer runs, and nothing
 * wakes it while the loop's thread waits itself. */
static void *watch_main(void *arg)
{
	struct rpc_server *srv = arg;

	while (!atomic_load(&srv->watch_stop)) {
		int n = ev_watch_wait(srv->loop, -1);
		if (n < 0) {
			log_err("rpc: loop watch: %s", strerror(-n));
			break;
		}
		if (n > 0 && !atomic_load(&srv->watch_stop))
			pool_release_standby(srv->pool);
	}
	return NULL;
}

/* Stop the watcher: the wake eventfd made readable, the watch armed. */
static void watcher_stop(struct rpc_server *srv)
{
	uint64_t one = 1;

	if (!srv->watcher_up)
		return;
	atomic_store(&srv->watch_stop, true);
	if (write(srv->wake_fd, &one, sizeof(one)) < 0) {
		/* the counter is non-zero already: readable anyway */
	}
	ev_watch_arm(srv->loop, true);
	pthread_join(srv->watcher, NULL);
	srv->watcher_up = false;
}

/* Close every connection and listener and stop the workers: running calls
 * finish (their replies are dropped), queued ones are cancelled. */
static void server_shutdown(struct rpc_server *srv)
{
	while (srv->conns)
		conn_close(srv->conns);
	watcher_stop(srv);
	pool_stop(srv->pool);
	srv->pool = NULL;
	notify_run(srv, false);
	for (int i = 0; i < srv->nlisteners; i++) {
		if (srv->listeners[i].fd < 0)
			continue;
		ev_del(srv->loop, srv->listeners[i].fd);
		close(srv->listeners[i].fd);
		srv->listeners[i].fd = -1;
	}
}

/* Calls queued since the last pass and still untaken after a timeout,
 * or for a clock tick while other events keep the loop busy: the awake
 * workers may be stuck in slow calls, so wake one more. */
static void backlog_check(struct rpc_server *srv, bool backlog, bool timeout)
{
	struct timespec ts;
	uint64_t now;

	if (!backlog || !pool_backlog(srv->pool)) {
		srv->backlog_since = 0;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	if (!srv->backlog_since)
		srv->backlog_since = now;
	if (timeout || now - srv->backlog_since >= BACKLOG_CHECK_MS) {
		pool_kick(srv->pool);
		srv->backlog_since = now;
	}
}

/* The loop ended (stopped, or failed with rc): wake rpc_server_run. */
static void loop_end(struct rpc_server *srv, int rc)
{
	pthread_mutex_lock(&srv->run_lock);
	srv->loop_done = true;
	srv->loop_rc = rc;
	pthread_cond_signal(&srv->run_cond);
	pthread_mutex_unlock(&srv->run_lock);
}

/* Pool job: run the loop until a pass hands it on with a call for this
 * thread (run here), or until the server stops. */
static void loop_job_run(struct pool_job *pj, bool cancelled)
{
	struct rpc_server *srv =
	    (struct rpc_server *)((char *)pj -
	                          offsetof(struct rpc_server, loop_job));

	if (cancelled) /* only once the loop has ended */
		return;
	while (!atomic_load(&srv->stop)) {
		struct ev_fired *fired;
		/* calls left queued are looked at again after a while: the
		 * threads woken for them may be stuck in slow calls */
		bool backlog = pool_backlog(srv->pool);
		int n =
		    ev_wait(srv->loop, backlog ? BACKLOG_CHECK_MS : -1, &fired);
		backlog_check(srv, backlog, n == 0);
		if (n < 0) {
			log_err("rpc: event loop: %s", strerror(-n));
			loop_end(srv, n);
			return;
		}
		loop_batch(srv, fired, n);
		bool solo;
		struct pool_job *mine = loop_dispatch(srv, &solo);
		if (mine) {
			mine->fn(mine, false);
			/* the loop is still this thread's unless taken over */
			if (solo && loop_take_back(srv))
				continue;
			return;
		}
	}
	loop_end(srv, 0);
}

/* See rpc.h. Starts the workers, one more than the calls that may run at
 * once, since one of them runs the loop; waits for the loop to end, then
 * closes all. */
int rpc_server_run(struct rpc_server *srv)
{
	srv->pool = pool_start(srv->cfg.nthreads + 1);
	if (!srv->pool)
		return -ENOMEM;
	srv->loop_done = false;
	srv->loop_job.fn = loop_job_run;
	atomic_store(&srv->watch_stop, false);
	srv->watcher_up =
	    pthread_create(&srv->watcher, NULL, watch_main, srv) == 0;
	pool_submit(srv->pool, &srv->loop_job);
	pthread_mutex_lock(&srv->run_lock);
	while (!srv->loop_done)
		pthread_cond_wait(&srv->run_cond, &srv->run_lock);
	pthread_mutex_unlock(&srv->run_lock);
	server_shutdown(srv);
	return srv->loop_rc;
}

/* See rpc.h: an atomic store and a write(2), both async-signal-safe. */
void rpc_server_stop(struct rpc_server *srv)
{
	int saved = errno;
	uint64_t one = 1;
	atomic_store(&srv->stop, true);
	if (write(srv->wake_fd, &one, sizeof(one)) < 0) {
		/* the counter is already non-zero: the loop wakes anyway */
	}
	errno = saved;
}

/* Serving thousands of connections needs thousands of fds: raise the soft
 * limit to the hard one. Replies waiting to send file parts hold a
 * descriptor each: an eighth of the limit (they copy beyond it). */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			log_warn("rpc: cannot raise the open file limit: %s",
			         strerror(errno));
			getrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	rlim_t files = rl.rlim_cur / 8;
	xdr_set_file_limit(files < 16      ? 16
	                   : files > 16384 ? 16384
	                                   : (unsigned)files);
}

/* The configuration with defaults for zero fields. */
static struct rpc_server_config
config_defaults(const struct rpc_server_config *in)
{
	struct rpc_server_config c = {0};
	if (in)
		c = *in;
	if (c.nthreads <= 0)
		c.nthreads = 8;
	if (c.max_record == 0)
		c.max_record = RPC_DEFAULT_MAX_RECORD;
	if (c.max_conns <= 0)
		c.max_conns = 4096;
	if (c.max_inflight <= 0)
		c.max_inflight = 32;
	if (c.max_out_bytes == 0)
		c.max_out_bytes = 8 * 1024 * 1024;
	return c;
}

/* See rpc.h. NULL on failure. */
struct rpc_server *rpc_server_new(struct rpc_service *svc,
                                  const struct rpc_server_config *cfg)
{
	struct rpc_server *srv = calloc(1, sizeof(*srv));

	if (!srv)
		return NULL;
	srv->svc = svc;
	srv->cfg = config_defaults(cfg);
	srv->reply_limit = 4 + (srv->cfg.max_record > RPC_DEFAULT_MAX_RECORD
	                            ? srv->cfg.max_record
	                            : RPC_DEFAULT_MAX_RECORD);
	srv->wake_kind = SRC_WAKE;
	/* a burst wakes as many threads as can run at once; more follow
	 * through pool_kick when they block */
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	srv->burst_wake = ncpu > 1 ? (int)ncpu : 1;
	srv->wake_fd = -1;
	pthread_mutex_init(&srv->notify_lock, NULL);
	pthread_mutex_init(&srv->run_lock, NULL);
	pthread_cond_init(&srv->run_cond, NULL);
	raise_fd_limit();
	srv->loop = ev_new(MAX_FIRED);
	srv->rbuf = malloc(READ_BUF_SIZE);
	srv->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	srv->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (!srv->loop || !srv->rbuf || srv->wake_fd < 0 ||
	    ev_add(srv->loop, srv->wake_fd, EV_READ, &srv->wake_kind) < 0)
		goto err;
	return srv;
err:
	log_err("rpc: cannot create the server: %s", strerror(errno));
	rpc_server_free(srv);
	return NULL;
}

/* Parse a numeric address ("127.0.0.1", "::1"; NULL, "" or "*" for any). */
static int parse_addr(const char *addr, uint16_t port,
                      struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (!addr || !*addr || strcmp(addr, "*") == 0)
		addr = "0.0.0.0";
	if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		*len = sizeof(*in);
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

/* See rpc.h. */
int rpc_server_listen(struct rpc_server *srv, const char *addr, uint16_t port,
                      int proto)
{
	struct rpc_listener *l;
	struct sockaddr_storage ss;
	socklen_t len;
	int fd = -1, one = 1, rc;

	if (proto != SOCK_STREAM && proto != SOCK_DGRAM)
		return -EINVAL;
	if (srv->nlisteners == MAX_LISTENERS)
		return -ENOSPC;
	rc = parse_addr(addr, port, &ss, &len);
	if (rc < 0)
		return rc;
	fd = socket(ss.ss_family, proto | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 ||
	    (proto == SOCK_STREAM && listen(fd, SOMAXCONN) < 0))
		goto err;
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		goto err;
	l = &srv->listeners[srv->nlisteners];
	l->kind = proto == SOCK_STREAM ? SRC_LISTEN_TCP : SRC_UDP;
	l->fd = fd;
	l->port = rpc_peer_port((struct sockaddr *)&ss);
	rc = ev_add(srv->loop, fd, EV_READ, l);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	srv->nlisteners++;
	return 0;
err:
	rc = -errno;
	close(fd);
	return rc;
}

/* See rpc.h; 0 when nothing of that proto listens. */
uint16_t rpc_server_port(const struct rpc_server *srv, int proto)
{
	enum source_kind kind = proto == SOCK_STREAM ? SRC_LISTEN_TCP : SRC_UDP;
	for (int i = srv->nlisteners - 1; i >= 0; i--)
		if (srv->listeners[i].kind == kind)
			return srv->listeners[i].port;
	return 0;
}

/* See rpc.h. After rpc_server_run returned, or instead of running it. */
void rpc_server_free(struct rpc_server *srv)
{
	if (!srv)
		return;
	if (srv->pool || srv->conns)
		server_shutdown(srv);
	for (int i = 0; i < srv->nlisteners; i++)
		if (srv->listeners[i].fd >= 0)
			close(srv->listeners[i].fd);
	if (srv->wake_fd >= 0)
		close(srv->wake_fd);
	if (srv->spare_fd >= 0)
		close(srv->spare_fd);
	job_cache_drain(srv);
	ev_free(srv->loop);
	free(srv->rbuf);
	pthread_mutex_destroy(&srv->notify_lock);
	pthread_mutex_destroy(&srv->run_lock);
	pthread_cond_destroy(&srv->run_cond);
	free(srv);
}

int rpc_call_local_addr(const struct rpc_call *call,
                        struct sockaddr_storage *out)
{
	socklen_t len = sizeof(*out);

	if (!call->conn)
		return -ENOTCONN;
	/* The connection outlives every call running on it. */
	return getsockname(call->conn->fd, (struct sockaddr *)out, &len)
	           ? -errno
	           : 0;
}
