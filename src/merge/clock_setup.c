/*
 * Every process's correction, once the scan is done (merge.md, Clocks).
 *
 * Processes that share a clock — one host name, one boot, no test skew —
 * are put on one timeline by construction: their ticks go through one
 * calibration line fitted to all their pairs, so the same tick is the
 * same nanosecond in each of them, and they share one offset curve made
 * from all their sync records.  On task 0's clock there is no offset at
 * all, whatever sync records say: a ping-pong over a socket is good to
 * microseconds, the shared TSC to nanoseconds.
 */
#include <stdlib.h>
#include <string.h>

#include "merge/mg_int.h"

bool
mg_same_clock(const mg_proc *a, const mg_proc *b)
{
	if (a == b)
		return true;
	if ((a->hdr.flags | b->hdr.flags) & FMT_FLAG_OWN_CLOCK)
		return false;
	if (strcmp(a->hdr.host, b->hdr.host))
		return false;
	/* before format 1.1 there is no boot id: the name alone */
	return !a->hdr.boot_id[0] || !b->hdr.boot_id[0] ||
	       !strcmp(a->hdr.boot_id, b->hdr.boot_id);
}

static bool
live(const mg_proc *p)
{
	return !p->skip;
}

static const mg_proc *
proc_of_task(const mg_ctx *c, uint32_t task)
{
	for (size_t i = 0; i < c->nprocs; i++)
		if (live(&c->procs[i]) && c->procs[i].task == task)
			return &c->procs[i];
	return NULL;
}

/* The reference clock: task 0's, else the lowest task's. */
static const mg_proc *
ref_proc(const mg_ctx *c)
{
	const mg_proc *p = proc_of_task(c, 0);

	for (size_t i = 0; !p && i < c->nprocs; i++)
		if (live(&c->procs[i]))
			p = &c->procs[i];
	return p;
}

/* The first live process that shares p's clock (the group's leader). */
static const mg_proc *
leader(const mg_ctx *c, const mg_proc *p)
{
	(void)c;
	return p->clock_lead;
}

void
clocks_group(mg_ctx *c)
{
	const mg_proc *one = NULL;

	c->clocks_many = false;
	for (size_t i = 0; i < c->nprocs; i++) {
		mg_proc *p = &c->procs[i];

		p->clock_lead = p;
		for (size_t j = 0; live(p) && j < i; j++)
			if (live(&c->procs[j]) &&
			    mg_same_clock(&c->procs[j], p)) {
				p->clock_lead = c->procs[j].clock_lead;
				break;
			}
		if (live(p) && one && p->clock_lead != one)
			c->clocks_many = true;
		if (live(p) && !one)
			one = p->clock_lead;
	}
}

/* ---- One calibration line per shared TSC ------------------------------- */

typedef struct fit {
	uint64_t t0; /* ticks are taken from here */
	long double a, b;
} fit;

static long double
fit_at(const fit *f, uint64_t t)
{
	return f->a + f->b * ((long double)t - (long double)f->t0);
}

/* Least squares over the pairs not dropped; false with < 2 ticks. */
static bool
fit_pairs(const rd_pair *v, size_t n, const bool *drop, fit *f)
{
	long double st = 0, sn = 0, stt = 0, stn = 0, k = 0, d;

	for (size_t i = 0; i < n; i++) {
		long double t = (long double)(v[i].ticks - f->t0);
		long double y = (long double)v[i].ns;

		if (drop && drop[i])
			continue;
		st += t, sn += y, stt += t * t, stn += t * y, k++;
	}
	d = k * stt - st * st;
	if (k < 2 || d <= 0)
		return false;
	f->b = (k * stn - st * sn) / d;
	f->a = (sn - f->b * st) / k;
	return true;
}

static int
ld_cmp(const void *a, const void *b)
{
	long double x = *(const long double *)a, y = *(const long double *)b;

	return x < y ? -1 : x > y;
}

/*
 * A pair taken while its thread was preempted is off by up to the
 * preemption; drop the pairs far from the first fit (six times the
 * median residual, at least 20 ns) and fit again.
 */
