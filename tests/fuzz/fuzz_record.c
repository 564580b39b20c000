/* libFuzzer target for TCP record marking (RFC 5531 section 11): the
 * rpc_record_reader of src/rpc is fed a byte stream in chunks whose sizes
 * come from the input, and what it extracts is compared with a simple
 * reference parser of the same stream.
 *
 * Input: byte 0 picks max_record (top bit: the default, else a small limit
 * so the limit is actually reached), byte 1 seeds the chunk sizes and
 * whether records are taken (rpc_record_take) or dropped
 * (rpc_record_next); the rest is the stream.
 *
 * Invariants: every record equals the reference's, ends exactly where the
 * reference's ends, and is never longer than max_record; the reader fails
 * (-1) exactly when and where the reference finds a rule broken. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RECS 4096

struct model {
	size_t nrec;
	size_t start[MAX_RECS], len[MAX_RECS], end[MAX_RECS];
	uint8_t *bytes; /* records back to back */
	size_t nbytes;
	bool broken;
	size_t broken_at; /* stream offset just after the offending mark */
};

/* On stdout: the fuzz scripts close stderr (-close_fd_mask=2). */
static void fail(const char *what)
{
	printf("fuzz_record: %s\n", what);
	fflush(stdout);
	abort();
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* The reference: straight from the RFC and the limits in rpc.h. */
static void model_parse(struct model *m, const uint8_t *s, size_t n, size_t max)
{
	size_t pos = 0, cur = 0;

	m->bytes = malloc(n ? n : 1);
	if (!m->bytes)
		abort();
	while (pos + 4 <= n && m->nrec < MAX_RECS) {
		uint32_t v = be32(s + pos);
		uint32_t flen = v & ~RPC_LAST_FRAG;
		bool last = (v & RPC_LAST_FRAG) != 0;

		pos += 4;
		if (flen > max || cur > max - flen) {
			m->broken = true;
			m->broken_at = pos;
			return;
		}
		if (flen > n - pos)
			return; /* the stream ends inside this fragment */
		memcpy(m->bytes + m->nbytes + cur, s + pos, flen);
		cur += flen;
		pos += flen;
		if (last) {
			m->start[m->nrec] = m->nbytes;
			m->len[m->nrec] = cur;
			m->end[m->nrec] = pos;
			m->nrec++;
			m->nbytes += cur;
			cur = 0;
		}
	}
}

static uint32_t rnd(uint32_t *st)
{
	uint32_t x = *st;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *st = x;
}

static void check_reader(const struct rpc_record_reader *r)
{
	if (r->len > r->max_record)
		fail("buffer holds more than max_record");
	if (r->buf && r->len > r->cap)
		fail("len > cap");
	if (r->hdr_have >= 4)
		fail("header bytes overflow");
}

/* Take the complete record the reader holds and compare it with the
 * reference's record k, which must end at stream offset pos. */
static void take_record(struct rpc_record_reader *r, const struct model *m,
                        size_t k, size_t pos, bool take)
{
	const uint8_t *want;
	uint8_t *got = NULL;
	size_t len;
	bool done;

	if (k >= m->nrec)
		fail("record the reference does not have");
	if (pos != m->end[k])
		fail("record ends at the wrong offset");
	if (rpc_record_feed(r, (const uint8_t *)"", 0, &done) != 0 || !done)
		fail("a complete record does not stay complete");
	want = m->bytes + m->start[k];
	if (take) {
		got = rpc_record_take(r, &len);
		if ((len == 0) != (got == NULL))
			fail("take: NULL iff empty");
	} else {
		got = r->buf;
		len = r->len;
	}
	if (len != m->len[k] || (len && memcmp(got, want, len)))
		fail("record differs from the reference");
	if (len > r->max_record)
		fail("record over max_record");
	if (take)
		free(got);
	else
		rpc_record_next(r);
	if (r->len != 0 || r->in_frag || r->hdr_have)
		fail("reader not reset after a record");
}

static struct model model;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t chunk_max[] = {1, 2, 3, 5, 8, 64, 1000, 65536};
	struct rpc_record_reader r;
	struct model *m;
	const uint8_t *s;
	size_t n, max, pos = 0, k = 0;
	uint32_t st;
	bool broke = false;

	if (size < 2)
		return 0;
	max = data[0] & 0x80 ? 0 : 1 + (size_t)(data[0] & 0x7f) * 33;
	st = 0x9e3779b9u ^ ((uint32_t)data[1] * 0x01000193u);
	s = data + 2;
	n = size - 2;

	/* Static: zeroing a fresh one per input would cost more than the
	 * test; only the counters need resetting. */
	m = &model;
	m->nrec = m->nbytes = 0;
	m->broken = false;
	rpc_record_init(&r, max);
	model_parse(m, s, n, r.max_record);
	while (pos < n && k < MAX_RECS) {
		size_t want = 1 + rnd(&st) % chunk_max[data[1] % 8];
		size_t left = want < n - pos ? want : n - pos;
		size_t off = 0;

		while (off < left) {
			bool done;
			long used = rpc_record_feed(&r, s + pos + off,
			                            left - off, &done);

			if (used < 0) {
				/* The offending mark lies in this chunk. */
				if (!m->broken || m->broken_at <= pos ||
				    m->broken_at > pos + left || k != m->nrec)
					fail(
					    "reader failed where the reference "
					    "did not");
				broke = true;
				break;
			}
			if ((size_t)used > left - off)
				fail("consumed more than fed");
			off += (size_t)used;
			check_reader(&r);
			if (done)
				take_record(&r, m, k++, pos + off,
				            rnd(&st) & 1);
			else if (off != left)
				fail("stopped early without a record");
		}
		if (broke)
			break;
		pos += left;
	}
	if (k < MAX_RECS) {
		if (k != m->nrec)
			fail("reader found fewer records than the reference");
		if (m->broken != broke)
			fail("reference failed where the reader did not");
	}
	rpc_record_free(&r);
	free(m->bytes);
	return 0;
}
