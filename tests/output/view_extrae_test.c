/*
 * A trace made through the Extrae API, drawn: a program that knows only
 * the Extrae headers enters a user function (type 60000019) for 20 ms
 * and records events of a type it labelled; the HTML timeline of the
 * merged directory has the function's run as a bar named after it
 * (hover text and label) and the events as markers with their labels.
 */
#include <stdint.h>
#include <sys/stat.h>

#include "extrae_user_events.h"

#include "output/html.h"
#include "merge_util.h"
#include "testutil.h"

#define T_PHASE 1000u

__attribute__((noinline)) static void
busy_phase(void)
{
	Extrae_user_function(1);
	Extrae_event(T_PHASE, 1);
	usleep(20000);
	Extrae_event(T_PHASE, 2);
	Extrae_user_function(0);
}

static void
extrae_run(const char *dir)
{
	extrae_type_t type = T_PHASE;
	unsigned n = 3;
	extrae_value_t values[3] = {0, 1, 2};
	char *names[3] = {"End", "Load", "Store"};
	char p[600];

	snprintf(p, sizeof p, "%s/final", dir);
	setenv("EXTRAE_FINAL_DIR", p, 1);
	snprintf(p, sizeof p, "%s/temporary", dir);
	setenv("EXTRAE_DIR", p, 1);
	setenv("EXTRAE_ON", "1", 1);
	setenv("EXTRAE_PROGRAM_NAME", "xview", 1);
	unsetenv("EXTRAE_CONFIG_FILE");
	Extrae_init();
	Extrae_define_event_type(&type, "Phase", &n, values, names);
	usleep(2000);
	busy_phase();
	usleep(2000);
	Extrae_fini();
}

static size_t
count(const char *doc, const char *s)
{
	size_t k = 0;

	for (const char *p = doc; (p = strstr(p, s)); p += strlen(s))
		k++;
	return k;
}

int
main(void)
{
	const char *dir = tu_tmpdir("view-extrae");
	char final[700], out[700];
	mg_opts mo = {0};
	rd_errlist errs;
	mg_writer *w;
	char *doc;

	extrae_run(dir);
	snprintf(final, sizeof final, "%s/final", dir);
	snprintf(out, sizeof out, "%s/x.html", dir);
	mo.dir = final;
	REQUIRE(html_writer_open(out, NULL, &w) == DW_OK);
	rd_errlist_init(&errs, stderr);
	CHECK(mg_merge(&mo, w, &errs, NULL) == DW_OK);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	mg_writer_free(w);
	rd_errlist_free(&errs);
	doc = mt_slurp(out);
	REQUIRE(doc != NULL);
	/* the function's run: one bar, its name as hover text and label */
	CHECK_EQ_U64(count(doc, "<rect class=\"fn uf\""), 1);
	CHECK(strstr(doc, "<title>busy_phase (user function): ") != NULL);
	CHECK(strstr(doc, "\">busy_phase</text>") != NULL);
	/* wide enough to show its label, in a row that shows */
	CHECK(!strstr(doc, "\"hidden\">busy_phase</text>"));
	CHECK(!strstr(doc, "\"none\">busy_phase</text>"));
	/* the events: markers with the labels the program gave */
	CHECK_EQ_U64(count(doc, "<path class=\"ev\" data-r="), 2);
	CHECK(strstr(doc, ": Phase = Load (type 1000, value 1)</title>"));
	CHECK(strstr(doc, ": Phase = Store (type 1000, value 2)</title>"));
	CHECK(strstr(doc, ">Load</text>") && strstr(doc, ">Store</text>"));
	CHECK(strstr(doc, "1 function run bar; 2 user events as 2 markers"));
	CHECK(!strstr(doc, "not drawn"));
	free(doc);
	if (!tu_failures)
		tu_rmtree(dir);
	return tu_report("view_extrae");
}
