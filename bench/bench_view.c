/*
 * view.json_records_per_s, view.perfetto_records_per_s,
 * view.otf2_records_per_s: the merge benchmark's synthetic trace
 * (bench_merge.h) merged into Chrome JSON, Perfetto's protobuf and OTF2
 * as `dwork merge` does it on a machine of two CPUs or more (two
 * threads, mg_opts.threads = 2: the decoding and the writer on a thread
 * of their own, the JSON and Perfetto writers' compression and writes on
 * a third, not pinned); records read per second of the whole merge.
 * Floor, same run, for each: reading the same trace files and writing as
 * many bytes as that format's output, nothing in between.  For a format
 * that writes far fewer bytes than it reads (Perfetto: about 4 bytes a
 * 16-byte input record) that floor is the reading of the input alone,
 * hundreds of millions of records a second, which no merge approaches.
 * That floor leaves out the merge itself (decoding, clocks, the k-way
 * merge, states, messages), which every format needs, so beside the
 * one-core run (_1core: one thread, pinned) is .merge_floor: the same
 * merge on one CPU into a writer that drops its records, then as many
 * bytes of text made beforehand written out; its ratio says what the
 * format's own formatting costs.  Beside them, for context, the same
 * merge into Paraver, and each writer's peak resident memory (the
 * outputs are streamed).
 *
 * Perfetto twice: view.perfetto_* is what --format perfetto writes
 * (compressed packets when the build has libdeflate; with the
 * compressed packets counted), view.perfetto_plain_* the plain packets
 * (DWORK_PERFETTO_PLAIN=1), with bytes a packet and packets a record
 * (the packets counted in the file).  Then instructions per input record from
 * valgrind --tool=callgrind
 * (stable where timings here are not): the whole merge into each format
 * on a trace of BENCH_VIEW_CG_RECORDS records (500,000 by default), the
 * same merge into the writer that drops its records (the merge core),
 * and their difference (the writer's own); then each thread's with the
 * writer on a thread of its own (callgrind --separate-threads), the
 * busiest first: the JSON and Perfetto writers hand their blocks to a
 * thread of their own that compresses and writes them
 * (output/outpipe.h), and the busiest thread bounds the two-core rate.
 * BENCH_QUICK=1 skips it.
 *
 * 50 million records by default, as bench_merge (the JSON is about
 * 5 GB); BENCH_VIEW_RECORDS overrides it.  The trace and the outputs go to
 * $TMPDIR (or /tmp) and are removed afterwards.
 */
#include <ftw.h>

#include "merge/merge.h"
#include "output/writers.h"
#include "bench_merge.h"
#include "bench_util.h"

#define RUNS 2

static int
rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static void
remove_outputs(void)
{
	static const char *const names[] = {"out.prv", "out.pcf", "out.row",
	                                    "out.json", "out.pftrace"};
	char path[700];

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		unlink(path);
	}
	snprintf(path, sizeof path, "%s/out-otf2", dir);
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static uint64_t total_bytes;

static int
add_size(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)p, (void)f;
	if (flag == FTW_F)
		total_bytes += (uint64_t)st->st_size;
	return 0;
}

/* Bytes of the outputs now in dir (everything but the trace files). */
static uint64_t
output_bytes(void)
{
	static const char *const names[] = {"out.prv",     "out.pcf",
	                                    "out.row",     "out.json",
	                                    "out.pftrace", "out-otf2"};
	char path[700];

	total_bytes = 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		nftw(path, add_size, 16, FTW_PHYS);
	}
	return total_bytes;
}

static const char *format_name;
static uint64_t records_in;
static unsigned merge_threads; /* mg_opts.threads of the runs */

static int
run_merge(void *arg)
{
	mg_opts o = {.dir = dir, .threads = merge_threads};
	bool plain = !strcmp(format_name, "perfetto_plain");
	const mg_format *f = mg_format_find(plain ? "perfetto" : format_name);
	mg_writer *w;
	mg_report rep;
	char prefix[600];
	dw_err err;
	FILE *out;

	snprintf(prefix, sizeof prefix, "%s/out", dir);
	if (plain) /* in the child: the writer reads it */
		setenv("DWORK_PERFETTO_PLAIN", "1", 1);
	else
		unsetenv("DWORK_PERFETTO_PLAIN");
	if (!f || !f->create || f->create(prefix, &w) != DW_OK)
		return 1;
	err = mg_merge(&o, w, NULL, &rep);
	if (err != DW_OK)
		fprintf(stderr, "bench: %s: %s\n", format_name, w->err);
	mg_writer_free(w);
	if (err != DW_OK || !(out = fopen((char *)arg, "w")))
		return 1;
	fprintf(out, "%llu\n", (unsigned long long)rep.records_in);
	fclose(out);
	return 0;
}

