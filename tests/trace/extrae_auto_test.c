/*
 * Initialisation when the library is loaded, as Extrae's libseqtrace
 * does: this program is linked with the shared libdwtrace and starts
 * itself as a child in different environments.  The child, written
 * against the Extrae headers only, checks whether tracing had started
 * before main, records, may call Extrae_init again (harmless: nothing
 * recorded before it is dropped), and exits without Extrae_fini.
 */
#include <stdio.h>

#include "extrae_user_events.h"

#include "testutil.h"

#include "extrae_tu.h"

#define T_AUTO 5000u

/* ---- the child ---- */

static int
child(const char *mode)
{
	int started = Extrae_is_initialized() == EXTRAE_INITIALIZED_EXTRAE_INIT;
	Extrae_event(T_AUTO, 1);
	if (strcmp(mode, "init-again") == 0) {
		Extrae_init();
		Extrae_event(T_AUTO, 2);
	}
	if (strcmp(mode, "init") == 0) {
		Extrae_init();
		Extrae_event(T_AUTO, 3);
		if (Extrae_is_initialized() != EXTRAE_INITIALIZED_EXTRAE_INIT)
			return 3;
	}
	return started ? 10 : 20; /* tells the parent what it saw */
}

/* ---- the parent ---- */

static char base[512];

/* The inherited environment without EXTRAE_* and DWT_*, plus extra. */
static char **
make_env(const char *const *extra)
{
	extern char **environ;
	size_t n = 0, k = 0;
	while (environ[n])
		n++;
	while (extra[k])
		k++;
	char **env = calloc(n + k + 1, sizeof *env);
	REQUIRE(env);
	size_t j = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "EXTRAE_", 7) &&
		    strncmp(environ[i], "DWT_", 4))
			env[j++] = environ[i];
	for (size_t i = 0; i < k; i++)
		env[j++] = (char *)extra[i];
	return env;
}

/* Runs the child in mode with the extra variables; its exit status. */
static int
run_child(const char *mode, const char *const *extra)
{
	char *args[] = {"extrae_auto_test", "child", (char *)mode, NULL};
	char **env = make_env(extra);
	int st = xt_run_self(args, env);
	free(env);
	return st;
}

static char *
var(const char *name, const char *sub)
{
	static char bufs[8][700];
	static int next;
	char *b = bufs[next++ % 8];
	snprintf(b, sizeof bufs[0], "%s=%s/%s", name, base, sub);
	return b;
}

/* The trace at base/sub has one process with these T_AUTO values. */
static void
expect_trace(const char *sub, const uint64_t *vals, size_t n,
             const uint64_t *absent, size_t na)
{
	char dir[700];
	snprintf(dir, sizeof dir, "%s/%s", base, sub);
	struct xt_trace tr = xt_load(dir);
	CHECK_EQ_U64(tr.errors, 0);
	CHECK_EQ_U64(tr.n, 1);
	if (tr.n == 1) {
		CHECK(rd_header_ended(&tr.p[0].hdr)); /* fini ran at exit */
		for (size_t i = 0; i < n; i++)
			CHECK_EQ_U64(xt_count_event(&tr.p[0], T_AUTO, vals[i]),
			             1);
		for (size_t i = 0; i < na; i++)
			CHECK_EQ_U64(
			    xt_count_event(&tr.p[0], T_AUTO, absent[i]), 0);
	}
	xt_free(&tr);
}

static void
auto_on(void)
{
	const char *env[] = {"EXTRAE_ON=1", var("EXTRAE_FINAL_DIR", "on"),
	                     "EXTRAE_PROGRAM_NAME=auto", NULL};
	CHECK_EQ_U64(run_child("init-again", env), 10);
	uint64_t v[] = {1, 2};
	expect_trace("on", v, 2, NULL, 0);
}

static void
auto_skipped(void)
{
	const char *env[] = {"EXTRAE_ON=1", var("EXTRAE_FINAL_DIR", "skip"),
	                     "EXTRAE_SKIP_AUTO_LIBRARY_INITIALIZE=1", NULL};
	CHECK_EQ_U64(run_child("init", env), 20);
	uint64_t v[] = {3}, absent[] = {1};
	expect_trace("skip", v, 1, absent, 1);
}

static void
auto_from_xml(void)
{
	char path[700], xml[600];
	snprintf(xml, sizeof xml, "%s/cfg.xml", base);
	FILE *f = fopen(xml, "w");
	REQUIRE(f);
	fprintf(f, "<?xml version='1.0'?>\n<trace enabled=\"yes\">\n"
	           "<storage enabled=\"yes\"><final-directory enabled=\"yes\">"
	           "$XT_BASE$/xml</final-directory></storage></trace>\n");
	fclose(f);
	snprintf(path, sizeof path, "EXTRAE_CONFIG_FILE=%s", xml);
	char base_var[600];
	snprintf(base_var, sizeof base_var, "XT_BASE=%s", base);
	const char *env[] = {path, base_var, NULL};
	int st = run_child("none", env);
	char dir[700];
	snprintf(dir, sizeof dir, "%s/xml", base);
	if (access(dir, F_OK) != 0) {
		printf("extrae_auto: no libxml2: XML auto-init not checked\n");
		return;
	}
	CHECK_EQ_U64(st, 10);
	uint64_t v[] = {1};
	expect_trace("xml", v, 1, NULL, 0);
}

static void
not_configured(void)
{
	const char *none[] = {var("DWT_DIR", "none"), NULL};
	CHECK_EQ_U64(run_child("none", none), 20);
	const char *off[] = {"EXTRAE_ON=0", var("EXTRAE_FINAL_DIR", "off"),
	                     NULL};
	CHECK_EQ_U64(run_child("none", off), 20);
	const char *skip[] = {"EXTRAE_ON=yes", var("EXTRAE_FINAL_DIR", "bad"),
	                      "EXTRAE_SKIP_AUTO_LIBRARY_INITIALIZE=maybe",
	                      NULL};
	CHECK_EQ_U64(run_child("none", skip), 10); /* message, then init */
	char d[700];
	snprintf(d, sizeof d, "%s/none", base);
	CHECK(access(d, F_OK) != 0);
	snprintf(d, sizeof d, "%s/off", base);
	CHECK(access(d, F_OK) != 0);
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "child") == 0)
		return child(argv[2]);
	snprintf(base, sizeof base, "%s", tu_tmpdir("extrae-auto"));
	auto_on();
	auto_skipped();
	auto_from_xml();
	not_configured();
	tu_rmtree(base);
	return tu_report("extrae_auto");
}
