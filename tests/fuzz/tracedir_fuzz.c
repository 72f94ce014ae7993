/*
 * Fuzz target for a whole trace directory: the input is a sequence of
 * files, each a u32 little-endian length and its bytes; the first is
 * written as a process file (.dwp), the others as thread files (.dwt) of
 * one temporary directory.  The directory then goes through the reader
 * the way a consumer reading files directly does (every process, thread
 * and record), and through the merge into the statistics (all three
 * printers), the path of `dwork stats DIR` and `dwork summary`.  Checks,
 * besides "no crash, no leak, no overread": every id the reader hands
 * out is within RD_TASK_MAX / RD_THREAD_MAX.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "merge/merge.h"
#include "tracefile/reader.h"
#include "output/stats.h"
#include "tu_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(c)                                                          \
	do {                                                                   \
		if (!(c))                                                      \
			__builtin_trap();                                      \
	} while (0)

#define FUZZ_FILES 8

static char dir[160];

static void
fuzz_clear(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[420];

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
}

static void
fuzz_end(void)
{
	fuzz_clear();
	rmdir(dir);
}

static void
put(int i, const uint8_t *p, size_t n)
{
	char path[200];
	FILE *f;

	snprintf(path, sizeof path, i ? "%s/f.%d.dwt" : "%s/f.dwp", dir, i);
	f = fopen(path, "wb");
	FUZZ_CHECK(f != NULL);
	if (n)
		FUZZ_CHECK(fwrite(p, 1, n, f) == n);
	fclose(f);
}

static void
read_thread(const char *path, rd_errlist *errs)
{
	rd_thread *t;
	rd_rec r;

	if (rd_thread_open(path, errs, &t) != DW_OK)
		return;
	const rd_header *h = rd_thread_header(t);
	FUZZ_CHECK(h->task < RD_TASK_MAX && h->ntasks <= RD_TASK_MAX);
	FUZZ_CHECK(h->thread < RD_THREAD_MAX && h->nthreads <= RD_THREAD_MAX);
	for (int k = 0; k < 100000 && rd_thread_next(t, &r); k++) {
		if (r.kind == FMT_R_COMM)
			FUZZ_CHECK(r.u.comm.partner_task < RD_TASK_MAX);
		if (r.kind == FMT_R_SYNC)
			FUZZ_CHECK(r.u.sync.ref_task < RD_TASK_MAX);
	}
	rd_thread_close(t);
}

/* What a consumer reading the files itself sees. */
static void
run_reader(void)
{
	rd_errlist errs;
	rd_dir *d;

	rd_errlist_init(&errs, NULL);
	if (rd_dir_open(dir, &errs, &d) == DW_OK) {
		for (size_t i = 0; i < d->nprocs; i++) {
			const rd_dir_proc *dp = &d->procs[i];
			rd_proc *p = NULL;

			FUZZ_CHECK(dp->hdr.task < RD_TASK_MAX);
			if (dp->proc_path &&
			    rd_proc_open(dp->proc_path, &errs, &p) == DW_OK)
				FUZZ_CHECK(p->hdr.task < RD_TASK_MAX);
			for (size_t k = 0; k < dp->nthreads; k++)
				read_thread(dp->thread_paths[k], &errs);
			rd_proc_close(p);
		}
		rd_dir_close(d);
	}
	rd_errlist_free(&errs);
}

/* The statistics' three printouts, merged on `threads` threads (0: one;
 * 2: the decoding thread, its lookahead hints and the writer's pipe);
 * malloc'd, NULL when the merge refused the input. */
static char *
run_stats(int threads)
{
	st_stats *s;
	rd_errlist errs;
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	mg_opts o = {.dir = dir, .threads = threads};
	bool ok;

	FUZZ_CHECK(out != NULL);
	FUZZ_CHECK(st_stats_new(dir, &s) == DW_OK);
	rd_errlist_init(&errs, NULL);
	ok = mg_merge(&o, &s->base, &errs, NULL) == DW_OK;
	if (ok) {
		for (size_t i = 0; i < s->nthreads; i++)
			FUZZ_CHECK(s->threads[i].task < s->ntasks);
		st_print_text(s, out);
		st_print_csv(s, out);
		st_print_json(s, out);
	}
	st_stats_free(s);
	rd_errlist_free(&errs);
	fclose(out);
	if (!ok) {
		free(text);
		return NULL;
	}
	return text;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t o = 0;

	if (!dir[0]) {
		FUZZ_CHECK(mkdtemp(tu_tmp_template(dir, sizeof dir,
		                                   "tracedir-fuzz")) != NULL);
		atexit(fuzz_end);
	}
	fuzz_clear();
	for (int i = 0; i < FUZZ_FILES && size - o >= 4; i++) {
		uint32_t n = (uint32_t)data[o] | (uint32_t)data[o + 1] << 8 |
		             (uint32_t)data[o + 2] << 16 |
		             (uint32_t)data[o + 3] << 24;
		o += 4;
		if (n > size - o)
			n = (uint32_t)(size - o);
		put(i, data + o, n);
		o += n;
	}
	run_reader();
	char *one = run_stats(0), *two = run_stats(2);
	/* the threads change how, never what */
	FUZZ_CHECK(!one == !two && (!one || !strcmp(one, two)));
	free(one);
	free(two);
	return 0;
}
