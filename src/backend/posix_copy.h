/* COPY and CLONE for the POSIX backend (NFSv4.2): bk_ops.copy and
 * bk_ops.clone of bk_posix_ops. */
#ifndef SNFS_BACKEND_POSIX_COPY_H
#define SNFS_BACKEND_POSIX_COPY_H

#include <sys/types.h>

#include "backend/backend.h"

ssize_t posix_copy(struct bk_export *ex, const struct bk_cred *cr,
                   const struct bk_handle *src, uint64_t src_off,
                   const struct bk_handle *dst, uint64_t dst_off,
                   uint64_t count);
int posix_clone(struct bk_export *ex, const struct bk_cred *cr,
                const struct bk_handle *src, uint64_t src_off,
                const struct bk_handle *dst, uint64_t dst_off, uint64_t count);

#endif
