/* Replies with file parts (xdr.h) and their sending (rpc/send.c): the
 * stream is the buffer with each part's file bytes in place, across
 * partial sends, with zeros where the file was cut short after the reply
 * was made; truncation, limits and descriptor ownership. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "rpc/rpc_int.h"

#define FILE_SIZE (300 * 1024)

struct sink {
	int fd;
	uint8_t *buf;
	size_t want, got;
};

static void *drain(void *arg)
{
	struct sink *s = arg;

	while (s->got < s->want) {
		ssize_t n = read(s->fd, s->buf + s->got, s->want - s->got);
		if (n <= 0)
			break;
		s->got += (size_t)n;
		usleep(200); /* slow: the sender sees a full socket */
	}
	return NULL;
}

/* A connected TCP pair over loopback, the sending side non-blocking
 * with a send buffer of sndbuf bytes (small: partial sends), the
 * receiving side's of rcvbuf (0: the default). */
static int tcp_pair(int *snd, int *rcv, int sndbuf, int rcvbuf)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(l, 1) < 0 || getsockname(l, (struct sockaddr *)&a, &al) < 0)
		return -1;
	*rcv = socket(AF_INET, SOCK_STREAM, 0);
	if (rcvbuf > 0)
		setsockopt(*rcv, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
		           sizeof(rcvbuf));
	if (connect(*rcv, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -1;
	*snd = accept(l, NULL, NULL);
	close(l);
	if (*snd < 0)
		return -1;
	setsockopt(*snd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	return fcntl(*snd, F_SETFL, O_NONBLOCK);
}

/* Send x whole through the pair, as the server does: rpc_send_stream
 * until done, waiting for writability between. Returns the bytes the
 * peer got (into out, at most cap), or -1. */
static ssize_t send_all(const struct xdr_out *x, uint8_t *out, size_t cap,
                        int *calls)
{
	int snd, rcv;
	size_t off = 0;
	struct sink s;
	pthread_t t;

	if (tcp_pair(&snd, &rcv, 16384, 0) < 0)
		return -1;
	s = (struct sink){.fd = rcv, .buf = out, .want = cap};
	pthread_create(&t, NULL, drain, &s);
	*calls = 0;
	while (off < xdr_out_size(x)) {
		struct pollfd p = {.fd = snd, .events = POLLOUT};
		ssize_t n = rpc_send_stream(snd, x, off);

		(*calls)++;
		if (n < 0)
			break;
		off += (size_t)n;
		if (off < xdr_out_size(x))
			poll(&p, 1, 1000);
	}
	shutdown(snd, SHUT_WR);
	pthread_join(t, NULL);
	close(snd);
	close(rcv);
	return off == xdr_out_size(x) ? (ssize_t)s.got : -1;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed + (i >> 9));
}

/* header word, part A (odd length: padded), a word, part B, a word;
 * bit 0 of mapped maps A, bit 1 maps B (sent from a mapping, not by
 * sendfile) */
static bool build(struct xdr_out *x, int file, uint64_t a_off, uint64_t a_len,
                  uint64_t b_off, uint64_t b_len, unsigned mapped)
{
	bool ok = xdr_out_init(x, 256, 1 << 20) == 0;
	xdr_out_allow_file(x);
	ok = ok && xdr_put_u32(x, 0x11111111) && xdr_out_may_take_file(x);
	ok = ok && xdr_out_take_file(x, dup(file));
	ok = ok && xdr_put_file_as(x, a_off, a_len, mapped & 1) &&
	     xdr_put_u32(x, 0x22222222);
	ok = ok && xdr_put_file_as(x, b_off, b_len, mapped & 2) &&
	     xdr_put_u32(x, 0x33333333);
	return ok;
}

/* The stream build() should give, from the file's bytes (zeros past
 * size). */
static size_t expect(uint8_t *e, const uint8_t *file, size_t size,
                     uint64_t a_off, uint64_t a_len, uint64_t b_off,
                     uint64_t b_len)
{
	size_t n = 0;
	const uint64_t offs[2] = {a_off, b_off}, lens[2] = {a_len, b_len};
	const uint8_t words[3] = {0x11, 0x22, 0x33};

	for (int k = 0; k < 3; k++) {
		memset(e + n, words[k], 4);
		n += 4;
		if (k == 2)
			break;
		for (uint64_t i = 0; i < lens[k]; i++)
			e[n++] = offs[k] + i < size ? file[offs[k] + i] : 0;
		memset(e + n, 0, xdr_pad((size_t)lens[k]));
		n += xdr_pad((size_t)lens[k]);
	}
	return n;
}

/* Data segments the socket has sent so far. */
static unsigned segs_out(int fd)
{
	struct tcp_info ti;
	socklen_t n = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &n) == 0
	           ? ti.tcpi_data_segs_out
	           : 0;
}

