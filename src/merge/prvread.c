/*
 * A Paraver trace read back into the writer interface: the .prv header
 * gives the shape, the .pcf the labels, the .row the names; then each
 * record line becomes one mg_rec.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/safefile.h"
#include "merge/prvread.h"
#include "tracefile/reader_int.h"

#define PR_TASKS_MAX   (1u << 20)
#define PR_THREADS_MAX (1u << 20) /* threads of the whole trace */

typedef struct pr_ctx {
	const char *path;
	rd_errlist *errs;
	FILE *f;
	char *line;
	size_t cap;
	uint64_t lineno;
	uint64_t unit; /* ns per unit of the trace's times */
	uint64_t records;
	bool other_appl; /* reported once */
	mg_info info;
	mg_node *nodes;
	mg_task *tasks;
	mg_thread *threads;
	mg_labels labels;
	char **names; /* every string the info points to, for freeing */
	size_t nnames, capnames;
	mg_pair *pairs;
	size_t cappairs;
} pr_ctx;

bool
prvread_is_prv(const char *path)
{
	size_t n = strlen(path);

	return n > 4 && !strcmp(path + n - 4, ".prv");
}

/* ---- Small parsers ------------------------------------------------------ */

static bool
num(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
	}
	*v = x;
	*p = s;
	return true;
}

/* n numbers separated by ':', each after a ':'. */
static bool
fields(const char **p, uint64_t *v, int n)
{
	for (int i = 0; i < n; i++) {
		if (**p != ':')
			return false;
		(*p)++;
		if (!num(p, &v[i]))
			return false;
	}
	return true;
}

static bool
eol(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return *p == '\0';
}

static char *
keep(pr_ctx *c, const char *s, size_t n)
{
	char *d;

	if (c->nnames == c->capnames) {
		size_t cap = c->capnames ? c->capnames * 2 : 64;
		char **a = realloc(c->names, cap * sizeof *a);

		if (!a)
			return NULL;
		c->names = a;
		c->capnames = cap;
	}
	d = malloc(n + 1);
	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	c->names[c->nnames++] = d;
	return d;
}

/* A line without its end-of-line characters. */
static ssize_t
next_line(pr_ctx *c, FILE *f)
{
	ssize_t n = getline(&c->line, &c->cap, f);

	while (n > 0 && (c->line[n - 1] == '\n' || c->line[n - 1] == '\r'))
		c->line[--n] = '\0';
	return n;
}

/* ---- Header ------------------------------------------------------------- */

static dw_err
bad_header(pr_ctx *c, const char *what)
{
	rd_report_file(c->errs, c->path, "not a Paraver trace: %s", what);
	return DW_EFORMAT;
}

static dw_err
header_unit(pr_ctx *c, const char **p)
{
	static const struct {
		const char *s;
		uint64_t ns;
	} units[] = {{"_ns", 1}, {"_us", 1000}, {"_ms", 1000000}};

	c->unit = 1000; /* Paraver's unit when none is given */
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (!strncmp(*p, units[i].s, 3)) {
			c->unit = units[i].ns;
			*p += 3;
		}
	return DW_OK;
}

static dw_err
header_nodes(pr_ctx *c, const char **p)
{
	uint64_t n, cpus, first = 0;

	if (!num(p, &n) || n > PR_TASKS_MAX)
		return bad_header(c, "bad node count");
	c->nodes = calloc(n + 1, sizeof *c->nodes);
	if (!c->nodes)
		return DW_ENOMEM;
	c->info.nnodes = n;
	if (**p != '(')
		return DW_OK;
	for (uint64_t i = 0; i < n; i++) {
		(*p)++;
		if (!num(p, &cpus) || cpus > PR_THREADS_MAX ||
		    **p != (i + 1 < n ? ',' : ')'))
			return bad_header(c, "bad CPU list");
		c->nodes[i].ncpus = (uint32_t)cpus;
		c->nodes[i].first_cpu = (uint32_t)first;
		first += cpus;
		if (first > PR_THREADS_MAX)
			return bad_header(c, "too many CPUs");
	}
	(*p)++;
	c->info.ncpus = (uint32_t)first;
	return DW_OK;
}

