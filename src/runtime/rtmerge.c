/* The merge at the end: the master runs the dwork tool on the trace
 * directory and prints its summary. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/safefile.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/toolpath.h"
#include "runtime/work.h"

static const char *
rtr_tool(void)
{
	static char buf[PATH_MAX];
	return tool_find(buf, sizeof buf);
}

/* Runs the dwork tool with one command on the trace directory. */
static int
rtr_tool_run(const char *cmd, const char *out)
{
	const char *tool = rtr_tool();
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		if (out)
			execlp(tool, tool, cmd, rtr_dir, "-o", out,
			       (char *)NULL);
		else
			execlp(tool, tool, cmd, rtr_dir, (char *)NULL);
		fprintf(stderr, "dwork: cannot run '%s %s': %s\n", tool, cmd,
		        strerror(errno));
		_exit(127);
	}
	int st = -1;
	if (pid > 0)
		waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void
rtr_merge(void)
{
	char out[sizeof rtr_dir + 16];
	snprintf(out, sizeof out, "%s/trace", rtr_dir);
	if (rtr_tool_run("merge", out) == 0) {
		printf("dwork: trace in %s.prv (.pcf, .row); per-process files "
		       "in %s/\n",
		       out, rtr_dir);
		fflush(stdout);
		rtr_tool_run("summary", NULL);
	} else {
		printf("dwork: the trace files are in %s/ (merge them with "
		       "'dwork merge %s')\n",
		       rtr_dir, rtr_dir);
	}
	fflush(stdout);
}

void
rtr_master_finish(void)
{
	if (!rtr_on)
		return;
	rtr_end();
	char path[sizeof rtr_dir + 64];
	snprintf(path, sizeof path, "%s/.dwork-shared-%s", rtr_dir, rtr_token);
	unlink(path);
	if (rtr_merge_on)
		rtr_merge();
}
