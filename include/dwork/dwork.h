/*
 * dwork runtime (libdwork): a master/worker runtime for C modelled on
 * Julia's Distributed.  Process 1 is the master; it adds workers (2, 3, …)
 * through cluster managers and runs registered functions on them.  See
 * docs/runtime.md for the guide and docs/wire-protocol.md for the wire
 * format.
 *
 * Workers run the same executable as the master: dw_init() is the first
 * call of main().  In a worker it joins the cluster, serves calls and
 * exits without returning.
 *
 * The public API in layers: this header (processes, calls, futures,
 * channels, pools, pmap, typed values); dwork/manager.h (the plug-in
 * interface of cluster managers and the managers' options, included
 * here); dwork/events.h (the trace vocabulary, constants only, included
 * here); dwork/trace.h (the tracer, libdwtrace).
 *
 * Errors: every call returns DW_OK (0) or a negative dw_err
 * (dwork/error.h); a call that returns a count, an id or an index
 * returns it as a value >= 0, so `if (r < 0)` tests every call, and
 * `r == DW_EEXITED` names one.  After a failed call,
 * dw_errmsg() gives the calling thread a message naming the cause (for a
 * remote error: the worker id and the function's own message).
 *
 * Threads and blocking: dw_init, dw_init_opts and dw_finalize belong to
 * the main thread, once each.  Every other call may be made from any
 * thread after dw_init, concurrently, and from inside a remote function
 * (a worker function running on an executor: an executor that blocks
 * in a dwork call lets another take the calls that arrive meanwhile).
 * The calls that wait on another process block the calling thread only
 * (never the runtime's I/O thread), each until its reply, a timeout, or
 * the failure of that process (DW_EEXITED at once): dw_remotecall_fetch,
 * dw_remotecall_wait, dw_future_wait/fetch, the channel calls, the pool
 * calls, dw_pmap, dw_everywhere, dw_distributed_for, the waitany/waitall
 * calls, dw_addprocs*, dw_rmprocs, dw_accept_workers and
 * dw_everywhere_load; dw_remotecall, dw_remote_do and dw_spawn wait
 * only while the link is full (flow control).  Those with a _timeout
 * form or a timeout argument fail with DW_ETIMEDOUT past it.  The calls
 * that change the cluster (dw_addprocs*, dw_rmprocs, dw_listen,
 * dw_set_topology, dw_everywhere_load) are the master's.  A dw_future,
 * dw_channel or dw_pool may be shared between threads, but not used
 * after its dw_*_free; a dw_reply belongs to the function it was given
 * to, for the length of that call.
 *
 * Memory the library hands out (results, taken channel values, exported
 * references, packed buffers) is the caller's: release it with dw_free
 * (plain free() works too).
 *
 * Options structs start with `size_t size`: set it to sizeof the struct
 * (or leave it 0, which means this header's layout); a size the library
 * does not know fails the call with DW_EINVAL.
 */
#ifndef DWORK_DWORK_H
#define DWORK_DWORK_H

#include <stddef.h>
#include <stdint.h>

#include <dwork/error.h>
#include <dwork/events.h>
#include <dwork/manager.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- process group ---- */

/* Settings of dw_init_opts; zero means the default. */
typedef struct dw_options {
	/* sizeof(struct ...) as the caller's header has it, or 0 for this
	 * header's layout; a size the library does not know is refused
	 * (DW_EINVAL).  Set it first: `.size = sizeof(dw_options)`. */
	size_t size;
	int procs;                /* local workers to start (default 0) */
	int executors;            /* executor threads per worker (1) */
	int heartbeat_ms;         /* master→worker ping period (1000) */
	int heartbeat_timeout_ms; /* silence that declares a worker dead
	                             (10000) */
	const char *bind_addr;    /* address local workers listen on
	                             ("127.0.0.1") */
	const char *trace;        /* NULL: DWORK_TRACE decides; "0": off;
	                             "1": on in ./<program>.trace; else the
	                             trace directory */
	int clock_sync_ms;        /* period of clock measurements (10000) */
	int no_merge;             /* 1: leave the per-process files unmerged */
	/* The largest frame payload a link carries, in bytes: arguments,
	 * results, channel values (0: DWORK_MAX_PAYLOAD, else 1 GiB; from
	 * 65536 to 4294967283).  Over it a call fails with DW_ETOOBIG and
	 * the link lives on (docs/runtime.md). */
	size_t max_payload;
	int tls; /* 1: every link under TLS 1.3 with a key derived from the
	            cookie; 0: DWORK_TLS decides (docs/runtime.md) */
	/* Flow control of calls (docs/runtime.md, "Flow control"), in
	 * bytes, 0: the environment's DWORK_JOB_QUEUE / DWORK_SEND_QUEUE,
	 * else 256 MiB; at least 1 MiB.  job_queue_bytes: call arguments a
	 * process may have received (or on their way to it) and not yet
	 * run, one pool shared by all its links; send_queue_bytes: bytes
	 * waiting in one link's send queue
	 * past which no call is queued.  A caller past either waits (the
	 * _timeout variants: DW_EAGAIN, DW_ETIMEDOUT).  The master sends
	 * its values to every worker. */
	size_t job_queue_bytes;
	size_t send_queue_bytes;
} dw_options;

/* The id of a registered function in traces: a 32-bit hash of its name
 * (the same in every process). */
DW_API uint32_t dw_function_id(const char *name);

/*
 * The first call of main().  In the master: consumes "-p N", "--procs N",
 * "--procs=N" (N a count or "auto" = one per core) from *argc and *argv, or
 * reads DWORK_PROCS, starts that many local workers, and returns DW_OK.
 * In a worker (started by a cluster manager): joins the master, serves
 * calls until it is removed, the master finishes or dies, then exits the
 * process; it never returns.  Errors (master): DW_EINVAL for a bad -p or
 * DWORK_PROCS value (message names it), DW_ESTATE if called twice, or the
 * error of starting the workers (the master is usable; dw_nworkers() says
 * how many started).
 */
DW_API int dw_init(int *argc, char ***argv);
DW_API int dw_init_opts(int *argc, char ***argv, const dw_options *opts);

/* Removes every worker (they exit), stops the runtime's thread and closes
 * its descriptors; no child process, zombie or descriptor of ours is left.
 * Called by atexit if the program does not.  Returns DW_OK. */
DW_API int dw_finalize(void);

/* This process's id: 1 in the master, 2, 3, … in workers. */
DW_API int dw_myid(void);
/* Number of processes: the master plus its workers. */
DW_API int dw_nprocs(void);
/* Number of workers; 1 with no workers (the master serves as one), as
 * Distributed's nworkers(). */
DW_API int dw_nworkers(void);
/* Writes up to max ids into ids and returns how many there are (ids may
 * be NULL to count).  dw_procs: master and workers.  dw_workers: the
 * workers, or the master alone when there are none. */
DW_API int dw_procs(int *ids, int max);
DW_API int dw_workers(int *ids, int max);

/* ---- adding and removing workers (cluster managers: dwork/manager.h) ---- */

