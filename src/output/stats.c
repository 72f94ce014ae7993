/*
 * The statistics writer: counts per thread while the records go by,
 * then useful time per task and the POP metrics at the end.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/pop.h"
#include "merge/merge.h"
#include "merge/prvread.h"
#include "output/labels.h"
#include "output/stats.h"
#include "tracefile/events.h"

/* ---- Roles and metrics --------------------------------------------------- */

enum st_role
st_thread_role(const char *label, uint32_t task)
{
	if (label && !strncmp(label, "executor", 8))
		return ST_EXECUTOR;
	if (label && (!strcmp(label, "dwork I/O") || !strcmp(label, "I/O") ||
	              !strcmp(label, "worker main") || !strcmp(label, "main")))
		return ST_NOT_COUNTED;
	return task == 0 ? ST_USER : ST_NOT_COUNTED;
}

/* A dwork process's thread, "master I/O", "worker 3 executor 1": the
 * label after the process's name ("master" alone is its own label). */
static const char *
st_dwork_label(const char *name, size_t *len)
{
	const char *p = NULL, *pid;

	if (!strncmp(name, "master", 6))
		p = name + 6;
	else if (!strncmp(name, "worker ", 7) && name[7] >= '0' &&
	         name[7] <= '9')
		for (p = name + 7; *p >= '0' && *p <= '9'; p++)
			;
	if (!p || (*p && *p != ' ') || (!*p && p != name + 6))
		return NULL;
	if (!*p) {
		*len = 6;
		return name;
	}
	pid = strstr(++p, " pid ");
	*len = pid ? (size_t)(pid - p) : strlen(p);
	return *len ? p : NULL;
}

const char *
st_name_label(const char *name, size_t *len)
{
	const char *p = strstr(name ? name : "", " thread ");
	size_t n;

	if (name && st_dwork_label(name, len))
		return st_dwork_label(name, len);

	if (!p)
		return NULL;
	for (p += 8; *p >= '0' && *p <= '9'; p++)
		;
	if (!strncmp(p, " pid ", 5))
		for (p += 5; *p >= '0' && *p <= '9'; p++)
			;
	n = strlen(p);
	if (n < 4 || strncmp(p, " (", 2) || p[n - 1] != ')')
		return NULL;
	*len = n - 3;
	return p + 2;
}

void
st_pop_compute(const double *useful, size_t n, double elapsed, st_pop *out)
{
	struct pop_basic p = pop_basic(useful, n, elapsed);

	memset(out, 0, sizeof *out);
	out->mean = p.mean;
	out->max = p.max;
	out->elapsed = elapsed;
	out->valid = p.valid;
	out->lb = p.lb;
	out->comm = p.comm;
	out->pe = p.pe;
}

void
st_pop_ideal(st_pop *out, double ideal)
{
	out->ideal = ideal;
	out->ideal_valid = out->valid && ideal > 0;
	if (!out->ideal_valid)
		return;
	out->ser = out->max / ideal;
	out->trf = out->comm / out->ser;
}

/* ---- Sorted tables ----------------------------------------------------------
 */

static void *table_insert(void **arr, size_t *n, size_t size, size_t ksize,
                          uint64_t key, size_t at);

/* Where key is, or would go, in a table sorted by a leading key of ksize
 * bytes (4 or 8); *found says which. */
static inline __attribute__((always_inline)) size_t
table_pos(const unsigned char *a, size_t n, size_t size, size_t ksize,
          uint64_t key, bool *found)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k = 0;
		uint32_t k32;

		if (ksize == 4)
			memcpy(&k32, a + mid * size, 4), k = k32;
		else
			memcpy(&k, a + mid * size, 8);
		if (k == key)
			return *found = true, mid;
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return *found = false, lo;
}

/* The entry of key in a sorted table, inserted zeroed when missing; NULL
 * when out of memory.  Inlined, so that ksize is a constant: a lookup for
 * every record. */
static inline __attribute__((always_inline)) void *
table_get(void **arr, size_t *n, size_t size, size_t ksize, uint64_t key)
{
	bool found;
	size_t at = table_pos(*arr, *n, size, ksize, key, &found);

	if (found)
		return (unsigned char *)*arr + at * size;
	return table_insert(arr, n, size, ksize, key, at);
}

/* table_get's key, missing: inserted zeroed at its place. */
static void *
table_insert(void **arr, size_t *n, size_t size, size_t ksize, uint64_t key,
             size_t at)
{
	unsigned char *a = realloc(*arr, (*n + 1) * size);

	if (!a)
		return NULL;
	*arr = a;
	memmove(a + (at + 1) * size, a + at * size, (*n - at) * size);
	memset(a + at * size, 0, size);
	if (ksize == 4) {
		uint32_t k32 = (uint32_t)key;

		memcpy(a + at * size, &k32, 4);
	} else {
		memcpy(a + at * size, &key, 8);
	}
	(*n)++;
	return a + at * size;
}

