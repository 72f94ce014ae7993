/*
 * The Slurm manager against a real single-node Slurm: the test starts
 * munged, slurmctld and slurmd of its own (a minimal slurm.conf in a
 * scratch directory, free ports), then runs a master under `salloc -n 2`
 * that adds one worker per task with srun, calls them, sees their output
 * come back labelled by worker, fails clearly when srun cannot make the
 * step, interrupts a call on one (DW_EINTR; the worker lives on), and
 * traces them (files brought back over the link).  Every
 * daemon is stopped at the end.  Skipped (77), with the reason, when
 * Slurm cannot run here.
 */
#include <dirent.h>
#include <fcntl.h>

#include "manager_util.h"
#include "rt_util.h"
#include "testutil.h"

static int
slurm_task(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	const char *t = getenv("SLURM_PROCID"), *j = getenv("SLURM_JOB_ID");
	char out[64];
	snprintf(out, sizeof out, "%s/%s", j ? j : "-", t ? t : "-");
	return dw_reply_set(r, out, strlen(out));
}
DW_REGISTER(slurm_task)

/* ---- the daemons ---- */

struct daemon {
	const char *name;
	pid_t pid;
};

static struct daemon dmn[3] = {
    {"munged", -1}, {"slurmctld", -1}, {"slurmd", -1}};
static char sdir[600], why[800];

static pid_t
start_daemon(const char *log, char *const argv[])
{
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0)
			dup2(fd, 1), dup2(fd, 2);
		setsid();
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void
stop_daemons(void)
{
	for (int i = 2; i >= 0; i--) {
		if (dmn[i].pid <= 0)
			continue;
		kill(dmn[i].pid, SIGTERM);
		int done = 0;
		for (int k = 0; k < 500 && !done; k++) {
			done = waitpid(dmn[i].pid, NULL, WNOHANG) == dmn[i].pid;
			if (!done)
				usleep(10000);
		}
		if (!done) {
			kill(dmn[i].pid, SIGKILL);
			waitpid(dmn[i].pid, NULL, 0);
		}
		dmn[i].pid = -1;
	}
}

static void
last_line(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "r");
	char line[512];
	out[0] = 0;
	while (f && fgets(line, sizeof line, f))
		if (line[0] != '\n')
			snprintf(out, len, "%.399s", line);
	if (f)
		fclose(f);
	out[strcspn(out, "\n")] = 0;
}

