/*
 * The local cluster manager: workers are processes of this machine
 * running the same executable with --dwork-worker.  The cookie goes to
 * each on its stdin; each prints its address line on stdout.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/managers/mgr.h"
#include "runtime/rt.h"
#include "runtime/optsize.h"

extern char **environ;

struct lw { /* one launched worker */
	int pid;
	int in_fd;
	int registered;
};

struct local {
	dw_local_options o;
	char exe[PATH_MAX];
	char *argv[64];
	char **envp;
	char execs[16];
};

struct spawn {
	struct local *L;
	struct mp_proc p; /* started by proc.c's mp_spawn */
};

/* Signals a worker we started; never a pid <= 0, which would reach a
 * process group or every process. */
static void
lm_signal(int pid, int sig)
{
	if (pid > 0)
		kill(pid, sig);
}

static int
lm_manage(void *self, dw_worker_config *wc, int op)
{
	(void)self;
	struct lw *w = wc->data;
	if (!w)
		return DW_OK;
	if (op == DW_MANAGE_REGISTER) {
		w->registered = 1;
	} else if (op == DW_MANAGE_INTERRUPT) {
		lm_signal(w->pid, SIGINT);
	} else if (op == DW_MANAGE_FINALIZE) {
		if (w->in_fd >= 0)
			close(w->in_fd);
		if (!w->registered) { /* the core never took these */
			if (wc->out_fd >= 0)
				close(wc->out_fd);
			if (wc->err_fd >= 0)
				close(wc->err_fd);
		}
		mp_reap(w->pid, 2000);
		free(w);
		wc->data = NULL;
	}
	return DW_OK;
}

static int
lm_kill(void *self, dw_worker_config *wc)
{
	(void)self;
	struct lw *w = wc->data;
	if (w)
		lm_signal(w->pid, SIGKILL);
	return DW_OK;
}

static void
lm_describe_exit(struct spawn *s, char *why, size_t len)
{
	int st, got = 0;
	for (int i = 0; i < 200 && !got; i++) { /* its exit follows EOF */
		got = waitpid(s->p.pid, &st, WNOHANG) == s->p.pid;
		if (!got)
			usleep(1000);
	}
	if (got) {
		s->p.pid = -1;
		if (WIFEXITED(st))
			snprintf(why, len,
			         "exited with status %d before "
			         "printing its address",
			         WEXITSTATUS(st));
		else
			snprintf(why, len,
			         "killed by signal %d before "
			         "printing its address",
			         WTERMSIG(st));
	} else {
		snprintf(why, len,
		         "closed its stdout before printing its "
		         "address");
	}
}

/* Sends the cookie, waits for the address, hands the worker to the core. */
static void
lm_join(struct local *L, struct spawn *s, int id, dw_launch *l)
{
	char line[512], why[300];
	const char *ck = dw_launch_cookie(l);
	struct lw *w = malloc(sizeof *w);
	dw_worker_config wc = {.id = id,
	                       .fd = -1,
	                       .pid = s->p.pid,
	                       .out_fd = s->p.out_fd,
	                       .err_fd = s->p.err_fd,
	                       .data = w};
	if (!w) {
		mp_kill(s->p.pid);
		mp_reap(s->p.pid, 0);
		mp_close(&s->p);
		return;
	}
	*w = (struct lw){.pid = s->p.pid, .in_fd = s->p.in_fd};
	/* a worker that died early shows up when its address is read */
	char msg[WIRE_COOKIE_MAX + 2];
	snprintf(msg, sizeof msg, "%s\n", ck);
	mp_write(s->p.in_fd, msg, strlen(msg));
	uint64_t dl = rt_now_ms() + (uint64_t)L->o.launch_timeout_ms;
	int r = mp_read_line(s->p.out_fd, dl, line, sizeof line);
	if (r == 0 &&
	    mp_parse_addr(line, wc.host, sizeof wc.host, &wc.port) == 0) {
		dw_launched(l, &wc);
		return;
	}
	if (r == -2)
		snprintf(why, sizeof why,
		         "printed no address line within %d "
		         "ms",
		         L->o.launch_timeout_ms);
	else if (r == -1)
		lm_describe_exit(s, why, sizeof why);
	else
		snprintf(why, sizeof why,
		         "printed '%.200s' instead of its "
		         "address",
		         line);
	cl_launch_error(l, r == -2 ? DW_ETIMEDOUT : DW_EPROTO, "worker %d %s",
	                id, why);
	if (s->p.pid < 0)
		w->pid = -1;
	lm_kill(NULL, &wc);
	lm_manage(NULL, &wc, DW_MANAGE_FINALIZE);
}

