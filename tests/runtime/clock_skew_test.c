/*
 * Clocks across (simulated) hosts: a traced cluster whose workers 3 and
 * 4 run with the tracer's skew hook (an offset of +50 ms and -30 ms, a
 * drift of +100 and -50 ppm), so they share no clock with the master;
 * worker 2 shares the master's.  Calls go back and forth for a while
 * (the drift adds up to microseconds), the merge corrects the clocks
 * from the runtime's sync records, and then: no receive time of any
 * message precedes its send, the logical receive is never after the
 * physical one, and every receive the merge had to move was moved by
 * less than the clocks' measured error (half the round trips).
 *
 * RUNS fresh runs in one ctest invocation (dw_init runs once per
 * process), so an intermittent backwards message fails the suite.  The
 * figures: ctest --test-dir build -R clock_skew -V
 */
#include <sys/wait.h>

#include "merge_util.h"
#include "rt_util.h"

#define RUNS  20
#define CALLS 40

struct figs {
	uint64_t comms, backwards, lrecv_late;
	uint64_t moved, max_shift, total_shift, beyond;
};

static void
read_comms(const char *prv, struct figs *f)
{
	char *text = mt_slurp(prv), *line, *save;

	REQUIRE(text);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long v[14];

		if (sscanf(
		        line,
		        "3:%llu:%llu:%llu:%llu:%llu:%llu:%llu:%llu:%llu:%llu:"
		        "%llu:%llu:%llu:%llu",
		        &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
		        &v[8], &v[9], &v[10], &v[11], &v[12], &v[13]) != 14)
			continue;
		f->comms++;
		if (v[10] <= v[4] || v[11] <= v[5] || v[10] <= v[5]) {
			fprintf(stderr, "backwards: %s\n", line);
			f->backwards++;
		}
		f->lrecv_late += v[10] > v[11];
	}
	free(text);
}

/* One run: the cluster, the calls, a merge of its files, the checks.
 * Appends its figures to the file $DW_CS_OUT. */
static int
one_run(int *argc, char ***argv)
{
	char dir[600], prefix[700], prv[800], err[1024];
	struct figs f = {0};
	rd_errlist errs;
	mg_report rep;
	pc_result r;
	int ids[3];

	snprintf(dir, sizeof dir, "%s", tu_tmpdir("clock-skew"));
	dw_options o = {.trace = dir, .no_merge = 1, .clock_sync_ms = 30};
	if (dw_init_opts(argc, argv, &o) != DW_OK)
		return 1;
	const char *skew[3][2] = {{NULL, NULL},
	                          {"DWT_TEST_CLOCK_SKEW=50000000,100", NULL},
	                          {"DWT_TEST_CLOCK_SKEW=-30000000,-50", NULL}};
	for (int i = 0; i < 3; i++) {
		dw_local_options lo = {.env = skew[i][0] ? skew[i] : NULL};

		REQUIRE(dw_addprocs(1, &lo, &ids[i]) == 1);
	}
	for (int k = 0; k < CALLS; k++) {
		for (int i = 0; i < 3; i++) {
			void *res;
			size_t n;

			CHECK(dw_remotecall_fetch(ids[i], "echo", "x", 1, &res,
			                          &n) == DW_OK);
			free(res);
		}
		usleep(3000);
	}
	CHECK(dw_finalize() == DW_OK);
	snprintf(prefix, sizeof prefix, "%s/trace", dir);
	snprintf(prv, sizeof prv, "%s.prv", prefix);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 0, &rep, &errs) == DW_OK);
	rd_errlist_free(&errs);
	if (prv_check(prefix, PC_ALL, &r, err, sizeof err) != 0) {
		fprintf(stderr, "strict checker: %s\n", err);
		tu_failures++;
	}
	read_comms(prv, &f);
	CHECK(f.comms >= 2 * 3 * CALLS);
	CHECK_EQ_U64(f.backwards, 0);
	CHECK_EQ_U64(f.lrecv_late, 0);
	CHECK_EQ_U64(rep.recv_beyond, 0);
	FILE *out =
	    getenv("DW_CS_OUT") ? fopen(getenv("DW_CS_OUT"), "a") : NULL;
	if (out) {
		fprintf(out, "%llu %llu %llu %llu %llu %llu\n",
		        (unsigned long long)f.comms,
		        (unsigned long long)f.backwards,
		        (unsigned long long)rep.recv_moved,
		        (unsigned long long)rep.recv_max_shift,
		        (unsigned long long)rep.recv_total_shift,
		        (unsigned long long)rep.recv_beyond);
		fclose(out);
	}
	if (!tu_failures)
		tu_rmtree(dir);
	else
		fprintf(stderr, "trace kept in %s\n", dir);
	return tu_report("clock_skew run");
}

/* RUNS fresh processes of this test; prints the worst figures. */
static int
run_all(char **argv)
{
	char out[600];
	int bad = 0;
	unsigned long long c, b, m, mx, tot, be, sc = 0, sb = 0, sm = 0,
	                                         smx = 0, stot = 0, sbe = 0;

	snprintf(out, sizeof out, "%s/figures", tu_tmpdir("clock-skew-all"));
	setenv("DW_CS_RUN", "1", 1);
	setenv("DW_CS_OUT", out, 1);
	for (int i = 0; i < RUNS; i++) {
		int st;
		pid_t p = fork();

		REQUIRE(p >= 0);
		if (p == 0) {
			execv("/proc/self/exe", argv);
			_exit(127);
		}
		REQUIRE(waitpid(p, &st, 0) == p);
		bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	FILE *f = fopen(out, "r");
	int runs = 0;
	while (f && fscanf(f, "%llu %llu %llu %llu %llu %llu", &c, &b, &m, &mx,
	                   &tot, &be) == 6) {
		runs++;
		sc += c, sb += b, sm += m, stot += tot, sbe += be;
		smx = mx > smx ? mx : smx;
	}
	if (f)
		fclose(f);
	printf("clock_skew: %d runs (%d failed), %llu messages, %llu received "
	       "before their send; %llu receives moved by the merge, at most "
	       "%llu ns, %llu ns in all, %llu beyond the measured round "
	       "trips\n",
	       runs, bad, sc, sb, sm, smx, stot, sbe);
	unlink(out);
	*strrchr(out, '/') = '\0';
	rmdir(out);
	CHECK(runs == RUNS);
	CHECK(bad == 0);
	return tu_report("clock_skew");
}

int
main(int argc, char **argv)
{
	if (argc == 1 && !getenv("DW_CS_RUN"))
		return run_all(argv);
	return one_run(&argc, &argv);
}
