/* The public record and label calls. */
#include <stdlib.h>
#include <string.h>

#include "trace/record.h"

/* The record calls read the hidden copy of the flag (clock.h) */
/* The record calls side by side in .text.hot: a burst of records after
 * a context switch fetches their few lines from one page */
#define API_HOT  __attribute__((hot))
#define API_ON() rec_likely(__atomic_load_n(&clk_hot.on, __ATOMIC_RELAXED))

DW_API API_HOT void(dwt_event)(uint32_t type, uint64_t value)
{
	if (API_ON())
		rec_one(FMT_R_EVENT, type, value);
}

static void
api_events_chunk(unsigned n, const uint32_t *types, const uint64_t *values)
{
	struct buf *t;
	uint64_t now;
	uint32_t d;
	unsigned char *p = rec_reserve(&t, &now, &d, n * FMT_REC_SIZE);
	if (rec_unlikely(!p))
		return;
	for (unsigned i = n; i-- > 0;) {
		unsigned char *q = p + (size_t)i * FMT_REC_SIZE;
		rec_payload(q, types[i], values[i]);
		rec_commit(q, FMT_R_EVENT, i ? 0 : d);
	}
	rec_done(t, p + (size_t)n * FMT_REC_SIZE, now);
	t->nrec += n - 1;
}

DW_API void(dwt_events)(unsigned n, const uint32_t *types,
                        const uint64_t *values)
{
	if (!API_ON() || n == 0)
		return;
	/* A batch shares one timestamp when it fits in one segment. */
	unsigned max =
	    (unsigned)((trc.cfg.segment_size - FMT_S_END) / FMT_REC_SIZE);
	while (n > 0) {
		unsigned k = n < max ? n : max;
		api_events_chunk(k, types, values);
		types += k;
		values += k;
		n -= k;
	}
}

DW_API API_HOT void(dwt_state_push)(uint32_t state)
{
	if (API_ON())
		rec_one(FMT_R_STATE_PUSH, state, 0);
}

DW_API API_HOT void(dwt_state_pop)(void)
{
	if (API_ON())
		rec_one(FMT_R_STATE_POP, 0, 0);
}

DW_API API_HOT void(dwt_state_push_event)(uint32_t state, uint32_t type,
                                          uint32_t value)
{
	if (API_ON())
		rec_one(FMT_R_STATE_PUSH, state,
		        type ? (uint64_t)type << 32 | value : 0);
}

DW_API API_HOT void(dwt_state_pop_event)(uint32_t type, uint64_t value)
{
	if (API_ON())
		rec_one(FMT_R_STATE_POP, type, type ? value : 0);
}

DW_API API_HOT void(dwt_state_push_event_tsc)(uint64_t tsc, uint32_t state,
                                              uint32_t type, uint32_t value)
{
	if (API_ON())
		rec_one_at(tsc, FMT_R_STATE_PUSH, state,
		           type ? (uint64_t)type << 32 | value : 0);
}

DW_API API_HOT void(dwt_state_pop_event_tsc)(uint64_t tsc, uint32_t type,
                                             uint64_t value)
{
	if (API_ON())
		rec_one_at(tsc, FMT_R_STATE_POP, type, type ? value : 0);
}

DW_API API_HOT void(dwt_comm)(unsigned flags, uint32_t partner_task,
                              uint32_t partner_thread, uint32_t tag,
                              uint64_t size, uint64_t id)
{
	if (!API_ON())
		return;
	uint32_t th = partner_thread > FMT_COMM_THREAD_ANY ? FMT_COMM_THREAD_ANY
	                                                   : partner_thread;
	uint32_t w1 = (flags & 7u) | th << FMT_COMM_THREAD_SHIFT;
	rec_two(FMT_R_COMM, tag, id, w1, partner_task, size);
}