static int
lm_launch(void *self, int n, dw_launch *l)
{
	struct local *L = self;
	struct spawn *s = calloc((size_t)n, sizeof *s);
	if (!s)
		return DW_ENOMEM;
	for (int base = 0; base < n; base += L->o.parallel) {
		int k = n - base < L->o.parallel ? n - base : L->o.parallel;
		for (int i = 0; i < k; i++) {
			s[base + i].L = L;
			mp_spawn(&s[base + i].p, L->argv, L->envp, L->o.dir);
		}
		for (int i = 0; i < k; i++) {
			struct spawn *sp = &s[base + i];
			if (sp->p.err)
				cl_launch_error(l, sp->p.err, "worker %d: %s",
				                dw_launch_id(l, base + i),
				                sp->p.why);
			else
				lm_join(L, sp, dw_launch_id(l, base + i), l);
		}
	}
	free(s);
	return DW_OK;
}

static int
lm_build(struct local *L, const dw_local_options *o)
{
	memset(L, 0, sizeof *L);
	if (o)
		L->o = *o;
	if (L->o.parallel <= 0)
		L->o.parallel = 8;
	if (L->o.launch_timeout_ms <= 0)
		L->o.launch_timeout_ms = 10000;
	const char *bind = L->o.bind_addr ? L->o.bind_addr : rt.opts.bind_addr;
	if (L->o.exe) /* without a '/': the working directory's, not PATH's */
		snprintf(L->exe, sizeof L->exe, "%s%s",
		         strchr(L->o.exe, '/') ? "" : "./", L->o.exe);
	else if (readlink("/proc/self/exe", L->exe, sizeof L->exe - 1) < 0)
		return DW_ESYS;
	snprintf(L->execs, sizeof L->execs, "%d", rt.opts.executors);
	int a = 0;
	L->argv[a++] = L->exe;
	L->argv[a++] = "--dwork-worker";
	L->argv[a++] = "--dwork-bind";
	L->argv[a++] = (char *)bind;
	L->argv[a++] = "--dwork-executors";
	L->argv[a++] = L->execs;
	for (int i = 0; L->o.args && L->o.args[i] && a < 63; i++)
		L->argv[a++] = (char *)L->o.args[i];
	L->argv[a] = NULL;
	size_t ne = 0, nx = 0;
	while (environ[ne])
		ne++;
	while (L->o.env && L->o.env[nx])
		nx++;
	if (!(L->envp = calloc(ne + nx + 1, sizeof *L->envp)))
		return DW_ENOMEM;
	memcpy(L->envp, environ, ne * sizeof *L->envp);
	if (nx)
		memcpy(L->envp + ne, L->o.env, nx * sizeof *L->envp);
	return DW_OK;
}

DW_API int
dw_addprocs(int n, const dw_local_options *opts, int *ids)
{
	struct local L;
	if (opts && rt_opt_size("dw_local_options", opts->size, sizeof *opts))
		return DW_EINVAL;
	int err = lm_build(&L, opts);
	if (err != DW_OK) {
		free(L.envp);
		return rt_set_err(0, "cannot prepare the launch"), err;
	}
	dw_manager m = {.name = "local",
	                .launch = lm_launch,
	                .manage = lm_manage,
	                .kill = lm_kill,
	                .self = &L};
	int tmp[256],
	    *got =
	        ids ? ids : (n <= 256 ? tmp : malloc(sizeof(int) * (size_t)n));
	int r = got ? dw_addprocs_with(&m, n, got) : DW_ENOMEM;
	if (r > 0 && r < n && opts && opts->remove_partial) {
		dw_rmprocs(got, r, 2000);
		r = DW_EIO;
	}
	if (got != ids && got != tmp)
		free(got);
	free(L.envp);
	return r;
}
