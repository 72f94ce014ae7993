/*
 * dwork top on a running cluster of known behaviour (real processes, the
 * real tool).  A master (this binary, --master DIR) keeps two workers
 * busy in rounds of ROUND_MS: worker 2 runs "solid" for the whole round
 * (useful 100%), worker 3 runs "half" for half of it (useful 50%); the
 * master itself only waits.  Then:
 *
 *  - `dwork top --once --json` reports those functions and fractions
 *    (what each worker's sleeps cover of a span of the snapshot's
 *    interval ending when its figures were taken, within a point: each
 *    sleep returns when it began and ended, the master notes them), and
 *    the text table shows them;
 *  - a worker added mid-run (the test asks the master by a file) appears;
 *  - a worker killed with SIGKILL disappears, with its exit reason;
 *  - the control socket refuses a wrong cookie, and (as root) a client
 *    of another user, even one that knows the cookie;
 *  - the socket and cookie files are gone when the master ends, and a
 *    stale socket of a dead pid is ignored.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dwork/dwork.h>
#include <dwork/error.h>

#include "runtime/handshake.h"
#include "live_util.h"
#include "testutil.h"

#define ROUND_MS 250
#define HB_MS    "500"

static int
mypid(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len;
	int v = (int)getpid();
	return dw_reply_set(r, &v, sizeof v);
}
DW_REGISTER(mypid)

static int
exists(const char *dir, const char *name)
{
	char p[600];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static void
note_pid(const char *dir, int id)
{
	void *res;
	size_t len;
	char p[600];
	if (dw_remotecall_fetch(id, "mypid", NULL, 0, &res, &len) != DW_OK)
		return;
	snprintf(p, sizeof p, "%s/pid%d", dir, id);
	FILE *f = fopen(p, "w");
	if (f) {
		fprintf(f, "%d\n", *(int *)res);
		fclose(f);
	}
	free(res);
}

static char naps_dir[600]; /* where live_nap_note writes */

/* One round: each live worker of ids[] runs its function; each sleep is
 * noted in the naps file: the fractions dwork top must show. */
static void
round_of(int *ids, int n)
{
	dw_future *f[8] = {0};
	for (int i = 0; i < n; i++) {
		int ms = i == 1 ? ROUND_MS / 2 : ROUND_MS;
		if (ids[i] && dw_remotecall(ids[i], i == 1 ? "half" : "solid",
		                            &ms, sizeof ms, &f[i]) != DW_OK)
			ids[i] = 0;
	}
	for (int i = 0; i < n; i++)
		if (f[i]) {
			const void *res;
			size_t len;
			int64_t t0, t1;
			if (dw_future_fetch(f[i], &res, &len) != DW_OK)
				ids[i] = 0; /* killed by the test */
			else if (live_nap_of(res, len, &t0, &t1) >= 0)
				live_nap_note(naps_dir, ids[i], t0, t1);
			dw_future_free(f[i]);
		}
}

