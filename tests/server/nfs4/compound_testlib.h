/* Test helper: a server context S driven by hand-encoded NFSv4 COMPOUNDs
 * through rpc_service_handle() (AUTH_SYS uid 0, from 127.0.0.1:800), the
 * replies stepped through op by op. Shared by the COMPOUND suites; each
 * includes it once. */
#ifndef SNFS_TEST_COMPOUND_TESTLIB_H
#define SNFS_TEST_COMPOUND_TESTLIB_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/exports.h"
#include "server/nfs4/nfs4.h"
#include "server/nlm/nlm.h"
#include "server/programs.h"
#include "server/snfsd.h"
#include "stream.h"
#include "xdr/xdr.h"

static struct snfsd S;
static uint32_t next_xid = 1;
/* The connection calls arrive on (NULL: none, as for UDP). */
static struct rpc_conn *raw_conn;

/* Make S serve table t, with fixed keys and state in state_dir: 0 or
 * -errno. */
static inline int testsrv_start(struct export_table *t, const char *state_dir)
{
	pthread_mutex_init(&S.exports_lock, NULL);
	pthread_mutex_init(&S.mounts_lock, NULL);
	S.exports = t;
	for (int i = 0; i < 16; i++)
		S.fh_key[i] = (uint8_t)(i * 5 + 1);
	memcpy(S.write_verf, "VERF4444", 8);
	S.boot_time_ns = 1;
	S.cfg.state_dir = state_dir;
	S.svc = rpc_service_new(&S);
	if (!S.svc)
		return -ENOMEM;
	return programs_register(S.svc);
}

/* Undo testsrv_start and remove the test's directory base. */
static inline void testsrv_stop(const char *base)
{
	char cmd[200];

	rpc_service_free(S.svc);
	nlm_cb_shutdown(&S); /* before the state its call backs may touch */
	nfs4_server_free(S.nfs4);
	exports_release(S.exports);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		printf("# cleanup of %s failed\n", base);
}

/* ---- compound encoding ---- */

struct cbuf {
	struct xdr_out x;
	uint32_t nops;
	size_t nops_pos;
};

static inline void c_begin(struct cbuf *b, uint32_t minor)
{
	xdr_out_init(&b->x, 4096, 8u << 20);
	xdr_put_string(&b->x, "test");
	xdr_put_u32(&b->x, minor);
	b->nops_pos = b->x.len;
	xdr_put_u32(&b->x, 0);
	b->nops = 0;
}

static inline void op(struct cbuf *b, uint32_t opnum)
{
	xdr_put_u32(&b->x, opnum);
	b->nops++;
	xdr_patch_u32(&b->x, b->nops_pos, b->nops);
}

static inline void op_name(struct cbuf *b, uint32_t opnum, const char *name)
{
	op(b, opnum);
	xdr_put_string(&b->x, name);
}

static inline void op_getattr(struct cbuf *b, uint32_t w0, uint32_t w1)
{
	op(b, OP4_GETATTR);
	xdr_put_u32(&b->x, 2);
	xdr_put_u32(&b->x, w0);
	xdr_put_u32(&b->x, w1);
}

/* PUTROOTFH and LOOKUP of every component of path; returns how many
 * LOOKUPs. */
static inline uint32_t op_walk(struct cbuf *b, const char *path)
{
	char tmp[256], *save, *comp;
	uint32_t n = 0;

	op(b, OP4_PUTROOTFH);
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (comp = strtok_r(tmp, "/", &save); comp;
	     comp = strtok_r(NULL, "/", &save), n++)
		op_name(b, OP4_LOOKUP, comp);
	return n;
}

struct reply {
	struct xdr_out buf;
	struct xdr_in res; /* after the result count */
	int stat;          /* accept_stat, or -1 for no reply */
	uint32_t status;   /* COMPOUND status */
	uint32_t nres;
	uint8_t *stream; /* the sent bytes, when the reply has file parts */
};

/* Replies may take file parts, as the TCP transport's do; res then reads
 * the reply as the transport sends it (the parts' bytes in place). */
static bool allow_files;

