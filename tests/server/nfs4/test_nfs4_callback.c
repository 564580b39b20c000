/* The NFSv4.1 back channel end to end through rpc_service_handle(), with
 * connections that record what is sent on them: CREATE_SESSION and
 * BIND_CONN_TO_SESSION binding it, SEQUENCE reporting its loss
 * (SEQ4_STATUS_CB_PATH_DOWN_SESSION), OPEN's MAY_NOTIFY_LOCK, and
 * CB_NOTIFY_LOCK (RFC 8881 20.11) to a lock-owner refused a blocking
 * LOCK: its CB_COMPOUND, one call in flight per session, the answer
 * coming back as an RPC reply, BACKCHANNEL_CTL, and answers that are
 * truncated, forged or for no call. */
#include <errno.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../test.h"
#include "compound_testlib.h"
#include "server/exports.h"
#include "server/nfs4/nfs4.h"
#include "server/nfs4/state_int.h"
#include "server/nlm/nlm.h"
#include "state_testlib.h"
#include "util/log.h"

static char base[64];

enum { CS_CONN_BACK_CHAN = 2, MAY_NOTIFY_LOCK = 0x20 };
enum { CDFC4_FORE_OR_BOTH = 3, CDFC4_BACK = 2, CDFS4_BACK = 2 };
enum { CDFS4_BOTH = 3, PATH_DOWN_SESSION = 0x200 };
enum { READW_LT = 3, WRITEW_LT = 4, WRITE_LT = 2 };
enum { CB_PROG = 0x40000000, CB_PROG2 = 0x40000123 };

/* ---- connections that keep what is sent on them ---- */

struct fake_conn {
	int holds;
	bool open;
	int sent;
	uint8_t last[4096];
	size_t last_len;
};

static struct fake_conn conns[3];

static void f_hold(struct rpc_conn *c)
{
	((struct fake_conn *)c)->holds++;
}

static void f_release(struct rpc_conn *c)
{
	((struct fake_conn *)c)->holds--;
}

static bool f_open(struct rpc_conn *c)
{
	return ((struct fake_conn *)c)->open;
}

static int f_send(struct rpc_conn *c, const uint8_t *msg, size_t len)
{
	struct fake_conn *f = (struct fake_conn *)c;

	if (!f->open)
		return -EPIPE;
	if (len > sizeof(f->last))
		return -EMSGSIZE;
	memcpy(f->last, msg, len);
	f->last_len = len;
	f->sent++;
	return 0;
}

static const struct nfs4_cb_io fake_io = {f_hold, f_release, f_open, f_send};

static struct rpc_conn *conn_of(int i)
{
	return (struct rpc_conn *)&conns[i];
}

/* ---- a client: its session, and the compounds' helpers ---- */

struct cli {
	uint8_t sid[16];
	uint32_t seq;
	uint64_t clientid;
	struct rpc_conn *conn;
	struct nfs4_stateid open_sid, lock_sid;
	bool has_lock_sid;
	uint32_t open_rflags;
};

static void use(struct cli *c)
{
	memcpy(sessionid, c->sid, 16);
	slot_seq = c->seq;
	raw_conn = c->conn;
}

static void keep(struct cli *c)
{
	c->seq = slot_seq;
}

static uint32_t cli_new(struct cli *c, const char *owner, int conn,
                        uint32_t flags, uint32_t *rflags)
{
	struct session_opts so = {1 << 20, 8192, flags};
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	memset(c, 0, sizeof(*c));
	c->conn = conn < 0 ? NULL : conn_of(conn);
	raw_conn = c->conn;
	st = exchange_and_session_opts(owner, &so, rflags);
	if (st)
		return st;
	memcpy(c->sid, sessionid, 16);
	c->clientid = session_clientid;
	c41(&b, NULL);
	op(&b, OP4_RECLAIM_COMPLETE);
	xdr_put_bool(&b.x, false);
	st = c_send(&b, &rep);
	rep_free(&rep);
	keep(c);
	return st;
}

