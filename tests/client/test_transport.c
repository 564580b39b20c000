/* The RPC client transport against a server that sends big replies in
 * pieces with pauses between them. Regression: a big read waiting with
 * SO_RCVLOWAT in a blocking read copied the first piece, then slept until
 * a whole record's worth was queued again, which the rest never is: the
 * call hung until its timeout. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client/transport.h"
#include "test.h"

#define BIG (1u << 20)

struct srv {
	int lfd;
	uint16_t port;
	/* how the reply body of each call goes out: piece sizes, 0 ends */
	const size_t *pieces;
	size_t body[4]; /* body length per call */
	int ncalls;
};

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static bool read_n(int fd, uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, p, n);
		if (r <= 0)
			return false;
		p += r;
		n -= (size_t)r;
	}
	return true;
}

static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

/* One connection: per call, a reply of 24 header bytes and body[i]
 * bytes of a pattern, written in the pieces given with 150 ms between
 * them (the first piece for big bodies only). */
static void *serve(void *arg)
{
	struct srv *s = arg;
	int fd = accept(s->lfd, NULL, NULL);

	for (int i = 0; fd >= 0 && i < s->ncalls; i++) {
		uint8_t mark[4], call[512];
		if (!read_n(fd, mark, 4))
			break;
		size_t clen = ((size_t)mark[0] & 0x7f) << 24 | mark[1] << 16 |
		              mark[2] << 8 | mark[3];
		if (clen > sizeof(call) || !read_n(fd, call, clen))
			break;
		size_t len = 24 + s->body[i];
		uint8_t *rec = calloc(1, 4 + len);
		put32(rec, 0x80000000u | (uint32_t)len);
		memcpy(rec + 4, call, 4); /* xid */
		put32(rec + 8, 1);        /* REPLY; accepted, AUTH_NONE */
		for (size_t k = 0; k < s->body[i]; k++)
			rec[28 + k] = (uint8_t)(k * 7 + i);
		size_t off = 0, total = 4 + len;
		for (const size_t *p = s->pieces; *p && off < total; p++) {
			size_t n = *p < total - off ? *p : total - off;
			if (s->body[i] < BIG)
				n = total - off;
			if (write(fd, rec + off, n) != (ssize_t)n)
				break;
			off += n;
			if (off < total)
				pause_ms(150);
		}
		if (off < total && write(fd, rec + off, total - off) < 0)
			off = 0;
		free(rec);
	}
	pause_ms(200);
	if (fd >= 0)
		close(fd);
	return NULL;
}

static bool start(struct srv *s, pthread_t *t)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);

	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(s->lfd, 1) ||
	    getsockname(s->lfd, (struct sockaddr *)&a, &al))
		return false;
	s->port = ntohs(a.sin_port);
	return pthread_create(t, NULL, serve, s) == 0;
}

static bool body_ok(const struct rpc_reply *rep, size_t n, int call)
{
	const uint8_t *p = rep->res.buf + rep->res.pos;

	if (xdr_in_remaining(&rep->res) != n)
		return false;
	for (size_t k = 0; k < n; k++)
		if (p[k] != (uint8_t)(k * 7 + (size_t)call))
			return false;
	return true;
}

/* Calls whose replies come as pieces: each must arrive whole, well
 * inside the call timeout, and a small reply after a big one must not
 * wait for bytes that never come. */
static void run(const char *name, const size_t *pieces)
{
	struct srv s = {
	    .pieces = pieces, .body = {BIG, 100, BIG - 1000, 8}, .ncalls = 4};
	struct rpc_clnt *c = NULL;
	pthread_t t;

	if (!start(&s, &t)) {
		CHECK(false, "test server starts");
		return;
	}
	struct rpc_clnt_cfg cfg = {.host = "127.0.0.1",
	                           .port = s.port,
	                           .timeout_ms = 3000,
	                           .max_reply = 2 * BIG};
	CHECK(rpc_clnt_open(&cfg, &c) == 0, "client connects");
	for (int i = 0; c && i < s.ncalls; i++) {
		struct xdr_out args;
		struct rpc_reply rep;
		struct timespec t0, t1;

		xdr_out_init(&args, 64, 1024);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		int rc = rpc_call(c, 100003, 3, 6, 0, &args, &rep);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		long ms = (t1.tv_sec - t0.tv_sec) * 1000 +
		          (t1.tv_nsec - t0.tv_nsec) / 1000000;
		CHECK(rc == 0, name);
		/* not a speed test: a hang lasts the 3 s timeout */
		CHECK(rc != 0 || ms < 2500,
		      "the reply came before the timeout");
		CHECK(rc != 0 || body_ok(&rep, s.body[i], i),
		      "the reply arrived whole and in order");
		if (rc == 0)
			rpc_reply_free(&rep);
	}
	if (c)
		rpc_clnt_close(c);
	pthread_join(t, NULL);
	close(s.lfd);
}

/* Reply buffers (rpc_buf_alloc): the large ones come from a fixed set of
 * slots (transport.c). Many at once, more than there are slots, must be
 * distinct, writable to the size asked for and keep what was written;
 * freed ones come back for the next large reply. */
static void buffers(void)
{
	enum { N = 80 };
	static uint8_t *b[N];
	static const size_t sizes[] = {100, 64u << 10, 700000,
	                               (1u << 20) + 4000, 3u << 20};
	bool ok = true;

	for (int i = 0; i < N; i++) {
		size_t n = sizes[i % 5];
		b[i] = rpc_buf_alloc(n);
		if (!b[i]) {
			ok = false;
			break;
		}
		memset(b[i], i, n);
	}
	for (int i = 0; ok && i < N; i++) {
		size_t n = sizes[i % 5];
		ok = b[i][0] == (uint8_t)i && b[i][n - 1] == (uint8_t)i;
	}
	CHECK(ok, "buffers: 80 at once, more than the slots, each keeps its "
	          "bytes");
	for (int i = 0; i < N; i++)
		rpc_buf_free(b[i]);
	/* a large buffer freed is the next one handed out (still warm) */
	uint8_t *x = rpc_buf_alloc(700000);
	rpc_buf_free(x);
	uint8_t *y = rpc_buf_alloc(900000);
	CHECK(x && x == y, "buffers: the last large one freed comes back");
	if (y)
		y[900000 - 1] = 1;
	rpc_buf_free(y);
	rpc_buf_free(NULL);
	/* a large buffer freed twice stops the process, as malloc's would */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		uint8_t *z = rpc_buf_alloc(700000);
		rpc_buf_free(z);
		rpc_buf_free(z);
		_exit(0);
	}
	int status = 0;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid &&
	          WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
	      "buffers: a large one freed twice aborts");
}

int main(void)
{
	buffers();
	/* most of a record, then the rest after a pause */
	static const size_t most[] = {700000, 0};
	/* a little, then the rest */
	static const size_t little[] = {70000, 0};
	/* many pieces, each of them short of a whole record */
	static const size_t many[] = {100000, 200000, 300000,
	                              100000, 150000, 0};

	run("most, then the rest: the call succeeds", most);
	run("a little, then the rest: the call succeeds", little);
	run("many pieces: the call succeeds", many);
	TEST_EXIT();
}
