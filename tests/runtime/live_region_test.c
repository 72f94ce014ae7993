/*
 * Regions (dw_region_begin / dw_region_end / dw_region_metrics) on a
 * traced cluster of known behaviour: inside region "solve", worker 2
 * runs for the whole of each of 6 rounds of 0.2 s and worker 3 for half
 * of it while the master waits; after 3 rounds the master sleeps 0.6 s
 * in its own code (useful time, by the model).  Useful times: worker 2
 * 1.2 s, worker 3 0.6 s, master 0.6 s over 1.8 s: LB = 0.8 / 1.2 = 0.667,
 * CommE = 1.2 / 1.8 = 0.667, PE = 0.8 / 1.8 = 0.444; mid-run (after the
 * sleep) 0.6, 0.3 and 0.6 s: LB = 0.5 / 0.6 = 0.833.  A loaded machine
 * stretches every sleep, so the known answer is computed from the
 * sleeps as measured (each nap's, the master's, the region's span), and
 * the nominal figures above only bound them loosely.  Checked:
 *
 *  - dw_region_metrics while the region runs (open, part of the run);
 *  - the TALP JSON written at dw_finalize (DWORK_TALP_FILE) against the
 *    known answers, and against `dwork stats` of the same run's trace
 *    cut to the region (its DW_EV_REGION events) within 0.02;
 *  - the errors: a region left twice, an unknown one, a worker's call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dwork/dwork.h>

#include "testutil.h"

#define ROUND_MS 200
#define ROUNDS   6

static double
now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Sleeps ms and answers how long it slept, in seconds. */
static int
nap(const void *arg, size_t len, dw_reply *r)
{
	int ms = 0;
	if (len == sizeof ms)
		memcpy(&ms, arg, sizeof ms);
	double t0 = now_s();
	usleep((useconds_t)ms * 1000u);
	double slept = now_s() - t0;
	return dw_reply_set(r, &slept, sizeof slept);
}
DW_REGISTER(nap)

static int
try_region(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len;
	int e = dw_region_begin("worker");
	return dw_reply_set(r, &e, sizeof e);
}
DW_REGISTER(try_region)

/* The two workers' naps as they measured them, summed. */
static double slept[2];

static void
took(dw_future *f, double *sum)
{
	const void *res; /* the future's, freed with it */
	size_t len;
	double s;
	if (dw_future_fetch(f, &res, &len) == DW_OK && len == sizeof s) {
		memcpy(&s, res, sizeof s);
		*sum += s;
	}
}

static void
rounds(int *ids, int n)
{
	for (int k = 0; k < n; k++) {
		int full = ROUND_MS, halfms = ROUND_MS / 2;
		dw_future *a, *b;
		if (dw_remotecall(ids[0], "nap", &full, sizeof full, &a) ||
		    dw_remotecall(ids[1], "nap", &halfms, sizeof halfms, &b))
			exit(3);
		took(a, &slept[0]);
		took(b, &slept[1]);
		dw_future_free(a);
		dw_future_free(b);
	}
}

static int
master_main(int argc, char **argv, const char *dir)
{
	if (dw_init(&argc, &argv) != DW_OK)
		return 1;
	int ids[2];
	if (dw_addprocs(2, NULL, ids) != 2)
		return 1;
	void *res;
	size_t len;
	if (dw_remotecall_fetch(ids[0], "try_region", NULL, 0, &res, &len))
		return 1;
	int werr = *(int *)res;
	free(res);
	int e_unknown = dw_region_end("nothing");
	double t0 = now_s();
	if (dw_region_begin("solve") != DW_OK)
		return 1;
	int e_twice = dw_region_begin("solve");
	rounds(ids, ROUNDS / 2);
	double mid2 = slept[0], mid3 = slept[1], s0 = now_s();
	usleep(600000); /* a heartbeat (200 ms) after the rounds so far */
	double msleep = now_s() - s0, mel_seen = now_s() - t0;
	dw_region_info mid;
	int e_mid = dw_region_metrics("solve", &mid);
	rounds(ids, ROUNDS - ROUNDS / 2);
	if (dw_region_end("solve") != DW_OK)
		return 1;
	double el_seen = now_s() - t0;
	int e_end2 = dw_region_end("solve");
	char p[600];
	snprintf(p, sizeof p, "%s/facts", dir);
	FILE *f = fopen(p, "w");
	fprintf(f, "%d %d %d %d %d %d %d %.4f %.4f\n", werr, e_unknown, e_twice,
	        e_end2, e_mid, mid.open, mid.runs, mid.elapsed_s,
	        mid.load_balance);
	fprintf(f, "%.6f %.6f %.6f %.6f %.6f %.6f %.6f\n", mid2, mid3, msleep,
	        mel_seen, slept[0], slept[1], el_seen);
	fclose(f);
	dw_finalize();
	return 0;
}

