/* The RPC service: a registry of programs and the call path of RFC 5531.
 *
 * rpc_service_handle() takes one complete call record, decodes the call
 * header and credentials, answers the errors the runtime owns (RPC_MISMATCH,
 * AUTH_ERROR, PROG_UNAVAIL, PROG_MISMATCH, PROC_UNAVAIL) and otherwise runs
 * the procedure's handler, which encodes its results straight after a
 * reserved accepted-reply header. Nothing here knows about sockets.
 */
#include "rpc/rpc_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rpc/stats.h"
#include "util/log.h"

/* Size of an accepted reply header with an AUTH_NONE verifier: xid,
 * REPLY, MSG_ACCEPTED, verf flavor, verf length, accept_stat. */
#define ACCEPTED_HDR_LEN 24

/* Create an empty registry whose handlers will see ctx as call->ctx. */
struct rpc_service *rpc_service_new(void *ctx)
{
	struct rpc_service *svc = calloc(1, sizeof(*svc));
	if (!svc)
		return NULL;
	svc->stats = rpc_stats_new();
	if (!svc->stats) {
		free(svc);
		return NULL;
	}
	svc->ctx = ctx;
	return svc;
}

void rpc_service_on_reply(struct rpc_service *svc, rpc_reply_fn fn, void *ctx)
{
	svc->on_reply = fn;
	svc->reply_ctx = ctx;
}

/* Free the registry (the programs themselves are static tables). */
void rpc_service_free(struct rpc_service *svc)
{
	if (!svc)
		return;
	rpc_stats_free(svc->stats);
	free(svc->progs);
	free(svc);
}

/* Register a program; 0, -EEXIST when its number is taken, -EINVAL for a
 * program without versions, or -ENOMEM. Call before serving starts: the
 * registry is read without locks. */
