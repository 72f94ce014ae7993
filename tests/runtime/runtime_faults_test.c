/*
 * The runtime under faults: a worker killed mid-call, a stopped worker
 * (heartbeats), removed workers, failed launches, wrong cookies and
 * protocol versions, garbage/truncated/oversized frames sent to a worker
 * and to the master, -p N, and nothing left behind by dw_finalize.
 */
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "runtime/handshake.h"
#include "runtime/rt.h"
#include "runtime/wire.h"
#include "rt_util.h"
#include "testutil.h"

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
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

static int
echo_ok(int w)
{
	void *res;
	size_t n;
	int ok = dw_remotecall_fetch(w, "echo", "hi", 2, &res, &n) == DW_OK &&
	         n == 2;
	free(ok ? res : NULL);
	return ok;
}

/* The runtime reaps a dead worker just after failing its calls. */
static int
reaped(int pid)
{
	for (int i = 0; i < 300; i++) {
		if (waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD)
			return 1;
		usleep(10000);
	}
	return 0;
}

struct slow_call {
	int w, ms, err;
	double took, end;
};

static void *
slow_caller(void *p)
{
	struct slow_call *s = p;
	void *res = NULL;
	size_t n;
	double t0 = now_s();
	s->err = dw_remotecall_fetch(s->w, "sleeper", &s->ms, sizeof s->ms,
	                             &res, &n);
	s->end = now_s();
	s->took = s->end - t0;
	free(res);
	return NULL;
}

/* A worker killed with SIGKILL during a call: the caller gets
 * DW_EEXITED at once; the others go on. */
static void
test_killed_mid_call(int victim, int other)
{
	int pid = pid_of(victim);
	REQUIRE(pid > 0);
	struct slow_call s = {.w = victim, .ms = 20000};
	pthread_t th;
	pthread_create(&th, NULL, slow_caller, &s);
	usleep(200000);
	double tk = now_s();
	kill(pid, SIGKILL);
	pthread_join(th, NULL);
	CHECK(s.err == DW_EEXITED);
	CHECK(s.took < 19.0); /* before the call itself would have ended */
	printf("killed worker: its pending call failed %.1f ms after the "
	       "kill\n",
	       (s.end - tk) * 1e3);
	CHECK(echo_ok(other));
	void *res;
	size_t n;
	double t0 = now_s();
	CHECK(dw_remotecall_fetch(victim, "echo", "x", 1, &res, &n) ==
	      DW_EEXITED);
	CHECK(now_s() - t0 < 10.0); /* known dead: no wait for anything */
	CHECK(strstr(dw_errmsg(), "exited") != NULL);
	CHECK(reaped(pid));
}

/* A stopped worker stops answering heartbeats and is declared dead. */
static void
test_stopped(int victim, int other)
{
	int pid = pid_of(victim);
	REQUIRE(pid > 0);
	struct slow_call s = {.w = victim, .ms = 20000};
	pthread_t th;
	pthread_create(&th, NULL, slow_caller, &s);
	usleep(100000);
	double ts = now_s();
	kill(pid, SIGSTOP);
	pthread_join(th, NULL);
	CHECK(s.err == DW_EEXITED);
	CHECK(s.took < 19.0); /* before the call itself would have ended */
	printf("stopped worker: its pending call failed %.0f ms after the "
	       "stop\n",
	       (s.end - ts) * 1e3);
	CHECK(echo_ok(other));
	CHECK(reaped(pid));
}

static void
test_rmprocs(int w)
{
	int pid = pid_of(w);
	CHECK(dw_rmprocs(&w, 1, 5000) == DW_OK);
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(w, "echo", "x", 1, &res, &n) == DW_EEXITED);
	CHECK(kill(pid, 0) < 0 && errno == ESRCH);
	int bogus = 77;
	CHECK(dw_rmprocs(&bogus, 1, 100) == DW_ENOTFOUND);
}

