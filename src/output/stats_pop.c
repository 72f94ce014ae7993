/*
 * The POP tree beyond the efficiencies (stats.h, docs/tracing.md "The
 * POP tree"): what each wait waited for, what the elapsed time becomes
 * when a function on the critical path runs faster, and the hardware
 * counters when the trace has them.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <dwork/error.h>
#include <dwork/events.h>

#include "output/stats.h"

static const char *const cause_text[RP_NCAUSES] = {
    "the caller had not yet handed out the work (master)",
    "a result still being computed (work)",
    "a message in transfer (network)",
    "a channel nobody had fed (producer)",
    "another message not yet sent (late sender)",
    "no message ends it (none)",
};

/* The I/O thread of task k, which takes in its messages; UINT32_MAX
 * when it has none. */
static uint32_t
io_thread(const st_stats *s, uint32_t k)
{
	const char *l;

	for (size_t i = 0; k < s->ntasks && i < s->tasks[k].nthreads; i++) {
		size_t t = s->tasks[k].first_thread + i;

		l = t < s->nthreads ? s->threads[t].label : NULL;
		if (l && (!strcmp(l, "I/O") || !strcmp(l, "dwork I/O")))
			return (uint32_t)t;
	}
	return UINT32_MAX;
}

/* Wait causes per task and per function, from the replay's trace. */
static dw_err
waits(st_stats *s)
{
	unsigned char *counted = calloc(s->nthreads + 1, 1);
	uint32_t *proxy;
	rp_wait *w = NULL;
	size_t n = 0;
	dw_err err;

	s->task_waits = calloc(s->ntasks * RP_NCAUSES + 1, sizeof(uint64_t));
	if (!counted || !s->task_waits) {
		free(counted);
		return DW_ENOMEM;
	}
	proxy = calloc(s->nthreads + 1, sizeof *proxy);
	if (!proxy) {
		free(counted);
		return DW_ENOMEM;
	}
	for (size_t i = 0; i < s->nthreads; i++) {
		counted[i] = s->threads[i].role != ST_NOT_COUNTED;
		proxy[i] = io_thread(s, s->threads[i].task);
	}
	err = rp_waits(s->replay, counted, proxy, &w, &n);
	free(counted);
	free(proxy);
	if (err != DW_OK)
		return err;
	for (size_t i = 0; i < n; i++) {
		uint32_t task = s->threads[w[i].thread].task;

		for (int c = 0; c < RP_NCAUSES && task < s->ntasks; c++)
			s->task_waits[task * RP_NCAUSES + c] += w[i].ns[c];
	}
	/* per function over all threads: folded in place */
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		while (k < s->nfunc_waits && w[k].func != w[i].func)
			k++;
		if (k == s->nfunc_waits) {
			w[k] = w[i];
			w[k].thread = 0;
			s->nfunc_waits++;
			continue;
		}
		for (int c = 0; c < RP_NCAUSES; c++)
			w[k].ns[c] += w[i].ns[c];
	}
	s->func_waits = w;
	return DW_OK;
}

/* T_ideal with each function of the path k x faster. */
static dw_err
faster(st_stats *s)
{
	s->path_faster = calloc(s->npath + 1, sizeof *s->path_faster);
	if (!s->path_faster)
		return DW_ENOMEM;
	for (size_t i = 0; i < s->npath; i++)
		if (rp_faster(s->replay, s->path[i].func, s->faster_k,
		              &s->path_faster[i]) != DW_OK)
			return DW_ENOMEM;
	return DW_OK;
}

/* The path's pieces, kept after the replay is freed. */
static dw_err
segs(st_stats *s)
{
	rp_path p;

	if (rp_critical_path(s->replay, &p) != DW_OK)
		return DW_ENOMEM;
	if (!p.nsegs)
		return DW_OK;
	s->path_segs = malloc(p.nsegs * sizeof *s->path_segs);
	if (!s->path_segs)
		return DW_ENOMEM;
	memcpy(s->path_segs, p.segs, p.nsegs * sizeof *s->path_segs);
	s->npath_segs = p.nsegs;
	return DW_OK;
}

