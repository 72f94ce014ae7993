/*
 * What the trace commands share: the check of TRACE before anything is
 * read (so a wrong path or an empty directory gets one message that says
 * what to give instead), and times with units.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/cmd.h"

static bool
has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);

	return n >= m && !strcmp(s + n - m, suf);
}

/* Whether dir holds a per-process or per-thread trace file. */
static bool
has_trace_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool any = false;

	if (!d)
		return true; /* the reader says why it cannot open it */
	while (!any && (de = readdir(d)) != NULL)
		any = has_suffix(de->d_name, ".dwp") ||
		      has_suffix(de->d_name, ".dwt");
	closedir(d);
	return any;
}

int
cmd_trace_check(const char *cmd, const char *trace)
{
	struct stat st;

	if (stat(trace, &st) < 0) {
		int e = errno;

		fprintf(stderr,
		        "dwork %s: %s: %s\n  give a trace directory (the "
		        "PROGRAM.trace/ that 'dwork run --trace PROGRAM' "
		        "writes)%s\n",
		        cmd, trace, strerror(e),
		        strcmp(cmd, "merge") ? " or a merged FILE.prv" : "");
		return CMD_FAILED;
	}
	if (S_ISDIR(st.st_mode) && !has_trace_files(trace)) {
		fprintf(stderr,
		        "dwork %s: %s: no trace files (*.dwp, *.dwt) in this "
		        "directory, nothing to read\n  trace a run into it "
		        "with 'dwork run --trace=%s PROGRAM', or give the "
		        "directory a traced run wrote\n",
		        cmd, trace, trace);
		return CMD_FAILED;
	}
	return -1;
}

bool
cmd_parse_time(const char *s, uint64_t *ns)
{
	static const struct {
		const char *u;
		double f;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"", 1}};
	char *end;
	double v = strtod(s, &end);

	if (end == s || !(v >= 0) || v > 1.8e19)
		return false;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (!strcmp(end, units[i].u) && v * units[i].f < 1.8e19) {
			*ns = (uint64_t)llround(v * units[i].f);
			return true;
		}
	return false;
}

void
cmd_print_time(FILE *f, uint64_t ns)
{
	if (ns >= 1000000000)
		fprintf(f, "%.9g s", (double)ns / 1e9);
	else if (ns >= 1000000)
		fprintf(f, "%.6g ms", (double)ns / 1e6);
	else if (ns >= 1000)
		fprintf(f, "%.3g us", (double)ns / 1e3);
	else
		fprintf(f, "%llu ns", (unsigned long long)ns);
}
