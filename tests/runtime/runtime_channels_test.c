/*
 * Remote channels with real worker processes: every operation on a local
 * and a remote owner, blocking and timeouts (a timed-out take takes
 * nothing), close, references handed to another process and counted
 * holders, and an owner killed under blocked operations.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

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

/* ---- functions the workers run ---- */

/* Imports a channel and puts the ints 0..n-1 into it. */
static int
ch_producer(const void *arg, size_t len, dw_reply *r)
{
	int n;
	if (len < sizeof n)
		return dw_reply_error(r, "short argument");
	memcpy(&n, arg, sizeof n);
	dw_channel *ch;
	int err = dw_channel_import((const char *)arg + sizeof n,
	                            len - sizeof n, &ch);
	if (err)
		return dw_reply_error(r, "import: %s", dw_errmsg());
	for (int i = 0; i < n && !err; i++)
		err = dw_channel_put(ch, &i, sizeof i);
	dw_channel_free(ch);
	if (err)
		return dw_reply_error(r, "put: %s", dw_errmsg());
	return 0;
}
DW_REGISTER(ch_producer)

/* Imports a channel and takes one value, with a timeout of 5 s. */
static int
ch_taker(const void *arg, size_t len, dw_reply *r)
{
	dw_channel *ch;
	if (dw_channel_import(arg, len, &ch))
		return dw_reply_error(r, "import: %s", dw_errmsg());
	void *v;
	size_t n;
	int err = dw_channel_take_timeout(ch, &v, &n, 5000);
	dw_channel_free(ch);
	if (err)
		return dw_reply_error(r, "take: %s (%d)", dw_errmsg(), err);
	return dw_reply_take(r, v, n);
}
DW_REGISTER(ch_taker)

static int
nchannels(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	int n = chan_count();
	return dw_reply_set(r, &n, sizeof n);
}
DW_REGISTER(nchannels)