static uint32_t cli_open(struct cli *c, const char *owner, const char *name)
{
	struct open_spec o = spec41(owner, name, T_UNCHECKED4);
	struct open_res r;
	uint32_t st;

	use(c);
	st = open41(&o, &r);
	keep(c);
	c->open_sid = r.sid;
	c->open_rflags = r.rflags;
	return st;
}

/* LOCK of type on [off, off + len) of name, by lock-owner "lo-<owner>". */
static uint32_t cli_lock(struct cli *c, const char *owner, const char *name,
                         uint32_t type, uint64_t off, uint64_t len)
{
	struct reply rep = {0};
	struct cbuf b;
	char lo[64];
	uint32_t st;

	snprintf(lo, sizeof(lo), "lo-%s", owner);
	use(c);
	c41(&b, rwdir);
	op_name(&b, OP4_LOOKUP, name);
	op(&b, OP4_LOCK);
	xdr_put_u32(&b.x, type);
	xdr_put_bool(&b.x, false);
	xdr_put_u64(&b.x, off);
	xdr_put_u64(&b.x, len);
	if (c->has_lock_sid) {
		xdr_put_bool(&b.x, false);
		nfs4_put_stateid(&b.x, &c->lock_sid);
		xdr_put_u32(&b.x, 0);
	} else {
		xdr_put_bool(&b.x, true);
		xdr_put_u32(&b.x, 0);
		nfs4_put_stateid(&b.x, &c->open_sid);
		xdr_put_u32(&b.x, 0);
		xdr_put_u64(&b.x, c->clientid);
		xdr_put_string(&b.x, lo);
	}
	st = c_send(&b, &rep);
	if (st == NFS4_OK) {
		skip_to_last(&rep, true);
		res_next(&rep, OP4_LOCK);
		nfs4_get_stateid(&rep.res, &c->lock_sid);
		c->has_lock_sid = true;
	}
	rep_free(&rep);
	keep(c);
	return st;
}

static uint32_t cli_unlock(struct cli *c, const char *name, uint64_t off,
                           uint64_t len)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	use(c);
	c41(&b, rwdir);
	op_name(&b, OP4_LOOKUP, name);
	op_locku(&b, 0, &c->lock_sid, off, len);
	st = c_send(&b, &rep);
	if (st == NFS4_OK) {
		skip_to_last(&rep, true);
		res_next(&rep, OP4_LOCKU);
		nfs4_get_stateid(&rep.res, &c->lock_sid);
	}
	rep_free(&rep);
	keep(c);
	return st;
}

/* SEQUENCE alone: its sr_status_flags in *flags. */
static uint32_t cli_sequence(struct cli *c, uint32_t *flags)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	use(c);
	c41(&b, NULL);
	st = c_send(&b, &rep);
	if (st == NFS4_OK) {
		res_next(&rep, OP4_SEQUENCE);
		xdr_skip(&rep.res, 16 + 4 * 4);
		xdr_get_u32(&rep.res, flags);
	}
	rep_free(&rep);
	keep(c);
	return st;
}

static uint32_t cli_bind(struct cli *c, int conn, uint32_t dir, uint32_t *res)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t st;

	use(c);
	raw_conn = conn_of(conn);
	c_begin(&b, 1);
	op(&b, OP4_BIND_CONN_TO_SESSION);
	xdr_put_fixed(&b.x, c->sid, 16);
	xdr_put_u32(&b.x, dir);
	xdr_put_bool(&b.x, false);
	st = c_send(&b, &rep);
	if (st == NFS4_OK) {
		res_next(&rep, OP4_BIND_CONN_TO_SESSION);
		xdr_skip(&rep.res, 16);
		xdr_get_u32(&rep.res, res);
	}
	rep_free(&rep);
	return st;
}

