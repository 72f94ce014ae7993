/*
 * Typed arguments and results (MessagePack) through real workers: every
 * letter both ways, mismatches named by position and type, references
 * inside typed arguments, the typed pmap and reducers, waitany/waitall,
 * dw_async, and the messages of issue 18 (dw_register after dw_init,
 * dw_rmprocs naming bad ids, a worker killed by a signal).
 */
#include <math.h>
#include <signal.h>
#include <time.h>

#include "rt_util.h"
#include "testutil.h"

static int
mix(const void *arg, size_t len, dw_reply *r)
{
	int i;
	int64_t l, *L;
	double d, *D;
	char *s;
	const void *b;
	size_t bn, nd, nl;
	if (dw_args(r, arg, len, "ildsbDL", &i, &l, &d, &s, &b, &bn, &D, &nd,
	            &L, &nl))
		return -1;
	double sum = 0;
	for (size_t k = 0; k < nd; k++)
		sum += D[k];
	int64_t lsum = 0;
	for (size_t k = 0; k < nl; k++)
		lsum += L[k];
	char out[128];
	snprintf(out, sizeof out, "%s/%zu", s, bn);
	return dw_reply_pack(r, "ldsb", (int64_t)i + l + lsum, d + sum, out, b,
	                     bn);
}
DW_REGISTER(mix)

static int
sq(const void *arg, size_t len, dw_reply *r)
{
	double x;
	if (dw_args(r, arg, len, "d", &x))
		return -1;
	usleep((useconds_t)(x * 1000)); /* x ms: uneven work */
	return dw_reply_pack(r, "d", x * x);
}
DW_REGISTER(sq)

static int
twice(const void *arg, size_t len, dw_reply *r)
{
	int64_t x;
	if (dw_args(r, arg, len, "l", &x))
		return -1;
	return dw_reply_pack(r, "l", 2 * x);
}
DW_REGISTER(twice)

static int
range_sum(const void *arg, size_t len, dw_reply *r)
{
	int64_t lo, hi, s = 0;
	if (dw_range_arg(arg, len, &lo, &hi, NULL, NULL) != DW_OK)
		return dw_reply_error(r, "not a range");
	for (int64_t k = lo; k < hi; k++)
		s += k;
	return dw_reply_pack(r, "l", s);
}
DW_REGISTER(range_sum)

/* Takes a channel reference, puts its own id in it. */
static int
put_id(const void *arg, size_t len, dw_reply *r)
{
	dw_channel *ch;
	if (dw_args(r, arg, len, "C", &ch))
		return -1;
	int err = dw_channel_putf(ch, "i", dw_myid());
	dw_channel_free(ch);
	return err == DW_OK ? dw_reply_pack(r, "i", 1)
	                    : dw_reply_error(r, "%s", dw_errmsg());
}
DW_REGISTER(put_id)

/* Takes a channel reference, waits for a value in it and returns it. */
static int
gate(const void *arg, size_t len, dw_reply *r)
{
	dw_channel *ch;
	if (dw_args(r, arg, len, "C", &ch))
		return -1;
	int v = -1;
	int err = dw_channel_takef(ch, "i", &v);
	dw_channel_free(ch);
	return err == DW_OK ? dw_reply_pack(r, "i", v)
	                    : dw_reply_error(r, "%s", dw_errmsg());
}
DW_REGISTER(gate)

static int
crash(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len, (void)r;
	signal(SIGSEGV, SIG_DFL); /* a real signal death, sanitizers or not */
	raise(SIGSEGV);
	return 0;
}
DW_REGISTER(crash)

static int
late_fn(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len;
	return dw_reply_pack(r, "i", 0);
}

static void
test_roundtrip(void)
{
	double D[3] = {0.5, 1.5, 2.0};
	int64_t L[2] = {10, -4};
	int64_t lo;
	double d;
	char *s;
	void *b;
	size_t bn;
	CHECK(dw_remotecall_fetchf(2, "mix", "ildsbDL|ldsb", -3,
	                           (int64_t)1 << 40, 0.25, "héllo", "xyz",
	                           (size_t)3, D, (size_t)3, L, (size_t)2, &lo,
	                           &d, &s, &b, &bn) == DW_OK);
	CHECK(lo == ((int64_t)1 << 40) - 3 + 6);
	CHECK(d == 4.25);
	CHECK(s && !strcmp(s, "héllo/3"));
	CHECK(bn == 3 && b && !memcmp(b, "xyz", 3));
	free(s);
	free(b);
	/* the bytes are MessagePack: [1, 2.0] by hand */
	const unsigned char want[] = {0x92, 0x01, 0xcb, 0x40, 0, 0,
	                              0,    0,    0,    0,    0};
	void *p;
	size_t n;
	CHECK(dw_pack(0, &p, &n, "ld", (int64_t)1, 2.0) == DW_OK);
	CHECK(n == sizeof want && !memcmp(p, want, n));
	free(p);
}

