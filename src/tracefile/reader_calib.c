/* Tick-to-nanosecond calibration of one process (trace-format.md, Time). */
#include <stdlib.h>
#include <string.h>

#include "tracefile/reader_int.h"

#define NS_PER_S 1000000000u

void
rd_calib_init(rd_calib *c, uint32_t clock, uint64_t ticks_per_s)
{
	memset(c, 0, sizeof *c);
	c->clock = clock;
	c->ticks_per_s = ticks_per_s;
	c->sorted = true;
}

void
rd_calib_free(rd_calib *c)
{
	free(c->pairs);
	c->pairs = NULL;
	c->n = c->cap = 0;
	c->sorted = true;
}

dw_err
rd_calib_add(rd_calib *c, uint64_t ticks, uint64_t ns)
{
	if (ticks == 0 && ns == 0)
		return DW_OK;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		rd_pair *p;

		if (cap > SIZE_MAX / sizeof *p)
			return DW_ENOMEM;
		p = realloc(c->pairs, cap * sizeof *p);
		if (!p)
			return DW_ENOMEM;
		c->pairs = p;
		c->cap = cap;
	}
	c->pairs[c->n++] = (rd_pair){ticks, ns};
	c->sorted = false;
	return DW_OK;
}

dw_err
rd_calib_add_proc(rd_calib *c, const rd_proc *p)
{
	dw_err err = rd_calib_add(c, p->hdr.init_ticks, p->hdr.init_ns);

	if (err == DW_OK)
		err = rd_calib_add(c, p->hdr.end_ticks, p->hdr.end_ns);
	for (size_t i = 0; err == DW_OK && i < p->ncalib; i++)
		err = rd_calib_add(c, p->calib[i].ticks, p->calib[i].ns);
	if (err == DW_OK && p->has_end)
		err = rd_calib_add(c, p->end.ticks, p->end.ns);
	return err;
}

dw_err
rd_calib_add_thread(rd_calib *c, const rd_thread *t)
{
	const rd_header *h = rd_thread_header(t);
	size_t n;
	const rd_segment *sg = rd_thread_segments(t, &n);
	dw_err err = rd_calib_add(c, h->init_ticks, h->init_ns);

	for (size_t i = 0; err == DW_OK && i < n; i++)
		err = rd_calib_add(c, sg[i].ticks, sg[i].ns);
	return err;
}

static int
pair_cmp(const void *a, const void *b)
{
	const rd_pair *x = a, *y = b;

	if (x->ticks != y->ticks)
		return x->ticks < y->ticks ? -1 : 1;
	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

size_t
rd_calib_finish(rd_calib *c, const char *name, rd_errlist *errs)
{
	size_t k = 0, dropped = 0;

	if (c->n)
		qsort(c->pairs, c->n, sizeof *c->pairs, pair_cmp);
	for (size_t i = 0; i < c->n; i++) {
		const rd_pair *p = &c->pairs[i];
		const rd_pair *prev = k ? &c->pairs[k - 1] : NULL;

		if (prev && p->ticks == prev->ticks) {
			dropped += p->ns != prev->ns;
			continue;
		}
		if (prev && p->ns < prev->ns) {
			rd_report_file(errs, name ? name : "calibration",
			               "calibration pair (tick %llu, %llu ns) "
			               "goes back in time; ignored",
			               (unsigned long long)p->ticks,
			               (unsigned long long)p->ns);
			dropped++;
			continue;
		}
		c->pairs[k++] = *p;
	}
	c->n = k;
	c->sorted = true;
	return dropped;
}

static int64_t
saturate(__int128 v)
{
	if (v > INT64_MAX)
		return INT64_MAX;
	if (v < INT64_MIN)
		return INT64_MIN;
	return (int64_t)v;
}

/* ns0 + (t - t0) * num / den, rounded to the nearest, saturated. */
static int64_t
line(uint64_t t0, uint64_t ns0, uint64_t t, uint64_t num, uint64_t den)
{
	unsigned __int128 d = t >= t0 ? t - t0 : t0 - t;
	unsigned __int128 q = (d * num + den / 2) / den;

	if (q > UINT64_MAX)
		return t >= t0 ? INT64_MAX : INT64_MIN;
	return saturate(t >= t0 ? (__int128)ns0 + (__int128)q
	                        : (__int128)ns0 - (__int128)q);
}

/* The index of the last pair at or before t (t within the pairs). */
static size_t
pair_find(const rd_calib *c, uint64_t t)
{
	size_t lo = 0, hi = c->n;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->pairs[mid].ticks <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

rd_span
rd_calib_span(const rd_calib *c, uint64_t ticks)
{
	const rd_pair *a, *b;
	rd_span s = {{0, 0}, 1, 1, UINT64_MAX};

	if (c->n <= 1) {
		s.base = c->n ? c->pairs[0] : (rd_pair){0, 0};
		if (c->ticks_per_s)
			s.num = NS_PER_S, s.den = c->ticks_per_s;
		return s;
	}
	a = &c->pairs[0];
	b = &c->pairs[c->n - 1];
	if (ticks < a->ticks || ticks >= b->ticks) {
		s.base = ticks < a->ticks ? *a : *b;
		s.num = b->ns - a->ns, s.den = b->ticks - a->ticks;
		return s;
	}
	a = &c->pairs[pair_find(c, ticks)];
	b = a + 1;
	s.base = *a, s.end = b->ticks;
	s.num = b->ns - a->ns, s.den = b->ticks - a->ticks;
	return s;
}

int64_t
rd_calib_to_ns(rd_calib *c, uint64_t ticks)
{
	rd_span s;

	if (c->clock == FMT_CLOCK_MONO_RAW)
		return saturate(ticks);
	if (!c->sorted)
		rd_calib_finish(c, NULL, NULL);
	s = rd_calib_span(c, ticks);
	return line(s.base.ticks, s.base.ns, ticks, s.num, s.den);
}
