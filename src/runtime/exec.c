/*
 * Executors: the threads that run the calls a process receives, as many
 * as configured and more while some block in dwork calls (so nested
 * calls cannot deadlock); interrupts of the call in flight.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define EXEC_HAVE_TSC 1
#endif

#include "runtime/call.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

/* Executors: at least the configured number; more while some block in
 * dwork calls and jobs wait (rt.lock). */
static int exec_idle, exec_blocked, exec_reading, exec_running;
static __thread int exec_thread;
static __thread struct conn *exec_early; /* its read right is held */
#define EXEC_MAX 256

static void *exec_main(void *arg);

static int
exec_spawn_locked(void)
{
	pthread_t *v = realloc(rt.execs, (size_t)(rt.nexecs + 1) * sizeof *v);
	if (!v)
		return DW_ENOMEM;
	rt.execs = v;
	if (!rt.jobs_tail)
		rt.jobs_tail = &rt.jobs;
	if (pthread_create(&rt.execs[rt.nexecs], NULL, exec_main,
	                   (void *)(intptr_t)(rt.nexecs + 1)) != 0)
		return DW_ENOMEM;
	rtr_thread_wait_started(); /* it takes no lock before it says so */
	rt.nexecs++;
	exec_idle++; /* counted idle until it takes a job */
	return DW_OK;
}

/* A job read from link `from` (NULL: a local one) was queued (rt.lock
 * held): make sure some executor will run it.  An idle executor reading
 * the master's link only sees jobs when its read turn ends, so a job from
 * elsewhere needs an executor that waits for jobs. */
void
exec_ensure_locked(struct conn *from)
{
	int base = rt.opts.executors > 0 ? rt.opts.executors : 1;
	if (rt.exiting || exec_idle - exec_reading > 0)
		return;
	if (exec_reading > 0 && from && from == rt.master)
		return; /* the executor reading that link read this job */
	if (rt.nexecs < base ||
	    ((exec_blocked > 0 || exec_reading > 0) && rt.nexecs < EXEC_MAX))
		exec_spawn_locked();
}

void
exec_block_begin_locked(void)
{
	if (!exec_thread)
		return;
	exec_blocked++;
	if (rt.jobs)
		exec_ensure_locked(NULL);
}

void
exec_block_end_locked(void)
{
	if (exec_thread)
		exec_blocked--;
}

void
exec_block_begin(void)
{
	if (!exec_thread)
		return;
	pthread_mutex_lock(&rt.lock);
	exec_block_begin_locked();
	pthread_mutex_unlock(&rt.lock);
}

void
exec_block_end(void)
{
	if (!exec_thread)
		return;
	pthread_mutex_lock(&rt.lock);
	exec_block_end_locked();
	pthread_mutex_unlock(&rt.lock);
}

/* ---- executors ---- */

/* Interrupts (dw_interrupt: an INTERRUPT frame from the master, or
 * SIGINT) count up a generation; a remote call was interrupted when the
 * generation moved while it ran.  Each executor remembers the one its
 * call started in, so a call starting elsewhere clears nothing. */
static unsigned interrupt_gen;
static __thread unsigned exec_gen;
static __thread int exec_in_call;

DW_API int
dw_interrupted(void)
{
	return exec_in_call &&
	       __atomic_load_n(&interrupt_gen, __ATOMIC_RELAXED) != exec_gen;
}

void
call_note_interrupt(void)
{
	__atomic_fetch_add(&interrupt_gen, 1, __ATOMIC_RELAXED);
}

/* The call that ran was interrupted: its result (if any) is dropped and
 * its caller gets DW_EINTR. */
static int
exec_was_interrupted(const struct job *j, dw_reply *r, int *rc)
{
	exec_in_call = 0;
	if (__atomic_load_n(&interrupt_gen, __ATOMIC_RELAXED) == exec_gen ||
	    j->call.mode == WIRE_MODE_DO)
		return 0;
	if (r->owned)
		free(r->data);
	r->owned = 0;
	r->data = NULL;
	r->len = 0;
	snprintf(r->err, sizeof r->err,
	         "the call of '%.*s' was interrupted (dw_interrupt)",
	         (int)j->call.name_len, j->call.name);
	*rc = -1;
	return 1;
}

/* Replies wait for one write while more jobs are queued.  Each executor
 * remembers the links it left replies queued on and writes them before
 * it goes idle or when no job is left (jobs come from several links). */
static __thread struct conn *exec_deferred[8];
static __thread int exec_ndeferred;

/* A reply is held back only behind a run of the same function whose
 * last run was short: a stream of tiny calls shares writes, and no
 * result waits for a longer call queued behind it (the first run of a
 * function, or one after a long run, has its replies written first). */
#define EXEC_SHORT_TICKS 100000u /* 33-100 us of TSC; 100 us of ns */
#define EXEC_NAME_MAX    64
static __thread char exec_last_name[EXEC_NAME_MAX];
static __thread size_t exec_last_len; /* 0: no short run to follow */

