/*
 * The Perfetto writer: PREFIX.pftrace, Perfetto's native protobuf trace
 * (a `Trace` of `TracePacket`s with track events), which ui.perfetto.dev
 * and trace_processor open without the size limits of the JSON format.
 * docs/merge.md describes the mapping; the field numbers used are listed
 * in pf_field below, from Perfetto's published protos.
 *
 * The encoder is our own (about 60 lines here): the subset is small and
 * fixed, every message is written once, and a protobuf library would
 * need generated code for Perfetto's whole schema to write five messages.
 *
 * Each thread is one packet sequence (trusted_packet_sequence_id =
 * thread + 1) with its own incremental clock (id 64): a packet's
 * timestamp is the nanoseconds since the previous packet of its thread,
 * one to three bytes.  Names are interned per sequence (an iid is
 * global, its string is sent on a sequence the first time that sequence
 * uses it).  The default track of a sequence is its thread's, so events
 * carry no track.  States and functions are slices (SLICE_BEGIN and
 * SLICE_END, nested as merge/nest.h nests them), events instants,
 * communications an instant on the sender carrying a flow id and one on
 * the receiver, at its receive time, terminating it.  A receive waits in
 * its thread's queue until that thread's time reaches it, so every
 * sequence's timestamps only grow.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/labels.h"
#include "output/pbenc.h"
#include "output/nest.h"
#include "output/outbuf.h"
#include "output/outfile.h"
#include "output/writers.h"

/* Field numbers (Perfetto's protos/perfetto/trace/...). */
enum pf_field {
	F_TRACE_PACKET = 1,  /* Trace.packet */
	F_TIMESTAMP = 8,     /* TracePacket */
	F_SEQ_ID = 10,       /* .trusted_packet_sequence_id */
	F_TRACK_EVENT = 11,  /* .track_event */
	F_INTERNED = 12,     /* .interned_data */
	F_SEQ_FLAGS = 13,    /* .sequence_flags */
	F_CLOCK_SNAP = 6,    /* .clock_snapshot */
	F_DEFAULTS = 59,     /* .trace_packet_defaults */
	F_TRACK_DESC = 60,   /* .track_descriptor */
	F_FIRST_ON_SEQ = 87, /* .first_packet_on_sequence */
	/* TrackEvent */
	F_TE_TYPE = 9,
	F_TE_NAME_IID = 10,
	F_TE_DEBUG = 4,
	F_TE_FLOW = 47,     /* fixed64 */
	F_TE_FLOW_END = 48, /* fixed64 */
	F_TED_TRACK = 11,   /* TrackEventDefaults.track_uuid */
	F_TPD_CLOCK = 58,   /* TracePacketDefaults.timestamp_clock_id */
	F_TPD_TE = 11,      /* TracePacketDefaults.track_event_defaults */
	/* InternedData: event_names, debug_annotation_names {iid=1, name=2} */
	F_ID_NAMES = 2,
	F_ID_DEBUG_NAMES = 3,
	/* DebugAnnotation */
	F_DA_NAME_IID = 1,
	F_DA_UINT = 3,
	/* ClockSnapshot: clocks {clock_id=1, timestamp=2, is_incremental=3},
	 * primary_trace_clock=2 */
	F_CS_CLOCKS = 1,
	F_CS_PRIMARY = 2,
	/* TrackDescriptor */
	F_TD_UUID = 1,
	F_TD_NAME = 2,
	F_TD_PROCESS = 3,
	F_TD_THREAD = 4,
	/* ProcessDescriptor pid=1 process_name=6; ThreadDescriptor pid=1
	 * tid=2 thread_name=5 */
};

enum { TE_BEGIN = 1, TE_END = 2, TE_INSTANT = 3 };
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1 };
#define CLOCK_SEQ      64u /* our incremental, sequence-scoped clock */
#define CLOCK_BOOTTIME 6u  /* BUILTIN_CLOCK_BOOTTIME: the trace's clock */

#define PF_NAME_MAX 1024                /* bytes of a name kept */
#define PF_PACKET   (PF_NAME_MAX + 256) /* room for any one packet */

/* ---- The writer -----------------------------------------------------------
 */

typedef struct pf_name {
	char *s;
	uint32_t len;
} pf_name;

typedef struct pf_recv {
	uint64_t time, flow;
	uint32_t name; /* iid */
} pf_recv;

