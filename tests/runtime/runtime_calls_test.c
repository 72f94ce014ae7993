/*
 * Remote calls with real worker processes on loopback: every call kind,
 * futures, errors, concurrent callers, output forwarding, flat memory.
 */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "rt_util.h"
#include "testutil.h"

static int
echo_ok_on(int w)
{
	void *res;
	size_t n;
	int ok = dw_remotecall_fetch(w, "echo", "ok", 2, &res, &n) == DW_OK &&
	         n == 2;
	free(ok ? res : NULL);
	return ok;
}

static void
test_ids(void)
{
	int ids[8];
	CHECK_EQ_U64(dw_myid(), 1);
	CHECK_EQ_U64(dw_nworkers(), 3);
	CHECK_EQ_U64(dw_nprocs(), 4);
	CHECK_EQ_U64(dw_procs(ids, 8), 4);
	CHECK(ids[0] == 1 && ids[1] == 2 && ids[2] == 3 && ids[3] == 4);
	CHECK_EQ_U64(dw_workers(ids, 8), 3);
	CHECK(ids[0] == 2 && ids[1] == 3 && ids[2] == 4);
	for (int w = 2; w <= 4; w++) {
		void *res;
		size_t n;
		REQUIRE(dw_remotecall_fetch(w, "whoami", NULL, 0, &res, &n) ==
		        DW_OK);
		CHECK(n == 2 * sizeof(int) && ((int *)res)[0] == w);
		CHECK(((int *)res)[1] != getpid());
		free(res);
	}
}

static void
test_fetch(void)
{
	void *res;
	size_t n;
	uint64_t v = 0x1122334455667788u;
	CHECK(dw_remotecall_fetch(2, "echo", &v, 8, &res, &n) == DW_OK);
	CHECK(n == 8 && memcmp(res, &v, 8) == 0);
	free(res);
	/* process 1 calling itself */
	CHECK(dw_remotecall_fetch(1, "echo", &v, 8, &res, &n) == DW_OK);
	CHECK(n == 8 && memcmp(res, &v, 8) == 0);
	free(res);
	CHECK(dw_remotecall_fetch(3, "echo", NULL, 0, &res, &n) == DW_OK);
	CHECK(n == 0);
	free(res);
}

static void
test_futures(void)
{
	dw_future *f;
	int ms = 200;
	REQUIRE(dw_remotecall(2, "sleeper", &ms, sizeof ms, &f) == DW_OK);
	CHECK(!dw_future_isready(f));
	CHECK(dw_future_wait_timeout(f, 10) == DW_ETIMEDOUT);
	CHECK(dw_future_wait(f) == DW_OK);
	CHECK(dw_future_isready(f));
	const void *res;
	size_t n;
	CHECK(dw_future_fetch(f, &res, &n) == DW_OK);
	CHECK(n == sizeof ms && *(const int *)res == 200);
	const void *res2;
	CHECK(dw_future_fetch(f, &res2, &n) == DW_OK); /* cached */
	CHECK(res2 == res);
	dw_future_free(f);

	/* freed without fetching: the remote copy goes too */
	REQUIRE(dw_remotecall(3, "echo", "abc", 3, &f) == DW_OK);
	CHECK(dw_future_wait(f) == DW_OK);
	dw_future_free(f);
	REQUIRE(dw_remotecall(3, "echo", "abc", 3, &f) == DW_OK);
	dw_future_free(f); /* before it completed */

	REQUIRE(dw_remotecall_wait(4, "echo", "xyz", 3, &f) == DW_OK);
	CHECK(dw_future_isready(f));
	CHECK(dw_future_fetch(f, &res, &n) == DW_OK);
	CHECK(n == 3 && memcmp(res, "xyz", 3) == 0);
	dw_future_free(f);
}

static void
test_remote_do(void)
{
	for (int i = 0; i < 10; i++)
		CHECK(dw_remote_do(3, "bump", NULL, 0) == DW_OK);
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(3, "get_counter", NULL, 0, &res, &n) ==
	      DW_OK);
	CHECK(n == sizeof(int) && *(int *)res == 10);
	free(res);
	CHECK(dw_remote_do(3, "no_such_function", NULL, 0) == DW_OK);
}

static void
test_errors(void)
{
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(2, "fails", "xy", 2, &res, &n) == DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "worker 2") &&
	      strstr(dw_errmsg(), "it failed on purpose (xy)"));
	CHECK_EQ_U64(dw_errpid(), 2);
	CHECK(dw_remotecall_fetch(3, "nope", NULL, 0, &res, &n) == DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "'nope' is not registered") != NULL);
	CHECK(dw_remotecall_fetch(99, "echo", NULL, 0, &res, &n) ==
	      DW_ENOTFOUND);
	dw_future *f;
	REQUIRE(dw_remotecall(4, "fails", "k", 1, &f) == DW_OK);
	CHECK(dw_future_wait(f) == DW_EREMOTE);
	const void *r;
	CHECK(dw_future_fetch(f, &r, &n) == DW_EREMOTE);
	dw_future_free(f);
	/* the worker is fine afterwards */
	CHECK(dw_remotecall_fetch(2, "echo", "ok", 2, &res, &n) == DW_OK);
	free(res);
}

