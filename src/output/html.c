/*
 * The timeline writer: states summed per pixel column and thread while
 * the records go by, message paths counted in a hash table, and the
 * picture written at the end (html_draw.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/safefile.h"
#include "output/html_int.h"
#include "output/outfile.h"

static dw_err
fail(html_writer *h, dw_err err, const char *what)
{
	snprintf(h->base.err, sizeof h->base.err, "timeline %s: %s", h->path,
	         what);
	return err;
}

/* ---- States ----------------------------------------------------------------
 */

/* The column array of state on thread t, made on first use. */
static double *
state_cols(html_writer *h, hw_thread *t, uint32_t state)
{
	uint32_t *ids;
	double **cols;

	for (uint32_t i = 0; i < t->nused; i++)
		if (t->state[i] == state)
			return t->cols[i];
	ids = realloc(t->state, (t->nused + 1) * sizeof *ids);
	if (ids)
		t->state = ids;
	cols = realloc(t->cols, (t->nused + 1) * sizeof *cols);
	if (cols)
		t->cols = cols;
	if (!ids || !cols)
		return NULL;
	t->cols[t->nused] = calloc(h->width, sizeof **t->cols);
	if (!t->cols[t->nused])
		return NULL;
	t->state[t->nused] = state;
	return t->cols[t->nused++];
}

/* Pixel position of time t (may lie outside 0 .. width). */
static dw_err
on_state(html_writer *h, const mg_rec *r)
{
	uint64_t b = r->time > h->from ? r->time : h->from;
	uint64_t e = r->u.state.end < h->to ? r->u.state.end : h->to;
	hw_thread *t = &h->threads[r->thread];
	double *cols, x0, x1, ns_px = (double)h->span / h->width;

	if (r->u.state.state != HW_NOT_CREATED) {
		t->records = true;
		if (r->u.state.end > t->live)
			t->live = r->u.state.end;
	}
	if (b >= e)
		return DW_OK;
	cols = state_cols(h, t, r->u.state.state);
	if (!cols)
		return fail(h, DW_ENOMEM, "out of memory");
	x0 = hw_x(h, b);
	x1 = hw_x(h, e);
	for (uint32_t c = (uint32_t)x0; c < h->width && c < x1; c++) {
		double lo = x0 > c ? x0 : c, hi = x1 < c + 1 ? x1 : c + 1;

		cols[c] += (hi - lo) * ns_px;
	}
	return DW_OK;
}

/* ---- Messages ---------------------------------------------------------------
 */

static uint64_t
line_hash(uint32_t from, uint32_t to, int32_t c0, int32_t c1)
{
	uint64_t k = (uint64_t)from * 0x9e3779b97f4a7c15ull ^
	             (uint64_t)to * 0xc2b2ae3d27d4eb4full ^
	             (uint64_t)(uint32_t)c0 * 0x165667b19e3779f9ull ^
	             (uint64_t)(uint32_t)c1 * 0x27d4eb2f165667c5ull;

	return k ^ (k >> 29);
}

static dw_err
lines_grow(html_writer *h)
{
	size_t cap = h->lcap ? h->lcap * 2 : 1024;
	hw_line *n = calloc(cap, sizeof *n);

	if (!n)
		return DW_ENOMEM;
	for (size_t i = 0; i < h->lcap; i++) {
		hw_line *o = &h->lines[i];
		size_t k;

		if (!o->count)
			continue;
		k = line_hash(o->from, o->to, o->c0, o->c1) & (cap - 1);
		while (n[k].count)
			k = (k + 1) & (cap - 1);
		n[k] = *o;
	}
	free(h->lines);
	h->lines = n;
	h->lcap = cap;
	return DW_OK;
}

static int32_t
column_of(const html_writer *h, uint64_t t)
{
	double x = hw_x(h, t);

	return x < 0 ? -1 : x >= h->width ? (int32_t)h->width : (int32_t)x;
}

static dw_err
on_comm(html_writer *h, const mg_rec *r)
{
	uint64_t ts = r->time, tr = r->u.comm.log_recv;
	int32_t c0, c1;
	size_t k;
	hw_line *l;

	h->threads[r->thread].records = true;
	h->threads[r->u.comm.recv_thread].records = true;
	if ((ts < h->from && tr < h->from) || (ts >= h->to && tr >= h->to))
		return DW_OK;
	h->messages++;
	if (2 * (h->nlines + 1) > h->lcap && lines_grow(h) != DW_OK)
		return fail(h, DW_ENOMEM, "out of memory");
	c0 = column_of(h, ts);
	c1 = column_of(h, tr);
	k = line_hash(r->thread, r->u.comm.recv_thread, c0, c1) & (h->lcap - 1);
	for (;; k = (k + 1) & (h->lcap - 1)) {
		l = &h->lines[k];
		if (!l->count ||
		    (l->from == r->thread && l->to == r->u.comm.recv_thread &&
		     l->c0 == c0 && l->c1 == c1))
			break;
	}
	if (!l->count) {
		l->from = r->thread;
		l->to = r->u.comm.recv_thread;
		l->c0 = c0;
		l->c1 = c1;
		l->tag = r->u.comm.tag;
		l->first = ts;
		l->last_recv = tr;
		h->nlines++;
	}
	l->mixed |= l->tag != r->u.comm.tag;
	l->count++;
	l->bytes += r->u.comm.size;
	return DW_OK;
}

