/* The file system underneath snfsd.
 *
 * Protocol code reaches files only through a struct bk_ops table, so the
 * local POSIX backend can later be joined by CephFS. Objects are named by
 * opaque backend handles that stay valid across server restarts. Every call
 * returns 0 or a negative errno; the protocols map errnos to their status
 * codes. Calls that act for a client take its (already squashed) credentials
 * and the backend makes the file system enforce them.
 */
#ifndef SNFS_BACKEND_H
#define SNFS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#define BK_HANDLE_MAX 40
#define BK_NAME_MAX 255
#define BK_PATH_MAX 4096

struct bk_handle {
	uint32_t len;
	uint8_t data[BK_HANDLE_MAX];
};

enum bk_ftype {
	BK_REG = 1,
	BK_DIR = 2,
	BK_BLK = 3,
	BK_CHR = 4,
	BK_LNK = 5,
	BK_SOCK = 6,
	BK_FIFO = 7,
};

struct bk_attr {
	enum bk_ftype type;
	uint32_t mode; /* permission bits, 07777 */
	uint32_t nlink;
	uint32_t uid, gid;
	uint64_t size;
	uint64_t used; /* bytes allocated */
	uint32_t rdev_major, rdev_minor;
	uint64_t fsid;   /* the backend's file system id */
	uint64_t fileid; /* inode number */
	struct timespec atime, mtime, ctime;
	uint64_t change; /* changes whenever data or metadata change */
};

/* The few attributes wcc (weak cache consistency) data needs. */
struct bk_wcc_attr {
	uint64_t size;
	struct timespec mtime, ctime;
};

#define BK_MAX_GIDS 16
struct bk_cred {
	uint32_t uid, gid;
	uint32_t ngids;
	uint32_t gids[BK_MAX_GIDS];
};

enum {
	BK_SET_MODE = 1 << 0,
	BK_SET_UID = 1 << 1,
	BK_SET_GID = 1 << 2,
	BK_SET_SIZE = 1 << 3,
	BK_SET_ATIME = 1 << 4,     /* to sa.atime */
	BK_SET_ATIME_NOW = 1 << 5, /* to the server's time */
	BK_SET_MTIME = 1 << 6,
	BK_SET_MTIME_NOW = 1 << 7,
};

struct bk_setattr {
	uint32_t mask;
	uint32_t mode, uid, gid;
	uint64_t size;
	struct timespec atime, mtime;
};

/* access bits, as NFSv3 ACCESS3_* and NFSv4 ACCESS4_* */
enum {
	BK_ACCESS_READ = 0x01,
	BK_ACCESS_LOOKUP = 0x02,
	BK_ACCESS_MODIFY = 0x04,
	BK_ACCESS_EXTEND = 0x08,
	BK_ACCESS_DELETE = 0x10,
	BK_ACCESS_EXECUTE = 0x20,
};

enum bk_stable { BK_UNSTABLE = 0, BK_DATA_SYNC = 1, BK_FILE_SYNC = 2 };

enum bk_create_mode {
	BK_CREATE_UNCHECKED = 0, /* open if it exists */
	BK_CREATE_GUARDED = 1,   /* -EEXIST if it exists */
	BK_CREATE_EXCLUSIVE = 2, /* idempotent with verf: see create() */
};

struct bk_statfs {
	uint64_t tbytes, fbytes, abytes; /* total, free, free to non-root */
	uint64_t tfiles, ffiles, afiles;
	uint32_t name_max;
	uint32_t link_max;
};

/* One directory entry. cookie is where the listing resumes after it. */
struct bk_dirent {
	uint64_t fileid;
	uint64_t cookie;
	const char *name;
	uint32_t namelen;
	enum bk_ftype type; /* 0 if unknown */
	/* Filled by readdir_plus where the backend could find them cheaply
	 * from the open directory (NULL otherwise, and for "." and ".."): the
	 * caller then looks the name up itself. */
	const struct bk_handle *handle;
	const struct bk_attr *attr;
	/* Set by readdir where fileid and type are exactly what a lookup's
	 * attributes would say (same file system, no mount point, type
	 * known, directory searchable by the caller): a caller that needs no
	 * more than those may skip the lookup. */
	bool exact;
};