/*
 * Adds n workers with the local manager (processes of this machine
 * running the same executable).  ids (may be NULL) receives the new ids.
 * Returns the number of workers added (n on full success) or a negative
 * dw_err when none started (dw_errmsg names the cause: bad executable,
 * no address line in time, wrong cookie, …).  A partial launch keeps the
 * workers that started, returns their number and names the failure in
 * dw_errmsg; with remove_partial it removes them and returns DW_EIO.
 */
DW_API int dw_addprocs(int n, const dw_local_options *opts, int *ids);

/* Adds n workers through any manager; same results as dw_addprocs. */
DW_API int dw_addprocs_with(const dw_manager *m, int n, int *ids);

/* Removes workers: asks them to exit, waits up to timeout_ms (<= 0: 10 s)
 * then kills the rest.  Operations pending on them fail with DW_EEXITED.
 * Returns DW_OK, or DW_ENOTFOUND if an id is not a worker (the others are
 * still removed). */
DW_API int dw_rmprocs(const int *ids, int n, int timeout_ms);

/* Interrupts the calls running on those workers: an INTERRUPT frame
 * over each link (every manager; the manager is told too).  Running
 * functions see dw_interrupted() return 1; each such call fails for its
 * caller with DW_EINTR, and the worker serves on.  Ctrl-C on the master
 * does this for every worker (a second Ctrl-C ends the program).
 * Returns DW_OK, or DW_ENOTFOUND if an id is not a worker. */
DW_API int dw_interrupt(const int *ids, int n);

/* In a remote function: 1 once an interrupt came while it ran (a call
 * started after it sees 0). */
DW_API int dw_interrupted(void);

/* ---- workers beyond one machine (docs/managers.md) ---- */

/*
 * Adds workers on other machines through the system's OpenSSH client:
 * for each host, count workers run `EXE --dwork-worker ...` there (the
 * remote shell must be POSIX).  The cookie reaches each worker on its
 * stdin through ssh, never on a command line.  Hosts are launched
 * `parallel` at a time; DW_AUTO asks the host for its core count first.
 * ids (may be NULL) receives up to max_ids new ids.  Returns the number
 * of workers added, or a negative dw_err when none started; dw_errmsg
 * names the host and the cause (ssh's own last line of error, the
 * worker's exit, no address line in time, a wrong cookie).  A partial
 * launch keeps the workers that started (see dw_addprocs).  Blocks until
 * every worker joined or failed.
 */
DW_API int dw_addprocs_ssh(const dw_ssh_host *hosts, int nhosts,
                           const dw_ssh_options *opts, int *ids, int max_ids);

/*
 * Adds the workers a machine file lists, through ssh with opts.  Lines:
 * `[count*][user@]host[:port] [bind_addr[:port]]`, count a number or
 * "auto"; blank lines and `# comments` are ignored.  A malformed line
 * fails the whole call with DW_EFORMAT before anything starts, and
 * dw_errmsg says "FILE:LINE: what is wrong".  Otherwise as
 * dw_addprocs_ssh.  dw_init does this for `--machine-file FILE` or
 * DWORK_MACHINE_FILE.
 */
DW_API int dw_addprocs_machinefile(const char *path, const dw_ssh_options *opts,
                                   int *ids, int max_ids);

/*
 * Workers that dial in.  The master listens on addr ("host:port", port 0
 * for any; NULL: "127.0.0.1:0") and writes the address it got, as
 * "host:port", into bound (len bytes, may be NULL).  Any program may then
 * start workers with `EXE --dwork-dial HOST:PORT` and the cookie on its
 * stdin or in `--dwork-cookie-file FILE` (never on a command line); they
 * connect and wait for dw_accept_workers, where the master proves the
 * cookie first and then they do (docs/wire-protocol.md).
 * Returns DW_OK, DW_ESTATE (not the master, or already listening), or the
 * socket's error (the message names the address).
 */
DW_API int dw_listen(const char *addr, char *bound, size_t len);

/*
 * Waits up to timeout_ms (<= 0: 60 s) until n workers have dialled in and
 * joined.  A connection with a wrong cookie, or that says nothing, is
 * closed and logged and takes no id; the wait goes on.  Returns the
 * number that joined (ids receives them, may be NULL), or a negative
 * dw_err when none did (DW_ETIMEDOUT, DW_ESTATE if dw_listen was not
 * called).
 */
DW_API int dw_accept_workers(int n, int timeout_ms, int *ids);

/* Stops listening for workers; those that joined stay.  Returns DW_OK. */
DW_API int dw_listen_close(void);

/*
 * Writes the cluster's cookie and a newline into path, for
 * `--dwork-cookie-file`: a new file of mode 0600 (created O_EXCL |
 * O_NOFOLLOW as PATH.tmp and renamed into place).  An existing file of
 * this user is replaced; a link, or a file another user owns, is refused
 * (DW_EACCES, dw_errmsg says why).  Returns DW_OK or the file's error.
 */
DW_API int dw_write_cookie_file(const char *path);

/*
 * Adds n workers inside a Slurm allocation (salloc, sbatch): one `srun
 * --ntasks=n` job step, one worker per task.  The cookie goes to every
 * task on srun's stdin; the workers' address lines come back on srun's
 * output, and so does everything they print (as "From worker N: ").
 * n <= 0 means $SLURM_NTASKS.  Returns the number added or a negative
 * dw_err: DW_ESTATE outside an allocation (no SLURM_JOB_ID), or srun's
 * failure with its last line of error in dw_errmsg.
 */
DW_API int dw_addprocs_slurm(int n, const dw_slurm_options *opts, int *ids);

/* ---- registered functions ---- */

typedef struct dw_reply dw_reply;

/*
 * A remote function: arg/len are the caller's bytes (valid during the
 * call).  It sets its result with dw_reply_set/dw_reply_take and returns
 * 0, or returns non-zero after dw_reply_error to fail the call.
 */
typedef int (*dw_fn)(const void *arg, size_t len, dw_reply *r);

/* Copies len bytes as the result. */
DW_API int dw_reply_set(dw_reply *r, const void *data, size_t len);
/* Takes a malloc'd buffer as the result (freed by the runtime). */
DW_API int dw_reply_take(dw_reply *r, void *data, size_t len);
/* Sets the error message the caller receives; returns -1 for
 * `return dw_reply_error(r, "...")`. */