static void
test_failed_launches(void)
{
	int ids[2];
	dw_local_options o = {.exe = "/nonexistent/program"};
	CHECK(dw_addprocs(1, &o, ids) == DW_ENOENT);
	CHECK(strstr(dw_errmsg(), "cannot run '/nonexistent/program'"));
	const char *silent[] = {"--test-silent", NULL};
	dw_local_options s = {.args = silent, .launch_timeout_ms = 300};
	CHECK(dw_addprocs(1, &s, ids) == DW_ETIMEDOUT);
	CHECK(strstr(dw_errmsg(), "no address line within 300 ms"));
	const char *garbage[] = {"--test-garbage", NULL};
	dw_local_options g = {.args = garbage};
	CHECK(dw_addprocs(1, &g, ids) == DW_EPROTO);
	CHECK(strstr(dw_errmsg(), "printed 'hello' instead of its address"));
	const char *ex3[] = {"--test-exit3", NULL};
	dw_local_options e = {.args = ex3};
	CHECK(dw_addprocs(1, &e, ids) < 0);
	CHECK(strstr(dw_errmsg(), "exited with status 3"));
	CHECK(waitpid(-1, NULL, WNOHANG) <= 0); /* no zombie of those */
}

/* ---- a fake worker behind a custom manager (master-side faults) ---- */

enum fake_mode { FAKE_GARBAGE, FAKE_BAD_COOKIE, FAKE_VERSION };

struct fake {
	int fd, mode;
	char cookie[WIRE_COOKIE_MAX + 1];
};

/* A challenge with another major version, sent by hand. */
static void
send_challenge_version(int fd, int vmajor)
{
	unsigned char buf[WIRE_HDR + AUTH_CHALLENGE];
	struct auth_challenge c = {.vmajor = (uint16_t)vmajor,
	                           .role = AUTH_WORKER};
	size_t pl = auth_put_challenge(buf + WIRE_HDR, &c);
	wire_put_hdr(buf, WIRE_CHALLENGE, 0, (uint32_t)pl);
	send(fd, buf, WIRE_HDR + pl, MSG_NOSIGNAL);
}

/* A worker with the wrong cookie that ignores the master's proof and
 * answers with its own (wrong) one. */
static void
fake_bluff(int fd)
{
	unsigned char buf[WIRE_HDR + 512];
	struct auth_challenge c = {.vmajor = WIRE_VERSION_MAJOR,
	                           .role = AUTH_WORKER};
	struct auth_hello h;
	struct auth_ack a = {
	    .vmajor = WIRE_VERSION_MAJOR, .role = AUTH_WORKER, .pid = 4242};
	REQUIRE(auth_nonce(c.nonce) == 0);
	size_t pl = auth_put_challenge(buf + WIRE_HDR, &c);
	wire_put_hdr(buf, WIRE_CHALLENGE, 0, (uint32_t)pl);
	send(fd, buf, WIRE_HDR + pl, MSG_NOSIGNAL);
	if (recv(fd, buf, WIRE_HDR + AUTH_HELLO, MSG_WAITALL) !=
	        (ssize_t)(WIRE_HDR + AUTH_HELLO) ||
	    auth_parse_hello(buf + WIRE_HDR, AUTH_HELLO, &h, NULL, 0))
		return;
	auth_ack_mac("not-the-cookie", &c, &h, &a, a.mac);
	pl = auth_put_ack(buf + WIRE_HDR, &a);
	wire_put_hdr(buf, WIRE_HELLO_ACK, 0, (uint32_t)pl);
	send(fd, buf, WIRE_HDR + pl, MSG_NOSIGNAL);
}

static void *
fake_worker(void *p)
{
	struct fake *f = p;
	unsigned char buf[2048];
	struct hs_side me = {
	    .cookie = f->cookie, .role = AUTH_WORKER, .addr = "127.0.0.1:1"};
	struct hs_result r;
	char why[300];
	if (f->mode == FAKE_VERSION)
		send_challenge_version(f->fd, 9);
	else if (f->mode == FAKE_BAD_COOKIE)
		fake_bluff(f->fd);
	else if (hs_answer(f->fd, &me, rt_now_ms() + 5000, &r, why,
	                   sizeof why) != DW_OK)
		goto out;
	if (f->mode == FAKE_GARBAGE) {
		usleep(200000);
		memset(buf, 0xff, 64); /* a length of four billion */
		send(f->fd, buf, 64, MSG_NOSIGNAL);
	}
out:
	usleep(300000);
	close(f->fd);
	return NULL;
}

static struct fake fk;
static pthread_t fk_thread;

