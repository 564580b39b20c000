/* Internals shared by the files of src/rpc: the service registry (read by
 * the portmapper) and the message constants of RFC 5531 section 9. Not for
 * use outside src/rpc. */
#ifndef SNFS_RPC_INT_H
#define SNFS_RPC_INT_H

#include <sys/types.h>

#include "rpc/rpc.h"

/* msg_type, reply_stat, reject_stat (RFC 5531 section 9) */
enum { RPC_MSG_CALL = 0, RPC_MSG_REPLY = 1 };
enum { RPC_MSG_ACCEPTED = 0, RPC_MSG_DENIED = 1 };
enum { RPC_REJ_MISMATCH = 0, RPC_REJ_AUTH_ERROR = 1 };

#define RPC_VERSION 2
#define RPC_MAX_AUTH_BYTES 400 /* opaque_auth body<400>, RFC 5531 sec. 8.2 */

/* What the local portmapper answers for the programs of this service. */
struct pmap_local {
	uint16_t tcp_port, udp_port;
	char addr[64]; /* numeric host the ports are bound on */
};

struct rpc_service {
	void *ctx;
	const struct rpc_program **progs;
	int nprogs, cap;
	struct pmap_local pmap;
	struct rpc_stats *stats; /* per-procedure counters (stats.h) */
	rpc_reply_fn on_reply;   /* replies arriving on served connections */
	void *reply_ctx;
};

/* Send as much of x's stream (buffer and file parts) from stream offset
 * off on as the non-blocking socket takes now. Returns bytes sent, or -1
 * when the connection is broken or a file part cannot be read. */
ssize_t rpc_send_stream(int sock, const struct xdr_out *x, size_t off);

/* A mapping of part of a file, kept across sends (mapcache.c): base maps
 * the file from offset at on. */
struct rpc_map {
	const uint8_t *base;
	uint64_t at;
	int slot;
};
/* A kept mapping covering [lo, hi) of the file open at fd, referenced
 * until rpc_map_put; false when none can be had (the range crosses a
 * window, every slot is in use, the file cannot be mapped): map it for
 * the one send then. */
bool rpc_map_get(int fd, uint64_t lo, uint64_t hi, struct rpc_map *m);
void rpc_map_put(const struct rpc_map *m);
/* Tests: the mappings kept, and dropping the unreferenced ones now
 * instead of after their idle time. */
int rpc_map_live(void);
void rpc_map_drop_idle(void);

#endif
