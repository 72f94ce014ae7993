/*
 * A strict checker of Paraver traces (PREFIX.prv, .pcf, .row), for every
 * trace the test suite produces.
 *
 * .prv: the header's grammar
 *   #Paraver (dd/mm/yy at hh:mm):FTIME_ns:NODES(CPUS,...):NAPPL:APPL[:APPL...]
 *   APPL = NTASKS(NTHREADS:NODE,...)
 * with every count matching its list; then record lines of exactly the
 * right field counts, every field an unsigned decimal integer without
 * sign or leading zero; CPUs, applications, tasks and threads within
 * what the header declares; times within FTIME; records sorted by time;
 * per thread, states that neither overlap nor are empty.  Flags ask for
 * more: states that tile each thread's time, no receive before its send,
 * one event line per thread and time.
 * .row: LEVEL blocks whose sizes match the header.  .pcf: the option,
 * state and colour blocks, every state the trace uses labelled, event
 * type blocks well formed.
 */
#ifndef DW_TESTS_PRV_CHECK_H
#define DW_TESTS_PRV_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	PC_TILED = 1,  /* each thread's states cover [0, FTIME) exactly */
	PC_CAUSAL = 2, /* physical receive never before physical send */
	PC_ONE_EVENT_LINE = 4, /* one event line per thread and time */
	PC_ALL = 7,
};

typedef struct pc_result {
	uint64_t ftime;
	uint32_t nnodes, ncpus, nappl, ntasks, nthreads;
	uint64_t states, events, event_pairs, comms;
	uint64_t state_used[64]; /* bitmap of states 0..4095 seen */
} pc_result;

typedef struct pc_ctx {
	char *err;
	size_t errlen;
	const char *file;
	uint64_t line;
	pc_result *r;
	uint32_t *task_threads; /* threads of global task i */
	uint32_t *task_first;   /* global thread index of its thread 1 */
	uint32_t *appl_first;   /* global task index of its task 1 */
	uint32_t *appl_ntasks;
	uint64_t *state_end;  /* per thread: end of its last state */
	uint64_t *event_time; /* per thread: time of its last event + 1 */
	bool failed;
} pc_ctx;

static inline int
pc_fail(pc_ctx *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (c->failed)
		return -1;
	c->failed = true;
	n = snprintf(c->err, c->errlen, "%s:%llu: ", c->file,
	             (unsigned long long)c->line);
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < c->errlen)
		vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* An unsigned decimal at *p up to a character of `ends`. */
static inline bool
pc_uint(const char **p, const char *ends, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int n = 0;

	if (*s < '0' || *s > '9')
		return false;
	if (*s == '0' && s[1] >= '0' && s[1] <= '9')
		return false; /* leading zero */
	for (; *s >= '0' && *s <= '9'; s++, n++) {
		if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	if (!*s || !strchr(ends, *s))
		return false;
	*v = x;
	*p = s;
	return true;
}

static inline bool
pc_lit(const char **p, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp(*p, lit, n))
		return false;
	*p += n;
	return true;
}

static inline bool
pc_2digits(const char **p)
{
	const char *s = *p;

	if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
		return false;
	*p += 2;
	return true;
}

/* "(dd/mm/yy at hh:mm)" (a four-digit year is accepted too). */
static inline bool
pc_date(const char **p)
{
	if (!pc_lit(p, "(") || !pc_2digits(p) || !pc_lit(p, "/") ||
	    !pc_2digits(p) || !pc_lit(p, "/") || !pc_2digits(p))
		return false;
	if ((*p)[0] >= '0' && (*p)[0] <= '9' && !pc_2digits(p))
		return false;
	return pc_lit(p, " at ") && pc_2digits(p) && pc_lit(p, ":") &&
	       pc_2digits(p) && pc_lit(p, ")");
}

