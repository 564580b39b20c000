/* Helpers shared by the RPC unit tests: encode calls, parse replies. */
#ifndef SNFS_RPC_TESTLIB_H
#define SNFS_RPC_TESTLIB_H

#include <stdint.h>
#include <string.h>

#include "rpc/rpc.h"
#include "xdr/xdr.h"

struct tcall {
	uint32_t xid, rpcvers, prog, vers, proc;
	uint32_t cred_flavor; /* RPC_AUTH_NONE, RPC_AUTH_SYS or anything */
	uint32_t uid, gid, ngids;
	uint32_t gids[20];
	const char *machine;
	const void *args;
	size_t args_len;
};

/* Encode c into x (appending). */
static inline void tcall_encode(const struct tcall *c, struct xdr_out *x)
{
	xdr_put_u32(x, c->xid);
	xdr_put_u32(x, 0); /* CALL */
	xdr_put_u32(x, c->rpcvers ? c->rpcvers : 2);
	xdr_put_u32(x, c->prog);
	xdr_put_u32(x, c->vers);
	xdr_put_u32(x, c->proc);
	xdr_put_u32(x, c->cred_flavor);
	if (c->cred_flavor == RPC_AUTH_SYS) {
		size_t at = x->len;
		xdr_put_u32(x, 0);
		xdr_put_u32(x, 12345);
		xdr_put_string(x, c->machine ? c->machine : "host");
		xdr_put_u32(x, c->uid);
		xdr_put_u32(x, c->gid);
		xdr_put_u32(x, c->ngids);
		for (uint32_t i = 0; i < c->ngids && i < 20; i++)
			xdr_put_u32(x, c->gids[i]);
		xdr_patch_u32(x, at, (uint32_t)(x->len - at - 4));
	} else if (c->cred_flavor == RPC_RPCSEC_GSS) {
		/* rpc_gss_cred_vers_1_t: version, proc, seq, service, ctx */
		xdr_put_u32(x, 20);
		xdr_put_u32(x, 1);
		xdr_put_u32(x, 0);
		xdr_put_u32(x, 1);
		xdr_put_u32(x, 1);
		xdr_put_u32(x, 0);
	} else {
		xdr_put_u32(x, 0);
	}
	xdr_put_u32(x, RPC_AUTH_NONE);
	xdr_put_u32(x, 0);
	if (c->args_len)
		xdr_put_fixed(x, c->args, c->args_len);
}

struct treply {
	uint32_t xid, mtype, reply_stat;
	uint32_t accept_stat;            /* when accepted */
	uint32_t reject_stat, auth_stat; /* when denied */
	uint32_t low, high;              /* PROG_MISMATCH or RPC_MISMATCH */
	struct xdr_in body;              /* results after the header */
	bool ok;                         /* well formed */
};

/* Parse a reply (without record mark). */
static inline struct treply treply_parse(const uint8_t *p, size_t len)
{
	struct treply r;
	struct xdr_in in;
	uint32_t vf, vl;

	memset(&r, 0, sizeof(r));
	xdr_in_init(&in, p, len);
	xdr_get_u32(&in, &r.xid);
	xdr_get_u32(&in, &r.mtype);
	xdr_get_u32(&in, &r.reply_stat);
	if (r.reply_stat == 0) {
		xdr_get_u32(&in, &vf);
		xdr_get_u32(&in, &vl);
		xdr_skip(&in, vl);
		xdr_get_u32(&in, &r.accept_stat);
		if (r.accept_stat == RPC_PROG_MISMATCH) {
			xdr_get_u32(&in, &r.low);
			xdr_get_u32(&in, &r.high);
		}
	} else {
		xdr_get_u32(&in, &r.reject_stat);
		if (r.reject_stat == 0) {
			xdr_get_u32(&in, &r.low);
			xdr_get_u32(&in, &r.high);
		} else {
			xdr_get_u32(&in, &r.auth_stat);
		}
	}
	r.ok = !in.err && r.mtype == 1;
	xdr_in_init(&r.body, in.buf + in.pos, in.err ? 0 : len - in.pos);
	return r;
}

#endif
