/*
 * The tracer's records read back: eight threads of a million events each
 * complete and in order (across many segments), every record kind with
 * its fields (a state change carrying an event read as its two
 * records), labels, thread names and a task change after init.
 */
#include <pthread.h>

#include <dwork/trace.h>

#include "tracefile/reader.h"
#include "testutil.h"

#define NTHREADS   8
#define PER_THREAD 1000000u
#define EV_SEQ     7000

static pthread_barrier_t start;

static void *
writer(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg << 32;
	pthread_barrier_wait(&start);
	for (uint32_t i = 0; i < PER_THREAD; i++)
		dwt_event(EV_SEQ, base | i);
	return NULL;
}

/* Reads every thread file of dir; checks per-thread order and returns
 * the events of type EV_SEQ counted per writer index. */
static void
check_many(const char *dir)
{
	rd_errlist errs;
	rd_errlist_init(&errs, stderr);
	rd_dir *d = NULL;
	REQUIRE(rd_dir_open(dir, &errs, &d) == DW_OK);
	CHECK_EQ_U64(d->nprocs, 1);
	uint64_t seen[NTHREADS] = {0};
	for (size_t i = 0; i < d->procs[0].nthreads; i++) {
		rd_thread *t;
		REQUIRE(rd_thread_open(d->procs[0].thread_paths[i], &errs,
		                       &t) == DW_OK);
		rd_rec r;
		uint64_t last = 0, expect = 0, idx = UINT64_MAX, n = 0;
		uint32_t kind = 0;
		while (rd_thread_next(t, &r)) {
			CHECK(r.ticks >= last);
			last = r.ticks;
			kind = r.kind;
			if (r.kind != FMT_R_EVENT || r.u.event.type != EV_SEQ)
				continue;
			uint64_t w = r.u.event.value >> 32;
			uint32_t v = (uint32_t)r.u.event.value;
			if (idx == UINT64_MAX)
				idx = w;
			CHECK_EQ_U64(w, idx);
			CHECK_EQ_U64(v, expect);
			expect = v + 1u;
			n++;
		}
		if (idx < NTHREADS)
			seen[idx] = n;
		CHECK_EQ_U64(kind, FMT_R_THREAD_END); /* every writer exited */
		const rd_header *h = rd_thread_header(t);
		CHECK(rd_header_ended(h));
		CHECK_EQ_U64(h->lost_disk + h->lost_cap, 0);
		rd_thread_close(t);
	}
	for (int i = 0; i < NTHREADS; i++)
		CHECK_EQ_U64(seen[i], PER_THREAD);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	rd_dir_close(d);
	rd_errlist_free(&errs);
}

static void
test_many_threads(void)
{
	const char *dir = tu_tmpdir("records");
	char dirbuf[512];
	snprintf(dirbuf, sizeof dirbuf, "%s", dir);
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = dirbuf;
	c.program = "many";
	c.segment_size = 64 << 10; /* 4096 records a segment: many switches */
	REQUIRE(dwt_init(&c) == DW_OK);
	pthread_t th[NTHREADS];
	pthread_barrier_init(&start, NULL, NTHREADS);
	for (uintptr_t i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, writer, (void *)i);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	dwt_stats st;
	dwt_get_stats(&st);
	/* each writer's events and its THREAD_END */
	CHECK_EQ_U64(st.records, (uint64_t)NTHREADS * (PER_THREAD + 1));
	CHECK_EQ_U64(st.threads, NTHREADS);
	CHECK(st.segments >= NTHREADS * (PER_THREAD / 4096));
	dwt_fini();
	check_many(dirbuf);
	tu_rmtree(dirbuf);
}

static void __attribute__((noinline)) some_function(void)
{
	dwt_func_enter((const void *)some_function);
	dwt_func_exit((const void *)some_function);
}

static void
record_kinds(void)
{
	uint32_t types[3] = {10, 11, 12};
	uint64_t values[3] = {100, 110, 120};
	dwt_state_push(DWT_STATE_RUNNING);
	dwt_state_push(DWT_STATE_IO);
	dwt_events(3, types, values);
	dwt_state_pop();
	dwt_state_pop();
	some_function();
	dwt_comm(DWT_SEND | DWT_LOGICAL, 3, 1, 42, 4096, 99);
	dwt_comm(DWT_RECV | DWT_PHYSICAL, 2, DWT_THREAD_ANY, 43, 8, 100);
	dwt_sync(0, 123456789, -5000, 800);
	dwt_set_task(4);
	dwt_set_ntasks(9);
	dwt_event(13, 130);
	/* a state change carrying an event: one record each, read as two */
	dwt_state_push_event(DWT_STATE_RUNNING, 71000001, 0xabcdef01u);
	dwt_state_pop_event(71000001, 0);
	dwt_state_push_event(DWT_STATE_IDLE, 0, 5); /* type 0: no event */
	dwt_state_pop_event(0, 9);
}

