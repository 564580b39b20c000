/* libFuzzer target for the NFSv4 COMPOUND decoder and dispatcher
 * (src/server/nfs4/compound.c and the per-operation decoders behind it).
 *
 * Input: byte 0, then a COMPOUND4args (tag, minorversion, argarray).
 *   - byte 0 & 3: the minor version written over the input's own (0, 1,
 *     2), or 3: keep the input's (so MINOR_VERS_MISMATCH is reachable);
 *   - (byte 0 >> 2) & 3: the caller, AUTH_SYS root, uid 1000, nobody, or
 *     AUTH_NONE.
 * The harness puts a valid RPC call header (NFS program, version 4,
 * COMPOUND) in front, so mutations land in the op decoders; file handle
 * placeholders (fuzz_srv.h) become real handles.
 *
 * Session placeholder: a 4.1 session is needed before OPEN, READ, WRITE,
 * LOCK... can run, and EXCHANGE_ID + CREATE_SESSION cannot be part of one
 * input that is replayed thousands of times. So the harness establishes one
 * client and session itself (once per process, again whenever the server
 * says it is gone) and replaces any 16 bytes at a 4-byte aligned offset
 * that start with "SNFS" by that session's id. When such a sessionid is
 * SEQUENCE's (the word before it is OP_SEQUENCE) and its sequenceid is 0,
 * the sequenceid becomes the slot's next one, so the seed passes SEQUENCE
 * every time; any other sequenceid is kept (replays, misordering).
 * FUZZ_NFS4_SESSION=0 turns this off. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_srv.h"
#include "server/nfs4/nfs4.h"
#include "server/snfsd.h"
#include "xdr/xdr.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SES_MAGIC "SNFS"
#define HARNESS_SLOTS 8

static uint32_t xid;
static bool sessions_on = true;
static struct {
	bool up;
	uint8_t id[NFS4_SESSIONID_SIZE];
	uint32_t slot_seq[HARNESS_SLOTS]; /* last sequenceid used per slot */
	uint32_t verifier;                /* new client instance each time */
} ses;

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put_header(struct xdr_out *r, uint32_t user)
{
	static const uint32_t uids[] = {0, 1000, 65534};
	static const uint32_t gids[] = {0, 1, 100};

	xdr_put_u32(r, ++xid & 0x7fffffffu);
	xdr_put_u32(r, 0); /* CALL */
	xdr_put_u32(r, 2); /* RPC version */
	xdr_put_u32(r, NFS_PROGRAM);
	xdr_put_u32(r, 4);
	xdr_put_u32(r, 1); /* COMPOUND */
	if (user == 3) {
		xdr_put_u32(r, 0); /* AUTH_NONE */
		xdr_put_u32(r, 0);
	} else {
		xdr_put_u32(r, 1);  /* AUTH_SYS */
		xdr_put_u32(r, 36); /* stamp, "fuzz", uid, gid, 3 gids */
		xdr_put_u32(r, 0);
		xdr_put_string(r, "fuzz");
		xdr_put_u32(r, uids[user]);
		xdr_put_u32(r, uids[user]);
		xdr_put_u32(r, 3);
		for (int i = 0; i < 3; i++)
			xdr_put_u32(r, gids[i]);
	}
	xdr_put_u32(r, 0); /* verifier AUTH_NONE */
	xdr_put_u32(r, 0);
}

/* The COMPOUND4res of an accepted reply: x is left at the status. */
static bool reply_body(const uint8_t *rep, size_t len, struct xdr_in *x)
{
	uint32_t v[3], vlen, acc;

	xdr_in_init(x, rep, len);
	return xdr_get_u32(x, &v[0]) && xdr_get_u32(x, &v[1]) && v[1] == 1 &&
	       xdr_get_u32(x, &v[2]) && v[2] == 0 && xdr_get_u32(x, &v[0]) &&
	       xdr_get_u32(x, &vlen) && xdr_skip(x, vlen + xdr_pad(vlen)) &&
	       xdr_get_u32(x, &acc) && acc == 0;
}

/* Status, tag and result count of a COMPOUND reply; x left at the first
 * result. Aborts when the header is malformed: a reply of ours. */
static bool compound_head(struct xdr_in *x, uint32_t *status, uint32_t *nres)
{
	const uint8_t *tag;
	uint32_t taglen;

	return xdr_get_u32(x, status) &&
	       xdr_get_opaque_ref(x, &tag, &taglen, NFS4_TAG_MAX) &&
	       xdr_get_u32(x, nres);
}

static void fail(const char *what)
{
	printf("fuzz_nfs4_compound: %s\n", what);
	fflush(stdout);
	abort();
}

/* One harness-made COMPOUND (4.1, root): the reply, or NULL. */
static uint8_t *harness_call(const struct xdr_out *ops, uint32_t nops,
                             size_t *rlen)
{
	struct xdr_out rec;
	uint8_t *rep;

	if (xdr_out_init(&rec, 512, 65536))
		abort();
	put_header(&rec, 0);
	xdr_put_opaque(&rec, "fuzz", 4);
	xdr_put_u32(&rec, 1);
	xdr_put_u32(&rec, nops);
	xdr_put_fixed(&rec, ops->buf, ops->len);
	fuzz_srv_call_reply(rec.buf, rec.len, RPC_TCP, &rep, rlen);
	xdr_out_free(&rec);
	return rep;
}

