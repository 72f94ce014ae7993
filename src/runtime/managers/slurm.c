/*
 * The Slurm manager: inside an allocation (salloc, sbatch), one `srun
 * --ntasks=N --input=all --label` job step runs a worker per task.  The
 * cookie goes to every task on srun's stdin; the labelled address lines
 * come back on srun's stdout, and afterwards a thread forwards what the
 * tasks print as "From worker N: ".  The step ends when its last worker
 * has gone.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/managers/mgr.h"
#include "runtime/rt.h"
#include "runtime/optsize.h"

/* One srun job step, shared by its workers. */
struct step {
	pthread_mutex_t lock;
	int refs;         /* workers still held, plus the launch */
	struct mp_proc p; /* srun */
	int n;
	int *task_wid; /* task -> worker id (0: none) */
	pthread_t fwd;
	int fwd_started;
};

struct slw { /* one worker */
	struct step *st;
	int task;
};

/* "  3: text" -> 3 and the text; -1 when the line has no label. */
static int
sl_label(const char *line, const char **text)
{
	const char *p = line;
	while (*p == ' ')
		p++;
	char *end;
	long t = strtol(p, &end, 10);
	if (end == p || end[0] != ':' || t < 0 || t > INT_MAX)
		return -1;
	*text = end[1] == ' ' ? end + 2 : end + 1;
	return (int)t;
}

/* ---- forwarding what the tasks print ---- */

static void
sl_emit(struct step *st, char *line, int is_err)
{
	const char *text = line;
	int t = sl_label(line, &text), wid = 0;
	pthread_mutex_lock(&st->lock);
	if (t >= 0 && t < st->n)
		wid = st->task_wid[t];
	pthread_mutex_unlock(&st->lock);
	FILE *out = is_err ? stderr : stdout;
	if (wid > 0)
		fprintf(out, "From worker %d: %s\n", wid, text);
	else
		fprintf(out, "%s\n", line); /* srun's own messages */
	fflush(out);
}

