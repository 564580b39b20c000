/* The record of NFSv4 clients: a journal of lines "+OWNER" (a client was
 * granted its first state) and "-OWNER" (it is gone), OWNER in hex,
 * replayed at start and then rewritten with the owners left.
 *
 * Why a journal: the record used to be rewritten whole, synced and
 * renamed into place at every confirm and every removal, under the NFSv4
 * state lock: O(clients) of writing per client that mounts or unmounts,
 * so a storm of N mounts wrote O(N^2) and held every other NFSv4 call
 * meanwhile. An append costs the same for one client or ten thousand,
 * and the file is compacted once it holds more than twice the owners
 * left (so the appends stay O(1) amortised).
 *
 * What must be durable (RFC 8881 8.4.3): a client's line before the reply
 * that grants it state, or a restarted server would refuse its reclaims;
 * and the removal of a client whose lease expired, or whose grace ended
 * unused, before anything that conflicts with its old state is granted,
 * or it could reclaim that state after a crash. A client that destroyed
 * itself (DESTROY_CLIENTID) held no state: its removal is written but not
 * synced, so snfsd killed right after still finds it gone (the page cache
 * keeps the write), and only a crash of the machine may bring its line
 * back, costing a grace period that ends unused. That sync was a
 * millisecond of every NFSv4.1 unmount here. A torn last line (the
 * machine crashed in an append not yet synced) is ignored. */
#include "server/nfs4/clientrec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/nfs4/nfs4.h"
#include "server/state.h"
#include "util/log.h"

#define HEX_MAX (2 * NFS4_OPAQUE_LIMIT)
#define COMPACT_SLACK 64 /* lines beyond twice the owners before a rewrite */

struct record_entry {
	struct record_entry *next;
	char hex[];
};

/* ---- the set of owners ---- */

static uint64_t hex_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static struct record_entry **slot_of(const struct nfs4_record *r,
                                     const char *hex)
{
	struct record_entry **pp = &r->bucket[hex_hash(hex) % r->nbucket];

	while (*pp && strcmp((*pp)->hex, hex) != 0)
		pp = &(*pp)->next;
	return pp;
}

static void set_grow(struct nfs4_record *r)
{
	size_t nb = r->nbucket ? r->nbucket * 2 : 64;
	struct record_entry **b = calloc(nb, sizeof(*b));

	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < r->nbucket; i++)
		for (struct record_entry *e = r->bucket[i], *n; e; e = n) {
			n = e->next;
			e->next = b[hex_hash(e->hex) % nb];
			b[hex_hash(e->hex) % nb] = e;
		}
	free(r->bucket);
	r->bucket = b;
	r->nbucket = nb;
}

/* Put hex in the set: 1 if it was not there, 0 if it was, -1 if memory
 * ran out (the line is written all the same: durable beats tidy). */
static int set_put(struct nfs4_record *r, const char *hex)
{
	struct record_entry **pp, *e;
	size_t len = strlen(hex);

	if (r->live >= r->nbucket)
		set_grow(r);
	if (!r->nbucket)
		return -1;
	pp = slot_of(r, hex);
	if (*pp)
		return 0;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -1;
	memcpy(e->hex, hex, len + 1);
	e->next = NULL;
	*pp = e;
	r->live++;
	return 1;
}

/* Take hex out of the set: true if it was there. */
static bool set_drop(struct nfs4_record *r, const char *hex)
{
	struct record_entry **pp, *e;

	if (!r->nbucket)
		return false;
	pp = slot_of(r, hex);
	if (!*pp)
		return false;
	e = *pp;
	*pp = e->next;
	free(e);
	r->live--;
	return true;
}

bool nfs4_record_has(const struct nfs4_record *r, const char *hex)
{
	return r->nbucket && *slot_of(r, hex) != NULL;
}

/* ---- the file ---- */

static bool valid_hex(const char *s, size_t len)
{
	if (len == 0 || len > HEX_MAX || len % 2)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Replay the file into the set. A line that is not "+HEX", "-HEX" or
 * "HEX" (the format before the journal: one owner per line) is skipped
 * with a warning; a last line without its newline was torn by a crash. */
static void replay(struct nfs4_record *r, FILE *f)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	while ((len = getline(&line, &cap, f)) > 0) {
		char *p = line;
		bool add = true;

		if (line[len - 1] != '\n') {
			log_warn("nfs4: %s: torn last line ignored", r->path);
			break;
		}
		line[--len] = 0;
		if (*p == '+' || *p == '-')
			add = *p++ == '+', len--;
		if (!valid_hex(p, (size_t)len)) {
			if (len > 0 || p != line)
				log_warn("nfs4: %s: bad line ignored", r->path);
			continue;
		}
		if (add)
			set_put(r, p);
		else
			set_drop(r, p);
	}
	free(line);
}