/* ---- Records
 * ------------------------------------------------------------------ */

static dw_err
fail(st_stats *s)
{
	snprintf(s->base.err, sizeof s->base.err, "statistics: out of memory");
	return DW_ENOMEM;
}

static dw_err
call_end(st_stats *s, st_thread *t, uint64_t now)
{
	st_call *c = table_get((void **)&t->calls, &t->ncalls, sizeof *c, 8,
	                       t->run_func);
	uint64_t d = now > t->run_since ? now - t->run_since : 0;

	if (!c ||
	    (s->replay && rp_func(s->replay, (uint32_t)(t - s->threads),
	                          t->run_since, now, t->run_func) != DW_OK))
		return fail(s);
	c->calls++;
	c->total_ns += d;
	c->max_ns = d > c->max_ns ? d : c->max_ns;
	t->running = false;
	return DW_OK;
}

static dw_err
on_function(st_stats *s, st_thread *t, uint64_t now, uint64_t func)
{
	dw_err err = DW_OK;

	if (t->running)
		err = call_end(s, t, now);
	if (err == DW_OK && func) {
		t->running = true;
		t->run_func = func;
		t->run_since = now;
	}
	return err;
}

static dw_err
on_state(st_stats *s, st_thread *t, const mg_rec *r)
{
	st_state *e = table_get((void **)&t->states, &t->nstates, sizeof *e, 4,
	                        r->u.state.state);
	uint64_t d = r->u.state.end - r->time;

	if (!e)
		return fail(s);
	e->ns += d;
	e->bursts++;
	e->max_ns = d > e->max_ns ? d : e->max_ns;
	if (r->u.state.state != TF_STATE_NOT_CREATED) {
		t->active = true;
		t->last = r->u.state.end > t->last ? r->u.state.end : t->last;
	}
	if (s->replay && rp_state(s->replay, r->thread, r->time, r->u.state.end,
	                          r->u.state.state) != DW_OK)
		return fail(s);
	return DW_OK;
}

static dw_err
on_event(st_stats *s, st_thread *t, const mg_rec *r)
{
	t->active = true;
	t->last = r->time > t->last ? r->time : t->last;
	for (uint32_t i = 0; i < r->u.event.n; i++) {
		const mg_pair *p = &r->u.event.pairs[i];
		st_event *e = table_get((void **)&t->events, &t->nevents,
		                        sizeof *e, 4, p->type);

		if (!e)
			return fail(s);
		e->count++;
		if (p->type == TF_EV_FUNCTION &&
		    on_function(s, t, r->time, p->value) != DW_OK)
			return DW_ENOMEM;
		t->ins +=
		    p->type == 42000050u ? p->value : 0; /* PAPI_TOT_INS */
		t->cyc +=
		    p->type == 42000059u ? p->value : 0; /* PAPI_TOT_CYC */
	}
	return DW_OK;
}

static dw_err
on_comm(st_stats *s, const mg_rec *r)
{
	st_thread *from = &s->threads[r->thread];
	st_thread *to = &s->threads[r->u.comm.recv_thread];

	from->sent++;
	from->sent_bytes += r->u.comm.size;
	from->active = true;
	to->recv++;
	to->recv_bytes += r->u.comm.size;
	to->active = true;
	if (s->replay &&
	    rp_msg(s->replay, r->thread, r->u.comm.recv_thread, r->time,
	           r->u.comm.log_recv, r->u.comm.tag) != DW_OK)
		return fail(s);
	return DW_OK;
}

static dw_err
st_record(mg_writer *w, const mg_rec *r)
{
	st_stats *s = (st_stats *)w;

	if (r->thread >= s->nthreads ||
	    (r->kind == MG_COMM && r->u.comm.recv_thread >= s->nthreads)) {
		snprintf(s->base.err, sizeof s->base.err,
		         "statistics: a record of thread %u, beyond the %zu "
		         "threads declared",
		         r->thread, s->nthreads);
		return DW_EINVAL;
	}
	switch (r->kind) {
	case MG_STATE:
		return on_state(s, &s->threads[r->thread], r);
	case MG_EVENT:
		return on_event(s, &s->threads[r->thread], r);
	case MG_COMM:
		return on_comm(s, r);
	}
	return DW_OK;
}

/* ---- Begin and end --------------------------------------------------------
 */

static char *
dup_or_null(const char *p, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, p, n);
		d[n] = '\0';
	}
	return d;
}

