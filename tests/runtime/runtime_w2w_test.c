/*
 * Worker-to-worker calls and references that travel, with real worker
 * processes: a worker calling the master and other workers (both ways
 * round, so both "higher dials lower" paths), nested calls that come back
 * to a busy worker, the master-worker topology refusing worker-to-worker
 * calls, futures handed to a third process with holder counting, a peer
 * killed under pending calls, and strangers knocking on a worker's
 * listen socket.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "runtime/handshake.h"
#include "runtime/rt.h"
#include "runtime/wire.h"
#include "runtime/wire_err.h"
#include "runtime/work.h"
#include "rt_util.h"
#include "testutil.h"

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- functions the processes run ---- */

/* {int target, bytes}: calls echo(bytes) on target, returns the answer. */
static int
relay(const void *arg, size_t len, dw_reply *r)
{
	int to;
	if (len < sizeof to)
		return dw_reply_error(r, "short");
	memcpy(&to, arg, sizeof to);
	void *res;
	size_t n;
	int err = dw_remotecall_fetch(to, "echo", (const char *)arg + sizeof to,
	                              len - sizeof to, &res, &n);
	if (err)
		return dw_reply_error(r, "[%d] %s", err, dw_errmsg());
	return dw_reply_take(r, res, n);
}
DW_REGISTER(relay)

/* {int hops, int path[hops]}: calls the next process of the path with the
 * rest, appending its own id to the answer. */
static int
chain(const void *arg, size_t len, dw_reply *r)
{
	int hops;
	if (len < sizeof hops)
		return dw_reply_error(r, "short");
	memcpy(&hops, arg, sizeof hops);
	if (hops < 0 || len != sizeof(int) * (size_t)(hops + 1))
		return dw_reply_error(r, "bad chain");
	int me = dw_myid();
	if (hops == 0)
		return dw_reply_set(r, &me, sizeof me);
	int to; /* arguments are not aligned: copy */
	memcpy(&to, (const char *)arg + sizeof(int), sizeof to);
	int *next = malloc(sizeof(int) * (size_t)hops);
	next[0] = hops - 1;
	memcpy(next + 1, (const char *)arg + 2 * sizeof(int),
	       sizeof(int) * (size_t)(hops - 1));
	void *res;
	size_t n;
	int err = dw_remotecall_fetch(to, "chain", next,
	                              sizeof(int) * (size_t)hops, &res, &n);
	free(next);
	if (err)
		return dw_reply_error(r, "hop to %d: %s", to, dw_errmsg());
	int *out = malloc(n + sizeof me);
	memcpy(out, res, n);
	memcpy((char *)out + n, &me, sizeof me);
	free(res);
	return dw_reply_take(r, out, n + sizeof me);
}
DW_REGISTER(chain)

/* Imports a future and fetches it (waiting for the call to complete). */
static int
fut_user(const void *arg, size_t len, dw_reply *r)
{
	dw_future *f;
	if (dw_future_import(arg, len, &f))
		return dw_reply_error(r, "import: %s", dw_errmsg());
	int ready = dw_future_isready(f);
	const void *v;
	size_t n;
	int err = dw_future_fetch_timeout(f, &v, &n, 10000);
	if (err) {
		char msg[400];
		snprintf(msg, sizeof msg, "%s", dw_errmsg());
		dw_future_free(f);
		return dw_reply_error(r, "fetch [%d]: %s", err, msg);
	}
	unsigned char *out = malloc(n + 1);
	out[0] = (unsigned char)ready;
	memcpy(out + 1, v, n);
	dw_future_free(f);
	return dw_reply_take(r, out, n + 1);
}
DW_REGISTER(fut_user)

/* {future, channel}: imports the future, notes whether it is ready, then
 * opens the gate the future's call waits on (a value in the channel) and
 * fetches it: [ready, its bytes].  The call cannot have completed before
 * the gate opened, so ready is 0 on any machine. */
