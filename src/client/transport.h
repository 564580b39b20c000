/* ONC RPC (RFC 5531) client over TCP with record marking (section 11).
 *
 * One connection per struct rpc_clnt, shared by every thread. Calls are
 * matched to replies by xid, so many may be outstanding at once: a caller
 * may start several calls and wait for them later (pipelining). Replies
 * are read by a waiting caller itself (one at a time, handing on those of
 * others), so a reply costs no thread switch; a helper thread reconnects
 * when the connection breaks (only while calls are waiting) and each
 * waiting call is sent again with its old xid, so a server's duplicate
 * request cache can recognise it.
 */
#ifndef SNFS_CLIENT_TRANSPORT_H
#define SNFS_CLIENT_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xdr/xdr.h"

struct snfs_counters;

#define RPC_CLNT_MAX_GIDS 16

struct rpc_clnt_cfg {
	const char *host;
	uint16_t port;
	uint32_t timeout_ms; /* per call, including reconnects */
	uint32_t uid, gid;
	uint32_t ngids;
	uint32_t gids[RPC_CLNT_MAX_GIDS];
	size_t max_reply;            /* largest record accepted */
	struct snfs_counters *stats; /* may be NULL */
};

struct rpc_clnt;
struct rpc_req;

/* A reply: the whole record; res is positioned at the procedure results. */
struct rpc_reply {
	uint8_t *buf;
	size_t len;
	struct xdr_in res;
};

/* Connect now (so a wrong port fails at once). Returns 0 or -errno. */
int rpc_clnt_open(const struct rpc_clnt_cfg *cfg, struct rpc_clnt **out);
void rpc_clnt_close(struct rpc_clnt *c);

/* Send a call. args is the encoded argument body; the request takes over
 * its buffer (args is left empty). op indexes the per-operation counters.
 * Returns 0 and *out, or -errno. */
int rpc_call_start(struct rpc_clnt *c, uint32_t prog, uint32_t vers,
                   uint32_t proc, int op, struct xdr_out *args,
                   struct rpc_req **out);
/* rpc_call_start without the write: the call goes out with the next
 * rpc_flush naming it, or when it is waited for. Several calls held and
 * flushed together leave in one sendmsg, and reach the server together. */
int rpc_call_hold(struct rpc_clnt *c, uint32_t prog, uint32_t vers,
                  uint32_t proc, int op, struct xdr_out *args,
                  struct rpc_req **out);
void rpc_flush(struct rpc_clnt *c, struct rpc_req *const *reqs, int n);
/* Wait for the reply to r and free r. On 0, rep owns the reply buffer
 * (free with rpc_reply_free). Errors: -ETIMEDOUT, -EPROTO (malformed
 * reply), -EPROTONOSUPPORT (program or version unavailable), -ENOSYS
 * (procedure unavailable), -EINVAL (garbage args), -EACCES (auth), -EIO. */
int rpc_call_wait(struct rpc_clnt *c, struct rpc_req *r, struct rpc_reply *rep);
/* Abandon a started call without waiting. */
void rpc_call_cancel(struct rpc_clnt *c, struct rpc_req *r);
/* rpc_call_start + rpc_call_wait. */
int rpc_call(struct rpc_clnt *c, uint32_t prog, uint32_t vers, uint32_t proc,
             int op, struct xdr_out *args, struct rpc_reply *rep);
void rpc_reply_free(struct rpc_reply *rep);
/* Reply buffers (rpc_reply.buf, kept by callers such as the READDIR
 * cache) come from here and must be freed with rpc_buf_free, never
 * free(). */
uint8_t *rpc_buf_alloc(size_t n);
void rpc_buf_free(void *p);

/* Validate a reply record and position res at the results (exposed for
 * unit tests). Returns 0 or an error as rpc_call_wait does. */
int rpc_parse_reply(const uint8_t *buf, size_t len, uint32_t xid,
                    struct xdr_in *res);

#endif
