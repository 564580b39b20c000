/* Large reply buffers are reused per thread (xdr.c's spare block) and
 * through a shared pool: many grow/free cycles of different sizes, on
 * several threads, keep every byte right (and, under ASan, leak nothing),
 * and a block freed on another thread is reused. */
#include <pthread.h>
#include <sys/resource.h>
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

/* Frees two 1 MiB buffers on its own thread: one becomes its spare, the
 * other goes to the pool. */
static void *free_two(void *arg)
{
	struct xdr_out *x = arg;

	xdr_out_free(&x[0]);
	xdr_out_free(&x[1]);
	return NULL;
}

/* Grows a fresh buffer to 1 MiB on a fresh thread (no spare of its own)
 * and returns where its bytes went. */
static void *grow_one(void *arg)
{
	struct xdr_out y;
	void *where = NULL;

	(void)arg;
	if (xdr_out_init(&y, 256, 2 << 20) == 0 &&
	    xdr_put_reserve(&y, 1 << 20) != NULL)
		where = y.buf;
	xdr_out_free(&y);
	return where;
}

/* The event loop frees the replies it had to queue; the worker that
 * built them must get their blocks back rather than fresh memory. Runs
 * first, while the pool is empty. */
static void test_cross_thread(void)
{
	struct xdr_out x[2];
	pthread_t t;
	void *got = NULL;
	uint8_t *b;

	CHECK(xdr_out_init(&x[0], 1 << 20, 2 << 20) == 0 &&
	          xdr_out_init(&x[1], 1 << 20, 2 << 20) == 0,
	      "two 1 MiB buffers");
	b = x[1].buf;
	pthread_create(&t, NULL, free_two, x);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, grow_one, NULL);
	pthread_join(t, &got);
	CHECK(got == b, "a block freed on another thread is reused");
}

/* A connection's worth of 1 MiB replies in flight (it may hold 32 calls)
 * queued, then freed by the thread that sent them: a worker growing and
 * filling its next replies must get those blocks back, pages and all,
 * not fresh memory (a pool of 16 gave back 16 of 40, and every other
 * block cost a page fault per 4 KiB). Addresses prove nothing here: a
 * block glibc unmapped comes back at the same address, unmapped. */
#define IN_FLIGHT 40

static void *free_all(void *arg)
{
	struct xdr_out *x = arg;

	for (int i = 0; i < IN_FLIGHT; i++)
		xdr_out_free(&x[i]);
	return NULL;
}

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt;
}

/* Builds IN_FLIGHT replies of 1 MiB, every byte written; how many. */
static int build_all(struct xdr_out *x, int fill)
{
	int ok = 0;

	for (int i = 0; i < IN_FLIGHT; i++) {
		uint8_t *p = NULL;
		if (xdr_out_init(&x[i], 256, 2 << 20) == 0)
			p = xdr_put_reserve(&x[i], 1 << 20);
		if (p) {
			memset(p, fill, 1 << 20);
			ok++;
		}
	}
	return ok;
}

/* Builds IN_FLIGHT replies of 1 MiB, writing every byte; returns the
 * page faults that cost, or -1. */
static void *grow_all(void *arg)
{
	struct xdr_out *y = arg;
	long before = minor_faults();

	int ok = build_all(y, 0x5a);
	long faults = minor_faults() - before;
	for (int i = 0; i < IN_FLIGHT; i++)
		xdr_out_free(&y[i]);
	return (void *)(intptr_t)(ok == IN_FLIGHT ? faults : -1);
}

static void test_in_flight(void)
{
	static struct xdr_out x[IN_FLIGHT], y[IN_FLIGHT];
	pthread_t t;
	void *r;

	int ok = build_all(x, 0xa5);
	CHECK(ok == IN_FLIGHT, "40 replies of 1 MiB built");
	pthread_create(&t, NULL, free_all, x);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, grow_all, y);
	pthread_join(t, &r);
	long faults = (long)(intptr_t)r;
	printf("# 40 replies of 1 MiB in reused blocks: %ld page faults "
	       "(fresh ones: about %d)\n",
	       faults, IN_FLIGHT * 256);
	/* all but the block the freeing thread kept as its own spare (and
	 * ASan's shadow, the thread's stack) come back with their pages */
	CHECK(faults >= 0 && faults < 3 * 512,
	      "a connection's worth of freed 1 MiB blocks comes back mapped");
}

int main(void)
{
	pthread_t t[4];
	void *r;
	int bad;

	test_cross_thread();
	test_in_flight();
	bad = cycle(1);

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
