/* Blocking RPC calls over TCP; see callout.h. */
#include "rpc/callout.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "rpc/portmap.h"
#include "rpc/rpc_int.h"

#define PMAPPROC_GETPORT 3
#define IPPROTO_TCP_NUM 6

void rpc_callout_timeouts(int fd, int timeout_s)
{
	struct timeval tv = {.tv_sec = timeout_s};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Bind fd to a reserved port of its family when root: rpcbind -L trusts
 * only those, and lock managers may insist on them. */
static void bind_reserved(int fd, int family)
{
	struct sockaddr_storage ss = {.ss_family = (sa_family_t)family};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

	if (geteuid() != 0)
		return;
	for (int port = 1023; port >= 600; port--) {
		if (family == AF_INET)
			sin->sin_port = htons((uint16_t)port);
		else
			sin6->sin6_port = htons((uint16_t)port);
		if (bind(fd, (struct sockaddr *)&ss,
		         family == AF_INET ? sizeof(*sin) : sizeof(*sin6)) == 0)
			return;
		if (errno != EADDRINUSE)
			return;
	}
}

int rpc_callout_connect(const struct sockaddr *sa, socklen_t len, int timeout_s,
                        bool reserved)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;
	struct pollfd p = {.events = POLLOUT};
	socklen_t el = sizeof(rc);

	if (fd < 0)
		return -errno;
	rpc_callout_timeouts(fd, timeout_s);
	if (reserved)
		bind_reserved(fd, sa->sa_family);
	/* Non-blocking connect: SO_SNDTIMEO does not bound connect(2)'s
	 * wait on every kernel, a poll does. */
	fcntl(fd, F_SETFL, O_NONBLOCK);
	rc = connect(fd, sa, len);
	if (rc < 0 && errno == EINPROGRESS) {
		p.fd = fd;
		rc = poll(&p, 1, timeout_s * 1000);
		if (rc == 0) {
			errno = ETIMEDOUT;
			rc = -1;
		} else if (rc > 0 &&
		           (getsockopt(fd, SOL_SOCKET, SO_ERROR, &rc, &el) ||
		            rc)) {
			errno = rc ? rc : errno;
			rc = -1;
		}
	}
	if (rc < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	fcntl(fd, F_SETFL, 0);
	return fd;
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_record(int fd, struct rpc_record_reader *r)
{
	uint8_t buf[1024];
	bool done = false;

	while (!done) {
		ssize_t n = read(fd, buf, sizeof(buf));
		long k;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		if (n == 0)
			return -ECONNRESET;
		/* one reply per call: bytes past its end would be a protocol
		 * error from the server, and are ignored */
		k = rpc_record_feed(r, buf, (size_t)n, &done);
		if (k < 0)
			return -EPROTO;
	}
	return 0;
}

static void put_call_header(struct xdr_out *m, uint32_t xid, uint32_t prog,
                            uint32_t vers, uint32_t proc)
{
	char host[65] = "localhost";
	size_t body;

	gethostname(host, sizeof(host) - 1);
	xdr_put_u32(m, xid);
	xdr_put_u32(m, RPC_MSG_CALL);
	xdr_put_u32(m, RPC_VERSION);
	xdr_put_u32(m, prog);
	xdr_put_u32(m, vers);
	xdr_put_u32(m, proc);
	xdr_put_u32(m, RPC_AUTH_SYS);
	body = m->len;
	xdr_put_u32(m, 0); /* body length, patched below */
	xdr_put_u32(m, (uint32_t)time(NULL));
	xdr_put_string(m, host);
	xdr_put_u32(m, (uint32_t)geteuid());
	xdr_put_u32(m, (uint32_t)getegid());
	xdr_put_u32(m, 0); /* no supplementary groups */
	xdr_patch_u32(m, body, (uint32_t)(m->len - body - 4));
	xdr_put_u32(m, RPC_AUTH_NONE);
	xdr_put_u32(m, 0);
}

/* Check an accepted, successful reply to xid and leave in at its results.
 * 0, -EACCES when denied, -EPROTO otherwise. */
static int parse_reply_header(struct xdr_in *in, uint32_t xid)
{
	uint32_t rxid, mtype, stat, vflavor, vlen, accept;

	xdr_get_u32(in, &rxid);
	xdr_get_u32(in, &mtype);
	if (!xdr_get_u32(in, &stat) || rxid != xid || mtype != RPC_MSG_REPLY)
		return -EPROTO;
	if (stat != RPC_MSG_ACCEPTED)
		return -EACCES;
	xdr_get_u32(in, &vflavor);
	if (!xdr_get_u32(in, &vlen) || vlen > RPC_MAX_AUTH_BYTES ||
	    !xdr_skip(in, vlen) || !xdr_get_u32(in, &accept))
		return -EPROTO;
	return accept == RPC_SUCCESS ? 0 : -EPROTO;
}

int rpc_callout_call(int fd, uint32_t xid, uint32_t prog, uint32_t vers,
                     uint32_t proc, const struct xdr_out *args,
                     struct rpc_record_reader *r, struct xdr_in *res)
{
	struct xdr_out m;
	int rc;

	rpc_record_init(r, 64 * 1024);
	if (xdr_out_init(&m, 512, 8192) < 0)
		return -ENOMEM;
	xdr_put_u32(&m, 0); /* record mark */
	put_call_header(&m, xid, prog, vers, proc);
	if (args)
		xdr_put_fixed(&m, args->buf, args->len);
	xdr_patch_u32(&m, 0, RPC_LAST_FRAG | (uint32_t)(m.len - 4));
	rc = m.err ? -ENOMEM : write_all(fd, m.buf, m.len);
	xdr_out_free(&m);
	if (rc == 0)
		rc = read_record(fd, r);
	if (rc == 0) {
		xdr_in_init(res, r->buf, r->len);
		rc = parse_reply_header(res, xid);
	}
	return rc;
}

int rpc_callout_getport(const struct sockaddr *sa, socklen_t len, uint32_t prog,
                        uint32_t vers, int timeout_s)
{
	struct sockaddr_storage pm;
	struct rpc_record_reader r;
	struct xdr_out a;
	struct xdr_in in;
	uint32_t port = 0;
	int fd, rc;

	if (len > sizeof(pm) ||
	    (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return -EAFNOSUPPORT;
	memcpy(&pm, sa, len);
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)&pm)->sin_port = htons(PMAP_PORT);
	else
		((struct sockaddr_in6 *)&pm)->sin6_port = htons(PMAP_PORT);
	fd = rpc_callout_connect((struct sockaddr *)&pm, len, timeout_s, false);
	if (fd < 0)
		return fd;
	if (xdr_out_init(&a, 64, 64) < 0) {
		close(fd);
		return -ENOMEM;
	}
	xdr_put_u32(&a, prog);
	xdr_put_u32(&a, vers);
	xdr_put_u32(&a, IPPROTO_TCP_NUM);
	xdr_put_u32(&a, 0);
	rc = rpc_callout_call(fd, (uint32_t)time(NULL) ^ (uint32_t)getpid(),
	                      PMAP_PROG, 2, PMAPPROC_GETPORT, &a, &r, &in);
	if (rc == 0 && (!xdr_get_u32(&in, &port) || port > 65535))
		rc = -EPROTO;
	rpc_record_free(&r);
	xdr_out_free(&a);
	close(fd);
	return rc < 0 ? rc : (int)port;
}
