/*
 * The merge on two threads (mg_opts.threads = 2: the scan split in two
 * halves of processes, the decoding thread, the writer's thread) finds
 * what one thread finds and writes what one thread writes: the same
 * problems in the same order and the same files, byte for byte, on a
 * damaged trace where the second half has more problems than a list
 * holds (RD_ERRS_MAX: the second scanning thread waits and hands its
 * list over) and where the limit of message parts the causal pass
 * keeps (2^19) is passed inside the second half (its report placed
 * among the second half's problems).  Four processes on four hosts (no
 * sync records: each host's "no clock sync records" is a problem too).
 */
#include "merge_synth.h"
#include "merge_util.h"
#include "output/writers.h"

#define NT    4
#define ITERS 80000 /* 2 parts an iteration: 640,000 parts in all */
#define SEG   4096u

static void
gen_proc(const char *dir, uint32_t task)
{
	ms_proc p;
	ms_thread t;

	ms_proc_init(&p, dir, 0x900 + task, 700 + task, task);
	p.ntasks = NT;
	p.seg_size = SEG;
	snprintf(p.host, sizeof p.host, "host-%u", task);
	ms_proc_end(&p, 1000 + ITERS * 1000ull + 5000);
	ms_thread_open(&t, &p, 0);
	for (uint64_t i = 0; i < ITERS; i++) {
		uint64_t t0 = 1000 + i * 1000;

		ms_push(&t, t0, 1);
		ms_comm(&t, t0 + 200, 6, (task + 1) % NT, 1, 64, i);
		ms_comm(&t, t0 + 600, 7, (task + NT - 1) % NT, 1, 64, i);
		ms_pop(&t, t0 + 700);
	}
	ms_thread_close(&t);
	ms_proc_close(&p);
}

/* Task 3's thread (the second half): a reserved record kind in every
 * segment, three quarters in (the rest of each segment is dropped). */
static size_t
damage(const char *dir)
{
	ms_proc p;
	char path[1200];
	unsigned char junk[16];
	struct stat st;
	size_t n = 0;
	int fd;

	ms_proc_init(&p, dir, 0x900 + 3, 700 + 3, 3);
	ms_path(&p, path, sizeof path, 0);
	REQUIRE(stat(path, &st) == 0);
	fd = open(path, O_WRONLY);
	REQUIRE(fd >= 0);
	memset(junk, 0xab, sizeof junk); /* kind 10: reserved */
	for (uint64_t off = FMT_HEADER_PAGE; off + SEG <= (uint64_t)st.st_size;
	     off += SEG, n++)
		REQUIRE(
		    pwrite(fd, junk, sizeof junk, (off_t)(off + SEG * 3 / 4)) ==
		    (ssize_t)sizeof junk);
	close(fd);
	return n;
}

static void
merge_with(const char *dir, const char *prefix, unsigned threads,
           rd_errlist *errs, mg_report *rep)
{
	mg_opts o = {.dir = dir, .threads = threads};
	mg_writer *w;

	rd_errlist_init(errs, NULL);
	REQUIRE(prv_writer_new(prefix, &w) == DW_OK);
	CHECK(mg_merge(&o, w, errs, rep) == DW_OK);
	mg_writer_free(w);
}

static void
same_text(const char *a, const char *b)
{
	char *x = mt_slurp(a), *y = mt_slurp(b);

	CHECK(x && y && strlen(x) > 20);
	if (x && y && strcmp(x, y)) {
		fprintf(stderr, "%s and %s differ\n", a, b);
		tu_failures++;
	}
	free(x);
	free(y);
}

int
main(void)
{
	const char *dir = tu_tmpdir("merge-threads");
	static const char *const ext[] = {"prv", "pcf", "row"};
	char one[700], two[700], a[800], b[800];
	rd_errlist e1, e2;
	mg_report r1, r2;
	size_t segs, limit_at = SIZE_MAX;

	for (uint32_t t = 0; t < NT; t++)
		gen_proc(dir, t);
	segs = damage(dir);
	CHECK(segs > RD_ERRS_MAX + 100);
	snprintf(one, sizeof one, "%s/one", dir);
	snprintf(two, sizeof two, "%s/two", dir);
	merge_with(dir, one, 1, &e1, &r1);
	merge_with(dir, two, 2, &e2, &r2);

	/* the same problems, in the same order */
	CHECK_EQ_U64(rd_errlist_count(&e1), rd_errlist_count(&e2));
	CHECK_EQ_U64(e1.n, e2.n);
	for (size_t i = 0; i < e1.n && i < e2.n; i++) {
		if (strcmp(e1.msgs[i], e2.msgs[i])) {
			fprintf(stderr, "problem %zu: '%s' vs '%s'\n", i,
			        e1.msgs[i], e2.msgs[i]);
			tu_failures++;
			break;
		}
		if (strstr(e1.msgs[i], "message parts between clocks"))
			limit_at = i;
	}
	/* one problem a damaged segment, 3 hosts aligned by real time,
	 * the limit's report, unmatched messages: past what a list keeps */
	CHECK(rd_errlist_count(&e1) >= segs + 3 + 1);
	CHECK(e1.dropped > 0);
	/* passed inside the second half: after its first damaged segment,
	 * before its last kept problem */
	CHECK(limit_at != SIZE_MAX && limit_at > 4 && limit_at + 1 < e1.n);
	CHECK_EQ_U64(r1.records_in, r2.records_in);
	CHECK_EQ_U64(r1.comms, r2.comms);
	CHECK_EQ_U64(r1.unmatched_sends, r2.unmatched_sends);
	CHECK(r1.comms > 0 && r1.unmatched_sends > 0);
	for (int i = 0; i < 3; i++) {
		snprintf(a, sizeof a, "%s.%s", one, ext[i]);
		snprintf(b, sizeof b, "%s.%s", two, ext[i]);
		same_text(a, b);
	}
	mt_check(one, PC_ALL, NULL);
	rd_errlist_free(&e1);
	rd_errlist_free(&e2);
	tu_rmtree(dir);
	return tu_report("merge_threads");
}