static dw_err
st_begin(mg_writer *w, const mg_info *info)
{
	st_stats *s = (st_stats *)w;

	s->duration = info->duration;
	s->tasks = calloc(info->ntasks ? info->ntasks : 1, sizeof *s->tasks);
	s->threads =
	    calloc(info->nthreads ? info->nthreads : 1, sizeof *s->threads);
	if (!s->tasks || !s->threads ||
	    (!s->figures_only && rp_new(info->nthreads, &s->replay) != DW_OK))
		return fail(s);
	s->ntasks = info->ntasks;
	s->nthreads = info->nthreads;
	for (size_t i = 0; i < info->ntasks; i++) {
		s->tasks[i].first_thread = info->tasks[i].first_thread;
		s->tasks[i].nthreads = info->tasks[i].nthreads;
	}
	for (size_t i = 0; i < info->nthreads; i++) {
		const mg_thread *th = &info->threads[i];
		st_thread *t = &s->threads[i];
		const char *name = th->name ? th->name : "";
		size_t n;
		const char *label = st_name_label(name, &n);

		t->task = th->task;
		t->num = th->num;
		rp_thread_task(s->replay, (uint32_t)i, th->task);
		t->name = dup_or_null(name, strlen(name));
		t->label = label ? dup_or_null(label, n) : NULL;
		if (!t->name || (label && !t->label))
			return fail(s);
	}
	return DW_OK;
}

static dw_err
copy_labels(mg_labels *d, const mg_labels *l)
{
	if (!l)
		return DW_OK;
	d->states = calloc(l->nstates + 1, sizeof *d->states);
	d->types = calloc(l->ntypes + 1, sizeof *d->types);
	if (!d->states || !d->types)
		return DW_ENOMEM;
	for (; d->nstates < l->nstates; d->nstates++) {
		d->states[d->nstates] = l->states[d->nstates];
		d->states[d->nstates].name = strdup(l->states[d->nstates].name);
		if (!d->states[d->nstates].name)
			return DW_ENOMEM;
	}
	for (; d->ntypes < l->ntypes; d->ntypes++) {
		const mg_type_label *f = &l->types[d->ntypes];
		mg_type_label *t = &d->types[d->ntypes];

		t->type = f->type;
		t->name = strdup(f->name);
		t->values = calloc(f->nvalues + 1, sizeof *t->values);
		if (!t->name || !t->values) {
			d->ntypes++;
			return DW_ENOMEM;
		}
		for (; t->nvalues < f->nvalues; t->nvalues++) {
			t->values[t->nvalues].value =
			    f->values[t->nvalues].value;
			t->values[t->nvalues].name =
			    strdup(f->values[t->nvalues].name);
			if (!t->values[t->nvalues].name) {
				d->ntypes++;
				return DW_ENOMEM;
			}
		}
	}
	return DW_OK;
}

/* A trace of the dwork runtime names its threads; any other trace (a
 * plain tracer or Extrae program) counts Running on every thread. */
static void
roles(st_stats *s)
{
	bool runtime = false;

	for (size_t i = 0; i < s->nthreads; i++) {
		const char *l = s->threads[i].label;

		runtime |= l && (!strncmp(l, "executor", 8) ||
		                 !strcmp(l, "dwork I/O") || !strcmp(l, "I/O") ||
		                 !strcmp(l, "worker main"));
	}
	for (size_t i = 0; i < s->nthreads; i++) {
		st_thread *t = &s->threads[i];

		t->role = runtime ? st_thread_role(t->label, t->task) : ST_USER;
	}
	s->runtime = runtime;
}

static dw_err
func_totals(st_stats *s)
{
	for (size_t i = 0; i < s->nthreads; i++) {
		const st_thread *t = &s->threads[i];

		for (size_t k = 0; k < t->ncalls; k++) {
			const st_call *c = &t->calls[k];
			st_call *a = table_get((void **)&s->funcs, &s->nfuncs,
			                       sizeof *a, 8, c->func);

			if (!a)
				return fail(s);
			a->calls += c->calls;
			a->total_ns += c->total_ns;
			a->max_ns =
			    c->max_ns > a->max_ns ? c->max_ns : a->max_ns;
		}
	}
	return DW_OK;
}

static uint64_t
state_ns(const st_thread *t, uint32_t state)
{
	for (size_t i = 0; i < t->nstates; i++)
		if (t->states[i].state == state)
			return t->states[i].ns;
	return 0;
}

/* What a thread adds to its task's figures (the one rule: st_role). */
static void
task_add(st_task *k, const st_thread *t)
{
	k->active |= t->active;
	if (t->role == ST_NOT_COUNTED)
		return;
	k->useful += state_ns(t, TF_STATE_RUNNING);
	if (t->role == ST_EXECUTOR)
		k->idle += state_ns(t, TF_STATE_IDLE);
	for (size_t i = 0; i < t->ncalls; i++)
		k->calls += t->calls[i].calls;
}