/* The iid of the name of a labelled event value ("Type: label"). */
typedef struct pf_pair {
	uint32_t type, iid; /* iid 0: a free slot */
	uint64_t value;
} pf_pair;

typedef struct pf_thread {
	uint64_t last; /* time of the sequence's last packet */
	uint8_t *sent; /* bit per name iid: already interned here */
	size_t nsent;  /* bytes of sent */
	pf_recv *recv; /* receives to write: a min-heap by time */
	uint32_t nrecv, caprecv;
} pf_thread;

typedef struct pf_writer {
	mg_writer base;
	char *path, *tmp;
	ob out;
	bool opened, ended;
	const mg_info *info;
	nest nest;
	pf_thread *th;
	size_t nthreads;
	pf_name *names; /* by iid - 1 */
	uint32_t nnames, capnames;
	uint32_t *state_iid;   /* by state number below PF_BYSTATE */
	uint32_t *type_iid;    /* by index in info->labels->types */
	uint32_t *func_iid[3]; /* user functions, runs, batches: by id */
	size_t nfunc_iid[3];
	uint32_t value_iid; /* the debug annotation "value" */
	pf_pair *pairs;     /* labelled event values: open addressing */
	uint32_t npairs, cappairs;
	uint32_t kind_iid[8]; /* communication kinds by tag; [7]: others */
	bool runtime;
	uint64_t flows;
	uint64_t packets;
} pf_writer;

#define PF_BYSTATE 256

static dw_err
fail(pf_writer *w, dw_err err, const char *what, const char *path)
{
	return of_fail(&w->base, err, what, path, w->out.errnum);
}

/* A new name; its iid, or 0 when out of memory. */
static uint32_t
name_add(pf_writer *w, const char *s)
{
	size_t n = strnlen(s, PF_NAME_MAX);
	pf_name *v;

	if (w->nnames == w->capnames) {
		uint32_t cap = w->capnames ? 2 * w->capnames : 64;

		v = realloc(w->names, cap * sizeof *v);
		if (!v)
			return 0;
		w->names = v;
		w->capnames = cap;
	}
	v = &w->names[w->nnames];
	v->s = malloc(n + 1);
	if (!v->s)
		return 0;
	memcpy(v->s, s, n);
	v->s[n] = 0;
	v->len = (uint32_t)n;
	return ++w->nnames;
}

/* The iid of a function (which 0), run (1) or batch (2) name by id,
 * added the first time; 0 when out of memory. */
static uint32_t
func_iid(pf_writer *w, int which, uint64_t id)
{
	uint32_t **tab = &w->func_iid[which];
	size_t *ntab = &w->nfunc_iid[which];
	char buf[48];
	const char *s;

	if (id >= *ntab) {
		size_t n = *ntab ? *ntab : 64;
		uint32_t *v;

		while (n <= id && n < ((size_t)1 << 40))
			n *= 2;
		v = n > id ? realloc(*tab, n * sizeof *v) : NULL;
		if (!v)
			return 0;
		memset(v + *ntab, 0, (n - *ntab) * sizeof *v);
		*tab = v;
		*ntab = n;
	}
	if (!(*tab)[id]) {
		const mg_labels *lb = w->info->labels;

		s = which == 0   ? lb_func(w->info, id)
		    : which == 1 ? lb_value(lb_type(lb, LB_TYPE_RUN), id)
		                 : lb_value(lb_type(lb, LB_TYPE_BATCH), id);
		if (!s) {
			snprintf(buf, sizeof buf, "%s %llu",
			         which == 2 ? "batch" : "function",
			         (unsigned long long)id);
			s = buf;
		}
		(*tab)[id] = name_add(w, s);
	}
	return (*tab)[id];
}

static uint32_t
slice_iid(pf_writer *w, int kind, uint64_t id)
{
	char buf[32];

	if (kind == NEST_FUNC) {
		if (id & NEST_RUN)
			return func_iid(w, 1, id & ~NEST_KINDS);
		if (id & NEST_BATCH)
			return func_iid(w, 2, id & ~NEST_KINDS);
		return func_iid(w, 0, id);
	}
	if (id < PF_BYSTATE && w->state_iid[id])
		return w->state_iid[id];
	snprintf(buf, sizeof buf, "State %llu", (unsigned long long)id);
	if (id >= PF_BYSTATE)
		return name_add(w, buf); /* rare: not cached */
	return w->state_iid[id] = name_add(w, buf);
}