static void put_channel_attrs(struct xdr_out *o)
{
	xdr_put_u32(o, 0);       /* headerpadsize */
	xdr_put_u32(o, 1 << 20); /* maxrequestsize */
	xdr_put_u32(o, 1 << 20); /* maxresponsesize */
	xdr_put_u32(o, 8192);    /* maxresponsesize_cached */
	xdr_put_u32(o, 16);      /* maxoperations */
	xdr_put_u32(o, HARNESS_SLOTS);
	xdr_put_u32(o, 0); /* rdma_ird<1> */
}

/* EXCHANGE_ID: the clientid and the CREATE_SESSION sequence to use. */
static bool exchange_id(uint64_t *clid, uint32_t *csseq)
{
	struct xdr_out o;
	struct xdr_in x;
	uint32_t st, n, op, opst;
	size_t rlen;
	uint8_t *rep;
	bool ok;

	if (xdr_out_init(&o, 256, 4096))
		abort();
	xdr_put_u32(&o, OP4_EXCHANGE_ID);
	xdr_put_u32(&o, 0x66757a7a); /* verifier "fuzz" + instance */
	xdr_put_u32(&o, ++ses.verifier);
	xdr_put_opaque(&o, "snfs-fuzz-harness", 17);
	xdr_put_u32(&o, 0); /* flags */
	xdr_put_u32(&o, 0); /* SP4_NONE */
	xdr_put_u32(&o, 0); /* no impl id */
	rep = harness_call(&o, 1, &rlen);
	ok = reply_body(rep, rlen, &x) && compound_head(&x, &st, &n) &&
	     st == NFS4_OK && xdr_get_u32(&x, &op) && xdr_get_u32(&x, &opst) &&
	     opst == NFS4_OK && xdr_get_u64(&x, clid) && xdr_get_u32(&x, csseq);
	free(rep);
	xdr_out_free(&o);
	return ok;
}

static bool create_session(uint64_t clid, uint32_t csseq)
{
	struct xdr_out o;
	struct xdr_in x;
	uint32_t st, n, op, opst;
	size_t rlen;
	uint8_t *rep;
	bool ok;

	if (xdr_out_init(&o, 256, 4096))
		abort();
	xdr_put_u32(&o, OP4_CREATE_SESSION);
	xdr_put_u64(&o, clid);
	xdr_put_u32(&o, csseq);
	xdr_put_u32(&o, 0); /* flags: no persist, no back channel */
	put_channel_attrs(&o);
	put_channel_attrs(&o);
	xdr_put_u32(&o, 0x40000000); /* cb_program */
	xdr_put_u32(&o, 1);          /* sec_parms: AUTH_NONE */
	xdr_put_u32(&o, 0);
	rep = harness_call(&o, 1, &rlen);
	ok = reply_body(rep, rlen, &x) && compound_head(&x, &st, &n) &&
	     st == NFS4_OK && xdr_get_u32(&x, &op) && xdr_get_u32(&x, &opst) &&
	     opst == NFS4_OK && xdr_get_fixed(&x, ses.id, sizeof(ses.id));
	free(rep);
	xdr_out_free(&o);
	return ok;
}

/* SEQUENCE on slot 0, then op (RECLAIM_COMPLETE so that the client may
 * OPEN right away) or nothing (a probe). True when it went through. */
static bool sequence_call(bool reclaim)
{
	struct xdr_out o;
	struct xdr_in x;
	uint32_t st, n;
	size_t rlen;
	uint8_t *rep;
	bool ok;

	if (xdr_out_init(&o, 256, 4096))
		abort();
	xdr_put_u32(&o, OP4_SEQUENCE);
	xdr_put_fixed(&o, ses.id, sizeof(ses.id));
	xdr_put_u32(&o, ++ses.slot_seq[0]);
	xdr_put_u32(&o, 0); /* slot */
	xdr_put_u32(&o, 0); /* highest slot */
	xdr_put_u32(&o, 0); /* cachethis */
	if (reclaim) {
		xdr_put_u32(&o, OP4_RECLAIM_COMPLETE);
		xdr_put_u32(&o, 0); /* rca_one_fs */
	}
	rep = harness_call(&o, reclaim ? 2 : 1, &rlen);
	ok = reply_body(rep, rlen, &x) && compound_head(&x, &st, &n) &&
	     st == NFS4_OK;
	free(rep);
	xdr_out_free(&o);
	return ok;
}

static void session_establish(void)
{
	uint64_t clid;
	uint32_t csseq;

	memset(ses.slot_seq, 0, sizeof(ses.slot_seq));
	ses.up = exchange_id(&clid, &csseq) && create_session(clid, csseq) &&
	         sequence_call(true);
	if (!ses.up)
		fail("could not set up the harness's 4.1 session");
}

