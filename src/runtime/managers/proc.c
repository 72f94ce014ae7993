/*
 * Starting and watching the helper processes of the managers (ssh, srun):
 * fork/exec with pipes on the I/O thread, reading their lines, quoting
 * for the remote shell.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/managers/mgr.h"
#include "runtime/rt.h"

extern char **environ;

struct mp_spawn_arg {
	struct mp_proc *p;
	char path[PATH_MAX];
	char *const *argv;
	char *const *envp;
	const char *dir;
	int sock; /* >= 0: the child's stdin and stdout, instead of pipes */
};

static void
mp_close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

/* In the child between fork and exec: async-signal-safe calls only. */
static void __attribute__((noreturn))
mp_child(struct mp_spawn_arg *a, int in[2], int out[2], int er[2], int ep[2],
         pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	dup2(a->sock >= 0 ? a->sock : in[0], 0);
	dup2(a->sock >= 0 ? a->sock : out[1], 1);
	dup2(er[1], 2);
	int e = 0;
	if (a->dir && chdir(a->dir) != 0)
		e = errno;
	if (!e) {
		/* the manager's own helpers must not inherit a blocked
		 * SIGPIPE or SIGINT from the runtime's threads */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execve(a->path, a->argv, a->envp ? a->envp : environ);
		e = errno;
	}
	ssize_t w = write(ep[1], &e, sizeof e);
	(void)w;
	_exit(127);
}

static void
mp_spawn_io(void *arg)
{
	struct mp_spawn_arg *a = arg;
	struct mp_proc *p = a->p;
	int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1},
	    ep[2] = {-1, -1};
	int pipes = a->sock < 0;
	if ((pipes && (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))) ||
	    pipe2(er, O_CLOEXEC) || pipe2(ep, O_CLOEXEC)) {
		p->err = DW_ESYS;
		snprintf(p->why, sizeof p->why, "pipe: %s", strerror(errno));
		goto fail;
	}
	pid_t parent = getpid(), pid = fork();
	if (pid == 0)
		mp_child(a, in, out, er, ep, parent);
	if (pid < 0) {
		p->err = DW_ESYS;
		snprintf(p->why, sizeof p->why, "fork: %s", strerror(errno));
		goto fail;
	}
	close(ep[1]), ep[1] = -1;
	int e = 0;
	ssize_t r = read(ep[0], &e, sizeof e);
	if (r == (ssize_t)sizeof e) {
		waitpid(pid, NULL, 0);
		p->err = e == ENOENT ? DW_ENOENT : DW_EIO;
		snprintf(p->why, sizeof p->why, "cannot run '%.200s': %s",
		         a->argv[0], strerror(e));
		goto fail;
	}
	if (pipes)
		close(in[0]), close(out[1]);
	close(er[1]), close(ep[0]);
	p->pid = pid;
	p->in_fd = in[1];
	p->out_fd = out[0];
	p->err_fd = er[0];
	return;
fail:
	mp_close_pair(in), mp_close_pair(out), mp_close_pair(er);
	mp_close_pair(ep);
}

/* PATH lookup before fork: the child only calls execve. */
static int
mp_which(const char *name, char *out, size_t len)
{
	if (strchr(name, '/')) {
		snprintf(out, len, "%s", name);
		return 0;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *d = path; *d;) {
		size_t n = strcspn(d, ":");
		snprintf(out, len, "%.*s/%s", (int)n, n ? d : ".", name);
		if (access(out, X_OK) == 0)
			return 0;
		d += n + (d[n] == ':');
	}
	snprintf(out, len, "%s", name);
	return -1;
}

static int
mp_start(struct mp_proc *p, char *const argv[], char *const envp[],
         const char *dir, int sock)
{
	*p = (struct mp_proc){
	    .pid = -1, .in_fd = -1, .out_fd = -1, .err_fd = -1};
	struct mp_spawn_arg a = {
	    .p = p, .argv = argv, .envp = envp, .dir = dir, .sock = sock};
	if (mp_which(argv[0], a.path, sizeof a.path) < 0) {
		p->err = DW_ENOENT;
		snprintf(p->why, sizeof p->why,
		         "cannot run '%.200s': not found in PATH", argv[0]);
		return p->err;
	}
	loop_run(mp_spawn_io, &a);
	return p->err;
}

int
mp_spawn(struct mp_proc *p, char *const argv[], char *const envp[],
         const char *dir)
{
	return mp_start(p, argv, envp, dir, -1);
}