/* ---- Runs and user events ---------------------------------------------------
 */

static bool
grow(void **v, size_t *cap, size_t size)
{
	size_t n = *cap ? *cap * 2 : 16;
	void *w = realloc(*v, n * size);

	if (!w)
		return false;
	*v = w;
	*cap = n;
	return true;
}

/* Adds the run [b, e) of id, clipped to the range; a run narrower than
 * a pixel joins the one before when they meet in one column. */
static dw_err
seg_add(html_writer *h, hw_thread *t, int kind, uint64_t id, uint64_t b,
        uint64_t e)
{
	hw_seg *p = NULL;
	double x0, x1;

	if (b < h->from)
		b = h->from;
	if (e > h->to)
		e = h->to;
	if (b >= e)
		return DW_OK;
	x0 = hw_x(h, b);
	x1 = hw_x(h, e);
	for (size_t i = t->nsegs; i-- > 0 && !p;)
		if (t->segs[i].kind == kind)
			p = &t->segs[i];
	if (p && (int64_t)x0 <= (int64_t)p->x1 &&
	    (x1 - x0 < 1 || p->x1 - p->x0 < 1)) {
		p->x1 = x1;
		p->e = e;
		p->count++;
		p->mixed |= p->id != id;
		return DW_OK;
	}
	if (t->nsegs == t->capsegs &&
	    !grow((void **)&t->segs, &t->capsegs, sizeof *t->segs))
		return fail(h, DW_ENOMEM, "out of memory");
	t->segs[t->nsegs++] =
	    (hw_seg){x0, x1, b, e, id, 1, false, (uint8_t)kind};
	return DW_OK;
}

/* A value of DW_EV_FUNCTION or of type 60000019: what runs from t. */
static dw_err
run_change(html_writer *h, hw_thread *t, int kind, uint64_t t_ns,
           uint64_t value)
{
	dw_err err = DW_OK;

	if (t->cur[kind] == value)
		return DW_OK;
	if (t->cur[kind])
		err = seg_add(h, t, kind, t->cur[kind], t->since[kind], t_ns);
	t->cur[kind] = value;
	t->since[kind] = t_ns;
	return err;
}

void
hw_close_runs(html_writer *h)
{
	for (size_t i = 0; i < h->nthreads; i++) {
		hw_thread *t = &h->threads[i];

		for (int k = 0; k < HW_NKINDS; k++)
			if (t->cur[k] && t->live > t->since[k])
				(void)run_change(h, t, k, t->live, 0);
	}
}

/* A program's own event: not dwork's 71000xxx, not Extrae's own
 * 4000xxxx (init, flush, pid: the tracer's bookkeeping), not a user
 * function or its source line (6000xx19). */
static bool
user_type(uint32_t type)
{
	if (type >= 40000000u && type <= 40999999u)
		return false;
	if (type == 60000119u)
		return false;
	return type != HW_TYPE_FUNC && (type < 71000000u || type > 71999999u);
}

static dw_err
mark_add(html_writer *h, hw_thread *t, uint64_t ts, const mg_pair *p)
{
	double x = hw_x(h, ts);
	hw_mark *m = t->nmarks ? &t->marks[t->nmarks - 1] : NULL;

	h->marks_in++;
	if (m && (int64_t)m->x == (int64_t)x) {
		m->count++;
		m->mixed |= m->type != p->type || m->value != p->value;
		return DW_OK;
	}
	if (t->nmarks == t->capmarks &&
	    !grow((void **)&t->marks, &t->capmarks, sizeof *t->marks))
		return fail(h, DW_ENOMEM, "out of memory");
	t->marks[t->nmarks++] = (hw_mark){x, ts, p->type, 1, p->value, false};
	return DW_OK;
}

static dw_err
on_event(html_writer *h, const mg_rec *r)
{
	hw_thread *t = &h->threads[r->thread];
	dw_err err = DW_OK;
	bool in = r->time >= h->from && r->time <= h->to;

	t->records = true;
	h->events++;
	for (uint32_t i = 0; err == DW_OK && i < r->u.event.n; i++) {
		const mg_pair *p = &r->u.event.pairs[i];

		if (p->type == HW_TYPE_RUN)
			err = run_change(h, t, HW_RUN, r->time, p->value);
		else if (p->type == HW_TYPE_FUNC)
			err = run_change(h, t, HW_FUNC, r->time, p->value);
		else if (in && user_type(p->type))
			err = mark_add(h, t, r->time, p);
	}
	return err;
}

