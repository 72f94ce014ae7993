/*
 * The writer on a thread of its own (mg_opts.threads = 2, merge/pipe.h):
 * every format's files are byte for byte those of the one-thread merge,
 * on a trace that wraps the pipe's ring many times, names functions as
 * the merge meets them and holds one event record too large for the
 * ring (70,000 events at one time, behind a message in flight, so it
 * waits in the output queue first); and a writer whose record fails
 * stops the merge with its error, on both paths, without hanging.
 */
#include "merge_synth.h"
#include "merge_util.h"
#include "output/writers.h"

#define ITERS 6000
#define BIG   70000

static void
gen_thread(ms_proc *p, uint32_t k, uint32_t ntasks)
{
	ms_thread t;
	uint64_t base = 1000 + k * 7;

	ms_thread_open(&t, p, k);
	for (uint64_t i = 0; i < ITERS; i++) {
		uint64_t t0 = base + i * 1000, id = (i * 2 + k) * 4 + p->task;
		/* new function addresses keep appearing: names are found
		 * while the merge runs */
		uint64_t f = 0x500000 + ((i / 40) % 120) * 0x10;

		ms_push(&t, t0, 1);
		ms_event(&t, t0 + 50, 1001, i % 9);
		ms_event(&t, t0 + 50, 1002, i);
		ms_enter(&t, t0 + 100, f);
		ms_comm(&t, t0 + 200, 6, (p->task + 1) % ntasks, 1, 64, id);
		/* behind the message just sent: the output queue holds it */
		if (p->task == 1 && k == 0 && i == ITERS / 2)
			for (uint32_t j = 0; j < BIG; j++)
				ms_event(&t, t0 + 250, 2000 + j % 5, j);
		ms_exit(&t, t0 + 300, f);
		ms_pop(&t, t0 + 400);
		ms_push(&t, t0 + 500, 3);
		ms_comm(&t, t0 + 600, 7, (p->task + ntasks - 1) % ntasks, 1, 64,
		        id - 1 + (p->task == 0 ? ntasks : 0));
		ms_pop(&t, t0 + 700);
	}
	ms_thread_close(&t);
}

static void
gen_trace(const char *dir)
{
	const uint32_t ntasks = 3;

	for (uint32_t task = 0; task < ntasks; task++) {
		ms_proc p;

		ms_proc_init(&p, dir, 0x700 + task, 500 + task, task);
		p.ntasks = ntasks;
		ms_label_type(&p, 1001, "Phase");
		ms_label_value(&p, 1001, 3, "three");
		for (uint64_t f = 0; f < 120; f += 2 + task)
			ms_label_func(&p, 0x500000 + f * 0x10, "fn_named");
		ms_proc_end(&p, 1000 + ITERS * 1000 + 5000);
		for (uint32_t k = 0; k < 2; k++)
			gen_thread(&p, k, ntasks);
		ms_proc_close(&p);
	}
}

static dw_err
merge_to(const char *dir, const char *format, const char *prefix,
         unsigned threads)
{
	mg_opts o = {.dir = dir, .threads = threads};
	const mg_format *f = mg_format_find(format);
	rd_errlist errs;
	mg_writer *w;
	dw_err err;

	REQUIRE(f && f->create && f->create(prefix, &w) == DW_OK);
	rd_errlist_init(&errs, NULL);
	err = mg_merge(&o, w, &errs, NULL);
	if (err != DW_OK)
		fprintf(stderr, "%s: %s\n", format, w->err);
	mg_writer_free(w);
	rd_errlist_free(&errs);
	return err;
}

/* The bytes of path (binary files too); *n their count. */
static char *
slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long len;

	*n = 0;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len)) &&
	    fread(buf, 1, (size_t)len, f) == (size_t)len)
		*n = (size_t)len;
	fclose(f);
	return buf;
}

