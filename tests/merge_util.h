/* Helpers shared by the merge tests: run a merge, compare and check files. */
#ifndef DW_TESTS_MERGE_UTIL_H
#define DW_TESTS_MERGE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge/merge.h"
#include "prv_check.h"
#include "testutil.h"

/* Merges dir into prefix.{prv,pcf,row}; problems go to errs (echoed to
 * stderr for the log).  window 0: the default. */
static inline dw_err
mt_merge(const char *dir, const char *prefix, uint32_t window, mg_report *rep,
         rd_errlist *errs)
{
	mg_opts o = {.dir = dir, .window = window};
	mg_writer *w;
	dw_err err;

	REQUIRE(prv_writer_new(prefix, &w) == DW_OK);
	err = mg_merge(&o, w, errs, rep);
	if (err != DW_OK && w->err[0])
		fprintf(stderr, "merge: %s\n", w->err);
	mg_writer_free(w);
	return err;
}

/* The whole file, NUL-terminated; NULL if it cannot be read. */
static inline char *
mt_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	do {
		if (n + 4096 + 1 > cap) {
			cap = (n + 4096 + 1) * 2;
			buf = realloc(buf, cap);
			REQUIRE(buf != NULL);
		}
		r = fread(buf + n, 1, 4096, f);
		n += r;
	} while (r > 0);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* Checks that prefix+ext holds exactly `want`; shows the first
 * difference. */
static inline void
mt_expect(const char *prefix, const char *ext, const char *want)
{
	char path[1024];
	char *got;
	size_t i = 0, line = 1;

	snprintf(path, sizeof path, "%s%s", prefix, ext);
	got = mt_slurp(path);
	CHECK(got != NULL);
	if (!got)
		return;
	while (got[i] && got[i] == want[i])
		line += got[i++] == '\n';
	if (got[i] || want[i]) {
		const char *g = got + i, *w = want + i;

		while (g > got && g[-1] != '\n')
			g--, w--;
		fprintf(stderr,
		        "%s: differs at line %zu\n  got:  %.*s\n  want: %.*s\n",
		        path, line, (int)strcspn(g, "\n"), g,
		        (int)strcspn(w, "\n"), w);
		tu_failures++;
	}
	free(got);
}

/* The strict checker on prefix's trace, with flags; counts in res. */
static inline void
mt_check(const char *prefix, unsigned flags, pc_result *res)
{
	char err[1024];
	pc_result r;

	if (prv_check(prefix, flags, &r, err, sizeof err)) {
		fprintf(stderr, "prv_check: %s\n", err);
		tu_failures++;
	}
	if (res)
		*res = r;
}

/* True when some message of errs contains s. */
static inline bool
mt_said(const rd_errlist *errs, const char *s)
{
	for (size_t i = 0; i < errs->n; i++)
		if (strstr(errs->msgs[i], s))
			return true;
	return false;
}

#endif
