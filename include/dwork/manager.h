/*
 * dwork cluster managers (part of libdwork): the plug-in interface a
 * cluster manager implements (dw_manager, dw_launched), and the option
 * structs of the managers libdwork ships (local, ssh and machine file,
 * Slurm).  dwork/dwork.h includes this header and declares the calls
 * that use them (dw_addprocs, dw_addprocs_with, dw_addprocs_ssh, ...);
 * a manager's own source may include this header alone.  docs/managers.md
 * is the guide.
 *
 * Threads and blocking: the core calls a manager's launch from the
 * thread that called dw_addprocs_with (which waits for it to return);
 * manage and kill from the thread of the call that caused them
 * (dw_launched, dw_rmprocs, dw_interrupt) or from the runtime's I/O
 * thread when a worker is lost.  A callback must return promptly and
 * must not call dw_addprocs* or dw_rmprocs.  dw_launched blocks while
 * the core connects to the worker and authenticates it (bounded by the
 * handshake's timeout); dw_launch_id and dw_launch_cookie never block.
 * All three are valid only during launch, from the launching thread or
 * from threads launch waits for.
 */
#ifndef DWORK_MANAGER_H
#define DWORK_MANAGER_H

#include <stddef.h>

#include <dwork/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * What the core needs to reach one launched worker.  The core allocates
 * it and hands it to the manager, which fills it in.  host stays an
 * inline array: managers write it with snprintf(wc->host, sizeof
 * wc->host, ...), and a pointer in its place would still compile there
 * and silently truncate to sizeof(char *); as the core owns the layout,
 * the array costs bindings nothing (they never allocate one).
 */
typedef struct dw_worker_config {
	int id;         /* assigned by the core before launch */
	char host[256]; /* connect to host:port … */
	int port;
	int fd;             /* … or use this connected socket (dial-in); -1 */
	int pid;            /* local process id when known, else 0 */
	int out_fd, err_fd; /* the worker's stdout/stderr to forward, or -1 */
	void *data;         /* the manager's own per-worker state */
} dw_worker_config;

enum dw_manage_op {
	DW_MANAGE_REGISTER = 1, /* the worker joined */
	DW_MANAGE_DEREGISTER,   /* it is being removed */
	DW_MANAGE_INTERRUPT,    /* dw_interrupt() */
	DW_MANAGE_FINALIZE, /* it has gone: release what the manager holds */
};

typedef struct dw_launch dw_launch; /* the core's side of one launch */

/*
 * Reports one launched worker to the core (called by a manager's launch,
 * from the launching thread).  The core connects to wc->host:wc->port, or
 * takes wc->fd, and authenticates.  Returns DW_OK or the error of joining
 * it (the worker is then killed through the manager).
 */
DW_API int dw_launched(dw_launch *l, dw_worker_config *wc);

/* The id the core assigned to the i-th worker of this launch. */
DW_API int dw_launch_id(const dw_launch *l, int i);
/* The cookie workers must present (to send them on their stdin). */
DW_API const char *dw_launch_cookie(const dw_launch *l);

/*
 * A cluster manager.  launch starts n workers and reports each with
 * dw_launched(); it returns DW_OK if at least one started, else the error
 * naming why.  manage is told of each worker's life (enum dw_manage_op);
 * kill ends a worker that does not leave by itself.  Any callback may be
 * NULL.  self is passed back to each.
 */
typedef struct dw_manager {
	const char *name;
	int (*launch)(void *self, int n, dw_launch *l);
	int (*manage)(void *self, dw_worker_config *wc, int op);
	int (*kill)(void *self, dw_worker_config *wc);
	void *self;
} dw_manager;

/* Options of the local manager; NULL or zero fields mean the defaults. */
typedef struct dw_local_options {
	/* sizeof(struct ...) as the caller's header has it, or 0 for this
	 * header's layout; a size the library does not know is refused
	 * (DW_EINVAL).  Set it first: `.size = sizeof(dw_local_options)`. */
	size_t size;
	const char *exe;         /* default: this executable */
	const char *const *args; /* extra arguments, NULL-terminated */
	const char *dir;         /* working directory */
	const char *const *env;  /* extra "NAME=value" entries */
	const char *bind_addr;   /* default: dw_options.bind_addr */
	int parallel;            /* launched at once (default 8) */
	int launch_timeout_ms;   /* until the address line (10000) */
	int remove_partial;      /* remove the ones that started when
	                            others failed (default: keep) */
} dw_local_options;

/* A worker count meaning "one per core of that host". */
#define DW_AUTO (-1)

/* One host of an ssh launch. */
typedef struct dw_ssh_host {
	const char *host; /* "[user@]host[:port]": ssh destination, port of
	                     its sshd; IPv6 in brackets ("[::1]:2222") */
	int count;        /* workers there: >= 1, DW_AUTO, or 0 for 1 */
	const char *bind; /* "addr[:port]" its workers listen on (port:
	                     the first worker's, the next ones count up),
	                     or NULL for the default (see bind_addr) */
} dw_ssh_host;

/* Options of the ssh manager; NULL or zero fields mean the defaults. */
typedef struct dw_ssh_options {
	/* sizeof(struct ...) as the caller's header has it, or 0 for this
	 * header's layout; a size the library does not know is refused
	 * (DW_EINVAL).  Set it first: `.size = sizeof(dw_ssh_options)`. */
	size_t size;
	const char *ssh;              /* ssh command line, split on blanks
	                                 (default: $DWORK_SSH_COMMAND, else
	                                 "ssh") */
	const char *const *ssh_flags; /* extra ssh arguments, NULL-ended */
	const char *exe;              /* remote executable (default: this
	                                 executable's path) */
	const char *const *args;      /* extra worker arguments, NULL-ended */
	const char *dir;              /* remote working directory */
	const char *const *env;       /* "NAME=value" set for the workers */
	const char *bind_addr;        /* where remote workers listen when a
	                                 host gives no bind address
	                                 (default: the address the ssh
	                                 connection reached) */
	int tunnel;                   /* 1: reach each worker through ssh
	                                 (-W) instead of connecting to it;
	                                 workers then listen on 127.0.0.1 */
	int parallel;                 /* ssh launches at once (default 10) */
	int launch_timeout_ms;        /* until the address line (30000) */
	int remove_partial;           /* as dw_local_options */
} dw_ssh_options;

/* Options of the Slurm manager; NULL or zero fields mean the defaults. */
typedef struct dw_slurm_options {
	/* sizeof(struct ...) as the caller's header has it, or 0 for this
	 * header's layout; a size the library does not know is refused
	 * (DW_EINVAL).  Set it first: `.size = sizeof(dw_slurm_options)`. */
	size_t size;
	const char *srun;              /* srun command (default "srun") */
	const char *const *srun_flags; /* extra srun arguments, NULL-ended
	                                  (--nodes, --partition, ...) */
	const char *exe;               /* default: this executable */
	const char *const *args;       /* extra worker arguments */
	const char *bind_addr;         /* default: each node's Slurm name
	                                  ($SLURMD_NODENAME) */
	int launch_timeout_ms;         /* until every address line (60000) */
	int remove_partial;            /* as dw_local_options */
} dw_slurm_options;

#ifdef __cplusplus
}
#endif
#endif
