/* Exports: which directories are served, to whom, and how.
 *
 * Syntax is /etc/exports(5): `/srv/data 127.0.0.1(rw,sync)
 * 10.0.0.0/8(ro,root_squash) *(ro)`. A table is immutable once built and
 * reference counted, so SIGHUP can swap in a new one while calls in flight
 * finish on the old. */
#ifndef SNFS_EXPORTS_H
#define SNFS_EXPORTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "backend/backend.h"
#include "rpc/rpc.h"

struct snfsd;

enum {
	EXP_RW = 1 << 0,
	EXP_ROOT_SQUASH = 1 << 1,
	EXP_ALL_SQUASH = 1 << 2,
	EXP_SECURE = 1 << 3,        /* only privileged source ports (< 1024) */
	EXP_SYNC = 1 << 4,          /* write UNSTABLE as FILE_SYNC */
	EXP_DETECT_ZEROES = 1 << 5, /* READ_PLUS: zero blocks go as holes */
	EXP_NO_ZEROCOPY = 1 << 6,   /* READ data copied, never sendfile */
	EXP_IDMAP_NAMES = 1 << 7,   /* NFSv4 owners as name@domain */
	EXP_NO_MAPPED = 1 << 8,     /* READ data never sent from a mapping */
	EXP_ZEROCOPY_AUTO = 1
	                    << 9,  /* zerocopy where sendfile pays (readio.h) */
	EXP_DELEGATIONS = 1 << 10, /* NFSv4.1 read delegations (deleg.c) */
};

/* READ_PLUS sends holes shorter than readplus_min_hole as zeros inside
 * DATA. Unset, that may depend on the client (the Linux kernel client is
 * told apart by its EXCHANGE_ID implementation id), and today it does
 * not: measured in the guest (bench/results/stop21, three runs of 7), the
 * 6.12 client read 4 KiB-segment files with dd bs=1M 7-22% faster with
 * every hole a hole than with holes under 16 KiB as zeros, and with
 * iflag=direct bs=128K 0-11% slower (run-to-run spread 6-13%), while
 * half the bytes went on the wire: buffered reads and the wire win over
 * one call at a time. An earlier, noisier guest had the direct reads up
 * to 1.5x READ, which is what 16384 was chosen for. */
#define EXP_READPLUS_MIN_HOLE_AUTO UINT32_MAX
#define EXP_READPLUS_MIN_HOLE_DEFAULT 4096
#define EXP_READPLUS_MIN_HOLE_LINUX 4096
/* The same client where pages of data go by sendfile (zerocopy=auto on a
 * machine where sendfile pays, or zerocopy): a hole sent as zeros costs
 * the server nothing more than the send it is part of, a HOLE segment
 * costs it a sendfile and a send more. Measured in the guest
 * (bench/results/stop26/guest_w3_minhole.txt, 32 MiB, 5 runs, medians,
 * servers in turn), thresholds 4k / 8k / 16k / 64k: mixed-4d dd
 * iflag=direct bs=128K 0.461 / 0.400 / 0.410 / 0.398 s, buffered 0.297 /
 * 0.277 / 0.274 / 0.282; mixed-8d 0.418 / 0.413 / 0.392 / 0.395 and
 * 0.291 / 0.289 / 0.280 / 0.273; mixed-32d even within 4%. 16k is best
 * or within 3% of it everywhere, and keeps holes of 16 KiB and more on
 * the wire as holes. */
#define EXP_READPLUS_MIN_HOLE_LINUX_ZC 16384
/* Any client where pieces of data under the sendfile size go from a kept
 * mapping (mapped, the default, with zerocopy=auto on a real CPU): holes
 * under 8 KiB as zeros. Measured over loopback on a 2-CPU VM (1 GiB
 * cached, snfs cat, bench/results/stop30): READ_PLUS/READ of mixed-16d
 * 0.82-0.92 with every hole a hole against 0.91-1.2 with its holes as
 * zeros, of mixed-8d 0.84 against 0.89-0.95; of mixed-4d 1.0-1.2 either
 * way, where 4 KiB pieces from a mapping cost the server more per byte
 * than the 4 KiB holes as zeros cost both sides. */
#define EXP_READPLUS_MIN_HOLE_MAPPED 8192

