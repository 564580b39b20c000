/* Sending a reply's stream: its buffer with the file parts (xdr.h) in
 * place. The buffer goes by send(); a part either by sendfile(), which
 * hands the page cache's pages to the socket instead of copying them
 * twice (read into the reply, then into the socket), or, marked mapped,
 * by sendmsg() straight from a mapping of the file made for this send:
 * one copy, and one system call for the buffer and many parts together,
 * where a sendfile per small piece costs more than the copy it saves.
 *
 * A part's bytes are read when sent, not when the reply was encoded: a
 * file cut short meanwhile sends zeros for the missing bytes, so the
 * record keeps the length its header promised (the data was being
 * changed under the read, which NFS does not order; the framing must
 * hold). A read error then drops the connection (see send_part).
 */
#include "rpc/rpc_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util/log.h"

static const uint8_t zeros[4096];

/* Where stream offset off falls: in buffer bytes before part *k (or after
 * the last one), *in_part false; or *in_part true and inside part *k.
 * *pos: the offset within that buffer span or part. */
static void locate(const struct xdr_out *x, uint64_t off, uint32_t *k,
                   bool *in_part, uint64_t *pos)
{
	uint64_t s = 0;
	size_t prev = 0; /* buffer position of the span's start */

	for (uint32_t i = 0; i < x->nparts; i++) {
		uint64_t span = x->parts[i].at - prev;
		if (off < s + span) {
			*k = i, *in_part = false, *pos = prev + (off - s);
			return;
		}
		s += span;
		if (off < s + x->parts[i].len) {
			*k = i, *in_part = true, *pos = off - s;
			return;
		}
		s += x->parts[i].len;
		prev = x->parts[i].at;
	}
	*k = x->nparts, *in_part = false, *pos = prev + (off - s);
}

/* One send(); 0 when the socket is full, -1 when broken. */
static ssize_t send_once(int fd, const void *p, size_t n, bool more)
{
	ssize_t r;

	do
		r = send(fd, p, n,
		         MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0));
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
	return r;
}

/* The next piece of part k from pos on: sendfile, or zeros past the
 * file's end. 0 when the socket is full, -1 when broken. */
static ssize_t send_part(int sock, const struct xdr_out *x, uint32_t k,
                         uint64_t pos)
{
	const struct xdr_file_part *p = &x->parts[k];
	uint64_t left = p->len - pos;
	off_t foff = (off_t)(p->off + pos);
	ssize_t r;

	do
		r = sendfile(sock, x->fd, &foff,
		             left > (1u << 30) ? (1u << 30) : (size_t)left);
	while (r < 0 && errno == EINTR);
	if (r > 0)
		return r;
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (r < 0) {
		/* A read error found this late cannot become the call's
		 * status; zeros would pass for data. Dropping the connection
		 * makes the client send the call again. */
		if (errno != EPIPE && errno != ECONNRESET)
			log_err("rpc: sending file data: %s", strerror(errno));
		return -1;
	}
	/* end of file: it shrank; zeros keep the record whole */
	return send_once(sock, zeros,
	                 left < sizeof(zeros) ? left : sizeof(zeros), true);
}

/* The socket has TCP_NODELAY (replies must not wait for Nagle), so each
 * sendfile that ends a part pushes a segment of its own: a READ_PLUS
 * reply of 4 KiB pieces went out as a packet per piece. Corked, the
 * stream leaves in full segments and the last one at the uncork. */