static int
fut_opener(const void *arg, size_t len, dw_reply *r)
{
	dw_future *f;
	dw_channel *ch;
	if (dw_args(r, arg, len, "FC", &f, &ch))
		return -1;
	int ready = dw_future_isready(f), gate = 300;
	int err = dw_channel_put(ch, &gate, sizeof gate);
	dw_channel_free(ch);
	const void *v;
	size_t n;
	if (!err)
		err = dw_future_fetch_timeout(f, &v, &n, 10000);
	if (err) {
		char msg[400];
		snprintf(msg, sizeof msg, "%s", dw_errmsg());
		dw_future_free(f);
		return dw_reply_error(r, "[%d]: %s", err, msg);
	}
	unsigned char *out = malloc(n + 1);
	out[0] = (unsigned char)ready;
	memcpy(out + 1, v, n);
	dw_future_free(f);
	return dw_reply_take(r, out, n + 1);
}
DW_REGISTER(fut_opener)

static int
nkept(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	int n = (int)call_kept_count();
	return dw_reply_set(r, &n, sizeof n);
}
DW_REGISTER(nkept)

static int
my_addr(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	return dw_reply_set(r, rt.my_addr, strlen(rt.my_addr));
}
DW_REGISTER(my_addr)

/* Takes from an imported channel (owned by another worker). */
static int
ch_take_long(const void *arg, size_t len, dw_reply *r)
{
	dw_channel *ch;
	if (dw_channel_import(arg, len, &ch))
		return dw_reply_error(r, "import: %s", dw_errmsg());
	void *v;
	size_t n;
	int err = dw_channel_take_timeout(ch, &v, &n, 20000);
	dw_channel_free(ch);
	if (err)
		return dw_reply_error(r, "take [%d]: %s", err, dw_errmsg());
	return dw_reply_take(r, v, n);
}
DW_REGISTER(ch_take_long)

/* ---- helpers ---- */

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
relay_ok(int via, int to, const char *msg)
{
	size_t ml = strlen(msg);
	unsigned char arg[256];
	memcpy(arg, &to, sizeof to);
	memcpy(arg + sizeof to, msg, ml);
	void *res;
	size_t n;
	int err =
	    dw_remotecall_fetch(via, "relay", arg, sizeof to + ml, &res, &n);
	int ok = err == DW_OK && n == ml && !memcmp(res, msg, ml);
	if (!ok)
		fprintf(stderr, "relay %d -> %d: %d %s\n", via, to, err,
		        err ? dw_errmsg() : "wrong answer");
	if (err == DW_OK)
		free(res);
	return ok;
}

static int
int_of(int w, const char *fn)
{
	void *res;
	size_t n;
	int v = -1;
	if (dw_remotecall_fetch(w, fn, NULL, 0, &res, &n) == DW_OK &&
	    n == sizeof v) {
		memcpy(&v, res, sizeof v);
		free(res);
	}
	return v;
}

/* 1 when worker w keeps `want` results, as it must once the releases
 * sent to it have arrived (they are waited for up to 10 s, however
 * loaded the machine). */
static int
kept_settles(int w, int want)
{
	for (int i = 0; i < 1000 && int_of(w, "nkept") != want; i++)
		usleep(10000);
	return int_of(w, "nkept") == want;
}

/* ---- tests ---- */

struct pair {
	int via, to, ok;
};

static void *
pair_thread(void *p)
{
	struct pair *q = p;
	char msg[64];
	snprintf(msg, sizeof msg, "from %d to %d", q->via, q->to);
	q->ok = 1;
	for (int i = 0; i < 20; i++)
		q->ok &= relay_ok(q->via, q->to, msg);
	return NULL;
}

/* Every worker calls every other worker and the master, all at once:
 * links open lazily, in both directions, without duplicates. */
static void
test_all_pairs(const int *ids, int n)
{
	struct pair ps[32];
	pthread_t th[32];
	int k = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j && k < 32)
				ps[k++] = (struct pair){ids[i], ids[j], 0};
	for (int i = 0; i < k; i++)
		pthread_create(&th[i], NULL, pair_thread, &ps[i]);
	for (int i = 0; i < k; i++) {
		pthread_join(th[i], NULL);
		CHECK(ps[i].ok);
	}
	for (int i = 0; i < n; i++)
		CHECK(relay_ok(ids[i], 1, "to the master"));
}

