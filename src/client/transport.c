/* ONC RPC client over TCP: record marking, xid matching, pipelining and
 * reconnection (see transport.h for the contract).
 *
 * Receiving: a caller waiting for its reply reads the socket itself when
 * nobody else does (c->reading), delivering every reply it meets to its
 * request, until its own arrives; then it lets another waiter take over.
 * A dedicated reader thread would cost a wake-up and a thread switch per
 * reply (measured: a 1 GiB all-hole READ_PLUS, 1024 tiny replies, spent
 * more time in those than in anything else). The helper thread only
 * reconnects.
 *
 * A sleeping caller is woken by its own condition variable (r->wake): for
 * its reply, to take over reading, or when the connection changes. One
 * shared one would wake all of sixteen threads for each reply.
 *
 * Locking: c->lock guards the pending list, the connection state (fd,
 * gen, reading) and every request's fields. c->send_lock serialises
 * writers on the socket, so records never interleave; it is taken before
 * c->lock, never after. Only the reading caller closes a broken socket,
 * holding both.
 */
#include "client/transport.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "client/counters.h"
#include "util/poison.h"

#define RPC_CALL 0
#define RPC_REPLY 1
#define RPC_VERSION 2
#define AUTH_NONE 0
#define AUTH_SYS 1
#define HDR_MAX 512
#define STAGE_SIZE 65536
#define RECONNECT_MAX_DELAY_MS 1000

struct rpc_req {
	uint32_t xid;
	int op;
	uint8_t hdr[HDR_MAX]; /* record mark + call header */
	size_t hdr_len;
	struct xdr_out args;
	uint64_t sent_gen; /* connection generation last sent on; 0: never */
	bool done;
	pthread_cond_t *wake; /* while its caller sleeps: signalled for it */
	uint8_t *rbuf;
	size_t rlen;
	struct timespec deadline;
	struct rpc_req *prev, *next;
};

struct rpc_clnt {
	struct rpc_clnt_cfg cfg;
	struct sockaddr_storage addr;
	socklen_t alen;
	uint8_t cred[HDR_MAX / 2]; /* encoded credential and verifier */
	size_t cred_len;

	pthread_mutex_t lock;
	pthread_cond_t rcond; /* wakes the helper to reconnect or exit */
	pthread_mutex_t send_lock;
	int fd;
	uint64_t gen;
	bool closing;
	int last_err; /* why the connection last broke */
	uint32_t next_xid;
	struct rpc_req pending; /* list head */
	bool reading;           /* a caller reads the socket */
	pthread_t reader;       /* the helper: reconnects */

