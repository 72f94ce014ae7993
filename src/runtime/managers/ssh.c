/*
 * The ssh cluster manager: workers on other machines, started through the
 * system's OpenSSH client.  The remote command prints the shell's pid and
 * execs the worker (same pid); the cookie goes down ssh's stdin; the
 * address line comes back on its stdout.  With `tunnel`, the master
 * reaches each worker through `ssh -W` on a socket pair instead of
 * connecting to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/managers/mgr.h"
#include "runtime/rt.h"
#include "runtime/optsize.h"

#define SSH_WORDS   64 /* ssh command, default flags, user flags */
#define SSH_CMD_MAX 16384

/* One launched worker.  It owns copies of everything kill and manage
 * need: they run after dw_addprocs_ssh has returned. */
struct sw {
	struct mp_proc p; /* the ssh that runs the worker */
	int tunnel_pid;   /* ssh -W, or -1 */
	int tunnel_err;   /* its stderr */
	int remote_pid;   /* the worker's pid on its host, or 0 */
	int registered;
	char **dest_argv; /* ssh ... -- DEST: to signal the worker */
	int dest_argc;
	char host[330]; /* for messages */
};

struct ssh_mgr {
	dw_ssh_options o;
	const struct mf_host *hosts;
	int nhosts;
	int *slot_host, *slot_ord; /* worker i: its host, its rank there */
	char *words_buf;
	char *words[SSH_WORDS];
	int nwords;
	char exe[PATH_MAX];
};

static const char *const ssh_defaults[] = {
    "-T", "-x", "-a", "-o", "BatchMode=yes", NULL};

/* ---- argv of one ssh ---- */

struct argv_b {
	char *v[SSH_WORDS + 32];
	int n;
	char port[16];
};

static void
ab_push(struct argv_b *b, const char *s)
{
	if (b->n < (int)(sizeof b->v / sizeof b->v[0]) - 1)
		b->v[b->n++] = (char *)s;
	b->v[b->n] = NULL;
}

/* ssh [defaults] [user flags] [-p P] [-l U] [extra...] -- DEST */
static void
ssh_argv(const struct ssh_mgr *S, const struct mf_host *h, struct argv_b *b,
         const char *const *extra)
{
	b->n = 0;
	for (int i = 0; i < S->nwords; i++)
		ab_push(b, S->words[i]);
	for (int i = 0; ssh_defaults[i]; i++)
		ab_push(b, ssh_defaults[i]);
	for (int i = 0; S->o.ssh_flags && S->o.ssh_flags[i]; i++)
		ab_push(b, S->o.ssh_flags[i]);
	if (h->port) {
		snprintf(b->port, sizeof b->port, "%d", h->port);
		ab_push(b, "-p");
		ab_push(b, b->port);
	}
	if (h->user[0]) {
		ab_push(b, "-l");
		ab_push(b, h->user);
	}
	for (int i = 0; extra && extra[i]; i++)
		ab_push(b, extra[i]);
	ab_push(b, "--");
	ab_push(b, h->host);
}

static void
ssh_host_name(const struct mf_host *h, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", h->user, h->user[0] ? "@" : "", h->host);
}

/* ---- the remote command ---- */

static int
cmd_add(char *cmd, size_t len, size_t *n, const char *s, int quote)
{
	if (*n + 2 >= len)
		return -1;
	if (*n)
		cmd[(*n)++] = ' ';
	int w = quote ? mp_shell_quote(cmd + *n, len - *n, s)
	              : snprintf(cmd + *n, len - *n, "%s", s);
	if (w < 0 || (size_t)w >= len - *n)
		return -1;
	*n += (size_t)w;
	return 0;
}

/*
 * echo dwork-remote-pid $$; set -- $SSH_CONNECTION; [cd DIR &&] exec
 * [env VARS] EXE --dwork-worker --dwork-bind B [--dwork-port P]
 * --dwork-executors N ARGS
 */