/* master -> a -> b -> master -> c, and a cycle back to a busy worker
 * (its only executor waits in the first call). */
static void
test_nested(const int *ids)
{
	int path[] = {4, ids[1], 1, ids[2], ids[0]};
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(ids[0], "chain", path, sizeof path, &res,
	                          &n) == DW_OK);
	int want[] = {ids[0], ids[2], 1, ids[1], ids[0]};
	CHECK(n == sizeof want && memcmp(res, want, sizeof want) == 0);
	free(res);
}

static void
test_master_worker(void)
{
	int ids[2];
	REQUIRE(dw_addprocs(2, NULL, ids) == 2);
	CHECK(dw_set_topology(DW_TOPOLOGY_MASTER_WORKER) == DW_OK);
	char arg[16];
	memcpy(arg, &ids[1], sizeof(int));
	memcpy(arg + sizeof(int), "hi", 2);
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(ids[0], "relay", arg, sizeof(int) + 2, &res,
	                          &n) == DW_EREMOTE);
	char want[32];
	snprintf(want, sizeof want, "[%d]", DW_EACCES);
	CHECK(strstr(dw_errmsg(), want) != NULL);
	CHECK(strstr(dw_errmsg(), "master-worker") != NULL);
	/* the other way round too (the master would have to ask it to dial) */
	memcpy(arg, &ids[0], sizeof(int));
	CHECK(dw_remotecall_fetch(ids[1], "relay", arg, sizeof(int) + 2, &res,
	                          &n) == DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "master-worker") != NULL);
	/* calls to the master still work */
	CHECK(relay_ok(ids[0], 1, "master"));
	CHECK(dw_set_topology(7) == DW_EINVAL);
	CHECK(dw_set_topology(DW_TOPOLOGY_ALL_TO_ALL) == DW_OK);
	CHECK(relay_ok(ids[0], ids[1], "all to all again"));
	CHECK(dw_rmprocs(ids, 2, 5000) == DW_OK);
}

/* A future handed to a third process: it waits for the call there and
 * fetches a copy; the result lives until the last holder let go. */