/* Called per entry; return 0 for more, 1 to stop before consuming this
 * entry (it will be returned again when resuming at the previous cookie),
 * or a negative errno to abort. */
typedef int (*bk_dirent_fn)(void *arg, const struct bk_dirent *e);

/* A watch on a file for changes beside the server (bk_ops.lease). */
struct bk_lease;
typedef void (*bk_lease_fn)(void *ctx, uint64_t cookie);

/* A hole/data extent list for READ_PLUS and SEEK (later issues). */
struct bk_extent {
	uint64_t off, len;
	bool hole;
};

/* Where len bytes of a file from off go (read_pieces). */
struct bk_piece {
	uint64_t off;
	void *buf;
	size_t len;
};

enum {
	BK_CAP_HOLE_MAP = 1 << 0, /* seek_data/seek_hole are exact */
	BK_CAP_ALLOCATE = 1 << 1,
	BK_CAP_PUNCH = 1 << 2,
	BK_CAP_COPY = 1 << 3,
	BK_CAP_CLONE = 1 << 4,
	BK_CAP_ORDERED_COOKIES = 1 << 5, /* cookies increase along a listing */
	BK_CAP_DEVICES = 1 << 6,         /* mknod of block/char devices */
};

struct bk_export; /* an opened export root, private to the backend */

struct bk_ops {
	const char *name;
	uint32_t caps;

