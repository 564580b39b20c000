/* Mounting over NFSv3: find the NFS and MOUNT ports (URL, portmapper, or
 * MOUNT on the NFS port as snfsd serves it), find the export (the EXPORT
 * list, else MNT on successively shorter prefixes of the URL path), and
 * size transfers from FSINFO. */
#include "client/mount3.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/nfs3_xdr.h"

#define PMAPPROC_GETPORT 3
#define MNTPROC_MNT 1
#define MNTPROC_EXPORT 5
#define MNT_PATH_MAX 1024
#define MAX_EXPORTS 4096
#define IPPROTO_TCP_NUM 6

/* RFC 1833 section 3.2: PMAPPROC_GETPORT. Returns the port or -errno. */
static int pmap_getport(struct snfs_ctx *c, uint32_t prog, uint32_t vers)
{
	struct rpc_clnt_cfg cfg = c->rpc_cfg;
	struct rpc_clnt *pc;
	struct rpc_reply rep;
	struct xdr_out a;
	uint32_t port = 0;

	cfg.port = 111;
	cfg.timeout_ms = cfg.timeout_ms < 3000 ? cfg.timeout_ms : 3000;
	int rc = rpc_clnt_open(&cfg, &pc);
	if (rc < 0)
		return rc;
	if (xdr_out_init(&a, 64, 256) < 0) {
		rpc_clnt_close(pc);
		return -ENOMEM;
	}
	xdr_put_u32(&a, prog);
	xdr_put_u32(&a, vers);
	xdr_put_u32(&a, IPPROTO_TCP_NUM);
	xdr_put_u32(&a, 0);
	rc = rpc_call(pc, PMAP_PROG, PMAP_VERS, PMAPPROC_GETPORT,
	              SNFS_OP_GETPORT, &a, &rep);
	if (rc == 0) {
		if (!xdr_get_u32(&rep.res, &port) || port == 0 || port > 65535)
			rc = port == 0 ? -EPROTONOSUPPORT : -EPROTO;
		rpc_reply_free(&rep);
	}
	rpc_clnt_close(pc);
	return rc < 0 ? rc : (int)port;
}

/* exports: value_follows, dirpath, groups (a list), next... decoded in a
 * loop. Returns the number of names or -errno. */
static int mount_export_list(struct rpc_clnt *mc, char ***out)
{
	struct xdr_out a;
	struct rpc_reply rep;
	char **names = NULL;
	int n = 0, rc;
	bool more;

	if (xdr_out_init(&a, 64, 64) < 0)
		return -ENOMEM;
	rc = rpc_call(mc, MOUNT_PROG, MOUNT_VERS, MNTPROC_EXPORT, SNFS_OP_MOUNT,
	              &a, &rep);
	if (rc < 0)
		return rc;
	struct xdr_in *x = &rep.res;
	/* A failed get leaves its output unset: every flag starts false
	 * and only a successful get sets it (found by fuzz_client_replies). */
	more = false;
	xdr_get_bool(x, &more);
	while (more && !x->err && n < MAX_EXPORTS) {
		char path[MNT_PATH_MAX + 1];
		bool g = false;
		if (!xdr_get_string(x, path, sizeof(path), MNT_PATH_MAX))
			break;
		if (!xdr_get_bool(x, &g))
			g = false;
		while (g && !x->err) {
			const uint8_t *p;
			uint32_t len;
			if (!xdr_get_opaque_ref(x, &p, &len, 255) ||
			    !xdr_get_bool(x, &g))
				g = false;
		}
		char **nn = realloc(names, (size_t)(n + 1) * sizeof(*names));
		if (!nn || !(nn[n] = strdup(path))) {
			names = nn ? nn : names;
			rc = -ENOMEM;
			break;
		}
		names = nn;
		n++;
		if (!xdr_get_bool(x, &more))
			more = false;
	}
	if (x->err && rc == 0)
		rc = -EPROTO;
	rpc_reply_free(&rep);
	if (rc < 0) {
		for (int i = 0; i < n; i++)
			free(names[i]);
		free(names);
		return rc;
	}
	*out = names;
	return n;
}

/* Is prefix a whole-component prefix of path? */
static bool path_has_prefix(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);
	while (n > 1 && prefix[n - 1] == '/')
		n--;
	if (n == 1 && prefix[0] == '/')
		return path[0] == '/';
	return strncmp(path, prefix, n) == 0 &&
	       (path[n] == 0 || path[n] == '/');
}

const char *mount3_pick_export(const char *path, char *const *exports, size_t n)
{
	const char *best = NULL;
	for (size_t i = 0; i < n; i++)
		if (path_has_prefix(path, exports[i]) &&
		    (!best || strlen(exports[i]) > strlen(best)))
			best = exports[i];
	return best;
}

/* MNT (appendix I, MOUNTPROC3_MNT). Returns 0, -errno, or a mountstat3
 * mapped to -errno. */