static dw_err
header_tasks(pr_ctx *c, const char **p)
{
	uint64_t n, th, node, total = 0;

	if (!num(p, &n) || n == 0 || n > PR_TASKS_MAX || **p != '(')
		return bad_header(c, "bad task list");
	c->tasks = calloc(n, sizeof *c->tasks);
	if (!c->tasks)
		return DW_ENOMEM;
	c->info.ntasks = n;
	for (uint64_t i = 0; i < n; i++) {
		(*p)++;
		if (!num(p, &th) || th == 0 || th > 65536 || **p != ':')
			return bad_header(c, "bad thread count");
		(*p)++;
		if (!num(p, &node) || node == 0 || node > c->info.nnodes ||
		    **p != (i + 1 < n ? ',' : ')'))
			return bad_header(c, "bad node of a task");
		c->tasks[i].nthreads = (uint32_t)th;
		c->tasks[i].first_thread = (uint32_t)total;
		c->tasks[i].node = (uint32_t)(node - 1);
		c->tasks[i].traced = true;
		total += th;
		if (total > PR_THREADS_MAX)
			return bad_header(c, "too many threads");
	}
	(*p)++;
	c->info.nthreads = total;
	return DW_OK;
}

static dw_err
header_threads(pr_ctx *c)
{
	c->threads = calloc(c->info.nthreads, sizeof *c->threads);
	if (!c->threads)
		return DW_ENOMEM;
	for (uint32_t t = 0; t < c->info.ntasks; t++)
		for (uint32_t i = 0; i < c->tasks[t].nthreads; i++) {
			mg_thread *th =
			    &c->threads[c->tasks[t].first_thread + i];

			th->task = t;
			th->num = i;
			th->cpu = c->tasks[t].first_thread + i;
		}
	return DW_OK;
}

/* "#Paraver
 * (date):DURATION[_ns]:NODES(CPUS,...):APPLS:TASKS(THREADS:NODE,...)..." */
static dw_err
header(pr_ctx *c)
{
	const char *p;
	uint64_t d, appls;
	dw_err err;

	if (next_line(c, c->f) < 0 || strncmp(c->line, "#Paraver (", 10))
		return bad_header(c, "no #Paraver header");
	p = strstr(c->line, "):");
	if (!p)
		return bad_header(c, "no date");
	p += 2;
	if (!num(&p, &d))
		return bad_header(c, "no duration");
	header_unit(c, &p);
	if (d > UINT64_MAX / c->unit || *p++ != ':')
		return bad_header(c, "bad duration");
	c->info.duration = d * c->unit;
	err = header_nodes(c, &p);
	if (err == DW_OK &&
	    (*p++ != ':' || !num(&p, &appls) || appls == 0 || *p++ != ':'))
		err = bad_header(c, "bad application count");
	if (err == DW_OK)
		err = header_tasks(c, &p);
	if (err == DW_OK)
		err = header_threads(c);
	c->lineno = 1;
	return err;
}

/* ---- Labels (.pcf) ------------------------------------------------------- */

static int
state_cmp(const void *a, const void *b)
{
	const mg_state_label *x = a, *y = b;

	return (x->state > y->state) - (x->state < y->state);
}

static int
type_cmp(const void *a, const void *b)
{
	const mg_type_label *x = a, *y = b;

	return (x->type > y->type) - (x->type < y->type);
}

static int
value_cmp(const void *a, const void *b)
{
	const mg_value_label *x = a, *y = b;

	return (x->value > y->value) - (x->value < y->value);
}

static mg_state_label *
pcf_state(pr_ctx *c, uint64_t state)
{
	mg_labels *l = &c->labels;
	mg_state_label *a;

	for (size_t i = 0; i < l->nstates; i++)
		if (l->states[i].state == state)
			return &l->states[i];
	a = realloc(l->states, (l->nstates + 1) * sizeof *a);
	if (!a)
		return NULL;
	l->states = a;
	a = &l->states[l->nstates++];
	a->state = (uint32_t)state;
	a->rgb = 0x808080;
	a->name = NULL;
	return a;
}

/* "NUMBER   rest": the number, and the rest trimmed. */
static bool
pcf_numbered(char *line, uint64_t *v, char **rest)
{
	const char *p = line;
	char *e;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!num(&p, v))
		return false;
	while (*p == ' ' || *p == '\t')
		p++;
	*rest = (char *)p;
	e = *rest + strlen(*rest);
	while (e > *rest && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return true;
}