static inline int
pc_nodes(pc_ctx *c, const char **p)
{
	uint64_t n, cpus;

	if (!pc_uint(p, "(", &n) || n == 0 || n > 1000000)
		return pc_fail(c, "header: bad number of nodes");
	c->r->nnodes = (uint32_t)n;
	(*p)++;
	for (uint64_t i = 0; i < n; i++) {
		if (!pc_uint(p, i + 1 < n ? "," : ")", &cpus))
			return pc_fail(c, "header: bad CPU count of node %llu",
			               (unsigned long long)i + 1);
		c->r->ncpus += (uint32_t)cpus;
		(*p)++;
	}
	return pc_lit(p, ":") ? 0 : pc_fail(c, "header: ':' expected");
}

static inline bool
pc_grow(uint32_t **v, size_t n)
{
	uint32_t *x = realloc(*v, (n + 1) * sizeof *x);

	if (!x)
		return false;
	*v = x;
	return true;
}

static inline int
pc_appl(pc_ctx *c, const char **p, uint32_t a)
{
	uint64_t nt, th, node;

	if (!pc_uint(p, "(", &nt) || nt == 0 || nt > 10000000)
		return pc_fail(c, "header: bad task count of application %u",
		               a + 1);
	(*p)++;
	c->appl_first[a] = c->r->ntasks;
	c->appl_ntasks[a] = (uint32_t)nt;
	for (uint64_t i = 0; i < nt; i++, c->r->ntasks++) {
		if (!pc_uint(p, ":", &th) || th == 0 || th > 1000000)
			return pc_fail(c, "header: bad thread count");
		(*p)++;
		if (!pc_uint(p, i + 1 < nt ? "," : ")", &node) || node == 0 ||
		    node > c->r->nnodes)
			return pc_fail(c, "header: bad node of task %llu",
			               (unsigned long long)i + 1);
		(*p)++;
		if (!pc_grow(&c->task_threads, c->r->ntasks) ||
		    !pc_grow(&c->task_first, c->r->ntasks))
			return pc_fail(c, "out of memory");
		c->task_threads[c->r->ntasks] = (uint32_t)th;
		c->task_first[c->r->ntasks] = c->r->nthreads;
		c->r->nthreads += (uint32_t)th;
	}
	return 0;
}

static inline int
pc_header(pc_ctx *c, const char *s)
{
	const char *p = s;
	uint64_t n;

	if (!pc_lit(&p, "#Paraver ") || !pc_date(&p) || !pc_lit(&p, ":"))
		return pc_fail(c, "header: '#Paraver (dd/mm/yy at hh:mm):' "
		                  "expected");
	if (!pc_uint(&p, "_", &c->r->ftime) || !pc_lit(&p, "_ns:"))
		return pc_fail(c, "header: end time in ns expected");
	if (pc_nodes(c, &p) || !pc_uint(&p, ":", &n) || n == 0 || n > 1000)
		return pc_fail(c, "header: bad number of applications");
	p++;
	c->r->nappl = (uint32_t)n;
	c->appl_first = calloc(n, sizeof *c->appl_first);
	c->appl_ntasks = calloc(n, sizeof *c->appl_ntasks);
	if (!c->appl_first || !c->appl_ntasks)
		return pc_fail(c, "out of memory");
	for (uint32_t a = 0; a < n; a++) {
		if (pc_appl(c, &p, a))
			return -1;
		if (a + 1 < n && !pc_lit(&p, ":"))
			return pc_fail(c, "header: ':' between applications");
	}
	if (*p == ',' && (p++, !pc_uint(&p, "\n", &n)))
		return pc_fail(c, "header: bad communicator count");
	if (*p != '\n' || p[1])
		return pc_fail(c, "header: junk at the end: '%s'", p);
	return 0;
}

