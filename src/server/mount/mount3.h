/* MOUNT protocol (RFC 1813 appendix I). */
#ifndef SNFS_MOUNT3_H
#define SNFS_MOUNT3_H

#include "rpc/rpc.h"

struct snfsd;

/* The versions of MOUNT program 100005 snfsd serves: v1 without MNT (v1
 * handles are 32 bytes, ours are longer) so showmount(8), which asks v1,
 * can list exports and mounts; and v3 (mount3_version). */
#define MOUNT_NVERSIONS 2
extern const struct rpc_version mount_versions[MOUNT_NVERSIONS];

enum mountstat3 {
	MNT3_OK = 0,
	MNT3ERR_PERM = 1,
	MNT3ERR_NOENT = 2,
	MNT3ERR_IO = 5,
	MNT3ERR_ACCES = 13,
	MNT3ERR_NOTDIR = 20,
	MNT3ERR_INVAL = 22,
	MNT3ERR_NAMETOOLONG = 63,
	MNT3ERR_NOTSUPP = 10004,
	MNT3ERR_SERVERFAULT = 10006,
};

#define MNTPATHLEN 1024
#define MNTNAMLEN 255

/* Forget every recorded mount (DUMP list); at exit. */
void mount_list_free(struct snfsd *s);

#endif
