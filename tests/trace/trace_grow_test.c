/*
 * Segment growth off the recording thread (src/trace/prep.c,
 * docs/tracer.md "Segment growth"): with the smallest segments (64K), a
 * thread writes 40 of them.  At each one's low-water mark the helper is
 * asked for the next; once it has made it (the test waits for that
 * state, not for a time), the records across the switch take it with a
 * pointer swap: no page fault, no wait (getrusage of the thread around
 * the switch), no segment grown in-line (the tracer's own counts).  Then
 * the helper is made to fall behind for good (as when it cannot
 * prepare): every switch grows the file in-line and none waits for the
 * helper.  In
 * both, the file holds every record written, in order.
 */
#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include <dwork/trace.h>

#include "testutil.h"
#include "trace/tracer.h"
#include "tracefile/reader.h"

#define EV      7300u
#define SEGMENT (64u << 10)
#define NSEG    40
/* the helper's chunk (PREP_CHUNK in src/trace/prep.c) */
#define PREP_CHUNK_TEST (256u << 10)

static uint64_t nwritten;

static void
record(void)
{
	dwt_event(EV, nwritten);
	nwritten++;
}

/* Until the helper has mapped and faulted in b's next segment; 0 when it
 * has not within 20 s (it is stuck: a failure, not slowness). */
static int
wait_spare(struct buf *b)
{
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < 20000; i++) {
		if (__atomic_load_n(&b->spare, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&b->spare_busy, __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&b->fill, __ATOMIC_ACQUIRE))
			return 1;
		nanosleep(&ms, NULL);
	}
	return 0;
}

/* Records up to two slots before the segment's end. */
static void
fill_segment(struct buf *b)
{
	while (b->pos + 2 * FMT_REC_SIZE < b->seg + trc.cfg.segment_size)
		record();
}

/* One switch with the next segment ready: faults and voluntary context
 * switches of this thread across it, added to *flt and *csw. */
static void
ready_switch(struct buf *b, long *flt, long *csw)
{
	while (b->lw) /* up to the low-water mark: the helper is asked */
		record();
	REQUIRE(wait_spare(b));
	fill_segment(b);
	unsigned char *old = b->seg;
	struct rusage r0, r1;
	getrusage(RUSAGE_THREAD, &r0);
	for (int i = 0; i < 4; i++) /* two in the old segment, two after */
		record();
	getrusage(RUSAGE_THREAD, &r1);
	CHECK(b->seg != old);
	*flt += r1.ru_minflt - r0.ru_minflt + r1.ru_majflt - r0.ru_majflt;
	*csw += r1.ru_nvcsw - r0.ru_nvcsw;
}

/* Events EV in the thread files of dir, each value the next one from
 * the first, *first. */
static uint64_t
count_records_from(const char *dir, uint64_t *first)
{
	char path[800];
	uint64_t n = 0, bad = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	REQUIRE(d != NULL);
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		if (l < 4 || strcmp(de->d_name + l - 4, ".dwt"))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		rd_errlist errs;
		rd_errlist_init(&errs, stderr);
		rd_thread *t;
		rd_rec r;
		REQUIRE(rd_thread_open(path, &errs, &t) == DW_OK);
		while (rd_thread_next(t, &r))
			if (r.kind == FMT_R_EVENT && r.u.event.type == EV) {
				if (n == 0)
					*first = r.u.event.value;
				bad += r.u.event.value != *first + n++;
			}
		rd_thread_close(t);
		CHECK_EQ_U64(rd_errlist_count(&errs), 0);
		rd_errlist_free(&errs);
	}
	closedir(d);
	CHECK_EQ_U64(bad, 0);
	return n;
}

/* The same, from 0. */
static uint64_t
count_records(const char *dir)
{
	uint64_t first = 0, n = count_records_from(dir, &first);
	CHECK_EQ_U64(first, 0);
	return n;
}

