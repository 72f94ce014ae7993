/*
 * The Perfetto writer's names and packets (perfetto_int.h): names
 * interned by iid (a state's, a function's, an event's, a message
 * kind's), and the protobuf packets encoded with output/pbenc.h.  The
 * field numbers used are listed in pf_field below, from Perfetto's
 * published protos; perfetto.c says why the encoder is our own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/labels.h"
#include "output/pbenc.h"
#include "output/perfetto_int.h"

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
	/* flow_ids_old and terminating_flow_ids_old: varints (1-3 bytes for
	 * our ids) where flow_ids (47) and terminating_flow_ids (48) are
	 * fixed64 (8).  Deprecated in the proto but read as the others by
	 * trace_processor (track_event_event_importer.h): 13 bytes less a
	 * message. */
	F_TE_FLOW = 36,
	F_TE_FLOW_END = 42,
	F_TED_TRACK = 11, /* TrackEventDefaults.track_uuid */
	F_TPD_CLOCK = 58, /* TracePacketDefaults.timestamp_clock_id */
	F_TPD_TE = 11,    /* TracePacketDefaults.track_event_defaults */
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

enum { SEQ_INCREMENTAL_STATE_CLEARED = 1 };
#define PF_CLOCK_SEQ      64u /* our incremental, sequence-scoped clock */
#define PF_CLOCK_BOOTTIME 6u  /* BUILTIN_CLOCK_BOOTTIME: the trace's clock */

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

uint32_t
pf_slice_iid(pf_writer *w, int kind, uint64_t id)
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

/* A slice's begin or end whose fields are all one-byte varints but the
 * delta (most packets: 10 or 12 bytes), byte by byte, the same bytes
 * pf_packet would write; false when it is not one (or the output needs
 * flushing first). */
static inline bool
slice_fast(pf_writer *w, pf_thread *th, uint32_t thread, uint64_t t,
           const pf_ev *e)
{
	uint64_t d = t - th->last;
	uint8_t *p, *q;

	if (e->type == TE_INSTANT || e->name >= 0x80 || thread >= 0x7f ||
	    d >= (1u << 21) || w->pk->cap - w->pk->len < 32)
		return false;
	if (e->name) {
		size_t byte = e->name / 8;
		uint8_t bit = (uint8_t)(1u << (e->name % 8));

		if (byte >= th->nsent || !(th->sent[byte] & bit))
			return false; /* to be interned here first */
	}
	p = (uint8_t *)ob_end(w->pk);
	q = p + 2;
	*q++ = F_TIMESTAMP << 3;
	for (; d >= 0x80; d >>= 7)
		*q++ = (uint8_t)(d | 0x80);
	*q++ = (uint8_t)d;
	*q++ = F_SEQ_ID << 3;
	*q++ = (uint8_t)(thread + 1);
	*q++ = F_TRACK_EVENT << 3 | 2;
	*q++ = e->name ? 4 : 2;
	*q++ = F_TE_TYPE << 3;
	*q++ = (uint8_t)e->type;
	if (e->name) {
		*q++ = F_TE_NAME_IID << 3;
		*q++ = (uint8_t)e->name;
	}
	p[0] = F_TRACE_PACKET << 3 | 2;
	p[1] = (uint8_t)(q - p - 2);
	ob_commit(w->pk, (char *)q);
	th->last = t;
	w->packets++;
	return true;
}

/* pf_packet for any packet; out of line, so that the frame it needs
 * is not set up for the fast ones. */
static __attribute__((noinline)) dw_err
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
	err = pf_need(w, 2 * PF_PACKET);
	if (err != DW_OK)
		return err;
	b.p = (uint8_t *)ob_end(w->pk);
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
		pb_uint(&b, F_TE_FLOW, e->flow);
	if (e->flow_end)
		pb_uint(&b, F_TE_FLOW_END, e->flow_end);
	pb_close(&b, m);
	pb_close(&b, pk);
	ob_commit(w->pk, (char *)b.p);
	th->last = t;
	w->packets++;
	return DW_OK;
}

/* Writes one track event packet of thread at t (t is never before the
 * thread's last packet: see pf_at in perfetto.c). */
dw_err
pf_packet(pf_writer *w, uint32_t thread, uint64_t t, const pf_ev *e)
{
	if (!e->has_value && !e->flow && !e->flow_end &&
	    slice_fast(w, &w->th[thread], thread, t, e))
		return DW_OK;
	return packet(w, thread, t, e);
}

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
uint32_t
pf_event_iid(pf_writer *w, const mg_pair *pr, bool *labelled)
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

uint32_t
pf_kind_iid(pf_writer *w, uint32_t tag)
{
	const char *k = w->runtime ? lb_comm_kind(tag) : NULL;
	uint32_t slot = k && tag < 7 ? tag : 7;

	if (!w->kind_iid[slot])
		w->kind_iid[slot] = name_add(w, slot == 7 ? "message" : k);
	return w->kind_iid[slot];
}

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
dw_err
pf_sequence_start(pf_writer *w, uint32_t i)
{
	const mg_info *info = w->info;
	const mg_thread *t = &info->threads[i];
	const char *name = t->name ? t->name : "thread";
	uint64_t base =
	    info->start_real_ns > 0 ? (uint64_t)info->start_real_ns : 0;
	uint8_t *pk, *m, *n;
	pb b;
	dw_err err = pf_need(w, 2 * PF_PACKET);

	if (err != DW_OK)
		return err;
	b.p = (uint8_t *)ob_end(w->pk);
	pk = pb_open(&b, F_TRACE_PACKET);
	pb_uint(&b, F_SEQ_ID, i + 1);
	pb_uint(&b, F_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	pb_uint(&b, F_FIRST_ON_SEQ, 1);
	m = pb_open(&b, F_DEFAULTS);
	pb_uint(&b, F_TPD_CLOCK, PF_CLOCK_SEQ);
	n = pb_open(&b, F_TPD_TE);
	pb_uint(&b, F_TED_TRACK, thread_uuid(i));
	pb_close(&b, n);
	pb_close(&b, m);
	m = pb_open(&b, F_CLOCK_SNAP);
	n = pb_open(&b, F_CS_CLOCKS);
	pb_uint(&b, 1, PF_CLOCK_SEQ);
	pb_uint(&b, 2, 0);
	pb_uint(&b, 3, 1); /* is_incremental */
	pb_close(&b, n);
	n = pb_open(&b, F_CS_CLOCKS);
	pb_uint(&b, 1, PF_CLOCK_BOOTTIME);
	pb_uint(&b, 2, base);
	pb_close(&b, n);
	pb_uint(&b, F_CS_PRIMARY, PF_CLOCK_BOOTTIME);
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
	ob_commit(w->pk, (char *)b.p);
	w->packets += 2;
	return DW_OK;
}

/* The track of task k (pid k + 1: viewers take pid 0 for the kernel's),
 * on the sequence of its first thread. */
dw_err
pf_process_track(pf_writer *w, uint32_t k)
{
	const mg_task *t = &w->info->tasks[k];
	const char *name = t->name ? t->name : "task";
	uint8_t *pk, *m, *n;
	pb b;
	dw_err err = pf_need(w, 2 * PF_PACKET);

	if (err != DW_OK)
		return err;
	b.p = (uint8_t *)ob_end(w->pk);
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
	ob_commit(w->pk, (char *)b.p);
	w->packets++;
	return DW_OK;
}

dw_err
pf_tables(pf_writer *w, const mg_info *info)
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
