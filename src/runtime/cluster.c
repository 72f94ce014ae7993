/*
 * The process group: workers joining (connect and handshake), leaving,
 * dying (EOF, reset, missed heartbeats), and the queries about it.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "runtime/handshake.h"
#include "runtime/live.h"
#include "runtime/idmap.h"
#include "runtime/rt.h"
#include "runtime/tls.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

struct dw_launch {
	const dw_manager *m;
	int n;
	int first_id;
	int *joined;
	int njoined;
	int err;
	char why[512];
};

/* I/O thread, once a lost worker is finalized: out of the list and the
 * table, its output closed; freed now or by the last cl_unpin. */
static void
cl_unlink(struct worker *w)
{
	loop_fwd_close(w->out);
	loop_fwd_close(w->err);
	w->out = w->err = NULL;
	pthread_mutex_lock(&rt.lock);
	w->finalized = 1; /* rmprocs returns only once all of it is gone */
	pthread_cond_broadcast(&rt.cv);
	*(w->prev ? &w->prev->next : &rt.workers) = w->next;
	if (w->next)
		w->next->prev = w->prev;
	cl_tab_del(w);
	w->unlinked = 1;
	if (w->pins == 0)
		cl_free_worker(w);
	pthread_mutex_unlock(&rt.lock);
}

static struct fwd *
cl_fwd(int fd, int wid, int is_err)
{
	if (fd < 0)
		return NULL;
	struct fwd *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->io_kind = IO_PIPE;
	f->fd = fd;
	f->wid = wid;
	f->is_err = is_err;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (loop_add_fwd(f) != DW_OK) {
		free(f);
		return NULL;
	}
	return f;
}

static int
cl_register(dw_launch *l, dw_worker_config *wc, int fd, struct ssl_st *ssl,
            const struct hs_result *ack)
{
	struct worker *w = calloc(1, sizeof *w);
	struct conn *c = w ? conn_new_tls(fd, wc->id, ssl) : NULL;
	if (!c) {
		free(w);
		return DW_ENOMEM;
	}
	/* Blocking: the I/O thread passes MSG_DONTWAIT, a thread reading
	 * its own reply blocks in recv.  TLS reads never block. */
	if (!ssl)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	w->id = wc->id;
	w->state = W_ACTIVE;
	w->conn = c;
	w->wc = *wc;
	w->mgr = *l->m;
	snprintf(w->addr, sizeof w->addr, "%s", ack->addr);
	w->last_heard = rt_now_ms();
	w->gather_fd = -1;
	w->out = cl_fwd(wc->out_fd, wc->id, 0);
	w->err = cl_fwd(wc->err_fd, wc->id, 1);
	pthread_mutex_lock(&rt.lock);
	if (cl_tab_add(w) != DW_OK) {
		pthread_mutex_unlock(&rt.lock);
		conn_free(c);
		free(w);
		return DW_ENOMEM;
	}
	w->next = rt.workers;
	if (w->next)
		w->next->prev = w;
	rt.workers = w;
	w->pins = 1; /* until its clock is measured below */
	pthread_mutex_unlock(&rt.lock);
	loop_add_conn(c);
	if (w->mgr.manage)
		w->mgr.manage(w->mgr.self, &w->wc, DW_MANAGE_REGISTER);
	l->joined[l->njoined++] = wc->id;
	if (rtr_on) {
		rtr_event(DW_EV_WORKER_JOIN, (uint64_t)wc->id);
		if ((uint32_t)wc->id > dwt_ntasks())
			dwt_set_ntasks((uint32_t)wc->id);
		rtr_sync_start(w, 16); /* its clock, measured as it joins */
		rtr_sync_wait(w, 1000);
	}
	cl_unpin(w);
	return DW_OK;
}

static void
cl_discard(dw_launch *l, dw_worker_config *wc)
{
	if (l->m->kill)
		l->m->kill(l->m->self, wc);
	if (l->m->manage)
		l->m->manage(l->m->self, wc, DW_MANAGE_FINALIZE);
}

