/*
 * Liveness judged fairly: a master stopped (SIGSTOP) for 1.5x the
 * heartbeat timeout keeps every worker when it resumes; a worker stopped
 * with SIGSTOP is declared dead no sooner than the timeout after the
 * master last heard it and soon after, and its pending calls fail with
 * DW_EEXITED.  The heartbeat settings come from
 * DWORK_HEARTBEAT_MS / DWORK_HEARTBEAT_TIMEOUT_MS, which override the
 * options, and bad values are refused with a clear message.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

#include "rt_util.h"
#include "testutil.h"

#define PERIOD_MS  100
#define TIMEOUT_MS 600
#define NW         3

static double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int
pid_of(int w)
{
	void *res;
	size_t n;
	int pid = -1;
	if (dw_remotecall_fetch(w, "whoami", NULL, 0, &res, &n) == DW_OK) {
		pid = ((int *)res)[1];
		free(res);
	}
	return pid;
}

struct slow_call {
	int w, ms, err;
	double end;
	char msg[200];
};

static void *
slow_caller(void *p)
{
	struct slow_call *s = p;
	void *res = NULL;
	size_t n;
	s->err = dw_remotecall_fetch(s->w, "sleeper", &s->ms, sizeof s->ms,
	                             &res, &n);
	s->end = now_ms();
	snprintf(s->msg, sizeof s->msg, "%s", dw_errmsg());
	free(res);
	return NULL;
}

/* The master, in a child process the test stops and resumes.  Options
 * say 200/5000 ms; the environment (100/600) must win.  Three executors:
 * two run the sleepers pending when worker 2 stops, one answers the echo
 * that says when the master last heard from it. */
static int
master(int ready_fd, int go_fd)
{
	dw_options o = {
	    .heartbeat_ms = 200, .heartbeat_timeout_ms = 5000, .executors = 3};
	int argc = 1;
	char *args[] = {"liveness", NULL}, **argv = args;
	REQUIRE(dw_init_opts(&argc, &argv, &o) == DW_OK);
	int ids[NW], pids[NW];
	REQUIRE(dw_addprocs(NW, NULL, ids) == NW);
	for (int i = 0; i < NW; i++)
		REQUIRE((pids[i] = pid_of(ids[i])) > 0);
	char b = 'r';
	REQUIRE(write(ready_fd, &b, 1) == 1);
	REQUIRE(read(go_fd, &b, 1) == 1); /* stopped and resumed by now */
	usleep(2 * TIMEOUT_MS * 1000);    /* time for a false judgement */
	CHECK(dw_nworkers() == NW);
	for (int i = 0; i < NW; i++) {
		CHECK(pid_of(ids[i]) == pids[i]);
		CHECK(kill(pids[i], 0) == 0);
	}
	printf("liveness: master stopped %d ms: %d of %d workers alive\n",
	       TIMEOUT_MS * 3 / 2, dw_nworkers(), NW);

	/* a worker that really stopped: two pending calls fail */
	struct slow_call s = {.w = ids[0], .ms = 5000};
	pthread_t th;
	pthread_create(&th, NULL, slow_caller, &s);
	dw_future *f;
	int ms = 5000;
	CHECK(dw_remotecall(ids[0], "sleeper", &ms, sizeof ms, &f) == DW_OK);
	usleep(150000);
	/* the master reads the echo's answer after heard_by, so it last
	 * heard from the worker then or later, whatever the load */
	void *res;
	size_t n;
	double heard_by = now_ms();
	CHECK(dw_remotecall_fetch(ids[0], "echo", "x", 1, &res, &n) == DW_OK);
	free(res);
	double t0 = now_ms();
	kill(pids[0], SIGSTOP);
	pthread_join(th, NULL);
	double took = s.end - t0;
	CHECK(s.err == DW_EEXITED);
	CHECK(strstr(s.msg, "no answer to heartbeats for 600 ms") != NULL);
	CHECK(dw_future_wait_timeout(f, 100) == DW_EEXITED);
	dw_future_free(f);
	/* never judged before the timeout (1 ms: rt_now_ms truncates) */
	CHECK(s.end - heard_by >= TIMEOUT_MS - 1);
	/* and well before the 5000 ms the options asked for; on a loaded
	 * machine the monitor may itself be starved and re-probe first
	 * (it says so), so the bound leaves room for one such round */
	CHECK(took <= 3 * TIMEOUT_MS);
	printf("liveness: stopped worker declared dead after %.0f ms, "
	       "%.0f ms after its last answer began (period %d ms, timeout "
	       "%d ms): %s\n",
	       took, s.end - heard_by, PERIOD_MS, TIMEOUT_MS, s.msg);
	CHECK(dw_remotecall_fetch(ids[1], "echo", "x", 1, &res, &n) == DW_OK);
	free(res);
	CHECK(dw_nworkers() == NW - 1);
	dw_finalize();
	return tu_report("runtime_liveness master") ? 1 : 0;
}

static char
proc_state(int pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] ? p[2] : '?';
}

static void
test_master_stopped(void)
{
	int ready[2], go[2];
	REQUIRE(pipe(ready) == 0 && pipe(go) == 0);
	setenv("DWORK_HEARTBEAT_MS", "100", 1);
	setenv("DWORK_HEARTBEAT_TIMEOUT_MS", "600", 1);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(ready[0]), close(go[1]);
		exit(master(ready[1], go[0]));
	}
	close(ready[1]), close(go[0]);
	char b;
	REQUIRE(read(ready[0], &b, 1) == 1);
	kill(pid, SIGSTOP);
	usleep(50000);
	CHECK(proc_state(pid) == 'T');
	usleep(TIMEOUT_MS * 3 / 2 * 1000 - 50000);
	kill(pid, SIGCONT);
	b = 'c';
	CHECK(write(go[1], &b, 1) == 1);
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(ready[0]), close(go[1]);
	unsetenv("DWORK_HEARTBEAT_MS");
	unsetenv("DWORK_HEARTBEAT_TIMEOUT_MS");
}

/* dw_init in a child with env set; returns its exit code: 0 when init
 * failed with DW_EINVAL naming want in its message. */
static int
bad_setting(const char *var, const char *val, const char *want)
{
	pid_t pid = fork();
	if (pid == 0) {
		setenv(var, val, 1);
		int argc = 1;
		char *args[] = {"liveness", NULL}, **argv = args;
		int rc = dw_init_opts(&argc, &argv, NULL);
		exit(rc == DW_EINVAL && strstr(dw_errmsg(), want) ? 0 : 1);
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && !strncmp(argv[1], "--dwork-", 8))
		dw_init(&argc, &argv); /* a worker: never returns */
	test_master_stopped();
	CHECK(bad_setting("DWORK_HEARTBEAT_MS", "soon",
	                  "DWORK_HEARTBEAT_MS='soon' is not valid") == 0);
	CHECK(bad_setting("DWORK_HEARTBEAT_TIMEOUT_MS", "-5",
	                  "DWORK_HEARTBEAT_TIMEOUT_MS='-5'") == 0);
	CHECK(bad_setting("DWORK_HEARTBEAT_TIMEOUT_MS", "500",
	                  "must be longer than the heartbeat period") == 0);
	return tu_report("runtime_liveness");
}
