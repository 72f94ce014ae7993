/*
 * One tracer per process: a binding that opens libseqtrace.so (by name,
 * through the library path, as Extrae.jl does) beside libdwork gets the
 * very library libdwork uses, and so its tracing session.
 *
 * - With the runtime tracing (dw_options.trace): Extrae_is_initialized
 *   says so before any Extrae_init, Extrae_init keeps the session, and
 *   the binding's event is in the runtime's trace directory, in the
 *   master's files; EXTRAE_FINAL_DIR is not used.
 * - With the runtime not tracing, EXTRAE_ON=1 does not start a session
 *   (DWORK_TRACE alone decides) and creates nothing.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dwork/dwork.h>

#include "testutil.h"

#include "extrae_tu.h"

struct xapi {
	void (*init)(void), (*fini)(void);
	int (*is_initialized)(void);
	void (*event)(unsigned, unsigned long long);
};

static void
bind_xapi(struct xapi *x)
{
	void *h = dlopen("libseqtrace.so", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fprintf(stderr, "dlopen libseqtrace.so: %s\n", dlerror());
	REQUIRE(h);
	*(void **)&x->init = dlsym(h, "Extrae_init");
	*(void **)&x->fini = dlsym(h, "Extrae_fini");
	*(void **)&x->is_initialized = dlsym(h, "Extrae_is_initialized");
	*(void **)&x->event = dlsym(h, "Extrae_event");
	REQUIRE(x->init && x->fini && x->is_initialized && x->event);
}

static char base[600], other[700];

/* The runtime does not trace: Extrae's variables start nothing. */
static int
untraced(void)
{
	struct xapi x;
	dw_options o = {.trace = "0"};
	if (dw_init_opts(NULL, NULL, &o) != DW_OK)
		return 2;
	bind_xapi(&x);
	x.init();
	x.event(8000, 1);
	CHECK(x.is_initialized() == 0);
	CHECK(dw_finalize() == DW_OK);
	CHECK(access(other, F_OK) != 0);
	return tu_failures ? 1 : 0;
}

static void
traced(void)
{
	struct xapi x;
	char dir[700];
	snprintf(dir, sizeof dir, "%s/trace", base);
	dw_options o = {.trace = dir, .no_merge = 1};
	REQUIRE(dw_init_opts(NULL, NULL, &o) == DW_OK);
	bind_xapi(&x);
	CHECK(x.is_initialized() == 1); /* the runtime's session */
	x.init();
	x.event(8000, 5);
	CHECK(dw_finalize() == DW_OK);
	CHECK(access(other, F_OK) != 0);
	struct xt_trace tr = xt_load(dir);
	REQUIRE(tr.n == 1);
	CHECK_EQ_U64(xt_count_event(&tr.p[0], 8000, 5), 1);
	/* the runtime's own records are in the same files */
	CHECK(xt_streq(tr.p[0].labels ? tr.p[0].labels->pname : "", "master"));
	xt_free(&tr);
}

int
main(void)
{
	snprintf(base, sizeof base, "%s", tu_tmpdir("extrae-runtime"));
	snprintf(other, sizeof other, "%s/extrae-dir", base);
	setenv("EXTRAE_ON", "1", 1);
	setenv("EXTRAE_FINAL_DIR", other, 1);
	setenv("EXTRAE_SKIP_AUTO_LIBRARY_INITIALIZE", "1", 1);
	unsetenv("DWORK_TRACE");
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(untraced());
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	traced();
	tu_rmtree(base);
	return tu_report("extrae_runtime");
}
