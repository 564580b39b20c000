/* The NFSv4.1 back channel end to end through rpc_service_handle(), with
 * connections that record what is sent on them: CREATE_SESSION and
 * BIND_CONN_TO_SESSION binding it, SEQUENCE reporting its loss
 * (SEQ4_STATUS_CB_PATH_DOWN_SESSION), OPEN's MAY_NOTIFY_LOCK, and
 * CB_NOTIFY_LOCK (RFC 8881 20.11) to a lock-owner refused a blocking
 * LOCK: its CB_COMPOUND, one call in flight per session, the answer
 * coming back as an RPC reply, BACKCHANNEL_CTL, and answers that are
 * truncated, forged or for no call. */
#include <errno.h>
#include <fcntl.h>
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
#include "server/nfs4/share.h"
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

static struct fake_conn conns[4];

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

/* A COMPOUND of c's on rwdir, then rwdir/name when name is given. */
static void cli_begin(struct cli *c, struct cbuf *b, const char *name)
{
	use(c);
	c41(b, rwdir);
	if (name)
		op_name(b, OP4_LOOKUP, name);
}

/* Send it: the COMPOUND's status, the reply dropped. */
static uint32_t cli_end(struct cli *c, struct cbuf *b)
{
	struct reply rep = {0};
	uint32_t st = c_send(b, &rep);

	rep_free(&rep);
	keep(c);
	return st;
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
	cli_begin(c, &b, name);
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

	cli_begin(c, &b, name);
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

	cli_begin(c, &b, name);
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

/* The CB_COMPOUND last sent on f, up to its second op's number. */
static bool decode_head(const struct fake_conn *f, struct cb_call *k,
                        struct xdr_in *x)
{
	uint32_t v, len;
	const uint8_t *p;

	memset(k, 0, sizeof(*k));
	xdr_in_init(x, f->last, f->last_len);
	return xdr_get_u32(x, &k->xid) && xdr_get_u32(x, &v) && v == 0 &&
	       xdr_get_u32(x, &v) && v == 2 && xdr_get_u32(x, &k->prog) &&
	       xdr_get_u32(x, &k->vers) && xdr_get_u32(x, &k->proc) &&
	       xdr_get_u32(x, &k->flavor) &&
	       xdr_get_opaque_ref(x, &p, &len, 400) && xdr_get_u32(x, &v) &&
	       xdr_get_opaque_ref(x, &p, &len, 400) &&
	       xdr_get_opaque_ref(x, &p, &len, 64) && /* tag */
	       xdr_get_u32(x, &k->minor) && xdr_get_u32(x, &v) &&
	       xdr_get_u32(x, &k->nops) && xdr_get_u32(x, &v) && v == 11 &&
	       xdr_get_fixed(x, k->sid, 16) && xdr_get_u32(x, &k->seq) &&
	       xdr_get_u32(x, &k->slot) && xdr_get_u32(x, &v) &&
	       xdr_get_bool(x, &(bool){0}) && xdr_get_u32(x, &v) && v == 0 &&
	       xdr_get_u32(x, &k->op2);
}

/* ... a CB_NOTIFY_LOCK */
static bool decode_call(const struct fake_conn *f, struct cb_call *k)
{
	struct xdr_in x;

	if (!decode_head(f, k, &x) ||
	    !xdr_get_opaque(&x, k->fh, &k->fhlen, sizeof(k->fh)) ||
	    !xdr_get_u64(&x, &k->clientid) ||
	    !xdr_get_string(&x, k->owner, sizeof(k->owner), 63))
		return false;
	return xdr_in_remaining(&x) == 0;
}

/* ... a CB_RECALL: its stateid in *sid */
static bool decode_recall(const struct fake_conn *f, struct cb_call *k,
                          struct nfs4_stateid *sid)
{
	struct xdr_in x;
	bool truncate = true;

	if (!decode_head(f, k, &x) || k->op2 != 4 ||
	    !nfs4_get_stateid(&x, sid) || !xdr_get_bool(&x, &truncate) ||
	    !xdr_get_opaque(&x, k->fh, &k->fhlen, sizeof(k->fh)))
		return false;
	return !truncate && xdr_in_remaining(&x) == 0;
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
		xdr_put_u32(&x, k->op2);
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

/* ---- read delegations (deleg.c) ---- */

enum { OPEN_DELEGATE_READ = 1, WANT_NO_DELEG = 0x400 };
enum { CLAIM_DELEG_CUR_FH = 5, RECALLABLE_STATE_REVOKED = 0x40 };

/* OPEN of name for access (share_access with its WANT bits). */
static uint32_t cli_open_r(struct cli *c, const char *owner, const char *name,
                           uint32_t access, struct open_res *r)
{
	struct open_spec o = spec41(owner, name, T_UNCHECKED4);
	uint32_t st;

	o.access = access;
	use(c);
	st = open41(&o, r);
	keep(c);
	return st;
}

static uint32_t cli_sid_op(struct cli *c, uint32_t opnum, const char *name,
                           const struct nfs4_stateid *sid, uint32_t *inner)
{
	uint32_t st;

	use(c);
	st = sid_op41(opnum, name, sid, inner);
	keep(c);
	return st;
}

/* READ (or WRITE of one byte) of name with sid. */
static uint32_t cli_io(struct cli *c, const char *name, bool write,
                       const struct nfs4_stateid *sid)
{
	struct cbuf b;

	cli_begin(c, &b, name);
	op(&b, write ? OP4_WRITE : OP4_READ);
	nfs4_put_stateid(&b.x, sid);
	xdr_put_u64(&b.x, 0);
	if (write) {
		xdr_put_u32(&b.x, 2); /* FILE_SYNC */
		xdr_put_opaque(&b.x, "x", 1);
	} else {
		xdr_put_u32(&b.x, 16);
	}
	return cli_end(c, &b);
}

/* OPEN CLAIM_DELEG_CUR_FH of name under delegation dsid (read access). */
static uint32_t cli_claim_deleg(struct cli *c, const char *owner,
                                const char *name,
                                const struct nfs4_stateid *dsid)
{
	struct cbuf b;

	cli_begin(c, &b, name);
	op(&b, OP4_OPEN);
	xdr_put_u32(&b.x, 0);
	xdr_put_u32(&b.x, 1); /* READ */
	xdr_put_u32(&b.x, 0);
	xdr_put_u64(&b.x, c->clientid);
	xdr_put_string(&b.x, owner);
	xdr_put_u32(&b.x, 0); /* NOCREATE */
	xdr_put_u32(&b.x, CLAIM_DELEG_CUR_FH);
	nfs4_put_stateid(&b.x, dsid);
	return cli_end(c, &b);
}

static uint32_t cli_remove(struct cli *c, const char *name)
{
	struct cbuf b;

	cli_begin(c, &b, NULL);
	op_name(&b, OP4_REMOVE, name);
	return cli_end(c, &b);
}

static struct nfs4_deleg_stats dstats(void)
{
	struct nfs4_deleg_stats d;

	nfs4_deleg_stats(S.nfs4, &d);
	return d;
}

/* The recall last sent on conn names dsid and the file's handle. */
static bool recalled(int conn, struct cli *c, const char *name,
                     const struct nfs4_stateid *dsid, struct cb_call *k)
{
	struct nfs4_stateid got;
	uint8_t fh[128];
	uint32_t fhlen = cli_getfh(c, name, fh);

	return decode_recall(&conns[conn], k, &got) &&
	       !memcmp(got.other, dsid->other, 12) &&
	       got.seqid == dsid->seqid && k->fhlen == fhlen &&
	       !memcmp(k->fh, fh, fhlen);
}

static struct cli C, D;

static void test_deleg_grant(struct open_res *ra)
{
	struct open_res r;

	CHECK(cli_open_r(&A, "dA", "dfile", 1, ra) == NFS4_OK &&
	          ra->deleg == OPEN_DELEGATE_READ && ra->ace_type == 0,
	      "delegations: OPEN for reading on a session that takes calls "
	      "back: a read delegation");
	CHECK(cli_open_r(&A, "dA2", "dfile", 1, &r) == NFS4_OK && r.deleg == 0,
	      "... the same client again: none more (one per file)");
	CHECK(cli_open_r(&B, "dB", "dfile2", 1 | WANT_NO_DELEG, &r) ==
	              NFS4_OK &&
	          r.deleg == 0,
	      "... WANT_NO_DELEG: none");
	CHECK(cli_open_r(&B, "dB", "dfile2", 3, &r) == NFS4_OK && r.deleg == 0,
	      "... reading and writing: none");
	CHECK(cli_new(&D, "deleg-nocb", -1, 0, NULL) == NFS4_OK &&
	          cli_open_r(&D, "dD", "dfile", 1, &r) == NFS4_OK &&
	          r.deleg == 0,
	      "... a session with no back channel: none");
	CHECK(cli_open_r(&C, "dC", "dfile2", 1, &r) == NFS4_OK && r.deleg == 0,
	      "... a file another client has open for writing: none");
	CHECK(cli_io(&A, "dfile", false, &ra->dsid) == NFS4_OK,
	      "READ with the delegation's stateid");
	CHECK(cli_io(&A, "dfile", true, &ra->dsid) == NFS4ERR_OPENMODE,
	      "WRITE with it: OPENMODE");
	CHECK(cli_sid_op(&A, OP4_CLOSE, "dfile", &ra->dsid, NULL) ==
	          NFS4ERR_BAD_STATEID,
	      "CLOSE of a delegation stateid: BAD_STATEID");
	CHECK(cli_sid_op(&B, OP4_DELEGRETURN, "dfile", &ra->dsid, NULL) ==
	          NFS4ERR_BAD_STATEID,
	      "DELEGRETURN by another client: BAD_STATEID");
}

static void test_deleg_recall(const struct open_res *ra)
{
	struct nfs4_deleg_stats d0 = dstats(), d;
	struct open_res r;
	struct cb_call k;
	int before = conns[0].sent;

	CHECK(cli_open_r(&B, "dB", "dfile", 3, &r) == NFS4ERR_DELAY &&
	          conns[0].sent == before + 1,
	      "another client's OPEN for writing: DELAY, and a call on the "
	      "holder's back channel");
	CHECK(recalled(0, &A, "dfile", &ra->dsid, &k) && k.minor == 1 &&
	          !memcmp(k.sid, A.sid, 16),
	      "... CB_RECALL of the delegation's stateid, the file's handle, "
	      "truncate false, on A's session");
	CHECK(cli_open_r(&B, "dB", "dfile", 3, &r) == NFS4ERR_DELAY &&
	          conns[0].sent == before + 1,
	      "... asked again before the return: DELAY, not recalled twice");
	answer(0, &k, NFS4_OK, NFS4_OK, 0);
	CHECK(cli_claim_deleg(&A, "dA3", "dfile", &ra->dsid) == NFS4_OK,
	      "the holder opens on the server under its delegation "
	      "(CLAIM_DELEG_CUR_FH)");
	CHECK(cli_claim_deleg(&B, "dB", "dfile", &ra->dsid) ==
	          NFS4ERR_BAD_STATEID,
	      "... CLAIM_DELEG_CUR_FH with another client's: BAD_STATEID");
	CHECK(cli_sid_op(&A, OP4_DELEGRETURN, "dfile", &ra->dsid, NULL) ==
	          NFS4_OK,
	      "DELEGRETURN");
	CHECK(cli_sid_op(&A, OP4_DELEGRETURN, "dfile", &ra->dsid, NULL) ==
	          NFS4ERR_BAD_STATEID,
	      "... again: BAD_STATEID");
	CHECK(cli_open_r(&B, "dB", "dfile", 3, &r) == NFS4_OK,
	      "the writer's OPEN goes through");
	CHECK(cli_open_r(&C, "dC2", "dfile", 1, &r) == NFS4_OK && r.deleg == 0,
	      "no delegation on a file just recalled");
	d = dstats();
	CHECK(d.recalled == d0.recalled + 1 && d.returned == d0.returned + 1 &&
	          d.held == d0.held - 1,
	      "counted: recalled, returned, one fewer held");
}

static void backdate_recalls(void)
{
	pthread_mutex_lock(&S.nfs4->lock);
	for (struct nfs4_stid *s = S.nfs4->stids; s; s = s->next)
		if (s->deleg && s->recalled)
			s->recalled -= S.nfs4->lease + 5;
	pthread_mutex_unlock(&S.nfs4->lock);
}

static void test_deleg_revoke(void)
{
	const struct nfs4_stateid anon = {0};
	struct nfs4_deleg_stats d0 = dstats(), d;
	struct open_res ra;
	struct cb_call k;
	uint32_t flags = 0, inner = 0;

	CHECK(cli_open_r(&A, "dA", "dfile3", 1, &ra) == NFS4_OK &&
	          ra.deleg == OPEN_DELEGATE_READ,
	      "revocation: A holds a delegation of a new file");
	CHECK(cli_io(&B, "dfile3", true, &anon) == NFS4ERR_DELAY &&
	          recalled(0, &A, "dfile3", &ra.dsid, &k),
	      "a WRITE with the anonymous stateid: DELAY (recalled)");
	answer(0, &k, NFS4_OK, NFS4_OK, 0);
	backdate_recalls();
	CHECK(cli_io(&B, "dfile3", true, &anon) == NFS4_OK,
	      "not returned a lease after the recall: revoked, the WRITE "
	      "goes through");
	CHECK(cli_sequence(&A, &flags) == NFS4_OK &&
	          (flags & RECALLABLE_STATE_REVOKED),
	      "SEQUENCE tells A: RECALLABLE_STATE_REVOKED");
	CHECK(cli_sid_op(&A, OP4_TEST_STATEID, NULL, &ra.dsid, &inner) ==
	              NFS4_OK &&
	          inner == NFS4ERR_DELEG_REVOKED,
	      "TEST_STATEID: DELEG_REVOKED");
	CHECK(cli_io(&A, "dfile3", false, &ra.dsid) == NFS4ERR_DELEG_REVOKED,
	      "READ with it: DELEG_REVOKED");
	CHECK(cli_sid_op(&A, OP4_DELEGRETURN, "dfile3", &ra.dsid, NULL) ==
	          NFS4ERR_DELEG_REVOKED,
	      "DELEGRETURN: DELEG_REVOKED");
	CHECK(cli_sid_op(&A, OP4_FREE_STATEID, NULL, &ra.dsid, NULL) ==
	              NFS4_OK &&
	          cli_sequence(&A, &flags) == NFS4_OK &&
	          !(flags & RECALLABLE_STATE_REVOKED),
	      "FREE_STATEID frees it; SEQUENCE no longer says so");
	d = dstats();
	CHECK(d.revoked == d0.revoked + 1, "counted: revoked");
	CHECK(cli_open_r(&A, "dA", "dfile4", 1, &ra) == NFS4_OK &&
	          ra.deleg == OPEN_DELEGATE_READ &&
	          cli_sid_op(&A, OP4_FREE_STATEID, NULL, &ra.dsid, NULL) ==
	              NFS4ERR_LOCKS_HELD,
	      "FREE_STATEID of a delegation in force: LOCKS_HELD");
	CHECK(cli_remove(&B, "dfile4") == NFS4ERR_DELAY &&
	          recalled(0, &A, "dfile4", &ra.dsid, &k),
	      "REMOVE of a delegated file by another client: DELAY, "
	      "recalled");
	answer(0, &k, NFS4_OK, NFS4_OK, 0);
	CHECK(cli_remove(&A, "dfile4") == NFS4_OK,
	      "... by the holder itself: done, no recall needed");
	CHECK(cli_sid_op(&A, OP4_DELEGRETURN, NULL, &ra.dsid, NULL) ==
	          NFS4ERR_NOFILEHANDLE,
	      "DELEGRETURN with no current fh: NOFILEHANDLE");
}

/* An NFSv3 change (nfs4_deleg_break) recalls too, and waits. */
static void test_deleg_v3(void)
{
	struct open_res ra;
	struct cb_call k;
	struct nfs4_file *f = NULL;
	struct export ex;
	struct bk_handle bh;
	int before;

	CHECK(cli_open_r(&A, "dA", "dfile5", 1, &ra) == NFS4_OK &&
	          ra.deleg == OPEN_DELEGATE_READ,
	      "v3: A holds a delegation");
	uint64_t id = 0;
	for (int i = 4; i < 12; i++)
		id = id << 8 | ra.dsid.other[i];
	pthread_mutex_lock(&S.nfs4->lock);
	for (struct nfs4_stid *s = S.nfs4->stids; s; s = s->next)
		if (s->deleg && s->id == id)
			f = s->file;
	memset(&ex, 0, sizeof(ex));
	if (f) {
		ex.fsid = f->fsid;
		bh = f->bh;
	}
	pthread_mutex_unlock(&S.nfs4->lock);
	if (!f) {
		CHECK(false, "v3: its file found");
		return;
	}
	before = conns[0].sent;
	CHECK(nfs4_deleg_break(&S, &ex, &bh) == -EAGAIN &&
	          conns[0].sent == before + 1 &&
	          recalled(0, &A, "dfile5", &ra.dsid, &k),
	      "an NFSv3 change: recalled, -EAGAIN (JUKEBOX) when not back in "
	      "time");
	answer(0, &k, NFS4_OK, NFS4_OK, 0);
	CHECK(cli_sid_op(&A, OP4_DELEGRETURN, "dfile5", &ra.dsid, NULL) ==
	              NFS4_OK &&
	          nfs4_deleg_break(&S, &ex, &bh) == 0,
	      "... returned: the change may go on");
}

/* A change beside the server: the lease on a delegated file breaks. */
static void test_deleg_local(void)
{
	struct open_res ra, rw;
	struct cb_call k;
	char path[160];
	int before = conns[0].sent, fd = -1, err = 0;

	snprintf(path, sizeof(path), "%s/dfile6", rwdir);
	CHECK(cli_open_r(&A, "dA", "dfile6", 1, &ra) == NFS4_OK &&
	          ra.deleg == OPEN_DELEGATE_READ,
	      "local: A holds a delegation");
	fd = open(path, O_WRONLY | O_NONBLOCK);
	err = errno;
	CHECK(fd < 0 && err == EWOULDBLOCK,
	      "a local open for writing is held back (the lease)");
	for (int i = 0; i < 200 && __atomic_load_n(&conns[0].sent,
	                                           __ATOMIC_ACQUIRE) == before;
	     i++)
		usleep(10000);
	CHECK(__atomic_load_n(&conns[0].sent, __ATOMIC_ACQUIRE) == before + 1 &&
	          recalled(0, &A, "dfile6", &ra.dsid, &k),
	      "... and recalls the delegation (CB_RECALL)");
	answer(0, &k, NFS4_OK, NFS4_OK, 0);
	CHECK(cli_sid_op(&A, OP4_DELEGRETURN, "dfile6", &ra.dsid, NULL) ==
	          NFS4_OK,
	      "DELEGRETURN");
	fd = open(path, O_WRONLY | O_NONBLOCK);
	CHECK(fd >= 0, "the local open for writing goes through now");
	if (fd >= 0)
		close(fd);

	CHECK(cli_open_r(&A, "dA", "dfile7", 1, &ra) == NFS4_OK &&
	          ra.deleg == OPEN_DELEGATE_READ,
	      "own: A holds a delegation");
	before = conns[0].sent;
	CHECK(cli_open_r(&A, "dA7", "dfile7", 3, &rw) == NFS4_OK &&
	          cli_io(&A, "dfile7", true, &rw.sid) == NFS4_OK,
	      "the holder opens its delegated file for writing and writes it "
	      "through snfsd: not held back (neither DELAY nor its own "
	      "lease)");
	CHECK(conns[0].sent == before + 1 &&
	          recalled(0, &A, "dfile7", &ra.dsid, &k),
	      "... its delegation is recalled all the same (without the lease "
	      "a change beside snfsd would go unseen)");
	answer(0, &k, NFS4_OK, NFS4_OK, 0);
	CHECK(cli_sid_op(&A, OP4_DELEGRETURN, "dfile7", &ra.dsid, NULL) ==
	          NFS4_OK,
	      "... DELEGRETURN");
}

static void test_delegations(void)
{
	struct open_res ra;

	conns[3].open = true;
	CHECK(cli_new(&C, "deleg-C", 3, CS_CONN_BACK_CHAN, NULL) == NFS4_OK,
	      "delegations: a third client");
	test_deleg_grant(&ra);
	test_deleg_recall(&ra);
	test_deleg_revoke();
	test_deleg_v3();
	test_deleg_local();
	use(&C);
	CHECK(destroy_session() == NFS4_OK && conns[3].holds == 0,
	      "delegations: the third client's session goes");
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
	snprintf(spec, sizeof(spec),
	         "%s:rw,insecure,no_root_squash,delegations", rwdir);
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
	test_delegations();
	test_release();
	testsrv_stop(base);
	TEST_EXIT();
}
