/*
 * The Chrome trace event writer: PREFIX.json, which Perfetto's UI
 * (ui.perfetto.dev) and chrome://tracing open.  docs/merge.md describes
 * the mapping.
 *
 * One process per task (pid = task + 1: Perfetto treats pid 0 as the
 * kernel's), one thread per thread (tid = its global number + 1, unique
 * in the trace), complete events ("X") for functions and state pieces
 * (output/nest.h), instant events ("i") for events, flow events ("s" and
 * "f") for communications.  Times are microseconds with three decimals.
 *
 * Streamed into blocks that a thread of its own writes to the file
 * (output/outpipe.h), each line made from the thread's and the name's
 * fragments kept from their first use (json_int.h): a slice is written
 * when it closes, which is the only thing held, with one exception: a
 * slice that begins when an enclosing one does is held until that one
 * is written, because viewers take slices of equal start in file order
 * and would make the child the parent.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/json_int.h"
#include "output/labels.h"
#include "output/outfile.h"

static dw_err
fail(json_writer *j, dw_err err, const char *what, const char *path)
{
	return of_fail(&j->base, err, what, path, j->out.errnum);
}

/* ---- Regions (nest callbacks) -------------------------------------------- */

static bool
grow(void **v, uint32_t *cap, size_t size)
{
	uint32_t n = *cap ? *cap * 2 : 8;
	void *w = realloc(*v, n * size);

	if (!w)
		return false;
	*v = w;
	*cap = n;
	return true;
}

static dw_err
js_open(void *ctx, uint32_t thread, int kind, uint64_t id, uint64_t t)
{
	js_thread *th = &((json_writer *)ctx)->th[thread];

	(void)kind, (void)id, (void)t;
	if (th->nmarks == th->capmarks &&
	    !grow((void **)&th->marks, &th->capmarks, sizeof *th->marks))
		return DW_ENOMEM;
	th->marks[th->nmarks++] = th->nheld;
	return DW_OK;
}

static dw_err
js_close(void *ctx, uint32_t thread, int kind, uint64_t id, uint64_t begin,
         uint64_t end, unsigned flags)
{
	json_writer *j = ctx;
	js_thread *th = &j->th[thread];
	js_slice s = {id, begin, end, kind};
	uint32_t mark = th->nmarks ? th->marks[--th->nmarks] : 0;
	dw_err err;

	if (flags & NEST_SAME_BEGIN) {
		if (th->nheld == th->capheld &&
		    !grow((void **)&th->held, &th->capheld, sizeof *th->held))
			return DW_ENOMEM;
		th->held[th->nheld++] = s;
		return DW_OK;
	}
	err = js_slice_put(j, thread, &s);
	/* What waited for this slice, enclosing ones first. */
	while (err == DW_OK && th->nheld > mark)
		err = js_slice_put(j, thread, &th->held[--th->nheld]);
	return err;
}

static const nest_ops js_nest_ops = {js_open, js_close};

/* ---- Records ------------------------------------------------------------- */

static dw_err
events(json_writer *j, const mg_rec *r)
{
	dw_err err = DW_OK;

	for (uint32_t i = 0; err == DW_OK && i < r->u.event.n; i++) {
		const mg_pair *pr = &r->u.event.pairs[i];

		if (pr->type == LB_TYPE_FUNC) {
			err =
			    nest_func(&j->nest, r->thread, r->time, pr->value);
		} else if (pr->type == LB_TYPE_RUN ||
		           pr->type == LB_TYPE_BATCH) {
			err = nest_run(&j->nest, r->thread, r->time,
			               pr->type == LB_TYPE_RUN ? NEST_RUN
			                                       : NEST_BATCH,
			               pr->value);
		} else if (pr->type == LB_TYPE_FUNC_LINE) {
			continue; /* the function's region says it */
		} else {
			err = nest_touch(&j->nest, r->thread, r->time);
			if (err == DW_OK)
				err = js_instant(j, r->thread, r->time, pr);
		}
	}
	return err;
}

