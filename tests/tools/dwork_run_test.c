/*
 * `dwork run`: the real tool starting this test binary as a master in a
 * child mode, with real local workers, tracing and the merge at the end.
 * The parent checks the merged trace, exit statuses and the tool's
 * command line errors.  Each run is its own process group, and the test
 * is a subreaper, so no worker of a run can outlive the check.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "prv_check.h"
#include "rt_util.h"
#include "testutil.h"

#define RUN_TIMEOUT_MS 60000

/* ---- child modes: this binary as the program `dwork run` starts ---- */

static const char *const child_args[] = {"--child", "alpha", "--trace", "-x",
                                         "b c"};
#define NCHILD_ARGS 5

static void
child_calls(void)
{
	int ids[4];
	CHECK_EQ_U64(dw_workers(ids, 4), 2);
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 3; k++) {
			void *res = NULL;
			size_t n = 0;
			CHECK(dw_remotecall_fetch(ids[i], "echo", &k, sizeof k,
			                          &res, &n) == DW_OK);
			CHECK(n == sizeof k && !memcmp(res, &k, n));
			free(res);
		}
	dw_future *f;
	int ms = 20;
	const void *r;
	size_t n;
	REQUIRE(dw_remotecall(ids[1], "sleeper", &ms, sizeof ms, &f) == DW_OK);
	CHECK(dw_future_fetch(f, &r, &n) == DW_OK && n == sizeof ms);
	dw_future_free(f);
}

/* Started as `dwork run --trace=DIR -p 2 EXE --child alpha --trace -x 'b c'`:
 * the arguments arrive untouched, the settings through the environment. */
static int
child_main(int argc, char **argv)
{
	CHECK_EQ_U64(argc, NCHILD_ARGS + 1);
	for (int i = 0; i < NCHILD_ARGS && i + 1 < argc; i++)
		CHECK(!strcmp(argv[i + 1], child_args[i]));
	const char *procs = getenv("DWORK_PROCS");
	const char *trace = getenv("DWORK_TRACE");
	CHECK(procs && !strcmp(procs, "2"));
	CHECK(trace && *trace);
	CHECK(getenv("DWORK_TOOL") != NULL);
	CHECK_EQ_U64(dw_myid(), 1);
	CHECK_EQ_U64(dw_nworkers(), 2);
	CHECK_EQ_U64(dw_nprocs(), 3);
	child_calls();
	dw_finalize();
	return tu_report("dwork_run child") ? 1 : 0;
}

static int
child_dispatch(int argc, char **argv)
{
	if (dw_init(&argc, &argv) != DW_OK) /* workers stay inside */
		return 10;
	if (!strcmp(argv[1], "--child-exit")) /* a status to propagate */
		return argc > 2 ? atoi(argv[2]) : 11;
	return child_main(argc, argv);
}

/* ---- parent: runs the tool and checks what it did ---- */

static char self_exe[4096];
static char tmp[512];

static void
start_child(char *const *argv, const char *out)
{
	setpgid(0, 0);
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		_exit(120);
	dup2(fd, 1);
	dup2(fd, 2);
	close(fd);
	execv(argv[0], argv);
	_exit(121);
}

/* Waits for the process group's leader, then for every process it left
 * (workers are reparented to us, the subreaper); kills what remains
 * after the deadline.  Returns the leader's wait status. */
static int
wait_group(pid_t pid)
{
	int st = -1, got_leader = 0;
	for (int ms = 0; ms < RUN_TIMEOUT_MS; ms += 5) {
		int s;
		pid_t w = waitpid(-pid, &s, WNOHANG);
		if (w == pid)
			st = s, got_leader = 1;
		if (w < 0 && errno == ECHILD)
			return st;
		if (w <= 0)
			usleep(5000);
	}
	fprintf(stderr, "run %d: %s still running; killed\n", (int)pid,
	        got_leader ? "its workers are" : "it is");
	kill(-pid, SIGKILL);
	while (waitpid(-pid, got_leader ? NULL : &st, 0) > 0)
		;
	CHECK(!"every process of a run ends by itself");
	return got_leader ? st : -1;
}

/* Runs `dwork ARGS...` with output into tmp/out; returns the exit
 * status, 128 + signal when killed. */
static int
run_tool(const char *const *args)
{
	char *argv[32], out[600];
	int n = 0;
	argv[n++] = (char *)DWORK_TOOL_PATH;
	for (; args[n - 1] && n < 31; n++)
		argv[n] = (char *)args[n - 1];
	argv[n] = NULL;
	snprintf(out, sizeof out, "%s/out", tmp);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		start_child(argv, out);
	setpgid(pid, pid);
	int st = wait_group(pid);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

/* 1 when tmp/out holds s; prints the output when it does not. */
static int
out_has(const char *s)
{
	char path[600], buf[16384];
	snprintf(path, sizeof path, "%s/out", tmp);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	if (strstr(buf, s))
		return 1;
	fprintf(stderr, "expected '%s' in the output:\n%s\n", s, buf);
	return 0;
}

/* The application and task counts of a .prv header line
 * "#Paraver (date at hh:mm):FTIME_ns:NODES(CPUS,..):NAPPL:NTASKS(...". */
static int
prv_counts(const char *path, unsigned *nappl, unsigned *ntasks)
{
	char line[4096];
	FILE *f = fopen(path, "r");
	int ok = f && fgets(line, sizeof line, f);
	if (f)
		fclose(f);
	if (!ok || strncmp(line, "#Paraver (", 10))
		return -1;
	char *p = strstr(line, "):"), *e;
	if (!p || !(p = strchr(p + 2, ':')) || !(p = strchr(p, ')')) ||
	    p[1] != ':')
		return -1;
	*nappl = (unsigned)strtoul(p + 2, &e, 10);
	if (*e != ':')
		return -1;
	*ntasks = (unsigned)strtoul(e + 1, &e, 10);
	return *e == '(' ? 0 : -1;
}

static int
count_suffix(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	size_t sl = strlen(suffix);
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		n += l > sl && !strcmp(e->d_name + l - sl, suffix);
	}
	if (d)
		closedir(d);
	return n;
}

