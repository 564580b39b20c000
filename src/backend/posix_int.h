/* Internals of the POSIX backend (posix.c, posix_ns.c, cred.c, fdcache.c,
 * dircursor.c). Nothing here is seen outside src/backend.
 *
 * Objects are named by the file system's own handles (name_to_handle_at),
 * opened again with open_by_handle_at against an O_PATH fd of the export
 * root. That needs CAP_DAC_READ_SEARCH, which the kernel drops while the
 * thread's fsuid is not 0, so every operation opens its handles first, as
 * the server, then takes on the client's credentials for the part the
 * kernel must judge, then gives them back.
 */
#ifndef SNFS_BACKEND_POSIX_INT_H
#define SNFS_BACKEND_POSIX_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "backend/backend.h"

struct fd_cache;
struct dir_cursor_cache;
struct hole_map_cache;

struct bk_export {
	int root_fd; /* the root, read-only: mount_fd for open_by_handle_at */
	dev_t dev;   /* nothing on another device is ever reached */
	ino_t root_ino;
	struct bk_handle root;
	struct fd_cache *fds;
	struct dir_cursor_cache *dirs;
	struct hole_map_cache *holes;
};

/* handles (posix.c) */
/* Open h as the server with flags (O_PATH, O_RDONLY|O_DIRECTORY, ...).
 * Fills *st. Returns the fd or -EBADF (malformed), -ESTALE (deleted),
 * -EXDEV (another device). */
/* lease.c: bk_ops.lease and lease_end */
int posix_lease(struct bk_export *ex, const struct bk_handle *h,
                bk_lease_fn broken, void *ctx, uint64_t cookie,
                struct bk_lease **out);
void posix_lease_end(struct bk_lease *l);
int posix_open(struct bk_export *ex, const struct bk_handle *h, int flags,
               struct stat *st);
/* The handle of fd, or of name under fd when name is not "". */
int posix_handle_of(int fd, const char *name, struct bk_handle *out);
/* Open name under dirfd without following it, as whoever runs now. */
int posix_open_child(struct bk_export *ex, int dirfd, const char *name,
                     struct stat *st);
void posix_fill_attr(const struct bk_export *ex, const struct stat *st,
                     struct bk_attr *a);
/* "" and names holding '/' are -EINVAL, over-long ones -ENAMETOOLONG. */
int posix_check_name(const char *name);
bool posix_is_dot_or_dotdot(const char *name);
/* Make a namespace change durable (RFC 1813 section 3.3: the server
 * commits metadata before replying). */
int posix_commit_dir(int dirfd);
/* The handle of name in dirfd, read before it is removed or replaced
 * (zeroed if there is none), so that posix_forget can drop its cached fds
 * and cursors after the change. */
void posix_victim_handle(int dirfd, const char *name, struct bk_handle *h);
void posix_forget(struct bk_export *ex, const struct bk_handle *h);

/* permissions (posix.c), called with cr's credentials entered */
/* May cr read (want R_OK) or write (W_OK) the regular file fd, with the
 * owner override of NFS: the owner may always. */
int posix_io_permitted(int fd, const struct stat *st, const struct bk_cred *cr,
                       int want);
/* posix_io_permitted for reading, entering cr's credentials itself, with
 * recent grants remembered per thread (no credential switch per call). */
int posix_read_permitted(int fd, const struct stat *st,
                         const struct bk_cred *cr);
/* faccessat2 of fd itself (st and cr only for kernels without it). */
int posix_access_fd(int fd, const struct stat *st, const struct bk_cred *cr,
                    int want);

/* READ_PLUS pieces (readgap.c): between two cached pieces, a gap up to
 * this many bytes is read through into scratch rather than skipped by a
 * read of its own. Timed once per process (the first call, made when an
 * export opens), unless SNFSD_READ_MERGE_GAP gives it in bytes. */
#define POSIX_MERGE_GAP_MAX (64u << 10) /* read_pieces' scratch */
size_t posix_merge_gap(void);
/* Sets it (tests: both ways through read_pieces). */
void posix_merge_gap_set(size_t gap);
/* The gap worth reading from two timings over n pieces of piece bytes,
 * each followed by a gap as wide: n reads, one per piece (t_pieces), and
 * one read through them all (t_through). Whole pages, at most the max. */
size_t posix_merge_gap_model(double t_pieces, double t_through, int n,
                             size_t piece);

/* setattr on an open object (posix_ns.c) */
int posix_setattr_fd(struct bk_export *ex, const struct bk_cred *cr,
                     const struct bk_handle *h, int fd, const struct stat *st,
                     const struct bk_setattr *sa);

/* namespace changes (posix_ns.c), as the bk_ops entries */
int posix_create(struct bk_export *ex, const struct bk_cred *cr,
                 const struct bk_handle *dir, const char *name,
                 enum bk_create_mode how, const struct bk_setattr *sa,
                 const uint8_t verf[8], struct bk_handle *out,
                 struct bk_attr *attr);
