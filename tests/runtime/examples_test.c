/*
 * The six Distributed.jl ports of examples/ (docs/julia.md), each run
 * traced as a user would: its printed result checked against the known
 * answer, and its merged trace for the user's function names in the .pcf
 * and the number of runs of each in the .prv.  The machine file example
 * needs a private sshd (tests/manager_util.h); without one it is skipped
 * and said so.
 */
#include <inttypes.h>

#include <dwork/dwork.h>

#include "manager_util.h"
#include "testutil.h"

static char out[8192];

/* Runs an example traced into dir/t; its stdout in out. */
static int
run(const char *dir, const char *cmd)
{
	char c[2048], t[700];
	snprintf(t, sizeof t, "%s/t", dir);
	setenv("DWORK_TRACE", t, 1);
	snprintf(c, sizeof c, "%s/%s 2>/dev/null", EX_DIR, cmd);
	FILE *p = popen(c, "r");
	REQUIRE(p);
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = 0;
	int st = pclose(p);
	unsetenv("DWORK_TRACE");
	return st;
}

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *b = malloc((size_t)n + 1);
	b[fread(b, 1, (size_t)n, f)] = 0;
	fclose(f);
	return b;
}

/* Records of type with that value in the .prv. */
static int
count_ev(const char *dir, uint32_t type, uint64_t value)
{
	char path[700], key[64];
	snprintf(path, sizeof path, "%s/t/trace.prv", dir);
	snprintf(key, sizeof key, ":%u:%" PRIu64, type, value);
	char *b = slurp(path);
	int n = 0;
	size_t kl = strlen(key);
	for (char *p = b; (p = strstr(p, key)); p += kl)
		n += p[kl] == ':' || p[kl] == '\n';
	free(b);
	return n;
}

/* fn named in the .pcf and run `runs` times. */
static void
check_fn(const char *dir, const char *fn, int runs)
{
	char path[700], name[80];
	snprintf(path, sizeof path, "%s/t/trace.pcf", dir);
	snprintf(name, sizeof name, " %s\n", fn);
	/* the merge numbers the names of DW_EV_FUNCTION 1, 2, …: find its
	 * value in that type's VALUES */
	char *b = slurp(path), *blk = strstr(b, "71000001"), *at = NULL;
	char *end = blk ? strstr(blk, "EVENT_TYPE") : NULL;
	if (blk && (at = strstr(blk, name)) && (!end || at < end))
		while (at > blk && at[-1] != '\n')
			at--;
	else
		at = NULL;
	uint64_t v = at ? strtoull(at, NULL, 10) : 0;
	free(b);
	if (!v) {
		fprintf(stderr, "%s: '%s' not in the .pcf\n", dir, fn);
		tu_failures++;
		return;
	}
	int n = count_ev(dir, DW_EV_FUNCTION, v);
	if (runs >= 0 && n != runs) {
		fprintf(stderr, "%s: %s ran %d times, expected %d\n", dir, fn,
		        n, runs);
		tu_failures++;
	}
}

static void
test_pmap(void)
{
	const char *d = tu_tmpdir("expmap");
	CHECK(run(d, "pmap_uneven") == 0);
	CHECK(strstr(out, "0.1 0.4 0.1 0.2 0.1 0.3 0.1 0.2") != NULL);
	CHECK(strstr(out, "total: 1.5\n") != NULL);
	check_fn(d, "work", 8);
	tu_rmtree(d);
}

static void
test_jobs(void)
{
	const char *d = tu_tmpdir("exjobs");
	CHECK(run(d, "jobs_results") == 0);
	for (int j = 1; j <= 12; j++) {
		char k[32];
		snprintf(k, sizeof k, "\n%d finished in ", j);
		char *all = malloc(strlen(out) + 2);
		sprintf(all, "\n%s", out);
		char *p = strstr(all, k);
		CHECK(p && !strstr(p + 1, k)); /* exactly once */
		free(all);
	}
	check_fn(d, "do_work", 4);
	check_fn(d, "make_jobs", 1);
	tu_rmtree(d);
}

