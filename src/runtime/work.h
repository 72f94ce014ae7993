/*
 * Internals of the parts users write programs with: requests to an
 * object's owner (REQ / ANSWER / CANCEL frames), remote channels, holder
 * counting of references, worker-to-worker links, pools, pmap.
 * docs/wire-protocol.md describes the frames, docs/runtime.md the API.
 */
#ifndef DW_RUNTIME_WORK_H
#define DW_RUNTIME_WORK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <dwork/dwork.h>

struct conn;
struct wire_hdr;

/* The carriers (pmap.c): registered functions that run the user's, whose
 * names they carry first in their argument (u16 length, name), marked in
 * the trace as DW_EV_BATCH while the user's runs carry their own names
 * (call_run).  Every "dwork:…" name is one. */
#define PMAP_FN       "dwork:pmap"
#define FOR_FN        "dwork:for"
#define EVERYWHERE_FN "dwork:everywhere"
#define SPAWN_FN      "dwork:spawn"

/* A carrier's argument (pmap.c): u16 length and name of fn, then arg;
 * malloc'd, or NULL with the reason set. */
void *work_carry(const char *fn, const void *arg, size_t len, size_t *out);

/* ---- requests (request.c: the requester's and the owner's side) ---- */

enum req_op {
	REQ_CH_NEW = 1, /* u64 capacity -> u64 channel id */
	REQ_CH_PUT,     /* u64 id, value -> empty (parked while full) */
	REQ_CH_TAKE,    /* u64 id -> value (parked while empty) */
	REQ_CH_FETCH,   /* u64 id -> copy of the oldest value (parked) */
	REQ_CH_READY,   /* u64 id -> u8 */
	REQ_CH_WAIT,    /* u64 id -> empty once a value is there (parked) */
	REQ_CH_CLOSE,   /* u64 id -> empty */
	REQ_HOLD,       /* u8 kind, u32 whence, u64 id, u32 holder -> empty */
	REQ_RELEASE,    /* u8 kind, u32 whence, u64 id; no answer */
	REQ_FUT_FETCH,  /* u32 whence, u64 id -> the result (parked) */
	REQ_FUT_WAIT,   /* u32 whence, u64 id -> empty (parked) */
	REQ_FUT_READY,  /* u32 whence, u64 id -> u8 */
	REQ_WHERE,      /* to the master: u32 pid -> its address, or ""
	                   when it was told to dial the asker */
	REQ_DIAL,       /* master -> worker: u32 pid, address; no answer */
	REQ_GONE,       /* master -> worker: u32 pid; no answer */
	REQ_PROCS,      /* to the master: -> u32 ids of live processes */
	REQ_CACHE_PUT,  /* u64 handle, bytes; no answer */
	REQ_CACHE_DROP, /* u64 handle; no answer */
	REQ_OP_MAX = REQ_CACHE_DROP,
};

#define REQ_PREFIX 4u /* u8 op, u8 0, u16 0 before the op's body */

enum ref_kind { REF_CHANNEL = 1, REF_FUTURE = 2 };

/* A local requester waiting for its answer. */
struct lwait {
	pthread_cond_t cv;
	int done;
	int status;
	void *data; /* the answer (malloc'd) or the error message */
	size_t len;
};

/* Where a request came from and where its answer goes. */
struct req_src {
	struct conn *c;   /* the requester's link, or NULL when local */
	struct lwait *lw; /* a local requester */
	uint64_t id;      /* request id, 0 when no answer is wanted */
	int pid;          /* the requester's process id */
};

/* Answers a request with a copy of data (status DW_OK), with data taken
 * over (malloc'd), or with an error and a message. */