static void *
caller(void *arg)
{
	int w = 2 + (int)(intptr_t)arg % 3;
	for (int i = 0; i < 500; i++) {
		void *res;
		size_t n;
		int v = i * 10 + w;
		if (dw_remotecall_fetch(w, "echo", &v, sizeof v, &res, &n) !=
		        DW_OK ||
		    n != sizeof v || *(int *)res != v) {
			__atomic_fetch_add(&tu_failures, 1, __ATOMIC_RELAXED);
			return NULL;
		}
		free(res);
	}
	return NULL;
}

static void
test_concurrent(void)
{
	pthread_t th[6];
	for (intptr_t i = 0; i < 6; i++)
		pthread_create(&th[i], NULL, caller, (void *)i);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
}

/* Sizes around the frame header, a TLS record (16 KiB) and the read
 * buffer (64 KiB), and past a socket buffer: under TLS the head and the
 * start of a body share a record, and the read right moves between a
 * caller and the I/O thread while records are half read. */
static const size_t mixed_sizes[] = {
    0, 1, 13, 16367, 16368, 16384, 16385, 65523, 65536, 70001, (1u << 20) + 7};
#define NMIXED (sizeof mixed_sizes / sizeof mixed_sizes[0])

static void
mixed_fill(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 131 + seed * 7 + (i >> 12));
}

/* One caller: fetches (it reads its own reply) mixed with futures (the
 * I/O thread reads those), every byte checked. */