int
mp_spawn_sock(struct mp_proc *p, char *const argv[], int sock)
{
	return mp_start(p, argv, NULL, NULL, sock);
}

void
mp_close(struct mp_proc *p)
{
	int *fds[3] = {&p->in_fd, &p->out_fd, &p->err_fd};
	for (int i = 0; i < 3; i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}

void
mp_kill(int pid)
{
	if (pid > 0)
		kill(pid, SIGKILL);
}

/* Sleeps until pid exits or ms pass, woken by its exit itself (a pidfd)
 * rather than by polling: finalizing a thousand workers one after the
 * other then costs their exits, not a thousand sleeps. */
static void
mp_wait_exit(int pid, int ms)
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

int
mp_reap(int pid, int ms)
{
	if (pid <= 0)
		return -1;
	if (ms > 0)
		mp_wait_exit(pid, ms);
	for (int waited = 0;; waited++) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return st;
		if (r < 0 && errno == ECHILD)
			return -1;
		if (waited >= ms) {
			mp_kill(pid);
			waitpid(pid, NULL, 0);
			return -1;
		}
		usleep(1000);
	}
}

int
mp_write(int fd, const char *s, size_t len)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	int rc = 0;
	for (size_t done = 0; done < len;) {
		ssize_t r = write(fd, s + done, len - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = -1;
			break;
		}
		done += (size_t)r;
	}
	if (rc < 0 && errno == EPIPE) {
		struct timespec zero = {0, 0};
		sigtimedwait(&set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int
mp_read_line(int fd, uint64_t deadline, char *line, size_t len)
{
	size_t n = 0;
	while (n + 1 < len) {
		uint64_t now = rt_now_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (now >= deadline)
			return -2;
		int pr = poll(&p, 1, (int)(deadline - now));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0)
			return -2;
		ssize_t r = read(fd, line + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			line[n] = 0;
			return -1;
		}
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	if (n && line[n - 1] == '\r')
		line[n - 1] = 0;
	return 0;
}

void
mp_tail(int fd, int ms, char *buf, size_t len)
{
	char all[4096];
	size_t n = 0;
	uint64_t deadline = rt_now_ms() + (uint64_t)ms;
	buf[0] = 0;
	while (fd >= 0 && n < sizeof all - 1) {
		uint64_t now = rt_now_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int wait = now >= deadline ? 0 : (int)(deadline - now);
		if (poll(&p, 1, wait) <= 0)
			break;
		ssize_t r = read(fd, all + n, sizeof all - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	while (n &&
	       (all[n - 1] == '\n' || all[n - 1] == '\r' || all[n - 1] == ' '))
		n--;
	all[n] = 0;
	char *last = strrchr(all, '\n');
	snprintf(buf, len, "%s", last ? last + 1 : all);
}

void
mp_describe_status(int st, char *buf, size_t len)
{
	if (st < 0)
		snprintf(buf, len, "did not exit");
	else if (WIFEXITED(st))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "was killed by signal %d", WTERMSIG(st));
	else
		snprintf(buf, len, "ended (status %#x)", st);
}

int
mp_parse_addr(const char *line, char *host, size_t hostlen, int *port)
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
	if (hl >= hostlen)
		return -1;
	memcpy(host, a, hl);
	host[hl] = 0;
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (*end || p <= 0 || p > 65535)
		return -1;
	*port = (int)p;
	return 0;
}

int
mp_is_wildcard(const char *host)
{
	return !host[0] || !strcmp(host, "0.0.0.0") || !strcmp(host, "::") ||
	       !strcmp(host, "*");
}

void
mp_self_exe(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
}

int
mp_shell_quote(char *out, size_t len, const char *s)
{
	size_t n = 0;
#define PUT(c)                                                                 \
	do {                                                                   \
		if (n + 1 >= len)                                              \
			return -1;                                             \
		out[n++] = (c);                                                \
	} while (0)
	PUT('\'');
	for (; *s; s++) {
		if (*s == '\'') {
			PUT('\'');
			PUT('\\');
			PUT('\'');
			PUT('\'');
		} else {
			PUT(*s);
		}
	}
	PUT('\'');
#undef PUT
	out[n] = 0;
	return (int)n;
}

int
mp_split(char *buf, char **words, int max)
{
	int n = 0;
	for (char *save = NULL, *w = strtok_r(buf, " \t", &save);
	     w && n < max - 1; w = strtok_r(NULL, " \t", &save))
		words[n++] = w;
	words[n] = NULL;
	return n;
}