/* ---- Packets ---------------------------------------------------------------
 */

/* first_use when the bitmap must grow first. */
static bool
first_use_slow(pf_thread *th, uint32_t iid, bool *oom)
{
	size_t byte = iid / 8, n = th->nsent ? th->nsent : 16;
	uint8_t *v;

	while (n <= byte)
		n *= 2;
	v = realloc(th->sent, n);
	if (!v) {
		*oom = true;
		return false;
	}
	memset(v + th->nsent, 0, n - th->nsent);
	th->sent = v;
	th->nsent = n;
	th->sent[byte] |= (uint8_t)(1u << (iid % 8));
	return true;
}

/* True the first time iid is used on thread's sequence (and marks it). */
static inline bool
first_use(pf_thread *th, uint32_t iid, bool *oom)
{
	size_t byte = iid / 8;
	uint8_t bit = (uint8_t)(1u << (iid % 8));

	if (__builtin_expect(byte >= th->nsent, 0))
		return first_use_slow(th, iid, oom);
	if (th->sent[byte] & bit)
		return false;
	th->sent[byte] |= bit;
	return true;
}

static void
intern(pb *b, const pf_writer *w, unsigned field, uint32_t iid)
{
	const pf_name *n = &w->names[iid - 1];
	uint8_t *m = pb_open(b, field);

	pb_uint(b, 1, iid);
	pb_bytes(b, 2, n->s, n->len);
	pb_close(b, m);
}

/* What an event packet carries besides its time. */
typedef struct pf_ev {
	int type;       /* TE_* */
	uint32_t name;  /* iid, 0: none */
	bool has_value; /* a debug annotation "value" */
	uint64_t value;
	uint64_t flow, flow_end; /* 0: none */
} pf_ev;

/* Writes one track event packet of thread at t (t is never before the
 * thread's last packet: see pf_at). */
static dw_err
packet(pf_writer *w, uint32_t thread, uint64_t t, const pf_ev *e)
{
	pf_thread *th = &w->th[thread];
	bool oom = false;
	bool new_name = e->name && first_use(th, e->name, &oom);
	bool new_value = e->has_value && first_use(th, w->value_iid, &oom);
	uint8_t *pk, *m;
	pb b;
	dw_err err;

	if (oom)
		return DW_ENOMEM;
	err = ob_need(&w->out, 2 * PF_PACKET);
	if (err != DW_OK)
		return err;
	b.p = (uint8_t *)ob_end(&w->out);
	pk = pb_open(&b, F_TRACE_PACKET);
	pb_uint(&b, F_TIMESTAMP, t - th->last);
	pb_uint(&b, F_SEQ_ID, thread + 1);
	if (new_name || new_value) {
		m = pb_open(&b, F_INTERNED);
		if (new_name)
			intern(&b, w, F_ID_NAMES, e->name);
		if (new_value)
			intern(&b, w, F_ID_DEBUG_NAMES, w->value_iid);
		pb_close(&b, m);
	}
	m = pb_open(&b, F_TRACK_EVENT);
	pb_uint(&b, F_TE_TYPE, (uint64_t)e->type);
	if (e->name)
		pb_uint(&b, F_TE_NAME_IID, e->name);
	if (e->has_value) {
		uint8_t *d = pb_open(&b, F_TE_DEBUG);

		pb_uint(&b, F_DA_NAME_IID, w->value_iid);
		pb_uint(&b, F_DA_UINT, e->value);
		pb_close(&b, d);
	}
	if (e->flow)
		pb_fixed64(&b, F_TE_FLOW, e->flow);
	if (e->flow_end)
		pb_fixed64(&b, F_TE_FLOW_END, e->flow_end);
	pb_close(&b, m);
	pb_close(&b, pk);
	ob_commit(&w->out, (char *)b.p);
	th->last = t;
	w->packets++;
	return DW_OK;
}

/* ---- Receives: each thread's queue, by time --------------------------------
 */

static bool
recv_less(const pf_recv *a, const pf_recv *b)
{
	return a->time < b->time || (a->time == b->time && a->flow < b->flow);
}