static dw_err
pcf_state_line(pr_ctx *c, char *line, bool colour)
{
	uint64_t v;
	char *rest;
	unsigned r, g, b;
	mg_state_label *s;

	if (!pcf_numbered(line, &v, &rest) || v > UINT32_MAX)
		return DW_OK;
	s = pcf_state(c, v);
	if (!s)
		return DW_ENOMEM;
	if (colour) {
		if (sscanf(rest, "{%u,%u,%u}", &r, &g, &b) == 3)
			s->rgb =
			    (r & 0xff) << 16 | (g & 0xff) << 8 | (b & 0xff);
	} else {
		s->name = keep(c, rest, strlen(rest));
		if (!s->name)
			return DW_ENOMEM;
	}
	return DW_OK;
}

/* An EVENT_TYPE block: its types (first), then VALUES for all of them. */
typedef struct pr_block {
	size_t first; /* index of its first type in labels.types */
	mg_value_label *values;
	size_t nvalues;
} pr_block;

static dw_err
pcf_type_line(pr_ctx *c, char *line)
{
	uint64_t gradient, type;
	char *rest;
	const char *p;
	mg_type_label *a;

	if (!pcf_numbered(line, &gradient, &rest))
		return DW_OK;
	p = rest;
	if (!num(&p, &type) || type > UINT32_MAX)
		return DW_OK;
	while (*p == ' ' || *p == '\t')
		p++;
	a = realloc(c->labels.types, (c->labels.ntypes + 1) * sizeof *a);
	if (!a)
		return DW_ENOMEM;
	c->labels.types = a;
	a = &c->labels.types[c->labels.ntypes++];
	memset(a, 0, sizeof *a);
	a->type = (uint32_t)type;
	a->name = keep(c, p, strlen(p));
	return a->name ? DW_OK : DW_ENOMEM;
}

static dw_err
pcf_value_line(pr_ctx *c, pr_block *b, char *line)
{
	uint64_t v;
	char *rest;
	mg_value_label *a;

	if (!pcf_numbered(line, &v, &rest))
		return DW_OK;
	a = realloc(b->values, (b->nvalues + 1) * sizeof *a);
	if (!a)
		return DW_ENOMEM;
	b->values = a;
	a[b->nvalues].value = v;
	a[b->nvalues].name = keep(c, rest, strlen(rest));
	if (!a[b->nvalues++].name)
		return DW_ENOMEM;
	return DW_OK;
}

/* Gives the block's values to each of its types, a copy each. */
static dw_err
pcf_block_end(pr_ctx *c, pr_block *b)
{
	dw_err err = DW_OK;

	if (b->nvalues)
		qsort(b->values, b->nvalues, sizeof *b->values, value_cmp);
	for (size_t i = b->first; i < c->labels.ntypes; i++) {
		mg_type_label *t = &c->labels.types[i];

		t->values = malloc((b->nvalues + 1) * sizeof *t->values);
		if (!t->values) {
			err = DW_ENOMEM;
			break;
		}
		if (b->nvalues)
			memcpy(t->values, b->values,
			       b->nvalues * sizeof *t->values);
		t->nvalues = b->nvalues;
	}
	free(b->values);
	memset(b, 0, sizeof *b);
	b->first = c->labels.ntypes;
	return err;
}

enum pcf_section { S_NONE, S_STATES, S_COLORS, S_TYPES, S_VALUES };