	/* the reading caller's staging buffer */
	uint8_t *stage;
	size_t spos, slen;
};

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void deadline_after(struct timespec *ts, uint32_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* RFC 5531 section 14: AUTH_SYS credential and an AUTH_NONE verifier. */
static int encode_cred(struct rpc_clnt *c)
{
	struct xdr_out x;
	char host[65] = "snfs";

	if (xdr_out_init(&x, 256, sizeof(c->cred)) < 0)
		return -ENOMEM;
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = 0;
	xdr_put_u32(&x, AUTH_SYS);
	size_t lenpos = x.len;
	xdr_put_u32(&x, 0);
	xdr_put_u32(&x, (uint32_t)time(NULL));
	xdr_put_string(&x, host);
	xdr_put_u32(&x, c->cfg.uid);
	xdr_put_u32(&x, c->cfg.gid);
	xdr_put_u32(&x, c->cfg.ngids);
	for (uint32_t i = 0; i < c->cfg.ngids; i++)
		xdr_put_u32(&x, c->cfg.gids[i]);
	xdr_patch_u32(&x, lenpos, (uint32_t)(x.len - lenpos - 4));
	xdr_put_u32(&x, AUTH_NONE);
	xdr_put_u32(&x, 0);
	if (x.err) {
		xdr_out_free(&x);
		return -EINVAL;
	}
	memcpy(c->cred, x.buf, x.len);
	c->cred_len = x.len;
	xdr_out_free(&x);
	return 0;
}

static int resolve(struct rpc_clnt *c)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	char port[8];

	snprintf(port, sizeof(port), "%u", c->cfg.port);
	int rc = getaddrinfo(c->cfg.host, port, &hints, &ai);
	if (rc != 0)
		return rc == EAI_NONAME ? -EHOSTUNREACH : -EINVAL;
	memcpy(&c->addr, ai->ai_addr, ai->ai_addrlen);
	c->alen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* One connection attempt, bounded by the call timeout. */
static int connect_once(struct rpc_clnt *c)
{
	int fd = socket(c->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct timeval tv = {.tv_sec = c->cfg.timeout_ms / 1000,
	                     .tv_usec = (c->cfg.timeout_ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* a server stalling in the middle of a reply breaks the connection */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&c->addr, c->alen) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* A big read waits, in poll, for up to LOWAT_MAX bytes at once
 * (SO_RCVLOWAT) instead of being woken for every segment that arrives:
 * the sender's softirq then wakes nobody per segment either. Measured
 * over loopback, 1 MiB records: sender CPU -22%, receiver -40%, time
 * -22%. The wait is in poll, not in a blocking read: a read that copied
 * part of the queue then sleeps until the whole mark is queued anew,
 * which the rest of a record may never reach. Only ever for bytes of a
 * record under way, which the server sends unasked; the mark read and
 * the poll between records see any byte at all. */
#define LOWAT_MAX (1u << 20)

static void set_lowat(int fd, int *cur, size_t n)
{
	int v = n > LOWAT_MAX ? (int)LOWAT_MAX : (int)n;
	if (v != *cur &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)) == 0)
		*cur = v;
}

static int read_direct(struct rpc_clnt *c, int fd, uint8_t *dst, size_t n)
{
	int lowat = 1, rc = 0;

	while (n > 0 && rc == 0) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		set_lowat(fd, &lowat, n > STAGE_SIZE ? n : 1);
		int k = poll(&p, 1,
		             c->cfg.timeout_ms > INT32_MAX
		                 ? -1
		                 : (int)c->cfg.timeout_ms);
		if (k == 0)
			rc = -ETIMEDOUT; /* stalled inside a record */
		else if (k < 0 && errno != EINTR)
			rc = -errno;
		if (k <= 0)
			continue;
		ssize_t r = recv(fd, dst, n, MSG_DONTWAIT);
		if (r > 0) {
			dst += r;
			n -= (size_t)r;
		} else if (r == 0) {
			rc = -ECONNRESET;
		} else if (errno != EINTR && errno != EAGAIN &&
		           errno != EWOULDBLOCK) {
			rc = -errno;
		}
	}
	set_lowat(fd, &lowat, 1);
	return rc;
}

/* Read exactly n bytes through the staging buffer. */
static int read_exact(struct rpc_clnt *c, int fd, uint8_t *dst, size_t n)
{
	while (n > 0) {
		if (c->spos < c->slen) {
			size_t k = c->slen - c->spos;
			if (k > n)
				k = n;
			memcpy(dst, c->stage + c->spos, k);
			c->spos += k;
			dst += k;
			n -= k;
			continue;
		}
		if (n >= STAGE_SIZE)
			return read_direct(c, fd, dst, n);
		ssize_t r = read(fd, c->stage, STAGE_SIZE);
		if (r > 0) {
			c->spos = 0;
			c->slen = (size_t)r;
			continue;
		}
		if (r == 0)
			return -ECONNRESET;
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/* ---- reply buffers ----
 *
 * Every reply lives in a buffer from rpc_buf_alloc. Large ones (READ,
 * READ_PLUS, READDIR replies) come from a process-wide arena of slots: a
 * fresh 1 MiB malloc per reply is a fresh mapping from glibc (or trimmed
 * arena memory), and faulting its 256 pages in cost more client CPU than
 * copying the data (measured: snfs cat of 1 GiB, 0.52 s system time
 * against 0.19 s with buffers reused). Even a slot's first use was dear
 * where page faults are (a paravirtualised MMU: 16 MiB touched page by
 * page 37.7 ms, populated by one madvise 3.0 ms, as huge pages 0.5 ms;
 * bench/results/stop32/pf.c), and a 1 GiB read faulted its sixteen
 * in-flight buffers in on every run, 11% of snfs cat's CPU. So the arena
 * is one mapping asking for huge pages, a slot populated in one call the
 * first time it is handed out; the pages stay for the process's life,
 * as the idle pool's did. More buffers at once than slots fall back to
 * malloc. A header before the data records the capacity, so every such
 * buffer must go back through rpc_buf_free. */
#define BUF_HDR 16
#define POOL_MIN (64u << 10)                /* smaller ones: plain malloc */
#define POOL_CAP ((1u << 20) + (64u << 10)) /* an rsize reply and headers */
#define SLOT_SIZE (POOL_CAP + 4096u)        /* with BUF_HDR, page-rounded */
#define ARENA_SLOTS 32                      /* 34 MiB of address space */
#define HUGE_PAGE (2u << 20)

/* Under AddressSanitizer a slot is poisoned while free and past its
 * capacity while used (util/poison.h), so the sanitizer build still
 * catches overruns and uses after free in reply buffers, as it did with
 * malloc's. */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint8_t *base; /* NULL: not mapped yet (or could not be) */
	bool tried;
	uint32_t nfree;
	uint16_t free[ARENA_SLOTS]; /* a stack: the last freed, still warm */
	bool populated[ARENA_SLOTS];
	bool used[ARENA_SLOTS]; /* handed out: a second free is a bug */
} arena;

static size_t buf_cap(const uint8_t *p)
{
	size_t cap;
	memcpy(&cap, p - BUF_HDR, sizeof(cap));
	return cap;
}

/* Map the arena, aligned to huge pages (caller holds pool_lock). */
static void arena_map_locked(void)
{
	size_t len = (size_t)ARENA_SLOTS * SLOT_SIZE;
	uint8_t *p;
	uintptr_t a;

	arena.tried = true;
	p = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	a = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((uint8_t *)a + len, (uintptr_t)p + HUGE_PAGE - a);
	(void)madvise((uint8_t *)a, len, MADV_HUGEPAGE); /* a hint only */
	__atomic_store_n(&arena.base, (uint8_t *)a, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < ARENA_SLOTS; i++)
		arena.free[i] = (uint16_t)(ARENA_SLOTS - 1 - i);
	MEM_POISON((uint8_t *)a, len);
	arena.nfree = ARENA_SLOTS;
}

/* A free slot, or NULL. */
static uint8_t *arena_take(void)
{
	uint8_t *raw = NULL;
	bool populate = false;

	pthread_mutex_lock(&pool_lock);
	if (!arena.tried)
		arena_map_locked();
	if (arena.base && arena.nfree) {
		uint16_t k = arena.free[--arena.nfree];
		raw = arena.base + (size_t)k * SLOT_SIZE;
		populate = !arena.populated[k];
		arena.populated[k] = true;
		arena.used[k] = true;
	}
	pthread_mutex_unlock(&pool_lock);
	/* one call instead of a fault per page; refused by kernels before
	 * 5.14, which then fault as usual */
	if (populate)
		(void)madvise(raw, SLOT_SIZE, MADV_POPULATE_WRITE);
	if (raw)
		MEM_UNPOISON(raw, BUF_HDR + POOL_CAP);
	return raw;
}

/* Read unlocked: a buffer freed was handed out after base was set (an
 * arena slot), or is malloc's, outside wherever base later lands. */
static bool in_arena(const uint8_t *raw)
{
	const uint8_t *b = __atomic_load_n(&arena.base, __ATOMIC_ACQUIRE);
	return b && raw >= b && raw < b + (size_t)ARENA_SLOTS * SLOT_SIZE;
}

uint8_t *rpc_buf_alloc(size_t n)
{
	uint8_t *raw = NULL;
	size_t cap = n < POOL_MIN || n > POOL_CAP ? n : POOL_CAP;

	if (cap == POOL_CAP)
		raw = arena_take();
	if (!raw) {
		raw = malloc(cap + BUF_HDR);
		if (!raw)
			return NULL;
	}
	memcpy(raw, &cap, sizeof(cap));
	return raw + BUF_HDR;
}

void rpc_buf_free(void *p)
{
	if (!p)
		return;
	uint8_t *raw = (uint8_t *)p - BUF_HDR;
	if (in_arena(raw)) {
		size_t k = (size_t)(raw - arena.base) / SLOT_SIZE;

		MEM_POISON(raw, SLOT_SIZE);
		pthread_mutex_lock(&pool_lock);
		/* as malloc does on a double free: two owners of one buffer
		 * would corrupt replies silently */
		if (!arena.used[k] || raw != arena.base + k * SLOT_SIZE) {
			fprintf(stderr,
			        "snfs: rpc_buf_free: %p freed twice or "
			        "not from rpc_buf_alloc\n",
			        p);
			abort();
		}
		arena.used[k] = false;
		arena.free[arena.nfree++] = (uint16_t)k;
		pthread_mutex_unlock(&pool_lock);
		return;
	}
	free(raw);
}

/* buf (from rpc_buf_alloc, or NULL) with room for n bytes, keeping the
 * first len; NULL when out of memory (buf is then still valid). */
static uint8_t *buf_grow(uint8_t *buf, size_t len, size_t n)
{
	if (buf && buf_cap(buf) >= n)
		return buf;
	size_t want = buf ? buf_cap(buf) * 2 : 4096;
	while (want < n)
		want *= 2;
	if (n >= POOL_MIN && n <= POOL_CAP && want > POOL_CAP)
		want = POOL_CAP;
	uint8_t *nb = rpc_buf_alloc(want < n ? n : want);
	if (!nb)
		return NULL;
	if (len)
		memcpy(nb, buf, len);
	rpc_buf_free(buf);
	return nb;
}

/* RFC 5531 section 11: a record is fragments, each behind a 4-byte mark
 * whose top bit flags the last one. */
static int read_record(struct rpc_clnt *c, int fd, uint8_t **out, size_t *len)
{
	uint8_t *buf = NULL;
	size_t total = 0;
	bool last = false;

	while (!last) {
		uint8_t mark[4];
		int rc = read_exact(c, fd, mark, 4);
		if (rc < 0)
			goto err;
		uint32_t m = get32(mark);
		size_t flen = m & 0x7fffffffu;
		last = (m & 0x80000000u) != 0;
		if (flen > c->cfg.max_reply ||
		    total + flen > c->cfg.max_reply) {
			rc = -EPROTO;
			goto err;
		}
		uint8_t *nb = buf_grow(buf, total, total + flen);
		if (!nb) {
			rc = -ENOMEM;
			goto err;
		}
		buf = nb;
		rc = read_exact(c, fd, buf + total, flen);
		if (rc < 0)
			goto err;
		total += flen;
		continue;
	err:
		rpc_buf_free(buf);
		return rc;
	}
	if (!buf && !(buf = rpc_buf_alloc(1)))
		return -ENOMEM;
	*out = buf;
	*len = total;
	return 0;
}

static struct rpc_req *find_pending(struct rpc_clnt *c, uint32_t xid)
{
	for (struct rpc_req *r = c->pending.next; r != &c->pending; r = r->next)
		if (r->xid == xid)
			return r;
	return NULL;
}

static bool have_waiting(struct rpc_clnt *c)
{
	return c->pending.next != &c->pending;
}

/* Wake every sleeping caller: the connection broke or came back. Called
 * locked. */
static void wake_all(struct rpc_clnt *c)
{
	for (struct rpc_req *r = c->pending.next; r != &c->pending; r = r->next)
		if (r->wake)
			pthread_cond_signal(r->wake);
}

/* Wake one sleeping caller whose reply has not come, to read in place of
 * the caller that stops. Called locked. */
static void wake_next_reader(struct rpc_clnt *c)
{
	for (struct rpc_req *r = c->pending.next; r != &c->pending; r = r->next)
		if (r->wake && !r->done) {
			pthread_cond_signal(r->wake);
			return;
		}
}

/* Hand a reply to its request; true when that is mine. Replies nobody
 * waits for (cancelled calls, strays) are dropped. */
static bool deliver(struct rpc_clnt *c, uint8_t *buf, size_t len,
                    const struct rpc_req *mine)
{
	bool got_mine = false;

	if (c->cfg.stats)
		counter_add(&c->cfg.stats->bytes_received, len + 4);
	if (len < 8 || get32(buf + 4) != RPC_REPLY) {
		rpc_buf_free(buf); /* not a reply: ignore it */
		return false;
	}
	pthread_mutex_lock(&c->lock);
	struct rpc_req *r = find_pending(c, get32(buf));
	if (r && !r->done) {
		r->rbuf = buf;
		r->rlen = len;
		r->done = true;
		buf = NULL;
		got_mine = r == mine;
		if (!got_mine && r->wake)
			pthread_cond_signal(r->wake);
	}
	pthread_mutex_unlock(&c->lock);
	rpc_buf_free(buf);
	return got_mine;
}

static int ms_until(const struct timespec *deadline)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	int64_t ms = (int64_t)(deadline->tv_sec - now.tv_sec) * 1000 +
	             (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* Read replies from fd until mine arrives (0), its deadline passes
 * between records (1) or the connection fails (< 0). Called unlocked by
 * the one reading caller. Waiting happens before a record only: once it
 * has begun, the rest follows or SO_RCVTIMEO breaks the connection. */
static int read_until_mine(struct rpc_clnt *c, int fd, struct rpc_req *mine)
{
	for (;;) {
		if (c->spos == c->slen) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			int n = poll(&p, 1, ms_until(&mine->deadline));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return -errno;
			if (n == 0)
				return 1;
		}
		uint8_t *buf;
		size_t len;
		int rc = read_record(c, fd, &buf, &len);
		if (rc < 0)
			return rc == -EAGAIN || rc == -EWOULDBLOCK ? -ETIMEDOUT
			                                           : rc;
		if (deliver(c, buf, len, mine))
			return 0;
	}
}

/* The waiting caller of mine reads the socket (called locked, returns
 * locked). A broken connection is closed here, and the helper asked to
 * reconnect; the waiting calls are then sent again. -ETIMEDOUT when mine's
 * deadline passed with the connection still sound. */
static int read_as_caller(struct rpc_clnt *c, struct rpc_req *mine)
{
	int fd = c->fd;

	c->reading = true;
	pthread_mutex_unlock(&c->lock);
	int rc = read_until_mine(c, fd, mine);
	bool broken = rc < 0;
	if (broken) {
		pthread_mutex_lock(&c->send_lock);
		pthread_mutex_lock(&c->lock);
		c->last_err = rc;
		close(fd);
		c->fd = -1;
		pthread_mutex_unlock(&c->send_lock);
		pthread_cond_signal(&c->rcond);
		wake_all(c);
	} else {
		pthread_mutex_lock(&c->lock);
	}
	c->reading = false;
	wake_next_reader(c);
	return rc == 1 ? -ETIMEDOUT : 0;
}

/* Sleep up to ms on rcond (close wakes it early). Called locked. */
static void helper_sleep(struct rpc_clnt *c, uint32_t ms)
{
	struct timespec ts;
	deadline_after(&ts, ms);
	pthread_cond_timedwait(&c->rcond, &c->lock, &ts);
}

/* The helper thread: connect again after a break, while calls wait. */
static void *reader_main(void *arg)
{
	struct rpc_clnt *c = arg;
	uint32_t delay = 50;

	pthread_mutex_lock(&c->lock);
	while (!c->closing) {
		if (c->fd >= 0 || !have_waiting(c)) {
			pthread_cond_wait(&c->rcond, &c->lock);
			continue;
		}
		pthread_mutex_unlock(&c->lock);
		int fd = connect_once(c);
		pthread_mutex_lock(&c->lock);
		if (fd < 0) {
			c->last_err = fd;
			helper_sleep(c, delay);
			delay = delay * 2 > RECONNECT_MAX_DELAY_MS
			            ? RECONNECT_MAX_DELAY_MS
			            : delay * 2;
			continue;
		}
		delay = 50;
		c->fd = fd;
		c->gen++;
		c->spos = c->slen = 0;
		if (c->cfg.stats)
			counter_add(&c->cfg.stats->reconnects, 1);
		wake_all(c);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int rpc_clnt_open(const struct rpc_clnt_cfg *cfg, struct rpc_clnt **out)
{
	struct rpc_clnt *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	c->cfg = *cfg;
	c->cfg.host = NULL;
	if (c->cfg.ngids > RPC_CLNT_MAX_GIDS)
		c->cfg.ngids = RPC_CLNT_MAX_GIDS;
	if (!c->cfg.timeout_ms)
		c->cfg.timeout_ms = 60000;
	if (!c->cfg.max_reply)
		c->cfg.max_reply = 4u << 20;
	c->fd = -1;
	c->pending.next = c->pending.prev = &c->pending;
	c->stage = malloc(STAGE_SIZE);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	c->next_xid = (uint32_t)(now.tv_nsec ^ (now.tv_sec << 12) ^ getpid());
	c->cfg.host = cfg->host;
	rc = resolve(c);
	c->cfg.host = NULL;
	if (rc == 0)
		rc = encode_cred(c);
	if (rc == 0 && !c->stage)
		rc = -ENOMEM;
	if (rc < 0)
		goto err;
	c->fd = connect_once(c);
	if (c->fd < 0) {
		rc = c->fd;
		goto err;
	}
	c->gen = 1;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->rcond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->send_lock, NULL);
	rc = -pthread_create(&c->reader, NULL, reader_main, c);
	if (rc < 0) {
		close(c->fd);
		pthread_cond_destroy(&c->rcond);
		pthread_mutex_destroy(&c->lock);
		pthread_mutex_destroy(&c->send_lock);
		goto err;
	}
	*out = c;
	return 0;
err:
	free(c->stage);
	free(c);
	return rc;
}

static void req_free(struct rpc_req *r)
{
	xdr_out_free(&r->args);
	rpc_buf_free(r->rbuf);
	free(r);
}

void rpc_clnt_close(struct rpc_clnt *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->closing = true;
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR);
	pthread_cond_broadcast(&c->rcond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->reader, NULL);
	if (c->fd >= 0)
		close(c->fd);
	while (have_waiting(c)) {
		struct rpc_req *r = c->pending.next;
		r->prev->next = r->next;
		r->next->prev = r->prev;
		req_free(r);
	}
	pthread_cond_destroy(&c->rcond);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->send_lock);
	free(c->stage);
	free(c);
}

/* Write all of iov (n entries, advanced in place) on fd; called with
 * send_lock held. A failure shuts the socket down, so that the reading
 * caller notices and the connection is made again. */
static int send_all(int fd, struct iovec *iov, int n)
{
	size_t left = 0;
	int i = 0;

	for (int k = 0; k < n; k++)
		left += iov[k].iov_len;
	while (left > 0) {
		/* MSG_NOSIGNAL: a server that died must cost this call an
		 * error and a reconnect, not the host process a SIGPIPE. */
		struct msghdr mh = {.msg_iov = iov + i,
		                    .msg_iovlen = (size_t)(n - i)};
		ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			shutdown(fd, SHUT_RDWR);
			return -errno;
		}
		left -= (size_t)w;
		while (w > 0) {
			size_t k = (size_t)w < iov[i].iov_len ? (size_t)w
			                                      : iov[i].iov_len;
			iov[i].iov_base = (uint8_t *)iov[i].iov_base + k;
			iov[i].iov_len -= k;
			w -= (ssize_t)k;
			if (iov[i].iov_len == 0)
				i++;
		}
		while (i < n && iov[i].iov_len == 0)
			i++;
	}
	return 0;
}

