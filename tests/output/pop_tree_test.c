/*
 * The POP tree (issue 19 item 1) on synthetic traces whose answers are
 * worked out by hand below: load balance, communication efficiency and
 * its split into serialization (the ideal-network replay, replay.h) and
 * transfer efficiency, through st_stats_read (the merge, clocks
 * corrected) as `dwork stats` computes them, and the same from the
 * merged .prv; the critical path per function (issue 19 item 4); the
 * replay alone on golden bursts and messages.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "merge/replay.h"
#include "output/stats.h"
#include "merge_synth.h"
#include "merge_util.h"

#define U    1000000ull /* 1 ms */
#define BASE 1000       /* every trace starts at 1000 ms: time 0 */
#define LOG  2u
#define PHY  4u
#define RECV 1u

static char scratch[512];

#define H_WORK 0x77000001u /* the user function "work" */

typedef struct expect {
	double lb, comm, ser, trf, pe, ideal_ms;
	double work_ms, other_ms; /* on the critical path */
	uint64_t messages;        /* on the critical path */
} expect;

static void
near(const char *what, const char *key, double got, double hand)
{
	printf("%-14s %-26s hand %.6f measured %.6f\n", what, key, hand, got);
	if (fabs(got - hand) > 1e-6) {
		fprintf(stderr, "%s: %s is %.6f, not %.6f\n", what, key, got,
		        hand);
		tu_failures++;
	}
}

/* The critical path: "work" and the rest, the messages on it. */
static void
path(const char *what, const st_stats *s, const expect *w)
{
	double work = 0;

	for (size_t i = 0; i < s->npath; i++) {
		const char *n =
		    st_value_name(s, DW_EV_FUNCTION, s->path[i].func);

		CHECK(n && !strcmp(n, "work"));
		work += (double)s->path[i].ns / U;
	}
	near(what, "critical path: work (ms)", work, w->work_ms);
	near(what, "critical path: other (ms)", (double)s->path_other / U,
	     w->other_ms);
	near(what, "critical path: messages", (double)s->path_messages,
	     (double)w->messages);
}

/* The merged .prv read back gives the same replay and path. */
static void
same_from_prv(const char *dir, const st_stats *d)
{
	char prefix[800], prv[820];
	st_stats *s;
	rd_errlist errs;

	snprintf(prefix, sizeof prefix, "%s.merged", dir);
	snprintf(prv, sizeof prv, "%s.prv", prefix);
	rd_errlist_init(&errs, stderr);
	REQUIRE(mt_merge(dir, prefix, 0, NULL, &errs) == DW_OK);
	REQUIRE(st_stats_new(prv, &s) == DW_OK);
	REQUIRE(st_stats_read(prv, s, &errs) == DW_OK);
	CHECK_EQ_U64(errs.n, 0);
	rd_errlist_free(&errs);
	CHECK_EQ_U64(s->ideal, d->ideal);
	CHECK_EQ_U64(s->path_other, d->path_other);
	CHECK_EQ_U64(s->path_messages, d->path_messages);
	CHECK_EQ_U64(s->npath, d->npath);
	for (size_t i = 0; i < s->npath && i < d->npath; i++)
		CHECK_EQ_U64(s->path[i].ns, d->path[i].ns);
	st_stats_free(s);
}

/* The figures of the trace directory dir against w, and the JSON's
 * top-level keys. */
