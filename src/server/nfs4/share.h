/* NFSv4 share reservations as seen from other protocols: an NFSv3 READ or
 * WRITE carries no stateid, so RFC 7530 9.1.4.3 treats it like the
 * anonymous stateid: it fails while an NFSv4 OPEN denies that access. */
#ifndef SNFS_NFS4_SHARE_H
#define SNFS_NFS4_SHARE_H

#include <stdbool.h>

#include "backend/backend.h"
#include "server/exports.h"

struct snfsd;

/* 0 if an access (write or read) to the file is allowed by every NFSv4
 * open's deny mode, else -EACCES. Cheap when no NFSv4 state exists. */
int nfs4_share_check(struct snfsd *s, const struct export *ex,
                     const struct bk_handle *bh, bool write);

/* An NFSv3 change to the file (WRITE, SETATTR, LINK) or to the object
 * name of directory dir (REMOVE, RENAME): NFSv4 read delegations of it
 * are recalled first (deleg.c). 0 once none is held; -EAGAIN (JUKEBOX)
 * while one still is after a short wait. Cheap when none is held. */
int nfs4_deleg_break(struct snfsd *s, const struct export *ex,
                     const struct bk_handle *bh);
int nfs4_deleg_break_name(struct snfsd *s, const struct export *ex,
                          const struct bk_cred *cred,
                          const struct bk_handle *dir, const char *name);

#endif