static void
test_spawnat(void)
{
	const char *d = tu_tmpdir("exspawn");
	CHECK(run(d, "spawnat") == 0);
	/* println(fetch(s)), println(fetch(w)): as Julia prints them */
	CHECK(strstr(out, "[1.5, 1.5, 1.5, 1.5]\n6\n") != NULL);
	check_fn(d, "dwork_fill", 1);
	check_fn(d, "plus1", 1);
	check_fn(d, "dwork_sum", 1);
	/* a remote_do just before dw_finalize: the worker lets it end
	 * before it ships its trace (call_drain), so its run is there */
	CHECK(strstr(out, "hello from remote_do") != NULL);
	check_fn(d, "dwork_println", 1);
	tu_rmtree(d);
}

static void
test_sum(void)
{
	int64_t heads = 0;
	for (uint64_t i = 1; i < 20000001; i++)
		heads += (i * 0x9e3779b97f4a7c15u) >> 63;
	char want[40];
	snprintf(want, sizeof want, "%" PRId64 "\n", heads);
	const char *d = tu_tmpdir("exsum");
	CHECK(run(d, "distributed_sum") == 0);
	CHECK(!strncmp(out, want, strlen(want)));
	check_fn(d, "flips", 4);
	tu_rmtree(d);
}

static void
test_addrm(void)
{
	const char *d = tu_tmpdir("exaddrm");
	CHECK(run(d, "add_rm_procs") == 0);
	CHECK(!strncmp(out, "2 3\n2 3 4 5\n4 5\n3\n", 16));
	for (int w = 2; w <= 5; w++)
		CHECK_EQ_U64(count_ev(d, DW_EV_WORKER_JOIN, (uint64_t)w), 1);
	CHECK_EQ_U64(count_ev(d, DW_EV_WORKER_LEAVE, 2), 1);
	CHECK_EQ_U64(count_ev(d, DW_EV_WORKER_LEAVE, 3), 1);
	tu_rmtree(d);
}

static int
test_machinefile(void)
{
	struct sshd sd = {0};
	char d[600];
	snprintf(d, sizeof d, "%s", tu_tmpdir("exmf"));
	if (mu_ssh_keys(&sd, d) < 0 ||
	    mu_sshd_start(&sd, "127.0.0.1", 0, NULL) < 0) {
		printf("SKIP machine_file: %s\n", sd.why);
		tu_rmtree(d);
		return 0;
	}
	char mf[700], cmd[800], host[256] = "";
	snprintf(mf, sizeof mf, "%s/hosts", d);
	FILE *f = fopen(mf, "w");
	REQUIRE(f);
	fprintf(f,
	        "# two workers on this host, through its sshd\n"
	        "2*127.0.0.1:%d\n",
	        sd.port);
	fclose(f);
	setenv("DWORK_SSH_COMMAND", sd.ssh_cmd, 1);
	/* as `julia --machine-file hosts prog.jl`: dw_init reads it */
	snprintf(cmd, sizeof cmd, "machine_file --machine-file %s", mf);
	CHECK(run(d, cmd) == 0);
	gethostname(host, sizeof host - 1);
	char want[700];
	snprintf(want, sizeof want, "2 %s\n3 %s\n", host, host);
	CHECK(!strncmp(out, want, strlen(want)));
	check_fn(d, "dwork_hostname", 2); /* dw_hostname, on each worker */
	mu_sshd_stop(&sd);
	tu_rmtree(d);
	return 1;
}

int
main(void)
{
	test_pmap();
	test_jobs();
	test_spawnat();
	test_sum();
	test_addrm();
	int ssh = test_machinefile();
	int rc = tu_report("examples");
	return rc == 0 && !ssh ? TEST_SKIP : rc;
}
