/*
 * The calls that bring the Julia ports to their length (issue 18, part
 * 2), through real workers: dw_main (this test's own main runs in it;
 * children show the arguments it leaves, a failed dw_init, exit() in the
 * body, and no worker left behind), dw_worker_next over a changing list,
 * dw_future_println's text against Julia's for known values, the
 * runtime's Base (dwork_fill, dwork_sum, dwork_println: results, limits
 * and errors), and futures passed where a typed function wants a value:
 * fetched across workers, their failures and mismatches named.
 */
#include <fcntl.h>
#include <math.h>
#include <sys/wait.h>

#include "rt_util.h"
#include "testutil.h"

DW_FUNCTIONF(twice, d, x)
{
	return dw_reply_pack(r, "d", 2 * x);
}

DW_FUNCTIONF(blen, b, raw, s, tag) /* the bytes of a resolved 'b' */
{
	int64_t s = 0;
	for (size_t i = 0; i < raw.n; i++)
		s += ((const unsigned char *)raw.p)[i];
	return dw_reply_pack(r, "ls", s, tag);
}

static void
test_worker_next(void)
{
	CHECK(dw_worker_next(0) == 1); /* no workers: the master */
	CHECK(dw_worker_next(1) == 0);
	REQUIRE(dw_addprocs(3, NULL, NULL) == 3);
	int seen[8], n = 0;
	for (int w = dw_worker_next(0); w > 0 && n < 8; w = dw_worker_next(w))
		seen[n++] = w;
	CHECK(n == 3 && seen[0] == 2 && seen[1] == 3 && seen[2] == 4);
	CHECK(dw_worker_next(-7) == 2);
	CHECK(dw_worker_next(4) == 0);
	int three = 3;
	REQUIRE(dw_rmprocs(&three, 1, 0) == DW_OK);
	CHECK(dw_worker_next(2) == 4); /* the list as it is now */
}

/* Runs fn with stdout sent to a file, whose text (up to len) is in buf;
 * waits up to 5 s for want to appear (lines forwarded from workers). */
static int
captured(void (*fn)(void), char *buf, size_t len, const char *want)
{
	char path[700];
	snprintf(path, sizeof path, "%s/out", tu_tmpdir("brief"));
	fflush(stdout);
	int saved = dup(1), fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	REQUIRE(saved >= 0 && fd >= 0);
	dup2(fd, 1);
	fn();
	fflush(stdout);
	size_t n = 0;
	for (int i = 0; i < 500; i++, usleep(10000)) {
		n = (size_t)pread(fd, buf, len - 1, 0);
		buf[n] = 0;
		if (!want || strstr(buf, want))
			break;
	}
	dup2(saved, 1);
	close(saved), close(fd);
	*strrchr(path, '/') = 0;
	tu_rmtree(path);
	return (int)n;
}

static int pr_rc[8];

/* Prints the future of echo over the values fmt names. */
#define PRINT_ECHO(k, ...)                                                     \
	do {                                                                   \
		dw_future *f_;                                                 \
		pr_rc[k] = dw_remotecallf(2, "echo", &f_, __VA_ARGS__);        \
		if (pr_rc[k] == DW_OK)                                         \
			pr_rc[k] = dw_future_println(f_), dw_future_free(f_);  \
	} while (0)

static void
print_values(void)
{
	double fl[] = {0.5,  2.0,      1e6,       0.0001, 1e-5,
	               -0.0, 123456.0, 1234567.0, 1.0 / 3};
	int64_t li[2] = {1, 2};
	unsigned char raw[2] = {1, 0xff};
	PRINT_ECHO(0, "D", fl, (size_t)9);
	PRINT_ECHO(1, "ldsL", (int64_t)7, 1.5, "a\"b", li, (size_t)2);
	PRINT_ECHO(2, "");
	PRINT_ECHO(3, "s", "plain text");
	PRINT_ECHO(4, "b", raw, (size_t)2);
	PRINT_ECHO(5, "ddd", INFINITY, -INFINITY, NAN);
}

static void
test_println(void)
{
	char out[2048];
	captured(print_values, out, sizeof out, NULL);
	for (int k = 0; k < 6; k++)
		CHECK(pr_rc[k] == DW_OK);
	/* what Julia's println prints for the same values */
	const char *want = "[0.5, 2.0, 1.0e6, 0.0001, 1.0e-5, -0.0, 123456.0, "
	                   "1.234567e6, 0.3333333333333333]\n"
	                   "(7, 1.5, \"a\\\"b\", [1, 2])\n"
	                   "nothing\n"
	                   "plain text\n"
	                   "UInt8[0x01, 0xff]\n"
	                   "(Inf, -Inf, NaN)\n";
	CHECK(!strcmp(out, want));
	if (strcmp(out, want))
		fprintf(stderr, "printed:\n%s", out);
	/* a result of the byte API is not typed values */
	dw_future *f;
	REQUIRE(dw_remotecall(2, "echo", "abc", 3, &f) == DW_OK);
	CHECK(dw_future_println(f) == DW_EFORMAT);
	CHECK(strstr(dw_errmsg(), "not typed values (3 bytes") != NULL);
	dw_future_free(f);
	CHECK(dw_future_println(NULL) == DW_EINVAL);
	CHECK(strstr(dw_errmsg(), "no future") != NULL);
}

