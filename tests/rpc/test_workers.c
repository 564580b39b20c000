/* rpc/workers: the standby job (pool_standby, pool_reclaim,
 * pool_release_standby). An offer taken back never runs; one released
 * runs on a waiting thread, or, every thread busy, on the next one free;
 * one offer at a time; a stop with an offer pending neither runs it nor
 * hangs; no thread wakes while an offer is pending (nothing spins). */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "rpc/workers.h"

struct flag_job {
	struct pool_job job;
	atomic_int runs;
};

static void flag_run(struct pool_job *j, bool cancelled)
{
	struct flag_job *f = (struct flag_job *)j;

	if (!cancelled)
		atomic_fetch_add(&f->runs, 1);
}

static void sleep_ms(long ms)
{
	struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&t, NULL);
}

static double cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Wait up to 2 s for f to have run n times. */
static bool ran(struct flag_job *f, int n)
{
	for (int i = 0; i < 2000 && atomic_load(&f->runs) < n; i++)
		sleep_ms(1);
	return atomic_load(&f->runs) >= n;
}

/* A job that holds its thread until let go. */
struct hold_job {
	struct pool_job job;
	atomic_int started, go;
};

static void hold_run(struct pool_job *j, bool cancelled)
{
	struct hold_job *h = (struct hold_job *)j;

	if (cancelled)
		return;
	atomic_store(&h->started, 1);
	while (!atomic_load(&h->go))
		sleep_ms(1);
}

int main(void)
{
	struct worker_pool *p = pool_start(2);
	struct flag_job noop = {.job.fn = flag_run};
	struct flag_job sj = {.job.fn = flag_run};
	struct hold_job h1 = {.job.fn = hold_run}, h2 = {.job.fn = hold_run};

	CHECK(p != NULL, "pool of 2 started");
	if (!p)
		TEST_EXIT();
	CHECK(!pool_release_standby(p), "nothing offered: nothing released");
	CHECK(pool_standby(p, &sj.job), "an offer holds");
	CHECK(!pool_standby(p, &noop.job),
	      "a second offer while one is pending fails");
	double c0 = cpu_ms();
	sleep_ms(50);
	double used = cpu_ms() - c0;
	char msg[120];
	snprintf(msg, sizeof(msg),
	         "pending for 50 ms: not run, little CPU (%.1f ms)", used);
	CHECK(atomic_load(&sj.runs) == 0 && used < 10, msg);
	CHECK(pool_reclaim(p, &sj.job), "taken back");
	CHECK(!pool_release_standby(p), "taken back: nothing to release");
	sleep_ms(20);
	CHECK(atomic_load(&sj.runs) == 0, "an offer taken back never runs");
	CHECK(!pool_reclaim(p, &sj.job), "nothing left to take back");

	CHECK(pool_standby(p, &sj.job), "offered again");
	CHECK(pool_release_standby(p), "released");
	CHECK(ran(&sj, 1), "released: a waiting thread runs it");
	CHECK(!pool_reclaim(p, &sj.job), "run by another: not taken back");

	/* every thread busy: the released job waits for the next free one */
	pool_submit(p, &h1.job);
	pool_submit(p, &h2.job);
	for (int i = 0; i < 2000 &&
	                !(atomic_load(&h1.started) && atomic_load(&h2.started));
	     i++)
		sleep_ms(1);
	CHECK(pool_standby(p, &sj.job) && pool_release_standby(p),
	      "offered and released with both threads busy");
	sleep_ms(20);
	CHECK(atomic_load(&sj.runs) == 1, "no thread free: not run yet");
	atomic_store(&h1.go, 1);
	CHECK(ran(&sj, 2), "run by the first thread free");
	atomic_store(&h2.go, 1);

	pool_submit(p, &noop.job);
	CHECK(ran(&noop, 1), "a job runs");
	CHECK(pool_standby(p, &sj.job), "offered, then stopped");
	pool_stop(p);
	CHECK(atomic_load(&sj.runs) == 2,
	      "stopped with an offer pending: not run, no hang");
	TEST_EXIT();
}
