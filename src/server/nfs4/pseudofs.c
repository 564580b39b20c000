/* The NFSv4 name space (RFC 7530 7, RFC 8881 7): a read-only pseudo file
 * system whose directories are the path prefixes of the exports, so that
 * `mount host:/` reaches every export the client is admitted to.
 *
 * A pseudo directory is named by a prefix of an export's path. Its wire
 * handle is our own: a magic that no export handle starts with (those
 * begin with fh.c's version byte) and a hash of the path, which stays the
 * same across restarts as long as the exports do. */
#include <errno.h>
#include <string.h>

#include "server/nfs4/nfs4.h"
#include "server/snfsd.h"

static const uint8_t pseudo_magic[8] = {0xf4, 'S', 'N', 'F', 'S', '4', 'P', 0};
#define PSEUDO_FH_LEN 16

static uint64_t path_hash(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	if (n == 0) { /* the root */
		p = "/";
		n = 1;
	}
	for (size_t i = 0; i < n; i++) {
		h ^= (uint8_t)p[i];
		h *= 0x100000001b3ull;
	}
	/* fileid 0 is not a valid file; keep pseudo ids off small inode
	 * numbers too. */
	return h | (1ull << 63);
}

static const struct sockaddr *peer_of(const struct nfs4_compound *c)
{
	return (const struct sockaddr *)&c->call->peer;
}

static bool admitted(const struct nfs4_compound *c, const struct export *ex)
{
	return export_match(ex, peer_of(c)) != NULL;
}

/* The export whose path is exactly p[0..n), if the client may see it. */
static struct export *export_at(const struct nfs4_compound *c, const char *p,
                                size_t n)
{
	if (n == 0) {
		p = "/";
		n = 1;
	}
	for (size_t i = 0; i < c->tab->n; i++) {
		struct export *ex = &c->tab->v[i];
		if (strlen(ex->path) == n && !memcmp(ex->path, p, n) &&
		    admitted(c, ex))
			return ex;
	}
	return NULL;
}

/* An admitted export strictly below the directory p[0..n) ("" = root). */
static struct export *export_below(const struct nfs4_compound *c, const char *p,
                                   size_t n)
{
	for (size_t i = 0; i < c->tab->n; i++) {
		struct export *ex = &c->tab->v[i];
		size_t l = strlen(ex->path);
		if (!admitted(c, ex) || l <= n + 1)
			continue;
		if (n == 0 ? ex->path[0] == '/'
		           : !memcmp(ex->path, p, n) && ex->path[n] == '/')
			return ex;
	}
	return NULL;
}

static void set_pseudo(struct nfs4_fh *fh, struct export *ex, size_t plen)
{
	memset(fh, 0, sizeof(*fh));
	fh->kind = FH4_PSEUDO;
	fh->ex = ex;
	fh->plen = plen;
}

/* An export file handle for this call: the export's rules admit the
 * client, "secure" wants a privileged port, credentials are squashed. */
static uint32_t set_export(struct nfs4_compound *c, struct export *ex,
                           const struct bk_handle *bh, struct nfs4_fh *fh)
{
	const struct export_rule *rule = export_match(ex, peer_of(c));

	if (!rule)
		return NFS4ERR_ACCESS;
	if ((rule->flags & EXP_SECURE) && rpc_peer_port(peer_of(c)) >= 1024)
		return NFS4ERR_ACCESS;
	memset(fh, 0, sizeof(*fh));
	fh->kind = FH4_EXPORT;
	fh->ex = ex;
	fh->bh = *bh;
	fh->rule = rule;
	fh->rw = (rule->flags & EXP_RW) != 0;
	export_squash(rule, &c->call->cred, &fh->cred);
	return NFS4_OK;
}

static uint32_t export_root_fh(struct nfs4_compound *c, struct export *ex,
                               struct nfs4_fh *fh)
{
	struct bk_handle bh;
	int rc = ex->ops->root(ex->bk, &bh);

	if (rc)
		return nfs4_errno(rc);
	return set_export(c, ex, &bh, fh);
}

/* A path in the tree: an export root, a pseudo directory, or nothing. */
static uint32_t node_at(struct nfs4_compound *c, const char *p, size_t n,
                        struct nfs4_fh *fh)
{
	struct export *ex = export_at(c, p, n);

	if (ex)
		return export_root_fh(c, ex, fh);
	if (n == 0) {
		set_pseudo(fh, export_below(c, "", 0), 0);
		return NFS4_OK;
	}
	ex = export_below(c, p, n);
	if (!ex)
		return NFS4ERR_NOENT;
	set_pseudo(fh, ex, n);
	return NFS4_OK;
}

