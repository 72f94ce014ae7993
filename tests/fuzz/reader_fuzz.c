/*
 * Fuzz target for the trace file reader.  The input bytes are one trace
 * file, process or thread (the magic tells which; both readers are tried
 * on every input).  Checks, besides "no crash, no leak, no overread":
 * records come in time order, and reading the same bytes from a file
 * (through a tiny window, so every refill path runs) gives exactly what
 * reading them from memory gives.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "tracefile/reader.h"
#include "tu_tmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(c)                                                          \
	do {                                                                   \
		if (!(c))                                                      \
			__builtin_trap();                                      \
	} while (0)

static bool
rec_same(const rd_rec *a, const rd_rec *b)
{
	if (a->kind != b->kind || a->ticks != b->ticks ||
	    a->offset != b->offset)
		return false;
	switch (a->kind) {
	case FMT_R_EVENT:
		return a->u.event.type == b->u.event.type &&
		       a->u.event.value == b->u.event.value;
	case FMT_R_STATE_PUSH:
	case FMT_R_STATE_POP:
		return a->u.state.state == b->u.state.state;
	case FMT_R_FUNC_ENTER:
	case FMT_R_FUNC_EXIT:
		return a->u.func.addr == b->u.func.addr;
	case FMT_R_COMM:
		return a->u.comm.flags == b->u.comm.flags &&
		       a->u.comm.partner_task == b->u.comm.partner_task &&
		       a->u.comm.partner_thread == b->u.comm.partner_thread &&
		       a->u.comm.tag == b->u.comm.tag &&
		       a->u.comm.size == b->u.comm.size &&
		       a->u.comm.id == b->u.comm.id;
	case FMT_R_SYNC:
		return a->u.sync.ref_task == b->u.sync.ref_task &&
		       a->u.sync.local_ns == b->u.sync.local_ns &&
		       a->u.sync.rtt_ns == b->u.sync.rtt_ns &&
		       a->u.sync.offset_ns == b->u.sync.offset_ns;
	case FMT_R_THREAD_END:
		return true;
	default:
		return false; /* no other kind is ever returned */
	}
}

/* Reads every record (twice, with a rewind); returns them. */
static rd_rec *
fuzz_records(rd_thread *t, size_t max, size_t *n)
{
	rd_rec *v = calloc(max + 1, sizeof *v), r;
	rd_calib c;
	uint64_t last = 0;
	size_t k = 0;

	FUZZ_CHECK(v != NULL);
	rd_calib_init(&c, rd_thread_header(t)->clock,
	              rd_thread_header(t)->ticks_per_s);
	rd_calib_add_thread(&c, t);
	while (rd_thread_next(t, &r)) {
		FUZZ_CHECK(k < max && r.ticks >= last);
		FUZZ_CHECK((r.kind >= FMT_R_EVENT && r.kind <= FMT_R_SYNC) ||
		           r.kind == FMT_R_THREAD_END);
		last = r.ticks;
		(void)rd_calib_to_ns(&c, r.ticks);
		v[k++] = r;
	}
	rd_thread_rewind(t);
	for (size_t i = 0; i < k; i++)
		FUZZ_CHECK(rd_thread_next(t, &r) && rec_same(&r, &v[i]));
	FUZZ_CHECK(!rd_thread_next(t, &r));
	rd_calib_free(&c);
	*n = k;
	return v;
}

/* The same stream through rd_thread_skim (after a rewind): the same
 * number of records, the wanted ones equal and at their places, the
 * same last tick.  The problems are compared by the caller. */
static void
fuzz_skim(rd_thread *t, const rd_rec *v, size_t n)
{
	rd_skim sk = {.ev_lo = 7, .ev_span = 3};
	rd_rec w[5];
	uint32_t at[5];
	size_t seen = 0, k;

	rd_thread_rewind(t);
	while ((k = rd_thread_skim(t, &sk, w, at, 5)), sk.count) {
		FUZZ_CHECK(seen + sk.count <= n);
		for (size_t i = 0; i < k; i++)
			FUZZ_CHECK(at[i] < sk.count &&
			           rec_same(&w[i], &v[seen + at[i]]));
		FUZZ_CHECK(sk.last == v[seen + sk.count - 1].ticks);
		seen += sk.count;
	}
	FUZZ_CHECK(seen == n);
}

static void
fuzz_proc(rd_proc *p)
{
	rd_calib c;

	for (size_t i = 0; i < p->ntypes; i++)
		FUZZ_CHECK(rd_proc_type_name(p, p->types[i].type) ==
		           p->types[i].name);
	for (size_t i = 0; i < p->nvalues; i++)
		FUZZ_CHECK(rd_proc_value_name(p, p->values[i].type,
		                              p->values[i].value) ==
		           p->values[i].name);
	for (size_t i = 0; i < p->nstates; i++)
		FUZZ_CHECK(rd_proc_state(p, p->states[i].state) ==
		           &p->states[i]);
	for (size_t i = 0; i < p->nmodules; i++)
		(void)rd_proc_module(p, p->modules[i].start);
	(void)rd_proc_func_name(p, 0);
	(void)rd_proc_thread_name(p, 0);
	rd_calib_init(&c, p->hdr.clock, p->hdr.ticks_per_s);
	rd_calib_add_proc(&c, p);
	rd_calib_finish(&c, "fuzz", NULL);
	for (size_t i = 0; i < c.n; i++) {
		FUZZ_CHECK(rd_calib_to_ns(&c, c.pairs[i].ticks) ==
		               (int64_t)c.pairs[i].ns ||
		           c.pairs[i].ns > INT64_MAX ||
		           c.clock == FMT_CLOCK_MONO_RAW);
		(void)rd_calib_to_ns(&c, c.pairs[i].ticks + 12345);
		(void)rd_calib_to_ns(&c, c.pairs[i].ticks - 12345);
	}
	(void)rd_calib_to_ns(&c, 0);
	(void)rd_calib_to_ns(&c, UINT64_MAX);
	rd_calib_free(&c);
}

