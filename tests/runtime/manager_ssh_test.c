/*
 * The ssh manager against a real sshd on a loopback port (its own host
 * key and authorized key): workers on a host, counts and "auto", working
 * directory, environment, bind ports, a tunnel through ssh, interrupts
 * and kills reaching the remote process, machine files and
 * --machine-file, every kind of failure named, tracing with files
 * brought back over the link, and the time to add 8 workers over ssh
 * beside 8 local ones.  Skipped (77) when sshd cannot run here.
 */
#include <dirent.h>
#include <pthread.h>

#include "manager_util.h"
#include "prv_check.h"
#include "rt_util.h"
#include "runtime/rt.h"
#include "testutil.h"

static struct sshd sd;
static char spec[128]; /* 127.0.0.1:PORT */

static int
call_ok(int w)
{
	void *res;
	size_t n;
	int ok = dw_remotecall_fetch(w, "echo", "hi", 2, &res, &n) == DW_OK &&
	         n == 2 && !memcmp(res, "hi", 2);
	if (ok)
		free(res);
	return ok;
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

/* The worker's parent: an ssh session, not this process. */
static int
ppid_of(int pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	int pp = -1;
	if (f && fgets(buf, sizeof buf, f)) {
		char *p = strrchr(buf, ')');
		if (p)
			sscanf(p + 2, "%*c %d", &pp);
	}
	if (f)
		fclose(f);
	return pp;
}

static int
gone(int pid, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return 1;
		char path[64], st = 0, buf[256];
		snprintf(path, sizeof path, "/proc/%d/stat", pid);
		FILE *f = fopen(path, "r");
		if (f && fgets(buf, sizeof buf, f)) {
			char *p = strrchr(buf, ')');
			if (p)
				st = p[2];
		}
		if (f)
			fclose(f);
		if (st == 'Z')
			return 1; /* dead, its parent not done reaping */
		usleep(10000);
	}
	return 0;
}

static void
test_basic(void)
{
	dw_ssh_host h = {.host = spec, .count = 2};
	int ids[4] = {0};
	CHECK(dw_addprocs_ssh(&h, 1, NULL, ids, 4) == 2);
	for (int i = 0; i < 2; i++) {
		CHECK(call_ok(ids[i]));
		int pid = pid_of(ids[i]);
		CHECK(pid > 0 && ppid_of(pid) != getpid());
	}
	/* removal: the remote processes exit */
	int p0 = pid_of(ids[0]), p1 = pid_of(ids[1]);
	CHECK(dw_rmprocs(ids, 2, 5000) == DW_OK);
	CHECK(gone(p0, 3000) && gone(p1, 3000));
}

