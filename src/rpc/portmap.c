/* The portmapper program (RFC 1833): PMAP v2 and RPCBIND v3 and v4.
 *
 * It answers for the programs registered in the rpc_service it runs in and
 * the ports that service listens on (pmap_set_local); it does not keep a
 * registry for other processes, so SET and UNSET answer false.
 */
#include "rpc/portmap.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rpc/rpc_int.h"
#include "server/snfsd.h"

#define IPPROTO_TCP_NUM 6
#define IPPROTO_UDP_NUM 17
#define RPCB_STR_MAX 255 /* netid, uaddr, owner: far more than real ones */

/* One (program, version, transport) the portmapper reports. */
struct pmap_entry {
	uint32_t prog, vers;
	int proto; /* IPPROTO_TCP_NUM or IPPROTO_UDP_NUM */
	uint16_t port;
};

/* rpcb (RFC 1833 section 2.1), strings copied out of the call. */
struct rpcb {
	uint32_t prog, vers;
	char netid[RPCB_STR_MAX + 1];
	char addr[RPCB_STR_MAX + 1];
	char owner[RPCB_STR_MAX + 1];
};

void pmap_set_local(struct rpc_service *svc, uint16_t tcp_port,
                    uint16_t udp_port, const char *addr)
{
	svc->pmap.tcp_port = tcp_port;
	svc->pmap.udp_port = udp_port;
	snprintf(svc->pmap.addr, sizeof(svc->pmap.addr), "%s",
	         addr && *addr ? addr : "0.0.0.0");
}

/* The port prog is served on over proto, or 0. */
static uint16_t local_port(const struct rpc_service *svc,
                           const struct rpc_program *prog, int proto)
{
	if (proto == IPPROTO_UDP_NUM && !prog->udp)
		return 0;
	if (prog->prog == PMAP_PROG)
		return PMAP_PORT;
	return proto == IPPROTO_TCP_NUM ? svc->pmap.tcp_port
	                                : svc->pmap.udp_port;
}

/* Whether prog has version vers. */
static bool has_version(const struct rpc_program *prog, uint32_t vers)
{
	for (uint32_t i = 0; i < prog->nversions; i++)
		if (prog->versions[i].vers == vers)
			return true;
	return false;
}

/* The port for (prog, vers, proto), or 0. Like rpcbind, a lookup that is
 * not exact answers for another version of the program when the one asked
 * for is missing; the client then learns the range from PROG_MISMATCH. */
static uint16_t lookup_port(const struct rpc_service *svc, uint32_t prog,
                            uint32_t vers, int proto, bool exact)
{
	const struct rpc_program *p = rpc_service_find(svc, prog);
	if (!p || (exact && !has_version(p, vers)))
		return 0;
	return local_port(svc, p, proto);
}

/* Call fn for every entry the portmapper reports, in registration order.
 * Stops at the first false. */
static bool for_each_entry(const struct rpc_service *svc,
                           bool (*fn)(const struct rpc_service *svc,
                                      const struct pmap_entry *e,
                                      struct xdr_out *res),
                           struct xdr_out *res)
{
	static const int protos[] = {IPPROTO_TCP_NUM, IPPROTO_UDP_NUM};
	for (int i = 0; i < svc->nprogs; i++) {
		const struct rpc_program *p = svc->progs[i];
		for (uint32_t v = 0; v < p->nversions; v++) {
			for (int k = 0; k < 2; k++) {
				struct pmap_entry e = {
				    .prog = p->prog,
				    .vers = p->versions[v].vers,
				    .proto = protos[k],
				    .port = local_port(svc, p, protos[k]),
				};
				if (e.port && !fn(svc, &e, res))
					return false;
			}
		}
	}
	return true;
}

/* ---- PMAP version 2 (RFC 1833 section 3) ---- */

/* NULL, in every version. */
static int pmap_null(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	return RPC_SUCCESS;
}

/* Decode a struct mapping. */
static bool get_mapping(struct xdr_in *in, struct pmap_entry *m)
{
	uint32_t proto, port;
	xdr_get_u32(in, &m->prog);
	xdr_get_u32(in, &m->vers);
	xdr_get_u32(in, &proto);
	xdr_get_u32(in, &port);
	m->proto = (int)proto;
	m->port = (uint16_t)port;
	return !in->err;
}

