/*
 * Automatic tracing end to end: a master and workers traced without any
 * tracing code in the program, merged at dw_finalize into one Paraver
 * trace that passes the strict checker.  Workers join late and leave
 * early, one is killed, one has a clock 50 ms off drifting 100 ppm, one
 * does not share the master's filesystem (its files travel over the
 * link); every call shows as two communications; tracing off writes
 * nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "prv_check.h"
#include "rt_util.h"
#include "testutil.h"

#define CALLS 5

struct prv_facts {
	uint32_t ntasks;
	uint64_t ftime;
	uint64_t comms_to[16], comms_from[16]; /* master <-> task k */
	uint64_t first[16], last[16];          /* per task, non-state-2 */
	uint64_t running[16];                  /* Running states per task */
};

static void
calls(int w, int n)
{
	for (int i = 0; i < n; i++) {
		void *res;
		size_t len;
		if (dw_remotecall_fetch(w, "echo", &i, sizeof i, &res, &len) !=
		    DW_OK) {
			fprintf(stderr, "call to %d: %s\n", w, dw_errmsg());
			tu_failures++;
			return;
		}
		free(res);
	}
}

static int
add_one(const char *env)
{
	const char *e[] = {env, NULL};
	dw_local_options o = {.env = env ? e : NULL};
	int id = -1;
	REQUIRE(dw_addprocs(1, &o, &id) == 1);
	return id;
}

/* Reads the facts this test checks from the merged .prv. */
static void
read_prv(const char *path, struct prv_facts *f)
{
	FILE *fp = fopen(path, "r");
	REQUIRE(fp);
	char line[4096];
	memset(f, 0, sizeof *f);
	for (int t = 0; t < 16; t++)
		f->first[t] = UINT64_MAX;
	REQUIRE(fgets(line, sizeof line, fp));
	char *p = strchr(line, ')');
	REQUIRE(p && sscanf(p, "):%" SCNu64 "_ns", &f->ftime) == 1);
	p = strstr(p, "):1:");
	REQUIRE(p && sscanf(p + 4, "%u(", &f->ntasks) == 1);
	while (fgets(line, sizeof line, fp)) {
		uint64_t v[16] = {0};
		int n = 0;
		for (char *s = line; n < 16 && *s; n++) {
			v[n] = strtoull(s, &s, 10);
			if (*s == ':')
				s++;
			else
				break;
		}
		uint64_t task = v[3];
		if (task >= 16)
			continue;
		if (v[0] == 1 && v[7] != 2) {
			f->first[task] =
			    v[5] < f->first[task] ? v[5] : f->first[task];
			f->last[task] =
			    v[6] > f->last[task] ? v[6] : f->last[task];
			f->running[task] += v[7] == 1;
		} else if (v[0] == 3 && v[3] == 1 && v[9] < 16) {
			f->comms_to[v[9]]++;
		} else if (v[0] == 3 && v[9] == 1) {
			f->comms_from[task]++;
		}
	}
	fclose(fp);
}

static int
count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		n += l > 4 && !strcmp(e->d_name + l - 4, suffix);
	}
	if (d)
		closedir(d);
	return n;
}

static void
check_trace(const char *dir)
{
	char prefix[700], err[1024];
	snprintf(prefix, sizeof prefix, "%s/trace", dir);
	pc_result r;
	if (prv_check(prefix, PC_ALL, &r, err, sizeof err) != 0) {
		fprintf(stderr, "strict checker: %s\n", err);
		tu_failures++;
	}
	char prv[800];
	snprintf(prv, sizeof prv, "%s.prv", prefix);
	struct prv_facts f;
	read_prv(prv, &f);
	/* ids 1..7: the number of tasks is the highest id ever seen */
	CHECK_EQ_U64(f.ntasks, 7);
	/* tasks 2..7 are workers 2..7: two communications per call */
	/* worker 2 had 3 more calls, worker 4 one more (whoami) */
	uint64_t want[8] = {
	    0,         0,         2 * (CALLS + 3), 2 * CALLS, 2 * (CALLS + 1),
	    2 * CALLS, 2 * CALLS, 2 * CALLS};
	for (int t = 2; t <= 7; t++) {
		if (f.comms_to[t] != want[t] / 2 ||
		    f.comms_from[t] != want[t] / 2) {
			fprintf(stderr,
			        "task %d: %" PRIu64 " calls and %" PRIu64
			        " results, expected %" PRIu64 " each\n",
			        t, f.comms_to[t], f.comms_from[t], want[t] / 2);
			tu_failures++;
		}
		CHECK(f.running[t] >= CALLS); /* the functions ran there */
	}
	/* the master's user code runs too */
	CHECK(f.running[1] >= 1);
	/* late joiners start later; early leavers end earlier */
	CHECK(f.first[5] > f.first[2]);
	CHECK(f.first[6] > f.first[5]);
	CHECK(f.last[3] < f.last[1]);
	CHECK(f.last[4] < f.last[1]); /* killed */
}