/* Why there are no instruction counters: this machine's answer. */
static void
counters_why(st_counters *c)
{
	struct perf_event_attr a;
	long fd;

	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd >= 0) {
		close((int)fd);
		snprintf(c->why, sizeof c->why,
		         "the trace has no instruction or cycle counters");
		return;
	}
	snprintf(c->why, sizeof c->why,
	         "the trace has no instruction or cycle counters; "
	         "perf_event_open(instructions) here: %s",
	         strerror(errno));
}

static void
counters(st_stats *s)
{
	st_counters *c = &s->ctr;

	for (size_t i = 0; i < s->nthreads; i++) {
		if (s->threads[i].role == ST_NOT_COUNTED)
			continue;
		c->ins += s->threads[i].ins;
		c->cyc += s->threads[i].cyc;
	}
	c->valid = c->ins > 0 && c->cyc > 0;
	if (c->valid)
		c->ipc = (double)c->ins / (double)c->cyc;
	else
		counters_why(c);
}

dw_err
st_pop_tree(st_stats *s)
{
	dw_err err;

	counters(s);
	if ((err = segs(s)) != DW_OK || (err = waits(s)) != DW_OK)
		return err;
	return faster(s);
}

void
st_pop_tree_free(st_stats *s)
{
	free(s->path_faster);
	free(s->path_segs);
	free(s->task_waits);
	free(s->func_waits);
}

/* ---- Output ----------------------------------------------------------- */

static const char *
fname(const st_stats *s, uint64_t func, char *buf, size_t len)
{
	const char *n = st_value_name(s, DW_EV_FUNCTION, func);

	if (!func)
		return "(no function)";
	if (n)
		return n;
	snprintf(buf, len, "function %" PRIu64, func);
	return buf;
}

static void
waits_text(const st_stats *s, FILE *f)
{
	char buf[48];

	fprintf(f, "\nWait causes (s; waits of the counted threads, each "
	           "cut at the receives that end it):\n");
	for (int c = 0; c < RP_NCAUSES; c++)
		fprintf(f, "  %-9s %s\n", rp_cause_key(c), cause_text[c]);
	fprintf(f, "  %-22s", "task / function");
	for (int c = 0; c < RP_NCAUSES; c++)
		fprintf(f, " %10s", rp_cause_key(c));
	fputc('\n', f);
	for (size_t t = 0; t < s->ntasks; t++) {
		if (!s->tasks[t].active)
			continue;
		fprintf(f, "  task %-17zu", t + 1);
		for (int c = 0; c < RP_NCAUSES; c++)
			fprintf(f, " %10.6f",
			        (double)s->task_waits[t * RP_NCAUSES + c] *
			            1e-9);
		fputc('\n', f);
	}
	for (size_t i = 0; i < s->nfunc_waits; i++) {
		fprintf(f, "  %-22.22s",
		        fname(s, s->func_waits[i].func, buf, sizeof buf));
		for (int c = 0; c < RP_NCAUSES; c++)
			fprintf(f, " %10.6f",
			        (double)s->func_waits[i].ns[c] * 1e-9);
		fputc('\n', f);
	}
}

void
st_print_pop_text(const st_stats *s, FILE *f)
{
	char buf[48];

	for (size_t i = 0; i < s->npath; i++)
		fprintf(f,
		        "  if %s ran %gx faster: T_ideal %.6f s -> %.6f s "
		        "(the replay)\n",
		        fname(s, s->path[i].func, buf, sizeof buf), s->faster_k,
		        (double)s->ideal * 1e-9,
		        (double)s->path_faster[i] * 1e-9);
	if (s->ctr.valid)
		fprintf(f,
		        "  IPC = instructions / cycles of the counted "
		        "threads = %" PRIu64 " / %" PRIu64 " = %.3f\n",
		        s->ctr.ins, s->ctr.cyc, s->ctr.ipc);
	else
		fprintf(f, "  IPC, instruction scalability: unavailable (%s)\n",
		        s->ctr.why);
	if (s->task_waits)
		waits_text(s, f);
}

