/*
 * The progress line: records done of total, rate and time left, on one
 * line rewritten in place, once a phase has run for a second.
 */
#include <time.h>

#include "merge/mg_int.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void
mg_progress_start(mg_progress *p, FILE *out, const char *what, uint64_t total)
{
	p->out = out;
	p->what = what;
	p->total = total;
	p->start = now_s();
	p->last = 0;
	p->shown = false;
}

void
mg_progress_update(mg_progress *p, uint64_t done)
{
	double t, rate, left;

	if (!p->out)
		return;
	t = now_s();
	if (t - p->start < 1.0 || t - p->last < 0.25)
		return;
	p->last = t;
	rate = (double)done / (t - p->start);
	left =
	    p->total > done && rate > 0 ? (double)(p->total - done) / rate : 0;
	fprintf(p->out,
	        "\rdwork merge: %s %.1fM of %.1fM records, %.1fM records/s, "
	        "%.0f s left\033[K",
	        p->what, (double)done * 1e-6, (double)p->total * 1e-6,
	        rate * 1e-6, left);
	fflush(p->out);
	p->shown = true;
}

void
mg_progress_end(mg_progress *p)
{
	if (p->out && p->shown) {
		fputs("\r\033[K", p->out);
		fflush(p->out);
	}
	p->shown = false;
}
