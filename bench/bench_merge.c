/*
 * merge.records_per_s: merging a synthetic trace of 8 tasks x 2 threads,
 * 50 million records (states, events, user functions, communications,
 * sync records; two hosts, one with a skewed and drifting clock) into
 * Paraver, as `dwork merge` does it on a machine of two CPUs or more:
 * two threads (mg_opts.threads = 2: the decoding and the writer on a
 * second thread, decode.h, pipe.h), not pinned.  Floor, same run:
 * reading the same files and writing as many bytes as the merge wrote,
 * with no work in between, the faster of plain writes and writes
 * through the writers' own output buffer (writeback started as they go:
 * bench_merge.h, floor_best).  The floor is measured twice, each time
 * after a round of the merges, and the best kept, as for the merges.
 * merge.records_per_s_1thread: the same merge on one thread
 * (DWORK_MERGE_THREADS=1), pinned to one CPU, beside the same floor.
 * merge.peak_rss_mb: the merge's peak resident memory (a child process,
 * ru_maxrss from wait4), two threads, the one-thread figure beside it.
 * merge.instr_per_record:
 * instructions a record of the one-thread merge (callgrind, the difference of a
 * merge of 1.5 M records and one of 0.5 M, so the fixed cost is left out);
 * _2threads_main: the same for the merging thread alone of the two-thread
 * merge, _2threads_other for its other thread (the scan's second half, then the
 * decoding and the writer): the longer of the two is the critical path.
 * Instruction counts do not depend on the machine's load. BENCH_QUICK skips the
 * callgrind runs.
 *
 * The trace is generated into $TMPDIR (or /tmp) and removed afterwards.
 * BENCH_MERGE_RECORDS overrides the record count (for a quick run);
 * BENCH_MERGE_KEEP=1 keeps the directory (to profile `dwork merge` on it).
 */
#include "merge/merge.h"
#include "bench_merge.h"
#include "bench_util.h"

static unsigned merge_threads = 1;

static int
run_merge(void *arg)
{
	mg_opts o = {.dir = dir, .threads = merge_threads};
	mg_writer *w;
	mg_report rep;
	char prefix[600];
	dw_err err;
	FILE *f;

	snprintf(prefix, sizeof prefix, "%s/out", dir);
	if (prv_writer_new(prefix, &w) != DW_OK)
		return 1;
	err = mg_merge(&o, w, NULL, &rep);
	mg_writer_free(w);
	if (err != DW_OK)
		return 1;
	f = fopen((char *)arg, "w");
	if (!f)
		return 1;
	fprintf(f, "%llu %llu %llu %llu\n", (unsigned long long)rep.records_in,
	        (unsigned long long)rep.comms,
	        (unsigned long long)rep.recv_moved,
	        (unsigned long long)rep.unmatched_sends);
	fclose(f);
	return 0;
}

/* Instructions of one merge of the trace in sub (one thread or two)
 * under callgrind: the whole process, or (split) the merging thread's
 * and, in *other, the other thread's (the scan's second half, then the
 * decoding and the writer); 0 when valgrind is missing or the run
 * failed. */
static uint64_t
cg_instr(const char *self, const char *sub, unsigned threads, bool split,
         uint64_t *other)
{
	char cmd[2400], out[700];

	snprintf(out, sizeof out, "%s/cg.out", sub);
	snprintf(cmd, sizeof cmd,
	         "valgrind --tool=callgrind %s --callgrind-out-file=%s %s "
	         "--merge %s %u >/dev/null 2>&1",
	         split ? "--separate-threads=yes" : "", out, self, sub,
	         threads);
	if (system(cmd) != 0)
		return 0;
	if (!split)
		return bu_cg_file(out);
	snprintf(out, sizeof out, "%s/cg.out-02", sub);
	*other = bu_cg_file(out);
	snprintf(out, sizeof out, "%s/cg.out-01", sub);
	return bu_cg_file(out);
}

/* Generates a trace of n records into dir/cgN (the benchmark's trace
 * generator writes into `dir`); its path in sub. */