/* The fields of a record line (after its type) as integers. */
static inline int
pc_fields(pc_ctx *c, const char *s, uint64_t *v, int max)
{
	const char *p = s;
	int n = 0;

	for (;;) {
		if (n == max)
			return pc_fail(c, "too many fields");
		if (!pc_uint(&p, ":\n", &v[n++]))
			return pc_fail(c, "field %d is not an unsigned integer",
			               n + 1);
		if (*p == '\n')
			break;
		p++;
	}
	if (p[1])
		return pc_fail(c, "junk after the end of line");
	return n;
}

/* The global thread index of cpu:appl:task:thread at v, or -1. */
static inline int64_t
pc_object(pc_ctx *c, const uint64_t *v)
{
	uint64_t cpu = v[0], appl = v[1], task = v[2], th = v[3], gt;

	if (cpu > c->r->ncpus)
		return pc_fail(c, "CPU %llu not declared",
		               (unsigned long long)cpu);
	if (appl == 0 || appl > c->r->nappl)
		return pc_fail(c, "application %llu not declared",
		               (unsigned long long)appl);
	if (task == 0 || task > c->appl_ntasks[appl - 1])
		return pc_fail(c, "task %llu not declared",
		               (unsigned long long)task);
	gt = c->appl_first[appl - 1] + task - 1;
	if (th == 0 || th > c->task_threads[gt])
		return pc_fail(c, "thread %llu of task %llu not declared",
		               (unsigned long long)th,
		               (unsigned long long)task);
	return (int64_t)(c->task_first[gt] + th - 1);
}

static inline int
pc_state(pc_ctx *c, const uint64_t *v, int n, unsigned flags)
{
	int64_t t;

	if (n != 7)
		return pc_fail(c, "a state record has 8 fields, not %d", n + 1);
	if ((t = pc_object(c, v)) < 0)
		return -1;
	if (v[4] >= v[5])
		return pc_fail(c, "empty or negative state");
	if (v[5] > c->r->ftime)
		return pc_fail(c, "state ends after the end time");
	if (v[4] < c->state_end[t])
		return pc_fail(c, "state overlaps the previous one of its "
		                  "thread");
	if ((flags & PC_TILED) && v[4] != c->state_end[t])
		return pc_fail(c, "gap before this state");
	c->state_end[t] = v[5];
	if (v[6] < 4096)
		c->r->state_used[v[6] / 64] |= 1ull << (v[6] % 64);
	c->r->states++;
	return 0;
}

static inline int
pc_event(pc_ctx *c, const uint64_t *v, int n, unsigned flags)
{
	int64_t t;

	if (n < 7 || (n - 5) % 2)
		return pc_fail(c, "an event record has type:value pairs");
	if ((t = pc_object(c, v)) < 0)
		return -1;
	if (v[4] > c->r->ftime)
		return pc_fail(c, "event after the end time");
	if ((flags & PC_ONE_EVENT_LINE) && c->event_time[t] == v[4] + 1)
		return pc_fail(c, "second event line of a thread at one time");
	c->event_time[t] = v[4] + 1;
	c->r->events++;
	c->r->event_pairs += (uint64_t)(n - 5) / 2;
	return 0;
}

static inline int
pc_comm(pc_ctx *c, const uint64_t *v, int n, unsigned flags)
{
	if (n != 14)
		return pc_fail(c, "a communication has 15 fields, not %d",
		               n + 1);
	if (pc_object(c, v) < 0 || pc_object(c, v + 6) < 0)
		return -1;
	if (v[4] > c->r->ftime || v[5] > c->r->ftime || v[10] > c->r->ftime ||
	    v[11] > c->r->ftime)
		return pc_fail(c, "communication time after the end time");
	if ((flags & PC_CAUSAL) && v[11] < v[5])
		return pc_fail(c, "received (%llu) before it was sent (%llu)",
		               (unsigned long long)v[11],
		               (unsigned long long)v[5]);
	c->r->comms++;
	return 0;
}

