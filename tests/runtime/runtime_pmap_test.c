/*
 * pmap, pools, everywhere, the distributed loop and spawn with real
 * worker processes: results in order, batch sizes, dynamic load
 * balancing, both error policies, a worker killed in the middle (every
 * result exactly once), cached arguments sent once per worker, the
 * default pool following addprocs/rmprocs, and an everywhere that names
 * the processes that failed.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
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

/* ---- functions the processes run ---- */

/* item: {long x, int sleep_ms, int fail}: returns x * x. */
struct item {
	long x;
	int sleep_ms;
	int fail;
	int note;   /* tell the master it ran (a call back to process 1) */
	int die_on; /* that worker dies by SIGKILL in its 5th item, noted */
};

static int runs[4096]; /* master: how often each item ran */

static int
pm_note(const void *arg, size_t len, dw_reply *r)
{
	(void)r;
	long x;
	if (len == sizeof x) {
		memcpy(&x, arg, sizeof x);
		if (x >= 0 && x < 4096)
			__atomic_fetch_add(&runs[x], 1, __ATOMIC_RELAXED);
	}
	return 0;
}
DW_REGISTER(pm_note)

static int
pm_square(const void *arg, size_t len, dw_reply *r)
{
	struct item it;
	if (len != sizeof it)
		return dw_reply_error(r, "bad item of %zu bytes", len);
	memcpy(&it, arg, sizeof it);
	static int here; /* items run by this process */
	if (it.die_on && it.die_on == dw_myid() && ++here == 5) {
		/* the note waited for: the master counts this run */
		void *res = NULL;
		size_t n;
		if (dw_remotecall_fetch(1, "pm_note", &it.x, sizeof it.x, &res,
		                        &n) == DW_OK)
			free(res);
		raise(SIGKILL);
	}
	if (it.note && dw_remote_do(1, "pm_note", &it.x, sizeof it.x))
		return dw_reply_error(r, "cannot reach the master: %s",
		                      dw_errmsg());
	if (it.sleep_ms)
		usleep((useconds_t)it.sleep_ms * 1000u);
	if (it.fail)
		return dw_reply_error(r, "item %ld fails on purpose", it.x);
	long y = it.x * it.x;
	return dw_reply_set(r, &y, sizeof y);
}
DW_REGISTER(pm_square)

/* {u64 handle, long x}: the sum of the cached bytes plus x. */
static int
pm_cached_sum(const void *arg, size_t len, dw_reply *r)
{
	uint64_t h;
	long x;
	if (len != sizeof h + sizeof x)
		return dw_reply_error(r, "bad argument");
	memcpy(&h, arg, sizeof h);
	memcpy(&x, (const char *)arg + sizeof h, sizeof x);
	const void *d;
	size_t n;
	if (dw_cached(h, &d, &n))
		return dw_reply_error(r, "%s", dw_errmsg());
	long s = x;
	for (size_t i = 0; i < n; i++)
		s += ((const unsigned char *)d)[i];
	return dw_reply_set(r, &s, sizeof s);
}
DW_REGISTER(pm_cached_sum)

static int
ncached(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	int n = pool_cache_count();
	return dw_reply_set(r, &n, sizeof n);
}
DW_REGISTER(ncached)

static int mark;

static int
set_mark(const void *arg, size_t len, dw_reply *r)
{
	(void)r;
	if (len == sizeof mark)
		memcpy(&mark, arg, sizeof mark);
	return 0;
}
DW_REGISTER(set_mark)

static int
get_mark(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	return dw_reply_set(r, &mark, sizeof mark);
}
DW_REGISTER(get_mark)

static int
fail_on_even(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	if (dw_myid() % 2 == 0)
		return dw_reply_error(r, "even process %d refuses", dw_myid());
	return 0;
}
DW_REGISTER(fail_on_even)

/* The loop body: the sum of i over its range, plus the loop's offset. */
static int
range_sum(const void *arg, size_t len, dw_reply *r)
{
	int64_t lo, hi;
	const void *u;
	size_t ul;
	if (dw_range_arg(arg, len, &lo, &hi, &u, &ul) != DW_OK ||
	    ul != sizeof(long))
		return dw_reply_error(r, "not a loop argument");
	long off, s = 0;
	memcpy(&off, u, sizeof off);
	for (int64_t i = lo; i < hi; i++)
		s += (long)i + off;
	return dw_reply_set(r, &s, sizeof s);
}
DW_REGISTER(range_sum)

