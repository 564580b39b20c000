/* NFSv4.0/4.1/4.2 (RFC 7530, RFC 8881, RFC 7862): internal interfaces.
 *
 * compound.c runs a COMPOUND through the operation table; each operation
 * handler decodes its own arguments from the compound's input cursor,
 * acts, and encodes its result body (the status word is written by the
 * loop). State (clients, sessions, stateids, opens, locks) lives in
 * state.c behind one mutex; the name space (pseudo root joining the
 * exports) in pseudofs.c; attributes in attr.c.
 */
#ifndef SNFS_NFS4_H
#define SNFS_NFS4_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "proto/nfs4_const.h"
#include "rpc/rpc.h"
#include "server/exports.h"
#include "server/fh.h"
#include "xdr/xdr.h"

/* A handler's private result: the op's reply (status and body) has been
 * written already from a 4.0 seqid replay cache. */
#define NFS4_REPLAYED 0xffffffffu

/* ---- limits ---- */
#define NFS4_MAX_MINOR 2
#define NFS4_MAX_OPS 128         /* per COMPOUND (TOO_MANY_OPS/RESOURCE) */
#define NFS4_TAG_MAX 256         /* longer tags are refused (BADXDR) */
#define NFS4_OPAQUE_LIMIT 1024   /* owners, client ids */
#define NFS4_MAXIO (1024 * 1024) /* maxread, maxwrite */
#define NFS4_RPC_HDR 24          /* accepted reply header, AUTH_NONE */
#define NFS4_MAX_SLOTS 64

/* ---- file types (nfs_ftype4) ---- */
enum { NF4REG = 1, NF4DIR, NF4BLK, NF4CHR, NF4LNK, NF4SOCK, NF4FIFO };

/* The current or saved file handle of a COMPOUND. A pseudo node is named
 * by a prefix of some export's path (plen bytes of ex->path; plen 0 is
 * the root "/"); its wire handle is our own (pseudofs.c). */
enum nfs4_fh_kind { FH4_NONE = 0, FH4_PSEUDO, FH4_EXPORT };

struct nfs4_fh {
	enum nfs4_fh_kind kind;
	struct export *ex; /* FH4_EXPORT; for FH4_PSEUDO any export below */
	size_t plen;       /* FH4_PSEUDO */
	struct bk_handle bh;
	const struct export_rule *rule;
	struct bk_cred cred;
	bool rw;
};

struct nfs4_server;
struct nfs4_session;
struct nfs4_open_res;
struct rpc_stats;
struct snfsd;

struct nfs4_compound {
	struct rpc_call *call;
	struct snfsd *srv;
	struct nfs4_server *st;
	struct export_table *tab;
	uint32_t minor;
	uint32_t opnum, opidx, nops;
	struct xdr_in *args;
	struct xdr_out *res;
	size_t res_start; /* where this COMPOUND's reply body begins */
	size_t oppos;     /* where the current op's status word is */
	struct nfs4_fh cfh, sfh;
	struct nfs4_stateid cur_sid, saved_sid;
	bool cur_sid_set, saved_sid_set;
	/* 4.1 session of this compound (a reference is held) */
	struct nfs4_session *session;
	uint32_t slotid;
	bool cachethis;
	uint32_t maxresp; /* 4.1: ca_maxresponsesize, else 0 */
	uint32_t maxresp_cached;
	uint64_t clientid; /* of the session, or 0 */
	bool client_linux; /* the session's client is Linux's (EXCHANGE_ID) */
	/* 4.0: owner whose last reply must be saved after this op */
	uint64_t replay_owner;
	bool replay_owner_set;
	/* SEQUENCE replied from the slot cache: the loop stops */
	bool replayed;
	/* SEQUENCE found an uncached retry: next op gets RETRY_UNCACHED_REP */
	bool retry_uncached;
	bool destroyed_session; /* DESTROY_SESSION of our own session */
	/* per-op counters (rpc/stats.h); NULL outside a service */
	struct rpc_stats *stats;
	int stats_slot;
	/* the handle PUTFH was given, for its error line (in args) */
	const uint8_t *putfh_arg;
	uint32_t putfh_arg_len;
};

