/*
 * The OTF2 writer, through libotf2: an archive PREFIX-otf2/traces.otf2
 * (with traces.def and traces/) that Vampir and the Score-P tools read.
 * docs/merge.md describes the mapping:
 *
 *  - system tree: one node per host under a root; a location group
 *    (process) per task; a location (CPU thread) per thread;
 *  - regions: one per user function and one per state, entered and left
 *    as output/nest.h nests them (functions outside, the state inside);
 *  - events: a metric per event type (a member of type uint64, absolute
 *    point values), a Metric record per event;
 *  - communications: MpiSend at the logical send on the sender, MpiRecv
 *    at the receive on the receiver, on one communicator whose ranks are
 *    the threads;
 *  - clock: ns (resolution 1e9), global offset = the trace's start in
 *    real time, length = the duration.
 *
 * Streamed: OTF2 keeps one chunk per location in memory (our memory
 * callbacks; it writes the chunk out when it is full).  A receive
 * is written when its thread's own records reach its time: the receives
 * in flight wait in a heap per thread.  Definitions are written at the
 * end, when the labels are complete.  The archive is written under
 * PREFIX-otf2.tmp and renamed when it is whole.
 */
#ifdef DW_HAVE_OTF2

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <otf2/otf2.h>

#include "output/labels.h"
#include "output/otf2_int.h"
#include "output/outfile.h"

static otf2_writer *o2_current; /* for the error callback */

/* ---- Errors -------------------------------------------------------------- */

static dw_err
fail(otf2_writer *o, dw_err err, const char *fmt, ...)
{
	va_list ap;

	if (err == DW_ENOMEM) {
		snprintf(o->base.err, sizeof o->base.err, "out of memory");
		return err;
	}
	va_start(ap, fmt);
	vsnprintf(o->base.err, sizeof o->base.err, fmt, ap);
	va_end(ap);
	return err;
}

dw_err
o2_fail(otf2_writer *o, OTF2_ErrorCode e, const char *what)
{
	if (o->base.err[0]) /* the error callback said more */
		return DW_EIO;
	return fail(o, DW_EIO, "cannot %s %s: %s (%s)", what, o->tmp,
	            OTF2_Error_GetName(e), OTF2_Error_GetDescription(e));
}

static OTF2_ErrorCode
on_error(void *data, const char *file, uint64_t line, const char *func,
         OTF2_ErrorCode code, const char *fmt, va_list va)
{
	otf2_writer *o = o2_current;
	char msg[300];

	(void)data, (void)file, (void)line, (void)func;
	if (o && !o->base.err[0]) {
		vsnprintf(msg, sizeof msg, fmt, va);
		fail(o, DW_EIO, "OTF2 archive %s: %s: %s", o->tmp,
		     OTF2_Error_GetName(code), msg);
	}
	return code;
}

/* ---- OTF2's callbacks: flushes and a bounded memory per location --------- */

static OTF2_FlushType
pre_flush(void *data, OTF2_FileType type, OTF2_LocationRef loc, void *caller,
          bool final)
{
	(void)data, (void)type, (void)loc, (void)caller, (void) final;
	return OTF2_FLUSH;
}

static OTF2_TimeStamp
post_flush(void *data, OTF2_FileType type, OTF2_LocationRef loc)
{
	(void)data, (void)type, (void)loc;
	return 0;
}

static const OTF2_FlushCallbacks flush_cbs = {pre_flush, post_flush};

/* A buffer's chunks, reused after each flush.  An event buffer gets
 * O2_CHUNKS; when they are full, the allocation fails and OTF2 writes the
 * buffer out.  Definitions are small and written at the end: unbounded. */
typedef struct o2_pool {
	void **chunk;
	unsigned n, used, cap;
} o2_pool;

static void *
mem_alloc(void *data, OTF2_FileType type, OTF2_LocationRef loc, void **per,
          uint64_t size)
{
	o2_pool *p = *per;

	(void)data, (void)loc;
	if (!p && !(p = *per = calloc(1, sizeof *p)))
		return NULL;
	if (type == OTF2_FILETYPE_EVENTS && p->used == O2_CHUNKS)
		return NULL;
	if (p->used == p->n) {
		if (p->n == p->cap) {
			unsigned cap = p->cap ? p->cap * 2 : O2_CHUNKS;
			void **v = realloc(p->chunk, cap * sizeof *v);

			if (!v)
				return NULL;
			p->chunk = v;
			p->cap = cap;
		}
		if (!(p->chunk[p->n] = malloc(size)))
			return NULL;
		p->n++;
	}
	return p->chunk[p->used++];
}