static void
start_seg(const char *dir, uint64_t segment)
{
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = dir;
	c.program = "grow";
	c.segment_size = segment;
	REQUIRE(dwt_init(&c) == DW_OK);
	nwritten = 0;
	record(); /* registers: the first segment */
}

static void
start(const char *dir)
{
	start_seg(dir, SEGMENT);
}

/* The switches with the next segment ready; returns the thread's page
 * faults across them. */
static long
ready_once(void)
{
	const char *tmp = tu_tmpdir("grow");
	char dir[512];
	snprintf(dir, sizeof dir, "%s", tmp);
	start(dir);
	struct buf *b = trc_self;
	REQUIRE(b != NULL && b->seg != NULL);
	long flt = 0, csw = 0;
	for (int i = 0; i < NSEG; i++)
		ready_switch(b, &flt, &csw);
	struct prep_counts pc;
	prep_get_counts(&pc);
	CHECK_EQ_U64(csw, 0);
	CHECK(pc.swaps >= NSEG + 1); /* the first segment was a kit's */
	CHECK_EQ_U64(pc.grown_inline, 0);
	CHECK_EQ_U64(pc.waits, 0);
	CHECK_EQ_U64(pc.unmapped_inline, 0);
	dwt_fini();
	CHECK_EQ_U64(count_records(dir), nwritten);
	tu_rmtree(dir);
	return flt;
}

/* No fault across the switches.  The kernel's writeback of a segment
 * faulted in ahead (another program's dirty data or a sync can start it
 * at any time) makes its pages fault once more (docs/tracer.md, "Page
 * faults"; under a sync every 20 ms, 15 runs of 15 faulted): faults in
 * three tries in a row fail. */
static void
test_ready(void)
{
	long flt = 1;
	for (int i = 0; i < 3 && flt != 0; i++)
		if ((flt = ready_once()) != 0)
			fprintf(stderr,
			        "trace_grow: %ld faults across the "
			        "switches (written back meanwhile?)\n",
			        flt);
	/* under AddressSanitizer a store into a fresh page also faults in
	 * its shadow page: the sanitizer's fault, not the tracer's */
	if (!TU_SANITIZED)
		CHECK_EQ_U64(flt, 0);
}

static void
test_behind(void)
{
	const char *tmp = tu_tmpdir("growb");
	char dir[512];
	snprintf(dir, sizeof dir, "%s", tmp);
	start(dir);
	struct buf *b = trc_self;
	REQUIRE(b != NULL && b->seg != NULL);
	prep_release(b);   /* the helper prepares nothing more for b */
	prep_test_hold(0); /* and unmaps none of its full segments */
	REQUIRE(prep_test_wait_parked());
	struct prep_counts p0, p1;
	prep_get_counts(&p0);
	for (int i = 0; i < NSEG; i++) {
		fill_segment(b);
		unsigned char *old = b->seg;
		for (int k = 0; k < 4; k++)
			record();
		CHECK(b->seg != old);
	}
	prep_get_counts(&p1);
	CHECK_EQ_U64(p1.grown_inline - p0.grown_inline, NSEG);
	CHECK_EQ_U64(p1.swaps - p0.swaps, 0);
	/* grown here, never waited for the helper (the growing itself may
	 * sleep: posix_fallocate can wait for the disk) */
	CHECK_EQ_U64(p1.waits, 0);
	/* sixteen left in their slots, the rest unmapped here */
	CHECK_EQ_U64(p1.unmapped_inline - p0.unmapped_inline, NSEG - BUF_OLD);
	dwt_fini();
	/* the sixteen unmapped by fini, with this session's segment size:
	 * the helper once unmapped them later with the next session's (1
	 * MiB in test_order), and with them the next session's kits */
	for (int i = 0; i < BUF_OLD; i++)
		CHECK(b->old[i] == NULL);
	prep_test_hold(-1);
	CHECK_EQ_U64(count_records(dir), nwritten);
	tu_rmtree(dir);
}

