/* XDR cursors: round trips, padding, bounds, truncated and garbage input. */
#include <stdint.h>
#include <string.h>

#include "test.h"
#include "xdr/xdr.h"

static void test_round_trip(void)
{
	struct xdr_out o;
	struct xdr_in in;
	uint32_t u, len;
	uint64_t v;
	int32_t i;
	bool b;
	char s[16];
	uint8_t fixed[3], op[8];
	const uint8_t *ref;

	CHECK(xdr_out_init(&o, 0, 1 << 20) == 0, "out init");
	CHECK(((uintptr_t)o.buf & 4095) == 0, "out buffer page-aligned");
	xdr_put_u32(&o, 0xdeadbeef);
	xdr_put_i32(&o, -5);
	xdr_put_u64(&o, 0x0102030405060708ull);
	xdr_put_bool(&o, true);
	xdr_put_fixed(&o, "abc", 3);
	xdr_put_opaque(&o, "hello", 5);
	xdr_put_string(&o, "xyz");
	CHECK(!o.err && o.len == 4 + 4 + 8 + 4 + 4 + 12 + 8, "encoded length with padding");
	CHECK(o.buf[19] == 1 && o.buf[23] == 0, "fixed opaque zero padded");

	xdr_in_init(&in, o.buf, o.len);
	CHECK(xdr_get_u32(&in, &u) && u == 0xdeadbeef, "u32");
	CHECK(xdr_get_i32(&in, &i) && i == -5, "i32");
	CHECK(xdr_get_u64(&in, &v) && v == 0x0102030405060708ull, "u64");
	CHECK(xdr_get_bool(&in, &b) && b, "bool");
	CHECK(xdr_get_fixed(&in, fixed, 3) && !memcmp(fixed, "abc", 3), "fixed");
	CHECK(xdr_get_opaque(&in, op, &len, 8) && len == 5 && !memcmp(op, "hello", 5), "opaque");
	CHECK(xdr_get_string(&in, s, sizeof(s), 15) && !strcmp(s, "xyz"), "string");
	CHECK(xdr_in_remaining(&in) == 0 && !in.err, "all consumed");
	CHECK(!xdr_get_u32(&in, &u) && in.err, "read past end fails");
	CHECK(!xdr_get_opaque_ref(&in, &ref, &len, 8), "error is sticky");
	xdr_out_free(&o);
}

static void test_bounds(void)
{
	/* length 5 > max 4 */
	static const uint8_t big[] = {0, 0, 0, 5, 'a', 'b', 'c', 'd', 'e', 0, 0, 0};
	/* length claims 0xffffffff */
	static const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
	/* a string holding a NUL */
	static const uint8_t nul[] = {0, 0, 0, 3, 'a', 0, 'b', 0};
	static const uint8_t badbool[] = {0, 0, 0, 2};
	struct xdr_in in;
	const uint8_t *p;
	uint32_t len;
	char s[300];
	bool b;

	xdr_in_init(&in, big, sizeof(big));
	CHECK(!xdr_get_opaque_ref(&in, &p, &len, 4), "opaque over its bound refused");
	xdr_in_init(&in, big, sizeof(big));
	CHECK(xdr_get_opaque_ref(&in, &p, &len, 5) && len == 5 && in.pos == 12,
	      "opaque at its bound accepted, padding skipped");
	xdr_in_init(&in, huge, sizeof(huge));
	CHECK(!xdr_get_opaque_ref(&in, &p, &len, UINT32_MAX), "length past the buffer refused");
	xdr_in_init(&in, huge, sizeof(huge));
	CHECK(!xdr_skip(&in, SIZE_MAX), "skip of SIZE_MAX refused without overflow");
	xdr_in_init(&in, nul, sizeof(nul));
	CHECK(!xdr_get_string(&in, s, sizeof(s), 255), "string with NUL refused");
	xdr_in_init(&in, big, sizeof(big));
	CHECK(!xdr_get_string(&in, s, 4, 255), "string bound larger than buffer refused");
	xdr_in_init(&in, badbool, sizeof(badbool));
	CHECK(!xdr_get_bool(&in, &b), "bool other than 0/1 refused");
	/* missing padding: opaque of 3 bytes with only 3 bytes after it */
	xdr_in_init(&in, (const uint8_t[]){0, 0, 0, 3, 'a', 'b', 'c'}, 7);
	CHECK(!xdr_get_opaque_ref(&in, &p, &len, 8), "opaque without its padding refused");
}

