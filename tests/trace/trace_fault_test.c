/*
 * What a page fault costs the recording thread (docs/tracer.md, "Page
 * faults"): a segment is mapped with no read-around, so that
 *
 * - a thread that writes pages the helper has not faulted in yet (it
 *   fell behind) faults them one page at a time: the page cache of its
 *   file holds the pages it wrote and no more (the kernel's read-around
 *   of a fault, read_ahead_kb, zero-filled up to 16 MB in one fault, a
 *   stall of milliseconds on the recording thread);
 * - the helper reads in and makes writable exactly one chunk a job, and
 *   the thread then writes into it with no page fault.
 *
 * Residency is read with mincore through a mapping of the test's own
 * (the page cache is the file's); no timing is asserted.  On tmpfs
 * (TMPDIR there) there is no read-around and pages may be huge: the
 * residency checks are skipped.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <dwork/trace.h>

#include "testutil.h"
#include "trace/tracer.h"

#define EV      7301u
#define SEGMENT (1u << 20)
#define CHUNK   (256u << 10) /* PREP_CHUNK in src/trace/prep_file.h */
#define PAGE    4096u

static void
record(void)
{
	static uint64_t n;
	dwt_event(EV, n++);
}

static int on_tmpfs;

static void
start(const char *dir)
{
	struct statfs fs;
	on_tmpfs = statfs(dir, &fs) == 0 && fs.f_type == TMPFS_MAGIC;
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = dir;
	c.program = "fault";
	c.segment_size = SEGMENT;
	REQUIRE(dwt_init(&c) == DW_OK);
	record(); /* registers: the first segment */
}

/* Pages of segment idx of b's file in the page cache. */
static unsigned
resident(struct buf *b, uint64_t idx)
{
	unsigned char v[SEGMENT / PAGE];
	unsigned char *m = mmap(NULL, SEGMENT, PROT_READ, MAP_SHARED, b->fd,
	                        (off_t)(FMT_HEADER_PAGE + idx * SEGMENT));
	REQUIRE(m != MAP_FAILED);
	REQUIRE(mincore(m, SEGMENT, v) == 0);
	munmap(m, SEGMENT);
	unsigned n = 0;
	for (unsigned i = 0; i < SEGMENT / PAGE; i++)
		n += v[i] & 1;
	return n;
}

static long
faults(void)
{
	struct rusage r;
	getrusage(RUSAGE_THREAD, &r);
	return r.ru_minflt + r.ru_majflt;
}

/* The helper stopped: the thread grows its next segment in-line and
 * writes four pages of it, each its own fault; nothing else of the
 * segment is read in. */
static void
test_behind(void)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("fault"));
	start(dir);
	struct buf *b = trc_self;
	REQUIRE(b != NULL && b->seg != NULL);
	prep_release(b);   /* the helper prepares nothing more for b */
	prep_test_hold(0); /* and does nothing at all */
	REQUIRE(prep_test_wait_parked());
	while (b->pos + 2 * FMT_REC_SIZE < b->seg + SEGMENT)
		record();
	unsigned char *old = b->seg;
	long f0 = faults();
	while (b->seg == old || b->pos < b->seg + 3 * PAGE + FMT_REC_SIZE)
		record();
	long f = faults() - f0;
	unsigned n = on_tmpfs ? 4 : resident(b, b->cur);
	/* pages 0-3 written; a page of slack for the kernel */
	CHECK(n >= 4 && n <= 5);
	if (n > 5)
		fprintf(stderr, "trace_fault: one fault read in %u pages\n", n);
	if (!TU_SANITIZED)
		CHECK(f >= 4);
	prep_test_hold(-1);
	dwt_fini();
	tu_rmtree(dir);
}

/* The helper's job: one chunk read in and made writable, no more; the
 * thread writes into it: its page faults. */
static long
chunk_once(void)
{
	char dir[512], log[64];
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("faultc"));
	start(dir);
	struct buf *b = trc_self;
	REQUIRE(b != NULL && b->seg != NULL);
	REQUIRE(prep_test_wait_idle()); /* kits made: the helper sleeps */
	prep_test_hold(0);
	REQUIRE(prep_test_wait_parked());
	prep_test_log(log, sizeof log);
	while (b->lw) /* up to the low-water mark: the next one asked for */
		record();
	prep_test_hold(2); /* mapped, and one chunk faulted in */
	REQUIRE(prep_test_wait_parked());
	prep_test_log(log, sizeof log);
	CHECK(strcmp(log, "Ss") == 0);
	unsigned char *next = __atomic_load_n(&b->spare, __ATOMIC_ACQUIRE);
	REQUIRE(next != NULL);
	unsigned n = on_tmpfs ? CHUNK / PAGE : resident(b, b->spare_idx);
	CHECK(n >= CHUNK / PAGE && n <= CHUNK / PAGE + 1);
	if (n != CHUNK / PAGE)
		fprintf(stderr, "trace_fault: a chunk read in %u pages\n", n);
	while (b->pos + 2 * FMT_REC_SIZE < b->seg + SEGMENT)
		record();
	long f0 = faults();
	while (b->seg != next || b->pos + FMT_REC_SIZE < next + CHUNK)
		record();
	long f = faults() - f0;
	CHECK(b->seg == next);
	prep_test_hold(-1);
	dwt_fini();
	tu_rmtree(dir);
	return f;
}

/* With no fault.  The kernel's writeback of the chunk (another
 * program's dirty data, or a sync, can start it at any time) makes its
 * pages fault once more (docs/tracer.md, "Page faults"), which no test
 * of ours can stop: a fault in three tries in a row fails, one in one
 * (under a sync every 20 ms: 5 runs in 30) does not. */
static void
test_chunk(void)
{
	long f = 1;
	for (int i = 0; i < 3 && f != 0; i++)
		if ((f = chunk_once()) != 0)
			fprintf(stderr,
			        "trace_fault: %ld faults in the chunk "
			        "(written back meanwhile?)\n",
			        f);
	if (!TU_SANITIZED)
		CHECK_EQ_U64((uint64_t)f, 0);
}

int
main(void)
{
	test_behind();
	test_chunk();
	return tu_report("trace_fault");
}