uint32_t nfs4_fh_root(struct nfs4_compound *c, struct nfs4_fh *fh)
{
	return node_at(c, "", 0, fh);
}

static uint32_t pseudo_from_hash(struct nfs4_compound *c, uint64_t h,
                                 struct nfs4_fh *fh)
{
	if (h == path_hash("", 0))
		return node_at(c, "", 0, fh);
	for (size_t i = 0; i < c->tab->n; i++) {
		struct export *ex = &c->tab->v[i];
		if (!admitted(c, ex))
			continue;
		for (size_t k = 1; ex->path[k]; k++) {
			if (ex->path[k] != '/' || path_hash(ex->path, k) != h)
				continue;
			return node_at(c, ex->path, k, fh);
		}
	}
	/* Its exports are gone (SIGHUP) or hidden from this client. */
	return NFS4ERR_STALE;
}

uint32_t nfs4_fh_from_wire(struct nfs4_compound *c, const uint8_t *p,
                           uint32_t len, struct nfs4_fh *fh)
{
	struct export *ex;
	struct bk_handle bh;
	int rc;

	if (len == PSEUDO_FH_LEN && !memcmp(p, pseudo_magic, 8)) {
		uint64_t h = 0;
		for (int i = 0; i < 8; i++)
			h = h << 8 | p[8 + i];
		return pseudo_from_hash(c, h, fh);
	}
	rc = fh_parse(c->srv, c->tab, p, len, &ex, &bh);
	if (rc == -ESTALE)
		return NFS4ERR_STALE;
	if (rc)
		return NFS4ERR_BADHANDLE;
	return set_export(c, ex, &bh, fh);
}

uint32_t nfs4_fh_to_wire(struct nfs4_compound *c, const struct nfs4_fh *fh,
                         struct nfs_fh *out)
{
	if (fh->kind == FH4_PSEUDO) {
		uint64_t h = nfs4_pseudo_fileid(fh);
		memcpy(out->data, pseudo_magic, 8);
		for (int i = 0; i < 8; i++)
			out->data[8 + i] = (uint8_t)(h >> (56 - 8 * i));
		out->len = PSEUDO_FH_LEN;
		return NFS4_OK;
	}
	if (fh->kind != FH4_EXPORT)
		return NFS4ERR_NOFILEHANDLE;
	if (fh_make(c->srv, fh->ex, &fh->bh, out))
		return NFS4ERR_SERVERFAULT;
	return NFS4_OK;
}

uint64_t nfs4_pseudo_fileid(const struct nfs4_fh *fh)
{
	return path_hash(fh->ex ? fh->ex->path : "", fh->ex ? fh->plen : 0);
}

uint64_t nfs4_export_mounted_on(const struct export *ex)
{
	return path_hash(ex->path, strlen(ex->path));
}

bool nfs4_fh_is_export_root(const struct nfs4_fh *fh)
{
	struct bk_handle root;

	if (fh->kind != FH4_EXPORT || fh->ex->ops->root(fh->ex->bk, &root))
		return false;
	return root.len == fh->bh.len &&
	       !memcmp(root.data, fh->bh.data, root.len);
}

uint32_t nfs4_pseudo_lookup(struct nfs4_compound *c, const struct nfs4_fh *dir,
                            const char *name, struct nfs4_fh *out)
{
	char path[BK_PATH_MAX];
	size_t n = dir->ex ? dir->plen : 0;
	size_t nl = strlen(name);

	if (!dir->ex)
		return NFS4ERR_NOENT; /* an empty root */
	if (n + 1 + nl >= sizeof(path))
		return NFS4ERR_NAMETOOLONG;
	memcpy(path, dir->ex->path, n);
	path[n] = '/';
	memcpy(path + n + 1, name, nl);
	return node_at(c, path, n + 1 + nl, out);
}

/* The parent of the tree node at p[0..n) (n > 0). */
static uint32_t parent_node(struct nfs4_compound *c, const char *p, size_t n,
                            struct nfs4_fh *out)
{
	while (n > 0 && p[n - 1] != '/')
		n--;
	if (n > 0)
		n--; /* drop the slash: "/a/b" -> "/a", "/a" -> "" */
	return node_at(c, p, n, out);
}

uint32_t nfs4_lookupp(struct nfs4_compound *c, const struct nfs4_fh *fh,
                      struct nfs4_fh *out)
{
	struct bk_handle bh;
	struct bk_attr a;
	int rc;