static bool
fit_robust(const rd_pair *v, size_t n, fit *f)
{
	long double *r = malloc(n * sizeof *r), thr;
	bool *drop = calloc(n, sizeof *drop), ok;

	f->t0 = v[0].ticks;
	ok = r && drop && fit_pairs(v, n, NULL, f);
	if (ok && n > 2) {
		for (size_t i = 0; i < n; i++) {
			r[i] = fit_at(f, v[i].ticks) - (long double)v[i].ns;
			r[i] = r[i] < 0 ? -r[i] : r[i];
		}
		for (size_t i = 0; i < n; i++)
			drop[i] = false;
		qsort(r, n, sizeof *r, ld_cmp);
		thr = 6 * r[n / 2] > 20 ? 6 * r[n / 2] : 20;
		for (size_t i = 0; i < n; i++) {
			long double e = fit_at(f, v[i].ticks) - v[i].ns;

			drop[i] = (e < 0 ? -e : e) > thr;
		}
		fit_pairs(v, n, drop, f); /* keeps the first fit if it fails */
	}
	free(r);
	free(drop);
	return ok;
}

static bool
tsc_member(const mg_proc *p, const mg_proc *lead, const mg_ctx *c)
{
	return live(p) && p->clk.calib.clock == FMT_CLOCK_TSC &&
	       leader(c, p) == lead;
}

/* Every pair of the TSC processes of lead's clock, sorted. */
static dw_err
group_pairs(mg_ctx *c, const mg_proc *lead, rd_pair **out, size_t *n)
{
	size_t k = 0;
	rd_pair *v;

	*n = 0;
	for (size_t i = 0; i < c->nprocs; i++)
		if (tsc_member(&c->procs[i], lead, c))
			k += c->procs[i].clk.calib.n;
	v = malloc((k ? k : 1) * sizeof *v);
	if (!v)
		return DW_ENOMEM;
	for (size_t i = 0; i < c->nprocs; i++) {
		const rd_calib *k2 = &c->procs[i].clk.calib;

		if (!tsc_member(&c->procs[i], lead, c))
			continue;
		if (k2->n)
			memcpy(v + *n, k2->pairs, k2->n * sizeof *v);
		*n += k2->n;
	}
	*out = v;
	return DW_OK;
}

static uint64_t
ns_round(long double x)
{
	/* a fit of damaged pairs can land anywhere: saturate */
	if (!(x > 0))
		return 0;
	if (x >= 18446744073709549568.0L) /* 2^64 - 2048 */
		return UINT64_MAX;
	return (uint64_t)(x + 0.5L);
}

/* Every TSC process of lead's clock gets the same two-pair line. */
static dw_err
group_line(mg_ctx *c, const mg_proc *lead)
{
	rd_pair *v = NULL, lo, hi;
	size_t n;
	fit f;
	dw_err err = group_pairs(c, lead, &v, &n);

	if (err != DW_OK || n < 2)
		goto out;
	lo = v[0], hi = v[0];
	for (size_t i = 1; i < n; i++) {
		lo = v[i].ticks < lo.ticks ? v[i] : lo;
		hi = v[i].ticks > hi.ticks ? v[i] : hi;
	}
	if (lo.ticks == hi.ticks || !fit_robust(v, n, &f) || f.b <= 0)
		goto out;
	lo.ns = ns_round(fit_at(&f, lo.ticks));
	hi.ns = ns_round(fit_at(&f, hi.ticks));
	for (size_t i = 0; err == DW_OK && i < c->nprocs; i++) {
		rd_calib *k = &c->procs[i].clk.calib;

		if (!tsc_member(&c->procs[i], lead, c))
			continue;
		rd_calib_free(k);
		err = rd_calib_add(k, lo.ticks, lo.ns);
		if (err == DW_OK)
			err = rd_calib_add(k, hi.ticks, hi.ns);
		if (err == DW_OK)
			rd_calib_finish(k, NULL, NULL);
	}
out:
	free(v);
	return err;
}