static void test_truncations(void)
{
	struct xdr_out o;
	struct xdr_in in;
	uint32_t u, len;
	uint64_t v;
	const uint8_t *p;
	char s[64];
	int bad = 0;

	xdr_out_init(&o, 0, 4096);
	xdr_put_u32(&o, 7);
	xdr_put_u64(&o, 9);
	xdr_put_opaque(&o, "0123456789", 10);
	xdr_put_string(&o, "name");
	for (size_t cut = 0; cut < o.len; cut++) {
		bool all;
		xdr_in_init(&in, o.buf, cut);
		all = xdr_get_u32(&in, &u) && xdr_get_u64(&in, &v) &&
		      xdr_get_opaque_ref(&in, &p, &len, 64) &&
		      xdr_get_string(&in, s, sizeof(s), 63);
		if (all || !in.err || in.pos > cut)
			bad++;
	}
	CHECK(bad == 0, "every truncation fails cleanly, never reads past the end");
	xdr_out_free(&o);
}

static void test_out_limit(void)
{
	struct xdr_out o;
	uint8_t *p;
	int i;

	xdr_out_init(&o, 256, 1024);
	for (i = 0; i < 256; i++)
		if (!xdr_put_u32(&o, (uint32_t)i))
			break;
	CHECK(i == 256 && o.len == 1024 && !o.err, "fills exactly to the limit, growing aligned");
	CHECK(((uintptr_t)o.buf & 4095) == 0, "grown buffer still page-aligned");
	CHECK(!xdr_put_u32(&o, 1) && o.err, "past the limit fails");
	xdr_out_free(&o);

	xdr_out_init(&o, 0, 1 << 20);
	CHECK(xdr_put_reserve(&o, SIZE_MAX - 1) == NULL && o.err, "huge reserve refused without overflow");
	xdr_out_free(&o);

	xdr_out_init(&o, 0, 1 << 20);
	xdr_put_u32(&o, 0);
	p = xdr_put_reserve(&o, 5);
	CHECK(p && o.len == 12 && o.buf[9] == 0 && o.buf[11] == 0, "reserve pads with zeros");
	xdr_patch_u32(&o, 0, 0x11223344);
	CHECK(o.buf[0] == 0x11 && o.buf[3] == 0x44, "patch u32");
	xdr_patch_u32(&o, 10, 1); /* would run past the end: ignored */
	CHECK(o.len == 12, "patch past the end ignored");
	xdr_out_truncate(&o, 4);
	CHECK(o.len == 4, "truncate");
	xdr_out_free(&o);
}

static void test_garbage(void)
{
	uint8_t buf[64];
	uint32_t seed = 12345, len;
	int crashes_would_show_under_asan = 0;

	for (int round = 0; round < 20000; round++) {
		struct xdr_in in;
		const uint8_t *p;
		char s[32];
		uint64_t v;
		size_t n;

		for (size_t i = 0; i < sizeof(buf); i++) {
			seed = seed * 1103515245 + 12345;
			buf[i] = (uint8_t)(seed >> 16);
		}
		n = (seed >> 8) % sizeof(buf);
		xdr_in_init(&in, buf, n);
		while (!in.err) {
			switch ((seed = seed * 1103515245 + 12345) >> 28 & 3) {
			case 0: xdr_get_opaque_ref(&in, &p, &len, 40); break;
			case 1: xdr_get_string(&in, s, sizeof(s), 31); break;
			case 2: xdr_get_u64(&in, &v); break;
			default: xdr_skip(&in, (seed >> 4) & 15); break;
			}
			if (in.pos > n)
				crashes_would_show_under_asan++;
		}
	}
	CHECK(crashes_would_show_under_asan == 0, "20,000 garbage inputs stay within bounds");
}

int main(void)
{
	test_round_trip();
	test_bounds();
	test_truncations();
	test_out_limit();
	test_garbage();
	TEST_EXIT();
}
