/*
 * dwork top and the TALP file with workers that joined late and workers
 * on other hosts (real processes, the real tool).  A master (this binary,
 * --master MODE DIR) keeps every worker busy in rounds of ROUND_MS: an
 * "S" worker runs "solid" for the whole round (useful 100%), an "H"
 * worker "half" for half of it (50%); the master only waits.  Each
 * sleep returns when it began and ended as it measured them (a loaded
 * machine makes it longer): the master counts that work of each worker
 * inside the region "run", and notes every sleep, the known answers.
 *
 *  --late   one local worker (S) from the start; two more (H, S) added
 *           with dw_addprocs mid-run, inside the region.
 *  --netns  hosts for real: host 1 and host 2 each in their own network
 *           and UTS namespace (a veth pair to a bridge in the master's
 *           namespace, their own address and host name "dwhost1",
 *           "dwhost2"), their workers dialling in.  Host 1's two (S, H)
 *           join at the start; host 2's one (H) starts and dials in
 *           mid-run, when a local worker (S) is added too.  Host 3 is
 *           an sshd in a UTS namespace of its own ("dwhost3"): one
 *           worker (H) joins at the start through a machine file (the
 *           ssh manager).  Without root or namespaces the mode says why
 *           and is skipped (77); without sshd, host 3 is left out (and
 *           the test says why).
 *
 * Mid-run, after the late ones joined, `dwork top --once --json` must
 * show every process with its host and its useful fraction (what its
 * sleeps cover of a span of the snapshot's interval ending when its
 * figures were taken, within a point); at exit the TALP file must hold
 * every process with its host, its useful time within 2% + 20 ms of the work it
 * measured, numNodes the distinct hosts, and the load balance (in and out of
 * nodes) that those known times give, within 0.03.  --late also runs a region
 * "spin" in which worker 2 executes SPIN_N iterations of a two-
 * instruction loop: where the machine has hardware counters its TALP
 * "instructions" must hold them (2 x SPIN_N, plus at most 30 million of
 * the runtime's own); where it has none the file must say why and write
 * 0, as TALP does without PAPI (the check says it was skipped).
 */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dwork/dwork.h>
#include <dwork/error.h>

#include "manager_util.h"
#include "live_util.h"
#include "testutil.h"

#define ROUND_MS 250
#define HB_MS    "500"
#define MAXW     8
#define SPIN_N   50000000L

/* SPIN_N iterations of dec + jnz: 2 x SPIN_N instructions (x86-64). */
static int
spin(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len;
	long n = SPIN_N;
#if defined(__x86_64__)
	__asm__ volatile("1: dec %0\n\tjnz 1b" : "+r"(n));
#else
	for (volatile long i = 0; i < n; i++)
		;
#endif
	return dw_reply_set(r, &n, sizeof n);
}
DW_REGISTER(spin)

static int
hostname(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len;
	char h[64] = "";
	gethostname(h, sizeof h - 1);
	return dw_reply_set(r, h, strlen(h) + 1);
}
DW_REGISTER(hostname)

