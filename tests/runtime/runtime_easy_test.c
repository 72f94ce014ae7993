/*
 * The short-program calls (src/runtime/easy.c) through real workers:
 * DW_FUNCTION and DW_FUNCTIONF (every letter), dw_args_fetch of a
 * future argument (its value, its failure, a mismatch),
 * dw_distributed_reduce_* over
 * DW_FOR_* bodies with known sums, minima and maxima, their errors (bad op,
 * empty range, overflow, wrong kind, a body called outside a loop), an
 * interrupt stopping a range that would run for hours, dw_hostname on every
 * process, and dw_exit_if in a child program: its message, its status, and no
 * worker left behind.
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "rt_util.h"
#include "testutil.h"

DW_FUNCTION(triple) /* a DW_FUNCTION that reads its argument */
{
	int64_t x;
	if (dw_args(r, arg, len, "l", &x))
		return -1;
	return dw_reply_pack(r, "l", 3 * x);
}

DW_FUNCTION(mypid) /* and one that ignores it */
{
	return dw_reply_pack(r, "l", (int64_t)getpid());
}

/* DW_FUNCTIONF with every letter, one to four pairs */
DW_FUNCTIONF(tf1, s, who)
{
	return dw_reply_pack(r, "s", who);
}

DW_FUNCTIONF(tf2, D, v, d, k)
{
	for (size_t i = 0; i < v.n; i++)
		v.v[i] *= k;
	return dw_reply_pack(r, "D", v.v, v.n);
}

DW_FUNCTIONF(tf3, i, a, l, b, L, c)
{
	int64_t s = a + b;
	for (size_t i = 0; i < c.n; i++)
		s += c.v[i];
	return dw_reply_pack(r, "l", s);
}

DW_FUNCTIONF(tf4, b, raw, F, f, C, ch, i, unused)
{
	int64_t x = 0;
	int rc = dw_future_fetchf(f, "l", &x);
	if (rc == DW_OK)
		rc = dw_channel_putf(ch, "l", x + (int64_t)raw.n);
	dw_future_free(f), dw_channel_free(ch);
	return rc ? dw_reply_error(r, "tf4: %s", dw_errmsg())
	          : dw_reply_pack(r, "b", raw.p, raw.n);
}

DW_FUNCTIONF(fetch_plus, F, f) /* fetch(f) + 1, f from the arguments */
{
	int64_t x;
	int rc = dw_args_fetch(r, f, "l", &x);
	dw_future_free(f);
	return rc ? -1 : dw_reply_pack(r, "l", x + 1);
}

static int64_t
wave(int64_t i)
{
	return (i * 7919) % 1013 - 500;
}

DW_FOR_I64(wavei, i)
{
	return wave(i);
}

DW_FOR_F64(inv, i)
{
	return 1.0 / (double)i;
}

DW_FOR_I64(huge, i)
{
	return INT64_MAX / 3 + i;
}

DW_FOR_I64(quarter, i) /* each range's sum fits, the total does not */
{
	return INT64_MAX / 4 + 0 * i;
}

DW_FOR_I64(spin, i) /* runs for hours unless interrupted */
{
	return i & 1;
}

static void
test_function(void)
{
	int64_t v = 0, pid = 0;
	CHECK(dw_remotecall_fetchf(2, "triple", "l|l", (int64_t)14, &v) ==
	      DW_OK);
	CHECK_EQ_U64(v, 42);
	CHECK(dw_remotecall_fetchf(3, "mypid", "|l", &pid) == DW_OK);
	CHECK(pid > 0 && pid != getpid());
	/* its argument is still checked, and the mismatch named */
	CHECK(dw_remotecall_fetchf(2, "triple", "s|l", "x", &v) == DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "triple") != NULL);
}

static void
test_typed_function(void)
{
	char *s = NULL;
	CHECK(dw_remotecall_fetchf(2, "tf1", "s|s", "hi", &s) == DW_OK);
	CHECK(s && !strcmp(s, "hi"));
	free(s);
	double in[3] = {1, 2, 3.5}, *out = NULL;
	size_t n = 0;
	CHECK(dw_remotecall_fetchf(3, "tf2", "Dd|D", in, (size_t)3, 2.0, &out,
	                           &n) == DW_OK);
	CHECK(n == 3 && out && out[0] == 2 && out[1] == 4 && out[2] == 7);
	free(out);
	int64_t L[2] = {100, 1000}, v = 0;
	CHECK(dw_remotecall_fetchf(4, "tf3", "ilL|l", 1, (int64_t)10, L,
	                           (size_t)2, &v) == DW_OK);
	CHECK_EQ_U64(v, 1111);
	/* a future and a channel as parameters, bytes back */
	dw_future *f;
	dw_channel *ch;
	const void *raw;
	size_t rn;
	REQUIRE(dw_remotecallf(2, "triple", &f, "l", (int64_t)5) == DW_OK);
	REQUIRE(dw_channel_new(1, 4, &ch) == DW_OK);
	void *res = NULL;
	size_t resn = 0;
	void *argb;
	size_t argn;
	REQUIRE(dw_pack(3, &argb, &argn, "bFCi", "abcd", (size_t)4, f, ch, 0) ==
	        DW_OK);
	CHECK(dw_remotecall_fetch(3, "tf4", argb, argn, &res, &resn) == DW_OK);
	CHECK(dw_unpack(res, resn, "b", &raw, &rn) == DW_OK && rn == 4 &&
	      !memcmp(raw, "abcd", 4));
	CHECK(dw_channel_takef(ch, "l", &v) == DW_OK);
	CHECK_EQ_U64(v, 15 + 4);
	free(argb), free(res), dw_future_free(f), dw_channel_free(ch);
	/* a mismatch is named before the body runs */
	CHECK(dw_remotecall_fetchf(2, "tf2", "dd|D", 1.0, 2.0, &out, &n) ==
	      DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "argument 1 of 'tf2'") != NULL);
	CHECK(dw_remotecall_fetchf(2, "tf1", "ss|s", "a", "b", &s) ==
	      DW_EREMOTE);
}