/* A READ_PLUS-like reply of 32 parts of 4 KiB, each after a header word,
 * sent on a TCP_NODELAY socket as the server's are: the segments it
 * takes (a sendfile that ends a part pushes what is queued, so
 * uncorked that was a segment per part). 0 on failure. */
static unsigned segs_of_many_parts(int file, bool mapped)
{
	static uint8_t sink[40 * 4100];
	unsigned before, segs = 0;
	struct xdr_out x;
	size_t got = 0, off = 0;
	int snd, rcv, one = 1;
	bool ok;

	if (tcp_pair(&snd, &rcv, 1 << 20, 1 << 20) < 0)
		return 0;
	setsockopt(snd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ok = xdr_out_init(&x, 256, 1 << 20) == 0;
	xdr_out_allow_file(&x);
	ok = ok && xdr_out_take_file(&x, dup(file));
	for (int i = 0; i < 32 && ok; i++)
		ok = xdr_put_u32(&x, (uint32_t)i) &&
		     xdr_put_file_as(&x, (uint64_t)i * 8192, 4096, mapped);
	before = segs_out(snd);
	while (ok && off < xdr_out_size(&x)) { /* the buffers take it all */
		ssize_t n = rpc_send_stream(snd, &x, off);
		struct pollfd p = {.fd = snd, .events = POLLOUT};

		ok = n >= 0;
		off += n > 0 ? (size_t)n : 0;
		if (ok && off < xdr_out_size(&x))
			poll(&p, 1, 1000);
	}
	if (ok) {
		segs = segs_out(snd) - before;
		while (got < xdr_out_size(&x)) {
			ssize_t n = read(rcv, sink, sizeof(sink));
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		if (got != xdr_out_size(&x))
			segs = 0;
	}
	xdr_out_free(&x);
	close(snd);
	close(rcv);
	return segs;
}

/* The stream with the parts sent as mapped says (build()), whole over
 * many partial sends, then with the file cut short under the reply
 * (zeros, length kept); the file is restored after. */
static void check_stream(int file, const uint8_t *data, unsigned mapped)
{
	static uint8_t got[FILE_SIZE + 4096], want[FILE_SIZE + 4096];
	struct xdr_out x;
	size_t n;
	int calls;

	printf("# parts mapped: %s %s\n", mapped & 1 ? "A" : "-",
	       mapped & 2 ? "B" : "-");
	CHECK(build(&x, file, 1000, 200001, 5, 8, mapped),
	      "send: reply with two parts");
	n = expect(want, data, FILE_SIZE, 1000, 200001, 5, 8);
	CHECK(n == xdr_out_size(&x), "send: expected stream length");
	memset(got, 0xee, sizeof(got));
	CHECK(send_all(&x, got, n, &calls) == (ssize_t)n &&
	          memcmp(got, want, n) == 0,
	      "send: stream equals buffer with file bytes in place");
	CHECK(calls > 1, "send: the socket filled and sending resumed");

	/* cut short inside part A: its tail and all of B past the end */
	CHECK(ftruncate(file, 100000) == 0, "send: file truncated");
	n = expect(want, data, 100000, 1000, 200001, 5, 8);
	memset(got, 0xee, sizeof(got));
	CHECK(send_all(&x, got, n, &calls) == (ssize_t)n &&
	          memcmp(got, want, n) == 0,
	      "send: bytes past the new end go as zeros");
	/* cut short on a page boundary: the mapping's faults start there */
	CHECK(ftruncate(file, 65536) == 0, "send: file truncated to a page");
	n = expect(want, data, 65536, 1000, 200001, 5, 8);
	memset(got, 0xee, sizeof(got));
	CHECK(send_all(&x, got, n, &calls) == (ssize_t)n &&
	          memcmp(got, want, n) == 0,
	      "send: zeros from a page boundary on");
	CHECK(pwrite(file, data + 65536, FILE_SIZE - 65536, 65536) ==
	          FILE_SIZE - 65536,
	      "send: file restored");
	xdr_out_free(&x);
}

/* A reply of more mapped parts than one sendmsg takes (GATHER_IOV in
 * send.c): 400 parts of 100 bytes, each after a word, in several
 * gathers and partial sends; the stream is the words and the file's
 * bytes in order. */
static void check_many_mapped(int file, const uint8_t *data)
{
	static uint8_t got[400 * 104 + 16], want[400 * 104 + 16];
	struct xdr_out x;
	size_t n = 0;
	int calls;
	bool ok = xdr_out_init(&x, 256, 1 << 20) == 0;

	xdr_out_allow_file(&x);
	ok = ok && xdr_out_take_file(&x, dup(file));
	for (uint32_t i = 0; i < 400 && ok; i++) {
		uint64_t off = (uint64_t)i * 700 + 3; /* unaligned, spread */
		ok = xdr_put_u32(&x, i) && xdr_put_file_as(&x, off, 100, true);
		want[n] = want[n + 1] = want[n + 2] = 0;
		want[n + 3] = (uint8_t)i;
		want[n + 2] = (uint8_t)(i >> 8);
		memcpy(want + n + 4, data + off, 100);
		n += 104;
	}
	CHECK(ok && xdr_out_size(&x) == n, "send: 400 mapped parts");
	memset(got, 0xee, sizeof(got));
	CHECK(send_all(&x, got, n, &calls) == (ssize_t)n &&
	          memcmp(got, want, n) == 0,
	      "send: 400 mapped parts arrive in order");
	xdr_out_free(&x);
}

/* A reply whose stream ends in a part leaves whole at once: nothing
 * stays in the socket's queue unsent (it was sent with MSG_MORE when the
 * part was mapped, and waited for the next reply: 4 KiB READs took 0.5
 * ms each). */
static void check_nothing_held(int file)
{
	for (int mapped = 0; mapped < 2; mapped++) {
		struct xdr_out x;
		int snd, rcv, unsent = -1;
		bool ok = xdr_out_init(&x, 256, 1 << 20) == 0 &&
		          tcp_pair(&snd, &rcv, 1 << 20, 1 << 20) == 0;

		xdr_out_allow_file(&x);
		ok = ok && xdr_out_take_file(&x, dup(file)) &&
		     xdr_put_u32(&x, 7) &&
		     xdr_put_file_as(&x, 8192, 4096, mapped);
		ok = ok &&
		     rpc_send_stream(snd, &x, 0) == (ssize_t)xdr_out_size(&x) &&
		     ioctl(snd, SIOCOUTQNSD, &unsent) == 0;
		CHECK(ok && unsent == 0,
		      mapped ? "send: a reply ending in a mapped part is not "
		               "held back"
		             : "send: a reply ending in a sendfile part is not "
		               "held back");
		if (unsent != 0)
			printf("# %d bytes held\n", unsent);
		xdr_out_free(&x);
		close(snd);
		close(rcv);
	}
}

/* Pages of file resident in the page cache, by a mapping of our own. */
static size_t resident(int file, size_t len)
{
	unsigned char vec[FILE_SIZE / 4096 + 1];
	size_t n = 0, pages = (len + 4095) / 4096;
	void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, file, 0);

	if (p == MAP_FAILED || mincore(p, len, vec) != 0)
		return SIZE_MAX;
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	munmap(p, len);
	return n;
}

/* Mappings of file in this process (/proc/self/maps, by inode). */
static int maps_of(int file)
{
	struct stat st;
	char line[512];
	int n = 0;
	FILE *m = fopen("/proc/self/maps", "r");

	if (!m || fstat(file, &st) != 0)
		return -1;
	while (fgets(line, sizeof(line), m)) {
		unsigned long long ino = 0;
		if (sscanf(line, "%*s %*s %*s %*s %llu", &ino) == 1 &&
		    ino == (unsigned long long)st.st_ino)
			n++;
	}
	fclose(m);
	return n;
}

/* A reply of two mapped parts (pages 1 and 16 of the file), sent whole;
 * true when the peer got them right. */
static bool send_two_mapped(int file, const uint8_t *data)
{
	static uint8_t got[2 * 4096 + 8];
	struct xdr_out x;
	int calls;
	bool ok = xdr_out_init(&x, 256, 1 << 20) == 0;

	xdr_out_allow_file(&x);
	ok = ok && xdr_out_take_file(&x, dup(file)) && xdr_put_u32(&x, 1) &&
	     xdr_put_file_as(&x, 4096, 4096, true) && xdr_put_u32(&x, 2) &&
	     xdr_put_file_as(&x, 65536, 4096, true);
	ok = ok &&
	     send_all(&x, got, sizeof(got), &calls) == (ssize_t)sizeof(got) &&
	     memcmp(got + 4, data + 4096, 4096) == 0 &&
	     memcmp(got + 4104, data + 65536, 4096) == 0;
	xdr_out_free(&x);
	return ok;
}

/* Mapped parts go from a mapping kept across sends (mapcache.c): the
 * second reply reuses the first's; while it is kept its pages cannot be
 * evicted, so unused it goes by itself (a sweeper thread). */
static void check_kept_mapping(int file, const uint8_t *data)
{
	struct rpc_map pin;
	int i;

	rpc_map_drop_idle();
	CHECK(send_two_mapped(file, data) && rpc_map_live() == 1 &&
	          maps_of(file) == 1,
	      "send: mapped parts leave a mapping kept");
	CHECK(send_two_mapped(file, data) && rpc_map_live() == 1 &&
	          maps_of(file) == 1,
	      "send: the next reply reuses it");
	/* Held (a slow run must not lose it to the sweeper meanwhile), its
	 * pages sent through it again; written, so flushed first: only
	 * clean pages are evicted. While mapped, the pages sent stay: why
	 * the mapping must go. */
	CHECK(rpc_map_get(file, 4096, 8192, &pin), "send: the mapping held");
	CHECK(send_two_mapped(file, data) && fdatasync(file) == 0 &&
	          posix_fadvise(file, 0, 0, POSIX_FADV_DONTNEED) == 0 &&
	          resident(file, FILE_SIZE) >= 2,
	      "send: pages in a kept mapping are not evicted");
	rpc_map_put(&pin);
	for (i = 0; i < 100 && rpc_map_live() > 0; i++) {
		struct timespec ts = {0, 20 * 1000000L};
		nanosleep(&ts, NULL);
	}
	CHECK(rpc_map_live() == 0,
	      "send: an unused mapping is removed within 2 s");
	CHECK(maps_of(file) == 0,
	      "send: then no mapping of the file is left in the process");
}

int main(void)
{
	static uint8_t data[FILE_SIZE], got[FILE_SIZE + 4096];
	char path[] = "/tmp/snfs-test-send-XXXXXX";
	int file = mkstemp(path), calls;
	struct xdr_out x, y;

	fill(data, sizeof(data), 7);
	CHECK(file >= 0 && write(file, data, sizeof(data)) == FILE_SIZE,
	      "send: test file written");
	unlink(path);

	/* the stream: buffer and parts in place, over many partial sends */
	CHECK(build(&x, file, 1000, 200001, 5, 8, 0),
	      "send: reply with two parts");
	CHECK(x.nparts == 2 && x.part_bytes == 200009 &&
	          xdr_out_size(&x) == x.len + 200009,
	      "send: size counts the parts");
	CHECK(x.len == 4 + 3 + 4 + 4, "send: buffer holds words and padding");
	/* by sendfile, from a mapping, and the two mixed */
	for (unsigned m = 0; m < 4; m++)
		check_stream(file, data, m);
	check_many_mapped(file, data);
	check_nothing_held(file);
	check_kept_mapping(file, data);

	/* truncating to before a part drops it */
	xdr_out_truncate(&x, 4 + 3 + 4);
	CHECK(x.nparts == 1 && x.part_bytes == 200001,
	      "send: truncate drops the parts after it");
	xdr_out_truncate(&x, 4);
	CHECK(x.nparts == 0 && x.part_bytes == 0 && xdr_out_size(&x) == 4,
	      "send: truncate to a part's position drops it");

	/* descriptors: one file per reply, freed with it, a global cap */
	CHECK(!xdr_out_may_take_file(&x), "send: one file per reply");
	int held = x.fd;
	xdr_out_free(&x);
	CHECK(fcntl(held, F_GETFD) < 0 && errno == EBADF,
	      "send: free closes the reply's file");
	CHECK(xdr_out_init(&y, 256, 4096) == 0 && !xdr_out_may_take_file(&y),
	      "send: a reply not allowed files takes none");
	xdr_out_allow_file(&y);
	xdr_set_file_limit(0);
	CHECK(!xdr_out_may_take_file(&y), "send: none past the global cap");
	xdr_set_file_limit(256);
	CHECK(xdr_out_take_file(&y, dup(file)), "send: under the cap it may");
	CHECK(xdr_put_u32(&y, 1) && !xdr_put_file(&y, 0, 4094) && y.err &&
	          y.nparts == 0 && y.part_bytes == 0,
	      "send: a part past the reply limit fails");
	xdr_out_free(&y);

	/* many small parts leave in full segments, not one per part */
	for (int m = 0; m < 2; m++) {
		unsigned segs = segs_of_many_parts(file, m);
		CHECK(segs > 0 && segs <= 4,
		      "send: 32 parts of 4 KiB in at most 4 segments");
		if (segs > 4 || segs == 0)
			printf("# %s: %u segments\n", m ? "mapped" : "sendfile",
			       segs);
	}

	/* a plain reply goes out as before */
	CHECK(xdr_out_init(&y, 256, 1 << 20) == 0, "send: plain reply");
	xdr_out_allow_file(&y);
	for (int i = 0; i < 40000; i++)
		xdr_put_u32(&y, (uint32_t)i);
	memset(got, 0, sizeof(got));
	CHECK(send_all(&y, got, y.len, &calls) == (ssize_t)y.len &&
	          memcmp(got, y.buf, y.len) == 0,
	      "send: a reply without parts is its buffer");
	xdr_out_free(&y);
	close(file);
	TEST_EXIT();
}
