/*
 * Extrae_counters and friends: where the kernel allows perf_event, the
 * software counters (task clock, context switches, page faults) are
 * recorded as increments at the event's timestamp, labelled, per thread;
 * hardware counters too where a PMU exists.  Where the kernel allows
 * none, nothing is recorded and one line says why (docs/extrae-compat.md).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/syscall.h>

#include "extrae_user_events.h"

#include "testutil.h"

#include "extrae_tu.h"

#define T_TASK_CLOCK 39000001u
#define T_CTX        39000002u
#define T_FAULTS     39000003u
#define T_INS        42000050u
#define T_CYC        42000059u

/* Whether this machine lets us open a counter of this kind at all. */
static int
can_open(uint32_t kind, uint64_t config)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = kind;
	a.config = config;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0)
		return 0;
	close((int)fd);
	return 1;
}

static volatile double sink;

static void
spin(void)
{
	for (int i = 0; i < 3000000; i++)
		sink += i * 0.5;
}

static void *
other_thread(void *arg)
{
	(void)arg;
	Extrae_eventandcounters(400, 2);
	spin();
	Extrae_eventandcounters(400, 3);
	return NULL;
}

/* A forked child's counters count the child, not its parent (which only
 * waits meanwhile). */
static void
forked(void)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		Extrae_counters();
		spin();
		Extrae_eventandcounters(400, 5);
		Extrae_fini();
		_exit(0);
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
}

static void
record(void)
{
	pthread_t th;
	Extrae_counters();
	spin();
	Extrae_eventandcounters(400, 1);
	extrae_type_t t[2] = {401, 402};
	extrae_value_t v[2] = {1, 1};
	Extrae_neventandcounters(2, t, v);
	REQUIRE(pthread_create(&th, NULL, other_thread, NULL) == 0);
	pthread_join(th, NULL);
	Extrae_set_options(EXTRAE_DISABLE_ALL_OPTIONS);
	Extrae_eventandcounters(400, 4); /* the event only */
	Extrae_set_options(EXTRAE_HWC_OPTION);
	forked();
}

/* The counters of the record holding (400, value) on its thread. */
static uint64_t
counter_at(const struct xt_proc *p, uint64_t value, uint32_t type, int *found)
{
	*found = 0;
	for (size_t i = 0; i < p->n; i++) {
		const rd_rec *r = &p->recs[i].r;
		if (r->kind != FMT_R_EVENT || r->u.event.type != 400 ||
		    r->u.event.value != value)
			continue;
		for (size_t j = i + 1; j < p->n; j++) {
			const rd_rec *q = &p->recs[j].r;
			if (p->recs[j].thread != p->recs[i].thread ||
			    q->ticks != r->ticks || q->kind != FMT_R_EVENT)
				break;
			if (q->u.event.type == type) {
				*found = 1;
				return q->u.event.value;
			}
		}
	}
	return 0;
}

static void
check_present(const struct xt_proc *p, int hw)
{
	int f;
	/* After 3M multiplications the task clock moved by > 1 ms. */
	CHECK(counter_at(p, 1, T_TASK_CLOCK, &f) > 1000000 && f);
	counter_at(p, 1, T_CTX, &f);
	CHECK(f);
	counter_at(p, 1, T_FAULTS, &f);
	CHECK(f);
	CHECK(counter_at(p, 3, T_TASK_CLOCK, &f) > 1000000 && f);
	counter_at(p, 4, T_TASK_CLOCK, &f);
	CHECK(!f);
	CHECK(xt_streq(rd_proc_type_name(p->labels, T_TASK_CLOCK),
	               "Task clock (ns of CPU time)"));
	CHECK(
	    xt_streq(rd_proc_type_name(p->labels, T_CTX), "Context switches"));
	CHECK(xt_streq(rd_proc_type_name(p->labels, T_FAULTS), "Page faults"));
	CHECK(xt_count_type(p, 401) == 1 &&
	      xt_count_type(p, T_TASK_CLOCK) == 5);
	counter_at(p, 1, T_INS, &f);
	CHECK(f == hw);
	if (hw)
		CHECK(xt_streq(rd_proc_type_name(p->labels, T_INS),
		               "PAPI_TOT_INS [Instr completed]"));
}

int
main(void)
{
	const char *dir = tu_tmpdir("extrae-counters");
	int sw = can_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	int hw = can_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
	struct xt_capture c;
	setenv("EXTRAE_ON", "1", 1);
	setenv("EXTRAE_FINAL_DIR", dir, 1);
	Extrae_init();
	xt_capture_begin(&c);
	record();
	char *msg = xt_capture_end(&c);
	Extrae_fini();
	struct xt_trace tr = xt_load(dir);
	REQUIRE(tr.n == 2); /* this process and its forked child */
	const struct xt_proc *p = &tr.p[0], *child = &tr.p[1];
	if (xt_count_event(p, 400, 5)) {
		p = &tr.p[1];
		child = &tr.p[0];
	}
	CHECK_EQ_U64(xt_count_event(p, 400, 4), 1);
	CHECK_EQ_U64(xt_count_event(child, 400, 5), 1);
	if (sw) {
		int f;
		CHECK(counter_at(child, 5, T_TASK_CLOCK, &f) > 1000000 && f);
	}
	if (sw) {
		CHECK(msg[0] == 0);
		check_present(p, hw);
		printf("extrae_counters: software counters%s recorded\n",
		       hw ? " and hardware" : " (no PMU: no hardware)");
	} else {
		CHECK_EQ_U64(xt_count_type(p, T_TASK_CLOCK), 0);
		CHECK(xt_count_str(msg, "perf_event_open failed") == 1);
		printf("extrae_counters: the kernel allows no counter here: "
		       "none recorded, as documented\n");
	}
	free(msg);
	xt_free(&tr);
	tu_rmtree(dir);
	return tu_report("extrae_counters");
}