static dw_err
recv_push(pf_thread *th, const pf_recv *r)
{
	uint32_t i;

	if (th->nrecv == th->caprecv) {
		uint32_t cap = th->caprecv ? 2 * th->caprecv : 8;
		pf_recv *v = realloc(th->recv, cap * sizeof *v);

		if (!v)
			return DW_ENOMEM;
		th->recv = v;
		th->caprecv = cap;
	}
	for (i = th->nrecv++; i && recv_less(r, &th->recv[(i - 1) / 2]);
	     i = (i - 1) / 2)
		th->recv[i] = th->recv[(i - 1) / 2];
	th->recv[i] = *r;
	return DW_OK;
}

static pf_recv
recv_pop(pf_thread *th)
{
	pf_recv top = th->recv[0], last = th->recv[--th->nrecv];
	uint32_t i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= th->nrecv)
			break;
		if (c + 1 < th->nrecv &&
		    recv_less(&th->recv[c + 1], &th->recv[c]))
			c++;
		if (!recv_less(&th->recv[c], &last))
			break;
		th->recv[i] = th->recv[c];
		i = c;
	}
	if (th->nrecv)
		th->recv[i] = last;
	return top;
}

/* Writes the receives of thread due before t (or at t, when at). */
static dw_err
recv_flush(pf_writer *w, uint32_t thread, uint64_t t, bool at)
{
	pf_thread *th = &w->th[thread];
	dw_err err = DW_OK;

	while (err == DW_OK && th->nrecv &&
	       (th->recv[0].time < t || (at && th->recv[0].time == t))) {
		pf_recv r = recv_pop(th);
		pf_ev e = {
		    .type = TE_INSTANT, .name = r.name, .flow_end = r.flow};

		err = packet(w, thread, r.time, &e);
	}
	return err;
}

/* A packet of thread at t, after what is due there. */
static inline dw_err
pf_at(pf_writer *w, uint32_t thread, uint64_t t, bool at, const pf_ev *e)
{
	const pf_thread *th = &w->th[thread];
	dw_err err = DW_OK;

	if (th->nrecv &&
	    (th->recv[0].time < t || (at && th->recv[0].time == t)))
		err = recv_flush(w, thread, t, at);
	return err == DW_OK ? packet(w, thread, t, e) : err;
}

/* ---- Regions (nest callbacks) ----------------------------------------------
 */

static dw_err
pf_open(void *ctx, uint32_t thread, int kind, uint64_t id, uint64_t t)
{
	pf_writer *w = ctx;
	pf_ev e = {.type = TE_BEGIN, .name = slice_iid(w, kind, id)};

	return e.name ? pf_at(w, thread, t, false, &e) : DW_ENOMEM;
}

static dw_err
pf_close(void *ctx, uint32_t thread, int kind, uint64_t id, uint64_t begin,
         uint64_t end, unsigned flags)
{
	pf_ev e = {.type = TE_END};

	(void)kind, (void)id, (void)begin, (void)flags;
	return pf_at(ctx, thread, end, true, &e);
}

static const nest_ops pf_nest_ops = {pf_open, pf_close};

/* ---- Records ----------------------------------------------------------------
 */

static uint32_t
pair_hash(uint32_t type, uint64_t value)
{
	uint64_t h = (value ^ ((uint64_t)type << 32)) * 0x9e3779b97f4a7c15u;

	return (uint32_t)(h >> 32);
}

/* The slot of (type, value): its entry, or the free slot for it; NULL
 * when out of memory.  The table stays at most half full. */
static pf_pair *
pair_slot(pf_writer *w, uint32_t type, uint64_t value)
{
	uint32_t mask, i;

	if (2 * (w->npairs + 1) > w->cappairs) {
		uint32_t cap = w->cappairs ? 2 * w->cappairs : 64;
		pf_pair *v = calloc(cap, sizeof *v);

		if (!v)
			return NULL;
		for (uint32_t k = 0; k < w->cappairs; k++) {
			pf_pair *o = &w->pairs[k];

			if (!o->iid)
				continue;
			for (i = pair_hash(o->type, o->value) & (cap - 1);
			     v[i].iid; i = (i + 1) & (cap - 1))
				;
			v[i] = *o;
		}
		free(w->pairs);
		w->pairs = v;
		w->cappairs = cap;
	}
	mask = w->cappairs - 1;
	for (i = pair_hash(type, value) & mask; w->pairs[i].iid;
	     i = (i + 1) & mask)
		if (w->pairs[i].type == type && w->pairs[i].value == value)
			break;
	return &w->pairs[i];
}

