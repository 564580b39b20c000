/* Whether sendfile pays for page-sized pieces of a reply: see rpc.h.
 *
 * Why measured and not fixed: a READ_PLUS reply of a file alternating
 * 4 KiB of data and of hole is a header and a page, again and again.
 * Copied, each page is read into the reply and copied again into the
 * socket; by sendfile, the page cache's page goes to the socket, for a
 * system call per page. Which costs less depends on the CPU by a factor
 * of three (bench/results/stop25/sendab.c, 128 KiB replies of 4 KiB
 * pieces over loopback): on a 2-CPU VM host 37-46 us copied against
 * 49-63 us by sendfile; in the QEMU guest, whose emulated CPU copies at
 * about 0.5 GB/s, 1210-1330 us against 684-771 us. In that guest snfsd
 * read mixed-4d with dd iflag=direct 1.4x and buffered 1.25x faster by
 * sendfile from 4 KiB on (bench/results/stop26). So the server sends a
 * reply of such pieces both ways over a loopback connection once, at
 * start, through the same code that sends replies (rpc_send_stream). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "rpc/rpc_int.h"
#include "util/log.h"

#define CAL_PIECES 16   /* pieces of a page, a hole after each */
#define CAL_PIECE 4096u /* the seed's smallest segment, and a page */
#define CAL_HDR 20u     /* a READ_PLUS segment header and more */
#define CAL_ROUNDS 10   /* the fastest of these counts (noise only adds) */
/* sendfile must win by this much: a noisy host that times the two ways
 * even keeps copies, which cost no descriptor per queued reply. */
#define CAL_MARGIN 0.8

static _Atomic int pays = -1; /* -1 not known yet, 0 or 1 */
static pthread_once_t pays_once = PTHREAD_ONCE_INIT;

bool rpc_sendfile_pays_model(double t_copy, double t_sendfile)
{
	return t_copy > 0 && t_sendfile > 0 && t_sendfile < CAL_MARGIN * t_copy;
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* A connected loopback TCP pair: *tx the server's end (TCP_NODELAY, as
 * the server's connections), *rx the client's. 0 or -1. */
static int tcp_pair(int *tx, int *rx)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int l, one = 1;

	*tx = *rx = -1;
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return -1;
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(l, (struct sockaddr *)&a, &alen) != 0 ||
	    listen(l, 1) != 0)
		goto fail;
	*rx = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*rx < 0 || connect(*rx, (struct sockaddr *)&a, sizeof(a)) != 0)
		goto fail;
	*tx = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (*tx < 0)
		goto fail;
	setsockopt(*tx, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(l);
	return 0;
fail:
	close(l);
	if (*rx >= 0)
		close(*rx);
	*rx = -1;
	return -1;
}

/* The client: reads everything until the connection closes. */
static void *drain(void *arg)
{
	int fd = *(int *)arg;
	uint8_t sink[16 << 10];

	while (read(fd, sink, sizeof(sink)) > 0)
		;
	return NULL;
}

/* All of x's stream, waiting while the socket is full. 0 or -1. */
static int send_whole(int sock, const struct xdr_out *x)
{
	uint64_t total = xdr_out_size(x), off = 0;

	while (off < total) {
		ssize_t n = rpc_send_stream(sock, x, (size_t)off);
		struct pollfd p = {.fd = sock, .events = POLLOUT};

		if (n < 0)
			return -1;
		off += (uint64_t)n;
		if (off < total && poll(&p, 1, 1000) <= 0)
			return -1;
	}
	return 0;
}

/* The reply the way the server sends a copied READ_PLUS: a header, then
 * a page read into place (a read per piece), for every piece. */
static int put_copied(struct xdr_out *x, int fd)
{
	for (unsigned i = 0; i < CAL_PIECES; i++) {
		uint8_t *p = xdr_put_reserve(x, CAL_HDR + CAL_PIECE);
		struct iovec v = {p + CAL_HDR, CAL_PIECE};

		if (!p)
			return -1;
		memset(p, 0, CAL_HDR);
		if (preadv2(fd, &v, 1, (off_t)(2 * i * CAL_PIECE), 0) !=
		    (ssize_t)CAL_PIECE)
			return -1;
	}
	return 0;
}

/* The same reply with the pages as file parts, sent by sendfile. */
static int put_parts(struct xdr_out *x)
{
	for (unsigned i = 0; i < CAL_PIECES; i++) {
		uint8_t *p = xdr_put_reserve(x, CAL_HDR);

		if (!p)
			return -1;
		memset(p, 0, CAL_HDR);
		if (!xdr_put_file_as(x, 2 * i * CAL_PIECE, CAL_PIECE, false))
			return -1;
	}
	return 0;
}