static void *
mixed_caller(void *arg)
{
	unsigned t = (unsigned)(intptr_t)arg;
	unsigned char *buf = malloc(mixed_sizes[NMIXED - 1]);
	for (unsigned i = 0; buf && i < 3 * NMIXED; i++) {
		size_t len = mixed_sizes[(i + t * 3) % NMIXED];
		unsigned seed = t * 1000 + i;
		int w = 2 + (int)((t + i) % 3);
		mixed_fill(buf, len, seed);
		void *res = NULL;
		const void *r = NULL;
		size_t n = 0;
		dw_future *f = NULL;
		int ok;
		if (i % 3 == 2) {
			ok = dw_remotecall(w, "echo", buf, len, &f) == DW_OK &&
			     dw_future_fetch(f, &r, &n) == DW_OK;
		} else {
			ok = dw_remotecall_fetch(w, "echo", buf, len, &res,
			                         &n) == DW_OK;
			r = res;
		}
		ok = ok && n == len && (!len || !memcmp(r, buf, len));
		free(res);
		dw_future_free(f);
		if (!ok) {
			fprintf(stderr,
			        "mixed call %u of thread %u (%zu bytes) "
			        "went wrong\n",
			        i, t, len);
			__atomic_fetch_add(&tu_failures, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	free(buf);
	return NULL;
}

static void
test_concurrent_sizes(void)
{
	pthread_t th[4];
	for (intptr_t i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, mixed_caller, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
}

/* Many threads fetching kept results at once: each dw_future_fetch asks
 * the worker for its result (fut_request_fetch) while others hold the
 * runtime's lock.  A lock taken there across the send once deadlocked
 * two fetchers; a watchdog turns such a hang into a failure. */
static void *
fetcher(void *arg)
{
	int t = (int)(intptr_t)arg;
	for (int i = 0; i < 400; i++) {
		int v = t * 100000 + i, w = 2 + (t + i) % 3;
		dw_future *f;
		const void *r;
		size_t n;
		if (dw_remotecall(w, "echo", &v, sizeof v, &f) != DW_OK) {
			__atomic_fetch_add(&tu_failures, 1, __ATOMIC_RELAXED);
			return NULL;
		}
		int ok = dw_future_fetch_timeout(f, &r, &n, 30000) == DW_OK &&
		         n == sizeof v && !memcmp(r, &v, sizeof v);
		dw_future_free(f);
		if (!ok) {
			fprintf(stderr, "fetcher %d, call %d: %s\n", t, i,
			        dw_errmsg());
			__atomic_fetch_add(&tu_failures, 1, __ATOMIC_RELAXED);
			return NULL;
		}
	}
	return NULL;
}

static void
on_fetch_hang(int sig)
{
	(void)sig;
	static const char msg[] =
	    "concurrent fetches: no progress in 60 s (deadlock)\n";
	if (write(2, msg, sizeof msg - 1) < 0)
		_exit(2);
	_exit(1);
}

static void
test_concurrent_fetch(void)
{
	pthread_t th[8];
	signal(SIGALRM, on_fetch_hang);
	alarm(60);
	for (intptr_t i = 0; i < 8; i++)
		pthread_create(&th[i], NULL, fetcher, (void *)i);
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	alarm(0);
	signal(SIGALRM, SIG_DFL);
}

static long
remote_rss(int w)
{
	void *res;
	size_t n;
	long kb = -1;
	if (dw_remotecall_fetch(w, "rss_kb", NULL, 0, &res, &n) == DW_OK) {
		memcpy(&kb, res, sizeof kb);
		free(res);
	}
	return kb;
}

static void
test_flat_memory(void)
{
	for (int i = 0; i < 2000; i++) { /* warm up allocator pools */
		dw_future *f;
		const void *r;
		size_t n;
		dw_remotecall(2, "echo", &i, sizeof i, &f);
		dw_future_fetch(f, &r, &n);
		dw_future_free(f);
	}
	long before = remote_rss(2);
	for (int i = 0; i < 50000; i++) {
		dw_future *f;
		const void *r;
		size_t n;
		if (dw_remotecall(2, "echo", &i, sizeof i, &f) != DW_OK ||
		    dw_future_fetch(f, &r, &n) != DW_OK) {
			fprintf(stderr, "call %d: %s\n", i, dw_errmsg());
			CHECK(!"remotecall+fetch failed");
			break;
		}
		dw_future_free(f);
	}
	long after = remote_rss(2);
	CHECK(before > 0 && after > 0);
#if defined(__SANITIZE_ADDRESS__)
	/* ASan's quarantine holds freed memory back on purpose */
	printf("flat memory: not checked under AddressSanitizer\n");
	after = before;
#endif
	if (after - before > 2048) {
		fprintf(stderr, "worker RSS grew from %ld to %ld kB\n", before,
		        after);
		tu_failures++;
	}
}

static void
test_big(void)
{
	size_t want = 8u << 20;
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(4, "big", &want, sizeof want, &res, &n) ==
	      DW_OK);
	CHECK(n == want && ((unsigned char *)res)[4096 * 5] == 5);
	free(res);
	unsigned char *arg = calloc(1, 3u << 20);
	REQUIRE(arg);
	arg[(3u << 20) - 1] = 7;
	CHECK(dw_remotecall_fetch(3, "echo", arg, 3u << 20, &res, &n) == DW_OK);
	CHECK(n == 3u << 20 && ((unsigned char *)res)[n - 1] == 7);
	free(res);
	free(arg);
}

/* Lines a worker prints reach our stdout as "From worker N: ...". */
static void
test_output(void)
{
	int p[2];
	REQUIRE(pipe(p) == 0);
	fflush(stdout);
	int saved = dup(1);
	dup2(p[1], 1);
	CHECK(dw_remote_do(3, "say", "hello there", 11) == DW_OK);
	char buf[256] = "";
	size_t got = 0;
	for (int i = 0; i < 500 && !strstr(buf, "\n"); i++) {
		usleep(10000);
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		if (poll(&pf, 1, 0) > 0) {
			ssize_t r = read(p[0], buf + got, sizeof buf - 1 - got);
			if (r > 0)
				got += (size_t)r;
			buf[got] = 0;
		}
	}
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	close(p[0]);
	close(p[1]);
	CHECK(strstr(buf, "From worker 3: hello there\n") != NULL);
}

/* dw_interrupt reaches a running function through dw_interrupted();
 * the interrupted call fails with DW_EINTR, whatever it returned. */
static void
test_interrupt(void)
{
	dw_future *f;
	REQUIRE(dw_remotecall(2, "until_interrupted", NULL, 0, &f) == DW_OK);
	CHECK(interrupt_until_done(2, f) == DW_EINTR);
	const void *r;
	size_t n;
	CHECK(dw_future_fetch_timeout(f, &r, &n, 10000) == DW_EINTR);
	CHECK(strstr(dw_errmsg(), "was interrupted") != NULL);
	dw_future_free(f);
	CHECK(echo_ok_on(2)); /* the worker goes on */
}

/* Launch options: working directory and environment reach the worker. */
static void
test_launch_options(void)
{
	const char *env[] = {"RT_TEST_VAR=hello", NULL};
	dw_local_options o = {.dir = "/tmp", .env = env};
	int id;
	REQUIRE(dw_addprocs(1, &o, &id) == 1);
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(id, "cwd", NULL, 0, &res, &n) == DW_OK);
	CHECK(n == 10 && memcmp(res, "/tmp|hello", 10) == 0);
	free(res);
	CHECK(dw_rmprocs(&id, 1, 5000) == DW_OK);
}

int
main(int argc, char **argv)
{
	if (dw_init(&argc, &argv) != DW_OK)
		return 1;
	int ids[3];
	REQUIRE(dw_addprocs(3, NULL, ids) == 3);
	CHECK(ids[0] == 2 && ids[1] == 3 && ids[2] == 4);
	test_ids();
	test_fetch();
	test_futures();
	test_remote_do();
	test_errors();
	test_concurrent();
	test_concurrent_sizes();
	test_concurrent_fetch();
	test_big();
	test_output();
	test_interrupt();
	test_launch_options();
	test_flat_memory();
	CHECK(dw_finalize() == DW_OK);
	return tu_report("runtime_calls");
}
