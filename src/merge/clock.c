/*
 * Clock correction: every process's ticks onto the reference timeline
 * (task 0's host clock).  The reader's calibration gives host ns; sync
 * records give the reference's offset at some host ns, interpolated
 * linearly between them (offset and drift).
 */
#include <stdlib.h>
#include <string.h>

#include "merge/mg_int.h"

void
mg_clock_init(mg_clock *k, uint32_t clock, uint64_t ticks_per_s)
{
	memset(k, 0, sizeof *k);
	rd_calib_init(&k->calib, clock, ticks_per_s);
	k->kind = MG_CLK_REF;
}

void
mg_clock_free(mg_clock *k)
{
	rd_calib_free(&k->calib);
	free(k->pts);
	k->pts = NULL;
	k->npts = 0;
}

static int
sync_cmp(const void *a, const void *b)
{
	const mg_sync *x = a, *y = b;

	if (x->local != y->local)
		return x->local < y->local ? -1 : 1;
	return x->rtt < y->rtt ? -1 : x->rtt > y->rtt;
}

static double
point_slope(const mg_point *a, const mg_point *b)
{
	return ((double)b->off - (double)a->off) /
	       ((double)b->x - (double)a->x);
}

static uint64_t
clamp_u64(unsigned __int128 v)
{
	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

/* The slope (neg ? -1 : 1) * num / den; den 0 makes it 0. */
static mg_slope
slope_make(bool neg, uint64_t num, uint64_t den)
{
	mg_slope m = {0, 1, 0, 0, false};

	if (!den || !num)
		return m;
	m.num = num, m.den = den, m.neg = neg;
	m.i = num / den;
	m.f = (uint64_t)(((unsigned __int128)(num % den) << 64) / den);
	return m;
}

/* The slope of the offset from point a to point b (a->x < b->x). */
static mg_slope
points_slope(const mg_point *a, const mg_point *b)
{
	__int128 dn = (__int128)b->off - a->off;
	unsigned __int128 dd = (unsigned __int128)((__int128)b->x - a->x);

	return slope_make(dn < 0, clamp_u64(dn < 0 ? -dn : dn), clamp_u64(dd));
}

static void
clock_slope_out(mg_clock *k)
{
	k->out = k->npts >= 2 ? points_slope(&k->pts[0], &k->pts[k->npts - 1])
	                      : slope_make(false, 0, 0);
}

/* How far from its base the fast path may go with slope m: the product
 * stays below 2^60. */
static uint64_t
fix_len(const mg_slope *m)
{
	return (UINT64_C(1) << 60) / (m->i + 1);
}

static int64_t
sub_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return a > b ? INT64_MAX : INT64_MIN;
	return r;
}

/*
 * base + slope * (x - x0), rounded (halves away from zero), saturated.
 * Where the fast paths could be used (x >= x0, within fix_len) this is
 * their very formula, so that a time is the same whichever path
 * computed it; elsewhere it is exact.
 */
static int64_t
along(int64_t base, uint64_t x0, uint64_t x, const mg_slope *m)
{
	uint64_t d = x >= x0 ? x - x0 : x0 - x;
	unsigned __int128 q;
	bool down;

	if (x >= x0 && d < fix_len(m))
		q = mg_fix_mul(d, m->i, m->f);
	else
		q = ((unsigned __int128)d * m->num + m->den / 2) / m->den;
	down = (x < x0) != m->neg;
	if (q > INT64_MAX)
		return down ? INT64_MIN : INT64_MAX;
	return down ? sub_sat(base, (int64_t)q) : mg_add_sat(base, (int64_t)q);
}

/*
 * Corrected time x + off(x) must not run backwards: a point whose offset
 * falls by more than half the time since the previous one is a bad
 * measurement.  Equal local times keep the narrowest round trip.
 */