	if (fh->kind == FH4_PSEUDO) {
		if (!fh->ex || fh->plen == 0)
			return NFS4ERR_NOENT;
		return parent_node(c, fh->ex->path, fh->plen, out);
	}
	if (nfs4_fh_is_export_root(fh)) {
		size_t n = strlen(fh->ex->path);
		if (n <= 1)
			return NFS4ERR_NOENT;
		return parent_node(c, fh->ex->path, n, out);
	}
	rc = fh->ex->ops->lookup(fh->ex->bk, &fh->cred, &fh->bh, "..", &bh, &a);
	if (rc)
		return nfs4_errno(rc);
	*out = *fh;
	out->bh = bh;
	return NFS4_OK;
}

/* The next path component of ex below the pseudo directory dir. */
static bool child_of(const struct nfs4_compound *c, const struct export *ex,
                     const struct nfs4_fh *dir, const char **s, size_t *l)
{
	size_t n = dir->plen;

	if (!admitted(c, ex) || strlen(ex->path) <= n + 1)
		return false;
	if (n ? memcmp(ex->path, dir->ex->path, n) || ex->path[n] != '/'
	      : ex->path[0] != '/')
		return false;
	*s = ex->path + n + 1;
	*l = strcspn(*s, "/");
	return *l > 0;
}

/* The want-th distinct child name of the pseudo directory dir; false when
 * there are no more. */
static bool pseudo_child(struct nfs4_compound *c, const struct nfs4_fh *dir,
                         size_t want, const char **name, size_t *namelen)
{
	size_t seen = 0;

	for (size_t i = 0; i < c->tab->n; i++) {
		const char *s, *so;
		size_t l, lo;
		bool dup = false;

		if (!child_of(c, &c->tab->v[i], dir, &s, &l))
			continue;
		for (size_t j = 0; j < i && !dup; j++)
			dup = child_of(c, &c->tab->v[j], dir, &so, &lo) &&
			      lo == l && !memcmp(so, s, l);
		if (dup)
			continue;
		if (seen++ == want) {
			*name = s;
			*namelen = l;
			return true;
		}
	}
	return false;
}

/* READDIR of a pseudo directory: cookies are 3 + the child's index
 * (0, 1 and 2 are reserved, RFC 7530 16.24.4). The verifier is zero:
 * the listing changes only with the exports. */
uint32_t nfs4_pseudo_readdir(struct nfs4_compound *c, uint64_t cookie,
                             uint32_t maxcount, const uint32_t req[3])
{
	struct xdr_out *x = c->res;
	size_t limit = x->len + maxcount;
	uint8_t verf[8] = {0};
	const char *name;
	size_t namelen, i = cookie >= 3 ? cookie - 2 : 0, n = 0;

	if (cookie == 1 || cookie == 2)
		return NFS4ERR_BAD_COOKIE;
	xdr_put_fixed(x, verf, 8);
	if (limit < x->len + 8)
		return NFS4ERR_TOOSMALL;
	limit -= 8;     /* room for the end of the list and eof */
	if (!c->cfh.ex) /* a root with no exports */
		goto done;
	for (; pseudo_child(c, &c->cfh, i, &name, &namelen); i++, n++) {
		struct nfs4_attr_src src;
		struct nfs4_fh fh;
		char nm[BK_NAME_MAX + 1];
		uint32_t st;

		if (namelen > BK_NAME_MAX)
			continue;
		memcpy(nm, name, namelen);
		nm[namelen] = 0;
		memset(&src, 0, sizeof(src));
		st = nfs4_pseudo_lookup(c, &c->cfh, nm, &fh);
		if (st == NFS4_OK)
			st = nfs4_attr_load(c, &fh, &src);
		if (st != NFS4_OK)
			src.rdattr_error = st;
		src.fh = &fh;
		if (st == NFS4_OK && fh.kind == FH4_EXPORT) {
			src.mounted_on_set = true;
			src.mounted_on = nfs4_export_mounted_on(fh.ex);
		}
		if (!nfs4_put_dirent(c, x, limit, i + 3, nm, namelen, req,
		                     &src)) {
			if (n == 0)
				return NFS4ERR_TOOSMALL;
			xdr_put_u32(x, 0);
			xdr_put_bool(x, false);
			return NFS4_OK;
		}
	}
done:
	xdr_put_u32(x, 0);
	xdr_put_bool(x, true);
	return NFS4_OK;
}