static int
fake_launch(void *self, int n, dw_launch *l)
{
	(void)self;
	(void)n;
	int sp[2];
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0);
	fk.fd = sp[1];
	snprintf(fk.cookie, sizeof fk.cookie, "%s", dw_launch_cookie(l));
	pthread_create(&fk_thread, NULL, fake_worker, &fk);
	dw_worker_config wc = {
	    .id = dw_launch_id(l, 0), .fd = sp[0], .out_fd = -1, .err_fd = -1};
	return dw_launched(l, &wc);
}

static int
run_fake(int mode, int *id)
{
	dw_manager m = {.name = "fake", .launch = fake_launch};
	fk.mode = mode;
	int r = dw_addprocs_with(&m, 1, id);
	pthread_join(fk_thread, NULL);
	return r;
}

static void
test_master_faults(int good)
{
	int id;
	CHECK(run_fake(FAKE_BAD_COOKIE, &id) == DW_EAUTH);
	CHECK(strstr(dw_errmsg(), "wrong cookie") != NULL);
	CHECK(run_fake(FAKE_VERSION, &id) == DW_EVERSION);
	CHECK(strstr(dw_errmsg(), "version mismatch") != NULL);
	CHECK(run_fake(FAKE_GARBAGE, &id) == 1);
	/* the garbage closed that worker's link; the master goes on */
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(id, "echo", "x", 1, &res, &n) == DW_EEXITED);
	CHECK(echo_ok(good));
}

/* ---- a worker started by hand (worker-side faults) ---- */

struct manual {
	pid_t pid;
	int in, out, err;
	int port;
};

static void
manual_start(struct manual *m, const char *cookie)
{
	int in[2], out[2], err[2];
	REQUIRE(pipe(in) == 0 && pipe(out) == 0 && pipe(err) == 0);
	if ((m->pid = fork()) == 0) {
		dup2(in[0], 0), dup2(out[1], 1), dup2(err[1], 2);
		execl("/proc/self/exe", "worker", "--dwork-worker", (char *)0);
		_exit(127);
	}
	REQUIRE(m->pid > 0);
	close(in[0]), close(out[1]), close(err[1]);
	m->in = in[1], m->out = out[0], m->err = err[0];
	REQUIRE(write(m->in, cookie, strlen(cookie)) > 0);
	REQUIRE(write(m->in, "\n", 1) == 1);
	char line[256] = "";
	size_t k = 0;
	while (k + 1 < sizeof line && read(m->out, line + k, 1) == 1 &&
	       line[k] != '\n')
		k++;
	line[k] = 0;
	char *colon = strrchr(line, ':');
	REQUIRE(strncmp(line, "dwork-worker-address ", 21) == 0 && colon);
	m->port = atoi(colon + 1);
}