/* ---- Writer ----------------------------------------------------------------
 */

/* An error of the figures' writer (output/stats.h), as this writer's. */
static dw_err
figures(html_writer *h, dw_err err)
{
	if (err != DW_OK)
		snprintf(h->base.err, sizeof h->base.err, "%s",
		         h->st->base.err);
	return err;
}

static dw_err
hw_begin(mg_writer *w, const mg_info *info)
{
	html_writer *h = (html_writer *)w;

	h->to = h->to_opt ? h->to_opt : info->duration;
	if (h->to > info->duration && !h->to_opt)
		h->to = info->duration;
	if (h->from >= h->to && !(h->from == 0 && h->to == 0))
		return fail(h, DW_EINVAL, "the range to draw is empty");
	h->span = h->to > h->from ? h->to - h->from : 1;
	h->nthreads = info->nthreads;
	h->threads = calloc(info->nthreads + 1, sizeof *h->threads);
	if (!h->threads)
		return fail(h, DW_ENOMEM, "out of memory");
	return figures(h, h->st->base.ops->begin(&h->st->base, info));
}

static dw_err
hw_record(mg_writer *w, const mg_rec *r)
{
	html_writer *h = (html_writer *)w;
	dw_err err;

	if (r->thread >= h->nthreads ||
	    (r->kind == MG_COMM && r->u.comm.recv_thread >= h->nthreads))
		return fail(h, DW_EINVAL, "a record of an undeclared thread");
	err = figures(h, h->st->base.ops->record(&h->st->base, r));
	if (err != DW_OK)
		return err;
	if (r->kind == MG_STATE)
		return on_state(h, r);
	if (r->kind == MG_COMM)
		return on_comm(h, r);
	return on_event(h, r);
}

static dw_err
hw_end(mg_writer *w, const mg_info *info)
{
	html_writer *h = (html_writer *)w;
	dw_err err = figures(h, h->st->base.ops->end(&h->st->base, info));
	int errnum = 0;

	if (err != DW_OK)
		return err;
	hw_close_runs(h);
	int fd = sf_create(h->tmp, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (fd >= 0 && !f)
		close(fd);
	if (!f)
		return fail(h, dw_err_from_errno(errno), strerror(errno));
	hw_draw(h, info, f);
	if (ferror(f))
		errnum = EIO;
	if (fclose(f) && !errnum)
		errnum = errno;
	if (!errnum && rename(h->tmp, h->path) < 0)
		errnum = errno;
	if (errnum)
		return fail(h, dw_err_from_errno(errnum), strerror(errnum));
	h->ended = true;
	return DW_OK;
}

static void
hw_free(mg_writer *w)
{
	html_writer *h = (html_writer *)w;

	for (size_t i = 0; i < h->nthreads; i++) {
		for (uint32_t k = 0; k < h->threads[i].nused; k++)
			free(h->threads[i].cols[k]);
		free(h->threads[i].cols);
		free(h->threads[i].state);
		free(h->threads[i].segs);
		free(h->threads[i].marks);
	}
	free(h->threads);
	free(h->lines);
	st_stats_free(h->st);
	of_names_free(h->path, h->tmp, !h->ended);
	free(h);
}

static const mg_writer_ops hw_ops = {
    .name = "html",
    .begin = hw_begin,
    .record = hw_record,
    .end = hw_end,
    .free = hw_free,
};

dw_err
html_writer_open(const char *path, const html_opts *o, mg_writer **out)
{
	html_opts d = {0};
	html_writer *h;

	*out = NULL;
	if (!o)
		o = &d;
	if ((o->to && o->from >= o->to) || o->width > 100000)
		return DW_EINVAL;
	h = calloc(1, sizeof *h);
	if (!h)
		return DW_ENOMEM;
	h->base.ops = &hw_ops;
	h->from = o->from;
	h->to_opt = o->to;
	h->width = o->width ? o->width : HW_WIDTH;
	h->svg = o->svg;
	h->max_lines = o->max_lines ? o->max_lines : HW_MAX_LINES;
	if (of_names(&h->path, &h->tmp, path, "") != DW_OK ||
	    st_stats_new(path, &h->st) != DW_OK) {
		h->ended = true;
		hw_free(&h->base);
		return DW_ENOMEM;
	}
	*out = &h->base;
	return DW_OK;
}

dw_err
html_writer_new(const char *prefix, mg_writer **out)
{
	char *path;
	dw_err err;

	if (asprintf(&path, "%s.html", prefix) < 0)
		return DW_ENOMEM;
	err = html_writer_open(path, NULL, out);
	free(path);
	return err;
}
