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
	bool server_known;
	uid_t server_uid; /* the process's euid and egid, read once */
	gid_t server_gid;
	uid_t fsuid;
	gid_t fsgid;
	uint32_t ngids;
	gid_t gids[BK_MAX_GIDS];
};

static _Thread_local struct thread_cred cur;

/* setfsuid reports no errors: it returns the previous value. Asking again
 * with an invalid id (-1) returns the value in force, which proves the
 * switch happened. The kernel always lets a thread set its fsuid to its
 * euid (setfsuid(2)), so the way back to the server's ids is not asked
 * about again (verify false): one system call instead of two per id. */
static int set_fsuid(uid_t uid, bool verify)
{
	syscall(SYS_setfsuid, uid);
	if (verify && (uid_t)syscall(SYS_setfsuid, (uid_t)-1) != uid)
		return -EPERM;
	return 0;
}

static int set_fsgid(gid_t gid, bool verify)
{
	syscall(SYS_setfsgid, gid);
	if (verify && (gid_t)syscall(SYS_setfsgid, (gid_t)-1) != gid)
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

/* Switch to uid and gid, each only when it differs from the one in force
 * (a client squashed to the server's gid switches only its uid). */
static int set_ids(uid_t uid, gid_t gid, bool verify)
{
	bool known = cur.ids_known;
	int rc = 0;

	if (known && cur.fsuid == uid && cur.fsgid == gid)
		return 0;
	cur.ids_known = false;
	/* gid first: with CAP_SETGID still effective either order works,
	 * but this one keeps the window with a foreign uid short. */
	if (!known || cur.fsgid != gid)
		rc = set_fsgid(gid, verify);
	if (rc == 0 && (!known || cur.fsuid != uid))
		rc = set_fsuid(uid, verify);
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
		rc = set_ids(cr->uid, cr->gid, true);
	if (rc != 0)
		cred_leave();
	return rc;
}

/* The server's own ids. snfsd never changes its euid or egid while
 * serving, so each thread reads them once instead of twice per call. */
static void server_ids(uid_t *uid, gid_t *gid)
{
	if (!cur.server_known) {
		cur.server_uid = geteuid();
		cur.server_gid = getegid();
		cur.server_known = true;
	}
	*uid = cur.server_uid;
	*gid = cur.server_gid;
}

/* The supplementary groups stay as the last client's: with fsuid back at
 * the server's (root) they decide nothing, and keeping them saves the
 * switch on the next call of the same client. */
void cred_leave(void)
{
	uid_t uid;
	gid_t gid;

	server_ids(&uid, &gid);
	if (set_ids(uid, gid, false) != 0) {
		/* Cannot happen for a process that could switch away; if it
		 * does, no further call may run with foreign credentials. */
		abort();
	}
}