static void
test_traced_run(void)
{
	char dir[600], prv[720], prefix[700];
	snprintf(dir, sizeof dir, "--trace=%s/t", tmp);
	const char *args[] = {"run",         dir,           "-p",
	                      "2",           self_exe,      child_args[0],
	                      child_args[1], child_args[2], child_args[3],
	                      child_args[4], NULL};
	CHECK_EQ_U64(run_tool(args), 0);
	CHECK(out_has("dwork_run child: ok"));
	CHECK(out_has("dwork: trace in"));
	snprintf(prefix, sizeof prefix, "%s/t/trace", tmp);
	snprintf(prv, sizeof prv, "%s.prv", prefix);
	unsigned nappl = 0, ntasks = 0;
	CHECK(prv_counts(prv, &nappl, &ntasks) == 0);
	CHECK_EQ_U64(nappl, 1);
	CHECK_EQ_U64(ntasks, 3);
	char err[512];
	pc_result r;
	if (prv_check(prefix, PC_ALL, &r, err, sizeof err)) {
		fprintf(stderr, "%s\n", err);
		CHECK(!"the merged trace passes the strict checker");
	}
	CHECK(r.comms >= 2 * 7);
}

static void
test_no_merge(void)
{
	char dir[600], path[700];
	snprintf(dir, sizeof dir, "--trace=%s/n", tmp);
	const char *args[] = {"run",    "--no-merge",   dir, "-p", "1",
	                      self_exe, "--child-exit", "0", NULL};
	CHECK_EQ_U64(run_tool(args), 0);
	struct stat st;
	snprintf(path, sizeof path, "%s/n", tmp);
	CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK_EQ_U64(count_suffix(path, ".dwp"), 2); /* master, worker */
	snprintf(path, sizeof path, "%s/n/trace.prv", tmp);
	CHECK(stat(path, &st) != 0);
}

static void
test_status(void)
{
	const char *seven[] = {"run",          "-p", "1", self_exe,
	                       "--child-exit", "7",  NULL};
	CHECK_EQ_U64(run_tool(seven), 7);
	const char *zero[] = {"run", "--", self_exe, "--child-exit", "0", NULL};
	CHECK_EQ_U64(run_tool(zero), 0);
	const char *sig[] = {"run", "/bin/sh", "-c", "kill -TERM $$", NULL};
	CHECK_EQ_U64(run_tool(sig), 128 + SIGTERM);
	const char *none[] = {"run", "-p", "1", "/nonexistent/program", NULL};
	CHECK_EQ_U64(run_tool(none), 127);
	CHECK(out_has("cannot run '/nonexistent/program'"));
}

static void
test_usage(void)
{
	const char *help[] = {"run", "--help", NULL};
	CHECK_EQ_U64(run_tool(help), 0);
	CHECK(out_has("usage: dwork run"));
	const char *bad[] = {"run", "--bogus", self_exe, NULL};
	CHECK_EQ_U64(run_tool(bad), 2);
	CHECK(out_has("unknown option '--bogus'"));
	const char *px[] = {"run", "-p", "x", self_exe, NULL};
	CHECK_EQ_U64(run_tool(px), 2);
	CHECK(out_has("bad number of workers 'x'"));
	const char *pnone[] = {"run", "-p", NULL};
	CHECK_EQ_U64(run_tool(pnone), 2);
	const char *noprog[] = {"run", "--trace", "-p", "2", NULL};
	CHECK_EQ_U64(run_tool(noprog), 2);
	CHECK(out_has("no program to run"));
	const char *empty[] = {"run", "--trace=", self_exe, NULL};
	CHECK_EQ_U64(run_tool(empty), 2);
}

int
main(int argc, char **argv)
{
	if (argc > 1 && (!strncmp(argv[1], "--child", 7) ||
	                 !strcmp(argv[1], "--dwork-worker")))
		return child_dispatch(argc, argv);
#ifndef DWORK_TOOL_PATH
	printf("dwork_run: no dwork tool in this build; skipped\n");
	return TEST_SKIP;
#else
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
	REQUIRE(n > 0);
	self_exe[n] = 0;
	snprintf(tmp, sizeof tmp, "%s", tu_tmpdir("dwork-run"));
	unsetenv("DWORK_PROCS");
	unsetenv("DWORK_TRACE");
	unsetenv("DWORK_TRACE_NO_MERGE");
	REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
	test_usage();
	test_status();
	test_traced_run();
	test_no_merge();
	tu_rmtree(tmp);
	return tu_report("dwork_run");
#endif
}
