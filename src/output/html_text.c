/*
 * What the timeline's drawing files share (html_draw.h): XML escaping,
 * times in the picture's unit, states' names and colours, threads'
 * short names, pixel positions.  It calls none of them.
 */
#include <math.h>
#include <string.h>

#include "output/html_draw.h"
#include "output/stats.h"

/* Colours for states the labels do not colour. */
static const uint32_t palette[] = {0xe6194b, 0x3cb44b, 0xffe119, 0x4363d8,
                                   0xf58231, 0x911eb4, 0x46f0f0, 0xf032e6};

/* ---- Text --------------------------------------------------------------- */

void
hw_esc_n(FILE *f, const char *s, size_t n)
{
	for (const char *e = s + n; s < e; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c < 0x20 || c == 0x7f)
			fputc(' ', f);
		else
			fputc(c, f);
	}
}

void
hw_esc(FILE *f, const char *s)
{
	if (s)
		hw_esc_n(f, s, strlen(s));
}

const char *
hw_unit_name(uint64_t unit)
{
	return unit >= 1000000000 ? "s"
	       : unit >= 1000000  ? "ms"
	       : unit >= 1000     ? "\xc2\xb5s"
	                          : "ns";
}

uint64_t
hw_unit_for(double ns)
{
	return ns >= 1e9   ? 1000000000
	       : ns >= 1e6 ? 1000000
	       : ns >= 1e3 ? 1000
	                   : 1;
}

/* Decimals that resolve `res` ns in `unit`. */
int
hw_decimals_for(double res, uint64_t unit)
{
	double r = res / (double)unit;
	int d = r >= 1 ? 0 : (int)ceil(-log10(r));

	return d > 6 ? 6 : d;
}

void
hw_put_time(const hw_canvas *d, uint64_t t)
{
	fprintf(d->f, "%.*f %s", d->decimals, (double)t / (double)d->unit,
	        hw_unit_name(d->unit));
}

/* ---- Labels ---------------------------------------------------------------
 */

static const mg_state_label *
state_label(const hw_canvas *d, uint32_t state)
{
	const mg_labels *l = d->info->labels;
	size_t lo = 0, hi = l ? l->nstates : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->states[mid].state == state)
			return &l->states[mid];
		if (l->states[mid].state < state)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

uint32_t
hw_state_rgb(const hw_canvas *d, uint32_t state)
{
	const mg_state_label *s = state_label(d, state);

	return s ? s->rgb : palette[state % 8];
}

void
hw_state_name(const hw_canvas *d, uint32_t state)
{
	const mg_state_label *s = state_label(d, state);

	if (s)
		hw_esc(d->f, s->name);
	else
		fprintf(d->f, "State %u", state);
}

/* A dwork process's thread by its name ("worker 3 executor 1", the
 * dwork id, not the task); any other "2.1 label": Paraver's task.thread
 * from 1 and the thread's label. */
void
hw_thread_short(const hw_canvas *d, size_t i)
{
	const mg_thread *t = &d->info->threads[i];
	size_t n = 0;
	const char *l = st_name_label(t->name, &n);

	if (l && t->name && strncmp(t->name, "task ", 5)) {
		hw_esc_n(d->f, t->name, strlen(t->name));
		return;
	}
	fprintf(d->f, "%u.%u", t->task + 1, t->num + 1);
	if (l) {
		fputc(' ', d->f);
		hw_esc_n(d->f, l, n);
	}
}

const char *
hw_hide(const hw_canvas *d, size_t row)
{
	return d->row_y[row] < 0 ? " display=\"none\"" : "";
}

double
hw_x(const html_writer *h, uint64_t t)
{
	return ((double)t - (double)h->from) * h->width / (double)h->span;
}