/* ---- the test's side ---- */

static double
max3(double a, double b, double c)
{
	double m = a > b ? a : b;
	return m > c ? m : c;
}

static double
json_num(const char *doc, const char *key)
{
	char k[64];
	snprintf(k, sizeof k, "\"%s\":", key);
	const char *p = strstr(doc, k);
	return p ? atof(p + strlen(k)) : -1;
}

static char *
slurp_cmd(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	REQUIRE(p != NULL);
	size_t cap = 1 << 20, n = 0;
	char *s = malloc(cap);
	REQUIRE(s != NULL);
	for (size_t k; (k = fread(s + n, 1, cap - 1 - n, p)) > 0;)
		n += k;
	s[n] = 0;
	pclose(p);
	return s;
}

/* The times of the master's DW_EV_REGION events in the merged trace. */
static void
region_times(const char *prv, unsigned long long *t1, unsigned long long *t2)
{
	FILE *f = fopen(prv, "r");
	REQUIRE(f != NULL);
	char line[4096];
	*t1 = *t2 = 0;
	while (fgets(line, sizeof line, f)) {
		int task, thread;
		unsigned long long t;
		if (strncmp(line, "2:", 2) ||
		    sscanf(line, "2:%*d:%*d:%d:%d:%llu:", &task, &thread, &t) !=
		        3)
			continue;
		const char *e = strstr(line, ":71000008:");
		if (!e || task != 1)
			continue;
		if (atoi(e + 10) != 0 && !*t1)
			*t1 = t;
		else if (atoi(e + 10) == 0)
			*t2 = t;
	}
	fclose(f);
}

