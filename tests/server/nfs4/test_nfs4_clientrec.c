/* server/nfs4/clientrec: the journal of NFSv4 client owners a restart lets
 * reclaim. What each open finds after adds and removals, synced or not;
 * the format before the journal (one owner per line); torn and bad lines;
 * compaction keeping the file in proportion to the owners left; a record
 * that cannot be written still answering from memory. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../test.h"
#include "server/nfs4/clientrec.h"

static char dir[64], path[96];

static void write_file(const char *text)
{
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
}

static size_t file_lines(void)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;
	int ch;

	if (!f)
		return 0;
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static bool names_have(char **names, size_t n, const char *hex)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], hex))
			return true;
	return false;
}

/* Open the record as a restarted server would; *n owners found. */
static char **reopen(struct nfs4_record *r, size_t *n)
{
	char **names;

	nfs4_record_close(r);
	CHECK(nfs4_record_open(r, path, &names, n) == 0, "record reopens");
	return names;
}

static void adds_and_removals(void)
{
	struct nfs4_record r;
	char **names;
	size_t n;

	unlink(path);
	CHECK(nfs4_record_open(&r, path, &names, &n) == 0 && n == 0 && !names,
	      "a missing record opens empty");
	CHECK(access(path, F_OK) == 0, "and is made");
	nfs4_record_add(&r, "aa01");
	nfs4_record_add(&r, "bb02");
	nfs4_record_add(&r, "cc03");
	nfs4_record_add(&r, "aa01"); /* again: no new line */
	CHECK(file_lines() == 3, "three owners, three lines");
	nfs4_record_remove(&r, "bb02", false);
	nfs4_record_remove(&r, "cc03", true);
	nfs4_record_remove(&r, "dd04", true); /* never there: nothing */
	CHECK(file_lines() == 5, "each removal one line");
	CHECK(nfs4_record_has(&r, "aa01") && !nfs4_record_has(&r, "bb02"),
	      "the set follows");
	names = reopen(&r, &n);
	CHECK(n == 1 && names_have(names, n, "aa01"),
	      "a restart finds only the owner left (unsynced removal too)");
	free_names(names, n);
	CHECK(file_lines() == 1, "and the file is compacted at open");
	nfs4_record_close(&r);
}

static void old_format_and_damage(void)
{
	struct nfs4_record r = {.fd = -1};
	char **names;
	size_t n;

	write_file("0a0b\n0c0d\n\n");
	names = reopen(&r, &n);
	CHECK(n == 2 && names_have(names, n, "0a0b") &&
	          names_have(names, n, "0c0d"),
	      "the format before the journal: one owner per line");
	free_names(names, n);
	write_file("+0a0b\n-0a0b\n+0c0d\nzz!!\n+abc\n+0A0B\n-\n+0e0f");
	names = reopen(&r, &n);
	CHECK(n == 1 && names_have(names, n, "0c0d"),
	      "bad lines and a torn last line are ignored");
	free_names(names, n);
	CHECK(file_lines() == 1, "and dropped from the file");
	nfs4_record_close(&r);
}

static void compaction(void)
{
	struct nfs4_record r;
	char **names, hex[16];
	size_t n, most = 0;

	unlink(path);
	nfs4_record_open(&r, path, &names, &n);
	nfs4_record_add(&r, "feed");
	for (int i = 0; i < 1000; i++) {
		snprintf(hex, sizeof(hex), "%08x", i);
		nfs4_record_add(&r, hex);
		nfs4_record_remove(&r, hex, false);
		if (file_lines() > most)
			most = file_lines();
	}
	CHECK(most <= 2 + 64 + 2,
	      "1000 mounts and unmounts: the file stays small");
	names = reopen(&r, &n);
	CHECK(n == 1 && names_have(names, n, "feed"),
	      "and still holds the owner left");
	free_names(names, n);
	for (int i = 0; i < 5000; i++) {
		snprintf(hex, sizeof(hex), "%08x", i);
		nfs4_record_add(&r, hex);
	}
	names = reopen(&r, &n);
	CHECK(n == 5001, "5001 owners come back");
	free_names(names, n);
	nfs4_record_close(&r);
}

/* A write cut short (the file size limit here, a full disk in life)
 * leaves part of a line, which the next append would glue itself to:
 * the record is written anew instead, and no owner is lost. */
static void short_write(void)
{
	struct nfs4_record r;
	struct rlimit old, lim;
	char **names;
	size_t n;
	struct stat sb;

	unlink(path);
	nfs4_record_open(&r, path, &names, &n);
	nfs4_record_add(&r, "0a0a");
	for (int i = 0; i < 5; i++) {
		nfs4_record_add(&r, "1111");
		nfs4_record_remove(&r, "1111", false);
	}
	stat(path, &sb);
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = (rlim_t)sb.st_size + 3;
	setrlimit(RLIMIT_FSIZE, &lim);
	nfs4_record_add(&r, "abcdef"); /* 3 of its 8 bytes fit */
	setrlimit(RLIMIT_FSIZE, &old);
	nfs4_record_add(&r, "2222");
	names = reopen(&r, &n);
	CHECK(n == 3 && names_have(names, n, "0a0a") &&
	          names_have(names, n, "abcdef") &&
	          names_have(names, n, "2222"),
	      "a short write: the record is rewritten, no owner lost");
	free_names(names, n);
	nfs4_record_close(&r);
}

static void unwritable(void)
{
	struct nfs4_record r;
	char **names, bad[128];
	size_t n;

	snprintf(bad, sizeof(bad), "%s/no/such/dir/nfs4_clients", dir);
	CHECK(nfs4_record_open(&r, bad, &names, &n) != 0 && n == 0,
	      "a record that cannot be written says so");
	nfs4_record_add(&r, "0102");
	CHECK(nfs4_record_has(&r, "0102"), "and still answers from memory");
	nfs4_record_close(&r);
	CHECK(nfs4_record_open(&r, NULL, &names, &n) == 0 && n == 0,
	      "no state directory: no record");
	nfs4_record_add(&r, "0102");
	nfs4_record_remove(&r, "0102", true);
	CHECK(!nfs4_record_has(&r, "0102"), "kept in memory only");
	nfs4_record_close(&r);
}

int main(void)
{
	char cmd[128];

	snprintf(dir, sizeof(dir), "/tmp/snfs-record-%d", (int)getpid());
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/nfs4_clients", dir);
	adds_and_removals();
	old_format_and_damage();
	compaction();
	short_write();
	unwritable();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# cleanup of %s failed\n", dir);
	TEST_EXIT();
}
