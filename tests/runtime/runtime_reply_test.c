/*
 * A result is written when its call ends, not held back behind the next
 * queued call (src/runtime/exec.c: replies share writes only behind a
 * run of the same function whose last run was short).  One worker with
 * one executor runs "gated" (waits for a file), then "echo", then
 * "gated" again: echo's result must reach the master while the second
 * gated call still waits for a file the master makes only after it has
 * that result.  With replies held for as long as jobs are queued, the
 * result would come after the second call ends (or with the next
 * frame written on the link: the heartbeat is set beyond the test), and
 * the wait below times out instead.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "rt_util.h"
#include "testutil.h"

/* {path}: waits until the file exists (up to 60 s). */
static int
gated(const void *arg, size_t len, dw_reply *r)
{
	char path[600];

	if (len == 0 || len >= sizeof path)
		return dw_reply_error(r, "gated: bad argument");
	memcpy(path, arg, len);
	path[len] = 0;
	for (int i = 0; i < 60000 && access(path, F_OK) != 0; i++)
		usleep(1000);
	return dw_reply_set(r, "done", 4);
}
DW_REGISTER(gated)

static void
touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0600);

	REQUIRE(fd >= 0);
	close(fd);
}

static void
test_not_held(int w, const char *dir)
{
	char g1[600], g2[600];
	dw_future *fb, *fe, *fg;

	snprintf(g1, sizeof g1, "%s/gate1", dir);
	snprintf(g2, sizeof g2, "%s/gate2", dir);
	REQUIRE(dw_remotecall(w, "gated", g1, strlen(g1), &fb) == DW_OK);
	REQUIRE(dw_remotecall(w, "echo", "x", 1, &fe) == DW_OK);
	REQUIRE(dw_remotecall(w, "gated", g2, strlen(g2), &fg) == DW_OK);
	/* the two calls behind the first are queued on the worker while it
	 * waits (were they not yet, nothing would be held: the test could
	 * pass without the rule, never fail with it) */
	usleep(300000);
	touch(g1);
	CHECK((dw_future_wait_timeout(fb, 20000)) == DW_OK);
	CHECK((dw_future_wait_timeout(fe, 20000)) == DW_OK);
	CHECK(!dw_future_isready(fg)); /* still waiting for gate2 */
	touch(g2);
	CHECK((dw_future_wait_timeout(fg, 60000)) == DW_OK);
	dw_future_free(fb);
	dw_future_free(fe);
	dw_future_free(fg);
}

/* A stream of tiny calls still runs and answers (their replies may
 * share writes). */
static void
test_stream(int w)
{
	enum { N = 2000 };
	static dw_future *f[N];

	for (int i = 0; i < N; i++)
		REQUIRE(dw_remotecall(w, "echo", &i, sizeof i, &f[i]) == DW_OK);
	for (int i = 0; i < N; i++) {
		const void *res;
		size_t n;
		int v = -1;

		REQUIRE(dw_future_fetch(f[i], &res, &n) == DW_OK);
		if (n == sizeof v)
			memcpy(&v, res, sizeof v);
		CHECK((v) == i);
		dw_future_free(f[i]);
	}
}

int
main(int argc, char **argv)
{
	/* no heartbeat inside the test: its answer, written at once, would
	 * also write whatever reply was held on the link */
	dw_options o = {.heartbeat_ms = 60000, .heartbeat_timeout_ms = 120000};
	int w;

	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	REQUIRE(dw_addprocs(1, NULL, &w) == 1);
	const char *dir = tu_tmpdir("reply");
	test_not_held(w, dir);
	test_stream(w);
	CHECK(dw_finalize() == DW_OK);
	tu_rmtree(dir);
	return tu_report("runtime_reply");
}
