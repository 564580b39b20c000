/* rpc_server: the event loop, TCP and UDP transports and worker pool,
 * exercised over real sockets on 127.0.0.1. */
#include <dirent.h>
#include <errno.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "rpc/rpc.h"
#include "rpc_testlib.h"
#include "util/log.h"

#define TOY 200200
#define BIG_REPLY (128 * 1024)

static int toy_null(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	return RPC_SUCCESS;
}

static int toy_echo(struct rpc_call *call, struct xdr_out *res)
{
	const uint8_t *p;
	uint32_t n;
	if (!xdr_get_opaque_ref(&call->args, &p, &n, 1 << 20))
		return RPC_GARBAGE_ARGS;
	xdr_put_opaque(res, p, n);
	return RPC_SUCCESS;
}

static int toy_sleep(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	sleep(1);
	return RPC_SUCCESS;
}

static int toy_big(struct rpc_call *call, struct xdr_out *res)
{
	uint8_t *p = xdr_put_reserve(res, BIG_REPLY);
	(void)call;
	if (p)
		memset(p, 0x5a, BIG_REPLY);
	return RPC_SUCCESS;
}

static int toy_nap(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	usleep(5000);
	return RPC_SUCCESS;
}

/* COUNT: 200 ms with a count of the COUNT calls running, its high-water
 * mark kept (test_thread_bound). */
static atomic_int count_running, count_max;

static int toy_count(struct rpc_call *call, struct xdr_out *res)
{
	int n = atomic_fetch_add(&count_running, 1) + 1, m;
	(void)call;
	(void)res;
	while ((m = atomic_load(&count_max)) < n &&
	       !atomic_compare_exchange_weak(&count_max, &m, n))
		;
	usleep(200 * 1000);
	atomic_fetch_sub(&count_running, 1);
	return RPC_SUCCESS;
}

/* FILE: FILE_REPLY bytes of toy_file from the offset in the args, in
 * place (a file part) where the transport allows, then a trailer word. */
#define FILE_REPLY (300 * 1024)
#define FILE_SIZE (1 << 20)
static int toy_file = -1;
static uint8_t toy_file_bytes[FILE_SIZE];

static int toy_fileread(struct rpc_call *call, struct xdr_out *res)
{
	uint32_t off;

	if (!xdr_get_u32(&call->args, &off) || off > FILE_SIZE - FILE_REPLY)
		return RPC_GARBAGE_ARGS;
	if (xdr_out_may_take_file(res) && xdr_out_take_file(res, dup(toy_file)))
		xdr_put_file(res, off, FILE_REPLY);
	else
		xdr_put_fixed(res, toy_file_bytes + off, FILE_REPLY);
	xdr_put_u32(res, 0x7e7e7e7e);
	return RPC_SUCCESS;
}

/* CALLBACK: a call of our own to the client, on its connection, before
 * the reply; the connection kept in cb_conn. Replies to it land in
 * on_reply (cb_reply_xid, cb_reply_conn). */
#define CB_XID 0xc0ffee01u
static struct rpc_conn *cb_conn;
static _Atomic uint32_t cb_reply_xid;
static _Atomic(struct rpc_conn *) cb_reply_conn;

static int toy_callback(struct rpc_call *call, struct xdr_out *res)
{
	const uint32_t msg[] = {htonl(CB_XID),
	                        0,
	                        htonl(2),
	                        htonl(TOY + 1),
	                        htonl(1),
	                        0,
	                        0,
	                        0,
	                        0,
	                        0};
	(void)res;
	if (!call->conn)
		return RPC_SYSTEM_ERR;
	rpc_conn_hold(call->conn);
	cb_conn = call->conn;
	return rpc_conn_send(call->conn, (const uint8_t *)msg, sizeof(msg))
	           ? RPC_SYSTEM_ERR
	           : RPC_SUCCESS;
}

static void on_reply(void *ctx, struct rpc_conn *conn, uint32_t xid,
                     const uint8_t *rec, size_t len)
{
	(void)ctx;
	(void)rec;
	(void)len;
	atomic_store(&cb_reply_conn, conn);
	atomic_store(&cb_reply_xid, xid);
}

static const struct rpc_proc toy_procs[] = {
    {"NULL", toy_null},   {"ECHO", toy_echo},         {"SLEEP", toy_sleep},
    {"BIG", toy_big},     {"NAP", toy_nap},           {"FILE", toy_fileread},
    {"COUNT", toy_count}, {"CALLBACK", toy_callback},
};
static const struct rpc_version toy_versions[] = {{1, toy_procs, 8}};
static const struct rpc_program toy_prog = {.prog = TOY,
                                            .name = "toy",
                                            .versions = toy_versions,
                                            .nversions = 1,
                                            .udp = true};