int posix_mkdir(struct bk_export *ex, const struct bk_cred *cr,
                const struct bk_handle *dir, const char *name,
                const struct bk_setattr *sa, struct bk_handle *out,
                struct bk_attr *attr);
int posix_symlink(struct bk_export *ex, const struct bk_cred *cr,
                  const struct bk_handle *dir, const char *name,
                  const char *target, const struct bk_setattr *sa,
                  struct bk_handle *out, struct bk_attr *attr);
int posix_mknod(struct bk_export *ex, const struct bk_cred *cr,
                const struct bk_handle *dir, const char *name,
                enum bk_ftype type, uint32_t major, uint32_t minor,
                const struct bk_setattr *sa, struct bk_handle *out,
                struct bk_attr *attr);
int posix_remove(struct bk_export *ex, const struct bk_cred *cr,
                 const struct bk_handle *dir, const char *name);
int posix_rmdir(struct bk_export *ex, const struct bk_cred *cr,
                const struct bk_handle *dir, const char *name);
int posix_rename(struct bk_export *ex, const struct bk_cred *cr,
                 const struct bk_handle *fromdir, const char *fromname,
                 const struct bk_handle *todir, const char *toname);
int posix_link(struct bk_export *ex, const struct bk_cred *cr,
               const struct bk_handle *h, const struct bk_handle *dir,
               const char *name);

/* credentials (cred.c) */
/* Switch this thread's fsuid, fsgid and groups to cr. On failure the
 * thread is back on the server's credentials. */
int cred_enter(const struct bk_cred *cr);
/* Back to the server's credentials (fs capabilities return). */
void cred_leave(void);

/* fd cache (fdcache.c): fds for I/O, opened by handle as the server. */
struct fd_ref {
	int fd;
	void *slot; /* NULL when the fd is not cached */
};
int fd_cache_new(struct fd_cache **out);
void fd_cache_free(struct fd_cache *c);
/* An fd of the regular file h, writable if write. Fills *st (fresh). */
int fd_cache_get(struct bk_export *ex, const struct bk_handle *h, bool write,
                 struct fd_ref *ref, struct stat *st);
void fd_cache_put(struct fd_cache *c, struct fd_ref *ref);
/* A scope of one operation on this thread (bk_ops io_scope): within it
 * the first read-only get is remembered with its attributes, and later
 * read-only gets of that file take its slot and those attributes without
 * a lookup or an fstat. A writable get ends the sharing. */
void fd_cache_scope(bool begin);
void fd_cache_forget(struct fd_cache *c, const struct bk_handle *h);
/* Close h's writable fds once unused: after COMMIT or a stable WRITE the
 * client has likely closed the file, and an open writable fd makes
 * executing it fail with ETXTBSY. */
void fd_cache_drop_writable(struct fd_cache *c, const struct bk_handle *h);

/* dir cursors (dircursor.c) */
int dir_cursor_cache_new(struct dir_cursor_cache **out);
void dir_cursor_cache_free(struct dir_cursor_cache *c);
void dir_cursor_forget(struct dir_cursor_cache *c, const struct bk_handle *h);
/* Streams opened, getdents64 calls and the records they returned, over
 * all cursors so far (for tests). */
struct dir_cursor_stats {
	uint64_t opens, getdents, records;
};
void dir_cursor_stats(struct dir_cursor_stats *out);
int posix_readdir(struct bk_export *ex, const struct bk_cred *cr,
                  const struct bk_handle *dir, uint64_t cookie, bk_dirent_fn fn,
                  void *arg, bool *eof);
int posix_readdir_plus(struct bk_export *ex, const struct bk_cred *cr,
                       const struct bk_handle *dir, uint64_t cookie,
                       bk_dirent_fn fn, void *arg, bool *eof);

/* hole/data maps (holemap.c), cached per file */
int hole_map_cache_new(struct hole_map_cache **out);
void hole_map_cache_free(struct hole_map_cache *c);
/* Up to max extents of the open regular file fd (handle h, fresh stat st)
 * covering [off, off + len) cut at st's size, in order. They are the file's
 * real extents, not cut to the range: the first may begin before off and
 * the last end past off + len; holes shorter than min_hole come as data,
 * one extent with the data around them. Fewer than needed to cover the
 * range when max is reached. */
int hole_map_lookup(struct hole_map_cache *c, const struct bk_handle *h, int fd,
                    const struct stat *st, uint64_t off, uint64_t len,
                    uint64_t min_hole, struct bk_extent *out, int max, int *n);
/* Forget h's map: snfsd changed the file's data or size. */
void hole_map_invalidate(struct hole_map_cache *c, const struct bk_handle *h);
/* lseeks made by all maps so far (for tests). */
uint64_t hole_map_lseeks(void);
/* The bk_ops extents entry. */
int posix_extents(struct bk_export *ex, const struct bk_cred *cr,
                  const struct bk_handle *h, uint64_t off, uint64_t len,
                  uint64_t min_hole, struct bk_extent *out, int max, int *n);

#endif
