/* Client side of the portmapper: probe 127.0.0.1:111 and register our
 * programs with a running rpcbind.
 *
 * rpcbind trusts SET and UNSET only from local callers it can identify:
 * over its AF_LOCAL socket (RPCBIND v4, owner from the socket's peer
 * credentials), or, when started with -L, from a reserved port on the IPv4
 * loopback (PMAP v2). We try them in that order, skipping the socket
 * when the rpcbind behind it is another network namespace's. The calls
 * are blocking, with short timeouts, and made at start and exit only.
 */
#include "rpc/portmap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rpc/callout.h"
#include "rpc/rpc_int.h"
#include "server/snfsd.h"
#include "util/log.h"

#define PMAP_TIMEOUT_S 2
#define PMAPPROC_NULL 0
#define PMAPPROC_SET 1
#define PMAPPROC_UNSET 2
#define RPCBPROC_SET 1
#define RPCBPROC_UNSET 2

static const char *const rpcbind_socks[] = {"/run/rpcbind.sock",
                                            "/var/run/rpcbind.sock"};

/* A blocking stream to rpcbind; vers is the protocol version it speaks. */
struct pmap_client {
	int fd;
	uint32_t vers;
	uint32_t xid;
};

/* Whether the rpcbind at the other end of unix socket fd lives in
 * another network namespace than we do: then its 127.0.0.1:111 is not
 * ours (a server started in its own network namespace that shares /run
 * with the host), and registering there would hide another host's
 * programs (its lockd's) behind ours. Unknown counts as ours. */
static bool other_netns(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct stat peer, self;
	char path[64];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) || cr.pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)cr.pid);
	if (stat(path, &peer) || stat("/proc/self/ns/net", &self))
		return false;
	return peer.st_ino != self.st_ino || peer.st_dev != self.st_dev;
}

/* Connect to rpcbind's local socket, if that rpcbind is the one on our
 * 127.0.0.1:111. fd or -errno. */
static int connect_local(void)
{
	for (size_t i = 0; i < sizeof(rpcbind_socks) / sizeof(*rpcbind_socks);
	     i++) {
		struct sockaddr_un sun = {.sun_family = AF_UNIX};
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s",
		         rpcbind_socks[i]);
		rpc_callout_timeouts(fd, PMAP_TIMEOUT_S);
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			if (!other_netns(fd))
				return fd;
			log_info("rpcbind at %s serves another network "
			         "namespace: registering through "
			         "127.0.0.1:111",
			         sun.sun_path);
		}
		close(fd);
	}
	return -ENOENT;
}

/* Connect to 127.0.0.1:111 over TCP. fd or -errno. */
static int connect_tcp(bool reserved)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
	                          .sin_port = htons(PMAP_PORT)};

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return rpc_callout_connect((struct sockaddr *)&sin, sizeof(sin),
	                           PMAP_TIMEOUT_S, reserved);
}

/* One call: args are the encoded arguments, *result (if not NULL) gets
 * the first u32 of the results. 0 or -errno. */
static int client_call(struct pmap_client *cl, uint32_t proc,
                       const struct xdr_out *args, uint32_t *result)
{
	struct rpc_record_reader r;
	struct xdr_in in;
	int rc = rpc_callout_call(cl->fd, ++cl->xid, PMAP_PROG, cl->vers, proc,
	                          args, &r, &in);

	if (rc == 0 && result && !xdr_get_u32(&in, result))
		rc = -EPROTO;
	rpc_record_free(&r);
	return rc;
}

/* Open a client: rpcbind's local socket (v4) or loopback TCP (v2). */
static int client_open(struct pmap_client *cl)
{
	cl->xid = (uint32_t)time(NULL) ^ (uint32_t)getpid() << 16;
	cl->fd = connect_local();
	cl->vers = 4;
	if (cl->fd >= 0)
		return 0;
	cl->fd = connect_tcp(true);
	cl->vers = 2;
	return cl->fd < 0 ? cl->fd : 0;
}

int pmap_probe(void)
{
	struct pmap_client cl = {.vers = 2, .xid = (uint32_t)getpid()};
	int rc;

	cl.fd = connect_tcp(false);
	if (cl.fd < 0)
		return 0;
	rc = client_call(&cl, PMAPPROC_NULL, NULL, NULL);
	close(cl.fd);
	return rc == 0;
}

/* SET (set true) or UNSET one mapping in the client's protocol version;
 * proto 0 for UNSET means every transport. 0, -EACCES when refused. */
static int client_map(struct pmap_client *cl, bool set, uint32_t prog,
                      uint32_t vers, int proto, uint16_t port)
{
	struct xdr_out a;
	uint32_t ok = 0;
	char ua[32];
	int rc;

	if (xdr_out_init(&a, 256, 1024) < 0)
		return -ENOMEM;
	xdr_put_u32(&a, prog);
	xdr_put_u32(&a, vers);
	if (cl->vers == 2) {
		xdr_put_u32(&a, (uint32_t)proto);
		xdr_put_u32(&a, port);
	} else {
		snprintf(ua, sizeof(ua), "0.0.0.0.%u.%u", port >> 8,
		         port & 0xff);
		xdr_put_string(&a, proto == 0   ? ""
		                   : proto == 6 ? "tcp"
		                                : "udp");
		xdr_put_string(&a, set ? ua : "");
		xdr_put_string(&a, "superuser");
	}
	rc = client_call(cl, set ? PMAPPROC_SET : PMAPPROC_UNSET, &a, &ok);
	xdr_out_free(&a);
	if (rc == 0 && !ok && set)
		rc = -EACCES;
	return rc;
}

/* UNSET every version of every program of svc but the portmapper. */
static int client_unset_all(struct pmap_client *cl, struct rpc_service *svc)
{
	int rc = 0;
	for (int i = 0; i < svc->nprogs; i++) {
		const struct rpc_program *p = svc->progs[i];
		if (p->prog == PMAP_PROG || p->own_portmap_only)
			continue;
		for (uint32_t v = 0; v < p->nversions; v++) {
			int r = client_map(cl, false, p->prog,
			                   p->versions[v].vers, 0, 0);
			if (r < 0 && rc == 0)
				rc = r;
		}
	}
	return rc;
}

int pmap_register_all(struct rpc_service *svc, uint16_t port)
{
	struct pmap_client cl;
	int rc = client_open(&cl);

	if (rc < 0)
		return rc;
	rc = client_unset_all(&cl, svc);
	if (rc == -EACCES || rc == 0)
		rc = 0;
	for (int i = 0; i < svc->nprogs && rc == 0; i++) {
		const struct rpc_program *p = svc->progs[i];
		if (p->prog == PMAP_PROG || p->own_portmap_only)
			continue;
		for (uint32_t v = 0; v < p->nversions && rc == 0; v++) {
			uint32_t vers = p->versions[v].vers;
			rc = client_map(&cl, true, p->prog, vers, 6, port);
			if (rc == 0 && p->udp)
				rc = client_map(&cl, true, p->prog, vers, 17,
				                port);
		}
	}
	/* Refused part way (another owner holds a mapping): take back what
	 * was set, or it would outlive us, since a server that could not
	 * register does not unregister at exit. UNSET removes only what
	 * this caller may remove: with root's rights every other mapping
	 * went in the UNSET above already. */
	if (rc < 0)
		client_unset_all(&cl, svc);
	close(cl.fd);
	return rc;
}

int pmap_unregister_all(struct rpc_service *svc)
{
	struct pmap_client cl;
	int rc = client_open(&cl);

	if (rc < 0)
		return rc;
	rc = client_unset_all(&cl, svc);
	close(cl.fd);
	return rc;
}