static int
write_conf(const char *host)
{
	char path[700];
	snprintf(path, sizeof path, "%s/slurm.conf", sdir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int p1 = mu_free_port("127.0.0.1"), p2 = mu_free_port("127.0.0.1");
	while (p2 == p1)
		p2 = mu_free_port("127.0.0.1");
	fprintf(f,
	        "ClusterName=dwtest\nSlurmctldHost=%s(127.0.0.1)\n"
	        "SlurmctldPort=%d\nSlurmdPort=%d\nSlurmUser=root\n"
	        "SlurmdUser=root\nAuthType=auth/munge\nCredType=cred/munge\n"
	        "AuthInfo=socket=%s/munge.sock\nStateSaveLocation=%s/state\n"
	        "SlurmdSpoolDir=%s/spool\nSlurmctldPidFile=%s/slurmctld.pid\n"
	        "SlurmdPidFile=%s/slurmd.pid\nProctrackType=proctrack/pgid\n"
	        "TaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
	        "AccountingStorageType=accounting_storage/none\n"
	        "SchedulerType=sched/builtin\nSelectType=select/cons_tres\n"
	        "SelectTypeParameters=CR_CPU\nMpiDefault=none\n"
	        "ReturnToService=2\nNodeName=%s NodeAddr=127.0.0.1 CPUs=%ld "
	        "State=UNKNOWN\nPartitionName=debug Nodes=%s Default=YES "
	        "MaxTime=INFINITE State=UP OverSubscribe=YES\n",
	        host, p1, p2, sdir, sdir, sdir, sdir, sdir, host,
	        sysconf(_SC_NPROCESSORS_ONLN) < 2
	            ? 2
	            : sysconf(_SC_NPROCESSORS_ONLN),
	        host);
	fclose(f);
	setenv("SLURM_CONF", path, 1);
	return 0;
}

/* Starts the three daemons; 0, or -1 with why. */
static int
start_slurm(void)
{
	const char *bins[] = {"/usr/sbin/munged", "/usr/sbin/slurmctld",
	                      "/usr/sbin/slurmd", "/usr/bin/salloc",
	                      "/usr/bin/srun",    "/usr/bin/sinfo"};
	for (size_t i = 0; i < sizeof bins / sizeof bins[0]; i++)
		if (access(bins[i], X_OK) != 0) {
			snprintf(why, sizeof why,
			         "%s is not installed "
			         "(apt-get install slurm-wlm munge)",
			         bins[i]);
			return -1;
		}
	if (geteuid() != 0) {
		snprintf(why, sizeof why, "slurmd must run as root; uid %d",
		         (int)geteuid());
		return -1;
	}
	char host[256];
	gethostname(host, sizeof host);
	host[strcspn(host, ".")] = 0;
	snprintf(sdir, sizeof sdir, "%s", tu_tmpdir("slurm"));
	if (mu_sh("cd '%s' && mkdir state spool && "
	          "dd if=/dev/urandom of=munge.key bs=1024 count=1 2>/dev/null "
	          "&& chmod 600 munge.key",
	          sdir) != 0 ||
	    write_conf(host) < 0) {
		snprintf(why, sizeof why, "cannot prepare %s", sdir);
		return -1;
	}
	char a[6][700], log[700];
	snprintf(a[0], 700, "--key-file=%s/munge.key", sdir);
	snprintf(a[1], 700, "--socket=%s/munge.sock", sdir);
	snprintf(a[2], 700, "--pid-file=%s/munged.pid", sdir);
	snprintf(a[3], 700, "--log-file=%s/munged.log", sdir);
	snprintf(a[4], 700, "--seed-file=%s/munged.seed", sdir);
	char *mu[] = {
	    "/usr/sbin/munged", "-F", "-f", a[0], a[1], a[2], a[3], a[4], NULL};
	snprintf(log, sizeof log, "%s/munged.out", sdir);
	dmn[0].pid = start_daemon(log, mu);
	char sock[700];
	snprintf(sock, sizeof sock, "%s/munge.sock", sdir);
	for (int i = 0; i < 200 && access(sock, F_OK) != 0; i++)
		usleep(10000);
	char conf[700], clog[700], dlog[700];
	snprintf(conf, sizeof conf, "%s/slurm.conf", sdir);
	snprintf(clog, sizeof clog, "%s/slurmctld.log", sdir);
	snprintf(dlog, sizeof dlog, "%s/slurmd.log", sdir);
	char *ctld[] = {
	    "/usr/sbin/slurmctld", "-D", "-i", "-f", conf, "-L", clog, NULL};
	dmn[1].pid = start_daemon(clog, ctld);
	char *sd[] = {"/usr/sbin/slurmd", "-D", "-f", conf, "-L", dlog, NULL};
	dmn[2].pid = start_daemon(dlog, sd);
	for (int i = 0; i < 300; i++) { /* until the node is idle */
		for (int k = 0; k < 3; k++)
			if (waitpid(dmn[k].pid, NULL, WNOHANG) == dmn[k].pid) {
				char l[400];
				snprintf(log, sizeof log, "%s/%s.log", sdir,
				         k == 0 ? "munged" : dmn[k].name);
				last_line(log, l, sizeof l);
				snprintf(why, sizeof why, "%s exited: %s",
				         dmn[k].name, l);
				dmn[k].pid = -1;
				return -1;
			}
		if (mu_sh("sinfo -h -o %%t 2>/dev/null | grep -qx idle") == 0)
			return 0;
		usleep(50000);
	}
	char l[400];
	last_line(dlog, l, sizeof l);
	snprintf(why, sizeof why,
	         "the node did not become idle within 15 s; "
	         "slurmd says: %s",
	         l);
	return -1;
}

/* ---- the master, run under salloc ---- */

static int
call_ok(int w)
{
	void *res;
	size_t n;
	int ok = dw_remotecall_fetch(w, "echo", "hi", 2, &res, &n) == DW_OK &&
	         n == 2;
	if (ok)
		free(res);
	return ok;
}

/* dw_interrupt reaches an srun-started worker over its link: the call
 * fails with DW_EINTR at once and the worker serves the next call. */
static int
interrupt_ok(int w)
{
	dw_future *f;
	if (dw_remotecall(w, "until_interrupted", NULL, 0, &f) != DW_OK)
		return 0;
	int ok = interrupt_until_done(w, f) == DW_EINTR &&
	         strstr(dw_errmsg(), "interrupted") != NULL;
	if (ok)
		printf("slurm worker %d: %s\n", w, dw_errmsg());
	dw_future_free(f);
	return ok && call_ok(w);
}

static int
master(const char *trace)
{
	dw_options o = {.trace = trace};
	int argc = 1;
	char *args[] = {"master", NULL}, **argv = args;
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 40;
	/* more tasks than the allocation has: srun's own error */
	int ids[4];
	if (dw_addprocs_slurm(5, NULL, ids) >= 0)
		return 41;
	printf("srun-error: %s\n", dw_errmsg());
	if (!strstr(dw_errmsg(), "srun"))
		return 42;
	/* one worker per task of the allocation */
	if (dw_addprocs_slurm(0, NULL, ids) != 2)
		return fprintf(stderr, "%s\n", dw_errmsg()), 43;
	int seen = 0;
	for (int i = 0; i < 2; i++) {
		void *res;
		size_t n;
		if (dw_remotecall_fetch(ids[i], "slurm_task", NULL, 0, &res,
		                        &n) != DW_OK)
			return 44;
		char want[64];
		snprintf(want, sizeof want, "%s/", getenv("SLURM_JOB_ID"));
		if (n < strlen(want) + 1 || memcmp(res, want, strlen(want)))
			return fprintf(stderr, "task: '%.*s', want '%s...'\n",
			               (int)n, (char *)res, want),
			       45;
		seen |= 1 << (((char *)res)[n - 1] - '0');
		free(res);
		for (int k = 0; k < 5; k++)
			if (!call_ok(ids[i]))
				return 46;
		char msg[32];
		snprintf(msg, sizeof msg, "hello from %d", ids[i]);
		dw_remote_do(ids[i], "say", msg, strlen(msg));
	}
	if (seen != 3) /* tasks 0 and 1 */
		return 47;
	if (!interrupt_ok(ids[0]))
		return 48;
	usleep(300000);
	dw_rmprocs(ids, 2, 5000);
	int fd = open("/dev/null", O_WRONLY);
	fflush(stdout);
	int saved = dup(1);
	dup2(fd, 1); /* the trace summary */
	dw_finalize();
	dup2(saved, 1);
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

int
main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "--master"))
		return master(argv[2]);
	/* outside an allocation: refused, saying why */
	REQUIRE(dw_init(&argc, &argv) == DW_OK); /* workers stop here */
	unsetenv("SLURM_JOB_ID");
	CHECK(dw_addprocs_slurm(2, NULL, NULL) == DW_ESTATE);
	CHECK(strstr(dw_errmsg(), "not inside a Slurm allocation") != NULL);
	dw_finalize();

	double t0 = mu_now();
	if (start_slurm() < 0) {
		printf("SKIP: Slurm cannot run here: %s\n", why);
		stop_daemons();
		if (sdir[0])
			tu_rmtree(sdir);
		return TEST_SKIP;
	}
	printf("slurm up in %.2f s\n", mu_now() - t0);
	char trace[700], out[700];
	snprintf(trace, sizeof trace, "%s/trace", sdir);
	snprintf(out, sizeof out, "%s/master.out", sdir);
	/* the workers do not share the master's trace directory */
	setenv("DWORK_TEST_NO_SHARED_FS", "1", 1);
	int rc = mu_sh("salloc -n 2 /proc/%d/exe --master '%s' > '%s' 2>&1",
	               (int)getpid(), trace, out);
	unsetenv("DWORK_TEST_NO_SHARED_FS");
	if (rc != 0)
		fprintf(stderr, "the master under salloc exited with %d\n", rc);
	CHECK(rc == 0);
	FILE *f = fopen(out, "r");
	char line[1024];
	int hello = 0, srun_err = 0;
	while (f && fgets(line, sizeof line, f)) {
		hello += !!strstr(line, "From worker ") &&
		         !!strstr(line, ": hello from ");
		if (strstr(line, "srun-error: ")) {
			srun_err = 1;
			fputs(line, stdout);
		}
	}
	if (f)
		fclose(f);
	CHECK(hello == 2);
	CHECK(srun_err);
	CHECK(count_suffix(trace, ".dwp") == 3);
	char prv[800];
	snprintf(prv, sizeof prv, "%s/trace.prv", trace);
	f = fopen(prv, "r");
	/* 8 tasks: ids 2-6 went to the launch that srun refused */
	CHECK(f && fgets(line, sizeof line, f) && strstr(line, "):1:8("));
	if (f)
		fclose(f);
	if (tu_failures || rc) {
		fprintf(stderr, "master output (%s):\n", out);
		mu_sh("cat '%s' >&2", out);
	}
	stop_daemons();
	if (!tu_failures)
		tu_rmtree(sdir);
	printf("slurm test took %.2f s\n", mu_now() - t0);
	return tu_report("manager_slurm");
}