static void
mem_free_all(void *data, OTF2_FileType type, OTF2_LocationRef loc, void **per,
             bool final)
{
	o2_pool *p = *per;

	(void)data, (void)type, (void)loc;
	if (!p)
		return;
	p->used = 0;
	if (!final)
		return;
	for (unsigned i = 0; i < p->n; i++)
		free(p->chunk[i]);
	free(p->chunk);
	free(p);
	*per = NULL;
}

static const OTF2_MemoryCallbacks mem_cbs = {mem_alloc, mem_free_all};

/* ---- Maps and ids -------------------------------------------------------- */

static bool
map_grow(o2_map *m)
{
	o2_map n = {0};

	n.cap = m->cap ? m->cap * 2 : 64;
	n.keys = malloc(n.cap * sizeof *n.keys);
	n.vals = malloc(n.cap * sizeof *n.vals);
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return false;
	}
	memset(n.vals, 0xff, n.cap * sizeof *n.vals);
	for (uint32_t i = 0; i < m->cap; i++) {
		uint32_t j;

		if (m->vals[i] == O2_NONE)
			continue;
		j = (m->keys[i] * 0x9e3779b1u) & (n.cap - 1);
		while (n.vals[j] != O2_NONE)
			j = (j + 1) & (n.cap - 1);
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
	}
	n.n = m->n;
	free(m->keys);
	free(m->vals);
	*m = n;
	return true;
}

/* The slot of key (its value O2_NONE when absent); NULL: no memory. */
static uint32_t *
map_slot(o2_map *m, uint32_t key)
{
	uint32_t j;

	if ((m->n + 1) * 2 > m->cap && !map_grow(m))
		return NULL;
	j = (key * 0x9e3779b1u) & (m->cap - 1);
	while (m->vals[j] != O2_NONE && m->keys[j] != key)
		j = (j + 1) & (m->cap - 1);
	if (m->vals[j] == O2_NONE)
		m->keys[j] = key;
	return &m->vals[j];
}

static void
map_free(o2_map *m)
{
	free(m->keys);
	free(m->vals);
}

static uint32_t
region_new(otf2_writer *o, int kind, uint64_t id)
{
	if (o->nregions == o->capregions) {
		uint32_t cap = o->capregions ? o->capregions * 2 : 64;
		o2_region *v = realloc(o->regions, cap * sizeof *v);

		if (!v)
			return O2_NONE;
		o->regions = v;
		o->capregions = cap;
	}
	o->regions[o->nregions] = (o2_region){kind, id};
	return o->nregions++;
}

static uint32_t
func_region(otf2_writer *o, uint64_t id)
{
	if (id >= o->nfunc_region) {
		size_t n = o->nfunc_region ? o->nfunc_region : 64;
		uint32_t *v;

		while (n <= id && n < ((size_t)1 << 32))
			n *= 2;
		v = n > id ? realloc(o->func_region, n * sizeof *v) : NULL;
		if (!v)
			return O2_NONE;
		memset(v + o->nfunc_region, 0xff,
		       (n - o->nfunc_region) * sizeof *v);
		o->func_region = v;
		o->nfunc_region = n;
	}
	if (o->func_region[id] == O2_NONE)
		o->func_region[id] = region_new(o, NEST_FUNC, id);
	return o->func_region[id];
}

static uint32_t
state_region(otf2_writer *o, uint32_t state)
{
	uint32_t *v = map_slot(&o->state_region, state);

	if (!v)
		return O2_NONE;
	if (*v == O2_NONE && (*v = region_new(o, NEST_STATE, state)) != O2_NONE)
		o->state_region.n++;
	return *v;
}