static int
manual_connect(struct manual *m)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)m->port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	REQUIRE(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

/* Proves to be the master with cookie (or, with vmajor not ours, sends
 * a HELLO of that version); returns 1 and the answer when the worker
 * accepted.  The worker's own version comes back in *wmajor. */
static int
manual_hello(int fd, const char *cookie, int vmajor, struct hs_result *ack,
             int *wmajor)
{
	unsigned char buf[2048];
	char why[300];
	*wmajor = -1;
	if (vmajor != WIRE_VERSION_MAJOR) {
		struct wire_hdr rh;
		struct auth_challenge c;
		struct auth_hello h = {.vmajor = (uint16_t)vmajor,
		                       .role = AUTH_MASTER};
		if (recv(fd, buf, WIRE_HDR, MSG_WAITALL) != WIRE_HDR ||
		    wire_parse_hdr(buf, WIRE_HELLO_MAX, &rh, NULL, 0) ||
		    recv(fd, buf, rh.payload, MSG_WAITALL) !=
		        (ssize_t)rh.payload ||
		    auth_parse_challenge(buf, rh.payload, &c, NULL, 0))
			return 0;
		*wmajor = c.vmajor;
		size_t pl = auth_put_hello(buf + WIRE_HDR, &h);
		wire_put_hdr(buf, WIRE_HELLO, 0, (uint32_t)pl);
		send(fd, buf, WIRE_HDR + pl, MSG_NOSIGNAL);
		return 0;
	}
	struct hs_side me = {
	    .cookie = cookie, .role = AUTH_MASTER, .id = 1, .give_id = 5};
	if (hs_prove(fd, &me, rt_now_ms() + 5000, ack, why, sizeof why))
		return 0;
	/* the settings that follow the handshake: tracing off, then the
	 * link limit and the flow-control bounds */
	memset(buf, 0, WIRE_HDR + 52);
	wire_put_hdr(buf, WIRE_CONFIG, 0, 52);
	wire_put_u32(buf + WIRE_HDR + 32, WIRE_MAX_PAYLOAD);
	wire_put_u64(buf + WIRE_HDR + 36, 256u << 20);
	wire_put_u64(buf + WIRE_HDR + 44, 256u << 20);
	send(fd, buf, WIRE_HDR + 52, MSG_NOSIGNAL);
	return 1;
}

static int
manual_call_echo(int fd)
{
	unsigned char buf[256];
	wire_put_call(buf + WIRE_HDR, WIRE_MODE_FETCH, "echo", 4);
	memcpy(buf + WIRE_HDR + 8, "ping", 4);
	wire_put_hdr(buf, WIRE_CALL, 9, 12);
	send(fd, buf, WIRE_HDR + 12, 0);
	struct wire_hdr h;
	do { /* the CREDIT for the call's bytes comes before its RESULT */
		if (recv(fd, buf, WIRE_HDR, MSG_WAITALL) != WIRE_HDR ||
		    wire_parse_hdr(buf, 1024, &h, NULL, 0) ||
		    recv(fd, buf, h.payload, MSG_WAITALL) != (ssize_t)h.payload)
			return 0;
	} while (h.type == WIRE_CREDIT && h.ref == 12);
	if (h.type != WIRE_RESULT)
		return 0;
	return h.ref == 9 && h.payload == 4 && h.flags == 0 &&
	       !memcmp(buf, "ping", 4);
}

/* Waits for the manual worker to exit; returns its status and what it
 * printed on stderr. */
static int
manual_end(struct manual *m, char *err, size_t len)
{
	int st = -1;
	for (int i = 0; i < 500; i++) {
		if (waitpid(m->pid, &st, WNOHANG) == m->pid)
			break;
		usleep(10000);
	}
	if (m->pid > 0 && waitpid(m->pid, NULL, WNOHANG) == 0) {
		kill(m->pid, SIGKILL);
		waitpid(m->pid, &st, 0);
		st = -1;
	}
	ssize_t r = read(m->err, err, len - 1);
	err[r > 0 ? r : 0] = 0;
	close(m->in), close(m->out), close(m->err);
	return st;
}

static void
manual_bad_frame(const void *bytes, size_t n, const char *expect)
{
	struct manual m;
	manual_start(&m, "sesame");
	int fd = manual_connect(&m);
	struct hs_result ack;
	int wm;
	REQUIRE(manual_hello(fd, "sesame", WIRE_VERSION_MAJOR, &ack, &wm));
	CHECK(manual_call_echo(fd));
	send(fd, bytes, n, MSG_NOSIGNAL);
	if (!expect[0])
		close(fd); /* the frame is cut short by closing */
	char err[2048];
	int st = manual_end(&m, err, sizeof err);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) { /* no crash */
		fprintf(stderr, "worker ended with status %#x (%s):\n%s\n", st,
		        expect, err);
		tu_failures++;
	}
	if (!strstr(err, expect)) {
		fprintf(stderr, "worker stderr lacks '%s':\n%s\n", expect, err);
		tu_failures++;
	}
	if (expect[0])
		close(fd);
}