static void
check_kinds_stream(rd_thread *t)
{
	static const uint32_t kinds[] = {
	    FMT_R_STATE_PUSH, FMT_R_STATE_PUSH, FMT_R_EVENT,
	    FMT_R_EVENT,      FMT_R_EVENT,      FMT_R_STATE_POP,
	    FMT_R_STATE_POP,  FMT_R_FUNC_ENTER, FMT_R_FUNC_EXIT,
	    FMT_R_COMM,       FMT_R_COMM,       FMT_R_SYNC,
	    FMT_R_EVENT,      FMT_R_STATE_PUSH, FMT_R_EVENT,
	    FMT_R_EVENT,      FMT_R_STATE_POP,  FMT_R_STATE_PUSH,
	    FMT_R_STATE_POP,
	};
	rd_rec r[24];
	size_t n = 0;
	while (n < 24 && rd_thread_next(t, &r[n]))
		n++;
	REQUIRE(n == sizeof kinds / sizeof kinds[0]);
	for (size_t i = 0; i < n; i++)
		CHECK_EQ_U64(r[i].kind, kinds[i]);
	CHECK_EQ_U64(r[0].u.state.state, DWT_STATE_RUNNING);
	CHECK_EQ_U64(r[1].u.state.state, DWT_STATE_IO);
	CHECK_EQ_U64(r[3].u.event.type, 11);
	CHECK_EQ_U64(r[4].u.event.value, 120);
	CHECK(r[2].ticks == r[3].ticks && r[3].ticks == r[4].ticks);
	CHECK_EQ_U64(r[7].u.func.addr, (uintptr_t)some_function);
	CHECK_EQ_U64(r[9].u.comm.flags, RD_COMM_LOGICAL);
	CHECK_EQ_U64(r[9].u.comm.partner_task, 3);
	CHECK_EQ_U64(r[9].u.comm.partner_thread, 1);
	CHECK_EQ_U64(r[9].u.comm.tag, 42);
	CHECK_EQ_U64(r[9].u.comm.size, 4096);
	CHECK_EQ_U64(r[9].u.comm.id, 99);
	CHECK_EQ_U64(r[10].u.comm.flags, RD_COMM_RECV | RD_COMM_PHYSICAL);
	CHECK_EQ_U64(r[10].u.comm.partner_thread, FMT_COMM_THREAD_ANY);
	CHECK_EQ_U64(r[11].u.sync.ref_task, 0);
	CHECK_EQ_U64(r[11].u.sync.local_ns, 123456789);
	CHECK(r[11].u.sync.offset_ns == -5000);
	CHECK_EQ_U64(r[11].u.sync.rtt_ns, 800);
	/* the push first, then its event, at one time and one offset */
	CHECK_EQ_U64(r[13].u.state.state, DWT_STATE_RUNNING);
	CHECK_EQ_U64(r[14].u.event.type, 71000001);
	CHECK_EQ_U64(r[14].u.event.value, 0xabcdef01u);
	CHECK(r[13].ticks == r[14].ticks && r[13].offset == r[14].offset);
	/* the event first, then the pop */
	CHECK_EQ_U64(r[15].u.event.type, 71000001);
	CHECK_EQ_U64(r[15].u.event.value, 0);
	CHECK(r[15].ticks == r[16].ticks && r[15].offset == r[16].offset);
	CHECK(r[14].offset != r[15].offset);
	CHECK_EQ_U64(r[17].u.state.state, DWT_STATE_IDLE);
	CHECK_EQ_U64(r[18].u.state.state, 0);
}

static void
check_kinds_labels(const rd_proc *p)
{
	const char *fn = rd_proc_func_name(p, (uintptr_t)some_function);
	CHECK(fn && strcmp(fn, "some_function") == 0);
	const char *tn = rd_proc_type_name(p, 10);
	CHECK(tn && strcmp(tn, "Ten") == 0);
	const char *vn = rd_proc_value_name(p, 10, 100);
	CHECK(vn && strcmp(vn, "a hundred") == 0);
	const rd_state_label *sl = rd_proc_state(p, 30);
	CHECK(sl && strcmp(sl->name, "My state") == 0 && sl->rgb == 0x102030);
	const char *th = rd_proc_thread_name(p, 0);
	CHECK(th && strcmp(th, "main thread") == 0);
	CHECK(p->nmodules > 0);
	CHECK(p->has_end);
	CHECK_EQ_U64(p->hdr.task, 4);
	CHECK_EQ_U64(p->hdr.ntasks, 9);
	CHECK(rd_header_ended(&p->hdr));
}

static void
test_kinds_and_labels(void)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("kinds"));
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = dir;
	c.program = "kinds";
	REQUIRE(dwt_init(&c) == DW_OK);
	CHECK(dwt_active());
	CHECK(strcmp(dwt_dir(), dir) == 0);
	dwt_define_type(10, "Ten");
	dwt_define_value(10, 100, "a hundred");
	dwt_define_state(30, "My state", 0x102030);
	dwt_set_thread_name("main thread");
	record_kinds();
	dwt_fini();
	CHECK(!dwt_active());
	dwt_event(1, 1); /* after fini: ignored, no crash */

	rd_errlist errs;
	rd_errlist_init(&errs, stderr);
	rd_dir *d;
	REQUIRE(rd_dir_open(dir, &errs, &d) == DW_OK);
	REQUIRE(d->nprocs == 1 && d->procs[0].nthreads == 1);
	rd_proc *p;
	REQUIRE(rd_proc_open(d->procs[0].proc_path, &errs, &p) == DW_OK);
	check_kinds_labels(p);
	rd_thread *t;
	REQUIRE(rd_thread_open(d->procs[0].thread_paths[0], &errs, &t) ==
	        DW_OK);
	CHECK_EQ_U64(rd_thread_header(t)->task, 4);
	check_kinds_stream(t);
	rd_thread_close(t);
	rd_proc_close(p);
	rd_dir_close(d);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
}

int
main(void)
{
	test_kinds_and_labels();
	test_many_threads();
	return tu_report("trace_records");
}