static int
cg_trace(uint64_t n, char *sub, size_t len)
{
	char saved[sizeof dir];
	double t;
	long rss;
	int r;

	snprintf(sub, len, "%s/cg%llu", dir, (unsigned long long)n);
	if (mkdir(sub, 0700) != 0)
		return 1;
	memcpy(saved, dir, sizeof dir);
	snprintf(dir, sizeof dir, "%s", sub);
	r = in_child(run_gen, &n, &t, &rss);
	memcpy(dir, saved, sizeof dir);
	return r;
}

/* Removes the directory sub and its files. */
static void
cg_remove(const char *sub)
{
	DIR *d = *sub ? opendir(sub) : NULL;
	struct dirent *de;
	char path[1200];

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", sub, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	if (*sub)
		rmdir(sub);
}

/* Instructions a record: the difference of 1.5 M and 0.5 M records.
 * With other (split), the merging thread's, and the other thread's in
 * *other. */
static double
cg_per_record(const char *self, unsigned threads, double *other)
{
	char a[600] = "", b[600] = "";
	uint64_t ia = 0, ib = 0, o_a = 0, o_b = 0;

	if (!cg_trace(500000, a, sizeof a) && !cg_trace(1500000, b, sizeof b)) {
		ia = cg_instr(self, a, threads, other != NULL, &o_a);
		ib = cg_instr(self, b, threads, other != NULL, &o_b);
	}
	cg_remove(a);
	cg_remove(b);
	if (other)
		*other = o_a && o_b > o_a ? (double)(o_b - o_a) / 1e6 : -1;
	return ia && ib > ia ? (double)(ib - ia) / 1e6 : -1;
}

static uint64_t
file_size(const char *name)
{
	char path[700];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void
remove_outputs(void)
{
	static const char *const ext[] = {"prv", "pcf", "row"};
	char path[700];

	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/out.%s", dir, ext[i]);
		unlink(path);
	}
}

/* `bench_merge --merge DIR THREADS`: one merge of DIR into DIR/out (for
 * callgrind). */
static int
merge_only(const char *sub, unsigned threads)
{
	char report[700];

	snprintf(dir, sizeof dir, "%s", sub);
	snprintf(report, sizeof report, "%s/report", sub);
	merge_threads = threads;
	return run_merge(report);
}

static void
print_instr(const char *self)
{
	const char *q = getenv("BENCH_QUICK");
	double one, two, other;

	if (q && *q && strcmp(q, "0")) {
		printf(
		    "bench: merge.instr_per_record: BENCH_QUICK (missing)\n");
		return;
	}
	one = cg_per_record(self, 1, NULL);
	two = cg_per_record(self, 2, &other);
	if (one > 0)
		printf("bench: merge.instr_per_record = %.0f instructions "
		       "(callgrind, one thread, Paraver)\n",
		       one);
	else
		printf("bench: merge.instr_per_record: callgrind run failed "
		       "(missing)\n");
	if (two > 0)
		printf("bench: merge.instr_per_record_2threads_main = %.0f "
		       "instructions (callgrind, the merging thread of two)\n",
		       two);
	if (other > 0)
		printf("bench: merge.instr_per_record_2threads_other = %.0f "
		       "instructions (callgrind, the other thread: the scan's "
		       "second half, the decoding and the writer)\n",
		       other);
}

/* One merge with one thread (pinned) and one with two (not pinned), the
 * best times and the largest peak memory kept; the outputs' size is
 * what the floor writes. */
static int
merge_round(char *report, double *best, long *rss_max, double *best2,
            long *rss2_max)
{
	double t;
	long rss;

	for (unsigned th = 1; th <= 2; th++) {
		bench_pinned = th == 1;
		merge_threads = th;
		if (in_child(run_merge, report, &t, &rss)) {
			fprintf(stderr, "bench: the merge failed\n");
			return -1;
		}
		double *b = th == 1 ? best : best2;
		long *r = th == 1 ? rss_max : rss2_max;
		*b = t < *b ? t : *b;
		*r = rss > *r ? rss : *r;
		if (th == 1)
			out_bytes = file_size("out.prv") +
			            file_size("out.pcf") + file_size("out.row");
		remove_outputs();
	}
	bench_pinned = 1;
	return 0;
}