static uint32_t
metric_of(otf2_writer *o, uint32_t type)
{
	uint32_t *v = map_slot(&o->metric, type);

	if (!v)
		return O2_NONE;
	if (*v != O2_NONE)
		return *v;
	if (o->nmetrics == o->capmetrics) {
		uint32_t cap = o->capmetrics ? o->capmetrics * 2 : 32;
		uint32_t *t = realloc(o->metric_type, cap * sizeof *t);

		if (!t)
			return O2_NONE;
		o->metric_type = t;
		o->capmetrics = cap;
	}
	o->metric_type[o->nmetrics] = type;
	o->metric.n++;
	return *v = o->nmetrics++;
}

/* ---- Locations and their receives ---------------------------------------- */

static dw_err
writer_of(otf2_writer *o, uint32_t thread, OTF2_EvtWriter **ew)
{
	o2_loc *l = &o->loc[thread];

	if (!l->ew && !(l->ew = OTF2_Archive_GetEvtWriter(o->ar, thread)))
		return o2_fail(o, OTF2_ERROR_MEM_ALLOC_FAILED, "write");
	*ew = l->ew;
	return DW_OK;
}

static bool
recv_before(const o2_recv *a, const o2_recv *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static dw_err
recv_push(otf2_writer *o, uint32_t thread, const o2_recv *r)
{
	o2_loc *l = &o->loc[thread];
	uint32_t i;

	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 16;
		o2_recv *v = realloc(l->heap, cap * sizeof *v);

		if (!v)
			return DW_ENOMEM;
		l->heap = v;
		l->cap = cap;
	}
	i = l->n++;
	while (i && recv_before(r, &l->heap[(i - 1) / 2])) {
		l->heap[i] = l->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	l->heap[i] = *r;
	return DW_OK;
}

static void
recv_pop(o2_loc *l)
{
	o2_recv last = l->heap[--l->n];
	uint32_t i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= l->n)
			break;
		if (c + 1 < l->n && recv_before(&l->heap[c + 1], &l->heap[c]))
			c++;
		if (!recv_before(&l->heap[c], &last))
			break;
		l->heap[i] = l->heap[c];
		i = c;
	}
	if (l->n)
		l->heap[i] = last;
}

/* Writes the receives of thread up to t (before t when !inclusive). */
static dw_err
recv_flush(otf2_writer *o, uint32_t thread, uint64_t t, bool inclusive)
{
	o2_loc *l = &o->loc[thread];

	while (l->n && (l->heap[0].t < t || (inclusive && l->heap[0].t == t))) {
		const o2_recv *r = &l->heap[0];
		OTF2_EvtWriter *ew;
		OTF2_ErrorCode e;
		dw_err err = writer_of(o, thread, &ew);

		if (err != DW_OK)
			return err;
		e = OTF2_EvtWriter_MpiRecv(ew, NULL, o->offset + r->t,
		                           r->sender, 0, r->tag, r->size);
		if (e != OTF2_SUCCESS)
			return o2_fail(o, e, "write");
		recv_pop(l);
	}
	return DW_OK;
}

/* ---- Regions (nest callbacks) -------------------------------------------- */

static uint32_t
region_of(otf2_writer *o, int kind, uint64_t id)
{
	return kind == NEST_FUNC ? func_region(o, id)
	                         : state_region(o, (uint32_t)id);
}

static dw_err
o2_open(void *ctx, uint32_t thread, int kind, uint64_t id, uint64_t t)
{
	otf2_writer *o = ctx;
	uint32_t reg = region_of(o, kind, id);
	dw_err err =
	    reg == O2_NONE ? DW_ENOMEM : recv_flush(o, thread, t, false);
	OTF2_EvtWriter *ew;
	OTF2_ErrorCode e;

	if (err == DW_OK)
		err = writer_of(o, thread, &ew);
	if (err != DW_OK)
		return err;
	e = OTF2_EvtWriter_Enter(ew, NULL, o->offset + t, reg);
	return e == OTF2_SUCCESS ? DW_OK : o2_fail(o, e, "write");
}

static dw_err
o2_close(void *ctx, uint32_t thread, int kind, uint64_t id, uint64_t begin,
         uint64_t end, unsigned flags)
{
	otf2_writer *o = ctx;
	uint32_t reg = region_of(o, kind, id);
	dw_err err =
	    reg == O2_NONE ? DW_ENOMEM : recv_flush(o, thread, end, true);
	OTF2_EvtWriter *ew;
	OTF2_ErrorCode e;

	(void)begin, (void)flags;
	if (err == DW_OK)
		err = writer_of(o, thread, &ew);
	if (err != DW_OK)
		return err;
	e = OTF2_EvtWriter_Leave(ew, NULL, o->offset + end, reg);
	return e == OTF2_SUCCESS ? DW_OK : o2_fail(o, e, "write");
}