/* The same bytes as a file: a real one (the readers refuse links, so
 * /proc/self/fd of a memfd will not do), in a directory made once. */
static char fuzz_dir[160];

static void
fuzz_cleanup(void)
{
	char path[200];

	snprintf(path, sizeof path, "%s/in", fuzz_dir);
	unlink(path);
	rmdir(fuzz_dir);
}

static int
fuzz_file(const uint8_t *data, size_t size, char *path, size_t len)
{
	static int made;
	size_t done = 0;

	if (!made++) {
		FUZZ_CHECK(mkdtemp(tu_tmp_template(fuzz_dir, sizeof fuzz_dir,
		                                   "dw-reader-fuzz")) != NULL);
		atexit(fuzz_cleanup);
	}
	snprintf(path, len, "%s/in", fuzz_dir);
	unlink(path);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	FUZZ_CHECK(fd >= 0);
	while (done < size) {
		ssize_t w = write(fd, data + done, size - done);

		FUZZ_CHECK(w > 0);
		done += (size_t)w;
	}
	return fd;
}

static void
fuzz_thread(const uint8_t *data, size_t size)
{
	rd_errlist e1, e2;
	rd_thread *t = NULL, *u = NULL;
	rd_rec *v1 = NULL, *v2 = NULL;
	size_t n1 = 0, n2 = 0;
	char path[200];
	int fd = fuzz_file(data, size, path, sizeof path);
	dw_err r1, r2;

	rd_errlist_init(&e1, NULL);
	rd_errlist_init(&e2, NULL);
	r1 = rd_thread_open_mem("fuzz", data, size, &e1, &t);
	size_t c0 = rd_errlist_count(&e1);
	r2 = rd_thread_open(path, &e2, &u);
	FUZZ_CHECK(r1 == r2 && (t != NULL) == (r1 == DW_OK));
	if (t) {
		v1 = fuzz_records(t, size / FMT_REC_SIZE, &n1);
		v2 = fuzz_records(u, size / FMT_REC_SIZE, &n2);
		FUZZ_CHECK(n1 == n2);
		for (size_t i = 0; i < n1; i++)
			FUZZ_CHECK(rec_same(&v1[i], &v2[i]));
		size_t c1 = rd_errlist_count(&e1);
		fuzz_skim(t, v1, n1);
		/* a pass reports as many problems as a pass before */
		FUZZ_CHECK(rd_errlist_count(&e1) - c1 == (c1 - c0) / 2);
		fuzz_skim(u, v2, n2);
	}
	FUZZ_CHECK(rd_errlist_count(&e1) == rd_errlist_count(&e2));
	free(v1);
	free(v2);
	rd_thread_close(t);
	rd_thread_close(u);
	rd_errlist_free(&e1);
	rd_errlist_free(&e2);
	close(fd);
}

/* Memory and file give the same labels (counted) and messages. */
static void
fuzz_procs(const uint8_t *data, size_t size)
{
	rd_errlist e1, e2;
	rd_proc *p = NULL, *q = NULL;
	char path[200];
	int fd = fuzz_file(data, size, path, sizeof path);
	dw_err r1, r2;

	rd_errlist_init(&e1, NULL);
	rd_errlist_init(&e2, NULL);
	r1 = rd_proc_open_mem("fuzz", data, size, &e1, &p);
	r2 = rd_proc_open(path, &e2, &q);
	FUZZ_CHECK(r1 == r2 && (p != NULL) == (r1 == DW_OK));
	if (p) {
		fuzz_proc(p);
		FUZZ_CHECK(p->data_end == q->data_end);
		FUZZ_CHECK(p->ntypes == q->ntypes && p->nvalues == q->nvalues);
		FUZZ_CHECK(p->nmodules == q->nmodules &&
		           p->ncalib == q->ncalib);
	}
	FUZZ_CHECK(rd_errlist_count(&e1) == rd_errlist_count(&e2));
	rd_proc_close(p);
	rd_proc_close(q);
	rd_errlist_free(&e1);
	rd_errlist_free(&e2);
	close(fd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rd_errlist errs;
	rd_header h;

	rd_set_window(64);
	rd_errlist_init(&errs, NULL);
	(void)rd_header_parse("fuzz", data, size, &errs, &h);
	rd_errlist_free(&errs);
	fuzz_procs(data, size);
	fuzz_thread(data, size);
	return 0;
}