struct result {
	double best, floor, mfloor, best2;
	double floor_plain, floor_win, mfloor_plain, mfloor_win;
	long rss_kb;
	uint64_t bytes;
	uint64_t packets; /* Perfetto: the Trace's packets */
};

/* The packets of dir/out.pftrace: the Trace's top-level fields (each a
 * key byte, a varint length and the packet); 0 when unreadable. */
static uint64_t
count_packets(void)
{
	char path[700];
	uint64_t n = 0;
	FILE *f;
	int c;

	snprintf(path, sizeof path, "%s/out.pftrace", dir);
	if (!(f = fopen(path, "rb")))
		return 0;
	while ((c = getc(f)) != EOF) {
		uint64_t len = 0;
		int shift = 0;

		if (c != 0x0a) /* field 1, length-delimited */
			break;
		do {
			c = getc(f);
			len |= (uint64_t)(c & 0x7f) << shift;
			shift += 7;
		} while (c != EOF && (c & 0x80) && shift < 64);
		if (c == EOF || fseeko(f, (off_t)len, SEEK_CUR) != 0)
			break;
		n++;
	}
	fclose(f);
	return n;
}

/* The best of RUNS merges into the current format. */
static int
best_of(const char *report, double *best, long *rss_kb, uint64_t *bytes,
        uint64_t *packets)
{
	double t;
	long rss;

	*best = 1e30;
	for (int run = 0; run < RUNS; run++) {
		if (in_child(run_merge, (void *)report, &t, &rss)) {
			fprintf(stderr, "bench: the merge into %s failed\n",
			        format_name);
			return -1;
		}
		*best = t < *best ? t : *best;
		*rss_kb = rss > *rss_kb ? rss : *rss_kb;
		*bytes = output_bytes();
		*packets = count_packets();
		remove_outputs();
	}
	return 0;
}

/* The best of RUNS merges into the format on one core and with the
 * writer's thread on two, then the floors. */
static int
measure(const char *format, const char *report, struct result *r)
{
	unsigned long long n = 0;
	long dummy = 0;
	FILE *f;

	format_name = format;
	r->rss_kb = 0;
	merge_threads = 1;
	if (best_of(report, &r->best, &r->rss_kb, &r->bytes, &r->packets))
		return -1;
	bench_pinned = 0;
	merge_threads = 2;
	if (best_of(report, &r->best2, &dummy, &r->bytes, &r->packets))
		return -1;
	bench_pinned = 1;
	f = fopen(report, "r");
	if (f && fscanf(f, "%llu", &n) == 1)
		records_in = n;
	if (f)
		fclose(f);
	out_bytes = r->bytes;
	floor_best(run_floor, &r->floor, &r->floor_plain, &r->floor_win);
	floor_best(run_merge_floor, &r->mfloor, &r->mfloor_plain,
	           &r->mfloor_win);
	return 0;
}

static void
print(const char *name, const struct result *r)
{
	printf("bench: view.%s_records_per_s = %.0f records/s (two threads, "
	       "as dwork merge runs on a machine of two CPUs or more: the "
	       "writer on a thread of its own, not pinned)\n",
	       name, (double)records_in / r->best2);
	printf("bench: view.%s_records_per_s.floor = %.0f records/s (the "
	       "faster of plain writes, %.0f, and writes with writeback "
	       "started as they go, %.0f)\n",
	       name, (double)records_in / r->floor,
	       (double)records_in / r->floor_plain,
	       (double)records_in / r->floor_win);
	printf("bench: view.%s_records_per_s.ratio = %.2f\n", name,
	       r->floor / r->best2);
	printf("bench: view.%s_records_per_s.target = %s records/s\n", name,
	       !strncmp(name, "perfetto", 8) ? "10000000"
	       : !strcmp(name, "json")       ? "8000000"
	                                     : "5000000");
	printf("bench: view.%s_records_per_s_1core = %.0f records/s (one "
	       "thread, pinned to one CPU; ratio to the floor %.2f)\n",
	       name, (double)records_in / r->best, r->floor / r->best);
	printf("bench: view.%s_records_per_s_1core.merge_floor = %.0f "
	       "records/s (the merge into no format on one CPU, then as many "
	       "bytes written; plain %.0f, writeback as they go %.0f)\n",
	       name, (double)records_in / r->mfloor,
	       (double)records_in / r->mfloor_plain,
	       (double)records_in / r->mfloor_win);
	printf("bench: view.%s_records_per_s_1core.merge_ratio = %.2f\n", name,
	       r->mfloor / r->best);
	printf("bench: view.%s_bytes_per_record = %.1f\n", name,
	       (double)r->bytes / (double)records_in);
	if (r->packets && !strcmp(name, "perfetto_plain"))
		printf("bench: view.%s_bytes_per_packet = %.1f (%.2f packets "
		       "a record)\n",
		       name, (double)r->bytes / (double)r->packets,
		       (double)r->packets / (double)records_in);
	else if (r->packets)
		printf("bench: view.%s_top_packets = %llu (%.0f bytes each: "
		       "the compressed packets)\n",
		       name, (unsigned long long)r->packets,
		       (double)r->bytes / (double)r->packets);
	printf("bench: view.%s_peak_rss_mb = %.1f MB\n", name,
	       (double)r->rss_kb / 1024);
}