/* The iid of an event's name: "Type: label" for a labelled value, else
 * the type's name (its value goes in an annotation). */
static uint32_t
event_iid(pf_writer *w, const mg_pair *pr, bool *labelled)
{
	const mg_labels *lb = w->info->labels;
	const mg_type_label *tl = lb_type(lb, pr->type);
	const char *v = lb_value(tl, pr->value);
	char buf[PF_NAME_MAX];
	size_t k;

	*labelled = v != NULL;
	if (v) { /* bounded by the labels */
		pf_pair *pp = pair_slot(w, pr->type, pr->value);

		if (!pp)
			return 0;
		if (!pp->iid) {
			snprintf(buf, sizeof buf, "%s: %s", tl->name, v);
			pp->type = pr->type;
			pp->value = pr->value;
			pp->iid = name_add(w, buf);
			w->npairs += pp->iid != 0;
		}
		return pp->iid;
	}
	if (tl) {
		k = (size_t)(tl - lb->types);
		if (!w->type_iid[k])
			w->type_iid[k] = name_add(w, tl->name);
		return w->type_iid[k];
	}
	{ /* a type without a label: its number, cached as value 0 of a
	   * pseudo type with the top bit set */
		pf_pair *pp = pair_slot(w, pr->type | 0x80000000u, 0);

		if (!pp)
			return 0;
		if (!pp->iid) {
			snprintf(buf, sizeof buf, "Event type %u", pr->type);
			pp->type = pr->type | 0x80000000u;
			pp->value = 0;
			pp->iid = name_add(w, buf);
			w->npairs += pp->iid != 0;
		}
		return pp->iid;
	}
}

