/* MOUNT v3 (RFC 1813 appendix I): hands out the root handle of an export
 * (or of a directory inside one) and keeps the advisory list of who
 * mounted what (DUMP). */
#include "server/mount/mount3.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/exports.h"
#include "server/fh.h"
#include "server/snfsd.h"
#include "util/log.h"

/* The mount list is advisory (RFC 1813 I.4.2); a cap keeps a client that
 * mounts many subdirectories from growing it without bound. */
#define MOUNT_LIST_MAX 4096

static const char *const proc_names[] = {"NULL", "MNT",     "DUMP",
                                         "UMNT", "UMNTALL", "EXPORT"};

/* RFC 5531: arguments that do not decode get GARBAGE_ARGS; say who. */
static int garbage(const struct rpc_call *call)
{
	char who[80];

	log_warn("%s: MOUNT %s: undecodable arguments",
	         rpc_peer_str((const struct sockaddr *)&call->peer, who,
	                      sizeof(who)),
	         call->proc < 6 ? proc_names[call->proc] : "?");
	return RPC_GARBAGE_ARGS;
}

/* The client's address without its port, as the mount list names it. */
static void peer_host(const struct rpc_call *call, char *buf, size_t n)
{
	const struct sockaddr_storage *ss = &call->peer;
	const void *a = NULL;

	if (ss->ss_family == AF_INET)
		a = &((const struct sockaddr_in *)ss)->sin_addr;
	else if (ss->ss_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	if (!a || !inet_ntop(ss->ss_family, a, buf, (socklen_t)n))
		snprintf(buf, n, "unknown");
}

/* Lexically clean a dirpath into out ("/a/b", no "." or empty parts).
 * -EACCES for ".." (MNT never walks upward) or a relative path. */
static int clean_dirpath(const char *in, char *out, size_t outsz)
{
	size_t n = 0;
	const char *p = in;

	if (in[0] != '/')
		return -EACCES;
	while (*p) {
		const char *c;
		size_t len;

		while (*p == '/')
			p++;
		c = p;
		while (*p && *p != '/')
			p++;
		len = (size_t)(p - c);
		if (len == 0 || (len == 1 && c[0] == '.'))
			continue;
		if (len == 2 && c[0] == '.' && c[1] == '.')
			return -EACCES;
		if (n + 1 + len + 1 > outsz)
			return -ENAMETOOLONG;
		out[n++] = '/';
		memcpy(out + n, c, len);
		n += len;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return 0;
}

/* The deepest export containing path, and where the rest of path starts
 * inside it (pointing at "" or "/rest"). */
static struct export *export_containing(const struct export_table *t,
                                        const char *path, const char **rest)
{
	struct export *best = NULL;
	size_t bestlen = 0;

	for (size_t i = 0; i < t->n; i++) {
		const char *ep = t->v[i].path;
		size_t len = strcmp(ep, "/") ? strlen(ep) : 0;

		if (strncmp(path, ep, len) || (path[len] && path[len] != '/'))
			continue;
		if (!best || len > bestlen) {
			best = &t->v[i];
			bestlen = len;
		}
	}
	*rest = path + bestlen;
	return best;
}

static uint32_t errno_to_mnt(int err)
{
	switch (err) {
	case -EPERM:
		return MNT3ERR_PERM;
	case -ENOENT:
	case -ESTALE:
		return MNT3ERR_NOENT;
	case -EACCES:
		return MNT3ERR_ACCES;
	case -ENOTDIR:
	case -ELOOP:
		return MNT3ERR_NOTDIR;
	case -EINVAL:
		return MNT3ERR_INVAL;
	case -ENAMETOOLONG:
		return MNT3ERR_NAMETOOLONG;
	case -EIO:
		return MNT3ERR_IO;
	default:
		return MNT3ERR_SERVERFAULT;
	}
}

/* Walk rest ("/a/b") from the export root one component at a time with
 * the client's credentials. Each step must reach a directory: symlinks are
 * never followed, so a mount cannot leave the export. */
static int walk(const struct export *ex, const struct bk_cred *cr,
                const char *rest, struct bk_handle *bh)
{
	char name[BK_NAME_MAX + 1];
	int rc = ex->ops->root(ex->bk, bh);

	while (!rc && *rest) {
		struct bk_handle next;
		struct bk_attr attr;
		const char *c = rest + 1, *end = strchr(c, '/');
		size_t len = end ? (size_t)(end - c) : strlen(c);

		if (len > BK_NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, c, len);
		name[len] = '\0';
		rest = c + len;
		rc = ex->ops->lookup(ex->bk, cr, bh, name, &next, &attr);
		if (!rc && attr.type != BK_DIR)
			rc = -ENOTDIR;
		if (!rc)
			*bh = next;
	}
	return rc;
}

/* Record host:path for DUMP, once. */
static void mount_list_add(struct snfsd *s, const char *host, const char *path)
{
	struct mount_entry *m;
	size_t n = 0;

	pthread_mutex_lock(&s->mounts_lock);
	for (m = s->mounts; m; m = m->next, n++)
		if (!strcmp(m->host, host) && !strcmp(m->path, path))
			goto out;
	if (strlen(path) >= sizeof(m->path) || strlen(host) >= sizeof(m->host))
		goto out; /* a 1024-byte path does not fit the record */
	if (n >= MOUNT_LIST_MAX) {
		log_debug("mount list full; not recording %s:%s", host, path);
		goto out;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		goto out;
	memcpy(m->host, host, strlen(host) + 1);
	memcpy(m->path, path, strlen(path) + 1);
	m->next = s->mounts;
	s->mounts = m;
out:
	pthread_mutex_unlock(&s->mounts_lock);
}

/* Drop entries of host (and of path, unless path is NULL). */
static void mount_list_remove(struct snfsd *s, const char *host,
                              const char *path)
{
	struct mount_entry **pp, *m;

	pthread_mutex_lock(&s->mounts_lock);
	for (pp = &s->mounts; (m = *pp);) {
		if (!strcmp(m->host, host) &&
		    (!path || !strcmp(m->path, path))) {
			*pp = m->next;
			free(m);
		} else {
			pp = &m->next;
		}
	}
	pthread_mutex_unlock(&s->mounts_lock);
}

void mount_list_free(struct snfsd *s)
{
	struct mount_entry *m;

	pthread_mutex_lock(&s->mounts_lock);
	while ((m = s->mounts)) {
		s->mounts = m->next;
		free(m);
	}
	pthread_mutex_unlock(&s->mounts_lock);
}

/* ---- procedures ---- */

static int mnt_null(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	return RPC_SUCCESS;
}

/* Find the export and handle for a cleaned path; 0 or an MNT3ERR_*. */
static uint32_t mnt_resolve(struct rpc_call *call, struct snfsd *s,
                            const struct export_table *t, const char *path,
                            struct nfs_fh *fh)
{
	const struct sockaddr *peer = (const struct sockaddr *)&call->peer;
	const struct export_rule *rule;
	const char *rest;
	struct export *ex;
	struct bk_handle bh;
	struct bk_cred cr;
	char who[80];
	int rc;

	ex = t ? export_containing(t, path, &rest) : NULL;
	if (!ex) {
		log_info("%s: MNT %s refused: not exported",
		         rpc_peer_str(peer, who, sizeof(who)), path);
		return MNT3ERR_ACCES;
	}
	rule = export_match(ex, peer);
	if (!rule) {
		log_info("%s: MNT %s refused: client not admitted to %s",
		         rpc_peer_str(peer, who, sizeof(who)), path, ex->path);
		return MNT3ERR_ACCES;
	}
	/* As mountd does: a `secure` export refuses the mount outright
	 * rather than failing every NFS call after it. */
	if ((rule->flags & EXP_SECURE) && rpc_peer_port(peer) >= 1024) {
		log_warn("%s: MNT %s refused: insecure source port (export "
		         "option 'secure'; use 'insecure' to allow)",
		         rpc_peer_str(peer, who, sizeof(who)), path);
		return MNT3ERR_ACCES;
	}
	export_squash(rule, &call->cred, &cr);
	rc = walk(ex, &cr, rest, &bh);
	if (!rc)
		rc = fh_make(s, ex, &bh, fh);
	if (rc) {
		log_info("%s: MNT %s failed: %s",
		         rpc_peer_str(peer, who, sizeof(who)), path,
		         strerror(-rc));
		return errno_to_mnt(rc);
	}
	return MNT3_OK;
}

/* MOUNTPROC3_MNT: dirpath -> mountres3 (RFC 1813 I.4.1). */
static int mnt_mnt(struct rpc_call *call, struct xdr_out *res)
{
	struct snfsd *s = call->ctx;
	char dirpath[MNTPATHLEN + 1], path[MNTPATHLEN + 1], host[64];
	struct export_table *t;
	struct nfs_fh fh;
	uint32_t stat;
	int rc;

	if (!xdr_get_string(&call->args, dirpath, sizeof(dirpath), MNTPATHLEN))
		return garbage(call);
	rc = clean_dirpath(dirpath, path, sizeof(path));
	if (rc) {
		stat = errno_to_mnt(rc);
	} else {
		t = exports_acquire(s);
		stat = mnt_resolve(call, s, t, path, &fh);
		exports_release(t);
	}
	xdr_put_u32(res, stat);
	if (stat == MNT3_OK) {
		xdr_put_opaque(res, fh.data, fh.len);
		/* Linux clients want AUTH_UNIX listed to proceed. */
		xdr_put_u32(res, 1);
		xdr_put_u32(res, RPC_AUTH_SYS);
		peer_host(call, host, sizeof(host));
		mount_list_add(s, host, path);
		log_debug("%s: mounted %s", host, path);
	}
	return res->err ? RPC_SYSTEM_ERR : RPC_SUCCESS;
}

/* MOUNTPROC3_DUMP: the mount list as a linked list (I.4.2). */
static int mnt_dump(struct rpc_call *call, struct xdr_out *res)
{
	struct snfsd *s = call->ctx;

	pthread_mutex_lock(&s->mounts_lock);
	for (const struct mount_entry *m = s->mounts; m; m = m->next) {
		xdr_put_bool(res, true);
		xdr_put_string(res, m->host);
		xdr_put_string(res, m->path);
	}
	pthread_mutex_unlock(&s->mounts_lock);
	xdr_put_bool(res, false);
	return res->err ? RPC_SYSTEM_ERR : RPC_SUCCESS;
}

/* MOUNTPROC3_UMNT: dirpath -> void (I.4.3). */
static int mnt_umnt(struct rpc_call *call, struct xdr_out *res)
{
	char dirpath[MNTPATHLEN + 1], path[MNTPATHLEN + 1], host[64];

	(void)res;
	if (!xdr_get_string(&call->args, dirpath, sizeof(dirpath), MNTPATHLEN))
		return garbage(call);
	if (clean_dirpath(dirpath, path, sizeof(path)))
		return RPC_SUCCESS; /* never recorded */
	peer_host(call, host, sizeof(host));
	mount_list_remove(call->ctx, host, path);
	return RPC_SUCCESS;
}

/* MOUNTPROC3_UMNTALL: void -> void (I.4.4). */
static int mnt_umntall(struct rpc_call *call, struct xdr_out *res)
{
	char host[64];

	(void)res;
	peer_host(call, host, sizeof(host));
	mount_list_remove(call->ctx, host, NULL);
	return RPC_SUCCESS;
}

/* The groups of one export: each rule's host pattern once. */
static void put_groups(struct xdr_out *res, const struct export *ex)
{
	for (size_t i = 0; i < ex->nrules; i++) {
		const char *pat =
		    ex->rules[i].pattern ? ex->rules[i].pattern : "*";
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = ex->rules[j].pattern &&
			       !strcmp(ex->rules[j].pattern, pat);
		if (seen)
			continue;
		xdr_put_bool(res, true);
		xdr_put_string(res, pat);
	}
	xdr_put_bool(res, false);
}

/* MOUNTPROC3_EXPORT: every export with its groups (I.4.5). */
static int mnt_export(struct rpc_call *call, struct xdr_out *res)
{
	struct export_table *t = exports_acquire(call->ctx);

	for (size_t i = 0; t && i < t->n; i++) {
		xdr_put_bool(res, true);
		xdr_put_string(res, t->v[i].path);
		put_groups(res, &t->v[i]);
	}
	xdr_put_bool(res, false);
	exports_release(t);
	return res->err ? RPC_SYSTEM_ERR : RPC_SUCCESS;
}

static const struct rpc_proc mount3_procs[] = {
    [0] = {"NULL", mnt_null},       [1] = {"MNT", mnt_mnt},
    [2] = {"DUMP", mnt_dump},       [3] = {"UMNT", mnt_umnt},
    [4] = {"UMNTALL", mnt_umntall}, [5] = {"EXPORT", mnt_export},
};

/* v1 has the same DUMP, UMNT, UMNTALL and EXPORT; its MNT returns a
 * 32-byte handle ours do not fit, so it is PROC_UNAVAIL. */
static const struct rpc_proc mount1_procs[] = {
    [0] = {"NULL", mnt_null},       [1] = {"MNT", NULL},
    [2] = {"DUMP", mnt_dump},       [3] = {"UMNT", mnt_umnt},
    [4] = {"UMNTALL", mnt_umntall}, [5] = {"EXPORT", mnt_export},
};

#define NPROCS(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

const struct rpc_version mount3_version = {
    .vers = 3,
    .procs = mount3_procs,
    .nprocs = NPROCS(mount3_procs),
};

const struct rpc_version mount_versions[MOUNT_NVERSIONS] = {
    {.vers = 1, .procs = mount1_procs, .nprocs = NPROCS(mount1_procs)},
    {.vers = 3, .procs = mount3_procs, .nprocs = NPROCS(mount3_procs)},
};