static int
master_main(int argc, char **argv, const char *dir)
{
	if (dw_init(&argc, &argv) != DW_OK)
		return 1;
	snprintf(naps_dir, sizeof naps_dir, "%s", dir);
	int ids[3] = {0};
	if (dw_addprocs(2, NULL, ids) != 2)
		return 1;
	note_pid(dir, ids[0]);
	note_pid(dir, ids[1]);
	char p[600];
	snprintf(p, sizeof p, "%s/ready", dir);
	fclose(fopen(p, "w"));
	for (int added = 0; !exists(dir, "stop");) {
		if (!added && exists(dir, "add")) {
			added = dw_addprocs(1, NULL, &ids[2]) == 1;
			if (added)
				note_pid(dir, ids[2]);
		}
		round_of(ids, added ? 3 : 2);
	}
	dw_finalize();
	return 0;
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

/* The process object of id in a snapshot, NULL when absent. */
static const char *
proc_of(const char *json, int id)
{
	char key[32];
	snprintf(key, sizeof key, "{\"id\":%d,\"state\"", id);
	return strstr(json, key);
}

static double
num_field(const char *obj, const char *name)
{
	char key[64];
	snprintf(key, sizeof key, "\"%s\":", name);
	const char *p = strstr(obj, key);
	return p ? atof(p + strlen(key)) : -1;
}

static int
str_field(const char *obj, const char *name, const char *want)
{
	char key[128];
	snprintf(key, sizeof key, "\"%s\":\"%s\"", name, want);
	const char *p = strstr(obj, key), *end = strchr(obj, '}');
	return p && end && p < end;
}

static void
wait_for(const char *dir, const char *name, int ms)
{
	for (int i = 0; i < ms / 10 && !exists(dir, name); i++)
		usleep(10000);
	REQUIRE(exists(dir, name));
}

static int
read_pid(const char *dir, int id)
{
	char p[600];
	int pid = 0;
	snprintf(p, sizeof p, "%s/pid%d", dir, id);
	FILE *f = fopen(p, "r");
	if (f) {
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	return pid;
}

/* The text table's row of process id ends with this host's name (every
 * process of the test runs here). */
static int
row_ends_with_host(const char *table, int id)
{
	char want[300], host[256] = "", row[16];
	gethostname(host, sizeof host - 1);
	snprintf(want, sizeof want, "M  %.32s\n", host);
	snprintf(row, sizeof row, "\n%5d  ", id);
	const char *p = strstr(table, row), *end = p ? strchr(p + 1, '\n') : 0;
	size_t n = strlen(want);
	return end && (size_t)(end + 1 - p) >= n &&
	       !strncmp(end + 1 - n, want, n);
}

static void
check_fractions(int64_t from, struct live_seen *seen)
{
	int64_t before = mono_us();
	char *s = run_top("--once --json");
	int64_t now = mono_us();
	const char *w2 = proc_of(s, 2), *w3 = proc_of(s, 3), *m = proc_of(s, 1);
	CHECK(w2 && w3 && m);
	if (w2 && w3 && m) {
		for (int i = 0; i < 2; i++) {
			const char *w = i ? w3 : w2;
			seen[i] = (struct live_seen){
			    .id = 2 + i,
			    .useful = num_field(w, "useful"),
			    .interval_ms = num_field(w, "interval_ms"),
			    .age_ms = num_field(w, "age_ms"),
			    .from = from,
			    .before = before,
			    .now = now,
			};
		}
		double um = num_field(m, "useful");
		printf("live_top: useful master %.3f\n", um);
		CHECK(um >= 0 && um < 0.05);
		/* the function running when its figures were taken: none
		 * between two rounds (polled for in main) */
		CHECK(str_field(w2, "function", "solid") ||
		      str_field(w2, "function", ""));
		CHECK(str_field(w3, "function", "half") ||
		      str_field(w3, "function", ""));
		CHECK(num_field(w2, "served") >= 3);
		CHECK(num_field(m, "issued") >= 6);
		CHECK(num_field(w2, "rss_bytes") > 1e5);
		CHECK(num_field(w2, "bytes_received") > 0);
	}
	CHECK(strstr(s, "\"interval\":{\"load_balance\":") != NULL);
	free(s);
	s = run_top("--json --count 2 --interval 100"); /* streams lines */
	int lines = 0;
	for (const char *q = s; (q = strchr(q, '\n')); q++)
		lines++;
	CHECK(lines == 2 && strncmp(s, "{\"pid\":", 7) == 0);
	free(s);
	s = run_top("--once");
	CHECK(strstr(s, "dwork top: pid ") != NULL);
	CHECK(strstr(s, "parallel efficiency") != NULL);
	CHECK(strstr(s, "  rss  host\n") != NULL);
	for (int id = 1; id <= 3; id++)
		CHECK(row_ends_with_host(s, id));
	printf("%s", s);
	free(s);
}

/* Polls dwork top ARGS until pred holds on its output (up to ms). */
static int
poll_top_args(const char *args, int (*pred)(const char *), int ms)
{
	for (int i = 0; i < ms / 200; i++) {
		char *s = run_top(args);
		int ok = pred(s);
		free(s);
		if (ok)
			return 1;
		usleep(200000);
	}
	return 0;
}

static int
poll_top(int (*pred)(const char *), int ms)
{
	return poll_top_args("--once --json", pred, ms);
}

/* Worker 2 runs nothing but "solid", but a snapshot taken between two
 * of its rounds (the master's turn, which a loaded machine stretches:
 * once useful 60% over the interval) shows it idle with no function:
 * its name must appear, not in any one snapshot. */
static int
w2_solid(const char *s)
{
	const char *p = proc_of(s, 2);
	return p && str_field(p, "function", "solid");
}

/* The same in the text table, on worker 2's row. */
static int
w2_solid_text(const char *s)
{
	const char *p = strstr(s, "\n    2  "),
	           *end = p ? strchr(p + 1, '\n') : 0;
	const char *f = p ? strstr(p, " solid ") : 0;
	return f && end && f < end;
}

static int
has_w4(const char *s)
{
	const char *p = proc_of(s, 4);
	return p && str_field(p, "function", "solid");
}

static int
w3_gone(const char *s)
{
	return !proc_of(s, 3) && strstr(s, "worker 3 has exited") &&
	       strstr(s, "killed by signal 9");
}

/* hs_answer on a fresh connection to the master's socket. */
static int
try_cookie(const char *rtdir, int pid, const char *cookie, int *connected)
{
	*connected = 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%d.sock", rtdir,
	             pid) >= (int)sizeof sa.sun_path)
		return DW_EINVAL;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (fd >= 0)
			close(fd);
		return DW_EIO;
	}
	*connected = 1;
	struct hs_side me = {.cookie = cookie, .role = AUTH_WORKER};
	struct hs_result r;
	char why[256] = "";
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	int err = hs_answer(fd, &me, now + 3000, &r, why, sizeof why);
	close(fd);
	if (err != DW_OK)
		printf("live_top: refused as expected: %s\n", why);
	return err;
}

