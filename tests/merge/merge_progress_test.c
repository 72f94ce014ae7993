/*
 * The progress line: nothing during the first second, then "records
 * done of total, rate, time left" rewritten in place, and erased at the
 * end; nothing at all without a stream.
 */
#include "merge/mg_int.h"
#include "testutil.h"

static char *
captured(FILE *f)
{
	static char buf[4096];
	size_t n;

	fflush(f);
	rewind(f);
	n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	return buf;
}

int
main(void)
{
	FILE *f = tmpfile();
	mg_progress p;
	char *s;

	REQUIRE(f);
	mg_progress_start(&p, f, "merging", 4000000);
	mg_progress_update(&p, 1000000); /* within the first second */
	CHECK(captured(f)[0] == '\0');
	p.start -= 2.0; /* as if it had run for two seconds */
	mg_progress_update(&p, 1000000);
	s = captured(f);
	CHECK(strstr(s, "\rdwork merge: merging 1.0M of 4.0M records, 0.5M "
	                "records/s, 6 s left") != NULL);
	mg_progress_update(&p, 2000000); /* too soon after: not shown */
	CHECK(!strstr(captured(f), "2.0M of"));
	mg_progress_end(&p);
	CHECK(strstr(captured(f), "\r\033[K") != NULL);
	fclose(f);

	mg_progress_start(&p, NULL, "merging", 10); /* no stream: silent */
	p.start -= 2.0;
	mg_progress_update(&p, 5);
	mg_progress_end(&p);
	return tu_report("merge_progress");
}
