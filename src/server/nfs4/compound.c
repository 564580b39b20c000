/* NFSv4 COMPOUND (RFC 7530 15.2, RFC 8881 16.2): the operation table and
 * the loop that runs a request through it.
 *
 * Every operation is one row: handler, name, a reply-size estimate (bytes,
 * for the session's response limits before the op runs), and flags saying
 * which minor versions have it, whether it needs a current file handle and
 * whether it may come before SEQUENCE. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "rpc/stats.h"
#include "server/nfs4/nfs4.h"
#include "server/snfsd.h"
#include "util/log.h"

enum {
	OPF_CFH = 1 << 0,      /* needs a current file handle */
	OPF_ERRBODY = 1 << 1,  /* encodes a body with some errors */
	OPF_SOLO = 1 << 2,     /* 4.1: may be an only op without SEQUENCE */
	OPF_V40 = 1 << 3,      /* 4.0 only: NOTSUPP in 4.1+ (RFC 8881 18) */
	OPF_V41 = 1 << 4,      /* new in 4.1 */
	OPF_V42 = 1 << 5,      /* new in 4.2 */
	OPF_CLEARSID = 1 << 6, /* sets the current fh: current stateid goes */
};

struct nfs4_opdesc {
	nfs4_op_fn fn;
	const char *name;
	uint32_t rsize;
	uint32_t flags;
};

static uint32_t op_notsupp(struct nfs4_compound *c)
{
	(void)c;
	return NFS4ERR_NOTSUPP;
}

#define ROW(op, f, nm, sz, fl)                                                 \
	[op] = {.fn = f, .name = nm, .rsize = sz, .flags = fl}