static void
test_mismatch(void)
{
	void *b;
	size_t n;
	REQUIRE(dw_pack(0, &b, &n, "isdsbDL", 1, "not an int", 0.5, "s", "b",
	                (size_t)1, NULL, (size_t)0, NULL, (size_t)0) == DW_OK);
	void *res;
	size_t rl;
	CHECK(dw_remotecall_fetch(3, "mix", b, n, &res, &rl) == DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "argument 2 of 'mix': expected integer "
	                          "(int64), got str") != NULL);
	CHECK(dw_errpid() == 3);
	free(b);
	/* too few values */
	int64_t x;
	CHECK(dw_remotecall_fetchf(2, "twice", "|l", &x) == DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "arguments of 'twice': expected 1 (\"l\"), "
	                          "got 0") != NULL);
	/* a result of the wrong type, named on the caller's side */
	double dd;
	CHECK(dw_remotecall_fetchf(2, "twice", "l|d", (int64_t)2, &dd) ==
	      DW_EFORMAT);
	CHECK(strstr(dw_errmsg(), "result 1 of 'twice': expected float64, got "
	                          "integer") != NULL);
	/* an int that does not fit */
	int small;
	REQUIRE(dw_pack(0, &b, &n, "l", (int64_t)1 << 33) == DW_OK);
	CHECK(dw_unpack(b, n, "i", &small) == DW_EFORMAT);
	CHECK(strstr(dw_errmsg(), "does not fit an int") != NULL);
	free(b);
	CHECK(dw_unpack("\xc1", 1, "i", &small) == DW_EFORMAT);
	CHECK(dw_pack(0, &b, &n, "q", 1) == DW_EINVAL);
	CHECK(strstr(dw_errmsg(), "bad format") != NULL);
}

static void
test_refs_and_pmap(void)
{
	dw_channel *ch;
	REQUIRE(dw_channel_new(1, 4, &ch) == DW_OK);
	int one;
	CHECK(dw_remotecall_fetchf(3, "put_id", "C|i", ch, &one) == DW_OK);
	int who = 0;
	CHECK(dw_channel_takef(ch, "i", &who) == DW_OK && who == 3);
	dw_channel_free(ch);
	double in[6] = {1, 2, 3, 4, 5, 6}, out[6];
	CHECK(dw_pmap_f64("sq", in, 6, out, NULL) == DW_OK);
	for (int k = 0; k < 6; k++)
		CHECK(out[k] == in[k] * in[k]);
	int64_t li[3] = {-1, 0, 7}, lo[3];
	CHECK(dw_pmap_i64("twice", li, 3, lo, NULL) == DW_OK);
	CHECK(lo[0] == -2 && lo[1] == 0 && lo[2] == 14);
	void *res;
	size_t rl;
	int64_t total = 0;
	CHECK(dw_distributed_for("range_sum", 0, 1000, NULL, 0, dw_reduce_sum,
	                         NULL, &res, &rl) == DW_OK);
	CHECK(dw_unpack(res, rl, "l", &total) == DW_OK && total == 499500);
	free(res);
	CHECK(dw_distributed_for("range_sum", 0, 1000, NULL, 0, dw_reduce_max,
	                         NULL, &res, &rl) == DW_OK);
	CHECK(dw_unpack(res, rl, "l", &total) == DW_OK);
	/* the largest part is the last range's: all of [lo,1000) summed */
	CHECK(total > 499500 / 3);
	free(res);
}

static double
now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Calls gate(ch) on worker pid: it completes when the caller puts a value
 * into ch, and not before, however slow the machine. */
static dw_future *
gated_call(int pid, dw_channel **ch)
{
	dw_future *f;
	REQUIRE(dw_channel_new(1, 1, ch) == DW_OK);
	REQUIRE(dw_remotecallf(pid, "gate", &f, "C", *ch) == DW_OK);
	return f;
}