static int
ssh_command(const struct ssh_mgr *S, const struct mf_host *h, int ord,
            char *cmd, size_t len)
{
	size_t n = 0;
	char num[32];
	int e = cmd_add(cmd, len, &n, "echo dwork-remote-pid $$;", 0);
	e |= cmd_add(cmd, len, &n, "set -- $SSH_CONNECTION;", 0);
	if (S->o.dir) {
		e |= cmd_add(cmd, len, &n, "cd", 0);
		e |= cmd_add(cmd, len, &n, S->o.dir, 1);
		e |= cmd_add(cmd, len, &n, "&&", 0);
	}
	e |= cmd_add(cmd, len, &n, "exec", 0);
	if (S->o.env && S->o.env[0]) {
		e |= cmd_add(cmd, len, &n, "env", 0);
		for (int i = 0; S->o.env[i]; i++)
			e |= cmd_add(cmd, len, &n, S->o.env[i], 1);
	}
	e |= cmd_add(cmd, len, &n, S->exe, 1);
	e |= cmd_add(cmd, len, &n, "--dwork-worker --dwork-bind", 0);
	if (h->bind[0])
		e |= cmd_add(cmd, len, &n, h->bind, 1);
	else if (S->o.tunnel)
		e |= cmd_add(cmd, len, &n, "127.0.0.1", 0);
	else if (S->o.bind_addr)
		e |= cmd_add(cmd, len, &n, S->o.bind_addr, 1);
	else /* the address this ssh connection reached */
		e |= cmd_add(cmd, len, &n, "\"${3:-0.0.0.0}\"", 0);
	if (h->bind_port) {
		snprintf(num, sizeof num, "--dwork-port %d",
		         h->bind_port + ord);
		e |= cmd_add(cmd, len, &n, num, 0);
	}
	snprintf(num, sizeof num, "--dwork-executors %d", rt.opts.executors);
	e |= cmd_add(cmd, len, &n, num, 0);
	for (int i = 0; S->o.args && S->o.args[i]; i++)
		e |= cmd_add(cmd, len, &n, S->o.args[i], 1);
	return e ? -1 : 0;
}

/* ---- signalling a remote worker ---- */

/* Runs `ssh DEST CMD` detached (double fork: nothing to reap later, and
 * the I/O thread, which calls kill, never waits for the network). */