static void *
other_thread(void *p)
{
	dwt_event(EV + 1, 1); /* registers: takes a kit */
	return p;
}

static void
run_other(void)
{
	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, other_thread, NULL) == 0);
	pthread_join(th, NULL);
}

/* The helper's order, made deterministic by its test hold: a kit is
 * being faulted in (one chunk of four done) when a running thread asks
 * for its next segment; the helper maps that segment and faults it in
 * before it goes on with the kit.  The log's letters: prep_test_hold in
 * src/trace/tracer.h. */
static void
test_order(void)
{
	const char *tmp = tu_tmpdir("growo");
	char dir[512], log[64];
	snprintf(dir, sizeof dir, "%s", tmp);
	start_seg(dir, 4 * PREP_CHUNK_TEST);
	struct buf *b = trc_self;
	REQUIRE(b != NULL && b->seg != NULL);
	REQUIRE(prep_test_wait_idle()); /* two kits ready */
	prep_test_hold(0);
	REQUIRE(prep_test_wait_parked());
	run_other(); /* two threads take both kits: none left */
	run_other();
	prep_test_hold(4); /* their files named, the next two kits mapped */
	REQUIRE(prep_test_wait_parked());
	prep_test_log(log, sizeof log);
	CHECK(strcmp(log, "NNKK") == 0);
	prep_test_hold(1); /* one chunk of its segment faulted in */
	REQUIRE(prep_test_wait_parked());
	prep_test_log(log, sizeof log);
	CHECK(strcmp(log, "k") == 0);
	while (b->lw) /* up to the low-water mark: the next one asked for */
		record();
	prep_test_hold(-1);
	REQUIRE(prep_test_wait_idle());
	prep_test_log(log, sizeof log);
	/* mapped, then its four chunks, then the kits' seven left */
	CHECK(strcmp(log, "Ssssskkkkkkk") == 0);
	if (strcmp(log, "Ssssskkkkkkk") != 0)
		fprintf(stderr, "trace_grow: helper's jobs: %s\n", log);
	REQUIRE(wait_spare(b));
	fill_segment(b);
	unsigned char *old = b->seg;
	struct rusage r0, r1;
	getrusage(RUSAGE_THREAD, &r0);
	for (int i = 0; i < 4; i++)
		record();
	getrusage(RUSAGE_THREAD, &r1);
	CHECK(b->seg != old);
	if (!TU_SANITIZED)
		CHECK_EQ_U64(r1.ru_minflt - r0.ru_minflt, 0);
	dwt_fini();
	CHECK_EQ_U64(count_records(dir), nwritten);
	tu_rmtree(dir);
}

/* Thread files in dir under their thread's name. */
static int
count_named(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	REQUIRE(d != NULL);
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		n += l >= 4 && strcmp(de->d_name + l - 4, ".dwt") == 0;
	}
	closedir(d);
	return n;
}

/* A thread's first record wakes the helper only when it took the last
 * kit ready (the wake-up was most of that record's cost): the helper,
 * held, is asked for nothing by the first thread and once by the
 * second; let go, it names both files first. */
static void
test_quiet_take(void)
{
	const char *tmp = tu_tmpdir("growq");
	char dir[512], log[64];
	snprintf(dir, sizeof dir, "%s", tmp);
	start(dir);
	REQUIRE(prep_test_wait_idle()); /* two kits ready */
	prep_test_hold(0);
	REQUIRE(prep_test_wait_parked());
	unsigned w0 = prep_test_wakes();
	run_other(); /* one kit left */
	CHECK_EQ_U64(prep_test_wakes(), w0);
	run_other(); /* none left */
	CHECK_EQ_U64(prep_test_wakes(), w0 + 1);
	CHECK_EQ_U64(count_named(dir), 1); /* this thread's only */
	prep_test_hold(-1);
	REQUIRE(prep_test_wait_idle());
	prep_test_log(log, sizeof log);
	CHECK(strncmp(log, "NN", 2) == 0);
	CHECK_EQ_U64(count_named(dir), 3);
	dwt_fini();
	tu_rmtree(dir);
}

