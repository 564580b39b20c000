/* ONC RPC v2 (RFC 5531): programs, calls, dispatch and the server runtime.
 *
 * A protocol registers a struct rpc_program: per version, a table of
 * procedures. The runtime (event loop, TCP/UDP transports, worker pool)
 * decodes each call header, answers PROG_UNAVAIL / PROG_MISMATCH /
 * PROC_UNAVAIL / AUTH_ERROR itself, and calls the handler on a worker thread
 * with the arguments still undecoded in call->args.
 */
#ifndef SNFS_RPC_H
#define SNFS_RPC_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "xdr/xdr.h"

/* auth flavors */
enum {
	RPC_AUTH_NONE = 0,
	RPC_AUTH_SYS = 1,
	RPC_AUTH_SHORT = 2,
	RPC_AUTH_DH = 3,
	RPC_RPCSEC_GSS = 6,
};

/* accept_stat */
enum {
	RPC_SUCCESS = 0,
	RPC_PROG_UNAVAIL = 1,
	RPC_PROG_MISMATCH = 2,
	RPC_PROC_UNAVAIL = 3,
	RPC_GARBAGE_ARGS = 4,
	RPC_SYSTEM_ERR = 5,
};

/* auth_stat, for rejected replies */
enum {
	RPC_AUTH_OK = 0,
	RPC_AUTH_BADCRED = 1,
	RPC_AUTH_REJECTEDCRED = 2,
	RPC_AUTH_BADVERF = 3,
	RPC_AUTH_REJECTEDVERF = 4,
	RPC_AUTH_TOOWEAK = 5,
	RPC_AUTH_INVALIDRESP = 6,
	RPC_AUTH_FAILED = 7,
	RPCSEC_GSS_CREDPROBLEM = 13,
	RPCSEC_GSS_CTXPROBLEM = 14,
};

/* Handler results other than an accept_stat: */
#define RPC_REPLY_DROP (-1)                       /* send nothing */
#define RPC_REPLY_AUTH_ERR(stat) (0x100 | (stat)) /* MSG_DENIED, AUTH_ERROR */

#define RPC_MAX_GIDS 16
#define RPC_CALL_FH_MAX 128 /* NFS4_FHSIZE; NFSv3 handles are <= 64 */
#define RPC_MAX_MACHINE 255

struct rpc_cred {
	uint32_t flavor; /* RPC_AUTH_NONE or RPC_AUTH_SYS; others are refused */
	uint32_t uid, gid;
	uint32_t ngids;
	uint32_t gids[RPC_MAX_GIDS];
	char machine[RPC_MAX_MACHINE + 1];
};

enum rpc_transport { RPC_TCP = 1, RPC_UDP = 2 };

struct rpc_conn;
struct rpc_server;

struct rpc_call {
	uint32_t xid, prog, vers, proc;
	struct rpc_cred cred;
	struct xdr_in args; /* the call's arguments, undecoded */
	struct sockaddr_storage peer;
	socklen_t peer_len;
	enum rpc_transport transport;
	struct rpc_conn *conn;   /* NULL for UDP */
	void *ctx;               /* the service's context (struct snfsd *) */
	struct rpc_service *svc; /* the service dispatching this call */

	/* Filled by the handler (all optional), read after it returns for
	 * the statistics and error log of src/rpc/stats.h:
	 * status: the protocol status of the reply (nfsstat3, ...), 0 = OK;
	 * status_first: the results begin with a 32-bit status (nfsstat3,
	 *   nfsstat4), which the runtime reads when status is left 0;
	 * status_name: the printable name of a status ("NFS3ERR_STALE");
	 * fh: the file handle the call was about (rpc_call_set_fh);
	 * error_logged: the handler wrote the error lines itself, one per
	 *   failed op (rpc_stats_log_op_error): the call's own would repeat
	 *   them. */
	uint32_t status;
	bool status_first;
	bool error_logged;
	const char *(*status_name)(uint32_t status);
	uint32_t fh_len;
	uint8_t fh[RPC_CALL_FH_MAX];
};

/* Remember the handle a call is about, for error logs; the first one set
 * wins (RENAME and LINK name their source). Longer handles are cut. */
