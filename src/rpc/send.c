/* Sending a reply's stream: its buffer with the file parts (xdr.h) in
 * place, the buffer by send() and the parts by sendfile(), which hands
 * the page cache's pages to the socket instead of copying them twice
 * (read into the reply, then into the socket).
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
#include <sys/sendfile.h>
#include <sys/socket.h>

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

ssize_t rpc_send_stream(int sock, const struct xdr_out *x, size_t off)
{
	uint64_t total = xdr_out_size(x), sent = 0, pos;
	bool corked = x->nparts > 1, broken = false, in_part;
	uint32_t k;

	if (corked)
		cork(sock, 1);
	/* found once: a reply of many small parts is not walked per part */
	locate(x, off, &k, &in_part, &pos);
	while (off + sent < total) {
		ssize_t r;

		advance(x, &k, &in_part, &pos);
		if (in_part) {
			r = send_part(sock, x, k, pos);
		} else {
			size_t end = k < x->nparts ? x->parts[k].at : x->len;
			r = send_once(sock, x->buf + pos, end - (size_t)pos,
			              k < x->nparts);
		}
		if (r <= 0) {
			broken = r < 0;
			break;
		}
		sent += (uint64_t)r;
		pos += (uint64_t)r;
	}
	if (corked)
		cork(sock, 0);
	return broken ? -1 : (ssize_t)sent;
}