static const nest_ops o2_nest_ops = {o2_open, o2_close};

/* ---- Records ------------------------------------------------------------- */

/* What must come before a record of thread at t. */
static dw_err
before(otf2_writer *o, uint32_t thread, uint64_t t, OTF2_EvtWriter **ew)
{
	dw_err err = nest_touch(&o->nest, thread, t);

	if (err == DW_OK)
		err = recv_flush(o, thread, t, true);
	if (err == DW_OK)
		err = writer_of(o, thread, ew);
	return err;
}

static dw_err
metric(otf2_writer *o, const mg_rec *r, const mg_pair *pr)
{
	static const OTF2_Type types[1] = {OTF2_TYPE_UINT64};
	uint32_t m = metric_of(o, pr->type);
	OTF2_MetricValue v = {.unsigned_int = pr->value};
	OTF2_EvtWriter *ew;
	OTF2_ErrorCode e;
	dw_err err =
	    m == O2_NONE ? DW_ENOMEM : before(o, r->thread, r->time, &ew);

	if (err != DW_OK)
		return err;
	e = OTF2_EvtWriter_Metric(ew, NULL, o->offset + r->time, m, 1, types,
	                          &v);
	return e == OTF2_SUCCESS ? DW_OK : o2_fail(o, e, "write");
}

static dw_err
events(otf2_writer *o, const mg_rec *r)
{
	dw_err err = DW_OK;

	for (uint32_t i = 0; err == DW_OK && i < r->u.event.n; i++) {
		const mg_pair *pr = &r->u.event.pairs[i];

		if (pr->type == LB_TYPE_FUNC)
			err =
			    nest_func(&o->nest, r->thread, r->time, pr->value);
		else if (pr->type != LB_TYPE_FUNC_LINE) /* in the region */
			err = metric(o, r, pr);
	}
	return err;
}

/* The receive's time: when the receiver has the message (the later of
 * its two times; never before the send). */
static uint64_t
recv_time(const mg_rec *r)
{
	uint64_t t = r->u.comm.log_recv > r->u.comm.phy_recv
	                 ? r->u.comm.log_recv
	                 : r->u.comm.phy_recv;

	return t > r->time ? t : r->time;
}

static dw_err
message(otf2_writer *o, const mg_rec *r)
{
	o2_recv rv = {recv_time(r), o->seq++, r->thread, r->u.comm.tag,
	              r->u.comm.size};
	OTF2_EvtWriter *ew;
	OTF2_ErrorCode e;
	dw_err err = before(o, r->thread, r->time, &ew);

	if (err != DW_OK)
		return err;
	e = OTF2_EvtWriter_MpiSend(ew, NULL, o->offset + r->time,
	                           r->u.comm.recv_thread, 0, r->u.comm.tag,
	                           r->u.comm.size);
	if (e != OTF2_SUCCESS)
		return o2_fail(o, e, "write");
	return recv_push(o, r->u.comm.recv_thread, &rv);
}

static dw_err
otf2_record(mg_writer *w, const mg_rec *r)
{
	otf2_writer *o = (otf2_writer *)w;
	dw_err err;

	if (r->thread >= o->info->nthreads ||
	    (r->kind == MG_COMM && r->u.comm.recv_thread >= o->info->nthreads))
		return DW_OK; /* not in the shape: cannot happen */
	if (r->kind == MG_STATE)
		err = nest_state(&o->nest, r->thread, r->time, r->u.state.end,
		                 r->u.state.state);
	else if (r->kind == MG_EVENT)
		err = events(o, r);
	else
		err = message(o, r);
	return err == DW_ENOMEM ? fail(o, err, "") : err;
}

/* ---- The archive's directory --------------------------------------------- */

/* True for the names of our archive's files in traces/: N.evt, N.def. */
static bool
ours(const char *name)
{
	size_t n = strspn(name, "0123456789");

	return n && (!strcmp(name + n, ".evt") || !strcmp(name + n, ".def"));
}