static const struct nfs4_opdesc optab[OP4_MAX + 1] = {
    ROW(OP4_ACCESS, nfs4_op_access, "ACCESS", 16, OPF_CFH),
    ROW(OP4_CLOSE, nfs4_op_close, "CLOSE", 24, OPF_CFH),
    ROW(OP4_COMMIT, nfs4_op_commit, "COMMIT", 16, OPF_CFH),
    ROW(OP4_CREATE, nfs4_op_create, "CREATE", 48, OPF_CFH),
    ROW(OP4_DELEGPURGE, nfs4_op_delegpurge, "DELEGPURGE", 8, 0),
    ROW(OP4_DELEGRETURN, nfs4_op_delegreturn, "DELEGRETURN", 8, OPF_CFH),
    ROW(OP4_GETATTR, nfs4_op_getattr, "GETATTR", 400, OPF_CFH),
    ROW(OP4_GETFH, nfs4_op_getfh, "GETFH", 72, OPF_CFH),
    ROW(OP4_LINK, nfs4_op_link, "LINK", 32, OPF_CFH),
    ROW(OP4_LOCK, nfs4_op_lock, "LOCK", 1100, OPF_CFH | OPF_ERRBODY),
    ROW(OP4_LOCKT, nfs4_op_lockt, "LOCKT", 1100, OPF_CFH | OPF_ERRBODY),
    ROW(OP4_LOCKU, nfs4_op_locku, "LOCKU", 24, OPF_CFH),
    ROW(OP4_LOOKUP, nfs4_op_lookup, "LOOKUP", 8, OPF_CFH | OPF_CLEARSID),
    ROW(OP4_LOOKUPP, nfs4_op_lookupp, "LOOKUPP", 8, OPF_CFH | OPF_CLEARSID),
    ROW(OP4_NVERIFY, nfs4_op_nverify, "NVERIFY", 8, OPF_CFH),
    ROW(OP4_OPEN, nfs4_op_open, "OPEN", 120, OPF_CFH),
    ROW(OP4_OPENATTR, op_notsupp, "OPENATTR", 8, OPF_CFH),
    ROW(OP4_OPEN_CONFIRM, nfs4_op_open_confirm, "OPEN_CONFIRM", 24,
        OPF_CFH | OPF_V40),
    ROW(OP4_OPEN_DOWNGRADE, nfs4_op_open_downgrade, "OPEN_DOWNGRADE", 24,
        OPF_CFH),
    ROW(OP4_PUTFH, nfs4_op_putfh, "PUTFH", 8, OPF_CLEARSID),
    ROW(OP4_PUTPUBFH, nfs4_op_putpubfh, "PUTPUBFH", 8, OPF_CLEARSID),
    ROW(OP4_PUTROOTFH, nfs4_op_putrootfh, "PUTROOTFH", 8, OPF_CLEARSID),
    ROW(OP4_READ, nfs4_op_read, "READ", 16, OPF_CFH),
    ROW(OP4_READDIR, nfs4_op_readdir, "READDIR", 32, OPF_CFH),
    ROW(OP4_READLINK, nfs4_op_readlink, "READLINK", 4100, OPF_CFH),
    ROW(OP4_REMOVE, nfs4_op_remove, "REMOVE", 32, OPF_CFH),
    ROW(OP4_RENAME, nfs4_op_rename, "RENAME", 56, OPF_CFH),
    ROW(OP4_RENEW, nfs4_op_renew, "RENEW", 8, OPF_V40),
    ROW(OP4_RESTOREFH, nfs4_op_restorefh, "RESTOREFH", 8, 0),
    ROW(OP4_SAVEFH, nfs4_op_savefh, "SAVEFH", 8, OPF_CFH),
    ROW(OP4_SECINFO, nfs4_op_secinfo, "SECINFO", 16, OPF_CFH),
    ROW(OP4_SETATTR, nfs4_op_setattr, "SETATTR", 24, OPF_CFH | OPF_ERRBODY),
    ROW(OP4_SETCLIENTID, nfs4_op_setclientid, "SETCLIENTID", 300,
        OPF_V40 | OPF_ERRBODY),
    ROW(OP4_SETCLIENTID_CONFIRM, nfs4_op_setclientid_confirm,
        "SETCLIENTID_CONFIRM", 8, OPF_V40),
    ROW(OP4_VERIFY, nfs4_op_verify, "VERIFY", 8, OPF_CFH),
    ROW(OP4_WRITE, nfs4_op_write, "WRITE", 24, OPF_CFH),
    ROW(OP4_RELEASE_LOCKOWNER, nfs4_op_release_lockowner, "RELEASE_LOCKOWNER",
        8, OPF_V40),
    ROW(OP4_BACKCHANNEL_CTL, nfs4_op_backchannel_ctl, "BACKCHANNEL_CTL", 8,
        OPF_V41),
    ROW(OP4_BIND_CONN_TO_SESSION, nfs4_op_bind_conn_to_session,
        "BIND_CONN_TO_SESSION", 32, OPF_V41 | OPF_SOLO),
    ROW(OP4_EXCHANGE_ID, nfs4_op_exchange_id, "EXCHANGE_ID", 1200,
        OPF_V41 | OPF_SOLO),
    ROW(OP4_CREATE_SESSION, nfs4_op_create_session, "CREATE_SESSION", 120,
        OPF_V41 | OPF_SOLO),
    ROW(OP4_DESTROY_SESSION, nfs4_op_destroy_session, "DESTROY_SESSION", 8,
        OPF_V41 | OPF_SOLO),
    ROW(OP4_FREE_STATEID, nfs4_op_free_stateid, "FREE_STATEID", 8, OPF_V41),
    ROW(OP4_GET_DIR_DELEGATION, op_notsupp, "GET_DIR_DELEGATION", 8,
        OPF_V41 | OPF_CFH),
    ROW(OP4_GETDEVICEINFO, op_notsupp, "GETDEVICEINFO", 8, OPF_V41),
    ROW(OP4_GETDEVICELIST, op_notsupp, "GETDEVICELIST", 8, OPF_V41 | OPF_CFH),
    ROW(OP4_LAYOUTCOMMIT, op_notsupp, "LAYOUTCOMMIT", 8, OPF_V41 | OPF_CFH),
    ROW(OP4_LAYOUTGET, op_notsupp, "LAYOUTGET", 8, OPF_V41 | OPF_CFH),
    ROW(OP4_LAYOUTRETURN, op_notsupp, "LAYOUTRETURN", 8, OPF_V41 | OPF_CFH),
    ROW(OP4_SECINFO_NO_NAME, nfs4_op_secinfo_no_name, "SECINFO_NO_NAME", 16,
        OPF_V41 | OPF_CFH),
    ROW(OP4_SEQUENCE, nfs4_op_sequence, "SEQUENCE", 40, OPF_V41),
    ROW(OP4_SET_SSV, op_notsupp, "SET_SSV", 8, OPF_V41),
    ROW(OP4_TEST_STATEID, nfs4_op_test_stateid, "TEST_STATEID", 64, OPF_V41),
    ROW(OP4_WANT_DELEGATION, op_notsupp, "WANT_DELEGATION", 8,
        OPF_V41 | OPF_CFH),
    ROW(OP4_DESTROY_CLIENTID, nfs4_op_destroy_clientid, "DESTROY_CLIENTID", 8,
        OPF_V41 | OPF_SOLO),
    ROW(OP4_RECLAIM_COMPLETE, nfs4_op_reclaim_complete, "RECLAIM_COMPLETE", 8,
        OPF_V41),
    ROW(OP4_ALLOCATE, nfs4_op_allocate, "ALLOCATE", 8, OPF_V42 | OPF_CFH),
    ROW(OP4_COPY, nfs4_op_copy, "COPY", 64, OPF_V42 | OPF_CFH),
    ROW(OP4_COPY_NOTIFY, op_notsupp, "COPY_NOTIFY", 8, OPF_V42 | OPF_CFH),
    ROW(OP4_DEALLOCATE, nfs4_op_deallocate, "DEALLOCATE", 8, OPF_V42 | OPF_CFH),
    ROW(OP4_IO_ADVISE, op_notsupp, "IO_ADVISE", 8, OPF_V42 | OPF_CFH),
    ROW(OP4_LAYOUTERROR, op_notsupp, "LAYOUTERROR", 8, OPF_V42 | OPF_CFH),
    ROW(OP4_LAYOUTSTATS, op_notsupp, "LAYOUTSTATS", 8, OPF_V42 | OPF_CFH),
    ROW(OP4_OFFLOAD_CANCEL, op_notsupp, "OFFLOAD_CANCEL", 8, OPF_V42 | OPF_CFH),
    ROW(OP4_OFFLOAD_STATUS, op_notsupp, "OFFLOAD_STATUS", 8, OPF_V42 | OPF_CFH),
    ROW(OP4_READ_PLUS, nfs4_op_read_plus, "READ_PLUS", 16, OPF_V42 | OPF_CFH),
    ROW(OP4_SEEK, nfs4_op_seek, "SEEK", 16, OPF_V42 | OPF_CFH),
    ROW(OP4_WRITE_SAME, op_notsupp, "WRITE_SAME", 8, OPF_V42 | OPF_CFH),
    ROW(OP4_CLONE, nfs4_op_clone, "CLONE", 8, OPF_V42 | OPF_CFH),
    ROW(OP4_GETXATTR, op_notsupp, "GETXATTR", 8, OPF_V42 | OPF_CFH),
    ROW(OP4_SETXATTR, op_notsupp, "SETXATTR", 8, OPF_V42 | OPF_CFH),
    ROW(OP4_LISTXATTRS, op_notsupp, "LISTXATTRS", 8, OPF_V42 | OPF_CFH),
    ROW(OP4_REMOVEXATTR, op_notsupp, "REMOVEXATTR", 8, OPF_V42 | OPF_CFH),
};