static void
test_future_travels(int where, int user)
{
	int base = int_of(where, "nkept");
	/* the call waits on a gate that only the user opens */
	dw_channel *gate;
	REQUIRE(dw_channel_new(1, 1, &gate) == DW_OK);
	void *gref;
	size_t gl;
	REQUIRE(dw_channel_export(gate, where, &gref, &gl) == DW_OK);
	dw_future *f;
	REQUIRE(dw_remotecall(where, "ch_take_long", gref, gl, &f) == DW_OK);
	free(gref);
	dw_future *g;
	REQUIRE(dw_remotecallf(user, "fut_opener", &g, "FC", f, gate) == DW_OK);
	dw_channel_free(gate);
	const void *v;
	size_t n;
	int ms = 300; /* the value the user put */
	CHECK(dw_future_fetch_timeout(g, &v, &n, 10000) == DW_OK);
	CHECK(n == 1 + sizeof ms && ((const unsigned char *)v)[0] == 0);
	CHECK(n == 1 + sizeof ms &&
	      !memcmp((const unsigned char *)v + 1, &ms, sizeof ms));
	dw_future_free(g);
	/* our copy is still there: fetching it gets the same bytes */
	CHECK(dw_future_fetch(f, &v, &n) == DW_OK && n == sizeof ms &&
	      !memcmp(v, &ms, sizeof ms));
	dw_future_free(f);
	CHECK(kept_settles(where, base));

	/* the owner lets go only after the last holder: we free first */
	void *ref;
	size_t rl;
	REQUIRE(dw_remotecall_wait(where, "echo", "abc", 3, &f) == DW_OK);
	REQUIRE(dw_future_export(f, user, &ref, &rl) == DW_OK);
	dw_future_free(f); /* our hold goes; the user's stays */
	usleep(50000);
	CHECK(int_of(where, "nkept") == base + 1);
	void *res;
	CHECK(dw_remotecall_fetch(user, "fut_user", ref, rl, &res, &n) ==
	      DW_OK);
	CHECK(n == 4 && ((unsigned char *)res)[0] == 1 &&
	      !memcmp((char *)res + 1, "abc", 3));
	free(res);
	CHECK(kept_settles(where, base));
	free(ref);

	/* a result already here travels with its value */
	REQUIRE(dw_remotecall(where, "echo", "xyz", 3, &f) == DW_OK);
	CHECK(dw_future_fetch(f, &v, &n) == DW_OK);
	REQUIRE(dw_future_export(f, user, &ref, &rl) == DW_OK);
	dw_future_free(f);
	CHECK(dw_remotecall_fetch(user, "fut_user", ref, rl, &res, &n) ==
	      DW_OK);
	CHECK(n == 4 && !memcmp((char *)res + 1, "xyz", 3));
	free(res);
	free(ref);

	/* a failed call: the holder gets its error */
	REQUIRE(dw_remotecall(where, "fails", "q", 1, &f) == DW_OK);
	REQUIRE(dw_future_export(f, user, &ref, &rl) == DW_OK);
	dw_future_free(f);
	CHECK(dw_remotecall_fetch(user, "fut_user", ref, rl, &res, &n) ==
	      DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "it failed on purpose (q)") != NULL);
	free(ref);
	CHECK(kept_settles(where, base));

	/* references are checked */
	REQUIRE(dw_remotecall(where, "echo", "k", 1, &f) == DW_OK);
	REQUIRE(dw_future_export(f, user, &ref, &rl) == DW_OK);
	dw_future *h;
	CHECK(dw_future_import(ref, rl, &h) == DW_EINVAL); /* not for us */
	CHECK(dw_future_import(ref, 10, &h) == DW_EFORMAT);
	free(ref);
	REQUIRE(dw_future_export(f, 1, &ref, &rl) == DW_OK); /* to ourselves */
	CHECK(dw_future_import(ref, rl, &h) == DW_OK);
	CHECK(dw_future_fetch(h, &v, &n) == DW_OK && n == 1);
	dw_future_free(h);
	dw_future_free(f);
	free(ref);
}

struct slow {
	int via, err;
	double took;
	char msg[400];
	const void *arg;
	size_t len;
	const char *fn;
};

static void *
slow_thread(void *p)
{
	struct slow *s = p;
	void *res = NULL;
	size_t n;
	double t0 = now_s();
	s->err = dw_remotecall_fetch(s->via, s->fn, s->arg, s->len, &res, &n);
	s->took = now_s() - t0;
	snprintf(s->msg, sizeof s->msg, "%s", dw_errmsg());
	free(res);
	return NULL;
}

/* A peer killed: a worker blocked on a channel that peer owns fails at
 * once with DW_EEXITED; the survivors go on. */
static void
test_peer_killed(void)
{
	int ids[3];
	REQUIRE(dw_addprocs(3, NULL, ids) == 3);
	dw_channel *ch;
	REQUIRE(dw_channel_new(ids[1], 1, &ch) == DW_OK);
	void *ref;
	size_t rl;
	REQUIRE(dw_channel_export(ch, ids[0], &ref, &rl) == DW_OK);
	struct slow s = {
	    .via = ids[0], .fn = "ch_take_long", .arg = ref, .len = rl};
	pthread_t t;
	pthread_create(&t, NULL, slow_thread, &s);
	usleep(300000);
	kill(pid_of(ids[1]), SIGKILL);
	pthread_join(t, NULL);
	/* "at once": well before the take's own 20 s limit, however loaded
	 * the machine (a missed death waits out those 20 s) */
	CHECK(s.err == DW_EREMOTE && s.took < 15.0);
	char want[32];
	snprintf(want, sizeof want, "take [%d]", DW_EEXITED);
	CHECK(strstr(s.msg, want) != NULL);
	dw_channel_free(ch);
	free(ref);
	CHECK(relay_ok(ids[0], ids[2], "still here"));
	CHECK(relay_ok(ids[2], ids[0], "still here"));
	/* a call to the dead one fails with DW_EEXITED */
	unsigned char a2[8];
	memcpy(a2, &ids[1], sizeof(int));
	memcpy(a2 + 4, "x", 1);
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(ids[2], "relay", a2, 5, &res, &n) ==
	      DW_EREMOTE);
	snprintf(want, sizeof want, "[%d]", DW_EEXITED);
	if (!strstr(dw_errmsg(), want))
		fprintf(stderr, "call to a dead worker: %s\n", dw_errmsg());
	CHECK(strstr(dw_errmsg(), want) != NULL);
	int rm[2] = {ids[0], ids[2]};
	CHECK(dw_rmprocs(rm, 2, 5000) == DW_OK);
}