static void
check(const char *what, const char *dir, const expect *w)
{
	st_stats *s;
	rd_errlist errs;
	char *json = NULL, buf[128];
	size_t len = 0;
	FILE *f;

	rd_errlist_init(&errs, stderr);
	REQUIRE(st_stats_new(dir, &s) == DW_OK);
	REQUIRE(st_stats_read(dir, s, &errs) == DW_OK);
	CHECK_EQ_U64(errs.n, 0);
	rd_errlist_free(&errs);
	CHECK(s->pop.valid && s->pop.ideal_valid);
	near(what, "load_balance", s->pop.lb, w->lb);
	near(what, "communication_efficiency", s->pop.comm, w->comm);
	near(what, "serialization_efficiency", s->pop.ser, w->ser);
	near(what, "transfer_efficiency", s->pop.trf, w->trf);
	near(what, "parallel_efficiency", s->pop.pe, w->pe);
	near(what, "T_ideal (ms)", (double)s->ideal / U, w->ideal_ms);
	CHECK(fabs(s->pop.lb * s->pop.ser * s->pop.trf - s->pop.pe) < 1e-9);
	path(what, s, w);
	f = open_memstream(&json, &len);
	REQUIRE(f != NULL);
	st_print_json(s, f);
	fclose(f);
	snprintf(buf, sizeof buf, "\n  \"serialization_efficiency\": %.6f,",
	         w->ser);
	CHECK(strstr(json, buf) != NULL);
	snprintf(buf, sizeof buf, "\n  \"transfer_efficiency\": %.6f,", w->trf);
	CHECK(strstr(json, buf) != NULL);
	snprintf(buf, sizeof buf, "\n  \"load_balance\": %.6f,", w->lb);
	CHECK(strstr(json, buf) != NULL);
	CHECK(strstr(json, "\n  \"communication_efficiency\": ") != NULL);
	CHECK(strstr(json, "\n  \"parallel_efficiency\": ") != NULL);
	snprintf(buf, sizeof buf,
	         "\n  \"critical_path\": {\"length_ns\": %.0f, "
	         "\"messages\": %" PRIu64 ",",
	         w->ideal_ms * U, w->messages);
	CHECK(strstr(json, buf) != NULL);
	CHECK(strstr(json, "\"pop\": {") != NULL); /* the old keys stay */
	free(json);
	same_from_prv(dir, s);
	st_stats_free(s);
}

static void
newdir(const char *name, char *dir, size_t len)
{
	snprintf(dir, len, "%s/%s", scratch, name);
	REQUIRE(mkdir(dir, 0755) == 0);
}

/* A state from a to b (ms after BASE) on t, nested in what is open. */
static void
state(ms_thread *t, uint64_t a, uint64_t b, uint32_t st)
{
	ms_push(t, (BASE + a) * U, st);
	ms_pop(t, (BASE + b) * U);
}

/*
 * Pure load imbalance: three tasks (a plain trace: Running counts on
 * every thread) compute 10, 20 and 40 ms from 0, then idle until 40.
 * No message: the replay is the trace.  T = T_ideal = 40,
 * LB = (70/3) / 40 = 0.583333, CommE = SerE = TrfE = 1, PE = LB.
 */
static void
test_imbalance(void)
{
	static const uint64_t d[3] = {10, 20, 40};
	char dir[700];
	expect w = {70.0 / 3 / 40, 1, 1, 1, 70.0 / 3 / 40, 40, 0, 40, 0};

	newdir("imbalance", dir, sizeof dir);
	for (uint32_t i = 0; i < 3; i++) {
		ms_proc p;
		ms_thread t;

		ms_proc_init(&p, dir, 0x100 + i, 100 + i, i);
		ms_proc_end(&p, (BASE + 40) * U);
		ms_thread_open(&t, &p, 0);
		state(&t, 0, d[i], DWT_STATE_RUNNING);
		state(&t, d[i], 40, DWT_STATE_IDLE);
		ms_thread_close(&t);
		ms_proc_close(&p);
	}
	check("imbalance", dir, &w);
}

/* A dwork worker process of task k: its "worker main" idle all along
 * and its executor, given by fill. */
static void
worker(const char *dir, uint32_t k, uint64_t end, ms_proc *p, ms_thread *t)
{
	ms_thread m;

	ms_proc_init(p, dir, 0x200 + k, 200 + k, k);
	ms_label_thread(p, 0, "worker main");
	ms_label_thread(p, 1, "executor 1");
	ms_label_value(p, DW_EV_FUNCTION, H_WORK, "work");
	ms_proc_end(p, (BASE + end) * U);
	ms_thread_open(&m, p, 0);
	state(&m, 0, end, DWT_STATE_IDLE);
	ms_thread_close(&m);
	ms_thread_open(t, p, 1);
}