/* One reply of either way built and sent; its time in ns, or -1. */
static double time_one(int sock, int fd, bool sendfile_way)
{
	struct xdr_out x;
	double t0, t;
	int dup_fd = -1, rc;

	if (xdr_out_init(&x, CAL_PIECES * (CAL_HDR + CAL_PIECE) + 64,
	                 1u << 20) != 0)
		return -1;
	t0 = now_ns();
	if (sendfile_way) {
		xdr_out_allow_file(&x);
		dup_fd = dup(fd);
		if (dup_fd < 0 || !xdr_out_take_file(&x, dup_fd)) {
			if (dup_fd >= 0)
				close(dup_fd);
			xdr_out_free(&x);
			return -1;
		}
		rc = put_parts(&x);
	} else {
		rc = put_copied(&x, fd);
	}
	if (rc == 0)
		rc = send_whole(sock, &x);
	t = now_ns() - t0;
	xdr_out_free(&x);
	return rc == 0 ? t : -1;
}

/* The fastest of CAL_ROUNDS of each way, in turn. 0 or -1. */
static int time_both(int sock, int fd, double *t_copy, double *t_sf)
{
	*t_copy = *t_sf = 1e18;
	for (int r = 0; r < CAL_ROUNDS; r++) {
		double c = time_one(sock, fd, false);
		double s = time_one(sock, fd, true);

		if (c < 0 || s < 0)
			return -1;
		if (c < *t_copy)
			*t_copy = c;
		if (s < *t_sf)
			*t_sf = s;
	}
	return 0;
}

/* A memfd of 2 * CAL_PIECES pages (in memory, as cached pages are), or -1. */
static int make_file(void)
{
	const size_t span = 2u * CAL_PIECES * CAL_PIECE;
	uint8_t *buf = malloc(span);
	int fd = memfd_create("snfsd-sendcal", MFD_CLOEXEC);

	if (fd >= 0 && (!buf || (memset(buf, 0x5a, span),
	                         pwrite(fd, buf, span, 0) != (ssize_t)span))) {
		close(fd);
		fd = -1;
	}
	free(buf);
	return fd;
}

/* 1 sendfile pays, 0 not, -1 not timed (no loopback, no memfd). */
static int calibrate(void)
{
	int fd = make_file(), tx = -1, rx = -1, out = -1;
	double t_copy = 0, t_sf = 0;
	pthread_t th;

	if (fd < 0 || tcp_pair(&tx, &rx) != 0)
		goto out;
	if (pthread_create(&th, NULL, drain, &rx) != 0)
		goto out;
	if (time_both(tx, fd, &t_copy, &t_sf) == 0)
		out = rpc_sendfile_pays_model(t_copy, t_sf);
	shutdown(tx, SHUT_WR);
	pthread_join(th, NULL);
	if (out >= 0)
		log_info("sendfile: a reply of %d 4 KiB pieces copied %.1f us, "
		         "by sendfile %.1f us: zerocopy=auto %s",
		         CAL_PIECES, t_copy / 1e3, t_sf / 1e3,
		         out ? "sends pieces of 4 KiB and more by sendfile"
		             : "copies");
out:
	if (out < 0)
		log_warn("sendfile: could not time it; zerocopy=auto copies");
	if (tx >= 0)
		close(tx);
	if (rx >= 0)
		close(rx);
	if (fd >= 0)
		close(fd);
	return out;
}

static void pays_init(void)
{
	const char *env = getenv("SNFSD_SENDFILE_PAYS");
	int v;

	if (atomic_load(&pays) >= 0)
		return; /* set before anything asked (tests) */
	if (env && (!strcmp(env, "0") || !strcmp(env, "1"))) {
		atomic_store(&pays, env[0] == '1');
		return;
	}
	if (env && *env)
		log_warn("SNFSD_SENDFILE_PAYS=%s: not 0 or 1; measuring", env);
	v = calibrate();
	atomic_store(&pays, v > 0);
}

bool rpc_sendfile_pays(void)
{
	int v = atomic_load_explicit(&pays, memory_order_relaxed);

	if (v >= 0)
		return v;
	pthread_once(&pays_once, pays_init);
	return atomic_load(&pays) > 0;
}

void rpc_sendfile_pays_set(bool v)
{
	atomic_store(&pays, v);
}