static void
ssh_detached(struct sw *w, const char *cmd)
{
	char *argv[SSH_WORDS + 40];
	int n = 0;
	for (; n < w->dest_argc && n < SSH_WORDS + 36; n++)
		argv[n] = w->dest_argv[n];
	argv[n++] = (char *)cmd;
	argv[n] = NULL;
	char path[PATH_MAX];
	if (argv[0][0] != '/') { /* resolve before fork */
		const char *pe = getenv("PATH");
		path[0] = 0;
		for (const char *d = pe ? pe : "/usr/bin:/bin"; *d;) {
			size_t k = strcspn(d, ":");
			snprintf(path, sizeof path, "%.*s/%s", (int)k, d,
			         argv[0]);
			if (access(path, X_OK) == 0)
				break;
			path[0] = 0;
			d += k + (d[k] == ':');
		}
	} else {
		snprintf(path, sizeof path, "%s", argv[0]);
	}
	if (!path[0])
		return;
	pid_t pid = fork();
	if (pid == 0) {
		if (fork() == 0) {
			int fd = open("/dev/null", O_RDWR);
			if (fd >= 0)
				dup2(fd, 0), dup2(fd, 1), dup2(fd, 2);
			sigset_t none;
			sigemptyset(&none);
			sigprocmask(SIG_SETMASK, &none, NULL);
			extern char **environ;
			execve(path, argv, environ);
		}
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* Signals the worker's process on its host, if it is still a dwork
 * worker (its pid may have been reused since). */
static void
ssh_remote_signal(struct sw *w, const char *sig)
{
	if (w->remote_pid <= 0 || !w->dest_argv)
		return;
	char cmd[256];
	snprintf(cmd, sizeof cmd,
	         "grep -q -- --dwork-worker /proc/%d/cmdline 2>/dev/null && "
	         "kill -%s %d",
	         w->remote_pid, sig, w->remote_pid);
	ssh_detached(w, cmd);
}

/* ---- the manager's callbacks ---- */

static void
sw_free(struct sw *w, dw_worker_config *wc)
{
	if (w->p.in_fd >= 0)
		close(w->p.in_fd);
	if (!w->registered) { /* the core never took these */
		if (w->p.out_fd >= 0)
			close(w->p.out_fd);
		if (w->p.err_fd >= 0)
			close(w->p.err_fd);
	}
	if (w->tunnel_pid > 0) {
		mp_kill(w->tunnel_pid);
		mp_reap(w->tunnel_pid, 1000);
	}
	if (w->tunnel_err >= 0)
		close(w->tunnel_err);
	mp_reap(w->p.pid, 2000);
	for (int i = 0; w->dest_argv && i < w->dest_argc; i++)
		free(w->dest_argv[i]);
	free(w->dest_argv);
	free(w);
	wc->data = NULL;
}

static int
ssh_manage(void *self, dw_worker_config *wc, int op)
{
	(void)self;
	struct sw *w = wc->data;
	if (!w)
		return DW_OK;
	if (op == DW_MANAGE_REGISTER)
		w->registered = 1;
	else if (op == DW_MANAGE_INTERRUPT)
		ssh_remote_signal(w, "INT");
	else if (op == DW_MANAGE_FINALIZE)
		sw_free(w, wc);
	return DW_OK;
}

static int
ssh_kill(void *self, dw_worker_config *wc)
{
	(void)self;
	struct sw *w = wc->data;
	if (!w)
		return DW_OK;
	/* A worker that still runs (stopped, stuck) is killed on its host;
	 * one whose link closed exits by itself. */
	if (w->registered)
		ssh_remote_signal(w, "KILL");
	mp_kill(w->p.pid);
	if (w->tunnel_pid > 0)
		mp_kill(w->tunnel_pid);
	return DW_OK;
}

/* ---- launching ---- */

static struct sw *
sw_new(const struct ssh_mgr *S, const struct mf_host *h)
{
	struct sw *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->p = (struct mp_proc){
	    .pid = -1, .in_fd = -1, .out_fd = -1, .err_fd = -1};
	w->tunnel_pid = -1;
	w->tunnel_err = -1;
	ssh_host_name(h, w->host, sizeof w->host);
	struct argv_b b;
	ssh_argv(S, h, &b,
	         (const char *const[]){"-o", "ConnectTimeout=10", NULL});
	w->dest_argv = calloc((size_t)b.n + 1, sizeof *w->dest_argv);
	for (int i = 0; w->dest_argv && i < b.n; i++)
		if ((w->dest_argv[i] = strdup(b.v[i])))
			w->dest_argc = i + 1;
	return w;
}

static void
ssh_start(struct ssh_mgr *S, int i, struct sw *w, const char *cookie)
{
	const struct mf_host *h = &S->hosts[S->slot_host[i]];
	char *cmd = malloc(SSH_CMD_MAX);
	struct argv_b b;
	if (!cmd || ssh_command(S, h, S->slot_ord[i], cmd, SSH_CMD_MAX) < 0) {
		free(cmd);
		w->p.err = DW_EINVAL;
		snprintf(w->p.why, sizeof w->p.why,
		         "the remote command is too long");
		return;
	}
	ssh_argv(S, h, &b, NULL);
	ab_push(&b, cmd);
	if (mp_spawn(&w->p, b.v, NULL, NULL) == DW_OK) {
		char line[WIRE_COOKIE_MAX + 2];
		int k = snprintf(line, sizeof line, "%s\n", cookie);
		mp_write(w->p.in_fd, line, (size_t)k);
	}
	free(cmd);
}

/* Why a worker's ssh ended before its address: ssh's or the remote
 * shell's last line of error, and how the process ended. */
static void
ssh_why_ended(struct sw *w, const char *last_out, char *why, size_t len)
{
	char tail[300], how[64];
	mp_tail(w->p.err_fd, 500, tail, sizeof tail);
	int st = mp_reap(w->p.pid, 1000);
	w->p.pid = -1;
	mp_describe_status(st, how, sizeof how);
	if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 255)
		snprintf(how, sizeof how, "ssh failed (status 255)");
	snprintf(why, len, "%s before printing its address%s%s%s%s", how,
	         tail[0] ? ": " : "", tail,
	         !tail[0] && last_out[0] ? "; it printed: " : "",
	         !tail[0] ? last_out : "");
}

/* Reads the pid line and the address line. */
static int
ssh_read_addr(struct ssh_mgr *S, struct sw *w, dw_worker_config *wc,
              uint64_t deadline, char *why, size_t len)
{
	char line[512], other[256] = "";
	for (int lines = 0; lines < 256; lines++) {
		int r = mp_read_line(w->p.out_fd, deadline, line, sizeof line);
		if (r == -2) {
			char tail[300];
			mp_tail(w->p.err_fd, 0, tail, sizeof tail);
			snprintf(why, len,
			         "printed no address line within %d ms%s%s",
			         S->o.launch_timeout_ms, tail[0] ? ": " : "",
			         tail);
			return DW_ETIMEDOUT;
		}
		if (r == -1) {
			ssh_why_ended(w, other, why, len);
			return DW_EIO;
		}
		if (sscanf(line, "dwork-remote-pid %d", &w->remote_pid) == 1)
			continue;
		if (mp_parse_addr(line, wc->host, sizeof wc->host, &wc->port) ==
		    0)
			return DW_OK;
		snprintf(other, sizeof other, "%.200s", line);
	}
	snprintf(why, len, "printed '%s' instead of its address", other);
	return DW_EPROTO;
}

/* ssh -W host:port, on one end of a socket pair; the other is the
 * worker's connection. */
static int
ssh_tunnel(struct ssh_mgr *S, const struct mf_host *h, struct sw *w,
           dw_worker_config *wc, char *why, size_t len)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		snprintf(why, len, "socketpair: %s", strerror(errno));
		return DW_ESYS;
	}
	char target[300];
	snprintf(target, sizeof target,
	         strchr(wc->host, ':') ? "[%s]:%d" : "%s:%d", wc->host,
	         wc->port);
	struct argv_b b;
	ssh_argv(S, h, &b, (const char *const[]){"-W", target, NULL});
	struct mp_proc t;
	int err = mp_spawn_sock(&t, b.v, sp[1]);
	close(sp[1]);
	if (err != DW_OK) {
		close(sp[0]);
		snprintf(why, len, "ssh tunnel: %s", t.why);
		return err;
	}
	w->tunnel_pid = t.pid;
	w->tunnel_err = t.err_fd;
	wc->fd = sp[0];
	return DW_OK;
}