static dw_err
pcf_read(pr_ctx *c, FILE *f)
{
	enum pcf_section sec = S_NONE;
	pr_block b = {0};
	dw_err err = DW_OK;

	while (err == DW_OK && next_line(c, f) >= 0) {
		char *l = c->line;

		if (eol(l)) {
			if (sec == S_TYPES || sec == S_VALUES)
				err = pcf_block_end(c, &b);
			sec = S_NONE;
		} else if (!strcmp(l, "STATES")) {
			sec = S_STATES;
		} else if (!strcmp(l, "STATES_COLOR")) {
			sec = S_COLORS;
		} else if (!strcmp(l, "EVENT_TYPE")) {
			if (sec == S_TYPES || sec == S_VALUES)
				err = pcf_block_end(c, &b);
			b.first = c->labels.ntypes;
			sec = S_TYPES;
		} else if (!strcmp(l, "VALUES") && sec == S_TYPES) {
			sec = S_VALUES;
		} else if (sec == S_STATES || sec == S_COLORS) {
			err = pcf_state_line(c, l, sec == S_COLORS);
		} else if (sec == S_TYPES) {
			err = pcf_type_line(c, l);
		} else if (sec == S_VALUES) {
			err = pcf_value_line(c, &b, l);
		}
	}
	if (err == DW_OK && (sec == S_TYPES || sec == S_VALUES))
		err = pcf_block_end(c, &b);
	free(b.values);
	return err;
}

static void
labels_finish(pr_ctx *c)
{
	mg_labels *l = &c->labels;
	size_t k = 0;

	for (size_t i = 0; i < l->nstates; i++)
		if (!l->states[i].name) {
			char buf[32];

			snprintf(buf, sizeof buf, "State %u",
			         l->states[i].state);
			l->states[i].name = keep(c, buf, strlen(buf));
			if (!l->states[i].name)
				l->states[i].name = "";
		}
	if (l->nstates)
		qsort(l->states, l->nstates, sizeof *l->states, state_cmp);
	if (l->ntypes)
		qsort(l->types, l->ntypes, sizeof *l->types, type_cmp);
	/* One label a type: the first block that named it. */
	for (size_t i = 0; i < l->ntypes; i++) {
		if (k == 0 || l->types[k - 1].type != l->types[i].type)
			l->types[k++] = l->types[i];
		else
			free(l->types[i].values);
	}
	l->ntypes = k;
}

/* ---- Names (.row) -------------------------------------------------------- */

static dw_err
row_read(pr_ctx *c, FILE *f)
{
	char level[32];
	uint64_t n = 0, i = 0;
	enum { L_OTHER, L_NODE, L_APPL, L_TASK, L_THREAD } at = L_OTHER;

	while (next_line(c, f) >= 0) {
		unsigned long long size;
		const char **slot = NULL;
		char *name;

		if (sscanf(c->line, "LEVEL %31s SIZE %llu", level, &size) ==
		    2) {
			at = !strcmp(level, "NODE")     ? L_NODE
			     : !strcmp(level, "APPL")   ? L_APPL
			     : !strcmp(level, "TASK")   ? L_TASK
			     : !strcmp(level, "THREAD") ? L_THREAD
			                                : L_OTHER;
			n = size;
			i = 0;
			continue;
		}
		if (eol(c->line) || i >= n)
			continue;
		if (at == L_NODE && i < c->info.nnodes)
			slot = &c->nodes[i].name;
		else if (at == L_APPL && i == 0)
			slot = &c->info.program;
		else if (at == L_TASK && i < c->info.ntasks)
			slot = &c->tasks[i].name;
		else if (at == L_THREAD && i < c->info.nthreads)
			slot = &c->threads[i].name;
		i++;
		if (!slot)
			continue;
		name = keep(c, c->line, strlen(c->line));
		if (!name)
			return DW_ENOMEM;
		*slot = name;
	}
	return DW_OK;
}

static dw_err
default_names(pr_ctx *c)
{
	char buf[64];

	for (size_t i = 0; i < c->info.nnodes; i++)
		if (!c->nodes[i].name) {
			snprintf(buf, sizeof buf, "node %zu", i + 1);
			if (!(c->nodes[i].name = keep(c, buf, strlen(buf))))
				return DW_ENOMEM;
		}
	for (size_t i = 0; i < c->info.ntasks; i++)
		if (!c->tasks[i].name) {
			snprintf(buf, sizeof buf, "task %zu", i);
			if (!(c->tasks[i].name = keep(c, buf, strlen(buf))))
				return DW_ENOMEM;
		}
	for (size_t i = 0; i < c->info.nthreads; i++)
		if (!c->threads[i].name) {
			snprintf(buf, sizeof buf, "task %u thread %u",
			         c->threads[i].task, c->threads[i].num);
			if (!(c->threads[i].name = keep(c, buf, strlen(buf))))
				return DW_ENOMEM;
		}
	if (!c->info.program)
		c->info.program = "";
	return DW_OK;
}