/* The master's I/O thread held in a command until the test releases it,
 * as a loaded machine may leave it unscheduled. */
struct io_hold {
	int started[2], release[2];
};

static void
io_hold_cb(void *p)
{
	struct io_hold *h = p;
	char c = 1;
	if (write(h->started[1], &c, 1) != 1 || read(h->release[0], &c, 1) != 1)
		fprintf(stderr, "io_hold: %s\n", strerror(errno));
}

static void *
io_hold_thread(void *p)
{
	loop_run(io_hold_cb, p);
	return NULL;
}

/* The error a relay from `via` to `to` gets, "[code]" in its message. */
static int
relay_says(int via, int to, int code)
{
	unsigned char a[8];
	memcpy(a, &to, sizeof(int));
	memcpy(a + 4, "x", 1);
	void *res;
	size_t n;
	char want[32];
	snprintf(want, sizeof want, "[%d]", code);
	if (dw_remotecall_fetch(via, "relay", a, 5, &res, &n) != DW_EREMOTE) {
		free(res);
		return 0;
	}
	if (!strstr(dw_errmsg(), want))
		fprintf(stderr, "relay %d -> %d (dead): %s\n", via, to,
		        dw_errmsg());
	return strstr(dw_errmsg(), want) != NULL;
}

/* A worker killed while the master's I/O thread has not yet read the end
 * of its link (held here on purpose): a WHERE for it is handled by the
 * caller reading its own reply, and must still answer "has exited", to a
 * higher id (which would dial a closed port) and to a lower one (which
 * would wait 10 s for the dead one to dial it). */
static void
test_killed_io_busy(void)
{
	int ids[3];
	REQUIRE(dw_addprocs(3, NULL, ids) == 3);
	int pid = pid_of(ids[1]);
	REQUIRE(pid > 0);
	struct io_hold h;
	REQUIRE(pipe(h.started) == 0 && pipe(h.release) == 0);
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, io_hold_thread, &h) == 0);
	char c;
	REQUIRE(read(h.started[0], &c, 1) == 1);
	kill(pid, SIGKILL);
	siginfo_t si;
	/* a zombie: its sockets are closed; left for the runtime to reap */
	REQUIRE(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0);
	CHECK(relay_says(ids[2], ids[1], DW_EEXITED));
	CHECK(relay_says(ids[0], ids[1], DW_EEXITED));
	REQUIRE(write(h.release[1], &c, 1) == 1);
	pthread_join(t, NULL);
	for (int k = 0; k < 2; k++)
		close(h.started[k]), close(h.release[k]);
	CHECK(relay_ok(ids[0], ids[2], "after"));
	int rm[2] = {ids[0], ids[2]};
	CHECK(dw_rmprocs(rm, 2, 5000) == DW_OK);
}

