/* NLM version 4 (X/Open XNFS 10, 14): byte-range locks for NFSv3 clients,
 * served on the NFS port and found through the portmapper, so a plain
 * `mount -o vers=3` (no "nolock") gets working fcntl(2) locks.
 *
 * Served: TEST, LOCK (blocking or not), CANCEL, UNLOCK, NM_LOCK and
 * FREE_ALL, as calls (Linux's lockd, FreeBSD's kernel) and as messages
 * (the _MSG forms, answered by _RES calls to the caller's lock manager:
 * macOS's rpc.lockd). DOS share modes (SHARE, UNSHARE) answer
 * PROC_UNAVAIL. The locks live with the NFSv4 ones (nlm.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/fh.h"
#include "server/nfs4/nfs4.h"
#include "server/nlm/nlm.h"
#include "server/snfsd.h"
#include "util/log.h"

/* Every argument set but FREE_ALL's: nlm4_testargs, nlm4_lockargs,
 * nlm4_cancargs, nlm4_unlockargs, decoded into one shape. */
struct nlm_args {
	const uint8_t *cookie, *fh, *oh;
	uint32_t cookielen, fhlen, ohlen;
	bool block, exclusive, reclaim;
	int32_t state, svid;
	uint64_t off, len;
	char host[NLM_MAXSTRLEN + 1];
};

/* The procedure table (at the end), for garbage()'s names. */
static const struct rpc_proc nlm4_procs[NLMPROC4_COUNT];

static int garbage(const struct rpc_call *call)
{
	char who[80];

	log_warn("%s: NLM %s: undecodable arguments",
	         rpc_peer_str((const struct sockaddr *)&call->peer, who,
	                      sizeof(who)),
	         call->proc < NLMPROC4_COUNT && nlm4_procs[call->proc].name
	             ? nlm4_procs[call->proc].name
	             : "?");
	return RPC_GARBAGE_ARGS;
}

/* nlm4_lock: caller_name, fh, oh, svid, l_offset, l_len. */
static bool get_lock(struct xdr_in *x, struct nlm_args *a)
{
	return xdr_get_string(x, a->host, sizeof(a->host), NLM_MAXSTRLEN) &&
	       xdr_get_opaque_ref(x, &a->fh, &a->fhlen, NLM_MAXNETOBJ) &&
	       xdr_get_opaque_ref(x, &a->oh, &a->ohlen, NLM_MAXNETOBJ) &&
	       xdr_get_i32(x, &a->svid) && xdr_get_u64(x, &a->off) &&
	       xdr_get_u64(x, &a->len);
}

static bool get_args(struct xdr_in *x, uint32_t proc, struct nlm_args *a)
{
	memset(a, 0, sizeof(*a));
	if (!xdr_get_opaque_ref(x, &a->cookie, &a->cookielen, NLM_MAXNETOBJ))
		return false;
	switch (proc) {
	case NLMPROC4_TEST:
		return xdr_get_bool(x, &a->exclusive) && get_lock(x, a);
	case NLMPROC4_LOCK:
	case NLMPROC4_NM_LOCK:
		return xdr_get_bool(x, &a->block) &&
		       xdr_get_bool(x, &a->exclusive) && get_lock(x, a) &&
		       xdr_get_bool(x, &a->reclaim) &&
		       xdr_get_i32(x, &a->state);
	case NLMPROC4_CANCEL:
		return xdr_get_bool(x, &a->block) &&
		       xdr_get_bool(x, &a->exclusive) && get_lock(x, a);
	default: /* UNLOCK */
		return get_lock(x, a);
	}
}

/* Our address as the client called it: the name a restart notification
 * gives us (AF_UNSPEC when unknown: UDP on a wildcard address). */
static void local_addr(const struct rpc_call *call, struct sockaddr_storage *ss)
{
	const struct snfsd *s = call->ctx;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (rpc_call_local_addr(call, ss) == 0)
		return;
	memset(ss, 0, sizeof(*ss));
	if (s->cfg.listen_addr &&
	    inet_pton(AF_INET, s->cfg.listen_addr, &sin->sin_addr) == 1 &&
	    sin->sin_addr.s_addr != htonl(INADDR_ANY))
		ss->ss_family = AF_INET;
	else if (s->cfg.listen_addr &&
	         inet_pton(AF_INET6, s->cfg.listen_addr, &sin6->sin6_addr) ==
	             1 &&
	         !IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr))
		ss->ss_family = AF_INET6;
	else
		memset(ss, 0, sizeof(*ss));
}

static void to_req(const struct rpc_call *call, const struct nlm_args *a,
                   const struct sockaddr_storage *local, struct nlm_req *r)
{
	r->peer = &call->peer;
	r->local = local;
	r->host = a->host;
	r->svid = a->svid;
	r->oh = a->oh;
	r->ohlen = a->ohlen;
	r->start = a->off;
	r->end = nlm_range_end(a->off, a->len);
	r->write = a->exclusive;
}

/* The file of a's handle, checked: it exists, the client may use it, and
 * may lock it that way (write locks need write access or ownership, as
 * fcntl(2) needs a descriptor open for writing). nlm4_stats. */
