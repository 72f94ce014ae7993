/* Runtime internals shared by the files of src/runtime. */
#ifndef DW_RUNTIME_RT_H
#define DW_RUNTIME_RT_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include <dwork/dwork.h>

#include "runtime/conn.h"

enum rt_role { RT_NONE = 0, RT_MASTER = 1, RT_WORKER = 2 };
enum worker_state { W_ACTIVE = 1, W_LEAVING, W_GONE };

/* Forwarding of a worker's stdout or stderr, line by line. */
struct fwd {
	int io_kind; /* IO_PIPE */
	int fd;
	int wid;
	int is_err;
	int closing; /* read to the end, then closed (loop_fwd_close) */
	size_t n;
	char buf[4096];
};

struct worker {
	int id;
	int state;
	struct conn *conn;
	dw_worker_config wc;
	dw_manager mgr;
	char addr[256];      /* where it listens, for worker-to-worker */
	uint64_t last_heard; /* ms, monotonic */
	struct fwd *out, *err;
	/* clock measurements (rt.lock) */
	int sync_left;   /* ping-pongs still to do in this round */
	int sync_rounds; /* rounds completed */
	uint64_t best_rtt, best_local;
	int64_t best_off;
	/* trace files arriving over the link (reader thread) */
	int gather_fd;
	int finalized; /* its manager released it (process reaped) */
	struct worker *next, *prev; /* rt.workers, newest first */
	int pins;     /* threads using it outside rt.lock (cl_pin) */
	int unlinked; /* lost and out of the tables: freed at pins 0 */
};

/* A call received by a worker, waiting for an executor. */
struct job {
	struct job *next;
	struct conn *from;
	uint64_t id;
	struct wire_call call;
	unsigned char *payload;
	size_t len;
	struct kept *kept; /* KEEP mode: where the result goes */
};

/* A kept result, keyed by (caller, call id): it exists from the call's
 * arrival, so that other holders may wait for it (kept.c). */
struct kept {
	struct kept *next;
	uint64_t id;
	void *data;
	size_t len;
	int from;  /* the caller (whence) */
	int state; /* KEPT_RUNNING, KEPT_DONE, KEPT_FAILED */
	void *ext; /* holders other than the caller, waiters (kept.c) */
};

struct rt {
	/* lock guards everything below unless said otherwise, and also:
	 * every worker struct and the table by id (cluster.c), every
	 * future's fields, the pending table and ready list (future.c),
	 * the kept results (kept.c), the executors' counts (exec.c).  Lock
	 * order: rt.lock, then a link's wlock or lw_lock; rt.lock is never
	 * taken under ch_lock, pr_lock, a pool's lock, wlock, lw_lock or
	 * later_lock (docs/architecture.md, "Locks"). */
	pthread_mutex_t lock;
	pthread_cond_t cv;      /* workers leaving, I/O commands, exiting */
	pthread_cond_t jobs_cv; /* a job for the executors, or exiting */
	int role;
	int myid;
	dw_options opts;
	char cookie[WIRE_COOKIE_MAX + 1];
	struct worker *workers;
	int next_id;
	struct conn *master; /* worker: the link to the master */
	char my_addr[256];   /* worker: its listen address */
	/* I/O thread */
	pthread_t io;
	int io_running;
	int epfd, evfd, tfd;
	int stop; /* the I/O thread should end */
	struct iocmd *cmds;
	/* calls (the pending table is future.c's, under this lock) */
	uint64_t next_call;
	/* worker side */
	struct job *jobs, **jobs_tail;
	pthread_t *execs;
	int nexecs;
	int exiting;
};

extern struct rt rt;

