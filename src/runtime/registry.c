/*
 * The function registry (names to functions, the same ids in every
 * process), replies (dw_reply), and running a registered function.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/call.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

static __thread int call_caller;
static __thread const char *call_name;
static __thread size_t call_name_len;
/* dw_everywhere_load is running constructors: dw_register is allowed. */
static __thread int call_loading;

/* ---- function registry ---- */

struct fnent {
	struct fnent *next;
	dw_fn fn;
	char name[];
};

static struct fnent *fns;
/* fns_lock serializes writers of fns (readers take no lock: entries are
 * only prepended, published with a release store); a leaf. */
static pthread_mutex_t fns_lock = PTHREAD_MUTEX_INITIALIZER;

DW_API int
dw_register(const char *name, dw_fn fn)
{
	size_t n = name ? strlen(name) : 0;
	if (!fn || n == 0 || n > WIRE_NAME_MAX)
		return rt_set_err(0,
		                  "dw_register: no function or a name of "
		                  "0 or over %d bytes",
		                  WIRE_NAME_MAX),
		       DW_EINVAL;
	if (rt.role != RT_NONE && !call_loading && !call_lookup(name, n) &&
	    strncmp(name, "dwork:", 6))
		return rt_set_err(
		           0,
		           "dw_register(\"%s\") after dw_init: workers "
		           "already running would not know it; register "
		           "before dw_init (DW_REGISTER), or put it in a "
		           "shared object loaded with "
		           "dw_everywhere_load",
		           name),
		       DW_ESTATE;
	pthread_mutex_lock(&fns_lock);
	int err = DW_OK;
	for (struct fnent *e = fns; e; e = e->next)
		if (!strcmp(e->name, name))
			err = e->fn == fn ? DW_OK : DW_EEXIST;
	struct fnent *e = NULL;
	if (err == DW_OK && !call_lookup(name, n) &&
	    !(e = malloc(sizeof *e + n + 1)))
		err = DW_ENOMEM;
	if (e) {
		memcpy(e->name, name, n + 1);
		e->fn = fn;
		e->next = fns;
		__atomic_store_n(&fns, e, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&fns_lock);
	if (e && rtr_on)
		rtr_label_function(name);
	return err;
}

void
call_set_loading(int on)
{
	call_loading = on;
}

/* Lock-free: entries are only ever prepended. */
dw_fn
call_lookup(const char *name, size_t len)
{
	for (struct fnent *e = __atomic_load_n(&fns, __ATOMIC_ACQUIRE); e;
	     e = e->next)
		if (strlen(e->name) == len && !memcmp(e->name, name, len))
			return e->fn;
	return NULL;
}

void
call_each_function(void (*fn)(const char *name))
{
	for (struct fnent *e = __atomic_load_n(&fns, __ATOMIC_ACQUIRE); e;
	     e = e->next)
		fn(e->name);
}

/* FNV-1a: the same id for the same name in every process. */
uint32_t
call_fn_id(const char *name, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 16777619u;
	return h ? h : 1;
}

DW_API uint32_t
dw_function_id(const char *name)
{
	return call_fn_id(name, strlen(name));
}

/* ---- replies ---- */

static void
reply_release(dw_reply *r)
{
	for (int i = 0; i < r->nkeep; i++)
		free(r->keep[i]);
	for (int i = 0; i < r->nmore; i++)
		free(r->more[i]);
	free(r->more);
	r->nkeep = r->nmore = 0;
	r->more = NULL;
}

/* Keeps p until the call ends; -1 (p freed) when out of memory. */
int
call_reply_hold(dw_reply *r, void *p)
{
	if (r->nkeep < 8) {
		r->keep[r->nkeep++] = p;
		return 0;
	}
	void **m = realloc(r->more, (size_t)(r->nmore + 1) * sizeof *m);
	if (!m) {
		free(p);
		return -1;
	}
	r->more = m;
	r->more[r->nmore++] = p;
	return 0;
}

void
call_set_caller(int pid)
{
	call_caller = pid;
}

int
call_caller_pid(void)
{
	return call_caller > 0 ? call_caller : rt.myid;
}

/* The running function's name into buf (empty outside one). */
const char *
call_current(char *buf, size_t len)
{
	snprintf(buf, len, "%.*s", (int)call_name_len,
	         call_name ? call_name : "");
	return buf;
}

DW_API int
dw_reply_set(dw_reply *r, const void *data, size_t len)
{
	void *p = malloc(len ? len : 1);
	if (!p)
		return DW_ENOMEM;
	if (len)
		memcpy(p, data, len);
	return dw_reply_take(r, p, len);
}

DW_API int
dw_reply_take(dw_reply *r, void *data, size_t len)
{
	if (r->owned)
		free(r->data);
	r->data = data;
	r->len = len;
	r->owned = 1;
	return DW_OK;
}

DW_API int
dw_reply_error(dw_reply *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof r->err, fmt, ap);
	va_end(ap);
	r->failed = 1;
	return -1;
}

