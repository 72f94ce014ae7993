/*
 * Extrae's XML configuration file: the settings that map onto the tracer
 * (with $VAR$ substitution) reach it, other elements are reported once,
 * in one line, as ignored; a missing variable drops only its setting;
 * a bad value or a malformed file leaves tracing off with a message.
 * Without libxml2, the message says so and the EXTRAE_* variables rule.
 */
#include <dwork/trace.h>

#include "extrae_user_events.h"

#include "testutil.h"

#include "extrae_tu.h"

static char base[512];
static char cfg[600];
static int have_xml = 1; /* libxml2 was found at build time */

static const char full_xml[] =
    "<?xml version='1.0'?>\n"
    "<trace enabled=\"$XT_ON$\" home=\"/opt/extrae\" "
    "initial-mode=\"detail\" type=\"paraver\">\n"
    "  <mpi enabled=\"yes\"><counters enabled=\"yes\"/></mpi>\n"
    "  <openmp enabled=\"no\"/>\n"
    "  <callers enabled=\"yes\"><mpi enabled=\"yes\">1-3</mpi></callers>\n"
    "  <counters enabled=\"$XT_COUNTERS$\">\n"
    "    <cpu enabled=\"yes\" starting-set-distribution=\"1\">\n"
    "      <set enabled=\"yes\" domain=\"all\">PAPI_TOT_INS</set>\n"
    "    </cpu>\n"
    "  </counters>\n"
    "  <storage enabled=\"yes\">\n"
    "    <trace-prefix enabled=\"yes\"> $XT_PREFIX$ </trace-prefix>\n"
    "    <size enabled=\"yes\">4</size>\n"
    "    <temporal-directory enabled=\"yes\">$XT_BASE$/tmp"
    "</temporal-directory>\n"
    "    <final-directory enabled=\"yes\">$XT_BASE$/final-$XT_PREFIX$"
    "</final-directory>\n"
    "    <gather-mpits enabled=\"no\"/>\n"
    "  </storage>\n"
    "  <buffer enabled=\"yes\">\n"
    "    <size enabled=\"yes\">8000</size>\n"
    "    <circular enabled=\"yes\"/>\n"
    "  </buffer>\n"
    "  <merge enabled=\"yes\" synchronization=\"default\">t.prv</merge>\n"
    "  <merge enabled=\"yes\"/>\n"
    "</trace>\n";

static void
write_cfg(const char *text)
{
	FILE *f = fopen(cfg, "w");
	REQUIRE(f);
	fputs(text, f);
	fclose(f);
}

static const char *
path(const char *sub)
{
	static char p[700];
	snprintf(p, sizeof p, "%s/%s", base, sub);
	return p;
}

/* Extrae_init with the file; what it printed (free it). */
static char *
init_with(const char *text)
{
	struct xt_capture c;
	write_cfg(text);
	setenv("EXTRAE_CONFIG_FILE", cfg, 1);
	xt_capture_begin(&c);
	Extrae_init();
	return xt_capture_end(&c);
}

static int
no_libxml2(const char *msg)
{
	return strstr(msg, "need libxml2") != NULL;
}

static void
check_full(const char *msg)
{
	CHECK_EQ_U64(xt_count_str(msg, "ignored"), 1);
	CHECK(strstr(msg, "<mpi>") && strstr(msg, "<callers>") &&
	      strstr(msg, "<merge>"));
	CHECK_EQ_U64(xt_count_str(msg, "<merge>"), 1);
	CHECK(!strstr(msg, "<openmp>") && !strstr(msg, "gather-mpits") &&
	      !strstr(msg, "<cpu>"));
	for (unsigned i = 0; i < 400000; i++) /* 6.4 MB > the 4 MB cap */
		Extrae_eventandcounters(300, i);
	dwt_stats st;
	dwt_get_stats(&st);
	CHECK(st.segments_reused > 0); /* circular, capped */
	CHECK_EQ_U64(st.lost_cap, 0);
	Extrae_fini();
	struct xt_trace tr = xt_load(path("final-xmlprog"));
	REQUIRE(tr.n == 1);
	const struct xt_proc *p = &tr.p[0];
	CHECK(xt_streq(p->hdr.program, "xmlprog"));
	CHECK_EQ_U64(p->hdr.segment_size, 131072); /* 8000 records */
	CHECK(p->hdr.flags & FMT_FLAG_CIRCULAR);
	CHECK_EQ_U64(xt_count_type(p, 39000001), 0); /* counters off */
	CHECK(xt_count_type(p, 300) > 0);
	CHECK(access(path("tmp"), F_OK) != 0);
	xt_free(&tr);
}

