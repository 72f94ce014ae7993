/*
 * What the merge benchmarks share (bench_merge.c, bench_view.c): the
 * synthetic trace of 8 tasks x 2 threads (states, events, user
 * functions, communications, sync records; two hosts, one with a skewed
 * and drifting clock) generated into `dir`, runs in a child process
 * pinned to one core, and the floor (reading the trace files and writing
 * out_bytes, with no work in between).
 *
 * Every timed run starts from the same memory: after sync() it waits
 * BENCH_SETTLE_S seconds (5 by default) so that the pages the step
 * before freed (its outputs, removed) have been given back to the host.
 * On this VM (virtio-balloon free page reporting) a page the guest has
 * just freed is cheap to fill again and one it has reported costs a host
 * fault: writing 1 GB into the page cache took 0.25 s of system time
 * right after 1 GB was freed and 1.6-2.9 s one to six seconds later.
 * A run that starts right after a removal, and is fast enough to take the
 * freed pages before they are reported, would be measured on memory no
 * user's merge gets (docs/merge.md, "Performance of the writers").
 */
#ifndef DW_BENCH_MERGE_H
#define DW_BENCH_MERGE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "merge/merge.h"
#include "output/outbuf.h"
#include "merge_synth.h"

#define NTASKS     8
#define NTHREADS   2
#define PER_ITER   10 /* records a thread writes per iteration */
#define STEP_NS    1000
#define SYNC_EVERY 4096

static char dir[512];

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- The synthetic trace ------------------------------------------------ */

/* Host b runs 5 s ahead of host a and 20 ppm fast. */
static uint64_t
host_ns(uint32_t task, uint64_t true_ns)
{
	if (task < NTASKS / 2)
		return true_ns + 1000000000ull;
	return true_ns + true_ns / 50000 + 6000000000ull;
}

static uint64_t
ticks(const ms_proc *p, uint64_t true_ns)
{
	return host_ns(p->task, true_ns) * 3; /* a 3 GHz TSC */
}

static void
gen_sync(ms_thread *t, uint64_t i, uint64_t tr)
{
	uint64_t local = host_ns(t->p->task, tr);
	int64_t noise = (int64_t)((i * 7919) % 201) - 100;

	ms_sync(t, ticks(t->p, tr), 0, local,
	        (int64_t)tr + 1000000000 - (int64_t)local + noise, 10000);
}

/* One iteration of thread k of task t at true time tr. */
static void
gen_iter(ms_thread *th, uint32_t task, uint32_t k, uint64_t i, uint64_t tr)
{
	const ms_proc *p = th->p;
	uint64_t id = i * NTHREADS + k, f = 0x401000 + (i & 3) * 0x40;

	ms_push(th, ticks(p, tr), 1);
	ms_event(th, ticks(p, tr + 60), 1001, i & 7);
	ms_event(th, ticks(p, tr + 60), 1002, 1);
	ms_enter(th, ticks(p, tr + 100), f);
	ms_exit(th, ticks(p, tr + 200), f);
	ms_comm(th, ticks(p, tr + 300), 6, (task + 1) % NTASKS, 1, 1024, id);
	ms_pop(th, ticks(p, tr + 400));
	ms_push(th, ticks(p, tr + 500), 3);
	ms_comm(th, ticks(p, tr + 600), 7, (task + NTASKS - 1) % NTASKS, 1,
	        1024, id);
	ms_pop(th, ticks(p, tr + 700));
}

static void
gen_thread(ms_proc *p, uint32_t k, uint64_t iters)
{
	ms_thread th;

	ms_thread_open(&th, p, k);
	for (uint64_t i = 0; i < iters; i++) {
		uint64_t tr = i * STEP_NS + k * 10;

		if (p->task >= NTASKS / 2 && i % SYNC_EVERY == 0)
			gen_sync(&th, i, tr);
		gen_iter(&th, p->task, k, i, tr);
	}
	ms_thread_close(&th);
}

static void
gen_labels(ms_proc *p)
{
	static const char *const fn[] = {"solve", "exchange", "reduce",
	                                 "update"};

	ms_label_type(p, 1001, "Iteration phase");
	ms_label_type(p, 1002, "Step");
	for (int i = 0; i < 4; i++)
		ms_label_func(p, 0x401000 + (uint64_t)i * 0x40, fn[i]);
	for (uint32_t k = 0; k < NTHREADS; k++)
		ms_label_thread(p, k, k ? "worker" : "main");
}

static void
gen_trace(uint64_t records)
{
	uint64_t iters = records / (NTASKS * NTHREADS * PER_ITER);

	for (uint32_t t = 0; t < NTASKS; t++) {
		ms_proc p;

		ms_proc_init(&p, dir, 0xbe00 + t, 1000 + t, t);
		p.ntasks = NTASKS;
		p.clock = FMT_CLOCK_TSC;
		p.ticks_per_s = 3000000000ull;
		p.init_ns = host_ns(t, 0);
		p.init_ticks = ticks(&p, 0);
		p.seg_size = 1u << 20;
		snprintf(p.host, sizeof p.host,
		         t < NTASKS / 2 ? "bench-a" : "bench-b");
		snprintf(p.program, sizeof p.program, "bench");
		gen_labels(&p);
		ms_proc_end(&p, ticks(&p, iters * STEP_NS + 1000));
		for (uint32_t k = 0; k < NTHREADS; k++)
			gen_thread(&p, k, iters);
		ms_proc_close(&p);
	}
}

