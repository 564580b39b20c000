/* rpc_service: call decoding, auth, dispatch and reply encoding. */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "rpc/rpc.h"
#include "rpc_testlib.h"
#include "util/log.h"

#define TOY 200100

static int toy_null(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	return RPC_SUCCESS;
}

/* echo an opaque<1024> */
static int toy_echo(struct rpc_call *call, struct xdr_out *res)
{
	const uint8_t *p;
	uint32_t n;
	if (!xdr_get_opaque_ref(&call->args, &p, &n, 1024))
		return RPC_GARBAGE_ARGS;
	xdr_put_opaque(res, p, n);
	return RPC_SUCCESS;
}

/* encodes something, then fails: the body must be dropped */
static int toy_garbage(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	xdr_put_u32(res, 0xdeadbeef);
	return RPC_GARBAGE_ARGS;
}

static int toy_autherr(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	xdr_put_u32(res, 1);
	return RPC_REPLY_AUTH_ERR(RPC_AUTH_TOOWEAK);
}

static int toy_drop(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	xdr_put_u32(res, 1);
	return RPC_REPLY_DROP;
}

static int toy_whoami(struct rpc_call *call, struct xdr_out *res)
{
	xdr_put_u32(res, call->cred.flavor);
	xdr_put_u32(res, call->cred.uid);
	xdr_put_u32(res, call->cred.gid);
	xdr_put_u32(res, call->cred.ngids);
	for (uint32_t i = 0; i < call->cred.ngids; i++)
		xdr_put_u32(res, call->cred.gids[i]);
	xdr_put_string(res, call->cred.machine);
	xdr_put_u32(res, call->ctx == (void *)0x1234 && call->svc != NULL);
	return RPC_SUCCESS;
}

/* more than the reply buffer holds */
static int toy_big(struct rpc_call *call, struct xdr_out *res)
{
	static uint8_t chunk[4096];
	(void)call;
	for (int i = 0; i < 1000; i++)
		xdr_put_fixed(res, chunk, sizeof(chunk));
	return RPC_SUCCESS;
}

static int toy_weird(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	return 77;
}

static const struct rpc_proc toy_procs[] = {
    [0] = {"NULL", toy_null},       [1] = {"ECHO", toy_echo},
    [2] = {"GARBAGE", toy_garbage}, [3] = {"HOLE", NULL},
    [4] = {"AUTHERR", toy_autherr}, [5] = {"DROP", toy_drop},
    [6] = {"WHOAMI", toy_whoami},   [7] = {"BIG", toy_big},
    [8] = {"WEIRD", toy_weird},
};
static const struct rpc_version toy_versions[] = {
    {3, toy_procs, 9},
    {1, toy_procs, 2},
};
static const struct rpc_program toy_prog = {
    .prog = TOY, .name = "toy", .versions = toy_versions, .nversions = 2};

static struct rpc_service *svc;

/* Run a call through the service; the reply goes to out (fresh buffer,
 * 64 KiB limit). Returns rpc_service_handle's result. */
static int run(const struct tcall *c, struct xdr_out *out)
{
	struct xdr_out in;
	int rc;
	xdr_out_init(&in, 512, 1 << 20);
	tcall_encode(c, &in);
	xdr_out_init(out, 256, 64 * 1024);
	rc = rpc_service_handle(svc, in.buf, in.len, NULL, 0, RPC_TCP, NULL,
	                        out);
	xdr_out_free(&in);
	return rc;
}

static struct treply call_reply(const struct tcall *c, int *rc,
                                struct xdr_out *out)
{
	*rc = run(c, out);
	return treply_parse(out->buf, out->len);
}

