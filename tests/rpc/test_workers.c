/* rpc/workers: the standby job (pool_standby, pool_reclaim). Nobody
 * watches an idle pool, so the first offer fails (the caller hands off);
 * a thread back from a job watches while offers keep coming; an offer
 * taken back in time never runs, one left runs on the watcher about when
 * due; a pool quiet for a while stops watching (no timed wake-ups while
 * idle); a stop with an offer pending neither runs it nor hangs. */
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

int main(void)
{
	struct worker_pool *p = pool_start(2);
	struct flag_job noop = {.job.fn = flag_run};
	struct flag_job sj = {.job.fn = flag_run};

	CHECK(p != NULL, "pool of 2 started");
	if (!p)
		TEST_EXIT();
	CHECK(!pool_standby(p, &sj.job, 50),
	      "an idle pool: nobody watches, the offer fails");
	pool_submit(p, &noop.job);
	CHECK(ran(&noop, 1), "a job runs");
	sleep_ms(20);
	CHECK(pool_standby(p, &sj.job, 30),
	      "a thread back from its job watches: the offer holds");
	CHECK(!pool_standby(p, &noop.job, 30),
	      "a second offer while one is pending fails");
	sleep_ms(5);
	CHECK(pool_reclaim(p, &sj.job), "taken back in time");
	sleep_ms(20);
	CHECK(atomic_load(&sj.runs) == 0, "an offer taken back never runs");
	CHECK(!pool_reclaim(p, &sj.job), "nothing left to take back");

	/* offers taken back every 10 ms keep a thread watching; it sleeps
	 * a tick at a time, it does not spin (a deadline on the wrong
	 * clock made it: regression) */
	double c0 = cpu_ms();
	int held = 0;
	for (int i = 0; i < 10; i++) {
		held += pool_standby(p, &sj.job, 30);
		pool_reclaim(p, &sj.job);
		sleep_ms(10);
	}
	double used = cpu_ms() - c0;
	char msg[120];
	snprintf(msg, sizeof(msg),
	         "watching for 100 ms: every offer held (%d of 10), little "
	         "CPU (%.1f ms)",
	         held, used);
	CHECK(held == 10 && used < 20, msg);
	CHECK(atomic_load(&sj.runs) == 0, "none of them ran");

	CHECK(pool_standby(p, &sj.job, 10), "offered again");
	CHECK(ran(&sj, 1), "left past its time: the watcher runs it");
	CHECK(!pool_reclaim(p, &sj.job), "run by another: not taken back");

	sleep_ms(150); /* past WATCH_SPAN_NS with no offer */
	CHECK(!pool_standby(p, &sj.job, 50),
	      "quiet for a while: nobody watches any more");

	pool_submit(p, &noop.job);
	CHECK(ran(&noop, 2), "a job runs again");
	sleep_ms(20);
	CHECK(pool_standby(p, &sj.job, 60000), "offered with a minute to go");
	pool_stop(p);
	CHECK(atomic_load(&sj.runs) == 1,
	      "stopped with an offer pending: not run, no hang");
	TEST_EXIT();
}
