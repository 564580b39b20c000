/* The handle-based API (snfs.h, "By handle"): what an inode-based caller
 * such as snfs-mount needs besides the path API. Every call goes through
 * ctx->ops, so it works for each protocol version the library speaks; only
 * MKNOD, which the operations table lacks, is NFSv3-specific here. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/nfs3_xdr.h"
#include "client/pagecache.h"
#include "client/readdir.h"

static int to_fh(const struct snfs_handle *h, struct snfs_fh *fh)
{
	if (h->len == 0 || h->len > SNFS_FH_MAX)
		return -EINVAL;
	fh->len = h->len;
	memcpy(fh->data, h->data, h->len);
	return 0;
}

static void from_fh(const struct snfs_fh *fh, struct snfs_handle *h)
{
	h->len = fh->len;
	memcpy(h->data, fh->data, fh->len);
}

/* Fail with "what: strerror" (the message for snfs_last_error()). */
static int fail(int rc, const char *what)
{
	if (rc == -SNFS_EBADCOOKIE)
		rc = -EIO;
	return snfs_fail(rc, "%s: %s", what, strerror(-rc));
}

/* The page cache's file for fh if one exists (with a reference), without
 * creating one. */
static struct pc_file *pc_find(struct snfs_ctx *c, const struct snfs_fh *fh)
{
	struct pc_cache *pc = c->pc;
	struct pc_file *f, *found = NULL;

	pthread_mutex_lock(&pc->lock);
	for (f = pc->files.next; f != &pc->files; f = f->next)
		if (fh_equal(&f->fh, fh)) {
			f->refs++;
			found = f;
			break;
		}
	pthread_mutex_unlock(&pc->lock);
	return found;
}

/* Bytes we hold but have not yet written make the file longer than the
 * server says (as snfs_fstat reports). */
static void add_cached_size(struct snfs_ctx *c, const struct snfs_fh *fh,
                            struct snfs_stat *st)
{
	if (st->type != SNFS_REG)
		return;
	struct pc_file *f = pc_find(c, fh);
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	if ((f->dirty_bytes || f->unstable_bytes) && f->size > st->size)
		st->size = f->size;
	pthread_mutex_unlock(&f->lock);
	pc_file_put(f);
}

static int getattr_fh(struct snfs_ctx *c, const struct snfs_fh *fh,
                      struct snfs_stat *st)
{
	int rc = c->ops->getattr(c, fh, st);
	if (rc == 0)
		add_cached_size(c, fh, st);
	return rc;
}

int snfs_h_base(struct snfs_ctx *c, struct snfs_handle *h, struct snfs_stat *st)
{
	struct snfs_fh fh;
	int rc = snfs_resolve(c, "", true, &fh, st);
	if (rc < 0)
		return fail(rc, c->url_path[0] ? c->url_path : "/");
	from_fh(&fh, h);
	return 0;
}

/* Look name up in dir; the attributes come with the reply or from a
 * GETATTR. */
static int lookup_fh(struct snfs_ctx *c, const struct snfs_fh *dir,
                     const char *name, struct snfs_fh *out,
                     struct snfs_stat *st)
{
	bool have = false;
	int rc = c->ops->lookup(c, dir, name, out, st, &have);
	if (rc == 0 && !have)
		rc = c->ops->getattr(c, out, st);
	if (rc == 0)
		add_cached_size(c, out, st);
	return rc;
}

int snfs_h_lookup(struct snfs_ctx *c, const struct snfs_handle *dir,
                  const char *name, struct snfs_handle *out,
                  struct snfs_stat *st)
{
	struct snfs_fh d, fh;
	int rc = to_fh(dir, &d);
	if (rc == 0)
		rc = lookup_fh(c, &d, name, &fh, st);
	if (rc < 0)
		return snfs_fail(rc, "lookup %s: %s", name, strerror(-rc));
	from_fh(&fh, out);
	return 0;
}

int snfs_h_getattr(struct snfs_ctx *c, const struct snfs_handle *h,
                   struct snfs_stat *st)
{
	struct snfs_fh fh;
	int rc = to_fh(h, &fh);
	if (rc == 0)
		rc = getattr_fh(c, &fh, st);
	return rc < 0 ? fail(rc, "getattr") : 0;
}

/* Before times are set, send what we hold unwritten: a WRITE arriving
 * after the SETATTR would move mtime again (cp -a, touch after write). */