/* A run of "work" from a to b (ms after BASE). */
static void
run(ms_thread *t, uint64_t a, uint64_t b)
{
	ms_push(t, (BASE + a) * U, DWT_STATE_RUNNING);
	ms_event(t, (BASE + a) * U, DW_EV_FUNCTION, H_WORK);
	ms_event(t, (BASE + b) * U, DW_EV_FUNCTION, 0);
	ms_pop(t, (BASE + b) * U);
}

static void
comm(ms_thread *t, uint64_t at, unsigned flags, uint32_t peer, uint64_t id)
{
	ms_comm(t, (BASE + at) * U, flags | LOG | PHY, peer, 1, 64, id);
}

/*
 * Master/worker, every message 2 ms in transfer.  The master runs 0..1,
 * sends an item to workers 1 and 2 at 1 (received at 3), waits; each
 * executor idles 0..3, computes 3..13, sends its result at 13 (received
 * at 15); the master runs 15..16.  T = 16; U = 2, 10, 10.
 * LB = (22/3)/10 = 0.733333, CommE = 10/16 = 0.625.  Ideal network:
 * the items arrive at 1, the executors compute 1..11, the results
 * arrive at 11, the master runs 11..12: T_ideal = 12, SerE = 10/12 =
 * 0.833333, TrfE = 12/16 = 0.75, PE = 22/3/16 = 0.458333.
 */
static void
test_transfer(void)
{
	char dir[700];
	expect w = {
	    22.0 / 3 / 10, 0.625, 10.0 / 12, 0.75, 22.0 / 3 / 16, 12, 10, 2, 2};
	ms_proc p;
	ms_thread t;

	newdir("transfer", dir, sizeof dir);
	ms_proc_init(&p, dir, 0x1a, 100, 0);
	ms_label_thread(&p, 0, "master");
	ms_proc_end(&p, (BASE + 16) * U);
	ms_thread_open(&t, &p, 0);
	ms_push(&t, BASE * U, DWT_STATE_RUNNING);
	comm(&t, 1, 0, 1, 1);
	comm(&t, 1, 0, 2, 2);
	ms_push(&t, (BASE + 1) * U, DWT_STATE_WAITING_MESSAGE);
	comm(&t, 15, RECV, 1, 3);
	comm(&t, 15, RECV, 2, 4);
	ms_pop(&t, (BASE + 15) * U);
	ms_pop(&t, (BASE + 16) * U);
	ms_thread_close(&t);
	ms_proc_close(&p);
	for (uint32_t k = 1; k <= 2; k++) {
		worker(dir, k, 16, &p, &t);
		ms_push(&t, BASE * U, DWT_STATE_IDLE);
		comm(&t, 3, RECV, 0, k);
		run(&t, 3, 13);
		comm(&t, 13, 0, 0, 2 + k);
		ms_pop(&t, (BASE + 16) * U);
		ms_thread_close(&t);
		ms_proc_close(&p);
	}
	check("transfer", dir, &w);
}

/*
 * A serialized chain on a network without delay: the master runs 0..1,
 * hands worker 1 an item (sent and received at 1), waits for its result
 * (worker 1 computes 1..11, the result arrives at 11), runs 11..12,
 * hands worker 2 an item at 12 (computed 12..22, result at 22), runs
 * 22..23.  T = T_ideal = 23, U = 3, 10, 10: LB = (23/3)/10 = 0.766667,
 * CommE = SerE = 10/23 = 0.434783, TrfE = 1, PE = 1/3.
 */