/* An error of the figures' writer, as this writer's. */
static dw_err
figures(json_writer *j, dw_err err)
{
	if (err != DW_OK)
		snprintf(j->base.err, sizeof j->base.err, "%s",
		         j->st->base.err);
	return err;
}

static dw_err
json_record(mg_writer *w, const mg_rec *r)
{
	json_writer *j = (json_writer *)w;
	dw_err err;

	if (r->thread >= j->info->nthreads ||
	    (r->kind == MG_COMM && r->u.comm.recv_thread >= j->info->nthreads))
		return DW_OK; /* not in the shape: cannot happen */
	if (r->kind == MG_STATE)
		err = nest_state(&j->nest, r->thread, r->time, r->u.state.end,
		                 r->u.state.state);
	else if (r->kind == MG_EVENT)
		err = events(j, r);
	else
		err = js_flow(j, r);
	if (err != DW_OK)
		return fail(j, err, "write", j->tmp);
	return figures(j, j->st->base.ops->record(&j->st->base, r));
}

/* ---- Begin --------------------------------------------------------------- */

static dw_err
metadata(json_writer *j, const mg_info *info)
{
	dw_err err = DW_OK;

	for (size_t i = 0; err == DW_OK && i < info->ntasks; i++) {
		uint32_t pid = (uint32_t)i + 1;

		err = js_meta(j, "process_name", pid, -1, "name",
		              info->tasks[i].name, 0);
		if (err == DW_OK)
			err = js_meta(j, "process_sort_index", pid, -1,
			              "sort_index", NULL, i);
	}
	for (size_t i = 0; err == DW_OK && i < info->nthreads; i++) {
		const mg_thread *t = &info->threads[i];

		err = js_meta(j, "thread_name", t->task + 1, (int64_t)i + 1,
		              "name", t->name, 0);
		if (err == DW_OK)
			err =
			    js_meta(j, "thread_sort_index", t->task + 1,
			            (int64_t)i + 1, "sort_index", NULL, t->num);
	}
	return err;
}

static dw_err
header(json_writer *j, const mg_info *info)
{
	char *p;
	dw_err err = js_need(j, JS_LINE + 6 * JS_NAME_MAX);

	if (err != DW_OK)
		return err;
	p = ob_end(&j->pipe.cur);
	PUT(p, "{\"displayTimeUnit\":\"ns\",\n\"traceEvents\":[");
	ob_commit(&j->pipe.cur, p);
	return metadata(j, info);
}

static dw_err
put_long(json_writer *j, const char *s, size_t n)
{
	dw_err err = DW_OK;

	while (err == DW_OK && n) {
		size_t k = n < 65536 ? n : 65536;

		err = js_put_raw(j, s, k);
		s += k, n -= k;
	}
	return err;
}

/* otherData, after the events: it carries the figures, known only at
 * the end (the same as `dwork stats`, output/stats.h). */
static dw_err
other_data(json_writer *j, const mg_info *info)
{
	char *buf = NULL, *p;
	size_t len = 0;
	FILE *f;
	dw_err err = js_need(j, JS_LINE + 6 * JS_NAME_MAX);

	if (err != DW_OK)
		return err;
	p = ob_end(&j->pipe.cur);
	PUT(p, "\n],\n\"otherData\":{\"program\":\"");
	p = js_put_esc(p, info->program ? info->program : "");
	PUT(p, "\",\"start_real_ns\":");
	p = ob_u64(
	    p, (uint64_t)(info->start_real_ns > 0 ? info->start_real_ns : 0));
	PUT(p, ",\"duration_ns\":");
	p = ob_u64(p, info->duration);
	PUT(p, ",\"writer\":\"dwork\",\"summary\":");
	ob_commit(&j->pipe.cur, p);
	if (!(f = open_memstream(&buf, &len)))
		return DW_ENOMEM;
	st_print_figures_json(j->st, f);
	if (fclose(f) != 0) {
		free(buf);
		return DW_ENOMEM;
	}
	err = put_long(j, buf, len);
	free(buf);
	return err == DW_OK ? js_put_raw(j, "}}\n", 3) : err;
}

