/*
 * Ground truth from a merged trace (the truth_* tests): per task, the
 * time in each state and the runs of each user function, with every
 * DW_EV_FUNCTION and DW_EV_BATCH value resolved through the .pcf's
 * labels (never by its numeric id).  Useful time is time in Running: only
 * executors and the master's user threads are ever in it (the I/O thread
 * and a worker's main thread never run user code), so summing a task's
 * threads counts exactly the threads STATES.md counts.
 */
#ifndef DW_TRUTH_UTIL_H
#define DW_TRUTH_UTIL_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "prv_check.h"
#include "testutil.h"

#define TR_TASKS   8
#define TR_THREADS 16
#define TR_NAMES   32
#define TR_LABELS  512

struct tr_label {
	uint32_t type;
	uint64_t value;
	char name[96];
};

struct tr_runs {
	char name[96];
	uint64_t runs[TR_TASKS]; /* per task (0 = the master) */
	uint64_t in_batch;       /* runs inside a DW_EV_BATCH carrier */
};

struct truth {
	uint64_t state_ns[TR_TASKS][32]; /* per task and state (0..31) */
	struct tr_runs fn[TR_NAMES];
	int nfn;
	struct {
		char name[64];
		uint64_t n;
	} bat[8]; /* DW_EV_BATCH starts by the .pcf label of their kind */
	int nbat;
	uint64_t unnamed;    /* DW_EV_FUNCTION values without a label */
	uint64_t carrier_fn; /* DW_EV_FUNCTION values naming dwork:… */
	struct tr_label lab[TR_LABELS];
	int nlab;
};

static const char *
tr_label(const struct truth *t, uint32_t type, uint64_t value)
{
	for (int i = 0; i < t->nlab; i++)
		if (t->lab[i].type == type && t->lab[i].value == value)
			return t->lab[i].name;
	return NULL;
}

/* The labels of the two types the tests resolve. */
static void
tr_read_pcf(struct truth *t, const char *pcf)
{
	FILE *f = fopen(pcf, "r");
	REQUIRE(f);
	char line[512];
	uint32_t type = 0;
	int in_values = 0;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strcmp(line, "EVENT_TYPE")) {
			REQUIRE(fgets(line, sizeof line, f));
			unsigned g, ty;
			type = sscanf(line, "%u %u", &g, &ty) == 2 ? ty : 0;
			in_values = 0;
		} else if (!strcmp(line, "VALUES")) {
			in_values = 1;
		} else if (!line[0]) {
			in_values = 0;
		} else if (in_values &&
		           (type == DW_EV_FUNCTION || type == DW_EV_BATCH)) {
			char *end;
			uint64_t v = strtoull(line, &end, 10);
			while (*end == ' ')
				end++;
			REQUIRE(t->nlab < TR_LABELS);
			struct tr_label *l = &t->lab[t->nlab++];
			l->type = type;
			l->value = v;
			snprintf(l->name, sizeof l->name, "%s", end);
		}
	}
	fclose(f);
}

static struct tr_runs *
tr_fn(struct truth *t, const char *name)
{
	for (int i = 0; i < t->nfn; i++)
		if (!strcmp(t->fn[i].name, name))
			return &t->fn[i];
	REQUIRE(t->nfn < TR_NAMES);
	struct tr_runs *r = &t->fn[t->nfn++];
	snprintf(r->name, sizeof r->name, "%s", name);
	return r;
}

static void
tr_event(struct truth *t, uint64_t task, uint64_t *batch, uint64_t type,
         uint64_t value)
{
	if (type == DW_EV_BATCH) {
		*batch = value;
		const char *n = tr_label(t, DW_EV_BATCH, value);
		int k = 0;
		while (value && k < t->nbat &&
		       strcmp(t->bat[k].name, n ? n : "?"))
			k++;
		if (value && k == t->nbat && k < 8)
			snprintf(t->bat[t->nbat++].name, sizeof t->bat[k].name,
			         "%s", n ? n : "?");
		if (value && k < t->nbat)
			t->bat[k].n++;
	}
	if (type != DW_EV_FUNCTION || !value)
		return;
	const char *n = tr_label(t, DW_EV_FUNCTION, value);
	if (!n) {
		t->unnamed++;
		return;
	}
	if (!strncmp(n, "dwork:", 6))
		t->carrier_fn++;
	struct tr_runs *r = tr_fn(t, n);
	if (task < TR_TASKS)
		r->runs[task]++;
	if (*batch)
		r->in_batch++;
}

/* Reads PREFIX.prv and .pcf after checking them with the strict
 * checker. */
static void
tr_read(struct truth *t, const char *prefix)
{
	char path[1024], err[1024];
	pc_result pr;
	memset(t, 0, sizeof *t);
	if (prv_check(prefix, PC_ALL, &pr, err, sizeof err) != 0) {
		fprintf(stderr, "strict checker: %s\n", err);
		tu_failures++;
	}
	snprintf(path, sizeof path, "%s.pcf", prefix);
	tr_read_pcf(t, path);
	snprintf(path, sizeof path, "%s.prv", prefix);
	FILE *f = fopen(path, "r");
	REQUIRE(f);
	static char line[65536];
	static uint64_t batch[TR_TASKS][TR_THREADS];
	memset(batch, 0, sizeof batch);
	REQUIRE(fgets(line, sizeof line, f));
	while (fgets(line, sizeof line, f)) {
		uint64_t v[128];
		int n = 0;
		for (char *s = line; n < 128 && *s && *s != '\n';) {
			v[n++] = strtoull(s, &s, 10);
			if (*s != ':')
				break;
			s++;
		}
		if (n < 6 || v[3] < 1 || v[3] > TR_TASKS || v[4] < 1 ||
		    v[4] > TR_THREADS)
			continue;
		uint64_t task = v[3] - 1, th = v[4] - 1;
		if (v[0] == 1 && n >= 8 && v[7] < 32)
			t->state_ns[task][v[7]] += v[6] - v[5];
		else if (v[0] == 2)
			for (int i = 6; i + 1 < n; i += 2)
				tr_event(t, task, &batch[task][th], v[i],
				         v[i + 1]);
	}
	fclose(f);
}

static double
tr_ms(const struct truth *t, int task, int state)
{
	return t->state_ns[task][state] / 1e6;
}

static uint64_t
tr_runs_of(struct truth *t, const char *name, int task)
{
	struct tr_runs *r = tr_fn(t, name);
	if (task >= 0)
		return r->runs[task];
	uint64_t s = 0;
	for (int i = 0; i < TR_TASKS; i++)
		s += r->runs[i];
	return s;
}

/* lo <= got <= hi, printed either way so a run's figures are visible. */
#define TR_WITHIN(what, got, lo, hi)                                           \
	do {                                                                   \
		double g_ = (got);                                             \
		int ok_ = g_ >= (lo) && g_ <= (hi);                            \
		printf("  %-44s %9.3f  [%g, %g]%s\n", what, g_, (double)(lo),  \
		       (double)(hi), ok_ ? "" : "  <-- FAIL");                 \
		if (!ok_)                                                      \
			tu_failures++;                                         \
	} while (0)

/* The batch kind whose .pcf label is name (0 if none). */
static uint64_t
tr_batches(const struct truth *t, const char *name)
{
	for (int k = 0; k < t->nbat; k++)
		if (!strcmp(t->bat[k].name, name))
			return t->bat[k].n;
	return 0;
}

#endif