struct tserver {
	struct rpc_service *svc;
	struct rpc_server *srv;
	pthread_t thread;
	uint16_t tcp_port, udp_port;
	int run_rc;
};

static void *server_thread(void *arg)
{
	struct tserver *ts = arg;
	ts->run_rc = rpc_server_run(ts->srv);
	return NULL;
}

static int server_start(struct tserver *ts, const struct rpc_server_config *cfg)
{
	memset(ts, 0, sizeof(*ts));
	ts->svc = rpc_service_new(NULL);
	rpc_service_add(ts->svc, &toy_prog);
	rpc_service_on_reply(ts->svc, on_reply, NULL);
	ts->srv = rpc_server_new(ts->svc, cfg);
	if (!ts->srv ||
	    rpc_server_listen(ts->srv, "127.0.0.1", 0, SOCK_STREAM) ||
	    rpc_server_listen(ts->srv, "127.0.0.1", 0, SOCK_DGRAM))
		return -1;
	ts->tcp_port = rpc_server_port(ts->srv, SOCK_STREAM);
	ts->udp_port = rpc_server_port(ts->srv, SOCK_DGRAM);
	return pthread_create(&ts->thread, NULL, server_thread, ts);
}

static void server_stop(struct tserver *ts)
{
	rpc_server_stop(ts->srv);
	pthread_join(ts->thread, NULL);
	rpc_server_free(ts->srv);
	rpc_service_free(ts->svc);
}

