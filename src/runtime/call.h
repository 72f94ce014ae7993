/*
 * Internals shared by the files of remote calls: registry.c, future.c,
 * send.c, callframe.c, kept.c, exec.c, refs.c, request.c, dispatch.c
 * (docs/architecture.md, "Runtime").  rt.lock guards every field of a
 * future, the pending table, the ready list and the kept results.
 */
#ifndef DW_RUNTIME_CALL_H
#define DW_RUNTIME_CALL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <dwork/dwork.h>

#include "runtime/work.h"

struct conn;
struct job;
struct kept;
struct wire_call;
struct wire_hdr;

enum fut_state { F_PENDING = 0, F_READY, F_FAILED };
/* Futures of requests (REQ frames answered by ANSWER), never on the wire
 * as a call mode. */
#define MODE_REQ 16
enum { KEPT_RUNNING = 0, KEPT_DONE, KEPT_FAILED };
enum fut_op { OP_NONE = 0, OP_CALL, OP_FETCH };

struct dw_future {
	uint64_t id;
	int pid;
	int state;
	int op;        /* what the pending table waits for */
	int mode;      /* WIRE_MODE_* of the call */
	int remote;    /* the result is kept by the worker */
	int have;      /* the result is here */
	int user_gone; /* dw_future_free was called */
	int refs;      /* the user's, and the pending table's */
	int err, errpid;
	char *errmsg;
	unsigned char *buf; /* payload holding the result */
	size_t off, len;
	pthread_cond_t cv;
	struct dw_future *rprev, *rnext; /* ready list: kept remotely */
	int in_ready;
	struct conn *conn;     /* where its frames go (never freed before the
	                          runtime ends) */
	int reading;           /* the calling thread holds conn's read right */
	int whence;            /* an imported reference: the caller's id */
	int imported;          /* its result is fetched from pid as a holder */
	call_notify_fn notify; /* told when it completes (rt.lock held) */
	void *notify_ctx;
	char fn[64]; /* the user function it runs, for a worker's death */
};

struct dw_reply {
	void *data;
	size_t len;
	int owned;
	char err[512];
	int failed;
	void *keep[8]; /* what dw_args decoded, freed when the call ends */
	int nkeep;
	void **more; /* beyond keep, malloc'd */
	int nmore;
};

/* ---- registry.c ---- */
/* FNV-1a of a name: the same function id in every process. */
uint32_t call_fn_id(const char *name, size_t len);
/* The function a call is for in the trace (a carrier's user function). */
uint32_t call_event_id(const char *fn, size_t nl, const void *arg, size_t len);
/* Keeps the user function a call runs in f->fn, for a worker's death. */
void call_user_name(struct dw_future *f, const char *fn, size_t nl,
                    const void *arg, size_t len);
/* Runs a registered function; -1 with r->err set on failure. */
int call_run(const struct wire_call *c, dw_reply *r);
/* The process the running function answers to (this thread). */
void call_set_caller(int pid);

/* ---- future.c (rt.lock held unless said) ---- */
#define FETCH_AHEAD 255 /* results a fetch asks for after its own */
struct dw_future *fut_new(int pid, int mode); /* no lock */
void fut_unref(struct dw_future *f);
/* The ready list: futures whose result is kept remotely, unfetched. */
void ready_add(struct dw_future *f);
void ready_del(struct dw_future *f);
/* Tells the waiters and the notice that f completed. */
void fut_notify(struct dw_future *f);
void fut_fail(struct dw_future *f, int err, int pid, const char *msg);
/* Waits while f has an operation in flight, reading its link itself
 * when nobody else does. */
int fut_wait_locked(struct dw_future *f, int timeout_ms);
int fut_result_err(struct dw_future *f);
/* The pending table: pend_put adds f under f->id with a reference (-1
 * out of memory); pend_take removes it and hands that reference over. */
int pend_put(struct dw_future *f);
struct dw_future *pend_take(uint64_t id);
size_t pend_count(void); /* calls waiting for their result (rt.lock) */
void call_fail_peer_locked(int pid, int err, const char *msg);
/* One turn of reading c with its read right held (no lock): 0, or -1
 * when the link ended (then reported lost). */
int call_read_turn(struct conn *c, int ms);

/* ---- send.c ---- */
/* The frame of f could not be sent: f is no longer pending. */
int call_unsend(struct dw_future *f, struct conn *c);
/* An executor ran a local job j (rc < 0, r NULL: the runtime ends). */
void call_local_done(struct job *j, int rc, dw_reply *r);

/* ---- callframe.c (frame handlers: the I/O thread or a reader) ---- */
void call_complete(struct conn *c, const struct wire_hdr *h, unsigned char *p);
void call_enqueue(struct conn *c, const struct wire_hdr *h, unsigned char *p);
/* The callee's replies: an error (a code unless DW_EREMOTE), or a
 * result (own: data is freed with the frame). */
void call_reply_code(struct conn *c, uint64_t id, int err, const char *msg);
void call_reply_error(struct conn *c, uint64_t id, const char *msg);
void call_send_result(struct conn *c, uint64_t id, void *data, size_t len,
                      int own, int flags);

/* ---- kept.c (rt.lock held unless said) ---- */
struct kept *kept_new(int from, uint64_t id); /* no lock */
int kept_put(struct kept *k);                 /* -1 out of memory */
struct kept *kept_find(int from, uint64_t id);
struct kept *kept_take(int from, uint64_t id);
void kept_free(struct kept *k);
/* The call of k ran (takes rt.lock): its result or failure is kept. */
void kept_finish(struct kept *k, dw_reply *r, int rc, int code);
void kept_free_all(void);
/* FETCH (or FREE: drop_only) of a kept result (no lock). */
void call_fetch_kept(struct conn *c, const struct wire_hdr *h, int drop_only);

/* ---- exec.c (rt.lock held) ---- */
void exec_block_begin_locked(void);
void exec_block_end_locked(void);
/* A job from `from` (NULL: local) was queued: some executor will run it. */
void exec_ensure_locked(struct conn *from);

/* ---- refs.c: imported futures, asked of their owner (no lock) ---- */
int imp_wait(dw_future *f, int timeout_ms);
int imp_fetch(dw_future *f, int timeout_ms);
int imp_isready(dw_future *f);
void imp_release(dw_future *f);

/* Registration with the dispatcher (rt_attach). */
void call_attach(void); /* RESULT, DONE, CALL */
void kept_attach(void); /* FETCH, FREE */
void exec_attach(void); /* INTERRUPT */

/* ---- request.c ---- */
void call_answer(struct conn *c, const struct wire_hdr *h, unsigned char *p);

#endif
