/*
 * The record calls of the Extrae user API.  Extrae_event is the tracer's
 * dwt_event (the same inline record path, no extra call); the others map
 * onto dwt_events, dwt_func_enter/exit and dwt_comm.
 */
#include <stdlib.h>

#include "trace/extrae_int.h"
#include "trace/record.h"

#define XTR_ON() rec_likely(__atomic_load_n(&trc_on, __ATOMIC_RELAXED))

DW_API void
Extrae_event(extrae_type_t type, extrae_value_t value)
{
	if (XTR_ON())
		rec_one(FMT_R_EVENT, type, value);
}
XTR_ALIASES(void, _event, (extrae_type_t, extrae_value_t))

/* n user events then k counters as consecutive EVENT records at one
 * timestamp; the caller keeps n + k within a segment. */
static void
xtr_chunk(unsigned n, const extrae_type_t *types, const extrae_value_t *values,
          unsigned k, const uint32_t *ct, const uint64_t *cv)
{
	struct buf *t;
	uint64_t now;
	uint32_t d;
	unsigned all = n + k;
	unsigned char *p = rec_reserve(&t, &now, &d, all * FMT_REC_SIZE);
	if (rec_unlikely(!p))
		return;
	for (unsigned i = all; i-- > 0;) {
		unsigned char *q = p + (size_t)i * FMT_REC_SIZE;
		if (i < n)
			rec_payload(q, types[i], values[i]);
		else
			rec_payload(q, ct[i - n], cv[i - n]);
		rec_commit(q, FMT_R_EVENT, i ? 0 : d);
	}
	rec_done(t, p + (size_t)all * FMT_REC_SIZE, now);
	t->nrec += all - 1;
}

void
xtr_state_events(uint32_t kind, uint32_t state, unsigned n,
                 const uint32_t *types, const uint64_t *values)
{
	struct buf *t;
	uint64_t now;
	uint32_t d;
	unsigned all = n + 1;
	if (!XTR_ON())
		return;
	unsigned char *p = rec_reserve(&t, &now, &d, all * FMT_REC_SIZE);
	if (rec_unlikely(!p))
		return;
	for (unsigned i = all; i-- > 0;) {
		unsigned char *q = p + (size_t)i * FMT_REC_SIZE;
		if (i == 0)
			rec_payload(q, kind == FMT_R_STATE_PUSH ? state : 0, 0);
		else
			rec_payload(q, types[i - 1], values[i - 1]);
		rec_commit(q, i ? FMT_R_EVENT : kind, i ? 0 : d);
	}
	rec_done(t, p + (size_t)all * FMT_REC_SIZE, now);
	t->nrec += all - 1;
}

/* A batch shares one timestamp when it fits in one segment (as with
 * dwt_events); the counters go with the last part. */
static void
xtr_events(unsigned n, const extrae_type_t *types, const extrae_value_t *values,
           unsigned k, const uint32_t *ct, const uint64_t *cv)
{
	unsigned max =
	    (unsigned)((trc.cfg.segment_size - FMT_S_END) / FMT_REC_SIZE) -
	    XCTR_MAX;
	if (n && (!types || !values))
		n = 0;
	while (n > max) {
		xtr_chunk(max, types, values, 0, NULL, NULL);
		types += max;
		values += max;
		n -= max;
	}
	if (n + k)
		xtr_chunk(n, types, values, k, ct, cv);
}

DW_API void
Extrae_nevent(unsigned count, extrae_type_t *types, extrae_value_t *values)
{
	if (XTR_ON())
		xtr_events(count, types, values, 0, NULL, NULL);
}
XTR_ALIASES(void, _nevent, (unsigned, extrae_type_t *, extrae_value_t *))

static unsigned
xtr_counters(uint32_t *ct, uint64_t *cv)
{
	if (!(__atomic_load_n(&xtr_options, __ATOMIC_RELAXED) &
	      EXTRAE_HWC_OPTION))
		return 0;
	return xctr_read(ct, cv);
}