static int
exists(const char *dir, const char *name)
{
	char p[700];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static void
touch(const char *dir, const char *name)
{
	char p[700];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (f)
		fclose(f);
}

/* ---- the master ---- */

struct mw {
	int id;
	char kind; /* 'S' or 'H' */
	char host[64];
	int64_t asked_us; /* work done inside the region, as it measured */
};

static struct mw ws[MAXW];
static int nw;

static void
note(const int *ids, int n, const char *kinds)
{
	for (int i = 0; i < n && nw < MAXW; i++, nw++) {
		void *res;
		size_t len;
		ws[nw] = (struct mw){.id = ids[i], .kind = kinds[i]};
		if (dw_remotecall_fetch(ids[i], "hostname", NULL, 0, &res,
		                        &len) == DW_OK) {
			snprintf(ws[nw].host, sizeof ws[nw].host, "%.*s",
			         (int)len, (char *)res);
			free(res);
		}
	}
}

static char naps_dir[600]; /* where live_nap_note writes */

static void
round_all(int in_region)
{
	dw_future *f[MAXW] = {0};
	int ms[MAXW];
	for (int i = 0; i < nw; i++) {
		ms[i] = ws[i].kind == 'H' ? ROUND_MS / 2 : ROUND_MS;
		if (dw_remotecall(ws[i].id,
		                  ws[i].kind == 'H' ? "half" : "solid", &ms[i],
		                  sizeof ms[i], &f[i]) != DW_OK)
			f[i] = NULL;
	}
	for (int i = 0; i < nw; i++)
		if (f[i]) {
			const void *res;
			size_t n;
			int64_t t0, t1, took = (int64_t)ms[i] * 1000;
			if (dw_future_fetch(f[i], &res, &n) == DW_OK) {
				if (live_nap_of(res, n, &t0, &t1) >= 0) {
					took = t1 - t0;
					live_nap_note(naps_dir, ws[i].id, t0,
					              t1);
				}
				if (in_region)
					ws[i].asked_us += took;
			}
			dw_future_free(f[i]);
		}
}

/* The late ones: local workers (--late), or host 2's dialling worker
 * and a local one (--netns). */
static int
add_late(int netns)
{
	int ids[2];
	if (!netns) {
		if (dw_addprocs(2, NULL, ids) != 2)
			return -1;
		note(ids, 2, "HS");
		return 0;
	}
	if (dw_accept_workers(1, 20000, ids) != 1 ||
	    dw_addprocs(1, NULL, ids + 1) != 1)
		return -1;
	note(ids, 2, "HS");
	return 0;
}

static int
master_start(int netns, const char *dir)
{
	int ids[2];
	if (!netns) {
		if (dw_addprocs(1, NULL, ids) != 1)
			return -1;
		note(ids, 1, "S");
		return 0;
	}
	char addr[64], p[700];
	snprintf(p, sizeof p, "%s/cookie", dir);
	if (dw_listen("10.78.0.1:0", addr, sizeof addr) != DW_OK ||
	    dw_write_cookie_file(p) != DW_OK)
		return -1;
	snprintf(p, sizeof p, "%s/port", dir);
	FILE *f = fopen(p, "w");
	if (!f)
		return -1;
	fprintf(f, "%s\n", strrchr(addr, ':') + 1);
	fclose(f);
	if (dw_accept_workers(2, 20000, ids) != 2)
		return -1;
	note(ids, 2, "SH");
	/* host 3: a machine file naming the sshd the test started */
	char ssh[800] = "", mf[700];
	snprintf(p, sizeof p, "%s/sshcmd", dir);
	f = fopen(p, "r");
	if (!f)
		return 0;
	if (!fgets(ssh, sizeof ssh, f))
		ssh[0] = 0;
	fclose(f);
	ssh[strcspn(ssh, "\n")] = 0;
	snprintf(mf, sizeof mf, "%s/machines", dir);
	dw_ssh_options o = {.ssh = ssh};
	if (dw_addprocs_machinefile(mf, &o, ids, 1) != 1)
		return -1;
	note(ids, 1, "H");
	return 0;
}

static int
master_main(int argc, char **argv, int netns, const char *dir)
{
	if (dw_init(&argc, &argv) != DW_OK || master_start(netns, dir) != 0)
		return 1;
	snprintf(naps_dir, sizeof naps_dir, "%s", dir);
	touch(dir, "ready");
	if (dw_region_begin("run") != DW_OK)
		return 1;
	for (int added = 0; !exists(dir, "stop");) {
		if (!added && exists(dir, "add")) {
			if (add_late(netns) != 0)
				return 1;
			added = 1;
			touch(dir, "added");
		}
		round_all(1);
	}
	if (dw_region_end("run") != DW_OK)
		return 1;
	void *res;
	size_t len;
	if (!netns && (dw_region_begin("spin") != DW_OK ||
	               dw_remotecall_fetch(ws[0].id, "spin", NULL, 0, &res,
	                                   &len) != DW_OK ||
	               dw_region_end("spin") != DW_OK))
		return 1;
	if (!netns)
		free(res);
	char p[700];
	snprintf(p, sizeof p, "%s/asked", dir);
	FILE *f = fopen(p, "w");
	for (int i = 0; f && i < nw; i++)
		fprintf(f, "%d %c %s %ld\n", ws[i].id, ws[i].kind, ws[i].host,
		        (long)(ws[i].asked_us / 1000));
	if (f)
		fclose(f);
	dw_finalize();
	return 0;
}

/* ---- hosts in namespaces (--netns) ---- */

static char exe[1024];
static pid_t hosts[3];
static struct sshd sd = {.pid = -1};

/* Host 3: sshd on the master's loopback in a UTS namespace of its own,
 * so the workers it starts are on "dwhost3"; the machine file and the
 * ssh command go to the master in DIR/machines and DIR/sshcmd.  0, or
 * -1 with the reason in sd.why. */
static int
ssh_host_start(const char *dir)
{
	char kd[400], p[700], to[700];
	snprintf(kd, sizeof kd, "%s/sshkeys", dir);
	if (mkdir(kd, 0700) != 0 || mu_ssh_keys(&sd, kd) != 0)
		return -1;
	if (mu_sshd_start(&sd, "127.0.0.1", 0,
	                  "unshare --uts -- sh -c "
	                  "'hostname dwhost3 && exec \"$0\" \"$@\"'") != 0)
		return -1;
	snprintf(p, sizeof p, "%s/machines", dir);
	FILE *f = fopen(p, "w");
	if (!f)
		return -1;
	fprintf(f, "# host 3 of live_hosts\n1*127.0.0.1:%d\n", sd.port);
	fclose(f);
	snprintf(p, sizeof p, "%s/sshcmd.tmp", dir);
	f = fopen(p, "w");
	if (!f)
		return -1;
	fprintf(f, "%s\n", sd.ssh_cmd);
	fclose(f);
	snprintf(to, sizeof to, "%s/sshcmd", dir);
	return rename(p, to);
}

/* Host h (1, 2) in new network and UTS namespaces, named dwhostH: once
 * its eth0 exists it takes 10.78.0.(10+h) and starts n workers that
 * dial the master. */
static void
host_main(int h, int n, const char *dir, int go)
{
	char b, addr[64], port[16] = "", p[700];
	setpgid(0, 0);
	if (read(go, &b, 1) != 1)
		_exit(2);
	if (mu_sh("ip addr add 10.78.0.%d/24 dev eth0 && ip link set eth0 up "
	          "&& ip link set lo up",
	          10 + h) != 0)
		_exit(3);
	snprintf(p, sizeof p, "%s/port", dir);
	for (int i = 0; i < 3000 && !exists(dir, "port"); i++)
		usleep(10000); /* the master writes it once it listens */
	FILE *f = fopen(p, "r");
	if (!f || !fgets(port, sizeof port, f))
		_exit(4);
	fclose(f);
	port[strcspn(port, "\n")] = 0;
	snprintf(addr, sizeof addr, "10.78.0.1:%s", port);
	snprintf(p, sizeof p, "%s/cookie", dir);
	for (int i = 0; i < n; i++)
		if (fork() == 0) {
			int nul = open("/dev/null", O_RDONLY);
			dup2(nul, 0);
			execl(exe, "hostworker", "--dwork-dial", addr,
			      "--dwork-cookie-file", p, (char *)0);
			_exit(127);
		}
	while (wait(NULL) > 0)
		;
	_exit(0);
}

static int
host_start(int h, int n, const char *dir)
{
	int ready[2], go[2];
	REQUIRE(pipe(ready) == 0 && pipe(go) == 0);
	pid_t p = fork();
	if (p == 0) {
		close(ready[0]);
		close(go[1]);
		char name[32], ok = 1;
		snprintf(name, sizeof name, "dwhost%d", h);
		if (unshare(CLONE_NEWNET | CLONE_NEWUTS) != 0 ||
		    sethostname(name, strlen(name)) != 0)
			ok = 0;
		if (write(ready[1], &ok, 1) != 1 || !ok)
			_exit(1);
		host_main(h, n, dir, go[0]);
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
	if (mu_sh("ip link add dwl%d type veth peer name eth0 netns %d && "
	          "ip link set dwl%d master dwlbr && ip link set dwl%d up",
	          h, (int)p, h, h) != 0)
		return -1;
	REQUIRE(write(go[1], "g", 1) == 1);
	close(go[1]);
	return 0;
}

static void
hosts_kill(void)
{
	for (int h = 0; h < 3; h++)
		if (hosts[h] > 0) {
			kill(-hosts[h], SIGKILL);
			waitpid(hosts[h], NULL, 0);
			hosts[h] = 0;
		}
}

/* Why namespaces cannot be had here, or NULL (the test process moves
 * into a new network namespace with a bridge). */
static const char *
netns_refused(void)
{
	if (geteuid() != 0)
		return "needs root for network and UTS namespaces";
	if (system("ip -V >/dev/null 2>&1") != 0)
		return "no ip command (iproute2)";
	if (unshare(CLONE_NEWNET) != 0)
		return "unshare(CLONE_NEWNET) refused";
	if (mu_sh(
	        "ip link set lo up && ip link add dwlbr type bridge && "
	        "ip addr add 10.78.0.1/24 dev dwlbr && ip link set dwlbr up") !=
	    0)
		return "cannot make a bridge in a new namespace";
	return NULL;
}

/* ---- the test's side ---- */

static char *
run_top(const char *args)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s top %s 2>&1", DWORK_TOOL_PATH, args);
	FILE *p = popen(cmd, "r");
	REQUIRE(p != NULL);
	size_t cap = 1 << 16, n = 0;
	char *s = malloc(cap);
	REQUIRE(s != NULL);
	for (size_t k; (k = fread(s + n, 1, cap - 1 - n, p)) > 0;)
		n += k;
	s[n] = 0;
	pclose(p);
	return s;
}

/* The object of process id in a top snapshot, up to its end (copied
 * into o), or 0 when absent. */
static int
proc_obj(const char *json, int id, char *o, size_t ol)
{
	char key[32];
	snprintf(key, sizeof key, "{\"id\":%d,\"state\"", id);
	const char *p = strstr(json, key), *e = p ? strstr(p, "\"age_ms\"") : 0;
	e = e ? strchr(e, '}') : 0;
	if (!p || !e || (size_t)(e - p) >= ol)
		return 0;
	snprintf(o, ol, "%.*s", (int)(e - p), p);
	return 1;
}

static double
num_after(const char *s, const char *key)
{
	char k[64];
	snprintf(k, sizeof k, "\"%s\":", key);
	const char *p = strstr(s, k);
	if (!p)
		return -1;
	p += strlen(k);
	while (*p == ' ')
		p++;
	return atof(p);
}

static int
has_str(const char *s, const char *key, const char *want)
{
	char k[160], k2[160];
	snprintf(k, sizeof k, "\"%s\":\"%s\"", key, want);
	snprintf(k2, sizeof k2, "\"%s\": \"%s\"", key, want);
	return strstr(s, k) || strstr(s, k2);
}

struct known {
	int id;
	char kind;
	char host[64];
	long ms;
};

static int
read_asked(const char *dir, struct known *k)
{
	char p[700];
	snprintf(p, sizeof p, "%s/asked", dir);
	FILE *f = fopen(p, "r");
	int n = 0;
	while (f && n < MAXW &&
	       fscanf(f, "%d %c %63s %ld", &k[n].id, &k[n].kind, k[n].host,
	              &k[n].ms) == 4)
		n++;
	if (f)
		fclose(f);
	return n;
}

static void
wait_for(const char *dir, const char *name, int ms)
{
	for (int i = 0; i < ms / 10 && !exists(dir, name); i++)
		usleep(10000);
	REQUIRE(exists(dir, name));
}

/* Every worker of want[] in one snapshot, with its host; its useful
 * fraction noted in seen[] (checked once the master has ended). */
static void
check_top(const char *mode, const struct known *want, int n, int64_t from,
          struct live_seen *seen)
{
	int64_t before = mono_us();
	char *s = run_top("--once --json");
	int64_t now = mono_us();
	char o[4096], self[64] = "";
	gethostname(self, sizeof self - 1);
	for (int i = 0; i < n; i++) {
		int got = proc_obj(s, want[i].id, o, sizeof o);
		CHECK(got);
		seen[i] = (struct live_seen){.id = want[i].id, .useful = -1};
		if (!got)
			continue;
		seen[i] = (struct live_seen){
		    .id = want[i].id,
		    .useful = num_after(o, "useful"),
		    .interval_ms = num_after(o, "interval_ms"),
		    .age_ms = num_after(o, "age_ms"),
		    .from = from,
		    .before = before,
		    .now = now,
		};
		printf("live_hosts %s: worker %d (%c) on %s: useful %.3f\n",
		       mode, want[i].id, want[i].kind, want[i].host,
		       seen[i].useful);
		CHECK(has_str(o, "host", want[i].host));
		CHECK(has_str(o, "function",
		              want[i].kind == 'H' ? "half" : "solid") ||
		      has_str(o, "function", ""));
	}
	CHECK(proc_obj(s, 1, o, sizeof o) && has_str(o, "host", self));
	free(s);
}

/* The region's entry of process id in the TALP file's "Process". */
static const char *
talp_proc(const char *talp, int id)
{
	const char *p = strstr(talp, "\"Process\"");
	char key[32];
	snprintf(key, sizeof key, "{\"rank\": %d,", id);
	return p ? strstr(p, key) : NULL;
}

static char talp_text[1 << 16];

static void
check_talp(const char *mode, const char *path, const struct known *k, int n,
           int nodes)
{
	FILE *f = fopen(path, "r");
	REQUIRE(f != NULL);
	char *t = talp_text;
	size_t len = fread(t, 1, sizeof talp_text - 1, f);
	t[len] = 0;
	fclose(f);
	fputs(t, stdout); /* the run's TALP file, for the log */
	const char *app = strstr(t, "\"Application\"");
	REQUIRE(app != NULL);
	CHECK(num_after(app, "numMpiRanks") == n + 1);
	CHECK(num_after(app, "numNodes") == nodes);
	CHECK(num_after(t, "numNodes") == nodes); /* resources */
	double el = num_after(app, "elapsedTime");
	/* known useful times: the work asked, the master's 0 */
	double u[MAXW + 1], sum = 0, max = 0, node_max = 0;
	for (int i = 0; i < n; i++) {
		const char *p = talp_proc(t, k[i].id);
		CHECK(p != NULL);
		if (!p)
			continue;
		u[i] = (double)k[i].ms * 1e6;
		double got = num_after(p, "usefulTime");
		printf("live_hosts %s: TALP rank %d on %s: useful %.0f ms, "
		       "asked %ld ms\n",
		       mode, k[i].id, k[i].host, got * 1e-6, k[i].ms);
		CHECK(got > u[i] * 0.98 - 20e6 && got < u[i] * 1.02 + 20e6);
		CHECK(has_str(p, "hostname", k[i].host));
		sum += u[i];
		max = u[i] > max ? u[i] : max;
	}
	const char *m = talp_proc(t, 1);
	CHECK(m && num_after(m, "usefulTime") < 0.05 * el);
	char self[64] = "";
	gethostname(self, sizeof self - 1);
	/* the mean of each host's processes, the master's on its own */
	for (int i = -1; i < n; i++) {
		const char *h = i < 0 ? self : k[i].host;
		double hs = 0;
		int hn = !strcmp(h, self); /* the master */
		for (int j = 0; j < n; j++)
			if (!strcmp(k[j].host, h))
				hs += u[j], hn++;
		node_max = hs / hn > node_max ? hs / hn : node_max;
	}
	double mean = sum / (n + 1);
	double lb = num_after(app, "mpiLoadBalance"),
	       in = num_after(app, "mpiLoadBalanceIn"),
	       out = num_after(app, "mpiLoadBalanceOut");
	printf("live_hosts %s: TALP LB %.4f (known %.4f), in %.4f (%.4f), "
	       "out %.4f (%.4f), %d nodes\n",
	       mode, lb, mean / max, in, node_max / max, out, mean / node_max,
	       nodes);
	CHECK(lb > mean / max - 0.03 && lb < mean / max + 0.03);
	CHECK(in > node_max / max - 0.03 && in < node_max / max + 0.03);
	CHECK(out > mean / node_max - 0.03 && out < mean / node_max + 0.03);
}

/* The counters: counted where the machine has them, else 0 and why. */
static void
check_counters(const char *t)
{
	const char *c = strstr(t, "\"counters\": \"");
	REQUIRE(c != NULL);
	c += strlen("\"counters\": \"");
	const char *app = strstr(t, "\"Application\"");
	if (!strncmp(c, "not measured", 12)) {
		printf("live_hosts late: counters: skipped: %.*s\n",
		       (int)strcspn(c, "\""), c);
		CHECK(num_after(app, "cycles") == 0);
		CHECK(num_after(app, "instructions") == 0);
		return;
	}
	const char *p = strstr(t, "\"spin\": [");
	p = p ? strstr(p, "{\"rank\": 2,") : NULL;
	REQUIRE(p != NULL);
	double ins = num_after(p, "instructions"), cyc = num_after(p, "cycles");
	printf("live_hosts late: spin: %.0f instructions (known %ld), %.0f "
	       "cycles\n",
	       ins, 2 * SPIN_N, cyc);
#if defined(__x86_64__)
	CHECK(ins >= 2.0 * SPIN_N && ins < 2.0 * SPIN_N + 30e6);
#endif
	CHECK(cyc > 0);
}

/* Each worker's host (its own gethostname) is the one the test gave it. */
static void
check_hosts(const struct known *k, int n, const char *const *want)
{
	for (int i = 0; i < n; i++)
		CHECK(!strcmp(k[i].host, want[i]));
}

static int
run_mode(int netns, char **argv)
{
	const char *mode = netns ? "netns" : "late";
	const char *dir = tu_tmpdir("livehosts");
	char rtdir[600], talp[600];
	snprintf(rtdir, sizeof rtdir, "%s/rt", dir);
	snprintf(talp, sizeof talp, "%s/talp.json", dir);
	setenv("DWORK_RUNTIME_DIR", rtdir, 1);
	setenv("DWORK_HEARTBEAT_MS", HB_MS, 1);
	setenv("DWORK_TRACE", "0", 1);
	setenv("DWORK_TALP_FILE", talp, 1);
	int have_ssh = netns && ssh_host_start(dir) == 0;
	if (netns && !have_ssh)
		printf("live_hosts netns: host 3 (ssh) left out: %s\n", sd.why);
	fflush(stdout);
	pid_t m = fork();
	REQUIRE(m >= 0);
	if (m == 0) {
		execl(exe, argv[0], "--master", mode, dir, (char *)NULL);
		_exit(127);
	}
	if (netns && host_start(1, 2, dir) != 0) {
		kill(m, SIGKILL);
		waitpid(m, NULL, 0);
		hosts_kill();
		mu_sshd_stop(&sd);
		tu_rmtree(dir);
		printf("live_hosts netns: skipped: cannot make a host "
		       "namespace\n");
		return TEST_SKIP;
	}
	wait_for(dir, "ready", 30000);
	if (netns)
		REQUIRE(host_start(2, 1, dir) == 0);
	usleep(1200000); /* some rounds before the late ones */
	touch(dir, "add");
	wait_for(dir, "added", 30000);
	int64_t from = mono_us();
	usleep(2000000); /* four heartbeats of full rounds */
	char self[64] = "";
	gethostname(self, sizeof self - 1);
	const char *late_hosts[] = {self, self, self};
	const char *ns_hosts[] = {"dwhost1", "dwhost1", "dwhost2", self};
	const char *ssh_hosts[] = {"dwhost1", "dwhost1", "dwhost3", "dwhost2",
	                           self};
	const char *const *want = !netns     ? late_hosts
	                          : have_ssh ? ssh_hosts
	                                     : ns_hosts;
	const char *kinds = !netns ? "SHS" : have_ssh ? "SHHHS" : "SHHS";
	struct known k[MAXW];
	/* the ids and hosts are only written at the end: take them from
	 * the order of joining, which the master also follows */
	int n = (int)strlen(kinds);
	for (int i = 0; i < n; i++) {
		k[i].id = i + 2;
		k[i].kind = kinds[i];
		snprintf(k[i].host, sizeof k[i].host, "%s", want[i]);
	}
	struct live_seen seen[MAXW];
	check_top(mode, k, n, from, seen);
	touch(dir, "stop");
	int st;
	REQUIRE(waitpid(m, &st, 0) == m);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	hosts_kill();
	mu_sshd_stop(&sd);
	live_check_seen(dir, netns ? "live_hosts netns" : "live_hosts late",
	                seen, n);
	struct known asked[MAXW];
	CHECK(read_asked(dir, asked) == n);
	check_hosts(asked, n, want);
	for (int i = 0; i < n; i++)
		CHECK(asked[i].id == k[i].id && asked[i].kind == k[i].kind);
	check_talp(mode, talp, asked, n, !netns ? 1 : have_ssh ? 4 : 3);
	if (!netns)
		check_counters(talp_text);
	if (!tu_failures)
		tu_rmtree(dir);
	else
		printf("live_hosts: kept %s\n", dir);
	return tu_report(netns ? "live_hosts netns" : "live_hosts late");
}

int
main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "--master"))
		return master_main(argc, argv, !strcmp(argv[2], "netns"),
		                   argv[3]);
	if (argc > 1 && !strcmp(argv[1], "--dwork-dial")) /* a host's worker */
		return dw_init(&argc, &argv) == DW_OK ? 0 : 1;
	if (tu_in_worker())
		return dw_init(&argc, &argv) == DW_OK ? 0 : 1;
	signal(SIGPIPE, SIG_IGN);
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	REQUIRE(el > 0);
	exe[el] = 0;
	int netns = argc > 1 && !strcmp(argv[1], "--netns");
	if (netns) {
		const char *why = netns_refused();
		if (why) {
			printf("live_hosts netns: skipped: %s\n", why);
			return TEST_SKIP;
		}
	}
	return run_mode(netns, argv);
}
