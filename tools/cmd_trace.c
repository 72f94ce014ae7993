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

/* "1,3-5" into ranges (allocated); false when it is not such a list. */
static bool
parse_tasks(const char *s, cut_range **out, size_t *n)
{
	cut_range *v = NULL;
	size_t k = 0;

	for (;;) {
		char *end;
		unsigned long lo = strtoul(s, &end, 10), hi = lo;
		cut_range *w;

		if (end == s || lo == 0 || lo > UINT32_MAX)
			break;
		if (*end == '-') {
			s = end + 1;
			hi = strtoul(s, &end, 10);
			if (end == s || hi < lo || hi > UINT32_MAX)
				break;
		}
		if (!(w = realloc(v, (k + 1) * sizeof *v)))
			break;
		v = w;
		v[k++] = (cut_range){(uint32_t)lo, (uint32_t)hi};
		if (!*end) {
			*out = v;
			*n = k;
			return true;
		}
		if (*end != ',')
			break;
		s = end + 1;
	}
	free(v);
	return false;
}

static bool
parse_bytes(const char *s, uint64_t *v)
{
	char *end;
	double d = strtod(s, &end);
	double m = !strcmp(end, "")                         ? 1
	           : !strcmp(end, "k") || !strcmp(end, "K") ? 1e3
	           : !strcmp(end, "M")                      ? 1e6
	           : !strcmp(end, "G")                      ? 1e9
	                                                    : 0;

	if (end == s || !(d > 0) || !m || d * m >= 1.8e19)
		return false;
	*v = (uint64_t)llround(d * m);
	return *v > 0;
}

static bool
is_opt(const char *s, size_t n, const char *opt)
{
	return strlen(opt) == n && !strncmp(s, opt, n);
}

int
cmd_cut_option(const char *cmd, int argc, char **argv, int *i,
               struct cmd_cut *c)
{
	const char *s = argv[*i], *eq = strchr(s, '=');
	size_t n = eq ? (size_t)(eq - s) : strlen(s);
	const char *v;
	bool ok;

	if (!is_opt(s, n, "--from") && !is_opt(s, n, "--to") &&
	    !is_opt(s, n, "--tasks") && !is_opt(s, n, "--max-bytes"))
		return -1;
	v = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
	if (!v) {
		fprintf(stderr, "dwork %s: %.*s needs a value\n", cmd, (int)n,
		        s);
		return CMD_USAGE;
	}
	if (is_opt(s, n, "--from")) {
		ok = cmd_parse_time(v, &c->o.from);
	} else if (is_opt(s, n, "--to")) {
		ok = cmd_parse_time(v, &c->o.to) && c->o.to > 0;
	} else if (is_opt(s, n, "--tasks")) {
		free(c->ranges);
		c->ranges = NULL;
		ok = parse_tasks(v, &c->ranges, &c->o.ntasks);
	} else {
		ok = parse_bytes(v, &c->o.max_bytes);
	}
	c->o.tasks = c->ranges;
	if (!ok) {
		fprintf(stderr, "dwork %s: bad value '%s' for %.*s (%s)\n", cmd,
		        v, (int)n, s,
		        is_opt(s, n, "--tasks")       ? "task numbers: 1,3-5"
		        : is_opt(s, n, "--max-bytes") ? "bytes: 1000000, 500k, "
		                                        "20M, 1G"
		                                      : "a time: 2.5s, 120ms, "
		                                        "40us, 300ns");
		return CMD_USAGE;
	}
	return 0;
}

int
cmd_cut_check(const char *cmd, const struct cmd_cut *c)
{
	if (!c->o.to || c->o.from < c->o.to)
		return -1;
	fprintf(stderr, "dwork %s: the window is empty: --from ", cmd);
	cmd_print_time(stderr, c->o.from);
	fprintf(stderr, " is not before --to ");
	cmd_print_time(stderr, c->o.to);
	fprintf(stderr, "; give --from T1 --to T2 with T1 < T2\n");
	return CMD_USAGE;
}

void
cmd_cut_report(const struct cmd_cut *c, const cut_report *r)
{
	printf("  cut: ");
	cmd_print_time(stdout, r->from);
	printf(" to ");
	cmd_print_time(stdout, r->to);
	if (c->o.tasks) {
		printf(", tasks ");
		for (size_t i = 0; i < c->o.ntasks; i++)
			printf(c->ranges[i].lo == c->ranges[i].hi ? "%s%u"
			                                          : "%s%u-%u",
			       i ? "," : "", c->ranges[i].lo, c->ranges[i].hi);
	}
	printf("; left out: %llu state records (and %llu clipped at the "
	       "window's edges), %llu event records, %llu communications "
	       "cut (an end outside the window or in a task left out), %u "
	       "tasks (%u threads)\n",
	       (unsigned long long)r->states_out,
	       (unsigned long long)r->states_clipped,
	       (unsigned long long)r->events_out,
	       (unsigned long long)r->comms_cut, r->tasks_out, r->threads_out);
	if (r->cap_reached) {
		printf("  --max-bytes %llu: the window ends at ",
		       (unsigned long long)c->o.max_bytes);
		cmd_print_time(stdout, r->cap_to);
		printf(", where the .prv reached the cap (%llu bytes)\n",
		       (unsigned long long)r->prv_bytes);
	}
}