/* The threads' line beginnings (json_int.h's JS_PRE_*). */
static dw_err
prefixes(json_writer *j, const mg_info *info)
{
	static const char *const head[] = {"", ",\n{\"ph\":\"X\",",
	                                   ",\n{\"ph\":\"i\",\"s\":\"t\","};

	for (size_t i = 0; i < info->nthreads; i++) {
		for (size_t k = 0; k < 3; k++) {
			int n = snprintf(
			    j->pre + (3 * i + k) * JS_PRE, JS_PRE,
			    "%s\"pid\":%u,\"tid\":%zu,\"ts\":", head[k],
			    info->threads[i].task + 1, i + 1);

			if (n < 0 || n >= JS_PRE)
				return DW_EINVAL;
			j->pre_len[3 * i + k] = (uint8_t)n;
		}
	}
	return DW_OK;
}

static dw_err
tables(json_writer *j, const mg_info *info)
{
	const mg_labels *lb = info->labels;
	dw_err err;

	j->th = calloc(info->nthreads + 1, sizeof *j->th);
	j->pre = calloc(3 * info->nthreads + 1, JS_PRE);
	j->pre_len = calloc(3 * info->nthreads + 1, 1);
	j->states = calloc(lb->nstates + 1, sizeof *j->states);
	j->types = calloc(lb->ntypes + 1, sizeof *j->types);
	j->vals = calloc(lb->ntypes + 1, sizeof *j->vals);
	j->nvals = calloc(lb->ntypes + 1, sizeof *j->nvals);
	if (!j->th || !j->pre || !j->pre_len || !j->states || !j->types ||
	    !j->vals || !j->nvals)
		return DW_ENOMEM;
	j->ntypes = lb->ntypes;
	j->nstates = lb->nstates;
	j->nthreads = info->nthreads;
	for (unsigned r = 0; r < 1000; r++) {
		j->frac[r][0] = '.';
		j->frac[r][1] = (char)('0' + r / 100);
		memcpy(&j->frac[r][2], ob_digits + (r % 100) * 2, 2);
	}
	for (size_t i = 0; i < JS_TYPE_CACHE; i++)
		j->tcache[i].index = JS_TYPE_EMPTY;
	ob_near_init(&j->ts);
	err = prefixes(j, info);
	for (size_t i = 0; err == DW_OK && i < lb->nstates; i++)
		err = js_name_frag(&j->states[i], ",\"name\":\"",
		                   lb->states[i].name, "\",\"cat\":\"state\"}");
	for (uint32_t st = 0; st < JS_BYSTATE; st++) {
		const mg_state_label *l = lb_state(lb, st);

		j->by_state[st] = l ? &j->states[l - lb->states] : NULL;
	}
	for (size_t i = 0; err == DW_OK && i < lb->ntypes; i++) {
		char tail[96];

		snprintf(
		    tail, sizeof tail,
		    "\",\"cat\":\"event\",\"args\":{\"type\":%u,\"value\":",
		    lb->types[i].type);
		err = js_name_frag(&j->types[i], ",\"name\":\"",
		                   lb->types[i].name, tail);
	}
	return err;
}

/* A block of lines into the file (the pipe's thread). */
static dw_err
put_block(void *ctx, ob *out, const char *buf, size_t len)
{
	(void)ctx;
	return ob_write(out, buf, len);
}