static int mount_mnt(struct rpc_clnt *mc, const char *path, struct snfs_fh *fh)
{
	struct xdr_out a;
	struct rpc_reply rep;
	uint32_t s;
	int rc;

	if (xdr_out_init(&a, 1100, 1100) < 0)
		return -ENOMEM;
	xdr_put_string(&a, path);
	rc = rpc_call(mc, MOUNT_PROG, MOUNT_VERS, MNTPROC_MNT, SNFS_OP_MOUNT,
	              &a, &rep);
	if (rc < 0)
		return rc;
	if (!xdr_get_u32(&rep.res, &s))
		s = 10006;
	else if (s == 0 && !nfs3_get_fh(&rep.res, fh))
		s = 10006;
	rc = rep.res.err ? -EPROTO : nfs3_errno(s);
	rpc_reply_free(&rep);
	return rc;
}

/* Try MNT on the path and then on each shorter prefix of it. */
static int mount_by_prefix(struct snfs_ctx *c, struct rpc_clnt *mc,
                           const char *path, char **export)
{
	char *p = strdup(path);
	int rc = -ENOENT;

	if (!p)
		return -ENOMEM;
	for (;;) {
		rc = mount_mnt(mc, p, &c->root);
		if (rc == 0 || rc == -ETIMEDOUT || rc == -EPROTO ||
		    rc == -ECONNREFUSED)
			break;
		char *slash = strrchr(p, '/');
		if (!slash || slash == p) {
			if (strcmp(p, "/") == 0)
				break;
			p[1] = 0;
		} else {
			*slash = 0;
		}
	}
	if (rc == 0)
		*export = p;
	else
		free(p);
	return rc;
}

static int find_export(struct snfs_ctx *c, struct rpc_clnt *mc)
{
	const char *path = c->url.path;
	char **names = NULL;
	int n = mount_export_list(mc, &names), rc = -ENOENT;
	char *export = NULL;

	if (n > 0) {
		const char *best = mount3_pick_export(path, names, (size_t)n);
		if (best && mount_mnt(mc, best, &c->root) == 0)
			export = strdup(best);
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (export)
		rc = 0;
	else
		rc = mount_by_prefix(c, mc, path, &export);
	if (rc < 0)
		return snfs_fail(rc, "%s: cannot mount: %s", path,
		                 strerror(-rc == 10003 ? EIO : -rc));
	size_t el = strlen(export);
	while (el > 1 && export[el - 1] == '/')
		export[--el] = 0;
	const char *rest = path + (strcmp(export, "/") == 0 ? 0 : el);
	while (*rest == '/')
		rest++;
	c->export = export;
	c->url_path = strdup(rest);
	if (!c->url_path)
		return -ENOMEM;
	return 0;
}

/* Open the MOUNT client: ?mountport=, else MOUNT on the NFS port (snfsd
 * serves both there), else the portmapper's answer. */
static int open_mount_clnt(struct snfs_ctx *c, uint16_t nfsport,
                           struct rpc_clnt **mc, bool *shared)
{
	struct rpc_clnt_cfg cfg = c->rpc_cfg;
	int rc;

	*shared = false;
	if (c->url.mountport) {
		cfg.port = c->url.mountport;
		return rpc_clnt_open(&cfg, mc);
	}
	if (c->url.nfsport || c->url.port) {
		struct xdr_out a;
		struct rpc_reply rep;
		if (xdr_out_init(&a, 16, 16) < 0)
			return -ENOMEM;
		rc = rpc_call(c->rpc, MOUNT_PROG, MOUNT_VERS, 0, SNFS_OP_MOUNT,
		              &a, &rep);
		if (rc == 0) {
			rpc_reply_free(&rep);
			*mc = c->rpc;
			*shared = true;
			return 0;
		}
	}
	rc = pmap_getport(c, MOUNT_PROG, MOUNT_VERS);
	if (rc < 0)
		return rc;
	cfg.port = (uint16_t)rc;
	(void)nfsport;
	return rpc_clnt_open(&cfg, mc);
}

int nfs3_mount(struct snfs_ctx *c)
{
	uint16_t port = c->url.nfsport ? c->url.nfsport : c->url.port;
	struct rpc_clnt *mc;
	bool shared;
	int rc;

	if (!port) {
		rc = pmap_getport(c, NFS3_PROG, NFS3_VERS);
		port = rc > 0 ? (uint16_t)rc : 2049;
	}
	c->rpc_cfg.port = port;
	c->rpc_cfg.stats = &c->stats;
	rc = rpc_clnt_open(&c->rpc_cfg, &c->rpc);
	if (rc < 0)
		return snfs_fail(rc, "%s port %u: %s", c->url.host, port,
		                 strerror(-rc));
	rc = open_mount_clnt(c, port, &mc, &shared);
	if (rc < 0)
		return snfs_fail(rc, "%s: no MOUNT service: %s", c->url.host,
		                 strerror(-rc));
	rc = find_export(c, mc);
	if (!shared)
		rpc_clnt_close(mc);
	if (rc < 0)
		return rc;
	uint32_t rtmax = 0, wtmax = 0, dtpref = 0;
	rc = nfs3_fsinfo(c, &rtmax, &wtmax, &dtpref);
	if (rc < 0)
		return snfs_fail(rc, "FSINFO: %s", strerror(-rc));
	if (rtmax >= 4096 && c->rsize > rtmax)
		c->rsize = rtmax;
	if (wtmax >= 4096 && c->wsize > wtmax)
		c->wsize = wtmax;
	return 0;
}

void nfs3_umount(struct snfs_ctx *c)
{
	(void)c; /* MOUNT's UMNT is advisory; we keep no MOUNT connection */
}
