/* The state directory: what snfsd keeps across restarts. */
#ifndef SNFS_STATE_H
#define SNFS_STATE_H

#include <stddef.h>

struct snfsd;

#define SNFSD_STATE_DIR_DEFAULT "/var/lib/snfsd"

/* Create dir (0700) if missing, load the file-handle key from dir/fh.key
 * or create it (0600, written atomically), and pick a write verifier that
 * differs from the previous start's (kept in dir/write.verf). Fills
 * s->fh_key and s->write_verf. Returns 0 or -errno with a reason in err. */
int state_open(struct snfsd *s, const char *dir, char *err, size_t errsz);

/* fsync the directory dir (best effort): what was created or renamed in
 * it stays after a crash. */
void state_sync_dir(const char *dir);

#endif