int rpc_service_add(struct rpc_service *svc, const struct rpc_program *prog)
{
	const struct rpc_program **p;
	if (!prog || !prog->versions || prog->nversions == 0)
		return -EINVAL;
	if (rpc_service_find(svc, prog->prog))
		return -EEXIST;
	if (svc->nprogs == svc->cap) {
		int cap = svc->cap ? svc->cap * 2 : 8;
		p = realloc(svc->progs, (size_t)cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		svc->progs = p;
		svc->cap = cap;
	}
	if (rpc_stats_add_program(svc->stats, prog))
		return -ENOMEM;
	svc->progs[svc->nprogs++] = prog;
	return 0;
}

/* The registered program with that number, or NULL. */
const struct rpc_program *rpc_service_find(const struct rpc_service *svc,
                                           uint32_t prog)
{
	for (int i = 0; i < svc->nprogs; i++)
		if (svc->progs[i]->prog == prog)
			return svc->progs[i];
	return NULL;
}

/* The version entry of prog, or NULL. */
static const struct rpc_version *find_version(const struct rpc_program *prog,
                                              uint32_t vers)
{
	for (uint32_t i = 0; i < prog->nversions; i++)
		if (prog->versions[i].vers == vers)
			return &prog->versions[i];
	return NULL;
}

/* Lowest and highest version of prog, for PROG_MISMATCH. */
static void version_range(const struct rpc_program *prog, uint32_t *low,
                          uint32_t *high)
{
	*low = UINT32_MAX;
	*high = 0;
	for (uint32_t i = 0; i < prog->nversions; i++) {
		uint32_t v = prog->versions[i].vers;
		if (v < *low)
			*low = v;
		if (v > *high)
			*high = v;
	}
}

/* ---- reply encoding (RFC 5531 section 9, struct reply_body) ---- */

/* Append an accepted reply header with an AUTH_NONE verifier. */
static bool put_accepted(struct xdr_out *r, uint32_t xid, uint32_t stat)
{
	return xdr_put_u32(r, xid) && xdr_put_u32(r, RPC_MSG_REPLY) &&
	       xdr_put_u32(r, RPC_MSG_ACCEPTED) &&
	       xdr_put_u32(r, RPC_AUTH_NONE) && xdr_put_u32(r, 0) &&
	       xdr_put_u32(r, stat);
}

/* Turn whatever was appended since start into an empty reply again, so an
 * error reply can be written in its place. */
static void reply_reset(struct xdr_out *r, size_t start)
{
	xdr_out_truncate(r, start);
	r->err = false;
}

/* The bytes reply holds past start are the reply; 0, or DROP when even a
 * header did not fit. */
static int reply_done(struct xdr_out *r, size_t start)
{
	if (r->err) {
		reply_reset(r, start);
		return RPC_REPLY_DROP;
	}
	return 0;
}

/* A header-only accepted reply; PROG_MISMATCH carries the version range. */
static int reply_accepted(struct xdr_out *r, size_t start, uint32_t xid,
                          uint32_t stat, const struct rpc_program *prog)
{
	reply_reset(r, start);
	put_accepted(r, xid, stat);
	if (stat == RPC_PROG_MISMATCH) {
		uint32_t low = 0, high = 0;
		if (prog)
			version_range(prog, &low, &high);
		xdr_put_u32(r, low);
		xdr_put_u32(r, high);
	}
	return reply_done(r, start);
}

/* MSG_DENIED, RPC_MISMATCH: we speak RPC version 2 only. */
static int reply_rpc_mismatch(struct xdr_out *r, size_t start, uint32_t xid)
{
	reply_reset(r, start);
	xdr_put_u32(r, xid);
	xdr_put_u32(r, RPC_MSG_REPLY);
	xdr_put_u32(r, RPC_MSG_DENIED);
	xdr_put_u32(r, RPC_REJ_MISMATCH);
	xdr_put_u32(r, RPC_VERSION);
	xdr_put_u32(r, RPC_VERSION);
	return reply_done(r, start);
}

/* MSG_DENIED, AUTH_ERROR with the given auth_stat. */
static int reply_auth_error(struct xdr_out *r, size_t start, uint32_t xid,
                            uint32_t stat)
{
	reply_reset(r, start);
	xdr_put_u32(r, xid);
	xdr_put_u32(r, RPC_MSG_REPLY);
	xdr_put_u32(r, RPC_MSG_DENIED);
	xdr_put_u32(r, RPC_REJ_AUTH_ERROR);
	xdr_put_u32(r, stat);
	return reply_done(r, start);
}

/* ---- call header decoding (RFC 5531 sections 8.2 and 9) ---- */

/* Read an opaque_auth. Returns 0, -1 when the record ends inside it, or 1
 * when its body is longer than the 400 bytes the RFC allows. */
static int get_opaque_auth(struct xdr_in *in, uint32_t *flavor,
                           const uint8_t **body, uint32_t *len)
{
	if (!xdr_get_u32(in, flavor) || !xdr_get_u32(in, len))
		return -1;
	if (*len > RPC_MAX_AUTH_BYTES)
		return 1;
	*body = in->buf + in->pos;
	return xdr_skip(in, *len) ? 0 : -1;
}

/* Decode an AUTH_SYS body (RFC 5531 appendix A, authsys_parms); the body
 * must hold exactly one authsys_parms. Returns an auth_stat. */
static int decode_auth_sys(const uint8_t *body, uint32_t len,
                           struct rpc_cred *cred)
{
	struct xdr_in in;
	uint32_t stamp;

	xdr_in_init(&in, body, len);
	xdr_get_u32(&in, &stamp);
	xdr_get_string(&in, cred->machine, sizeof(cred->machine),
	               RPC_MAX_MACHINE);
	xdr_get_u32(&in, &cred->uid);
	xdr_get_u32(&in, &cred->gid);
	if (xdr_get_u32(&in, &cred->ngids) && cred->ngids > RPC_MAX_GIDS)
		return RPC_AUTH_BADCRED;
	for (uint32_t i = 0; i < cred->ngids && !in.err; i++)
		xdr_get_u32(&in, &cred->gids[i]);
	if (in.err || xdr_in_remaining(&in) != 0)
		return RPC_AUTH_BADCRED;
	return RPC_AUTH_OK;
}

/* Decode the credential and verifier into cred. Returns an auth_stat, or
 * -1 when the record ends before the verifier does (nothing to answer).
 * Only AUTH_NONE and AUTH_SYS are accepted: for any other flavor, RPCSEC_GSS
 * included, AUTH_BADCRED tells a Linux client the flavor is unsupported so
 * it falls back to AUTH_SYS. */
static int decode_auth(struct xdr_in *in, struct rpc_cred *cred)
{
	const uint8_t *cbody, *vbody;
	uint32_t cflavor, clen, vflavor, vlen;
	int cr, vr;

	cr = get_opaque_auth(in, &cflavor, &cbody, &clen);
	if (cr < 0)
		return -1;
	if (cr > 0)
		return RPC_AUTH_BADCRED;
	vr = get_opaque_auth(in, &vflavor, &vbody, &vlen);
	if (vr < 0)
		return -1;
	if (vr > 0)
		return RPC_AUTH_BADVERF;
	cred->flavor = cflavor;
	switch (cflavor) {
	case RPC_AUTH_NONE:
		return RPC_AUTH_OK;
	case RPC_AUTH_SYS:
		return decode_auth_sys(cbody, clen, cred);
	default:
		return RPC_AUTH_BADCRED;
	}
}

/* Run the handler after a reserved success header, then fix the header up
 * to the handler's verdict: header only for errors (RFC 5531 sec. 9, the
 * results go with SUCCESS alone), denied for RPC_REPLY_AUTH_ERR, nothing for
 * RPC_REPLY_DROP. *verdict is what was answered: an accept_stat,
 * RPC_REPLY_AUTH_ERR(stat) or RPC_REPLY_DROP. */
static int run_handler(struct rpc_call *call, const struct rpc_program *prog,
                       const struct rpc_proc *proc, struct xdr_out *reply,
                       size_t start, int *verdict)
{
	char peer[64];
	int rc;

	*verdict = RPC_SYSTEM_ERR;
	if (!put_accepted(reply, call->xid, RPC_SUCCESS))
		return reply_done(reply, start);
	rc = proc->fn(call, reply);
	*verdict = rc;
	if (rc == RPC_REPLY_DROP) {
		reply_reset(reply, start);
		return RPC_REPLY_DROP;
	}
	if (rc >= 0x100 && rc <= 0x1ff)
		return reply_auth_error(reply, start, call->xid, rc & 0xff);
	if (rc == RPC_SUCCESS && reply->err) {
		log_err("%s: %s %s reply did not fit in %zu bytes",
		        rpc_peer_str((struct sockaddr *)&call->peer, peer,
		                     sizeof(peer)),
		        prog->name, proc->name ? proc->name : "?",
		        reply->limit);
		rc = RPC_SYSTEM_ERR;
	}
	if (rc < RPC_SUCCESS || rc > RPC_SYSTEM_ERR)
		rc = RPC_SYSTEM_ERR;
	*verdict = rc;
	if (rc == RPC_SUCCESS)
		return 0;
	return reply_accepted(reply, start, call->xid, (uint32_t)rc, prog);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The protocol status of a successful reply: what the handler set, or
 * the first word of the results when it said they start with one. */
static uint32_t reply_status(const struct rpc_call *call,
                             const struct xdr_out *reply, size_t start)
{
	const uint8_t *p;

	if (call->status || !call->status_first ||
	    reply->len < start + ACCEPTED_HDR_LEN + 4)
		return call->status;
	p = reply->buf + start + ACCEPTED_HDR_LEN;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* Run the handler, timing it, and count the call in the service's
 * statistics; a failed call (RPC error or protocol status) is logged,
 * except GARBAGE_ARGS, which the handler logs itself (rpc.h), and a
 * status whose failed ops the handler logged one by one. */
static int run_counted(struct rpc_service *svc, struct rpc_call *call,
                       const struct rpc_program *prog,
                       const struct rpc_version *ver, struct xdr_out *reply,
                       size_t start)
{
	uint64_t t0 = mono_ns(), ns;
	uint32_t status = 0;
	int verdict, rc;

	rc = run_handler(call, prog, &ver->procs[call->proc], reply, start,
	                 &verdict);
	ns = mono_ns() - t0;
	if (verdict == RPC_SUCCESS)
		status = reply_status(call, reply, start);
	rpc_stats_record(svc->stats, rpc_stats_slot(svc->stats, ver),
	                 call->proc, ns, verdict != RPC_SUCCESS || status);
	if (verdict == RPC_SUCCESS && status && !call->error_logged)
		rpc_stats_log_error(svc->stats, call, prog, ver, status, false,
		                    ns);
	else if (verdict != RPC_SUCCESS && verdict != RPC_GARBAGE_ARGS)
		rpc_stats_log_error(svc->stats, call, prog, ver,
		                    (uint32_t)verdict, true, ns);
	return rc;
}

/* Find program, version and procedure for a decoded call and run it. */
static int dispatch(struct rpc_service *svc, struct rpc_call *call,
                    struct xdr_out *reply, size_t start)
{
	const struct rpc_program *prog = rpc_service_find(svc, call->prog);
	const struct rpc_version *ver;

	if (!prog)
		return reply_accepted(reply, start, call->xid, RPC_PROG_UNAVAIL,
		                      NULL);
	ver = find_version(prog, call->vers);
	if (!ver)
		return reply_accepted(reply, start, call->xid,
		                      RPC_PROG_MISMATCH, prog);
	if (call->proc >= ver->nprocs || !ver->procs[call->proc].fn)
		return reply_accepted(reply, start, call->xid, RPC_PROC_UNAVAIL,
		                      prog);
	return run_counted(svc, call, prog, ver, reply, start);
}

/* Log a record dropped without an answer, naming the peer. */
static int drop_garbage(const struct sockaddr *peer, const char *why)
{
	char buf[64];
	log_info("%s: %s; dropped", rpc_peer_str(peer, buf, sizeof(buf)), why);
	return RPC_REPLY_DROP;
}

/* See rpc.h. The order of checks follows Linux nfsd (svc_process_common):
 * RPC version, then credentials, then program, version and procedure. */
int rpc_service_handle(struct rpc_service *svc, const uint8_t *rec, size_t len,
                       const struct sockaddr *peer, socklen_t peer_len,
                       enum rpc_transport t, struct rpc_conn *conn,
                       struct xdr_out *reply)
{
	struct rpc_call call;
	struct xdr_in in;
	size_t start = reply->len;
	uint32_t mtype, rpcvers;
	int st;

	memset(&call, 0, sizeof(call));
	if (peer && peer_len > 0) {
		call.peer_len =
		    peer_len < sizeof(call.peer) ? peer_len : sizeof(call.peer);
		memcpy(&call.peer, peer, call.peer_len);
	}
	xdr_in_init(&in, rec, len);
	if (!xdr_get_u32(&in, &call.xid) || !xdr_get_u32(&in, &mtype))
		return drop_garbage((struct sockaddr *)&call.peer,
		                    "not an RPC call");
	if (mtype == RPC_MSG_REPLY && conn && svc->on_reply) {
		svc->on_reply(svc->reply_ctx, conn, call.xid, rec, len);
		return RPC_REPLY_DROP;
	}
	if (mtype != RPC_MSG_CALL || !xdr_get_u32(&in, &rpcvers))
		return drop_garbage((struct sockaddr *)&call.peer,
		                    "not an RPC call");
	if (rpcvers != RPC_VERSION)
		return reply_rpc_mismatch(reply, start, call.xid);
	if (!xdr_get_u32(&in, &call.prog) || !xdr_get_u32(&in, &call.vers) ||
	    !xdr_get_u32(&in, &call.proc))
		return drop_garbage((struct sockaddr *)&call.peer,
		                    "truncated RPC call header");
	st = decode_auth(&in, &call.cred);
	if (st < 0)
		return drop_garbage((struct sockaddr *)&call.peer,
		                    "truncated RPC credentials");
	if (st != RPC_AUTH_OK)
		return reply_auth_error(reply, start, call.xid, (uint32_t)st);

	xdr_in_init(&call.args, in.buf + in.pos, xdr_in_remaining(&in));
	call.transport = t;
	call.conn = conn;
	call.ctx = svc->ctx;
	call.svc = svc;
	return dispatch(svc, &call, reply, start);
}
