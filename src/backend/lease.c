/* Leases for NFSv4 delegations: the kernel tells us when something
 * beside the server opens a leased file for writing or truncates it, and
 * holds that change back (up to /proc/sys/fs/lease-break-time, 45 s by
 * default) until we let go of the lease: time enough to recall the
 * delegation, whose holder would otherwise go on trusting its cache.
 *
 * A read lease (F_SETLEASE F_RDLCK) is taken on a descriptor of our own
 * opened read-only; the kernel refuses it while the file is open for
 * writing anywhere (our own writable cached fds included: they close 2 s
 * after their last write). The break is a real-time signal (F_SETSIG)
 * sent to one thread of ours (F_SETOWN_EX, F_OWNER_TID) that takes it
 * with sigwaitinfo: siginfo's si_fd names the lease. Other threads never
 * see the signal, whatever their masks. Taking a lease needs the file's
 * owner or CAP_LEASE: a server not run as root gets -EACCES for files
 * not its own, and grants no delegation of them. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/posix_int.h"
#include "util/log.h"

struct bk_lease {
	struct bk_lease *next;
	int fd;
	bk_lease_fn broken;
	void *ctx;
	uint64_t cookie;
};

static pthread_mutex_t lease_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bk_lease *leases; /* all in force */
static pid_t watcher_tid;       /* 0 until the watcher runs */
static pthread_once_t watcher_once = PTHREAD_ONCE_INIT;
static pthread_cond_t watcher_up = PTHREAD_COND_INITIALIZER;

static int lease_signal(void)
{
	return SIGRTMIN + 3;
}

/* The lease of fd, if still in force: its callback, copied out so that
 * it runs without the lock (it takes the NFSv4 state lock, and ending a
 * lease under that lock takes this one). */
static bool lease_of_fd(int fd, bk_lease_fn *fn, void **ctx, uint64_t *cookie)
{
	bool found = false;

	pthread_mutex_lock(&lease_lock);
	for (struct bk_lease *l = leases; l; l = l->next)
		if (l->fd == fd) {
			*fn = l->broken;
			*ctx = l->ctx;
			*cookie = l->cookie;
			found = true;
			break;
		}
	pthread_mutex_unlock(&lease_lock);
	return found;
}

static void *watcher(void *arg)
{
	sigset_t set;
	siginfo_t si;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, lease_signal());
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_mutex_lock(&lease_lock);
	watcher_tid = (pid_t)syscall(SYS_gettid);
	pthread_cond_broadcast(&watcher_up);
	pthread_mutex_unlock(&lease_lock);
	for (;;) {
		bk_lease_fn fn;
		void *ctx;
		uint64_t cookie;

		if (sigwaitinfo(&set, &si) < 0)
			continue;
		/* A break that comes after the lease ended (its fd closed,
		 * perhaps reused) finds nothing or recalls once too often:
		 * harmless either way. */
		if (lease_of_fd(si.si_fd, &fn, &ctx, &cookie))
			fn(ctx, cookie);
	}
	return NULL;
}

static void watcher_start(void)
{
	pthread_t t;
	pthread_attr_t a;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, watcher, NULL) != 0) {
		log_warn("leases: no watcher thread; no delegations");
		pthread_attr_destroy(&a);
		return;
	}
	pthread_attr_destroy(&a);
	pthread_mutex_lock(&lease_lock);
	while (!watcher_tid)
		pthread_cond_wait(&watcher_up, &lease_lock);
	pthread_mutex_unlock(&lease_lock);
}

int posix_lease(struct bk_export *ex, const struct bk_handle *h,
                bk_lease_fn broken, void *ctx, uint64_t cookie,
                struct bk_lease **out)
{
	struct f_owner_ex owner = {.type = F_OWNER_TID};
	struct bk_lease *l;
	struct stat st;
	int fd, rc;

	pthread_once(&watcher_once, watcher_start);
	if (!watcher_tid)
		return -ENOSYS;
	owner.pid = watcher_tid;
	fd = posix_open(ex, h, O_RDONLY | O_NOCTTY, &st);
	if (fd < 0)
		return fd;
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return -ENOMEM;
	}
	if (fcntl(fd, F_SETSIG, lease_signal()) < 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) < 0 ||
	    fcntl(fd, F_SETLEASE, F_RDLCK) < 0) {
		rc = -errno;
		close(fd);
		free(l);
		return rc;
	}
	l->fd = fd;
	l->broken = broken;
	l->ctx = ctx;
	l->cookie = cookie;
	pthread_mutex_lock(&lease_lock);
	l->next = leases;
	leases = l;
	pthread_mutex_unlock(&lease_lock);
	*out = l;
	return 0;
}

void posix_lease_end(struct bk_lease *l)
{
	pthread_mutex_lock(&lease_lock);
	for (struct bk_lease **pp = &leases; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	pthread_mutex_unlock(&lease_lock);
	/* Closing the descriptor ends the lease too; F_UNLCK first lets a
	 * held-back opener go even if the close were delayed. */
	fcntl(l->fd, F_SETLEASE, F_UNLCK);
	close(l->fd);
	free(l);
}
