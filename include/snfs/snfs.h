/* libsnfs: a user-space NFS client library.
 *
 * Synchronous and thread-safe: one context (struct snfs_ctx) per mounted
 * export, shared by any number of threads. Every call returns 0 (or a byte
 * count) on success and -errno on failure; snfs_last_error() gives the
 * message of the calling thread's last failure.
 *
 * Paths are relative to the path named in the mount URL: "" or "." is that
 * path itself, "a/b" is below it, and "/a/b" starts at the export's root.
 *
 * URLs take libnfs's form:
 *   nfs://host[:port]/export/path?version=3|4.1|4.2&uid=&gid=&rsize=&wsize=
 *         &readdir-buffer=&nfsport=&mountport=&cache=&timeout=
 *         &pagecache=partial|full|off
 * The export is found by asking the server for its export list, and failing
 * that by trying MNT on successively shorter prefixes of the path.
 */
#ifndef SNFS_SNFS_H
#define SNFS_SNFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

struct snfs_ctx;
struct snfs_file;
struct snfs_dir;

enum snfs_version {
	SNFS_V3 = 30,
	SNFS_V41 = 41,
	SNFS_V42 = 42,
};

/* Page cache policy (?pagecache=). PARTIAL, the default, keeps valid byte
 * ranges per page: a write never reads first. FULL behaves like a classic
 * cache of whole 4 KiB pages: a read miss or a write that covers a page
 * only in part READs that page first (read-modify-write); it is there to
 * measure what PARTIAL saves. OFF: no page cache (as cache=0). */
enum snfs_pagecache {
	SNFS_PC_DEFAULT = 0,
	SNFS_PC_PARTIAL,
	SNFS_PC_FULL,
	SNFS_PC_OFF,
};

/* Settings that a URL may also give (the URL wins when both do). A zero
 * field means "the default". */
struct snfs_mount_opts {
	size_t cache_size;       /* page cache bytes; SIZE_MAX turns it off */
	uint32_t rsize, wsize;   /* READ/WRITE payload per RPC */
	uint32_t readdir_buffer; /* READDIR reply size, up to 1 MiB */
	uint32_t timeout_ms;     /* per call, across reconnects */
	enum snfs_pagecache pagecache;
};

/* Parsed URL (see snfs_url_parse). Strings are owned by the struct. */
struct snfs_url {
	char *host;
	uint16_t port;    /* 0: not given */
	uint16_t nfsport; /* from ?nfsport= (or :port) */
	uint16_t mountport;
	char *path; /* percent-decoded, always starts with '/' */
	enum snfs_version version;
	bool version_given;
	uint32_t uid, gid;
	bool uid_given, gid_given;
	uint32_t rsize, wsize, readdir_buffer;
	size_t cache_size;
	bool cache_given;
	uint32_t timeout_ms;
	enum snfs_pagecache pagecache; /* SNFS_PC_DEFAULT: not given */
};

/* Returns 0 or -EINVAL (message in snfs_last_error()). */
int snfs_url_parse(const char *url, struct snfs_url *out);
void snfs_url_free(struct snfs_url *u);
/* True if s looks like an nfs:// URL. */
bool snfs_is_url(const char *s);

/* Mount the export named by url. opts may be NULL. */
int snfs_mount(const char *url, const struct snfs_mount_opts *opts,
               struct snfs_ctx **out);
/* Flush everything, unmount and free. Returns the first flush error. */
int snfs_umount(struct snfs_ctx *ctx);
/* The export path and the path below it that the URL named. */
const char *snfs_export(const struct snfs_ctx *ctx);
const char *snfs_url_path(const struct snfs_ctx *ctx);
enum snfs_version snfs_get_version(const struct snfs_ctx *ctx);

/* The message for the calling thread's last failed call. */
const char *snfs_last_error(void);

enum snfs_ftype {
	SNFS_REG = 1,
	SNFS_DIR = 2,
	SNFS_BLK = 3,
	SNFS_CHR = 4,
	SNFS_LNK = 5,
	SNFS_SOCK = 6,
	SNFS_FIFO = 7,
};

struct snfs_stat {
	enum snfs_ftype type;
	uint32_t mode; /* permission bits, as st_mode & 07777 */
	uint32_t nlink;
	uint32_t uid, gid;
	uint64_t size, used;
	uint32_t rdev_major, rdev_minor;
	uint64_t fsid, fileid;
	struct timespec atime, mtime, ctime;
	uint64_t change; /* change attribute (v3: from ctime) */
};

/* What snfs_setattr changes. */
enum {
	SNFS_SET_MODE = 1,
	SNFS_SET_UID = 2,
	SNFS_SET_GID = 4,
	SNFS_SET_SIZE = 8,
	SNFS_SET_ATIME = 16, /* atime given; SNFS_SET_ATIME_NOW: server time */
	SNFS_SET_MTIME = 32,
	SNFS_SET_ATIME_NOW = 64,
	SNFS_SET_MTIME_NOW = 128,
};