/* The summary printed at the end: a line per task, calls served per
 * worker, and the three POP metrics. */
static void
check_summary(const char *path)
{
	FILE *f = fopen(path, "r");
	REQUIRE(f);
	char line[512];
	int tasks = -1, metrics = 0;
	uint64_t served[8] = {0};
	while (fgets(line, sizeof line, f)) {
		unsigned t;
		double u, idle;
		uint64_t c;
		if (sscanf(line, "summary: %d tasks", &tasks) == 1)
			continue;
		if (sscanf(line, " %u %lf %" SCNu64 " %lf", &t, &u, &c,
		           &idle) == 4 &&
		    t >= 1 && t <= 8)
			served[t - 1] = c; /* tasks count from 1 */
		metrics += strstr(line, "load balance") != NULL;
		metrics += strstr(line, "communication efficiency") != NULL;
		metrics += strstr(line, "parallel efficiency") != NULL;
	}
	fclose(f);
	CHECK_EQ_U64(tasks, 7);
	CHECK_EQ_U64(served[1], CALLS + 3); /* worker 2 is task 1 */
	CHECK_EQ_U64(served[4], CALLS);     /* worker 5, clock skewed */
	CHECK_EQ_U64(served[5], CALLS);     /* worker 6, files sent */
	CHECK(metrics >= 3);
}

/* A traced cluster that exercises every kind of worker life. */
static void
traced_run(const char *dir)
{
	int ids[3];
	REQUIRE(dw_addprocs(3, NULL, ids) == 3); /* 2, 3, 4 */
	for (int i = 0; i < 3; i++)
		calls(ids[i], CALLS);
	usleep(50000);
	int skewed = add_one("DWT_TEST_CLOCK_SKEW=50000000,100"); /* 5 */
	calls(skewed, CALLS);
	usleep(50000);
	int remote = add_one("DWORK_TEST_NO_SHARED_FS=1"); /* 6 */
	calls(remote, CALLS);
	int late = add_one(NULL); /* 7 */
	calls(late, CALLS);
	CHECK(dw_rmprocs(&ids[1], 1, 10000) == DW_OK); /* 3 leaves early */
	void *res;
	size_t n;
	REQUIRE(dw_remotecall_fetch(ids[2], "whoami", NULL, 0, &res, &n) ==
	        DW_OK);
	kill(((int *)res)[1], SIGKILL); /* 4 is killed */
	free(res);
	usleep(200000);
	calls(ids[0], 3);
	/* dw_finalize merges and prints the summary: capture it */
	char out[700];
	snprintf(out, sizeof out, "%s.out", dir);
	fflush(stdout);
	int saved = dup(1), fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	REQUIRE(saved >= 0 && fd >= 0);
	dup2(fd, 1);
	CHECK(dw_finalize() == DW_OK);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	close(fd);
	check_summary(out);
	unlink(out);
	/* worker 6's files came over the link into the directory */
	CHECK(count_files(dir, ".dwp") >= 7);
	check_trace(dir);
}

/* A child with tracing off: nothing is written anywhere. */
static int
untraced_child(void)
{
	char dir[600];
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("untraced"));
	if (chdir(dir) != 0)
		return 30;
	int id;
	if (dw_addprocs(1, NULL, &id) != 1)
		return 31;
	calls(id, 3);
	dw_finalize();
	int files = count_files(dir, "race") + count_files(dir, ".dwt");
	DIR *d = opendir(dir);
	struct dirent *e;
	int any = 0;
	while (d && (e = readdir(d)))
		any += e->d_name[0] != '.';
	if (d)
		closedir(d);
	tu_rmtree(dir);
	return any || files || tu_failures ? 32 : 0;
}

int
main(int argc, char **argv)
{
	int child = argc > 1 && !strcmp(argv[1], "--untraced");
	char dir[600];
	if (!child)
		snprintf(dir, sizeof dir, "%s", tu_tmpdir("traced"));
	dw_options o = {.trace = child ? "0" : dir, .clock_sync_ms = 200};
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	if (child)
		return untraced_child();
	traced_run(dir);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", "child", "--untraced", (char *)NULL);
		_exit(127);
	}
	int st;
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!tu_failures)
		tu_rmtree(dir);
	else
		fprintf(stderr, "trace kept in %s\n", dir);
	return tu_report("trace_runtime");
}