static int flush_before_setattr(struct snfs_ctx *c, const struct snfs_fh *fh)
{
	struct pc_file *f = pc_find(c, fh);
	if (!f)
		return 0;
	int rc = pc_flush(f, false);
	pc_file_put(f);
	return rc;
}

int snfs_h_setattr(struct snfs_ctx *c, const struct snfs_handle *h,
                   const struct snfs_setattr *sa, struct snfs_stat *st)
{
	struct snfs_fh fh;
	struct snfs_stat post;
	bool have = false;
	int rc = to_fh(h, &fh);

	if (rc == 0 && (sa->mask & SNFS_SET_SIZE)) {
		struct pc_file *f = pc_file_get(c, &fh);
		rc = f ? pc_truncate(f, sa->size) : -ENOMEM;
		if (f)
			pc_file_put(f);
	}
	struct snfs_setattr rest = *sa;
	rest.mask &= ~(unsigned)SNFS_SET_SIZE;
	if (rc == 0 && rest.mask)
		rc = flush_before_setattr(c, &fh);
	if (rc == 0 && rest.mask)
		rc = c->ops->setattr(c, &fh, &rest, &post, &have);
	if (rc == 0 && st) {
		if (have) {
			*st = post;
			add_cached_size(c, &fh, st);
		} else {
			rc = getattr_fh(c, &fh, st);
		}
	}
	return rc < 0 ? fail(rc, "setattr") : 0;
}

int snfs_h_statvfs(struct snfs_ctx *c, const struct snfs_handle *h,
                   struct snfs_statvfs *sv)
{
	struct snfs_fh fh;
	int rc = to_fh(h, &fh);
	if (rc == 0)
		rc = c->ops->statvfs(c, &fh, sv);
	return rc < 0 ? fail(rc, "statfs") : 0;
}

int snfs_h_readlink(struct snfs_ctx *c, const struct snfs_handle *h, char *buf,
                    size_t size)
{
	struct snfs_fh fh;
	int rc = to_fh(h, &fh);
	if (rc == 0)
		rc = c->ops->readlink(c, &fh, buf, size);
	return rc < 0 ? fail(rc, "readlink") : rc;
}

/* ---- names ---- */

/* After an operation that made name in dir: its handle and attributes. */
static int made(struct snfs_ctx *c, const struct snfs_fh *dir, const char *name,
                struct snfs_handle *out, struct snfs_stat *st)
{
	struct snfs_fh fh;
	int rc = lookup_fh(c, dir, name, &fh, st);
	if (rc == 0)
		from_fh(&fh, out);
	return rc;
}

int snfs_h_create(struct snfs_ctx *c, const struct snfs_handle *dir,
                  const char *name, mode_t mode, bool excl,
                  struct snfs_handle *out, struct snfs_stat *st)
{
	struct snfs_fh d, fh;
	int rc = to_fh(dir, &d);
	if (rc == 0)
		rc = c->ops->create(c, &d, name, mode & 07777, excl, &fh);
	if (rc == 0)
		rc = getattr_fh(c, &fh, st);
	if (rc < 0)
		return snfs_fail(rc, "create %s: %s", name, strerror(-rc));
	from_fh(&fh, out);
	return 0;
}

/* MKNOD3 (RFC 1813 section 3.3.11), sent here while nfs3.c's table has
 * no mknod row; other versions use their row or answer -EOPNOTSUPP. */
static int nfs3_mknod(struct snfs_ctx *c, const struct snfs_fh *dir,
                      const char *name, enum snfs_ftype type, mode_t mode,
                      uint32_t major, uint32_t minor)
{
	struct snfs_setattr sa = {.mask = SNFS_SET_MODE, .mode = mode & 07777};
	struct xdr_out a;
	struct rpc_reply rep;
	uint32_t s;

	if (xdr_out_init(&a, 1024, 8192) < 0)
		return -ENOMEM;
	nfs3_put_fh(&a, dir);
	xdr_put_string(&a, name);
	xdr_put_u32(&a, (uint32_t)type);
	nfs3_put_sattr(&a, &sa);
	if (type == SNFS_CHR || type == SNFS_BLK) {
		xdr_put_u32(&a, major);
		xdr_put_u32(&a, minor);
	}
	int rc = rpc_call(c->rpc, NFS3_PROG, NFS3_VERS, C3_MKNOD, SNFS_OP_MKNOD,
	                  &a, &rep);
	if (rc < 0)
		return rc;
	rc = xdr_get_u32(&rep.res, &s) ? nfs3_errno(s) : -EPROTO;
	rpc_reply_free(&rep);
	return rc;
}