/* Reads PREFIX.EXT beside the .prv, when it is there. */
static dw_err
side_file(pr_ctx *c, const char *ext, dw_err (*read)(pr_ctx *, FILE *))
{
	size_t n = strlen(c->path);
	char *p = malloc(n + 8);
	FILE *f;
	dw_err err;

	if (!p)
		return DW_ENOMEM;
	memcpy(p, c->path, n + 1);
	if (prvread_is_prv(p))
		p[n - 4] = '\0';
	strcat(p, ext);
	/* a sibling is never read through a link (it may be planted) */
	int fd = sf_open_read(p);
	f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	if (!f && errno == ELOOP)
		rd_report_file(c->errs, p,
		               "is a symbolic link: refused (never followed)");
	free(p);
	if (!f)
		return DW_OK;
	err = read(c, f);
	fclose(f);
	return err;
}

/* ---- Records ------------------------------------------------------------- */

static void
bad_line(pr_ctx *c, const char *what)
{
	rd_report_file(c->errs, c->path, "line %llu: %s; skipped",
	               (unsigned long long)c->lineno, what);
}

/* The global thread of "cpu:appl:task:thread" (v[0..3]); false when the
 * header does not declare it (reported). */
static bool
thread_of(pr_ctx *c, const uint64_t *v, uint32_t *out)
{
	if (v[1] != 1) {
		if (!c->other_appl)
			rd_report_file(c->errs, c->path,
			               "line %llu: application %llu: only the "
			               "first application is read",
			               (unsigned long long)c->lineno,
			               (unsigned long long)v[1]);
		c->other_appl = true;
		return false;
	}
	if (v[2] == 0 || v[2] > c->info.ntasks || v[3] == 0 ||
	    v[3] > c->tasks[v[2] - 1].nthreads) {
		bad_line(c, "a task or thread the header does not declare");
		return false;
	}
	*out = c->tasks[v[2] - 1].first_thread + (uint32_t)(v[3] - 1);
	return true;
}

/* Times in the trace's unit to ns, within the duration. */
static bool
times(pr_ctx *c, uint64_t *v, int n)
{
	for (int i = 0; i < n; i++) {
		if (v[i] > c->info.duration / c->unit) {
			bad_line(c, "a time beyond the trace's duration");
			return false;
		}
		v[i] *= c->unit;
	}
	return true;
}

static dw_err
give(pr_ctx *c, mg_writer *w, const mg_rec *r)
{
	c->records++;
	return w->ops->record(w, r);
}

static dw_err
rec_state(pr_ctx *c, mg_writer *w, const char *p)
{
	uint64_t v[7];
	mg_rec r = {.kind = MG_STATE};

	if (!fields(&p, v, 7) || !eol(p)) {
		bad_line(c, "a malformed state record");
		return DW_OK;
	}
	if (!thread_of(c, v, &r.thread) || !times(c, v + 4, 2))
		return DW_OK;
	if (v[5] < v[4] || v[6] > UINT32_MAX) {
		bad_line(c, v[5] < v[4] ? "a state that ends before it begins"
		                        : "a state number over 2^32 - 1");
		return DW_OK;
	}
	if (v[5] == v[4])
		return DW_OK; /* an empty state shows nothing */
	r.time = v[4];
	r.u.state.end = v[5];
	r.u.state.state = (uint32_t)v[6];
	return give(c, w, &r);
}

static dw_err
rec_event(pr_ctx *c, mg_writer *w, const char *p)
{
	uint64_t v[5], tv[2];
	uint32_t n = 0;
	mg_rec r = {.kind = MG_EVENT};

	if (!fields(&p, v, 5)) {
		bad_line(c, "a malformed event record");
		return DW_OK;
	}
	while (*p == ':') {
		if (!fields(&p, tv, 2) || tv[0] > UINT32_MAX) {
			bad_line(c, "a malformed event record");
			return DW_OK;
		}
		if (n == c->cappairs) {
			size_t cap = c->cappairs ? c->cappairs * 2 : 16;
			mg_pair *a = realloc(c->pairs, cap * sizeof *a);

			if (!a)
				return DW_ENOMEM;
			c->pairs = a;
			c->cappairs = cap;
		}
		c->pairs[n].type = (uint32_t)tv[0];
		c->pairs[n++].value = tv[1];
	}
	if (!eol(p) || n == 0) {
		bad_line(c, "a malformed event record");
		return DW_OK;
	}
	if (!thread_of(c, v, &r.thread) || !times(c, v + 4, 1))
		return DW_OK;
	r.time = v[4];
	r.u.event.pairs = c->pairs;
	r.u.event.n = n;
	return give(c, w, &r);
}