static void
same_file(const char *a, const char *b, size_t min)
{
	size_t na, nb;
	char *x = slurp(a, &na), *y = slurp(b, &nb);

	CHECK(na >= min);
	if (na != nb || memcmp(x, y, na)) {
		fprintf(stderr, "%s and %s differ\n", a, b);
		tu_failures++;
	}
	free(x);
	free(y);
}

static void
test_same_outputs(const char *dir)
{
	static const char *const fmt[] = {"prv", "json", "perfetto", "html"};
	static const char *const ext[] = {".prv", ".json", ".pftrace", ".html"};
	char one[700], two[700], a[800], b[800];

	for (size_t i = 0; i < sizeof fmt / sizeof fmt[0]; i++) {
		snprintf(one, sizeof one, "%s/one-%s", dir, fmt[i]);
		snprintf(two, sizeof two, "%s/two-%s", dir, fmt[i]);
		CHECK(merge_to(dir, fmt[i], one, 1) == DW_OK);
		CHECK(merge_to(dir, fmt[i], two, 2) == DW_OK);
		snprintf(a, sizeof a, "%s%s", one, ext[i]);
		snprintf(b, sizeof b, "%s%s", two, ext[i]);
		same_file(a, b, 100000);
		if (!strcmp(fmt[i], "prv")) {
			snprintf(a, sizeof a, "%s.pcf", one);
			snprintf(b, sizeof b, "%s.pcf", two);
			same_file(a, b, 500);
			snprintf(a, sizeof a, "%s.row", one);
			snprintf(b, sizeof b, "%s.row", two);
			same_file(a, b, 50);
		}
	}
}

/* A writer that counts its records and fails at the given one. */
typedef struct fail_writer {
	mg_writer base;
	uint64_t n, fail_at, events;
} fail_writer;

static dw_err
fw_begin(mg_writer *w, const mg_info *info)
{
	(void)w, (void)info;
	return DW_OK;
}

static dw_err
fw_record(mg_writer *mw, const mg_rec *r)
{
	fail_writer *w = (fail_writer *)mw;

	if (r->kind == MG_EVENT)
		w->events += r->u.event.n;
	if (++w->n == w->fail_at) {
		snprintf(w->base.err, sizeof w->base.err, "record %llu refused",
		         (unsigned long long)w->n);
		return DW_ENOSPC;
	}
	return DW_OK;
}

static dw_err
fw_end(mg_writer *w, const mg_info *info)
{
	(void)w, (void)info;
	return DW_OK;
}

static void
fw_free(mg_writer *w)
{
	(void)w;
}

static const mg_writer_ops fw_ops = {"fail", fw_begin, fw_record, fw_end,
                                     fw_free};

static void
test_writer_fails(const char *dir)
{
	uint64_t events[2] = {0, 0};

	for (unsigned th = 1; th <= 2; th++) {
		fail_writer w = {.base.ops = &fw_ops, .fail_at = 0};
		fail_writer f = {.base.ops = &fw_ops, .fail_at = 100000};
		mg_opts o = {.dir = dir, .threads = th};
		rd_errlist errs;

		rd_errlist_init(&errs, NULL);
		CHECK(mg_merge(&o, &w.base, &errs, NULL) == DW_OK);
		events[th - 1] = w.events;
		CHECK(mg_merge(&o, &f.base, &errs, NULL) == DW_ENOSPC);
		CHECK(!strcmp(f.base.err, "record 100000 refused"));
		CHECK_EQ_U64(f.n, 100000); /* nothing after the failure */
		rd_errlist_free(&errs);
	}
	/* every event arrives, the 70,000 of one record too */
	CHECK_EQ_U64(events[0], events[1]);
	CHECK(events[0] >= 3 * 2 * ITERS * 2 + BIG);
}

int
main(void)
{
	const char *dir = tu_tmpdir("merge-pipe");

	gen_trace(dir);
	test_same_outputs(dir);
	test_writer_fails(dir);
	tu_rmtree(dir);
	return tu_report("merge_pipe");
}
