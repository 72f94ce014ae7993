/*
 * The calling thread's last error (dw_errmsg, dw_errpid) and the
 * runtime's log line: services every module calls, so they sit below
 * all of them and call nothing of the runtime.
 */
#include <stdarg.h>
#include <stdio.h>

#include "runtime/rt.h"

static __thread char err_msg[600];
static __thread int err_pid;

void
rt_set_err(int pid, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof err_msg, fmt, ap);
	va_end(ap);
	err_pid = pid;
}

void
rt_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("dwork: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

DW_API const char *
dw_errmsg(void)
{
	return err_msg;
}

DW_API int
dw_errpid(void)
{
	return err_pid;
}