static void
remote_print(void)
{
	int64_t li[2] = {1, 2};
	pr_rc[0] = dw_remotecall_fetchf(4, "dwork_println", "sdL|", "x=", 1.5,
	                                li, (size_t)2);
}

static void
test_base(void)
{
	double *d = NULL;
	int64_t *l = NULL, s = 0;
	size_t n = 0;
	CHECK(dw_remotecall_fetchf(2, "dwork_fill", "di|D", 0.5, 3, &d, &n) ==
	      DW_OK);
	CHECK(n == 3 && d && d[0] == 0.5 && d[2] == 0.5);
	dw_free(d);
	CHECK(dw_remotecall_fetchf(4, "dwork_fill", "li|L", (int64_t)7, 2, &l,
	                           &n) == DW_OK);
	CHECK(n == 2 && l && l[0] == 7 && l[1] == 7);
	dw_free(l);
	CHECK(dw_remotecall_fetchf(2, "dwork_fill", "di|D", 1.0, 0, &d, &n) ==
	          DW_OK &&
	      n == 0);
	dw_free(d);
	CHECK(dw_remotecall_fetchf(2, "dwork_fill", "di|D", 1.0, -1, &d, &n) ==
	      DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "dwork_fill: n = -1 is not in 0..67108864"));
	CHECK(dw_remotecall_fetchf(2, "dwork_fill", "si|D", "x", 2, &d, &n) ==
	      DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "argument 1 of 'dwork_fill': expected "
	                          "float64, got str"));

	int64_t v[3] = {1, 2, 3}, big[2] = {INT64_MAX, 1};
	double dv[2] = {0.5, 0.25}, ds = 0;
	CHECK(dw_remotecall_fetchf(2, "dwork_sum", "L|l", v, (size_t)3, &s) ==
	          DW_OK &&
	      s == 6);
	CHECK(dw_remotecall_fetchf(2, "dwork_sum", "D|d", dv, (size_t)2, &ds) ==
	          DW_OK &&
	      ds == 0.75);
	CHECK(dw_remotecall_fetchf(2, "dwork_sum", "L|l", v, (size_t)0, &s) ==
	          DW_OK &&
	      s == 0);
	CHECK(dw_remotecall_fetchf(2, "dwork_sum", "L|l", big, (size_t)2, &s) ==
	      DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "overflows an int64 at element 2"));
	CHECK(dw_remotecall_fetchf(2, "dwork_sum", "s|l", "x", &s) ==
	      DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "expected array of float64, got str"));
	/* sum(fetch(r)) of integers: the future's value read as they are */
	dw_future *f;
	REQUIRE(dw_remotecallf(2, "dwork_fill", &f, "li", (int64_t)7, 2) ==
	        DW_OK);
	CHECK(dw_remotecall_fetchf(4, "dwork_sum", "F|l", f, &s) == DW_OK &&
	      s == 14);
	dw_future_free(f);

	char out[1024];
	captured(remote_print, out, sizeof out, "x=1.5[1, 2]");
	CHECK(pr_rc[0] == DW_OK);
	if (pr_rc[0] != DW_OK)
		fprintf(stderr, "dwork_println: %s\n", dw_errmsg());
	CHECK(strstr(out, "From worker 4: x=1.5[1, 2]\n") != NULL);
	void *res;
	size_t rn;
	CHECK(dw_remotecall_fetch(2, "dwork_println", "raw", 3, &res, &rn) ==
	      DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "dwork_println: its arguments are not typed "
	                          "values (3 bytes"));
}