static dw_err
json_begin(mg_writer *w, const mg_info *info)
{
	json_writer *j = (json_writer *)w;
	dw_err err = ob_open(&j->out, j->tmp);

	if (err != DW_OK)
		return fail(j, err, "create", j->tmp);
	j->opened = true;
	err = op_start(&j->pipe, &j->out, OB_SIZE, put_block, j);
	if (err != DW_OK)
		return fail(j, err, "write", j->tmp);
	j->info = info;
	j->runtime = lb_is_runtime(info->labels);
	err = nest_init(&j->nest, (uint32_t)info->nthreads, &js_nest_ops, j);
	if (err == DW_OK)
		err = tables(j, info);
	if (err == DW_OK)
		err = header(j, info);
	if (err != DW_OK)
		return fail(j, err, "write", j->tmp);
	return figures(j, j->st->base.ops->begin(&j->st->base, info));
}

/* ---- End ----------------------------------------------------------------- */

static dw_err
json_end(mg_writer *w, const mg_info *info)
{
	json_writer *j = (json_writer *)w;
	dw_err err;

	j->info = info;
	err = figures(j, j->st->base.ops->end(&j->st->base, info));
	if (err != DW_OK)
		return err;
	err = nest_finish(&j->nest);
	if (err == DW_OK)
		err = other_data(j, info);
	if (err == DW_OK)
		err = op_finish(&j->pipe);
	if (err != DW_OK)
		return fail(j, err, "write", j->tmp);
	j->opened = false;
	err = ob_close(&j->out);
	if (err != DW_OK)
		return fail(j, err, "write", j->tmp);
	err = of_commit(&j->base, j->tmp, j->path);
	if (err != DW_OK)
		return err;
	j->ended = true;
	return DW_OK;
}

static void
json_free(mg_writer *w)
{
	json_writer *j = (json_writer *)w;

	op_free(&j->pipe); /* before the file it writes */
	if (j->opened)
		ob_discard(&j->out);
	for (size_t i = 0; j->th && i < j->nthreads; i++) {
		free(j->th[i].held);
		free(j->th[i].marks);
	}
	for (size_t i = 0; j->states && i < j->nstates; i++)
		free(j->states[i].s);
	for (size_t i = 0; j->types && i < j->ntypes; i++)
		free(j->types[i].s);
	for (size_t i = 0; j->vals && i < j->ntypes; i++) {
		for (size_t k = 0; j->vals[i] && k < j->nvals[i]; k++)
			free(j->vals[i][k].s);
		free(j->vals[i]);
	}
	for (size_t i = 0; i < j->nfuncs; i++)
		free(j->funcs[i].s);
	for (int k = 0; k < JS_FLOW_KINDS; k++) {
		free(j->flow_s[k].s);
		free(j->flow_f[k].s);
	}
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < j->nruns[k]; i++)
			free(j->runs[k][i].s);
		free(j->runs[k]);
	}
	nest_free(&j->nest);
	st_stats_free(j->st);
	free(j->th);
	free(j->pre);
	free(j->pre_len);
	free(j->states);
	free(j->types);
	free(j->vals);
	free(j->nvals);
	free(j->funcs);
	of_names_free(j->path, j->tmp, !j->ended);
	free(j);
}

static const mg_writer_ops json_ops = {
    .name = "json",
    .begin = json_begin,
    .record = json_record,
    .end = json_end,
    .free = json_free,
};

dw_err
json_writer_new(const char *prefix, mg_writer **out)
{
	json_writer *j = calloc(1, sizeof *j);

	*out = NULL;
	if (!j)
		return DW_ENOMEM;
	j->base.ops = &json_ops;
	j->out.fd = -1;
	if (of_names(&j->path, &j->tmp, prefix, ".json") != DW_OK ||
	    st_stats_new(prefix, &j->st) != DW_OK) {
		j->ended = true;
		json_free(&j->base);
		return DW_ENOMEM;
	}
	/* the summary prints no figure of the replay: memory stays bounded */
	st_stats_figures_only(j->st);
	*out = &j->base;
	return DW_OK;
}