static inline uint64_t
exec_ticks(void)
{
#ifdef EXEC_HAVE_TSC
	return __rdtsc();
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* j may run with replies still held: it is the function whose short run
 * came last. */
static int
exec_follows_short(const struct job *j)
{
	return exec_last_len && j->call.name_len == exec_last_len &&
	       !memcmp(j->call.name, exec_last_name, exec_last_len);
}

static void
exec_note_run(const struct job *j, uint64_t ticks)
{
	if (ticks < EXEC_SHORT_TICKS && j->call.name_len <= EXEC_NAME_MAX) {
		memcpy(exec_last_name, j->call.name, j->call.name_len);
		exec_last_len = j->call.name_len;
	} else {
		exec_last_len = 0;
	}
}

static int
exec_more(void)
{
	return __atomic_load_n(&rt.jobs, __ATOMIC_RELAXED) != NULL ? CONN_MORE
	                                                           : 0;
}

static int
exec_defer(struct conn *c)
{
	if (!exec_more())
		return 0;
	for (int i = 0; i < exec_ndeferred; i++)
		if (exec_deferred[i] == c)
			return CONN_MORE;
	if (exec_ndeferred == 8)
		return 0;
	conn_ref(c); /* kept past its job (exec_kick_all drops it) */
	exec_deferred[exec_ndeferred++] = c;
	return CONN_MORE;
}

static void
exec_kick_all(void)
{
	for (int i = 0; i < exec_ndeferred; i++) {
		conn_kick(exec_deferred[i]);
		conn_unref(exec_deferred[i]);
	}
	exec_ndeferred = 0;
}

/* The kept call ran: keep its result (or its failure for other holders)
 * and tell the caller. */
static void
exec_keep(struct job *j, dw_reply *r, int rc, int code)
{
	struct kept *k = j->kept;
	if (rc == 0 && (uint64_t)r->len > j->from->max_payload) {
		/* no link could fetch it: fail the call now, keep nothing */
		wire_too_big(r->err, sizeof r->err, "a result", r->len,
		             j->from->max_payload);
		rc = -1;
		code = DW_ETOOBIG;
	}
	kept_finish(k, r, rc, code);
	if (rc != 0) {
		call_reply_code(j->from, j->id, code, r->err);
		return;
	}
	struct frame f;
	frame_init(&f, WIRE_DONE, j->id, NULL, 0, NULL, 0, 0);
	conn_send(j->from, &f, exec_defer(j->from));
}

/* An executor that will read the master's link once its reply is out
 * (no job queued) takes the read right before the reply is written: the
 * next call, sent as soon as the reply lands, then finds the I/O thread's
 * interest off and wakes only this executor.  Taken after, the call could
 * come first (on one CPU the caller runs at once) and wake the I/O thread
 * for nothing: two context switches a call. */
static void
exec_read_early(struct conn *from)
{
	if (!exec_early && from == rt.master && !exec_more() && !peer_links() &&
	    conn_take_reader(from))
		exec_early = from;
}

/* The early read right goes back when a job comes first. */
static void
exec_read_early_drop(void)
{
	if (exec_early) {
		conn_drop_reader(exec_early);
		exec_early = NULL;
	}
}

static void
exec_job(struct job *j)
{
	dw_reply r;
	call_set_caller(j->from ? j->from->peer : rt.myid);
	if (!j->from) { /* a local job */
		int rc = call_run(&j->call, &r);
		call_local_done(j, rc, &r);
		if (r.owned)
			free(r.data);
		return;
	}
	if (exec_ndeferred && !exec_follows_short(j))
		exec_kick_all(); /* no reply waits for a run of unknown length
		                  */
	exec_gen = __atomic_load_n(&interrupt_gen, __ATOMIC_RELAXED);
	exec_in_call = 1;
	rtr_comm(DWT_RECV | DWT_LOGICAL, j->from->peer, j->id, 0, j->len);
	uint64_t t0 = exec_ticks();
	int rc = call_run(&j->call, &r);
	exec_note_run(j, exec_ticks() - t0);
	int code = exec_was_interrupted(j, &r, &rc) ? DW_EINTR : DW_EREMOTE;
	exec_read_early(j->from); /* before anything is queued on the link */
	/* its bytes go back to the sender, before (and with) its reply */
	flow_consumed(j->from, j->len, !exec_more(),
	              j->call.mode == WIRE_MODE_DO ? exec_defer(j->from)
	                                           : CONN_MORE);
	if (j->call.mode != WIRE_MODE_DO)
		rtr_comm(
		    DWT_SEND | DWT_LOGICAL | DWT_PHYSICAL, j->from->peer, j->id,
		    1, rc == 0 && j->call.mode == WIRE_MODE_FETCH ? r.len : 0);
	if (j->call.mode == WIRE_MODE_KEEP) {
		exec_keep(j, &r, rc, code);
	} else if (rc != 0) {
		if (j->call.mode == WIRE_MODE_DO)
			rt_log("process %d: remote_do: %s", rt.myid, r.err);
		else
			call_reply_code(j->from, j->id, code, r.err);
	} else if (j->call.mode == WIRE_MODE_FETCH) {
		int own = r.owned;
		r.owned = 0;
		call_send_result(j->from, j->id, r.data, r.len, own,
		                 exec_defer(j->from));
	}
	if (r.owned)
		free(r.data);
	if (!exec_more()) {
		exec_kick_all();
		conn_kick(j->from);
	}
	conn_unref(j->from);
	free(j->payload);
	free(j);
}

/* An idle executor reads the master's link itself when nobody else does,
 * so a call wakes one thread, not two.  Not once the worker has links to
 * other workers: their jobs would wait for the end of its read turn.
 * Returns 1 if it took a turn. */
static int
exec_idle_read(void)
{
	struct conn *c = rt.master;
	if (exec_early && (exec_early != c || peer_links()))
		exec_read_early_drop();
	int early = exec_early != NULL;
	exec_early = NULL;
	if (!early && (!c || peer_links() || !conn_take_reader(c)))
		return 0;
	exec_reading++;
	pthread_mutex_unlock(&rt.lock);
	call_read_turn(c, 1000);
	pthread_mutex_lock(&rt.lock);
	exec_reading--;
	return 1;
}

static void *
exec_main(void *arg)
{
	char name[32];
	snprintf(name, sizeof name, "executor %d", (int)(intptr_t)arg);
	rtr_thread_start(name, DWT_STATE_IDLE);
	rtr_thread_started();
	exec_thread = 1;
	pthread_mutex_lock(&rt.lock);
	for (;;) {
		while (!rt.jobs && !rt.exiting) {
			if (exec_ndeferred) { /* before going idle */
				pthread_mutex_unlock(&rt.lock);
				exec_kick_all();
				pthread_mutex_lock(&rt.lock);
				continue;
			}
			if (!exec_idle_read())
				rt_cond_wait(&rt.jobs_cv, &rt.lock, NULL,
				             DWT_STATE_IDLE);
		}
		exec_read_early_drop(); /* a job to run: someone else reads */
		struct job *j = rt.jobs;
		if (!j)
			break;
		rt.jobs = j->next;
		if (!rt.jobs)
			rt.jobs_tail = &rt.jobs;
		exec_idle--;
		exec_running++;
		pthread_mutex_unlock(&rt.lock);
		exec_job(j);
		pthread_mutex_lock(&rt.lock);
		exec_running--;
		exec_idle++;
	}
	exec_idle--;
	pthread_mutex_unlock(&rt.lock);
	return NULL;
}

/* A worker told to exit: lets the calls already running or queued end
 * (a remote_do sent just before the exit, its trace records with it),
 * for up to ms. */
void
call_drain(int ms)
{
	for (int i = 0; i < ms; i++) {
		pthread_mutex_lock(&rt.lock);
		int busy = exec_running > 0 || rt.jobs != NULL;
		pthread_mutex_unlock(&rt.lock);
		if (!busy)
			return;
		usleep(1000);
	}
}

int
call_start_executors(int n)
{
	pthread_mutex_lock(&rt.lock);
	rt.jobs_tail = &rt.jobs;
	if (rt.opts.executors < n)
		rt.opts.executors = n;
	int err = DW_OK;
	for (int i = 0; i < n && err == DW_OK; i++)
		err = exec_spawn_locked();
	pthread_mutex_unlock(&rt.lock);
	return err;
}

/* The master's executors end with the runtime (a worker's end with the
 * process).  Calls still queued are dropped. */
void
call_stop_executors(void)
{
	pthread_mutex_lock(&rt.lock);
	rt.exiting = 1;
	pthread_cond_broadcast(&rt.jobs_cv);
	int n = rt.nexecs;
	pthread_t *v = rt.execs;
	rt.execs = NULL;
	rt.nexecs = 0;
	pthread_mutex_unlock(&rt.lock);
	for (int i = 0; i < n; i++)
		pthread_join(v[i], NULL);
	free(v);
	pthread_mutex_lock(&rt.lock);
	struct job *jobs = rt.jobs;
	rt.jobs = NULL;
	rt.jobs_tail = &rt.jobs;
	for (struct job *j = jobs, *nx; j; j = nx) {
		nx = j->next;
		if (!j->from) {
			pthread_mutex_unlock(&rt.lock);
			call_local_done(j, -1, NULL);
			pthread_mutex_lock(&rt.lock);
			continue;
		}
		if (j->kept && kept_take(j->kept->from, j->kept->id))
			kept_free(j->kept);
		conn_unref(j->from);
		free(j->payload);
		free(j);
	}
	kept_free_all();
	exec_idle = exec_blocked = exec_reading = 0;
	rt.exiting = 0;
	pthread_mutex_unlock(&rt.lock);
}

static void
exec_on_interrupt(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	(void)h;
	if (rt.role == RT_WORKER && c == rt.master)
		call_note_interrupt();
	else
		conn_fail(c, "INTERRUPT from process %d, not the master",
		          c->peer);
	free(p);
}

void
exec_attach(void)
{
	disp_on_frame(WIRE_INTERRUPT, exec_on_interrupt);
}
