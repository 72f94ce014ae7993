/*
 * The three basic POP metrics, in one place for every part that shows
 * them: `dwork stats` and the summary (output/stats.c, over a trace),
 * `dwork top` (runtime/livesnap.c, over useful fractions of an
 * interval) and the regions (runtime/region.c, over useful seconds).
 * The runtime may not call the output library (docs/architecture.md),
 * so the formulas live here, below both.
 *
 *   load balance             LB   = mean(U_i) / max(U_i)
 *   communication efficiency CommE = max(U_i) / T
 *   parallel efficiency      PE   = mean(U_i) / T = LB x CommE
 *
 * U_i is process i's useful time, T the elapsed time, in any one unit
 * (fractions of T with T = 1 give CommE = max, PE = mean).
 */
#ifndef DW_COMMON_POP_H
#define DW_COMMON_POP_H

#include <stddef.h>

struct pop_basic {
	double total, mean, max; /* of U_i */
	size_t n;
	double lb, comm, pe;
	int valid; /* n > 0, max > 0 and T > 0; else the metrics are 0 */
};

/* Start from struct pop_basic p = {0}; add each U_i; finish with T. */
static inline void
pop_add(struct pop_basic *p, double useful)
{
	p->total += useful;
	p->max = useful > p->max ? useful : p->max;
	p->n++;
}

static inline void
pop_finish(struct pop_basic *p, double elapsed)
{
	p->mean = p->n ? p->total / (double)p->n : 0;
	p->valid = p->n > 0 && p->max > 0 && elapsed > 0;
	p->lb = p->comm = p->pe = 0;
	if (p->valid) {
		p->lb = p->mean / p->max;
		p->comm = p->max / elapsed;
		p->pe = p->mean / elapsed;
	}
}

static inline struct pop_basic
pop_basic(const double *useful, size_t n, double elapsed)
{
	struct pop_basic p = {0};

	for (size_t i = 0; i < n; i++)
		pop_add(&p, useful[i]);
	pop_finish(&p, elapsed);
	return p;
}

#endif
