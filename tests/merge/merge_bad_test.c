/*
 * Bad input: the merger never crashes, merges what is valid, says one
 * line per problem, and fails only when nothing could be merged.  Every
 * trace it writes passes the strict checker.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "merge_synth.h"
#include "merge_util.h"

enum { RECV = 1, LOG = 2, PHY = 4 };

/* A good process of task `task` (uid u), one thread, a few states. */
static void
good_proc(const char *dir, uint64_t u, uint32_t task, uint64_t t0)
{
	ms_proc p;
	ms_thread t;

	ms_proc_init(&p, dir, u, 100 + task, task);
	ms_proc_end(&p, t0 + 1000);
	ms_thread_open(&t, &p, 0);
	ms_push(&t, t0 + 100, 1);
	ms_event(&t, t0 + 200, 1000, 1);
	ms_pop(&t, t0 + 300);
	ms_thread_close(&t);
	ms_proc_close(&p);
}

/* A process whose one thread has `n` records over several segments
 * of 4096 bytes (252 slots each). */
static void
long_proc(const char *dir, uint64_t u, uint32_t task, int n)
{
	ms_proc p;
	ms_thread t;

	ms_proc_init(&p, dir, u, 100 + task, task);
	p.seg_size = 4096;
	ms_proc_end(&p, 100000);
	ms_thread_open(&t, &p, 0);
	for (int i = 0; i < n; i++) {
		if (i % 2 == 0)
			ms_push(&t, 1000 + (uint64_t)i * 10, 1);
		else
			ms_pop(&t, 1000 + (uint64_t)i * 10);
	}
	ms_thread_close(&t);
	ms_proc_close(&p);
}

static void
thread_path(const char *dir, uint64_t u, uint32_t task, int tid, char *buf,
            size_t len)
{
	ms_proc p;

	ms_proc_init(&p, dir, u, 100 + task, task);
	ms_path(&p, buf, len, tid);
}

/* Merges dir; checks the result and that some problem says `said`. */
static void
merge_expect(const char *dir, dw_err want, const char *said, unsigned flags)
{
	char prefix[600];
	rd_errlist errs;
	mg_report rep;
	dw_err err;

	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, stderr);
	err = mt_merge(dir, prefix, 0, &rep, &errs);
	if (err != want)
		fprintf(stderr, "%s: merge gave %s, not %s\n", dir,
		        dw_strerror(err), dw_strerror(want));
	CHECK(err == want);
	if (said && !mt_said(&errs, said)) {
		fprintf(stderr, "%s: no problem says '%s'\n", dir, said);
		tu_failures++;
	}
	if (err == DW_OK)
		mt_check(prefix, flags, NULL);
	else
		CHECK(access(prefix, F_OK) != 0);
	rd_errlist_free(&errs);
}

static void
test_truncated(void)
{
	const char *dir = tu_tmpdir("bad-trunc");
	char path[700];

	good_proc(dir, 0x1, 0, 0);
	long_proc(dir, 0x2, 1, 600);
	thread_path(dir, 0x2, 1, 0, path, sizeof path);
	REQUIRE(truncate(path, 4096 + 4096 + 1000) == 0); /* mid-segment 2 */
	merge_expect(dir, DW_OK, "truncated", PC_ALL);
	tu_rmtree(dir);
}

static void
test_garbled(void)
{
	const char *dir = tu_tmpdir("bad-garbled");
	char path[700];
	unsigned char junk[32];
	int fd;

	good_proc(dir, 0x1, 0, 0);
	long_proc(dir, 0x2, 1, 600);
	thread_path(dir, 0x2, 1, 0, path, sizeof path);
	memset(junk, 0xab, sizeof junk); /* kind 10: reserved */
	fd = open(path, O_WRONLY);
	REQUIRE(fd >= 0);
	REQUIRE(pwrite(fd, junk, sizeof junk, 4096 + 4096 + 64 + 160) ==
	        (ssize_t)sizeof junk);
	close(fd);
	merge_expect(dir, DW_OK, "reserved record kind", PC_ALL);
	tu_rmtree(dir);
}

static void
newer_proc(const char *dir, uint64_t u, uint32_t task)
{
	ms_proc p;
	ms_thread t;

	ms_proc_init(&p, dir, u, 100 + task, task);
	p.vmajor = 2;
	ms_thread_open(&t, &p, 0);
	ms_push(&t, 100, 1);
	ms_thread_close(&t);
	ms_proc_close(&p);
}

static void
test_version(void)
{
	const char *dir = tu_tmpdir("bad-version");

	good_proc(dir, 0x1, 0, 0);
	newer_proc(dir, 0x2, 1);
	merge_expect(dir, DW_OK, "newer than this reader", PC_ALL);
	tu_rmtree(dir);
	dir = tu_tmpdir("bad-version-only");
	newer_proc(dir, 0x2, 0);
	merge_expect(dir, DW_EFORMAT, "newer than this reader", 0);
	tu_rmtree(dir);
}

static void
empty_file(const char *dir, const char *name)
{
	char path[700];
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(fd >= 0);
	close(fd);
}

