/*
 * Every function of the Extrae user API, called by a program that knows
 * only the Extrae headers, then the trace read back with the reader:
 * events, labels, user functions, communications, identity callbacks,
 * shutdown/restart, traced task range, the prefixed names.
 */
#include <stdint.h>

#include "extrae_user_events.h"

#include "testutil.h"

#include "extrae_tu.h"

#define T_PHASE 1000u
#define T_MISC  1001u

static int finalized, barrier_called;

static unsigned
task3(void)
{
	return 3;
}

static unsigned
five(void)
{
	return 5;
}

static unsigned
thread7(void)
{
	return 7;
}

static unsigned
one(void)
{
	return 1;
}

static void
on_finalize(void)
{
	finalized++;
}

static void
on_barrier(void)
{
	barrier_called++;
}

static unsigned long long enter_addr;

__attribute__((noinline)) static void
traced_fn(void)
{
	enter_addr = Extrae_user_function(1);
	CHECK(Extrae_user_function(0) == 0);
}

__attribute__((noinline)) static void
named_fn(void)
{
	__asm__ volatile("");
}

/* The address of a function, hidden from the optimiser: compilers may
 * assume two differently named functions are at different addresses. */
static uintptr_t
addr_of(uintptr_t a)
{
	__asm__ volatile("" : "+r"(a));
	return a;
}