/* The critical path of the replay, kept after the replay is freed. */
static dw_err
path_copy(st_stats *s)
{
	rp_path p;

	if (rp_critical_path(s->replay, &p) != DW_OK)
		return DW_ENOMEM;
	s->path_other = p.other_ns;
	s->path_length = p.length_ns;
	s->path_messages = p.messages;
	if (!p.nfns)
		return DW_OK;
	s->path = malloc(p.nfns * sizeof *s->path);
	if (!s->path)
		return DW_ENOMEM;
	memcpy(s->path, p.fns, p.nfns * sizeof *s->path);
	s->npath = p.nfns;
	return DW_OK;
}

static dw_err
st_end(mg_writer *w, const mg_info *info)
{
	st_stats *s = (st_stats *)w;
	double *useful = calloc(s->ntasks + 1, sizeof *useful);
	size_t n = 0;

	if (!useful || copy_labels(&s->labels, info->labels) != DW_OK) {
		free(useful);
		return fail(s);
	}
	roles(s);
	for (size_t i = 0; i < s->nthreads; i++) {
		st_thread *t = &s->threads[i];

		if (t->running && call_end(s, t, t->last) != DW_OK) {
			free(useful);
			return DW_ENOMEM;
		}
		if (t->task < s->ntasks)
			task_add(&s->tasks[t->task], t);
	}
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i].active)
			useful[n++] = (double)s->tasks[i].useful;
	st_pop_compute(useful, n, (double)s->duration, &s->pop);
	free(useful);
	if (s->replay && (rp_run(s->replay, &s->ideal) != DW_OK ||
	                  path_copy(s) != DW_OK || st_pop_tree(s) != DW_OK))
		return fail(s);
	if (s->replay)
		st_pop_ideal(&s->pop, (double)s->ideal);
	rp_free(s->replay);
	s->replay = NULL;
	if (func_totals(s) != DW_OK)
		return DW_ENOMEM;
	s->ended = true;
	return DW_OK;
}

/* ---- Labels -----------------------------------------------------------------
 */

const char *
st_state_name(const st_stats *s, uint32_t state)
{
	for (size_t i = 0; i < s->labels.nstates; i++)
		if (s->labels.states[i].state == state)
			return s->labels.states[i].name;
	return NULL;
}

const char *
st_type_name(const st_stats *s, uint32_t type)
{
	const mg_type_label *t = lb_type(&s->labels, type);

	return t ? t->name : NULL;
}

const char *
st_value_name(const st_stats *s, uint32_t type, uint64_t value)
{
	return lb_value(lb_type(&s->labels, type), value);
}

/* ---- Life -------------------------------------------------------------------
 */

static void
labels_free(mg_labels *l)
{
	for (size_t i = 0; i < l->nstates; i++)
		free((char *)l->states[i].name);
	for (size_t i = 0; i < l->ntypes; i++) {
		for (size_t k = 0; k < l->types[i].nvalues; k++)
			free((char *)l->types[i].values[k].name);
		free(l->types[i].values);
		free((char *)l->types[i].name);
	}
	free(l->states);
	free(l->types);
}

static void
st_free_op(mg_writer *w)
{
	st_stats *s = (st_stats *)w;

	for (size_t i = 0; i < s->nthreads; i++) {
		free(s->threads[i].name);
		free(s->threads[i].label);
		free(s->threads[i].states);
		free(s->threads[i].events);
		free(s->threads[i].calls);
	}
	free(s->threads);
	free(s->tasks);
	free(s->funcs);
	rp_free(s->replay);
	free(s->path);
	st_pop_tree_free(s);
	labels_free(&s->labels);
	free(s->source);
	free(s);
}

static const mg_writer_ops st_ops = {
    .name = "stats",
    .begin = st_begin,
    .record = st_record,
    .end = st_end,
    .free = st_free_op,
};

dw_err
st_stats_new(const char *source, st_stats **out)
{
	st_stats *s = calloc(1, sizeof *s);

	*out = NULL;
	if (!s)
		return DW_ENOMEM;
	s->base.ops = &st_ops;
	s->faster_k = 2;
	s->source = strdup(source ? source : "");
	if (!s->source) {
		free(s);
		return DW_ENOMEM;
	}
	*out = s;
	return DW_OK;
}

dw_err
st_stats_read(const char *trace, st_stats *s, rd_errlist *errs)
{
	struct stat st;

	if (stat(trace, &st) == 0 && S_ISDIR(st.st_mode)) {
		mg_opts o = {.dir = trace};

		return mg_merge(&o, &s->base, errs, NULL);
	}
	return prvread_run(trace, &s->base, errs, NULL);
}

void
st_stats_figures_only(st_stats *s)
{
	s->figures_only = true;
}

void
st_stats_free(st_stats *s)
{
	if (s)
		st_free_op(&s->base);
}