/* Does minor version have this op at all? (RFC 8881 16.2.3: an operation
 * number not defined for the minor version is OP_ILLEGAL.) */
static const struct nfs4_opdesc *op_lookup(uint32_t minor, uint32_t op)
{
	const struct nfs4_opdesc *d;

	if (op < OP4_ACCESS || op > OP4_MAX)
		return NULL;
	d = &optab[op];
	if (!d->fn)
		return NULL;
	if ((d->flags & OPF_V41) && minor < 1)
		return NULL;
	if ((d->flags & OPF_V42) && minor < 2)
		return NULL;
	return d;
}

/* Op number 0 is unused by every minor version (nfs_opnum4 starts at
 * OP_ACCESS = 3): its counters count OP_ILLEGAL. */
#define OPSTAT_ILLEGAL 0

/* Names of the per-op counters: the table's, for the ops a minor version
 * has. */
static const char *opstat_name(uint32_t minor, uint32_t op)
{
	if (op == OPSTAT_ILLEGAL)
		return "ILLEGAL";
	return op_lookup(minor, op) ? optab[op].name : NULL;
}

/* Counters and latency per op and minor version (rpc/stats.h), indexed
 * and named like the table above; registered with the NFS program. */
const struct rpc_stats_optab nfs4_op_stats = {
    .name = "nfs4",
    .title = "NFSv4 operations",
    .label = "minor",
    .prefix = "4.",
    .nvariants = NFS4_MAX_MINOR + 1,
    .nops = OP4_MAX + 1,
    .op_name = opstat_name,
};