/* ---- Runs ---------------------------------------------------------------- */

/* Pins the calling process to one core. */
static void
one_core(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set) == 0) {
		for (int c = 0; c < CPU_SETSIZE; c++) {
			if (CPU_ISSET(c, &set)) {
				CPU_ZERO(&set);
				CPU_SET(c, &set);
				sched_setaffinity(0, sizeof set, &set);
				return;
			}
		}
	}
}

/* 1: children run pinned to one core; 0: on every CPU this process
 * may use (the two-thread merge's figure). */
static int bench_pinned = 1;

/* Seconds to wait after sync() before each timed run (above). */
static unsigned
settle_s(void)
{
	const char *e = getenv("BENCH_SETTLE_S");

	return e && *e ? (unsigned)strtoul(e, NULL, 10) : 5;
}

/* Runs fn in a child; its wall time, peak RSS (KiB) and exit status. */
static int
in_child(int (*fn)(void *), void *arg, double *secs, long *rss_kb)
{
	struct rusage ru;
	double t;
	pid_t pid;
	int st;

	/* Dirty pages left by the step before would be written back while
	 * this one runs and slow its writes: start from a clean cache, and
	 * from memory in the same state (above). */
	sync();
	sleep(settle_s());
	t = now_s();
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		if (bench_pinned)
			one_core();
		_exit(fn(arg));
	}
	if (wait4(pid, &st, 0, &ru) != pid) {
		perror("wait4");
		exit(2);
	}
	*secs = now_s() - t;
	*rss_kb = ru.ru_maxrss;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int
run_gen(void *arg)
{
	gen_trace(*(uint64_t *)arg);
	return 0;
}

static uint64_t out_bytes; /* the floor writes as many bytes */

/* How a floor writes: 0 plain write(2)s of 1 MiB into the page cache;
 * 1 the same writes through the writers' output buffer (ob_write:
 * writeback started as it goes, a window of the cache kept).  The floor
 * is the faster of the two (floor_best): what this machine can do for
 * that output, whichever way. */
static int floor_windowed;

static int
write_plain(const char *path, const char *buf, size_t n, uint64_t left)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	while (fd >= 0 && left) {
		ssize_t w = write(fd, buf, left < n ? left : n);

		if (w <= 0)
			return 1;
		left -= (uint64_t)w;
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

static int
write_windowed(const char *path, const char *buf, size_t n, uint64_t left)
{
	dw_err err;
	ob b;

	unlink(path);
	if (ob_open(&b, path) != DW_OK)
		return 1;
	for (err = DW_OK; err == DW_OK && left; left -= left < n ? left : n)
		err = ob_write(&b, buf, left < n ? left : n);
	return ob_close(&b) != DW_OK || err != DW_OK;
}

/* Writes left bytes from buf (n bytes, again and again) to a file in dir,
 * the floor_windowed way, then removes it. */
static int
write_bytes(const char *buf, size_t n, uint64_t left)
{
	char path[800];
	int rc;

	snprintf(path, sizeof path, "%s/floor.out", dir);
	rc = floor_windowed ? write_windowed(path, buf, n, left)
	                    : write_plain(path, buf, n, left);
	unlink(path);
	return rc;
}

/* The floor: read every trace file, write out_bytes, nothing between. */
static int
run_floor(void *arg)
{
	static char buf[1 << 20];
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[800];
	uint64_t left = out_bytes;
	int fd;

	(void)arg;
	memset(buf, 'x', sizeof buf);
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n < 5 || (strcmp(de->d_name + n - 4, ".dwt") &&
		              strcmp(de->d_name + n - 4, ".dwp")))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		fd = open(path, O_RDONLY);
		while (fd >= 0 && read(fd, buf, sizeof buf) > 0)
			;
		if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
	return write_bytes(buf, sizeof buf, left);
}

/* ---- The merge's floor: the merge without a format ---------------------- */

static dw_err
null_begin(mg_writer *w, const mg_info *info)
{
	(void)w, (void)info;
	return DW_OK;
}

static dw_err
null_record(mg_writer *w, const mg_rec *r)
{
	(void)w, (void)r;
	return DW_OK;
}

static void
null_free(mg_writer *w)
{
	(void)w;
}

static const mg_writer_ops null_ops = {"null", null_begin, null_record,
                                       null_begin, null_free};

/* A format's honest floor: the same merge into a writer that drops every
 * record, then out_bytes of text made beforehand written to a file (the
 * merge and the output's I/O, without formatting a byte). */
__attribute__((unused)) static int
run_merge_floor(void *arg)
{
	static char buf[1 << 20];
	mg_opts o = {.dir = dir};
	mg_writer w = {.ops = &null_ops};

	(void)arg;
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = "0123456789:\n"[i % 12];
	if (mg_merge(&o, &w, NULL, NULL) != DW_OK)
		return 1;
	return write_bytes(buf, sizeof buf, out_bytes);
}

/* A floor run both ways (floor_windowed): the faster time in *secs,
 * each in plain and windowed. */
__attribute__((unused)) static void
floor_best(int (*fn)(void *), double *secs, double *plain, double *windowed)
{
	long dummy;

	floor_windowed = 0;
	in_child(fn, NULL, plain, &dummy);
	floor_windowed = 1;
	in_child(fn, NULL, windowed, &dummy);
	floor_windowed = 0;
	*secs = *plain < *windowed ? *plain : *windowed;
}

static void
cleanup(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[800];

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

#endif
