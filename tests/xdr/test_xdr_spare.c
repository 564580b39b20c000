/* Large reply buffers are reused per thread (xdr.c's spare block): many
 * grow/free cycles of different sizes, on several threads, keep every
 * byte right (and, under ASan, leak nothing). */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "../test.h"
#include "xdr/xdr.h"

static int cycle(unsigned seed)
{
	int bad = 0;

	for (int i = 0; i < 200; i++) {
		struct xdr_out x;
		size_t n = 1000 + ((seed * 2654435761u + (unsigned)i * 40503u) %
		                   (3u << 20));
		uint8_t *p;

		if (xdr_out_init(&x, 4096, 4u << 20) != 0)
			return 1;
		xdr_put_u32(&x, (uint32_t)i);
		p = xdr_put_reserve(&x, n);
		if (!p) {
			bad++;
			xdr_out_free(&x);
			continue;
		}
		memset(p, (int)(i & 0xff), n);
		xdr_put_u32(&x, 0xfeedf00d);
		bad += x.buf[3] != (uint8_t)i ||
		       x.buf[4 + n / 2] != (i & 0xff) ||
		       x.len != 4 + n + xdr_pad(n) + 4 ||
		       ((uintptr_t)x.buf & 4095) != 0;
		xdr_out_free(&x);
	}
	return bad;
}

static void *thr(void *arg)
{
	return (void *)(intptr_t)cycle((unsigned)(intptr_t)arg);
}

int main(void)
{
	pthread_t t[4];
	void *r;
	int bad = cycle(1);

	CHECK(bad == 0, "reuse on one thread: contents and alignment right");
	bad = 0;
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, thr, (void *)(intptr_t)(i + 7));
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &r);
		bad += (int)(intptr_t)r;
	}
	CHECK(bad == 0, "reuse on four threads");
	TEST_EXIT();
}