static void
open_gate(dw_channel *ch, int v)
{
	CHECK(dw_channel_putf(ch, "i", v) == DW_OK);
}

/* The order of waitany is set by gates, not by sleeps: a future whose gate
 * is shut cannot be ready, so a waitany that returned it, or that returned
 * the lowest index rather than a ready one, fails on any machine. */
static void
test_waits(void)
{
	dw_channel *g[3] = {NULL, NULL, NULL};
	dw_future *f[3];
	f[0] = gated_call(2, &g[0]);
	f[1] = gated_call(3, &g[1]);
	f[2] = gated_call(4, &g[2]);
	int want[3] = {1, 2, 0};
	for (int k = 0; k < 3; k++) {
		open_gate(g[want[k]], want[k]);
		int i = dw_future_waitany(f, 3, 20000);
		REQUIRE(i >= 0);
		/* a wrong one's gate is shut: fetching it would hang */
		REQUIRE(i == want[k] && dw_future_isready(f[i]) == 1);
		int v = -1;
		CHECK(dw_future_fetchf(f[i], "i", &v) == DW_OK && v == i);
		dw_future_free(f[i]);
		f[i] = NULL;
	}
	for (int k = 0; k < 3; k++)
		dw_channel_free(g[k]);
	CHECK(dw_future_waitany(f, 3, 10) == DW_EINVAL);
	f[0] = gated_call(2, &g[0]);
	double t0 = now_ms();
	CHECK(dw_future_waitany(f, 1, 50) == DW_ETIMEDOUT);
	CHECK(now_ms() - t0 >= 49);
	open_gate(g[0], 0);
	CHECK(dw_future_waitall(f, 1, -1) == DW_OK);
	dw_future_free(f[0]);
	dw_channel_free(g[0]);
	/* dw_async runs here, on another thread */
	dw_future *a;
	REQUIRE(dw_asyncf("twice", &a, "l", (int64_t)21) == DW_OK);
	int64_t v = 0;
	CHECK(dw_future_fetchf(a, "l", &v) == DW_OK && v == 42);
	dw_future_free(a);
	/* channels: the one with a value */
	dw_channel *c[2];
	REQUIRE(dw_channel_new(2, 1, &c[0]) == DW_OK);
	REQUIRE(dw_channel_new(3, 1, &c[1]) == DW_OK);
	CHECK(dw_channel_waitany(c, 2, 20) == DW_ETIMEDOUT);
	CHECK(dw_channel_putf(c[1], "i", 5) == DW_OK);
	CHECK(dw_channel_waitany(c, 2, 2000) == 1);
	CHECK(dw_channel_putf(c[0], "i", 6) == DW_OK);
	CHECK(dw_channel_waitall(c, 2, 2000) == DW_OK);
	dw_channel_free(c[0]);
	dw_channel_free(c[1]);
}

static void
test_messages(void)
{
	CHECK(dw_register("late_fn", late_fn) == DW_ESTATE);
	CHECK(strstr(dw_errmsg(), "after dw_init") &&
	      strstr(dw_errmsg(), "dw_everywhere_load"));
	int bad[3] = {3, 77, 99};
	int id;
	REQUIRE(dw_addprocs(1, NULL, &id) == 1);
	bad[0] = id;
	CHECK(dw_rmprocs(bad, 3, 5000) == DW_ENOTFOUND);
	CHECK(strstr(dw_errmsg(), "ids 77, 99 not a worker") != NULL);
	/* a worker killed by a signal: named with the function it ran */
	REQUIRE(dw_addprocs(1, NULL, &id) == 1);
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(id, "crash", NULL, 0, &res, &n) ==
	      DW_EEXITED);
	fprintf(stderr, "message: %s\n", dw_errmsg());
	CHECK(strstr(dw_errmsg(), "killed by signal 11") != NULL);
	CHECK(strstr(dw_errmsg(), "while running 'crash'") != NULL);
}

int
main(int argc, char **argv)
{
	if (dw_init(&argc, &argv) != DW_OK)
		return 1;
	REQUIRE(dw_addprocs(3, NULL, NULL) == 3);
	test_roundtrip();
	test_mismatch();
	test_refs_and_pmap();
	test_waits();
	test_messages();
	CHECK(dw_finalize() == DW_OK);
	return tu_report("runtime_typed");
}