/* With zerocopy, pieces shorter than zerocopy_min are copied into the
 * reply: a sendfile (and the send of the header before it) per piece
 * costs more than the copy it saves. Measured on this host over loopback,
 * per piece alternating with holes (/tmp/hb/mb/sf.c): 8 KiB pieces 1.6x
 * slower than readv and send, 32 KiB and 64 KiB even; under the guest's
 * emulated CPU every copy is dear and sendfile may win at any size (the
 * option is there to measure and choose). */
#define EXP_ZEROCOPY_MIN_DEFAULT (32u << 10)
/* zerocopy=auto (the default) sends by sendfile the pieces from the size
 * where that beats copying them on this machine (rpc_sendfile_from: timed
 * at start), unless zerocopy_min says otherwise. */
#define EXP_ZEROCOPY_MIN_UNSET UINT32_MAX

/* With mapped, a READ or READ_PLUS covering mapped_min bytes or more
 * sends the data it does not send by sendfile from a mapping of the file
 * (rpc/send.c, kept across replies by rpc/mapcache.c): one copy instead
 * of two, one system call for all pieces. Below that a lone small READ
 * gains nothing: measured on a 2-CPU VM (bench/results/stop30), 256 MiB
 * cached in READs of 4 KiB 14% slower mapped than copied, of 16 KiB
 * even. (Until stop 30 a mapping was made per reply and a reply ending
 * in a mapped part then waited in the socket, sent with MSG_MORE: READs
 * of 32 KiB were 7x slower mapped, and the default was 512 KiB.) */
#define EXP_MAPPED_MIN_DEFAULT (64u << 10)
enum export_match_kind { MATCH_ANY, MATCH_ADDR, MATCH_CIDR, MATCH_NAME };

struct export_rule {
	enum export_match_kind kind;
	struct sockaddr_storage addr; /* MATCH_ADDR, MATCH_CIDR */
	int prefix;                   /* MATCH_CIDR */
	char *pattern;                /* MATCH_NAME: hostname, may hold * ? */
	uint32_t flags;
	uint32_t anonuid, anongid;
	uint32_t readplus_min_hole; /* bytes; readplus_min_hole=N */
	uint32_t zerocopy_min;      /* bytes; zerocopy_min=N (readio.h) */
	uint32_t mapped_min;        /* bytes; mapped_min=N (readio.h) */
};

/* COMMIT flushes to stable storage unless the export is async, which
 * (as in exports(5) and knfsd) answers COMMIT without flushing: faster,
 * and a server crash can lose writes the client was told are stable. */
static inline bool export_commit_flushes(const struct export_rule *r)
{
	return !r || (r->flags & EXP_SYNC);
}

struct export
{
	char *path; /* absolute, as clients name it in MNT */
	uint32_t fsid;
	const struct bk_ops *ops;
	struct bk_export *bk;
	struct export_rule *rules;
	size_t nrules;
	/* The path's tag in file handles (fh.c) under the key fh_tag_key,
	 * made when the table is installed (exports_replace): fh_parse then
	 * checks a handle's tag without hashing the path on every call. */
	bool fh_tag_set;
	uint8_t fh_tag_key[16];
	uint32_t fh_tag;
};

struct export_table {
	atomic_int refs;
	struct export *v;
	size_t n;
};

/* Build a table from an exports file and/or -e specs ("DIR[:OPTIONS]",
 * where OPTIONS is "rw,insecure" or "HOST(OPTS) HOST(OPTS)"). Opens every
 * export's backend. On error returns -errno and writes "file:line: reason"
 * into err. */
int exports_load(const char *file, const char *const *specs, int nspecs,
                 struct export_table **out, char *err, size_t errsz);
void exports_free(struct export_table *t);

/* Take and drop a reference to the server's current table. */
struct export_table *exports_acquire(struct snfsd *s);
void exports_release(struct export_table *t);
/* Swap in a new table (SIGHUP); the old one is freed when unused. */
void exports_replace(struct snfsd *s, struct export_table *t);

struct export *exports_by_fsid(const struct export_table *t, uint32_t fsid);
struct export *exports_by_path(const struct export_table *t, const char *path);

/* The rule that admits peer, or NULL. */
const struct export_rule *export_match(const struct export *ex,
                                       const struct sockaddr *peer);
/* Map RPC credentials through the rule's squash options. */
void export_squash(const struct export_rule *r, const struct rpc_cred *in,
                   struct bk_cred *out);

#endif
