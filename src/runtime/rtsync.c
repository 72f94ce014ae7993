/* Clock measurements (docs/tracing.md): the master ping-pongs each worker
 * when it joins, leaves and periodically; the SYNC records. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/safefile.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

/* ---- clock measurements ---- */

static void
rtr_send_ping(struct conn *c)
{
	unsigned char b[8];
	wire_put_u64(b, dwt_now_ns());
	conn_send_msg(c, WIRE_CLOCK_PING, 0, b, 8, NULL, 0);
}

void
rtr_sync_start(struct worker *w, int n)
{
	if (!rtr_on)
		return;
	pthread_mutex_lock(&rt.lock);
	int go = w->state != W_GONE && w->sync_left == 0;
	if (go) {
		w->sync_left = n;
		w->best_rtt = UINT64_MAX;
	}
	pthread_mutex_unlock(&rt.lock);
	if (go)
		rtr_send_ping(w->conn);
}

void
rtr_sync_wait(struct worker *w, int ms)
{
	if (!rtr_on)
		return;
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L)
		dl.tv_sec++, dl.tv_nsec -= 1000000000L;
	pthread_mutex_lock(&rt.lock);
	while (w->sync_left > 0 && w->state != W_GONE)
		if (rt_cond_wait(&rt.cv, &rt.lock, &dl,
		                 DWT_STATE_SYNCHRONIZATION) != 0)
			break;
	pthread_mutex_unlock(&rt.lock);
}

void
rtr_on_pong(struct conn *c, const unsigned char *p, size_t len)
{
	uint64_t t1 = dwt_now_ns();
	if (len < 16 || !rtr_on)
		return;
	uint64_t t0 = wire_get_u64(p), wns = wire_get_u64(p + 8);
	pthread_mutex_lock(&rt.lock);
	struct worker *w = cl_find(c->peer);
	int again = 0, done = 0;
	uint64_t local = 0, rtt = 0;
	int64_t off = 0;
	if (w && w->sync_left > 0 && t1 >= t0) {
		if (t1 - t0 < w->best_rtt) {
			w->best_rtt = t1 - t0;
			w->best_local = wns;
			w->best_off =
			    (int64_t)(t0 + (t1 - t0) / 2) - (int64_t)wns;
		}
		again = --w->sync_left > 0;
		done = !again;
		local = w->best_local, rtt = w->best_rtt, off = w->best_off;
		if (done) {
			w->sync_rounds++;
			pthread_cond_broadcast(&rt.cv);
		}
	}
	pthread_mutex_unlock(&rt.lock);
	if (again)
		rtr_send_ping(c);
	if (done) {
		unsigned char b[24];
		wire_put_u64(b, local);
		wire_put_u64(b + 8, (uint64_t)off);
		wire_put_u64(b + 16, rtt);
		conn_send_msg(c, WIRE_SYNC, 0, b, 24, NULL, 0);
	}
}

void
rtr_sync_tick(void)
{
	if (!rtr_on || rt.role != RT_MASTER)
		return;
	uint64_t now = rt_now_ms();
	if (now - rtr_last_sync < (uint64_t)rt.opts.clock_sync_ms)
		return;
	rtr_last_sync = now;
	/* every worker, however many (the I/O thread frees lost workers,
	 * so the pointers hold while it runs this) */
	size_t n = 0, max = 0;
	pthread_mutex_lock(&rt.lock);
	for (struct worker *w = rt.workers; w; w = w->next)
		max += w->state == W_ACTIVE;
	struct worker **ws = max ? malloc(max * sizeof *ws) : NULL;
	for (struct worker *w = rt.workers; ws && w; w = w->next)
		if (w->state == W_ACTIVE)
			ws[n++] = w;
	pthread_mutex_unlock(&rt.lock);
	for (size_t i = 0; i < n; i++)
		rtr_sync_start(ws[i], 4);
	free(ws);
}

void
rtr_on_clock_ping(struct conn *c, uint64_t ref, const unsigned char *p,
                  size_t len)
{
	unsigned char b[16];
	wire_put_u64(b, len >= 8 ? wire_get_u64(p) : 0);
	wire_put_u64(b + 8, dwt_now_ns());
	conn_send_msg(c, WIRE_CLOCK_PONG, ref, b, 16, NULL, 0);
}

void
rtr_on_sync(const unsigned char *p, size_t len)
{
	if (len >= 24 && rtr_on)
		dwt_sync(0, wire_get_u64(p), (int64_t)wire_get_u64(p + 8),
		         wire_get_u64(p + 16));
}

static void
rtr_sync_frame(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	if (h->type == WIRE_CLOCK_PING)
		rtr_on_clock_ping(c, h->ref, p, h->payload);
	else if (h->type == WIRE_CLOCK_PONG && rt.role == RT_MASTER)
		rtr_on_pong(c, p, h->payload);
	else if (h->type == WIRE_SYNC && rt.role == RT_WORKER && c == rt.master)
		rtr_on_sync(p, h->payload);
	free(p);
}

static void
rtr_tick(uint64_t ticks)
{
	(void)ticks;
	rtr_sync_tick();
}

void
rtr_sync_attach(void)
{
	disp_on_frame(WIRE_CLOCK_PING, rtr_sync_frame);
	disp_on_frame(WIRE_CLOCK_PONG, rtr_sync_frame);
	disp_on_frame(WIRE_SYNC, rtr_sync_frame);
	if (rt.role == RT_MASTER)
		disp_on_tick(rtr_tick);
}