typedef uint32_t (*nfs4_op_fn)(struct nfs4_compound *c);

const char *nfs4_op_name(uint32_t op);
/* Reply bytes this COMPOUND may still add: to ca_maxresponsesize, or with
 * sa_cachethis to ca_maxresponsesize_cached; SIZE_MAX without a session.
 * READ and READDIR size their replies to it. */
size_t nfs4_reply_room(const struct nfs4_compound *c);
/* status.c: "NFS4ERR_NOENT", or NULL for a number that is no nfsstat4. */
const char *nfs4_status_name(uint32_t st);

/* ---- xdr4.c: codec helpers ---- */
uint32_t nfs4_errno(int err);
bool nfs4_get_stateid(struct xdr_in *x, struct nfs4_stateid *s);
bool nfs4_put_stateid(struct xdr_out *x, const struct nfs4_stateid *s);
/* bitmap4 of at most 3 words (more words are read and must be zero). */
bool nfs4_get_bitmap(struct xdr_in *x, uint32_t bm[3]);
bool nfs4_put_bitmap(struct xdr_out *x, const uint32_t bm[3]);
/* component4: a name, checked: NFS4_OK or INVAL/NAMETOOLONG/BADNAME. */
uint32_t nfs4_get_name(struct xdr_in *x, char name[BK_NAME_MAX + 1]);
bool nfs4_put_time(struct xdr_out *x, const struct timespec *t);
bool nfs4_put_cinfo(struct xdr_out *x, bool atomic, uint64_t before,
                    uint64_t after);

/* ---- pseudofs.c: name space and file handles ---- */
uint32_t nfs4_fh_root(struct nfs4_compound *c, struct nfs4_fh *fh);
uint32_t nfs4_fh_from_wire(struct nfs4_compound *c, const uint8_t *p,
                           uint32_t len, struct nfs4_fh *fh);
uint32_t nfs4_fh_to_wire(struct nfs4_compound *c, const struct nfs4_fh *fh,
                         struct nfs_fh *out);
uint32_t nfs4_pseudo_lookup(struct nfs4_compound *c, const struct nfs4_fh *dir,
                            const char *name, struct nfs4_fh *out);
uint32_t nfs4_lookupp(struct nfs4_compound *c, const struct nfs4_fh *fh,
                      struct nfs4_fh *out);
uint64_t nfs4_pseudo_fileid(const struct nfs4_fh *fh);
/* mounted_on_fileid of an export root: its node in the pseudo tree. */
uint64_t nfs4_export_mounted_on(const struct export *ex);
bool nfs4_fh_is_export_root(const struct nfs4_fh *fh);
/* READDIR of a pseudo directory: entries from cookie; encodes the entry
 * list like fileops.c does. */
uint32_t nfs4_pseudo_readdir(struct nfs4_compound *c, uint64_t cookie,
                             uint32_t maxcount, const uint32_t req[3]);

/* ---- attr.c ---- */
struct nfs4_attr_src {
	const struct nfs4_fh *fh;
	struct bk_attr a;      /* filled for FH4_EXPORT */
	uint32_t rdattr_error; /* if non-zero, only rdattr_error is given */
	bool mounted_on_set;
	uint64_t mounted_on;
};
void nfs4_supported_attrs(uint32_t minor, uint32_t bm[3]);
/* suppattr_exclcreat: what OPEN's EXCLUSIVE4_1 may set with the
 * verifier. */
void nfs4_exclcreat_attrs(uint32_t bm[3]);
/* Whether every attribute of req that is given can be told from an
 * entry's type and fileid alone (with no handle or other attributes):
 * READDIR then needs no lookup or stat per name. */
bool nfs4_attrs_from_dirent(uint32_t minor, const uint32_t req[3]);
/* Fill src->a for the object (backend getattr or pseudo attributes). */
uint32_t nfs4_attr_load(struct nfs4_compound *c, const struct nfs4_fh *fh,
                        struct nfs4_attr_src *src);