static void
test_options(const char *dir)
{
	const char *env[] = {"RT_TEST_VAR=it's a $HOME \"x\"", NULL};
	const char *flags[] = {"-o", "ServerAliveInterval=5", NULL};
	char cmd[1300];
	snprintf(cmd, sizeof cmd, "%s", sd.ssh_cmd);
	dw_ssh_options o = {
	    .ssh = cmd, .ssh_flags = flags, .dir = dir, .env = env};
	dw_ssh_host h = {.host = spec, .count = 1};
	int id;
	REQUIRE(dw_addprocs_ssh(&h, 1, &o, &id, 1) == 1);
	void *res;
	size_t n;
	REQUIRE(dw_remotecall_fetch(id, "cwd", NULL, 0, &res, &n) == DW_OK);
	char want[1200];
	snprintf(want, sizeof want, "%s|it's a $HOME \"x\"", dir);
	if (n != strlen(want) || memcmp(res, want, n)) {
		fprintf(stderr, "cwd|env: got '%.*s', want '%s'\n", (int)n,
		        (char *)res, want);
		tu_failures++;
	}
	free(res);
	dw_rmprocs(&id, 1, 5000);

	/* auto: one worker per core of the host */
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	dw_ssh_host a = {.host = spec, .count = DW_AUTO};
	int ids[64];
	int got = dw_addprocs_ssh(&a, 1, NULL, ids, 64);
	CHECK(got == cores);
	for (int i = 0; i < got; i++)
		CHECK(call_ok(ids[i]));
	if (got > 0)
		dw_rmprocs(ids, got, 5000);

	/* a bind address with a port: the worker listens there */
	int port = mu_free_port("127.0.0.1");
	char bind[64];
	snprintf(bind, sizeof bind, "127.0.0.1:%d", port);
	dw_ssh_host b = {.host = spec, .count = 1, .bind = bind};
	REQUIRE(dw_addprocs_ssh(&b, 1, NULL, &id, 1) == 1);
	pthread_mutex_lock(&rt.lock);
	struct worker *w = cl_find(id);
	CHECK(w && !strcmp(w->addr, bind));
	pthread_mutex_unlock(&rt.lock);
	CHECK(call_ok(id));
	dw_rmprocs(&id, 1, 5000);

	/* through the tunnel: the worker listens on its loopback only */
	dw_ssh_options t = {.tunnel = 1};
	REQUIRE(dw_addprocs_ssh(&h, 1, &t, &id, 1) == 1);
	CHECK(call_ok(id));
	void *big_res;
	size_t big_n, want_n = 3u << 20;
	CHECK(dw_remotecall_fetch(id, "big", &want_n, sizeof want_n, &big_res,
	                          &big_n) == DW_OK &&
	      big_n == want_n);
	if (big_n == want_n)
		free(big_res);
	dw_rmprocs(&id, 1, 5000);
}

/* dw_interrupt and a stuck worker's kill reach the remote process. */
static void
test_signals(void)
{
	dw_ssh_host h = {.host = spec, .count = 2};
	int ids[2];
	REQUIRE(dw_addprocs_ssh(&h, 1, NULL, ids, 2) == 2);
	dw_future *fut;
	REQUIRE(dw_remotecall(ids[0], "until_interrupted", NULL, 0, &fut) ==
	        DW_OK);
	CHECK(interrupt_until_done(ids[0], fut) == DW_EINTR);
	const void *r;
	size_t n;
	/* the interrupted call fails as such (its function saw it) */
	CHECK(dw_future_fetch_timeout(fut, &r, &n, 5000) == DW_EINTR &&
	      strstr(dw_errmsg(), "was interrupted"));
	dw_future_free(fut);
	/* stopped: heartbeats declare it dead, and it is killed there */
	int pid = pid_of(ids[1]);
	REQUIRE(pid > 0);
	kill(pid, SIGSTOP);
	double t0 = mu_now();
	void *res;
	size_t len;
	int rc;
	/* a call answered before the stop took effect returns its result */
	while ((rc = dw_remotecall_fetch_timeout(ids[1], "echo", "x", 1, &res,
	                                         &len, 300)) != DW_EEXITED &&
	       mu_now() - t0 < 30)
		if (rc == DW_OK)
			free(res);
	/* declared dead (3 s of silence), not left hanging */
	CHECK(mu_now() - t0 < 25);
	CHECK(gone(pid, 5000));
	CHECK(call_ok(ids[0]));
	dw_rmprocs(ids, 1, 5000);
}

/* Shows the message a failure gave, as a user would see it. */
#define SHOW() printf("  message: %s\n", dw_errmsg())

