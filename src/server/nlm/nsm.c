/* NSM (XNFS 11), the two calls a lock server needs: SM_NOTIFY from a
 * client's statd when the client has restarted (sm-notify at boot),
 * naming itself (the locks it held under that name are gone with the
 * processes that took them, so they are dropped here, and waiting clients
 * get the bytes); and SM_NOTIFY to each client host of the last instance
 * when snfsd restarts, so that their lock managers reclaim.
 *
 * snfsd serves this only where it answers the portmapper itself: where
 * rpcbind runs, the program is rpc.statd's (own_portmap_only), which
 * relays a watched client's SM_NOTIFY to us (nsm_relayed_notify). A
 * notification only drops locks taken from the address it comes from,
 * so no host can free another's locks by naming it. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/nfs4/nfs4.h"
#include "server/nlm/nlm.h"
#include "server/snfsd.h"
#include "util/log.h"

static int nsm_null(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	return RPC_SUCCESS;
}

/* stat_chge: mon_name, state. The reply is void. */
static int nsm_notify(struct rpc_call *call, struct xdr_out *res)
{
	struct nfs4_server *st = nfs4_server_get(call->ctx);
	char name[NSM_MAXSTRLEN + 1], who[80];
	int32_t state;

	(void)res;
	rpc_peer_str((const struct sockaddr *)&call->peer, who, sizeof(who));
	if (!xdr_get_string(&call->args, name, sizeof(name), NSM_MAXSTRLEN) ||
	    !xdr_get_i32(&call->args, &state)) {
		log_warn("%s: NSM SM_NOTIFY: undecodable arguments", who);
		return RPC_GARBAGE_ARGS;
	}
	if (st)
		log_info("nsm: %s (%s) restarted (state %d): %u lock owners "
		         "dropped",
		         name, who, state,
		         nfs4_nlm_free_host(st, name, &call->peer));
	return RPC_SUCCESS;
}

/* Loopback, from a reserved port: rpc.statd (run by root), not any
 * local user who could otherwise drop other hosts' locks. */
static bool from_statd(const struct rpc_call *call)
{
	const struct sockaddr *sa = (const struct sockaddr *)&call->peer;

	return rpc_addr_is_loopback(sa) && rpc_peer_port(sa) < 1024;
}

/* The address a relay names (ours from SM_MON: numeric). */
static bool parse_addr(const char *name, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, name, &((struct sockaddr_in *)ss)->sin_addr) ==
	    1) {
		ss->ss_family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, name,
	              &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		ss->ss_family = AF_INET6;
		return true;
	}
	return false;
}

/* status: mon_name (the address nlm_monitor gave), state, priv. Every
 * lock taken from that address goes, whatever caller_name it used: the
 * host restarted, and with it every process that held one. */
int nsm_relayed_notify(struct rpc_call *call, struct xdr_out *res)
{
	struct nfs4_server *st = nfs4_server_get(call->ctx);
	char name[NSM_MAXSTRLEN + 1], who[80];
	uint8_t priv[NSM_PRIV_SIZE];
	struct sockaddr_storage host;
	int32_t state;

	(void)res;
	rpc_peer_str((const struct sockaddr *)&call->peer, who, sizeof(who));
	if (!xdr_get_string(&call->args, name, sizeof(name), NSM_MAXSTRLEN) ||
	    !xdr_get_i32(&call->args, &state) ||
	    !xdr_get_fixed(&call->args, priv, sizeof(priv))) {
		log_warn("%s: NLM NSM_NOTIFY: undecodable arguments", who);
		return RPC_GARBAGE_ARGS;
	}
	if (!from_statd(call)) {
		log_warn("%s: NLM NSM_NOTIFY for %s refused: not the local "
		         "rpc.statd (loopback, reserved port)",
		         who, name);
		return RPC_SYSTEM_ERR;
	}
	if (!parse_addr(name, &host)) {
		log_warn("nsm: rpc.statd relayed a restart of %s, a host we "
		         "did not ask it to watch",
		         name);
		return RPC_SUCCESS;
	}
	if (st)
		log_info("nsm: %s restarted (state %d, relayed by rpc.statd): "
		         "%u lock owners dropped",
		         name, state, nfs4_nlm_free_host(st, NULL, &host));
	return RPC_SUCCESS;
}

