/*
 * User function names: addresses recorded by dwt_func_enter/exit are
 * named at fini on this host, for a static function of this PIE
 * executable and for an exported and a static function of a shared
 * library; an explicit dwt_define_function name wins; the module map is
 * recorded so a killed process can be named later.
 */
#include <dwork/trace.h>

#include "tracefile/reader.h"
#include "testutil.h"

typedef int (*elfsym_lib_fn)(int);
int elfsym_lib_exported(int x);
elfsym_lib_fn elfsym_lib_get_static(void);

static volatile int sink;

static __attribute__((noinline)) void
exe_static_function(void)
{
	sink++;
}

static __attribute__((noinline)) void
renamed_function(void)
{
	sink--;
}

int
main(void)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("funcs"));
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = dir;
	c.program = "funcs";
	REQUIRE(dwt_init(&c) == DW_OK);
	const void *lib_static = (const void *)elfsym_lib_get_static();
	const void *addrs[] = {(const void *)exe_static_function,
	                       (const void *)elfsym_lib_exported, lib_static,
	                       (const void *)renamed_function};
	const char *names[] = {"exe_static_function", "elfsym_lib_exported",
	                       "elfsym_lib_static", "my own name"};
	dwt_define_function(addrs[3], "my own name");
	for (int i = 0; i < 4; i++) {
		dwt_func_enter(addrs[i]);
		dwt_func_exit(addrs[i]);
	}
	exe_static_function();
	renamed_function();
	elfsym_lib_exported(1);
	dwt_fini();

	rd_errlist errs;
	rd_errlist_init(&errs, stderr);
	rd_dir *d;
	REQUIRE(rd_dir_open(dir, &errs, &d) == DW_OK);
	rd_proc *p;
	REQUIRE(rd_proc_open(d->procs[0].proc_path, &errs, &p) == DW_OK);
	for (int i = 0; i < 4; i++) {
		const char *n = rd_proc_func_name(p, (uintptr_t)addrs[i]);
		if (!n || strcmp(n, names[i]) != 0) {
			fprintf(stderr,
			        "address %d named '%s', expected '%s'\n", i,
			        n ? n : "(none)", names[i]);
			tu_failures++;
		}
	}
	/* The module map covers the executable and the library. */
	const rd_module *m = rd_proc_module(p, (uintptr_t)addrs[0]);
	CHECK(m && strstr(m->path, "trace_funcs_test"));
	m = rd_proc_module(p, (uintptr_t)addrs[2]);
	CHECK(m && strstr(m->path, "elfsym_lib"));
	rd_proc_close(p);
	rd_dir_close(d);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
	return tu_report("trace_funcs");
}
