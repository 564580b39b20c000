/* MOUNT v3 (RFC 1813 appendix I) and portmapper GETPORT (RFC 1833) for
 * the NFSv3 client: finding ports, the export and its root handle. */
#ifndef SNFS_CLIENT_MOUNT3_H
#define SNFS_CLIENT_MOUNT3_H

#include <stdint.h>

#include "client/client.h"

int nfs3_mount(struct snfs_ctx *c);
void nfs3_umount(struct snfs_ctx *c);
int nfs3_fsinfo(struct snfs_ctx *c, uint32_t *rtmax, uint32_t *wtmax,
                uint32_t *dtpref);

/* The longest export in the list that is a whole-component prefix of
 * path, or NULL. (Exposed for unit tests.) */
const char *mount3_pick_export(const char *path, char *const *exports,
                               size_t n);

#endif