const char *nfs4_op_name(uint32_t op)
{
	if (op >= OP4_ACCESS && op <= OP4_MAX && optab[op].name)
		return optab[op].name;
	return "ILLEGAL";
}

/* Reply bytes so far, counted as RFC 8881 18.36.3 counts them: with the
 * RPC header. */
static size_t reply_used(const struct nfs4_compound *c)
{
	return NFS4_RPC_HDR + ((size_t)xdr_out_size(c->res) - c->res_start);
}

/* The reply must fit ca_maxresponsesize, and one to be kept for replay
 * ca_maxresponsesize_cached too (RFC 8881 2.10.6.4). */
static size_t reply_limit(const struct nfs4_compound *c)
{
	if (c->cachethis && c->maxresp_cached < c->maxresp)
		return c->maxresp_cached;
	return c->maxresp;
}

size_t nfs4_reply_room(const struct nfs4_compound *c)
{
	size_t used = reply_used(c), limit = reply_limit(c);

	if (!c->maxresp)
		return SIZE_MAX;
	return limit > used ? limit - used : 0;
}

/* 4.1 session rules checked before an op runs (RFC 8881 2.10.6,
 * 18.46.3): SEQUENCE first, the sessionless ops alone. */
static uint32_t session_rules(struct nfs4_compound *c,
                              const struct nfs4_opdesc *d)
{
	if (c->minor == 0)
		return NFS4_OK;
	if (c->opidx == 0) {
		if (c->opnum == OP4_SEQUENCE)
			return NFS4_OK;
		if (!(d->flags & OPF_SOLO))
			return NFS4ERR_OP_NOT_IN_SESSION;
		/* DESTROY_SESSION may also come first of several if it
		 * names another session; keep the simple rule. */
		if (c->nops != 1)
			return NFS4ERR_NOT_ONLY_OP;
		return NFS4_OK;
	}
	if (c->opnum == OP4_SEQUENCE)
		return NFS4ERR_SEQUENCE_POS;
	if (!c->session)
		return NFS4ERR_OP_NOT_IN_SESSION;
	switch (c->opnum) {
	case OP4_EXCHANGE_ID:
	case OP4_CREATE_SESSION:
	case OP4_BIND_CONN_TO_SESSION:
		return NFS4ERR_NOT_ONLY_OP;
	}
	return NFS4_OK;
}

/* Limits on the reply before the op runs, so a non-idempotent op is not
 * done when its reply could not be sent or cached. */
static uint32_t size_rules(struct nfs4_compound *c, const struct nfs4_opdesc *d)
{
	size_t after = reply_used(c) + 8 + d->rsize;

	if (!c->maxresp)
		return NFS4_OK;
	if (after > c->maxresp)
		return NFS4ERR_REP_TOO_BIG;
	if (c->cachethis && after > c->maxresp_cached)
		return NFS4ERR_REP_TOO_BIG_TO_CACHE;
	return NFS4_OK;
}

/* The limits again on the reply as built: the estimate checked before
 * may fall short of what an op wrote (RFC 8881 2.10.6.4: a reply past
 * them is never sent, nor one past the cached limit kept). */
static uint32_t size_after(const struct nfs4_compound *c)
{
	size_t used = reply_used(c);

	if (!c->maxresp)
		return NFS4_OK;
	if (used > c->maxresp)
		return NFS4ERR_REP_TOO_BIG;
	if (c->cachethis && used > c->maxresp_cached)
		return NFS4ERR_REP_TOO_BIG_TO_CACHE;
	return NFS4_OK;
}

