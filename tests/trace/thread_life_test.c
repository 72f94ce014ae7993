/*
 * Threads begin and end where they did: a thread that records for 20 ms
 * and exits is Not created after its exit and Running for its real
 * duration; a thread created late is Not created before it started.
 * Once with the tracer's own API, once with the Extrae API only (whose
 * threads run unless they say otherwise); each in a child process, its
 * trace merged and checked with the strict checker.
 */
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

#include <dwork/trace.h>

#include "extrae_user_events.h"

#include "merge_util.h"
#include "prv_states.h"

#define MS       1000000ull
#define TOL      (1 * MS) /* against the times the child measured */
#define T_PHASE  1000u
#define T1_START 30 /* ms after the main thread's first record */
#define T1_LEN   20
#define T2_START 200
#define T2_LEN   20
#define MAIN_LEN 300

static int use_extrae;

static void
sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts))
		;
}

static void
mark(uint64_t v)
{
	if (use_extrae)
		Extrae_event(T_PHASE, v);
	else
		dwt_event(T_PHASE, v);
}

/* Real times the child measured (ns on the trace's clock), sent to the
 * parent through a pipe: main's first record, each thread's first and
 * its exit. */
struct real {
	uint64_t main0, start[2], end[2];
	uint64_t init_ns; /* Extrae_init's length: the trace starts in it */
};
static struct real real;

/* Records for arg ms, then exits without popping its state. */
static void *
worker(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;
	real.start[k] = dwt_now_ns();
	if (!use_extrae)
		dwt_state_push(DWT_STATE_RUNNING);
	mark(2);
	sleep_ms(k ? T2_LEN : T1_LEN);
	mark(0);
	real.end[k] = dwt_now_ns();
	return NULL;
}

static void
spawn_join(unsigned k)
{
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, worker, (void *)(uintptr_t)k) == 0);
	pthread_join(t, NULL);
}

/* The traced program: main, then T1, then T2 late. */
static void
child(const char *dir, int fd)
{
	if (use_extrae) {
		setenv("EXTRAE_DIR", dir, 1);
		setenv("EXTRAE_FINAL_DIR", dir, 1);
		setenv("EXTRAE_ON", "1", 1);
		setenv("EXTRAE_PROGRAM_NAME", "life", 1);
		uint64_t t0 = dwt_now_ns();
		Extrae_init();
		real.init_ns = dwt_now_ns() - t0;
	} else {
		dwt_config c;
		dwt_config_defaults(&c);
		c.dir = dir;
		c.program = "life";
		REQUIRE(dwt_init(&c) == DW_OK);
		real.main0 = dwt_now_ns();
		dwt_state_push(DWT_STATE_RUNNING);
	}
	if (use_extrae)
		real.main0 = dwt_now_ns();
	mark(1);
	sleep_ms(T1_START);
	spawn_join(0);
	sleep_ms(T2_START - T1_START - T1_LEN);
	spawn_join(1);
	sleep_ms(MAIN_LEN - T2_START - T2_LEN);
	mark(0);
	if (use_extrae)
		Extrae_fini();
	else
		dwt_fini();
	REQUIRE(write(fd, &real, sizeof real) == sizeof real);
	exit(0);
}

/* start is known within [start - slack, start] */
static void
check_thread(const ps_trace *p, uint32_t th, uint64_t start, uint64_t len,
             uint64_t slack)
{
	const ps_thread *t = NULL;
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].task == 1 && p->t[i].thread == th)
			t = &p->t[i];
	CHECK(t != NULL);
	if (!t)
		return;
	fprintf(stderr, "  thread %u: expected born %.3f ms, running %.3f ms\n",
	        th, start / 1e6, len / 1e6);
	fprintf(stderr,
	        "  thread %u: born %.3f ms, ended %.3f ms, running %.3f ms, "
	        "not created %.3f ms of %.3f\n",
	        th, t->born / 1e6, t->died / 1e6, t->ns[1] / 1e6,
	        t->ns[2] / 1e6, p->ftime / 1e6);
	CHECK(ps_near(t->born, start - slack / 2, TOL + slack / 2));
	CHECK(ps_near(t->died, start + len - slack / 2, TOL + slack / 2));
	CHECK(ps_near(t->ns[1], len, TOL));
	CHECK_EQ_U64(t->ns[2], p->ftime - (t->died - t->born));
	/* Extrae API: its trace initialisation (Others) and final flush
	 * (I/O) are parts of the main thread's life too, as in Extrae */
	CHECK(t->died - t->born == t->ns[1] + t->ns[0] + t->ns[12] + t->ns[15]);
}

static void
scenario(int extrae)
{
	const char *tmp = tu_tmpdir("life");
	char dir[600], prefix[700];
	rd_errlist errs;
	ps_trace p;
	int st;

	fprintf(stderr, "%s API:\n", extrae ? "Extrae" : "tracer");
	snprintf(dir, sizeof dir, "%s/trace", tmp);
	snprintf(prefix, sizeof prefix, "%s/out", tmp);
	use_extrae = extrae;
	int fds[2];
	REQUIRE(pipe(fds) == 0);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		child(dir, fds[1]);
	close(fds[1]);
	struct real got = {0};
	CHECK(read(fds[0], &got, sizeof got) == sizeof got);
	close(fds[0]);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 0, NULL, &errs) == DW_OK);
	CHECK(errs.n == 0);
	rd_errlist_free(&errs);
	mt_check(prefix, PC_ALL, NULL);
	REQUIRE(ps_load(prefix, &p) == 0);
	CHECK_EQ_U64(p.n, 3);
	/* the main thread lives from its first record to the end; the
	 * others from their first record to their exit */
	check_thread(&p, 1, 0, p.ftime, 0);
	/* Extrae's trace begins inside Extrae_init (its application begin
	 * and trace initialisation records), so main0 is a little late */
	for (int k = 0; k < 2; k++)
		check_thread(&p, 2 + k, got.start[k] - got.main0 + got.init_ns,
		             got.end[k] - got.start[k], got.init_ns);
	CHECK(got.end[0] - got.start[0] >= T1_LEN * MS);
	tu_rmtree(tmp);
}

int
main(void)
{
	unsetenv("EXTRAE_CONFIG_FILE");
	scenario(0);
	scenario(1);
	return tu_report("thread_life");
}