static const struct rpc_proc nsm1_procs[SM_COUNT] = {
    [SM_NULL] = {"NULL", nsm_null},
    [SM_NOTIFY] = {"NOTIFY", nsm_notify},
};

const struct rpc_version nsm1_version = {
    .vers = NSM_VERS,
    .procs = nsm1_procs,
    .nprocs = SM_COUNT,
};

/* ---- our restarts ---- */

/* The numeric address of ss ("-" when unknown). */
static void addr_str(const struct sockaddr_storage *ss, char *buf, size_t n)
{
	if (!ss ||
	    !strcmp(rpc_host_str((const struct sockaddr *)ss, buf, n), "?"))
		snprintf(buf, n, "-");
}

bool nlm_host_key(const struct sockaddr_storage *peer,
                  const struct sockaddr_storage *local, char *hex, size_t n)
{
	char p[INET6_ADDRSTRLEN], l[INET6_ADDRSTRLEN];
	static const char digits[] = "0123456789abcdef";
	char line[2 * INET6_ADDRSTRLEN + 2];
	size_t len;

	addr_str(peer, p, sizeof(p));
	addr_str(local, l, sizeof(l));
	len = (size_t)snprintf(line, sizeof(line), "%s %s", p, l);
	if (len >= sizeof(line) || 2 * len + 1 > n)
		return false;
	for (size_t i = 0; i < len; i++) {
		hex[2 * i] = digits[(uint8_t)line[i] >> 4];
		hex[2 * i + 1] = digits[(uint8_t)line[i] & 15];
	}
	hex[2 * len] = '\0';
	return true;
}

/* A record line back into the notification to send: false when it is
 * not one of ours. */
static bool parse_key(const char *hex, struct nlm_grant *g)
{
	char line[2 * INET6_ADDRSTRLEN + NLM_MAXSTRLEN + 3], peer[64],
	    local[64];
	size_t len = strlen(hex) / 2;
	struct sockaddr_in *sin = (struct sockaddr_in *)&g->peer;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&g->peer;

	if (len >= sizeof(line))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return false;
		line[i] = (char)v;
	}
	line[len] = '\0';
	if (sscanf(line, "%63s %63s", peer, local) != 2)
		return false;
	memset(&g->peer, 0, sizeof(g->peer));
	if (inet_pton(AF_INET, peer, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		g->peer_len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, peer, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		g->peer_len = sizeof(*sin6);
	} else {
		return false;
	}
	/* We are known by the address the client called; failing that
	 * (UDP on a wildcard address), by our host name. */
	memset(&g->local, 0, sizeof(g->local));
	if (inet_pton(AF_INET, local,
	              &((struct sockaddr_in *)&g->local)->sin_addr) == 1)
		g->local.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, local,
	                   &((struct sockaddr_in6 *)&g->local)->sin6_addr) == 1)
		g->local.ss_family = AF_INET6;
	if (strcmp(local, "-"))
		snprintf(g->host, sizeof(g->host), "%s", local);
	else if (gethostname(g->host, sizeof(g->host) - 1))
		return false;
	return true;
}

void nlm_restart_notify(struct snfsd *s)
{
	struct nfs4_server *st = nfs4_server_get(s);
	/* Odd while up, as NSM states are, and larger at every start. */
	int32_t state = (int32_t)(((uint32_t)time(NULL) & 0x7fffffffu) | 1u);
	char **names = NULL;
	size_t n = 0;

	if (!st)
		return;
	nfs4_nlm_take_notify(st, &names, &n);
	for (size_t i = 0; i < n; i++) {
		struct nlm_grant *g = calloc(1, sizeof(*g));

		if (g && parse_key(names[i], g)) {
			g->kind = NLM_JOB_NOTIFY;
			g->state = state;
			nlm_cb_queue(s, g);
		} else {
			free(g);
		}
		free(names[i]);
	}
	free(names);
	if (n)
		log_info("nsm: telling %zu NFSv3 client host(s) of the restart",
		         n);
}