static uint32_t resolve(struct rpc_call *call, const struct nlm_args *a,
                        struct nfs_req *r)
{
	uint32_t want = a->exclusive ? BK_ACCESS_MODIFY : BK_ACCESS_READ;
	uint32_t granted = 0;
	struct bk_attr attr;
	int err;

	rpc_call_set_fh(call, a->fh, a->fhlen);
	err = nfs_req_resolve(call, a->fh, a->fhlen, r);
	if (err == -EBADF || err == -ESTALE)
		return NLM4_STALE_FH;
	if (err || !r->ex)
		return NLM4_FAILED;
	err = r->ex->ops->getattr(r->ex->bk, &r->bh, &attr);
	if (err == -ESTALE || err == -EBADF)
		return NLM4_STALE_FH;
	if (err)
		return NLM4_FAILED;
	if (a->exclusive && !r->rw)
		return NLM4_ROFS;
	if (attr.uid == r->cred.uid)
		return NLM4_GRANTED;
	err = r->ex->ops->access(r->ex->bk, &r->cred, &r->bh, want, &granted);
	return !err && (granted & want) ? NLM4_GRANTED : NLM4_FAILED;
}

static void put_res(struct xdr_out *res, const struct nlm_args *a,
                    uint32_t stat)
{
	xdr_put_opaque(res, a->cookie, a->cookielen);
	xdr_put_u32(res, stat);
}

/* The call back a blocked LOCK will need once granted. */
static void fill_grant(const struct rpc_call *call, const struct nlm_args *a,
                       const struct sockaddr_storage *local,
                       struct nlm_grant *g)
{
	memset(g, 0, offsetof(struct nlm_grant, cookie));
	g->local = *local;
	g->peer = call->peer;
	g->peer_len = call->peer_len;
	g->cookielen = a->cookielen;
	memcpy(g->cookie, a->cookie, a->cookielen);
	g->fhlen = a->fhlen;
	memcpy(g->fh, a->fh, a->fhlen);
	g->ohlen = a->ohlen;
	memcpy(g->oh, a->oh, a->ohlen);
	snprintf(g->host, sizeof(g->host), "%s", a->host);
	g->svid = a->svid;
	g->off = a->off;
	g->len = a->len;
	g->write = a->exclusive;
}

/* A lock back after our restart: say so, as NFSv4 reclaims are. */
static void log_reclaim(const struct rpc_call *call, const struct nlm_args *a)
{
	char who[80];

	rpc_host_str((const struct sockaddr *)&call->peer, who, sizeof(who));
	log_info("nlm: %s (%s) reclaimed a %s lock at %llu+%llu", a->host, who,
	         a->exclusive ? "write" : "read", (unsigned long long)a->off,
	         (unsigned long long)a->len);
}

/* TEST, LOCK, NM_LOCK, CANCEL, UNLOCK (proc; proc may be its
 * _MSG form): decode, resolve, act, answer into res. */
static int lockop(struct rpc_call *call, uint32_t proc, struct xdr_out *res)
{
	struct nfs4_server *st = nfs4_server_get(call->ctx);
	struct nlm_holder h;
	struct nlm_grant *g = NULL;
	struct sockaddr_storage local;
	struct nlm_args a;
	struct nlm_req req;
	struct nfs_req r;
	uint32_t stat;
	bool grace;

	if (!get_args(&call->args, proc, &a))
		return garbage(call);
	memset(&r, 0, sizeof(r));
	stat = st ? resolve(call, &a, &r) : NLM4_DENIED_NOLOCKS;
	/* UNLOCK and CANCEL need no access to the file, only the handle. */
	if (stat == NLM4_FAILED || stat == NLM4_ROFS)
		if (proc == NLMPROC4_UNLOCK || proc == NLMPROC4_CANCEL)
			stat = r.ex ? NLM4_GRANTED : stat;
	local_addr(call, &local);
	to_req(call, &a, &local, &req);
	/* During grace NFSv4 clients win back their locks; new ones wait,
	 * and reclaims outside it are refused (Linux lockd does the same). */
	grace = stat == NLM4_GRANTED && nfs4_in_grace(st);
	if (stat == NLM4_GRANTED &&
	    (proc == NLMPROC4_TEST || proc == NLMPROC4_LOCK ||
	     proc == NLMPROC4_NM_LOCK))
		if (grace != (a.reclaim && proc != NLMPROC4_TEST))
			stat = NLM4_DENIED_GRACE_PERIOD;
	if (stat == NLM4_GRANTED) {
		switch (proc) {
		case NLMPROC4_TEST:
			stat = nfs4_nlm_test(st, r.ex->fsid, &r.bh, &req, &h);
			break;
		case NLMPROC4_LOCK:
		case NLMPROC4_NM_LOCK:
			if (a.block && proc == NLMPROC4_LOCK &&
			    (g = malloc(sizeof(*g))))
				fill_grant(call, &a, &local, g);
			stat = nfs4_nlm_lock(st, r.ex->fsid, &r.bh, &req, g);
			free(g);
			/* NM_LOCK is for hosts without a status monitor. */
			if (proc == NLMPROC4_LOCK &&
			    (stat == NLM4_GRANTED || stat == NLM4_BLOCKED))
				nlm_monitor(call->ctx, &call->peer);
			if (a.reclaim && stat == NLM4_GRANTED)
				log_reclaim(call, &a);
			break;
		case NLMPROC4_CANCEL:
			stat = nfs4_nlm_cancel(st, r.ex->fsid, &r.bh, &req);
			break;
		default:
			stat = nfs4_nlm_unlock(st, r.ex->fsid, &r.bh, &req);
		}
	}
	nfs_req_done(&r);
	put_res(res, &a, stat);
	if (proc == NLMPROC4_TEST && stat == NLM4_DENIED) {
		xdr_put_bool(res, h.write);
		xdr_put_i32(res, h.svid);
		xdr_put_opaque(res, h.oh, h.ohlen);
		xdr_put_u64(res, h.start);
		xdr_put_u64(res, h.end == UINT64_MAX ? 0 : h.end - h.start + 1);
	}
	return RPC_SUCCESS;
}

