/*
 * dw_everywhere_load: a shared object loaded in every process and in the
 * workers that join later (Julia's @everywhere include).  Its functions
 * register themselves from its constructors while the load runs, the one
 * time dw_register is allowed after dw_init.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/rt.h"

#define LOAD_FN  "dwork_load"
#define LOAD_MAX 64

/* Paths loaded in this process; in the master also what joiners get. */
static char *load_paths[LOAD_MAX];
static int load_n;
/* load_lock guards load_paths and load_n; a leaf. */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static int
load_known(const char *path)
{
	for (int i = 0; i < load_n; i++)
		if (!strcmp(load_paths[i], path))
			return 1;
	return 0;
}

static int
load_init(void *h, const char *path, char *why, size_t wl)
{
	int (*init)(void);
	void *sym = dlsym(h, "dw_load_init");
	if (!sym)
		return DW_OK;
	memcpy(&init, &sym, sizeof init);
	call_set_loading(1);
	int rc = init();
	call_set_loading(0);
	if (rc != 0)
		snprintf(why, wl, "%s: dw_load_init returned %d", path, rc);
	return rc != 0 ? DW_EREMOTE : DW_OK;
}

/* Loads path here, once; the message names the host. */
static int
load_here(const char *path, char *why, size_t wl)
{
	char host[256] = "?";
	gethostname(host, sizeof host - 1);
	pthread_mutex_lock(&load_lock);
	int err = DW_OK;
	if (load_known(path))
		goto out;
	if (access(path, R_OK) != 0) {
		snprintf(why, wl,
		         "on host %s: %s is missing (%s); dw_everywhere_load "
		         "expects the file at the same path on every host",
		         host, path, strerror(errno));
		err = DW_ENOENT;
		goto out;
	}
	call_set_loading(1);
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	call_set_loading(0);
	if (!h) {
		snprintf(why, wl, "on host %s: dlopen: %s", host, dlerror());
		err = DW_EIO;
	} else if ((err = load_init(h, path, why, wl)) == DW_OK &&
	           load_n < LOAD_MAX && !(load_paths[load_n] = strdup(path))) {
		err = DW_ENOMEM;
	} else if (err == DW_OK) {
		load_n++;
	}
out:
	pthread_mutex_unlock(&load_lock);
	return err;
}

static int
load_remote(const void *arg, size_t len, dw_reply *r)
{
	char path[4096], why[1024];
	if (len == 0 || len >= sizeof path || memchr(arg, 0, len))
		return dw_reply_error(r, "dwork_load: a path of %zu bytes",
		                      len);
	memcpy(path, arg, len);
	path[len] = 0;
	return load_here(path, why, sizeof why) == DW_OK
	           ? 0
	           : dw_reply_error(r, "%s", why);
}

static void __attribute__((constructor)) load_register(void)
{
	dw_register(LOAD_FN, load_remote);
}

/* Loads path on worker id; appends "process N: why" to msg on failure. */
static int
load_on(int id, const char *path, char *msg, size_t ml, int timeout_ms)
{
	void *res = NULL;
	size_t rl = 0;
	int err = dw_remotecall_fetch_timeout(id, LOAD_FN, path, strlen(path),
	                                      &res, &rl, timeout_ms);
	free(res);
	if (err != DW_OK) {
		size_t o = strlen(msg);
		snprintf(msg + o, ml - o, "%s%s", o ? "; " : "", dw_errmsg());
	}
	return err;
}

DW_API int
dw_everywhere_load(const char *path)
{
	return dw_everywhere_load_timeout(path, -1);
}

DW_API int
dw_everywhere_load_timeout(const char *path, int timeout_ms)
{
	if (rt.role != RT_MASTER)
		return rt_set_err(0, "dw_everywhere_load: only the master "
		                     "loads code everywhere (after dw_init)"),
		       DW_ESTATE;
	if (!path || !*path || strlen(path) >= 4096)
		return rt_set_err(0, "dw_everywhere_load: no path"), DW_EINVAL;
	char why[1024], msg[4096] = "";
	uint64_t t0 = rt_now_ms();
	int first = load_here(path, why, sizeof why);
	if (first != DW_OK)
		snprintf(msg, sizeof msg, "process %d: %s", rt.myid, why);
	int ids[1024];
	int n = first == DW_OK ? dw_workers(ids, 1024) : 0; /* each worker */
	for (int i = 0; i < n; i++) {
		if (ids[i] == rt.myid)
			continue;
		uint64_t used = rt_now_ms() - t0;
		int left = timeout_ms < 0 ? -1
		           : used >= (uint64_t)timeout_ms
		               ? 0
		               : (int)(timeout_ms - used);
		int err = load_on(ids[i], path, msg, sizeof msg, left);
		if (err != DW_OK && first == DW_OK)
			first = err;
	}
	if (first != DW_OK)
		rt_set_err(0, "dw_everywhere_load(%s): %s", path, msg);
	return first;
}

int
load_joined(int *ids, int n, char *msg, size_t ml)
{
	int kept = 0;
	pthread_mutex_lock(&load_lock);
	int np = load_n;
	pthread_mutex_unlock(&load_lock);
	for (int i = 0; i < n; i++) {
		int err = DW_OK;
		for (int k = 0; k < np && err == DW_OK; k++)
			err = load_on(ids[i], load_paths[k], msg, ml, -1);
		if (err == DW_OK)
			ids[kept++] = ids[i];
		else
			dw_rmprocs(&ids[i], 1, 2000);
	}
	return kept;
}
