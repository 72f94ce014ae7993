/*
 * Frame limits with real workers on loopback: the limit setting and its
 * validation, arguments, results, kept results and channel values over
 * the link's limit (DW_ETOOBIG naming both sizes, the worker and the link
 * live on), and a result of 4 GiB + 4096 bytes carrying a planted CALL
 * frame after the point where a 32-bit length would wrap: nothing runs.
 * With --raised the master allows the largest limit the frame length can
 * describe and the worker builds that result for real (4 GiB of memory).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

#include "rt_util.h"
#include "testutil.h"
#include "runtime/live.h"
#include "runtime/wire.h"

#define LIMIT   (1u << 20)
#define WRAPPED ((1ull << 32) + 4096)

/* u64 n: a result of n bytes, every byte 0xab. */
static int
filled(const void *arg, size_t len, dw_reply *r)
{
	uint64_t n = 0;
	if (len == 8)
		memcpy(&n, arg, 8);
	unsigned char *p = malloc(n ? n : 1);
	if (!p)
		return dw_reply_error(r, "no memory for %llu bytes",
		                      (unsigned long long)n);
	memset(p, 0xab, n);
	return dw_reply_take(r, p, n);
}
DW_REGISTER(filled)

/* The planted function: creates the file its argument names. */
static int
plant(const void *arg, size_t len, dw_reply *r)
{
	(void)r;
	char path[512];
	snprintf(path, sizeof path, "%.*s", (int)len, (const char *)arg);
	int fd = open(path, O_WRONLY | O_CREAT, 0600);
	if (fd >= 0)
		close(fd);
	return 0;
}
DW_REGISTER(plant)

/* A result of 4 GiB + 4096 bytes (untouched pages, except the first
 * two): were its length cut to 32 bits, the receiver would take 4096
 * bytes as the result and then read a DO call of "plant" on the path in
 * the argument. */
static int
planted(const void *arg, size_t len, dw_reply *r)
{
	unsigned char *p = calloc(1, WRAPPED);
	if (!p)
		return dw_reply_error(r, "no memory for the planted result");
	unsigned char *f = p + 4096, pre[4 + 5];
	wire_put_call(pre, WIRE_MODE_DO, "plant", 5);
	wire_put_hdr(f, WIRE_CALL, 77, (uint32_t)(sizeof pre + len));
	memcpy(f + WIRE_HDR, pre, sizeof pre);
	memcpy(f + WIRE_HDR + sizeof pre, arg, len);
	return dw_reply_take(r, p, WRAPPED);
}
DW_REGISTER(planted)

static int
worker_pid(int w)
{
	void *res;
	size_t n;
	int pid = -1;
	if (dw_remotecall_fetch(w, "whoami", NULL, 0, &res, &n) == DW_OK &&
	    n == 2 * sizeof(int))
		pid = ((int *)res)[1];
	free(res);
	return pid;
}

static int
fetch_big(int w, uint64_t n, void **res, size_t *len)
{
	return dw_remotecall_fetch(w, "filled", &n, 8, res, len);
}

static int
msg_has(const char *a, const char *b)
{
	const char *m = dw_errmsg();
	int ok = m && strstr(m, a) && (!b || strstr(m, b));
	if (!ok)
		fprintf(stderr, "message: %s\n", m ? m : "(none)");
	return ok;
}

/* Bad settings are refused with a message naming them; nothing starts. */
static void
test_settings(int *argc, char ***argv)
{
	const char *bad[] = {"12x", "100", "5G", "-1", "", "1k"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		setenv("DWORK_MAX_PAYLOAD", bad[i], 1);
		CHECK(dw_init(argc, argv) == DW_EINVAL);
		CHECK(msg_has("DWORK_MAX_PAYLOAD", "65536 to 4294967283"));
	}
	unsetenv("DWORK_MAX_PAYLOAD");
	/* the accounting's sampling: refused, never wrapped or taken as 0 */
	const char *us[] = {"abc",  "-5",       "99999999999999999999",
	                    "16us", "10000001", " 16"};
	for (size_t i = 0; i < sizeof us / sizeof *us; i++) {
		setenv("DWORK_ACCOUNT_SAMPLE_US", us[i], 1);
		CHECK(dw_init(argc, argv) == DW_EINVAL);
		CHECK(msg_has("DWORK_ACCOUNT_SAMPLE_US", "0 to 10000000"));
		CHECK(acct_sample_parse(us[i]) == -1);
	}
	unsetenv("DWORK_ACCOUNT_SAMPLE_US");
	CHECK(acct_sample_parse(NULL) == 16000);
	CHECK(acct_sample_parse("0") == 0);
	CHECK(acct_sample_parse("10000000") == 10000000000);
	dw_options o = {.max_payload = (size_t)5 << 30};
	CHECK(dw_init_opts(argc, argv, &o) == DW_EINVAL);
	CHECK(msg_has("dw_options.max_payload='5368709120'", NULL));
}

