/*
 * Regions (dwork/live.h): named spans of the master's program whose POP
 * metrics are measured over the whole cluster while it runs, as DLB's
 * TALP does for MPI programs.  Entering and leaving take a fresh sample
 * of every process's useful time (live_refresh); the metrics of a region
 * in progress use the figures of the last heartbeat.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "common/pop.h"
#include "runtime/live.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"

#define REGION_MAX     64
#define REGION_NAME    128
#define REGION_PROCS   4096
#define REGION_WAIT_MS 5000 /* a loaded machine answers late */

struct rproc {
	int id;
	uint64_t at_begin;          /* its useful ns when the run began */
	uint64_t useful;            /* ns inside completed runs */
	uint64_t issued_at, issued; /* calls issued, the same way */
	uint64_t cyc_at, cycles, ins_at, instr; /* its counters, the same */
	int hwc;    /* 0 while every sample had its counters, else why not */
	int in_run; /* sampled at the run's begin */
	char host[64];
};

struct region {
	char name[REGION_NAME];
	int open, runs;
	uint64_t t_begin; /* acct_now at the run's begin */
	uint64_t elapsed; /* ns of completed runs */
	struct rproc *p;
	size_t np, cap;
};

static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static struct region regions[REGION_MAX];
static int nregions;

struct sample {
	struct live_fig f[REGION_PROCS];
	size_t n;
};

static void
region_sample(struct sample *s, int fresh)
{
	if (fresh)
		live_refresh(REGION_WAIT_MS);
	s->n = live_figs_all(s->f, REGION_PROCS);
}

static struct region *
region_find(const char *name)
{
	for (int i = 0; i < nregions; i++)
		if (!strcmp(regions[i].name, name))
			return &regions[i];
	return NULL;
}

static struct rproc *
region_proc(struct region *r, int id)
{
	for (size_t i = 0; i < r->np; i++)
		if (r->p[i].id == id)
			return &r->p[i];
	if (r->np == r->cap) {
		size_t nc = r->cap ? 2 * r->cap : 16;
		void *q = realloc(r->p, nc * sizeof *r->p);
		if (!q)
			return NULL;
		r->p = q;
		r->cap = nc;
	}
	memset(&r->p[r->np], 0, sizeof r->p[0]);
	r->p[r->np].id = id;
	return &r->p[r->np++];
}

static int
region_check(const char *name)
{
	if (rt.role != RT_MASTER)
		return rt_set_err(0, "regions are the master's"), DW_ESTATE;
	if (!name || !*name || strlen(name) >= REGION_NAME)
		return rt_set_err(0, "a region needs a name of 1 to %d bytes",
		                  REGION_NAME - 1),
		       DW_EINVAL;
	return DW_OK;
}

static void
region_label(int idx, const char *name)
{
	if (!rtr_on)
		return;
	dwt_define_type(DW_EV_REGION, "dwork: region");
	dwt_define_value(DW_EV_REGION, 0, "End");
	dwt_define_value(DW_EV_REGION, (uint64_t)idx, name);
}

static int
region_enter(const char *name, const struct sample *s)
{
	struct region *r = region_find(name);
	if (!r && nregions == REGION_MAX)
		return rt_set_err(0, "more than %d regions", REGION_MAX),
		       DW_ENOMEM;
	if (!r) {
		r = &regions[nregions++];
		snprintf(r->name, sizeof r->name, "%s", name);
		region_label(nregions, name);
	}
	if (r->open)
		return rt_set_err(0, "region '%s' is already entered", name),
		       DW_ESTATE;
	for (size_t i = 0; i < r->np; i++)
		r->p[i].in_run = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct rproc *p = region_proc(r, s->f[i].id);
		if (!p)
			return DW_ENOMEM;
		p->at_begin = s->f[i].useful;
		p->issued_at = s->f[i].issued;
		p->cyc_at = s->f[i].cycles;
		p->ins_at = s->f[i].instr;
		p->hwc = p->hwc ? p->hwc : s->f[i].hwc;
		p->in_run = 1;
		if (s->f[i].host[0])
			memcpy(p->host, s->f[i].host, sizeof p->host);
	}
	r->open = 1;
	r->t_begin = acct_now();
	rtr_event(DW_EV_REGION, (uint64_t)(r - regions) + 1);
	return DW_OK;
}

