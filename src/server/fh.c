/* NFS file handles and per-call access resolution.
 *
 * Wire layout (at most 54 bytes, within NFS3_FHSIZE 64):
 *
 *   [version 1][fsid 4, big-endian][backend handle length 1]
 *   [backend handle 0..BK_HANDLE_MAX][MAC 8]
 *
 * The MAC is SipHash-2-4 over every byte before it, keyed with the
 * server's secret key, so a handle that was not made here (forged,
 * truncated, a flipped bit) fails before any file system work. */
#include "server/fh.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "server/siphash.h"
#include "server/snfsd.h"
#include "util/log.h"

#define FH_VERSION 2
/* version, fsid, export path tag, backend length */
#define FH_HDR_LEN 10
#define FH_BLEN_OFF 9
#define FH_MAC_LEN 8

_Static_assert(FH_HDR_LEN + BK_HANDLE_MAX + FH_MAC_LEN <= NFS_FH_MAX,
               "file handle does not fit NFS_FH_MAX");

static void fh_mac(const struct snfsd *s, const uint8_t *p, size_t n,
                   uint8_t mac[FH_MAC_LEN])
{
	uint64_t h = siphash24(s->fh_key, p, n);

	for (int i = 0; i < FH_MAC_LEN; i++)
		mac[i] = (uint8_t)(h >> (8 * i));
}

/* Compare without an early exit, so timing does not reveal how many
 * leading bytes of a guessed MAC were right. */
static bool mac_equal(const uint8_t *a, const uint8_t *b)
{
	uint8_t diff = 0;

	for (int i = 0; i < FH_MAC_LEN; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

/* A tag of the export's path, covered by the MAC: a handle issued for one
 * export is STALE under another that reuses its fsid= (say /srv narrowed
 * to /srv/public on SIGHUP), so it can never reach beyond its own root. */
static uint32_t path_tag(const struct snfsd *s, const struct export *ex)
{
	return (uint32_t)siphash24(s->fh_key, ex->path, strlen(ex->path));
}

/* The tag noted when the table was installed, if it was noted under
 * this key (a test's second server may share a table); else hashed. */
static uint32_t export_tag(const struct snfsd *s, const struct export *ex)
{
	if (ex->fh_tag_set &&
	    memcmp(ex->fh_tag_key, s->fh_key, sizeof(s->fh_key)) == 0)
		return ex->fh_tag;
	return path_tag(s, ex);
}

void fh_prepare_table(const struct snfsd *s, struct export_table *t)
{
	_Static_assert(sizeof(t->v[0].fh_tag_key) == sizeof(s->fh_key),
	               "the noted key is the handle key");
	for (size_t i = 0; i < t->n; i++) {
		struct export *ex = &t->v[i];

		ex->fh_tag = path_tag(s, ex);
		memcpy(ex->fh_tag_key, s->fh_key, sizeof(ex->fh_tag_key));
		ex->fh_tag_set = true;
	}
}

int fh_make(const struct snfsd *s, const struct export *ex,
            const struct bk_handle *bh, struct nfs_fh *out)
{
	uint8_t *p = out->data;
	uint32_t fsid = htonl(ex->fsid);
	uint32_t tag = htonl(export_tag(s, ex));

	if (bh->len > BK_HANDLE_MAX)
		return -EINVAL;
	p[0] = FH_VERSION;
	memcpy(p + 1, &fsid, 4);
	memcpy(p + 5, &tag, 4);
	p[FH_BLEN_OFF] = (uint8_t)bh->len;
	memcpy(p + FH_HDR_LEN, bh->data, bh->len);
	fh_mac(s, p, FH_HDR_LEN + bh->len, p + FH_HDR_LEN + bh->len);
	out->len = FH_HDR_LEN + bh->len + FH_MAC_LEN;
	return 0;
}

int fh_parse(const struct snfsd *s, const struct export_table *t,
             const uint8_t *p, uint32_t len, struct export **ex,
             struct bk_handle *bh)
{
	uint8_t mac[FH_MAC_LEN];
	uint32_t fsid, tag, blen;

	*ex = NULL;
	if (len < FH_HDR_LEN + FH_MAC_LEN || len > NFS_FH_MAX)
		return -EBADF;
	blen = p[FH_BLEN_OFF];
	if (p[0] != FH_VERSION || blen > BK_HANDLE_MAX ||
	    len != FH_HDR_LEN + blen + FH_MAC_LEN)
		return -EBADF;
	fh_mac(s, p, FH_HDR_LEN + blen, mac);
	if (!mac_equal(mac, p + FH_HDR_LEN + blen))
		return -EBADF;
	memcpy(&fsid, p + 1, 4);
	/* Genuine but its export is gone (unexported on SIGHUP). */
	*ex = t ? exports_by_fsid(t, ntohl(fsid)) : NULL;
	memcpy(&tag, p + 5, 4);
	if (*ex && ntohl(tag) != export_tag(s, *ex))
		*ex = NULL; /* fsid reused by another export */
	if (!*ex)
		return -ESTALE;
	bh->len = blen;
	memcpy(bh->data, p + FH_HDR_LEN, blen);
	return 0;
}

int nfs_req_resolve(struct rpc_call *call, const uint8_t *fh, uint32_t len,
                    struct nfs_req *r)
{
	const struct sockaddr *peer = (const struct sockaddr *)&call->peer;
	char who[80];
	uint16_t port;
	int rc;

	memset(r, 0, sizeof(*r));
	r->srv = call->ctx;
	r->tab = exports_acquire(r->srv);
	rc = fh_parse(r->srv, r->tab, fh, len, &r->ex, &r->bh);
	if (rc)
		return rc;
	r->rule = export_match(r->ex, peer);
	if (!r->rule) {
		log_debug("%s: not admitted to %s",
		          rpc_peer_str(peer, who, sizeof(who)), r->ex->path);
		return -EACCES;
	}
	/* exports(5) "secure": only clients that could bind a privileged
	 * port, i.e. whose root runs their NFS client. */
	port = rpc_peer_port(peer);
	if ((r->rule->flags & EXP_SECURE) && port >= 1024) {
		log_warn("%s: refused on %s: insecure source port "
		         "(export option 'secure'; use 'insecure' to allow)",
		         rpc_peer_str(peer, who, sizeof(who)), r->ex->path);
		return -EACCES;
	}
	export_squash(r->rule, &call->cred, &r->cred);
	r->rw = (r->rule->flags & EXP_RW) != 0;
	return 0;
}

int nfs_req_resolve2(const struct nfs_req *first, const uint8_t *fh,
                     uint32_t len, struct bk_handle *bh)
{
	struct export *ex;
	int rc = fh_parse(first->srv, first->tab, fh, len, &ex, bh);

	if (rc)
		return rc;
	return ex == first->ex ? 0 : -EXDEV;
}

void nfs_req_done(struct nfs_req *r)
{
	exports_release(r->tab);
	r->tab = NULL;
	r->ex = NULL;
	r->rule = NULL;
}
