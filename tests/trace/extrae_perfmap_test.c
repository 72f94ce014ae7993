/*
 * Names for code with no ELF symbol: JITs (Julia, V8, the JVM's agents)
 * write /tmp/perf-PID.map ("START SIZE name" in hex, a line each), and
 * the tracer names such addresses from it at fini, as perf does: the
 * last entry holding an address wins (a JIT may reuse memory).  Here the
 * "JIT code" is an anonymous mapping, which no ELF file describes;
 * Extrae_function_from_address enters and leaves three addresses in it,
 * two of them in the map.
 */
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "extrae_user_events.h"

#include "testutil.h"

#include "extrae_tu.h"

int
main(void)
{
	const char *dir = tu_tmpdir("extrae-perfmap");
	char map[64];
	unsigned char *code = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
	                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(code != MAP_FAILED);
	uint64_t a1 = (uintptr_t)code + 0x10, a2 = (uintptr_t)code + 0x1010,
	         a3 = (uintptr_t)code + 0x2010;
	snprintf(map, sizeof map, "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(map, "w");
	REQUIRE(f);
	fprintf(f, "%" PRIx64 " 1000 julia_old_1\n", (uint64_t)(uintptr_t)code);
	fprintf(f, "bad line\n");
	fprintf(f, "%" PRIx64 " 40 julia_g_2\n", a1 - 0x10);
	fprintf(f, "%" PRIx64 " 100 julia_h_3\n", a2 - 0x8);
	fclose(f);
	setenv("EXTRAE_ON", "1", 1);
	setenv("EXTRAE_FINAL_DIR", dir, 1);
	setenv("EXTRAE_SKIP_AUTO_LIBRARY_INITIALIZE", "1", 1);
	Extrae_init();
	uint64_t addrs[3] = {a1, a2, a3};
	for (int i = 0; i < 3; i++) {
		Extrae_function_from_address(0, (void *)(uintptr_t)addrs[i]);
		Extrae_function_from_address(0, NULL);
	}
	Extrae_fini();
	unlink(map);
	struct xt_trace tr = xt_load(dir);
	REQUIRE(tr.n == 1 && tr.p[0].labels);
	const char *n1 = rd_proc_func_name(tr.p[0].labels, a1);
	const char *n2 = rd_proc_func_name(tr.p[0].labels, a2);
	const char *n3 = rd_proc_func_name(tr.p[0].labels, a3);
	fprintf(stderr, "names: %s, %s, %s\n", n1 ? n1 : "-", n2 ? n2 : "-",
	        n3 ? n3 : "-");
	CHECK(xt_streq(n1, "julia_g_2")); /* the last entry wins */
	CHECK(xt_streq(n2, "julia_h_3"));
	CHECK(n3 && !strncmp(n3, "0x", 2)); /* in no map: its address */
	xt_free(&tr);
	tu_rmtree(dir);
	return tu_report("extrae_perfmap");
}
