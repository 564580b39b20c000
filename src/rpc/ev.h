/* A minimal readiness event loop interface (after Redis ae.c): file
 * descriptors registered with a read/write interest mask and a user
 * pointer; ev_wait() reports the ones that are ready. One backend today,
 * epoll (ev_epoll.c). Only the loop thread calls these, but for the
 * watch (below). */
#ifndef SNFS_RPC_EV_H
#define SNFS_RPC_EV_H

#include <stdbool.h>

enum { EV_NONE = 0, EV_READ = 1, EV_WRITE = 2, EV_ERROR = 4 };

struct ev_loop;

struct ev_fired {
	void *data;
	int mask; /* EV_READ | EV_WRITE | EV_ERROR */
};

struct ev_loop *ev_new(int max_fired);
void ev_free(struct ev_loop *loop);
/* Register fd with interest mask; data comes back in ev_fired. 0/-errno. */
int ev_add(struct ev_loop *loop, int fd, int mask, void *data);
/* Change the interest of a registered fd. 0/-errno. */
int ev_mod(struct ev_loop *loop, int fd, int mask, void *data);
/* Forget fd (before closing it). */
void ev_del(struct ev_loop *loop, int fd);
/* Wait up to timeout_ms (-1: forever) and fill up to max_fired entries.
 * Returns the count, 0 on timeout or signal, or -errno. The array stays
 * valid until the next ev_wait. */
int ev_wait(struct ev_loop *loop, int timeout_ms, struct ev_fired **fired);

/* The watch: another thread learns that a source became ready while the
 * loop's own thread is away doing other work. Armed (any thread), it
 * fires once, at once if a source is ready already; ev_watch_wait (the
 * watching thread) returns 1 when it fired, 0 on timeout or signal, or
 * -errno. Disarming a watch that fired is harmless, and drops a fire
 * not yet waited for. */
int ev_watch_arm(struct ev_loop *loop, bool on);
int ev_watch_wait(struct ev_loop *loop, int timeout_ms);

#endif