static bool is_session_placeholder(const uint8_t *p, size_t left)
{
	return left >= NFS4_SESSIONID_SIZE && !memcmp(p, SES_MAGIC, 4);
}

/* Replace session placeholders in the call record (in place; the
 * sessionid has a fixed size). Returns true when there was one. */
static bool substitute_sessions(uint8_t *rec, size_t len, size_t args)
{
	bool found = false;

	for (size_t i = args; i + NFS4_SESSIONID_SIZE <= len; i += 4) {
		if (!is_session_placeholder(rec + i, len - i))
			continue;
		if (!found && !ses.up)
			session_establish();
		found = true;
		memcpy(rec + i, ses.id, sizeof(ses.id));
		/* SEQUENCE4args: sessionid, sequenceid, slotid, ... */
		if (i >= args + 4 && be32(rec + i - 4) == OP4_SEQUENCE &&
		    i + NFS4_SESSIONID_SIZE + 8 <= len &&
		    be32(rec + i + NFS4_SESSIONID_SIZE) == 0) {
			uint32_t slot = be32(rec + i + NFS4_SESSIONID_SIZE + 4);
			if (slot < HARNESS_SLOTS)
				put_be32(rec + i + NFS4_SESSIONID_SIZE,
				         ses.slot_seq[slot] + 1);
		}
		i += NFS4_SESSIONID_SIZE - 4;
	}
	return found;
}

/* Might this call have ended the session (DESTROY_SESSION or
 * DESTROY_CLIENTID anywhere in it)? Then the harness probes it. */
static bool may_destroy(const uint8_t *rec, size_t len, size_t args)
{
	for (size_t i = args; i + 4 <= len; i += 4) {
		uint32_t w = be32(rec + i);
		if (w == OP4_DESTROY_SESSION || w == OP4_DESTROY_CLIENTID)
			return true;
	}
	return false;
}

/* Check the COMPOUND4res header and learn from a first SEQUENCE result:
 * the slot's sequenceid moved on, or the session is gone. */
static void check_compound(const uint8_t *rep, size_t rlen, bool placeholder)
{
	struct xdr_in x;
	uint32_t st, nres, op, opst, seq, slot;
	uint8_t id[NFS4_SESSIONID_SIZE];

	if (!reply_body(rep, rlen, &x))
		return; /* GARBAGE_ARGS, auth errors: fuzz_srv checked them */
	if (!compound_head(&x, &st, &nres))
		fail("COMPOUND4res header does not decode");
	if (nres > NFS4_MAX_OPS)
		fail("more results than operations allowed");
	if (nres == 0 || !xdr_get_u32(&x, &op) || !xdr_get_u32(&x, &opst)) {
		if (nres != 0)
			fail("result count promises more than there is");
		return;
	}
	if (!placeholder || op != OP4_SEQUENCE)
		return;
	if (opst == NFS4ERR_BADSESSION || opst == NFS4ERR_DEADSESSION ||
	    opst == NFS4ERR_STALE_CLIENTID || opst == NFS4ERR_EXPIRED) {
		ses.up = false;
		return;
	}
	if (opst == NFS4_OK && xdr_get_fixed(&x, id, sizeof(id)) &&
	    !memcmp(id, ses.id, sizeof(id)) && xdr_get_u32(&x, &seq) &&
	    xdr_get_u32(&x, &slot) && slot < HARNESS_SLOTS)
		ses.slot_seq[slot] = seq;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *e = getenv("FUZZ_NFS4_SESSION");

	(void)argc;
	(void)argv;
	sessions_on = !e || strcmp(e, "0");
	fuzz_srv_init();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xdr_out rec;
	uint32_t minor, user;
	size_t args, taglen;
	uint8_t *rep = NULL;
	size_t rlen = 0;
	bool ph = false;

	if (size < 1)
		return 0;
	minor = data[0] & 3;
	user = (data[0] >> 2) & 3;
	if (xdr_out_init(&rec, 4096, 128 + size))
		abort();
	put_header(&rec, user);
	args = rec.len;
	if (size > 1 && !xdr_out_ensure(&rec, size - 1))
		abort();
	memcpy(rec.buf + rec.len, data + 1, size - 1);
	rec.len += size - 1;
	/* The minor version follows the tag. */
	if (minor < 3 && rec.len >= args + 4) {
		taglen = be32(rec.buf + args);
		if (taglen <= NFS4_TAG_MAX &&
		    args + 8 + taglen + xdr_pad(taglen) <= rec.len)
			put_be32(rec.buf + args + 4 + taglen + xdr_pad(taglen),
			         minor);
	}
	if (sessions_on)
		ph = substitute_sessions(rec.buf, rec.len, args);
	fuzz_srv_call_reply(rec.buf, rec.len, RPC_TCP, &rep, &rlen);
	check_compound(rep, rlen, ph);
	if (ph && ses.up && may_destroy(rec.buf, rec.len, args) &&
	    !sequence_call(false))
		ses.up = false;
	free(rep);
	xdr_out_free(&rec);
	return 0;
}