static void
test_results(int w)
{
	int pid = worker_pid(w);
	void *res;
	size_t n;
	REQUIRE(pid > 0);
	/* exactly the limit travels */
	CHECK(fetch_big(w, LIMIT, &res, &n) == DW_OK);
	CHECK(n == LIMIT && ((unsigned char *)res)[LIMIT - 1] == 0xab);
	free(res);
	/* one byte more fails that call only, decided by the worker */
	CHECK(fetch_big(w, LIMIT + 1, &res, &n) == DW_ETOOBIG);
	CHECK(msg_has("result of 1048577 bytes",
	              "limit of 1048576 bytes (DWORK_MAX_PAYLOAD"));
	CHECK(res == NULL && n == 0);
	CHECK(worker_pid(w) == pid);
	/* a kept result: the call fails at once, nothing is kept */
	uint64_t big_n = 3 * LIMIT;
	dw_future *f;
	CHECK(dw_remotecall_wait(w, "filled", &big_n, 8, &f) == DW_ETOOBIG);
	CHECK(msg_has("result of 3145728 bytes", "1048576"));
	CHECK(dw_remotecall(w, "filled", &big_n, 8, &f) == DW_OK);
	const void *r;
	CHECK(dw_future_fetch(f, &r, &n) == DW_ETOOBIG);
	dw_future_free(f);
	/* an argument over the limit never leaves the caller */
	char *arg = calloc(1, LIMIT);
	REQUIRE(arg);
	CHECK(dw_remotecall_fetch(w, "echo", arg, LIMIT, &res, &n) ==
	      DW_ETOOBIG);
	CHECK(msg_has("argument of 1048576 bytes", "limit of 1048568"));
	CHECK(dw_remotecall_fetch(w, "echo", arg, LIMIT - 8, &res, &n) ==
	      DW_OK);
	CHECK(n == LIMIT - 8);
	free(res);
	free(arg);
	CHECK(worker_pid(w) == pid);
}

static void
test_channels(int w)
{
	char *v = calloc(1, LIMIT);
	REQUIRE(v);
	for (int owner = 1; owner <= w; owner += w - 1) {
		dw_channel *ch;
		REQUIRE(dw_channel_new(owner, 2, &ch) == DW_OK);
		CHECK(dw_channel_put(ch, v, LIMIT) == DW_ETOOBIG);
		CHECK(msg_has("value of 1048576 bytes", "limit of"));
		CHECK(dw_channel_put(ch, v, 1000) == DW_OK);
		void *got;
		size_t n;
		CHECK(dw_channel_take(ch, &got, &n) == DW_OK && n == 1000);
		free(got);
		dw_channel_free(ch);
	}
	free(v);
}

/* The planted frame: the call fails cleanly and "plant" never runs. */
static void
test_planted(int w)
{
	char dir[256], flag[300];
	REQUIRE(mkdtemp(tu_tmp_template(dir, sizeof dir, "dw-limits")));
	snprintf(flag, sizeof flag, "%s/planted", dir);
	int pid = worker_pid(w);
	void *res;
	size_t n;
	CHECK(dw_remotecall_fetch(w, "planted", flag, strlen(flag), &res, &n) ==
	      DW_ETOOBIG);
	CHECK(msg_has("result of 4294971392 bytes", "exceeds the link's"));
	dw_future *f;
	CHECK(dw_remotecall_wait(w, "planted", flag, strlen(flag), &f) ==
	      DW_ETOOBIG);
	usleep(300 * 1000); /* a planted DO call would have run by now */
	struct stat st;
	CHECK(stat(flag, &st) < 0 && errno == ENOENT);
	CHECK(worker_pid(w) == pid);
	unlink(flag);
	rmdir(dir);
}

/* The largest limit: a real 4 GiB + 4096-byte result still fails. */
static void
test_raised(int w)
{
	void *res;
	size_t n;
	int pid = worker_pid(w);
	CHECK(fetch_big(w, WRAPPED, &res, &n) == DW_ETOOBIG);
	CHECK(
	    msg_has("result of 4294971392 bytes", "limit of 4294967283 bytes"));
	CHECK(worker_pid(w) == pid);
	CHECK(fetch_big(w, 3u << 20, &res, &n) == DW_OK && n == 3u << 20);
	free(res);
	test_planted(w);
}

int
main(int argc, char **argv)
{
	int raised = argc > 1 && !strcmp(argv[1], "--raised");
	if (!raised) /* a worker becomes one in its first dw_init */
		test_settings(&argc, &argv);
	dw_options o = {.max_payload = raised ? WIRE_PAYLOAD_CEIL : LIMIT};
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	int ids[1];
	REQUIRE(dw_addprocs(1, NULL, ids) == 1);
	if (raised) {
		test_raised(ids[0]);
	} else {
		test_results(ids[0]);
		test_channels(ids[0]);
		test_planted(ids[0]);
	}
	CHECK(dw_finalize() == DW_OK);
	return tu_report(raised ? "runtime_limits --raised" : "runtime_limits");
}