static int
range_sleep(const void *arg, size_t len, dw_reply *r)
{
	int64_t lo, hi;
	const void *u;
	size_t ul;
	int ms = 0;
	(void)r;
	if (dw_range_arg(arg, len, &lo, &hi, &u, &ul) == DW_OK &&
	    ul == sizeof ms)
		memcpy(&ms, u, sizeof ms);
	usleep((useconds_t)ms * 1000u);
	return 0;
}
DW_REGISTER(range_sleep)

static int
add_longs(void **acc, size_t *acclen, const void *part, size_t partlen,
          void *ctx)
{
	(*(int *)ctx)++;
	if (partlen != sizeof(long))
		return -1;
	if (!*acc) {
		if (!(*acc = calloc(1, sizeof(long))))
			return -1;
		*acclen = sizeof(long);
	}
	long a, b;
	memcpy(&a, *acc, sizeof a);
	memcpy(&b, part, sizeof b);
	a += b;
	memcpy(*acc, &a, sizeof a);
	return 0;
}

/* On a worker: a pmap over the default pool (which it asks the master
 * for) and an everywhere; returns the sum of the squares of 0..n-1. */
static int
nested_pmap(const void *arg, size_t len, dw_reply *r)
{
	int n;
	if (len != sizeof n)
		return dw_reply_error(r, "bad argument");
	memcpy(&n, arg, sizeof n);
	struct item *its = calloc((size_t)n, sizeof *its);
	dw_buf *bi = calloc((size_t)n, sizeof *bi);
	dw_result *ro = calloc((size_t)n, sizeof *ro);
	for (int i = 0; i < n; i++) {
		its[i].x = i;
		bi[i].data = &its[i];
		bi[i].len = sizeof its[i];
	}
	int err = dw_pmap("pm_square", bi, (size_t)n, ro, NULL);
	long s = 0;
	int spread = 0, seen[64] = {0};
	for (int i = 0; err == DW_OK && i < n; i++) {
		long y;
		memcpy(&y, ro[i].data, sizeof y);
		s += y;
		if (ro[i].pid > 0 && ro[i].pid < 64 && !seen[ro[i].pid]++)
			spread++;
	}
	dw_results_free(ro, (size_t)n);
	free(its);
	free(bi);
	free(ro);
	if (err)
		return dw_reply_error(r, "pmap: %s", dw_errmsg());
	int v = 77;
	if ((err = dw_everywhere("set_mark", &v, sizeof v)))
		return dw_reply_error(r, "everywhere: %s", dw_errmsg());
	long out[2] = {s, spread};
	return dw_reply_set(r, out, sizeof out);
}
DW_REGISTER(nested_pmap)

/* ---- helpers ---- */

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

static struct item items[4096];
static dw_buf in[4096];
static dw_result out[4096];

static void
make_items(size_t n, int sleep_ms, int fail_every, int note)
{
	for (size_t i = 0; i < n; i++) {
		items[i] = (struct item){.x = (long)i,
		                         .sleep_ms = sleep_ms,
		                         .fail = fail_every &&
		                                 i % (size_t)fail_every == 0,
		                         .note = note};
		in[i].data = &items[i];
		in[i].len = sizeof items[i];
	}
}

/* out[i] holds i * i for every i. */
static int
results_ok(size_t n)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		long y = -1;
		if (out[i].err == DW_OK && out[i].len == sizeof y)
			memcpy(&y, out[i].data, sizeof y);
		if (y != (long)(i * i)) {
			if (bad++ < 5)
				fprintf(stderr,
				        "item %zu: err %d len %zu "
				        "(%s)\n",
				        i, out[i].err, out[i].len,
				        out[i].err ? (char *)out[i].data : "");
		}
	}
	return bad == 0;
}

/* ---- tests ---- */

