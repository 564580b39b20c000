/* Blocking RPC calls snfsd makes itself over TCP: registering with
 * rpcbind (pmap_client.c) and calling other hosts' lock managers back
 * (src/server/nlm/nlm_cb.c). Every send and receive has a timeout, so a
 * peer that stops answering costs at most that long. */
#ifndef SNFS_RPC_CALLOUT_H
#define SNFS_RPC_CALLOUT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rpc/rpc.h"
#include "xdr/xdr.h"

/* Bound each send and receive on fd to timeout_s seconds. */
void rpc_callout_timeouts(int fd, int timeout_s);
/* A TCP stream to sa, connected within timeout_s, from a reserved port
 * when reserved and we may bind one. fd or -errno. */
int rpc_callout_connect(const struct sockaddr *sa, socklen_t len, int timeout_s,
                        bool reserved);
/* One call on fd with AUTH_SYS credentials of our uid: the reply's
 * results are left in *res, which points into r (rpc_record_free(r)
 * afterwards, in every case). 0, -EACCES when the call was denied,
 * -EPROTO for any other unsuccessful reply, or -errno. */
int rpc_callout_call(int fd, uint32_t xid, uint32_t prog, uint32_t vers,
                     uint32_t proc, const struct xdr_out *args,
                     struct rpc_record_reader *r, struct xdr_in *res);
/* The port of (prog, vers, TCP) at the portmapper on sa's host (PMAP v2
 * GETPORT to port 111). The port, 0 when not registered, or -errno. */
int rpc_callout_getport(const struct sockaddr *sa, socklen_t len, uint32_t prog,
                        uint32_t vers, int timeout_s);

#endif
