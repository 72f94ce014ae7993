/*
 * What the live tests (live_top, live_hosts) share: workers that sleep
 * and return the time their sleep measured ("solid" for a whole round,
 * "half" for half of it), and the rounds file in which the master notes
 * each round's wall time and sleeps, from which the useful fractions
 * `dwork top` must show are computed (a loaded machine makes sleeps and
 * rounds longer; the known answer is what they took).
 */
#ifndef DW_LIVE_UTIL_H
#define DW_LIVE_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dwork/dwork.h>

#include "testutil.h"

static int64_t
mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* {int ms}: sleeps; its result is {int64 t0, t1}: when the sleep began
 * and ended as it measured them (CLOCK_MONOTONIC us, which every
 * process of a test shares: one host's clock, whatever its namespaces). */
static int
sleep_ms(const void *arg, size_t len, dw_reply *r)
{
	int ms = 0;
	if (len == sizeof ms)
		memcpy(&ms, arg, sizeof ms);
	int64_t t[2] = {mono_us(), 0};
	usleep((useconds_t)ms * 1000u);
	t[1] = mono_us();
	return dw_reply_set(r, t, sizeof t);
}

static int
solid(const void *arg, size_t len, dw_reply *r)
{
	return sleep_ms(arg, len, r);
}
DW_REGISTER(solid)

static int
half(const void *arg, size_t len, dw_reply *r)
{
	return sleep_ms(arg, len, r);
}
DW_REGISTER(half)

/* The sleep of a solid/half result, as measured: its begin and end
 * (us), and the length as the return; -1 when res is not one. */
static int64_t
live_nap_of(const void *res, size_t n, int64_t *t0, int64_t *t1)
{
	int64_t t[2];
	if (n != sizeof t)
		return -1;
	memcpy(t, res, sizeof t);
	*t0 = t[0], *t1 = t[1];
	return t[1] - t[0];
}

/* Appends worker id's sleep [t0, t1] (us) to DIR/naps. */
static void
live_nap_note(const char *dir, int id, int64_t t0, int64_t t1)
{
	char p[700];
	snprintf(p, sizeof p, "%s/naps", dir);
	FILE *f = fopen(p, "a");
	if (!f)
		return;
	fprintf(f, "%d %lld %lld\n", id, (long long)t0, (long long)t1);
	fclose(f);
}

struct live_naps {
	int n;
	int64_t t0[4096], t1[4096];
};

/* Worker id's sleeps from DIR/naps (in the order they were noted). */
static void
live_naps_read(const char *dir, int id, struct live_naps *z)
{
	char p[700];
	long long a, b;
	int w;
	snprintf(p, sizeof p, "%s/naps", dir);
	FILE *f = fopen(p, "r");
	REQUIRE(f != NULL);
	z->n = 0;
	while (z->n < 4096 && fscanf(f, "%d %lld %lld", &w, &a, &b) == 3)
		if (w == id)
			z->t0[z->n] = a, z->t1[z->n++] = b;
	fclose(f);
}

/* The part of [a, b] that z's sleeps cover, in us. */
static int64_t
live_naps_in(const struct live_naps *z, int64_t a, int64_t b)
{
	int64_t c = 0;
	for (int i = 0; i < z->n; i++) {
		int64_t lo = z->t0[i] > a ? z->t0[i] : a;
		int64_t hi = z->t1[i] < b ? z->t1[i] : b;
		c += hi > lo ? hi - lo : 0;
	}
	return c;
}

/* What `dwork top` showed of a worker mid-run: its useful fraction, the
 * span it covers, how old it was, and the test's clock when it began
 * waiting for steady rounds (from), before the snapshot and after it. */
struct live_seen {
	int id;
	double useful, interval_ms, age_ms;
	int64_t from, before, now;
};

/* What a STATS frame is allowed to have spent between the worker and
 * the master's table (us): the longest frame delay seen at load 10-20
 * was 74 ms, the call in pop_real's trace. */
#define LIVE_MAX_TRANSIT_US 500000

/*
 * The known answer of a live_seen, once the master has ended (the sleeps
 * still running at the snapshot are in DIR/naps only then).  The
 * fraction covers the worker's last interval (interval_ms), which ended
 * when its figures were taken: at most age_ms before the snapshot,
 * which came before `now`; at least that and LIVE_MAX_TRANSIT_US before
 * `before`, after its first sleep and after `from` + the span.  The
 * test knows no more of that end, so the known answer is the range of
 * what worker id's sleeps cover of any span of that length ending in
 * that time: *lo and *hi.  Rounds of equal length make it narrow; a
 * loaded machine makes rounds uneven (and an interval as short as 450
 * ms of rounds of 250) and it widens as they were measured.  (The
 * fraction is piecewise linear in the end, so its extremes lie at the
 * ends of that time or where a sleep's edge meets an edge of the span.)
 */
static void
live_known_range(const char *dir, const struct live_seen *w, double *lo,
                 double *hi)
{
	static struct live_naps z;
	live_naps_read(dir, w->id, &z);
	REQUIRE(z.n > 0);
	int64_t L = (int64_t)(w->interval_ms * 1000 + 0.5);
	int64_t ehi = w->now - (int64_t)((w->age_ms - 1) * 1000);
	int64_t elo = (z.t0[0] > w->from ? z.t0[0] : w->from) + L;
	int64_t late =
	    w->before - (int64_t)(w->age_ms * 1000) - LIVE_MAX_TRANSIT_US;
	elo = late > elo ? late : elo;
	elo = elo < ehi ? elo : ehi;
	*lo = 1, *hi = 0;
	for (int i = 0; i < 4 * z.n + 2; i++) {
		int64_t e =
		    i == 4 * z.n ? elo
		    : i == 4 * z.n + 1
		        ? ehi
		        : (i & 1 ? z.t1[i / 4] : z.t0[i / 4]) + (i & 2 ? L : 0);
		if (e < elo || e > ehi)
			continue;
		double f = (double)live_naps_in(&z, e - L, e) / (double)L;
		*lo = f < *lo ? f : *lo;
		*hi = f > *hi ? f : *hi;
	}
}

/* The accounting's Running around a sleep (the call's entry and reply
 * in the function), against the sleep's own clock reads. */
#define LIVE_FRACTION_SLACK 0.01

/* Checks what top showed of n workers against their sleeps (once the
 * master has ended), printing each under label; one with useful -1 and
 * no interval was not in the snapshot (checked there). */
static void
live_check_seen(const char *dir, const char *label, const struct live_seen *w,
                int n)
{
	for (int i = 0; i < n; i++) {
		double lo, hi, u = w[i].useful;
		if (u < 0 && w[i].interval_ms == 0)
			continue; /* not in the snapshot: that check failed */
		CHECK(w[i].interval_ms > 0);
		if (w[i].interval_ms <= 0)
			continue;
		live_known_range(dir, &w[i], &lo, &hi);
		printf("%s: worker %d useful %.3f over %.1f ms, %.0f ms old "
		       "(its sleeps: %.3f .. %.3f)\n",
		       label, w[i].id, u, w[i].interval_ms, w[i].age_ms, lo,
		       hi);
		CHECK(u > lo - LIVE_FRACTION_SLACK &&
		      u < hi + LIVE_FRACTION_SLACK && u <= 1.001);
	}
}

#endif
