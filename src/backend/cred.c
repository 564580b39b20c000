/* Per-thread file system credentials.
 *
 * setfsuid/setfsgid change only the calling thread. glibc's setgroups()
 * changes every thread of the process (it broadcasts set*id calls for POSIX
 * semantics), so the raw system call is used instead. While fsuid is not 0
 * the kernel drops the file system capabilities (DAC override, DAC read
 * search, fowner, chown, fsetid) and gives them back when fsuid returns to
 * 0, so the kernel judges each call exactly as for a local user.
 *
 * The thread's current credentials are cached so that consecutive calls
 * for the same client switch nothing. A thread's credentials are kernel
 * state private to it; the cache only mirrors them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/posix_int.h"

struct thread_cred {
	bool ids_known;
	bool groups_known;
	uid_t fsuid;
	gid_t fsgid;
	uint32_t ngids;
	gid_t gids[BK_MAX_GIDS];
};

static _Thread_local struct thread_cred cur;

/* setfsuid reports no errors: it returns the previous value. Asking again
 * with an invalid id (-1) returns the value in force, which proves the
 * switch happened. */
static int set_fsuid(uid_t uid)
{
	syscall(SYS_setfsuid, uid);
	if ((uid_t)syscall(SYS_setfsuid, (uid_t)-1) != uid)
		return -EPERM;
	return 0;
}

static int set_fsgid(gid_t gid)
{
	syscall(SYS_setfsgid, gid);
	if ((gid_t)syscall(SYS_setfsgid, (gid_t)-1) != gid)
		return -EPERM;
	return 0;
}

static int set_groups(const struct bk_cred *cr)
{
	uint32_t n = cr->ngids > BK_MAX_GIDS ? BK_MAX_GIDS : cr->ngids;
	gid_t g[BK_MAX_GIDS];

	for (uint32_t i = 0; i < n; i++)
		g[i] = cr->gids[i];
	if (cur.groups_known && cur.ngids == n &&
	    memcmp(cur.gids, g, n * sizeof(g[0])) == 0)
		return 0;
	cur.groups_known = false;
	if (syscall(SYS_setgroups, (size_t)n, g) != 0)
		return -errno;
	cur.ngids = n;
	memcpy(cur.gids, g, n * sizeof(g[0]));
	cur.groups_known = true;
	return 0;
}

static int set_ids(uid_t uid, gid_t gid)
{
	int rc;

	if (cur.ids_known && cur.fsuid == uid && cur.fsgid == gid)
		return 0;
	cur.ids_known = false;
	/* gid first: with CAP_SETGID still effective either order works,
	 * but this one keeps the window with a foreign uid short. */
	rc = set_fsgid(gid);
	if (rc == 0)
		rc = set_fsuid(uid);
	if (rc != 0)
		return rc;
	cur.fsuid = uid;
	cur.fsgid = gid;
	cur.ids_known = true;
	return 0;
}

int cred_enter(const struct bk_cred *cr)
{
	int rc = set_groups(cr);

	if (rc == 0)
		rc = set_ids(cr->uid, cr->gid);
	if (rc != 0)
		cred_leave();
	return rc;
}

/* The supplementary groups stay as the last client's: with fsuid back at
 * the server's (root) they decide nothing, and keeping them saves the
 * switch on the next call of the same client. */
void cred_leave(void)
{
	if (set_ids(geteuid(), getegid()) != 0) {
		/* Cannot happen for a process that could switch away; if it
		 * does, no further call may run with foreign credentials. */
		abort();
	}
}
