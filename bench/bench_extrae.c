/*
 * The Extrae user API's cost on the tracer, beside the same floor as
 * trace.event_ns (bench_trace.c), measured in the same run.  Each figure
 * is the best of REPEAT runs, the floor too, alternating.
 *
 *   extrae.event_ns   one Extrae_event, tracing on (started by
 *                     Extrae_init from EXTRAE_* variables), 10M records,
 *                     files and segment growth included
 *
 *   trace.first_event_us          the first Extrae_event of a thread
 *                                 started after Extrae_init, with a
 *                                 1M-event buffer from EXTRAE_BUFFER_SIZE
 *                                 (a 16 MB segment): worst of REPEAT
 *   trace.first_event_us_init     the same on the thread that called
 *                                 Extrae_init (its segment is made there)
 *                                 floor: the worst second record of
 *                                 the same threads (any record's cost)
 *   trace.first_event_us.median   their median, beside the median
 *                                 second record
 *   trace.first_event_cpu_us      the worst in the thread's CPU time
 *   trace.thread_start_us         for scale: pthread_create + join of a
 *                                 thread that does nothing, no tracing
 *                                 (best of REPEAT)
 *   Segment growth, 10M Extrae_event on one thread pinned to its CPU
 *   (the tracer's helper is not), 16 MB segments (about 10 switches):
 *   trace.record_median_ns        the median record, each timed with a
 *                                 TSC read either side; floor: the
 *                                 median of two reads with no record
 *   trace.worst_record_us         the slowest of those records, wall
 *                                 clock: on a loaded machine the
 *                                 scheduler's preemptions and the
 *                                 hypervisor dominate it, not the tracer
 *   trace.records_over_10us       how many took over 10 us, wall clock
 *                                 (floor: as many pairs of TSC reads
 *                                 with no record between them)
 *   trace.worst_record_cpu_us     the thread's CPU time read every 1024
 *                                 records at full speed (a CPU clock
 *                                 read around each record costs more
 *                                 than the record): the worst window's
 *                                 excess over the median window, an
 *                                 upper bound of its worst record's CPU
 *                                 time (page faults and system calls
 *                                 included, preemption not); floor: the
 *                                 same over the floor's loop into a
 *                                 mapping faulted in beforehand (what
 *                                 interrupts and the hypervisor cost)
 *   trace.cpu_windows_over_10us   windows whose excess is over 10 us
 *                                 (floor: the same loop's)
 *   trace.grow_minflt, trace.grow_nvcsw  page faults and waits
 *                                 (voluntary context switches) of the
 *                                 recording thread over those 10M
 *   trace.grow_inline             of its segment switches (printed as
 *                                 the floor), those that found no
 *                                 segment prepared and grew the file
 *                                 in-line (the tracer's own counts:
 *                                 linked with the static library)
 *   trace.wb_worst_record_cpu_us  trace.worst_record_cpu_us again, with
 *                                 the recording thread's file written
 *                                 back every millisecond while it
 *                                 records (sync_file_range, what the
 *                                 kernel's flusher does under dirty
 *                                 pressure, with no big file): written
 *                                 back, a page faulted in ahead is
 *                                 write-protected again; same floor
 *   trace.wb_minflt, trace.wb_nvcsw  the thread's page faults and waits
 *                                 in that run (the refaults: 0 without
 *                                 writeback)
 *
 * Floor of a record: a timestamp read plus one 16-byte store, in the same
 * loop, into a freshly mapped array of the same total size.
 */
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "extrae_user_events.h"
#include "trace/tracer.h"

#define NREC   (bu_quick() ? 1000000u : 10000000u)
#define REPEAT (bu_quick() ? 2 : 5)

static char base[256];

static double
event_ns(uint64_t n)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s/on", base);
	setenv("EXTRAE_ON", "1", 1);
	setenv("EXTRAE_FINAL_DIR", dir, 1);
	setenv("EXTRAE_PROGRAM_NAME", "bench", 1);
	Extrae_init();
	if (Extrae_is_initialized() == EXTRAE_NOT_INITIALIZED) {
		fprintf(stderr, "bench: Extrae_init failed\n");
		exit(1);
	}
	Extrae_event(1, 0); /* registers the thread: not part of the figure */
	double t0 = bu_now_s();
	for (uint64_t i = 0; i < n; i++)
		Extrae_event(2, i);
	double ns = (bu_now_s() - t0) * 1e9 / (double)n;
	Extrae_fini();
	bu_rmtree(base);
	mkdir(base, 0755);
	return ns;
}