int snfs_h_mknod(struct snfs_ctx *c, const struct snfs_handle *dir,
                 const char *name, enum snfs_ftype type, mode_t mode,
                 uint32_t major, uint32_t minor, struct snfs_handle *out,
                 struct snfs_stat *st)
{
	struct snfs_fh d;
	int rc = to_fh(dir, &d);

	if (rc == 0 && type != SNFS_FIFO && type != SNFS_SOCK &&
	    type != SNFS_CHR && type != SNFS_BLK)
		rc = -EINVAL;
	if (rc == 0 && c->ops->mknod)
		rc = c->ops->mknod(c, &d, name, type, mode & 07777, major,
		                   minor);
	else if (rc == 0 && c->ops == &snfs_nfs3_ops)
		rc = nfs3_mknod(c, &d, name, type, mode, major, minor);
	else if (rc == 0)
		rc = -EOPNOTSUPP;
	if (rc == 0)
		rc = made(c, &d, name, out, st);
	return rc < 0 ? snfs_fail(rc, "mknod %s: %s", name, strerror(-rc)) : 0;
}

int snfs_h_mkdir(struct snfs_ctx *c, const struct snfs_handle *dir,
                 const char *name, mode_t mode, struct snfs_handle *out,
                 struct snfs_stat *st)
{
	struct snfs_fh d;
	int rc = to_fh(dir, &d);
	if (rc == 0)
		rc = c->ops->mkdir(c, &d, name, mode & 07777);
	if (rc == 0)
		rc = made(c, &d, name, out, st);
	return rc < 0 ? snfs_fail(rc, "mkdir %s: %s", name, strerror(-rc)) : 0;
}

int snfs_h_symlink(struct snfs_ctx *c, const struct snfs_handle *dir,
                   const char *name, const char *target,
                   struct snfs_handle *out, struct snfs_stat *st)
{
	struct snfs_fh d;
	int rc = to_fh(dir, &d);
	if (rc == 0)
		rc = c->ops->symlink(c, &d, name, target);
	if (rc == 0)
		rc = made(c, &d, name, out, st);
	return rc < 0 ? snfs_fail(rc, "symlink %s: %s", name, strerror(-rc))
	              : 0;
}

int snfs_h_link(struct snfs_ctx *c, const struct snfs_handle *h,
                const struct snfs_handle *dir, const char *name)
{
	struct snfs_fh fh, d;
	int rc = to_fh(h, &fh);
	if (rc == 0)
		rc = to_fh(dir, &d);
	if (rc == 0)
		rc = c->ops->link(c, &fh, &d, name);
	return rc < 0 ? snfs_fail(rc, "link %s: %s", name, strerror(-rc)) : 0;
}

int snfs_h_unlink(struct snfs_ctx *c, const struct snfs_handle *dir,
                  const char *name)
{
	struct snfs_fh d;
	int rc = to_fh(dir, &d);
	if (rc == 0)
		rc = c->ops->remove(c, &d, name);
	return rc < 0 ? snfs_fail(rc, "unlink %s: %s", name, strerror(-rc)) : 0;
}

int snfs_h_rmdir(struct snfs_ctx *c, const struct snfs_handle *dir,
                 const char *name)
{
	struct snfs_fh d;
	int rc = to_fh(dir, &d);
	if (rc == 0)
		rc = c->ops->rmdir(c, &d, name);
	return rc < 0 ? snfs_fail(rc, "rmdir %s: %s", name, strerror(-rc)) : 0;
}

int snfs_h_rename(struct snfs_ctx *c, const struct snfs_handle *fdir,
                  const char *fname, const struct snfs_handle *tdir,
                  const char *tname)
{
	struct snfs_fh f, t;
	int rc = to_fh(fdir, &f);
	if (rc == 0)
		rc = to_fh(tdir, &t);
	if (rc == 0)
		rc = c->ops->rename(c, &f, fname, &t, tname);
	return rc < 0 ? snfs_fail(rc, "rename %s to %s: %s", fname, tname,
	                          strerror(-rc))
	              : 0;
}

/* ---- directories by cookie ----
 * One READDIR(PLUS) reply is kept; a read that continues where the last
 * one stopped (the usual case) is served from it, any other cookie starts
 * a new request there. */