/* ---- Instructions per record (callgrind) -------------------------------- */

/* bench_view --gen N DIR writes a trace of N records into DIR;
 * bench_view --child FORMAT DIR: one merge of the trace in DIR into
 * FORMAT ("null": the writer that drops its records; "perfetto_plain":
 * Perfetto's plain packets), for callgrind. */
static int
child(const char *format, const char *trace, unsigned threads)
{
	char count[sizeof dir + 8];

	snprintf(dir, sizeof dir, "%s", trace);
	if (!strcmp(format, "null"))
		return run_merge_floor(NULL);
	format_name = format;
	merge_threads = threads;
	snprintf(count, sizeof count, "%s/count", trace);
	return run_merge(count); /* the records read, for the parent */
}

/* The records the last child read (its count file), else n. */
static uint64_t
records_read(const char *trace, uint64_t n)
{
	char path[sizeof dir + 8];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof path, "%s/count", trace);
	if (!(f = fopen(path, "r")))
		return n;
	if (fscanf(f, "%llu", &v) == 1)
		n = v;
	fclose(f);
	return n;
}

/* Instructions of one merge into format under callgrind; 0 when
 * valgrind is missing or the run failed. */
static uint64_t
instructions(const char *self, const char *trace, const char *format)
{
	char cmd[2048], path[700];
	uint64_t total;

	snprintf(path, sizeof path, "%s/cg.out", trace);
	snprintf(cmd, sizeof cmd,
	         "valgrind --tool=callgrind --callgrind-out-file=%s "
	         "%s --child %s %s >/dev/null 2>&1",
	         path, self, format, trace);
	if (system(cmd) != 0)
		return 0;
	total = bu_cg_file(path);
	unlink(path);
	return total;
}

static int
desc_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Instructions of each thread of one merge into format with the
 * writer on a thread of its own (--child2), under callgrind
 * --separate-threads: up to max counts into n[], most first; returns
 * how many (0 when the run failed). */
static size_t
thread_instructions(const char *self, const char *trace, const char *format,
                    uint64_t *n, size_t max)
{
	char cmd[2048], path[1200];
	size_t k = 0;
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof path, "%s/cgt.out", trace);
	snprintf(cmd, sizeof cmd,
	         "valgrind --tool=callgrind --separate-threads=yes "
	         "--callgrind-out-file=%s %s --child2 %s %s >/dev/null 2>&1",
	         path, self, format, trace);
	if (system(cmd) != 0)
		return 0;
	d = opendir(trace);
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, "cgt.out", 7))
			continue;
		snprintf(path, sizeof path, "%s/%s", trace, e->d_name);
		if (k < max && (n[k] = bu_cg_file(path)) != 0)
			k++; /* (a file without a thread's counts: none) */
		unlink(path);
	}
	if (d)
		closedir(d);
	qsort(n, k, sizeof *n, desc_u64);
	return k;
}

/* The same merges with the writer on its own thread: instructions per
 * record of each thread, the busiest first (what two cores share: the
 * merge, the reader, the writer, the output's own thread). */