/* True when dir holds nothing but an archive of ours. */
static bool
only_ours(const char *dir, bool top)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool yes = true;
	char sub[4200];

	while (d && yes && (de = readdir(d))) {
		const char *n = de->d_name;

		if (!strcmp(n, ".") || !strcmp(n, ".."))
			continue;
		if (top && !strcmp(n, "traces")) {
			snprintf(sub, sizeof sub, "%s/traces", dir);
			yes = only_ours(sub, false);
		} else {
			yes = top ? !strcmp(n, "traces.otf2") ||
			                !strcmp(n, "traces.def")
			          : ours(n);
		}
	}
	if (d)
		closedir(d);
	return yes;
}

/* Removes an archive directory we wrote, and nothing else: a directory
 * that holds anything else is left whole (-1, errno ENOTEMPTY). */
static int
arch_remove(const char *dir)
{
	char path[4200];
	DIR *d;
	struct dirent *de;

	struct stat st;
	if (lstat(dir, &st) < 0)
		return 0;
	/* never through a link, nor in a directory someone else made */
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		errno = ENOTEMPTY;
		return -1;
	}
	snprintf(path, sizeof path, "%s/traces", dir);
	if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
		errno = ENOTEMPTY;
		return -1;
	}
	if (!only_ours(dir, true)) {
		errno = ENOTEMPTY;
		return -1;
	}
	snprintf(path, sizeof path, "%s/traces", dir);
	if ((d = opendir(path))) {
		while ((de = readdir(d))) {
			if (!ours(de->d_name))
				continue;
			snprintf(path, sizeof path, "%s/traces/%s", dir,
			         de->d_name);
			unlink(path);
		}
		closedir(d);
		snprintf(path, sizeof path, "%s/traces", dir);
		rmdir(path);
	}
	snprintf(path, sizeof path, "%s/traces.otf2", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/traces.def", dir);
	unlink(path);
	return rmdir(dir) == 0 || errno == ENOENT ? 0 : -1;
}

/* ---- Begin --------------------------------------------------------------- */

