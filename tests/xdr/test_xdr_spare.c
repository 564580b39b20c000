/* Large reply buffers are reused per thread (xdr.c's spare block) and
 * through a shared pool, small ones through per-thread and shared shelves:
 * many grow/free cycles of different sizes, on several threads, keep
 * every byte right (and, under ASan, leak nothing, also of threads that
 * exit holding blocks), and a block freed on another thread is reused. */
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

/* A small reply of a call like READ_PLUS: starts at 4 KiB, grows to
 * 8 KiB. Returns its block (freed) or NULL when something was wrong. */
static void *small_reply(void)
{
	struct xdr_out x;
	void *where = NULL;
	uint8_t *p;

	if (xdr_out_init(&x, 4096, 1 << 20) != 0)
		return NULL;
	p = xdr_put_reserve(&x, 6000);
	if (p) {
		memset(p, 0x3c, 6000);
		if (x.cap >= 6004 && ((uintptr_t)x.buf & 4095) == 0)
			where = x.buf;
	}
	xdr_out_free(&x);
	return where;
}

#define FREED 16

/* Frees FREED small replies on this thread: more than its own shelf
 * keeps, so most go to the shared one. */
static void *free_small(void *arg)
{
	struct xdr_out *x = arg;

	for (int i = 0; i < FREED; i++)
		xdr_out_free(&x[i]);
	return NULL;
}

/* Builds FREED small replies on a fresh thread; their blocks into arg. */
static void *build_small(void *arg)
{
	void **got = arg;
	struct xdr_out y[FREED];

	for (int i = 0; i < FREED; i++) {
		got[i] = NULL;
		if (xdr_out_init(&y[i], 4096, 1 << 20) == 0 &&
		    xdr_put_reserve(&y[i], 100) != NULL)
			got[i] = y[i].buf;
	}
	for (int i = 0; i < FREED; i++)
		xdr_out_free(&y[i]);
	return NULL;
}

/* Small reply buffers come back without posix_memalign: the one a
 * reply grew into serves the next reply whole (no second grow), and
 * blocks freed by another thread (a worker sending the replies queued
 * behind its own) reach the threads that build replies. */
static void test_small(void)
{
	static struct xdr_out x[FREED];
	void *first, *again, *freed[FREED], *got[FREED];
	int built = 0, reused = 0;
	pthread_t t;

	first = small_reply();
	again = small_reply();
	CHECK(first != NULL && again == first,
	      "a small reply reuses the block the last one grew into");

	for (int i = 0; i < FREED; i++) {
		built += xdr_out_init(&x[i], 4096, 1 << 20) == 0;
		freed[i] = x[i].buf;
	}
	CHECK(built == FREED, "16 small replies built");
	pthread_create(&t, NULL, free_small, x);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, build_small, got);
	pthread_join(t, NULL);
	for (int i = 0; i < FREED; i++)
		for (int j = 0; j < FREED; j++)
			reused += got[i] != NULL && got[i] == freed[j];
	/* all but what the freeing thread kept on its own shelf (it exited:
	 * those went back to malloc, where they may come back too) */
	CHECK(reused >= FREED / 2,
	      "small blocks freed on another thread are reused");
}

int main(void)
{
	pthread_t t[4];
	void *r;
	int bad;

	test_cross_thread();
	test_in_flight();
	test_small();
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
