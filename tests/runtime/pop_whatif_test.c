/*
 * The what-if of `dwork stats` on a real traced pmap (issue 19 item 4):
 * a master hands 8 items of 100 ms of work (a sleep) to 2 workers, one
 * item a batch, and the replay is asked what the elapsed time would
 * become with the work 2x faster.
 *
 * The known answer, from what the items measured: each worker runs its
 * items back to back (pmap keeps a second batch queued on it), so the
 * run is its non-work overhead O (start-up, hand-outs, the trace
 * hand-in) plus the list schedule of the items on the workers they ran
 * on, the largest sum of one worker's durations.  O is what the replay
 * leaves of T_ideal without that sum; with the work halved, the answer
 * is O plus the largest sum halved.  A replay that ties the master's
 * hand-outs to the wrong dependency saves far less (before the fix:
 * nothing at all, 462.8 ms both).
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "merge/replay.h"
#include "output/stats.h"
#include "testutil.h"
#include "pop_util.h"

#define ITEMS    8
#define WORKERS  2
#define ITEM_MS  100
#define SLACK_MS 10.0 /* the runtime's own latencies per hand-out */

/* Sleeps ITEM_MS; its result is the time the sleep took (a loaded
 * machine makes it longer, never shorter). */
static int
whatif_work(const void *arg, size_t len, dw_reply *r)
{
	struct timespec ts = {0, ITEM_MS * 1000000L};
	uint64_t t0 = mono_ns(), d;

	(void)arg;
	(void)len;
	while (nanosleep(&ts, &ts) != 0)
		;
	d = mono_ns() - t0;
	return dw_reply_set(r, &d, sizeof d);
}
DW_REGISTER(whatif_work)

/* The traced run: prints "item PID NS" for each item. */
static int
child(int argc, char **argv)
{
	dw_options o = {.trace = argv[2]};
	dw_pmap_options po = {.size = sizeof po, .batch_size = 1};
	dw_result out[ITEMS];
	dw_buf in[ITEMS];
	int zero = 0, err;

	if (dw_init_opts(&argc, &argv, &o) != DW_OK ||
	    dw_addprocs(WORKERS, NULL, NULL) != WORKERS)
		return 2;
	for (int i = 0; i < ITEMS; i++)
		in[i] = (dw_buf){&zero, sizeof zero};
	err = dw_pmap("whatif_work", in, ITEMS, out, &po);
	for (int i = 0; i < ITEMS && !err; i++) {
		uint64_t d = 0;

		if (out[i].err || out[i].len != sizeof d) {
			err = out[i].err ? out[i].err : DW_EPROTO;
			break;
		}
		memcpy(&d, out[i].data, sizeof d);
		printf("item %d %" PRIu64 "\n", out[i].pid, d);
	}
	if (err)
		fprintf(stderr, "pop_whatif: %s\n", dw_errmsg());
	dw_results_free(out, ITEMS);
	dw_finalize();
	return err ? 1 : 0;
}

/* The largest sum of one worker's item durations (ns), from the
 * master's output; each worker's sum in sums[], its items in count[]. */
static uint64_t
largest_sum(const char *dir, uint64_t sums[WORKERS + 2], int count[WORKERS + 2])
{
	char path[700], line[128];
	unsigned long long ns;
	uint64_t max = 0;
	int pid, n = 0;
	FILE *f;

	snprintf(path, sizeof path, "%s/master.out", dir);
	f = fopen(path, "r");
	REQUIRE(f != NULL);
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "item %d %llu", &pid, &ns) == 2 && pid >= 2 &&
		    pid < WORKERS + 2) {
			sums[pid] += ns;
			count[pid]++;
			n++;
		}
	fclose(f);
	CHECK_EQ_U64(n, ITEMS);
	for (int w = 2; w < WORKERS + 2; w++)
		max = sums[w] > max ? sums[w] : max;
	return max;
}

static st_stats *
run(const char *self, char *dir, size_t len)
{
	return run_master(self, "pop_whatif", "--run", NULL, dir, len);
}

/* The what-if's T_ideal for fn; 0 when fn is not on the path. */
static uint64_t
faster_of(const st_stats *s, const char *fn)
{
	size_t i = path_index(s, fn);
	return i < s->npath ? s->path_faster[i] : 0;
}

static void
test_pmap(const char *self)
{
	char dir[600];
	st_stats *s = run(self, dir, sizeof dir);
	uint64_t sums[WORKERS + 2] = {0};
	int count[WORKERS + 2] = {0};
	double work = ms_of(largest_sum(dir, sums, count));
	double ideal = ms_of(s->ideal), over = ideal - work;
	double known = over + work / 2;

	printf("pop_whatif: worker sums %.3f, %.3f ms (%d, %d items); T "
	       "%.3f ms, T_ideal %.3f ms, overhead %.3f ms\n",
	       ms_of(sums[2]), ms_of(sums[3]), count[2], count[3],
	       ms_of(s->duration), ideal, over);
	/* 4 items a worker, back to back (a worker would take a fifth only
	 * if it ran two items 100 ms faster than the other); their sleeps
	 * never end early, and load only stretches them (an ASan run at
	 * load 13: 457.4 ms), so the work has no upper bound of its own */
	for (int w = 2; w < WORKERS + 2; w++)
		CHECK(count[w] == ITEMS / WORKERS);
	within("pmap: the largest worker's work", work,
	       ITEMS / WORKERS * ITEM_MS, 1e9);
	within("pmap: overhead (T_ideal - work)", over, 0, 1e9);
	/* the default what-if: 2x faster */
	within("pmap: T_ideal, whatif_work 2x faster",
	       ms_of(faster_of(s, "whatif_work")), known - SLACK_MS,
	       known + SLACK_MS);
	st_stats_free(s);
	tu_rmtree(dir);
}

int
main(int argc, char **argv)
{
	char self[1024];
	ssize_t n;

	if (argc > 1 && !strncmp(argv[1], "--dwork-", 8))
		return dw_init(&argc, &argv) == DW_OK ? 0 : 2; /* a worker */
	if (argc == 3 && !strcmp(argv[1], "--run"))
		return child(argc, argv);
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	REQUIRE(n > 0);
	self[n] = 0;
	test_pmap(self);
	return tu_report("pop_whatif");
}
