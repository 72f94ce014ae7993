/*
 * The rules every public call follows (docs/runtime.md, "Headers and
 * the rules every call follows"), through real workers: negative error
 * codes and dw_strerror of either sign, the size field of options
 * structs (an unknown size is refused by name, 0 and sizeof work),
 * dw_free, the non-variadic dw_reply_error_str, and the _timeout forms
 * added beside the calls that had none (known answers: a 2 s sleep
 * against a 100 ms budget times out, a 20 ms one within 10 s does not).
 */
#include <errno.h>
#include <time.h>

#include <dwork/trace.h>

#include "rt_util.h"
#include "testutil.h"

static int
fails_plain(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	return dw_reply_error_str(r, "plain 100% message, no %d format");
}
DW_REGISTER(fails_plain)

static double
now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void
test_codes(void)
{
	CHECK(DW_OK == 0);
	CHECK(DW_EINVAL < 0 && DW_EEXITED < 0 && DW_EINTR < 0);
	CHECK(!strcmp(dw_strerror(DW_ETIMEDOUT), "timed out"));
	CHECK(!strcmp(dw_strerror(-DW_ETIMEDOUT), "timed out"));
	CHECK(!strcmp(dw_strerror(DW_OK), "no error"));
	CHECK(!strcmp(dw_strerror(-DW_ERR_COUNT), "unknown error"));
	CHECK(!strcmp(dw_strerror(DW_ERR_COUNT), "unknown error"));
	CHECK(dw_err_from_errno(ENOENT) == DW_ENOENT);
}

/* Before dw_init: a dw_options of an unknown size is refused. */
static void
test_bad_sizes_before_init(void)
{
	dw_options o = {.size = sizeof(dw_options) + 8};
	int argc = 1;
	char *args[] = {"runtime_api", NULL}, **argv = args;
	CHECK(dw_init_opts(&argc, &argv, &o) == DW_EINVAL);
	CHECK(strstr(dw_errmsg(), "dw_options.size is") != NULL);
	dwt_config c;
	dwt_config_defaults(&c);
	CHECK(c.size == sizeof c);
	c.size = 4;
	CHECK(dwt_init(&c) == DW_EINVAL);
}

static void
test_bad_sizes(void)
{
	int ids[2];
	dw_local_options lo = {.size = 3};
	CHECK(dw_addprocs(1, &lo, ids) == DW_EINVAL);
	CHECK(strstr(dw_errmsg(), "dw_local_options.size is 3") != NULL);
	dw_ssh_options so = {.size = sizeof so - 1};
	dw_ssh_host h = {.host = "localhost"};
	CHECK(dw_addprocs_ssh(&h, 1, &so, ids, 2) == DW_EINVAL);
	CHECK(strstr(dw_errmsg(), "dw_ssh_options.size") != NULL);
	dw_pmap_options po = {.size = 1};
	dw_buf in = {"x", 1};
	dw_result out;
	CHECK(dw_pmap("echo", &in, 1, &out, &po) == DW_EINVAL);
	po.size = sizeof po;
	CHECK(dw_pmap("echo", &in, 1, &out, &po) == DW_OK);
	CHECK(out.err == DW_OK && out.len == 1);
	dw_results_free(&out, 1);
}

static void
test_free_and_reply_str(void)
{
	void *res = NULL;
	size_t n = 0;
	CHECK(dw_remotecall_fetch(2, "echo", "abc", 3, &res, &n) == DW_OK);
	CHECK(n == 3 && res && !memcmp(res, "abc", 3));
	dw_free(res);
	dw_free(NULL);
	res = NULL;
	CHECK(dw_remotecall_fetch(2, "fails_plain", NULL, 0, &res, &n) ==
	      DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "plain 100% message, no %d format") != NULL);
}

static void
test_call_timeouts(void)
{
	int ms = 2000;
	dw_future *f = (dw_future *)1;
	double t0 = now_ms();
	CHECK(dw_remotecall_wait_timeout(2, "sleeper", &ms, sizeof ms, &f,
	                                 100) == DW_ETIMEDOUT);
	double took = now_ms() - t0;
	CHECK(f == NULL);
	CHECK(took >= 95 && took < 1900);
	ms = 20;
	CHECK(dw_remotecall_wait_timeout(3, "sleeper", &ms, sizeof ms, &f,
	                                 10000) == DW_OK);
	CHECK(f && dw_future_isready(f) == 1);
	const void *r;
	size_t n;
	CHECK(f && dw_future_fetch(f, &r, &n) == DW_OK && n == sizeof ms &&
	      !memcmp(r, &ms, sizeof ms));
	dw_future_free(f);
	CHECK(dw_remotecall_timeout(3, "sleeper", &ms, sizeof ms, &f, 5000) ==
	      DW_OK);
	CHECK(f && dw_future_wait_timeout(f, 10000) == DW_OK);
	dw_future_free(f);
	int pid = 0;
	CHECK(dw_spawn_timeout("echo", "s", 1, &f, &pid, 5000) == DW_OK);
	CHECK(pid == 2 || pid == 3);
	CHECK(f && dw_future_fetch(f, &r, &n) == DW_OK && n == 1);
	dw_future_free(f);
	CHECK(dw_future_waitany(NULL, 0, 10) == DW_EINVAL); /* a count call */
	CHECK(dw_everywhere_load_timeout("/nonexistent/x.so", 5000) ==
	      DW_ENOENT); /* the master fails first: no worker is asked */
	CHECK(strstr(dw_errmsg(), "x.so") != NULL);
}

static void
test_channel_timeouts(void)
{
	dw_channel *ch = NULL;
	CHECK(dw_channel_new_timeout(3, 1, &ch, 5000) == DW_OK);
	REQUIRE(ch);
	CHECK(dw_channel_isready_timeout(ch, 5000) == 0);
	CHECK(dw_channel_put(ch, "v", 1) == DW_OK);
	CHECK(dw_channel_isready_timeout(ch, 5000) == 1);
	void *bytes = NULL;
	size_t len = 0;
	CHECK(dw_channel_export_timeout(ch, 2, &bytes, &len, 5000) == DW_OK);
	CHECK(bytes && len > 0);
	dw_free(bytes);
	CHECK(dw_channel_close_timeout(ch, 5000) == DW_OK);
	CHECK(dw_channel_put(ch, "w", 1) == DW_ECLOSED);
	dw_channel_free(ch);
	CHECK(dw_channel_new_timeout(99, 1, &ch, 5000) < 0 && ch == NULL);
}

int
main(int argc, char **argv)
{
	if (argc > 1 && !strncmp(argv[1], "--dwork-", 8))
		return dw_init(&argc, &argv) == DW_OK ? 0 : 2; /* a worker */
	unsetenv("DWORK_TRACE");
	test_codes();
	test_bad_sizes_before_init();
	dw_options o = {.size = sizeof o};
	REQUIRE(dw_init_opts(&argc, &argv, &o) == DW_OK);
	dw_local_options lo = {.size = sizeof lo};
	int ids[2];
	REQUIRE(dw_addprocs(2, &lo, ids) == 2);
	test_bad_sizes();
	test_free_and_reply_str();
	test_call_timeouts();
	test_channel_timeouts();
	CHECK(dw_finalize() == DW_OK);
	return tu_report("runtime_api");
}
