/*
 * The table of output formats, and the writer that feeds several of them
 * from one merge.  A new format is one line in the table below.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/html.h"
#include "output/writers.h"

#ifdef DW_HAVE_OTF2
#define OTF2_NEW     otf2_writer_new
#define OTF2_MISSING NULL
#else
#define OTF2_NEW NULL
#define OTF2_MISSING                                                           \
	"this dwork was built without libotf2 (install libotf2-trace-dev "     \
	"and rebuild)"
#endif

static const mg_format formats[] = {
    /* name, outputs (of PREFIX), writer, why there is none */
    {"prv", "%s.prv (.pcf, .row)", prv_writer_new, NULL},
    {"otf2", "%s-otf2/traces.otf2", OTF2_NEW, OTF2_MISSING},
    {"json", "%s.json", json_writer_new, NULL},
    {"perfetto", "%s.pftrace", perfetto_writer_new, NULL},
    {"html", "%s.html", html_writer_new, NULL},
};

#define NFORMATS (sizeof formats / sizeof formats[0])

const mg_format *
mg_formats(size_t *n)
{
	*n = NFORMATS;
	return formats;
}

const mg_format *
mg_format_find(const char *name)
{
	for (size_t i = 0; i < NFORMATS; i++)
		if (!strcmp(formats[i].name, name))
			return &formats[i];
	return NULL;
}

static void
unknown(const char *name, size_t len, char *err, size_t errlen)
{
	int n = snprintf(err, errlen, "unknown format '%.*s' (known:", (int)len,
	                 name);

	for (size_t i = 0; i < NFORMATS && n >= 0 && (size_t)n < errlen; i++)
		n += snprintf(err + n, errlen - (size_t)n, "%s %s",
		              i ? "," : "", formats[i].name);
	if (n >= 0 && (size_t)n < errlen)
		snprintf(err + n, errlen - (size_t)n, ")");
}

size_t
mg_formats_parse(const char *list, const mg_format **fmts, size_t max,
                 char *err, size_t errlen)
{
	size_t n = 0;
	const char *s = list;

	for (;;) {
		size_t len = strcspn(s, ",");
		const mg_format *f = NULL;
		bool dup = false;

		for (size_t i = 0; i < NFORMATS && len; i++)
			if (strlen(formats[i].name) == len &&
			    !strncmp(formats[i].name, s, len))
				f = &formats[i];
		if (!len) {
			snprintf(err, errlen, "empty format name in '%s'",
			         list);
			return 0;
		}
		if (!f) {
			unknown(s, len, err, errlen);
			return 0;
		}
		if (!f->create) {
			snprintf(err, errlen, "format '%s': %s", f->name,
			         f->missing ? f->missing : "not available");
			return 0;
		}
		for (size_t i = 0; i < n; i++)
			dup |= fmts[i] == f;
		if (!dup && n < max)
			fmts[n++] = f;
		if (!s[len])
			return n;
		s += len + 1;
	}
}

/* ---- Several writers as one ---------------------------------------------- */

typedef struct tee_writer {
	mg_writer base;
	mg_writer **w;
	size_t n;
} tee_writer;

static dw_err
tee_fail(tee_writer *t, mg_writer *w, dw_err err)
{
	snprintf(t->base.err, sizeof t->base.err, "%s", w->err);
	return err;
}

static dw_err
tee_begin(mg_writer *w, const mg_info *info)
{
	tee_writer *t = (tee_writer *)w;

	for (size_t i = 0; i < t->n; i++) {
		dw_err err = t->w[i]->ops->begin(t->w[i], info);

		if (err != DW_OK)
			return tee_fail(t, t->w[i], err);
	}
	return DW_OK;
}

static dw_err
tee_record(mg_writer *w, const mg_rec *r)
{
	tee_writer *t = (tee_writer *)w;

	for (size_t i = 0; i < t->n; i++) {
		dw_err err = t->w[i]->ops->record(t->w[i], r);

		if (err != DW_OK)
			return tee_fail(t, t->w[i], err);
	}
	return DW_OK;
}

static dw_err
tee_end(mg_writer *w, const mg_info *info)
{
	tee_writer *t = (tee_writer *)w;

	for (size_t i = 0; i < t->n; i++) {
		dw_err err = t->w[i]->ops->end(t->w[i], info);

		if (err != DW_OK)
			return tee_fail(t, t->w[i], err);
	}
	return DW_OK;
}

static void
tee_free(mg_writer *w)
{
	tee_writer *t = (tee_writer *)w;

	for (size_t i = 0; i < t->n; i++)
		mg_writer_free(t->w[i]);
	free(t->w);
	free(t);
}

static const mg_writer_ops tee_ops = {
    .name = "formats",
    .begin = tee_begin,
    .record = tee_record,
    .end = tee_end,
    .free = tee_free,
};

dw_err
mg_writers_new(const mg_format *const *fmts, size_t n, const char *prefix,
               mg_writer **out)
{
	tee_writer *t;

	*out = NULL;
	if (n == 1)
		return fmts[0]->create(prefix, out);
	t = calloc(1, sizeof *t);
	if (!t || !(t->w = calloc(n, sizeof *t->w))) {
		free(t);
		return DW_ENOMEM;
	}
	t->base.ops = &tee_ops;
	for (; t->n < n; t->n++) {
		if (fmts[t->n]->create(prefix, &t->w[t->n]) != DW_OK) {
			tee_free(&t->base);
			return DW_ENOMEM;
		}
	}
	*out = &t->base;
	return DW_OK;
}