static void
print_threads(const char *self, const char *trace, uint64_t records,
              const char *format)
{
	uint64_t n[16];
	size_t k = thread_instructions(self, trace, format, n, 16);

	if (!k)
		return;
	printf("bench: view.%s_busiest_thread_instr_per_record = %.0f "
	       "(callgrind --separate-threads, the writer on its own thread; "
	       "every thread's:",
	       format, (double)n[0] / (double)records);
	for (size_t i = 0; i < k; i++)
		printf(" %.0f", (double)n[i] / (double)records);
	printf(")\n");
}

/* Instructions per record of the merge core and of each writer, on a
 * trace of its own (smaller: callgrind runs 50x slower). */
static void
print_instructions(const char *self)
{
	static const char *const formats[] = {"json", "perfetto",
	                                      "perfetto_plain"};
	const char *env = getenv("BENCH_VIEW_CG_RECORDS");
	uint64_t records = env ? strtoull(env, NULL, 10) : 500000ull, core;
	char trace[sizeof dir];
	double dummy_t;
	long dummy;

	if (strlen(dir) + 4 > sizeof trace)
		return;
	memcpy(trace, dir, strlen(dir));
	memcpy(trace + strlen(dir), "/cg", 4);
	if (mkdir(trace, 0700) != 0)
		return;
	snprintf(dir, sizeof dir, "%s", trace);
	if (in_child(run_gen, &records, &dummy_t, &dummy) != 0 ||
	    !(core = instructions(self, trace, "null"))) {
		printf("bench: view.*_instr_per_record: callgrind run failed "
		       "(no valgrind?)\n");
		cleanup();
		return;
	}
	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
		uint64_t n = instructions(self, trace, formats[i]);

		if (!n)
			continue;
		records = records_read(trace, records);
		if (i == 0)
			printf("bench: view.merge_core_instr_per_record = %.0f "
			       "(callgrind, %llu records, the merge into no "
			       "format)\n",
			       (double)core / (double)records,
			       (unsigned long long)records);
		printf("bench: view.%s_instr_per_record = %.0f (callgrind; "
		       "the writer's own %.0f%s)\n",
		       formats[i], (double)n / (double)records,
		       ((double)n - (double)core) / (double)records,
		       i == 0 ? ", with the summary's figures" : "");
		print_threads(self, trace, records, formats[i]);
	}
	cleanup();
}

int
main(int argc, char **argv)
{
	const char *base = getenv("TMPDIR"),
	           *env = getenv("BENCH_VIEW_RECORDS");
	uint64_t records = env ? strtoull(env, NULL, 10) : 50000000ull;
	const mg_format *o2 = mg_format_find("otf2");
	struct result prv, json, otf2, pf, pfp;
	char report[700];
	double tgen;
	long dummy;
	int rc = 0;

	if (argc == 4 && !strcmp(argv[1], "--child"))
		return child(argv[2], argv[3], 1);
	if (argc == 4 && !strcmp(argv[1], "--child2"))
		return child(argv[2], argv[3], 2);
	if (argc == 4 && !strcmp(argv[1], "--gen")) { /* N DIR: for profiling */
		records = strtoull(argv[2], NULL, 10);
		snprintf(dir, sizeof dir, "%s", argv[3]);
		return run_gen(&records);
	}
	snprintf(dir, sizeof dir, "%s/dwbench-view-XXXXXX",
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
	if (measure("prv", report, &prv) || measure("json", report, &json) ||
	    measure("perfetto", report, &pf) ||
	    measure("perfetto_plain", report, &pfp) ||
	    (o2 && o2->create && measure("otf2", report, &otf2)))
		rc = 1;
	if (!rc) {
		printf(
		    "bench: generated %llu records (%.2f s); Paraver %.1f MB "
		    "in %.2f s (%.0f records/s), JSON %.1f MB",
		    (unsigned long long)records_in, tgen,
		    (double)prv.bytes / 1e6, prv.best,
		    (double)records_in / prv.best, (double)json.bytes / 1e6);
		if (o2 && o2->create)
			printf(", OTF2 %.1f MB", (double)otf2.bytes / 1e6);
		printf("\n");
		print("json", &json);
		print("perfetto", &pf);
		print("perfetto_plain", &pfp);
		if (o2 && o2->create)
			print("otf2", &otf2);
		else
			printf(
			    "bench: view.otf2_records_per_s: this build has no "
			    "libotf2\n");
	}
	remove_outputs();
	if (!rc && !getenv("BENCH_QUICK")) {
		char top[sizeof dir];

		snprintf(top, sizeof top, "%s", dir);
		print_instructions(argv[0]);
		snprintf(dir, sizeof dir, "%s", top);
	}
	cleanup();
	return rc;
}
