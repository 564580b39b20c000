/* State directory: the file-handle key and the last write verifier.
 *
 * The key must survive restarts (handles clients hold stay valid) and stay
 * secret (it is what makes handles unforgeable), so it is created 0600 and
 * published with link(2): a crash or a second snfsd starting at the same
 * moment never leaves a half-written or replaced key. */
#include "server/state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/snfsd.h"
#include "util/log.h"

#define KEY_FILE "fh.key"
#define VERF_FILE "write.verf"

static int fill_random(void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t got = getrandom(p, n, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

/* Read exactly n bytes from path. -ENOENT if it does not exist, -EINVAL if
 * it has another size. */
static int read_exact(const char *path, void *buf, size_t n)
{
	uint8_t extra;
	ssize_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int rc = 0;

	if (fd < 0)
		return -errno;
	got = read(fd, buf, n);
	if (got < 0)
		rc = -errno;
	else if ((size_t)got != n || read(fd, &extra, 1) != 0)
		rc = -EINVAL;
	close(fd);
	return rc;
}

/* Write n bytes to a new temporary file in dir with mode 0600, synced.
 * The temporary's path is left in tmp. */
static int write_tmp(const char *dir, const char *name, const void *buf,
                     size_t n, char *tmp, size_t tmpsz)
{
	int fd, rc = 0;

	snprintf(tmp, tmpsz, "%s/.%s.%ld", dir, name, (long)getpid());
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, n) != (ssize_t)n || fsync(fd))
		rc = errno ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

void state_sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

static int ensure_dir(const char *dir, char *err, size_t errsz)
{
	struct stat st;

	if (mkdir(dir, 0700) && errno != EEXIST) {
		int e = errno;
		snprintf(err, errsz, "%s: cannot create: %s", dir, strerror(e));
		return -e;
	}
	if (stat(dir, &st)) {
		int e = errno;
		snprintf(err, errsz, "%s: %s", dir, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errsz, "%s: not a directory", dir);
		return -ENOTDIR;
	}
	return 0;
}

/* Load dir/fh.key, or create it: a fresh key goes to a temporary file and
 * is linked into place, so only a complete key is ever seen; if another
 * process won the race, its key is the one used. */
static int load_key(const char *dir, uint8_t key[16], char *err, size_t errsz)
{
	char path[4096], tmp[4096];
	struct stat st;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, KEY_FILE);
	rc = read_exact(path, key, 16);
	if (rc == 0) {
		if (!stat(path, &st) && (st.st_mode & 077))
			log_warn("%s is readable by others; anyone who can "
			         "read it can forge file handles",
			         path);
		return 0;
	}
	if (rc != -ENOENT) {
		snprintf(err, errsz, "%s: %s", path,
		         rc == -EINVAL ? "not a 16-byte key file"
		                       : strerror(-rc));
		return rc;
	}
	rc = fill_random(key, 16);
	if (!rc)
		rc = write_tmp(dir, KEY_FILE, key, 16, tmp, sizeof(tmp));
	if (rc) {
		snprintf(err, errsz, "%s: cannot create: %s", path,
		         strerror(-rc));
		return rc;
	}
	if (link(tmp, path)) {
		rc = -errno;
		unlink(tmp);
		if (rc == -EEXIST && read_exact(path, key, 16) == 0)
			return 0;
		snprintf(err, errsz, "%s: cannot create: %s", path,
		         strerror(-rc));
		return rc;
	}
	unlink(tmp);
	state_sync_dir(dir);
	log_info("created file handle key %s", path);
	return 0;
}

/* A write verifier tells clients whether unstable writes may have been
 * lost (RFC 1813 section 3.3.7): it must change at every start, so it is
 * random and, to be certain, never the one the last start used. */
static int new_write_verf(const char *dir, uint8_t verf[8], char *err,
                          size_t errsz)
{
	uint8_t prev[8] = {0};
	char path[4096], tmp[4096];
	bool have_prev;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, VERF_FILE);
	have_prev = read_exact(path, prev, 8) == 0;
	do {
		rc = fill_random(verf, 8);
		if (rc) {
			snprintf(err, errsz, "getrandom: %s", strerror(-rc));
			return rc;
		}
	} while (have_prev && !memcmp(prev, verf, 8));
	rc = write_tmp(dir, VERF_FILE, verf, 8, tmp, sizeof(tmp));
	if (!rc && rename(tmp, path)) {
		rc = -errno;
		unlink(tmp);
	}
	if (rc) {
		snprintf(err, errsz, "%s: %s", path, strerror(-rc));
		return rc;
	}
	return 0;
}

int state_open(struct snfsd *s, const char *dir, char *err, size_t errsz)
{
	int rc;

	if (!dir)
		dir = SNFSD_STATE_DIR_DEFAULT;
	rc = ensure_dir(dir, err, errsz);
	if (!rc)
		rc = load_key(dir, s->fh_key, err, errsz);
	if (!rc)
		rc = new_write_verf(dir, s->write_verf, err, errsz);
	return rc;
}