static void set_timeout(int fd, int sec)
{
	struct timeval tv = {.tv_sec = sec};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int tcp_connect(uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
	                          .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	set_timeout(fd, 20);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Encode a call as record fragments of at most frag bytes (0: one). */
static void encode_record(struct xdr_out *rec, uint32_t xid, uint32_t proc,
                          const void *args, size_t alen, size_t frag)
{
	struct xdr_out c;
	xdr_out_init(&c, 512, 4 << 20);
	tcall_encode(&(struct tcall){.xid = xid,
	                             .prog = TOY,
	                             .vers = 1,
	                             .proc = proc,
	                             .cred_flavor = RPC_AUTH_SYS,
	                             .args = args,
	                             .args_len = alen},
	             &c);
	xdr_out_init(rec, 512, 8 << 20);
	if (!frag)
		frag = c.len;
	for (size_t off = 0; off < c.len; off += frag) {
		size_t n = c.len - off < frag ? c.len - off : frag;
		xdr_put_u32(rec, (uint32_t)n |
		                     (off + n == c.len ? RPC_LAST_FRAG : 0));
		/* raw bytes: xdr_put_fixed would pad odd sizes */
		if (xdr_out_ensure(rec, n)) {
			memcpy(rec->buf + rec->len, c.buf + off, n);
			rec->len += n;
		}
	}
	xdr_out_free(&c);
}

static int send_call(int fd, uint32_t xid, uint32_t proc, const void *args,
                     size_t alen)
{
	struct xdr_out rec;
	int rc;
	encode_record(&rec, xid, proc, args, alen, 0);
	rc = write_all(fd, rec.buf, rec.len);
	xdr_out_free(&rec);
	return rc;
}

static int read_full(int fd, uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = read(fd, p, n);
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Read one reply record; returns its length (buf malloc'd) or -1. */
static long read_reply(int fd, uint8_t **buf)
{
	size_t len = 0;
	bool last = false;
	*buf = NULL;
	while (!last) {
		uint8_t m[4];
		uint32_t v;
		if (read_full(fd, m, 4) < 0)
			goto err;
		v = (uint32_t)m[0] << 24 | m[1] << 16 | m[2] << 8 | m[3];
		last = v & RPC_LAST_FRAG;
		v &= ~RPC_LAST_FRAG;
		*buf = realloc(*buf, len + v + 1);
		if (read_full(fd, *buf + len, v) < 0)
			goto err;
		len += v;
	}
	return (long)len;
err:
	free(*buf);
	*buf = NULL;
	return -1;
}

/* Read a reply and return its xid (0 on failure); *stat gets accept_stat. */
static uint32_t reply_xid(int fd, uint32_t *stat)
{
	uint8_t *b;
	long n = read_reply(fd, &b);
	struct treply r;
	if (n < 0)
		return 0;
	r = treply_parse(b, (size_t)n);
	free(b);
	if (stat)
		*stat = r.accept_stat;
	return r.ok ? r.xid : 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long rss_kib(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* A fast call on another connection is answered while a slow one runs;
 * on one connection too, replies come back as calls finish. */
static void test_slow_and_fast(struct tserver *ts)
{
	int a = tcp_connect(ts->tcp_port), b = tcp_connect(ts->tcp_port);
	struct pollfd pa = {.fd = a, .events = POLLIN};
	uint32_t stat = 99;
	double t0;

	send_call(a, 1, 2, NULL, 0);
	usleep(100 * 1000);
	t0 = now();
	send_call(b, 2, 0, NULL, 0);
	CHECK(reply_xid(b, &stat) == 2 && stat == RPC_SUCCESS,
	      "fast call answered");
	CHECK(poll(&pa, 1, 0) == 0,
	      "fast call answered while the slow one still runs");
	/* the slow one runs on the loop's thread (a lone call): the fast
	 * one's arrival moves the loop to another thread at once, not after
	 * a timeout or the slow call's end */
	CHECK(now() - t0 < 0.3, "fast call not held behind the slow one");
	CHECK(reply_xid(a, &stat) == 1 && stat == RPC_SUCCESS,
	      "slow call answered");

	send_call(a, 3, 2, NULL, 0);
	send_call(a, 4, 0, NULL, 0);
	CHECK(reply_xid(a, NULL) == 4 && reply_xid(a, NULL) == 3,
	      "pipelined calls on one connection run in parallel");
	/* the same, the second call sent while the first runs alone */
	send_call(a, 5, 2, NULL, 0);
	usleep(100 * 1000);
	t0 = now();
	send_call(a, 6, 0, NULL, 0);
	CHECK(reply_xid(a, NULL) == 6 && now() - t0 < 0.3,
	      "a call after a slow lone one on its connection: answered at "
	      "once");
	CHECK(reply_xid(a, NULL) == 5, "the slow one answered after it");
	close(a);
	close(b);
}

/* Voluntary context switches of every thread of this process. */
static long all_switches(void)
{
	char path[300], line[128];
	long sum = 0;
	FILE *f;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
		         e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "voluntary_ctxt_switches:", 24))
				sum += atol(line + 24);
		fclose(f);
	}
	closedir(d);
	return sum;
}

/* Calls one at a time run on the loop's thread with the loop on standby:
 * no other thread is woken per call. Measured here: ~1.1 voluntary
 * context switches a call in all threads (the client's wait for the
 * reply, the loop's for the next call, not always both); handing the
 * loop to another thread per call, as before, ~2.7. */
static void test_lone_calls_inline(struct tserver *ts)
{
	int fd = tcp_connect(ts->tcp_port);
	const int n = 1000;
	int ok = 0;
	long s0, s1;

	for (int i = 0; i < 50; i++) /* a thread starts watching */
		if (send_call(fd, (uint32_t)i, 0, NULL, 0) == 0)
			reply_xid(fd, NULL);
	s0 = all_switches();
	for (int i = 0; i < n; i++)
		if (send_call(fd, (uint32_t)(100 + i), 0, NULL, 0) == 0 &&
		    reply_xid(fd, NULL) == (uint32_t)(100 + i))
			ok++;
	s1 = all_switches();
	char msg[160];
	snprintf(msg, sizeof(msg),
	         "lone calls: %d of %d answered, %.2f context switches a "
	         "call (inline ~1.1, handed off ~2.7)",
	         ok, n, (double)(s1 - s0) / n);
	CHECK(ok == n && s0 >= 0 && s1 - s0 < 2 * n, msg);
	close(fd);
}

/* A multi-fragment call, written in small pieces. */
static void test_fragments(struct tserver *ts)
{
	int fd = tcp_connect(ts->tcp_port);
	size_t plen = 100000;
	uint8_t *args = malloc(plen + 4), *b;
	struct xdr_out rec;
	struct treply r;
	const uint8_t *back;
	uint32_t blen = 0;
	bool written = true;
	long n;

	args[0] = 0;
	args[1] = plen >> 16;
	args[2] = plen >> 8;
	args[3] = plen & 0xff;
	for (size_t i = 0; i < plen; i++)
		args[4 + i] = (uint8_t)(i * 13);
	encode_record(&rec, 77, 1, args, plen + 4, 777);
	for (size_t off = 0; off < rec.len; off += 1000) {
		size_t k = rec.len - off < 1000 ? rec.len - off : 1000;
		written &= write_all(fd, rec.buf + off, k) == 0;
	}
	n = read_reply(fd, &b);
	r = treply_parse(b, n > 0 ? (size_t)n : 0);
	CHECK(written && n > 0 && r.xid == 77 && r.accept_stat == RPC_SUCCESS &&
	          xdr_get_opaque_ref(&r.body, &back, &blen, 1 << 20) &&
	          blen == plen && memcmp(back, args + 4, plen) == 0,
	      "multi-fragment call over TCP");
	free(b);
	free(args);
	xdr_out_free(&rec);
	close(fd);
}

static void test_udp(struct tserver *ts)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
	                          .sin_port = htons(ts->udp_port)};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	uint8_t args[104] = {0, 0, 0, 100}, back[200], buf[2048];
	struct xdr_out c;
	struct treply r;
	uint32_t blen = 0;
	ssize_t n;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	set_timeout(fd, 5);
	for (int i = 0; i < 100; i++)
		args[4 + i] = (uint8_t)i;
	xdr_out_init(&c, 512, 4096);
	tcall_encode(&(struct tcall){.xid = 555,
	                             .prog = TOY,
	                             .vers = 1,
	                             .proc = 1,
	                             .args = args,
	                             .args_len = sizeof(args)},
	             &c);
	sendto(fd, c.buf, c.len, 0, (struct sockaddr *)&sin, sizeof(sin));
	n = recv(fd, buf, sizeof(buf), 0);
	r = treply_parse(buf, n > 0 ? (size_t)n : 0);
	CHECK(n > 0 && r.xid == 555 && r.accept_stat == RPC_SUCCESS &&
	          xdr_get_opaque(&r.body, back, &blen, 200) && blen == 100 &&
	          memcmp(back, args + 4, 100) == 0,
	      "UDP call");
	xdr_out_free(&c);
	close(fd);
}

static void test_many_connections(struct tserver *ts)
{
	enum { N = 1000 };
	static int fds[N];
	int connected = 0, answered = 0;

	for (int i = 0; i < N; i++) {
		fds[i] = tcp_connect(ts->tcp_port);
		if (fds[i] >= 0 && send_call(fds[i], 1000 + i, 0, NULL, 0) == 0)
			connected++;
	}
	for (int i = 0; i < N; i++)
		if (fds[i] >= 0 &&
		    reply_xid(fds[i], NULL) == (uint32_t)(1000 + i))
			answered++;
	for (int i = 0; i < N; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	CHECK(connected == N, "1000 simultaneous connections each sent a call");
	CHECK(answered == N, "1000 simultaneous connections each got a reply");
}

/* A client that sends calls with big replies and never reads: the server
 * stops reading it, its memory stays bounded, others are still served. */
static void test_no_reader(struct tserver *ts)
{
	int x = tcp_connect(ts->tcp_port), y;
	struct xdr_out rec;
	long before = rss_kib(), after;
	int sent = 0;
	uint32_t stat = 99;

	encode_record(&rec, 9, 3, NULL, 0, 0);
	/* stop when the socket stays full for half a second */
	for (; sent < 400000; sent++) {
		struct pollfd p = {.fd = x, .events = POLLOUT};
		if (poll(&p, 1, 500) != 1 ||
		    send(x, rec.buf, rec.len, MSG_DONTWAIT) != (ssize_t)rec.len)
			break;
	}
	xdr_out_free(&rec);
	usleep(300 * 1000);
	after = rss_kib();
	fprintf(stderr,
	        "# no-reader: %d calls sent (%ld MiB of replies), "
	        "RSS %ld -> %ld MiB\n",
	        sent, (long)sent * BIG_REPLY >> 20, before >> 10, after >> 10);
	CHECK(sent > 1000, "non-reading client could queue many calls");
	CHECK(after - before < 200 * 1024,
	      "server memory bounded for a client that never reads");
	y = tcp_connect(ts->tcp_port);
	send_call(y, 10, 0, NULL, 0);
	CHECK(reply_xid(y, &stat) == 10 && stat == RPC_SUCCESS,
	      "others still answered meanwhile");
	close(x);
	send_call(y, 11, 0, NULL, 0);
	CHECK(reply_xid(y, NULL) == 11, "server fine after it disconnects");
	close(y);
}

/* Many calls in one write: reading pauses at max_inflight (and at
 * max_out_bytes while the client is not reading) with input left over,
 * which must still be served once the connection drains. */
static void test_burst(struct tserver *ts, uint32_t proc, int ncalls,
                       int delay_ms, const char *name)
{
	int fd = tcp_connect(ts->tcp_port), answered = 0;
	struct xdr_out all, one;
	bool seen[256] = {false};

	xdr_out_init(&all, 4096, 1 << 20);
	for (int i = 0; i < ncalls; i++) {
		encode_record(&one, (uint32_t)(5000 + i), proc, NULL, 0, 0);
		xdr_put_fixed(&all, one.buf, one.len);
		xdr_out_free(&one);
	}
	write_all(fd, all.buf, all.len);
	xdr_out_free(&all);
	set_timeout(fd, 5);
	usleep((useconds_t)delay_ms * 1000);
	for (int i = 0; i < ncalls; i++) {
		uint32_t x = reply_xid(fd, NULL);
		if (x == 0)
			break;
		if (x >= 5000 && x < 5000 + (uint32_t)ncalls &&
		    !seen[x - 5000]) {
			seen[x - 5000] = true;
			answered++;
		}
	}
	CHECK(answered == ncalls, name);
	close(fd);
}

/* Large replies finishing on several workers at once, with the socket
 * filling up: one sends while the others queue behind it, and every reply
 * must arrive whole and unmixed with another (each is BIG_REPLY bytes of
 * 0x5a after the header). */
static void test_replies_intact(struct tserver *ts)
{
	int fd = tcp_connect(ts->tcp_port), whole = 0;
	struct xdr_out all, one;
	enum { N = 48 };

	xdr_out_init(&all, 4096, 1 << 20);
	for (int i = 0; i < N; i++) {
		encode_record(&one, (uint32_t)(7000 + i), 3, NULL, 0, 0);
		xdr_put_fixed(&all, one.buf, one.len);
		xdr_out_free(&one);
	}
	write_all(fd, all.buf, all.len);
	xdr_out_free(&all);
	set_timeout(fd, 5);
	for (int i = 0; i < N; i++) {
		uint8_t *b;
		long n = read_reply(fd, &b);
		if (n < 0)
			break;
		struct treply r = treply_parse(b, (size_t)n);
		const uint8_t *p = r.body.buf + r.body.pos;
		bool ok = r.ok && r.accept_stat == RPC_SUCCESS &&
		          r.body.len - r.body.pos == BIG_REPLY;
		for (size_t k = 0; ok && k < BIG_REPLY; k++)
			ok = p[k] == 0x5a;
		whole += ok;
		free(b);
	}
	CHECK(whole == N, "concurrent large replies arrive whole, unmixed");
	close(fd);
}

/* Replies with file parts (sent by sendfile), many queued behind a
 * reader that waits: the loop hands them to workers to send; each
 * arrives whole, in place, with the words around it. */
static void test_file_replies(struct tserver *ts)
{
	char path[] = "/tmp/snfs-test-server-XXXXXX";
	int fd, whole = 0;
	enum { N = 40 };

	toy_file = mkstemp(path);
	for (size_t i = 0; i < FILE_SIZE; i++)
		toy_file_bytes[i] = (uint8_t)(i * 13 + (i >> 10));
	CHECK(toy_file >= 0 &&
	          write(toy_file, toy_file_bytes, FILE_SIZE) == FILE_SIZE,
	      "file replies: test file");
	unlink(path);
	fd = tcp_connect(ts->tcp_port);
	for (int i = 0; i < N; i++) {
		uint8_t arg[4];
		uint32_t off = (uint32_t)(i * 12345) % (FILE_SIZE - FILE_REPLY);
		arg[0] = off >> 24, arg[1] = off >> 16, arg[2] = off >> 8;
		arg[3] = off;
		send_call(fd, (uint32_t)(9000 + i), 5, arg, 4);
	}
	usleep(300 * 1000); /* replies pile up: socket full, queue, pause */
	set_timeout(fd, 10);
	for (int i = 0; i < N; i++) {
		uint8_t *b;
		long n = read_reply(fd, &b);
		if (n < 0) {
			printf("# file replies: %d of %d read (%s)\n", i, N,
			       strerror(errno));
			break;
		}
		struct treply r = treply_parse(b, (size_t)n);
		uint32_t off =
		    (r.xid - 9000) * 12345 % (FILE_SIZE - FILE_REPLY);
		const uint8_t *p = r.body.buf + r.body.pos;
		bool ok = r.ok && r.accept_stat == RPC_SUCCESS &&
		          r.xid - 9000 < N &&
		          r.body.len - r.body.pos == FILE_REPLY + 4 &&
		          !memcmp(p, toy_file_bytes + off, FILE_REPLY) &&
		          p[FILE_REPLY] == 0x7e;
		if (!ok)
			printf("# reply %d: xid %u, %ld bytes, ok %d\n", i,
			       r.xid, n, r.ok);
		whole += ok;
		free(b);
	}
	CHECK(whole == N, "file replies queued behind a slow reader arrive "
	                  "whole, with the file's bytes");
	close(fd);
	close(toy_file);
}

/* The byte of the ECHO payload at k for the call with xid x: each call's
 * own, so a reply built from another call's record shows. */
static uint8_t echo_byte(uint32_t x, size_t k)
{
	return (uint8_t)(x * 31 + k * 7);
}

/* Write an ECHO call of n payload bytes, in fragments of frag (0: one). */
static int send_echo(int fd, uint32_t xid, size_t n, size_t frag)
{
	uint8_t *args = malloc(n + 8);
	struct xdr_out rec;
	int rc;

	args[0] = (uint8_t)(n >> 24);
	args[1] = (uint8_t)(n >> 16);
	args[2] = (uint8_t)(n >> 8);
	args[3] = (uint8_t)n;
	for (size_t k = 0; k < n; k++)
		args[4 + k] = echo_byte(xid, k);
	memset(args + 4 + n, 0, 4);
	encode_record(&rec, xid, 1, args, 4 + ((n + 3) & ~(size_t)3), frag);
	rc = write_all(fd, rec.buf, rec.len);
	xdr_out_free(&rec);
	free(args);
	return rc;
}

/* Finished calls' jobs and record buffers go back to a cache the next
 * calls take from (server.c): records of every size, small ones below
 * and around the reader's 1 KiB minimum, some over the 8 KiB a cached
 * buffer may keep, some in fragments, pipelined on several connections
 * at once (more calls in flight than the cache holds), each echoed back
 * whole and as its own. ASan then finds the cache drained at shutdown. */
static void test_recycled_records(struct tserver *ts)
{
	enum { NCONN = 6, ROUNDS = 6, BATCH = 8 };
	static const size_t sizes[] = {0,    1, 200, 1012,  1016, 1500,
	                               4000, 3, 100, 70000, 2048};
	enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };
	int fds[NCONN], sent = 0, good = 0;

	for (int i = 0; i < NCONN; i++)
		fds[i] = tcp_connect(ts->tcp_port);
	for (int round = 0; round < ROUNDS; round++) {
		size_t want[NCONN][BATCH];
		/* a batch is max_inflight calls: all read, none paused */
		for (int i = 0; i < NCONN; i++)
			for (int j = 0; j < BATCH; j++) {
				uint32_t x = (uint32_t)(9000 + round * 1000 +
				                        i * BATCH + j);
				size_t n =
				    sizes[(size_t)(i * 5 + round * 3 + j * 7) %
				          NSIZES];
				want[i][j] = n;
				sent += send_echo(fds[i], x, n,
				                  j % 3 == 1 ? 333 : 0) == 0;
			}
		for (int i = 0; i < NCONN; i++)
			for (int j = 0; j < BATCH; j++) {
				uint8_t *b;
				long len = read_reply(fds[i], &b);
				struct treply r;
				const uint8_t *back;
				uint32_t blen = 0, x;
				int at;
				bool ok;

				if (len < 0)
					continue;
				r = treply_parse(b, (size_t)len);
				x = r.xid;
				at = (int)x - (9000 + round * 1000 + i * BATCH);
				ok = r.ok && r.accept_stat == RPC_SUCCESS &&
				     at >= 0 && at < BATCH &&
				     xdr_get_opaque_ref(&r.body, &back, &blen,
				                        1 << 20) &&
				     blen == want[i][at];
				for (size_t k = 0; ok && k < blen; k++)
					ok = back[k] == echo_byte(x, k);
				good += ok;
				free(b);
			}
	}
	CHECK(sent == NCONN * ROUNDS * BATCH && good == sent,
	      "recycled jobs and record buffers: every call echoed whole, "
	      "as its own");
	for (int i = 0; i < NCONN; i++)
		close(fds[i]);
}

/* A stop with calls queued behind slow ones: the queued calls are
 * cancelled, their jobs go to the cache, and freeing the server frees the
 * cache (ASan reports a leak otherwise). */
static void test_stop_with_queued(void)
{
	struct tserver ts;
	struct rpc_server_config cfg = {.nthreads = 1};
	int fds[3];

	CHECK(server_start(&ts, &cfg) == 0, "one-thread server started");
	for (int i = 0; i < 3; i++) {
		fds[i] = tcp_connect(ts.tcp_port);
		send_call(fds[i], 400 + i, 2, NULL, 0);
		for (int j = 0; j < 4; j++)
			send_echo(fds[i], (uint32_t)(410 + i * 4 + j),
			          (size_t)(j * 700), 0);
	}
	usleep(200 * 1000);
	server_stop(&ts);
	CHECK(true, "stop with calls queued: cancelled jobs freed");
	for (int i = 0; i < 3; i++)
		close(fds[i]);
}

/* The peer goes away while its call runs: the late reply is dropped. */
static void test_disconnect_during_call(struct tserver *ts)
{
	int fd = tcp_connect(ts->tcp_port);
	send_call(fd, 1, 2, NULL, 0);
	send_call(fd, 2, 3, NULL, 0);
	usleep(50 * 1000);
	close(fd);
	usleep(1200 * 1000);
	fd = tcp_connect(ts->tcp_port);
	send_call(fd, 3, 0, NULL, 0);
	CHECK(reply_xid(fd, NULL) == 3, "disconnect during a call is harmless");
	close(fd);
}

/* Calls from the server on a client's connection (the NFSv4.1 back
 * channel): the call arrives among the replies, the client's REPLY goes
 * to the service's reply function, and a closed connection refuses
 * further sends. */
static void test_calls_to_client(struct tserver *ts)
{
	const uint32_t reply[] = {
	    htonl(RPC_LAST_FRAG | 24), htonl(CB_XID), htonl(1), 0, 0, 0, 0};
	uint8_t *b;
	bool got_call = false, got_reply = false;
	int fd = tcp_connect(ts->tcp_port);

	send_call(fd, 77, 7, NULL, 0);
	for (int i = 0; i < 2; i++) {
		long n = read_reply(fd, &b);
		if (n >= 8 && xdr_be32(b) == CB_XID && xdr_be32(b + 4) == 0)
			got_call = true;
		if (n >= 8 && xdr_be32(b) == 77 && xdr_be32(b + 4) == 1)
			got_reply = true;
		free(b);
	}
	CHECK(got_call && got_reply,
	      "a call sent on the client's connection arrives, and the "
	      "reply to its own call");
	write_all(fd, (const uint8_t *)reply, sizeof(reply));
	for (int i = 0; i < 200 && atomic_load(&cb_reply_xid) != CB_XID; i++)
		usleep(10 * 1000);
	CHECK(atomic_load(&cb_reply_xid) == CB_XID &&
	          atomic_load(&cb_reply_conn) == cb_conn,
	      "the client's REPLY reaches the reply function, with its "
	      "connection");
	send_call(fd, 78, 0, NULL, 0);
	CHECK(reply_xid(fd, NULL) == 78, "calls go on after it");
	CHECK(cb_conn && rpc_conn_is_open(cb_conn), "the connection is open");
	close(fd);
	for (int i = 0; i < 200 && cb_conn && rpc_conn_is_open(cb_conn); i++)
		usleep(10 * 1000);
	CHECK(cb_conn && !rpc_conn_is_open(cb_conn) &&
	          rpc_conn_send(cb_conn, (const uint8_t *)reply + 4, 24) ==
	              -EPIPE,
	      "closed by the client: not open, a send says EPIPE");
	if (cb_conn)
		rpc_conn_release(cb_conn);
	cb_conn = NULL;
}

static void test_bad_streams(struct tserver *ts)
{
	const uint8_t huge[4] = {0x80, 0x20, 0, 0}; /* 2 MiB record */
	const uint8_t junk[12] = {0x80, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8};
	uint8_t b;
	int fd = tcp_connect(ts->tcp_port);

	write_all(fd, huge, 4);
	CHECK(read(fd, &b, 1) <= 0, "oversized record closes the connection");
	close(fd);

	fd = tcp_connect(ts->tcp_port);
	write_all(fd, junk, sizeof(junk));
	send_call(fd, 12, 0, NULL, 0);
	CHECK(reply_xid(fd, NULL) == 12,
	      "garbage record dropped, connection kept");
	close(fd);
}

static void test_max_conns(void)
{
	struct tserver ts;
	struct rpc_server_config cfg = {.nthreads = 2, .max_conns = 5};
	int fds[10], served = 0;

	CHECK(server_start(&ts, &cfg) == 0, "second server started");
	for (int i = 0; i < 10; i++) {
		fds[i] = tcp_connect(ts.tcp_port);
		usleep(10 * 1000);
	}
	for (int i = 0; i < 10; i++) {
		send_call(fds[i], 100 + i, 0, NULL, 0);
		served += reply_xid(fds[i], NULL) == (uint32_t)(100 + i);
	}
	CHECK(served == 5, "connections beyond max_conns are closed");
	for (int i = 0; i < 10; i++)
		close(fds[i]);
	server_stop(&ts);
}

/* The loop runs on the pool's threads and hands itself on with each call
 * it keeps (server.c): nthreads still bounds the calls running at once,
 * all of them run, and the loop goes on serving while every worker is
 * busy. */
static void test_thread_bound(void)
{
	struct tserver ts;
	struct rpc_server_config cfg = {.nthreads = 2};
	int fds[6], answered = 0, late;
	double t0;

	CHECK(server_start(&ts, &cfg) == 0, "two-thread server started");
	for (int i = 0; i < 6; i++)
		fds[i] = tcp_connect(ts.tcp_port);
	t0 = now();
	for (int i = 0; i < 6; i++)
		send_call(fds[i], 200 + i, 6, NULL, 0);
	for (int i = 0; i < 6; i++)
		answered += reply_xid(fds[i], NULL) == (uint32_t)(200 + i);
	CHECK(answered == 6, "six calls on two threads all answered");
	CHECK(atomic_load(&count_max) == 2,
	      "two threads run two calls at once, never more");
	CHECK(now() - t0 >= 0.55, "six 200 ms calls on two threads take "
	                          "three rounds");
	/* both workers busy: a new connection is still accepted and its
	 * call answered once a worker frees up */
	send_call(fds[0], 300, 6, NULL, 0);
	send_call(fds[1], 301, 6, NULL, 0);
	usleep(50 * 1000);
	late = tcp_connect(ts.tcp_port);
	CHECK(late >= 0 && send_call(late, 302, 0, NULL, 0) == 0 &&
	          reply_xid(late, NULL) == 302,
	      "a connection made while every worker is busy is served");
	CHECK(reply_xid(fds[0], NULL) == 300 && reply_xid(fds[1], NULL) == 301,
	      "the busy calls finish");
	if (late >= 0)
		close(late);
	for (int i = 0; i < 6; i++)
		close(fds[i]);
	server_stop(&ts);
}

static struct rpc_server *signal_target;

static void on_signal(int sig)
{
	(void)sig;
	rpc_server_stop(signal_target);
}

int main(void)
{
	struct tserver ts;
	struct rpc_server_config cfg = {
	    .nthreads = 4, .max_inflight = 8, .max_out_bytes = 1 << 20};
	struct rlimit rl;

	signal(SIGPIPE, SIG_IGN);
	log_set_level(LOG_ERR);
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);

	CHECK(server_start(&ts, &cfg) == 0, "server started on port 0");
	CHECK(ts.tcp_port != 0 && ts.udp_port != 0, "ports reported");
	test_slow_and_fast(&ts);
	test_lone_calls_inline(&ts);
	test_fragments(&ts);
	test_udp(&ts);
	test_bad_streams(&ts);
	test_many_connections(&ts);
	test_disconnect_during_call(&ts);
	test_calls_to_client(&ts);
	/* Rounds, since a pause could end unseen in a window of microseconds
	 * (regression: a stash left unfed, the burst never fully answered;
	 * about one run in fifteen failed with a single round) */
	for (int round = 0; round < 8; round++)
		test_burst(
		    &ts, 4, 200, 0,
		    "burst past max_inflight in one write: all answered");
	test_burst(&ts, 3, 100, 500,
	           "burst past max_out_bytes, read late: all answered");
	test_replies_intact(&ts);
	test_recycled_records(&ts);
	test_file_replies(&ts);
	test_no_reader(&ts);

	/* stop from a signal handler while a slow call runs */
	{
		int fd = tcp_connect(ts.tcp_port);
		send_call(fd, 1, 2, NULL, 0);
		usleep(100 * 1000);
		signal_target = ts.srv;
		signal(SIGUSR1, on_signal);
		kill(getpid(), SIGUSR1);
		pthread_join(ts.thread, NULL);
		CHECK(ts.run_rc == 0,
		      "rpc_server_run returns after a stop from a "
		      "signal handler");
		close(fd);
		rpc_server_free(ts.srv);
		rpc_service_free(ts.svc);
	}
	test_max_conns();
	test_thread_bound();
	test_stop_with_queued();
	TEST_EXIT();
}
