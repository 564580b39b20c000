/* The NFS and MOUNT programs: which versions exist and over which
 * transports. Adding NFSv4 is adding its version table here. */
#include "server/programs.h"

#include "rpc/stats.h"
#include "server/mount/mount3.h"
#include "server/nlm/nlm.h"
#include "server/snfsd.h"

/* NFS over UDP is not offered: large READ/WRITE replies fragment, and
 * Linux clients default to TCP (RFC 7530 requires it for v4). */
/* Versions 3 and 4: filled from the per-version tables at registration
 * (a const table cannot copy other objects at compile time). */
static struct rpc_version nfs_versions[2];

const struct rpc_program snfsd_nfs_program = {
    .prog = NFS_PROGRAM,
    .name = "nfs",
    .versions = nfs_versions,
    .nversions = 2,
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

/* NLM v4 over TCP and UDP (Linux picks the NFS mount's transport; other
 * clients ask over UDP). */
const struct rpc_program snfsd_nlm_program = {
    .prog = NLM_PROG,
    .name = "nlockmgr",
    .versions = &nlm4_version,
    .nversions = 1,
    .udp = true,
};

/* NSM's SM_NOTIFY, for clients that restarted: named only by our own
 * portmapper (where rpcbind runs, rpc.statd owns the program). */
const struct rpc_program snfsd_nsm_program = {
    .prog = NSM_PROG,
    .name = "status",
    .versions = &nsm1_version,
    .nversions = 1,
    .udp = true,
    .own_portmap_only = true,
};

int programs_register(struct rpc_service *svc)
{
	int rc;

	nfs_versions[0] = nfs3_version;
	nfs_versions[1] = nfs4_version;
	rc = rpc_service_add(svc, &snfsd_nfs_program);
	if (!rc)
		rc =
		    rpc_stats_add_optab(rpc_service_stats(svc), &nfs4_op_stats);
	if (!rc)
		rc = rpc_service_add(svc, &snfsd_mount_program);
	if (!rc)
		rc = rpc_service_add(svc, &snfsd_nlm_program);
	if (!rc)
		rc = rpc_service_add(svc, &snfsd_nsm_program);
	return rc;
}