/* GETFH of rwdir/name: its length, the bytes in fh. */
static uint32_t cli_getfh(struct cli *c, const char *name, uint8_t *fh)
{
	struct reply rep = {0};
	struct cbuf b;
	uint32_t len = 0;

	use(c);
	c41(&b, rwdir);
	op_name(&b, OP4_LOOKUP, name);
	op(&b, OP4_GETFH);
	if (c_send(&b, &rep) == NFS4_OK) {
		skip_to_last(&rep, true);
		res_next(&rep, OP4_GETFH);
		if (!xdr_get_opaque(&rep.res, fh, &len, 128))
			len = 0;
	}
	rep_free(&rep);
	keep(c);
	return len;
}

/* ---- the calls back, as the client sees them ---- */

struct cb_call {
	uint32_t xid, prog, vers, proc, flavor, minor, nops;
	uint8_t sid[16];
	uint32_t seq, slot, op2;
	uint32_t fhlen;
	uint8_t fh[128];
	uint64_t clientid;
	char owner[64];
};

static bool decode_call(const struct fake_conn *f, struct cb_call *k)
{
	struct xdr_in x;
	uint32_t v, len;
	const uint8_t *p;

	memset(k, 0, sizeof(*k));
	xdr_in_init(&x, f->last, f->last_len);
	if (!xdr_get_u32(&x, &k->xid) || !xdr_get_u32(&x, &v) || v != 0 ||
	    !xdr_get_u32(&x, &v) || v != 2 || !xdr_get_u32(&x, &k->prog) ||
	    !xdr_get_u32(&x, &k->vers) || !xdr_get_u32(&x, &k->proc) ||
	    !xdr_get_u32(&x, &k->flavor) ||
	    !xdr_get_opaque_ref(&x, &p, &len, 400) || !xdr_get_u32(&x, &v) ||
	    !xdr_get_opaque_ref(&x, &p, &len, 400) ||
	    !xdr_get_opaque_ref(&x, &p, &len, 64) || /* tag */
	    !xdr_get_u32(&x, &k->minor) || !xdr_get_u32(&x, &v) ||
	    !xdr_get_u32(&x, &k->nops) || !xdr_get_u32(&x, &v) || v != 11 ||
	    !xdr_get_fixed(&x, k->sid, 16) || !xdr_get_u32(&x, &k->seq) ||
	    !xdr_get_u32(&x, &k->slot) || !xdr_get_u32(&x, &v) ||
	    !xdr_get_bool(&x, &(bool){0}) || !xdr_get_u32(&x, &v) || v != 0 ||
	    !xdr_get_u32(&x, &k->op2) ||
	    !xdr_get_opaque(&x, k->fh, &k->fhlen, sizeof(k->fh)) ||
	    !xdr_get_u64(&x, &k->clientid) ||
	    !xdr_get_string(&x, k->owner, sizeof(k->owner), 63))
		return false;
	return xdr_in_remaining(&x) == 0;
}

/* The client's answer to call k: CB_SEQUENCE's status seq_st, the
 * COMPOUND's st; cut to len bytes when len is not 0. */
static void answer(int conn, const struct cb_call *k, uint32_t seq_st,
                   uint32_t st, size_t cut)
{
	struct xdr_out x;
	struct xdr_out none;

	xdr_out_init(&x, 256, 4096);
	xdr_put_u32(&x, k->xid);
	xdr_put_u32(&x, 1); /* REPLY */
	xdr_put_u32(&x, 0); /* accepted */
	xdr_put_u32(&x, 0); /* verifier */
	xdr_put_u32(&x, 0);
	xdr_put_u32(&x, 0); /* SUCCESS */
	xdr_put_u32(&x, st);
	xdr_put_u32(&x, 0); /* tag */
	xdr_put_u32(&x, seq_st ? 1 : 2);
	xdr_put_u32(&x, 11);
	xdr_put_u32(&x, seq_st);
	if (!seq_st) {
		xdr_put_fixed(&x, k->sid, 16);
		xdr_put_u32(&x, k->seq);
		xdr_put_u32(&x, 0);
		xdr_put_u32(&x, 0);
		xdr_put_u32(&x, 0);
		xdr_put_u32(&x, 13);
		xdr_put_u32(&x, st);
	}
	xdr_out_init(&none, 64, 64);
	rpc_service_handle(S.svc, x.buf, cut ? cut : x.len, NULL, 0, RPC_TCP,
	                   conn_of(conn), &none);
	xdr_out_free(&none);
	xdr_out_free(&x);
}