static dw_err
open_archive(otf2_writer *o)
{
	OTF2_ErrorCode e;

	if (arch_remove(o->tmp) < 0)
		return fail(o, dw_err_from_errno(errno), "cannot remove %s: %s",
		            o->tmp, strerror(errno));
	if (mkdir(o->tmp, 0755) < 0)
		return fail(o, dw_err_from_errno(errno), "cannot create %s: %s",
		            o->tmp, strerror(errno));
	o->ar = OTF2_Archive_Open(o->tmp, "traces", OTF2_FILEMODE_WRITE,
	                          O2_CHUNK, OTF2_CHUNK_SIZE_DEFINITIONS_DEFAULT,
	                          OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
	if (!o->ar)
		return o2_fail(o, OTF2_ERROR_FILE_CAN_NOT_OPEN, "create");
	e = OTF2_Archive_SetFlushCallbacks(o->ar, &flush_cbs, NULL);
	if (e == OTF2_SUCCESS)
		e = OTF2_Archive_SetMemoryCallbacks(o->ar, &mem_cbs, NULL);
	if (e == OTF2_SUCCESS)
		e = OTF2_Archive_SetSerialCollectiveCallbacks(o->ar);
	if (e == OTF2_SUCCESS)
		e = OTF2_Archive_SetCreator(o->ar, "dwork merge");
	if (e == OTF2_SUCCESS)
		e = OTF2_Archive_OpenEvtFiles(o->ar);
	return e == OTF2_SUCCESS ? DW_OK : o2_fail(o, e, "create");
}

static dw_err
otf2_begin(mg_writer *w, const mg_info *info)
{
	otf2_writer *o = (otf2_writer *)w;
	dw_err err;

	o2_current = o;
	OTF2_Error_RegisterCallback(on_error, NULL);
	o->info = info;
	o->nthreads = info->nthreads;
	o->offset = info->start_real_ns > 0 ? (uint64_t)info->start_real_ns : 0;
	o->loc = calloc(info->nthreads + 1, sizeof *o->loc);
	if (!o->loc)
		return fail(o, DW_ENOMEM, "");
	err = nest_init(&o->nest, (uint32_t)info->nthreads, &o2_nest_ops, o);
	if (err != DW_OK)
		return fail(o, err, "");
	return open_archive(o);
}

static dw_err
close_events(otf2_writer *o, const mg_info *info)
{
	OTF2_ErrorCode e = OTF2_SUCCESS;

	for (size_t i = 0; e == OTF2_SUCCESS && i < info->nthreads; i++) {
		OTF2_EvtWriter *ew;
		dw_err err = recv_flush(o, (uint32_t)i, UINT64_MAX, true);

		if (err == DW_OK)
			err = writer_of(o, (uint32_t)i, &ew);
		if (err != DW_OK)
			return err;
		e = OTF2_EvtWriter_GetNumberOfEvents(ew, &o->loc[i].nevents);
		if (e == OTF2_SUCCESS)
			e = OTF2_Archive_CloseEvtWriter(o->ar, ew);
		o->loc[i].ew = NULL;
	}
	if (e == OTF2_SUCCESS)
		e = OTF2_Archive_CloseEvtFiles(o->ar);
	if (e == OTF2_SUCCESS)
		e = OTF2_Archive_OpenDefFiles(o->ar);
	for (size_t i = 0; e == OTF2_SUCCESS && i < info->nthreads; i++) {
		OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(o->ar, i);

		e = dw ? OTF2_Archive_CloseDefWriter(o->ar, dw)
		       : OTF2_ERROR_MEM_ALLOC_FAILED;
	}
	if (e == OTF2_SUCCESS)
		e = OTF2_Archive_CloseDefFiles(o->ar);
	return e == OTF2_SUCCESS ? DW_OK : o2_fail(o, e, "write");
}

static dw_err
otf2_end(mg_writer *w, const mg_info *info)
{
	otf2_writer *o = (otf2_writer *)w;
	OTF2_ErrorCode e;
	dw_err err;

	o->info = info;
	err = nest_finish(&o->nest);
	if (err == DW_OK)
		err = close_events(o, info);
	if (err == DW_OK)
		err = o2_write_defs(o, info);
	if (err != DW_OK)
		return err == DW_ENOMEM ? fail(o, err, "") : err;
	e = OTF2_Archive_Close(o->ar);
	o->ar = NULL;
	if (e != OTF2_SUCCESS)
		return o2_fail(o, e, "write");
	if (arch_remove(o->dir) < 0)
		return fail(o, DW_EEXIST,
		            "cannot replace %s: it holds files that are not "
		            "an OTF2 archive of ours (%s)",
		            o->dir, strerror(errno));
	if (rename(o->tmp, o->dir) < 0)
		return fail(o, dw_err_from_errno(errno),
		            "cannot rename %s to %s: %s", o->tmp, o->dir,
		            strerror(errno));
	o->ended = true;
	return DW_OK;
}

static void
otf2_free(mg_writer *w)
{
	otf2_writer *o = (otf2_writer *)w;

	if (o->ar)
		OTF2_Archive_Close(o->ar);
	if (!o->ended && o->tmp && o->loc) /* begun */
		arch_remove(o->tmp);
	if (o2_current == o) {
		OTF2_Error_RegisterCallback(NULL, NULL);
		o2_current = NULL;
	}
	for (size_t i = 0; o->loc && i < o->nthreads; i++)
		free(o->loc[i].heap);
	nest_free(&o->nest);
	map_free(&o->state_region);
	map_free(&o->metric);
	free(o->metric_type);
	free(o->regions);
	free(o->func_region);
	free(o->loc);
	of_names_free(o->dir, o->tmp, false); /* the archive: arch_remove */
	free(o);
}

static const mg_writer_ops otf2_ops = {
    .name = "otf2",
    .begin = otf2_begin,
    .record = otf2_record,
    .end = otf2_end,
    .free = otf2_free,
};

dw_err
otf2_writer_new(const char *prefix, mg_writer **out)
{
	otf2_writer *o = calloc(1, sizeof *o);

	*out = NULL;
	if (!o)
		return DW_ENOMEM;
	o->base.ops = &otf2_ops;
	if (of_names(&o->dir, &o->tmp, prefix, "-otf2") != DW_OK) {
		otf2_free(&o->base);
		return DW_ENOMEM;
	}
	*out = &o->base;
	return DW_OK;
}

#else
typedef int otf2_unused; /* this build has no libotf2 (writers.c) */
#endif /* DW_HAVE_OTF2 */
