/*
 * Three hosts for real: each in its own network namespace (a veth pair
 * to a bridge in the master's own namespace, its own address) and its
 * own mount namespace with a tmpfs over the trace directory, so no host
 * sees another's files and every trace file must travel over its link.
 * Two workers dial in from each host, tracing on.  Mid-pmap, host 3's
 * link is cut (its veth set down): its workers are declared dead within
 * the heartbeat timeout, calls pending on them fail with DW_EEXITED, the
 * pmap finishes on the others with every result right, and the merged
 * trace holds every surviving worker.  Without root or namespaces the
 * test says why and is skipped (77).
 */

#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>

#include "rt_util.h"
#include "testutil.h"

#define NHOSTS   3
#define PER_HOST 2
#define NW       (NHOSTS * PER_HOST)
#define HB_MS    200
#define HB_TO_MS 2000
#define ITEMS    120
#define ITEM_MS  40

static char exe[1024], tdir[600], cookie[600];
static pid_t hosts[NHOSTS];

static double
now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int
sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int
skip(const char *why)
{
	printf("netns_hosts: skipped: %s\n", why);
	return TEST_SKIP;
}

/* Item: u32 index; sleeps ITEM_MS, returns index * 3 and its id. */
static int
item(const void *arg, size_t len, dw_reply *r)
{
	uint32_t v[2];
	if (len != 4)
		return dw_reply_error(r, "bad item");
	memcpy(v, arg, 4);
	usleep(ITEM_MS * 1000);
	v[0] *= 3;
	v[1] = (uint32_t)dw_myid();
	return dw_reply_set(r, v, sizeof v);
}
DW_REGISTER(item)

/* A host: new network and mount namespaces, a tmpfs over the trace
 * directory; once its eth0 exists it takes its address and starts its
 * workers, dialling the master at 10.77.0.1:port. */
static void
host_main(int h, int port, int go)
{
	char b;
	setpgid(0, 0);
	if (read(go, &b, 1) != 1)
		_exit(2);
	if (sh("ip addr add 10.77.0.%d/24 dev eth0 && ip link set eth0 up "
	       "&& ip link set lo up",
	       11 + h) != 0)
		_exit(3);
	char addr[64];
	snprintf(addr, sizeof addr, "10.77.0.1:%d", port);
	/* a worker that cannot deliver its files (the cut host) keeps them
	 * in its own temporary directory: the host's tmpfs, gone with it */
	setenv("TMPDIR", tdir, 1);
	for (int i = 0; i < PER_HOST; i++)
		if (fork() == 0) {
			int nul = open("/dev/null", O_RDONLY);
			dup2(nul, 0);
			execl(exe, "hostworker", "--dwork-dial", addr,
			      "--dwork-cookie-file", cookie, (char *)0);
			_exit(127);
		}
	while (wait(NULL) > 0)
		;
	_exit(0);
}

static int
host_start(int h, int port)
{
	int ready[2], go[2];
	REQUIRE(pipe(ready) == 0 && pipe(go) == 0);
	pid_t p = fork();
	if (p == 0) {
		close(ready[0]);
		close(go[1]);
		char ok = 1;
		if (unshare(CLONE_NEWNET | CLONE_NEWNS) != 0 ||
		    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount("tmpfs", tdir, "tmpfs", 0, "size=64m") != 0)
			ok = 0;
		if (write(ready[1], &ok, 1) != 1 || !ok)
			_exit(1);
		host_main(h, port, go[0]);
	}
	REQUIRE(p > 0);
	close(ready[1]);
	close(go[0]);
	char ok = 0;
	if (read(ready[0], &ok, 1) != 1 || !ok) {
		waitpid(p, NULL, 0);
		return -1;
	}
	close(ready[0]);
	hosts[h] = p;
	if (sh("ip link add dwv%d type veth peer name eth0 netns %d && "
	       "ip link set dwv%d master dwbr && ip link set dwv%d up",
	       h, (int)p, h, h) != 0)
		return -1;
	REQUIRE(write(go[1], "g", 1) == 1);
	close(go[1]);
	return 0;
}

static void
hosts_kill(void)
{
	for (int h = 0; h < NHOSTS; h++)
		if (hosts[h] > 0) {
			kill(-hosts[h], SIGKILL);
			waitpid(hosts[h], NULL, 0);
			hosts[h] = 0;
		}
}

/* The id of the worker that answers, and its host (from its address). */
static int
host_of(int id)
{
	void *res;
	size_t len;
	if (dw_remotecall_fetch(id, "whoami", NULL, 0, &res, &len) != DW_OK)
		return -1;
	int pid = ((int *)res)[1];
	free(res);
	for (int h = 0; h < NHOSTS; h++) {
		char path[64];
		/* a worker's parent is its host's first process */
		snprintf(path, sizeof path, "/proc/%d/stat", pid);
		FILE *f = fopen(path, "r");
		int ppid = 0;
		if (f) {
			if (fscanf(f, "%*d %*s %*c %d", &ppid) != 1)
				ppid = 0;
			fclose(f);
		}
		if (ppid == hosts[h])
			return h;
	}
	return -1;
}

struct pmap_run {
	dw_result out[ITEMS];
	int err;
	double ms;
};

static void *
pmap_thread(void *arg)
{
	struct pmap_run *pr = arg;
	static uint32_t idx[ITEMS];
	dw_buf in[ITEMS];
	for (uint32_t i = 0; i < ITEMS; i++) {
		idx[i] = i;
		in[i] = (dw_buf){&idx[i], 4};
	}
	double t0 = now_ms();
	dw_pmap_options po = {.batch_size = 2};
	pr->err = dw_pmap("item", in, ITEMS, pr->out, &po);
	pr->ms = now_ms() - t0;
	return NULL;
}