static int
connect_to(const char *addr)
{
	const char *c = strrchr(addr, ':');
	REQUIRE(c);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)atoi(c + 1)),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	REQUIRE(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

/* 1 when the worker closed the connection without a handshake answer. */
static int
refused(int fd)
{
	unsigned char b[64];
	ssize_t r;
	while ((r = recv(fd, b, sizeof b, 0)) > 0)
		if (b[4] == WIRE_HELLO)
			return 0;
	close(fd);
	return r == 0 || (r < 0 && errno == ECONNRESET);
}

/* Answers worker w's handshake as the dialling worker id. */
static int
dial_as(int fd, const char *cookie, int id, int w)
{
	struct hs_side me = {.cookie = cookie,
	                     .role = AUTH_DIALLER,
	                     .id = (uint32_t)id,
	                     .want_id = (uint32_t)w,
	                     .addr = "127.0.0.1:1"};
	struct hs_result r;
	char why[300];
	return hs_answer(fd, &me, rt_now_ms() + 5000, &r, why, sizeof why);
}

/* A dialler without the cookie: it takes the proof of worker w and
 * answers with a made-up one. */
static void
dial_bluff(int fd, int id)
{
	unsigned char b[WIRE_HDR + 512];
	struct auth_challenge c = {.vmajor = WIRE_VERSION_MAJOR,
	                           .role = AUTH_DIALLER,
	                           .id = (uint32_t)id};
	size_t pl = auth_put_challenge(b + WIRE_HDR, &c);
	wire_put_hdr(b, WIRE_CHALLENGE, 0, (uint32_t)pl);
	REQUIRE(send(fd, b, WIRE_HDR + pl, MSG_NOSIGNAL) > 0);
	REQUIRE(recv(fd, b, WIRE_HDR + AUTH_HELLO, MSG_WAITALL) ==
	        (ssize_t)(WIRE_HDR + AUTH_HELLO));
	struct auth_ack a = {
	    .vmajor = WIRE_VERSION_MAJOR, .role = AUTH_DIALLER, .pid = 1};
	memset(a.mac, 0x5a, sizeof a.mac);
	pl = auth_put_ack(b + WIRE_HDR, &a);
	wire_put_hdr(b, WIRE_HELLO_ACK, 0, (uint32_t)pl);
	REQUIRE(send(fd, b, WIRE_HDR + pl, MSG_NOSIGNAL) > 0);
}

/* Reads one frame (header and up to cap payload bytes); -1 at EOF. */
static int
recv_frame(int fd, struct wire_hdr *h, unsigned char *p, size_t cap)
{
	unsigned char hb[WIRE_HDR];
	if (recv(fd, hb, WIRE_HDR, MSG_WAITALL) != WIRE_HDR ||
	    wire_parse_hdr(hb, 1u << 20, h, NULL, 0) || h->payload > cap)
		return -1;
	if (h->payload &&
	    recv(fd, p, h->payload, MSG_WAITALL) != (ssize_t)h->payload)
		return -1;
	return 0;
}

/* A fake worker with the right cookie and a higher id, linked to w. */
static int
fake_peer(const char *addr, int id, int w)
{
	int fd = connect_to(addr);
	REQUIRE(dial_as(fd, rt.cookie, id, w) == DW_OK);
	return fd;
}

static void
send_req(int fd, uint64_t ref, const unsigned char *pl, size_t n, int type)
{
	unsigned char b[256];
	wire_put_hdr(b, (uint8_t)type, ref, (uint32_t)n);
	memcpy(b + WIRE_HDR, pl, n);
	REQUIRE(send(fd, b, WIRE_HDR + n, MSG_NOSIGNAL) > 0);
}

/* Bad requests from a linked worker: malformed frames close the link
 * (logged), a short body is answered with DW_EPROTO, orders only the
 * master may give are ignored; the worker never crashes.  Statuses are
 * read as the wire carries them (positive codes, wire_err.h). */
static void
test_bad_requests(const char *addr, int w)
{
	struct wire_hdr h;
	unsigned char b[2048];
	int fd = fake_peer(addr, 90, w);
	unsigned char req[32] = {REQ_CH_TAKE, 0, 0, 0, 1, 2, 3};
	send_req(fd, 5, req, 7, WIRE_REQ); /* an id cut short */
	CHECK(recv_frame(fd, &h, b, sizeof b) == 0 && h.type == WIRE_ANSWER &&
	      h.ref == 5 && wire_err_get(wire_get_u32(b), 0) == DW_EPROTO);
	unsigned char ready[12] = {REQ_CH_READY, 0, 0, 0, 9, 9, 9};
	send_req(fd, 6, ready, 12, WIRE_REQ); /* no such channel */
	CHECK(recv_frame(fd, &h, b, sizeof b) == 0 && h.ref == 6 &&
	      wire_err_get(wire_get_u32(b), 0) == DW_ENOTFOUND);
	unsigned char gone[8] = {REQ_GONE, 0, 0, 0, 2, 0, 0, 0};
	send_req(fd, 0, gone, 8, WIRE_REQ); /* not from the master: ignored */
	send_req(fd, 7, ready, 12, WIRE_CANCEL); /* nothing parked */
	send_req(fd, 8, ready, 12, WIRE_REQ);
	CHECK(recv_frame(fd, &h, b, sizeof b) == 0 && h.ref == 8);
	unsigned char bad[4] = {200, 0, 0, 0};
	send_req(fd, 9, bad, 4, WIRE_REQ); /* unknown op: the link closes */
	CHECK(recv_frame(fd, &h, b, sizeof b) < 0);
	close(fd);
	fd = fake_peer(addr, 91, w);
	send_req(fd, 3, bad, 2, WIRE_ANSWER); /* an answer of 2 bytes */
	CHECK(recv_frame(fd, &h, b, sizeof b) < 0);
	close(fd);
	fd = fake_peer(addr, 92, w);
	unsigned char rsv[4] = {REQ_CH_READY, 1, 0, 0};
	send_req(fd, 3, rsv, 4, WIRE_REQ); /* reserved bits */
	CHECK(recv_frame(fd, &h, b, sizeof b) < 0);
	close(fd);
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(w, "echo", "alive", 5, &res, &n) == DW_OK);
	free(res);
}

