/*
 * dwork run [--trace[=DIR]] [--no-merge] [-p N] [--] PROGRAM [ARGS...]
 *
 * Starts PROGRAM as the master of a dwork cluster, like `julia -p N`.
 * Everything is said through the environment (DWORK_PROCS, DWORK_TRACE,
 * DWORK_TRACE_NO_MERGE) so the program's own arguments reach it exactly
 * as given; then the tool replaces itself with the program, whose exit
 * status is therefore the command's.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/tracename.h"
#include "tools/cmd.h"

#define RUN_MAX_PROCS 4096
#define RUN_UNTRACED  3 /* --trace, but the program wrote no trace */

struct run_opts {
	const char *procs; /* NULL: leave DWORK_PROCS as it is */
	int trace;         /* 0: leave DWORK_TRACE as it is */
	const char *dir;   /* --trace=DIR, else the runtime's default */
	int no_merge;
	int help;
};

static void
run_usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: dwork run [--trace[=DIR]] [--no-merge] [-p N] [--] "
	    "PROGRAM [ARGS...]\n\n"
	    "Runs PROGRAM (a program that calls dw_init) as the master with "
	    "N local\nworkers, like 'julia -p N'.  PROGRAM's arguments are "
	    "passed unchanged.\n\n"
	    "  -p, --procs N     start N local workers (0 to %d, or "
	    "'auto': one per core)\n"
	    "  --trace           trace every process into "
	    "./PROGRAM.trace\n"
	    "  --trace=DIR       trace every process into DIR\n"
	    "  --no-merge        leave the per-process trace files "
	    "unmerged\n"
	    "  -h, --help        this text\n\n"
	    "Sets DWORK_PROCS, DWORK_TRACE and DWORK_TRACE_NO_MERGE (and "
	    "DWORK_TOOL,\nso that the merge runs this dwork, if unset), "
	    "then executes PROGRAM\n(searched in PATH when it has no "
	    "'/').\n\n"
	    "exit: PROGRAM's status; 2 usage; 126 PROGRAM cannot be run; "
	    "127 not found\n",
	    RUN_MAX_PROCS);
}

static int __attribute__((format(printf, 1, 2))) run_bad(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "dwork run: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n(see 'dwork run --help')\n");
	va_end(ap);
	return CMD_USAGE;
}

/* "auto" or a decimal count in [0, RUN_MAX_PROCS], as dw_init takes. */
static int
run_procs_ok(const char *s)
{
	if (!strcmp(s, "auto"))
		return 1;
	if (!*s || strlen(s) > 4)
		return 0;
	for (const char *c = s; *c; c++)
		if (!isdigit((unsigned char)*c))
			return 0;
	return atoi(s) <= RUN_MAX_PROCS;
}

/* DWORK_TRACE reads these words as on/off switches, not directories. */
static int
run_is_switch(const char *s)
{
	static const char *const words[] = {"0",  "1",    "on",    "off", "yes",
	                                    "no", "true", "false", NULL};
	for (int i = 0; words[i]; i++)
		if (!strcasecmp(s, words[i]))
			return 1;
	return 0;
}

enum { OPT_HELP = 1, OPT_TRACE, OPT_NO_MERGE, OPT_PROCS };

static const cmd_opt run_opts[] = {
    {OPT_HELP, "--help", "-h", CMD_OPT_FLAG},
    {OPT_TRACE, "--trace", NULL, CMD_OPT_EQ_VALUE},
    {OPT_NO_MERGE, "--no-merge", NULL, CMD_OPT_FLAG},
    {OPT_PROCS, "--procs", "-p", CMD_OPT_VALUE},
    {0, NULL, NULL, CMD_OPT_FLAG},
};

/* Parses the tool's options; returns the index of PROGRAM, or -CMD_USAGE
 * after reporting the problem. */