static void
check_other_user(const char *rtdir, int pid, const char *cookie)
{
	if (geteuid() != 0) {
		printf("live_top: another user: skipped (needs root to "
		       "become nobody)\n");
		return;
	}
	struct passwd *pw = getpwnam("nobody");
	if (!pw) {
		printf("live_top: another user: skipped (no user nobody)\n");
		return;
	}
	char sock[700];
	snprintf(sock, sizeof sock, "%s/%d.sock", rtdir, pid);
	/* let nobody reach the socket, so that SO_PEERCRED is what stops it */
	char top[700];
	snprintf(top, sizeof top, "%s", rtdir);
	*strrchr(top, '/') = 0;
	REQUIRE(chmod(top, 0711) == 0 && chmod(rtdir, 0711) == 0 &&
	        chmod(sock, 0666) == 0);
	fflush(stdout); /* the child's exit flushes its copy */
	pid_t c = fork();
	REQUIRE(c >= 0);
	if (c == 0) {
		if (setgid(pw->pw_gid) || setuid(pw->pw_uid))
			_exit(2);
		int connected;
		int r = try_cookie(rtdir, pid, cookie, &connected);
		fflush(stdout);
		/* 0: it connected, and the master closed on it */
		_exit(r == DW_OK ? 1 : !connected ? 3 : 0);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	REQUIRE(chmod(top, 0700) == 0 && chmod(rtdir, 0700) == 0 &&
	        chmod(sock, 0600) == 0);
}

static void
check_auth(const char *rtdir, int pid)
{
	char p[700], cookie[80] = "";
	snprintf(p, sizeof p, "%s/%d.cookie", rtdir, pid);
	FILE *f = fopen(p, "r");
	REQUIRE(f && fgets(cookie, sizeof cookie, f));
	fclose(f);
	struct stat st;
	REQUIRE(stat(p, &st) == 0);
	CHECK((st.st_mode & 0777) == 0600);
	snprintf(p, sizeof p, "%s/%d.sock", rtdir, pid);
	REQUIRE(stat(p, &st) == 0);
	CHECK((st.st_mode & 0777) == 0600);
	REQUIRE(stat(rtdir, &st) == 0);
	CHECK((st.st_mode & 0777) == 0700);
	int connected;
	CHECK(try_cookie(rtdir, pid, cookie, &connected) == DW_OK);
	CHECK(try_cookie(rtdir, pid, "0123456789abcdef0123456789abcdef",
	                 &connected) == DW_EAUTH);
	check_other_user(rtdir, pid, cookie);
}

/* With two live pids in the directory, dwork top lists them and takes
 * --pid (the second "socket" is a file named by this test's pid). */
static void
check_several(const char *rtdir, int m)
{
	char p[700], args[64];
	snprintf(p, sizeof p, "%s/%d.sock", rtdir, (int)getpid());
	fclose(fopen(p, "w"));
	char *s = run_top("--once");
	CHECK(strstr(s, "2 dwork masters are running") != NULL);
	CHECK(strstr(s, "--pid") != NULL);
	free(s);
	snprintf(args, sizeof args, "--pid %d --once --json", m);
	s = run_top(args);
	CHECK(proc_of(s, 2) != NULL);
	free(s);
	unlink(p);
}

int
main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "--master"))
		return master_main(argc, argv, argv[2]);
	if (tu_in_worker())
		return dw_init(&argc, &argv) == DW_OK ? 0 : 1;
	signal(SIGPIPE, SIG_IGN);
	const char *dir = tu_tmpdir("live");
	char rtdir[600];
	snprintf(rtdir, sizeof rtdir, "%s/rt", dir);
	setenv("DWORK_RUNTIME_DIR", rtdir, 1);
	setenv("DWORK_HEARTBEAT_MS", HB_MS, 1);
	setenv("DWORK_TRACE", "0", 1);
	/* a stale socket of a process that has ended is ignored */
	REQUIRE(mkdir(rtdir, 0700) == 0);
	char stale[700];
	snprintf(stale, sizeof stale, "%s/999999999.sock", rtdir);
	fclose(fopen(stale, "w"));
	char *s = run_top("--once");
	CHECK(strstr(s, "no running dwork master") != NULL);
	free(s);

	pid_t m = fork();
	REQUIRE(m >= 0);
	if (m == 0) {
		execl("/proc/self/exe", argv[0], "--master", dir, (char *)NULL);
		_exit(127);
	}
	wait_for(dir, "ready", 30000);
	int64_t from = mono_us();
	/* the master removed the stale one (its pid gone, nothing listens) */
	CHECK(access(stale, F_OK) != 0);
	usleep(1500000); /* three heartbeats of full rounds */
	struct live_seen seen[2] = {{.id = 2, .useful = -1},
	                            {.id = 3, .useful = -1}};
	check_fractions(from, seen);
	CHECK(poll_top(w2_solid, 15000));
	CHECK(poll_top_args("--once", w2_solid_text, 15000));
	check_auth(rtdir, (int)m);
	s = run_top("--pid 1 --once");
	CHECK(strstr(s, "no running dwork master with pid 1") != NULL);
	free(s);
	check_several(rtdir, (int)m);

	char p[700];
	snprintf(p, sizeof p, "%s/add", dir);
	fclose(fopen(p, "w"));
	CHECK(poll_top(has_w4, 15000));
	int w3 = read_pid(dir, 3);
	CHECK(w3 > 0);
	if (w3 > 0)
		kill(w3, SIGKILL);
	CHECK(poll_top(w3_gone, 15000));

	snprintf(p, sizeof p, "%s/stop", dir);
	fclose(fopen(p, "w"));
	int st;
	REQUIRE(waitpid(m, &st, 0) == m);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(p, sizeof p, "%s/%d.sock", rtdir, (int)m);
	CHECK(access(p, F_OK) != 0);
	snprintf(p, sizeof p, "%s/%d.cookie", rtdir, (int)m);
	CHECK(access(p, F_OK) != 0);
	live_check_seen(dir, "live_top", seen, 2);
	if (!tu_failures)
		tu_rmtree(dir);
	else
		printf("live_top: kept %s\n", dir);
	return tu_report("live_top");
}