/* Run one op whose number has been read. Returns its status. */
static uint32_t run_op(struct nfs4_compound *c)
{
	const struct nfs4_opdesc *d = op_lookup(c->minor, c->opnum);
	uint32_t st;

	if (!d) {
		/* RFC 7530 15.2.4: the result names OP_ILLEGAL. */
		xdr_patch_u32(c->res, c->oppos - 4, OP4_ILLEGAL);
		return NFS4ERR_OP_ILLEGAL;
	}
	st = session_rules(c, d);
	if (st)
		return st;
	if (c->retry_uncached) {
		c->retry_uncached = false;
		return NFS4ERR_RETRY_UNCACHED_REP;
	}
	if ((d->flags & OPF_V40) && c->minor > 0)
		return NFS4ERR_NOTSUPP;
	if ((d->flags & OPF_CFH) && c->cfh.kind == FH4_NONE)
		return NFS4ERR_NOFILEHANDLE;
	st = size_rules(c, d);
	if (st)
		return st;
	st = d->fn(c);
	if (st == NFS4_OK && (st = size_after(c)) != NFS4_OK) {
		xdr_out_truncate(c->res, c->oppos + 4);
		return st;
	}
	if (st == NFS4_OK && (d->flags & OPF_CLEARSID))
		c->cur_sid_set = false;
	if (st != NFS4_OK && st != NFS4_REPLAYED && !(d->flags & OPF_ERRBODY))
		xdr_out_truncate(c->res, c->oppos + 4);
	return st;
}

