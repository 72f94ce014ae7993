/*
 * dw_everywhere: one call of a function on every live process at once
 * (through the dwork:everywhere carrier), waited for together.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

struct ew {
	pthread_cond_t cv;
	int left;
};

static void
ew_notify(void *ctx, dw_future *f)
{
	(void)f;
	struct ew *e = ctx;
	e->left--;
	pthread_cond_broadcast(&e->cv);
}

static void
ew_report(dw_future **fs, const int *ids, int n, int *first_err)
{
	char msg[1500] = "";
	size_t o = 0;
	int first_pid = 0;
	for (int i = 0; i < n; i++) {
		const void *r;
		size_t l;
		int e = fs[i] ? call_result(fs[i], &r, &l) : DW_EEXITED;
		if (e == DW_OK)
			continue;
		if (!*first_err) {
			*first_err = e;
			first_pid = ids[i];
		}
		if (o < sizeof msg - 1)
			o += (size_t)snprintf(
			    msg + o, sizeof msg - o, "%sprocess %d: %s",
			    o ? "; " : "", ids[i],
			    fs[i] ? dw_errmsg() : "not started");
	}
	if (*first_err)
		rt_set_err(first_pid, "%s", msg);
}

DW_API int
dw_everywhere_timeout(const char *fn, const void *arg, size_t len,
                      int timeout_ms)
{
	size_t clen;
	void *carried = work_carry(fn, arg, len, &clen);
	if (!carried)
		return fn && *fn ? DW_ENOMEM : DW_EINVAL;
	int *ids;
	int n = work_procs(&ids, 1);
	if (n < 0) {
		free(carried);
		return n;
	}
	RTR_WAITS(DWT_STATE_SCHEDULING);
	dw_future **fs = calloc((size_t)n + 1, sizeof *fs);
	struct ew e = {.left = 0};
	pthread_cond_init(&e.cv, NULL);
	int err = fs ? DW_OK : DW_ENOMEM;
	/* the others first, so that they run while this process does */
	for (int pass = 0; pass < 2 && err == DW_OK; pass++)
		for (int i = 0; i < n; i++) {
			if ((ids[i] == rt.myid) != (pass == 1))
				continue;
			pthread_mutex_lock(&rt.lock);
			e.left++;
			pthread_mutex_unlock(&rt.lock);
			if (call_async(ids[i], 0, EVERYWHERE_FN, carried, clen,
			               ew_notify, &e, &fs[i]) != DW_OK) {
				pthread_mutex_lock(&rt.lock);
				e.left--;
				pthread_mutex_unlock(&rt.lock);
				fs[i] = NULL;
			}
		}
	uint64_t end =
	    rt_now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	exec_block_begin();
	pthread_mutex_lock(&rt.lock);
	while (e.left > 0 && err == DW_OK) {
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 1;
		rt_cond_wait(&e.cv, &rt.lock, &dl, DWT_STATE_SCHEDULING);
		if (timeout_ms >= 0 && e.left > 0 && rt_now_ms() >= end)
			err = DW_ETIMEDOUT;
	}
	pthread_mutex_unlock(&rt.lock);
	exec_block_end();
	if (err == DW_ETIMEDOUT)
		rt_set_err(0, "everywhere: not done within %d ms", timeout_ms);
	else if (err == DW_OK)
		ew_report(fs, ids, n, &err);
	for (int i = 0; fs && i < n; i++)
		dw_future_free(fs[i]); /* no notice after this */
	pthread_cond_destroy(&e.cv);
	free(fs);
	free(ids);
	free(carried);
	return err;
}

DW_API int
dw_everywhere(const char *fn, const void *arg, size_t len)
{
	return dw_everywhere_timeout(fn, arg, len, -1);
}
