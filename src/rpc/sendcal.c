/* From which piece size sendfile pays for a reply's pieces: see rpc.h.
 *
 * Why measured and not fixed: a READ_PLUS reply of a file alternating
 * 4 KiB of data and of hole is a header and a page, again and again; a
 * READ reply is a header and one piece of up to 1 MiB. Copied, each
 * piece is read into the reply and copied again into the socket; by
 * sendfile, the page cache's pages go to the socket, for a system call
 * per piece. Which costs less depends on the CPU and on the piece's size
 * (bench/results/stop25/sendab.c, 128 KiB replies of 4 KiB pieces over
 * loopback): on a 2-CPU VM host 37-46 us copied against 49-63 us by
 * sendfile; in the QEMU guest, whose emulated CPU copies at about
 * 0.5 GB/s, 1210-1330 us against 684-771 us. On that host, though,
 * pieces of 32 KiB and more go faster by sendfile, and a 1 MiB READ of a
 * cached file 1.5-2x faster (bench/results/stop29). So the server sends
 * replies of pieces of a page up to 1 MiB both ways over a loopback
 * connection once, at start, through the same code that sends replies
 * (rpc_send_stream), three passes over all sizes, and sends by sendfile
 * from the smallest size from which it wins at every size up. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
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

#define CAL_HDR 20u  /* a READ_PLUS segment header and more */
#define CAL_ROUNDS 3 /* the fastest of these counts (noise only adds) */
#define CAL_PASSES 3 /* over all sizes; the median of their ratios counts */
/* sendfile must win by this much: a noisy host that times the two ways
 * even keeps copies, which cost no descriptor per queued reply. */
#define CAL_MARGIN 0.8
/* Piece sizes timed, smallest first: the seed's smallest segment (a
 * page) up to a whole 1 MiB READ. */
static const uint32_t cal_sizes[] = {4u << 10,   8u << 10,   16u << 10,
                                     32u << 10,  64u << 10,  128u << 10,
                                     256u << 10, 1024u << 10};
#define CAL_NSIZES (sizeof(cal_sizes) / sizeof(cal_sizes[0]))
#define CAL_FILE (4u << 20) /* room for the widest reply's pieces and holes */

/* The pieces of one timed reply of size-byte pieces: 1 MiB of data, as
 * a full READ_PLUS reply of them carries (a reply that the socket's
 * buffer takes whole times the sender alone, and sendfile came out ahead
 * at 8 KiB, which end to end it is not), and two pieces at least. */
#define CAL_REPLY (1u << 20)
static unsigned cal_pieces(uint32_t size)
{
	unsigned n = CAL_REPLY / size;

	return n < 2 ? 2 : n;
}

/* 0 not known yet, else the piece size from which sendfile pays, or
 * UINT64_MAX for none. */
static _Atomic uint64_t from;
static pthread_once_t from_once = PTHREAD_ONCE_INIT;

bool rpc_sendfile_pays_model(double t_copy, double t_sendfile)
{
	return t_copy > 0 && t_sendfile > 0 && t_sendfile < CAL_MARGIN * t_copy;
}

uint64_t rpc_sendfile_from_model(const uint32_t *sizes, const bool *pays,
                                 size_t n)
{
	size_t i = n;

	while (i > 0 && pays[i - 1])
		i--;
	return i < n ? sizes[i] : UINT64_MAX;
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

/* The client: reads everything until the connection closes, into a
 * page-aligned 1 MiB buffer as a client reading 1 MiB replies would (a
 * small one made the receiver the bottleneck, and the timing bimodal). */
static void *drain(void *arg)
{
	int fd = *(int *)arg;
	uint8_t small[4096];
	uint8_t *big = aligned_alloc(4096, CAL_REPLY);
	uint8_t *sink = big ? big : small;
	size_t n = big ? CAL_REPLY : sizeof(small);

	while (read(fd, sink, n) > 0)
		;
	free(big);
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
 * a piece read into place (a read per piece), for every piece. */
static int put_copied(struct xdr_out *x, int fd, uint32_t size, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint8_t *p = xdr_put_reserve(x, CAL_HDR + size);
		struct iovec v = {p + CAL_HDR, size};

		if (!p)
			return -1;
		memset(p, 0, CAL_HDR);
		if (preadv2(fd, &v, 1, (off_t)(2 * i * (uint64_t)size), 0) !=
		    (ssize_t)size)
			return -1;
	}
	return 0;
}

/* The same reply with the pieces as file parts, sent by sendfile. */
static int put_parts(struct xdr_out *x, uint32_t size, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint8_t *p = xdr_put_reserve(x, CAL_HDR);

		if (!p)
			return -1;
		memset(p, 0, CAL_HDR);
		if (!xdr_put_file_as(x, 2 * i * (uint64_t)size, size, false))
			return -1;
	}
	return 0;
}

/* One reply of either way built and sent; its time in ns, or -1. */
static double time_one(int sock, int fd, uint32_t size, bool sendfile_way)
{
	unsigned n = cal_pieces(size);
	size_t cap = n * (CAL_HDR + (size_t)size) + 64;
	struct xdr_out x;
	double t0, t;
	int dup_fd = -1, rc;

	if (xdr_out_init(&x, cap, cap) != 0)
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
		rc = put_parts(&x, size, n);
	} else {
		rc = put_copied(&x, fd, size, n);
	}
	if (rc == 0)
		rc = send_whole(sock, &x);
	t = now_ns() - t0;
	xdr_out_free(&x);
	return rc == 0 ? t : -1;
}

