/* The worker pool of workers.h: a mutex-protected intrusive FIFO and a
 * condition variable, and the standby job (pool_standby). */
#include "rpc/workers.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/log.h"

struct worker_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pool_job *head, *tail;
	bool stopping;
	int idle;  /* threads waiting for a job */
	int woken; /* of those, signalled and not yet running */
	atomic_int queued;
	struct pool_job *standby; /* pool_standby: the job offered */
	int nthreads;
	pthread_t threads[];
};

/* Take the next job, waiting for one; NULL once the pool stops. */
static struct pool_job *pool_next(struct worker_pool *pool)
{
	struct pool_job *job;

	pthread_mutex_lock(&pool->lock);
	while (!pool->head && !pool->stopping) {
		pool->idle++;
		pthread_cond_wait(&pool->cond, &pool->lock);
		pool->idle--;
		if (pool->woken > 0)
			pool->woken--;
	}
	job = pool->stopping ? NULL : pool->head;
	if (job) {
		pool->head = job->next;
		if (!pool->head)
			pool->tail = NULL;
		atomic_fetch_sub(&pool->queued, 1);
	}
	pthread_mutex_unlock(&pool->lock);
	return job;
}

/* Worker thread body: run jobs until the pool stops. */
static void *worker_main(void *arg)
{
	struct worker_pool *pool = arg;
	struct pool_job *job;

	while ((job = pool_next(pool)))
		job->fn(job, false);
	return NULL;
}

struct worker_pool *pool_start(int nthreads)
{
	struct worker_pool *pool;

	if (nthreads < 1)
		nthreads = 1;
	pool = calloc(1, sizeof(*pool) + (size_t)nthreads * sizeof(pthread_t));
	if (!pool)
		return NULL;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->cond, NULL);
	for (; pool->nthreads < nthreads; pool->nthreads++) {
		if (pthread_create(&pool->threads[pool->nthreads], NULL,
		                   worker_main, pool) != 0) {
			log_err("cannot start worker thread");
			pool_stop(pool);
			return NULL;
		}
	}
	return pool;
}

void pool_batch_add(struct pool_batch *b, struct pool_job *job)
{
	job->next = NULL;
	if (b->tail)
		b->tail->next = job;
	else
		b->head = job;
	b->tail = job;
	b->n++;
}

/* A waiting thread is woken only when one waits that is not already on
 * its way (a busy thread looks at the queue before it waits), and after
 * unlocking, so the woken thread does not at once block on the lock
 * still held here: each needless wake-up is a pair of context switches
 * per call. */
void pool_submit_batch(struct worker_pool *pool, struct pool_batch *b,
                       int max_wake)
{
	int wake;

	if (!b->n)
		return;
	pthread_mutex_lock(&pool->lock);
	if (pool->tail)
		pool->tail->next = b->head;
	else
		pool->head = b->head;
	pool->tail = b->tail;
	atomic_fetch_add(&pool->queued, b->n);
	wake = pool->idle - pool->woken;
	if (wake > b->n)
		wake = b->n;
	if (wake > max_wake)
		wake = max_wake;
	if (wake < 0)
		wake = 0;
	pool->woken += wake;
	pthread_mutex_unlock(&pool->lock);
	for (int i = 0; i < wake; i++)
		pthread_cond_signal(&pool->cond);
	*b = (struct pool_batch){0};
}

bool pool_backlog(struct worker_pool *pool)
{
	return atomic_load(&pool->queued) > 0;
}

void pool_kick(struct worker_pool *pool)
{
	bool wake;

	pthread_mutex_lock(&pool->lock);
	wake = pool->head && pool->idle > pool->woken;
	if (wake)
		pool->woken++;
	pthread_mutex_unlock(&pool->lock);
	if (wake)
		pthread_cond_signal(&pool->cond);
}

/* Put job at the head of the queue; under the lock. Returns whether a
 * waiting thread nobody has woken yet is there for it, marked woken (the
 * caller signals after unlocking). */
static bool push_head(struct worker_pool *pool, struct pool_job *job)
{
	bool wake = pool->idle > pool->woken;

	job->next = pool->head;
	pool->head = job;
	if (!pool->tail)
		pool->tail = job;
	atomic_fetch_add(&pool->queued, 1);
	if (wake)
		pool->woken++;
	return wake;
}

/* See workers.h: under the lock, so the waiting thread counted here is
 * one nobody else has woken (pool_submit_batch wakes only threads that are
 * idle and not yet woken, and this one is marked woken at once). */
bool pool_handoff(struct worker_pool *pool, struct pool_job *job)
{
	bool wake;

	pthread_mutex_lock(&pool->lock);
	wake = !pool->stopping && pool->idle > pool->woken;
	if (wake)
		push_head(pool, job);
	pthread_mutex_unlock(&pool->lock);
	if (wake)
		pthread_cond_signal(&pool->cond);
	return wake;
}

bool pool_standby(struct worker_pool *pool, struct pool_job *job)
{
	bool ok;

	pthread_mutex_lock(&pool->lock);
	ok = !pool->stopping && !pool->standby;
	if (ok)
		pool->standby = job;
	pthread_mutex_unlock(&pool->lock);
	return ok;
}

/* See workers.h: queued first, for the next thread free when none
 * waits (the thread that offered it, at the latest, once its call is
 * done). */
bool pool_release_standby(struct worker_pool *pool)
{
	struct pool_job *job;
	bool wake = false;

	pthread_mutex_lock(&pool->lock);
	job = pool->stopping ? NULL : pool->standby;
	pool->standby = NULL;
	if (job)
		wake = push_head(pool, job);
	pthread_mutex_unlock(&pool->lock);
	if (wake)
		pthread_cond_signal(&pool->cond);
	return job != NULL;
}

bool pool_reclaim(struct worker_pool *pool, struct pool_job *job)
{
	bool mine;

	pthread_mutex_lock(&pool->lock);
	mine = pool->standby == job;
	if (mine)
		pool->standby = NULL;
	pthread_mutex_unlock(&pool->lock);
	return mine;
}

/* Queue a job: a batch of one. */
void pool_submit(struct worker_pool *pool, struct pool_job *job)
{
	struct pool_batch b = {0};

	pool_batch_add(&b, job);
	pool_submit_batch(pool, &b, 1);
}

void pool_stop(struct worker_pool *pool)
{
	struct pool_job *job, *next;

	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->stopping = true;
	pool->standby = NULL;
	pthread_cond_broadcast(&pool->cond);
	pthread_mutex_unlock(&pool->lock);
	for (int i = 0; i < pool->nthreads; i++)
		pthread_join(pool->threads[i], NULL);
	for (job = pool->head; job; job = next) {
		next = job->next;
		job->fn(job, true);
	}
	pthread_cond_destroy(&pool->cond);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}
