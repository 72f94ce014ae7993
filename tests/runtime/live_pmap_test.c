/*
 * A real pmap's live figures against the known answer: one worker runs
 * 400 items that sleep 500 us and return the sleep as they measured it;
 * the worker's figures, asked for before and after (live_refresh), must
 * show exactly 400 calls served and a useful time of the items' sleeps
 * (at least their sum less 2% and 2 ms — 5% and 5 ms under the
 * sanitizers —, at most their sum and 40 us an item, 2% and 2 ms more:
 * the items' own steps around the sleep and the estimate of the gaps).  The
 * worker samples its items (DWORK_ACCOUNT_SAMPLE_US=200000, inherited: most
 * items run untimed, live.h "Batches"); with --exact it times every item.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dwork/dwork.h>

#include "runtime/live.h"
#include "testutil.h"

#define ITEMS    400
#define SLEEP_US 500

static int64_t
mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
nap(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len;
	int64_t t0 = mono_ns();
	usleep(SLEEP_US);
	int64_t took = mono_ns() - t0;
	return dw_reply_set(r, &took, sizeof took);
}
DW_REGISTER(nap)

/* The worker's useful ns and calls served, as it tells them now. */
static void
figures(int id, uint64_t *useful, uint64_t *served)
{
	live_refresh(5000);
	struct live_fig f[4];
	size_t n = live_figs_all(f, 4);
	*useful = UINT64_MAX;
	for (size_t i = 0; i < n; i++)
		if (f[i].id == id)
			*useful = f[i].useful;
	size_t len;
	char *j = live_snapshot(0, &len), key[32];
	REQUIRE(j);
	snprintf(key, sizeof key, "{\"id\":%d,", id);
	char *p = strstr(j, key), *q = p ? strstr(p, "\"served\":") : NULL;
	*served = q ? strtoull(q + 9, NULL, 10) : UINT64_MAX;
	free(j);
}

int
main(int argc, char **argv)
{
	int exact = argc > 1 && !strcmp(argv[1], "--exact");
	if (!tu_in_worker())
		setenv("DWORK_ACCOUNT_SAMPLE_US", exact ? "0" : "200000", 1);
	unsetenv("DWORK_ACCOUNT");
	dw_options o = {.trace = "0"};
	REQUIRE(dw_init_opts(&argc, &argv, &o) == DW_OK);
	int w;
	REQUIRE(dw_addprocs(1, NULL, &w) == 1);
	usleep(50000); /* the worker's TSC rate is known after 20 ms */
	uint64_t u0, s0, u1, s1;
	figures(w, &u0, &s0);
	static dw_buf items[ITEMS];
	static dw_result out[ITEMS];
	for (int i = 0; i < ITEMS; i++)
		items[i] = (dw_buf){NULL, 0};
	REQUIRE(dw_pmap("nap", items, ITEMS, out, NULL) == DW_OK);
	uint64_t slept = 0;
	for (int i = 0; i < ITEMS; i++) {
		int64_t v = 0;
		CHECK(out[i].err == DW_OK && out[i].len == sizeof v);
		if (out[i].len == sizeof v)
			memcpy(&v, out[i].data, sizeof v);
		slept += (uint64_t)v;
	}
	dw_results_free(out, ITEMS);
	figures(w, &u1, &s1);
	uint64_t u = u1 - u0;
	printf("worker %d: served %llu, useful %.3f ms; the items slept "
	       "%.3f ms (%s)\n",
	       w, (unsigned long long)(s1 - s0), u / 1e6, slept / 1e6,
	       exact ? "every item timed" : "items sampled");
	CHECK(u0 != UINT64_MAX && u1 != UINT64_MAX && s0 != UINT64_MAX &&
	      s1 != UINT64_MAX);
	CHECK_EQ_U64(s1 - s0, ITEMS);
	/* the sampled estimate of the gaps is an estimate: under ASan on a
	 * loaded CI machine the carrier's steps are slower and uneven (236.6
	 * ms useful for 241.2 ms slept seen, -1.9%) */
	if (TU_SANITIZED)
		CHECK(u + slept / 20 + 5000000u >= slept);
	else
		CHECK(u + slept / 50 + 2000000u >= slept);
	CHECK(u <= slept + ITEMS * 40000u + slept / 50 + 2000000u);
	dw_finalize();
	return tu_report("live_pmap");
}