/* A future as an argument, fetched and unpacked in the function. */
static void
test_args_fetch(void)
{
	dw_future *f;
	int64_t v = 0;
	REQUIRE(dw_remotecallf(2, "triple", &f, "l", (int64_t)5) == DW_OK);
	CHECK(dw_remotecall_fetchf(3, "fetch_plus", "F|l", f, &v) == DW_OK);
	CHECK_EQ_U64(v, 16);
	dw_future_free(f);
	/* its call failed: the function's error says so, with the cause */
	REQUIRE(dw_remotecall(2, "fails", "boom", 4, &f) == DW_OK);
	CHECK(dw_remotecall_fetchf(3, "fetch_plus", "F|l", f, &v) ==
	      DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "fetch_plus: fetching its future") &&
	      strstr(dw_errmsg(), "failed on purpose (boom)"));
	dw_future_free(f);
	/* its value is not an int64: named as the fetched value */
	REQUIRE(dw_remotecallf(4, "tf1", &f, "s", "str") == DW_OK);
	CHECK(dw_remotecall_fetchf(3, "fetch_plus", "F|l", f, &v) ==
	      DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "fetched value 1 of 'fetch_plus'") != NULL);
	dw_future_free(f);
}

static void
test_reduce(void)
{
	int64_t sum = 0, mn = INT64_MAX, mx = INT64_MIN, v = 0;
	for (int64_t i = -3000; i < 5001; i++) {
		int64_t w = wave(i);
		sum += w, mn = w < mn ? w : mn, mx = w > mx ? w : mx;
	}
	CHECK(dw_distributed_reduce_i64("wavei", -3000, 5001, DW_SUM, &v) ==
	      DW_OK);
	CHECK_EQ_U64(v, sum);
	CHECK(dw_distributed_reduce_i64("wavei", -3000, 5001, DW_MIN, &v) ==
	      DW_OK);
	CHECK_EQ_U64(v, mn);
	CHECK(dw_distributed_reduce_i64("wavei", -3000, 5001, DW_MAX, &v) ==
	      DW_OK);
	CHECK_EQ_U64(v, mx);
	/* fewer indices than workers: one range each, still the answer */
	CHECK(dw_distributed_reduce_i64("wavei", 10, 12, DW_SUM, &v) == DW_OK);
	CHECK_EQ_U64(v, wave(10) + wave(11));
	double d = 0, want = 0;
	for (int64_t i = 1; i <= 100000; i++)
		want += 1.0 / (double)i;
	CHECK(dw_distributed_reduce_f64("inv", 1, 100001, DW_SUM, &d) == DW_OK);
	CHECK(fabs(d - want) < 1e-9);
	CHECK(dw_distributed_reduce_f64("inv", 1, 100001, DW_MIN, &d) == DW_OK);
	CHECK(d == 1.0 / 100000);
	/* the f64 call takes int64 parts */
	CHECK(dw_distributed_reduce_f64("wavei", -3000, 5001, DW_SUM, &d) ==
	      DW_OK);
	CHECK(d == (double)sum);
	/* an empty range sums to 0 */
	v = 7;
	CHECK(dw_distributed_reduce_i64("wavei", 5, 5, DW_SUM, &v) == DW_OK);
	CHECK_EQ_U64(v, 0);
}

