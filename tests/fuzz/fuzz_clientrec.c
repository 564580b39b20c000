/* libFuzzer target for the NFSv4 client record (src/server/nfs4/
 * clientrec.c): the input is the record file as a crash may leave it, and
 * after it a few adds and removals to journal on top.
 *
 * Input: up to the first 0xff byte (or all of it), the file's bytes;
 * after it, operations of 2 bytes each: bit 0 of the first, add or
 * remove (bit 1: synced), the second, which of 8 owners (short hex).
 *
 * Invariants: the owners the record finds are exactly those a reference
 * replay of the lines finds (a "+HEX", "-HEX" or bare "HEX" line with
 * lowercase hex of even length, the last line counting only if it ends);
 * after the operations and a reopen, exactly the model's set. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/nfs4/clientrec.h"
#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MODEL_MAX 4096

struct model {
	char *hex[MODEL_MAX];
	size_t n;
};

static char path[64];

static void model_clear(struct model *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->hex[i]);
	m->n = 0;
}

static size_t model_find(const struct model *m, const char *s, size_t len)
{
	for (size_t i = 0; i < m->n; i++)
		if (strlen(m->hex[i]) == len && !memcmp(m->hex[i], s, len))
			return i;
	return m->n;
}

static void model_apply(struct model *m, const char *s, size_t len, bool add)
{
	size_t i = model_find(m, s, len);

	if (add && i == m->n && m->n < MODEL_MAX) {
		m->hex[m->n] = strndup(s, len);
		m->n += m->hex[m->n] != NULL;
	} else if (!add && i < m->n) {
		free(m->hex[i]);
		m->hex[i] = m->hex[--m->n];
	}
}

static bool lower_hex(const char *s, size_t len)
{
	if (len == 0 || len % 2 || len > 2048)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* The reference replay: complete lines only. */
static void model_replay(struct model *m, const uint8_t *p, size_t n)
{
	size_t start = 0;

	for (size_t i = 0; i < n; i++) {
		const char *s = (const char *)p + start;
		size_t len = i - start;
		bool add = true;

		if (p[i] != '\n')
			continue;
		start = i + 1;
		if (len && (*s == '+' || *s == '-'))
			add = *s == '+', s++, len--;
		if (memchr(s, 0, len) == NULL && lower_hex(s, len))
			model_apply(m, s, len, add);
	}
}

static bool same_set(const struct model *m, char **names, size_t n)
{
	if (n != m->n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (model_find(m, names[i], strlen(names[i])) == m->n)
			return false;
	return true;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *owners[8] = {"00",   "0a0b", "ff",     "abcdef",
	                                "1234", "5678", "9a9a9a", "00ff00ff"};
	static struct model m;
	struct nfs4_record r;
	const uint8_t *end = memchr(data, 0xff, size);
	size_t flen = end ? (size_t)(end - data) : size;
	char **names;
	size_t n;
	FILE *f;

	if (!path[0]) {
		/* tmpfs where there is one: the record syncs what it writes */
		snprintf(path, sizeof(path), "%s/snfs-fuzz-rec-%d",
		         access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
		         (int)getpid());
		mkdir(path, 0700);
		strcat(path, "/nfs4_clients");
		log_set_level(LOG_ERR);
	}
	f = fopen(path, "w");
	if (!f)
		abort();
	fwrite(data, 1, flen, f);
	fclose(f);
	model_clear(&m);
	model_replay(&m, data, flen);
	nfs4_record_open(&r, path, &names, &n);
	if (!same_set(&m, names, n))
		abort();
	free_names(names, n);
	for (size_t i = flen + 1; i + 1 < size; i += 2) {
		const char *o = owners[data[i + 1] % 8];
		bool add = data[i] & 1;

		if (add)
			nfs4_record_add(&r, o);
		else
			nfs4_record_remove(&r, o, data[i] & 2);
		model_apply(&m, o, strlen(o), add);
		if (nfs4_record_has(&r, o) != add)
			abort();
	}
	nfs4_record_close(&r);
	nfs4_record_open(&r, path, &names, &n);
	if (!same_set(&m, names, n))
		abort();
	free_names(names, n);
	nfs4_record_close(&r);
	return 0;
}