int main(void)
{
	struct xdr_out out;
	struct treply r;
	int rc;

	svc = rpc_service_new((void *)0x1234);
	CHECK(rpc_service_add(svc, &toy_prog) == 0, "add program");
	CHECK(rpc_service_add(svc, &toy_prog) < 0, "duplicate refused");
	CHECK(rpc_service_find(svc, TOY) == &toy_prog, "find");

	r = call_reply(&(struct tcall){.xid = 42, .prog = TOY, .vers = 3}, &rc,
	               &out);
	CHECK(rc == 0 && r.ok && r.xid == 42 && r.reply_stat == 0 &&
	          r.accept_stat == RPC_SUCCESS && out.len == 24,
	      "NULL call");
	xdr_out_free(&out);

	{
		const uint8_t arg[12] = {0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'};
		uint8_t back[8];
		uint32_t n = 0;
		r = call_reply(&(struct tcall){.xid = 43,
		                               .prog = TOY,
		                               .vers = 1,
		                               .proc = 1,
		                               .args = arg,
		                               .args_len = 12},
		               &rc, &out);
		CHECK(rc == 0 && r.accept_stat == RPC_SUCCESS &&
		          xdr_get_opaque(&r.body, back, &n, 8) && n == 5 &&
		          memcmp(back, "hello", 5) == 0,
		      "ECHO returns its argument");
		xdr_out_free(&out);
		r = call_reply(&(struct tcall){.xid = 44,
		                               .prog = TOY,
		                               .vers = 1,
		                               .proc = 1,
		                               .args = arg,
		                               .args_len = 6},
		               &rc, &out);
		CHECK(rc == 0 && r.accept_stat == RPC_GARBAGE_ARGS &&
		          out.len == 24,
		      "ECHO with short args: GARBAGE_ARGS");
		xdr_out_free(&out);
	}

	r = call_reply(&(struct tcall){.xid = 1, .prog = 999}, &rc, &out);
	CHECK(rc == 0 && r.ok && r.accept_stat == RPC_PROG_UNAVAIL &&
	          out.len == 24,
	      "PROG_UNAVAIL");
	xdr_out_free(&out);

	r = call_reply(&(struct tcall){.xid = 2, .prog = TOY, .vers = 2}, &rc,
	               &out);
	CHECK(rc == 0 && r.ok && r.accept_stat == RPC_PROG_MISMATCH &&
	          r.low == 1 && r.high == 3 && out.len == 32,
	      "PROG_MISMATCH with range 1..3");
	xdr_out_free(&out);

	r = call_reply(
	    &(struct tcall){.xid = 3, .prog = TOY, .vers = 1, .proc = 2}, &rc,
	    &out);
	CHECK(rc == 0 && r.accept_stat == RPC_PROC_UNAVAIL,
	      "PROC_UNAVAIL past nprocs");
	xdr_out_free(&out);
	r = call_reply(
	    &(struct tcall){.xid = 3, .prog = TOY, .vers = 3, .proc = 3}, &rc,
	    &out);
	CHECK(rc == 0 && r.accept_stat == RPC_PROC_UNAVAIL,
	      "PROC_UNAVAIL for a NULL handler");
	xdr_out_free(&out);

	r = call_reply(
	    &(struct tcall){.xid = 4, .prog = TOY, .vers = 3, .proc = 2}, &rc,
	    &out);
	CHECK(rc == 0 && r.accept_stat == RPC_GARBAGE_ARGS && out.len == 24,
	      "GARBAGE_ARGS from a handler drops its body");
	xdr_out_free(&out);

	r = call_reply(
	    &(struct tcall){.xid = 5, .prog = TOY, .vers = 3, .proc = 4}, &rc,
	    &out);
	CHECK(rc == 0 && r.ok && r.reply_stat == 1 && r.reject_stat == 1 &&
	          r.auth_stat == RPC_AUTH_TOOWEAK && out.len == 20,
	      "RPC_REPLY_AUTH_ERR from a handler");
	xdr_out_free(&out);

	r = call_reply(
	    &(struct tcall){.xid = 6, .prog = TOY, .vers = 3, .proc = 5}, &rc,
	    &out);
	CHECK(rc == RPC_REPLY_DROP && out.len == 0, "RPC_REPLY_DROP");
	xdr_out_free(&out);

	r = call_reply(
	    &(struct tcall){.xid = 7, .prog = TOY, .vers = 3, .proc = 7}, &rc,
	    &out);
	CHECK(rc == 0 && r.accept_stat == RPC_SYSTEM_ERR && out.len == 24,
	      "reply over the limit: SYSTEM_ERR");
	xdr_out_free(&out);
	r = call_reply(
	    &(struct tcall){.xid = 8, .prog = TOY, .vers = 3, .proc = 8}, &rc,
	    &out);
	CHECK(rc == 0 && r.accept_stat == RPC_SYSTEM_ERR,
	      "unknown handler result: SYSTEM_ERR");
	xdr_out_free(&out);

	/* AUTH_SYS decoded */
	{
		struct tcall c = {.xid = 9,
		                  .prog = TOY,
		                  .vers = 3,
		                  .proc = 6,
		                  .cred_flavor = RPC_AUTH_SYS,
		                  .uid = 1000,
		                  .gid = 100,
		                  .ngids = 3,
		                  .gids = {4, 5, 6},
		                  .machine = "client7"};
		uint32_t f, uid, gid, ng, g[3], ctxok;
		char m[32];
		r = call_reply(&c, &rc, &out);
		xdr_get_u32(&r.body, &f);
		xdr_get_u32(&r.body, &uid);
		xdr_get_u32(&r.body, &gid);
		xdr_get_u32(&r.body, &ng);
		for (int i = 0; i < 3; i++)
			xdr_get_u32(&r.body, &g[i]);
		xdr_get_string(&r.body, m, sizeof(m), 31);
		xdr_get_u32(&r.body, &ctxok);
		CHECK(rc == 0 && !r.body.err && f == RPC_AUTH_SYS &&
		          uid == 1000 && gid == 100 && ng == 3 && g[0] == 4 &&
		          g[2] == 6 && strcmp(m, "client7") == 0,
		      "AUTH_SYS credentials decoded");
		CHECK(ctxok == 1, "handler sees ctx and svc");
		xdr_out_free(&out);

		c.ngids = 17;
		r = call_reply(&c, &rc, &out);
		CHECK(rc == 0 && r.reply_stat == 1 && r.reject_stat == 1 &&
		          r.auth_stat == RPC_AUTH_BADCRED,
		      "AUTH_SYS with 17 gids: AUTH_BADCRED");
		xdr_out_free(&out);

		char longname[300];
		memset(longname, 'a', sizeof(longname) - 1);
		longname[299] = 0;
		c.ngids = 0;
		c.machine = longname;
		r = call_reply(&c, &rc, &out);
		CHECK(rc == 0 && r.reply_stat == 1 &&
		          r.auth_stat == RPC_AUTH_BADCRED,
		      "AUTH_SYS body over 400 bytes: AUTH_BADCRED");
		xdr_out_free(&out);
	}

	/* AUTH_SYS body with a bad inner length */
	{
		struct xdr_out in;
		xdr_out_init(&in, 512, 4096);
		uint32_t words[] = {10,
		                    0,
		                    2,
		                    TOY,
		                    3,
		                    0,
		                    RPC_AUTH_SYS,
		                    12,
		                    1,
		                    100 /* name len past body */,
		                    0,
		                    0,
		                    0};
		for (size_t i = 0; i < sizeof(words) / 4; i++)
			xdr_put_u32(&in, words[i]);
		xdr_out_init(&out, 256, 4096);
		rc = rpc_service_handle(svc, in.buf, in.len, NULL, 0, RPC_TCP,
		                        NULL, &out);
		r = treply_parse(out.buf, out.len);
		CHECK(rc == 0 && r.xid == 10 && r.reply_stat == 1 &&
		          r.auth_stat == RPC_AUTH_BADCRED,
		      "malformed AUTH_SYS body: AUTH_BADCRED");
		xdr_out_free(&out);
		xdr_out_free(&in);
	}

	r = call_reply(&(struct tcall){.xid = 11,
	                               .prog = TOY,
	                               .vers = 3,
	                               .cred_flavor = RPC_RPCSEC_GSS},
	               &rc, &out);
	CHECK(rc == 0 && r.reply_stat == 1 && r.reject_stat == 1 &&
	          r.auth_stat == RPC_AUTH_BADCRED,
	      "RPCSEC_GSS refused with AUTH_BADCRED");
	xdr_out_free(&out);
	r = call_reply(
	    &(struct tcall){
	        .xid = 12, .prog = TOY, .vers = 3, .cred_flavor = RPC_AUTH_DH},
	    &rc, &out);
	CHECK(rc == 0 && r.reply_stat == 1 && r.auth_stat == RPC_AUTH_BADCRED,
	      "AUTH_DH refused");
	xdr_out_free(&out);

	r = call_reply(
	    &(struct tcall){.xid = 13, .rpcvers = 3, .prog = TOY, .vers = 3},
	    &rc, &out);
	CHECK(rc == 0 && r.reply_stat == 1 && r.reject_stat == 0 &&
	          r.low == 2 && r.high == 2,
	      "RPC version 3: RPC_MISMATCH 2..2");
	xdr_out_free(&out);

	/* a reply after something already in the buffer (TCP headroom) */
	{
		struct xdr_out in;
		xdr_out_init(&in, 512, 4096);
		tcall_encode(&(struct tcall){.xid = 14, .prog = TOY, .vers = 2},
		             &in);
		xdr_out_init(&out, 256, 4096);
		xdr_put_u32(&out, 0xabcdef01);
		rc = rpc_service_handle(svc, in.buf, in.len, NULL, 0, RPC_TCP,
		                        NULL, &out);
		r = treply_parse(out.buf + 4, out.len - 4);
		CHECK(rc == 0 && out.len == 36 && out.buf[0] == 0xab &&
		          r.xid == 14 && r.accept_stat == RPC_PROG_MISMATCH,
		      "reply appended after headroom");
		xdr_out_free(&out);
		xdr_out_free(&in);
	}

	/* a reply (not a call) and empty input are dropped */
	{
		const uint8_t reply_msg[12] = {0, 0, 0, 1, 0, 0, 0, 1};
		xdr_out_init(&out, 256, 4096);
		CHECK(rpc_service_handle(svc, reply_msg, 12, NULL, 0, RPC_UDP,
		                         NULL, &out) == RPC_REPLY_DROP &&
		          out.len == 0,
		      "a REPLY message is dropped");
		CHECK(rpc_service_handle(svc, NULL, 0, NULL, 0, RPC_UDP, NULL,
		                         &out) == RPC_REPLY_DROP,
		      "empty record dropped");
		xdr_out_free(&out);
	}

	log_set_level(LOG_ERR); /* the rest logs every dropped record */

	/* truncated headers at every length */
	{
		struct xdr_out in;
		const uint8_t arg[8] = {0, 0, 0, 3, 'a', 'b', 'c'};
		bool sane = true;
		xdr_out_init(&in, 512, 4096);
		tcall_encode(&(struct tcall){.xid = 15,
		                             .prog = TOY,
		                             .vers = 3,
		                             .proc = 1,
		                             .cred_flavor = RPC_AUTH_SYS,
		                             .ngids = 2,
		                             .args = arg,
		                             .args_len = 8},
		             &in);
		for (size_t l = 0; l < in.len; l++) {
			uint8_t *copy = malloc(l ? l : 1);
			memcpy(copy, in.buf, l);
			xdr_out_init(&out, 256, 4096);
			rc = rpc_service_handle(svc, copy, l, NULL, 0, RPC_TCP,
			                        NULL, &out);
			r = treply_parse(out.buf, out.len);
			if (rc == 0 && !(r.ok && r.xid == 15 &&
			                 (r.reply_stat == 1 ||
			                  r.accept_stat != RPC_SUCCESS)))
				sane = false;
			if (rc != 0 && (rc != RPC_REPLY_DROP || out.len != 0))
				sane = false;
			xdr_out_free(&out);
			free(copy);
		}
		CHECK(sane,
		      "truncated calls: dropped or answered with an error");
		xdr_out_free(&in);
	}

	/* random and mutated records */
	{
		struct xdr_out base;
		uint8_t buf[600];
		bool sane = true;
		srand(1234);
		xdr_out_init(&base, 512, 4096);
		tcall_encode(&(struct tcall){.xid = 16,
		                             .prog = TOY,
		                             .vers = 3,
		                             .proc = 6,
		                             .cred_flavor = RPC_AUTH_SYS,
		                             .ngids = 4},
		             &base);
		for (int i = 0; i < 10000; i++) {
			size_t n;
			if (i % 3 == 0) {
				n = (size_t)(rand() % (int)sizeof(buf));
				for (size_t k = 0; k < n; k++)
					buf[k] = (uint8_t)rand();
			} else {
				n = base.len;
				memcpy(buf, base.buf, n);
				for (int k = rand() % 4; k >= 0; k--) {
					size_t at = (size_t)rand() % n;
					buf[at] =
					    (uint8_t)(i % 2 ? rand()
					                    : buf[at] ^ 0xff);
				}
				if (rand() % 4 == 0)
					n = (size_t)rand() % n;
			}
			xdr_out_init(&out, 256, 4096);
			rc = rpc_service_handle(svc, buf, n, NULL, 0, RPC_TCP,
			                        NULL, &out);
			if (rc == 0 && !treply_parse(out.buf, out.len).ok)
				sane = false;
			xdr_out_free(&out);
		}
		xdr_out_free(&base);
		CHECK(sane, "10000 random and mutated records");
	}

	rpc_service_free(svc);
	TEST_EXIT();
}