static void
test_pmap_basic(void)
{
	size_t n = 1000;
	make_items(n, 0, 0, 0);
	CHECK(dw_pmap("pm_square", in, n, out, NULL) == DW_OK);
	CHECK(results_ok(n));
	int by[16] = {0};
	for (size_t i = 0; i < n; i++)
		if (out[i].pid >= 0 && out[i].pid < 16)
			by[out[i].pid]++;
	int used = 0;
	for (int i = 2; i < 16; i++)
		used += by[i] > 0;
	CHECK(used >= 2); /* spread over workers */
	dw_results_free(out, n);
	int sizes[] = {1, 7, 5000};
	for (int k = 0; k < 3; k++) {
		dw_pmap_options o = {.batch_size = sizes[k]};
		CHECK(dw_pmap("pm_square", in, n, out, &o) == DW_OK);
		CHECK(results_ok(n));
		dw_results_free(out, n);
	}
	/* nothing to do, and bad arguments */
	CHECK(dw_pmap("pm_square", in, 0, out, NULL) == DW_OK);
	CHECK(dw_pmap(NULL, in, 1, out, NULL) == DW_EINVAL);
	/* a function nobody has: every item fails with its message */
	dw_pmap_options c = {.on_error = DW_PMAP_CONTINUE};
	CHECK(dw_pmap("no_such_fn", in, 3, out, &c) == DW_OK);
	CHECK(out[2].err == DW_EREMOTE &&
	      strstr(out[2].data, "'no_such_fn' is not registered"));
	dw_results_free(out, 3);
}

/* Slow items at the front: a static split would give them all to one
 * worker; pmap hands items out as workers become free. */
static void
test_load_balance(int nworkers)
{
	size_t n = 40;
	make_items(n, 1, 0, 0);
	for (size_t i = 0; i < 12; i++)
		items[i].sleep_ms = 100;
	dw_pmap_options o = {.batch_size = 1};
	double t0 = now_s();
	CHECK(dw_pmap("pm_square", in, n, out, &o) == DW_OK);
	double took = now_s() - t0;
	CHECK(results_ok(n));
	int slow_by[16] = {0};
	for (size_t i = 0; i < 12; i++)
		if (out[i].pid >= 0 && out[i].pid < 16)
			slow_by[out[i].pid]++;
	int sharing = 0;
	for (int i = 0; i < 16; i++)
		sharing += slow_by[i] > 0;
	/* static: one worker runs 10+ slow items (>= 1 s) */
	double bound = 12 * 0.1 / nworkers + 0.5;
	if (took > bound || sharing < nworkers - 1)
		fprintf(stderr,
		        "load balance: %.2f s (bound %.2f), slow items "
		        "on %d workers\n",
		        took, bound, sharing);
	/* the known answer is where the slow items ran; the time is only
	 * printed (a loaded machine may stretch it) */
	CHECK(sharing >= nworkers - 1);
	dw_results_free(out, n);
}

static void
test_on_error(void)
{
	size_t n = 50;
	make_items(n, 0, 5, 0);
	dw_pmap_options c = {.on_error = DW_PMAP_CONTINUE, .batch_size = 3};
	CHECK(dw_pmap("pm_square", in, n, out, &c) == DW_OK);
	for (size_t i = 0; i < n; i++) {
		if (i % 5 == 0) {
			CHECK(out[i].err == DW_EREMOTE);
			CHECK(out[i].data &&
			      strstr(out[i].data, "fails on purpose"));
		} else {
			long y = -1;
			if (out[i].len == sizeof y)
				memcpy(&y, out[i].data, sizeof y);
			CHECK(out[i].err == DW_OK && y == (long)(i * i));
		}
	}
	dw_results_free(out, n);
	dw_pmap_options s = {.on_error = DW_PMAP_STOP};
	CHECK(dw_pmap("pm_square", in, n, out, &s) == DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "fails on purpose") != NULL);
	CHECK(strstr(dw_errmsg(), "item ") != NULL);
	CHECK(dw_errpid() >= 2);
	int errors = 0, unrun = 0;
	for (size_t i = 0; i < n; i++) {
		errors += out[i].err == DW_EREMOTE;
		unrun += out[i].err == DW_ECLOSED;
		CHECK(out[i].data != NULL);
	}
	CHECK(errors >= 1);
	(void)unrun;
	dw_results_free(out, n);
}