DW_API int
dw_region_begin(const char *name)
{
	int err = region_check(name);
	if (err != DW_OK)
		return err;
	struct sample *s = malloc(sizeof *s);
	if (!s)
		return DW_ENOMEM;
	region_sample(s, 1);
	pthread_mutex_lock(&region_lock);
	err = region_enter(name, s);
	pthread_mutex_unlock(&region_lock);
	free(s);
	return err;
}

/* Adds the run in progress up to the sample s into r's totals (close)
 * or into the copies useful[] and *elapsed (a reading). */
static void
region_add_run(struct region *r, const struct sample *s, uint64_t now,
               uint64_t *useful, uint64_t *elapsed)
{
	for (size_t i = 0; i < s->n; i++) {
		struct rproc *p = region_proc(r, s->f[i].id);
		if (!p)
			continue;
		size_t k = (size_t)(p - r->p);
		/* a process that joined inside the run began it at 0 */
		uint64_t b = p->in_run ? p->at_begin : 0;
		uint64_t d = s->f[i].useful >= b ? s->f[i].useful - b : 0;
		if (useful) {
			useful[k] += d;
			continue;
		}
		p->useful += d;
		b = p->in_run ? p->issued_at : 0;
		p->issued += s->f[i].issued >= b ? s->f[i].issued - b : 0;
		b = p->in_run ? p->cyc_at : 0;
		p->cycles += s->f[i].cycles >= b ? s->f[i].cycles - b : 0;
		b = p->in_run ? p->ins_at : 0;
		p->instr += s->f[i].instr >= b ? s->f[i].instr - b : 0;
		p->hwc = p->hwc ? p->hwc : s->f[i].hwc;
		if (s->f[i].host[0])
			memcpy(p->host, s->f[i].host, sizeof p->host);
	}
	uint64_t e = now > r->t_begin ? now - r->t_begin : 0;
	if (elapsed)
		*elapsed += e;
	else
		r->elapsed += e;
}

static int
region_leave(const char *name, const struct sample *s)
{
	struct region *r = region_find(name);
	if (!r)
		return rt_set_err(0, "no region '%s'", name), DW_ENOENT;
	if (!r->open)
		return rt_set_err(0, "region '%s' is not entered", name),
		       DW_ESTATE;
	region_add_run(r, s, acct_now(), NULL, NULL);
	r->open = 0;
	r->runs++;
	rtr_event(DW_EV_REGION, 0);
	return DW_OK;
}

DW_API int
dw_region_end(const char *name)
{
	int err = region_check(name);
	if (err != DW_OK)
		return err;
	struct sample *s = malloc(sizeof *s);
	if (!s)
		return DW_ENOMEM;
	region_sample(s, 1);
	pthread_mutex_lock(&region_lock);
	err = region_leave(name, s);
	pthread_mutex_unlock(&region_lock);
	free(s);
	return err;
}

/* r's metrics, the open run included when s is given (lock held). */
static int
region_info(struct region *r, const struct sample *s, dw_region_info *o)
{
	uint64_t elapsed = r->elapsed;
	uint64_t *u = calloc(r->np + (s ? s->n : 0) + 1, sizeof *u);
	if (!u)
		return DW_ENOMEM;
	if (r->open && s)
		region_add_run(r, s, acct_now(), u, &elapsed);
	memset(o, 0, sizeof *o);
	struct pop_basic p = {0};
	for (size_t i = 0; i < r->np; i++)
		pop_add(&p, (double)(r->p[i].useful + u[i]) * 1e-9);
	free(u);
	o->elapsed_s = (double)elapsed * 1e-9;
	pop_finish(&p, o->elapsed_s);
	o->useful_s = p.total;
	o->max_useful_s = p.max;
	o->processes = (int)r->np;
	o->runs = r->runs;
	o->open = r->open;
	o->load_balance = p.lb;
	o->communication_efficiency = p.comm;
	o->parallel_efficiency = p.pe;
	return DW_OK;
}