int
main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "--master"))
		return master_main(argc, argv, argv[2]);
	if (tu_in_worker())
		return dw_init(&argc, &argv) == DW_OK ? 0 : 1;
	const char *dir = tu_tmpdir("region");
	char tr[600], talp[600], rt[600];
	snprintf(tr, sizeof tr, "%s/tr", dir);
	snprintf(talp, sizeof talp, "%s/talp.json", dir);
	snprintf(rt, sizeof rt, "%s/rt", dir);
	setenv("DWORK_TRACE", tr, 1);
	setenv("DWORK_TALP_FILE", talp, 1);
	setenv("DWORK_RUNTIME_DIR", rt, 1);
	setenv("DWORK_HEARTBEAT_MS", "200", 1);
	char cmd[2000];
	snprintf(cmd, sizeof cmd, "/proc/%d/exe --master %s >%s/out 2>&1",
	         (int)getpid(), dir, dir);
	int st = system(cmd);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	snprintf(cmd, sizeof cmd, "%s/facts", dir);
	FILE *f = fopen(cmd, "r");
	REQUIRE(f != NULL);
	int werr, eu, et, ee, em, open, runs;
	double mel, mlb;
	REQUIRE(fscanf(f, "%d %d %d %d %d %d %d %lf %lf", &werr, &eu, &et, &ee,
	               &em, &open, &runs, &mel, &mlb) == 9);
	/* what the master and the workers measured (seconds) */
	double m2, m3, ms, mel_seen, u2, u3, el_seen;
	REQUIRE(fscanf(f, "%lf %lf %lf %lf %lf %lf %lf", &m2, &m3, &ms,
	               &mel_seen, &u2, &u3, &el_seen) == 7);
	fclose(f);
	CHECK(werr == DW_ESTATE);
	CHECK(eu == DW_ENOENT);
	CHECK(et == DW_ESTATE);
	CHECK(ee == DW_ESTATE);
	CHECK(em == DW_OK && open == 1 && runs == 0);
	/* 3 rounds and the 0.6 s sleep: the workers' figures, a heartbeat
	 * old, are those the rounds left */
	/* the known answer from the measured sleeps: the master useful for
	 * its own sleep, each worker for its naps */
	double xm = max3(m2, m3, ms), xlb = (m2 + m3 + ms) / 3 / xm;
	printf("live_region: mid-run elapsed %.3f s (seen %.3f), LB %.3f "
	       "(known %.3f)\n",
	       mel, mel_seen, mlb, xlb);
	CHECK(mel > 1.1 && mel > mel_seen - 0.05 && mel < mel_seen + 0.25);
	CHECK(mlb > xlb - 0.03 && mlb < xlb + 0.03);

	snprintf(cmd, sizeof cmd, "cat %s", talp);
	char *j = slurp_cmd(cmd);
	printf("%s", j);
	CHECK(strstr(j, "\"dlbVersion\": \"3.5.0\"") != NULL);
	CHECK(strstr(j, "\"Application\": {") != NULL);
	const char *solve = strstr(j, "\"solve\": {");
	REQUIRE(solve != NULL);
	/* the TALP file has spaces after colons */
	double lb = json_num(solve, "mpiLoadBalance"),
	       ce = json_num(solve, "mpiCommunicationEfficiency"),
	       pe = json_num(solve, "parallelEfficiency");
	if (lb < 0) {
		char *s = strdup(solve), *w = s;
		for (char *r = s; *r; r++)
			if (*r != ' ')
				*w++ = *r;
		*w = 0;
		lb = json_num(s, "mpiLoadBalance");
		ce = json_num(s, "mpiCommunicationEfficiency");
		pe = json_num(s, "parallelEfficiency");
		CHECK(json_num(s, "numMeasurements") == 1);
		CHECK(json_num(s, "numMpiRanks") == 3);
		/* one host: its mean is the mean, so In = LB and Out = 1 */
		CHECK(json_num(s, "numNodes") == 1);
		double in = json_num(s, "mpiLoadBalanceIn"),
		       out = json_num(s, "mpiLoadBalanceOut");
		CHECK(in - lb < 0.0002 && lb - in < 0.0002);
		CHECK(out > 0.9999 && out < 1.0001);
		double el = json_num(s, "elapsedTime") * 1e-9;
		CHECK(el > ROUNDS * ROUND_MS * 1e-3 + 0.55 &&
		      el > el_seen - 0.05 && el < el_seen + 0.02);
		free(s);
	}
	double xu = max3(u2, u3, ms), klb = (u2 + u3 + ms) / 3 / xu,
	       kce = xu / el_seen;
	printf("live_region: region LB %.4f CommE %.4f PE %.4f (known %.4f "
	       "%.4f %.4f)\n",
	       lb, ce, pe, klb, kce, klb * kce);
	CHECK(lb > klb - 0.025 && lb < klb + 0.025);
	CHECK(ce > kce - 0.025 && ce < kce + 0.025);
	CHECK(pe > klb * kce - 0.025 && pe < klb * kce + 0.025);

	unsigned long long t1, t2;
	snprintf(cmd, sizeof cmd, "%s/trace.prv", tr);
	region_times(cmd, &t1, &t2);
	CHECK(t1 > 0 && t2 > t1);
	snprintf(cmd, sizeof cmd,
	         "%s merge %s -q --from %llu --to %llu -o %s/cut && %s stats "
	         "%s/cut.prv --json",
	         DWORK_TOOL_PATH, tr, t1, t2, dir, DWORK_TOOL_PATH, dir);
	char *s = slurp_cmd(cmd);
	const char *pop = strstr(s, "\"pop\":");
	REQUIRE(pop != NULL);
	char *flat = strdup(pop), *w = flat;
	for (char *r = flat; *r; r++)
		if (*r != ' ' && *r != '\n')
			*w++ = *r;
	*w = 0;
	double slb = json_num(flat, "load_balance"),
	       sce = json_num(flat, "communication_efficiency"),
	       spe = json_num(flat, "parallel_efficiency");
	printf("live_region: dwork stats of the region's window: LB %.4f "
	       "CommE %.4f PE %.4f\n",
	       slb, sce, spe);
	CHECK(slb - lb < 0.02 && lb - slb < 0.02);
	CHECK(sce - ce < 0.02 && ce - sce < 0.02);
	CHECK(spe - pe < 0.02 && pe - spe < 0.02);
	free(flat);
	free(s);
	free(j);
	if (!tu_failures)
		tu_rmtree(dir);
	else
		printf("live_region: kept %s\n", dir);
	return tu_report("live_region");
}
