/*
 * The local cluster manager: workers are processes of this machine
 * running the same executable with --dwork-worker.  The cookie goes to
 * each on its stdin; each prints its address line on stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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
	int pid, in_fd, out_fd, err_fd;
	int err;
	char why[300];
};

/* In the child between fork and exec: async-signal-safe calls only. */
static void __attribute__((noreturn))
lm_child(struct local *L, int in[2], int out[2], int err[2], int ep[2],
         pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	dup2(in[0], 0);
	dup2(out[1], 1);
	dup2(err[1], 2);
	int e = 0;
	if (L->o.dir && chdir(L->o.dir) != 0)
		e = errno;
	if (!e) {
		execve(L->exe, L->argv, L->envp);
		e = errno;
	}
	ssize_t w = write(ep[1], &e, sizeof e);
	(void)w;
	_exit(127);
}

static void
lm_close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

/* Runs on the I/O thread (see loop_run). */
static void
lm_spawn(void *arg)
{
	struct spawn *s = arg;
	int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1},
	    ep[2] = {-1, -1};
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) ||
	    pipe2(er, O_CLOEXEC) || pipe2(ep, O_CLOEXEC)) {
		s->err = DW_ESYS;
		snprintf(s->why, sizeof s->why, "pipe: %s", strerror(errno));
		goto fail;
	}
	pid_t parent = getpid(), pid = fork();
	if (pid == 0)
		lm_child(s->L, in, out, er, ep, parent);
	if (pid < 0) {
		s->err = DW_ESYS;
		snprintf(s->why, sizeof s->why, "fork: %s", strerror(errno));
		goto fail;
	}
	close(ep[1]), ep[1] = -1;
	int e = 0;
	ssize_t r = read(ep[0], &e, sizeof e);
	if (r == (ssize_t)sizeof e) {
		waitpid(pid, NULL, 0);
		s->err = e == ENOENT ? DW_ENOENT : DW_EIO;
		snprintf(s->why, sizeof s->why, "cannot run '%.200s': %s",
		         s->L->exe, strerror(e));
		goto fail;
	}
	close(in[0]), close(out[1]), close(er[1]), close(ep[0]);
	s->pid = pid;
	s->in_fd = in[1];
	s->out_fd = out[0];
	s->err_fd = er[0];
	return;
fail:
	lm_close_pair(in), lm_close_pair(out), lm_close_pair(er);
	lm_close_pair(ep);
}

/* Signals a worker we started; never a pid <= 0, which would reach a
 * process group or every process. */
static void
lm_signal(int pid, int sig)
{
	if (pid > 0)
		kill(pid, sig);
}

/* Sleeps until pid exits or ms pass, woken by its exit itself (a pidfd)
 * rather than by polling: finalizing a thousand workers one after the
 * other then costs their exits, not a thousand sleeps. */
static void
lm_wait_exit(int pid, int ms)
{
#ifdef SYS_pidfd_open
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd >= 0) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		while (poll(&p, 1, ms) < 0 && errno == EINTR)
			;
		close(fd);
	}
#else
	(void)pid, (void)ms;
#endif
}

static void
lm_reap(int pid, int ms)
{
	if (pid <= 0)
		return;
	if (waitpid(pid, NULL, WNOHANG) == pid)
		return;
	lm_wait_exit(pid, ms);
	for (int waited = 0;; waited++) {
		pid_t r = waitpid(pid, NULL, WNOHANG);
		if (r == pid || (r < 0 && errno == ECHILD))
			return;
		if (waited >= ms) {
			lm_signal(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return;
		}
		usleep(1000);
	}
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
		lm_reap(w->pid, 2000);
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

/* Reads the worker's address line ("dwork-worker-address HOST:PORT"). */
static int
lm_read_addr(int fd, uint64_t deadline, char *line, size_t len)
{
	size_t n = 0;
	while (n + 1 < len) {
		uint64_t now = rt_now_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (now >= deadline || poll(&p, 1, (int)(deadline - now)) == 0)
			return -2;
		ssize_t r = read(fd, line + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	return 0;
}

static int
lm_parse_addr(const char *line, dw_worker_config *wc)
{
	const char *pre = "dwork-worker-address ";
	if (strncmp(line, pre, strlen(pre)))
		return -1;
	const char *a = line + strlen(pre), *colon = strrchr(a, ':');
	if (!colon || colon == a)
		return -1;
	size_t hl = (size_t)(colon - a);
	if (a[0] == '[' && hl >= 2 && a[hl - 1] == ']')
		a++, hl -= 2;
	if (hl >= sizeof wc->host)
		return -1;
	memcpy(wc->host, a, hl);
	wc->host[hl] = 0;
	wc->port = atoi(colon + 1);
	return wc->port > 0 && wc->port < 65536 ? 0 : -1;
}

static void
lm_describe_exit(struct spawn *s, char *why, size_t len)
{
	int st, got = 0;
	for (int i = 0; i < 200 && !got; i++) { /* its exit follows EOF */
		got = waitpid(s->pid, &st, WNOHANG) == s->pid;
		if (!got)
			usleep(1000);
	}
	if (got) {
		s->pid = -1;
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

/* Writes to a worker's stdin without letting a dead reader's SIGPIPE end
 * this process: the signal is blocked and a pending one consumed. */
static void
lm_write_stdin(int fd, const char *s)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	ssize_t r = write(fd, s, strlen(s));
	if (r < 0 && errno == EPIPE) {
		struct timespec zero = {0, 0};
		sigtimedwait(&set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
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
	                       .pid = s->pid,
	                       .out_fd = s->out_fd,
	                       .err_fd = s->err_fd,
	                       .data = w};
	if (!w) {
		lm_signal(s->pid, SIGKILL);
		lm_reap(s->pid, 0);
		close(s->in_fd), close(s->out_fd), close(s->err_fd);
		return;
	}
	*w = (struct lw){.pid = s->pid, .in_fd = s->in_fd};
	/* a worker that died early shows up when its address is read */
	char msg[WIRE_COOKIE_MAX + 2];
	snprintf(msg, sizeof msg, "%s\n", ck);
	lm_write_stdin(s->in_fd, msg);
	uint64_t dl = rt_now_ms() + (uint64_t)L->o.launch_timeout_ms;
	int r = lm_read_addr(s->out_fd, dl, line, sizeof line);
	if (r == 0 && lm_parse_addr(line, &wc) == 0) {
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
	if (s->pid < 0)
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
			loop_run(lm_spawn, &s[base + i]);
		}
		for (int i = 0; i < k; i++) {
			struct spawn *sp = &s[base + i];
			if (sp->err)
				cl_launch_error(l, sp->err, "worker %d: %s",
				                dw_launch_id(l, base + i),
				                sp->why);
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
	if (L->o.exe)
		snprintf(L->exe, sizeof L->exe, "%s", L->o.exe);
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