int
cl_launched(dw_launch *l, dw_worker_config *wc, const struct hs_result *done)
{
	char why[400] = "", ps[16];
	uint64_t deadline = rt_now_ms() + 10000;
	int fd = wc->fd;
	snprintf(ps, sizeof ps, "%d", wc->port);
	if (fd < 0)
		fd = cl_connect(wc->host, ps, deadline, why, sizeof why);
	struct hs_result ack;
	struct ssl_st *ssl = NULL;
	int err = fd < 0 ? DW_ECLOSED : DW_OK;
	if (!err && done)
		ack = *done;
	else if (!err)
		err = cl_handshake(fd, wc->id, deadline, &ack, why, sizeof why);
	if (!err)
		err = cl_secure(fd, &ack, &ssl, deadline, wc->id, why,
		                sizeof why);
	if (!err)
		err = cl_register(l, wc, fd, ssl, &ack);
	if (err == DW_OK)
		return DW_OK;
	tls_free(ssl);
	if (fd >= 0)
		close(fd);
	if (!l->why[0])
		snprintf(l->why, sizeof l->why, "worker %d: %s", wc->id, why);
	l->err = err;
	cl_discard(l, wc);
	return err;
}

DW_API int
dw_launched(dw_launch *l, dw_worker_config *wc)
{
	return cl_launched(l, wc, NULL);
}

DW_API int
dw_launch_id(const dw_launch *l, int i)
{
	return i >= 0 && i < l->n ? l->first_id + i : -1;
}

DW_API const char *
dw_launch_cookie(const dw_launch *l)
{
	(void)l;
	return rt.cookie;
}

