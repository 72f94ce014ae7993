/*
 * Benchmarks of the parts programs are written with, each beside its
 * floor measured in the same run, with 4 local workers:
 *
 *   pmap.items_per_s    dw_pmap of 100,000 no-op items, default batch
 *                       size; floor: the same number of pipelined
 *                       dw_remotecall (round-robin over the workers, then
 *                       every result fetched).  Target ratio >= 0.8.
 *   pmap.batch1_items_per_s  the same with batch_size 1 (one call per
 *                       item, two in flight per worker), same floor.
 *   channel.ops_per_s   put+take pairs through a channel owned by another
 *                       worker, from the master; floor: two
 *                       dw_remotecall_fetch round trips to that worker
 *                       per pair.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dwork/dwork.h>

/* a tenth under make bench-quick (BENCH_QUICK) */
#define QUICK     (getenv("BENCH_QUICK") && strcmp(getenv("BENCH_QUICK"), "0"))
#define ITEMS_MAX 100000
#define ITEMS     (QUICK ? 10000 : ITEMS_MAX)
#define PAIRS     (QUICK ? 2000 : 20000)

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
report(const char *name, double v, const char *unit, double floor)
{
	printf("bench: %s = %.0f %s\n", name, v, unit);
	printf("bench: %s.floor = %.0f %s\n", name, floor, unit);
	printf("bench: %s.ratio = %.2f\n", name, v / floor);
	fflush(stdout);
}

static int
noop(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	(void)r;
	return 0;
}
DW_REGISTER(noop)

static double
pipelined_calls(const int *ids, int nw)
{
	dw_future **fs = malloc(ITEMS * sizeof *fs);
	if (!fs)
		exit(1);
	double t0 = now_s();
	for (int i = 0; i < ITEMS; i++)
		if (dw_remotecall(ids[i % nw], "noop", &i, sizeof i, &fs[i])) {
			fprintf(stderr, "remotecall: %s\n", dw_errmsg());
			exit(1);
		}
	for (int i = 0; i < ITEMS; i++) {
		const void *r;
		size_t n;
		if (dw_future_fetch(fs[i], &r, &n)) {
			fprintf(stderr, "fetch: %s\n", dw_errmsg());
			exit(1);
		}
		dw_future_free(fs[i]);
	}
	double t = now_s() - t0;
	free(fs);
	return ITEMS / t;
}

static double
pmap_items(int batch)
{
	static int xs[ITEMS_MAX];
	static dw_buf in[ITEMS_MAX];
	static dw_result out[ITEMS_MAX];
	for (int i = 0; i < ITEMS; i++) {
		xs[i] = i;
		in[i].data = &xs[i];
		in[i].len = sizeof xs[i];
	}
	double t0 = now_s();
	dw_pmap_options o = {.batch_size = batch};
	if (dw_pmap("noop", in, ITEMS, out, &o) != DW_OK) {
		fprintf(stderr, "pmap: %s\n", dw_errmsg());
		exit(1);
	}
	double t = now_s() - t0;
	dw_results_free(out, ITEMS);
	return ITEMS / t;
}

static double
channel_pairs(int owner)
{
	dw_channel *ch;
	if (dw_channel_new(owner, 1, &ch)) {
		fprintf(stderr, "channel: %s\n", dw_errmsg());
		exit(1);
	}
	double t0 = now_s();
	for (int i = 0; i < PAIRS; i++) {
		void *v;
		size_t n;
		if (dw_channel_put(ch, &i, sizeof i) ||
		    dw_channel_take(ch, &v, &n)) {
			fprintf(stderr, "put/take: %s\n", dw_errmsg());
			exit(1);
		}
		free(v);
	}
	double t = now_s() - t0;
	dw_channel_free(ch);
	return PAIRS / t;
}

static double
round_trip_pairs(int w)
{
	double t0 = now_s();
	for (int i = 0; i < 2 * PAIRS; i++) {
		void *r;
		size_t n;
		if (dw_remotecall_fetch(w, "noop", &i, sizeof i, &r, &n)) {
			fprintf(stderr, "fetch: %s\n", dw_errmsg());
			exit(1);
		}
		free(r);
	}
	return PAIRS / (now_s() - t0);
}

int
main(int argc, char **argv)
{
	if (dw_init(&argc, &argv) != DW_OK)
		return 1;
	int ids[4];
	if (dw_addprocs(4, NULL, ids) != 4) {
		fprintf(stderr, "addprocs: %s\n", dw_errmsg());
		return 1;
	}
	pipelined_calls(ids, 4); /* warm up */
	double floor = pipelined_calls(ids, 4);
	double items = pmap_items(0);
	report("pmap.items_per_s", items, "items/s", floor);
	items = pmap_items(1); /* one item per call, two in flight each */
	report("pmap.batch1_items_per_s", items, "items/s", floor);
	double rt = round_trip_pairs(ids[0]);
	double ch = channel_pairs(ids[0]);
	report("channel.ops_per_s", ch, "pairs/s", rt);
	dw_finalize();
	return 0;
}