/* Encode fattr4 (bitmap of what is given, then attrlist4). getattr is
 * true for GETATTR (write-only attributes are then an error). */
uint32_t nfs4_encode_fattr(struct nfs4_compound *c, struct xdr_out *x,
                           const uint32_t req[3], struct nfs4_attr_src *src);
/* A request bitmap and what of it is given (supported and readable),
 * worked out once for the many fattr4 of a READDIR. */
struct nfs4_fattr_plan {
	uint32_t req[3];
	uint32_t give[3];
};
void nfs4_fattr_plan_init(uint32_t minor, const uint32_t req[3],
                          struct nfs4_fattr_plan *p);
/* nfs4_encode_fattr with the bitmap worked out. */
uint32_t nfs4_encode_fattr_plan(struct nfs4_compound *c, struct xdr_out *x,
                                const struct nfs4_fattr_plan *p,
                                struct nfs4_attr_src *src);
/* Decode fattr4 for SETATTR/CREATE/OPEN into sa; the attributes given go
 * to set[] (attrset of the reply). */
uint32_t nfs4_decode_sattr(struct nfs4_compound *c, struct xdr_in *x,
                           struct bk_setattr *sa, uint32_t set[3]);
uint32_t nfs4_op_getattr(struct nfs4_compound *c);
uint32_t nfs4_op_setattr(struct nfs4_compound *c);
uint32_t nfs4_op_verify(struct nfs4_compound *c);
uint32_t nfs4_op_nverify(struct nfs4_compound *c);

/* ---- fileops.c ---- */
uint32_t nfs4_need_export(struct nfs4_compound *c); /* cfh on an export */
uint32_t nfs4_need_write(struct nfs4_compound *c);  /* ... and rw */
uint32_t nfs4_cfh_type(struct nfs4_compound *c, enum bk_ftype *type);
uint32_t nfs4_op_putrootfh(struct nfs4_compound *c);
uint32_t nfs4_op_putpubfh(struct nfs4_compound *c);
uint32_t nfs4_op_putfh(struct nfs4_compound *c);
uint32_t nfs4_op_getfh(struct nfs4_compound *c);
uint32_t nfs4_op_savefh(struct nfs4_compound *c);
uint32_t nfs4_op_restorefh(struct nfs4_compound *c);
uint32_t nfs4_op_lookup(struct nfs4_compound *c);
uint32_t nfs4_op_lookupp(struct nfs4_compound *c);
uint32_t nfs4_op_access(struct nfs4_compound *c);
uint32_t nfs4_op_readlink(struct nfs4_compound *c);
uint32_t nfs4_op_create(struct nfs4_compound *c);
uint32_t nfs4_op_remove(struct nfs4_compound *c);
uint32_t nfs4_op_rename(struct nfs4_compound *c);
uint32_t nfs4_op_link(struct nfs4_compound *c);
uint32_t nfs4_op_readdir(struct nfs4_compound *c);
uint32_t nfs4_op_secinfo(struct nfs4_compound *c);
uint32_t nfs4_op_secinfo_no_name(struct nfs4_compound *c);
/* Encode one READDIR entry (value-follows, cookie, name, attrs); false if
 * it does not fit in limit bytes of x (x is then unchanged). */
bool nfs4_put_dirent(struct nfs4_compound *c, struct xdr_out *x, size_t limit,
                     uint64_t cookie, const char *name, uint32_t namelen,
                     const uint32_t req[3], struct nfs4_attr_src *src);
/* The same with the bitmap worked out once for the whole listing. */
bool nfs4_put_dirent_plan(struct nfs4_compound *c, struct xdr_out *x,
                          size_t limit, uint64_t cookie, const char *name,
                          uint32_t namelen, const struct nfs4_fattr_plan *p,
                          struct nfs4_attr_src *src);