/* Write the set to path.tmp, synced, and rename it over the record;
 * then append to it. On failure the old file stays (it replays to the
 * same owners) and appends go on there. */
static int compact(struct nfs4_record *r)
{
	char tmp[4200];
	FILE *f;
	int fd, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", r->path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	for (size_t i = 0; i < r->nbucket; i++)
		for (struct record_entry *e = r->bucket[i]; e; e = e->next)
			fprintf(f, "+%s\n", e->hex);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = -errno;
	if (fclose(f) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, r->path) != 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return rc;
	}
	state_sync_dir(r->dir);
	/* the old fd now writes to a file no longer there: never again */
	fd = open(r->path, O_WRONLY | O_APPEND | O_CLOEXEC);
	rc = fd < 0 ? -errno : 0;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = fd;
	r->lines = r->live;
	return rc;
}

/* Append one line; synced if durable. */
static void append(struct nfs4_record *r, char sign, const char *hex,
                   bool durable)
{
	char buf[HEX_MAX + 3];
	size_t len = strlen(hex);
	ssize_t n;

	if (r->fd < 0)
		return;
	if (r->lines > 2 * r->live + COMPACT_SLACK && compact(r) == 0)
		return; /* the set, just written and synced, has the change */
	if (r->fd < 0) {
		log_warn("nfs4: the client record %s cannot be written",
		         r->path);
		return;
	}
	buf[0] = sign;
	memcpy(buf + 1, hex, len);
	buf[len + 1] = '\n';
	do /* one write: an append is whole or, torn by a crash, the last */
		n = write(r->fd, buf, len + 2);
	while (n < 0 && errno == EINTR);
	r->lines++;
	if (n == (ssize_t)(len + 2) && (!durable || fdatasync(r->fd) == 0))
		return;
	/* A part of a line would glue the next append to it: the whole
	 * set written anew instead (it has the change), if that works. */
	n = compact(r);
	if (n != 0)
		log_warn("nfs4: cannot write the client record %s: %s", r->path,
		         strerror((int)-n));
}

int nfs4_record_open(struct nfs4_record *r, const char *path, char ***names,
                     size_t *n)
{
	const char *slash;
	FILE *f;
	size_t k = 0;
	int rc = 0;

	*r = (struct nfs4_record){.fd = -1};
	*names = NULL;
	*n = 0;
	set_grow(r);
	if (!path)
		return 0;
	slash = strrchr(path, '/');
	r->path = strdup(path);
	r->dir =
	    !slash ? strdup(".")
	           : strndup(path, slash == path ? 1 : (size_t)(slash - path));
	if (!r->path || !r->dir)
		return -ENOMEM;
	f = fopen(path, "r");
	if (f) {
		replay(r, f);
		fclose(f);
	} else if (errno != ENOENT) {
		rc = -errno;
		log_warn("nfs4: cannot read the client record %s: %s", path,
		         strerror(errno));
	}
	if (r->live && (*names = calloc(r->live, sizeof(char *))) != NULL)
		for (size_t i = 0; i < r->nbucket; i++)
			for (struct record_entry *e = r->bucket[i]; e;
			     e = e->next)
				if (((*names)[k] = strdup(e->hex)) != NULL)
					k++;
	*n = k;
	if (rc == 0 && (rc = compact(r)) != 0)
		log_warn("nfs4: cannot write the client record %s: %s", path,
		         strerror(-rc));
	return rc;
}

void nfs4_record_add(struct nfs4_record *r, const char *hex)
{
	if (set_put(r, hex) != 0)
		append(r, '+', hex, true);
}

void nfs4_record_remove(struct nfs4_record *r, const char *hex, bool durable)
{
	if (set_drop(r, hex))
		append(r, '-', hex, durable);
}

void nfs4_record_close(struct nfs4_record *r)
{
	for (size_t i = 0; i < r->nbucket; i++)
		for (struct record_entry *e = r->bucket[i], *n; e; e = n) {
			n = e->next;
			free(e);
		}
	free(r->bucket);
	free(r->path);
	free(r->dir);
	if (r->fd >= 0)
		close(r->fd);
	*r = (struct nfs4_record){.fd = -1};
}