static dw_err
events(pf_writer *w, const mg_rec *r)
{
	dw_err err = DW_OK;

	for (uint32_t i = 0; err == DW_OK && i < r->u.event.n; i++) {
		const mg_pair *pr = &r->u.event.pairs[i];
		bool labelled;
		pf_ev e = {.type = TE_INSTANT};

		if (pr->type == LB_TYPE_FUNC) {
			err =
			    nest_func(&w->nest, r->thread, r->time, pr->value);
		} else if (pr->type == LB_TYPE_RUN ||
		           pr->type == LB_TYPE_BATCH) {
			err = nest_run(&w->nest, r->thread, r->time,
			               pr->type == LB_TYPE_RUN ? NEST_RUN
			                                       : NEST_BATCH,
			               pr->value);
		} else if (pr->type != LB_TYPE_FUNC_LINE) {
			err = nest_touch(&w->nest, r->thread, r->time);
			e.name = event_iid(w, pr, &labelled);
			e.has_value = !labelled;
			e.value = pr->value;
			if (err == DW_OK)
				err = e.name ? pf_at(w, r->thread, r->time,
				                     true, &e)
				             : DW_ENOMEM;
		}
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

static uint32_t
kind_iid(pf_writer *w, uint32_t tag)
{
	const char *k = w->runtime ? lb_comm_kind(tag) : NULL;
	uint32_t slot = k && tag < 7 ? tag : 7;

	if (!w->kind_iid[slot])
		w->kind_iid[slot] = name_add(w, slot == 7 ? "message" : k);
	return w->kind_iid[slot];
}

static dw_err
message(pf_writer *w, const mg_rec *r)
{
	pf_ev e = {.type = TE_INSTANT, .name = kind_iid(w, r->u.comm.tag)};
	pf_recv rv = {recv_time(r), 0, e.name};
	dw_err err = nest_touch(&w->nest, r->thread, r->time);

	if (!e.name)
		return DW_ENOMEM;
	e.flow = rv.flow = ++w->flows;
	e.has_value = true; /* the message's size */
	e.value = r->u.comm.size;
	if (err == DW_OK)
		err = pf_at(w, r->thread, r->time, true, &e);
	return err == DW_OK ? recv_push(&w->th[r->u.comm.recv_thread], &rv)
	                    : err;
}

static dw_err
pf_record(mg_writer *mw, const mg_rec *r)
{
	pf_writer *w = (pf_writer *)mw;
	dw_err err;

	if (r->thread >= w->info->nthreads ||
	    (r->kind == MG_COMM && r->u.comm.recv_thread >= w->info->nthreads))
		return DW_OK; /* not in the shape: cannot happen */
	if (r->kind == MG_STATE)
		err = nest_state(&w->nest, r->thread, r->time, r->u.state.end,
		                 r->u.state.state);
	else if (r->kind == MG_EVENT)
		err = events(w, r);
	else
		err = message(w, r);
	return err == DW_OK ? DW_OK : fail(w, err, "write", w->tmp);
}

/* ---- Begin: the tracks and each sequence's first packet ------------------ */

static uint64_t
thread_uuid(uint32_t thread)
{
	return (uint64_t)thread + 1;
}

static uint64_t
process_uuid(const mg_info *info, uint32_t task)
{
	return (uint64_t)info->nthreads + 1 + task;
}

/* A sequence's first two packets: the first clears the incremental
 * state, sets the defaults (our clock, the thread's track) and relates
 * the clock to the trace's; the second describes the thread's track. */
static dw_err
sequence_start(pf_writer *w, uint32_t i)
{
	const mg_info *info = w->info;
	const mg_thread *t = &info->threads[i];
	const char *name = t->name ? t->name : "thread";
	uint64_t base =
	    info->start_real_ns > 0 ? (uint64_t)info->start_real_ns : 0;
	uint8_t *pk, *m, *n;
	pb b;
	dw_err err = ob_need(&w->out, 2 * PF_PACKET);

	if (err != DW_OK)
		return err;
	b.p = (uint8_t *)ob_end(&w->out);
	pk = pb_open(&b, F_TRACE_PACKET);
	pb_uint(&b, F_SEQ_ID, i + 1);
	pb_uint(&b, F_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	pb_uint(&b, F_FIRST_ON_SEQ, 1);
	m = pb_open(&b, F_DEFAULTS);
	pb_uint(&b, F_TPD_CLOCK, CLOCK_SEQ);
	n = pb_open(&b, F_TPD_TE);
	pb_uint(&b, F_TED_TRACK, thread_uuid(i));
	pb_close(&b, n);
	pb_close(&b, m);
	m = pb_open(&b, F_CLOCK_SNAP);
	n = pb_open(&b, F_CS_CLOCKS);
	pb_uint(&b, 1, CLOCK_SEQ);
	pb_uint(&b, 2, 0);
	pb_uint(&b, 3, 1); /* is_incremental */
	pb_close(&b, n);
	n = pb_open(&b, F_CS_CLOCKS);
	pb_uint(&b, 1, CLOCK_BOOTTIME);
	pb_uint(&b, 2, base);
	pb_close(&b, n);
	pb_uint(&b, F_CS_PRIMARY, CLOCK_BOOTTIME);
	pb_close(&b, m);
	pb_close(&b, pk);
	/* the descriptor is in the same oneof as the snapshot: its own
	 * packet */
	pk = pb_open(&b, F_TRACE_PACKET);
	pb_uint(&b, F_SEQ_ID, i + 1);
	m = pb_open(&b, F_TRACK_DESC);
	pb_uint(&b, F_TD_UUID, thread_uuid(i));
	n = pb_open(&b, F_TD_THREAD);
	pb_uint(&b, 1, t->task + 1);
	pb_uint(&b, 2, i + 1);
	pb_bytes(&b, 5, name, strnlen(name, PF_NAME_MAX));
	pb_close(&b, n);
	pb_close(&b, m);
	pb_close(&b, pk);
	ob_commit(&w->out, (char *)b.p);
	w->packets += 2;
	return DW_OK;
}

/* The track of task k (pid k + 1: viewers take pid 0 for the kernel's),
 * on the sequence of its first thread. */
static dw_err
process_track(pf_writer *w, uint32_t k)
{
	const mg_task *t = &w->info->tasks[k];
	const char *name = t->name ? t->name : "task";
	uint8_t *pk, *m, *n;
	pb b;
	dw_err err = ob_need(&w->out, 2 * PF_PACKET);

	if (err != DW_OK)
		return err;
	b.p = (uint8_t *)ob_end(&w->out);
	pk = pb_open(&b, F_TRACE_PACKET);
	pb_uint(&b, F_SEQ_ID, t->first_thread + 1);
	m = pb_open(&b, F_TRACK_DESC);
	pb_uint(&b, F_TD_UUID, process_uuid(w->info, k));
	pb_bytes(&b, F_TD_NAME, name, strnlen(name, PF_NAME_MAX));
	n = pb_open(&b, F_TD_PROCESS);
	pb_uint(&b, 1, k + 1);
	pb_bytes(&b, 6, name, strnlen(name, PF_NAME_MAX));
	pb_close(&b, n);
	pb_close(&b, m);
	pb_close(&b, pk);
	ob_commit(&w->out, (char *)b.p);
	w->packets++;
	return DW_OK;
}

static dw_err
tables(pf_writer *w, const mg_info *info)
{
	const mg_labels *lb = info->labels;

	w->th = calloc(info->nthreads ? info->nthreads : 1, sizeof *w->th);
	w->nthreads = info->nthreads;
	w->state_iid = calloc(PF_BYSTATE, sizeof *w->state_iid);
	w->type_iid = calloc(lb->ntypes ? lb->ntypes : 1, sizeof *w->type_iid);
	if (!w->th || !w->state_iid || !w->type_iid)
		return DW_ENOMEM;
	for (size_t i = 0; i < lb->nstates; i++)
		if (lb->states[i].state < PF_BYSTATE &&
		    !(w->state_iid[lb->states[i].state] =
		          name_add(w, lb->states[i].name)))
			return DW_ENOMEM;
	w->value_iid = name_add(w, "value");
	return w->value_iid ? DW_OK : DW_ENOMEM;
}

static dw_err
pf_begin(mg_writer *mw, const mg_info *info)
{
	pf_writer *w = (pf_writer *)mw;
	dw_err err = ob_open(&w->out, w->tmp);

	if (err != DW_OK)
		return fail(w, err, "create", w->tmp);
	w->opened = true;
	w->info = info;
	w->runtime = lb_is_runtime(info->labels);
	err = nest_init(&w->nest, (uint32_t)info->nthreads, &pf_nest_ops, w);
	if (err == DW_OK)
		err = tables(w, info);
	for (uint32_t i = 0; err == DW_OK && i < info->nthreads; i++)
		err = sequence_start(w, i);
	for (uint32_t k = 0; err == DW_OK && k < info->ntasks; k++)
		if (info->tasks[k].nthreads)
			err = process_track(w, k);
	return err == DW_OK ? DW_OK : fail(w, err, "write", w->tmp);
}

/* ---- End --------------------------------------------------------------------
 */

static dw_err
pf_end(mg_writer *mw, const mg_info *info)
{
	pf_writer *w = (pf_writer *)mw;
	dw_err err;

	w->info = info;
	err = nest_finish(&w->nest);
	for (uint32_t i = 0; err == DW_OK && i < info->nthreads; i++)
		err = recv_flush(w, i, UINT64_MAX, true);
	if (err != DW_OK)
		return fail(w, err, "write", w->tmp);
	w->opened = false;
	err = ob_close(&w->out);
	if (err != DW_OK)
		return fail(w, err, "write", w->tmp);
	err = of_commit(&w->base, w->tmp, w->path);
	if (err != DW_OK)
		return err;
	w->ended = true;
	return DW_OK;
}

static void
pf_free(mg_writer *mw)
{
	pf_writer *w = (pf_writer *)mw;

	if (w->opened)
		ob_discard(&w->out);
	for (size_t i = 0; w->th && i < w->nthreads; i++) {
		free(w->th[i].sent);
		free(w->th[i].recv);
	}
	for (uint32_t i = 0; i < w->nnames; i++)
		free(w->names[i].s);
	for (int k = 0; k < 3; k++)
		free(w->func_iid[k]);
	nest_free(&w->nest);
	free(w->pairs);
	free(w->names);
	free(w->th);
	free(w->state_iid);
	free(w->type_iid);
	of_names_free(w->path, w->tmp, !w->ended);
	free(w);
}

static const mg_writer_ops pf_ops = {
    .name = "perfetto",
    .begin = pf_begin,
    .record = pf_record,
    .end = pf_end,
    .free = pf_free,
};

dw_err
perfetto_writer_new(const char *prefix, mg_writer **out)
{
	pf_writer *w = calloc(1, sizeof *w);

	*out = NULL;
	if (!w)
		return DW_ENOMEM;
	w->base.ops = &pf_ops;
	w->out.fd = -1;
	if (of_names(&w->path, &w->tmp, prefix, ".pftrace") != DW_OK) {
		w->ended = true;
		pf_free(&w->base);
		return DW_ENOMEM;
	}
	*out = &w->base;
	return DW_OK;
}