static dw_err
fit_lines(mg_ctx *c)
{
	dw_err err = DW_OK;

	for (size_t i = 0; err == DW_OK && i < c->nprocs; i++) {
		const mg_proc *p = &c->procs[i];

		if (live(p) && leader(c, p) == p)
			err = group_line(c, p);
	}
	return err;
}

/* ---- One offset curve per clock ---------------------------------------- */

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
		if (r && !mg_same_clock(r, p)) {
			s->offset +=
			    mg_clock_off(&r->clk, s->local + s->offset);
		} else if (!told) {
			rd_problem(
			    c->errs,
			    "%s: sync records against task %u, which has "
			    "no clock of its own in the trace; taken as "
			    "the reference",
			    p->name, s->ref);
			told = true;
		}
	}
}

static bool
member(const mg_ctx *c, const mg_proc *p, const mg_proc *lead)
{
	return live(p) && leader(c, p) == lead;
}

/* The sync records of every process of lead's clock, in one array. */
static dw_err
group_syncs(mg_ctx *c, const mg_proc *lead, mg_sync **out, size_t *n)
{
	size_t k = 0;
	mg_sync *v = NULL;

	*n = 0;
	for (size_t i = 0; i < c->nprocs; i++)
		if (member(c, &c->procs[i], lead))
			k += c->procs[i].nsyncs;
	v = malloc((k ? k : 1) * sizeof *v);
	if (!v)
		return DW_ENOMEM;
	for (size_t i = 0; i < c->nprocs; i++) {
		const mg_proc *p = &c->procs[i];

		if (!member(c, p, lead))
			continue;
		if (p->nsyncs)
			memcpy(v + *n, p->syncs, p->nsyncs * sizeof *v);
		*n += p->nsyncs;
	}
	*out = v;
	return DW_OK;
}

/* lead's clock gets the curve of all its sync records, every member a
 * copy of it.  Returns how many records there were (or an error). */
static dw_err
group_curve(mg_ctx *c, mg_proc *lead, rd_errlist *errs, size_t *nsyncs)
{
	mg_sync *v = NULL;
	dw_err err = group_syncs(c, lead, &v, nsyncs);

	if (err == DW_OK && *nsyncs)
		err = mg_clock_from_syncs(&lead->clk, v, *nsyncs, lead->name,
		                          errs);
	free(v);
	for (size_t i = 0; err == DW_OK && *nsyncs && i < c->nprocs; i++) {
		mg_proc *p = &c->procs[i];

		if (!member(c, p, lead))
			continue;
		if (p != lead)
			err = mg_clock_borrow(&p->clk, &lead->clk, 0);
		p->clk.kind = MG_CLK_SYNC;
	}
	return err;
}

/* Pass 0: each clock's own records; 1: composed with their references'
 * curves, problems reported. */
static dw_err
curves(mg_ctx *c, const mg_proc *ref, int pass)
{
	dw_err err = DW_OK;
	size_t n;

	for (size_t i = 0; pass && i < c->nprocs; i++)
		if (live(&c->procs[i]) && !mg_same_clock(&c->procs[i], ref))
			compose_refs(c, &c->procs[i]);
	for (size_t i = 0; err == DW_OK && i < c->nprocs; i++) {
		mg_proc *p = &c->procs[i];

		if (live(p) && leader(c, p) == p && !mg_same_clock(p, ref))
			err = group_curve(c, p, pass ? c->errs : NULL, &n);
	}
	return err;
}

/* ---- Clocks nothing measured -------------------------------------------- */

/* A process whose clock is known without real time: anchors the rest. */
static const mg_proc *
anchor(const mg_ctx *c, const mg_proc *ref)
{
	for (size_t i = 0; i < c->nprocs; i++) {
		const mg_proc *p = &c->procs[i];

		if (live(p) && mg_same_clock(p, ref))
			return p;
	}
	for (size_t i = 0; i < c->nprocs; i++)
		if (live(&c->procs[i]) && c->procs[i].clk.kind == MG_CLK_SYNC)
			return &c->procs[i];
	return NULL;
}

/* Real-time offsets beyond this (146 years of ns) come from a damaged
 * header, not from two hosts' clocks: aligning by them is refused. */
