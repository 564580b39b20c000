/* The RPC programs snfsd serves, assembled from the per-version tables. */
#ifndef SNFS_PROGRAMS_H
#define SNFS_PROGRAMS_H

#include "rpc/rpc.h"

/* NFS (100003) over TCP only; MOUNT (100005) over TCP and UDP. */
extern const struct rpc_program snfsd_nfs_program;
extern const struct rpc_program snfsd_mount_program;
/* NLM v4 (100021), the NFSv3 lock manager, over TCP and UDP. */
extern const struct rpc_program snfsd_nlm_program;
/* NSM (100024) SM_NOTIFY, over TCP and UDP; our own portmapper only. */
extern const struct rpc_program snfsd_nsm_program;

/* Register the programs on svc. Returns 0 or -errno. */
int programs_register(struct rpc_service *svc);

#endif