static int
count_on(int w)
{
	void *res;
	size_t n;
	int c = -1;
	if (dw_remotecall_fetch(w, "nchannels", NULL, 0, &res, &n) == DW_OK) {
		memcpy(&c, res, sizeof c);
		free(res);
	}
	return c;
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

/* ---- tests ---- */

static int
take_int(dw_channel *ch, int timeout_ms, int *v)
{
	void *d;
	size_t n;
	int err = dw_channel_take_timeout(ch, &d, &n, timeout_ms);
	if (err == DW_OK) {
		if (n == sizeof *v)
			memcpy(v, d, sizeof *v);
		else
			err = DW_EFORMAT;
		free(d);
	}
	return err;
}

/* Every operation, on a channel owned by `owner`. */
static void
test_basic(int owner)
{
	dw_channel *ch;
	REQUIRE(dw_channel_new(owner, 3, &ch) == DW_OK);
	CHECK(dw_channel_owner(ch) == owner);
	CHECK(dw_channel_isready(ch) == 0);
	int v = -1;
	double t0 = now_s();
	CHECK(take_int(ch, 100, &v) == DW_ETIMEDOUT);
	/* a timeout that is not honoured hangs: 15 s is "it returned" on a
	 * loaded machine */
	CHECK(now_s() - t0 >= 0.09 && now_s() - t0 < 15.0);
	CHECK(dw_channel_wait_timeout(ch, 50) == DW_ETIMEDOUT);
	for (int i = 0; i < 3; i++)
		CHECK(dw_channel_put(ch, &i, sizeof i) == DW_OK);
	int four = 4;
	CHECK(dw_channel_put_timeout(ch, &four, sizeof four, 100) ==
	      DW_ETIMEDOUT); /* full */
	CHECK(dw_channel_isready(ch) == 1);
	CHECK(dw_channel_wait(ch) == DW_OK);
	void *d;
	size_t n;
	CHECK(dw_channel_fetch(ch, &d, &n) == DW_OK); /* a copy */
	CHECK(n == sizeof(int) && *(int *)d == 0);
	free(d);
	for (int i = 0; i < 3; i++) {
		CHECK(take_int(ch, 1000, &v) == DW_OK);
		CHECK(v == i); /* FIFO; the timed-out put put nothing */
	}
	CHECK(take_int(ch, 50, &v) == DW_ETIMEDOUT);
	/* empty values travel too */
	CHECK(dw_channel_put(ch, NULL, 0) == DW_OK);
	CHECK(dw_channel_take(ch, &d, &n) == DW_OK && n == 0);
	free(d);
	/* close: what is left can be taken, then ECLOSED */
	CHECK(dw_channel_put(ch, &four, sizeof four) == DW_OK);
	CHECK(dw_channel_close(ch) == DW_OK);
	CHECK(dw_channel_put(ch, &four, sizeof four) == DW_ECLOSED);
	CHECK(take_int(ch, 1000, &v) == DW_OK && v == 4);
	CHECK(take_int(ch, 1000, &v) == DW_ECLOSED);
	CHECK(strstr(dw_errmsg(), "closed") != NULL);
	dw_channel_free(ch);
	/* a large value */
	REQUIRE(dw_channel_new(owner, 1, &ch) == DW_OK);
	size_t big = 3u << 20;
	unsigned char *b = malloc(big);
	REQUIRE(b);
	for (size_t i = 0; i < big; i++)
		b[i] = (unsigned char)(i * 7);
	CHECK(dw_channel_put(ch, b, big) == DW_OK);
	CHECK(dw_channel_take(ch, &d, &n) == DW_OK && n == big &&
	      memcmp(d, b, big) == 0);
	free(d);
	free(b);
	dw_channel_free(ch);
}

struct blocked {
	dw_channel *ch;
	int op; /* 0 take, 1 put */
	int err, v;
	double took;
};

static void *
blocked_op(void *p)
{
	struct blocked *b = p;
	double t0 = now_s();
	if (b->op == 0) {
		b->err = take_int(b->ch, 20000, &b->v);
	} else {
		b->err =
		    dw_channel_put_timeout(b->ch, &b->v, sizeof b->v, 20000);
	}
	b->took = now_s() - t0;
	return NULL;
}

/* A blocked take is woken by a put from another thread, a blocked put by
 * a take; close wakes a blocked take with DW_ECLOSED. */
static void
test_blocking(int owner)
{
	dw_channel *ch;
	REQUIRE(dw_channel_new(owner, 1, &ch) == DW_OK);
	struct blocked b = {.ch = ch};
	pthread_t t;
	pthread_create(&t, NULL, blocked_op, &b);
	usleep(100000);
	int v = 42;
	CHECK(dw_channel_put(ch, &v, sizeof v) == DW_OK);
	pthread_join(t, NULL);
	CHECK(b.err == DW_OK && b.v == 42);
	/* blocked put */
	CHECK(dw_channel_put(ch, &v, sizeof v) == DW_OK);
	struct blocked p = {.ch = ch, .op = 1, .v = 43};
	pthread_create(&t, NULL, blocked_op, &p);
	usleep(100000);
	CHECK(take_int(ch, 1000, &v) == DW_OK && v == 42);
	pthread_join(t, NULL);
	CHECK(p.err == DW_OK);
	CHECK(take_int(ch, 1000, &v) == DW_OK && v == 43);
	/* close wakes a blocked take */
	struct blocked c = {.ch = ch};
	pthread_create(&t, NULL, blocked_op, &c);
	usleep(100000);
	CHECK(dw_channel_close(ch) == DW_OK);
	pthread_join(t, NULL);
	/* woken, not by its own 20 s limit (DW_ETIMEDOUT then) */
	CHECK(c.err == DW_ECLOSED && c.took < 15.0);
	dw_channel_free(ch);
}

struct racer {
	dw_channel *ch;
	int got[2000];
	int n;
};

static int racers_stop;

static void *
racer_take(void *p)
{
	struct racer *r = p;
	while (!__atomic_load_n(&racers_stop, __ATOMIC_ACQUIRE) &&
	       r->n < 2000) {
		int v;
		int err = take_int(r->ch, 1, &v);
		if (err == DW_OK)
			r->got[r->n++] = v;
		else if (err != DW_ETIMEDOUT)
			break;
	}
	return NULL;
}

/* Takes with tiny timeouts racing puts: every value is taken exactly
 * once (a withdrawn take never swallows a value). */
static void
test_timeout_race(int owner)
{
	dw_channel *ch;
	REQUIRE(dw_channel_new(owner, 8, &ch) == DW_OK);
	struct racer r[2] = {{.ch = ch}, {.ch = ch}};
	pthread_t t[2];
	racers_stop = 0;
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, racer_take, &r[i]);
	const int N = 600;
	for (int i = 0; i < N; i++) {
		CHECK(dw_channel_put_timeout(ch, &i, sizeof i, 10000) == DW_OK);
		if (i % 50 == 0)
			usleep(2000);
	}
	__atomic_store_n(&racers_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	static int seen[600];
	memset(seen, 0, sizeof seen);
	int total = 0;
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < r[k].n; i++) {
			int v = r[k].got[i];
			if (v >= 0 && v < N)
				seen[v]++;
			total++;
		}
	int v, left = 0;
	while (take_int(ch, 0, &v) == DW_OK) { /* what the takers missed */
		if (v >= 0 && v < N)
			seen[v]++;
		left++;
	}
	int once = 0;
	for (int i = 0; i < N; i++)
		once += seen[i] == 1;
	if (once != N || total + left != N)
		fprintf(stderr,
		        "timeout race: %d values seen once, %d taken, "
		        "%d left (of %d)\n",
		        once, total, left, N);
	CHECK(once == N && total + left == N);
	dw_channel_free(ch);
}

