/*
 * The _timeout forms of calls whose plain form waits with no limit,
 * built over the timed waits underneath (flow control's send deadline,
 * dw_future_wait_timeout).  A timeout < 0 means no limit; the time is
 * one budget across every wait of the call.
 */
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

/* What is left of a budget that started at t0 (ms; < 0 stays < 0). */
static int
to_left(uint64_t t0, int timeout_ms)
{
	if (timeout_ms < 0)
		return -1;
	uint64_t used = rt_now_ms() - t0;
	return used >= (uint64_t)timeout_ms ? 0 : (int)(timeout_ms - used);
}

DW_API int
dw_remotecall_timeout(int pid, const char *fn, const void *arg, size_t len,
                      dw_future **out, int timeout_ms)
{
	return call_start(pid, WIRE_MODE_KEEP, fn, arg, len, out,
	                  timeout_ms < 0 ? -1 : timeout_ms);
}

DW_API int
dw_remotecall_wait_timeout(int pid, const char *fn, const void *arg, size_t len,
                           dw_future **out, int timeout_ms)
{
	RTR_WAITS(DWT_STATE_WAITING_MESSAGE);
	uint64_t t0 = rt_now_ms();
	int err = call_start(pid, WIRE_MODE_KEEP, fn, arg, len, out,
	                     timeout_ms < 0 ? -1 : timeout_ms);
	if (err == DW_OK && (err = dw_future_wait_timeout(
	                         *out, to_left(t0, timeout_ms))) != DW_OK) {
		dw_future_free(*out); /* a call still running is abandoned */
		*out = NULL;
	}
	return err;
}
