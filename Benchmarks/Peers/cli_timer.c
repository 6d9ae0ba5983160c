/*
 * cli_timer: the whole wall time of running a command-line tool once (fork, exec, the tool's own work, exit,
 * wait), as a user or a shell script pays it.
 *
 *   cli_timer SYSTEM TEST N COMMAND [ARG...]
 *
 * Runs COMMAND three times untimed, then N times timed, with its standard output and error sent to /dev/null,
 * and prints "TEST p50" and "TEST p99" in us under SYSTEM. A run that does not exit with status 0 ends the
 * measurement with exit status 1 and no figures.
 */
#include "peers.h"

#include <fcntl.h>

#define UNTIMED_RUNS 3

/* One run of argv: its wall time in seconds, or a negative number when it failed. */
static double time_one_run(char **argv, int devnull)
{
	double start = mono_now();
	pid_t pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(devnull, STDOUT_FILENO);
		dup2(devnull, STDERR_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			fail("waitpid: %s", strerror(errno));
	double took = mono_now() - start;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (WIFEXITED(status))
			fprintf(stderr, "cli_timer: %s exited with status %d\n", argv[0], WEXITSTATUS(status));
		else
			fprintf(stderr, "cli_timer: %s ended by signal %d\n", argv[0], WTERMSIG(status));
		return -1;
	}
	return took;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: cli_timer SYSTEM TEST N COMMAND [ARG...]\n");
		return 2;
	}
	const char *system = argv[1], *test = argv[2];
	long n = parse_count(argv[3], "N");
	char **command = argv + 4;
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (devnull < 0)
		fail("open /dev/null: %s", strerror(errno));

	struct samples wall;
	samples_init(&wall, (size_t)n);
	for (long i = -UNTIMED_RUNS; i < n; i++) {
		double took = time_one_run(command, devnull);
		if (took < 0)
			return 1;
		if (i >= 0)
			samples_add(&wall, took);
	}
	samples_report(&wall, system, test);
	samples_free(&wall);
	return 0;
}