/* PMAPPROC_SET and PMAPPROC_UNSET: we hold no registry for others. */
static int pmap2_set(struct rpc_call *call, struct xdr_out *res)
{
	struct pmap_entry m;
	if (!get_mapping(&call->args, &m))
		return RPC_GARBAGE_ARGS;
	xdr_put_bool(res, false);
	return RPC_SUCCESS;
}

/* PMAPPROC_GETPORT: the port, or 0 when not registered. */
static int pmap2_getport(struct rpc_call *call, struct xdr_out *res)
{
	struct pmap_entry m;
	if (!get_mapping(&call->args, &m))
		return RPC_GARBAGE_ARGS;
	xdr_put_u32(res,
	            lookup_port(call->svc, m.prog, m.vers, m.proto, false));
	return RPC_SUCCESS;
}

/* One pmaplist node: "more follows", then the mapping. */
static bool put_mapping(const struct rpc_service *svc,
                        const struct pmap_entry *e, struct xdr_out *res)
{
	(void)svc;
	return xdr_put_bool(res, true) && xdr_put_u32(res, e->prog) &&
	       xdr_put_u32(res, e->vers) &&
	       xdr_put_u32(res, (uint32_t)e->proto) &&
	       xdr_put_u32(res, e->port);
}

/* PMAPPROC_DUMP: the list of every mapping. */
static int pmap2_dump(struct rpc_call *call, struct xdr_out *res)
{
	for_each_entry(call->svc, put_mapping, res);
	xdr_put_bool(res, false);
	return RPC_SUCCESS;
}

static const struct rpc_proc pmap2_procs[] = {
    [0] = {"NULL", pmap_null},
    [1] = {"SET", pmap2_set},
    [2] = {"UNSET", pmap2_set},
    [3] = {"GETPORT", pmap2_getport},
    [4] = {"DUMP", pmap2_dump},
    [5] = {"CALLIT", NULL}, /* an amplifier; never served */
};

/* ---- RPCBIND versions 3 and 4 (RFC 1833 sections 2.2, 2.3) ---- */

/* Decode a struct rpcb. */
static bool get_rpcb(struct xdr_in *in, struct rpcb *b)
{
	xdr_get_u32(in, &b->prog);
	xdr_get_u32(in, &b->vers);
	xdr_get_string(in, b->netid, sizeof(b->netid), RPCB_STR_MAX);
	xdr_get_string(in, b->addr, sizeof(b->addr), RPCB_STR_MAX);
	xdr_get_string(in, b->owner, sizeof(b->owner), RPCB_STR_MAX);
	return !in->err;
}

/* Whether our address is IPv6 (so netids tcp6/udp6 apply). */
static bool local_is_v6(const struct rpc_service *svc)
{
	return strchr(svc->pmap.addr, ':') != NULL;
}

/* The transport a netid names for our address family, or 0. */
static int netid_proto(const struct rpc_service *svc, const char *netid)
{
	bool v6 = local_is_v6(svc);
	if (strcmp(netid, v6 ? "tcp6" : "tcp") == 0)
		return IPPROTO_TCP_NUM;
	if (strcmp(netid, v6 ? "udp6" : "udp") == 0)
		return IPPROTO_UDP_NUM;
	return 0;
}

/* Universal address of our host and port (RFC 1833 section 2.2:
 * "h1.h2.h3.h4.p1.p2", the IPv6 form ending the same way). */
static void uaddr(const struct rpc_service *svc, uint16_t port, char *buf,
                  size_t n)
{
	const char *host = svc->pmap.addr[0] ? svc->pmap.addr : "0.0.0.0";
	snprintf(buf, n, "%s.%u.%u", host, port >> 8, port & 0xff);
}

/* RPCBPROC_SET and RPCBPROC_UNSET: we hold no registry for others. */
static int rpcb_set(struct rpc_call *call, struct xdr_out *res)
{
	struct rpcb b;
	if (!get_rpcb(&call->args, &b))
		return RPC_GARBAGE_ARGS;
	xdr_put_bool(res, false);
	return RPC_SUCCESS;
}