static void
json_str(FILE *f, const char *p)
{
	fputc('"', f);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if ((unsigned char)*p < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void
causes_json(FILE *f, const uint64_t *ns)
{
	for (int c = 0; c < RP_NCAUSES; c++)
		fprintf(f, "%s\"%s\": %" PRIu64, c ? ", " : "", rp_cause_key(c),
		        ns[c]);
}

/* Members "wait_causes", "what_if", "counters", each line ending ",". */
void
st_print_pop_json(const st_stats *s, FILE *f)
{
	char buf[48];

	fprintf(f, "  \"what_if\": {\"faster\": %g, \"functions\": [",
	        s->faster_k);
	for (size_t i = 0; i < s->npath; i++) {
		fprintf(f, "%s{\"id\": %" PRIu64 ", \"name\": ", i ? ", " : "",
		        s->path[i].func);
		json_str(f, fname(s, s->path[i].func, buf, sizeof buf));
		fprintf(f, ", \"ideal_elapsed_ns\": %" PRIu64 "}",
		        s->path_faster[i]);
	}
	fprintf(f, "]},\n  \"counters\": {\"available\": %s",
	        s->ctr.valid ? "true" : "false");
	if (s->ctr.valid)
		fprintf(f,
		        ", \"instructions\": %" PRIu64 ", \"cycles\": %" PRIu64
		        ", \"ipc\": %.6f},\n",
		        s->ctr.ins, s->ctr.cyc, s->ctr.ipc);
	else {
		fputs(", \"reason\": ", f);
		json_str(f, s->ctr.why);
		fputs("},\n", f);
	}
	fputs("  \"wait_causes\": {\"tasks\": [", f);
	for (size_t t = 0, n = 0; t < s->ntasks && s->task_waits; t++) {
		if (!s->tasks[t].active)
			continue;
		fprintf(f, "%s{\"task\": %zu, ", n++ ? ", " : "", t + 1);
		causes_json(f, &s->task_waits[t * RP_NCAUSES]);
		fputc('}', f);
	}
	fputs("], \"functions\": [", f);
	for (size_t i = 0; i < s->nfunc_waits; i++) {
		fprintf(f, "%s{\"id\": %" PRIu64 ", \"name\": ", i ? ", " : "",
		        s->func_waits[i].func);
		json_str(f, fname(s, s->func_waits[i].func, buf, sizeof buf));
		fputs(", ", f);
		causes_json(f, s->func_waits[i].ns);
		fputc('}', f);
	}
	fputs("]},\n", f);
}

static void
csv_field(FILE *f, const char *p)
{
	if (!strpbrk(p, ",\"\r\n")) {
		fputs(p, f);
		return;
	}
	fputc('"', f);
	for (; *p; p++)
		fprintf(f, *p == '"' ? "\"\"" : "%c", *p);
	fputc('"', f);
}

/* Rows wait,T,,CAUSE,,,NS, / wait_function,,,CAUSE,NAME,FUNC_ID,NS, /
 * what_if,,,FUNC_ID,NAME,,NS, */
void
st_print_pop_csv(const st_stats *s, FILE *f)
{
	char buf[48];

	for (size_t t = 0; t < s->ntasks && s->task_waits; t++)
		for (int c = 0; c < RP_NCAUSES && s->tasks[t].active; c++)
			fprintf(f, "wait,%zu,,%s,,,%" PRIu64 ",\n", t + 1,
			        rp_cause_key(c),
			        s->task_waits[t * RP_NCAUSES + c]);
	for (size_t i = 0; i < s->nfunc_waits; i++)
		for (int c = 0; c < RP_NCAUSES; c++) {
			fprintf(f, "wait_function,,,%s,", rp_cause_key(c));
			csv_field(f, fname(s, s->func_waits[i].func, buf,
			                   sizeof buf));
			fprintf(f, ",%" PRIu64 ",%" PRIu64 ",\n",
			        s->func_waits[i].func, s->func_waits[i].ns[c]);
		}
	for (size_t i = 0; i < s->npath; i++) {
		fprintf(f, "what_if,,,%" PRIu64 ",", s->path[i].func);
		csv_field(f, fname(s, s->path[i].func, buf, sizeof buf));
		fprintf(f, ",,%" PRIu64 ",\n", s->path_faster[i]);
	}
}
