/*
 * Fuzz target for reading a Paraver trace back (merge/prvread.c) and for
 * the writers that consume it: the statistics (all three printers) and
 * the HTML timeline.  The input is three files in one: the .prv, then
 * after a line "%%pcf" the .pcf, then after a line "%%row" the .row
 * (each part optional).  Checks: no crash, no leak, no overread; a
 * trace that reads has every record within its duration.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/html.h"
#include "merge/prvread.h"
#include "output/stats.h"
#include "tu_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(c)                                                          \
	do {                                                                   \
		if (!(c))                                                      \
			__builtin_trap();                                      \
	} while (0)

static char dir[160];

static void
put(const char *ext, const uint8_t *p, size_t n)
{
	char path[200];
	FILE *f;

	snprintf(path, sizeof path, "%s/t%s", dir, ext);
	f = fopen(path, "wb");
	FUZZ_CHECK(f != NULL);
	if (n)
		FUZZ_CHECK(fwrite(p, 1, n, f) == n);
	fclose(f);
}

/* The part of [p, end) before "\n%%name\n" (or all of it); *next is
 * after the marker (or end). */
static size_t
part(const uint8_t *p, const uint8_t *end, const char *marker,
     const uint8_t **next)
{
	size_t m = strlen(marker);

	for (const uint8_t *q = p; q + m <= end; q++)
		if (!memcmp(q, marker, m)) {
			*next = q + m;
			return (size_t)(q - p);
		}
	*next = end;
	return (size_t)(end - p);
}

static void
run_stats(const char *prv)
{
	st_stats *s;
	rd_errlist errs;
	FILE *null = fopen("/dev/null", "w");

	FUZZ_CHECK(null != NULL);
	FUZZ_CHECK(st_stats_new(prv, &s) == DW_OK);
	rd_errlist_init(&errs, NULL);
	if (prvread_run(prv, &s->base, &errs, NULL) == DW_OK) {
		for (size_t i = 0; i < s->nthreads; i++)
			for (size_t k = 0; k < s->threads[i].ncalls; k++)
				FUZZ_CHECK(s->threads[i].calls[k].max_ns <=
				           s->duration);
		st_print_text(s, null);
		st_print_csv(s, null);
		st_print_json(s, null);
	}
	st_stats_free(s);
	rd_errlist_free(&errs);
	fclose(null);
}

static void
run_html(const char *prv)
{
	char out[200];
	html_opts o = {.width = 64, .max_lines = 8};
	mg_writer *w;
	rd_errlist errs;

	snprintf(out, sizeof out, "%s/t.html", dir);
	FUZZ_CHECK(html_writer_open(out, &o, &w) == DW_OK);
	rd_errlist_init(&errs, NULL);
	(void)prvread_run(prv, w, &errs, NULL);
	mg_writer_free(w);
	rd_errlist_free(&errs);
}

/* The scratch directory goes at exit, with what the inputs left in it. */
static void
fuzz_end(void)
{
	static const char *const names[] = {"t.prv", "t.pcf", "t.row", "t.html",
	                                    "t.html.tmp"};
	char path[200];

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *end = data + size, *pcf, *row;
	char prv[200];
	size_t n;

	if (!dir[0]) {
		FUZZ_CHECK(mkdtemp(tu_tmp_template(dir, sizeof dir,
		                                   "prvread-fuzz")) != NULL);
		atexit(fuzz_end);
	}
	n = part(data, end, "\n%%pcf\n", &pcf);
	put(".prv", data, n);
	n = part(pcf, end, "\n%%row\n", &row);
	put(".pcf", pcf, n);
	put(".row", row, (size_t)(end - row));
	snprintf(prv, sizeof prv, "%s/t.prv", dir);
	run_stats(prv);
	run_html(prv);
	return 0;
}
