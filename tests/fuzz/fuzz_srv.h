/* Shared server fixture for the fuzz targets that run whole RPC calls
 * (fuzz_rpc, fuzz_nfs3_args, fuzz_nfs4_compound): a struct snfsd set up like
 * src/server/main.c does, over a fixed scratch export with a small known tree,
 * a fixed file handle key, and handle placeholders so that seeds keep working
 * after the tree is rebuilt (handles carry inode generations, which change).
 *
 * Placeholder: anywhere at a 4-byte aligned offset of a call record, the
 * XDR opaque <len 8>"SNFZ"<u32 index> is replaced by the current handle of
 * tree object index (modulo the tree size) before the call is handled.
 * tests/fuzz/mkcorpus.sh writes seeds that way. */
#ifndef SNFS_FUZZ_SRV_H
#define SNFS_FUZZ_SRV_H

#include <stddef.h>
#include <stdint.h>

#include "rpc/rpc.h"

#define FUZZ_BASE "/tmp/snfs-fuzz"
#define FUZZ_EXPORT FUZZ_BASE "/export"
#define FUZZ_RO_EXPORT FUZZ_BASE "/ro"
/* Printable so that shell scripts can write it into a state dir's fh.key. */
#define FUZZ_FH_KEY "snfs-fuzz-fhkey!"
#define FUZZ_MAGIC "SNFZ"

/* One (program, version, procedure) reachable through the service. */
struct fuzz_proc {
	uint32_t prog, vers, proc;
};

/* Set everything up once (LLVMFuzzerInitialize). With FUZZ_FHMAP=create or
 * FUZZ_FHMAP=print in the environment it prints the fixture (exports,
 * handles, procedure table) for mkcorpus.sh and exits instead; "create"
 * rebuilds the tree first. */
void fuzz_srv_init(void);

/* Handle one call record (placeholders substituted), check the reply's
 * invariants (abort on a violation), and rebuild the tree every
 * FUZZ_RESET (default 1000) calls. */
void fuzz_srv_call(const uint8_t *rec, size_t len, enum rpc_transport t);

/* The same, and hands back a malloc'ed copy of the reply record (without
 * the record mark; empty for a dropped call) when out is not NULL. */
void fuzz_srv_call_reply(const uint8_t *rec, size_t len, enum rpc_transport t,
                         uint8_t **out, size_t *outlen);

/* The procedure table: fixed order first (NFS v3, MOUNT v3, MOUNT v1,
 * PMAP v2, RPCBIND v3, RPCBIND v4), then any other registered version
 * (e.g. NFSv4), so that seeds keep their meaning as programs are added. */
size_t fuzz_srv_procs(const struct fuzz_proc **v);

#endif
