/* Waiting on many channels (dw_channel_waitany / waitall). */
#include <time.h>

#include "runtime/rt.h"
#include "runtime/rtrace.h"

/* wm_lock and wm_cv: only a timed nap of the channel wait loop (nothing
 * is guarded; the cv lets the nap be recorded as a wait); a leaf. */
static pthread_mutex_t wm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wm_cv = PTHREAD_COND_INITIALIZER;

/* Sleeps ms, recorded as the state of the enclosing wait. */
static void
wm_sleep(int ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_nsec += (long)ms * 1000000L;
	if (dl.tv_nsec >= 1000000000L)
		dl.tv_sec++, dl.tv_nsec -= 1000000000L;
	pthread_mutex_lock(&wm_lock);
	rt_cond_wait(&wm_cv, &wm_lock, &dl, DWT_STATE_WAITING_MESSAGE);
	pthread_mutex_unlock(&wm_lock);
}

DW_API int
dw_channel_waitany(dw_channel *const *chs, int n, int timeout_ms)
{
	RTR_WAITS(DWT_STATE_WAITING_MESSAGE);
	uint64_t end =
	    rt_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	for (int nap = 1;; nap = nap < 16 ? 2 * nap : 16) {
		int live = 0;
		for (int i = 0; chs && i < n; i++) {
			if (!chs[i])
				continue;
			live++;
			int r = dw_channel_isready(chs[i]);
			if (r != 0)
				return r > 0 ? i : r;
		}
		if (!live)
			return rt_set_err(0, "dw_channel_waitany: no channel "
			                     "given (every entry NULL, or "
			                     "n <= 0)"),
			       DW_EINVAL;
		uint64_t now = rt_now_ms();
		if (timeout_ms >= 0 && now >= end)
			return rt_set_err(0,
			                  "none of %d channels had a value "
			                  "within %d ms",
			                  n, timeout_ms),
			       DW_ETIMEDOUT;
		int ms = timeout_ms >= 0 && end - now < (uint64_t)nap
		             ? (int)(end - now)
		             : nap;
		wm_sleep(ms);
	}
}

DW_API int
dw_channel_waitall(dw_channel *const *chs, int n, int timeout_ms)
{
	RTR_WAITS(DWT_STATE_WAITING_MESSAGE);
	uint64_t end =
	    rt_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	for (int i = 0; chs && i < n; i++) {
		if (!chs[i])
			continue;
		uint64_t now = rt_now_ms();
		int ms = timeout_ms < 0 ? -1
		         : now >= end   ? 0
		                        : (int)(end - now);
		int err = ms < 0 ? dw_channel_wait(chs[i])
		                 : dw_channel_wait_timeout(chs[i], ms);
		if (err != DW_OK)
			return err;
	}
	return DW_OK;
}
