/*
 * Extrae's environment variables: good values reach the tracer, bad ones
 * are refused with a message naming the variable (tracing stays off, as
 * with the DWT_* ones); a second Extrae_init, and one after the tracer
 * was started by dwt_init, keep everything recorded.
 */
#include <sys/stat.h>

#include <dwork/trace.h>

#include "extrae_user_events.h"
#include "trace/extrae_int.h"

#include "testutil.h"

#include "extrae_tu.h"

static char base[512];

static const char *const vars[] = {
    "EXTRAE_ON",          "EXTRAE_PROGRAM_NAME",
    "EXTRAE_DIR",         "EXTRAE_FINAL_DIR",
    "EXTRAE_BUFFER_SIZE", "EXTRAE_FILE_SIZE",
    "EXTRAE_CONFIG_FILE", "DWT_DIR",
    "DWT_SEGMENT_SIZE",   "DWT_ENABLED",
};

static void
clear_env(void)
{
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		unsetenv(vars[i]);
}

static const char *
path(const char *sub)
{
	static char p[4][700];
	static int k;
	char *b = p[k++ % 4];
	snprintf(b, sizeof p[0], "%s/%s", base, sub);
	return b;
}

/* var=val makes Extrae_init refuse, saying so; nothing is created. */
static void
bad(const char *var, const char *val, const char *expect)
{
	struct xt_capture c;
	clear_env();
	setenv("EXTRAE_ON", "1", 1);
	setenv("EXTRAE_FINAL_DIR", path("bad"), 1);
	setenv(var, val, 1);
	xt_capture_begin(&c);
	Extrae_init();
	char *msg = xt_capture_end(&c);
	CHECK(Extrae_is_initialized() == EXTRAE_NOT_INITIALIZED);
	if (!strstr(msg, var) || !strstr(msg, expect) ||
	    xt_count_str(msg, "\n") != 1) {
		fprintf(stderr, "message for %s='%s' was: %s\n", var, val, msg);
		tu_failures++;
	}
	free(msg);
	CHECK(access(path("bad"), F_OK) != 0);
}

static void
bad_values(void)
{
	bad("EXTRAE_ON", "maybe", "1, 0, yes, no");
	bad("EXTRAE_BUFFER_SIZE", "abc", "a number of events");
	bad("EXTRAE_BUFFER_SIZE", "0", "a number of events");
	bad("EXTRAE_FILE_SIZE", "-1", "a size in megabytes");
	bad("EXTRAE_PROGRAM_NAME", "a b", "1 to 63 characters");
	bad("EXTRAE_FINAL_DIR", "", "a directory path");
	bad("DWT_SEGMENT_SIZE", "12", "64K to 1G");
}

/* EXTRAE_ON=0: Extrae_init records nothing and creates nothing. */
static void
off(void)
{
	clear_env();
	setenv("EXTRAE_ON", "0", 1);
	setenv("EXTRAE_FINAL_DIR", path("off"), 1);
	Extrae_init();
	Extrae_event(1, 1);
	CHECK(Extrae_is_initialized() == EXTRAE_NOT_INITIALIZED);
	CHECK(access(path("off"), F_OK) != 0);
}

/* A second Extrae_init drops nothing: one process, every event. */
static void
double_init(void)
{
	clear_env();
	setenv("EXTRAE_ON", "yes", 1);
	setenv("EXTRAE_FINAL_DIR", path("double"), 1);
	Extrae_init();
	Extrae_event(100, 1);
	Extrae_init();
	Extrae_event(100, 2);
	CHECK(dwt_init(NULL) == DW_ESTATE);
	Extrae_event(100, 3);
	Extrae_fini();
	struct xt_trace tr = xt_load(path("double"));
	REQUIRE(tr.n == 1);
	for (uint64_t v = 1; v <= 3; v++)
		CHECK_EQ_U64(xt_count_event(&tr.p[0], 100, v), 1);
	xt_free(&tr);
}

/* Started by the tracer's own API (the dwork runtime does so): Extrae
 * calls see it initialised and record into the same session. */
static void
after_dwt_init(void)
{
	clear_env();
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = path("dwt");
	REQUIRE(dwt_init(&c) == DW_OK);
	CHECK(Extrae_is_initialized() == EXTRAE_INITIALIZED_EXTRAE_INIT);
	Extrae_init();
	Extrae_event(101, 1);
	Extrae_fini();
	CHECK(!dwt_active());
	struct xt_trace tr = xt_load(path("dwt"));
	REQUIRE(tr.n == 1);
	CHECK_EQ_U64(xt_count_event(&tr.p[0], 101, 1), 1);
	xt_free(&tr);
}

/* As Extrae: with neither EXTRAE_ON nor EXTRAE_CONFIG_FILE, Extrae_init
 * says so on stdout in Extrae's words (tests/data/extrae/no_extrae_on.stdout
 * is what 5.1.2 printed) and does not trace, whatever the DWT_* variables
 * say; EXTRAE_ON=0 says it is not enabled (Extrae's words for it). */