/* The client's RPC layer refuses call k: MSG_DENIED, AUTH_ERROR. */
static void answer_denied(int conn, const struct cb_call *k)
{
	const uint32_t rec[] = {htonl(k->xid), htonl(1), htonl(1), htonl(1),
	                        htonl(1)};
	struct xdr_out none;

	xdr_out_init(&none, 64, 64);
	rpc_service_handle(S.svc, (const uint8_t *)rec, sizeof(rec), NULL, 0,
	                   RPC_TCP, conn_of(conn), &none);
	xdr_out_free(&none);
}

static void cb_counts(uint64_t *sent, uint64_t *ok, uint64_t *failed)
{
	nfs4_cb_stats(S.nfs4, sent, ok, failed);
}

/* ---- the checks ---- */

static struct cli A, B;

static void test_binding(void)
{
	uint32_t rflags = 0, flags = 1, res = 0;
	struct cli u;

	conns[0].open = conns[1].open = conns[2].open = true;
	CHECK(cli_new(&A, "cbA", 0, CS_CONN_BACK_CHAN, &rflags) == NFS4_OK &&
	          rflags == CS_CONN_BACK_CHAN && conns[0].holds == 1,
	      "CREATE_SESSION asking CONN_BACK_CHAN on a connection: granted, "
	      "the connection held");
	CHECK(cli_new(&u, "cbU", -1, CS_CONN_BACK_CHAN, &rflags) == NFS4_OK &&
	          rflags == 0,
	      "... without a connection (UDP): not granted");
	CHECK(cli_sequence(&u, &flags) == NFS4_OK && flags == 0,
	      "SEQUENCE of a session that has no back channel and got none: "
	      "flags 0");
	CHECK(cli_new(&B, "cbB", 1, CS_CONN_BACK_CHAN, &rflags) == NFS4_OK &&
	          rflags == CS_CONN_BACK_CHAN,
	      "a second client's session on its own connection");
	CHECK(cli_sequence(&B, &flags) == NFS4_OK && flags == 0,
	      "SEQUENCE with the back channel up: flags 0");
	conns[1].open = false;
	CHECK(cli_sequence(&B, &flags) == NFS4_OK && flags == PATH_DOWN_SESSION,
	      "its connection closed: SEQ4_STATUS_CB_PATH_DOWN_SESSION");
	CHECK(cli_bind(&B, 2, CDFC4_FORE_OR_BOTH, &res) == NFS4_OK &&
	          res == CDFS4_BOTH && conns[2].holds == 1 &&
	          conns[1].holds == 0,
	      "BIND_CONN_TO_SESSION FORE_OR_BOTH on a new connection: BOTH, "
	      "the old one let go");
	CHECK(cli_sequence(&B, &flags) == NFS4_OK && flags == 0,
	      "SEQUENCE after the rebind: flags 0 again");
	conns[1].open = true;
	CHECK(cli_bind(&B, 1, CDFC4_BACK, &res) == NFS4_OK &&
	          res == CDFS4_BACK && conns[1].holds == 1 &&
	          conns[2].holds == 0,
	      "BIND_CONN_TO_SESSION BACK: CDFS4_BACK, the channel moved");
	B.conn = conn_of(1);
}

