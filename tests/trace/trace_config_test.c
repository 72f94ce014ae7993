/*
 * Settings: every DWT_* variable, good and bad values; a bad value is
 * refused with a message naming the variable and what it accepts, and
 * tracing stays off; tracing off records nothing and writes no file.
 */
#include <dirent.h>
#include <sys/stat.h>

#include <dwork/trace.h>

#include "testutil.h"

static const char *const vars[] = {
    "DWT_ENABLED",  "DWT_DIR",  "DWT_PROGRAM", "DWT_SEGMENT_SIZE",
    "DWT_SIZE_CAP", "DWT_MODE", "DWT_CLOCK",
};

static void
clear_env(void)
{
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		unsetenv(vars[i]);
}

static void
bad(const char *var, const char *val, const char *expect_in_msg)
{
	clear_env();
	setenv(var, val, 1);
	dwt_config c, before;
	dwt_config_defaults(&c);
	before = c;
	char err[512] = "";
	CHECK(dwt_config_from_env(&c, err, sizeof err) == DW_EINVAL);
	CHECK(memcmp(&c, &before, sizeof c) == 0);
	if (!strstr(err, var) || !strstr(err, expect_in_msg)) {
		fprintf(stderr, "message for %s='%s' was: %s\n", var, val, err);
		tu_failures++;
	}
}

static void
test_bad_values(void)
{
	bad("DWT_ENABLED", "maybe", "yes, no");
	bad("DWT_ENABLED", "", "on or off");
	bad("DWT_DIR", "", "directory path");
	bad("DWT_PROGRAM", "a/b", "A-Z a-z 0-9");
	bad("DWT_PROGRAM", ".hidden", "not starting with '.'");
	bad("DWT_PROGRAM", "", "1 to 63");
	bad("DWT_PROGRAM",
	    "0123456789012345678901234567890123456789012345678901234567890123",
	    "1 to 63");
	bad("DWT_SEGMENT_SIZE", "abc", "64K to 1G");
	bad("DWT_SEGMENT_SIZE", "4K", "64K to 1G");
	bad("DWT_SEGMENT_SIZE", "2G", "64K to 1G");
	bad("DWT_SEGMENT_SIZE", "65537", "multiple of 4K");
	bad("DWT_SEGMENT_SIZE", "-1M", "64K to 1G");
	bad("DWT_SEGMENT_SIZE", "1M junk", "64K to 1G");
	bad("DWT_SIZE_CAP", "lots", "0 for no cap");
	bad("DWT_SIZE_CAP", "99999999999999999999", "0 for no cap");
	bad("DWT_SIZE_CAP", "20000000000G", "0 for no cap");
	bad("DWT_MODE", "ring", "linear or circular");
	bad("DWT_CLOCK", "rdtsc", "auto, tsc or monotonic-raw");
}

static void
test_good_values(void)
{
	clear_env();
	setenv("DWT_ENABLED", "Off", 1);
	setenv("DWT_DIR", "/tmp/x", 1);
	setenv("DWT_PROGRAM", "my-prog_1.0", 1);
	setenv("DWT_SEGMENT_SIZE", "256K", 1);
	setenv("DWT_SIZE_CAP", "3MiB", 1);
	setenv("DWT_MODE", "circular", 1);
	setenv("DWT_CLOCK", "monotonic-raw", 1);
	dwt_config c;
	dwt_config_defaults(&c);
	CHECK(c.enabled == 1 && c.segment_size == DWT_SEGMENT_DEFAULT);
	CHECK(dwt_config_from_env(&c, NULL, 0) == DW_OK);
	CHECK(c.enabled == 0);
	CHECK(strcmp(c.dir, "/tmp/x") == 0);
	CHECK(strcmp(c.program, "my-prog_1.0") == 0);
	CHECK_EQ_U64(c.segment_size, 256 << 10);
	CHECK_EQ_U64(c.size_cap, 3 << 20);
	CHECK(c.circular == 1);
	CHECK(c.clock == DWT_CLOCK_MONOTONIC_RAW);
	setenv("DWT_SIZE_CAP", "1234", 1);
	setenv("DWT_ENABLED", "YES", 1);
	setenv("DWT_SEGMENT_SIZE", "1G", 1);
	CHECK(dwt_config_from_env(&c, NULL, 0) == DW_OK);
	CHECK(c.enabled == 1 && c.size_cap == 1234);
	CHECK_EQ_U64(c.segment_size, 1u << 30);
	clear_env();
}

static int
count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* dwt_init(NULL) refuses a bad environment and leaves tracing off. */
static void
test_init_refuses(const char *dir)
{
	char sub[600];
	snprintf(sub, sizeof sub, "%s/t", dir);
	clear_env();
	setenv("DWT_DIR", sub, 1);
	setenv("DWT_SEGMENT_SIZE", "12", 1);
	CHECK(dwt_init(NULL) == DW_EINVAL);
	CHECK(!dwt_active());
	dwt_event(1, 2);
	CHECK(count_entries(sub) == -1); /* not even the directory */

	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = sub;
	c.segment_size = 1000; /* by argument: same limits */
	CHECK(dwt_init(&c) == DW_EINVAL);
	c.segment_size = DWT_SEGMENT_MIN;
	c.clock = 42;
	CHECK(dwt_init(&c) == DW_EINVAL);
	CHECK(count_entries(sub) == -1);
	clear_env();
}

static void
test_off(const char *dir)
{
	char sub[600];
	snprintf(sub, sizeof sub, "%s/off", dir);
	clear_env();
	setenv("DWT_DIR", sub, 1);
	setenv("DWT_ENABLED", "0", 1);
	CHECK(dwt_init(NULL) == DW_OK);
	CHECK(!dwt_active());
	for (int i = 0; i < 1000; i++) {
		dwt_event(1, (uint64_t)i);
		dwt_state_push(1);
		dwt_state_pop();
		dwt_comm(0, 1, 0, 0, 0, 0);
	}
	CHECK(dwt_define_type(1, "x") == DW_OK); /* kept, harmless */
	CHECK(dwt_thread() == UINT32_MAX);
	dwt_stats st;
	dwt_get_stats(&st);
	CHECK_EQ_U64(st.records, 0);
	dwt_fini();
	CHECK(count_entries(sub) == -1);
	clear_env();
}

/* Paused tracing records nothing; resuming goes on in the same files. */
static void
test_pause_and_twice(const char *dir)
{
	char sub[600];
	snprintf(sub, sizeof sub, "%s/pause", dir);
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = sub;
	c.program = "pause";
	c.clock = DWT_CLOCK_MONOTONIC_RAW;
	REQUIRE(dwt_init(&c) == DW_OK);
	CHECK(dwt_init(&c) == DW_ESTATE);
	dwt_event(1, 1);
	dwt_set_active(0);
	dwt_event(1, 2);
	dwt_set_active(1);
	dwt_event(1, 3);
	dwt_stats st;
	dwt_get_stats(&st);
	CHECK_EQ_U64(st.records, 2);
	dwt_fini();
	dwt_fini();
	CHECK_EQ_U64(count_entries(sub), 2); /* process file + one thread */
}

int
main(void)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("config"));
	test_bad_values();
	test_good_values();
	test_init_refuses(dir);
	test_off(dir);
	test_pause_and_twice(dir);
	tu_rmtree(dir);
	return tu_report("trace_config");
}