static double
now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void
big_init(const char *sub)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s/%s", base, sub);
	setenv("EXTRAE_ON", "1", 1);
	setenv("EXTRAE_FINAL_DIR", dir, 1);
	setenv("EXTRAE_PROGRAM_NAME", "bench", 1);
	setenv("EXTRAE_BUFFER_SIZE", "1000000", 1); /* 16 MB segments */
	Extrae_init();
	if (Extrae_is_initialized() == EXTRAE_NOT_INITIALIZED) {
		fprintf(stderr, "bench: Extrae_init failed\n");
		exit(1);
	}
}

static void
big_fini(void)
{
	Extrae_fini();
	unsetenv("EXTRAE_BUFFER_SIZE");
	bu_rmtree(base);
	mkdir(base, 0755);
}

static double cpu_us(void);

/* p: wall and CPU time of the thread's first record, wall time of its
 * second */
static void *
first_on_thread(void *p)
{
	double *r = p, c0 = cpu_us(), t0 = now_us();
	Extrae_event(3, 1);
	r[0] = now_us() - t0;
	r[1] = cpu_us() - c0;
	t0 = now_us();
	Extrae_event(3, 2);
	r[2] = now_us() - t0;
	return NULL;
}

static void *
nothing(void *p)
{
	return p;
}

static double
thread_start_us(void)
{
	pthread_t th;
	double t0 = now_us();
	if (pthread_create(&th, NULL, nothing, NULL)) {
		perror("pthread_create");
		exit(1);
	}
	pthread_join(th, NULL);
	return now_us() - t0;
}

/* The first record of the init thread, and of a thread started 20 ms
 * after init (a program's threads start after its init). */
static void
first_event(double *init_us, double thread_us[3])
{
	pthread_t th;
	struct timespec gap = {0, 20000000};
	big_init("first");
	double t0 = now_us();
	Extrae_event(3, 1);
	*init_us = now_us() - t0;
	nanosleep(&gap, NULL);
	if (pthread_create(&th, NULL, first_on_thread, thread_us)) {
		perror("pthread_create");
		exit(1);
	}
	pthread_join(th, NULL);
	big_fini();
}

static double
cpu_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

#define WIN     1024u   /* records between two CPU clock reads */
#define HBINS   65536u  /* histogram of record ticks */
#define OVER_NS 10000.0 /* "over 10 us" */

/* Pins the calling thread to the CPU it runs on: no migration in the
 * middle of a measurement.  The helper, started earlier, stays free. */