/* The fastest of CAL_ROUNDS of each way, in turn. 0 or -1. */
static int time_both(int sock, int fd, uint32_t size, double *t_copy,
                     double *t_sf)
{
	*t_copy = *t_sf = 1e18;
	for (int r = 0; r < CAL_ROUNDS; r++) {
		double c = time_one(sock, fd, size, false);
		double s = time_one(sock, fd, size, true);

		if (c < 0 || s < 0)
			return -1;
		if (c < *t_copy)
			*t_copy = c;
		if (s < *t_sf)
			*t_sf = s;
	}
	return 0;
}

/* A memfd of CAL_FILE bytes (in memory, as cached pages are), or -1. */
static int make_file(void)
{
	uint8_t *buf = malloc(CAL_FILE);
	int fd = memfd_create("snfsd-sendcal", MFD_CLOEXEC);

	if (fd >= 0 && (!buf || (memset(buf, 0x5a, CAL_FILE),
	                         pwrite(fd, buf, CAL_FILE, 0) != CAL_FILE))) {
		close(fd);
		fd = -1;
	}
	free(buf);
	return fd;
}

/* The middle of n values (n <= CAL_PASSES), sorted in place. */
static double median(double *v, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && v[j] < v[j - 1]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Every size, CAL_PASSES passes over them all (the machine's moods come
 * and go: on a 2-CPU VM one pass had sendfile at 8 KiB at 0.4x the copy,
 * the next at 1.4x), the ratio sendfile/copy of each size the median of
 * its passes. A first pass where sendfile wins at every size by half
 * (an emulated CPU) needs no more. Then the model: the smallest size
 * from which sendfile pays at every size up. 0: not timed. */
static uint64_t time_sizes(int sock, int fd)
{
	double ratio[CAL_NSIZES][CAL_PASSES];
	bool pays[CAL_NSIZES];
	unsigned passes = 0;
	double t_copy, t_sf;

	for (unsigned p = 0; p < CAL_PASSES; p++) {
		bool clear = true;

		for (size_t i = 0; i < CAL_NSIZES; i++) {
			if (time_both(sock, fd, cal_sizes[i], &t_copy, &t_sf) !=
			    0)
				return 0;
			ratio[i][p] = t_sf / t_copy;
			clear = clear && ratio[i][p] < 0.5;
			log_debug("sendfile: pass %u, a reply of %u pieces of "
			          "%u KiB copied %.1f us, by sendfile %.1f us",
			          p + 1, cal_pieces(cal_sizes[i]),
			          cal_sizes[i] >> 10, t_copy / 1e3, t_sf / 1e3);
		}
		passes = p + 1;
		if (clear)
			break;
	}
	for (size_t i = 0; i < CAL_NSIZES; i++)
		pays[i] =
		    rpc_sendfile_pays_model(1.0, median(ratio[i], passes));
	return rpc_sendfile_from_model(cal_sizes, pays, CAL_NSIZES);
}

/* The size from which sendfile pays, UINT64_MAX for none, 0 if it could
 * not be timed (no loopback, no memfd). */
static uint64_t calibrate(void)
{
	int fd = make_file(), tx = -1, rx = -1;
	uint64_t out = 0;
	pthread_t th;

	if (fd < 0 || tcp_pair(&tx, &rx) != 0)
		goto out;
	if (pthread_create(&th, NULL, drain, &rx) != 0)
		goto out;
	out = time_sizes(tx, fd);
	shutdown(tx, SHUT_WR);
	pthread_join(th, NULL);
	if (out == UINT64_MAX)
		log_info("sendfile: slower than copying for pieces of every "
		         "size up to %u KiB: zerocopy=auto copies",
		         cal_sizes[CAL_NSIZES - 1] >> 10);
	else if (out)
		log_info("sendfile: faster than copying from pieces of %" PRIu64
		         " KiB: zerocopy=auto sends those by sendfile",
		         out >> 10);
out:
	if (!out)
		log_warn("sendfile: could not time it; zerocopy=auto copies");
	if (tx >= 0)
		close(tx);
	if (rx >= 0)
		close(rx);
	if (fd >= 0)
		close(fd);
	return out ? out : UINT64_MAX;
}

/* SNFSD_SENDFILE_PAYS: 0 (never), 1 (from a page) or a size in bytes;
 * anything else is timed. */
static void from_init(void)
{
	const char *env = getenv("SNFSD_SENDFILE_PAYS");
	char *end;
	unsigned long long v;

	if (atomic_load(&from) != 0)
		return; /* set before anything asked (tests) */
	if (env && *env) {
		errno = 0;
		v = strtoull(env, &end, 10);
		if (!errno && !*end && env[0] != '-') {
			atomic_store(&from, v == 0   ? UINT64_MAX
			                    : v == 1 ? (uint64_t)cal_sizes[0]
			                             : (uint64_t)v);
			return;
		}
		log_warn(
		    "SNFSD_SENDFILE_PAYS=%s: not 0, 1 or a size; measuring",
		    env);
	}
	atomic_store(&from, calibrate());
}

uint64_t rpc_sendfile_from(void)
{
	uint64_t v = atomic_load_explicit(&from, memory_order_relaxed);

	if (v)
		return v;
	pthread_once(&from_once, from_init);
	return atomic_load(&from);
}

bool rpc_sendfile_pays(void)
{
	return rpc_sendfile_from() <= cal_sizes[0];
}

void rpc_sendfile_from_set(uint64_t size)
{
	atomic_store(&from, size ? size : UINT64_MAX);
}

void rpc_sendfile_pays_set(bool v)
{
	rpc_sendfile_from_set(v ? cal_sizes[0] : UINT64_MAX);
}