static void
test_failures(void)
{
	int ids[4], zombies_before = waitpid(-1, NULL, WNOHANG);
	(void)zombies_before;
	/* nothing listens on port 1 */
	dw_ssh_host closed = {.host = "127.0.0.1:1", .count = 1};
	CHECK(dw_addprocs_ssh(&closed, 1, NULL, ids, 4) < 0);
	SHOW();
	CHECK(strstr(dw_errmsg(), "on 127.0.0.1") &&
	      strstr(dw_errmsg(), "ssh failed (status 255)") &&
	      strstr(dw_errmsg(), "Connection refused"));
	dw_ssh_host unknown = {.host = "no-such-host.invalid", .count = 1};
	CHECK(dw_addprocs_ssh(&unknown, 1, NULL, ids, 4) < 0);
	SHOW();
	CHECK(strstr(dw_errmsg(), "no-such-host.invalid") &&
	      strstr(dw_errmsg(), "resolve"));
	/* the remote program does not exist */
	dw_ssh_options bad_exe = {.exe = "/nonexistent/worker"};
	dw_ssh_host h = {.host = spec, .count = 1};
	CHECK(dw_addprocs_ssh(&h, 1, &bad_exe, ids, 4) < 0);
	SHOW();
	CHECK(strstr(dw_errmsg(), "exited with status 127") &&
	      strstr(dw_errmsg(), "/nonexistent/worker"));
	/* no such working directory there */
	dw_ssh_options bad_dir = {.dir = "/nonexistent/dir"};
	CHECK(dw_addprocs_ssh(&h, 1, &bad_dir, ids, 4) < 0);
	SHOW();
	CHECK(strstr(dw_errmsg(), "/nonexistent/dir") != NULL);
	/* no ssh program */
	dw_ssh_options no_ssh = {.ssh = "/nonexistent/ssh -F x"};
	CHECK(dw_addprocs_ssh(&h, 1, &no_ssh, ids, 4) == DW_ENOENT);
	SHOW();
	CHECK(strstr(dw_errmsg(), "cannot run '/nonexistent/ssh'") != NULL);
	/* a key the server does not know */
	char wrong[1600];
	snprintf(wrong, sizeof wrong,
	         "ssh -o IdentitiesOnly=yes -o IdentityFile=%s/host_key "
	         "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
	         "-o LogLevel=ERROR -F /dev/null",
	         sd.dir);
	dw_ssh_options denied = {.ssh = wrong};
	CHECK(dw_addprocs_ssh(&h, 1, &denied, ids, 4) < 0);
	SHOW();
	CHECK(strstr(dw_errmsg(), "Permission denied") != NULL);
	/* auto on a host that cannot be reached */
	dw_ssh_host auto_closed = {.host = "127.0.0.1:1", .count = DW_AUTO};
	CHECK(dw_addprocs_ssh(&auto_closed, 1, NULL, ids, 4) < 0);
	SHOW();
	CHECK(strstr(dw_errmsg(), "cannot count its cores") &&
	      strstr(dw_errmsg(), "Connection refused"));
	/* bad specs are refused before anything runs */
	dw_ssh_host opt = {.host = "-oProxyCommand=touch /tmp/x", .count = 1};
	CHECK(dw_addprocs_ssh(&opt, 1, NULL, ids, 4) == DW_EINVAL);
	SHOW();
	CHECK(strstr(dw_errmsg(), "cannot start with '-'") != NULL);
	dw_ssh_host neg = {.host = spec, .count = -5};
	CHECK(dw_addprocs_ssh(&neg, 1, NULL, ids, 4) == DW_EINVAL);
	SHOW();
	/* partial: the good host's workers are kept, the bad one named */
	dw_ssh_host mix[2] = {{.host = spec, .count = 2},
	                      {.host = "127.0.0.1:1", .count = 1}};
	CHECK(dw_addprocs_ssh(mix, 2, NULL, ids, 4) == 2);
	SHOW();
	CHECK(strstr(dw_errmsg(), "2 of 3 workers started") &&
	      strstr(dw_errmsg(), "Connection refused"));
	CHECK(call_ok(ids[0]) && call_ok(ids[1]));
	dw_rmprocs(ids, 2, 5000);
	dw_ssh_options rp = {.remove_partial = 1};
	int before = dw_nworkers();
	CHECK(dw_addprocs_ssh(mix, 2, &rp, ids, 4) == DW_EIO);
	SHOW();
	CHECK(dw_nworkers() == before);
	/* none of those left a child behind (sshd is the only one) */
	CHECK(waitpid(-1, NULL, WNOHANG) == 0);
}