void
cl_launch_error(dw_launch *l, int err, const char *fmt, ...)
{
	if (l->why[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(l->why, sizeof l->why, fmt, ap);
	va_end(ap);
	l->err = err;
}

DW_API int
dw_addprocs_with(const dw_manager *m, int n, int *ids)
{
	if (rt.role != RT_MASTER)
		return rt_set_err(0, "only the master adds workers"), DW_ESTATE;
	if (n <= 0 || !m || !m->launch)
		return rt_set_err(0, "nothing to launch"), DW_EINVAL;
	RTR_WAITS(DWT_STATE_STARTUP_LATENCY);
	dw_launch l = {.m = m, .n = n};
	if (!(l.joined = calloc((size_t)n, sizeof *l.joined)))
		return DW_ENOMEM;
	pthread_mutex_lock(&rt.lock);
	l.first_id = rt.next_id;
	rt.next_id += n;
	pthread_mutex_unlock(&rt.lock);
	int err = m->launch(m->self, n, &l);
	if (l.njoined == 0) {
		rt_set_err(0, "%s", l.why[0] ? l.why : "no worker started");
		free(l.joined);
		return err != DW_OK ? err : (l.err ? l.err : DW_EIO);
	}
	char lmsg[2048] = "";
	l.njoined = load_joined(l.joined, l.njoined, lmsg, sizeof lmsg);
	if (lmsg[0]) {
		rt_set_err(0,
		           "removed, could not load what "
		           "dw_everywhere_load loaded: %s",
		           lmsg);
		if (l.njoined == 0) {
			free(l.joined);
			return DW_EIO;
		}
	} else if (l.njoined < n && l.why[0]) {
		rt_set_err(0, "%d of %d workers started; %s", l.njoined, n,
		           l.why);
	}
	for (int i = 0; ids && i < l.njoined; i++)
		ids[i] = l.joined[i];
	int got = l.njoined;
	free(l.joined);
	return got;
}

/* ---- leaving and dying ---- */

struct lost_arg {
	struct worker *w;
	const char *why;
	int link_ended;
};

static void
cl_lost_cb(void *p)
{
	struct lost_arg *a = p;
	cl_worker_lost(a->w, a->why, a->link_ended);
}

/*
 * How a local worker ended: its manager is our own, its process our
 * child.  When its link closed because it exited, waits up to wait_ms
 * (by the clock: a loaded machine stretches each sleep) for it to become
 * a zombie; a worker judged silent is alive (stopped, stuck), so it is
 * looked at once.  Reads the status without reaping it (WNOWAIT: the
 * manager reaps it).  *st stays empty if it is still running.  This runs
 * on the I/O thread, and the lost worker's calls fail only after it.
 */
static void
cl_exit_status(struct worker *w, char *st, size_t len, int wait_ms)
{
	if (w->wc.pid <= 0 || !w->mgr.name || strcmp(w->mgr.name, "local"))
		return;
	uint64_t end = rt_now_ms() + (uint64_t)wait_ms;
	for (;;) {
		siginfo_t si = {0};
		if (waitid(P_PID, (id_t)w->wc.pid, &si,
		           WEXITED | WNOHANG | WNOWAIT) != 0)
			return;
		if (si.si_pid == w->wc.pid) {
			if (si.si_code == CLD_EXITED)
				snprintf(st, len, " with status %d",
				         si.si_status);
			else
				snprintf(st, len, ": killed by signal %d (%s)",
				         si.si_status, strsignal(si.si_status));
			return;
		}
		if (rt_now_ms() >= end)
			return;
		usleep(1000);
	}
}

/* Runs on the I/O thread, which owns the socket it closes. */
void
cl_worker_lost(struct worker *w, const char *why, int link_ended)
{
	if (rt.io_running && !pthread_equal(pthread_self(), rt.io)) {
		struct lost_arg a = {w, why, link_ended};
		loop_run(cl_lost_cb, &a);
		return;
	}
	pthread_mutex_lock(&rt.lock);
	int state = w->state;
	w->state = W_GONE;
	pthread_mutex_unlock(&rt.lock);
	if (state == W_GONE)
		return;
	char msg[300], st[120] = "";
	if (state == W_ACTIVE)
		cl_exit_status(w, st, sizeof st, link_ended ? 200 : 0);
	if (state == W_ACTIVE)
		rt_log("worker %d lost%s: %s", w->id, st, why);
	rtr_event(DW_EV_WORKER_LEAVE, (uint64_t)w->id);
	if (w->gather_fd >= 0)
		close(w->gather_fd);
	w->gather_fd = -1;
	if (w->conn->fd >= 0 && rt.epfd >= 0)
		epoll_ctl(rt.epfd, EPOLL_CTL_DEL, w->conn->fd, NULL);
	conn_close(w->conn);
	snprintf(msg, sizeof msg, "worker %d has exited%s (%s)", w->id, st,
	         why);
	live_worker_gone(w->id, msg);
	call_fail_peer(w->id, DW_EEXITED, msg);
	disp_gone(w->id); /* the workers, channels and references forget it */
	if (state == W_ACTIVE && w->mgr.kill)
		w->mgr.kill(w->mgr.self, &w->wc);
	if (w->mgr.manage)
		w->mgr.manage(w->mgr.self, &w->wc, DW_MANAGE_FINALIZE);
	cl_unlink(w);
}

/* The monitor's own clock: a tick that comes much later than the period
 * (by CLOCK_MONOTONIC, or by the timer's count of expirations, which
 * also covers a pause before the first tick) means this process did not
 * run (stopped, VM paused).  Workers could not be heard meanwhile, so
 * their silence is discounted by the time the monitor missed and they are
 * probed again before anyone is judged. */
static int
cl_monitor_paused(uint64_t now, uint64_t ticks)
{
	static uint64_t last_tick;
	uint64_t period = (uint64_t)rt.opts.heartbeat_ms;
	uint64_t gap = last_tick ? now - last_tick : 0;
	if (ticks * period > gap)
		gap = ticks * period;
	last_tick = now;
	if (gap <= 2 * period)
		return 0;
	uint64_t credit = gap - period;
	for (struct worker *w = rt.workers; w; w = w->next)
		if (w->state == W_ACTIVE)
			w->last_heard = w->last_heard + credit < now
			                    ? w->last_heard + credit
			                    : now;
	rt_log("the heartbeat monitor did not run for %llu ms (process "
	       "stopped or busy?): probing the workers again before judging "
	       "them",
	       (unsigned long long)gap);
	return 1;
}

void
cl_heartbeat(uint64_t ticks)
{
	uint64_t now = rt_now_ms();
	struct worker *dead[64];
	int nd = 0;
	pthread_mutex_lock(&rt.lock);
	int paused = cl_monitor_paused(now, ticks);
	for (struct worker *w = rt.workers; w; w = w->next) {
		if (w->state != W_ACTIVE)
			continue;
		/* bytes of a frame not yet complete count as heard */
		uint64_t rx =
		    __atomic_load_n(&w->conn->rx_ms, __ATOMIC_RELAXED);
		uint64_t heard = rx > w->last_heard ? rx : w->last_heard;
		if (!paused && now > heard && /* rx may be after now */
		    now - heard > (uint64_t)rt.opts.heartbeat_timeout_ms &&
		    nd < 64)
			dead[nd++] = w;
		else
			conn_send_msg(w->conn, WIRE_PING, now, NULL, 0, NULL,
			              0);
	}
	pthread_mutex_unlock(&rt.lock);
	for (int i = 0; i < nd; i++) {
		char why[96];
		snprintf(why, sizeof why, "no answer to heartbeats for %d ms",
		         rt.opts.heartbeat_timeout_ms);
		cl_worker_lost(dead[i], why, 0);
	}
}

/* Whether ids[*from..n) are all gone; *from only moves forward past
 * those that are, so waiting for n workers costs O(n + wake-ups). */
static int
cl_all_gone(const int *ids, int n, int *from)
{
	for (; *from < n; (*from)++) {
		struct worker *w = cl_find(ids[*from]);
		if (w && (w->state != W_GONE || !w->finalized))
			return 0;
	}
	return 1;
}

static void
cl_wait_gone(const int *ids, int n, int timeout_ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L)
		dl.tv_sec++, dl.tv_nsec -= 1000000000L;
	int from = 0;
	pthread_mutex_lock(&rt.lock);
	while (!cl_all_gone(ids, n, &from))
		if (rt_cond_wait(&rt.cv, &rt.lock, &dl,
		                 DWT_STATE_SYNCHRONIZATION) != 0)
			break;
	pthread_mutex_unlock(&rt.lock);
}

/* A last clock measurement of each leaving worker, all at once. */
static void
cl_leave_sync(const int *ids, int n)
{
	if (!rtr_on)
		return;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++) {
			struct worker *w = cl_pin(ids[i]);
			int ok = w && w->state == W_ACTIVE;
			if (ok && pass == 0)
				rtr_sync_start(w, 16);
			else if (ok)
				rtr_sync_wait(w, 1000);
			if (w)
				cl_unpin(w);
		}
}