int
call_is_carrier(const char *name, size_t len)
{
	return len > 6 && !memcmp(name, "dwork:", 6);
}

/* The function a call is for in the trace: a carrier's user function. */
uint32_t
call_event_id(const char *fn, size_t nl, const void *arg, size_t len)
{
	const unsigned char *p = arg;
	if (!call_is_carrier(fn, nl) || len < 2)
		return call_fn_id(fn, nl);
	size_t un = wire_get_u16(p);
	return un && un <= len - 2 ? call_fn_id((const char *)p + 2, un)
	                           : call_fn_id(fn, nl);
}

/* The user function a call runs (a carrier's inner one), kept so that
 * a worker's death can name what it was running. */
void
call_user_name(struct dw_future *f, const char *fn, size_t nl, const void *arg,
               size_t len)
{
	const unsigned char *p = arg;
	size_t un = call_is_carrier(fn, nl) && len >= 2 ? wire_get_u16(p) : 0;
	const char *s = fn;
	if (un && un <= len - 2) {
		s = (const char *)p + 2;
		nl = strnlen(s, un);
	}
	/* what "%.*s" would print, without snprintf's 400 instructions on
	 * every call */
	if (nl >= sizeof f->fn)
		nl = sizeof f->fn - 1;
	memcpy(f->fn, s, nl);
	f->fn[nl] = 0;
}

/*
 * Runs a registered function; on failure *msg is set.  Every run of a
 * user function, whatever carried it, passes here: it is Running and
 * carries its name (DW_EV_FUNCTION).  A carrier (dwork:pmap, …) is the
 * runtime's own work around the user functions it runs: Overhead, and
 * the carrier marks itself with DW_EV_BATCH.
 */
int
call_run(const struct wire_call *c, dw_reply *r)
{
	dw_fn fn = call_lookup(c->name, c->name_len);
	memset(r, 0, sizeof *r);
	if (!fn) {
		snprintf(r->err, sizeof r->err,
		         "function '%.*s' is not registered", (int)c->name_len,
		         c->name);
		return -1;
	}
	int carrier = call_is_carrier(c->name, c->name_len);
	uint32_t id = carrier ? 0 : call_fn_id(c->name, c->name_len);
	/* the state and the function's name in one record each way */
	uint32_t ev = id ? DW_EV_FUNCTION : 0;
	int how = rtr_run_begin(
	    carrier ? DWT_STATE_OVERHEAD : DWT_STATE_RUNNING, ev, id);
	const char *oname = call_name;
	size_t olen = call_name_len;
	if (!carrier)
		call_name = c->name, call_name_len = c->name_len;
	int rc = fn(c->arg, c->arg_len, r);
	call_name = oname, call_name_len = olen;
	reply_release(r);
	rtr_run_end(how, ev);
	if (rc != 0 && !r->err[0])
		snprintf(r->err, sizeof r->err, "function '%.*s' failed (%d)",
		         (int)c->name_len, c->name, rc);
	return rc != 0 ? -1 : 0;
}

int
call_invoke(const char *name, size_t nlen, const void *arg, size_t len,
            void **res, size_t *reslen, char *err, size_t errlen)
{
	struct wire_call c = {.mode = WIRE_MODE_FETCH,
	                      .name_len = (uint16_t)nlen,
	                      .name = name,
	                      .arg = arg,
	                      .arg_len = len};
	dw_reply r;
	*res = NULL;
	*reslen = 0;
	if (call_run(&c, &r) != 0) {
		snprintf(err, errlen, "%s", r.err);
		if (r.owned)
			free(r.data);
		return -1;
	}
	if (r.owned) {
		*res = r.data;
		*reslen = r.len;
	}
	return 0;
}