static void
test_empty(void)
{
	const char *dir = tu_tmpdir("bad-empty");
	char prefix[600];
	rd_errlist errs;

	good_proc(dir, 0x1, 0, 0);
	empty_file(dir, "x.1.0000000000000009.dwp");
	empty_file(dir, "x.1.0000000000000009.0.dwt");
	merge_expect(dir, DW_OK, "empty file", PC_ALL);
	tu_rmtree(dir);

	dir = tu_tmpdir("bad-empty-only");
	empty_file(dir, "x.1.0000000000000009.0.dwt");
	merge_expect(dir, DW_EFORMAT, "empty file", 0);
	tu_rmtree(dir);

	dir = tu_tmpdir("bad-nodir");
	merge_expect(dir, DW_ENOENT, "no trace files", 0);
	snprintf(prefix, sizeof prefix, "%s/missing", dir);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(prefix, prefix, 0, NULL, &errs) == DW_ENOENT);
	CHECK(mt_said(&errs, "cannot open the trace directory"));
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

/* A process with files but not one record: nothing to merge. */
static void
test_no_records(void)
{
	const char *dir = tu_tmpdir("bad-norec");
	ms_proc p;
	ms_thread t;

	ms_proc_init(&p, dir, 0x3, 103, 0);
	ms_thread_open(&t, &p, 0);
	ms_thread_close(&t);
	ms_proc_close(&p);
	merge_expect(dir, DW_EFORMAT, "nothing to merge", 0);
	tu_rmtree(dir);
}

/* Segment 2 starts before the end of segment 1: skipped. */
static void
test_back_in_time(void)
{
	const char *dir = tu_tmpdir("bad-back");
	ms_proc p;
	ms_thread t;

	good_proc(dir, 0x1, 0, 0);
	ms_proc_init(&p, dir, 0x4, 104, 1);
	ms_thread_open(&t, &p, 0);
	ms_push(&t, 500, 1);
	ms_event(&t, 600, 1000, 2);
	ms_segment(&t, 300); /* goes back */
	ms_event(&t, 310, 1000, 3);
	ms_segment(&t, 700);
	ms_pop(&t, 800);
	ms_thread_close(&t);
	ms_proc_close(&p);
	merge_expect(dir, DW_OK, "already read; segment skipped", PC_ALL);
	tu_rmtree(dir);
}

/* A thread file without its process file, a garbled label record. */
static void
test_process_file(void)
{
	const char *dir = tu_tmpdir("bad-proc");
	char path[700];
	unsigned char junk[8] = {0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f};
	ms_proc p;
	int fd;

	good_proc(dir, 0x1, 0, 0);
	good_proc(dir, 0x2, 1, 0);
	ms_proc_init(&p, dir, 0x2, 101, 1);
	ms_path(&p, path, sizeof path, -1);
	REQUIRE(unlink(path) == 0);
	good_proc(dir, 0x3, 2, 0);
	ms_proc_init(&p, dir, 0x3, 102, 2);
	ms_path(&p, path, sizeof path, -1);
	fd = open(path, O_WRONLY | O_APPEND);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, junk, sizeof junk) == (ssize_t)sizeof junk);
	close(fd);
	merge_expect(dir, DW_OK, "no process file", PC_ALL);
	tu_rmtree(dir);
}

/* Messages without their other side: counted, reported, not written. */
static void
test_unmatched(void)
{
	const char *dir = tu_tmpdir("bad-unmatched");
	char prefix[600];
	rd_errlist errs;
	mg_report rep;
	pc_result res;
	ms_proc p;
	ms_thread t;

	ms_proc_init(&p, dir, 0x5, 105, 0);
	ms_thread_open(&t, &p, 0);
	ms_comm(&t, 100, LOG | PHY, 1, 0, 8, 1);        /* never received */
	ms_comm(&t, 200, RECV | LOG | PHY, 1, 0, 8, 2); /* never sent */
	ms_comm(&t, 300, LOG | PHY, 1, 0, 8, 3);
	ms_thread_close(&t);
	ms_proc_close(&p);
	ms_proc_init(&p, dir, 0x6, 106, 1);
	ms_thread_open(&t, &p, 0);
	ms_comm(&t, 400, RECV | LOG | PHY, 0, 0, 8, 3);
	ms_thread_close(&t);
	ms_proc_close(&p);
	snprintf(prefix, sizeof prefix, "%s/out", dir);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 0, &rep, &errs) == DW_OK);
	CHECK_EQ_U64(rep.unmatched_sends, 1);
	CHECK_EQ_U64(rep.unmatched_recvs, 1);
	CHECK_EQ_U64(rep.comms, 1);
	CHECK(mt_said(&errs, "message 1 from task 0 to task 1: send"));
	CHECK(mt_said(&errs, "message 2 from task 1 to task 0: receive"));
	mt_check(prefix, PC_ALL, &res);
	CHECK_EQ_U64(res.comms, 1);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

int
main(void)
{
	test_truncated();
	test_garbled();
	test_version();
	test_empty();
	test_no_records();
	test_back_in_time();
	test_process_file();
	test_unmatched();
	return tu_report("merge_bad");
}
