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
	return ((double)b->off - (double)a->off) / ((double)b->x - (double)a->x);
}

static void
clock_slope_out(mg_clock *k)
{
	k->slope_out = k->npts >= 2 ? point_slope(&k->pts[0], &k->pts[k->npts - 1])
	                            : 0.0;
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
		mg_problem(errs,
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
		k->pts[i] = (mg_point){src->pts[i].x - d, src->pts[i].off + d,
		                       src->pts[i].rtt};
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

static int64_t
sub_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return a > b ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t
along(int64_t off, int64_t x0, int64_t x, double slope)
{
	return mg_add_sat(off, mg_round((double)sub_sat(x, x0) * slope));
}

/* The segment holding x: [lo, hi), its base point and slope. */
static void
off_segment(const mg_clock *k, int64_t x, int64_t *lo, int64_t *hi,
            const mg_point **base, double *slope)
{
	const mg_point *a = &k->pts[0], *b = &k->pts[k->npts - 1];
	size_t i;

	*slope = k->slope_out;
	if (k->npts == 1) {
		*lo = INT64_MIN, *hi = INT64_MAX, *base = a;
	} else if (x < a->x) {
		*lo = INT64_MIN, *hi = a->x, *base = a;
	} else if (x >= b->x) {
		*lo = b->x, *hi = INT64_MAX, *base = b;
	} else {
		i = point_find(k, x);
		*lo = k->pts[i].x, *hi = k->pts[i + 1].x, *base = &k->pts[i];
		*slope = point_slope(&k->pts[i], &k->pts[i + 1]);
	}
}

int64_t
mg_clock_off(const mg_clock *k, int64_t x)
{
	int64_t lo, hi;
	const mg_point *p;
	double slope;

	if (!k->npts)
		return 0;
	off_segment(k, x, &lo, &hi, &p, &slope);
	return along(p->off, p->x, x, slope);
}

int64_t
mg_clock_err(const mg_clock *k, int64_t x)
{
	size_t i;

	if (k->kind == MG_CLK_REF)
		return 0;
	if (k->kind == MG_CLK_REALTIME || !k->npts)
		return -1;
	i = point_find(k, x);
	if (i + 1 < k->npts && k->pts[i + 1].x - x < x - k->pts[i].x)
		i++;
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

static double
pair_slope(const rd_pair *a, const rd_pair *b)
{
	return ((double)b->ns - (double)a->ns) /
	       ((double)b->ticks - (double)a->ticks);
}

/* How far from a base the fast path may go with this slope. */
static uint64_t
safe_len(uint64_t len, double slope)
{
	double a = slope < 0 ? -slope : slope;
	double max = a > 1 ? (double)MG_SAFE / a : (double)MG_SAFE;

	return (double)len < max ? len : (uint64_t)max;
}

/* The calibration span holding ticks (as rd_calib_to_ns): its base
 * pair, its slope and its end (exclusive; UINT64_MAX: none). */
static void
host_span(const rd_calib *k, uint64_t ticks, rd_pair *base, double *slope,
          uint64_t *end)
{
	const rd_pair *a = k->n ? &k->pairs[0] : NULL, *b;
	size_t lo = 0, hi = k->n;

	*end = UINT64_MAX;
	if (k->n <= 1) {
		*base = a ? *a : (rd_pair){0, 0};
		*slope = k->ticks_per_s ? 1e9 / (double)k->ticks_per_s : 1.0;
		return;
	}
	b = &k->pairs[k->n - 1];
	*slope = pair_slope(a, b);
	if (ticks < a->ticks || ticks >= b->ticks) {
		*base = ticks < a->ticks ? *a : *b;
		return;
	}
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->pairs[mid].ticks <= ticks)
			lo = mid;
		else
			hi = mid;
	}
	*base = k->pairs[lo];
	*end = k->pairs[lo + 1].ticks;
	*slope = pair_slope(&k->pairs[lo], &k->pairs[lo + 1]);
}

int64_t
mg_tconv_host_slow(mg_tconv *c, uint64_t ticks)
{
	rd_pair base;
	double slope, d;
	uint64_t end;
	int64_t ns;

	if (c->ident) /* beyond the fast range */
		return ns_of(ticks);
	host_span(&c->k->calib, ticks, &base, &slope, &end);
	ns = ns_of(base.ns);
	d = ticks >= base.ticks ? (double)(ticks - base.ticks)
	                        : -(double)(base.ticks - ticks);
	if (ticks >= base.ticks && ns >= -MG_SAFE && ns <= MG_SAFE) {
		c->c_lo = base.ticks;
		c->c_len = safe_len(end - base.ticks, slope);
		c->c_ns = ns;
		c->c_slope = slope;
	}
	return mg_add_sat(ns, mg_round(d * slope));
}

int64_t
mg_tconv_off_slow(mg_tconv *c, int64_t x)
{
	int64_t lo, hi;
	const mg_point *p;
	double slope;

	off_segment(c->k, x, &lo, &hi, &p, &slope);
	if (x >= p->x && p->off >= -MG_SAFE && p->off <= MG_SAFE &&
	    x <= MG_SAFE && p->x >= -MG_SAFE) {
		c->o_lo = p->x;
		c->o_len = safe_len((uint64_t)hi - (uint64_t)p->x, slope);
		c->o_off = p->off;
		c->o_slope = slope;
	}
	return along(p->off, p->x, x, slope);
}

/* ---- Every process's correction -------------------------------------- */

static const mg_proc *
proc_of_task(const mg_ctx *c, uint32_t task)
{
	for (size_t i = 0; i < c->nprocs; i++)
		if (!c->procs[i].skip && c->procs[i].task == task)
			return &c->procs[i];
	return NULL;
}

/* The reference host: task 0's, else the lowest task's. */
static const char *
ref_host(const mg_ctx *c)
{
	const mg_proc *p = proc_of_task(c, 0);

	for (size_t i = 0; !p && i < c->nprocs; i++)
		if (!c->procs[i].skip)
			p = &c->procs[i];
	return p ? p->hdr.host : "";
}

/* Sync records against task R != 0: add R's own offset at that time. */
static void
compose_refs(mg_ctx *c, mg_proc *p)
{
	bool told = false;

	for (size_t i = 0; i < p->nsyncs; i++) {
		mg_sync *s = &p->syncs[i];
		const mg_proc *r;

		if (s->ref == 0)
			continue;
		r = proc_of_task(c, s->ref);
		if (r && r != p) {
			s->offset += mg_clock_off(&r->clk, s->local + s->offset);
		} else if (!told) {
			mg_problem(c->errs,
			           "%s: sync records against task %u, which has "
			           "no clock of its own in the trace; taken as "
			           "the reference",
			           p->name, s->ref);
			told = true;
		}
	}
}

static dw_err
setup_synced(mg_ctx *c)
{
	dw_err err = DW_OK;

	for (size_t i = 0; err == DW_OK && i < c->nprocs; i++) {
		mg_proc *p = &c->procs[i];

		if (p->skip || !p->nsyncs)
			continue;
		err = mg_clock_from_syncs(&p->clk, p->syncs, p->nsyncs, p->name,
		                          c->errs);
		p->clk.kind = MG_CLK_SYNC;
	}
	for (size_t i = 0; err == DW_OK && i < c->nprocs; i++) {
		mg_proc *p = &c->procs[i];

		if (p->skip || !p->nsyncs)
			continue;
		compose_refs(c, p);
	}
	for (size_t i = 0; err == DW_OK && i < c->nprocs; i++) {
		mg_proc *p = &c->procs[i];

		if (!p->skip && p->nsyncs)
			err = mg_clock_from_syncs(&p->clk, p->syncs, p->nsyncs,
			                          p->name, NULL);
	}
	return err;
}

/* The process of host with the most sync points, or NULL. */
static const mg_proc *
host_rep(const mg_ctx *c, const char *host)
{
	const mg_proc *best = NULL;

	for (size_t i = 0; i < c->nprocs; i++) {
		const mg_proc *p = &c->procs[i];

		if (p->skip || p->clk.kind != MG_CLK_SYNC ||
		    strcmp(p->hdr.host, host))
			continue;
		if (!best || p->clk.npts > best->clk.npts)
			best = p;
	}
	return best;
}

/* A process whose clock is known without real time: anchors the rest. */
static const mg_proc *
anchor(const mg_ctx *c, const char *ref)
{
	const mg_proc *p = proc_of_task(c, 0);

	if (p && !strcmp(p->hdr.host, ref) && p->clk.kind != MG_CLK_SYNC)
		return p;
	for (size_t i = 0; i < c->nprocs; i++) {
		p = &c->procs[i];
		if (!p->skip && p->clk.kind == MG_CLK_REF &&
		    !strcmp(p->hdr.host, ref))
			return p;
	}
	for (size_t i = 0; i < c->nprocs; i++)
		if (!c->procs[i].skip && c->procs[i].clk.kind == MG_CLK_SYNC)
			return &c->procs[i];
	return NULL;
}

static bool
host_told(const mg_ctx *c, const mg_proc *p)
{
	for (const mg_proc *q = c->procs; q < p; q++)
		if (!q->skip && q->clk.kind == MG_CLK_REALTIME &&
		    !strcmp(q->hdr.host, p->hdr.host))
			return true;
	return false;
}

static dw_err
setup_realtime(mg_ctx *c, mg_proc *p, const mg_proc *a)
{
	int64_t d = 0;

	if (a && a != p && p->hdr.init_real_ns && a->hdr.init_real_ns)
		d = ((int64_t)p->hdr.init_real_ns - (int64_t)p->hdr.init_ns) -
		    ((int64_t)a->hdr.init_real_ns - (int64_t)a->hdr.init_ns);
	if (!host_told(c, p)) {
		mg_problem(c->errs,
		           "host %s: no clock sync records for its processes; "
		           "aligned with the reference host by CLOCK_REALTIME "
		           "(good to NTP's accuracy)",
		           p->hdr.host[0] ? p->hdr.host : "(unnamed)");
		c->rep.hosts_unsynced++;
	}
	p->clk.kind = MG_CLK_REALTIME;
	return a && a != p ? mg_clock_borrow(&p->clk, &a->clk, d) : DW_OK;
}

static dw_err
setup_unsynced(mg_ctx *c, mg_proc *p, const char *ref)
{
	const mg_proc *r;

	if (!strcmp(p->hdr.host, ref)) {
		p->clk.kind = MG_CLK_REF;
		return DW_OK;
	}
	r = host_rep(c, p->hdr.host);
	if (r) {
		p->clk.kind = MG_CLK_HOST;
		return mg_clock_borrow(&p->clk, &r->clk, 0);
	}
	return setup_realtime(c, p, anchor(c, ref));
}

dw_err
clocks_setup(mg_ctx *c)
{
	const char *ref = ref_host(c);
	dw_err err = setup_synced(c);

	for (size_t i = 0; i < c->nprocs; i++) {
		mg_proc *p = &c->procs[i];

		if (!p->skip && !p->nsyncs)
			p->clk.kind = MG_CLK_REF;
	}
	/* Decide the unsynced ones after every synced one is known, and
	 * the real-time ones last (they may borrow a host's clock). */
	for (int pass = 0; err == DW_OK && pass < 2; pass++) {
		for (size_t i = 0; err == DW_OK && i < c->nprocs; i++) {
			mg_proc *p = &c->procs[i];
			bool here = !strcmp(p->hdr.host, ref) ||
			            host_rep(c, p->hdr.host);

			if (p->skip || p->nsyncs || here != (pass == 0))
				continue;
			err = setup_unsynced(c, p, ref);
		}
	}
	return err;
}
