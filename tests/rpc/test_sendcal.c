/* rpc/sendcal: whether sendfile pays for page-sized pieces. The decision
 * from two times (sendfile must win by a margin, a tie keeps copies, a
 * time that could not be taken keeps copies); the real timing over
 * loopback runs and gives an answer; SNFSD_SENDFILE_PAYS=0|1 overrides it
 * without timing, and other values are ignored (timed instead). Each
 * process answers once, so the environment cases run in children. */
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

/* The child's answer under env (NULL: unset): 0, 1, or -1 on a crash. */
static int child_answer(const char *env)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (env)
			setenv("SNFSD_SENDFILE_PAYS", env, 1);
		else
			unsetenv("SNFSD_SENDFILE_PAYS");
		_exit(rpc_sendfile_pays() ? 1 : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void test_env(void)
{
	CHECK(child_answer("1") == 1, "SNFSD_SENDFILE_PAYS=1: pays");
	CHECK(child_answer("0") == 0, "SNFSD_SENDFILE_PAYS=0: copies");
	int a = child_answer("yes");
	CHECK(a == 0 || a == 1, "SNFSD_SENDFILE_PAYS=yes: ignored, timed");
}

/* Timed for real: an answer (either), the same when asked again, and
 * set overrides it. */
static void test_timed(void)
{
	unsetenv("SNFSD_SENDFILE_PAYS");
	int a = child_answer(NULL);
	CHECK(a == 0 || a == 1, "timed over loopback: an answer");
	bool v = rpc_sendfile_pays();
	printf("# this machine: sendfile %s\n", v ? "pays" : "does not pay");
	CHECK(rpc_sendfile_pays() == v, "asked again: the same answer");
	rpc_sendfile_pays_set(!v);
	CHECK(rpc_sendfile_pays() == !v, "set overrides the timed answer");
}

int main(void)
{
	log_set_level(LOG_WARN);
	test_model();
	test_env();
	test_timed();
	TEST_EXIT();
}