static void
test_machinefile(const char *dir)
{
	char path[700];
	snprintf(path, sizeof path, "%s/machines", dir);
	FILE *f = fopen(path, "w");
	REQUIRE(f);
	fprintf(f, "# two lines, three workers\n2*root@%s\n%s 127.0.0.1\n",
	        spec, spec);
	fclose(f);
	int ids[8];
	CHECK(dw_addprocs_machinefile(path, NULL, ids, 8) == 3);
	for (int i = 0; i < 3; i++)
		CHECK(call_ok(ids[i]));
	dw_rmprocs(ids, 3, 5000);
	f = fopen(path, "a");
	fprintf(f, "\n3*%s extra words\n", spec);
	fclose(f);
	CHECK(dw_addprocs_machinefile(path, NULL, ids, 8) == DW_EFORMAT);
	char want[800];
	snprintf(want, sizeof want, "%s:5: ", path);
	CHECK(strstr(dw_errmsg(), want) != NULL);
}

/* A child master: `--machine-file FILE` (or DWORK_MACHINE_FILE) in
 * dw_init; exits 0 when it got the workers. */
static int
machinefile_child(int argc, char **argv)
{
	if (dw_init(&argc, &argv) != DW_OK)
		return 10;
	if (argc != 2 || strcmp(argv[1], "rest")) /* the option was taken */
		return 11;
	int ids[8];
	int n = dw_workers(ids, 8);
	if (n != 2)
		return 12;
	for (int i = 0; i < n; i++)
		if (!call_ok(ids[i]))
			return 13;
	dw_finalize();
	return 0;
}

static int
run_child(const char *const *args, const char *env)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (env)
			putenv((char *)env);
		execv("/proc/self/exe", (char *const *)args);
		_exit(127);
	}
	int st;
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void
test_init_machinefile(const char *dir)
{
	char path[700], bad[700], arg[800], env[800];
	snprintf(path, sizeof path, "%s/m2", dir);
	snprintf(bad, sizeof bad, "%s/m3", dir);
	FILE *f = fopen(path, "w");
	REQUIRE(f);
	fprintf(f, "2*%s\n", spec);
	fclose(f);
	f = fopen(bad, "w");
	REQUIRE(f);
	fprintf(f, "%s\n0*%s\n", spec, spec);
	fclose(f);
	const char *a1[] = {"m",  "--mf-child", "--machine-file",
	                    path, "rest",       NULL};
	CHECK(run_child(a1, NULL) == 0);
	snprintf(arg, sizeof arg, "--machine-file=%s", path);
	const char *a2[] = {"m", "--mf-child", arg, "rest", NULL};
	CHECK(run_child(a2, NULL) == 0);
	snprintf(env, sizeof env, "DWORK_MACHINE_FILE=%s", path);
	const char *a3[] = {"m", "--mf-child", "rest", NULL};
	CHECK(run_child(a3, env) == 0);
	/* a malformed file: dw_init fails, naming file and line */
	const char *a4[] = {"m", "--mf-child", "--machine-file",
	                    bad, "rest",       NULL};
	CHECK(run_child(a4, NULL) == 10);
}

/* ---- tracing: workers on "another host" send their files back ---- */

static int
traced_child(const char *dir)
{
	dw_options o = {.trace = dir, .clock_sync_ms = 200};
	int argc = 1;
	char *args[] = {"traced", NULL}, **argv = args;
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 20;
	const char *env[] = {"DWORK_TEST_NO_SHARED_FS=1", NULL};
	dw_ssh_options so = {.env = env};
	dw_ssh_host h = {.host = spec, .count = 2};
	int ids[2];
	if (dw_addprocs_ssh(&h, 1, &so, ids, 2) != 2)
		return 21;
	for (int k = 0; k < 5; k++)
		for (int i = 0; i < 2; i++)
			if (!call_ok(ids[i]))
				return 22;
	int fd = open("/dev/null", O_WRONLY);
	dup2(fd, 1); /* the summary */
	dw_finalize();
	return 0;
}

static int
count_suffix(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name), s = strlen(suffix);
		n += l > s && !strcmp(e->d_name + l - s, suffix);
	}
	if (d)
		closedir(d);
	return n;
}