void req_answer(const struct req_src *s, const void *data, size_t len);
void req_answer_take(const struct req_src *s, void *data, size_t len);
void req_answer_err(const struct req_src *s, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 1 when both name the same request. */
int req_same(const struct req_src *a, const struct req_src *b);

/* A REQ frame arrived (p: the whole payload, taken over). */
void req_on_frame(struct conn *c, uint64_t id, unsigned char *p, size_t len);
/* A request of this process to itself (p taken over). */
void req_on_local(const struct req_src *s, unsigned char *p, size_t len);
/* A CANCEL frame arrived, or a local request timed out. */
void req_on_cancel(int pid, uint64_t id);
void req_attach(void); /* REQ, ANSWER, CANCEL frames */

/*
 * Sends request op (body: the op's fixed part, data: bytes after it) to
 * pid and waits up to timeout_ms (< 0: forever) for the answer, which
 * *res (malloc'd; may be NULL when not wanted) and *reslen receive.  On
 * timeout the request is withdrawn; if the owner had already answered,
 * that answer is returned, so nothing is lost or done twice.  Errors: the
 * owner's status (dw_errmsg has its message), DW_EEXITED, DW_ENOTFOUND,
 * DW_ETIMEDOUT.  Runs the handler in this thread when pid is this
 * process.
 */
int req_call(int pid, int op, const void *body, size_t blen, const void *data,
             size_t dlen, int timeout_ms, void **res, size_t *reslen);
/* Sends a request that wants no answer. */
int req_post(int pid, int op, const void *body, size_t blen, const void *data,
             size_t dlen);
/* Sends a request with no answer on a given link (I/O thread safe). */
int req_post_conn(struct conn *c, int op, const void *body, size_t blen,
                  const void *data, size_t dlen);

/* Waits on a local request (lw_lock); 0 done, DW_ETIMEDOUT. */
int lw_wait(struct lwait *lw, int timeout_ms);

/* ---- registry.c, send.c, future.c, exec.c, kept.c: calls ---- */

/* Runs registered function name; *res (malloc'd) or the error in err. */
int call_invoke(const char *name, size_t nlen, const void *arg, size_t len,
                void **res, size_t *reslen, char *err, size_t errlen);

/* A completion notice: fn(ctx, f) runs (rt.lock held, so it must only
 * take leaf locks) when a future started with call_async completes. */
typedef void (*call_notify_fn)(void *ctx, dw_future *f);
/* Starts fn(arg) on pid (FETCH mode, or KEEP) with a future that
 * notifies; a call to this process runs (and notifies) at once. */
int call_async(int pid, int keep, const char *fn, const void *arg, size_t len,
               call_notify_fn notify, void *ctx, dw_future **out);
/* Starts fn(arg) on pid in a WIRE_MODE_*; waits for room on the link at
 * most send_ms (< 0: no limit) as flow control asks.  *out is the
 * caller's future.  DW_OK or the error of sending. */
int call_start(int pid, int mode, const char *fn, const void *arg, size_t len,
               dw_future **out, int send_ms);
/* For a completed future: its error (DW_OK), result and process. */
int call_result(dw_future *f, const void **res, size_t *len);
int call_future_pid(const dw_future *f);
/* Takes the result buffer out of a completed FETCH-mode future. */
void *call_take_result(dw_future *f, size_t *len);

/* Executors: a thread about to block in dwork lets another executor run
 * the jobs queued meanwhile (so nested calls cannot deadlock). */
void exec_block_begin(void);
void exec_block_end(void);

/* The owner's side of future references. */
void call_on_ref_req(const struct req_src *s, int op, const unsigned char *b,
                     size_t len);
void call_on_ref_cancel(int pid, uint64_t id);
void call_refs_gone(int pid);
size_t call_kept_count(void); /* results kept here (tests) */

/* ---- channel.c (owner side) ---- */
void chan_on_req(const struct req_src *s, int op, unsigned char *p, size_t off,
                 size_t len);
void chan_on_cancel(int pid, uint64_t id);
void chan_gone(int pid);
void chan_shutdown(void);
int chan_count(void); /* channels this process owns (tests) */

/* ---- refs.c: holders, and reference bytes ---- */

struct holders {
	int *pid, *cnt;
	int n, cap;
	int total;
};
int holders_add(struct holders *h, int pid, int n);
/* Returns 0, or -1 when pid held nothing. */
int holders_del(struct holders *h, int pid);
/* Drops every hold of pid. */
void holders_drop(struct holders *h, int pid);
void holders_free(struct holders *h);

#define REF_BYTES 32u /* fixed part of a reference's bytes */
struct ref {
	int kind;   /* REF_CHANNEL, REF_FUTURE; +value forms below */
	int where;  /* the owner */
	int whence; /* futures: the caller */
	uint64_t id;
	int to;        /* the process it was handed to */
	int has_value; /* a future whose value travels with it */
	int err;       /* ... or its error */
	const unsigned char *value;
	size_t vlen;
};
/* Encodes r (and r->value) into malloc'd bytes. */
int ref_encode(const struct ref *r, void **bytes, size_t *len);
/* Decodes and checks bytes meant for this process (err, message). */
int ref_decode(const void *bytes, size_t len, int kind, struct ref *r);

/* ---- peer.c: worker-to-worker links ---- */

/* Worker: starts accepting peers on the listen socket (-1: none). */
void peer_start(int lfd);
/* Worker: the link to pid, dialled or awaited if needed (user threads
 * only).  NULL with *err set (DW_EACCES in the master-worker topology). */
struct conn *peer_conn(int pid, int *err);
/* I/O thread: a connection on the listen socket (a short-lived thread
 * runs its handshake). */
void peer_accept(void);
/* A worker's link to a peer ended. */
void peer_conn_lost(struct conn *c, const char *why);
/* Requests about peers: WHERE (master), DIAL, GONE (workers). */
void peer_on_req(const struct req_src *s, int op, const unsigned char *b,
                 size_t len);
/* A process has gone: every part forgets it through the gone observers
 * (disp_gone, rt.h; peer.c's is first: the master tells the workers). */
void peer_attach(void); /* gone observer; worker: listen-again tick */
int peer_topology(void);
/* Worker: the number of links to other workers ever opened. */
int peer_links(void);

/* ---- pool.c ---- */
void pool_on_req(const struct req_src *s, int op, const unsigned char *b,
                 size_t len);
void pool_gone(int pid);
int pool_cache_count(void); /* cached arguments kept here (tests) */
/* Sends the pool's cached arguments wid lacks (before a call to wid). */
int pool_prepare(dw_pool *p, int wid);
/* The live members of p (malloc'd ids). */
int pool_members(dw_pool *p, int **ids);
/* The live processes (the master's view; asked of it from a worker). */
int work_procs(int **ids, int with_master);

/* ---- shutting down (master) ---- */
void work_shutdown(void);

#endif
