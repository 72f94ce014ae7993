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

/* {int ms}: sleeps; its result is the sleep as measured (int64 us). */
static int
sleep_ms(const void *arg, size_t len, dw_reply *r)
{
	int ms = 0;
	if (len == sizeof ms)
		memcpy(&ms, arg, sizeof ms);
	int64_t t0 = mono_us();
	usleep((useconds_t)ms * 1000u);
	int64_t took = mono_us() - t0;
	return dw_reply_set(r, &took, sizeof took);
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

/* Appends one round to DIR/rounds: its wall time and the measured
 * sleep of its H and S workers (us; -1 when it had none). */
static void
live_round_note(const char *dir, int64_t wall, int64_t h, int64_t s)
{
	char p[700];
	snprintf(p, sizeof p, "%s/rounds", dir);
	FILE *f = fopen(p, "a");
	if (!f)
		return;
	fprintf(f, "%lld %lld %lld\n", (long long)wall, (long long)h,
	        (long long)s);
	fclose(f);
}

/* The useful fractions of an H and an S worker over the last rounds
 * (the figure covers the last heartbeat interval, up to one old: two to
 * four rounds of 250 ms). */
static void
live_recent_fractions(const char *dir, double *fh, double *fs)
{
	enum { LAST = 8 };
	char p[700];
	long long w[LAST] = {0}, h[LAST] = {0}, sl[LAST] = {0};
	long long a, b, c;
	int n = 0;
	snprintf(p, sizeof p, "%s/rounds", dir);
	FILE *f = fopen(p, "r");
	REQUIRE(f != NULL);
	while (fscanf(f, "%lld %lld %lld", &a, &b, &c) == 3) {
		w[n % LAST] = a, h[n % LAST] = b, sl[n % LAST] = c;
		n++;
	}
	fclose(f);
	long long sw = 0, sh = 0, ss = 0;
	for (int i = 0; i < LAST && i < n; i++)
		if (h[i] >= 0 && sl[i] >= 0)
			sw += w[i], sh += h[i], ss += sl[i];
	REQUIRE(sw > 0);
	*fh = (double)sh / (double)sw;
	*fs = (double)ss / (double)sw;
}

#endif