static inline int
pc_record(pc_ctx *c, const char *s, unsigned flags, uint64_t *last)
{
	uint64_t v[512];
	int n;

	if ((s[0] != '1' && s[0] != '2' && s[0] != '3') || s[1] != ':')
		return pc_fail(c, "unknown record type");
	n = pc_fields(c, s + 2, v, 512);
	if (n < 0)
		return -1;
	if (n < 5)
		return pc_fail(c, "too few fields");
	if (v[4] < *last)
		return pc_fail(c, "not sorted: time %llu after %llu",
		               (unsigned long long)v[4],
		               (unsigned long long)*last);
	*last = v[4];
	if (s[0] == '1')
		return pc_state(c, v, n, flags);
	if (s[0] == '2')
		return pc_event(c, v, n, flags);
	return pc_comm(c, v, n, flags);
}

static inline int
pc_tiled(pc_ctx *c)
{
	for (uint32_t t = 0; t < c->r->nthreads; t++)
		if (c->state_end[t] && c->state_end[t] != c->r->ftime)
			return pc_fail(c,
			               "thread %u: states end at %llu, not "
			               "at the end time",
			               t + 1,
			               (unsigned long long)c->state_end[t]);
	return 0;
}

static inline int
pc_body(pc_ctx *c, FILE *f, unsigned flags)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint64_t last = 0;
	int rc = 0;

	c->state_end = calloc(c->r->nthreads + 1, sizeof *c->state_end);
	c->event_time = calloc(c->r->nthreads + 1, sizeof *c->event_time);
	if (!c->state_end || !c->event_time)
		return pc_fail(c, "out of memory");
	while (!rc && (len = getline(&line, &cap, f)) > 0) {
		c->line++;
		if (line[len - 1] != '\n')
			rc = pc_fail(c, "last line without a newline");
		else
			rc = pc_record(c, line, flags, &last);
	}
	free(line);
	if (!rc && (flags & PC_TILED))
		rc = pc_tiled(c);
	return rc;
}

static inline int
pc_prv(pc_ctx *c, const char *path, unsigned flags)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int rc;

	c->file = path;
	c->line = 1;
	if (!f)
		return pc_fail(c, "cannot open");
	if (getline(&line, &cap, f) <= 0)
		rc = pc_fail(c, "empty file");
	else
		rc = pc_header(c, line);
	free(line);
	if (!rc)
		rc = pc_body(c, f, flags);
	fclose(f);
	return rc;
}

/* ---- .row and .pcf ------------------------------------------------------- */

static inline uint64_t
pc_row_want(const pc_ctx *c, const char *level, bool *known)
{
	*known = true;
	if (!strcmp(level, "CPU"))
		return c->r->ncpus;
	if (!strcmp(level, "NODE"))
		return c->r->nnodes;
	if (!strcmp(level, "APPL"))
		return c->r->nappl;
	if (!strcmp(level, "TASK"))
		return c->r->ntasks;
	if (!strcmp(level, "THREAD"))
		return c->r->nthreads;
	*known = false;
	return 0;
}

static inline int
pc_row(pc_ctx *c, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[4096], level[32];
	unsigned long long size, left = 0;
	int blocks = 0;
	bool known;

	c->file = path;
	c->line = 0;
	if (!f)
		return pc_fail(c, "cannot open");
	while (!c->failed && fgets(line, sizeof line, f)) {
		c->line++;
		if (left) {
			if (line[0] == '\n')
				pc_fail(c, "empty name in a LEVEL block");
			left--;
		} else if (sscanf(line, "LEVEL %31s SIZE %llu", level, &size) ==
		           2) {
			if (pc_row_want(c, level, &known) != size && known)
				pc_fail(c,
				        "LEVEL %s SIZE %llu does not match "
				        "the trace",
				        level, size);
			left = size;
			blocks++;
		} else if (line[0] != '\n') {
			pc_fail(c, "LEVEL line or empty line expected");
		}
	}
	fclose(f);
	if (!c->failed && (left || blocks < 3))
		pc_fail(c, "LEVEL blocks missing or cut short");
	return c->failed ? -1 : 0;
}