void rpc_call_set_fh(struct rpc_call *call, const void *fh, uint32_t len);
/* The address a TCP call arrived at (our side of its connection): 0, or
 * -ENOTCONN for UDP calls, or -errno. */
int rpc_call_local_addr(const struct rpc_call *call,
                        struct sockaddr_storage *out);

/* A handler decodes call->args and encodes its results into res. It returns
 * an accept_stat (RPC_SUCCESS sends res; any other sends the header only),
 * RPC_REPLY_AUTH_ERR(stat) or RPC_REPLY_DROP. A decode failure must return
 * RPC_GARBAGE_ARGS (and log a line with the peer and procedure). */
typedef int (*rpc_handler)(struct rpc_call *call, struct xdr_out *res);

struct rpc_proc {
	const char *name;
	rpc_handler fn;
};

struct rpc_version {
	uint32_t vers;
	const struct rpc_proc *procs; /* indexed by procedure number */
	uint32_t nprocs;
};

struct rpc_program {
	uint32_t prog;
	const char *name;
	const struct rpc_version *versions;
	uint32_t nversions;
	bool udp; /* also served over UDP (MOUNT, portmap) */
	/* Named by our own portmapper only, never registered with rpcbind:
	 * where rpcbind runs, the program belongs to another daemon there
	 * (NSM to rpc.statd). */
	bool own_portmap_only;
};

/* ---- service: a registry of programs, independent of sockets ---- */

struct rpc_service;

struct rpc_service *rpc_service_new(void *ctx);
void rpc_service_free(struct rpc_service *svc);
int rpc_service_add(struct rpc_service *svc, const struct rpc_program *prog);
const struct rpc_program *rpc_service_find(const struct rpc_service *svc,
                                           uint32_t prog);

/* Decode one complete RPC record, dispatch it and encode the whole reply
 * (without a record mark) into reply. Returns 0 when reply must be sent,
 * RPC_REPLY_DROP when nothing is sent (not a call, undecodable header). Used
 * by the transports and directly by unit tests and fuzzers.
 * The reply is appended after whatever reply already holds (so TCP can put
 * the 4-byte record mark in front and send both with one write); bytes
 * before the initial reply->len are never touched. */
int rpc_service_handle(struct rpc_service *svc, const uint8_t *rec, size_t len,
                       const struct sockaddr *peer, socklen_t peer_len,
                       enum rpc_transport t, struct rpc_conn *conn,
                       struct xdr_out *reply);

/* ---- calls from us on a client's own connection ----
 * NFSv4.1 calls its clients back over the connection they bound to a
 * session (RFC 8881 2.10.3.1): no connection of our own, which a client
 * behind NAT or a firewall could not accept anyway. Its answers arrive as
 * REPLY records among the calls; the service hands each to its reply
 * function (on a worker thread), with the whole record. */
typedef void (*rpc_reply_fn)(void *ctx, struct rpc_conn *conn, uint32_t xid,
                             const uint8_t *rec, size_t len);
void rpc_service_on_reply(struct rpc_service *svc, rpc_reply_fn fn, void *ctx);
/* Keep c (its memory, not the socket) past its close. */
void rpc_conn_hold(struct rpc_conn *c);
void rpc_conn_release(struct rpc_conn *c);
/* Whether c's socket is still open. */
bool rpc_conn_is_open(struct rpc_conn *c);
/* Send one RPC message (without a record mark; a multiple of 4 bytes) on
 * c, behind any replies queued there. 0, -EPIPE when c is closed, or
 * -ENOMEM. Never waits for the socket: what it does not take now waits
 * in c's queue for the event loop. */
int rpc_conn_send(struct rpc_conn *c, const uint8_t *msg, size_t len);

/* ---- TCP record marking (RFC 5531 section 11) ---- */

#define RPC_LAST_FRAG 0x80000000u
#define RPC_DEFAULT_MAX_RECORD (1024 * 1024 + 64 * 1024)

