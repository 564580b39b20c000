/* prototype: order all big reads of a file while its stream is cold */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/posix_int.h"
#include "util/cachestat.h"

#define RO_STREAMS 16
#define RO_MIN (64u << 10)
#define RO_WINDOW (32ull << 20)
#define RO_WAIT_MS 20
#define RO_COLD_MS 200

struct ro_stream {
	uint64_t dev, ino, frontier, stamp, cold_until;
	bool used;
};
static pthread_mutex_t ro_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ro_cv;
static pthread_once_t ro_once = PTHREAD_ONCE_INIT;
static struct ro_stream ro[RO_STREAMS];
static int ro_off = -1;

static void ro_init(void)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&ro_cv, &a);
	ro_off = getenv("SNFSD_NO_READ_ORDER") != NULL;
}

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static struct ro_stream *ro_slot(uint64_t dev, uint64_t ino, bool take)
{
	struct ro_stream *old = &ro[0];
	for (int i = 0; i < RO_STREAMS; i++) {
		if (ro[i].used && ro[i].dev == dev && ro[i].ino == ino)
			return &ro[i];
		if (!ro[i].used || (old->used && ro[i].stamp < old->stamp))
			old = &ro[i];
	}
	return take ? old : NULL;
}

bool posix_read_order_begin(int fd, const struct stat *st, uint64_t off,
                            uint64_t len)
{
	uint64_t dev = (uint64_t)st->st_dev, ino = (uint64_t)st->st_ino;
	uint64_t now, end = off + len, deadline;
	struct util_cachestat cs;
	struct ro_stream *s;
	struct timespec ts;
	bool cold;

	pthread_once(&ro_once, ro_init);
	if (ro_off || len < RO_MIN)
		return false;
	cold = util_cachestat(fd, off, len, &cs) &&
	       cs.nr_cache < (end + 4095) / 4096 - off / 4096;
	pthread_mutex_lock(&ro_lock);
	now = now_ms();
	s = ro_slot(dev, ino, cold);
	if (!s || (!cold && now >= s->cold_until)) {
		pthread_mutex_unlock(&ro_lock);
		return false;
	}
	if (!s->used || s->dev != dev || s->ino != ino ||
	    now >= s->cold_until) {
		*s = (struct ro_stream){.dev = dev, .ino = ino, .frontier = off,
		                        .stamp = now, .used = true};
	}
	if (cold)
		s->cold_until = now + RO_COLD_MS;
	deadline = now + RO_WAIT_MS;
	while (off > s->frontier && off - s->frontier <= RO_WINDOW &&
	       now < deadline) {
		ts.tv_sec = (time_t)(deadline / 1000);
		ts.tv_nsec = (long)(deadline % 1000) * 1000000;
		pthread_cond_timedwait(&ro_cv, &ro_lock, &ts);
		now = now_ms();
		s = ro_slot(dev, ino, false);
		if (!s)
			break;
	}
	pthread_mutex_unlock(&ro_lock);
	return true;
}

void posix_read_order_end(const struct stat *st, uint64_t off, uint64_t len)
{
	struct ro_stream *s;
	pthread_mutex_lock(&ro_lock);
	s = ro_slot((uint64_t)st->st_dev, (uint64_t)st->st_ino, false);
	if (s && off <= s->frontier && off + len > s->frontier) {
		s->frontier = off + len;
		s->stamp = now_ms();
	}
	pthread_cond_broadcast(&ro_cv);
	pthread_mutex_unlock(&ro_lock);
}