static void
pin_here(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();
	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void
unpin(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	for (int i = 0; i < CPU_SETSIZE; i++)
		CPU_SET(i, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static double
hist_median(const uint32_t *h, uint64_t n)
{
	uint64_t acc = 0;
	for (unsigned i = 0; i < HBINS; i++)
		if ((acc += h[i]) * 2 >= n)
			return i;
	return HBINS;
}

struct grow {
	double median_ns, floor_ns, worst_us, cpu_us, cpu_floor_us;
	uint64_t over, over_floor, over_cpu, over_cpu_floor;
	long minflt, nvcsw;
	uint64_t inline_grown, switches;
	double wb_cpu_us;
	long wb_minflt, wb_nvcsw;
};

/* Wall clock: each record between two TSC reads. */
static void
grow_wall(uint64_t n, struct grow *g)
{
	uint32_t *h = calloc(HBINS, sizeof *h), *e = calloc(HBINS, sizeof *e);
	uint64_t worst = 0, over = 0;
	if (!h || !e) {
		perror("calloc");
		exit(1);
	}
	big_init("worst");
	pin_here();
	Extrae_event(1, 0);
	double s0 = bu_now_s();
	uint64_t k0 = bu_ticks();
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0 = bu_ticks();
		Extrae_event(2, i);
		uint64_t d = bu_ticks() - t0;
		h[d < HBINS ? d : HBINS - 1]++;
		worst = d > worst ? d : worst;
	}
	double ns_per_tick =
	    (bu_now_s() - s0) * 1e9 / (double)(bu_ticks() - k0);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0 = bu_ticks();
		uint64_t d = bu_ticks() - t0;
		e[d < HBINS ? d : HBINS - 1]++;
	}
	uint64_t over_e = 0;
	for (unsigned i = 0; i < HBINS; i++) {
		over += (double)i * ns_per_tick > OVER_NS ? h[i] : 0;
		over_e += (double)i * ns_per_tick > OVER_NS ? e[i] : 0;
	}
	big_fini();
	unpin();
	g->median_ns = hist_median(h, n) * ns_per_tick;
	g->floor_ns = hist_median(e, n) * ns_per_tick;
	g->worst_us = (double)worst * ns_per_tick / 1e3;
	g->over = over;
	g->over_floor = over_e;
	free(h);
	free(e);
}

static int u64_cmp(const void *a, const void *b);

/* The worst window's excess over the median window, in us; *over: the
 * windows whose excess is over 10 us. */
static double
win_worst(uint64_t *w, uint64_t nw, uint64_t *over)
{
	uint64_t *s = malloc(nw * sizeof *s), worst = 0;
	if (!s) {
		perror("malloc");
		exit(1);
	}
	memcpy(s, w, nw * sizeof *s);
	qsort(s, nw, sizeof *s, u64_cmp);
	uint64_t med = s[nw / 2];
	*over = 0;
	for (uint64_t k = 0; k < nw; k++) {
		uint64_t x = w[k] > med ? w[k] - med : 0;
		worst = x > worst ? x : worst;
		*over += (double)x > OVER_NS;
	}
	free(s);
	return (double)worst / 1e3;
}

static uint64_t
cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* nw windows of WIN records at full speed: w[k], the CPU time of each. */
static void
cpu_windows(uint64_t *w, uint64_t nw)
{
	uint64_t c = cpu_ns();
	for (uint64_t k = 0; k < nw; k++) {
		for (unsigned i = 0; i < WIN; i++)
			Extrae_event(2, i);
		uint64_t c2 = cpu_ns();
		w[k] = c2 - c;
		c = c2;
	}
}

struct flusher {
	int fd, stop;
	pthread_t th;
};

/* The file's dirty pages written back every millisecond, not waited
 * for, as the kernel's flusher does under dirty pressure. */
static void *
flush_loop(void *p)
{
	struct flusher *f = p;
	struct timespec ms = {0, 1000000};
	while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
		sync_file_range(f->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
		nanosleep(&ms, NULL);
	}
	return NULL;
}

/* The CPU windows again, the thread's file written back meanwhile. */
static void
grow_cpu_wb(uint64_t n, struct grow *g)
{
	uint64_t nw = n / WIN, *w = malloc(nw * sizeof *w);
	struct rusage r0, r1;
	struct flusher f = {-1, 0, 0};
	if (!w) {
		perror("malloc");
		exit(1);
	}
	big_init("wb");
	pin_here();
	Extrae_event(1, 0);
	f.fd = trc_self ? trc_self->fd : -1;
	if (f.fd < 0 || pthread_create(&f.th, NULL, flush_loop, &f)) {
		fprintf(stderr, "bench: no file to write back\n");
		exit(1);
	}
	memset(w, 0, nw * sizeof *w); /* its page faults are not the tracer's */
	getrusage(RUSAGE_THREAD, &r0);
	cpu_windows(w, nw);
	getrusage(RUSAGE_THREAD, &r1);
	__atomic_store_n(&f.stop, 1, __ATOMIC_RELAXED);
	pthread_join(f.th, NULL);
	big_fini();
	unpin();
	uint64_t over;
	g->wb_cpu_us = win_worst(w, nw, &over);
	g->wb_minflt = r1.ru_minflt - r0.ru_minflt;
	g->wb_nvcsw = r1.ru_nvcsw - r0.ru_nvcsw;
	free(w);
}

/* CPU time every WIN records, at full speed; then the floor's loop. */
static void
grow_cpu(uint64_t n, struct grow *g)
{
	uint64_t nw = n / WIN, *w = malloc(nw * sizeof *w);
	struct rusage r0, r1;
	if (!w) {
		perror("malloc");
		exit(1);
	}
	big_init("worst");
	pin_here();
	Extrae_event(1, 0);
	memset(w, 0, nw * sizeof *w); /* its page faults are not the tracer's */
	getrusage(RUSAGE_THREAD, &r0);
	cpu_windows(w, nw);
	getrusage(RUSAGE_THREAD, &r1);
	struct prep_counts pc;
	prep_get_counts(&pc);
	big_fini();
	g->inline_grown = pc.grown_inline;
	/* less the first segment, a kit's */
	g->switches = pc.swaps + pc.grown_inline - (pc.swaps > 0);
	g->cpu_us = win_worst(w, nw, &g->over_cpu);
	g->minflt = r1.ru_minflt - r0.ru_minflt;
	g->nvcsw = r1.ru_nvcsw - r0.ru_nvcsw;
	unsigned char *m = mmap(NULL, n * 16, PROT_READ | PROT_WRITE,
	                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memset(m, 1, n * 16); /* faulted in: the floor is the machine's noise */
	uint64_t c = cpu_ns();
	for (uint64_t k = 0; k < nw; k++) {
		for (unsigned i = 0; i < WIN; i++) {
			uint64_t v[2] = {bu_ticks(), i};
			memcpy(m + (k * WIN + i) * 16, v, 16);
			__asm__ volatile("" ::"r"(m) : "memory");
		}
		uint64_t c2 = cpu_ns();
		w[k] = c2 - c;
		c = c2;
	}
	munmap(m, n * 16);
	unpin();
	g->cpu_floor_us = win_worst(w, nw, &g->over_cpu_floor);
	free(w);
}

static int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Like bench_trace.c, each measurement runs on a thread of its own. */
struct job {
	double (*fn)(uint64_t);
	double ns;
};

static void *
job_run(void *p)
{
	struct job *j = p;
	j->ns = j->fn(NREC);
	return NULL;
}

static double
on_thread(double (*fn)(uint64_t))
{
	struct job j = {fn, 0};
	pthread_t th;
	if (pthread_create(&th, NULL, job_run, &j)) {
		perror("pthread_create");
		exit(1);
	}
	pthread_join(th, NULL);
	return j.ns;
}

int
main(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(base, sizeof base, "%s/dwbench-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	unsetenv("EXTRAE_CONFIG_FILE");
	double on = 1e30, fl = 1e30;
	for (int r = 0; r < REPEAT; r++) {
		double v = on_thread(bu_floor_ns);
		if (v < fl)
			fl = v;
		v = on_thread(event_ns);
		if (v < on)
			on = v;
	}
	bu_report("extrae.event_ns", on, "ns", fl);
	double fi = 0, ft[REPEAT], fs[REPEAT], fc = 0, ts = 1e30;
	for (int r = 0; r < REPEAT; r++) {
		double a, b[3], t = thread_start_us();
		first_event(&a, b);
		fi = a > fi ? a : fi;
		ft[r] = b[0];
		fc = b[1] > fc ? b[1] : fc;
		fs[r] = b[2];
		ts = t < ts ? t : ts;
	}
	qsort(ft, REPEAT, sizeof ft[0], dbl_cmp);
	qsort(fs, REPEAT, sizeof fs[0], dbl_cmp);
	bu_report("trace.first_event_us", ft[REPEAT - 1], "us", fs[REPEAT - 1]);
	printf("bench: trace.first_event_us.target = 50.00 us\n");
	bu_report("trace.first_event_us.median", ft[REPEAT / 2], "us",
	          fs[REPEAT / 2]);
	bu_report("trace.first_event_cpu_us", fc, "us", 0);
	bu_report("trace.thread_start_us", ts, "us", 0);
	bu_report("trace.first_event_us_init", fi, "us", 0);
	struct grow g;
	grow_wall(NREC, &g);
	grow_cpu(NREC, &g);
	grow_cpu_wb(NREC, &g);
	bu_report("trace.record_median_ns", g.median_ns, "ns", g.floor_ns);
	bu_report("trace.worst_record_us", g.worst_us, "us", 0);
	printf("bench: trace.worst_record_us: wall clock, preemption "
	       "dominates it\n");
	bu_report("trace.records_over_10us", (double)g.over, "records",
	          (double)g.over_floor);
	bu_report("trace.worst_record_cpu_us", g.cpu_us, "us", g.cpu_floor_us);
	bu_report("trace.cpu_windows_over_10us", (double)g.over_cpu, "windows",
	          (double)g.over_cpu_floor);
	bu_report("trace.grow_minflt", (double)g.minflt, "faults", 0);
	bu_report("trace.grow_nvcsw", (double)g.nvcsw, "waits", 0);
	bu_report("trace.grow_inline", (double)g.inline_grown, "switches",
	          (double)g.switches);
	bu_report("trace.wb_worst_record_cpu_us", g.wb_cpu_us, "us",
	          g.cpu_floor_us);
	bu_report("trace.wb_minflt", (double)g.wb_minflt, "faults", 0);
	bu_report("trace.wb_nvcsw", (double)g.wb_nvcsw, "waits", 0);
	bu_rmtree(base);
	return 0;
}