/* Strangers on a worker's listen socket are refused; the worker goes on
 * and its real peers still get in. */
static void
test_strangers(int w)
{
	void *res;
	size_t n;
	REQUIRE(dw_remotecall_fetch(w, "my_addr", NULL, 0, &res, &n) == DW_OK);
	char addr[256];
	snprintf(addr, sizeof addr, "%.*s", (int)n, (char *)res);
	free(res);
	int fd = connect_to(addr);
	unsigned char junk[64];
	memset(junk, 0xff, sizeof junk); /* a length of four billion */
	send(fd, junk, sizeof junk, MSG_NOSIGNAL);
	CHECK(refused(fd));
	fd = connect_to(addr); /* without the cookie it cannot check w ... */
	CHECK(dial_as(fd, "not the cookie", w + 50, w) == DW_EAUTH);
	close(fd);
	fd = connect_to(addr); /* ... nor bluff: the link is refused */
	dial_bluff(fd, w + 51);
	CHECK(refused(fd));
	fd = connect_to(addr);
	CHECK(dial_as(fd, rt.cookie, 1, w) != DW_OK); /* lower ids never dial */
	close(fd);
	fd = connect_to(addr);
	unsigned char call[32];
	wire_put_hdr(call, WIRE_CALL, 1, 8); /* no handshake first */
	memset(call + 16, 0, 8);
	send(fd, call, 24, MSG_NOSIGNAL);
	CHECK(refused(fd));
	int ok;
	void *r2;
	CHECK((ok = dw_remotecall_fetch(w, "echo", "alive", 5, &r2, &n)) ==
	      DW_OK);
	if (ok == DW_OK)
		free(r2);
	test_bad_requests(addr, w);
}

int
main(int argc, char **argv)
{
	dw_options o = {.heartbeat_ms = 200, .heartbeat_timeout_ms = 3000};
	REQUIRE(dw_init_opts(&argc, &argv, &o) == DW_OK);
	int ids[4];
	REQUIRE(dw_addprocs(4, NULL, ids) == 4);
	test_master_worker();
	test_all_pairs(ids, 4);
	test_nested(ids);
	test_future_travels(ids[0], ids[3]);
	test_future_travels(ids[3], ids[1]);
	test_strangers(ids[0]);
	test_peer_killed();
	test_killed_io_busy();
	CHECK(relay_ok(ids[1], ids[2], "the end"));
	CHECK(dw_finalize() == DW_OK);
	CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
	return tu_report("runtime_w2w");
}
