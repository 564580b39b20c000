/* The portmapper (RFC 1833): PMAP v2 and RPCBIND v3/v4 as a program snfsd
 * can serve itself on port 111, and a client to register with a running
 * rpcbind instead. */
#ifndef SNFS_RPC_PORTMAP_H
#define SNFS_RPC_PORTMAP_H

#include <stdint.h>

#include "rpc/rpc.h"

#define PMAP_PORT 111
#define PMAP_PROG 100000

/* Tell the portmapper what to answer for the programs of svc: they listen
 * on tcp_port and udp_port (0: not on that transport) at the numeric
 * address addr ("0.0.0.0" when NULL). The portmap program itself is always
 * reported on port 111. Call before serving. */
void pmap_set_local(struct rpc_service *svc, uint16_t tcp_port,
                    uint16_t udp_port, const char *addr);

/* 1 when a portmapper answers a NULL call on 127.0.0.1:111, else 0. */
int pmap_probe(void);

/* Register every (program, version, transport) of svc, the portmapper
 * itself and own_portmap_only programs excepted, at port with the running
 * rpcbind: RPCBIND v4 SET over its local socket, else PMAP v2 SET over TCP to
 * 127.0.0.1:111 (earlier registrations of the same programs are removed first).
 * TCP always; UDP for programs with udp set. Returns 0 or a negative errno
 * (-EACCES when rpcbind refused a mapping). */
int pmap_register_all(struct rpc_service *svc, uint16_t port);

/* Remove what pmap_register_all registered. 0 or a negative errno. */
int pmap_unregister_all(struct rpc_service *svc);

#endif
