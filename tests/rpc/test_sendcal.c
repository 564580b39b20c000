/* rpc/sendcal: from which piece size sendfile pays. The decision for one
 * size from two times (sendfile must win by a margin, a tie keeps copies,
 * a time that could not be taken keeps copies); the answer from the
 * decisions per size (the smallest size from which every size up
 * pays); the real timing over loopback runs and gives an
 * answer; SNFSD_SENDFILE_PAYS=0|1|size overrides it without timing, and
 * other values are ignored (timed instead). Each process answers once,
 * so the environment cases run in children. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "rpc/rpc.h"
#include "util/log.h"

static void test_model(void)
{
	CHECK(rpc_sendfile_pays_model(1000, 500), "sendfile at half: pays");
	CHECK(!rpc_sendfile_pays_model(1000, 1000), "a tie: copies");
	CHECK(!rpc_sendfile_pays_model(1000, 900),
	      "sendfile 10% faster: within the margin, copies");
	CHECK(!rpc_sendfile_pays_model(400, 1200), "sendfile slower: copies");
	CHECK(!rpc_sendfile_pays_model(0, 100) &&
	          !rpc_sendfile_pays_model(100, 0),
	      "a time not taken: copies");
}

static void test_from_model(void)
{
	const uint32_t sz[] = {4096, 8192, 16384, 32768, 65536};
	const bool none[] = {false, false, false, false, false};
	const bool all[] = {true, true, true, true, true};
	const bool big[] = {false, false, false, true, true};
	const bool lone[] = {false, true, false, true, true};
	const bool last[] = {false, false, false, false, true};
	const bool gap[] = {true, false, true, false, false};

	CHECK(rpc_sendfile_from_model(sz, none, 5) == UINT64_MAX,
	      "never pays: none");
	CHECK(rpc_sendfile_from_model(sz, all, 5) == 4096,
	      "pays from a page: a page");
	CHECK(rpc_sendfile_from_model(sz, big, 5) == 32768,
	      "pays from 32 KiB: 32 KiB");
	CHECK(rpc_sendfile_from_model(sz, lone, 5) == 32768,
	      "a lone 8 KiB win between losses is noise: 32 KiB");
	CHECK(rpc_sendfile_from_model(sz, last, 5) == 65536,
	      "only the largest size pays: that size");
	CHECK(rpc_sendfile_from_model(sz, gap, 5) == UINT64_MAX,
	      "the largest size does not pay: none");
	CHECK(rpc_sendfile_from_model(sz, all, 0) == UINT64_MAX,
	      "no sizes: none");
}

/* The child's size under env (NULL: unset): 0 for none, the size in
 * KiB (1 MiB and more: 1024), or -1 on a crash. */
static int child_from(const char *env)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		uint64_t f;

		if (env)
			setenv("SNFSD_SENDFILE_PAYS", env, 1);
		else
			unsetenv("SNFSD_SENDFILE_PAYS");
		f = rpc_sendfile_from();
		_exit(f == UINT64_MAX   ? 0
		      : f >= (1u << 20) ? 255
		                        : (int)(f >> 10));
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* The child's answer under env (NULL: unset): whether sendfile pays
 * for a page (1 or 0), or -1 on a crash. */
static int child_answer(const char *env)
{
	int f = child_from(env);

	return f < 0 ? -1 : f == 4;
}

static void test_env(void)
{
	CHECK(child_answer("1") == 1, "SNFSD_SENDFILE_PAYS=1: pays");
	CHECK(child_answer("0") == 0, "SNFSD_SENDFILE_PAYS=0: copies");
	int a = child_answer("yes");
	CHECK(a == 0 || a == 1, "SNFSD_SENDFILE_PAYS=yes: ignored, timed");
	CHECK(child_from("1") == 4, "SNFSD_SENDFILE_PAYS=1: from a page");
	CHECK(child_from("0") == 0, "SNFSD_SENDFILE_PAYS=0: never");
	CHECK(child_from("32768") == 32,
	      "SNFSD_SENDFILE_PAYS=32768: from 32 KiB");
	CHECK(child_answer("32768") == 0,
	      "from 32 KiB: does not pay for a page");
	a = child_from("-5");
	CHECK(a >= 0, "SNFSD_SENDFILE_PAYS=-5: ignored, timed");
}

/* Timed for real: an answer (either), the same when asked again, and
 * set overrides it. */
static void test_timed(void)
{
	unsetenv("SNFSD_SENDFILE_PAYS");
	int a = child_answer(NULL);
	CHECK(a == 0 || a == 1, "timed over loopback: an answer");
	int f = child_from(NULL);
	CHECK(f >= 0, "timed over loopback: a size or none");
	bool v = rpc_sendfile_pays();
	uint64_t from = rpc_sendfile_from();
	printf("# this machine: sendfile %s for a page, from %llu KiB\n",
	       v ? "pays" : "does not pay",
	       from == UINT64_MAX ? 0ull : (unsigned long long)(from >> 10));
	CHECK(v == (from <= 4096), "pays for a page: from a page");
	CHECK(rpc_sendfile_pays() == v, "asked again: the same answer");
	rpc_sendfile_pays_set(!v);
	CHECK(rpc_sendfile_pays() == !v, "set overrides the timed answer");
	rpc_sendfile_from_set(65536);
	CHECK(rpc_sendfile_from() == 65536 && !rpc_sendfile_pays(),
	      "a size set: from it, not for a page");
	rpc_sendfile_from_set(0);
	CHECK(rpc_sendfile_from() == UINT64_MAX, "0 set: never");
}

int main(void)
{
	log_set_level(LOG_WARN);
	test_model();
	test_from_model();
	test_env();
	test_timed();
	TEST_EXIT();
}
