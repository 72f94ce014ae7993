/* Trace directories: the files of each process, grouped by uid. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/tracename.h"
#include "tracefile/reader_int.h"

/* One trace file whose header could be read. */
struct entry {
	char *path;
	rd_header hdr;
};

struct entries {
	struct entry *v;
	size_t n, cap;
};

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static bool
names_push(char ***names, size_t *n, size_t *cap, const char *name)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		char **v = realloc(*names, ncap * sizeof *v);

		if (!v)
			return false;
		*names = v;
		*cap = ncap;
	}
	if (!((*names)[*n] = strdup(name)))
		return false;
	(*n)++;
	return true;
}

/* The sorted names of the trace files in dir (common/tracename.h). */
static dw_err
list_names(const char *dir, rd_errlist *errs, char ***out, size_t *nout)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;

	if (!d) {
		dw_err err = dw_err_from_errno(errno);

		rd_report_file(errs, dir, "cannot open the trace directory: %s",
		               strerror(errno));
		return err;
	}
	while ((de = readdir(d)) != NULL) {
		if (!tn_is_trace(dir, de->d_name)) /* an unused kit too */
			continue;
		/* a link is refused when opened (rd_src_open), with a
		 * message; it is never followed */
		if (!names_push(&names, &n, &cap, de->d_name)) {
			closedir(d);
			names_free(names, n);
			return DW_ENOMEM;
		}
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof *names, name_cmp);
	*out = names;
	*nout = n;
	return DW_OK;
}

static dw_err
entry_add(struct entries *es, const char *dir, const char *name,
          rd_errlist *errs)
{
	struct entry e;
	dw_err err;

	if (asprintf(&e.path, "%s/%s", dir, name) < 0)
		return DW_ENOMEM;
	err = rd_header_read(e.path, errs, &e.hdr);
	if (err != DW_OK) {
		free(e.path);
		return err == DW_ENOMEM ? err : DW_OK; /* reported, skipped */
	}
	if (es->n == es->cap) {
		size_t cap = es->cap ? es->cap * 2 : 32;
		struct entry *v = realloc(es->v, cap * sizeof *v);

		if (!v) {
			free(e.path);
			return DW_ENOMEM;
		}
		es->v = v;
		es->cap = cap;
	}
	es->v[es->n++] = e;
	return DW_OK;
}

static void
entries_free(struct entries *es)
{
	for (size_t i = 0; i < es->n; i++)
		free(es->v[i].path);
	free(es->v);
}

/* By uid, the process file first, then threads by id, then by name. */
static int
entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->hdr.uid != y->hdr.uid)
		return x->hdr.uid < y->hdr.uid ? -1 : 1;
	if (x->hdr.kind != y->hdr.kind)
		return x->hdr.kind == FMT_FILE_PROCESS ? -1 : 1;
	if (x->hdr.thread != y->hdr.thread)
		return x->hdr.thread < y->hdr.thread ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* ---- Grouping -------------------------------------------------------- */

/* Moves the path of e into the process p (the entry loses it). */
static bool
proc_take_thread(rd_dir_proc *p, struct entry *e, rd_errlist *errs)
{
	char **paths;
	uint32_t *ids;
	size_t n = p->nthreads;

	if (n && p->thread_ids[n - 1] == e->hdr.thread) {
		rd_report(errs, e->path, FMT_H_THREAD,
		          "second file for thread %u of uid %016llx (first: "
		          "%s); ignored",
		          e->hdr.thread, (unsigned long long)e->hdr.uid,
		          p->thread_paths[n - 1]);
		return true;
	}
	paths = realloc(p->thread_paths, (n + 1) * sizeof *paths);
	if (!paths)
		return false;
	p->thread_paths = paths;
	ids = realloc(p->thread_ids, (n + 1) * sizeof *ids);
	if (!ids)
		return false;
	p->thread_ids = ids;
	paths[n] = e->path;
	ids[n] = e->hdr.thread;
	e->path = NULL;
	p->nthreads++;
	return true;
}