static void
test_chain(void)
{
	char dir[700];
	expect w = {
	    23.0 / 3 / 10, 10.0 / 23, 10.0 / 23, 1, 1.0 / 3, 23, 20, 3, 4};
	ms_proc p;
	ms_thread t;

	newdir("chain", dir, sizeof dir);
	ms_proc_init(&p, dir, 0x1c, 100, 0);
	ms_label_thread(&p, 0, "master");
	ms_proc_end(&p, (BASE + 23) * U);
	ms_thread_open(&t, &p, 0);
	ms_push(&t, BASE * U, DWT_STATE_RUNNING);
	comm(&t, 1, 0, 1, 1);
	ms_push(&t, (BASE + 1) * U, DWT_STATE_WAITING_MESSAGE);
	comm(&t, 11, RECV, 1, 2);
	ms_pop(&t, (BASE + 11) * U);
	comm(&t, 12, 0, 2, 3);
	ms_push(&t, (BASE + 12) * U, DWT_STATE_WAITING_MESSAGE);
	comm(&t, 22, RECV, 2, 4);
	ms_pop(&t, (BASE + 22) * U);
	ms_pop(&t, (BASE + 23) * U);
	ms_thread_close(&t);
	ms_proc_close(&p);
	for (uint32_t k = 1; k <= 2; k++) {
		uint64_t a = k == 1 ? 1 : 12;

		worker(dir, k, 23, &p, &t);
		ms_push(&t, BASE * U, DWT_STATE_IDLE);
		comm(&t, a, RECV, 0, 2 * k - 1);
		run(&t, a, a + 10);
		comm(&t, a + 10, 0, 0, 2 * k);
		ms_pop(&t, (BASE + 23) * U);
		ms_thread_close(&t);
		ms_proc_close(&p);
	}
	check("chain", dir, &w);
}

/* The replay alone on hand-written bursts (ns): expected T_ideal. */
static void
test_replay_golden(void)
{
	rp_replay *r;
	uint64_t ideal;

	/* A message that waits in a queue: thread 0 runs 0..5 and sends
	 * at 5; thread 1 runs 0..8, receives it at 8 (no wait before) and
	 * runs 8..10.  Nothing to save: T_ideal = 10. */
	REQUIRE(rp_new(2, &r) == DW_OK);
	REQUIRE(rp_state(r, 0, 0, 5, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 0, 8, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 8, 10, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_msg(r, 0, 1, 5, 8) == DW_OK);
	REQUIRE(rp_run(r, &ideal) == DW_OK);
	CHECK_EQ_U64(ideal, 10);
	rp_free(r);

	/* A ping-pong of 3 ns transfers propagated: thread 0 runs 0..2,
	 * sends at 2; thread 1 waits 0..5, runs 5..9, replies at 9;
	 * thread 0 waits 2..12, runs 12..14, sends at 14; thread 1 waits
	 * 9..17, runs 17..18; both then wait (the end).  Ideal: 1 runs
	 * 2..6, reply at 6, 0 runs 6..8, sends at 8, 1 runs 8..9:
	 * T_ideal = 9 (T was 18). */
	REQUIRE(rp_new(2, &r) == DW_OK);
	REQUIRE(rp_state(r, 0, 0, 2, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 0, 2, 12, DWT_STATE_WAITING_MESSAGE) == DW_OK);
	REQUIRE(rp_state(r, 0, 12, 14, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 0, 14, 18, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 1, 0, 5, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 1, 5, 9, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_state(r, 1, 9, 17, DWT_STATE_IDLE) == DW_OK);
	REQUIRE(rp_state(r, 1, 17, 18, DWT_STATE_RUNNING) == DW_OK);
	REQUIRE(rp_msg(r, 0, 1, 2, 5) == DW_OK);
	REQUIRE(rp_msg(r, 1, 0, 9, 12) == DW_OK);
	REQUIRE(rp_msg(r, 0, 1, 14, 17) == DW_OK);
	REQUIRE(rp_run(r, &ideal) == DW_OK);
	CHECK_EQ_U64(ideal, 9);
	rp_free(r);
}

int
main(void)
{
	snprintf(scratch, sizeof scratch, "%s", tu_tmpdir("pop_tree"));
	test_replay_golden();
	test_imbalance();
	test_transfer();
	test_chain();
	if (!getenv("KEEP"))
		tu_rmtree(scratch);
	return tu_report("pop_tree");
}