/* Unwoken, the helper still names a taken kit's file (its look every
 * PREP_POLL_MS while a kit is ready): a process killed later keeps
 * that thread's records.  Waits for the name, up to 20 s, touching
 * nothing that wakes the helper. */
static void
test_named_unwoken(void)
{
	const char *tmp = tu_tmpdir("growu");
	char dir[512];
	snprintf(dir, sizeof dir, "%s", tmp);
	start(dir);
	REQUIRE(prep_test_wait_idle()); /* two kits ready, this file named */
	unsigned w0 = prep_test_wakes();
	run_other();
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < 20000 && count_named(dir) < 2; i++)
		nanosleep(&ms, NULL);
	CHECK_EQ_U64(count_named(dir), 2);
	CHECK_EQ_U64(prep_test_wakes(), w0);
	dwt_fini();
	tu_rmtree(dir);
}

/* Circular mode at its cap: the reused segment is cleared a chunk (16
 * KiB, BUF_CLEAR in src/trace/buffer.c) at a time as records reach it,
 * not all at the switch; the helper maps and faults in the oldest one
 * ahead, as it does a new one; every record written after the last
 * reuse is read back. */
static void
test_reuse(void)
{
	const char *tmp = tu_tmpdir("growr");
	char dir[512];
	snprintf(dir, sizeof dir, "%s", tmp);
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = dir;
	c.program = "grow";
	c.segment_size = SEGMENT;
	c.size_cap = 2 * SEGMENT;
	c.circular = 1;
	REQUIRE(dwt_init(&c) == DW_OK);
	nwritten = 0;
	record();
	struct buf *b = trc_self;
	REQUIRE(b != NULL && b->seg != NULL);
	for (int i = 0; i < 3 && !b->reused; i++) {
		fill_segment(b);
		for (int k = 0; k < 4; k++)
			record();
	}
	REQUIRE(b->reused == 1);
	/* cleared up to one chunk past the header; the old records after
	 * it still there, then cleared as records reach them */
	CHECK(b->clear == b->seg + FMT_S_END + (16u << 10));
	CHECK(*(uint32_t *)(b->seg + SEGMENT / 2) != 0);
	while (b->pos < b->seg + SEGMENT / 2 + FMT_S_END)
		record();
	CHECK(b->clear == b->seg + FMT_S_END + 3 * (16u << 10));
	/* two more, the helper's: mapped and faulted in ahead, taken with a
	 * pointer swap */
	struct prep_counts p0, p1;
	prep_get_counts(&p0);
	long flt = 0, csw = 0;
	for (int i = 0; i < 2; i++)
		ready_switch(b, &flt, &csw);
	prep_get_counts(&p1);
	CHECK_EQ_U64(b->reused, 3);
	CHECK_EQ_U64(p1.swaps - p0.swaps, 2);
	CHECK_EQ_U64(p1.grown_inline - p0.grown_inline, 0);
	if (!TU_SANITIZED)
		CHECK_EQ_U64(flt, 0);
	CHECK_EQ_U64(csw, 0);
	dwt_fini();
	/* the newest: the last segment (4 records) and the one before */
	uint64_t first = 0, n = count_records_from(dir, &first);
	CHECK(n > (SEGMENT - FMT_S_END) / 16 && n <= 2 * (SEGMENT / 16));
	CHECK_EQ_U64(first + n, nwritten);
	tu_rmtree(dir);
}

int
main(void)
{
	test_ready();
	test_behind();
	test_order();
	test_quiet_take();
	test_named_unwoken();
	test_reuse();
	return tu_report("trace_grow");
}