DW_API int
dw_region_metrics(const char *name, dw_region_info *out)
{
	int err = region_check(name);
	if (err != DW_OK)
		return err;
	if (!out)
		return rt_set_err(0, "no place for the metrics"), DW_EINVAL;
	struct sample *s = malloc(sizeof *s);
	if (!s)
		return DW_ENOMEM;
	region_sample(s, 0);
	pthread_mutex_lock(&region_lock);
	struct region *r = region_find(name);
	err = r ? region_info(r, s, out)
	        : (rt_set_err(0, "no region '%s'", name), DW_ENOENT);
	pthread_mutex_unlock(&region_lock);
	free(s);
	return err;
}

/* ---- output ---- */

static void
region_json_name(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	fputc('"', f);
}

static void
region_json_one(FILE *f, const char *name, const dw_region_info *m)
{
	region_json_name(f, name);
	fprintf(f,
	        ":{\"elapsedTime\":%.0f,\"usefulTime\":%.0f,"
	        "\"maxUsefulTime\":%.0f,\"numProcesses\":%d,"
	        "\"numMeasurements\":%d,\"open\":%s,"
	        "\"loadBalance\":%.4f,\"communicationEfficiency\":%.4f,"
	        "\"parallelEfficiency\":%.4f}",
	        m->elapsed_s * 1e9, m->useful_s * 1e9, m->max_useful_s * 1e9,
	        m->processes, m->runs, m->open ? "true" : "false",
	        m->load_balance, m->communication_efficiency,
	        m->parallel_efficiency);
}

void
region_json(FILE *f)
{
	struct sample *s = malloc(sizeof *s);
	if (s)
		region_sample(s, 0);
	pthread_mutex_lock(&region_lock);
	fputc('{', f);
	for (int i = 0; i < nregions; i++) {
		dw_region_info m;
		if (region_info(&regions[i], s, &m) != DW_OK)
			continue;
		if (i)
			fputc(',', f);
		region_json_one(f, regions[i].name, &m);
	}
	fputc('}', f);
	pthread_mutex_unlock(&region_lock);
	free(s);
}

void
region_text(FILE *f)
{
	struct sample *s = malloc(sizeof *s);
	if (s)
		region_sample(s, 0);
	pthread_mutex_lock(&region_lock);
	for (int i = 0; i < nregions; i++) {
		dw_region_info m;
		if (region_info(&regions[i], s, &m) != DW_OK)
			continue;
		fprintf(f,
		        "region %-16.16s %s %8.2f s  LB %.3f  CommE %.3f  "
		        "PE %.3f\n",
		        regions[i].name, m.open ? "in " : "   ", m.elapsed_s,
		        m.load_balance, m.communication_efficiency,
		        m.parallel_efficiency);
	}
	pthread_mutex_unlock(&region_lock);
	free(s);
}

/* The regions as talp.c writes them (lock held). */
static void
region_talp(FILE *f)
{
	struct talp_region *tr = calloc((size_t)nregions + 1, sizeof *tr);
	int n = 0;
	for (int i = 0; tr && i < nregions; i++) {
		struct region *r = &regions[i];
		struct talp_proc *p = calloc(r->np + 1, sizeof *p);
		if (!p)
			break;
		for (size_t k = 0; k < r->np; k++)
			p[k] = (struct talp_proc){
			    r->p[k].id,   r->p[k].useful, r->p[k].issued,
			    r->p[k].host, r->p[k].hwc,    r->p[k].cycles,
			    r->p[k].instr};
		tr[n++] = (struct talp_region){r->name, r->elapsed, r->runs,
		                               r->np, p};
	}
	if (tr)
		talp_write(f, tr, n);
	for (int i = 0; tr && i < n; i++)
		free((void *)tr[i].p);
	free(tr);
}

void
region_finish(void)
{
	if (rt.role != RT_MASTER || !nregions)
		return;
	for (int i = 0; i < nregions; i++)
		if (regions[i].open)
			dw_region_end(regions[i].name);
	const char *path = getenv("DWORK_TALP_FILE");
	if (path && *path) {
		FILE *f = fopen(path, "w");
		if (!f) {
			rt_log("cannot write the regions to %s: %m", path);
		} else {
			pthread_mutex_lock(&region_lock);
			region_talp(f);
			pthread_mutex_unlock(&region_lock);
			if (fclose(f) != 0)
				rt_log("writing the regions to %s failed",
				       path);
		}
	}
	for (int i = 0; i < nregions; i++)
		free(regions[i].p);
	memset(regions, 0, sizeof regions);
	nregions = 0;
}