/* Appends id to a list for a message ("id 7", "ids 7, 9"). */
static void
cl_name_bad(char *b, size_t len, int id)
{
	size_t o = strlen(b);
	if (o == 0)
		snprintf(b, len, "id %d", id);
	else if (!strncmp(b, "id ", 3) && !strchr(b, ','))
		snprintf(b, len, "ids %d, %d", atoi(b + 3), id);
	else if (o < len - 1)
		snprintf(b + o, len - o, ", %d", id);
}

static void
cl_name_workers(char *b, size_t len)
{
	int ids[64];
	int n = cl_list(ids, 64, 0);
	for (int i = 0; i < n && i < 64; i++) {
		size_t o = strlen(b);
		snprintf(b + o, len - o, "%s%d", o ? ", " : "", ids[i]);
	}
}

DW_API int
dw_rmprocs(const int *ids, int n, int timeout_ms)
{
	int err = DW_OK;
	char bad[200] = "";
	if (timeout_ms <= 0)
		timeout_ms = 10000;
	RTR_WAITS(DWT_STATE_SYNCHRONIZATION);
	cl_leave_sync(ids, n);
	/* all leaving before the first goes: the others are not told of
	 * each one's end (n removals would cost n * n messages) */
	struct worker **lw = calloc((size_t)n, sizeof *lw);
	if (!lw)
		return rt_set_err(0, "out of memory"), DW_ENOMEM;
	pthread_mutex_lock(&rt.lock);
	for (int i = 0; i < n; i++) {
		struct worker *w = cl_find(ids[i]);
		if (w && w->state == W_ACTIVE) {
			w->state = W_LEAVING;
			w->pins++;
			lw[i] = w;
		} else if (!w && (ids[i] <= 1 || ids[i] >= rt.next_id)) {
			err = DW_ENOTFOUND;
			cl_name_bad(bad, sizeof bad, ids[i]);
		}
	}
	pthread_mutex_unlock(&rt.lock);
	for (int i = 0; i < n; i++) {
		struct worker *w = lw[i];
		if (!w)
			continue;
		if (w->mgr.manage)
			w->mgr.manage(w->mgr.self, &w->wc,
			              DW_MANAGE_DEREGISTER);
		conn_send_msg(w->conn, WIRE_EXIT, 0, NULL, 0, NULL, 0);
		cl_unpin(w);
	}
	free(lw);
	cl_wait_gone(ids, n, timeout_ms);
	for (int i = 0; i < n; i++) {
		pthread_mutex_lock(&rt.lock);
		struct worker *w = cl_find(ids[i]);
		int late = w && w->state == W_LEAVING;
		if (late) {
			w->state = W_ACTIVE; /* so that it gets killed */
			w->pins++;
		}
		pthread_mutex_unlock(&rt.lock);
		if (late) {
			cl_worker_lost(w, "did not exit when removed", 0);
			cl_unpin(w);
		}
	}
	if (err != DW_OK) {
		char live[200] = "";
		cl_name_workers(live, sizeof live);
		rt_set_err(0,
		           "dw_rmprocs: %s not a worker (the workers are: "
		           "%s); the others were removed",
		           bad, live[0] ? live : "none");
	}
	return err;
}