static void
test_reduce_errors(void)
{
	int64_t v = 0;
	CHECK(dw_distributed_reduce_i64("wavei", 0, 10, 9, &v) == DW_EINVAL);
	CHECK(strstr(dw_errmsg(), "DW_SUM") != NULL);
	CHECK(dw_distributed_reduce_i64("wavei", 5, 5, DW_MIN, &v) ==
	      DW_EINVAL);
	CHECK(strstr(dw_errmsg(), "min of an empty range") != NULL);
	CHECK(dw_distributed_reduce_i64("wavei", 5, 4, DW_SUM, &v) ==
	      DW_EINVAL);
	CHECK(dw_distributed_reduce_i64("wavei", 0, 5, DW_SUM, NULL) ==
	      DW_EINVAL);
	CHECK(dw_distributed_reduce_i64("huge", 0, 100, DW_SUM, &v) != DW_OK);
	CHECK(strstr(dw_errmsg(), "overflows") != NULL);
	CHECK(dw_distributed_reduce_i64("quarter", 0, 8, DW_SUM, &v) ==
	      DW_EINVAL);
	CHECK(strstr(dw_errmsg(), "combining the ranges: the sum overflows") !=
	      NULL);
	/* float parts under the int64 call: named */
	CHECK(dw_distributed_reduce_i64("inv", 1, 100, DW_SUM, &v) ==
	      DW_EFORMAT);
	CHECK(strstr(dw_errmsg(), "inv") != NULL);
	/* a loop body called as a plain function */
	void *res = NULL;
	size_t n = 0;
	CHECK(dw_remotecall_fetch(2, "wavei", "x", 1, &res, &n) == DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "dw_distributed_reduce") != NULL);
	free(res);
}

static void *
interrupter(void *arg)
{
	(void)arg;
	int ids[8], n = dw_workers(ids, 8);
	usleep(300 * 1000);
	dw_interrupt(ids, n);
	return NULL;
}

static void
test_interrupt(void)
{
	pthread_t t;
	int64_t v = 0;
	REQUIRE(pthread_create(&t, NULL, interrupter, NULL) == 0);
	int err =
	    dw_distributed_reduce_i64("spin", 0, INT64_MAX / 2, DW_SUM, &v);
	pthread_join(t, NULL);
	CHECK(err != DW_OK);
}

static void
test_hostname(void)
{
	char want[256] = "", h[256], tiny[2];
	gethostname(want, sizeof want - 1);
	for (int pid = 1; pid <= 3; pid++) {
		CHECK(dw_hostname(pid, h, sizeof h) == DW_OK);
		CHECK(!strcmp(h, want));
	}
	CHECK(dw_hostname(2, tiny, sizeof tiny) == DW_ETOOBIG);
	CHECK(strstr(dw_errmsg(), "does not fit") != NULL);
	CHECK(tiny[0] == 0);
	CHECK(dw_hostname(2, NULL, 10) == DW_EINVAL);
	CHECK(dw_hostname(99, h, sizeof h) == DW_ENOTFOUND);
}

/* The child: two workers, their pids on stdout, then a failed call and
 * dw_exit_if. */
static int
exit_child(void)
{
	int64_t p;
	char h[8];
	dw_exit_if(dw_addprocs(2, NULL, NULL) != 2);
	dw_exit_if(0); /* returns */
	for (int id = 2; id <= 3; id++) {
		dw_exit_if(dw_remotecall_fetchf(id, "mypid", "|l", &p));
		printf("%lld\n", (long long)p);
	}
	fflush(stdout);
	dw_exit_if(dw_hostname(99, h, sizeof h));
	printf("not reached\n");
	return 0;
}

static int
gone(pid_t p)
{
	for (int i = 0; i < 500; i++, usleep(10000))
		if (kill(p, 0) != 0)
			return 1;
	return 0;
}

static void
test_exit_if(const char *self)
{
	const char *d = tu_tmpdir("easyexit");
	char cmd[1200], path[700];
	snprintf(path, sizeof path, "%s/err", d);
	snprintf(cmd, sizeof cmd, "DWORK_TRACE=0 %s --exit-child 2>%s", self,
	         path);
	FILE *p = popen(cmd, "r");
	REQUIRE(p);
	long long pids[2] = {0, 0};
	int got = fscanf(p, "%lld %lld", &pids[0], &pids[1]);
	char rest[64] = "";
	size_t rn = fread(rest, 1, sizeof rest - 1, p);
	rest[rn] = 0;
	int st = pclose(p);
	CHECK(got == 2);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CHECK(strstr(rest, "not reached") == NULL);
	for (int i = 0; i < 2; i++)
		CHECK(pids[i] > 0 && gone((pid_t)pids[i]));
	FILE *e = fopen(path, "r");
	char msg[512] = "";
	if (e) {
		msg[fread(msg, 1, sizeof msg - 1, e)] = 0;
		fclose(e);
	}
	/* "PROGRAM: message", the message naming the missing process */
	CHECK(strstr(msg, "runtime_easy_test: ") != NULL);
	CHECK(strstr(msg, "99") != NULL);
	tu_rmtree(d);
}

int
main(int argc, char **argv)
{
	int child = argc > 1 && !strcmp(argv[1], "--exit-child");
	if (dw_init(&argc, &argv) != DW_OK)
		return 1;
	if (child)
		return exit_child();
	REQUIRE(dw_addprocs(3, NULL, NULL) == 3);
	test_function();
	test_typed_function();
	test_args_fetch();
	test_reduce();
	test_reduce_errors();
	test_hostname();
	test_interrupt();
	test_exit_if(argv[0]);
	CHECK(dw_finalize() == DW_OK);
	return tu_report("runtime_easy");
}