/* Write r on the connection of generation gen. */
static int send_req(struct rpc_clnt *c, struct rpc_req *r, uint64_t gen)
{
	pthread_mutex_lock(&c->send_lock);
	pthread_mutex_lock(&c->lock);
	int fd = c->gen == gen ? c->fd : -1;
	pthread_mutex_unlock(&c->lock);
	if (fd < 0) {
		pthread_mutex_unlock(&c->send_lock);
		return -EAGAIN;
	}
	struct iovec iov[2] = {{r->hdr, r->hdr_len},
	                       {r->args.buf, r->args.len}};
	int rc = send_all(fd, iov, 2);
	pthread_mutex_unlock(&c->send_lock);
	if (rc == 0 && c->cfg.stats)
		counter_add(&c->cfg.stats->bytes_sent,
		            r->hdr_len + r->args.len);
	return rc;
}

static void build_header(struct rpc_clnt *c, struct rpc_req *r, uint32_t prog,
                         uint32_t vers, uint32_t proc)
{
	uint8_t *p = r->hdr + 4;
	put32(p, r->xid);
	put32(p + 4, RPC_CALL);
	put32(p + 8, RPC_VERSION);
	put32(p + 12, prog);
	put32(p + 16, vers);
	put32(p + 20, proc);
	memcpy(p + 24, c->cred, c->cred_len);
	r->hdr_len = 4 + 24 + c->cred_len;
	put32(r->hdr, 0x80000000u | (uint32_t)(r->hdr_len - 4 + r->args.len));
}