static int
run_parse(int argc, char **argv, struct run_opts *o)
{
	cmd_args a;
	int id;

	cmd_args_init(&a, argc, argv);
	a.stop = true; /* PROGRAM's own options are its */
	while ((id = cmd_opt_next(&a, run_opts)) != CMD_OPT_END) {
		if (id == CMD_OPT_ARG) {
			return a.i - 1;
		} else if (id == OPT_HELP) {
			o->help = 1;
		} else if (id == OPT_TRACE && a.value && !a.value[0]) {
			return -run_bad("--trace= needs a directory");
		} else if (id == OPT_TRACE) {
			o->trace = 1;
			o->dir = a.value ? a.value : o->dir;
		} else if (id == OPT_NO_MERGE) {
			o->no_merge = 1;
		} else if (id == CMD_OPT_NOVALUE) {
			return -run_bad("%s needs a number of workers", a.arg);
		} else if (id == OPT_PROCS) {
			o->procs = a.value;
			if (!run_procs_ok(o->procs))
				return -run_bad("bad number of workers '%s': "
				                "expected 0 to %d or 'auto'",
				                o->procs, RUN_MAX_PROCS);
		} else {
			return -run_bad("unknown option '%s'", a.arg);
		}
	}
	return argc;
}

static int
run_setenv(const char *name, const char *value)
{
	if (setenv(name, value, 1) == 0)
		return 0;
	fprintf(stderr, "dwork run: cannot set %s: %s\n", name,
	        strerror(errno));
	return -1;
}

/* The merge at the end runs this very tool, unless DWORK_TOOL says
 * otherwise. */
static int
run_set_tool(void)
{
	char self[4096];
	const char *t = getenv("DWORK_TOOL");
	if (t && *t)
		return 0;
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 0;
	self[n] = 0;
	return run_setenv("DWORK_TOOL", self);
}

/* The environment that tells the program's dw_init what to do. */
static int
run_environment(const struct run_opts *o)
{
	char dir[4096];
	if (o->procs && run_setenv("DWORK_PROCS", o->procs))
		return -1;
	if (o->trace) {
		/* a directory named like a switch word is given as ./WORD */
		const char *t = o->dir ? o->dir : "1";
		if (o->dir && run_is_switch(o->dir)) {
			snprintf(dir, sizeof dir, "./%s", o->dir);
			t = dir;
		}
		if (run_setenv("DWORK_TRACE", t))
			return -1;
	}
	if (o->no_merge && run_setenv("DWORK_TRACE_NO_MERGE", "1"))
		return -1;
	return run_set_tool();
}

/* Why execvp could not start prog, and what to do. */
static int
run_exec_failed(const char *prog, int e)
{
	struct stat st;
	size_t n = strlen(prog);

	if (e == ENOENT && !strchr(prog, '/') && stat(prog, &st) == 0) {
		fprintf(stderr,
		        "dwork run: '%s' is not on PATH (a name without '/' "
		        "is searched in PATH, not in the current directory)",
		        prog);
		if (n > 2 && !strcmp(prog + n - 2, ".c"))
			fprintf(stderr,
			        "; %s is C source: build it first (cc %s -o "
			        "%.*s -ldwork) and run ./%.*s\n",
			        prog, prog, (int)(n - 2), prog, (int)(n - 2),
			        prog);
		else
			fprintf(stderr, "; to run the file here, say ./%s\n",
			        prog);
	} else {
		fprintf(stderr, "dwork run: cannot run '%s': %s\n", prog,
		        strerror(e));
	}
	return e == ENOENT ? 127 : 126;
}

/* The directory the traced run writes: --trace=DIR, else what the
 * runtime picks (DWT_DIR, else PROGRAM.trace with PROGRAM from
 * DWT_PROGRAM or the executable's file name). */
