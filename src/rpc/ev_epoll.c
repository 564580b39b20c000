/* epoll backend of ev.h. Level-triggered: a ready fd is reported again
 * until it is drained, which lets the loop bound the work per wake-up.
 * The watch is a second epoll set holding the first one (an epoll fd is
 * readable while it has ready entries), one-shot, so its thread sleeps
 * untouched while the loop's thread waits itself: arming costs one
 * epoll_ctl, and no timer runs. */
#include "rpc/ev.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

struct ev_loop {
	int epfd;
	int watchfd; /* holds epfd, one-shot (ev_watch_arm) */
	int max_fired;
	struct epoll_event *events;
	struct ev_fired *fired;
};

/* A loop reporting at most max_fired fds per wait, or NULL. */
struct ev_loop *ev_new(int max_fired)
{
	struct ev_loop *loop = calloc(1, sizeof(*loop));
	if (!loop)
		return NULL;
	loop->max_fired = max_fired > 0 ? max_fired : 256;
	loop->events = calloc((size_t)loop->max_fired, sizeof(*loop->events));
	loop->fired = calloc((size_t)loop->max_fired, sizeof(*loop->fired));
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	loop->watchfd = epoll_create1(EPOLL_CLOEXEC);
	/* added disarmed: no interest bit (an epoll fd never reports the
	 * error and hang-up bits epoll adds) */
	struct epoll_event off = {.events = 0};
	if (!loop->events || !loop->fired || loop->epfd < 0 ||
	    loop->watchfd < 0 ||
	    epoll_ctl(loop->watchfd, EPOLL_CTL_ADD, loop->epfd, &off) < 0) {
		if (loop->epfd >= 0)
			close(loop->epfd);
		if (loop->watchfd >= 0)
			close(loop->watchfd);
		free(loop->events);
		free(loop->fired);
		free(loop);
		return NULL;
	}
	return loop;
}

/* Close the epoll fd and free the loop (registered fds stay open). */
void ev_free(struct ev_loop *loop)
{
	if (!loop)
		return;
	close(loop->watchfd);
	close(loop->epfd);
	free(loop->events);
	free(loop->fired);
	free(loop);
}

/* Translate an ev.h mask to epoll bits. */
static uint32_t to_epoll(int mask)
{
	return (mask & EV_READ ? EPOLLIN : 0) |
	       (mask & EV_WRITE ? EPOLLOUT : 0);
}

/* Shared body of ev_add and ev_mod. */
static int ev_ctl(struct ev_loop *loop, int op, int fd, int mask, void *data)
{
	struct epoll_event ee = {.events = to_epoll(mask), .data.ptr = data};
	return epoll_ctl(loop->epfd, op, fd, &ee) < 0 ? -errno : 0;
}

int ev_add(struct ev_loop *loop, int fd, int mask, void *data)
{
	return ev_ctl(loop, EPOLL_CTL_ADD, fd, mask, data);
}

int ev_mod(struct ev_loop *loop, int fd, int mask, void *data)
{
	return ev_ctl(loop, EPOLL_CTL_MOD, fd, mask, data);
}

void ev_del(struct ev_loop *loop, int fd)
{
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
}

int ev_wait(struct ev_loop *loop, int timeout_ms, struct ev_fired **fired)
{
	int n =
	    epoll_wait(loop->epfd, loop->events, loop->max_fired, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		uint32_t e = loop->events[i].events;
		loop->fired[i].data = loop->events[i].data.ptr;
		loop->fired[i].mask =
		    (e & EPOLLIN ? EV_READ : 0) |
		    (e & EPOLLOUT ? EV_WRITE : 0) |
		    (e & (EPOLLERR | EPOLLHUP) ? EV_ERROR : 0);
	}
	*fired = loop->fired;
	return n;
}

int ev_watch_arm(struct ev_loop *loop, bool on)
{
	struct epoll_event ee = {.events = on ? EPOLLIN | EPOLLONESHOT : 0};

	return epoll_ctl(loop->watchfd, EPOLL_CTL_MOD, loop->epfd, &ee) < 0
	           ? -errno
	           : 0;
}

int ev_watch_wait(struct ev_loop *loop, int timeout_ms)
{
	struct epoll_event ee;
	int n = epoll_wait(loop->watchfd, &ee, 1, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n;
}