int
main(int argc, char **argv)
{
	const char *base = getenv("TMPDIR"),
	           *env = getenv("BENCH_MERGE_RECORDS");
	uint64_t records = env ? strtoull(env, NULL, 10) : 50000000ull;
	unsigned long long nin = 0, ncomm = 0, moved = 0, unmatched = 0;
	char report[700];
	double tgen, tfloor = 1e30, tfloor1, best = 1e30, best2 = 1e30;
	double fplain, fwin, fplain_best = 1e30, fwin_best = 1e30;
	long rss_max = 0, rss2_max = 0, dummy;
	FILE *f;
	char self[4096];
	ssize_t k;

	if (argc == 4 && !strcmp(argv[1], "--merge"))
		return merge_only(argv[2], (unsigned)atoi(argv[3]));
	k = readlink("/proc/self/exe", self, sizeof self - 1);
	self[k > 0 ? k : 0] = 0;
	snprintf(dir, sizeof dir, "%s/dwbench-merge-XXXXXX",
	         base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	snprintf(report, sizeof report, "%s/report", dir);
	if (in_child(run_gen, &records, &tgen, &dummy)) {
		cleanup();
		return 2;
	}
	/* two rounds, each the one-thread merge, the two-thread merge and
	 * the floor, best of each: the floor gets as many tries as the
	 * merges, in the same stretch of the machine's load */
	for (int run = 0; run < 2; run++) {
		if (merge_round(report, &best, &rss_max, &best2, &rss2_max)) {
			cleanup();
			return 1;
		}
		floor_best(run_floor, &tfloor1, &fplain, &fwin);
		fplain_best = fplain < fplain_best ? fplain : fplain_best;
		fwin_best = fwin < fwin_best ? fwin : fwin_best;
		tfloor = tfloor1 < tfloor ? tfloor1 : tfloor;
	}
	f = fopen(report, "r");
	if (!f || fscanf(f, "%llu %llu %llu %llu", &nin, &ncomm, &moved,
	                 &unmatched) != 4)
		nin = 0;
	if (f)
		fclose(f);
	printf("bench: generated %llu records (%.2f s); merged to %.1f MB of "
	       "Paraver: %llu communications, %llu receives moved, %llu "
	       "unmatched\n",
	       nin, tgen, (double)out_bytes / 1e6, ncomm, moved, unmatched);
	printf("bench: merge.records_per_s = %.0f records/s (two threads, "
	       "as dwork merge runs on a machine of two CPUs or more: the "
	       "decoding and the writing on a second thread, not pinned)\n",
	       (double)nin / best2);
	printf("bench: merge.records_per_s.floor = %.0f records/s (the faster "
	       "of plain writes, %.0f, and writes with writeback started as "
	       "they go, %.0f)\n",
	       (double)nin / tfloor, (double)nin / fplain_best,
	       (double)nin / fwin_best);
	printf("bench: merge.records_per_s.ratio = %.2f\n", tfloor / best2);
	printf("bench: merge.records_per_s.target = 25000000 records/s "
	       "(and a ratio >= 0.60, issue 17)\n");
	printf("bench: merge.records_per_s_1thread = %.0f records/s "
	       "(DWORK_MERGE_THREADS=1, pinned to one CPU; ratio to the same "
	       "floor %.2f)\n",
	       (double)nin / best, tfloor / best);
	printf("bench: merge.peak_rss_mb = %.1f MB (two threads; one "
	       "thread %.1f MB)\n",
	       (double)rss2_max / 1024, (double)rss_max / 1024);
	printf("bench: merge.peak_rss_mb.target = 64.0 MB\n");
	print_instr(self);
	if (getenv("BENCH_MERGE_KEEP"))
		printf("bench: trace kept in %s\n", dir);
	else
		cleanup();
	return 0;
}