/* Removes every worker, stops the I/O thread, frees everything. */
void
cl_shutdown(void)
{
	int n = cl_list(NULL, 0, 0);
	int *ids = n ? malloc(sizeof *ids * (size_t)n) : NULL;
	if (ids)
		n = cl_list(ids, n, 0); /* none joins meanwhile: master only */
	if (ids && n)
		dw_rmprocs(ids, n, 5000);
	free(ids);
	loop_stop();
	call_fail_all();
	work_shutdown(); /* channels, the master's executors */
	pthread_mutex_lock(&rt.lock);
	struct worker *w = rt.workers, *nx;
	rt.workers = NULL;
	cl_tab_fini();
	pthread_mutex_unlock(&rt.lock);
	for (; w; w = nx) {
		nx = w->next;
		conn_free(w->conn);
		struct fwd *fs[2] = {w->out, w->err};
		for (int i = 0; i < 2; i++) {
			if (fs[i] && fs[i]->fd >= 0)
				close(fs[i]->fd);
			free(fs[i]);
		}
		free(w);
	}
}

/* ---- what the master's transport calls up to ---- */

/* Every frame from a worker counts as hearing from it. */
static void
cl_seen(struct conn *c)
{
	pthread_mutex_lock(&rt.lock);
	struct worker *w = cl_find(c->peer);
	if (w)
		w->last_heard = rt_now_ms();
	pthread_mutex_unlock(&rt.lock);
}

/* A worker's link ended: that worker is lost. */
static void
cl_conn_lost(struct conn *c, const char *why)
{
	struct worker *w = cl_pin(c->peer);
	if (w) {
		cl_worker_lost(w, why, 1);
		cl_unpin(w);
	} else
		loop_run((void (*)(void *))conn_close, c);
}

void
cl_attach(void)
{
	disp_on_seen(cl_seen);
	disp_on_tick(cl_heartbeat);
	disp_on_lost(cl_conn_lost);
	disp_on_wake(cl_on_wake); /* interrupt.c */
}