struct snfs_setattr {
	unsigned mask;
	uint32_t mode, uid, gid;
	uint64_t size;
	struct timespec atime, mtime;
};

struct snfs_statvfs {
	uint64_t tbytes, fbytes, abytes; /* total, free, free to the caller */
	uint64_t tfiles, ffiles, afiles;
};

int snfs_stat(struct snfs_ctx *ctx, const char *path, struct snfs_stat *st);
/* Like snfs_stat but does not follow a final symlink. */
int snfs_lstat(struct snfs_ctx *ctx, const char *path, struct snfs_stat *st);
int snfs_setattr(struct snfs_ctx *ctx, const char *path,
                 const struct snfs_setattr *sa);
int snfs_truncate(struct snfs_ctx *ctx, const char *path, uint64_t size);
int snfs_statvfs(struct snfs_ctx *ctx, const char *path,
                 struct snfs_statvfs *sv);

/* flags: O_RDONLY/O_WRONLY/O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_APPEND. */
int snfs_open(struct snfs_ctx *ctx, const char *path, int flags, mode_t mode,
              struct snfs_file **out);
ssize_t snfs_pread(struct snfs_file *f, void *buf, size_t count, uint64_t off);
ssize_t snfs_pwrite(struct snfs_file *f, const void *buf, size_t count,
                    uint64_t off);
/* Write back dirty data (UNSTABLE WRITE) and COMMIT it. */
int snfs_fsync(struct snfs_file *f);
/* Flush and free; returns the flush error, if any. */
int snfs_close(struct snfs_file *f);
int snfs_fstat(struct snfs_file *f, struct snfs_stat *st);
/* The attributes fetched when f was opened (close-to-open), without a
 * call; the size is the one this context knows now: the open's, moved
 * by its writes (sent or not) and truncations since. True when the open
 * showed the file changed, by someone else, since this context last
 * opened it: a layer that caches attributes of its own (a FUSE kernel)
 * must drop them. */
bool snfs_open_attrs(struct snfs_file *f, struct snfs_stat *st);
int snfs_ftruncate(struct snfs_file *f, uint64_t size);

/* Next data / hole at or after off (lseek SEEK_DATA/SEEK_HOLE): the
 * offset, -ENXIO past the end, -EOPNOTSUPP where the protocol has no SEEK
 * (NFSv3). */
int64_t snfs_seek_data(struct snfs_file *f, uint64_t off);
int64_t snfs_seek_hole(struct snfs_file *f, uint64_t off);
/* NFSv4.2 ALLOCATE / DEALLOCATE; -EOPNOTSUPP elsewhere. */
int snfs_allocate(struct snfs_file *f, uint64_t off, uint64_t len);
int snfs_punch_hole(struct snfs_file *f, uint64_t off, uint64_t len);
/* Copy len bytes (server-side COPY on 4.2; else read and write). Returns
 * the bytes copied. Both files must belong to the same context for a
 * server-side copy. */
int64_t snfs_copy(struct snfs_file *src, uint64_t src_off,
                  struct snfs_file *dst, uint64_t dst_off, uint64_t len);

/* POSIX byte-range locks held on the server (NFSv4.1/4.2 LOCK, LOCKU,
 * LOCKT). (owner, pid) names the lock-owner: snfs-mount passes the
 * kernel's lock_owner and the locking process. A lock of one owner never
 * conflicts with its own, and a new range replaces what it overlaps.
 * type is F_RDLCK, F_WRLCK or F_UNLCK; len 0 runs to the end of the file.
 * An F_UNLCK with pid 0 releases the locks of owner under every pid. */
struct snfs_flock {
	int type;
	uint64_t start, len;
	uint64_t owner;
	uint32_t pid;
};
/* Take or release a lock: 0, -EAGAIN when another owner holds a
 * conflicting one, -ENOLCK over NFSv3 (no NLM client here). blocking
 * marks the request as a waiter's (READW_LT/WRITEW_LT, so a server may
 * tell it when to try again); it is still one try: the caller loops. */
int snfs_setlk(struct snfs_file *f, const struct snfs_flock *l, bool blocking);
/* Whether l could be taken: l->type becomes F_UNLCK if so, else the type
 * and range of a conflicting lock (its owner 0: another client's or
 * process's). */
int snfs_getlk(struct snfs_file *f, struct snfs_flock *l);

/* A read that reports holes: segments cover [off, off + returned bytes) in
 * order; hole segments leave buf untouched (zero-fill is the caller's
 * choice). NFSv3 has no READ_PLUS, so it returns one data segment. */