static inline void send_raw_v(uint32_t vers, const uint8_t *args, size_t alen,
                              uint32_t proc, struct reply *rep)
{
	struct sockaddr_in peer = {.sin_family = AF_INET,
	                           .sin_port = htons(800)};
	struct xdr_out rec;
	struct xdr_in in;
	uint32_t v, vlen;

	peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	xdr_out_init(&rec, 4096, 16u << 20);
	xdr_put_u32(&rec, next_xid++);
	xdr_put_u32(&rec, 0);
	xdr_put_u32(&rec, 2);
	xdr_put_u32(&rec, NFS_PROGRAM);
	xdr_put_u32(&rec, vers);
	xdr_put_u32(&rec, proc);
	xdr_put_u32(&rec, RPC_AUTH_SYS);
	xdr_put_u32(&rec, 24);
	xdr_put_u32(&rec, 0);
	xdr_put_string(&rec, "test");
	xdr_put_u32(&rec, 0);
	xdr_put_u32(&rec, 0);
	xdr_put_u32(&rec, 0);
	xdr_put_u32(&rec, RPC_AUTH_NONE);
	xdr_put_u32(&rec, 0);
	if (alen) {
		uint8_t *p = xdr_put_reserve(&rec, alen);
		memcpy(p, args, alen);
		rec.len -= xdr_pad(alen);
	}
	xdr_out_free(&rep->buf);
	free(rep->stream);
	rep->stream = NULL;
	xdr_out_init(&rep->buf, 4096, RPC_DEFAULT_MAX_RECORD + 4);
	if (allow_files)
		xdr_out_allow_file(&rep->buf);
	rep->stat = -1;
	rep->status = 0xdead;
	rep->nres = 0;
	if (rpc_service_handle(S.svc, rec.buf, rec.len,
	                       (struct sockaddr *)&peer, sizeof(peer), RPC_TCP,
	                       raw_conn, &rep->buf) == 0) {
		if (rep->buf.nparts)
			rep->stream = reply_stream_of(&rep->buf);
		if (rep->stream)
			xdr_in_init(&in, rep->stream, xdr_out_size(&rep->buf));
		else
			xdr_in_init(&in, rep->buf.buf, rep->buf.len);
		xdr_get_u32(&in, &v);
		xdr_get_u32(&in, &v);
		xdr_get_u32(&in, &v);
		xdr_get_u32(&in, &v);
		xdr_get_u32(&in, &vlen);
		xdr_skip(&in, vlen);
		if (xdr_get_u32(&in, &v) && !in.err)
			rep->stat = (int)v;
		if (rep->stat == 0 && vers == 4 && proc == 1) {
			const uint8_t *tag;
			uint32_t tl;
			xdr_get_u32(&in, &rep->status);
			xdr_get_opaque_ref(&in, &tag, &tl, 1 << 20);
			xdr_get_u32(&in, &rep->nres);
		}
		rep->res = in;
	}
	xdr_out_free(&rec);
}

static inline void send_raw(const uint8_t *args, size_t alen, uint32_t proc,
                            struct reply *rep)
{
	send_raw_v(4, args, alen, proc, rep);
}

static inline uint32_t c_send(struct cbuf *b, struct reply *rep)
{
	send_raw(b->x.buf, b->x.len, 1, rep);
	xdr_out_free(&b->x);
	return rep->stat == 0 ? rep->status : 0xbad;
}

/* Step to the result of op number idx (0-based) by skipping earlier
 * results of known shape: used only for results whose bodies the test
 * reads in order. Returns that op's status. */
static inline uint32_t res_next(struct reply *rep, uint32_t expect_op)
{
	uint32_t opnum = 0, st = 0xbad;

	if (!xdr_get_u32(&rep->res, &opnum) || !xdr_get_u32(&rep->res, &st))
		return 0xbad;
	if (opnum != expect_op)
		return 0xbad0000 | opnum;
	return st;
}

static inline void rep_free(struct reply *rep)
{
	xdr_out_free(&rep->buf);
	free(rep->stream);
	rep->stream = NULL;
}

/* c_send without the reply: the COMPOUND's status, or 0xbad without a
 * proper reply. */
static inline uint32_t c_status(struct cbuf *b)
{
	struct reply rep = {0};
	uint32_t st = c_send(b, &rep);

	rep_free(&rep);
	return st;
}

#endif