static void
ssh_join(struct ssh_mgr *S, int i, struct sw *w, dw_launch *l,
         uint64_t deadline)
{
	const struct mf_host *h = &S->hosts[S->slot_host[i]];
	int id = dw_launch_id(l, i);
	char why[500];
	dw_worker_config wc = {.id = id,
	                       .fd = -1,
	                       .pid = 0,
	                       .out_fd = w->p.out_fd,
	                       .err_fd = w->p.err_fd,
	                       .data = w};
	int err = w->p.err;
	if (err != DW_OK)
		snprintf(why, sizeof why, "%s", w->p.why);
	else
		err = ssh_read_addr(S, w, &wc, deadline, why, sizeof why);
	if (err == DW_OK && mp_is_wildcard(wc.host))
		snprintf(wc.host, sizeof wc.host, "%s", h->host);
	if (err == DW_OK && S->o.tunnel)
		err = ssh_tunnel(S, h, w, &wc, why, sizeof why);
	if (err == DW_OK) {
		if (dw_launched(l, &wc) != DW_OK && w->tunnel_err >= 0) {
			char tail[300];
			mp_tail(w->tunnel_err, 200, tail, sizeof tail);
			if (tail[0])
				rt_log("worker %d on %s: ssh tunnel: %s", id,
				       w->host, tail);
		}
		return;
	}
	cl_launch_error(l, err, "worker %d on %s: %s", id, w->host, why);
	ssh_kill(NULL, &wc);
	ssh_manage(NULL, &wc, DW_MANAGE_FINALIZE);
}