/* ---- io.c ---- */
uint32_t nfs4_op_open(struct nfs4_compound *c);
uint32_t nfs4_op_open_confirm(struct nfs4_compound *c);
uint32_t nfs4_op_open_downgrade(struct nfs4_compound *c);
uint32_t nfs4_op_close(struct nfs4_compound *c);
uint32_t nfs4_op_read(struct nfs4_compound *c);
uint32_t nfs4_op_write(struct nfs4_compound *c);
uint32_t nfs4_op_commit(struct nfs4_compound *c);
uint32_t nfs4_op_delegreturn(struct nfs4_compound *c);
uint32_t nfs4_op_delegpurge(struct nfs4_compound *c);
/* Data bytes that fit in the reply after overhead more bytes. */
uint32_t nfs4_io_room(const struct nfs4_compound *c, uint32_t count,
                      uint32_t overhead);

/* ---- v42.c ---- */
uint32_t nfs4_op_read_plus(struct nfs4_compound *c);
uint32_t nfs4_op_seek(struct nfs4_compound *c);
uint32_t nfs4_op_allocate(struct nfs4_compound *c);
uint32_t nfs4_op_deallocate(struct nfs4_compound *c);
uint32_t nfs4_op_copy(struct nfs4_compound *c);
uint32_t nfs4_op_clone(struct nfs4_compound *c);

/* ---- state.c ---- */
enum { STID_ANY = 0, STID_READ = 1, STID_WRITE = 2 };
struct nfs4_server *nfs4_server_get(struct snfsd *s);
void nfs4_server_free(struct nfs4_server *st);
uint32_t nfs4_lease_time(const struct nfs4_server *st);
/* An RPC reply that arrived on conn: a client's answer to a call back
 * (callback.c). */
void nfs4_cb_reply(struct nfs4_server *st, struct rpc_conn *conn, uint32_t xid,
                   const uint8_t *rec, size_t len);
/* The same as the service's reply function (rpc_service_on_reply), its
 * context the struct snfsd. */
void nfs4_cb_on_reply(void *ctx, struct rpc_conn *conn, uint32_t xid,
                      const uint8_t *rec, size_t len);
/* Calls back sent, answered NFS4_OK, and failed (error, no answer). */
void nfs4_cb_stats(struct nfs4_server *st, uint64_t *sent, uint64_t *ok,
                   uint64_t *failed);
/* Delegations (deleg.c): granted, recalled, returned, revoked. */
struct nfs4_deleg_stats {
	uint64_t granted, recalled, returned, revoked;
	uint32_t held;
};
void nfs4_deleg_stats(struct nfs4_server *st, struct nfs4_deleg_stats *out);
/* Another client's delegation of the file (bh on the current fh's export)
 * stands in the way of a change by this COMPOUND: recalled, waited for a
 * moment, NFS4ERR_DELAY if it is still held. */
uint32_t nfs4_deleg_conflict(struct nfs4_compound *c,
                             const struct bk_handle *bh);
/* The same for the object name in directory dir (REMOVE, RENAME). */
uint32_t nfs4_deleg_conflict_name(struct nfs4_compound *c,
                                  const struct nfs4_fh *dir, const char *name);
/* OPEN's open_delegation4: the read delegation granted, or NONE. */
void nfs4_deleg_put(struct xdr_out *x, const struct nfs4_open_res *r);
/* CLAIM_DELEGATE_CUR/CLAIM_DELEG_CUR_FH: sid is a delegation of this
 * client on the current file. */
uint32_t nfs4_deleg_claim_check(struct nfs4_compound *c,
                                const struct nfs4_stateid *sid);
/* Drop the state of clients whose lease ran out (called per COMPOUND). */
void nfs4_state_sweep(struct nfs4_server *st);
/* Check a stateid for I/O on the current file (READ/WRITE/SETATTR size,
 * 4.2 ops): special stateids, open modes, share reservations. */
uint32_t nfs4_check_io_stateid(struct nfs4_compound *c,
                               const struct nfs4_stateid *sid, int mode);