/* 1 when every one of n items has been noted as run (the notes are
 * fire-and-forget: waited for up to 10 s). */
static int
all_noted(size_t n)
{
	for (int k = 0; k < 1000; k++) {
		size_t ran = 0;
		for (size_t i = 0; i < n; i++)
			ran += __atomic_load_n(&runs[i], __ATOMIC_RELAXED) >= 1;
		if (ran == n)
			return 1;
		usleep(10000);
	}
	return 0;
}

/* A worker killed in the middle (by SIGKILL, in its 5th item, whatever the
 * machine's speed): its items run again elsewhere; every result arrives
 * exactly once and is right. */
static void
test_worker_killed(void)
{
	int ids[3];
	REQUIRE(dw_addprocs(3, NULL, ids) == 3);
	dw_pool *p;
	REQUIRE(dw_pool_new(ids, 3, &p) == DW_OK);
	size_t n = 300;
	make_items(n, 10, 0, 1);
	for (size_t i = 0; i < n; i++)
		items[i].die_on = ids[1];
	memset(runs, 0, sizeof runs);
	dw_pmap_options o = {.pool = p, .batch_size = 2};
	double t0 = now_s();
	CHECK(dw_pmap("pm_square", in, n, out, &o) == DW_OK);
	double took = now_s() - t0;
	CHECK(results_ok(n));
	CHECK(took < 30.0); /* no hang on the dead one's items */
	int on_victim = 0;
	for (size_t i = 0; i < n; i++)
		on_victim += out[i].pid == ids[1];
	/* every item ran; some (those of the victim) more than once */
	CHECK(all_noted(n));
	int ran = 0, twice = 0;
	for (int tries = 0; tries < 200; tries++) {
		ran = twice = 0;
		for (size_t i = 0; i < n; i++) {
			ran += runs[i] >= 1;
			twice += runs[i] >= 2;
		}
		if (ran == (int)n && twice >= 1)
			break;
		usleep(50000);
	}
	printf("worker killed: %d results from the victim before it died, "
	       "%d items ran twice, %.2f s\n",
	       on_victim, twice, took);
	CHECK(ran == (int)n);
	CHECK(twice >= 1);
	dw_results_free(out, n);
	/* every member dead: items fail with DW_EEXITED */
	int left[2] = {ids[0], ids[2]};
	CHECK(dw_rmprocs(left, 2, 5000) == DW_OK);
	dw_pmap_options c = {.pool = p, .on_error = DW_PMAP_CONTINUE};
	int err = dw_pmap("pm_square", in, 5, out, &c);
	CHECK(err == DW_ENOTFOUND || (err == DW_OK && out[0].err));
	dw_results_free(out, 5);
	dw_pool_free(p);
}

static void
test_pool(const int *ids)
{
	dw_pool *p;
	REQUIRE(dw_pool_new(ids, 2, &p) == DW_OK);
	CHECK(dw_pool_workers(p, NULL, 0) == 2);
	int a = dw_pool_take(p, 1000), b = dw_pool_take(p, 1000);
	CHECK(a > 0 && b > 0 && a != b);
	double t0 = now_s();
	CHECK(dw_pool_take(p, 100) == DW_ETIMEDOUT); /* all busy */
	CHECK(now_s() - t0 >= 0.09);
	dw_pool_put(p, a);
	CHECK(dw_pool_take(p, 1000) == a);
	dw_pool_put(p, a);
	dw_pool_put(p, b);
	void *res;
	size_t n;
	int v[2];
	CHECK(dw_pool_remotecall_fetch(p, "whoami", NULL, 0, &res, &n) ==
	      DW_OK);
	memcpy(v, res, sizeof v);
	CHECK(v[0] == ids[0] || v[0] == ids[1]);
	free(res);
	/* a future on the pool: its worker is back once the call is done */
	dw_future *f1, *f2;
	int ms = 200;
	CHECK(dw_pool_remotecall(p, "sleeper", &ms, sizeof ms, &f1) == DW_OK);
	CHECK(dw_pool_remotecall(p, "sleeper", &ms, sizeof ms, &f2) == DW_OK);
	dw_future *f3;
	CHECK(dw_pool_remotecall_timeout(p, "echo", "x", 1, &f3, 50) ==
	      DW_ETIMEDOUT);           /* both busy */
	int c = dw_pool_take(p, 5000); /* waits for one of the two */
	CHECK(c > 0); /* no lower bound on the wait: a loaded machine is slow */
	dw_pool_put(p, c);
	CHECK(dw_future_wait(f1) == DW_OK && dw_future_wait(f2) == DW_OK);
	dw_future_free(f1);
	dw_future_free(f2);
	dw_pool_free(p);
	int bad = 0;
	CHECK(dw_pool_new(&bad, 1, &p) == DW_EINVAL);
}

