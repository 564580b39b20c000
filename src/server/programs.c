/* The NFS and MOUNT programs: which versions exist and over which
 * transports. Adding NFSv4 is adding its version table here. */
#include "server/programs.h"

#include "server/mount/mount3.h"
#include "server/snfsd.h"

/* NFS over UDP is not offered: large READ/WRITE replies fragment, and
 * Linux clients default to TCP (RFC 7530 requires it for v4). */
const struct rpc_program snfsd_nfs_program = {
    .prog = NFS_PROGRAM,
    .name = "nfs",
    .versions = &nfs3_version,
    .nversions = 1,
    .udp = false,
};

/* MOUNT answers over UDP too: mount.nfs and showmount often ask that
 * way first. */
const struct rpc_program snfsd_mount_program = {
    .prog = MOUNT_PROGRAM,
    .name = "mountd",
    .versions = mount_versions,
    .nversions = MOUNT_NVERSIONS,
    .udp = true,
};

int programs_register(struct rpc_service *svc)
{
	int rc = rpc_service_add(svc, &snfsd_nfs_program);

	if (!rc)
		rc = rpc_service_add(svc, &snfsd_mount_program);
	return rc;
}