static int nlm_lockop(struct rpc_call *call, struct xdr_out *res)
{
	return lockop(call, call->proc, res);
}

/* TEST_MSG, LOCK_MSG, CANCEL_MSG, UNLOCK_MSG (macOS's rpc.lockd locks
 * this way): the same work, and the results go back as a call of
 * TEST_RES ... UNLOCK_RES to the lock manager on the caller's host. The
 * message's own reply is void. */
static int nlm_msg(struct rpc_call *call, struct xdr_out *res)
{
	uint32_t proc = call->proc - NLMPROC4_TEST_MSG + NLMPROC4_TEST;
	struct xdr_out out;
	int rc;

	(void)res;
	if (xdr_out_init(&out, 256, 8192) < 0)
		return RPC_SYSTEM_ERR;
	rc = lockop(call, proc, &out);
	if (rc == RPC_SUCCESS && !out.err)
		nlm_cb_result(call->ctx, &call->peer, call->peer_len,
		              call->proc + NLMPROC4_TEST_RES -
		                  NLMPROC4_TEST_MSG,
		              out.buf, out.len);
	xdr_out_free(&out);
	return rc;
}

/* GRANTED_MSG and the _RES calls are for a client to receive; a server
 * takes them (a lock manager that is both may send them here) and drops
 * them. */
static int nlm_void(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	return RPC_SUCCESS;
}

static int nlm_null(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	return RPC_SUCCESS;
}

/* nlm4_notify: name, state. A client that restarted (PC-NFS style)
 * drops every lock it held under that caller_name. */
static int nlm_free_all(struct rpc_call *call, struct xdr_out *res)
{
	struct nfs4_server *st = nfs4_server_get(call->ctx);
	char name[NLM_MAXSTRLEN + 1];
	int32_t state;

	(void)res;
	if (!xdr_get_string(&call->args, name, sizeof(name), NLM_MAXSTRLEN) ||
	    !xdr_get_i32(&call->args, &state))
		return garbage(call);
	if (st)
		log_info("nlm: FREE_ALL for %s: %u lock owners dropped", name,
		         nfs4_nlm_free_host(st, name, &call->peer));
	return RPC_SUCCESS;
}

static const struct rpc_proc nlm4_procs[NLMPROC4_COUNT] = {
    [NLMPROC4_NULL] = {"NULL", nlm_null},
    [NLMPROC4_TEST] = {"TEST", nlm_lockop},
    [NLMPROC4_LOCK] = {"LOCK", nlm_lockop},
    [NLMPROC4_CANCEL] = {"CANCEL", nlm_lockop},
    [NLMPROC4_UNLOCK] = {"UNLOCK", nlm_lockop},
    [NLMPROC4_TEST_MSG] = {"TEST_MSG", nlm_msg},
    [NLMPROC4_LOCK_MSG] = {"LOCK_MSG", nlm_msg},
    [NLMPROC4_CANCEL_MSG] = {"CANCEL_MSG", nlm_msg},
    [NLMPROC4_UNLOCK_MSG] = {"UNLOCK_MSG", nlm_msg},
    [NLMPROC4_GRANTED_MSG] = {"GRANTED_MSG", nlm_void},
    [NLMPROC4_TEST_RES] = {"TEST_RES", nlm_void},
    [NLMPROC4_LOCK_RES] = {"LOCK_RES", nlm_void},
    [NLMPROC4_CANCEL_RES] = {"CANCEL_RES", nlm_void},
    [NLMPROC4_UNLOCK_RES] = {"UNLOCK_RES", nlm_void},
    [NLMPROC4_GRANTED_RES] = {"GRANTED_RES", nlm_void},
    [NLMPROC4_NSM_NOTIFY] = {"NSM_NOTIFY", nsm_relayed_notify},
    [NLMPROC4_NM_LOCK] = {"NM_LOCK", nlm_lockop},
    [NLMPROC4_FREE_ALL] = {"FREE_ALL", nlm_free_all},
};

const struct rpc_version nlm4_version = {
    .vers = NLM4_VERS,
    .procs = nlm4_procs,
    .nprocs = NLMPROC4_COUNT,
};