struct snfs_segment {
	uint64_t off, len;
	bool hole;
};
ssize_t snfs_read_segments(struct snfs_file *f, void *buf, size_t count,
                           uint64_t off, struct snfs_segment *segs,
                           size_t max_segs, size_t *nsegs, bool *eof);

/* The same read without a copy: the bytes at [off, off + count) are handed
 * to fn in file order, one call per server reply, as pieces that point
 * into the reply (data) or have data NULL (a hole). The pieces are valid
 * only during the call. fn returns 0 to go on, or a negative errno that
 * ends the read and is returned. Returns the bytes covered (fewer at end
 * of file, *eof then true) or -errno. Cheaper than snfs_read_segments for
 * a caller that passes the data on (snfs cat writes it with writev). */
struct snfs_piece {
	uint64_t off, len;
	const void *data; /* NULL: a hole */
};
typedef int (*snfs_pieces_fn)(void *arg, const struct snfs_piece *v, size_t n);
ssize_t snfs_read_pieces(struct snfs_file *f, uint64_t off, size_t count,
                         snfs_pieces_fn fn, void *arg, bool *eof);

struct snfs_dirent {
	const char *name; /* valid until the next snfs_readdir */
	uint64_t fileid;
	uint64_t cookie;
	bool have_attr;
	struct snfs_stat attr;
};

/* flags: SNFS_DIR_PLUS asks for attributes (READDIRPLUS). */
enum { SNFS_DIR_PLUS = 1 };
int snfs_opendir(struct snfs_ctx *ctx, const char *path, int flags,
                 struct snfs_dir **out);
/* 1 and *ent filled, 0 at the end, or -errno. */
int snfs_readdir(struct snfs_dir *d, struct snfs_dirent *ent);
/* The position after the last entry returned, and a return to it. */
uint64_t snfs_telldir(struct snfs_dir *d);
int snfs_seekdir(struct snfs_dir *d, uint64_t cookie);
void snfs_closedir(struct snfs_dir *d);

int snfs_mkdir(struct snfs_ctx *ctx, const char *path, mode_t mode);
int snfs_rmdir(struct snfs_ctx *ctx, const char *path);
int snfs_unlink(struct snfs_ctx *ctx, const char *path);
int snfs_rename(struct snfs_ctx *ctx, const char *from, const char *to);
int snfs_link(struct snfs_ctx *ctx, const char *target, const char *path);
int snfs_symlink(struct snfs_ctx *ctx, const char *target, const char *path);
/* Returns the length written (NUL-terminated, truncated to size-1). */
int snfs_readlink(struct snfs_ctx *ctx, const char *path, char *buf,
                  size_t size);

/* Per-operation RPC counters (calls sent, counted once per call even when
 * resent after a reconnect) and byte totals. */
enum snfs_op {
	SNFS_OP_NULL,
	SNFS_OP_GETATTR,
	SNFS_OP_SETATTR,
	SNFS_OP_LOOKUP,
	SNFS_OP_ACCESS,
	SNFS_OP_READLINK,
	SNFS_OP_READ,
	SNFS_OP_WRITE,
	SNFS_OP_CREATE,
	SNFS_OP_MKDIR,
	SNFS_OP_SYMLINK,
	SNFS_OP_MKNOD,
	SNFS_OP_REMOVE,
	SNFS_OP_RMDIR,
	SNFS_OP_RENAME,
	SNFS_OP_LINK,
	SNFS_OP_READDIR,
	SNFS_OP_READDIRPLUS,
	SNFS_OP_FSSTAT,
	SNFS_OP_FSINFO,
	SNFS_OP_PATHCONF,
	SNFS_OP_COMMIT,
	SNFS_OP_MOUNT,    /* MOUNT protocol: MNT, UMNT, EXPORT */
	SNFS_OP_GETPORT,  /* portmapper */
	SNFS_OP_COMPOUND, /* NFSv4 */
	SNFS_OP_READ_PLUS,
	SNFS_OP_SEEK,
	SNFS_OP_COPY,
	SNFS_OP_ALLOCATE,
	SNFS_OP_DEALLOCATE,
	SNFS_OP_MAX
};

struct snfs_stats {
	uint64_t calls[SNFS_OP_MAX];
	uint64_t total_calls;
	uint64_t retransmits; /* calls sent again after a reconnect */
	uint64_t reconnects;
	uint64_t bytes_sent, bytes_received;
	uint64_t read_bytes, write_bytes;  /* payload */
	uint64_t cache_hits, cache_misses; /* pread bytes from/not from cache */
	uint64_t
	    write_resends; /* ranges written again after a verifier change */
	/* A listing the server refused to go on with (NFS3ERR_BAD_COOKIE,
	 * NFS4ERR_NOT_SAME: the directory changed): resumed at its cookie
	 * with the directory's current verifier, or restarted from cookie 0
	 * (names already returned are skipped). */
	uint64_t readdir_resumes, readdir_restarts;
};