int rpc_call_hold(struct rpc_clnt *c, uint32_t prog, uint32_t vers,
                  uint32_t proc, int op, struct xdr_out *args,
                  struct rpc_req **out)
{
	struct rpc_req *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (args->err) {
		free(r);
		xdr_out_free(args);
		return -EINVAL;
	}
	r->args = *args;
	memset(args, 0, sizeof(*args));
	r->op = op;
	deadline_after(&r->deadline, c->cfg.timeout_ms);
	pthread_mutex_lock(&c->lock);
	r->xid = c->next_xid++;
	build_header(c, r, prog, vers, proc);
	r->next = &c->pending;
	r->prev = c->pending.prev;
	r->prev->next = r;
	c->pending.prev = r;
	if (c->fd < 0)
		pthread_cond_signal(&c->rcond);
	pthread_mutex_unlock(&c->lock);
	if (c->cfg.stats && op >= 0 && op < SNFS_OP_MAX)
		counter_add(&c->cfg.stats->calls[op], 1);
	*out = r;
	return 0;
}

/* A held call written at once: one write path for every new call. */
int rpc_call_start(struct rpc_clnt *c, uint32_t prog, uint32_t vers,
                   uint32_t proc, int op, struct xdr_out *args,
                   struct rpc_req **out)
{
	int rc = rpc_call_hold(c, prog, vers, proc, op, args, out);
	if (rc == 0)
		rpc_flush(c, out, 1);
	return rc;
}