static dw_err
rec_comm(pr_ctx *c, mg_writer *w, const char *p)
{
	uint64_t v[14];
	mg_rec r = {.kind = MG_COMM};

	if (!fields(&p, v, 14) || !eol(p)) {
		bad_line(c, "a malformed communication record");
		return DW_OK;
	}
	if (!thread_of(c, v, &r.thread) ||
	    !thread_of(c, v + 6, &r.u.comm.recv_thread) ||
	    !times(c, v + 4, 2) || !times(c, v + 10, 2))
		return DW_OK;
	if (v[13] > UINT32_MAX) {
		bad_line(c, "a tag over 2^32 - 1");
		return DW_OK;
	}
	r.time = v[4];
	r.u.comm.phy_send = v[5];
	r.u.comm.log_recv = v[10];
	r.u.comm.phy_recv = v[11];
	r.u.comm.size = v[12];
	r.u.comm.tag = (uint32_t)v[13];
	return give(c, w, &r);
}

static dw_err
records(pr_ctx *c, mg_writer *w)
{
	dw_err err = DW_OK;

	while (err == DW_OK && next_line(c, c->f) >= 0) {
		const char *l = c->line;

		c->lineno++;
		if (l[0] == '1' && l[1] == ':')
			err = rec_state(c, w, l + 1);
		else if (l[0] == '2' && l[1] == ':')
			err = rec_event(c, w, l + 1);
		else if (l[0] == '3' && l[1] == ':')
			err = rec_comm(c, w, l + 1);
		else if (l[0] != '#' && l[0] != 'c' && !eol(l))
			bad_line(c, "not a record");
	}
	if (err == DW_OK && ferror(c->f)) {
		rd_report_file(c->errs, c->path, "%s", strerror(errno));
		err = DW_EIO;
	}
	return err;
}

/* ---- Run ----------------------------------------------------------------- */

static void
pr_free(pr_ctx *c)
{
	for (size_t i = 0; i < c->labels.ntypes; i++)
		free(c->labels.types[i].values);
	free(c->labels.types);
	free(c->labels.states);
	for (size_t i = 0; i < c->nnames; i++)
		free(c->names[i]);
	free(c->names);
	free(c->nodes);
	free(c->tasks);
	free(c->threads);
	free(c->pairs);
	free(c->line);
	if (c->f)
		fclose(c->f);
}

static dw_err
prepare(pr_ctx *c)
{
	dw_err err = header(c);

	if (err == DW_OK)
		err = side_file(c, ".pcf", pcf_read);
	if (err == DW_OK)
		err = side_file(c, ".row", row_read);
	if (err == DW_OK)
		err = default_names(c);
	if (err != DW_OK)
		return err;
	labels_finish(c);
	c->info.nodes = c->nodes;
	c->info.tasks = c->tasks;
	c->info.threads = c->threads;
	c->info.labels = &c->labels;
	return DW_OK;
}

dw_err
prvread_run(const char *path, mg_writer *w, rd_errlist *errs, uint64_t *nrec)
{
	pr_ctx c = {.path = path, .errs = errs};
	dw_err err;

	c.f = fopen(path, "r");
	if (!c.f) {
		rd_report_file(errs, path, "%s", strerror(errno));
		return errno == ENOENT ? DW_ENOENT : DW_EIO;
	}
	err = prepare(&c);
	if (err == DW_OK)
		err = w->ops->begin(w, &c.info);
	if (err == DW_OK)
		err = records(&c, w);
	if (err == DW_OK)
		err = w->ops->end(w, &c.info);
	if (nrec)
		*nrec = c.records;
	pr_free(&c);
	return err;
}