	/* Open the directory at path as an export root. */
	int (*export_open)(const char *path, struct bk_export **out);
	void (*export_close)(struct bk_export *ex);
	int (*root)(struct bk_export *ex, struct bk_handle *out);
	/* -ESTALE for a handle of a deleted object, -EBADF for one that does
	 * not decode, -EXDEV for one not inside this export. */
	int (*getattr)(struct bk_export *ex, const struct bk_handle *h,
	               struct bk_attr *attr);
	int (*setattr)(struct bk_export *ex, const struct bk_cred *cr,
	               const struct bk_handle *h, const struct bk_setattr *sa,
	               struct bk_attr *after);
	/* name is one component: never "", never containing '/'. ".." of the
	 * export root is the root itself; nothing outside is ever reached. */
	int (*lookup)(struct bk_export *ex, const struct bk_cred *cr,
	              const struct bk_handle *dir, const char *name,
	              struct bk_handle *out, struct bk_attr *attr);
	/* Which of want (BK_ACCESS_*) the credentials allow. */
	int (*access)(struct bk_export *ex, const struct bk_cred *cr,
	              const struct bk_handle *h, uint32_t want,
	              uint32_t *granted);
	int (*readlink)(struct bk_export *ex, const struct bk_cred *cr,
	                const struct bk_handle *h, char *buf, size_t bufsz);
	/* Returns bytes read (>= 0) or -errno; *eof set at end of file. */
	ssize_t (*read)(struct bk_export *ex, const struct bk_cred *cr,
	                const struct bk_handle *h, void *buf, size_t count,
	                uint64_t off, bool *eof);
	/* Optional: read n pieces of the file, in file order and apart (a
	 * READ_PLUS reply's data segments; what lies between them is not
	 * wanted): one call instead of one per segment. Returns the bytes
	 * read in all, fewer than asked when the file ends first, or
	 * -errno; *eof as for read. */
	ssize_t (*read_pieces)(struct bk_export *ex, const struct bk_cred *cr,
	                       const struct bk_handle *h,
	                       const struct bk_piece *pc, int n, bool *eof);
	/* Returns bytes written or -errno. *committed says how stable the data
	 * now is (at least as stable as asked). */
	ssize_t (*write)(struct bk_export *ex, const struct bk_cred *cr,
	                 const struct bk_handle *h, const void *buf,
	                 size_t count, uint64_t off, enum bk_stable stable,
	                 enum bk_stable *committed);
	int (*commit)(struct bk_export *ex, const struct bk_handle *h,
	              uint64_t off, uint64_t count);
	/* Create a regular file. For BK_CREATE_EXCLUSIVE, verf is stored with
	 * the file (e.g. in its atime/mtime as Linux nfsd does) and a retry
	 * with the same verf succeeds; another verf gives -EEXIST. For
	 * UNCHECKED and GUARDED, sa (may be NULL) holds initial attributes. */
	int (*create)(struct bk_export *ex, const struct bk_cred *cr,
	              const struct bk_handle *dir, const char *name,
	              enum bk_create_mode how, const struct bk_setattr *sa,
	              const uint8_t verf[8], struct bk_handle *out,
	              struct bk_attr *attr);
	int (*mkdir)(struct bk_export *ex, const struct bk_cred *cr,
	             const struct bk_handle *dir, const char *name,
	             const struct bk_setattr *sa, struct bk_handle *out,
	             struct bk_attr *attr);
	int (*symlink)(struct bk_export *ex, const struct bk_cred *cr,
	               const struct bk_handle *dir, const char *name,
	               const char *target, const struct bk_setattr *sa,
	               struct bk_handle *out, struct bk_attr *attr);
	/* type is BK_FIFO, BK_SOCK, BK_BLK or BK_CHR (-EPERM for devices
	 * unless BK_CAP_DEVICES). */
	int (*mknod)(struct bk_export *ex, const struct bk_cred *cr,
	             const struct bk_handle *dir, const char *name,
	             enum bk_ftype type, uint32_t major, uint32_t minor,
	             const struct bk_setattr *sa, struct bk_handle *out,
	             struct bk_attr *attr);
	int (*remove)(struct bk_export *ex, const struct bk_cred *cr,
	              const struct bk_handle *dir, const char *name);
	int (*rmdir)(struct bk_export *ex, const struct bk_cred *cr,
	             const struct bk_handle *dir, const char *name);
	int (*rename)(struct bk_export *ex, const struct bk_cred *cr,
	              const struct bk_handle *fromdir, const char *fromname,
	              const struct bk_handle *todir, const char *toname);
	int (*link)(struct bk_export *ex, const struct bk_cred *cr,
	            const struct bk_handle *h, const struct bk_handle *dir,
	            const char *name);
	/* List dir from cookie (0 = start). Cookies are the file system's own
	 * directory offsets, stable for the life of an entry. Resuming at the
	 * cookie where an earlier listing stopped costs the same as
	 * continuing it (open streams are kept). *eof is set when the end was
	 * reached. -EINVAL (BAD_COOKIE) when the cookie cannot be resumed. */
	int (*readdir)(struct bk_export *ex, const struct bk_cred *cr,
	               const struct bk_handle *dir, uint64_t cookie,
	               bk_dirent_fn fn, void *arg, bool *eof);
	/* A value that changes whenever the directory changes (cookieverf). */
	int (*dir_verifier)(struct bk_export *ex, const struct bk_handle *dir,
	                    uint64_t *verf);
	int (*statfs)(struct bk_export *ex, const struct bk_handle *h,
	              struct bk_statfs *st);

	/* Space and hole operations for NFSv4.2; NULL where unsupported. */
	int (*seek)(struct bk_export *ex, const struct bk_handle *h,
	            uint64_t off, bool data, uint64_t *found, bool *eof);
	int (*allocate)(struct bk_export *ex, const struct bk_cred *cr,
	                const struct bk_handle *h, uint64_t off, uint64_t len);
	int (*punch)(struct bk_export *ex, const struct bk_cred *cr,
	             const struct bk_handle *h, uint64_t off, uint64_t len);

	/* NFSv4.2 COPY and CLONE; NULL where unsupported. copy moves up to
	 * count bytes inside the file system (copy_file_range, so reflink
	 * file systems share blocks) and returns the bytes copied (0 at the
	 * source's end) or -errno. clone shares the blocks of a range or
	 * fails (-EOPNOTSUPP where the file system cannot). */
	ssize_t (*copy)(struct bk_export *ex, const struct bk_cred *cr,
	                const struct bk_handle *src, uint64_t src_off,
	                const struct bk_handle *dst, uint64_t dst_off,
	                uint64_t count);
	int (*clone)(struct bk_export *ex, const struct bk_cred *cr,
	             const struct bk_handle *src, uint64_t src_off,
	             const struct bk_handle *dst, uint64_t dst_off,
	             uint64_t count);