static int
ssh_launch(void *self, int n, dw_launch *l)
{
	struct ssh_mgr *S = self;
	struct sw **ws = calloc((size_t)n, sizeof *ws);
	if (!ws)
		return DW_ENOMEM;
	for (int base = 0; base < n; base += S->o.parallel) {
		int k = n - base < S->o.parallel ? n - base : S->o.parallel;
		for (int i = base; i < base + k; i++) {
			ws[i] = sw_new(S, &S->hosts[S->slot_host[i]]);
			if (ws[i])
				ssh_start(S, i, ws[i], dw_launch_cookie(l));
		}
		uint64_t deadline =
		    rt_now_ms() + (uint64_t)S->o.launch_timeout_ms;
		for (int i = base; i < base + k; i++) {
			if (ws[i])
				ssh_join(S, i, ws[i], l, deadline);
			else
				cl_launch_error(l, DW_ENOMEM,
				                "worker %d: out of memory",
				                dw_launch_id(l, i));
		}
	}
	free(ws);
	return DW_OK;
}

/* ---- counting cores (DW_AUTO) ---- */

static int
ssh_count_cores(struct ssh_mgr *S, struct mf_host *hs, int nh, char *why,
                size_t len)
{
	struct mp_proc *p = calloc((size_t)nh, sizeof *p);
	if (!p)
		return DW_ENOMEM;
	int err = DW_OK;
	for (int i = 0; i < nh; i++) {
		p[i] = (struct mp_proc){
		    .pid = -1, .in_fd = -1, .out_fd = -1, .err_fd = -1};
		if (hs[i].count != DW_AUTO)
			continue;
		struct argv_b b;
		ssh_argv(S, &hs[i], &b, NULL);
		ab_push(&b, "nproc 2>/dev/null || getconf _NPROCESSORS_ONLN");
		mp_spawn(&p[i], b.v, NULL, NULL);
	}
	uint64_t deadline = rt_now_ms() + (uint64_t)S->o.launch_timeout_ms;
	for (int i = 0; i < nh; i++) {
		if (hs[i].count != DW_AUTO)
			continue;
		char line[64] = "", tail[300] = "", name[330];
		int c = 0;
		if (!p[i].err)
			mp_read_line(p[i].out_fd, deadline, line, sizeof line);
		if (p[i].err || sscanf(line, "%d", &c) != 1 || c < 1 ||
		    c > MF_COUNT_MAX) {
			if (!p[i].err)
				mp_tail(p[i].err_fd, 500, tail, sizeof tail);
			ssh_host_name(&hs[i], name, sizeof name);
			if (err == DW_OK)
				snprintf(why, len,
				         "host %s: cannot count its cores%s%s",
				         name, p[i].err || tail[0] ? ": " : "",
				         p[i].err ? p[i].why : tail);
			err = p[i].err ? p[i].err : DW_EIO;
		}
		hs[i].count = c;
		mp_close(&p[i]);
		mp_reap(p[i].pid, 1000);
	}
	free(p);
	return err;
}

/* ---- entry points ---- */

static int
ssh_prepare(struct ssh_mgr *S, const dw_ssh_options *o)
{
	memset(S, 0, sizeof *S);
	if (o && rt_opt_size("dw_ssh_options", o->size, sizeof *o))
		return DW_EINVAL;
	if (o)
		S->o = *o;
	if (S->o.parallel <= 0)
		S->o.parallel = 10;
	if (S->o.launch_timeout_ms <= 0)
		S->o.launch_timeout_ms = 30000;
	const char *cmd = S->o.ssh ? S->o.ssh : getenv("DWORK_SSH_COMMAND");
	if (!cmd || !*cmd)
		cmd = "ssh";
	if (!(S->words_buf = strdup(cmd)))
		return DW_ENOMEM;
	S->nwords = mp_split(S->words_buf, S->words, 16);
	if (S->nwords == 0) {
		rt_set_err(0, "the ssh command is empty");
		return DW_EINVAL;
	}
	if (S->o.exe)
		snprintf(S->exe, sizeof S->exe, "%s", S->o.exe);
	else
		mp_self_exe(S->exe, sizeof S->exe);
	return DW_OK;
}

