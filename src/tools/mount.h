/* snfs-mount: an NFS export as a FUSE file system, on libsnfs's handle
 * API (snfs.h "By handle"). snfs-mount.c parses options and runs the
 * session; mount_inode.c maps FUSE inode numbers to NFS handles;
 * mount_ops.c answers the kernel's requests. */
#ifndef SNFS_TOOLS_MOUNT_H
#define SNFS_TOOLS_MOUNT_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "snfs/snfs.h"

/* ---- the inode table ----
 * Each inode the kernel knows holds a handle and the kernel's lookup
 * count; the same handle always gets the same number (hard links share
 * an inode), and FORGET drops the count until the row goes. */
struct itab;

int itab_new(struct itab **out, const struct snfs_handle *root);
void itab_free(struct itab *t);
/* Copy ino's handle into *h. Returns 0 or -ESTALE for an unknown ino. */
int itab_handle(struct itab *t, fuse_ino_t ino, struct snfs_handle *h);
/* The inode for h (found or added) with its lookup count raised by one;
 * 0 when out of memory. */
fuse_ino_t itab_ref(struct itab *t, const struct snfs_handle *h);
void itab_forget(struct itab *t, fuse_ino_t ino, uint64_t n);
/* Count files opened on ino (delta +1 at open, -1 at release); returns
 * how many are open after the change (0 for an unknown ino). */
unsigned itab_opens(struct itab *t, fuse_ino_t ino, int delta);
/* Inodes in the table (tests and debugging). */
size_t itab_count(struct itab *t);

/* ---- the mount ---- */
struct mnt {
	struct snfs_ctx *ctx;
	struct fuse_session *se; /* for notifications to the kernel */
	struct itab *it;
	double attr_timeout, entry_timeout;
	bool kernel_cache; /* let the kernel keep pages across opens */
	bool debug;
};

extern const struct fuse_lowlevel_ops mount_ops;

#endif