static void
full(void)
{
	setenv("XT_BASE", base, 1);
	setenv("XT_PREFIX", "xmlprog", 1);
	setenv("XT_COUNTERS", "no", 1);
	setenv("XT_ON", "yes", 1);
	setenv("EXTRAE_ON", "0", 1); /* ignored: the file rules */
	setenv("EXTRAE_PROGRAM_NAME", "envname", 1); /* ignored too */
	char *msg = init_with(full_xml);
	if (no_libxml2(msg)) {
		have_xml = 0;
		CHECK(Extrae_is_initialized() == EXTRAE_NOT_INITIALIZED);
		printf("extrae_xml: built without libxml2: fallback checked\n");
	} else {
		CHECK(Extrae_is_initialized() ==
		      EXTRAE_INITIALIZED_EXTRAE_INIT);
		check_full(msg);
	}
	free(msg);
	unsetenv("EXTRAE_ON");
	unsetenv("EXTRAE_PROGRAM_NAME");
}

/* An unset $VAR$ drops that setting only: the temporary directory is
 * used instead of the final one. */
static void
missing_var(void)
{
	char *msg =
	    init_with("<trace enabled=\"yes\"><storage enabled=\"yes\">"
	              "<temporal-directory enabled=\"yes\">$XT_BASE$/tmp2"
	              "</temporal-directory><final-directory enabled=\"yes\">"
	              "$XT_NOPE$/x</final-directory></storage></trace>");
	if (!no_libxml2(msg)) {
		CHECK(strstr(msg, "XT_NOPE is not set"));
		CHECK(Extrae_is_initialized() ==
		      EXTRAE_INITIALIZED_EXTRAE_INIT);
		Extrae_fini();
		CHECK(access(path("tmp2"), F_OK) == 0);
	}
	free(msg);
}

/* As Extrae: <trace-prefix> names the files only with enabled="yes"
 * written out; without it (or with "no") they are named TRACE. */
static void
prefix_rule(void)
{
	static const char *const forms[] = {
	    "<trace-prefix enabled=\"yes\">named</trace-prefix>",
	    "<trace-prefix>named</trace-prefix>",
	    "<trace-prefix enabled=\"no\">named</trace-prefix>",
	};
	static const char *const want[] = {"named", "TRACE", "TRACE"};
	for (int i = 0; i < 3; i++) {
		char text[600], dir[32];
		snprintf(dir, sizeof dir, "prefix%d", i);
		snprintf(text, sizeof text,
		         "<trace enabled=\"yes\"><storage enabled=\"yes\">%s"
		         "<final-directory enabled=\"yes\">$XT_BASE$/%s"
		         "</final-directory></storage></trace>",
		         forms[i], dir);
		free(init_with(text));
		CHECK(Extrae_is_initialized() ==
		      EXTRAE_INITIALIZED_EXTRAE_INIT);
		Extrae_fini();
		struct xt_trace tr = xt_load(path(dir));
		CHECK(tr.n == 1 && xt_streq(tr.p[0].hdr.program, want[i]));
		xt_free(&tr);
	}
}

/* Refused, tracing off, one message naming the problem. */
static void
refused(const char *text, const char *expect)
{
	char *msg = init_with(text);
	if (!no_libxml2(msg)) {
		CHECK(Extrae_is_initialized() == EXTRAE_NOT_INITIALIZED);
		if (!strstr(msg, expect)) {
			fprintf(stderr, "expected '%s' in: %s\n", expect, msg);
			tu_failures++;
		}
	}
	free(msg);
}

static void
bad_files(void)
{
	refused("<trace enabled=\"yes\"><buffer enabled=\"yes\"><size "
	        "enabled=\"yes\">lots</size></buffer></trace>",
	        "<size>='lots' is not valid: expected a number of events");
	refused("<trace enabled=\"perhaps\"></trace>",
	        "<trace enabled>='perhaps' is not valid");
	refused("<trace enabled=\"yes\"><storage>", "EXTRAE_CONFIG_FILE=");
	refused("<extrae/>", "the root element must be <trace>");
	refused("<trace enabled=\"no\"/>", "");
	char nofile[700];
	snprintf(nofile, sizeof nofile, "%s/none.xml", base);
	setenv("EXTRAE_CONFIG_FILE", nofile, 1);
	if (have_xml) {
		Extrae_init();
		CHECK(Extrae_is_initialized() == EXTRAE_NOT_INITIALIZED);
	}
	unsetenv("EXTRAE_CONFIG_FILE");
}

int
main(void)
{
	snprintf(base, sizeof base, "%s", tu_tmpdir("extrae-xml"));
	snprintf(cfg, sizeof cfg, "%s/extrae.xml", base);
	unsetenv("DWT_DIR");
	unsetenv("EXTRAE_FINAL_DIR");
	unsetenv("EXTRAE_DIR");
	full();
	if (have_xml) { /* else the variables rule: checked in full() */
		missing_var();
		prefix_rule();
		bad_files();
	}
	tu_rmtree(base);
	return tu_report("extrae_xml");
}