static void test_notify_lock(void)
{
	uint64_t sent0, ok0, failed0, sent, ok, failed;
	struct cb_call k, k2;
	int before;

	CHECK(cli_open(&A, "cbA", "cbfile") == NFS4_OK &&
	          (A.open_rflags & MAY_NOTIFY_LOCK),
	      "OPEN on a session with a back channel: MAY_NOTIFY_LOCK");
	CHECK(cli_open(&B, "cbB", "cbfile") == NFS4_OK &&
	          (B.open_rflags & MAY_NOTIFY_LOCK),
	      "... the other client's OPEN too");
	CHECK(cli_lock(&A, "cbA", "cbfile", WRITE_LT, 0, 100) == NFS4_OK,
	      "A locks [0, 100)");
	cb_counts(&sent0, &ok0, &failed0);
	before = conns[1].sent;
	CHECK(cli_lock(&B, "cbB", "cbfile", WRITE_LT, 50, 10) ==
	              NFS4ERR_DENIED &&
	          cli_unlock(&A, "cbfile", 0, 100) == NFS4_OK &&
	          conns[1].sent == before,
	      "a refused non-blocking LOCK (WRITE_LT): no call back when the "
	      "bytes come free");
	CHECK(cli_lock(&A, "cbA", "cbfile", WRITE_LT, 0, 100) == NFS4_OK,
	      "A locks again");
	CHECK(cli_lock(&B, "cbB", "cbfile", WRITEW_LT, 50, 10) ==
	              NFS4ERR_DENIED &&
	          conns[1].sent == before,
	      "a blocking LOCK (WRITEW_LT) refused: nothing sent yet");
	CHECK(cli_unlock(&A, "cbfile", 0, 100) == NFS4_OK &&
	          conns[1].sent == before + 1 && decode_call(&conns[1], &k),
	      "A's LOCKU: one CB_COMPOUND on B's back channel, well formed");
	CHECK(k.prog == CB_PROG && k.vers == 1 && k.proc == 1 &&
	          k.flavor == RPC_AUTH_NONE && k.minor == 1 && k.nops == 2,
	      "... to cb_program, version 1, CB_COMPOUND, AUTH_NONE as "
	      "offered, minor version 1, two ops");
	CHECK(!memcmp(k.sid, B.sid, 16) && k.seq == 1 && k.slot == 0,
	      "... CB_SEQUENCE: B's session, seqid 1, slot 0");
	{
		uint8_t fh[128];
		uint32_t fhlen = cli_getfh(&B, "cbfile", fh);

		CHECK(k.op2 == 13 && k.clientid == B.clientid &&
		          !strcmp(k.owner, "lo-cbB") && fhlen > 0 &&
		          k.fhlen == fhlen && !memcmp(k.fh, fh, fhlen),
		      "... CB_NOTIFY_LOCK: B's clientid and lock-owner, the "
		      "file's handle (as GETFH gives it)");
	}
	cb_counts(&sent, &ok, &failed);
	CHECK(sent == sent0 + 1 && ok == ok0, "counted sent, not answered");

	/* a second notice waits for the answer to the first */
	CHECK(cli_lock(&A, "cbA", "cbfile", WRITE_LT, 0, 100) == NFS4_OK &&
	          cli_lock(&B, "cbB", "cbfile", READW_LT, 0, 1) ==
	              NFS4ERR_DENIED &&
	          cli_unlock(&A, "cbfile", 0, 100) == NFS4_OK &&
	          conns[1].sent == before + 1,
	      "a second notice while the first is unanswered: it waits");
	answer(1, &k, NFS4_OK, NFS4_OK, 0);
	cb_counts(&sent, &ok, &failed);
	CHECK(ok == ok0 + 1 && conns[1].sent == before + 2 &&
	          decode_call(&conns[1], &k2) && k2.seq == 2 && k2.xid != k.xid,
	      "the answer (a REPLY on the connection) counts OK and sends "
	      "the next call, seqid 2");
	answer(1, &k, NFS4_OK, NFS4_OK, 0);
	cb_counts(&sent, &ok, &failed);
	CHECK(ok == ok0 + 1 && conns[1].sent == before + 2,
	      "a second answer to the same xid: dropped");
	answer(0, &k2, NFS4_OK, NFS4_OK, 0);
	cb_counts(&sent, &ok, &failed);
	CHECK(ok == ok0 + 1,
	      "an answer on another connection than the call's: dropped");
	for (size_t cut = 28; cut < 60; cut += 4)
		answer(1, &k2, NFS4_OK, NFS4_OK, cut);
	cb_counts(&sent, &ok, &failed);
	CHECK(ok == ok0 + 1 && failed == failed0 + 1,
	      "an answer cut short after its RPC header: counted failed, once "
	      "(the call ran: the next seqid moves on)");

	/* BACKCHANNEL_CTL: another program, AUTH_SYS */
	{
		struct reply rep = {0};
		struct cbuf b;

		use(&B);
		c41(&b, NULL);
		op(&b, OP4_BACKCHANNEL_CTL);
		xdr_put_u32(&b.x, CB_PROG2);
		xdr_put_u32(&b.x, 1);
		xdr_put_u32(&b.x, RPC_AUTH_SYS);
		xdr_put_u32(&b.x, 7);
		xdr_put_string(&b.x, "client");
		xdr_put_u32(&b.x, 0);
		xdr_put_u32(&b.x, 0);
		xdr_put_u32(&b.x, 0);
		CHECK(c_send(&b, &rep) == NFS4_OK,
		      "BACKCHANNEL_CTL with a new program and AUTH_SYS: OK");
		rep_free(&rep);
		keep(&B);
		c41(&b, NULL);
		op(&b, OP4_BACKCHANNEL_CTL);
		xdr_put_u32(&b.x, CB_PROG2);
		xdr_put_u32(&b.x, 1);
		xdr_put_u32(&b.x, 77);
		CHECK(c_send(&b, &rep) == NFS4ERR_BADXDR,
		      "BACKCHANNEL_CTL with an unknown flavor: BADXDR");
		rep_free(&rep);
		keep(&B);
	}
	CHECK(cli_lock(&A, "cbA", "cbfile", WRITE_LT, 0, 100) == NFS4_OK &&
	          cli_lock(&B, "cbB", "cbfile", WRITEW_LT, 0, 1) ==
	              NFS4ERR_DENIED &&
	          cli_unlock(&A, "cbfile", 0, 100) == NFS4_OK &&
	          decode_call(&conns[1], &k) && k.prog == CB_PROG2 &&
	          k.flavor == RPC_AUTH_SYS && k.seq == 3,
	      "the next call goes to the new program with AUTH_SYS, seqid 3");
	answer(1, &k, NFS4ERR_SEQ_MISORDERED, NFS4ERR_SEQ_MISORDERED, 0);
	cb_counts(&sent, &ok, &failed);
	CHECK(failed == failed0 + 2, "an answer with an error: failed");

	/* a client that had taken a seqid: the call goes with the next */
	before = conns[1].sent;
	CHECK(cli_lock(&A, "cbA", "cbfile", WRITE_LT, 0, 100) == NFS4_OK &&
	          cli_lock(&B, "cbB", "cbfile", WRITEW_LT, 0, 1) ==
	              NFS4ERR_DENIED &&
	          cli_unlock(&A, "cbfile", 0, 100) == NFS4_OK &&
	          decode_call(&conns[1], &k),
	      "another notice");
	answer(1, &k, NFS4ERR_RETRY_UNCACHED_REP, NFS4ERR_RETRY_UNCACHED_REP,
	       0);
	CHECK(conns[1].sent == before + 2 && decode_call(&conns[1], &k2) &&
	          k2.seq == k.seq + 1 && k2.op2 == 13 &&
	          !strcmp(k2.owner, "lo-cbB"),
	      "answered RETRY_UNCACHED_REP: the same notice again, next "
	      "seqid");
	answer(1, &k2, NFS4_OK, NFS4_OK, 0);
	cb_counts(&sent, &ok, &failed);
	CHECK(ok == ok0 + 2 && failed == failed0 + 2, "... then answered OK");

	/* refused by the client's RPC layer: the slot was not used */
	CHECK(cli_lock(&A, "cbA", "cbfile", WRITE_LT, 0, 100) == NFS4_OK &&
	          cli_lock(&B, "cbB", "cbfile", WRITEW_LT, 0, 1) ==
	              NFS4ERR_DENIED &&
	          cli_unlock(&A, "cbfile", 0, 100) == NFS4_OK &&
	          decode_call(&conns[1], &k),
	      "a notice the client's RPC layer refuses (AUTH_ERROR)");
	answer_denied(1, &k);
	cb_counts(&sent, &ok, &failed);
	CHECK(failed == failed0 + 3 &&
	          cli_lock(&A, "cbA", "cbfile", WRITE_LT, 0, 100) == NFS4_OK &&
	          cli_lock(&B, "cbB", "cbfile", WRITEW_LT, 0, 1) ==
	              NFS4ERR_DENIED &&
	          cli_unlock(&A, "cbfile", 0, 100) == NFS4_OK &&
	          decode_call(&conns[1], &k2) && k2.seq == k.seq,
	      "... counted failed; the next call uses the same seqid");
	answer(1, &k2, NFS4_OK, NFS4_OK, 0);

	/* the connection goes with a call in flight */
	CHECK(cli_lock(&A, "cbA", "cbfile", WRITE_LT, 0, 100) == NFS4_OK &&
	          cli_lock(&B, "cbB", "cbfile", WRITEW_LT, 0, 1) ==
	              NFS4ERR_DENIED &&
	          cli_unlock(&A, "cbfile", 0, 100) == NFS4_OK &&
	          decode_call(&conns[1], &k),
	      "a notice in flight");
	conns[1].open = false;
	before = conns[2].sent;
	{
		uint32_t res = 0;
		CHECK(cli_bind(&B, 2, CDFC4_FORE_OR_BOTH, &res) == NFS4_OK &&
		          res == CDFS4_BOTH,
		      "its connection closed, the client binds another");
	}
	B.conn = conn_of(2);
	CHECK(conns[2].sent == before + 1 && decode_call(&conns[2], &k2) &&
	          k2.seq == k.seq && k2.xid != k.xid,
	      "the call goes again on the new connection, same seqid");
	answer(2, &k2, NFS4_OK, NFS4_OK, 0);
	cb_counts(&sent, &ok, &failed);
	CHECK(ok == ok0 + 4, "... and is answered there");
	conns[1].open = true;
}