static void
not_configured(void)
{
	static const char *want[2] = {
	    "dwtrace: Application has been linked or preloaded with Extrae, "
	    "BUT EXTRAE_ON is NOT set!\n",
	    "dwtrace: Application has been linked or preloaded with Extrae, "
	    "BUT EXTRAE_ON is NOT enabled!\n"};
	for (int k = 0; k < 2; k++) {
		struct xt_capture c;
		clear_env();
		setenv("DWT_DIR", path("dwtenv"), 1);
		if (k)
			setenv("EXTRAE_ON", "0", 1);
		xt_capture_out_begin(&c);
		Extrae_init();
		Extrae_event(1, 1);
		char *msg = xt_capture_end(&c);
		CHECK(Extrae_is_initialized() == EXTRAE_NOT_INITIALIZED);
		CHECK(strcmp(msg, want[k]) == 0);
		free(msg);
		Extrae_fini();
		CHECK(access(path("dwtenv"), F_OK) != 0);
	}
}

/* Extrae's test of EXTRAE_SKIP_AUTO_LIBRARY_INITIALIZE: starting with
 * "yes", "true" (any case) or "1" skips; anything else does not, and is
 * no error. */
static void
skip_values(void)
{
	static const struct {
		const char *v;
		int skip;
	} c[] = {{"1", 1},  {"yes", 1},  {"TRUE", 1}, {"Yesplease", 1},
	         {"10", 1}, {"0", 0},    {"no", 0},   {"on", 0},
	         {"", 0},   {"maybe", 0}};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		clear_env();
		setenv("EXTRAE_ON", "1", 1);
		setenv("EXTRAE_SKIP_AUTO_LIBRARY_INITIALIZE", c[i].v, 1);
		if (xcfg_auto_wanted() != !c[i].skip) {
			fprintf(stderr, "skip '%s': expected %d\n", c[i].v,
			        c[i].skip);
			tu_failures++;
		}
	}
}

/* EXTRAE_PROGRAM_NAME names the files; the directory is named after the
 * executable, so that processes differing only in their program name
 * share it (as they share Extrae's working directory).  EXTRAE_DIR is
 * used when EXTRAE_FINAL_DIR is not set. */
static void
names_and_dirs(void)
{
	char cwd[600];
	REQUIRE(getcwd(cwd, sizeof cwd));
	REQUIRE(chdir(base) == 0);
	clear_env();
	setenv("EXTRAE_ON", "1", 1);
	Extrae_init(); /* Extrae's default prefix */
	Extrae_fini();
	struct xt_trace tr = xt_load(path("extrae_config_test.trace"));
	CHECK(tr.n == 1 && xt_streq(tr.p[0].hdr.program, "TRACE"));
	xt_free(&tr);
	tu_rmtree(path("extrae_config_test.trace"));
	/* as Extrae, what follows the last '/' */
	setenv("EXTRAE_PROGRAM_NAME", "/some/where/prog", 1);
	Extrae_init();
	Extrae_fini();
	tr = xt_load(path("extrae_config_test.trace"));
	CHECK(tr.n == 1 && xt_streq(tr.p[0].hdr.program, "prog"));
	xt_free(&tr);
	setenv("EXTRAE_DIR", path("tmpdir"), 1);
	Extrae_init();
	Extrae_fini();
	CHECK(access(path("tmpdir"), F_OK) == 0);
	REQUIRE(chdir(cwd) == 0);
}

/* EXTRAE_BUFFER_SIZE (records) sets the segment size; EXTRAE_FILE_SIZE
 * (MB) caps the process's trace. */
static void
sizes(void)
{
	clear_env();
	setenv("EXTRAE_ON", "1", 1);
	setenv("EXTRAE_FINAL_DIR", path("sizes"), 1);
	setenv("EXTRAE_BUFFER_SIZE", "4000", 1); /* 64000 bytes: 64K */
	setenv("EXTRAE_FILE_SIZE", "1", 1);
	Extrae_init();
	for (unsigned i = 0; i < 100000; i++)
		Extrae_event(102, i);
	dwt_stats st;
	dwt_get_stats(&st);
	Extrae_fini();
	CHECK_EQ_U64(st.segments, 16);
	CHECK(st.lost_cap > 0);
	struct xt_trace tr = xt_load(path("sizes"));
	REQUIRE(tr.n == 1);
	CHECK_EQ_U64(tr.p[0].hdr.segment_size, 65536);
	xt_free(&tr);
}

int
main(void)
{
	snprintf(base, sizeof base, "%s", tu_tmpdir("extrae-config"));
	bad_values();
	off();
	double_init();
	after_dwt_init();
	not_configured();
	skip_values();
	names_and_dirs();
	sizes();
	tu_rmtree(base);
	return tu_report("extrae_config");
}
