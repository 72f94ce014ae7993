/*
 * dw_everywhere_load with a real shared object (tests/load_lib.c, built
 * by tests/CMakeLists.txt): callable on every worker and on one that
 * joins later, its init run once per process; a missing file and a file
 * that is not an object are named with the process and the cause.
 */
#include "rt_util.h"
#include "testutil.h"

static void
check_on(int id)
{
	int64_t s = 0;
	int inits = 0;
	CHECK(dw_remotecall_fetchf(id, "loaded_add", "ll|li", (int64_t)40,
	                           (int64_t)2, &s, &inits) == DW_OK);
	CHECK(s == 42 && inits == 1);
}

int
main(int argc, char **argv)
{
	if (dw_init(&argc, &argv) != DW_OK)
		return 1;
	REQUIRE(dw_addprocs(2, NULL, NULL) == 2);
	int64_t s;
	int inits;
	CHECK(dw_remotecall_fetchf(2, "loaded_add", "ll|li", (int64_t)1,
	                           (int64_t)1, &s, &inits) == DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "not registered") != NULL);
	CHECK(dw_everywhere_load(LOAD_LIB) == DW_OK);
	CHECK(dw_everywhere_load(LOAD_LIB) == DW_OK); /* once per process */
	for (int id = 1; id <= 3; id++)
		check_on(id);
	int late;
	REQUIRE(dw_addprocs(1, NULL, &late) == 1);
	check_on(late);
	CHECK(dw_everywhere_load("/nonexistent/x.so") == DW_ENOENT);
	fprintf(stderr, "message: %s\n", dw_errmsg());
	CHECK(strstr(dw_errmsg(), "process 1: on host ") != NULL);
	CHECK(strstr(dw_errmsg(), "/nonexistent/x.so is missing") != NULL);
	char bad[] = "/tmp/dwtest-load-XXXXXX";
	int fd = mkstemp(bad);
	REQUIRE(fd >= 0);
	CHECK(write(fd, "not elf", 7) == 7);
	close(fd);
	CHECK(dw_everywhere_load(bad) == DW_EIO);
	fprintf(stderr, "message: %s\n", dw_errmsg());
	CHECK(strstr(dw_errmsg(), "dlopen: ") != NULL);
	unlink(bad);
	CHECK(dw_finalize() == DW_OK);
	return tu_report("runtime_load");
}