#define FLUSH_MAX 64 /* held calls written by one sendmsg */

void rpc_flush(struct rpc_clnt *c, struct rpc_req *const *reqs, int n)
{
	struct iovec iov[2 * FLUSH_MAX];
	size_t bytes = 0;
	int k = 0;

	if (n > FLUSH_MAX)
		n = FLUSH_MAX; /* the rest go out when waited for */
	pthread_mutex_lock(&c->send_lock);
	pthread_mutex_lock(&c->lock);
	int fd = c->fd;
	for (int i = 0; i < n && fd >= 0; i++) {
		struct rpc_req *r = reqs[i];
		if (!r || r->sent_gen != 0)
			continue;
		r->sent_gen = c->gen; /* on failure too: the reconnect tells */
		iov[k++] = (struct iovec){r->hdr, r->hdr_len};
		iov[k++] = (struct iovec){r->args.buf, r->args.len};
		bytes += r->hdr_len + r->args.len;
	}
	pthread_mutex_unlock(&c->lock);
	int rc = k ? send_all(fd, iov, k) : -1;
	pthread_mutex_unlock(&c->send_lock);
	if (rc == 0 && c->cfg.stats)
		counter_add(&c->cfg.stats->bytes_sent, bytes);
}

static void unlink_req(struct rpc_req *r)
{
	r->prev->next = r->next;
	r->next->prev = r->prev;
}

