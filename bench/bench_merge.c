/*
 * merge.records_per_s: merging a synthetic trace of 8 tasks x 2 threads,
 * 50 million records (states, events, user functions, communications,
 * sync records; two hosts, one with a skewed and drifting clock) into
 * Paraver, on one core.  Floor, same run: reading the same files and
 * writing as many bytes as the merge wrote, with no work in between.
 * merge.peak_rss_mb: the merge's peak resident memory (a child process,
 * ru_maxrss from wait4).  merge.records_per_s_2threads: the same merge
 * with the writer on a thread of its own (mg_opts.threads = 2), not
 * pinned, beside the same floor.
 *
 * The trace is generated into $TMPDIR (or /tmp) and removed afterwards.
 * BENCH_MERGE_RECORDS overrides the record count (for a quick run);
 * BENCH_MERGE_KEEP=1 keeps the directory (to profile `dwork merge` on it).
 */
#include "merge/merge.h"
#include "bench_merge.h"

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

int
main(void)
{
	const char *base = getenv("TMPDIR"),
	           *env = getenv("BENCH_MERGE_RECORDS");
	uint64_t records = env ? strtoull(env, NULL, 10) : 50000000ull;
	unsigned long long nin = 0, ncomm = 0, moved = 0, unmatched = 0;
	char report[700];
	double tgen, tmerge, tfloor, best = 1e30, best2 = 1e30;
	long rss, rss_max = 0, dummy;
	FILE *f;

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
	for (int run = 0; run < 2; run++) {
		if (in_child(run_merge, report, &tmerge, &rss)) {
			fprintf(stderr, "bench: the merge failed\n");
			cleanup();
			return 1;
		}
		best = tmerge < best ? tmerge : best;
		rss_max = rss > rss_max ? rss : rss_max;
		out_bytes = file_size("out.prv") + file_size("out.pcf") +
		            file_size("out.row");
		remove_outputs();
	}
	bench_pinned = 0;
	merge_threads = 2;
	for (int run = 0; run < 2; run++) {
		if (in_child(run_merge, report, &tmerge, &rss)) {
			fprintf(stderr, "bench: the merge failed\n");
			cleanup();
			return 1;
		}
		best2 = tmerge < best2 ? tmerge : best2;
		remove_outputs();
	}
	bench_pinned = 1;
	f = fopen(report, "r");
	if (!f || fscanf(f, "%llu %llu %llu %llu", &nin, &ncomm, &moved,
	                 &unmatched) != 4)
		nin = 0;
	if (f)
		fclose(f);
	in_child(run_floor, NULL, &tfloor, &dummy);
	printf("bench: generated %llu records (%.2f s); merged to %.1f MB of "
	       "Paraver: %llu communications, %llu receives moved, %llu "
	       "unmatched\n",
	       nin, tgen, (double)out_bytes / 1e6, ncomm, moved, unmatched);
	printf("bench: merge.records_per_s = %.0f records/s\n",
	       (double)nin / best);
	printf("bench: merge.records_per_s.floor = %.0f records/s\n",
	       (double)nin / tfloor);
	printf("bench: merge.records_per_s.ratio = %.2f\n", tfloor / best);
	printf("bench: merge.records_per_s.target = 10000000 records/s\n");
	printf("bench: merge.records_per_s_2threads = %.0f records/s (the "
	       "writer on its own thread, 2 cores)\n",
	       (double)nin / best2);
	printf("bench: merge.records_per_s_2threads.ratio = %.2f\n",
	       tfloor / best2);
	printf("bench: merge.peak_rss_mb = %.1f MB\n", (double)rss_max / 1024);
	printf("bench: merge.peak_rss_mb.target = 64.0 MB\n");
	if (getenv("BENCH_MERGE_KEEP"))
		printf("bench: trace kept in %s\n", dir);
	else
		cleanup();
	return 0;
}