/* GETADDR (any version as fallback) and GETVERSADDR (exact version):
 * the universal address, or "" when not registered. */
static int rpcb_getaddr_common(struct rpc_call *call, struct xdr_out *res,
                               bool exact)
{
	struct rpcb b;
	uint16_t port = 0;
	char ua[96] = "";
	int proto;

	if (!get_rpcb(&call->args, &b))
		return RPC_GARBAGE_ARGS;
	proto = netid_proto(call->svc, b.netid);
	if (proto)
		port = lookup_port(call->svc, b.prog, b.vers, proto, exact);
	if (port)
		uaddr(call->svc, port, ua, sizeof(ua));
	xdr_put_string(res, ua);
	return RPC_SUCCESS;
}

static int rpcb_getaddr(struct rpc_call *call, struct xdr_out *res)
{
	return rpcb_getaddr_common(call, res, false);
}

static int rpcb_getversaddr(struct rpc_call *call, struct xdr_out *res)
{
	return rpcb_getaddr_common(call, res, true);
}

/* One rp__list node: "more follows", then the rpcb. */
static bool put_rpcb(const struct rpc_service *svc, const struct pmap_entry *e,
                     struct xdr_out *res)
{
	bool v6 = local_is_v6(svc);
	const char *netid = e->proto == IPPROTO_TCP_NUM ? (v6 ? "tcp6" : "tcp")
	                                                : (v6 ? "udp6" : "udp");
	char ua[96];

	uaddr(svc, e->port, ua, sizeof(ua));
	return xdr_put_bool(res, true) && xdr_put_u32(res, e->prog) &&
	       xdr_put_u32(res, e->vers) && xdr_put_string(res, netid) &&
	       xdr_put_string(res, ua) && xdr_put_string(res, "superuser");
}

/* RPCBPROC_DUMP: every mapping. */
static int rpcb_dump(struct rpc_call *call, struct xdr_out *res)
{
	for_each_entry(call->svc, put_rpcb, res);
	xdr_put_bool(res, false);
	return RPC_SUCCESS;
}

/* RPCBPROC_GETTIME: our time in seconds, for clients syncing clocks. */
static int rpcb_gettime(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	xdr_put_u32(res, (uint32_t)time(NULL));
	return RPC_SUCCESS;
}

static const struct rpc_proc rpcb3_procs[] = {
    [0] = {"NULL", pmap_null},       [1] = {"SET", rpcb_set},
    [2] = {"UNSET", rpcb_set},       [3] = {"GETADDR", rpcb_getaddr},
    [4] = {"DUMP", rpcb_dump},       [5] = {"CALLIT", NULL},
    [6] = {"GETTIME", rpcb_gettime}, [7] = {"UADDR2TADDR", NULL},
    [8] = {"TADDR2UADDR", NULL},
};

static const struct rpc_proc rpcb4_procs[] = {
    [0] = {"NULL", pmap_null},       [1] = {"SET", rpcb_set},
    [2] = {"UNSET", rpcb_set},       [3] = {"GETADDR", rpcb_getaddr},
    [4] = {"DUMP", rpcb_dump},       [5] = {"BCAST", NULL},
    [6] = {"GETTIME", rpcb_gettime}, [7] = {"UADDR2TADDR", NULL},
    [8] = {"TADDR2UADDR", NULL},     [9] = {"GETVERSADDR", rpcb_getversaddr},
    [10] = {"INDIRECT", NULL},       [11] = {"GETADDRLIST", NULL},
    [12] = {"GETSTAT", NULL},
};

#define NPROCS(t) ((uint32_t)(sizeof(t) / sizeof((t)[0])))

static const struct rpc_version pmap_versions[] = {
    {2, pmap2_procs, NPROCS(pmap2_procs)},
    {3, rpcb3_procs, NPROCS(rpcb3_procs)},
    {4, rpcb4_procs, NPROCS(rpcb4_procs)},
};

const struct rpc_program pmap_program = {
    .prog = PMAP_PROGRAM,
    .name = "portmap",
    .versions = pmap_versions,
    .nversions = NPROCS(pmap_versions),
    .udp = true,
};
