/* spawntime CMD [ARG]...: run CMD with its output to /dev/null and print
 * the seconds it took (from just before posix_spawn to its exit).
 *
 * Why not bash's own clock around the command: bash forks itself to run
 * a command, and on a machine where a page fault costs ~9 us that fork
 * alone took 2.5-4.6 ms (a run of /bin/true), about half of what an
 * all-hole READ_PLUS of a GiB takes end to end. posix_spawn starts the
 * command without copying the caller (vfork), so what is timed is the
 * command: its exec, its work, its exit. Exit status: the command's, or
 * 128 + the signal that ended it, or 127 if it could not be started. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	posix_spawn_file_actions_t fa;
	struct timespec t0, t1;
	pid_t pid;
	int status, rc;

	if (argc < 2) {
		fprintf(stderr, "usage: spawntime CMD [ARG]...\n");
		return 2;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = posix_spawnp(&pid, argv[1], &fa, NULL, argv + 1, environ);
	if (rc != 0) {
		fprintf(stderr, "spawntime: %s: %s\n", argv[1], strerror(rc));
		return 127;
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 127;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.6f\n", (double)(t1.tv_sec - t0.tv_sec) +
	                     (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