/* Builds the process of the entries v[0 .. n-1] (one uid). */
static bool
proc_build(rd_dir_proc *p, struct entry *v, size_t n, rd_errlist *errs)
{
	size_t i = 0;

	p->uid = v[0].hdr.uid;
	p->hdr = v[0].hdr;
	if (v[0].hdr.kind == FMT_FILE_PROCESS) {
		p->proc_path = v[0].path;
		v[0].path = NULL;
		i = 1;
	}
	for (; i < n && v[i].hdr.kind == FMT_FILE_PROCESS; i++)
		rd_report(
		    errs, v[i].path, FMT_H_UID,
		    "second process file for uid %016llx (first: %s); ignored",
		    (unsigned long long)p->uid, p->proc_path);
	for (; i < n; i++)
		if (!proc_take_thread(p, &v[i], errs))
			return false;
	if (!p->proc_path)
		rd_report(errs, p->thread_paths[0], FMT_H_UID,
		          "no process file for uid %016llx (%zu thread files): "
		          "no labels, calibration from the thread files only",
		          (unsigned long long)p->uid, p->nthreads);
	return true;
}

static dw_err
group(rd_dir *d, struct entries *es, rd_errlist *errs)
{
	size_t i = 0;

	qsort(es->v, es->n, sizeof *es->v, entry_cmp);
	d->procs = calloc(es->n, sizeof *d->procs);
	if (!d->procs)
		return DW_ENOMEM;
	while (i < es->n) {
		size_t j = i + 1;

		while (j < es->n && es->v[j].hdr.uid == es->v[i].hdr.uid)
			j++;
		if (!proc_build(&d->procs[d->nprocs++], es->v + i, j - i, errs))
			return DW_ENOMEM;
		i = j;
	}
	return DW_OK;
}

static int
proc_cmp(const void *a, const void *b)
{
	const rd_dir_proc *x = a, *y = b;

	if (x->hdr.task != y->hdr.task)
		return x->hdr.task < y->hdr.task ? -1 : 1;
	return x->uid < y->uid ? -1 : x->uid > y->uid;
}

/* ---- Opening --------------------------------------------------------- */

static dw_err
dir_read(rd_dir *d, char **names, size_t n, rd_errlist *errs)
{
	struct entries es = {0};
	dw_err err = DW_OK;

	for (size_t i = 0; err == DW_OK && i < n; i++)
		err = entry_add(&es, d->path, names[i], errs);
	if (err == DW_OK && es.n == 0) {
		rd_report_file(
		    errs, d->path,
		    "none of its %zu trace files has a readable header", n);
		err = DW_EFORMAT;
	}
	if (err == DW_OK)
		err = group(d, &es, errs);
	if (err == DW_OK)
		qsort(d->procs, d->nprocs, sizeof *d->procs, proc_cmp);
	entries_free(&es);
	return err;
}

dw_err
rd_dir_open(const char *path, rd_errlist *errs, rd_dir **out)
{
	rd_dir *d = calloc(1, sizeof *d);
	char **names = NULL;
	size_t n = 0;
	dw_err err;

	*out = NULL;
	if (!d || !(d->path = strdup(path))) {
		free(d);
		return DW_ENOMEM;
	}
	err = list_names(path, errs, &names, &n);
	if (err == DW_OK && n == 0) {
		rd_report_file(
		    errs, path,
		    "no trace files (*.dwp, *.dwt) in this directory");
		err = DW_ENOENT;
	}
	if (err == DW_OK)
		err = dir_read(d, names, n, errs);
	names_free(names, n);
	if (err != DW_OK) {
		rd_dir_close(d);
		d = NULL;
	}
	*out = d;
	return err;
}

void
rd_dir_close(rd_dir *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nprocs; i++) {
		rd_dir_proc *p = &d->procs[i];

		free(p->proc_path);
		names_free(p->thread_paths, p->nthreads);
		free(p->thread_ids);
	}
	free(d->procs);
	free(d->path);
	free(d);
}
