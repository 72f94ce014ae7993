/*
 * A foreign-function binding's view (Extrae.jl does this): the program
 * links no tracer, opens "libseqtrace.so" through the library path, looks
 * the functions up by name and calls them through pointers with its own
 * idea of the types (fixed-width integers, its own struct layout), as
 * Julia's ccall would.  Then libdwtrace.so.0 opened by its own name must
 * be the very same object, with the same tracer state.
 */
#include <dlfcn.h>
#include <stdint.h>

#include "testutil.h"

#include "extrae_tu.h"

/* The binding's declarations: no Extrae header. */
struct ffi_comm {
	int32_t type; /* 0 send, 1 receive */
	uint32_t tag, size, partner;
	int64_t id;
};

struct ffi_combined {
	int32_t hw_counters, callers, user_function;
	uint32_t n_events;
	uint32_t *types;
	uint64_t *values;
	uint32_t n_comms;
	struct ffi_comm *comms;
};

struct ffi {
	void (*init)(void);
	int32_t (*is_initialized)(void);
	void (*fini)(void);
	void (*event)(uint32_t, uint64_t);
	void (*seq_event)(uint32_t, uint64_t);
	uint64_t (*user_function)(uint32_t);
	void (*define)(uint32_t *, char *, uint32_t *, uint64_t *, char **);
	void (*set_taskid)(uint32_t (*)(void));
	void (*get_version)(uint32_t *, uint32_t *, uint32_t *);
	void (*init_comm)(struct ffi_comm *);
	void (*init_combined)(struct ffi_combined *);
	void (*emit)(struct ffi_combined *);
};

static void *
sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (!p)
		fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
	REQUIRE(p);
	return p;
}

static void
bind(void *h, struct ffi *f)
{
	*(void **)&f->init = sym(h, "Extrae_init");
	*(void **)&f->is_initialized = sym(h, "Extrae_is_initialized");
	*(void **)&f->fini = sym(h, "Extrae_fini");
	*(void **)&f->event = sym(h, "Extrae_event");
	*(void **)&f->seq_event = sym(h, "SEQtrace_event");
	*(void **)&f->user_function = sym(h, "Extrae_user_function");
	*(void **)&f->define = sym(h, "Extrae_define_event_type");
	*(void **)&f->set_taskid = sym(h, "Extrae_set_taskid_function");
	*(void **)&f->get_version = sym(h, "Extrae_get_version");
	*(void **)&f->init_comm = sym(h, "Extrae_init_UserCommunication");
	*(void **)&f->init_combined = sym(h, "Extrae_init_CombinedEvents");
	*(void **)&f->emit = sym(h, "Extrae_emit_CombinedEvents");
}

static uint32_t
task2(void)
{
	return 2;
}

static uint64_t user_fn_addr;

__attribute__((noinline)) static void
jitted(const struct ffi *f)
{
	user_fn_addr = f->user_function(1);
	f->user_function(0);
}

static void
record(const struct ffi *f)
{
	uint32_t type = 7000, n = 1;
	uint64_t v = 1;
	char *names[] = {"one"};
	struct ffi_comm c;
	struct ffi_combined e;
	f->define(&type, "From a binding", &n, &v, names);
	f->event(7000, 1);
	f->seq_event(7000, UINT64_C(1) << 40); /* 64-bit values pass */
	jitted(f);
	f->init_comm(&c);
	f->init_combined(&e);
	CHECK(e.user_function == -1);
	c.type = 0, c.tag = 5, c.size = 64, c.partner = 0, c.id = 77;
	e.n_comms = 1, e.comms = &c;
	f->emit(&e);
}

/* Both names are one object: one tracer. */
static void
same_object(void *h)
{
	void *h2 = dlopen("libdwtrace.so.0", RTLD_NOW | RTLD_NOLOAD);
	CHECK(h2 == h);
	int (*active)(void) = NULL;
	*(void **)&active = sym(h2 ? h2 : h, "dwt_active");
	CHECK(active() == 1);
	if (h2)
		dlclose(h2);
}

static void
check(const char *dir)
{
	struct xt_trace tr = xt_load(dir);
	CHECK_EQ_U64(tr.errors, 0);
	REQUIRE(tr.n == 1);
	struct xt_proc *p = &tr.p[0];
	CHECK_EQ_U64(p->hdr.task, 2);
	CHECK_EQ_U64(xt_count_event(p, 7000, 1), 1);
	CHECK_EQ_U64(xt_count_event(p, 7000, UINT64_C(1) << 40), 1);
	CHECK(xt_streq(rd_proc_type_name(p->labels, 7000), "From a binding"));
	CHECK(xt_streq(rd_proc_value_name(p->labels, 7000, 1), "one"));
	long i = xt_find_kind(p, FMT_R_FUNC_ENTER, 0);
	CHECK(i >= 0 && p->recs[i].r.u.func.addr == user_fn_addr);
	CHECK(xt_streq(rd_proc_func_name(p->labels, user_fn_addr), "jitted"));
	long c = xt_find_kind(p, FMT_R_COMM, 0);
	CHECK(c >= 0 && p->recs[c].r.u.comm.id == 77 &&
	      p->recs[c].r.u.comm.size == 64);
	xt_free(&tr);
}

int
main(void)
{
	const char *dir = tu_tmpdir("extrae-dlopen");
	struct ffi f;
	uint32_t M = 0, m = 0, r = 0;
	setenv("EXTRAE_ON", "1", 1);
	setenv("EXTRAE_FINAL_DIR", dir, 1);
	setenv("EXTRAE_SKIP_AUTO_LIBRARY_INITIALIZE", "1",
	       1); /* as Extrae_jll */
	void *h = dlopen("libseqtrace.so", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fprintf(stderr, "dlopen libseqtrace.so: %s\n", dlerror());
	REQUIRE(h);
	bind(h, &f);
	f.get_version(&M, &m, &r);
	CHECK(M == 5 && m == 1 && r == 2);
	CHECK(f.is_initialized() == 0);
	f.set_taskid(task2);
	f.init();
	CHECK(f.is_initialized() == 1);
	record(&f);
	same_object(h);
	f.fini();
	dlclose(h);
	check(dir);
	tu_rmtree(dir);
	return tu_report("extrae_dlopen");
}