/* A channel handed to a worker: it produces into it, we consume. */
static void
test_travel(int owner, int producer)
{
	dw_channel *ch;
	REQUIRE(dw_channel_new(owner, 4, &ch) == DW_OK);
	void *ref;
	size_t rl;
	REQUIRE(dw_channel_export(ch, producer, &ref, &rl) == DW_OK);
	int n = 50;
	unsigned char *arg = malloc(sizeof n + rl);
	memcpy(arg, &n, sizeof n);
	memcpy(arg + sizeof n, ref, rl);
	dw_future *f;
	REQUIRE(dw_remotecall(producer, "ch_producer", arg, sizeof n + rl,
	                      &f) == DW_OK);
	for (int i = 0; i < n; i++) {
		int v = -1;
		CHECK(take_int(ch, 5000, &v) == DW_OK && v == i);
	}
	CHECK(dw_future_wait_timeout(f, 5000) == DW_OK);
	dw_future_free(f);
	/* bytes meant for another process are refused there */
	dw_channel *wrong;
	CHECK(dw_channel_import(ref, rl, &wrong) == DW_EINVAL);
	CHECK(dw_channel_import("junk", 4, &wrong) == DW_EFORMAT);
	free(arg);
	free(ref);
	dw_channel_free(ch);
}

/* The owner counts holders: the channel outlives its creator's handle
 * while the worker it was handed to holds it, and goes with the last. */
static void
test_holders(int owner, int holder)
{
	int before = count_on(owner);
	dw_channel *ch;
	REQUIRE(dw_channel_new(owner, 2, &ch) == DW_OK);
	CHECK(count_on(owner) == before + 1);
	int v = 7;
	CHECK(dw_channel_put(ch, &v, sizeof v) == DW_OK);
	void *ref;
	size_t rl;
	REQUIRE(dw_channel_export(ch, holder, &ref, &rl) == DW_OK);
	dw_channel_free(ch); /* ours goes; the holder's hold stays */
	CHECK(count_on(owner) == before + 1);
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(holder, "ch_taker", ref, rl, &res, &n) ==
	      DW_OK);
	CHECK(n == sizeof v && *(int *)res == 7);
	free(res);
	for (int i = 0; i < 100 && count_on(owner) != before; i++)
		usleep(10000); /* the release travels on its own */
	CHECK(count_on(owner) == before);
	free(ref);
	/* a holder that dies releases its holds */
	REQUIRE(dw_channel_new(owner, 2, &ch) == DW_OK);
	REQUIRE(dw_channel_export(ch, holder, &ref, &rl) == DW_OK);
	dw_channel_free(ch);
	CHECK(count_on(owner) == before + 1);
	int hp = pid_of(holder);
	kill(hp, SIGKILL);
	for (int i = 0; i < 300 && count_on(owner) != before; i++)
		usleep(10000);
	CHECK(count_on(owner) == before);
	free(ref);
}

/* The owner dies: every blocked operation fails with DW_EEXITED at once;
 * later ones too. */
static void
test_owner_killed(int owner)
{
	dw_channel *ch;
	REQUIRE(dw_channel_new(owner, 1, &ch) == DW_OK);
	int v = 1;
	CHECK(dw_channel_put(ch, &v, sizeof v) == DW_OK);
	struct blocked b[3] = {{.ch = ch, .op = 1, .v = 2},
	                       {.ch = ch, .op = 1, .v = 3}};
	dw_channel *empty;
	REQUIRE(dw_channel_new(owner, 1, &empty) == DW_OK);
	b[2].ch = empty;
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, blocked_op, &b[i]);
	usleep(200000);
	kill(pid_of(owner), SIGKILL);
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		/* not by their own 20 s limit */
		CHECK(b[i].err == DW_EEXITED && b[i].took < 15.0);
	}
	CHECK(take_int(ch, 1000, &v) == DW_EEXITED);
	CHECK(strstr(dw_errmsg(), "exited") != NULL);
	dw_channel_free(ch);
	dw_channel_free(empty);
}

int
main(int argc, char **argv)
{
	dw_options o = {.heartbeat_ms = 200, .heartbeat_timeout_ms = 3000};
	REQUIRE(dw_init_opts(&argc, &argv, &o) == DW_OK);
	int ids[4];
	REQUIRE(dw_addprocs(4, NULL, ids) == 4);
	test_basic(1);
	test_basic(ids[0]);
	test_blocking(1);
	test_blocking(ids[0]);
	test_timeout_race(ids[1]);
	test_timeout_race(1);
	test_travel(1, ids[1]);
	test_travel(ids[0], ids[1]); /* a worker-owned channel, used by
	                                another worker */
	test_holders(ids[0], ids[2]);
	test_owner_killed(ids[3]);
	CHECK(dw_finalize() == DW_OK);
	CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
	return tu_report("runtime_channels");
}