/* The default pool follows addprocs and rmprocs. */
static void
test_default_pool(void)
{
	dw_pool *d = dw_default_pool();
	int before = dw_pool_workers(d, NULL, 0);
	CHECK(before == dw_nworkers());
	int id;
	REQUIRE(dw_addprocs(1, NULL, &id) == 1);
	CHECK(dw_pool_workers(d, NULL, 0) == before + 1);
	CHECK(dw_rmprocs(&id, 1, 5000) == DW_OK);
	CHECK(dw_pool_workers(d, NULL, 0) == before);
}

/* A large argument goes to each worker once. */
static void
test_cache(const int *ids)
{
	dw_pool *p;
	REQUIRE(dw_pool_new(ids, 3, &p) == DW_OK);
	size_t big = 4u << 20;
	unsigned char *blob = malloc(big);
	REQUIRE(blob);
	long sum = 0;
	for (size_t i = 0; i < big; i++) {
		blob[i] = (unsigned char)(i % 251);
		sum += blob[i];
	}
	uint64_t h;
	REQUIRE(dw_pool_cache(p, blob, big, &h) == DW_OK);
	free(blob);
	size_t n = 30;
	static unsigned char args[30][16];
	for (size_t i = 0; i < n; i++) {
		long x = (long)i;
		memcpy(args[i], &h, 8);
		memcpy(args[i] + 8, &x, 8);
		in[i].data = args[i];
		in[i].len = 16;
	}
	dw_pmap_options o = {.pool = p, .batch_size = 1};
	for (int round = 0; round < 2; round++) {
		CHECK(dw_pmap("pm_cached_sum", in, n, out, &o) == DW_OK);
		for (size_t i = 0; i < n; i++) {
			long s = -1;
			if (out[i].err == DW_OK && out[i].len == sizeof s)
				memcpy(&s, out[i].data, sizeof s);
			else if (i == 0)
				fprintf(stderr, "cached: %s\n",
				        (char *)out[i].data);
			CHECK(s == sum + (long)i);
		}
		dw_results_free(out, n);
	}
	for (int i = 0; i < 3; i++)
		CHECK(int_of(ids[i], "ncached") == 1); /* once, not 60 times */
	void *res;
	size_t rl;
	CHECK(dw_pool_remotecall_fetch(p, "pm_cached_sum", args[3], 16, &res,
	                               &rl) == DW_OK);
	free(res);
	dw_pool_free(p); /* the copies go too */
	for (int i = 0; i < 3; i++) {
		int k = 1;
		for (int t = 0; t < 100 && (k = int_of(ids[i], "ncached")); t++)
			usleep(10000);
		CHECK(k == 0);
	}
	const void *d;
	CHECK(dw_cached(h, &d, &rl) == DW_ENOTFOUND);
}

static void
test_everywhere(const int *ids, int n)
{
	int v = 1234;
	CHECK(dw_everywhere("set_mark", &v, sizeof v) == DW_OK);
	CHECK(mark == 1234); /* the master too */
	for (int i = 0; i < n; i++)
		CHECK(int_of(ids[i], "get_mark") == 1234);
	CHECK(dw_everywhere("fail_on_even", NULL, 0) == DW_EREMOTE);
	char want[64];
	for (int i = 0; i < n; i++) {
		snprintf(want, sizeof want, "process %d:", ids[i]);
		CHECK((strstr(dw_errmsg(), want) != NULL) == (ids[i] % 2 == 0));
	}
	CHECK(strstr(dw_errmsg(), "process 1:") == NULL);
	CHECK(dw_errpid() % 2 == 0);
	int ms = 2000;
	CHECK(dw_everywhere_timeout("sleeper", &ms, sizeof ms, 100) ==
	      DW_ETIMEDOUT);
}