static void
test_tracing(const char *dir)
{
	char tdir[700];
	snprintf(tdir, sizeof tdir, "%s/trace", dir);
	const char *a[] = {"t", "--traced-child", tdir, NULL};
	REQUIRE(run_child(a, NULL) == 0);
	/* the workers' files came over the link: three processes */
	CHECK(count_suffix(tdir, ".dwp") == 3);
	char prefix[800], err[1024];
	snprintf(prefix, sizeof prefix, "%s/trace", tdir);
	pc_result r;
	if (prv_check(prefix, PC_ALL, &r, err, sizeof err) != 0) {
		fprintf(stderr, "strict checker: %s\n", err);
		tu_failures++;
	}
	char prv[900], line[4096];
	snprintf(prv, sizeof prv, "%s.prv", prefix);
	FILE *f = fopen(prv, "r");
	REQUIRE(f && fgets(line, sizeof line, f));
	unsigned ntasks = 0;
	char *p = strstr(line, "):1:");
	CHECK(p && sscanf(p + 4, "%u(", &ntasks) == 1 && ntasks == 3);
	/* calls to tasks 2 and 3 (communications from task 1) */
	int comms[4] = {0};
	while (fgets(line, sizeof line, f)) {
		unsigned v[10];
		if (sscanf(line, "3:%u:%u:%u:%u:%*u:%*u:%u:%u:%u:%u", &v[0],
		           &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
		           &v[7]) == 8 &&
		    v[2] == 1 && v[6] < 4)
			comms[v[6]]++;
	}
	fclose(f);
	CHECK(comms[2] >= 5 && comms[3] >= 5);
}

/* 8 workers over ssh to loopback beside 8 local ones. */
static void
test_figures(void)
{
	int ids[8];
	double t0 = mu_now();
	int nl = dw_addprocs(8, NULL, ids);
	double tl = mu_now() - t0;
	CHECK(nl == 8);
	if (nl > 0)
		dw_rmprocs(ids, nl, 5000);
	dw_ssh_host h = {.host = spec, .count = 8};
	t0 = mu_now();
	int ns = dw_addprocs_ssh(&h, 1, NULL, ids, 8);
	double ts = mu_now() - t0;
	CHECK(ns == 8);
	if (ns > 0)
		dw_rmprocs(ids, ns, 5000);
	printf("figure: time to add 8 workers: local %.3f s, ssh to loopback "
	       "%.3f s (%ld cores)\n",
	       tl, ts, sysconf(_SC_NPROCESSORS_ONLN));
}

int
main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--mf-child")) {
		memmove(&argv[1], &argv[2],
		        sizeof(char *) * (size_t)(argc - 1));
		return machinefile_child(argc - 1, argv);
	}
	if (argc > 2 && !strcmp(argv[1], "--traced-child")) {
		snprintf(spec, sizeof spec, "%s", getenv("MU_SPEC"));
		return traced_child(argv[2]);
	}
	dw_options o = {.heartbeat_ms = 200, .heartbeat_timeout_ms = 3000};
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	char dir[600];
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("ssh"));
	if (mu_ssh_keys(&sd, dir) < 0 ||
	    mu_sshd_start(&sd, "127.0.0.1", 0, NULL) < 0) {
		printf("SKIP: %s\n", sd.why);
		tu_rmtree(dir);
		dw_finalize();
		return TEST_SKIP;
	}
	setenv("DWORK_SSH_COMMAND", sd.ssh_cmd, 1);
	snprintf(spec, sizeof spec, "127.0.0.1:%d", sd.port);
	setenv("MU_SPEC", spec, 1);
	test_basic();
	test_options(dir);
	test_signals();
	test_failures();
	test_machinefile(dir);
	test_init_machinefile(dir);
	test_tracing(dir);
	test_figures();
	dw_finalize();
	mu_sshd_stop(&sd);
	if (!tu_failures)
		tu_rmtree(dir);
	else
		fprintf(stderr, "files kept in %s\n", dir);
	return tu_report("manager_ssh");
}