static void *
sl_forward(void *arg)
{
	struct step *st = arg;
	struct {
		int fd;
		size_t n;
		char buf[4096];
	} in[2] = {{st->p.out_fd, 0, ""}, {st->p.err_fd, 0, ""}};
	for (int open = 2; open > 0;) {
		struct pollfd p[2] = {{.fd = in[0].fd, .events = POLLIN},
		                      {.fd = in[1].fd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		for (int k = 0; k < 2; k++) {
			if (in[k].fd < 0 || !p[k].revents)
				continue;
			ssize_t r = read(in[k].fd, in[k].buf + in[k].n,
			                 sizeof in[k].buf - 1 - in[k].n);
			if (r <= 0) {
				in[k].fd = -1, open--;
				continue;
			}
			in[k].n += (size_t)r;
			char *s = in[k].buf, *nl;
			while (
			    (nl = memchr(s, '\n',
			                 in[k].n - (size_t)(s - in[k].buf)))) {
				*nl = 0;
				sl_emit(st, s, k);
				s = nl + 1;
			}
			in[k].n -= (size_t)(s - in[k].buf);
			memmove(in[k].buf, s, in[k].n);
			if (in[k].n == sizeof in[k].buf - 1) { /* a long line */
				in[k].buf[in[k].n] = 0;
				sl_emit(st, in[k].buf, k);
				in[k].n = 0;
			}
		}
	}
	return NULL;
}

/* ---- the step's end ---- */

static void
sl_step_release(struct step *st)
{
	pthread_mutex_lock(&st->lock);
	int last = --st->refs == 0;
	pthread_mutex_unlock(&st->lock);
	if (!last)
		return;
	if (st->p.in_fd >= 0)
		close(st->p.in_fd); /* workers not yet joined give up */
	st->p.in_fd = -1;
	if (st->p.pid > 0 && mp_reap(st->p.pid, 3000) < 0) /* srun waits
	                                                        for its tasks */
		rt_log("srun did not end with its workers; killed");
	if (st->fwd_started)
		pthread_join(st->fwd, NULL);
	mp_close(&st->p);
	pthread_mutex_destroy(&st->lock);
	free(st->task_wid);
	free(st);
}

static int
sl_manage(void *self, dw_worker_config *wc, int op)
{
	(void)self;
	struct slw *w = wc->data;
	if (!w || op != DW_MANAGE_FINALIZE)
		return DW_OK;
	struct step *st = w->st;
	pthread_mutex_lock(&st->lock);
	if (w->task >= 0 && w->task < st->n)
		st->task_wid[w->task] = 0;
	pthread_mutex_unlock(&st->lock);
	free(w);
	wc->data = NULL;
	sl_step_release(st);
	return DW_OK;
}

/* ---- launching ---- */

struct sl {
	dw_slurm_options o;
	char exe[PATH_MAX];
	char execs[16];
	char ntasks[32];
	char bind[300];
	char script[700];
};

static int
sl_argv(struct sl *S, int n, char **v, int max)
{
	int a = 0;
#define ADD(s)                                                                 \
	do {                                                                   \
		if (a >= max - 1)                                              \
			return -1;                                             \
		v[a++] = (char *)(s);                                          \
	} while (0)
	ADD(S->o.srun ? S->o.srun : "srun");
	snprintf(S->ntasks, sizeof S->ntasks, "--ntasks=%d", n);
	ADD(S->ntasks);
	ADD("--input=all");
	ADD("--label");
	ADD("--kill-on-bad-exit=0");
	for (int i = 0; S->o.srun_flags && S->o.srun_flags[i]; i++)
		ADD(S->o.srun_flags[i]);
	/* the shell prints nothing; it only picks the node's name */
	snprintf(S->script, sizeof S->script,
	         "exec \"$0\" --dwork-worker --dwork-bind %s "
	         "--dwork-executors %s \"$@\"",
	         S->bind, S->execs);
	ADD("/bin/sh");
	ADD("-c");
	ADD(S->script);
	ADD(S->exe);
	for (int i = 0; S->o.args && S->o.args[i]; i++)
		ADD(S->o.args[i]);
#undef ADD
	v[a] = NULL;
	return a;
}

/* Why srun ended (or said nothing): its last line of error. */
static void
sl_why(struct step *st, const char *other, char *why, size_t len, int ended)
{
	char tail[300], how[64];
	mp_tail(st->p.err_fd, ended ? 1000 : 0, tail, sizeof tail);
	if (ended) {
		int status = mp_reap(st->p.pid, 2000);
		st->p.pid = -1;
		mp_describe_status(status, how, sizeof how);
	} else {
		snprintf(how, sizeof how, "is still running");
	}
	snprintf(why, len, "srun %s%s%s%s%s", how, tail[0] ? ": " : "", tail,
	         !tail[0] && other[0] ? "; a task printed: " : "",
	         !tail[0] ? other : "");
}

static int
sl_launch(void *self, int n, dw_launch *l)
{
	struct sl *S = self;
	struct step *st = calloc(1, sizeof *st);
	char *argv[96];
	if (!st || !(st->task_wid = calloc((size_t)n, sizeof(int)))) {
		free(st);
		return DW_ENOMEM;
	}
	pthread_mutex_init(&st->lock, NULL);
	st->n = n;
	st->refs = 1;
	if (sl_argv(S, n, argv, 96) < 0 ||
	    mp_spawn(&st->p, argv, NULL, NULL) != DW_OK) {
		int e = st->p.err ? st->p.err : DW_EINVAL;
		cl_launch_error(l, e, "%s",
		                st->p.why[0] ? st->p.why
		                             : "too many srun arguments");
		sl_step_release(st);
		return e;
	}
	char line[600], other[256] = "", why[600];
	int k = snprintf(line, sizeof line, "%s\n", dw_launch_cookie(l));
	mp_write(st->p.in_fd, line, (size_t)k);
	uint64_t deadline = rt_now_ms() + (uint64_t)S->o.launch_timeout_ms;
	int got = 0, err = DW_OK;
	while (got < n) {
		int r = mp_read_line(st->p.out_fd, deadline, line, sizeof line);
		if (r < 0) {
			sl_why(st, other, why, sizeof why, r == -1);
			err = r == -2 ? DW_ETIMEDOUT : DW_EIO;
			if (r == -2)
				cl_launch_error(l, err,
				                "%d of %d address lines "
				                "within %d ms; %s",
				                got, n, S->o.launch_timeout_ms,
				                why);
			else
				cl_launch_error(l, err, "%s", why);
			break;
		}
		const char *text = line;
		int t = sl_label(line, &text);
		struct slw *w = malloc(sizeof *w);
		dw_worker_config wc = {.id = dw_launch_id(l, got),
		                       .fd = -1,
		                       .out_fd = -1,
		                       .err_fd = -1,
		                       .data = w};
		if (!w || t < 0 || t >= n ||
		    mp_parse_addr(text, wc.host, sizeof wc.host, &wc.port)) {
			snprintf(other, sizeof other, "%.200s", line);
			free(w);
			continue;
		}
		*w = (struct slw){.st = st, .task = t};
		pthread_mutex_lock(&st->lock);
		st->refs++;
		st->task_wid[t] = wc.id;
		pthread_mutex_unlock(&st->lock);
		got++;
		dw_launched(l, &wc); /* on failure it finalizes w */
	}
	if (st->p.pid > 0 && !pthread_create(&st->fwd, NULL, sl_forward, st))
		st->fwd_started = 1;
	sl_step_release(st); /* the launch's own reference */
	return err;
}

DW_API int
dw_addprocs_slurm(int n, const dw_slurm_options *opts, int *ids)
{
	if (rt.role != RT_MASTER)
		return rt_set_err(0, "only the master adds workers"), DW_ESTATE;
	if (!getenv("SLURM_JOB_ID"))
		return rt_set_err(0, "not inside a Slurm allocation (no "
		                     "SLURM_JOB_ID): run the master under "
		                     "salloc or sbatch"),
		       DW_ESTATE;
	if (n <= 0) {
		const char *t = getenv("SLURM_NTASKS");
		n = t ? atoi(t) : 0;
		if (n <= 0)
			return rt_set_err(0, "no worker count given and no "
			                     "SLURM_NTASKS"),
			       DW_EINVAL;
	}
	if (opts && rt_opt_size("dw_slurm_options", opts->size, sizeof *opts))
		return DW_EINVAL;
	struct sl S;
	memset(&S, 0, sizeof S);
	if (opts)
		S.o = *opts;
	if (S.o.launch_timeout_ms <= 0)
		S.o.launch_timeout_ms = 60000;
	if (S.o.exe)
		snprintf(S.exe, sizeof S.exe, "%s", S.o.exe);
	else
		mp_self_exe(S.exe, sizeof S.exe);
	snprintf(S.execs, sizeof S.execs, "%d", rt.opts.executors);
	/* the node's name as Slurm knows it, unless told otherwise */
	if (!S.o.bind_addr)
		snprintf(S.bind, sizeof S.bind,
		         "\"${SLURMD_NODENAME:-0.0.0.0}\"");
	else if (mp_shell_quote(S.bind, sizeof S.bind, S.o.bind_addr) < 0)
		return rt_set_err(0, "bind address too long"), DW_EINVAL;
	int *got = malloc(sizeof(int) * (size_t)n);
	if (!got)
		return DW_ENOMEM;
	dw_manager m = {.name = "slurm",
	                .launch = sl_launch,
	                .manage = sl_manage,
	                .self = &S};
	int r = dw_addprocs_with(&m, n, got);
	if (r > 0 && r < n && S.o.remove_partial) {
		char msg[600];
		snprintf(msg, sizeof msg, "%s", dw_errmsg());
		dw_rmprocs(got, r, 2000);
		rt_set_err(0, "%s", msg);
		r = DW_EIO;
	}
	for (int i = 0; ids && i < r; i++)
		ids[i] = got[i];
	free(got);
	return r;
}