static void
test_distributed_for(void)
{
	long off = 3, *s;
	size_t n;
	int parts = 0;
	CHECK(dw_distributed_for("range_sum", 0, 1000000, &off, sizeof off,
	                         add_longs, &parts, (void **)&s, &n) == DW_OK);
	long want = 999999L * 1000000L / 2 + 3L * 1000000L;
	CHECK(n == sizeof *s && *s == want);
	CHECK(parts == dw_nworkers());
	free(s);
	/* fewer indices than workers, and an empty range */
	parts = 0;
	CHECK(dw_distributed_for("range_sum", 10, 12, &off, sizeof off,
	                         add_longs, &parts, (void **)&s, &n) == DW_OK);
	CHECK(*s == 10 + 11 + 6 && parts == 2);
	free(s);
	CHECK(dw_distributed_for("range_sum", 5, 5, &off, sizeof off, NULL,
	                         NULL, NULL, NULL) == DW_OK);
	CHECK(dw_distributed_for("fails", 0, 10, NULL, 0, NULL, NULL, NULL,
	                         NULL) == DW_EREMOTE);
	int ms = 3000;
	double t0 = now_s();
	CHECK(dw_distributed_for_timeout("range_sleep", 0, 4, &ms, sizeof ms,
	                                 NULL, NULL, NULL, NULL,
	                                 100) == DW_ETIMEDOUT);
	CHECK(now_s() - t0 < 2.9); /* before the work would have ended */
}

/* A remote function runs a pmap and an everywhere itself. */
static void
test_nested(const int *ids, int nw)
{
	int n = 200;
	void *res;
	size_t len;
	mark = 0;
	CHECK(dw_remotecall_fetch(ids[1], "nested_pmap", &n, sizeof n, &res,
	                          &len) == DW_OK);
	long want = 0;
	for (long i = 0; i < n; i++)
		want += i * i;
	long got[2] = {0, 0};
	if (len == sizeof got)
		memcpy(got, res, sizeof got);
	free(res);
	CHECK(got[0] == want);
	CHECK(got[1] >= 2 && got[1] <= nw); /* spread over the workers */
	CHECK(mark == 77); /* its everywhere reached the master */
	for (int i = 0; i < nw; i++)
		CHECK(int_of(ids[i], "get_mark") == 77);
}

static void
test_spawn(int nw)
{
	int seen[64] = {0};
	for (int i = 0; i < 2 * nw; i++) {
		dw_future *f;
		int pid = 0;
		REQUIRE(dw_spawn("whoami", NULL, 0, &f, &pid) == DW_OK);
		const void *r;
		size_t n;
		CHECK(dw_future_fetch(f, &r, &n) == DW_OK &&
		      ((const int *)r)[0] == pid);
		if (pid > 0 && pid < 64)
			seen[pid]++;
		dw_future_free(f);
	}
	int each_twice = 0;
	for (int i = 0; i < 64; i++)
		each_twice += seen[i] == 2;
	CHECK(each_twice == nw); /* round-robin */
}

int
main(int argc, char **argv)
{
	dw_options o = {.heartbeat_ms = 200, .heartbeat_timeout_ms = 3000};
	REQUIRE(dw_init_opts(&argc, &argv, &o) == DW_OK);
	/* no workers: the master serves as one */
	make_items(10, 0, 0, 0);
	CHECK(dw_pmap("pm_square", in, 10, out, NULL) == DW_OK);
	CHECK(results_ok(10) && out[0].pid == 1);
	dw_results_free(out, 10);
	int ids[4];
	REQUIRE(dw_addprocs(4, NULL, ids) == 4);
	test_pmap_basic();
	test_load_balance(4);
	test_on_error();
	test_pool(ids);
	test_default_pool();
	test_cache(ids);
	test_everywhere(ids, 4);
	test_distributed_for();
	test_spawn(4);
	test_nested(ids, 4);
	test_worker_killed();
	CHECK(dw_finalize() == DW_OK);
	CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
	return tu_report("runtime_pmap");
}