static void cork(int sock, int on)
{
	setsockopt(sock, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
}

/* Past the end of what it was in, the next place of the stream: a part
 * ended gives the buffer from its position on, a buffer span ended at a
 * part gives that part (empty ones are passed over). */
static void advance(const struct xdr_out *x, uint32_t *k, bool *in_part,
                    uint64_t *pos)
{
	for (;;) {
		if (*in_part && *pos == x->parts[*k].len)
			*in_part = false, *pos = x->parts[(*k)++].at;
		else if (!*in_part && *k < x->nparts && *pos == x->parts[*k].at)
			*in_part = true, *pos = 0;
		else
			return;
	}
}

/* ---- mapped parts ----
 *
 * One sendmsg takes the mapped parts (at most GATHER_IOV entries, parts
 * within GATHER_SPAN bytes of file) from a mapping kept across sends
 * (mapcache.c: a fault per page once, not per send, and an unmap once per
 * file; unused for a moment, it goes, so drop_caches and
 * POSIX_FADV_DONTNEED evict the pages again), or where none can be kept
 * from one made for this send alone. Only the bytes sent are touched, so
 * holes between the parts cost no fault. Nothing in user space reads the
 * mapping, so a part past the file's end (cut short since) cannot raise
 * SIGBUS: the kernel's copy faults, sendmsg sends the chunks before it
 * and fails with EFAULT at the next, and that part then goes by sendfile
 * (zeros past the end). */
#define GATHER_IOV 256
#define GATHER_SPAN (64u << 20)

/* One entry of a gather: buffer bytes [pos, end) or bytes [pos, end) of
 * part k. */
struct gather_ent {
	bool in_part;
	uint32_t k;
	uint64_t pos, end;
};

static size_t page_size(void)
{
	static size_t ps;

	if (!ps) {
		long v = sysconf(_SC_PAGESIZE);
		ps = v > 0 ? (size_t)v : 4096;
	}
	return ps;
}

/* From stream place (k, in_part, pos), the entries one sendmsg sends:
 * buffer spans and mapped parts up to the next sendfile part, the
 * stream's end, GATHER_IOV entries or GATHER_SPAN of file. *lo, *hi: the
 * file range the parts cover (lo > hi: none). Returns the count. */
static int gather_plan(const struct xdr_out *x, uint32_t k, bool in_part,
                       uint64_t pos, struct gather_ent *e, uint64_t *lo,
                       uint64_t *hi)
{
	int n = 0;

	*lo = UINT64_MAX, *hi = 0;
	while (n < GATHER_IOV) {
		if (!in_part) {
			size_t end = k < x->nparts ? x->parts[k].at : x->len;
			if (pos < end)
				e[n++] =
				    (struct gather_ent){false, k, pos, end};
			if (k >= x->nparts || !x->parts[k].mapped)
				break;
			in_part = true, pos = 0;
			continue;
		}
		const struct xdr_file_part *p = &x->parts[k];
		uint64_t a = p->off + pos, b = p->off + p->len;
		uint64_t nlo = a < *lo ? a : *lo, nhi = b > *hi ? b : *hi;
		if (n > 0 && nhi - nlo > GATHER_SPAN)
			break;
		if (pos < p->len) {
			e[n++] = (struct gather_ent){true, k, pos, p->len};
			*lo = nlo, *hi = nhi;
		}
		in_part = false, pos = p->at, k++;
	}
	return n;
}

/* Send the planned entries by one sendmsg from a mapping of [lo, hi).
 * Returns bytes sent, 0 when the socket is full, -1 when broken, -2
 * when the mapping cannot be made (the caller sends another way) or
 * -EFAULT when nothing went because a part's bytes past the file's end
 * were in the first chunk the kernel copied. */
static ssize_t gather_send(int sock, const struct xdr_out *x,
                           const struct gather_ent *e, int n, uint64_t lo,
                           uint64_t hi, bool more)
{
	struct iovec iov[GATHER_IOV];
	const uint8_t *map = NULL;
	uint8_t *own = NULL; /* a mapping for this send alone */
	struct rpc_map kept = {0};
	uint64_t base = 0;
	size_t maplen = 0;
	ssize_t r;

	if (lo < hi && rpc_map_get(x->fd, lo, hi, &kept)) {
		map = kept.base;
		base = kept.at;
	} else if (lo < hi) {
		base = lo & ~(uint64_t)(page_size() - 1);
		maplen = (size_t)(hi - base);
		own = mmap(NULL, maplen, PROT_READ, MAP_SHARED, x->fd,
		           (off_t)base);
		if (own == MAP_FAILED)
			return -2;
		map = own;
	}
	for (int i = 0; i < n; i++) {
		const struct gather_ent *g = &e[i];
		iov[i].iov_base =
		    g->in_part
		        ? (void *)(map + (x->parts[g->k].off + g->pos - base))
		        : x->buf + g->pos;
		iov[i].iov_len = (size_t)(g->end - g->pos);
	}
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
	do
		r = sendmsg(sock, &mh,
		            MSG_NOSIGNAL | MSG_DONTWAIT |
		                (more ? MSG_MORE : 0));
	while (r < 0 && errno == EINTR);
	if (r < 0)
		r = errno == EAGAIN || errno == EWOULDBLOCK ? 0
		    : errno == EFAULT                       ? -EFAULT
		                                            : -1;
	if (own)
		munmap(own, maplen);
	else if (map)
		rpc_map_put(&kept);
	return r;
}

/* The stream from (k, in_part, pos) on, as far as one sendmsg goes; on
 * a fault (see gather_send) only the first entry, the way that cannot
 * fault. Returns as send_once; -2: send another way. */
static ssize_t send_gather(int sock, const struct xdr_out *x, uint32_t k,
                           bool in_part, uint64_t pos)
{
	struct gather_ent e[GATHER_IOV];
	uint64_t lo, hi;
	int n = gather_plan(x, k, in_part, pos, e, &lo, &hi);
	bool more;
	ssize_t r;

	if (n == 0)
		return -2;
	/* More follows the gather: a part after its last buffer span, or
	 * after its last part another part or buffer bytes. (A reply ending
	 * in a mapped part was sent with MSG_MORE and sat in the socket
	 * until the next reply or the kernel's timer: 4 KiB READs mapped
	 * took 0.5 ms each.) */
	const struct gather_ent *last = &e[n - 1];
	more = last->in_part
	           ? last->k + 1 < x->nparts || x->parts[last->k].at < x->len
	           : last->k < x->nparts;
	r = gather_send(sock, x, e, n, lo, hi, more);
	if (r == -EFAULT) {
		/* Nothing went: a part's bytes past the file's end faulted
		 * in the first chunk the kernel copies (up to 64 KiB, so not
		 * necessarily at the first byte). The buffer span alone, or
		 * the part by sendfile, which stops at the end exactly and
		 * then sends zeros. */
		if (!e[0].in_part)
			return send_once(sock, x->buf + e[0].pos,
			                 (size_t)(e[0].end - e[0].pos), true);
		return send_part(sock, x, e[0].k, e[0].pos);
	}
	return r;
}

/* Move the stream place (k, in_part, pos) on by n bytes sent: within a
 * buffer span or part, or, after a gather, across several. */
static void walk(const struct xdr_out *x, uint32_t *k, bool *in_part,
                 uint64_t *pos, uint64_t n)
{
	while (n > 0) {
		uint64_t end = *in_part         ? x->parts[*k].len
		               : *k < x->nparts ? x->parts[*k].at
		                                : x->len;
		uint64_t step = end - *pos < n ? end - *pos : n;

		*pos += step;
		n -= step;
		if (*pos < end)
			break;
		if (*in_part)
			*in_part = false, *pos = x->parts[(*k)++].at;
		else if (*k < x->nparts)
			*in_part = true, *pos = 0;
		else
			break;
	}
}

/* Whether any part goes by sendfile (the stream is corked for them). */
static bool any_sendfile(const struct xdr_out *x)
{
	for (uint32_t i = 0; i < x->nparts; i++)
		if (!x->parts[i].mapped)
			return true;
	return false;
}

ssize_t rpc_send_stream(int sock, const struct xdr_out *x, size_t off)
{
	uint64_t total = xdr_out_size(x), sent = 0, pos;
	/* one sendmsg takes a mapped stream whole: no cork needed */
	bool corked = x->nparts > 1 && any_sendfile(x), broken = false, in_part;
	uint32_t k;

	if (corked)
		cork(sock, 1);
	/* found once: a reply of many small parts is not walked per part */
	locate(x, off, &k, &in_part, &pos);
	while (off + sent < total) {
		ssize_t r;

		advance(x, &k, &in_part, &pos);
		/* a mapped part, or the buffer before one: gathered */
		r = k < x->nparts && x->parts[k].mapped
		        ? send_gather(sock, x, k, in_part, pos)
		        : -2;
		if (r == -2 && in_part) {
			r = send_part(sock, x, k, pos);
		} else if (r == -2) {
			size_t end = k < x->nparts ? x->parts[k].at : x->len;
			r = send_once(sock, x->buf + pos, end - (size_t)pos,
			              k < x->nparts);
		}
		if (r <= 0) {
			broken = r < 0;
			break;
		}
		sent += (uint64_t)r;
		walk(x, &k, &in_part, &pos, (uint64_t)r);
	}
	if (corked)
		cork(sock, 0);
	return broken ? -1 : (ssize_t)sent;
}