struct snfs_hdir {
	struct snfs_ctx *c;
	struct snfs_fh fh;
	bool plus;
	struct rd_page *page; /* the current reply, or NULL */
	uint64_t start;       /* the cookie it was read from */
	uint32_t next;        /* index of the next entry in page */
	uint8_t verf[8];
	char *name;
};

int snfs_h_opendir(struct snfs_ctx *c, const struct snfs_handle *h, int flags,
                   struct snfs_hdir **out)
{
	struct snfs_hdir *d = calloc(1, sizeof(*d));
	if (!d)
		return fail(-ENOMEM, "opendir");
	int rc = to_fh(h, &d->fh);
	if (rc < 0) {
		free(d);
		return fail(rc, "opendir");
	}
	d->c = c;
	d->plus = flags & SNFS_DIR_PLUS;
	*out = d;
	return 0;
}

/* Read the reply that starts after cookie. A cookie from an older
 * listing may be refused (RFC 1813 section 3.3.16): ask once more with no
 * verifier, as the Linux client does. */
static int fetch(struct snfs_hdir *d, uint64_t cookie)
{
	struct snfs_ctx *c = d->c;
	uint8_t verf[8];

	if (cookie == 0)
		memset(d->verf, 0, sizeof(d->verf));
	for (int tries = 0;; tries++) {
		struct rd_page *p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		memcpy(verf, d->verf, sizeof(verf));
		int rc = c->ops->readdir(c, &d->fh, d->plus, cookie, verf,
		                         c->dirbuf, p);
		if (rc == -SNFS_EBADCOOKIE && tries == 0 && cookie != 0) {
			rd_page_free(p);
			memset(d->verf, 0, sizeof(d->verf));
			continue;
		}
		if (rc == 0 && p->n == 0 && !p->eof)
			rc = -EIO; /* no progress: a broken server */
		if (rc < 0) {
			rd_page_free(p);
			return rc;
		}
		if (d->page)
			rd_page_free(d->page);
		d->page = p;
		d->start = cookie;
		d->next = 0;
		memcpy(d->verf, p->verf, sizeof(d->verf));
		return 0;
	}
}

/* Point d->next just after the entry with cookie after, if the current
 * reply holds it. */
static bool position(struct snfs_hdir *d, uint64_t after)
{
	const struct rd_page *p = d->page;
	if (!p)
		return false;
	if (d->next > 0 && d->next <= p->n &&
	    p->ents[d->next - 1].cookie == after)
		return true;
	if (after == d->start) {
		d->next = 0;
		return true;
	}
	for (uint32_t i = 0; i < p->n; i++)
		if (p->ents[i].cookie == after) {
			d->next = i + 1;
			return true;
		}
	return false;
}

static int fill(struct snfs_hdir *d, const struct rd_entry *e,
                struct snfs_hdirent *ent)
{
	const struct rd_page *p = d->page;
	char *n = realloc(d->name, e->name_len + 1);
	if (!n)
		return -ENOMEM;
	d->name = n;
	memcpy(n, p->data + e->name_off, e->name_len);
	n[e->name_len] = 0;
	memset(ent, 0, sizeof(*ent));
	ent->name = n;
	ent->fileid = e->fileid;
	ent->cookie = e->cookie;
	if (e->attr_off && p->decode_attr &&
	    p->decode_attr(p->data, p->dlen, e->attr_off, &ent->attr) == 0)
		ent->have_attr = true;
	if (e->fh_len > 0 && e->fh_len <= SNFS_HANDLE_MAX &&
	    (size_t)e->fh_off + e->fh_len <= p->dlen) {
		ent->handle.len = e->fh_len;
		memcpy(ent->handle.data, p->data + e->fh_off, e->fh_len);
		ent->have_handle = true;
	}
	return 0;
}

int snfs_h_readdir(struct snfs_hdir *d, uint64_t after,
                   struct snfs_hdirent *ent)
{
	int rc = 0;

	if (!position(d, after))
		rc = fetch(d, after);
	while (rc == 0) {
		const struct rd_page *p = d->page;
		if (d->next < p->n) {
			const struct rd_entry *e = &p->ents[d->next++];
			rc = fill(d, e, ent);
			return rc < 0 ? fail(rc, "readdir") : 1;
		}
		if (p->eof)
			return 0;
		rc = fetch(d, p->ents[p->n - 1].cookie);
	}
	return fail(rc, "readdir");
}

void snfs_h_closedir(struct snfs_hdir *d)
{
	if (!d)
		return;
	if (d->page)
		rd_page_free(d->page);
	free(d->name);
	free(d);
}