static void test_release(void)
{
	use(&B);
	CHECK(destroy_session() == NFS4_OK && conns[1].holds == 0 &&
	          conns[2].holds == 0,
	      "DESTROY_SESSION: its back channel's connection let go");
	use(&A);
	CHECK(destroy_session() == NFS4_OK && conns[0].holds == 0 &&
	          conns[2].holds == 0,
	      "every hold taken was let go");
}

static int setup(void)
{
	const char *specs[1];
	char spec[160], err[256];
	struct export_table *t;
	int rc;

	snprintf(base, sizeof(base), "/tmp/snfs-nfs4cb-XXXXXX");
	if (!mkdtemp(base))
		return -errno;
	snprintf(rwdir, sizeof(rwdir), "%s/rw", base);
	mkdir(rwdir, 0755);
	snprintf(spec, sizeof(spec), "%s:rw,insecure,no_root_squash", rwdir);
	specs[0] = spec;
	rc = exports_load(NULL, specs, 1, &t, err, sizeof(err));
	if (rc) {
		printf("# %s\n", err);
		return rc;
	}
	rc = testsrv_start(t, NULL);
	if (rc)
		return rc;
	rpc_service_on_reply(S.svc, nfs4_cb_on_reply, &S);
	nfs4_cb_io = &fake_io;
	return 0;
}

int main(void)
{
	int rc;

	log_set_level(LOG_ERR);
	rc = setup();
	CHECK(rc == 0, "setup: exports and service");
	if (rc)
		TEST_EXIT();
	test_binding();
	test_notify_lock();
	test_release();
	testsrv_stop(base);
	TEST_EXIT();
}