/* Lines of the merged .prv whose task is id (states, events, comms). */
static long
prv_records_of(const char *prv, int id)
{
	FILE *f = fopen(prv, "r");
	char line[4096];
	long n = 0;
	while (f && fgets(line, sizeof line, f)) {
		int type, cpu, appl, task;
		if (sscanf(line, "%d:%d:%d:%d:", &type, &cpu, &appl, &task) ==
		        4 &&
		    task == id)
			n++;
	}
	if (f)
		fclose(f);
	return n;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--dwork-dial")) /* a worker */
		dw_init(&argc, &argv);
	if (geteuid() != 0)
		return skip("needs root for network namespaces");
	if (system("ip -V >/dev/null 2>&1") != 0)
		return skip("no ip command (iproute2)");
	if (unshare(CLONE_NEWNET) != 0)
		return skip("unshare(CLONE_NEWNET) refused");
	if (sh("ip link set lo up && ip link add dwbr type bridge && "
	       "ip addr add 10.77.0.1/24 dev dwbr && ip link set dwbr up") != 0)
		return skip("cannot make a bridge in a new namespace");
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	REQUIRE(el > 0);
	exe[el] = 0;
	const char *dir = tu_tmpdir("netns");
	snprintf(tdir, sizeof tdir, "%s/trace", dir);
	snprintf(cookie, sizeof cookie, "%s/cookie", dir);
	REQUIRE(mkdir(tdir, 0700) == 0);

	double t_start = now_ms();
	dw_options o = {.trace = tdir,
	                .heartbeat_ms = HB_MS,
	                .heartbeat_timeout_ms = HB_TO_MS};
	REQUIRE(dw_init_opts(&argc, &argv, &o) == DW_OK);
	char addr[64];
	REQUIRE(dw_listen("10.77.0.1:0", addr, sizeof addr) == DW_OK);
	REQUIRE(dw_write_cookie_file(cookie) == DW_OK);
	int port = atoi(strrchr(addr, ':') + 1);
	for (int h = 0; h < NHOSTS; h++)
		if (host_start(h, port) != 0) {
			hosts_kill();
			dw_finalize();
			tu_rmtree(dir);
			return skip("cannot make a host namespace");
		}
	int ids[NW];
	int got = dw_accept_workers(NW, 20000, ids);
	CHECK(got == NW);
	int hostof[NW], on_cut[NW], ncut = 0;
	for (int i = 0; i < got; i++) {
		hostof[i] = host_of(ids[i]);
		CHECK(hostof[i] >= 0);
		if (hostof[i] == NHOSTS - 1)
			on_cut[ncut++] = ids[i];
	}
	CHECK(ncut == PER_HOST);

	/* calls pending on host 3 when its link goes, and a pmap over all */
	dw_future *pend[PER_HOST];
	int ms = 30000;
	for (int i = 0; i < ncut; i++)
		CHECK(dw_remotecall(on_cut[i], "sleeper", &ms, sizeof ms,
		                    &pend[i]) == DW_OK);
	static struct pmap_run pr;
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, pmap_thread, &pr) == 0);
	usleep(500000);
	double t_cut = now_ms();
	CHECK(sh("ip link set dwv%d down", NHOSTS - 1) == 0);
	double detect = 0;
	for (int i = 0; i < ncut; i++) {
		CHECK(dw_future_wait_timeout(pend[i], 3 * HB_TO_MS) ==
		      DW_EEXITED);
		detect = now_ms() - t_cut;
		dw_future_free(pend[i]);
	}
	CHECK(detect <= HB_TO_MS + 2 * HB_MS + 200);
	pthread_join(t, NULL);
	CHECK(pr.err == DW_OK);
	int right = 0, on_dead_host = 0;
	for (uint32_t i = 0; i < ITEMS; i++) {
		uint32_t *v = pr.out[i].data;
		if (pr.out[i].err == DW_OK && pr.out[i].len == 8 &&
		    v[0] == i * 3)
			right++;
		for (int k = 0; k < ncut; k++)
			on_dead_host += pr.out[i].err == DW_OK &&
			                pr.out[i].pid == on_cut[k] &&
			                pr.out[i].len == 8 &&
			                (int)v[1] == on_cut[k];
	}
	CHECK(right == ITEMS);
	dw_results_free(pr.out, ITEMS);
	CHECK(dw_nworkers() == NW - PER_HOST);
	printf("cut host 3: its workers declared dead %.0f ms after the cut "
	       "(heartbeat timeout %d ms); pmap of %d items finished in "
	       "%.0f ms (%d results from host 3 before the cut)\n",
	       detect, HB_TO_MS, ITEMS, pr.ms, on_dead_host);
	printf("bench: netns.detect_ms = %.0f\n", detect);

	/* the merged trace holds every surviving worker, whose files
	 * lived only in its host's tmpfs */
	CHECK(dw_finalize() == DW_OK);
	char prv[800];
	snprintf(prv, sizeof prv, "%s/trace.prv", tdir);
	int traced = 0;
	for (int i = 0; i < got; i++)
		if (hostof[i] != NHOSTS - 1)
			traced += prv_records_of(prv, ids[i]) > 0;
	CHECK(traced == NW - PER_HOST);
	printf("merged trace: %d of %d surviving workers present\n", traced,
	       NW - PER_HOST);
	printf("bench: netns.total_ms = %.0f\n", now_ms() - t_start);
	hosts_kill();
	tu_rmtree(dir);
	return tu_report("netns_hosts");
}