static void
test_resolve(void)
{
	dw_future *f, *g;
	double dv[2] = {0.5, 0.25}, y = 0;
	int64_t v[2] = {1, 2};
	char *tag = NULL;
	/* a value computed on 2, given to a function on 4: fetched there */
	REQUIRE(dw_remotecallf(2, "dwork_sum", &f, "D", dv, (size_t)2) ==
	        DW_OK);
	CHECK(dw_remotecall_fetchf(4, "twice", "F|d", f, &y) == DW_OK &&
	      y == 1.5);
	CHECK(dw_remotecall_fetchf(2, "twice", "F|d", f, &y) == DW_OK &&
	      y == 1.5);
	CHECK(dw_future_fetchf(f, "d", &y) == DW_OK && y == 0.75); /* ours */
	dw_future_free(f);
	/* 'b' points into the fetched value, valid while the call runs */
	REQUIRE(dw_remotecallf(2, "echo", &f, "b", "\x01\x02\x03", (size_t)3) ==
	        DW_OK);
	int64_t s = 0;
	CHECK(dw_remotecall_fetchf(4, "blen", "Fs|ls", f, "t", &s, &tag) ==
	          DW_OK &&
	      s == 6 && tag && !strcmp(tag, "t"));
	dw_free(tag);
	dw_future_free(f);
	/* the wrong type, two values, a failed call: each named */
	REQUIRE(dw_remotecallf(2, "dwork_sum", &f, "L", v, (size_t)2) == DW_OK);
	CHECK(dw_remotecall_fetchf(4, "twice", "F|d", f, &y) == DW_EREMOTE);
	CHECK(strstr(dw_errmsg(),
	             "argument 1 of 'twice': expected float64, got integer"));
	dw_future_free(f);
	REQUIRE(dw_remotecallf(2, "echo", &f, "dd", 1.0, 2.0) == DW_OK);
	CHECK(dw_remotecall_fetchf(4, "twice", "F|d", f, &y) == DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "argument 1 of 'twice': the future given for "
	                          "float64 holds several or no values"));
	dw_future_free(f);
	REQUIRE(dw_remotecallf(2, "dwork_fill", &g, "di", 1.0, -3) == DW_OK);
	CHECK(dw_remotecall_fetchf(4, "twice", "F|d", g, &y) == DW_EREMOTE);
	CHECK(strstr(dw_errmsg(), "argument 1 of 'twice': fetching the future "
	                          "given for float64: "));
	CHECK(strstr(dw_errmsg(), "n = -3 is not in"));
	dw_future_free(g);
	/* only a remote function's arguments resolve: dw_unpack does not */
	void *buf;
	size_t bl;
	REQUIRE(dw_remotecallf(2, "echo", &f, "d", 1.0) == DW_OK);
	REQUIRE(dw_pack(2, &buf, &bl, "F", f) == DW_OK);
	CHECK(dw_unpack(buf, bl, "d", &y) == DW_EFORMAT);
	dw_free(buf);
	dw_future_free(f);
}

/* Children: what dw_main leaves the body, and its exits. */
static void
child_body(int argc, char **argv)
{
	printf("workers %d args", dw_nworkers());
	for (int i = 1; i < argc; i++)
		printf(" %s", argv[i]);
	printf(" pids");
	for (int w = dw_worker_next(0); w > 0; w = dw_worker_next(w)) {
		int64_t p = 0;
		dw_exit_if(dw_remotecall_fetchf(w, "mypid", "|l", &p));
		printf(" %lld", (long long)p);
	}
	printf("\n");
	fflush(stdout);
	if (argc > 2 && !strcmp(argv[2], "exit3"))
		exit(3);
}

DW_FUNCTION(mypid)
{
	return dw_reply_pack(r, "l", (int64_t)getpid());
}

static int
gone(pid_t p)
{
	for (int i = 0; i < 500; i++, usleep(10000))
		if (kill(p, 0) != 0)
			return 1;
	return 0;
}

/* Runs this test as a child with args; its stdout in out, stderr in
 * err, returns its wait status. */
static int
child(const char *self, const char *args, char *out, size_t ol, char *err,
      size_t el)
{
	const char *d = tu_tmpdir("briefmain");
	char cmd[1600], path[700];
	snprintf(path, sizeof path, "%s/err", d);
	snprintf(cmd, sizeof cmd, "DWORK_TRACE=0 %s --main-child %s 2>%s", self,
	         args, path);
	FILE *p = popen(cmd, "r");
	REQUIRE(p);
	out[fread(out, 1, ol - 1, p)] = 0;
	int st = pclose(p);
	FILE *e = fopen(path, "r");
	err[0] = 0;
	if (e) {
		err[fread(err, 1, el - 1, e)] = 0;
		fclose(e);
	}
	tu_rmtree(d);
	return st;
}

static void
test_main(const char *self)
{
	char out[512], err[512];
	long long p1 = 0, p2 = 0;
	/* -p 2 is dw_init's; the body gets the rest */
	int st = child(self, "-p 2 keep", out, sizeof out, err, sizeof err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(!strncmp(out, "workers 2 args --main-child keep pids ", 38));
	CHECK(sscanf(out + 38, "%lld %lld", &p1, &p2) == 2);
	CHECK(p1 > 0 && gone((pid_t)p1) && p2 > 0 && gone((pid_t)p2));
	/* exit(3) in the body: that status, workers removed by atexit */
	st = child(self, "-p 1 exit3", out, sizeof out, err, sizeof err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
	CHECK(sscanf(out, "workers 1 args --main-child exit3 pids %lld", &p1) ==
	      1);
	CHECK(p1 > 0 && gone((pid_t)p1));
	/* a failed dw_init: its message, status 1, the body never runs */
	st = child(self, "-p lots", out, sizeof out, err, sizeof err);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CHECK(out[0] == 0);
	CHECK(strstr(err, "runtime_brief_test: ") && strstr(err, "lots"));
	if (!strstr(err, "lots"))
		fprintf(stderr, "dw_init's message: %s\n", err);
}

static int ran;
static const char *self;

static void
body(int argc, char **argv)
{
	(void)argc, (void)argv;
	test_worker_next();
	test_println();
	test_base();
	test_resolve();
	test_main(self);
	ran = 1;
}

int
main(int argc, char **argv)
{
	self = argv[0];
	if (argc > 1 && !strcmp(argv[1], "--main-child"))
		return dw_main(&argc, &argv, child_body);
	CHECK(dw_main(&argc, &argv, body) == 0);
	CHECK(ran);
	return tu_report("runtime_brief");
}