static bool
point_keep(mg_clock *k, const mg_sync *s, const char *name, rd_errlist *errs)
{
	mg_point p = {s->local, s->offset, s->rtt};
	const mg_point *prev = k->npts ? &k->pts[k->npts - 1] : NULL;

	if (prev && prev->x == p.x)
		return false;
	if (prev && point_slope(prev, &p) <= -0.5) {
		rd_problem(errs,
		           "%s: sync record at %lld ns (offset %lld ns) "
		           "disagrees with the one before it (offset %lld ns "
		           "at %lld ns); ignored",
		           name, (long long)p.x, (long long)p.off,
		           (long long)prev->off, (long long)prev->x);
		return false;
	}
	k->pts[k->npts++] = p;
	return true;
}

dw_err
mg_clock_from_syncs(mg_clock *k, mg_sync *s, size_t n, const char *name,
                    rd_errlist *errs)
{
	free(k->pts);
	k->npts = 0;
	k->pts = n ? malloc(n * sizeof *k->pts) : NULL;
	if (n && !k->pts)
		return DW_ENOMEM;
	qsort(s, n, sizeof *s, sync_cmp);
	for (size_t i = 0; i < n; i++)
		point_keep(k, &s[i], name, errs);
	clock_slope_out(k);
	return DW_OK;
}

dw_err
mg_clock_borrow(mg_clock *k, const mg_clock *src, int64_t d)
{
	size_t n = src->npts ? src->npts : 1;

	free(k->pts);
	k->pts = malloc(n * sizeof *k->pts);
	if (!k->pts)
		return DW_ENOMEM;
	if (!src->npts)
		k->pts[0] = (mg_point){0, d, 0};
	for (size_t i = 0; i < src->npts; i++)
		k->pts[i] =
		    (mg_point){sub_sat(src->pts[i].x, d),
		               mg_add_sat(src->pts[i].off, d), src->pts[i].rtt};
	k->npts = n;
	clock_slope_out(k);
	return DW_OK;
}

