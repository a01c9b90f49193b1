/* SPDX-License-Identifier: MIT */
#include "cli/gnuplot.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

extern char **environ;

int gnuplot_check(const char *cmd, const char *path)
{
	const char *dot = strrchr(path, '.');
	if (!dot || (strcmp(dot, ".svg") && strcmp(dot, ".png")))
		return cli_usage_error("%s: --plot %s: the name must end in .svg or .png", cmd, path);
	const char *p = getenv("PATH");
	char buf[4096];
	for (const char *s = p ? p : ""; *s;) {
		size_t n = strcspn(s, ":");
		snprintf(buf, sizeof buf, "%.*s/gnuplot", (int)n, s);
		if (n && access(buf, X_OK) == 0)
			return 0;
		s += n + (s[n] == ':');
	}
	return cli_usage_error("%s: --plot: gnuplot not found: apt-get install gnuplot-nox", cmd);
}

void gnuplot_string(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

int gnuplot_write(const char *cmd, const char *path, gnuplot_script_fn script, void *arg)
{
	char tmp[1100];
	int fds[2], status = 0, rc = 0;
	pid_t pid;
	posix_spawn_file_actions_t fa;
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if (pipe(fds))
		return cli_usage_error("%s: --plot: pipe: %s", cmd, strerror(errno));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
	posix_spawn_file_actions_addclose(&fa, fds[1]);
	char *args[] = { "gnuplot", NULL };
	rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, args, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[0]);
	if (rc) {
		close(fds[1]);
		return cli_usage_error("%s: --plot: gnuplot: %s", cmd, strerror(rc));
	}
	FILE *f = fdopen(fds[1], "w");
	void (*was)(int) = signal(SIGPIPE, SIG_IGN);   /* a gnuplot that stops reading: EPIPE, not death */
	if (f) {
		const char *ext = strrchr(path, '.');
		script(arg, tmp, ext && !strcmp(ext, ".svg"), f);
		fclose(f);
	} else {
		close(fds[1]);
	}
	signal(SIGPIPE, was);
	if (waitpid(pid, &status, 0) < 0 || !f || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
	    rename(tmp, path) != 0) {
		unlink(tmp);
		if (f && WIFEXITED(status))
			return cli_usage_error("%s: --plot %s: gnuplot failed (exit status %d); nothing written",
					       cmd, path, WEXITSTATUS(status));
		return cli_usage_error("%s: --plot %s: gnuplot failed; nothing written", cmd, path);
	}
	return 0;
}