	/* The hole/data map for READ_PLUS and SEEK; NULL where there is none
	 * (all data). Up to max extents covering [off, off + len) cut at
	 * the file's size, in order, contiguous: the file's real extents,
	 * so the first may begin before off and the last end past off + len.
	 * A hole shorter than min_hole (its whole length, not the part in
	 * the range) comes as data, one extent with the data on either side:
	 * READ_PLUS sends such holes as zeros, and merging them here spares
	 * it a walk over every tiny extent (0: every hole). *n < needed when
	 * max was reached; *n == 0 at or past EOF. Maps are kept between
	 * calls (a sequential read costs O(extents), never O(file size) per
	 * call) and follow changes made through the backend and beside it.
	 * The client must be allowed to read h. */
	int (*extents)(struct bk_export *ex, const struct bk_cred *cr,
	               const struct bk_handle *h, uint64_t off, uint64_t len,
	               uint64_t min_hole, struct bk_extent *out, int max,
	               int *n);

	/* readdir that also gives each entry's handle and attributes where
	 * it can (READDIRPLUS, NFSv4 READDIR): far cheaper than a lookup per
	 * name. NULL where unsupported. */
	int (*readdir_plus)(struct bk_export *ex, const struct bk_cred *cr,
	                    const struct bk_handle *dir, uint64_t cookie,
	                    bk_dirent_fn fn, void *arg, bool *eof);

	/* Optional: read as read() does and fill *after with the file's
	 * attributes taken after the read (NFSv3 READ's post-op attributes),
	 * from the open fd instead of a getattr by handle. The errors are
	 * read()'s: -EISDIR or -EINVAL for what is not a regular file. NULL
	 * where unsupported. */
	ssize_t (*read_attr)(struct bk_export *ex, const struct bk_cred *cr,
	                     const struct bk_handle *h, void *buf, size_t count,
	                     uint64_t off, bool *eof, struct bk_attr *after);

	/* Optional: getattr of a regular file through the fd its I/O uses
	 * (READ_PLUS needs the size before reading), instead of an open by
	 * handle per call. -EISDIR or -EINVAL for what is not a regular
	 * file. NULL where unsupported. */
	int (*io_getattr)(struct bk_export *ex, const struct bk_handle *h,
	                  struct bk_attr *out);
	/* Optional, for replies that send file bytes in place (zero copy):
	 * what read would do for count bytes at off, without reading. *fd:
	 * a new descriptor open for reading the file (the caller closes it);
	 * *n: the bytes there now (fewer at EOF); *eof as for read; attr
	 * (may be NULL): the file's attributes now. Errors as read's. NULL
	 * where the backend has no descriptors to give. */
	int (*read_ref)(struct bk_export *ex, const struct bk_cred *cr,
	                const struct bk_handle *h, uint64_t off, size_t count,
	                int *fd, size_t *n, bool *eof, struct bk_attr *attr);
	/* Optional: the calls this thread makes between io_scope(ex, true)
	 * and io_scope(ex, false) are parts of one read-only operation
	 * (READ_PLUS: attributes, hole map, data), which may share one look
	 * at the file's state: attributes taken at the first call stand for
	 * the scope. Calls that change the file end that sharing. NULL where
	 * there is nothing to share. */
	void (*io_scope)(struct bk_export *ex, bool begin);

	/* Optional, for NFSv4 delegations: watch regular file h for changes
	 * made beside the server (an open for writing, a truncation by
	 * another program). broken(ctx, cookie) is called, from a thread of
	 * the backend's, when one starts; the change waits (a while, as the
	 * system allows) until lease_end. -EAGAIN while the file is open for
	 * writing (by anyone, the server too), other -errno when it cannot
	 * be watched. NULL where unsupported: no delegation is granted. */
	int (*lease)(struct bk_export *ex, const struct bk_handle *h,
	             bk_lease_fn broken, void *ctx, uint64_t cookie,
	             struct bk_lease **out);
	void (*lease_end)(struct bk_lease *l);
};

extern const struct bk_ops bk_posix_ops;

#endif