static void
test_worker_faults(void)
{
	struct manual m;
	manual_start(&m, "sesame");
	struct hs_result ack;
	int wm;
	int fd = manual_connect(&m);
	CHECK(!manual_hello(fd, "wrong", WIRE_VERSION_MAJOR, &ack, &wm));
	close(fd); /* a wrong proof: the worker runs nothing */
	fd = manual_connect(&m);
	/* refused; its challenge said which version it speaks ... */
	CHECK(!manual_hello(fd, "sesame", 9, &ack, &wm));
	CHECK(wm == WIRE_VERSION_MAJOR);
	char b;
	CHECK(recv(fd, &b, 1, 0) <= 0); /* closed (or reset) */
	close(fd);
	fd = manual_connect(&m); /* ... and the real master still gets in */
	CHECK(manual_hello(fd, "sesame", WIRE_VERSION_MAJOR, &ack, &wm));
	CHECK(ack.pid == (uint32_t)m.pid);
	CHECK(manual_call_echo(fd));
	close(fd); /* the master went away: the worker exits */
	char err[2048];
	int st = manual_end(&m, err, sizeof err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(err, "rejected a connection: wrong cookie") != NULL);
	CHECK(strstr(err, "the master speaks 9.0") != NULL);

	unsigned char big[16];
	wire_put_hdr(big, WIRE_CALL, 1, 0);
	wire_put_u32(big, 0xffffffffu); /* four billion */
	manual_bad_frame(big, 16, "exceeds the limit");
	unsigned char unk[16];
	wire_put_hdr(unk, 200, 1, 0);
	manual_bad_frame(unk, 16, "unknown frame type 200");
	manual_bad_frame(big, 7, ""); /* truncated header, then EOF */
	unsigned char cut[20];
	wire_put_hdr(cut, WIRE_CALL, 1, 100);
	manual_bad_frame(cut, 20, ""); /* truncated payload, then EOF */
	unsigned char odd[24];
	wire_put_hdr(odd, WIRE_CALL, 3, 8);
	memset(odd + 16, 0xee, 8); /* a call with a bad mode */
	manual_bad_frame(odd, 24, "malformed call");
}

/* ---- child modes ---- */

static int
count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/* dw_finalize leaves no child, zombie or descriptor behind. */
static int
child_finalize(int fds_before)
{
	int ids[3];
	if (dw_addprocs(3, NULL, ids) != 3 || !echo_ok(ids[0]))
		return 10;
	dw_rmprocs(ids, 1, 5000);
	dw_finalize();
	if (waitpid(-1, NULL, WNOHANG) != -1 || errno != ECHILD)
		return 11;
	if (count_fds() != fds_before) {
		fprintf(stderr, "fds: %d before, %d after\n", fds_before,
		        count_fds());
		return 12;
	}
	return 0;
}

static int
run_child(const char *mode, const char *env, char *const extra[])
{
	pid_t pid = fork();
	if (pid == 0) {
		char *argv[8] = {"child", (char *)mode};
		for (int i = 0; extra && extra[i]; i++)
			argv[2 + i] = extra[i];
		if (env)
			putenv((char *)env);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int
main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) { /* worker modes used by the tests */
		if (!strcmp(argv[i], "--test-silent"))
			sleep(30), exit(0);
		if (!strcmp(argv[i], "--test-garbage"))
			printf("hello\n"), exit(0);
		if (!strcmp(argv[i], "--test-exit3"))
			exit(3);
	}
	int fds_before = count_fds();
	dw_options o = {.heartbeat_ms = 100, .heartbeat_timeout_ms = 700};
	int rc = dw_init_opts(&argc, &argv, &o);
	if (argc > 1 && !strcmp(argv[1], "--check-procs"))
		return rc == DW_OK && argc == 2 && dw_nworkers() == 2 ? 0 : 20;
	if (argc > 1 && !strcmp(argv[1], "--check-bad-procs"))
		return rc == DW_EINVAL ? 0 : 21;
	if (argc > 1 && !strcmp(argv[1], "--check-finalize"))
		return child_finalize(fds_before);
	REQUIRE(rc == DW_OK);
	int ids[4];
	REQUIRE(dw_addprocs(4, NULL, ids) == 4);
	test_killed_mid_call(ids[0], ids[3]);
	test_stopped(ids[1], ids[3]);
	test_rmprocs(ids[2]);
	test_failed_launches();
	test_master_faults(ids[3]);
	test_worker_faults();
	CHECK(run_child("--check-procs", NULL, (char *[]){"-p", "2", NULL}) ==
	      0);
	CHECK(run_child("--check-procs", "DWORK_PROCS=2", NULL) == 0);
	CHECK(run_child("--check-bad-procs", NULL,
	                (char *[]){"--procs", "lots", NULL}) == 0);
	CHECK(run_child("--check-bad-procs", "DWORK_PROCS=-3", NULL) == 0);
	CHECK(run_child("--check-finalize", NULL, NULL) == 0);
	dw_finalize();
	return tu_report("runtime_faults");
}