DW_API int dw_reply_error(dw_reply *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* As dw_reply_error with the message as it is (no format), for bindings
 * that cannot call a variadic function.  msg NULL means "". */
DW_API int dw_reply_error_str(dw_reply *r, const char *msg);

/* Registers fn under name (copied) in this process.  Workers know the
 * functions registered before dw_init, including by DW_REGISTER, and
 * those of objects loaded with dw_everywhere_load.  After dw_init it is
 * refused (DW_ESTATE, dw_errmsg says what to do instead): a function
 * registered then would be missing on workers already running.
 * Returns DW_OK, DW_EEXIST (name taken by another function), DW_EINVAL,
 * DW_ESTATE. */
DW_API int dw_register(const char *name, dw_fn fn);

/* Registers fn under its own name when the program loads. */
#define DW_REGISTER(fn)                                                        \
	static void __attribute__((constructor)) dw_register_##fn##_(void)     \
	{                                                                      \
		dw_register(#fn, fn);                                          \
	}

/* ---- remote calls ---- */

typedef struct dw_future dw_future;

/*
 * Runs fn(arg) on process pid; the result stays there until fetched.
 * *out is the caller's future (free with dw_future_free).  Returns DW_OK,
 * DW_ENOTFOUND (no such process), DW_EEXITED (removed or dead worker),
 * DW_ETOOBIG (arg over the frame limit).  A call to process 1 from
 * process 1 runs in the calling thread.
 */
DW_API int dw_remotecall(int pid, const char *fn, const void *arg, size_t len,
                         dw_future **out);
/* As dw_remotecall, waiting at most timeout_ms for room on a full link
 * (flow control; < 0: no limit): DW_ETIMEDOUT, then nothing was sent. */
DW_API int dw_remotecall_timeout(int pid, const char *fn, const void *arg,
                                 size_t len, dw_future **out, int timeout_ms);

/*
 * Runs fn(arg) on pid and waits for its result, in one round trip;
 * nothing stays behind.  *res (dw_free it) and *reslen
 * receive it.  Errors: those of dw_remotecall, DW_EREMOTE (the function
 * failed or is not registered; dw_errmsg has the worker id and message),
 * DW_EEXITED (the worker died).  The _timeout variant also gives
 * DW_ETIMEDOUT (the call is abandoned, its result discarded).
 */
DW_API int dw_remotecall_fetch(int pid, const char *fn, const void *arg,
                               size_t len, void **res, size_t *reslen);
DW_API int dw_remotecall_fetch_timeout(int pid, const char *fn, const void *arg,
                                       size_t len, void **res, size_t *reslen,
                                       int timeout_ms);

/* Runs fn(arg) on pid and waits until it has run; the result stays there
 * (fetch it through *out). */
DW_API int dw_remotecall_wait(int pid, const char *fn, const void *arg,
                              size_t len, dw_future **out);
/* As dw_remotecall_wait, or DW_ETIMEDOUT after timeout_ms in all (< 0: no
 * limit); *out is then NULL and the call, if it was sent, is abandoned
 * (its result is freed on the remote side). */
DW_API int dw_remotecall_wait_timeout(int pid, const char *fn, const void *arg,
                                      size_t len, dw_future **out,
                                      int timeout_ms);

/* Runs fn(arg) on pid without waiting or a result; an error is logged on
 * the remote side (and reaches the master's stderr).  It waits only
 * while the link to pid is full (flow control: pid's pool of
 * job_queue_bytes holds calls not yet run).  _timeout: waits at most timeout_ms
 * for room (DW_ETIMEDOUT), 0: not at all (DW_EAGAIN), < 0: as dw_remote_do; a
 * call that returns an error was not sent. */
DW_API int dw_remote_do(int pid, const char *fn, const void *arg, size_t len);
DW_API int dw_remote_do_timeout(int pid, const char *fn, const void *arg,
                                size_t len, int timeout_ms);

/* Waits until the call has completed: DW_OK, or its error. */
DW_API int dw_future_wait(dw_future *f);
/* As dw_future_wait, or DW_ETIMEDOUT after timeout_ms. */
DW_API int dw_future_wait_timeout(dw_future *f, int timeout_ms);
/* 1 when the call has completed (with a result or an error). */
DW_API int dw_future_isready(dw_future *f);
/*
 * The result: waits, then fetches it from the remote process the first
 * time (which frees the remote copy) and caches it.  *res points into the
 * future (valid until dw_future_free).  Errors as dw_future_wait.
 */
DW_API int dw_future_fetch(dw_future *f, const void **res, size_t *len);
DW_API int dw_future_fetch_timeout(dw_future *f, const void **res, size_t *len,
                                   int timeout_ms);
/* Frees the future, and the remote result if it was never fetched. */
DW_API void dw_future_free(dw_future *f);

/* The calling thread's message for its last failed dw_ call ("" if
 * none), and the process that caused it (0 if local). */
DW_API const char *dw_errmsg(void);
DW_API int dw_errpid(void);

/* Releases memory the library handed out: results (dw_remotecall_fetch,
 * dw_channel_take/fetch), exported references, packed buffers, what
 * dw_unpack allocated, a dw_result's data.  It is free() underneath, so
 * free() works too; dw_free is the documented way, and the one a
 * binding whose allocator is not the C library's must use.  NULL is
 * ignored.  (Futures, channels, pools and pmap results keep their own
 * dw_*_free.) */
DW_API void dw_free(void *p);

/* ==================================================================== */
/* ---- channels, pools, pmap, references, everywhere (docs/runtime.md,
 *      "Programs": issue 7) ---- */

/* ---- remote channels ---- */

typedef struct dw_channel dw_channel;

/*
 * Creates a channel on process pid (this process too) holding at most
 * capacity values (0 means 1); values are byte buffers.  *out is this
 * process's reference (dw_channel_free).  The channel lives while some
 * process holds a reference.  Errors: DW_ENOTFOUND, DW_EEXITED (pid),
 * DW_EACCES (a worker in the master-worker topology naming another
 * worker), DW_ENOMEM.
 */
DW_API int dw_channel_new(int pid, size_t capacity, dw_channel **out);
/* The _timeout forms of calls whose plain form waits up to 30 s for the
 * owner's answer: at most timeout_ms (< 0: no limit), else DW_ETIMEDOUT
 * (nothing was created, closed or held). */
DW_API int dw_channel_new_timeout(int pid, size_t capacity, dw_channel **out,
                                  int timeout_ms);

/*
 * Puts a copy of len bytes at the end; waits while the channel is full.
 * Errors: DW_ECLOSED (closed), DW_EEXITED (its owner died: every blocked
 * operation fails at once), DW_ETIMEDOUT (the _timeout variant: nothing
 * was put).
 */
DW_API int dw_channel_put(dw_channel *ch, const void *data, size_t len);
DW_API int dw_channel_put_timeout(dw_channel *ch, const void *data, size_t len,
                                  int timeout_ms);
/*
 * Takes the oldest value; waits while the channel is empty.  *data is
 * malloc'd (dw_free it).  Errors as put; DW_ECLOSED once it is closed and
 * empty.  A timed-out take took nothing.
 */
DW_API int dw_channel_take(dw_channel *ch, void **data, size_t *len);
DW_API int dw_channel_take_timeout(dw_channel *ch, void **data, size_t *len,
                                   int timeout_ms);
/* As take, but a copy: the value stays in the channel. */
DW_API int dw_channel_fetch(dw_channel *ch, void **data, size_t *len);
DW_API int dw_channel_fetch_timeout(dw_channel *ch, void **data, size_t *len,
                                    int timeout_ms);
/* Waits until a value is there (DW_OK) or as take's errors. */
DW_API int dw_channel_wait(dw_channel *ch);
DW_API int dw_channel_wait_timeout(dw_channel *ch, int timeout_ms);
/* 1 when a value is there, 0 when not, a negative dw_err on failure. */
DW_API int dw_channel_isready(dw_channel *ch);
DW_API int dw_channel_isready_timeout(dw_channel *ch, int timeout_ms);
/* Closes it: puts fail with DW_ECLOSED, takes get what is left, then
 * DW_ECLOSED; blocked operations are woken.  Returns DW_OK or an error
 * reaching the owner. */
DW_API int dw_channel_close(dw_channel *ch);
DW_API int dw_channel_close_timeout(dw_channel *ch, int timeout_ms);
/* The process that owns it. */
DW_API int dw_channel_owner(const dw_channel *ch);
/* Drops this process's reference (the channel goes with the last). */
DW_API void dw_channel_free(dw_channel *ch);

/* ---- references that travel ---- */

/*
 * A channel or future reference as bytes for process `to`, to send it
 * there inside a call's argument (whence/where in Distributed's terms).
 * The owner counts `to` as a holder before this returns, so the value
 * lives until every holder released it.  *bytes is malloc'd (dw_free it).
 * A future whose result is already here travels with its value.
 * Errors: DW_EINVAL, DW_EEXITED (the owner died), DW_ENOTFOUND (the
 * remote result is gone: it was fetched or freed), the future's own
 * error.
 */
DW_API int dw_channel_export(dw_channel *ch, int to, void **bytes, size_t *len);
/* As dw_channel_export, waiting at most timeout_ms (< 0: no limit; the
 * plain form: 30 s) for the owner to count the holder. */
DW_API int dw_channel_export_timeout(dw_channel *ch, int to, void **bytes,
                                     size_t *len, int timeout_ms);
DW_API int dw_future_export(dw_future *f, int to, void **bytes, size_t *len);
/*
 * In process `to`: the reference those bytes name, as this process's own
 * (free it with dw_channel_free / dw_future_free, which releases the
 * hold).  An imported future is waited for and fetched from its owner;
 * fetching does not take the value from the other holders.  Errors:
 * DW_EFORMAT (not a reference of that kind), DW_EINVAL (exported to
 * another process).
 */
DW_API int dw_channel_import(const void *bytes, size_t len, dw_channel **out);
DW_API int dw_future_import(const void *bytes, size_t len, dw_future **out);

/* ---- worker pools ---- */

typedef struct dw_pool dw_pool;

/* The default pool: every worker (the master alone when there are none);
 * it follows addprocs and rmprocs.  Not freed by the user. */
DW_API dw_pool *dw_default_pool(void);
/* A pool of the given processes.  Returns DW_OK, DW_EINVAL, DW_ENOMEM. */
DW_API int dw_pool_new(const int *ids, int n, dw_pool **out);
/* Adds a process to a pool made by dw_pool_new. */
DW_API int dw_pool_add(dw_pool *p, int id);
/* Frees a pool (not the default one) and its cached arguments. */
DW_API void dw_pool_free(dw_pool *p);
/* Writes up to max live member ids; returns their number. */
DW_API int dw_pool_workers(dw_pool *p, int *ids, int max);

/*
 * Lends an idle member: waits up to timeout_ms (< 0: forever) until one
 * is idle, marks it busy and returns its id (> 0), or a negative dw_err
 * (DW_ETIMEDOUT, DW_ENOTFOUND for a pool with no live member).
 * dw_pool_put gives it back.
 */
DW_API int dw_pool_take(dw_pool *p, int timeout_ms);
DW_API void dw_pool_put(dw_pool *p, int id);

/* dw_remotecall_fetch on an idle member of the pool (waits for one). */
DW_API int dw_pool_remotecall_fetch(dw_pool *p, const char *fn, const void *arg,
                                    size_t len, void **res, size_t *reslen);
DW_API int dw_pool_remotecall_fetch_timeout(dw_pool *p, const char *fn,
                                            const void *arg, size_t len,
                                            void **res, size_t *reslen,
                                            int timeout_ms);
/* dw_remotecall on an idle member; the member is back in the pool when
 * the call completes.  _timeout: waits at most timeout_ms for an idle
 * member (DW_ETIMEDOUT). */
DW_API int dw_pool_remotecall(dw_pool *p, const char *fn, const void *arg,
                              size_t len, dw_future **out);
DW_API int dw_pool_remotecall_timeout(dw_pool *p, const char *fn,
                                      const void *arg, size_t len,
                                      dw_future **out, int timeout_ms);

/*
 * A large read-only argument for the pool's calls (what Distributed's
 * CachingPool buys): the pool keeps a copy and sends it to each member
 * once, before its first call from this pool, never again.  *handle names
 * it; pass the handle in your arguments and read the bytes in the remote
 * function with dw_cached.  Dropped on the members when the pool is
 * freed.  Returns DW_OK, DW_ENOMEM, DW_ETOOBIG.
 */
DW_API int dw_pool_cache(dw_pool *p, const void *data, size_t len,
                         uint64_t *handle);
/* In a remote function: the cached bytes of handle (valid during the
 * call).  DW_ENOTFOUND when this process has none under that handle. */
DW_API int dw_cached(uint64_t handle, const void **data, size_t *len);

/* ---- pmap ---- */

typedef struct dw_buf {
	const void *data;
	size_t len;
} dw_buf;

/* One result of dw_pmap: the bytes, or an error. */
typedef struct dw_result {
	int err;    /* DW_OK, or the item's error (DW_EREMOTE, DW_EEXITED) */
	int pid;    /* the process that ran it (last tried, on error) */
	void *data; /* malloc'd result; on error the NUL-terminated
	               message */
	size_t len;
} dw_result;

enum dw_on_error {
	DW_PMAP_STOP = 0,     /* the first error fails dw_pmap */
	DW_PMAP_CONTINUE = 1, /* errors are returned in their places */
};

typedef struct dw_pmap_options {
	/* sizeof(struct ...) as the caller's header has it, or 0 for this
	 * header's layout; a size the library does not know is refused
	 * (DW_EINVAL).  Set it first: `.size = sizeof(dw_pmap_options)`. */
	size_t size;
	dw_pool *pool;  /* NULL: the default pool */
	int batch_size; /* items per call; 0: automatic (shrinking as the
	                   items run out) */
	int on_error;   /* enum dw_on_error */
	int max_tries;  /* runs of one item on workers that died before it
	                   fails with DW_EEXITED (0: 4) */
	int timeout_ms; /* whole pmap, <= 0: none */
} dw_pmap_options;

/*
 * Runs registered fn on each of the n inputs over a pool's processes and
 * writes the results into out[0..n) in input order.  Items are handed out
 * in batches as processes become free (dynamic load balancing), a couple
 * of batches in flight per process.  When a process dies, its items run
 * again elsewhere: every result is delivered exactly once, though an item
 * may run more than once.  Returns DW_OK; with DW_PMAP_STOP, the first
 * error (dw_errmsg names the item and process; the other results are
 * still filled or have err DW_ECLOSED for items not run); with
 * DW_PMAP_CONTINUE, DW_OK with errors in place; DW_ETIMEDOUT,
 * DW_ENOTFOUND (no process to run on).  Free with dw_results_free.
 */
DW_API int dw_pmap(const char *fn, const dw_buf *in, size_t n, dw_result *out,
                   const dw_pmap_options *opts);
DW_API void dw_results_free(dw_result *r, size_t n);

/* ---- everywhere, parallel loops, spawn ---- */

/*
 * Runs fn(arg) on every process, the master included, and waits for all.
 * Returns DW_OK, or the first failure's error; dw_errmsg then lists
 * every process that failed ("process 3: ...; process 5: ...") and
 * dw_errpid names the first.  _timeout: DW_ETIMEDOUT after timeout_ms.
 */
DW_API int dw_everywhere(const char *fn, const void *arg, size_t len);
DW_API int dw_everywhere_timeout(const char *fn, const void *arg, size_t len,
                                 int timeout_ms);

/*
 * Combines one part into the accumulated result: *acc (malloc'd, NULL at
 * first) and *acclen; returns 0, or non-zero to fail the loop.
 */
typedef int (*dw_reduce_fn)(void **acc, size_t *acclen, const void *part,
                            size_t partlen, void *ctx);

/*
 * The distributed loop (Distributed's @distributed): splits [lo, hi) into
 * one contiguous range per worker and runs fn on each; fn reads its range
 * and the caller's arg with dw_range_arg.  With reduce, each range's
 * result is combined in range order into *res (malloc'd) and *reslen;
 * without (NULL), the loop just waits for all.  A range whose worker dies
 * runs again elsewhere.  Errors as dw_pmap with DW_PMAP_STOP, or the
 * reducer's failure (DW_EINVAL).
 */
DW_API int dw_distributed_for(const char *fn, int64_t lo, int64_t hi,
                              const void *arg, size_t len, dw_reduce_fn reduce,
                              void *ctx, void **res, size_t *reslen);
/* As dw_distributed_for, or DW_ETIMEDOUT after timeout_ms. */
DW_API int dw_distributed_for_timeout(const char *fn, int64_t lo, int64_t hi,
                                      const void *arg, size_t len,
                                      dw_reduce_fn reduce, void *ctx,
                                      void **res, size_t *reslen,
                                      int timeout_ms);
/* In fn: its range and the loop's argument.  DW_EFORMAT if arg is not a
 * loop's. */
DW_API int dw_range_arg(const void *arg, size_t len, int64_t *lo, int64_t *hi,
                        const void **user, size_t *ulen);

/* dw_remotecall on the next worker of the default pool, round-robin
 * (Distributed's @spawnat :any).  *pid (may be NULL) gets its id. */
DW_API int dw_spawn(const char *fn, const void *arg, size_t len,
                    dw_future **out, int *pid);
/* As dw_spawn, waiting at most timeout_ms for room on a full link. */
DW_API int dw_spawn_timeout(const char *fn, const void *arg, size_t len,
                            dw_future **out, int *pid, int timeout_ms);

/* ---- topology ---- */

enum dw_topology {
	DW_TOPOLOGY_ALL_TO_ALL = 0,    /* workers call each other: links open
	                                  at first use, the higher id dials
	                                  the lower (default) */
	DW_TOPOLOGY_MASTER_WORKER = 1, /* workers talk to the master only; a
	                                  worker-to-worker call fails with
	                                  DW_EACCES */
};

/* Master: sets the topology for links not yet opened.  DW_ESTATE on a
 * worker, DW_EINVAL for an unknown value. */
DW_API int dw_set_topology(int topology);

/* ==================================================================== */
/* ---- typed arguments and results (docs/runtime.md, "Typed
 *      arguments"; issue 18) ---- */

/*
 * Several values travel as one MessagePack array (any MessagePack library
 * reads and writes them).  A format string names them, one letter each,
 * at most 64:
 *
 *   letter  packed from (varargs)          unpacked into
 *   i       int                            int *      (range checked)
 *   l       int64_t                        int64_t *
 *   d       double                         double *   (float32/64)
 *   s       const char *                   char **    (NUL-terminated)
 *   b       const void *, size_t           const void **, size_t *
 *   D       const double *, size_t n       double **, size_t *
 *   L       const int64_t *, size_t n      int64_t **, size_t *
 *   F       dw_future *                    dw_future **  (imported)
 *   C       dw_channel *                   dw_channel ** (imported)
 *
 * A value read under another letter, a count that differs or a truncated
 * buffer fail with DW_EFORMAT and a message naming the position, the
 * expected and the actual type ("argument 2 of 'work': expected float64,
 * got str").  F and C are references (dw_future_export): they travel in
 * call arguments and replies, whose reader is known, not in channel
 * values.  What an unpack allocates (s, D, L and, where said, b) is the
 * caller's to dw_free; references are the caller's to dw_*_free.
 */

/* Packs into *buf (malloc'd) for process `to` (who will unpack the
 * references; 0 when there are none).  DW_OK, DW_EINVAL (bad format, a
 * reference with to 0), DW_ENOMEM, a reference's export error. */
DW_API int dw_pack(int to, void **buf, size_t *len, const char *fmt, ...);
/* Unpacks buf; b points into buf.  DW_OK, DW_EFORMAT, DW_EINVAL. */
DW_API int dw_unpack(const void *buf, size_t len, const char *fmt, ...);

/*
 * In a remote function: unpacks its argument.  Strings and arrays belong
 * to the call (freed when the function returns), b points into arg,
 * references are the function's to free.  Returns 0, or -1 with the
 * call's error set, so that `if (dw_args(r, arg, len, "ld", &n, &x))
 * return -1;` fails the call with the mismatch named.  A future passed
 * where a value letter (i l d s b D L) is read arrives as its value:
 * fetched here (blocking, no limit), it must hold one typed value, read
 * under that letter (b then points into the call's copy); a failed fetch
 * or a mismatch is the call's error, naming the argument.
 */
DW_API int dw_args(dw_reply *r, const void *arg, size_t len, const char *fmt,
                   ...);
/* In a remote function: the result, packed (references for the caller).
 * Returns 0, or -1 with the error set: `return dw_reply_pack(r, "d", x);` */
DW_API int dw_reply_pack(dw_reply *r, const char *fmt, ...);

/*
 * dw_remotecall_fetch with typed values: fmt is "ARGS|RESULTS", the
 * arguments' values first, then pointers for the results ("ld|d", n, x,
 * &y).  A b result is a malloc'd copy.  Errors as dw_remotecall_fetch, or
 * DW_EFORMAT for results that do not match.
 */
DW_API int dw_remotecall_fetchf(int pid, const char *fn, const char *fmt, ...);
/* dw_remotecall, dw_remotecall_wait, dw_remote_do with typed arguments. */
DW_API int dw_remotecallf(int pid, const char *fn, dw_future **out,
                          const char *fmt, ...);
DW_API int dw_remotecall_waitf(int pid, const char *fn, dw_future **out,
                               const char *fmt, ...);
DW_API int dw_remote_dof(int pid, const char *fn, const char *fmt, ...);
/* dw_remotecallf on the next worker, round-robin (@spawnat :any). */
DW_API int dw_spawnf(const char *fn, dw_future **out, const char *fmt, ...);
/* The result of f unpacked (waits and fetches as dw_future_fetch; b
 * points into the future). */
DW_API int dw_future_fetchf(dw_future *f, const char *fmt, ...);
/* A typed value into a channel / out of it (b: a malloc'd copy); no
 * references.  Errors as dw_channel_put / take, DW_EFORMAT. */
DW_API int dw_channel_putf(dw_channel *ch, const char *fmt, ...);
DW_API int dw_channel_takef(dw_channel *ch, const char *fmt, ...);

/*
 * dw_pmap over numbers: fn gets one "d" (or "l") argument and replies
 * one; out[k] is item k's.  Errors as dw_pmap with DW_PMAP_STOP (opts'
 * on_error is ignored), DW_EFORMAT naming the item whose result is not
 * one number of that kind.
 */
DW_API int dw_pmap_f64(const char *fn, const double *in, size_t n, double *out,
                       const dw_pmap_options *opts);
DW_API int dw_pmap_i64(const char *fn, const int64_t *in, size_t n,
                       int64_t *out, const dw_pmap_options *opts);

/* Reducers for dw_distributed_for over parts replied as one number ("l"
 * or "d"): the result is one number, an int64 while every part is one,
 * else a float64 (an int64 sum that overflows fails the loop).  Read it
 * with dw_unpack(res, reslen, "l" or "d", &v). */
DW_API int dw_reduce_sum(void **acc, size_t *acclen, const void *part,
                         size_t partlen, void *ctx);
DW_API int dw_reduce_min(void **acc, size_t *acclen, const void *part,
                         size_t partlen, void *ctx);
DW_API int dw_reduce_max(void **acc, size_t *acclen, const void *part,
                         size_t partlen, void *ctx);

/* ---- waiting on many, local async ---- */

/*
 * Waits until one of fs[0..n) has completed (a result or an error) and
 * returns the lowest such index; NULL entries are skipped, so a caller
 * may clear the ones it has handled.  timeout_ms < 0: no limit.  Returns
 * the index, DW_ETIMEDOUT, or DW_EINVAL (no future given).  The wait is
 * Waiting a message in the trace.
 */
DW_API int dw_future_waitany(dw_future *const *fs, int n, int timeout_ms);
/* Waits until every one has completed: DW_OK, the first failure's error
 * (its message set; the others are still waited for), or DW_ETIMEDOUT
 * (timeout_ms < 0: no limit). */
DW_API int dw_future_waitall(dw_future *const *fs, int n, int timeout_ms);
/* The same for channels: ready = a value is there (dw_channel_isready;
 * a closed, empty channel never is).  Each owner is asked in turn, then
 * the caller sleeps 1 ms, doubling to 16 ms, before asking again (a
 * channel's owner does not tell its waiters).  waitany returns the index,
 * DW_ETIMEDOUT, DW_EINVAL, or a channel's error (DW_EEXITED). */
DW_API int dw_channel_waitany(dw_channel *const *chs, int n, int timeout_ms);
DW_API int dw_channel_waitall(dw_channel *const *chs, int n, int timeout_ms);

/* Runs registered fn(arg) on a thread of this process (an executor) and
 * returns at once; *out is its future (Julia's @async).  Typed:
 * dw_asyncf. */
DW_API int dw_async(const char *fn, const void *arg, size_t len,
                    dw_future **out);
DW_API int dw_asyncf(const char *fn, dw_future **out, const char *fmt, ...);

/* ---- loading code everywhere (@everywhere include) ---- */

/*
 * Loads the shared object at path (dlopen, RTLD_NOW | RTLD_GLOBAL) in
 * every process, the master first, and in every worker that joins later,
 * before dw_addprocs returns it.  The object's functions register
 * themselves from its constructors (DW_REGISTER); if it defines
 * `int dw_load_init(void)` that runs next, once per process, and a
 * non-zero return fails the load there.  As Julia's include, the file is
 * expected at the same path on every host.  Returns DW_OK, or the first
 * failure's error (the master's own: DW_ENOENT, DW_EIO; a worker's:
 * DW_EREMOTE), with dw_errmsg naming each process that failed and why:
 * "worker 3: on host h: /x/y.so is missing (...)", or the loader's own
 * message (dlerror); the master failing, no worker is asked.  A worker that
 * joins later and fails to load is removed, and dw_addprocs says so.  Master
 * only (DW_ESTATE).
 */
DW_API int dw_everywhere_load(const char *path);
/* As dw_everywhere_load, waiting at most timeout_ms in all (< 0: no
 * limit) for the workers; one that does not answer in time fails the
 * load with DW_ETIMEDOUT (it may still load the object later). */
DW_API int dw_everywhere_load_timeout(const char *path, int timeout_ms);

/* ==================================================================== */
/* ---- short programs: functions, reductions, host names
 *      (docs/runtime.md, "Short programs"; issue 18; src/runtime/easy.c)
 *      ---- */

/*
 * Defines a remote function and registers it under its own name, as
 * Julia's `@everywhere function`: the body that follows is a dw_fn whose
 * parameters are named arg, len and r (any of them may go unused).
 *
 *   DW_FUNCTION(work)
 *   {
 *           double t;
 *           if (dw_args(r, arg, len, "d", &t))
 *                   return -1;
 *           return dw_reply_pack(r, "d", 2 * t);
 *   }
 */
#define DW_FUNCTION(name)                                                      \
	static int name(const void *arg, size_t len, dw_reply *r);             \
	DW_REGISTER(name)                                                      \
	static int name(const void *arg __attribute__((unused)),               \
	                size_t len __attribute__((unused)),                    \
	                dw_reply *r __attribute__((unused)))

/*
 * A remote function with typed parameters: DW_FUNCTIONF(name, letter,
 * param, ...) takes one to four (letter, name) pairs, the letters of
 * dw_args, and the body that follows sees each as a parameter of the
 * letter's type (and r, the reply; the parameters must not be called
 * arg, len or r).  The argument is unpacked with dw_args before the body
 * runs, so a mismatch fails the call with the position and both types
 * named, and the body cannot read a value under the wrong C type: the
 * letter declares it.
 *
 *   letter  parameter type        letter  parameter type
 *   i       int                   b       dw_bytes   (.p, .n)
 *   l       int64_t               D       dw_doubles (.v, .n)
 *   d       double                L       dw_int64s  (.v, .n)
 *   s       char *                F / C   dw_future * / dw_channel *
 *
 *   DW_FUNCTIONF(scale, D, v, d, k)
 *   {
 *           for (size_t i = 0; i < v.n; i++)
 *                   v.v[i] *= k;
 *           return dw_reply_pack(r, "D", v.v, v.n);
 *   }
 *
 * Ownership is dw_args's: strings and arrays belong to the call, b
 * points into the argument, references are the body's to free.
 */
typedef struct dw_bytes {
	const void *p;
	size_t n;
} dw_bytes;
typedef struct dw_doubles {
	double *v;
	size_t n;
} dw_doubles;
typedef struct dw_int64s {
	int64_t *v;
	size_t n;
} dw_int64s;

#define DW_FUNCTIONF(name, ...)                                                \
	DW_FF_PICK_(__VA_ARGS__, DW_FF4_, DW_FF_ODD_, DW_FF3_, DW_FF_ODD_,     \
	            DW_FF2_, DW_FF_ODD_, DW_FF1_, DW_FF_ODD_, )                \
	(name, __VA_ARGS__)

/* What DW_FUNCTIONF is made of; not for direct use. */
#define DW_FF_PICK_(_1, _2, _3, _4, _5, _6, _7, _8, m, ...) m
#define DW_FF_ODD_(name, ...)                                                  \
	_Static_assert(0, "DW_FUNCTIONF(" #name                                \
	                  ", ...) takes (letter, name) pairs, one to four")
#define DW_T_i    int
#define DW_T_l    int64_t
#define DW_T_d    double
#define DW_T_s    char *
#define DW_T_b    dw_bytes
#define DW_T_D    dw_doubles
#define DW_T_L    dw_int64s
#define DW_T_F    dw_future *
#define DW_T_C    dw_channel *
#define DW_P_i(x) &x
#define DW_P_l(x) &x
#define DW_P_d(x) &x
#define DW_P_s(x) &x
#define DW_P_b(x) &x.p, &x.n
#define DW_P_D(x) &x.v, &x.n
#define DW_P_L(x) &x.v, &x.n
#define DW_P_F(x) &x
#define DW_P_C(x) &x
#define DW_FF_U_  __attribute__((unused))
#define DW_FF_HEAD_(name, ...)                                                 \
	static int name##_dw_typed(dw_reply *r DW_FF_U_, __VA_ARGS__);         \
	DW_FUNCTION(name)
#define DW_FF_TAIL_(name, ...)                                                 \
	static int name##_dw_typed(dw_reply *r DW_FF_U_, __VA_ARGS__)
#define DW_FF1_(name, t1, a1)                                                  \
	DW_FF_HEAD_(name, DW_T_##t1 a1)                                        \
	{                                                                      \
		DW_T_##t1 dw_a1_;                                              \
		if (dw_args(r, arg, len, #t1, DW_P_##t1(dw_a1_)))              \
			return -1;                                             \
		return name##_dw_typed(r, dw_a1_);                             \
	}                                                                      \
	DW_FF_TAIL_(name, DW_T_##t1 a1 DW_FF_U_)
#define DW_FF2_(name, t1, a1, t2, a2)                                          \
	DW_FF_HEAD_(name, DW_T_##t1 a1, DW_T_##t2 a2)                          \
	{                                                                      \
		DW_T_##t1 dw_a1_;                                              \
		DW_T_##t2 dw_a2_;                                              \
		if (dw_args(r, arg, len, #t1 #t2, DW_P_##t1(dw_a1_),           \
		            DW_P_##t2(dw_a2_)))                                \
			return -1;                                             \
		return name##_dw_typed(r, dw_a1_, dw_a2_);                     \
	}                                                                      \
	DW_FF_TAIL_(name, DW_T_##t1 a1 DW_FF_U_, DW_T_##t2 a2 DW_FF_U_)
#define DW_FF3_(name, t1, a1, t2, a2, t3, a3)                                  \
	DW_FF_HEAD_(name, DW_T_##t1 a1, DW_T_##t2 a2, DW_T_##t3 a3)            \
	{                                                                      \
		DW_T_##t1 dw_a1_;                                              \
		DW_T_##t2 dw_a2_;                                              \
		DW_T_##t3 dw_a3_;                                              \
		if (dw_args(r, arg, len, #t1 #t2 #t3, DW_P_##t1(dw_a1_),       \
		            DW_P_##t2(dw_a2_), DW_P_##t3(dw_a3_)))             \
			return -1;                                             \
		return name##_dw_typed(r, dw_a1_, dw_a2_, dw_a3_);             \
	}                                                                      \
	DW_FF_TAIL_(name, DW_T_##t1 a1 DW_FF_U_, DW_T_##t2 a2 DW_FF_U_,        \
	            DW_T_##t3 a3 DW_FF_U_)
#define DW_FF4_(name, t1, a1, t2, a2, t3, a3, t4, a4)                          \
	DW_FF_HEAD_(name, DW_T_##t1 a1, DW_T_##t2 a2, DW_T_##t3 a3,            \
	            DW_T_##t4 a4)                                              \
	{                                                                      \
		DW_T_##t1 dw_a1_;                                              \
		DW_T_##t2 dw_a2_;                                              \
		DW_T_##t3 dw_a3_;                                              \
		DW_T_##t4 dw_a4_;                                              \
		if (dw_args(r, arg, len, #t1 #t2 #t3 #t4, DW_P_##t1(dw_a1_),   \
		            DW_P_##t2(dw_a2_), DW_P_##t3(dw_a3_),              \
		            DW_P_##t4(dw_a4_)))                                \
			return -1;                                             \
		return name##_dw_typed(r, dw_a1_, dw_a2_, dw_a3_, dw_a4_);     \
	}                                                                      \
	DW_FF_TAIL_(name, DW_T_##t1 a1 DW_FF_U_, DW_T_##t2 a2 DW_FF_U_,        \
	            DW_T_##t3 a3 DW_FF_U_, DW_T_##t4 a4 DW_FF_U_)

/*
 * In a remote function: waits for future f (one that came in the
 * arguments, `fetch(r)` inside a Julia closure), fetches its value and
 * unpacks it as dw_args does: strings and arrays belong to the call, b
 * points into f (valid until f is freed); f stays the function's to
 * free.  Returns 0, or -1 with the call's error set, naming the function
 * and what failed ("plus1: fetching its future: ..." or "fetched value
 * 1 of 'plus1': expected float64 array, got str").
 */
DW_API int dw_args_fetch(dw_reply *r, dw_future *f, const char *fmt, ...);

/* The operators of a distributed reduction. */
enum dw_op {
	DW_SUM = 1, /* + (an int64 sum that overflows fails the loop) */
	DW_MIN = 2,
	DW_MAX = 3,
};

/*
 * Julia's `@distributed (op) for i = lo:hi-1 ... end` with its value:
 * runs registered fn over [lo, hi) split into one range per worker (as
 * dw_distributed_for), combines the ranges' results with op and stores
 * the number in *out.  fn is a range function replying one number, most
 * simply one defined by DW_FOR_I64 / DW_FOR_F64 (which get op from the
 * loop).  An empty range sums to 0; its min or max is DW_EINVAL.
 * Returns DW_OK, DW_EINVAL (bad op, no out, hi < lo), DW_EFORMAT (fn's
 * reply is not one number of that kind: the _i64 call needs int64s, the
 * _f64 call takes either), or dw_distributed_for's errors.  Blocks until
 * every range has run.
 */
DW_API int dw_distributed_reduce_i64(const char *fn, int64_t lo, int64_t hi,
                                     int op, int64_t *out);
DW_API int dw_distributed_reduce_f64(const char *fn, int64_t lo, int64_t hi,
                                     int op, double *out);

/*
 * Defines and registers a range function `name` from the body of a loop:
 * the function that follows returns the value of one index i, and the
 * range's values are combined with the loop's op (DW_SUM when run by
 * dw_distributed_for, which passes none):
 *
 *   DW_FOR_I64(heads, i)
 *   {
 *           return coin(i);
 *   }
 *   ... dw_distributed_reduce_i64("heads", 1, 1000001, DW_SUM, &n);
 *
 * An interrupt (dw_interrupt) stops the range within 2^20 indices.
 */
#define DW_FOR_I64(name, i)                                                    \
	static int64_t name##_dw_body(int64_t i);                              \
	DW_FUNCTION(name)                                                      \
	{                                                                      \
		return dw_for_i64(arg, len, r, name##_dw_body);                \
	}                                                                      \
	static int64_t name##_dw_body(int64_t i)
#define DW_FOR_F64(name, i)                                                    \
	static double name##_dw_body(int64_t i);                               \
	DW_FUNCTION(name)                                                      \
	{                                                                      \
		return dw_for_f64(arg, len, r, name##_dw_body);                \
	}                                                                      \
	static double name##_dw_body(int64_t i)

/* What DW_FOR_I64 / DW_FOR_F64 run: reads the range and the op from
 * arg, combines body(i) over it and replies "l" / "d".  Returns 0, or -1
 * with the call's error set (not a loop's argument, an overflow, an
 * interrupt, an empty range under min or max). */
DW_API int dw_for_i64(const void *arg, size_t len, dw_reply *r,
                      int64_t (*body)(int64_t));
DW_API int dw_for_f64(const void *arg, size_t len, dw_reply *r,
                      double (*body)(int64_t));

/*
 * Julia's `remotecall_fetch(gethostname, pid)`: the host name of process
 * pid (gethostname() there; this process's own for dw_myid()), as a
 * NUL-terminated string in buf.  A remote call to the runtime's built-in
 * function "dwork_hostname", which every process has.  Returns DW_OK,
 * DW_EINVAL (no buf), DW_ETOOBIG (the name does not fit in len bytes:
 * 256 always do), or dw_remotecall_fetch's errors.  Blocks for one round
 * trip.
 */
DW_API int dw_hostname(int pid, char *buf, size_t len);

/*
 * For programs that stop at their first error, as a Julia script stops
 * at an uncaught exception: when failed is non-zero, prints "PROGRAM:
 * dw_errmsg()" on stderr and exits with status 1, dw_finalize running
 * from atexit so no worker is left behind; when it is 0, returns.  The
 * argument is a condition, so one form serves every call:
 *
 *   dw_exit_if(dw_init(&argc, &argv));
 *   dw_exit_if(dw_addprocs(4, NULL, NULL) != 4);
 *
 * Meant for a program's main thread.  Called in a worker it ends the
 * worker (the master sees it exit): remote functions return their
 * errors to the caller instead (dw_reply_error).
 */
DW_API void dw_exit_if(int failed);

/*
 * A program's main, with dw_init before the body and dw_finalize after
 * it, as a Julia script needs neither:
 *
 *   DW_MAIN(argc, argv)
 *   {
 *           dw_exit_if(dw_addprocs(4, NULL, NULL) != 4);
 *           ...
 *   }
 *
 * defines main(), which calls dw_main: dw_init(&argc, &argv) (in a
 * worker it joins the cluster and never returns; a failure is
 * dw_exit_if's: the message on stderr, status 1), then the body with the
 * arguments dw_init left (-p N, --machine-file F removed), then
 * dw_finalize.  main returns 0, or 1 when dw_finalize failed (its
 * message on stderr).  The body returns nothing: it stops at an error
 * with dw_exit_if, or ends the program with exit(status) (dw_finalize
 * runs from atexit).  A program that handles its errors itself writes
 * main, dw_init and dw_finalize as before.
 */
#define DW_MAIN(argc, argv)                                                    \
	static void dw_main_body_(int argc DW_FF_U_, char **argv DW_FF_U_);    \
	int main(int dw_argc_, char **dw_argv_)                                \
	{                                                                      \
		return dw_main(&dw_argc_, &dw_argv_, dw_main_body_);           \
	}                                                                      \
	static void dw_main_body_(int argc DW_FF_U_, char **argv DW_FF_U_)
DW_API int dw_main(int *argc, char ***argv,
                   void (*body)(int argc, char **argv));

/*
 * Julia's `for w in workers()` without an array of ids:
 *
 *   for (int w = dw_worker_next(0); w > 0; w = dw_worker_next(w))
 *
 * Returns the smallest worker id above after, or 0 when there is none;
 * with no workers, 1 (the master, as dw_workers lists it) for after < 1.
 * Each step reads the list as it is then: a worker that left is skipped,
 * one that joined with a higher id is seen.  DW_ENOMEM (negative, which
 * ends the loop) when a list over 256 ids cannot be copied.  Never
 * blocks on another process.
 */
DW_API int dw_worker_next(int after);

/*
 * Julia's `println(fetch(f))`: waits for f, fetches its typed value and
 * prints it on stdout as Julia's println would, then a newline, in one
 * write, flushed: integers, floats in Julia's shortest form (1.5, 2.0,
 * 1.0e6), strings (quoted inside arrays), arrays as [1.5, 2.5], bytes as
 * UInt8[0x01], a result of several values as a tuple (1, "a"), none as
 * nothing.  f stays the caller's.  Returns DW_OK, DW_EINVAL (no f),
 * DW_EFORMAT (the value is not typed values: a result of the byte API),
 * DW_EIO (stdout failed), or dw_future_fetch's errors.  Blocks until f
 * is ready.
 */
DW_API int dw_future_println(dw_future *f);

/*
 * The runtime's Base.  Every process registers these functions, which
 * Distributed programs call on other processes from Julia's Base, under
 * the names below (typed arguments; the runtime's own names start with
 * "dwork"; they appear under these names in traces):
 *
 *   "dwork_hostname"  ()      -> s   gethostname (dw_hostname)
 *   "dwork_println"   (any…)  -> ()  println(args...): prints them on
 *                                    that process's stdout, strings bare
 *   "dwork_fill"      (x, i)  -> D/L fill(x, n): n copies of x, a
 *                                    float64 (D) or an int64 (L),
 *                                    0 <= n <= 2^26
 *   "dwork_sum"       (D/L)   -> d/l sum(v): an int64 sum (overflow is
 *                                    an error) or a float64 one
 *
 *   dw_remotecallf(2, "dwork_fill", &f, "di", 0.5, 4);    [0.5, 0.5, ...]
 *   dw_remote_dof(3, "dwork_println", "s", "hello");
 */

/* ---- end of short programs ---- */

/* ---- watching a running program: regions (dwork/live.h) ---- */
#include <dwork/live.h>

#ifdef __cplusplus
}
#endif
#endif