/* The index of the last point at or before x (x within the points). */
static size_t
point_find(const mg_clock *k, int64_t x)
{
	size_t lo = 0, hi = k->npts;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->pts[mid].x <= x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The segment holding x: [lo, hi), its base point and slope. */
static void
off_segment(const mg_clock *k, int64_t x, int64_t *lo, int64_t *hi,
            const mg_point **base, mg_slope *slope)
{
	const mg_point *a = &k->pts[0], *b = &k->pts[k->npts - 1];
	size_t i;

	*slope = k->out;
	if (k->npts == 1) {
		*lo = INT64_MIN, *hi = INT64_MAX, *base = a;
	} else if (x < a->x) {
		*lo = INT64_MIN, *hi = a->x, *base = a;
	} else if (x >= b->x) {
		*lo = b->x, *hi = INT64_MAX, *base = b;
	} else {
		i = point_find(k, x);
		*lo = k->pts[i].x, *hi = k->pts[i + 1].x, *base = &k->pts[i];
		*slope = points_slope(&k->pts[i], &k->pts[i + 1]);
	}
}

/* x as an unsigned number ordered like the signed one. */
static uint64_t
ord(int64_t x)
{
	return (uint64_t)x ^ UINT64_C(1) << 63;
}

int64_t
mg_clock_off(const mg_clock *k, int64_t x)
{
	int64_t lo, hi;
	const mg_point *p;
	mg_slope m;

	if (!k->npts)
		return 0;
	off_segment(k, x, &lo, &hi, &p, &m);
	return along(p->off, ord(p->x), ord(x), &m);
}

/* Outside the points the offset is extrapolated along the slope from
 * the first point to the last, itself uncertain by their two half round
 * trips over the time between them: the bound grows with the distance
 * from the nearer end. */
static int64_t
clock_err_out(const mg_clock *k, int64_t x)
{
	bool after = x > k->pts[k->npts - 1].x;
	const mg_point *a = after ? &k->pts[k->npts - 1] : &k->pts[0];
	const mg_point *b = after ? &k->pts[0] : &k->pts[k->npts - 1];
	double span = (double)(a->x > b->x ? a->x - b->x : b->x - a->x);
	double d = (double)(x > a->x ? x - a->x : a->x - x);
	double e =
	    (double)(a->rtt / 2) +
	    (span > 0 ? d * (double)(a->rtt / 2 + b->rtt / 2) / span : 0);

	return e > (double)INT64_MAX ? INT64_MAX : (int64_t)e;
}

int64_t
mg_clock_err(const mg_clock *k, int64_t x)
{
	size_t i;

	if (k->kind == MG_CLK_REF)
		return 0;
	if (k->kind == MG_CLK_REALTIME || !k->npts)
		return -1;
	/* the points are on the local clock: invert x = local + off(local)
	 * (a few steps; drifts are ppm, the first step is already close) */
	int64_t xl = x;
	for (int it = 0; it < 4; it++)
		xl = x - mg_clock_off(k, xl);
	x = xl;
	/* one sync record measures an offset but no drift: away from it the
	 * bound grows by the largest drift two quartz clocks are specified
	 * to have between them (2 x 100 ppm) */
	if (k->npts == 1) {
		int64_t d = x > k->pts[0].x ? x - k->pts[0].x : k->pts[0].x - x;
		return k->pts[0].rtt / 2 + d / 5000;
	}
	/* between two points the offset is interpolated: a convex mix of
	 * two measurements, each good to half its round trip, so the worse
	 * of the two bounds it (a drift that is linear between them) */
	i = point_find(k, x);
	if (k->npts >= 2 && (x > k->pts[k->npts - 1].x || x < k->pts[0].x))
		return clock_err_out(k, x);
	if (i + 1 < k->npts && x > k->pts[i].x &&
	    k->pts[i + 1].rtt > k->pts[i].rtt)
		return k->pts[i + 1].rtt / 2;
	return k->pts[i].rtt / 2;
}

/* ---- Per-stream conversion --------------------------------------------- */

void
mg_tconv_init(mg_tconv *c, mg_clock *k)
{
	memset(c, 0, sizeof *c);
	c->k = k;
	if (!k->calib.sorted)
		rd_calib_finish(&k->calib, NULL, NULL);
	c->ident = k->calib.clock == FMT_CLOCK_MONO_RAW;
	c->has_off = k->npts > 0;
	c->last = INT64_MIN;
}

static int64_t
ns_of(uint64_t ns)
{
	return ns > INT64_MAX ? INT64_MAX : (int64_t)ns;
}

/* The calibration span holding ticks: rd_calib_to_ns's own line, as a
 * slope for the fast path. */
static void
host_span(const rd_calib *k, uint64_t ticks, rd_pair *base, mg_slope *m,
          uint64_t *end)
{
	rd_span s = rd_calib_span(k, ticks);

	*base = s.base;
	*m = slope_make(false, s.num, s.den);
	*end = s.end;
}

int64_t
mg_tconv_host_slow(mg_tconv *c, uint64_t ticks)
{
	rd_pair base;
	mg_slope m;
	uint64_t end, len;
	int64_t ns;

	if (c->ident) /* beyond the fast range */
		return ns_of(ticks);
	host_span(&c->k->calib, ticks, &base, &m, &end);
	ns = ns_of(base.ns);
	len = fix_len(&m);
	if (ticks >= base.ticks && ns <= MG_SAFE) {
		c->c_lo = base.ticks;
		c->c_len = end - base.ticks < len ? end - base.ticks : len;
		c->c_ns = ns;
		c->c_i = m.i, c->c_f = m.f;
	}
	return along(ns, base.ticks, ticks, &m);
}

int64_t
mg_tconv_off_slow(mg_tconv *c, int64_t x)
{
	int64_t lo, hi;
	const mg_point *p;
	mg_slope m;
	uint64_t len;

	off_segment(c->k, x, &lo, &hi, &p, &m);
	len = fix_len(&m);
	if (x >= p->x && p->off >= -MG_SAFE && p->off <= MG_SAFE &&
	    x <= MG_SAFE && p->x >= -MG_SAFE) {
		c->o_lo = p->x;
		c->o_len = (uint64_t)hi - (uint64_t)p->x < len
		               ? (uint64_t)hi - (uint64_t)p->x
		               : len;
		c->o_off = p->off;
		c->o_i = m.i, c->o_f = m.f, c->o_neg = m.neg;
	}
	return along(p->off, ord(p->x), ord(x), &m);
}