static void
xtr_events_counters(unsigned n, const extrae_type_t *types,
                    const extrae_value_t *values)
{
	uint32_t ct[XCTR_MAX];
	uint64_t cv[XCTR_MAX];
	if (!XTR_ON())
		return;
	unsigned k = xtr_counters(ct, cv);
	xtr_events(n, types, values, k, ct, cv);
}

DW_API void
Extrae_eventandcounters(extrae_type_t type, extrae_value_t value)
{
	xtr_events_counters(1, &type, &value);
}
XTR_ALIASES(void, _eventandcounters, (extrae_type_t, extrae_value_t))

DW_API void
Extrae_neventandcounters(unsigned count, extrae_type_t *types,
                         extrae_value_t *values)
{
	xtr_events_counters(count, types, values);
}
XTR_ALIASES(void, _neventandcounters,
            (unsigned, extrae_type_t *, extrae_value_t *))

DW_API void
Extrae_counters(void)
{
	xtr_events_counters(0, NULL, NULL);
}
XTR_ALIASES(void, _counters, (void))

/* Like Extrae, the address recorded is the caller's: where the call
 * returns to.  Leaving records no address (the innermost is left). */
static unsigned long long
xtr_user_function(int enter, void *caller, int counters)
{
	if (!XTR_ON())
		return 0;
	if (counters)
		xtr_events_counters(0, NULL, NULL);
	if (!enter) {
		dwt_func_exit(NULL);
		return 0;
	}
	dwt_func_enter(caller);
	return (unsigned long long)(uintptr_t)caller;
}

DW_API unsigned long long
Extrae_user_function(unsigned enter)
{
	int uf = __atomic_load_n(&xtr_options, __ATOMIC_RELAXED) &
	         EXTRAE_UF_HWC_OPTION;
	return xtr_user_function(enter != 0, __builtin_return_address(0), uf);
}
XTR_ALIASES(unsigned long long, _user_function, (unsigned))

DW_API void
Extrae_function_from_address(extrae_type_t type, void *address)
{
	(void)type;
	xtr_user_function(address != NULL, address, 0);
}

/* Both of Paraver's times: the program's call is where the bytes move. */
static void
xtr_comm(const extrae_user_communication_t *c)
{
	unsigned flags = DWT_LOGICAL | DWT_PHYSICAL |
	                 (c->type == EXTRAE_USER_RECV ? DWT_RECV : DWT_SEND);
	uint32_t partner =
	    c->partner == EXTRAE_COMM_PARTNER_MYSELF ? dwt_task() : c->partner;
	dwt_comm(flags, partner, DWT_THREAD_ANY, c->tag, c->size,
	         (uint64_t)c->id);
}

static void
xtr_combined(const struct extrae_CombinedEvents *e, void *caller)
{
	if (e->HardwareCounters)
		xtr_events_counters(e->nEvents, e->Types, e->Values);
	else
		xtr_events(e->nEvents, e->Types, e->Values, 0, NULL, NULL);
	if (e->UserFunction != EXTRAE_USER_FUNCTION_NONE)
		xtr_user_function(e->UserFunction == EXTRAE_USER_FUNCTION_ENTER,
		                  caller, 0);
	for (unsigned i = 0; e->Communications && i < e->nCommunications; i++)
		xtr_comm(&e->Communications[i]);
}

DW_API void
Extrae_emit_CombinedEvents(struct extrae_CombinedEvents *e)
{
	if (e && XTR_ON())
		xtr_combined(e, __builtin_return_address(0));
}
XTR_ALIASES(void, _emit_CombinedEvents, (struct extrae_CombinedEvents *))

/* Virtual threads are not remapped (a thread's records live in its own
 * file): which one runs is kept as an event. */
DW_API void
Extrae_resume_virtual_thread(unsigned vthread)
{
	Extrae_event(XTR_TYPE_VTHREAD, (extrae_value_t)vthread + 1);
}

DW_API void
Extrae_suspend_virtual_thread(void)
{
	Extrae_event(XTR_TYPE_VTHREAD, 0);
}
