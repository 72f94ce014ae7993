/* Helpers for the runtime tests: functions every worker registers. */
#ifndef DW_RT_UTIL_H
#define DW_RT_UTIL_H

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwork/dwork.h>

static int
echo(const void *arg, size_t len, dw_reply *r)
{
	return dw_reply_set(r, arg, len);
}
DW_REGISTER(echo)

static int
whoami(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	int v[2] = {dw_myid(), (int)getpid()};
	return dw_reply_set(r, v, sizeof v);
}
DW_REGISTER(whoami)

static int
fails(const void *arg, size_t len, dw_reply *r)
{
	return dw_reply_error(r, "it failed on purpose (%.*s)", (int)len,
	                      (const char *)arg);
}
DW_REGISTER(fails)

static int
sleeper(const void *arg, size_t len, dw_reply *r)
{
	int ms = 0;
	if (len == sizeof ms)
		memcpy(&ms, arg, sizeof ms);
	usleep((useconds_t)ms * 1000u);
	return dw_reply_set(r, &ms, sizeof ms);
}
DW_REGISTER(sleeper)

static int counter;

static int
bump(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	(void)r;
	__atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
	return 0;
}
DW_REGISTER(bump)

static int
get_counter(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	int v = __atomic_load_n(&counter, __ATOMIC_RELAXED);
	return dw_reply_set(r, &v, sizeof v);
}
DW_REGISTER(get_counter)

static int
say(const void *arg, size_t len, dw_reply *r)
{
	(void)r;
	printf("%.*s\n", (int)len, (const char *)arg);
	fflush(stdout);
	return 0;
}
DW_REGISTER(say)

/* VmRSS of this process in KiB. */
static int
rss_kb(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return dw_reply_set(r, &kb, sizeof kb);
}
DW_REGISTER(rss_kb)

static int
big(const void *arg, size_t len, dw_reply *r)
{
	size_t n = 0;
	if (len == sizeof n)
		memcpy(&n, arg, sizeof n);
	unsigned char *p = malloc(n ? n : 1);
	if (!p)
		return dw_reply_error(r, "out of memory");
	for (size_t i = 0; i < n; i += 4096)
		p[i] = (unsigned char)(i >> 12);
	return dw_reply_take(r, p, n);
}
DW_REGISTER(big)

static int
until_interrupted(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	for (int i = 0; i < 500 && !dw_interrupted(); i++)
		usleep(10000);
	const char *what = dw_interrupted() ? "interrupted" : "not interrupted";
	return dw_reply_set(r, what, strlen(what));
}
DW_REGISTER(until_interrupted)

/* Interrupts worker `id` until f (a call of until_interrupted on it)
 * ends, and returns how it ended: an interrupt that arrives before the
 * call has started is not for it (dw_interrupt's contract), and on a
 * loaded machine the call may start late, so one interrupt after a
 * fixed sleep could miss it.  Gives up after about 10 s. */
static inline int
interrupt_until_done(int id, dw_future *f)
{
	int rc = DW_ETIMEDOUT;
	for (int i = 0; i < 50 && rc == DW_ETIMEDOUT; i++) {
		if (dw_interrupt(&id, 1) != DW_OK)
			return DW_ENOTFOUND;
		rc = dw_future_wait_timeout(f, 200);
	}
	return rc;
}

static int
cwd(const void *arg, size_t len, dw_reply *r)
{
	(void)arg;
	(void)len;
	char buf[1024];
	if (!getcwd(buf, sizeof buf))
		return dw_reply_error(r, "getcwd failed");
	const char *v = getenv("RT_TEST_VAR");
	char out[1200];
	snprintf(out, sizeof out, "%s|%s", buf, v ? v : "");
	return dw_reply_set(r, out, strlen(out));
}
DW_REGISTER(cwd)

#endif