void snfs_stats(struct snfs_ctx *ctx, struct snfs_stats *out);
void snfs_stats_reset(struct snfs_ctx *ctx);
const char *snfs_op_name(enum snfs_op op);

/* ---- By handle (src/client/fuse_support.c) ----
 * For callers that keep their own inode table (snfs-mount): a handle names
 * one object on the server while it exists; nothing is resolved by path and
 * no symlink is followed. Names are single components. */
#define SNFS_HANDLE_MAX 128

struct snfs_handle {
	uint32_t len;
	uint8_t data[SNFS_HANDLE_MAX];
};

/* The object the mount URL named, with its attributes. */
int snfs_h_base(struct snfs_ctx *ctx, struct snfs_handle *h,
                struct snfs_stat *st);
int snfs_h_lookup(struct snfs_ctx *ctx, const struct snfs_handle *dir,
                  const char *name, struct snfs_handle *out,
                  struct snfs_stat *st);
/* The size includes bytes written through libsnfs and not yet sent. */
int snfs_h_getattr(struct snfs_ctx *ctx, const struct snfs_handle *h,
                   struct snfs_stat *st);
/* SNFS_SET_SIZE goes through the page cache. st (may be NULL): the
 * attributes afterwards. */
int snfs_h_setattr(struct snfs_ctx *ctx, const struct snfs_handle *h,
                   const struct snfs_setattr *sa, struct snfs_stat *st);
int snfs_h_statvfs(struct snfs_ctx *ctx, const struct snfs_handle *h,
                   struct snfs_statvfs *sv);
int snfs_h_readlink(struct snfs_ctx *ctx, const struct snfs_handle *h,
                    char *buf, size_t size);
/* flags: O_ACCMODE, O_TRUNC, O_APPEND (O_CREAT: use snfs_h_create). */
int snfs_h_open(struct snfs_ctx *ctx, const struct snfs_handle *h, int flags,
                struct snfs_file **out);
/* Create a regular file (excl: fail with -EEXIST if the name exists) and
 * return its handle and attributes. */
int snfs_h_create(struct snfs_ctx *ctx, const struct snfs_handle *dir,
                  const char *name, mode_t mode, bool excl,
                  struct snfs_handle *out, struct snfs_stat *st);
/* FIFO, socket or device node; -EOPNOTSUPP where the protocol lacks it. */
int snfs_h_mknod(struct snfs_ctx *ctx, const struct snfs_handle *dir,
                 const char *name, enum snfs_ftype type, mode_t mode,
                 uint32_t rdev_major, uint32_t rdev_minor,
                 struct snfs_handle *out, struct snfs_stat *st);
int snfs_h_mkdir(struct snfs_ctx *ctx, const struct snfs_handle *dir,
                 const char *name, mode_t mode, struct snfs_handle *out,
                 struct snfs_stat *st);
int snfs_h_symlink(struct snfs_ctx *ctx, const struct snfs_handle *dir,
                   const char *name, const char *target,
                   struct snfs_handle *out, struct snfs_stat *st);
int snfs_h_link(struct snfs_ctx *ctx, const struct snfs_handle *h,
                const struct snfs_handle *dir, const char *name);
int snfs_h_unlink(struct snfs_ctx *ctx, const struct snfs_handle *dir,
                  const char *name);
int snfs_h_rmdir(struct snfs_ctx *ctx, const struct snfs_handle *dir,
                 const char *name);
int snfs_h_rename(struct snfs_ctx *ctx, const struct snfs_handle *fdir,
                  const char *fname, const struct snfs_handle *tdir,
                  const char *tname);

/* A directory read by cookie, uncached: snfs_h_readdir returns the entry
 * after the one whose cookie is given (0: the first), so a caller can
 * resume anywhere it stopped. */
struct snfs_hdir;
struct snfs_hdirent {
	const char *name; /* valid until the next snfs_h_readdir */
	uint64_t fileid;
	uint64_t cookie;
	bool have_attr, have_handle;
	struct snfs_stat attr;
	struct snfs_handle handle;
};
/* flags: SNFS_DIR_PLUS asks for attributes and handles. */
int snfs_h_opendir(struct snfs_ctx *ctx, const struct snfs_handle *h, int flags,
                   struct snfs_hdir **out);
/* 1 and *ent filled, 0 at the end, or -errno. */
int snfs_h_readdir(struct snfs_hdir *d, uint64_t after,
                   struct snfs_hdirent *ent);
void snfs_h_closedir(struct snfs_hdir *d);

#ifdef __cplusplus
}
#endif

#endif