#define REALTIME_D_MAX ((int64_t)1 << 62)

/* The offset of lead's clock from a's through CLOCK_REALTIME; 0 when
 * either header has no usable real time (absent, or so far off that
 * the arithmetic would overflow). */
static int64_t
realtime_d(const mg_proc *lead, const mg_proc *a)
{
	int64_t bl, ba, d;

	if (!a || a == lead || !lead->hdr.init_real_ns || !a->hdr.init_real_ns)
		return 0;
	if (__builtin_sub_overflow((int64_t)lead->hdr.init_real_ns,
	                           (int64_t)lead->hdr.init_ns, &bl) ||
	    __builtin_sub_overflow((int64_t)a->hdr.init_real_ns,
	                           (int64_t)a->hdr.init_ns, &ba) ||
	    __builtin_sub_overflow(bl, ba, &d) || d > REALTIME_D_MAX ||
	    d < -REALTIME_D_MAX)
		return 0;
	return d;
}

/* Every member of lead's clock (no sync record at all) aligned with the
 * anchor through real time, by one offset so they stay together. */
static dw_err
group_realtime(mg_ctx *c, const mg_proc *lead, const mg_proc *a)
{
	int64_t d = realtime_d(lead, a);
	dw_err err = DW_OK;

	rd_problem(c->errs,
	           "host %s: no clock sync records for its processes; "
	           "aligned with the reference host by CLOCK_REALTIME "
	           "(good to NTP's accuracy)",
	           lead->hdr.host[0] ? lead->hdr.host : "(unnamed)");
	c->rep.hosts_unsynced++;
	for (size_t i = 0; err == DW_OK && i < c->nprocs; i++) {
		mg_proc *p = &c->procs[i];

		if (!member(c, p, lead))
			continue;
		p->clk.kind = MG_CLK_REALTIME;
		if (a && !mg_same_clock(a, p))
			err = mg_clock_borrow(&p->clk, &a->clk, d);
	}
	return err;
}

static dw_err
unmeasured(mg_ctx *c, const mg_proc *ref)
{
	const mg_proc *a = anchor(c, ref);
	dw_err err = DW_OK;

	for (size_t i = 0; err == DW_OK && i < c->nprocs; i++) {
		const mg_proc *p = &c->procs[i];

		if (live(p) && leader(c, p) == p && !mg_same_clock(p, ref) &&
		    p->clk.kind == MG_CLK_REF)
			err = group_realtime(c, p, a);
	}
	return err;
}

/*
 * On one clock a ping-pong offset is within half its round trip of 0 by
 * construction (the reply was read between the two reads of the same
 * clock).  One that is not says the files name one host for two.
 */
static void
check_shared(mg_ctx *c, const mg_proc *p)
{
	int64_t worst = 0;

	for (size_t i = 0; i < p->nsyncs; i++) {
		const mg_sync *s = &p->syncs[i];
		int64_t o = s->offset < 0 ? -s->offset : s->offset;

		if (s->ref == 0 && o > (int64_t)(s->rtt / 2) + 100 && o > worst)
			worst = o;
	}
	if (worst)
		rd_problem(
		    c->errs,
		    "%s: shares task 0's host and boot but its sync "
		    "records say its clock is %lld ns off, more than half "
		    "their round trip: are the host names or boot ids "
		    "right?",
		    p->name, (long long)worst);
}

dw_err
clocks_setup(mg_ctx *c)
{
	const mg_proc *ref = ref_proc(c);
	dw_err err;

	if (!ref)
		return DW_OK;
	clocks_group(c);
	err = fit_lines(c);
	for (size_t i = 0; i < c->nprocs; i++) {
		c->procs[i].clk.kind = MG_CLK_REF;
		if (live(&c->procs[i]) &&
		    c->procs[i].clock_lead == ref->clock_lead)
			check_shared(c, &c->procs[i]);
	}
	for (int pass = 0; err == DW_OK && pass < 2; pass++)
		err = curves(c, ref, pass);
	if (err == DW_OK)
		err = unmeasured(c, ref);
	return err;
}
