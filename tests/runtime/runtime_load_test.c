/*
 * dw_everywhere_load with a real shared object (tests/runtime/load_lib.c, built
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
	char libdir[1024];
	snprintf(libdir, sizeof libdir, "%s", LOAD_LIB);
	*strrchr(libdir, '/') = 0;
	REQUIRE(chdir(libdir) == 0); /* the workers start there too */
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
	/* a relative path, missing where one worker runs (cwd /) */
	dw_local_options elsewhere = {.dir = "/"};
	int away;
	REQUIRE(dw_addprocs(1, &elsewhere, &away) == 1);
	char rel[1100], want[200];
	snprintf(rel, sizeof rel, ".%s", strrchr(LOAD_LIB, '/'));
	CHECK(dw_everywhere_load(rel) == DW_EREMOTE); /* a worker's */
	fprintf(stderr, "message: %s\n", dw_errmsg());
	snprintf(want, sizeof want, "worker %d: on host ", away);
	CHECK(strstr(dw_errmsg(), want) != NULL);
	CHECK(strstr(dw_errmsg(), "is missing (No such file") != NULL);
	CHECK(strstr(dw_errmsg(), "worker 2") == NULL); /* it has it */
	CHECK(dw_everywhere_load("/nonexistent/x.so") == DW_ENOENT);
	fprintf(stderr, "message: %s\n", dw_errmsg());
	CHECK(strstr(dw_errmsg(), "process 1: on host ") != NULL);
	CHECK(strstr(dw_errmsg(), "/nonexistent/x.so is missing") != NULL);
	char bad[256];
	int fd = mkstemp(tu_tmp_template(bad, sizeof bad, "dwtest-load"));
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