/* Reassembles records from a byte stream, fragment by fragment. */
struct rpc_record_reader {
	uint8_t *buf; /* the record so far */
	size_t len, cap;
	size_t max_record;
	uint8_t hdr[4];
	uint32_t hdr_have;
	uint32_t frag_left; /* bytes still to read of the current fragment */
	bool last;          /* current fragment is the last one */
	bool in_frag;
};

void rpc_record_init(struct rpc_record_reader *r, size_t max_record);
void rpc_record_free(struct rpc_record_reader *r);
/* Feed up to n bytes. Returns the number consumed (it stops right after a
 * complete record so the caller can take it), or -1 when the stream breaks
 * the rules (record over max_record, empty non-last fragment abuse). When a
 * record is complete *done is set and buf/len hold it until
 * rpc_record_next() is called. */
long rpc_record_feed(struct rpc_record_reader *r, const uint8_t *p, size_t n,
                     bool *done);
void rpc_record_next(struct rpc_record_reader *r);
/* Take ownership of the complete record (free() it when done) and get ready
 * for the next one, without copying. Returns NULL for an empty record. */
uint8_t *rpc_record_take(struct rpc_record_reader *r, size_t *len);

/* ---- server runtime ---- */

struct rpc_server_config {
	int nthreads;      /* worker threads (default 8) */
	size_t max_record; /* largest call record accepted */
	int max_conns; /* connections beyond this are closed (default 4096) */
	int max_inflight;     /* calls in progress per connection before
	                       * reading stops (back-pressure) */
	size_t max_out_bytes; /* queued reply bytes per connection before
	                       * reading stops */
};

struct rpc_server *rpc_server_new(struct rpc_service *svc,
                                  const struct rpc_server_config *cfg);
/* Listen on addr:port. proto is SOCK_STREAM or SOCK_DGRAM. Returns 0 or
 * -errno. Call before rpc_server_run. */
int rpc_server_listen(struct rpc_server *srv, const char *addr, uint16_t port,
                      int proto);
/* The port actually bound by the last listen of that proto (for port 0). */
uint16_t rpc_server_port(const struct rpc_server *srv, int proto);
/* Run the event loop until rpc_server_stop(). Returns 0 or -errno. */
int rpc_server_run(struct rpc_server *srv);
/* Ask the loop to stop; safe from a signal handler or any thread. */
void rpc_server_stop(struct rpc_server *srv);
void rpc_server_free(struct rpc_server *srv);

/* The numeric address alone ("a.b.c.d", "v6"), "?" when there is none. */
const char *rpc_host_str(const struct sockaddr *sa, char *buf, size_t n);
/* Short printable form of a peer address ("127.0.0.1:812"). */
const char *rpc_peer_str(const struct sockaddr *sa, char *buf, size_t n);
/* A loopback address: 127/8, ::1, or 127/8 mapped into IPv6. */
bool rpc_addr_is_loopback(const struct sockaddr *sa);
/* Source port of a peer, for the exports `secure` option. */
uint16_t rpc_peer_port(const struct sockaddr *sa);

/* The size of a reply's piece of file from which sending it by
 * sendfile costs less than copying it (read into the reply, copied into
 * the socket) on this machine, UINT64_MAX for none: timed once over a
 * loopback connection for pieces of 4 KiB to 1 MiB, at the first ask
 * (sendcal.c), or as SNFSD_SENDFILE_PAYS says (0: none, 1: from a page,
 * or a size in bytes). The export option zerocopy=auto (the default)
 * follows it. */
uint64_t rpc_sendfile_from(void);
/* Whether it pays from a page on (a piece of 4 KiB). */
bool rpc_sendfile_pays(void);
/* The decision for one size from its two times (tests). */
bool rpc_sendfile_pays_model(double t_copy, double t_sendfile);
/* The answer from the decisions for n sizes, smallest first: the
 * smallest size from which sendfile pays at every size up, else
 * UINT64_MAX (tests). */
uint64_t rpc_sendfile_from_model(const uint32_t *sizes, const bool *pays,
                                 size_t n);
/* Set it instead (tests): a size (0 for none), or from a page or none. */
void rpc_sendfile_from_set(uint64_t size);
void rpc_sendfile_pays_set(bool v);

#endif
