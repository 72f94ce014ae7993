/*
 * A Paraver trace read back into the writer interface: the .prv header
 * gives the shape, the .pcf the labels, the .row the names; then each
 * record line becomes one mg_rec.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "merge/prvread_int.h"

#define PR_TASKS_MAX   (1u << 20)
#define PR_THREADS_MAX (1u << 20) /* threads of the whole trace */

bool
prvread_is_prv(const char *path)
{
	size_t n = strlen(path);

	return n > 4 && !strcmp(path + n - 4, ".prv");
}

/* ---- Small parsers ------------------------------------------------------ */

bool
pr_num(const char **p, uint64_t *v)
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
		if (!pr_num(p, &v[i]))
			return false;
	}
	return true;
}

bool
pr_eol(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return *p == '\0';
}

char *
pr_keep(pr_ctx *c, const char *s, size_t n)
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
ssize_t
pr_next_line(pr_ctx *c, FILE *f)
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

	if (!pr_num(p, &n) || n > PR_TASKS_MAX)
		return bad_header(c, "bad node count");
	c->nodes = calloc(n + 1, sizeof *c->nodes);
	if (!c->nodes)
		return DW_ENOMEM;
	c->info.nnodes = n;
	if (**p != '(')
		return DW_OK;
	for (uint64_t i = 0; i < n; i++) {
		(*p)++;
		if (!pr_num(p, &cpus) || cpus > PR_THREADS_MAX ||
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

	if (!pr_num(p, &n) || n == 0 || n > PR_TASKS_MAX || **p != '(')
		return bad_header(c, "bad task list");
	c->tasks = calloc(n, sizeof *c->tasks);
	if (!c->tasks)
		return DW_ENOMEM;
	c->info.ntasks = n;
	for (uint64_t i = 0; i < n; i++) {
		(*p)++;
		if (!pr_num(p, &th) || th == 0 || th > 65536 || **p != ':')
			return bad_header(c, "bad thread count");
		(*p)++;
		if (!pr_num(p, &node) || node == 0 || node > c->info.nnodes ||
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

	if (pr_next_line(c, c->f) < 0 || strncmp(c->line, "#Paraver (", 10))
		return bad_header(c, "no #Paraver header");
	p = strstr(c->line, "):");
	if (!p)
		return bad_header(c, "no date");
	p += 2;
	if (!pr_num(&p, &d))
		return bad_header(c, "no duration");
	header_unit(c, &p);
	if (d > UINT64_MAX / c->unit || *p++ != ':')
		return bad_header(c, "bad duration");
	c->info.duration = d * c->unit;
	err = header_nodes(c, &p);
	if (err == DW_OK &&
	    (*p++ != ':' || !pr_num(&p, &appls) || appls == 0 || *p++ != ':'))
		err = bad_header(c, "bad application count");
	if (err == DW_OK)
		err = header_tasks(c, &p);
	if (err == DW_OK)
		err = header_threads(c);
	c->lineno = 1;
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

	if (!fields(&p, v, 7) || !pr_eol(p)) {
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
	if (!pr_eol(p) || n == 0) {
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

	if (!fields(&p, v, 14) || !pr_eol(p)) {
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

	while (err == DW_OK && pr_next_line(c, c->f) >= 0) {
		const char *l = c->line;

		c->lineno++;
		if (l[0] == '1' && l[1] == ':')
			err = rec_state(c, w, l + 1);
		else if (l[0] == '2' && l[1] == ':')
			err = rec_event(c, w, l + 1);
		else if (l[0] == '3' && l[1] == ':')
			err = rec_comm(c, w, l + 1);
		else if (l[0] != '#' && l[0] != 'c' && !pr_eol(l))
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
		err = pr_side_file(c, ".pcf", pr_pcf_read);
	if (err == DW_OK)
		err = pr_side_file(c, ".row", pr_row_read);
	if (err == DW_OK)
		err = pr_default_names(c);
	if (err != DW_OK)
		return err;
	pr_labels_finish(c);
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