uint64_t rt_now_ms(void); /* fdio.c */
/* rterr.c: the calling thread's error (dw_errmsg), the log line */
void rt_set_err(int pid, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void rt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* loop.c: the I/O thread (iocmd.c: handing it work) */
int loop_start(void);
void loop_stop(void);
/* Runs fn(arg) on the I/O thread and waits for it (fork happens there so
 * PR_SET_PDEATHSIG follows the thread that lives as long as the process). */
void loop_run(void (*fn)(void *), void *arg);
int loop_add_conn(struct conn *c);
int loop_add_fwd(struct fwd *f);
/* I/O thread: prints what is left of a worker's output, closes it and
 * frees f once the current batch of events is handled. */
void loop_fwd_close(struct fwd *f);
/* Runs fn(p) once the I/O thread has handled its current batch of
 * events (at once when the loop is not running): for memory an event
 * may still point at.  Any thread. */
void loop_later(void (*fn)(void *), void *p);
int loop_read_conn(struct conn *c, char *why, size_t len);
void loop_conn_lost(struct conn *c, const char *why);
void loop_wake(void);
/* loop_wake, loop_run and loop_later are iocmd.c's, below the links and
 * the dispatch; the I/O thread drains them after each batch: the
 * functions loop_run handed over, then the work put off. */
void loop_commands(void);
void loop_free_batch(void);
/* rearm.c, the I/O thread's side of deferred re-arming: epoll_wait's
 * timeout, what it does after each wait, and the end of the loop. */
int rearm_wait_ms(void);
void rearm_tick(void);
void rearm_stop(void);
/* accept4 with SOCK_CLOEXEC that survives descriptor exhaustion: at
 * EMFILE/ENFILE the waiting connection is accepted on a reserved
 * descriptor and closed (-2, logged once per episode); -1 with errno
 * otherwise (EMFILE only when no descriptor could be reserved: back off). */
int loop_accept(int lfd, struct sockaddr *sa, socklen_t *sl);

/*
 * dispatch.c: what the transport calls up through (docs/architecture.md,
 * "Runtime").  Registration happens before the I/O thread starts
 * (rt_attach); the tables are read without a lock afterwards.
 *
 * A frame handler gets each frame of its type from any link (the
 * payload p is handed over: it frees it); handlers run on the I/O
 * thread, or on a thread holding the link's read right, and never
 * block.  A type nobody handles fails the link.  The seen hook is told
 * of every frame first (the master's liveness).  Tick hooks run on the
 * I/O thread at every timer expiry (ticks: expirations since the last
 * run), in the order they were added; the lost handler is told of a
 * link that ended (EOF, error, a malformed frame); gone observers, in
 * the order they were added, are told that a process has gone (any
 * thread but one holding rt.lock).
 */
typedef void (*disp_frame_fn)(struct conn *c, const struct wire_hdr *h,
                              unsigned char *p);
typedef void (*disp_seen_fn)(struct conn *c);
typedef void (*disp_tick_fn)(uint64_t ticks);
typedef void (*disp_lost_fn)(struct conn *c, const char *why);
typedef void (*disp_gone_fn)(int pid);
typedef void (*disp_wake_fn)(void);
/* A peek hook sees every frame after the seen hook and before its
 * handler; returning 1 it has taken the frame (and freed p). */
typedef int (*disp_peek_fn)(struct conn *c, const struct wire_hdr *h,
                            unsigned char *p);
void disp_on_frame(unsigned type, disp_frame_fn fn);
void disp_on_peek(disp_peek_fn fn);
void disp_on_seen(disp_seen_fn fn);
void disp_on_tick(disp_tick_fn fn);
void disp_on_lost(disp_lost_fn fn);
void disp_on_gone(disp_gone_fn fn);
/* Wake hooks run on the I/O thread each time loop_wake woke it. */
void disp_on_wake(disp_wake_fn fn);
void disp_wake(void);
void disp_clear(void); /* before a new registration (dw_init again) */
/* The conn_frame_fn every link's frames go through. */
void disp_frame(void *arg, struct conn *c, const struct wire_hdr *h,
                unsigned char *p);
void disp_tick(uint64_t ticks);
void disp_lost(struct conn *c, const char *why);
void disp_gone(int pid);

/* init.c: registers every module's handlers, hooks and observers for
 * this process's role (rt.role set), before the I/O thread starts.  Each
 * module's xxx_attach registers its own. */
void rt_attach(void);
void loop_attach(void);   /* PING, PONG */
void cl_attach(void);     /* master: seen, heartbeat tick, lost, Ctrl-C */
void worker_attach(void); /* EXIT; worker: lost */

/* proctab.c: the process table, below every module */
struct worker *cl_find(int id); /* lock held */
/* A worker that stays valid until cl_unpin even if it is lost meanwhile
 * (a lost worker is freed at once otherwise); NULL when there is none. */
struct worker *cl_pin(int id);
void cl_unpin(struct worker *w);
/* The link to pid, with a reference the caller drops (conn_unref) or
 * hands on; NULL with *err set.  Takes rt.lock. */
struct conn *cl_conn_of(int pid, int *err);
/* How a worker reaches another worker (peer.c's peer_conn, set by
 * peer_attach before the I/O thread starts). */
void cl_on_peer_conn(struct conn *(*fn)(int pid, int *err));
/* The table by id (rt.lock held): adding (DW_ENOMEM), removing, freeing
 * it at shutdown; a worker out of it is freed by cl_free_worker. */
int cl_tab_add(struct worker *w);
void cl_tab_del(struct worker *w);
void cl_tab_fini(void);
void cl_free_worker(struct worker *w);
/* The ids of live workers (and 1 first, with_master) into ids[0..max);
 * returns how many there are. */
int cl_list(int *ids, int max, int with_master);

/* cluster.c (the workers joining, lost, removed), fdio.c, join.c */
/* Blocking socket I/O on a deadline (ms, rt_now_ms), for handshakes:
 * cl_wait_fd 0 ready, -1 timeout or error; cl_io_full 0 done, -1 closed
 * or failed, -2 timeout; cl_connect a connected TCP_NODELAY socket or -1
 * with the reason in why. */
int cl_wait_fd(int fd, short ev, uint64_t deadline);
int cl_io_full(int fd, void *buf, size_t n, int wr, uint64_t deadline);
int cl_connect(const char *host, const char *port, uint64_t deadline, char *why,
               size_t len);
/* Marks w gone, fails its calls and kills it (a local one); link_ended
 * when its link closed (its exit status is then waited for, 200 ms at
 * most), 0 when it was judged silent or did not leave. */
void cl_worker_lost(struct worker *w, const char *why, int link_ended);
/* join.c: the master's side of the handshake, then TLS when it was
 * asked for and the worker's settings (CONFIG), on a deadline. */
struct hs_result;
struct ssl_st;
int cl_handshake(int fd, int id, uint64_t deadline, struct hs_result *r,
                 char *why, size_t len);
int cl_secure(int fd, struct hs_result *ack, struct ssl_st **ssl,
              uint64_t deadline, int id, char *why, size_t len);
/* interrupt.c: the I/O thread was woken: a Ctrl-C to act on? */
void cl_on_wake(void);
/* One heartbeat round; ticks is the timer's count of expirations since
 * the last round (1 unless this process did not run). */
void cl_heartbeat(uint64_t ticks);
/* Ctrl-C on the master: the first interrupts the calls in flight. */
extern volatile sig_atomic_t cl_sigint_pending;
void cl_catch_sigint(void);
void cl_interrupt_all(void);
void cl_shutdown(void);
/* dw_launched; with done, the handshake was already made on wc->fd (a
 * worker that dialled in) and only the settings are sent. */
struct hs_result;
int cl_launched(dw_launch *l, dw_worker_config *wc,
                const struct hs_result *done);
/* Records why a launch failed, unless a reason is already there. */
void cl_launch_error(dw_launch *l, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* registry.c, future.c, exec.c: remote calls (call.h has the rest) */
void call_note_interrupt(void); /* dw_interrupt reached this worker */
void call_fail_peer(int pid, int err, const char *msg);
void call_fail_all(void);
int call_start_executors(int n);
void call_stop_executors(void);
dw_fn call_lookup(const char *name, size_t len);
/* dw_register is allowed after dw_init while dw_everywhere_load runs an
 * object's constructors (this thread). */
void call_set_loading(int on);
/* A worker that exits lets running calls end, for up to ms. */
void call_drain(int ms);
/* load.c: loads what dw_everywhere_load loaded on workers that just
 * joined; those that fail are removed (named in msg).  Returns how many
 * of ids[0..n) are kept (compacted). */
int load_joined(int *ids, int n, char *msg, size_t ml);
/* Keeps p (malloc'd) until the running call ends; -1 (p freed) on
 * failure. */
int call_reply_hold(dw_reply *r, void *p);
/* The process the running function answers to (this one outside). */
int call_caller_pid(void);
/* The running function's name into buf ("" outside one). */
const char *call_current(char *buf, size_t len);
/* 1 for the runtime's carriers of user functions ("dwork:…" names). */
int call_is_carrier(const char *name, size_t len);
/* Calls fn(name) for every registered function. */
void call_each_function(void (*fn)(const char *name));

/* worker.c */
int worker_main(int *argc, char ***argv);
int worker_is_worker(int argc, char **argv);

/* wait.c: the runtime's only wait on a condition variable.  The calling
 * thread is recorded in `state` (a DWT_STATE_*) while it waits, unless
 * it is inside a blocking call's wait scope (RTR_WAITS, rtrace.h), whose
 * state then stands.  dl is an absolute time on cv's clock, NULL waits
 * without a limit.  Returns what pthread_cond_(timed)wait returns.
 * The raw waits are poisoned below so that no wait can forget its state
 * (docs/tracing.md, "How waits are recorded"). */
int rt_cond_wait(pthread_cond_t *cv, pthread_mutex_t *m,
                 const struct timespec *dl, uint32_t state);
#ifndef RT_WAIT_IMPL
#pragma GCC poison pthread_cond_wait pthread_cond_timedwait
#endif

#endif
