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
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "tools/cmd.h"

#define RUN_MAX_PROCS 4096

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

/* Takes the value of -p/--procs at argv[*i]; returns it or NULL. */
static const char *
run_procs_arg(int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	if (!strncmp(a, "--procs=", 8))
		return a + 8;
	if (!strncmp(a, "-p", 2) && a[2])
		return a + 2;
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

/* Parses the tool's options; returns the index of PROGRAM, or -CMD_USAGE
 * after reporting the problem. */
static int
run_parse(int argc, char **argv, struct run_opts *o)
{
	int i;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--"))
			return i + 1;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			o->help = 1;
		} else if (!strcmp(a, "--trace")) {
			o->trace = 1;
		} else if (!strncmp(a, "--trace=", 8)) {
			if (!a[8])
				return -run_bad("--trace= needs a directory");
			o->trace = 1;
			o->dir = a + 8;
		} else if (!strcmp(a, "--no-merge")) {
			o->no_merge = 1;
		} else if (!strncmp(a, "-p", 2) || !strcmp(a, "--procs") ||
		           !strncmp(a, "--procs=", 8)) {
			if (!(o->procs = run_procs_arg(argc, argv, &i)))
				return -run_bad("%s needs a number of workers",
				                a);
			if (!run_procs_ok(o->procs))
				return -run_bad("bad number of workers '%s': "
				                "expected 0 to %d or 'auto'",
				                o->procs, RUN_MAX_PROCS);
		} else {
			return -run_bad("unknown option '%s'", a);
		}
	}
	return i;
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
	execvp(argv[prog], argv + prog);
	int e = errno;
	fprintf(stderr, "dwork run: cannot run '%s': %s\n", argv[prog],
	        strerror(e));
	return e == ENOENT ? 127 : 126;
}
