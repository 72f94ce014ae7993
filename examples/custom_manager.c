/*
 * A cluster manager written against the public interface only
 * (include/dwork/dwork.h): it starts each worker with posix_spawn through
 * a wrapper command of the user's choice (here `env`, standing in for a
 * container runtime, `nice`, `taskset`, a batch system's launcher, ...),
 * gives it the cookie on its stdin, reads its address line and hands it
 * to the runtime with dw_launched.  docs/managers.md walks through it.
 *
 *   ./custom_manager            adds 3 workers through the manager,
 *                               calls each, removes them
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dwork/dwork.h>

extern char **environ;

/* What the manager keeps per worker (dw_worker_config.data). */
struct my_worker {
	pid_t pid;
	int to_stdin; /* kept open: the worker may watch it */
};

/* The manager's settings (dw_manager.self). */
struct my_manager {
	const char *wrapper; /* the command that runs the worker */
	char exe[4096];
};

static int
hostname_of(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	char buf[300];
	snprintf(buf, sizeof buf, "worker %d, pid %d, DEMO=%s", dw_myid(),
	         (int)getpid(), getenv("DEMO") ? getenv("DEMO") : "");
	return dw_reply_set(r, buf, strlen(buf));
}
DW_REGISTER(hostname_of)

/* Reads "dwork-worker-address HOST:PORT" from fd (10 s at most). */
static int
read_address(int fd, dw_worker_config *wc)
{
	char line[512];
	size_t n = 0;
	while (n + 1 < sizeof line) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 10000) <= 0 || read(fd, line + n, 1) != 1)
			return -1;
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	char *colon = strrchr(line, ':');
	if (strncmp(line, "dwork-worker-address ", 21) || !colon)
		return -1;
	*colon = 0;
	snprintf(wc->host, sizeof wc->host, "%.255s", line + 21);
	wc->port = atoi(colon + 1);
	return 0;
}

/* launch: start n workers, report each with dw_launched. */
static int
my_launch(void *self, int n, dw_launch *l)
{
	struct my_manager *m = self;
	int started = 0;
	for (int i = 0; i < n; i++) {
		int in[2], out[2];
		if (pipe(in) < 0 || pipe(out) < 0)
			return DW_ESYS;
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, in[0], 0);
		posix_spawn_file_actions_adddup2(&fa, out[1], 1);
		posix_spawn_file_actions_addclose(&fa, in[1]);
		posix_spawn_file_actions_addclose(&fa, out[0]);
		char *argv[] = {(char *)m->wrapper,
		                "DEMO=wrapped",
		                m->exe,
		                "--dwork-worker",
		                "--dwork-bind",
		                "127.0.0.1",
		                NULL};
		pid_t pid;
		int e =
		    posix_spawnp(&pid, m->wrapper, &fa, NULL, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
		close(in[0]);
		close(out[1]);
		if (e != 0) {
			close(in[1]);
			close(out[0]);
			return DW_ENOENT;
		}
		/* the cookie goes on stdin, never on a command line */
		dprintf(in[1], "%s\n", dw_launch_cookie(l));
		struct my_worker *w = malloc(sizeof *w);
		*w = (struct my_worker){.pid = pid, .to_stdin = in[1]};
		dw_worker_config wc = {.id = dw_launch_id(l, i),
		                       .fd = -1,
		                       .pid = pid,
		                       .out_fd = -1,
		                       .err_fd = -1,
		                       .data = w};
		if (read_address(out[0], &wc) == 0) {
			/* the runtime connects, authenticates, and from now
			 * on forwards what the worker prints */
			wc.out_fd = out[0];
			started += dw_launched(l, &wc) == DW_OK;
		} else { /* it never said where it listens */
			close(out[0]);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(w->to_stdin);
			free(w);
		}
	}
	return started ? DW_OK : DW_EIO;
}

/* manage: told of each worker's life; FINALIZE releases what we hold. */
static int
my_manage(void *self, dw_worker_config *wc, int op)
{
	(void)self;
	struct my_worker *w = wc->data;
	if (!w)
		return DW_OK;
	if (op == DW_MANAGE_INTERRUPT) {
		kill(w->pid, SIGINT);
	} else if (op == DW_MANAGE_FINALIZE) {
		close(w->to_stdin);
		waitpid(w->pid, NULL, 0); /* it exits once its link closed */
		free(w);
		wc->data = NULL;
	}
	return DW_OK;
}

/* kill: end a worker that does not leave by itself. */
static int
my_kill(void *self, dw_worker_config *wc)
{
	(void)self;
	struct my_worker *w = wc->data;
	if (w)
		kill(w->pid, SIGKILL);
	return DW_OK;
}

int
main(int argc, char **argv)
{
	if (dw_init(&argc, &argv) != DW_OK) /* workers never return */
		return 1;
	struct my_manager mm = {.wrapper = "env"};
	ssize_t k = readlink("/proc/self/exe", mm.exe, sizeof mm.exe - 1);
	mm.exe[k > 0 ? k : 0] = 0;
	dw_manager m = {.name = "wrapped",
	                .launch = my_launch,
	                .manage = my_manage,
	                .kill = my_kill,
	                .self = &mm};
	int ids[3];
	int n = dw_addprocs_with(&m, 3, ids);
	if (n < 0) {
		fprintf(stderr, "custom manager: %s\n", dw_errmsg());
		return 1;
	}
	for (int i = 0; i < n; i++) {
		void *res;
		size_t len;
		if (dw_remotecall_fetch(ids[i], "hostname_of", NULL, 0, &res,
		                        &len) != DW_OK) {
			fprintf(stderr, "call: %s\n", dw_errmsg());
			return 1;
		}
		printf("%.*s\n", (int)len, (char *)res);
		dw_free(res);
	}
	dw_rmprocs(ids, n, 5000);
	dw_finalize();
	return n == 3 ? 0 : 1;
}