DW_API void(dwt_func_enter)(const void *addr)
{
	if (!API_ON())
		return;
	uint64_t a = (uint64_t)(uintptr_t)addr;
	rec_one(FMT_R_FUNC_ENTER, 0, a);
	struct buf *t = trc_self;
	if (rec_unlikely(t && t->fncache[(a >> 4) % BUF_FNCACHE] != a))
		fn_note(t, a);
}

DW_API void(dwt_func_exit)(const void *addr)
{
	if (API_ON())
		rec_one(FMT_R_FUNC_EXIT, 0, (uint64_t)(uintptr_t)addr);
}

DW_API void
dwt_sync(uint32_t ref_task, uint64_t local_ns, int64_t offset_ns,
         uint64_t rtt_ns)
{
	if (!API_ON())
		return;
	uint32_t rtt = rtt_ns > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt_ns;
	rec_two(FMT_R_SYNC, ref_task, local_ns, 0, rtt, (uint64_t)offset_ns);
}

DW_API uint64_t
dwt_now_ns(void)
{
	/* The raw clock itself, not ticks through this process's own rate
	 * estimate: sync records must be on the timeline every process of
	 * the host and the merger share, and a rate measured over 2 ms is
	 * off by some ppm, microseconds after a few seconds. */
	return clk_raw_ns();
}

DW_API uint32_t
dwt_thread(void)
{
	if (!API_ON())
		return UINT32_MAX;
	struct buf *t = trc_self;
	if (!t || t->gen != trc.gen) {
		uint64_t now = clk_ticks();
		if (!buf_slow(&t, &now, 0))
			return UINT32_MAX;
	}
	return t->thread;
}

/* ---- labels ---- */

int
api_label(uint32_t kind, const unsigned char *head, size_t hlen,
          const char *name)
{
	if (!name)
		return DW_EINVAL;
	size_t n = strnlen(name, FMT_TLV_MAX);
	if (hlen + n > FMT_TLV_MAX)
		return DW_ETOOBIG;
	unsigned char *pl = malloc(hlen + n + 1);
	if (!pl)
		return DW_ENOMEM;
	memcpy(pl, head, hlen);
	memcpy(pl + hlen, name, n);
	pthread_mutex_lock(&trc.lock);
	int err = lbl_add(kind, pl, (uint32_t)(hlen + n));
	pthread_mutex_unlock(&trc.lock);
	free(pl);
	return err;
}

DW_API int
dwt_define_type(uint32_t type, const char *name)
{
	unsigned char h[8] = {0};
	fmt_put_u32(h, type);
	return api_label(FMT_L_TYPE, h, sizeof h, name);
}

DW_API int
dwt_define_value(uint32_t type, uint64_t value, const char *name)
{
	unsigned char h[16] = {0};
	fmt_put_u32(h, type);
	fmt_put_u64(h + 8, value);
	return api_label(FMT_L_VALUE, h, sizeof h, name);
}

DW_API int
dwt_define_state(uint32_t state, const char *name, uint32_t rgb)
{
	unsigned char h[8];
	fmt_put_u32(h, state);
	fmt_put_u32(h + 4, rgb == DWT_NO_COLOR ? rgb : (rgb & 0xffffffu));
	return api_label(FMT_L_STATE, h, sizeof h, name);
}

DW_API int
dwt_define_function(const void *addr, const char *name)
{
	unsigned char h[8];
	fmt_put_u64(h, (uint64_t)(uintptr_t)addr);
	return api_label(FMT_L_FUNC, h, sizeof h, name);
}

DW_API int
dwt_set_thread_name(const char *name)
{
	uint32_t th = dwt_thread();
	if (th == UINT32_MAX)
		return DW_ESTATE;
	unsigned char h[8] = {0};
	fmt_put_u32(h, th);
	return api_label(FMT_L_THREAD_NAME, h, sizeof h, name);
}

DW_API int
dwt_set_process_name(const char *name)
{
	unsigned char h[8] = {0};
	return api_label(FMT_L_PROCESS_NAME, h, sizeof h, name);
}