void rpc_call_cancel(struct rpc_clnt *c, struct rpc_req *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&c->lock);
	unlink_req(r);
	pthread_mutex_unlock(&c->lock);
	req_free(r);
}

int rpc_call_wait(struct rpc_clnt *c, struct rpc_req *r, struct rpc_reply *rep)
{
	pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
	int rc = 0;

	memset(rep, 0, sizeof(*rep));
	pthread_mutex_lock(&c->lock);
	while (!r->done) {
		if (c->fd >= 0 && r->sent_gen != c->gen) {
			uint64_t gen = c->gen;
			bool resend = r->sent_gen != 0;
			pthread_mutex_unlock(&c->lock);
			int src = send_req(c, r, gen);
			pthread_mutex_lock(&c->lock);
			/* On failure too: the reconnect bumps gen. */
			r->sent_gen = gen;
			if (src == 0) {
				if (resend && c->cfg.stats)
					counter_add(&c->cfg.stats->retransmits,
					            1);
			}
			continue;
		}
		if (c->fd >= 0 && !c->reading) {
			if (read_as_caller(c, r) == -ETIMEDOUT && !r->done) {
				rc = c->last_err == -EPROTO ? -EPROTO
				                            : -ETIMEDOUT;
				break;
			}
			continue;
		}
		if (c->fd < 0)
			pthread_cond_signal(&c->rcond);
		r->wake = &wake;
		int w = pthread_cond_clockwait(&wake, &c->lock, CLOCK_MONOTONIC,
		                               &r->deadline);
		r->wake = NULL;
		if (w == ETIMEDOUT && !r->done) {
			rc = c->last_err == -EPROTO ? -EPROTO : -ETIMEDOUT;
			break;
		}
	}
	unlink_req(r);
	pthread_mutex_unlock(&c->lock);
	pthread_cond_destroy(&wake);
	if (rc == 0) {
		rc = rpc_parse_reply(r->rbuf, r->rlen, r->xid, &rep->res);
		if (rc == 0) {
			rep->buf = r->rbuf;
			rep->len = r->rlen;
			r->rbuf = NULL;
		}
	}
	req_free(r);
	return rc;
}

