/* The record of NFSv4 clients on stable storage (RFC 8881 8.4.3; RFC 7530
 * 9.6.3.4): the owners a restarted snfsd lets reclaim during its grace
 * period. See clientrec.c. Not thread-safe: the NFSv4 state lock guards it. */
#ifndef SNFS_SERVER_NFS4_CLIENTREC_H
#define SNFS_SERVER_NFS4_CLIENTREC_H

#include <stdbool.h>
#include <stddef.h>

struct record_entry;

struct nfs4_record {
	int fd;     /* the journal, appended to; -1 when there is none */
	char *path; /* NULL: no state directory, nothing is kept */
	char *dir;  /* path's directory, synced after a rename into it */
	struct record_entry **bucket;
	size_t nbucket;
	size_t live;  /* owners in the set */
	size_t lines; /* lines in the file (compacted when far above live) */
};

/* Open the record at path (NULL: keep none), made if missing: the
 * owners it holds (hex strings, as written) go into the set and, copied,
 * into *names (*n of them; the caller frees both levels), then the file
 * is rewritten with just them. Returns 0 or -errno; on failure the
 * record still works in memory. */
int nfs4_record_open(struct nfs4_record *r, const char *path, char ***names,
                     size_t *n);

bool nfs4_record_has(const struct nfs4_record *r, const char *hex);

/* Add an owner; on stable storage when this returns (a reply that
 * grants the client state may follow). */
void nfs4_record_add(struct nfs4_record *r, const char *hex);

/* Drop an owner. durable: on stable storage when this returns; else only
 * written (a crash of snfsd keeps it, a crash of the machine may not, and
 * the owner then merely gets a grace period it does not use). */
void nfs4_record_remove(struct nfs4_record *r, const char *hex, bool durable);

void nfs4_record_close(struct nfs4_record *r);

#endif
