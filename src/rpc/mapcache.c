/* Mappings of files kept from one send to the next (send.c's mapped
 * parts; see rpc_int.h).
 *
 * Why: a mapping made and removed for every send pays mmap, a page fault
 * per 64 KiB it touches and munmap's TLB shootdown each time, so READ_PLUS
 * of a file of 16 KiB data and holes went no faster from it than with
 * the holes sent as zeros by sendfile. Kept, a page faults in once and a
 * file is unmapped once: 1 GiB of mixed-16d cached, 0.10 s against 0.15
 * with a mapping per send and 0.19 for READ (doc/HACKING.md, stop 30).
 *
 * An entry maps a MAPC_WINDOW-aligned window of a file, found by device,
 * inode and window. The mapping holds the file open, so no other file can
 * take that inode number while the entry lives; MAP_SHARED pages are the
 * page cache's own, so a write through any fd shows in the next send.
 * Pages mapped are skipped by drop_caches and POSIX_FADV_DONTNEED (memory
 * pressure still reclaims them), so a sweeper thread removes an entry
 * unused for MAPC_IDLE_MS: a file read again after a pause, or after a
 * benchmark's cold-cache step, is as evictable as without the cache.
 *
 * Nothing in user space touches a mapping: only the kernel's copy in
 * sendmsg does, and a page past the file's end (cut short since) fails
 * that copy with EFAULT instead of raising SIGBUS (send.c). */
#include "rpc/rpc_int.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#define MAPC_SLOTS 32
#define MAPC_WINDOW (1ull << 30) /* address space only: 32 GiB at most */
#define MAPC_IDLE_MS 100

struct mapc_ent {
	dev_t dev;
	ino_t ino;
	uint64_t win;
	uint8_t *map; /* NULL: a free slot */
	int refs;
	uint64_t last; /* ms of the last put */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* an entry appeared: the sweeper has work */
	bool sweeper;        /* started (it never ends) */
	int live;
	struct mapc_ent e[MAPC_SLOTS];
} mc = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

/* The coarse clock needs no system call; the idle time is far above its
 * tick. */
static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int find(dev_t dev, ino_t ino, uint64_t win)
{
	for (int i = 0; i < MAPC_SLOTS; i++)
		if (mc.e[i].map && mc.e[i].dev == dev && mc.e[i].ino == ino &&
		    mc.e[i].win == win)
			return i;
	return -1;
}

/* Unlink the entries idle since before cutoff (all unreferenced ones
 * with UINT64_MAX) and return their mappings in out. */
static int take_idle(uint64_t cutoff, uint8_t **out)
{
	int n = 0;

	for (int i = 0; i < MAPC_SLOTS; i++) {
		struct mapc_ent *e = &mc.e[i];
		if (e->map && e->refs == 0 && e->last < cutoff) {
			out[n++] = e->map;
			e->map = NULL;
			mc.live--;
		}
	}
	return n;
}

static void unmap_all(uint8_t **maps, int n)
{
	for (int i = 0; i < n; i++)
		munmap(maps[i], MAPC_WINDOW);
}

static void *sweeper(void *arg)
{
	struct timespec nap = {0, MAPC_IDLE_MS / 2 * 1000000L};
	uint8_t *maps[MAPC_SLOTS];

	(void)arg;
	pthread_mutex_lock(&mc.lock);
	for (;;) {
		while (mc.live == 0)
			pthread_cond_wait(&mc.wake, &mc.lock);
		pthread_mutex_unlock(&mc.lock);
		nanosleep(&nap, NULL);
		pthread_mutex_lock(&mc.lock);
		uint64_t now = now_ms();
		int n = take_idle(now > MAPC_IDLE_MS ? now - MAPC_IDLE_MS : 0,
		                  maps);
		pthread_mutex_unlock(&mc.lock);
		unmap_all(maps, n);
		pthread_mutex_lock(&mc.lock);
	}
	return NULL;
}

/* Under the lock. The sweeper takes no signal meant for the server. */
static void start_sweeper(void)
{
	pthread_t t;
	pthread_attr_t at;
	sigset_t all, old;

	if (mc.sweeper)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	mc.sweeper = pthread_create(&t, &at, sweeper, NULL) == 0;
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A free slot, or the least recently used unreferenced one (its mapping
 * to *victim); -1 when every slot is in use. */
static int pick_slot(uint8_t **victim)
{
	int best = -1;

	*victim = NULL;
	for (int i = 0; i < MAPC_SLOTS; i++) {
		if (!mc.e[i].map)
			return i;
		if (mc.e[i].refs == 0 &&
		    (best < 0 || mc.e[i].last < mc.e[best].last))
			best = i;
	}
	if (best >= 0) {
		*victim = mc.e[best].map;
		mc.e[best].map = NULL;
		mc.live--;
	}
	return best;
}

static void hand_out(int i, struct rpc_map *m)
{
	mc.e[i].refs++;
	m->slot = i;
	m->base = mc.e[i].map;
	m->at = mc.e[i].win * MAPC_WINDOW;
}

bool rpc_map_get(int fd, uint64_t lo, uint64_t hi, struct rpc_map *m)
{
	uint64_t win = lo / MAPC_WINDOW;
	uint8_t *p, *victim = NULL;
	struct stat st;
	int i;

	if (hi <= lo || (hi - 1) / MAPC_WINDOW != win || fstat(fd, &st) < 0 ||
	    !S_ISREG(st.st_mode))
		return false;
	pthread_mutex_lock(&mc.lock);
	i = find(st.st_dev, st.st_ino, win);
	if (i >= 0)
		hand_out(i, m);
	pthread_mutex_unlock(&mc.lock);
	if (i >= 0)
		return true;
	/* Mapped outside the lock (a window past the file's end is fine:
	 * only its pages inside the file can be touched). */
	p = mmap(NULL, MAPC_WINDOW, PROT_READ, MAP_SHARED, fd,
	         (off_t)(win * MAPC_WINDOW));
	if (p == MAP_FAILED)
		return false;
	pthread_mutex_lock(&mc.lock);
	i = find(st.st_dev, st.st_ino, win); /* another send was quicker */
	if (i < 0 && (i = pick_slot(&victim)) >= 0) {
		mc.e[i] = (struct mapc_ent){st.st_dev, st.st_ino, win, p, 0, 0};
		mc.live++;
		p = NULL;
		start_sweeper();
		pthread_cond_signal(&mc.wake);
	}
	if (i >= 0)
		hand_out(i, m);
	pthread_mutex_unlock(&mc.lock);
	if (p)
		munmap(p, MAPC_WINDOW);
	if (victim)
		munmap(victim, MAPC_WINDOW);
	return i >= 0;
}

void rpc_map_put(const struct rpc_map *m)
{
	pthread_mutex_lock(&mc.lock);
	mc.e[m->slot].refs--;
	mc.e[m->slot].last = now_ms();
	pthread_mutex_unlock(&mc.lock);
}

int rpc_map_live(void)
{
	pthread_mutex_lock(&mc.lock);
	int n = mc.live;
	pthread_mutex_unlock(&mc.lock);
	return n;
}

void rpc_map_drop_idle(void)
{
	uint8_t *maps[MAPC_SLOTS];

	pthread_mutex_lock(&mc.lock);
	int n = take_idle(UINT64_MAX, maps);
	pthread_mutex_unlock(&mc.lock);
	unmap_all(maps, n);
}