int rpc_call(struct rpc_clnt *c, uint32_t prog, uint32_t vers, uint32_t proc,
             int op, struct xdr_out *args, struct rpc_reply *rep)
{
	struct rpc_req *r;
	int rc = rpc_call_start(c, prog, vers, proc, op, args, &r);
	if (rc < 0)
		return rc;
	return rpc_call_wait(c, r, rep);
}

void rpc_reply_free(struct rpc_reply *rep)
{
	rpc_buf_free(rep->buf);
	memset(rep, 0, sizeof(*rep));
}

/* RFC 5531 section 9: reply_body. */
int rpc_parse_reply(const uint8_t *buf, size_t len, uint32_t xid,
                    struct xdr_in *res)
{
	struct xdr_in x;
	uint32_t v, mtype, stat, flavor, astat;
	const uint8_t *p;

	xdr_in_init(&x, buf, len);
	if (!xdr_get_u32(&x, &v) || v != xid || !xdr_get_u32(&x, &mtype) ||
	    mtype != RPC_REPLY || !xdr_get_u32(&x, &stat))
		return -EPROTO;
	if (stat == 1) { /* MSG_DENIED */
		if (!xdr_get_u32(&x, &v))
			return -EPROTO;
		return v == 0 ? -EPROTONOSUPPORT : v == 1 ? -EACCES : -EPROTO;
	}
	if (stat != 0 || !xdr_get_u32(&x, &flavor) ||
	    !xdr_get_opaque_ref(&x, &p, &v, 400) || !xdr_get_u32(&x, &astat))
		return -EPROTO;
	switch (astat) {
	case 0:
		break;
	case 1:
	case 2:
		return -EPROTONOSUPPORT;
	case 3:
		return -ENOSYS;
	case 4:
		return -EINVAL;
	case 5:
		return -EIO;
	default:
		return -EPROTO;
	}
	xdr_in_init(res, buf + x.pos, len - x.pos);
	return 0;
}