static inline int
pc_pcf_states(pc_ctx *c, FILE *f, bool *labelled, bool colours)
{
	char line[4096];
	unsigned long long s;
	int r, g, b;

	while (fgets(line, sizeof line, f)) {
		c->line++;
		if (line[0] == '\n')
			return 0;
		if (colours
		        ? sscanf(line, "%llu {%d,%d,%d}", &s, &r, &g, &b) != 4
		        : sscanf(line, "%llu %*s", &s) != 1)
			return pc_fail(c, "bad %s line",
			               colours ? "STATES_COLOR" : "STATES");
		if (!colours && s < 4096)
			labelled[s] = true;
	}
	return 0;
}

static inline int
pc_pcf_type(pc_ctx *c, FILE *f)
{
	char line[4096];
	unsigned long long g, t, v;
	bool values = false;

	if (!fgets(line, sizeof line, f) ||
	    sscanf(line, "%llu %llu %*s", &g, &t) != 2)
		return pc_fail(c, "EVENT_TYPE: 'gradient type name' expected");
	c->line++;
	while (fgets(line, sizeof line, f)) {
		c->line++;
		if (line[0] == '\n')
			return 0;
		if (!values && !strcmp(line, "VALUES\n"))
			values = true;
		else if (!values || sscanf(line, "%llu %*s", &v) != 1)
			return pc_fail(c, "bad line in an EVENT_TYPE block");
	}
	return 0;
}

static inline int
pc_pcf(pc_ctx *c, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	bool labelled[4096] = {false}, opts = false, st = false, col = false;

	c->file = path;
	c->line = 0;
	if (!f)
		return pc_fail(c, "cannot open");
	while (!c->failed && fgets(line, sizeof line, f)) {
		c->line++;
		if (!strcmp(line, "DEFAULT_OPTIONS\n"))
			opts = true;
		else if (!strcmp(line, "STATES\n"))
			st = !pc_pcf_states(c, f, labelled, false);
		else if (!strcmp(line, "STATES_COLOR\n"))
			col = !pc_pcf_states(c, f, labelled, true);
		else if (!strcmp(line, "EVENT_TYPE\n"))
			pc_pcf_type(c, f);
	}
	fclose(f);
	if (!c->failed && (!opts || !st || !col))
		return pc_fail(c, "DEFAULT_OPTIONS, STATES or STATES_COLOR "
		                  "missing");
	for (unsigned s = 0; !c->failed && s < 4096; s++)
		if ((c->r->state_used[s / 64] >> (s % 64) & 1) && !labelled[s])
			pc_fail(c, "state %u is used but not labelled", s);
	return c->failed ? -1 : 0;
}

/*
 * Checks PREFIX.prv, .pcf and .row.  Returns 0, or -1 with "FILE:LINE:
 * what" in err.  res (may be NULL) gets what was counted.
 */
static inline int
prv_check(const char *prefix, unsigned flags, pc_result *res, char *err,
          size_t errlen)
{
	pc_result r;
	pc_ctx c = {.err = err, .errlen = errlen, .r = &r};
	char path[1024];
	int rc;

	memset(&r, 0, sizeof r);
	err[0] = '\0';
	snprintf(path, sizeof path, "%s.prv", prefix);
	rc = pc_prv(&c, path, flags);
	if (!rc) {
		snprintf(path, sizeof path, "%s.row", prefix);
		rc = pc_row(&c, path);
	}
	if (!rc) {
		snprintf(path, sizeof path, "%s.pcf", prefix);
		rc = pc_pcf(&c, path);
	}
	free(c.task_threads);
	free(c.task_first);
	free(c.appl_first);
	free(c.appl_ntasks);
	free(c.state_end);
	free(c.event_time);
	if (res)
		*res = r;
	return rc;
}

#endif