/* Launches the workers of hs (counts may be DW_AUTO). */
static int
ssh_run(struct ssh_mgr *S, struct mf_host *hs, int nh, int *ids, int max_ids)
{
	char why[400];
	if (rt.role != RT_MASTER)
		return rt_set_err(0, "only the master adds workers"), DW_ESTATE;
	int err = ssh_count_cores(S, hs, nh, why, sizeof why);
	if (err != DW_OK)
		return rt_set_err(0, "%s", why), err;
	int n = 0;
	for (int i = 0; i < nh; i++)
		n += hs[i].count;
	S->hosts = hs;
	S->nhosts = nh;
	S->slot_host = malloc(sizeof(int) * (size_t)n);
	S->slot_ord = malloc(sizeof(int) * (size_t)n);
	int *got = malloc(sizeof(int) * (size_t)n);
	if (!S->slot_host || !S->slot_ord || !got) {
		free(got);
		return rt_set_err(0, "out of memory"), DW_ENOMEM;
	}
	for (int i = 0, k = 0; i < nh; i++)
		for (int j = 0; j < hs[i].count; j++, k++)
			S->slot_host[k] = i, S->slot_ord[k] = j;
	dw_manager m = {.name = "ssh",
	                .launch = ssh_launch,
	                .manage = ssh_manage,
	                .kill = ssh_kill,
	                .self = S};
	int r = dw_addprocs_with(&m, n, got);
	if (r > 0 && r < n && S->o.remove_partial) {
		char msg[600];
		snprintf(msg, sizeof msg, "%s", dw_errmsg());
		dw_rmprocs(got, r, 2000);
		rt_set_err(0, "%s", msg);
		r = DW_EIO;
	}
	for (int i = 0; ids && i < r && i < max_ids; i++)
		ids[i] = got[i];
	free(got);
	return r;
}

static void
ssh_release(struct ssh_mgr *S)
{
	free(S->words_buf);
	free(S->slot_host);
	free(S->slot_ord);
}

DW_API int
dw_addprocs_ssh(const dw_ssh_host *hosts, int nhosts,
                const dw_ssh_options *opts, int *ids, int max_ids)
{
	if (!hosts || nhosts <= 0)
		return rt_set_err(0, "no host to launch on"), DW_EINVAL;
	struct mf_host *hs = calloc((size_t)nhosts, sizeof *hs);
	if (!hs)
		return DW_ENOMEM;
	char why[300];
	for (int i = 0; i < nhosts; i++) {
		const char *d = hosts[i].host ? hosts[i].host : "";
		const char *b = hosts[i].bind;
		if (mf_parse_dest(d, strlen(d), &hs[i], why, sizeof why) < 0 ||
		    (b && mf_parse_bind(b, strlen(b), &hs[i], why, sizeof why) <
		              0) ||
		    hosts[i].count < DW_AUTO || hosts[i].count > MF_COUNT_MAX) {
			if (hosts[i].count < DW_AUTO ||
			    hosts[i].count > MF_COUNT_MAX)
				snprintf(why, sizeof why,
				         "the count %d is not from 1 to %d "
				         "or DW_AUTO",
				         hosts[i].count, MF_COUNT_MAX);
			rt_set_err(0, "host %d: %s", i, why);
			free(hs);
			return DW_EINVAL;
		}
		hs[i].count = hosts[i].count ? hosts[i].count : 1;
	}
	struct ssh_mgr S;
	int r = ssh_prepare(&S, opts);
	if (r == DW_OK)
		r = ssh_run(&S, hs, nhosts, ids, max_ids);
	ssh_release(&S);
	free(hs);
	return r;
}

DW_API int
dw_addprocs_machinefile(const char *path, const dw_ssh_options *opts, int *ids,
                        int max_ids)
{
	struct mf_host *hs;
	int nh;
	char why[400];
	int err = mf_read(path ? path : "", &hs, &nh, why, sizeof why);
	if (err != DW_OK)
		return rt_set_err(0, "%s", why), err;
	struct ssh_mgr S;
	int r = ssh_prepare(&S, opts);
	if (r == DW_OK)
		r = ssh_run(&S, hs, nh, ids, max_ids);
	ssh_release(&S);
	free(hs);
	return r;
}
