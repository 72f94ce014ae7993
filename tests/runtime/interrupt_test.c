/*
 * dw_interrupt reaches a worker over its link, whatever started it: a
 * local worker and one that dialled in (no local pid to signal) each run
 * a 20 s call that polls dw_interrupted(); interrupted after 300 ms, the
 * caller gets DW_EINTR with a message saying so, well before the call's
 * own end, and the next call on that worker works.  Ctrl-C on the
 * master (SIGINT to this process) interrupts the calls in flight and the
 * program goes on.  A pmap interrupted on its workers fails the items
 * running there with DW_EINTR and delivers the others.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

#include "rt_util.h"
#include "testutil.h"

static int
spin(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	for (int i = 0; i < 2000 && !dw_interrupted(); i++)
		usleep(10000); /* 20 s unless interrupted */
	int v = 42;
	return dw_reply_set(r, &v, sizeof v);
}
DW_REGISTER(spin)

/* A pmap item: 600 ms unless interrupted. */
static int
spin_item(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	for (int i = 0; i < 60 && !dw_interrupted(); i++)
		usleep(10000);
	int v = 42;
	return dw_reply_set(r, &v, sizeof v);
}
DW_REGISTER(spin_item)

static double
now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

struct who {
	int id, sigint; /* sigint: interrupt by raising SIGINT here */
};

static void *
interrupter(void *arg)
{
	struct who *w = arg;
	usleep(300000);
	if (w->sigint)
		kill(getpid(), SIGINT);
	else
		dw_interrupt(&w->id, 1);
	return NULL;
}

/* A spin on id interrupted after 300 ms: DW_EINTR within 2 s. */
static void
interrupt_one(int id, int sigint, const char *what)
{
	struct who w = {id, sigint};
	pthread_t t;
	double t0 = now_ms();
	REQUIRE(pthread_create(&t, NULL, interrupter, &w) == 0);
	void *res = NULL;
	size_t len;
	int err = dw_remotecall_fetch(id, "spin", NULL, 0, &res, &len);
	double took = now_ms() - t0;
	pthread_join(t, NULL);
	CHECK(err == DW_EINTR);
	CHECK(strstr(dw_errmsg(), "interrupted") != NULL);
	CHECK(took >= 300 && took < 10000); /* "spin" never ends by itself */
	printf("%s: %s after %.0f ms: %s\n", what, dw_strerror(err), took,
	       dw_errmsg());
	free(res);
	/* the worker lives on: the next call works and is not interrupted */
	int ms = 50;
	CHECK(dw_remotecall_fetch(id, "sleeper", &ms, sizeof ms, &res, &len) ==
	          DW_OK &&
	      len == sizeof ms && *(int *)res == 50);
	free(res);
}

static void *
interrupt_both(void *arg)
{
	usleep(300000);
	dw_interrupt(arg, 2);
	return NULL;
}

/* A pmap interrupted 300 ms in: the items running on the workers then
 * fail with DW_EINTR (not run again), every other item is delivered. */
static void
interrupt_pmap(int *ids)
{
	enum { N = 6 };
	dw_buf in[N];
	dw_result out[N];
	for (int i = 0; i < N; i++)
		in[i] = (dw_buf){"x", 1};
	dw_pmap_options po = {.batch_size = 1, .on_error = DW_PMAP_CONTINUE};
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, interrupt_both, ids) == 0);
	CHECK(dw_pmap("spin_item", in, N, out, &po) == DW_OK);
	pthread_join(t, NULL);
	int intr = 0, ok = 0;
	for (int i = 0; i < N; i++) {
		if (out[i].err == DW_EINTR)
			intr++;
		else if (out[i].err == DW_OK && out[i].len == sizeof(int) &&
		         *(int *)out[i].data == 42)
			ok++;
	}
	/* one executor a worker: at most one item each was running, and
	 * one sent behind it (pmap keeps the next item queued on a worker)
	 * may be taken by the same interrupt */
	CHECK(intr >= 1 && intr <= 4);
	CHECK(intr + ok == N);
	printf("pmap: %d of %d items interrupted (DW_EINTR), %d delivered\n",
	       intr, N, ok);
	dw_results_free(out, N);
}

int
main(int argc, char **argv)
{
	dw_options o = {.procs = 1};
	REQUIRE(dw_init_opts(&argc, &argv, &o) == DW_OK);
	REQUIRE(dw_nworkers() == 1);
	int local;
	dw_workers(&local, 1);

	/* a dial-in worker: started here by fork/exec, as a script would */
	const char *dir = tu_tmpdir("intr");
	char cookie[600], addr[300];
	snprintf(cookie, sizeof cookie, "%s/cookie", dir);
	REQUIRE(dw_listen("127.0.0.1:0", addr, sizeof addr) == DW_OK);
	REQUIRE(dw_write_cookie_file(cookie) == DW_OK);
	pid_t dp = fork();
	if (dp == 0) {
		int nul = open("/dev/null", O_RDONLY);
		dup2(nul, 0);
		execl("/proc/self/exe", "dialer", "--dwork-dial", addr,
		      "--dwork-cookie-file", cookie, (char *)0);
		_exit(127);
	}
	REQUIRE(dp > 0);
	int dial;
	REQUIRE(dw_accept_workers(1, 10000, &dial) == 1);

	interrupt_one(local, 0, "local worker");
	interrupt_one(dial, 0, "dial-in worker");
	/* Ctrl-C on the master: both calls in flight are interrupted */
	interrupt_one(dial, 1, "Ctrl-C, dial-in worker");
	int both[2] = {local, dial};
	interrupt_pmap(both);

	/* an interrupt with nothing running changes nothing */
	CHECK(dw_interrupt(&local, 1) == DW_OK);
	usleep(100000);
	void *res;
	size_t len;
	int ms = 20;
	CHECK(dw_remotecall_fetch(local, "sleeper", &ms, sizeof ms, &res,
	                          &len) == DW_OK);
	free(res);
	int bad = 999;
	CHECK(dw_interrupt(&bad, 1) == DW_ENOTFOUND);

	dw_finalize();
	waitpid(dp, NULL, 0);
	tu_rmtree(dir);
	return tu_report("interrupt");
}