/* Replace the 4.1 "current stateid" special value by the compound's. */
uint32_t nfs4_resolve_stateid(struct nfs4_compound *c,
                              struct nfs4_stateid *sid);
void nfs4_set_cur_stateid(struct nfs4_compound *c,
                          const struct nfs4_stateid *sid);
/* 4.1 sessions: SEQUENCE bookkeeping done by the compound loop. */
void nfs4_session_done(struct nfs4_compound *c, const uint8_t *reply,
                       size_t len);
/* 4.0: store an owner's last reply for seqid replay. */
void nfs4_owner_save_reply(struct nfs4_server *st, uint64_t owner_id,
                           const uint8_t *p, size_t len);
bool nfs4_in_grace(struct nfs4_server *st);

uint32_t nfs4_op_setclientid(struct nfs4_compound *c);
uint32_t nfs4_op_setclientid_confirm(struct nfs4_compound *c);
uint32_t nfs4_op_renew(struct nfs4_compound *c);
uint32_t nfs4_op_exchange_id(struct nfs4_compound *c);
uint32_t nfs4_op_create_session(struct nfs4_compound *c);
uint32_t nfs4_op_destroy_session(struct nfs4_compound *c);
uint32_t nfs4_op_destroy_clientid(struct nfs4_compound *c);
uint32_t nfs4_op_sequence(struct nfs4_compound *c);
uint32_t nfs4_op_bind_conn_to_session(struct nfs4_compound *c);
uint32_t nfs4_op_backchannel_ctl(struct nfs4_compound *c);
uint32_t nfs4_op_reclaim_complete(struct nfs4_compound *c);
uint32_t nfs4_op_test_stateid(struct nfs4_compound *c);
uint32_t nfs4_op_free_stateid(struct nfs4_compound *c);
uint32_t nfs4_op_lock(struct nfs4_compound *c);
uint32_t nfs4_op_lockt(struct nfs4_compound *c);
uint32_t nfs4_op_locku(struct nfs4_compound *c);
uint32_t nfs4_op_release_lockowner(struct nfs4_compound *c);

/* Open state for io.c. */
struct nfs4_open_args {
	uint32_t seqid;
	uint32_t access, deny;
	uint64_t clientid;
	const uint8_t *owner;
	uint32_t ownerlen;
	uint32_t claim;
	bool created; /* a new file: no access check, no share conflict */
	/* The truncation of an existing file that OPEN4_CREATE/UNCHECKED4
	 * asked (its size), done by nfs4_open_finish once the share
	 * reservations allow the open. */
	const struct bk_setattr *trunc;
	/* a read delegation may go with it (io.c: asked for reading only,
	 * a 4.1 session that takes calls, an export that grants them) */
	bool want_deleg;
};
struct nfs4_open_res {
	struct nfs4_stateid sid;
	bool confirm; /* 4.0: OPEN_CONFIRM needed */
	/* the session takes calls back: a refused blocking LOCK will hear
	 * when to try again (OPEN4_RESULT_MAY_NOTIFY_LOCK) */
	bool cb_up;
	bool deleg; /* a read delegation, dsid, was granted */
	struct nfs4_stateid dsid;
};
/* Check owner/seqid before the file system is touched. Returns NFS4_OK,
 * an error, or NFS4_REPLAYED (the reply was written). */
uint32_t nfs4_open_begin(struct nfs4_compound *c,
                         const struct nfs4_open_args *a);
/* Record the open of the current file. */
uint32_t nfs4_open_finish(struct nfs4_compound *c,
                          const struct nfs4_open_args *a,
                          struct nfs4_open_res *r);
uint32_t nfs4_open_confirm_state(struct nfs4_compound *c, uint32_t seqid,
                                 struct nfs4_stateid *sid);
uint32_t nfs4_open_downgrade_state(struct nfs4_compound *c, uint32_t seqid,
                                   struct nfs4_stateid *sid, uint32_t access,
                                   uint32_t deny);
uint32_t nfs4_close_state(struct nfs4_compound *c, uint32_t seqid,
                          struct nfs4_stateid *sid);

#endif