/* After an op whose reply did not fit the output buffer. */
static uint32_t reply_overflow(struct nfs4_compound *c)
{
	xdr_out_truncate(c->res, c->oppos);
	c->res->err = false;
	xdr_put_u32(c->res, 0);
	return c->minor ? NFS4ERR_REP_TOO_BIG : NFS4ERR_RESOURCE;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The error line of a failed op. Its handle is the current fh the op
 * worked on, but PUTFH's is the one it was given: the current fh is still
 * the previous op's. Worked out only here, on the error path. */
static void op_log_error(struct nfs4_compound *c, uint32_t st, uint64_t ns)
{
	struct rpc_op_failure f = {.op = opstat_name(c->minor, c->opnum),
	                           .variant = c->minor,
	                           .status = st,
	                           .ns = ns};
	struct nfs_fh wire;

	if (!f.op)
		f.op = "ILLEGAL";
	if (c->opnum == OP4_PUTFH) {
		f.fh = c->putfh_arg;
		f.fh_len = c->putfh_arg_len;
	} else if (!nfs4_fh_to_wire(c, &c->cfh, &wire)) {
		f.fh = wire.data;
		f.fh_len = wire.len;
	}
	rpc_stats_log_op_error(c->stats, c->call, &nfs4_op_stats, &f);
	/* the COMPOUND's line would only repeat this op's */
	c->call->error_logged = true;
}

/* Count the op just run, which ended at now with status st (the time
 * since the previous op ended: one clock read per op), and log it if it
 * failed. */
static void op_done(struct nfs4_compound *c, uint32_t st, uint64_t *t)
{
	uint64_t now = mono_ns(), ns = now - *t;
	uint32_t op = op_lookup(c->minor, c->opnum) ? c->opnum : OPSTAT_ILLEGAL;

	*t = now;
	if (!c->stats)
		return;
	rpc_stats_record_op(c->stats, c->stats_slot, &nfs4_op_stats, c->minor,
	                    op, ns, st != NFS4_OK);
	if (st != NFS4_OK)
		op_log_error(c, st, ns);
}

/* Walk the op array. Returns the COMPOUND status (that of the last op
 * run), or NFS4ERR_BADXDR with *garbage set when the input broke off. */
static uint32_t run_ops(struct nfs4_compound *c, uint32_t *nres)
{
	uint32_t st = NFS4_OK;
	uint64_t t = mono_ns();

	for (c->opidx = 0; c->opidx < c->nops; c->opidx++) {
		if (!xdr_get_u32(c->args, &c->opnum)) {
			/* Ops promised but absent: the request is short. */
			st = NFS4ERR_BADXDR;
			break;
		}
		xdr_put_u32(c->res, c->opnum);
		c->oppos = c->res->len;
		xdr_put_u32(c->res, 0);
		(*nres)++;
		st = run_op(c);
		if (c->replayed) {
			op_done(c, NFS4_OK, &t);
			return NFS4_OK;
		}
		if (c->res->err)
			st = reply_overflow(c);
		if (st == NFS4_REPLAYED) {
			const uint8_t *p = c->res->buf + c->oppos;
			st = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
			     (uint32_t)p[2] << 8 | p[3];
		} else {
			xdr_patch_u32(c->res, c->oppos, st);
		}
		if (c->replay_owner_set) {
			nfs4_owner_save_reply(c->st, c->replay_owner,
			                      c->res->buf + c->oppos,
			                      c->res->len - c->oppos);
			c->replay_owner_set = false;
		}
		op_done(c, st, &t);
		if (st != NFS4_OK)
			break;
		if (c->destroyed_session)
			break;
	}
	return st;
}

static void compound_log(const struct nfs4_compound *c, const char *what)
{
	char peer[64];

	log_info("%s: NFSv4 COMPOUND: %s",
	         rpc_peer_str((const struct sockaddr *)&c->call->peer, peer,
	                      sizeof(peer)),
	         what);
}

/* Header-level refusals: status, the tag, no results. */
static int reply_empty(struct xdr_out *res, uint32_t st, const uint8_t *tag,
                       uint32_t taglen)
{
	xdr_put_u32(res, st);
	xdr_put_opaque(res, tag, taglen);
	xdr_put_u32(res, 0);
	return RPC_SUCCESS;
}

static int nfs4_compound_proc(struct rpc_call *call, struct xdr_out *res)
{
	struct nfs4_compound c;
	const uint8_t *tag;
	uint32_t taglen, nres = 0, st;
	size_t count_pos;

	/* COMPOUND4res begins with the status: the runtime counts errors
	 * from it. */
	call->status_first = true;
	call->status_name = nfs4_status_name;
	memset(&c, 0, sizeof(c));
	c.call = call;
	c.srv = call->ctx;
	c.args = &call->args;
	c.res = res;
	c.res_start = res->len;
	if (call->svc) {
		c.stats = rpc_service_stats(call->svc);
		c.stats_slot = rpc_stats_optab_slot(c.stats, &nfs4_op_stats);
	}
	/* utf8str_cs tag; a long one is refused without echoing it. */
	if (!xdr_get_opaque_ref(c.args, &tag, &taglen, 0xffffff) ||
	    !xdr_get_u32(c.args, &c.minor) || !xdr_get_u32(c.args, &c.nops)) {
		compound_log(&c, "undecodable header");
		return RPC_GARBAGE_ARGS;
	}
	if (c.minor > NFS4_MAX_MINOR)
		return reply_empty(res, NFS4ERR_MINOR_VERS_MISMATCH, tag,
		                   taglen > NFS4_TAG_MAX ? 0 : taglen);
	if (taglen > NFS4_TAG_MAX)
		return reply_empty(
		    res, c.minor ? NFS4ERR_REQ_TOO_BIG : NFS4ERR_RESOURCE, NULL,
		    0);
	if (c.nops > NFS4_MAX_OPS)
		return reply_empty(
		    res, c.minor ? NFS4ERR_TOO_MANY_OPS : NFS4ERR_RESOURCE, tag,
		    taglen);
	if (!c.srv)
		return RPC_SYSTEM_ERR;
	c.st = nfs4_server_get(c.srv);
	if (!c.st)
		return RPC_SYSTEM_ERR;
	nfs4_state_sweep(c.st);
	c.tab = exports_acquire(c.srv);

	xdr_put_u32(res, NFS4_OK);
	xdr_put_opaque(res, tag, taglen);
	count_pos = res->len;
	xdr_put_u32(res, 0);
	st = run_ops(&c, &nres);
	if (!c.replayed) {
		xdr_patch_u32(res, c.res_start, st);
		xdr_patch_u32(res, count_pos, nres);
	}
	if (c.session)
		nfs4_session_done(&c, res->buf + c.res_start,
		                  res->len - c.res_start);
	exports_release(c.tab);
	if (st == NFS4ERR_BADXDR && nres == 0) {
		compound_log(&c, "undecodable operation");
		return RPC_GARBAGE_ARGS;
	}
	return RPC_SUCCESS;
}

static int nfs4_null(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	return RPC_SUCCESS;
}

static const struct rpc_proc nfs4_procs[] = {
    [0] = {.name = "NULL", .fn = nfs4_null},
    [1] = {.name = "COMPOUND", .fn = nfs4_compound_proc},
};

const struct rpc_version nfs4_version = {
    .vers = 4,
    .procs = nfs4_procs,
    .nprocs = 2,
};
