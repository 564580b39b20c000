/* NSM (XNFS 11), the one call a lock server needs from it: SM_NOTIFY. A
 * client's statd sends it when the client has restarted (sm-notify at
 * boot), naming itself; the locks it held under that name are gone with
 * the processes that took them, so they are dropped here, and waiting
 * clients get the bytes.
 *
 * snfsd serves this only where it answers the portmapper itself: where
 * rpcbind runs, the program is rpc.statd's (own_portmap_only). A
 * notification only drops locks taken from the address it comes from,
 * so no host can free another's locks by naming it. */
#include <string.h>

#include "server/nfs4/nfs4.h"
#include "server/nlm/nlm.h"
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

static const struct rpc_proc nsm1_procs[SM_COUNT] = {
    [SM_NULL] = {"NULL", nsm_null},
    [SM_NOTIFY] = {"NOTIFY", nsm_notify},
};

const struct rpc_version nsm1_version = {
    .vers = NSM_VERS,
    .procs = nsm1_procs,
    .nprocs = SM_COUNT,
};