static void
run_trace_dir(const struct run_opts *o, const char *exe, char *out, size_t len)
{
	const char *d = getenv("DWT_DIR"), *p = getenv("DWT_PROGRAM");
	char real[PATH_MAX];
	const char *b;

	if (o->dir) {
		snprintf(out, len, "%s", o->dir);
	} else if (d && *d) {
		snprintf(out, len, "%s", d);
	} else {
		if (!(p && *p)) {
			p = realpath(exe, real) ? real : exe;
			b = strrchr(p, '/');
			p = b ? b + 1 : p;
		}
		snprintf(out, len, "%.*s.trace", (int)(len - 7), p);
	}
}

/* Whether the run wrote a trace file into dir since start. */
static int
run_traced(const char *dir, const struct timespec *start)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[PATH_MAX];
	struct stat st;
	int found = 0;

	if (!d)
		return 0;
	while (!found && (de = readdir(d)) != NULL) {
		if (!tn_is_trace(dir, de->d_name))
			continue;
		if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >=
		    (int)sizeof path)
			continue;
		found = stat(path, &st) == 0 &&
		        (st.st_mtim.tv_sec > start->tv_sec ||
		         (st.st_mtim.tv_sec == start->tv_sec &&
		          st.st_mtim.tv_nsec >= start->tv_nsec));
	}
	closedir(d);
	return found;
}

/* The program's path as execvp would find it (for naming its trace). */
static void
run_which(const char *prog, char *out, size_t len)
{
	const char *path = getenv("PATH");

	snprintf(out, len, "%s", prog);
	if (strchr(prog, '/') || !path)
		return;
	while (*path) {
		size_t n = strcspn(path, ":");

		snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", prog);
		if (access(out, X_OK) == 0)
			return;
		path += n + (path[n] == ':');
	}
	snprintf(out, len, "%s", prog);
}

/* Runs the program as a child and waits: with --trace the tool checks
 * afterwards that the program started dwork (wrote its trace), which it
 * cannot do once it has replaced itself. */
static int
run_traced_child(const struct run_opts *o, char **argv)
{
	struct timespec start;
	char exe[PATH_MAX], dir[PATH_MAX];
	int fds[2], status, e = 0;
	pid_t pid;

	clock_gettime(CLOCK_REALTIME_COARSE, &start);
	if (pipe2(fds, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		fprintf(stderr, "dwork run: cannot start '%s': %s\n", argv[0],
		        strerror(errno));
		return 126;
	}
	if (pid == 0) {
		close(fds[0]);
		execvp(argv[0], argv);
		e = errno;
		if (write(fds[1], &e, sizeof e) < 0)
			_exit(127);
		_exit(e == ENOENT ? 127 : 126);
	}
	close(fds[1]);
	signal(SIGINT, SIG_IGN); /* the terminal's ^C reaches the program */
	signal(SIGQUIT, SIG_IGN);
	if (read(fds[0], &e, sizeof e) != (ssize_t)sizeof e)
		e = 0;
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (e)
		return run_exec_failed(argv[0], e);
	if (WIFSIGNALED(status)) {
		signal(WTERMSIG(status), SIG_DFL);
		raise(WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	run_which(argv[0], exe, sizeof exe);
	run_trace_dir(o, exe, dir, sizeof dir);
	if (!run_traced(dir, &start)) {
		fprintf(stderr,
		        "dwork run: '%s' never started dwork: no trace was "
		        "written into %s/ (a program traced by dwork run "
		        "calls dw_init, or dwt_init, at its start)\n",
		        argv[0], dir);
		return WEXITSTATUS(status) ? WEXITSTATUS(status) : RUN_UNTRACED;
	}
	return WEXITSTATUS(status);
}

int
cmd_run(int argc, char **argv)
{
	struct run_opts o = {0};
	int prog = run_parse(argc, argv, &o);
	if (prog < 0)
		return -prog;
	if (o.help) {
		run_usage(stdout);
		return CMD_OK;
	}
	if (prog >= argc)
		return run_bad("no program to run");
	if (run_environment(&o))
		return CMD_FAILED;
	fflush(NULL);
	if (o.trace)
		return run_traced_child(&o, argv + prog);
	execvp(argv[prog], argv + prog);
	return run_exec_failed(argv[prog], errno);
}
