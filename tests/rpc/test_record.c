/* RFC 5531 section 11 record marking: rpc_record_feed and friends. */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "rpc/rpc.h"

/* Append one fragment to buf at *len. */
static void frag(uint8_t *buf, size_t *len, const uint8_t *data, uint32_t n,
                 bool last)
{
	uint32_t m = n | (last ? RPC_LAST_FRAG : 0);
	buf[(*len)++] = m >> 24;
	buf[(*len)++] = m >> 16;
	buf[(*len)++] = m >> 8;
	buf[(*len)++] = m;
	memcpy(buf + *len, data, n);
	*len += n;
}

/* Feed the whole stream in pieces of at most step bytes (0: two pieces
 * split at step2). Returns the number of records whose content equals
 * want (each record compared with want); -1 on error. */
static int feed_all(const uint8_t *s, size_t n, size_t split,
                    const uint8_t *want, size_t want_len, size_t max)
{
	struct rpc_record_reader r;
	size_t pos = 0;
	int good = 0;

	rpc_record_init(&r, max);
	while (pos < n) {
		size_t end = pos < split ? split : n;
		bool done;
		long k = rpc_record_feed(&r, s + pos, end - pos, &done);
		if (k < 0) {
			rpc_record_free(&r);
			return -1;
		}
		pos += (size_t)k;
		if (done) {
			if (r.len == want_len &&
			    (!want_len || memcmp(r.buf, want, want_len) == 0))
				good++;
			rpc_record_next(&r);
		}
	}
	rpc_record_free(&r);
	return good;
}

int main(void)
{
	uint8_t data[3000], stream[8000];
	size_t len = 0;
	bool all_ok;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);

	/* single fragment */
	frag(stream, &len, data, 100, true);
	CHECK(feed_all(stream, len, 0, data, 100, 0) == 1, "single fragment");

	/* three fragments make one record; two records back to back */
	len = 0;
	frag(stream, &len, data, 1000, false);
	frag(stream, &len, data + 1000, 1000, false);
	frag(stream, &len, data + 2000, 1000, true);
	CHECK(feed_all(stream, len, 0, data, 3000, 0) == 1, "multi-fragment");
	memcpy(stream + len, stream, len);
	CHECK(feed_all(stream, 2 * len, 0, data, 3000, 0) == 2,
	      "two records in one buffer");

	/* split at every byte boundary */
	all_ok = true;
	for (size_t s = 1; s < 2 * len; s++)
		if (feed_all(stream, 2 * len, s, data, 3000, 0) != 2)
			all_ok = false;
	CHECK(all_ok, "split at every byte boundary");

	/* byte by byte */
	{
		struct rpc_record_reader r;
		int recs = 0;
		rpc_record_init(&r, 0);
		for (size_t i = 0; i < 2 * len;) {
			bool done;
			long k = rpc_record_feed(&r, stream + i, 1, &done);
			if (k < 0)
				break;
			i += (size_t)k;
			if (done) {
				recs += r.len == 3000 &&
				        memcmp(r.buf, data, 3000) == 0;
				rpc_record_next(&r);
			}
		}
		rpc_record_free(&r);
		CHECK(recs == 2, "byte by byte");
	}

	/* a complete record stays until next(): feeding returns 0, done */
	{
		struct rpc_record_reader r;
		bool done;
		long k;
		len = 0;
		frag(stream, &len, data, 8, true);
		frag(stream, &len, data, 8, true);
		rpc_record_init(&r, 0);
		k = rpc_record_feed(&r, stream, len, &done);
		CHECK(k == 12 && done && r.len == 8, "stops after a record");
		k = rpc_record_feed(&r, stream + 12, len - 12, &done);
		CHECK(k == 0 && done, "holds the record until next");
		size_t tl;
		uint8_t *t = rpc_record_take(&r, &tl);
		CHECK(t && tl == 8 && memcmp(t, data, 8) == 0, "take");
		free(t);
		k = rpc_record_feed(&r, stream + 12, len - 12, &done);
		CHECK(k == 12 && done && r.len == 8,
		      "second record after take");
		rpc_record_free(&r);
	}

	/* oversized: one fragment too big, and fragments adding up */
	len = 0;
	frag(stream, &len, data, 1001, true);
	CHECK(feed_all(stream, len, 0, data, 1001, 1000) == -1,
	      "oversized fragment rejected");
	CHECK(feed_all(stream, len, 0, data, 1001, 1001) == 1,
	      "record of exactly max accepted");
	len = 0;
	frag(stream, &len, data, 600, false);
	frag(stream, &len, data + 600, 600, true);
	CHECK(feed_all(stream, len, 0, data, 1200, 1000) == -1,
	      "oversized multi-fragment record rejected");
	/* a huge length in the mark is rejected before any data arrives */
	{
		struct rpc_record_reader r;
		const uint8_t mark[4] = {0xff, 0xff, 0xff, 0xff};
		bool done;
		rpc_record_init(&r, 0);
		CHECK(rpc_record_feed(&r, mark, 4, &done) == -1 && r.cap == 0,
		      "2 GiB mark rejected without allocating");
		rpc_record_free(&r);
	}

	/* empty fragments are legal anywhere (regression: t_garbage's
	 * zero-length-first-fragment call was refused) */
	{
		const uint8_t empty_nonlast[8] = {0, 0, 0, 0, 0x80, 0, 0, 0};
		const uint8_t empty_last[4] = {0x80, 0, 0, 0};
		CHECK(feed_all(empty_nonlast, 8, 0, data, 0, 0) == 1,
		      "empty non-last fragment accepted");
		CHECK(feed_all(empty_last, 4, 0, data, 0, 0) == 1,
		      "empty record");
		len = 0;
		frag(stream, &len, data, 40, false);
		frag(stream, &len, data, 0, true);
		CHECK(feed_all(stream, len, 0, data, 40, 0) == 1,
		      "empty last fragment ends a record");
	}

	/* garbage: random streams never crash and never exceed max_record */
	{
		struct rpc_record_reader r;
		uint8_t g[4096];
		bool sane = true;
		srand(7);
		for (int round = 0; round < 2000; round++) {
			size_t n = (size_t)(rand() % (int)sizeof(g));
			for (size_t i = 0; i < n; i++)
				g[i] = (uint8_t)rand();
			if (round & 1)
				g[0] &= 0x80; /* plausible small marks */
			rpc_record_init(&r, 1 + (size_t)(rand() % 5000));
			for (size_t pos = 0; pos < n;) {
				bool done;
				size_t step = 1 + (size_t)(rand() % 300);
				long k;
				if (step > n - pos)
					step = n - pos;
				k = rpc_record_feed(&r, g + pos, step, &done);
				if (k < 0)
					break;
				pos += (size_t)k;
				if (r.len > r.max_record)
					sane = false;
				if (done)
					rpc_record_next(&r);
			}
			rpc_record_free(&r);
		}
		CHECK(sane, "garbage streams stay bounded");
	}
	TEST_EXIT();
}