/* The prefixed names are the same functions. */
static void
check_aliases(void)
{
#define SAME(name)                                                             \
	CHECK(addr_of((uintptr_t)SEQtrace_##name) ==                           \
	          addr_of((uintptr_t)Extrae_##name) &&                         \
	      addr_of((uintptr_t)OMPtrace_##name) ==                           \
	          addr_of((uintptr_t)Extrae_##name) &&                         \
	      addr_of((uintptr_t)MPItrace_##name) ==                           \
	          addr_of((uintptr_t)Extrae_##name) &&                         \
	      addr_of((uintptr_t)OMPItrace_##name) ==                          \
	          addr_of((uintptr_t)Extrae_##name))
	SAME(init);
	SAME(is_initialized);
	SAME(fini);
	SAME(flush);
	SAME(shutdown);
	SAME(restart);
	SAME(event);
	SAME(nevent);
	SAME(eventandcounters);
	SAME(neventandcounters);
	SAME(counters);
	SAME(previous_hwc_set);
	SAME(next_hwc_set);
	SAME(user_function);
	SAME(define_event_type);
	SAME(set_tracing_tasks);
	SAME(set_options);
	SAME(network_counters);
	SAME(network_routes);
	SAME(init_UserCommunication);
	SAME(init_CombinedEvents);
	SAME(emit_CombinedEvents);
#undef SAME
}

static void
setup_env(const char *dir)
{
	char p[600];
	snprintf(p, sizeof p, "%s/final", dir);
	setenv("EXTRAE_FINAL_DIR", p, 1);
	snprintf(p, sizeof p, "%s/temporary", dir);
	setenv("EXTRAE_DIR", p, 1);
	setenv("EXTRAE_ON", "1", 1);
	setenv("EXTRAE_PROGRAM_NAME", "api", 1);
	setenv("EXTRAE_BUFFER_SIZE", "20000", 1);
	unsetenv("EXTRAE_CONFIG_FILE");
}

static void
identity_and_labels(void)
{
	extrae_type_t type = T_PHASE;
	unsigned n = 2;
	extrae_value_t values[2] = {0, 1};
	char *names[2] = {"End", "Compute"};
	Extrae_set_taskid_function(task3);
	Extrae_set_numtasks_function(five);
	Extrae_set_threadid_function(thread7);
	Extrae_set_numthreads_function(one);
	Extrae_set_barrier_tasks_function(on_barrier);
	Extrae_set_finalize_task_function(on_finalize);
	Extrae_define_event_type(&type, "Phase", &n, values, names);
	Extrae_define_event_type(&type, "Phase", NULL, NULL, NULL);
	Extrae_define_event_type(NULL, NULL, NULL, NULL, NULL);
	Extrae_register_codelocation_type(2000, 2001, "Caller", "Caller line");
	Extrae_register_function_address((void *)named_fn, "my_named_fn",
	                                 "module", 12);
	Extrae_register_stacked_type(2000);
	Extrae_set_thread_name(7, "main thread");
}

static void
plain_events(void)
{
	extrae_type_t types[3] = {T_MISC, T_MISC, T_MISC};
	extrae_value_t values[3] = {10, 11, 12};
	Extrae_event(T_PHASE, 1);
	Extrae_event(T_PHASE, 0);
	Extrae_nevent(3, types, values);
	Extrae_nevent(0, NULL, NULL);
	SEQtrace_event(T_MISC, 20);
	OMPtrace_event(T_MISC, 21);
	MPItrace_event(T_MISC, 22);
	OMPItrace_event(T_MISC, 23);
	Extrae_eventandcounters(T_MISC, 30);
	Extrae_neventandcounters(2, types, values);
	Extrae_counters();
	Extrae_previous_hwc_set();
	Extrae_next_hwc_set();
	Extrae_network_counters();
	Extrae_network_routes(0);
}

static void
functions(void)
{
	Extrae_set_options(EXTRAE_ENABLE_ALL_OPTIONS);
	traced_fn();
	Extrae_set_options(EXTRAE_HWC_OPTION);
	Extrae_function_from_address(60000019, (void *)named_fn);
	Extrae_function_from_address(60000019, NULL);
	Extrae_resume_virtual_thread(4);
	Extrae_suspend_virtual_thread();
}

__attribute__((noinline)) static void
combined(void)
{
	extrae_user_communication_t c[2];
	extrae_combined_events_t e;
	extrae_type_t t[1] = {T_MISC};
	extrae_value_t v[1] = {40};
	Extrae_init_UserCommunication(&c[0]);
	CHECK(c[0].type == EXTRAE_USER_SEND && c[0].id == 0 &&
	      c[0].partner == 0);
	Extrae_init_UserCommunication(&c[1]);
	Extrae_init_CombinedEvents(&e);
	CHECK(e.UserFunction == EXTRAE_USER_FUNCTION_NONE && e.nEvents == 0 &&
	      e.Communications == NULL);
	c[0].tag = 3, c[0].size = 100, c[0].partner = 1, c[0].id = 42;
	c[1].type = EXTRAE_USER_RECV, c[1].tag = 4, c[1].size = 8;
	c[1].partner = EXTRAE_COMM_PARTNER_MYSELF, c[1].id = 43;
	e.nEvents = 1, e.Types = t, e.Values = v, e.HardwareCounters = 1;
	e.nCommunications = 2, e.Communications = c;
	e.Callers = 1;
	Extrae_emit_CombinedEvents(&e);
	Extrae_init_CombinedEvents(&e);
	e.UserFunction = EXTRAE_USER_FUNCTION_ENTER;
	Extrae_emit_CombinedEvents(&e);
	e.UserFunction = EXTRAE_USER_FUNCTION_LEAVE;
	Extrae_emit_CombinedEvents(&e);
}

static void
pausing(void)
{
	Extrae_shutdown();
	Extrae_event(T_MISC, 777);
	Extrae_restart();
	Extrae_event(T_MISC, 778);
	Extrae_set_tracing_tasks(0, 1); /* we are task 3 */
	Extrae_event(T_MISC, 779);
	OMPtrace_set_tracing_tasks(0, 10);
	Extrae_event(T_MISC, 780);
	Extrae_flush();
}

static void
run(const char *dir)
{
	unsigned M = 9, m = 9, r = 9;
	setup_env(dir);
	check_aliases();
	Extrae_get_version(&M, &m, &r);
	Extrae_get_version(NULL, NULL, NULL);
	CHECK(M == 5 && m == 1 && r == 2); /* Extrae 5.1.2 */
	CHECK(Extrae_is_initialized() == EXTRAE_NOT_INITIALIZED);
	Extrae_event(T_MISC, 999); /* before init: nothing */
	identity_and_labels();
	Extrae_init();
	CHECK(Extrae_is_initialized() == EXTRAE_INITIALIZED_EXTRAE_INIT);
	SEQtrace_init(); /* harmless */
	plain_events();
	functions();
	combined();
	pausing();
	Extrae_fini();
	CHECK(Extrae_is_initialized() == EXTRAE_NOT_INITIALIZED);
	CHECK(finalized == 1 && barrier_called == 0);
	Extrae_event(T_MISC, 781); /* after fini: nothing */
	Extrae_fini();
	CHECK(finalized == 1);
}

static void
check_events(const struct xt_proc *p)
{
	static const uint64_t want[] = {10, 11, 12, 20,  21, 22,
	                                23, 30, 40, 778, 780};
	static const uint64_t never[] = {777, 779, 781, 999};
	CHECK_EQ_U64(xt_count_event(p, T_PHASE, 1), 1);
	CHECK_EQ_U64(xt_count_event(p, T_PHASE, 0), 1);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		CHECK(xt_count_event(p, T_MISC, want[i]) >= 1);
	CHECK_EQ_U64(xt_count_event(p, T_MISC, 10), 2); /* nevent, nevent+c */
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
		CHECK_EQ_U64(xt_count_event(p, T_MISC, never[i]), 0);
	CHECK_EQ_U64(xt_count_event(p, 39000010, 5), 1); /* vthread 4 */
	CHECK_EQ_U64(xt_count_event(p, 39000010, 0), 1);
}

/* Events of one nevent share a timestamp. */
static void
check_same_time(const struct xt_proc *p)
{
	for (size_t i = 0; i + 2 < p->n; i++) {
		const rd_rec *a = &p->recs[i].r;
		if (a->kind != FMT_R_EVENT || a->u.event.type != T_MISC ||
		    a->u.event.value != 10)
			continue;
		CHECK(p->recs[i + 1].r.ticks == a->ticks &&
		      p->recs[i + 2].r.ticks == a->ticks);
		return;
	}
	CHECK(!"no nevent batch found");
}

static void
check_functions(const struct xt_proc *p)
{
	long i = xt_find_kind(p, FMT_R_FUNC_ENTER, 0);
	REQUIRE(i >= 0);
	CHECK(enter_addr > (uintptr_t)traced_fn &&
	      enter_addr < (uintptr_t)traced_fn + 256);
	CHECK_EQ_U64(p->recs[i].r.u.func.addr, enter_addr);
	CHECK(xt_streq(rd_proc_func_name(p->labels, enter_addr), "traced_fn"));
	long x = xt_find_kind(p, FMT_R_FUNC_EXIT, (size_t)i);
	CHECK(x > i && p->recs[x].r.u.func.addr == 0);
	long j = xt_find_kind(p, FMT_R_FUNC_ENTER, (size_t)i + 1);
	REQUIRE(j > 0);
	CHECK_EQ_U64(p->recs[j].r.u.func.addr, (uintptr_t)named_fn);
	CHECK(xt_streq(rd_proc_func_name(p->labels, (uintptr_t)named_fn),
	               "my_named_fn"));
	/* two more from the combined events: enter in combined() */
	long k = xt_find_kind(p, FMT_R_FUNC_ENTER, (size_t)j + 1);
	REQUIRE(k > 0);
	CHECK(xt_streq(rd_proc_func_name(p->labels, p->recs[k].r.u.func.addr),
	               "combined"));
}

static void
check_comms(const struct xt_proc *p)
{
	long i = xt_find_kind(p, FMT_R_COMM, 0);
	REQUIRE(i >= 0 && (size_t)i + 1 < p->n);
	const rd_rec *s = &p->recs[i].r, *r = &p->recs[i + 1].r;
	CHECK_EQ_U64(s->u.comm.flags, RD_COMM_LOGICAL | RD_COMM_PHYSICAL);
	CHECK_EQ_U64(s->u.comm.partner_task, 1);
	CHECK_EQ_U64(s->u.comm.tag, 3);
	CHECK_EQ_U64(s->u.comm.size, 100);
	CHECK_EQ_U64(s->u.comm.id, 42);
	CHECK_EQ_U64(s->u.comm.partner_thread, FMT_COMM_THREAD_ANY);
	CHECK_EQ_U64(r->kind, FMT_R_COMM);
	CHECK_EQ_U64(r->u.comm.flags,
	             RD_COMM_RECV | RD_COMM_LOGICAL | RD_COMM_PHYSICAL);
	CHECK_EQ_U64(r->u.comm.partner_task, 3); /* myself */
	CHECK_EQ_U64(r->u.comm.id, 43);
}

static void
check_labels(const struct xt_proc *p)
{
	const rd_proc *l = p->labels;
	REQUIRE(l);
	CHECK(xt_streq(rd_proc_type_name(l, T_PHASE), "Phase"));
	CHECK(xt_streq(rd_proc_value_name(l, T_PHASE, 1), "Compute"));
	CHECK(xt_streq(rd_proc_value_name(l, T_PHASE, 0), "End"));
	CHECK(xt_streq(rd_proc_type_name(l, 2000), "Caller"));
	CHECK(xt_streq(rd_proc_type_name(l, 2001), "Caller line"));
	CHECK(xt_streq(rd_proc_thread_name(l, 7), "main thread"));
}

static void
check(const char *dir)
{
	char final[600], tmp[600];
	snprintf(final, sizeof final, "%s/final", dir);
	snprintf(tmp, sizeof tmp, "%s/temporary", dir);
	CHECK(access(tmp, F_OK) != 0); /* files go where they stay */
	struct xt_trace tr = xt_load(final);
	CHECK_EQ_U64(tr.errors, 0);
	REQUIRE(tr.n == 1);
	const struct xt_proc *p = &tr.p[0];
	CHECK_EQ_U64(p->hdr.task, 3);
	CHECK_EQ_U64(p->hdr.ntasks, 5);
	CHECK(xt_streq(p->hdr.program, "api"));
	CHECK(rd_header_ended(&p->hdr));
	CHECK_EQ_U64(p->hdr.segment_size, 323584); /* 20000 records */
	CHECK(p->nthreads == 1 && p->threads[0] == 7);
	check_events(p);
	check_same_time(p);
	check_functions(p);
	check_comms(p);
	check_labels(p);
	xt_free(&tr);
}

int
main(void)
{
	const char *dir = tu_tmpdir("extrae-api");
	run(dir);
	check(dir);
	tu_rmtree(dir);
	return tu_report("extrae_api");
}
