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

#include "common/tracename.h"
#include "tools/cmd.h"

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
		any = tn_is_trace(dir, de->d_name);
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

enum {
	OPT_FROM = 1,
	OPT_TO,
	OPT_TASKS,
	OPT_MAX_BYTES,
	OPT_HELP,
	OPT_QUIET,
	OPT_OUTPUT,
	OPT_FORMAT
};

static const cmd_opt out_opts[] = {
    {OPT_FROM, "--from", NULL, CMD_OPT_VALUE},
    {OPT_TO, "--to", NULL, CMD_OPT_VALUE},
    {OPT_TASKS, "--tasks", NULL, CMD_OPT_VALUE},
    {OPT_MAX_BYTES, "--max-bytes", NULL, CMD_OPT_VALUE},
    {OPT_HELP, "--help", "-h", CMD_OPT_FLAG},
    {OPT_QUIET, "--quiet", "-q", CMD_OPT_FLAG},
    {OPT_OUTPUT, "--output", "-o", CMD_OPT_VALUE},
    {OPT_FORMAT, "--format", "-f", CMD_OPT_VALUE},
    {0, NULL, NULL, CMD_OPT_FLAG},
};

/* The value v of cut option id (a->arg as written): 0, or CMD_USAGE
 * after a message naming the bad value. */
static int
cut_value(const char *cmd, const cmd_args *a, int id, struct cmd_cut *c)
{
	const char *v = a->value;
	bool ok;

	if (id == OPT_FROM) {
		ok = cmd_parse_time(v, &c->o.from);
	} else if (id == OPT_TO) {
		ok = cmd_parse_time(v, &c->o.to) && c->o.to > 0;
	} else if (id == OPT_TASKS) {
		free(c->ranges);
		c->ranges = NULL;
		ok = parse_tasks(v, &c->ranges, &c->o.ntasks);
	} else {
		ok = parse_bytes(v, &c->o.max_bytes);
	}
	c->o.tasks = c->ranges;
	if (!ok) {
		fprintf(stderr, "dwork %s: bad value '%s' for %.*s (%s)\n", cmd,
		        v, a->namelen, a->arg,
		        id == OPT_TASKS       ? "task numbers: 1,3-5"
		        : id == OPT_MAX_BYTES ? "bytes: 1000000, 500k, "
		                                "20M, 1G"
		                              : "a time: 2.5s, 120ms, "
		                                "40us, 300ns");
		return CMD_USAGE;
	}
	return 0;
}

static int
out_usage_error(const char *cmd, void (*usage)(FILE *), const char *fmt,
                const char *arg)
{
	fprintf(stderr, "dwork %s: ", cmd);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	usage(stderr);
	return CMD_USAGE;
}

/* A value missing at the end of the arguments. */
static int
out_novalue(const char *cmd, void (*usage)(FILE *), const cmd_args *a)
{
	if (a->opt->id == OPT_OUTPUT)
		return out_usage_error(cmd, usage, "%s needs a PREFIX", a->arg);
	if (a->opt->id == OPT_FORMAT)
		return out_usage_error(cmd, usage, "%s needs a LIST", a->arg);
	fprintf(stderr, "dwork %s: %.*s needs a value\n", cmd, a->namelen,
	        a->arg);
	return CMD_USAGE;
}

int
cmd_out_parse(const char *cmd, const char *what, void (*usage)(FILE *),
              int argc, char **argv, struct cmd_out_args *o)
{
	cmd_args a;
	int id, rc;

	cmd_args_init(&a, argc, argv);
	while ((id = cmd_opt_next(&a, out_opts)) != CMD_OPT_END) {
		if (id == CMD_OPT_NOVALUE)
			return out_novalue(cmd, usage, &a);
		if (id == CMD_OPT_UNKNOWN)
			return out_usage_error(cmd, usage,
			                       "unknown option '%s'", a.arg);
		if (id == CMD_OPT_ARG && o->input)
			return out_usage_error(
			    cmd, usage, "unexpected argument '%s'", a.arg);
		if (id == CMD_OPT_ARG) {
			o->input = a.arg;
		} else if (id == OPT_HELP) {
			usage(stdout);
			return CMD_OK;
		} else if (id == OPT_QUIET) {
			o->quiet = true;
		} else if (id == OPT_OUTPUT && !a.value[0]) {
			return out_usage_error(cmd, usage, "%s needs a PREFIX",
			                       a.arg);
		} else if (id == OPT_OUTPUT) {
			o->prefix = a.value;
		} else if (id == OPT_FORMAT) {
			o->formats = a.value;
		} else if ((rc = cut_value(cmd, &a, id, &o->cut)) != 0) {
			return rc;
		}
	}
	if (!o->input) {
		fprintf(stderr, "dwork %s: no %s given\n", cmd, what);
		usage(stderr);
		return CMD_USAGE;
	}
	return cmd_cut_check(cmd, &o->cut);
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
