/* dw_init, dw_finalize, and rt_attach: the one file that names every
 * module (the services they share are below them: rterr.c, ...). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "runtime/live.h"
#include "runtime/rt.h"
#include "runtime/optsize.h"
#include "runtime/call.h"
#include "runtime/work.h"
#include "runtime/rtrace.h"
#include "runtime/tls.h"

struct rt rt = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER,
    .jobs_cv = PTHREAD_COND_INITIALIZER,
    .epfd = -1,
    .evfd = -1,
    .tfd = -1,
};

/* "N" (1..4096) or "auto"; -1 when invalid. */
static int
init_parse_procs(const char *s)
{
	if (!strcmp(s, "auto")) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		return n > 0 ? (int)n : 1;
	}
	char *end;
	errno = 0;
	long n = strtol(s, &end, 10);
	if (errno || end == s || *end || n < 0 || n > 4096 ||
	    !isdigit((unsigned char)s[0]))
		return -1;
	return (int)n;
}

/* Takes -p N, --procs N, --procs=N out of argv. */
static int
init_take_procs(int *argc, char ***argv, int *procs)
{
	char **v = *argv;
	int j = 1;
	for (int i = 1; i < *argc; i++) {
		const char *val = NULL;
		if ((!strcmp(v[i], "-p") || !strcmp(v[i], "--procs")) &&
		    i + 1 < *argc)
			val = v[++i];
		else if (!strncmp(v[i], "--procs=", 8))
			val = v[i] + 8;
		else {
			v[j++] = v[i];
			continue;
		}
		if ((*procs = init_parse_procs(val)) < 0) {
			rt_set_err(0,
			           "-p '%s' is not valid: expected a count "
			           "from 0 to 4096 or 'auto'",
			           val);
			return DW_EINVAL;
		}
	}
	v[j] = NULL;
	*argc = j;
	return DW_OK;
}

static void
init_cookie(void)
{
	unsigned char r[16];
	if (getrandom(r, sizeof r, 0) != sizeof r) {
		uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
		memcpy(r, &t, 8);
		memcpy(r + 8, &t, 8);
	}
	for (int i = 0; i < 16; i++)
		snprintf(rt.cookie + 2 * i, 3, "%02x", r[i]);
}

static void
init_defaults(const dw_options *o)
{
	if (o)
		rt.opts = *o;
	if (rt.opts.executors <= 0)
		rt.opts.executors = 1;
	if (rt.opts.heartbeat_ms <= 0)
		rt.opts.heartbeat_ms = 1000;
	if (rt.opts.heartbeat_timeout_ms <= 0)
		rt.opts.heartbeat_timeout_ms = 10000;
	if (!rt.opts.bind_addr)
		rt.opts.bind_addr = "127.0.0.1";
	if (rt.opts.clock_sync_ms <= 0)
		rt.opts.clock_sync_ms = 10000;
}

/* "N", "Nk", "NM" or "NG" (powers of 1024); -1 when malformed. */
static int
init_parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s || errno || *s == '-')
		return -1;
	unsigned shift = 0;
	if (*end == 'k' || *end == 'K')
		shift = 10;
	else if (*end == 'm' || *end == 'M')
		shift = 20;
	else if (*end == 'g' || *end == 'G')
		shift = 30;
	if (shift)
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* The link limit: dw_options.max_payload, else DWORK_MAX_PAYLOAD, else
 * 1 GiB; workers get it in CONFIG. */
static int
init_payload_limit(void)
{
	uint64_t v = rt.opts.max_payload;
	const char *src = "dw_options.max_payload";
	const char *env = getenv("DWORK_MAX_PAYLOAD");
	char shown[64];
	snprintf(shown, sizeof shown, "%llu", (unsigned long long)v);
	if (!v && env) {
		src = "DWORK_MAX_PAYLOAD";
		snprintf(shown, sizeof shown, "%.40s", env);
		if (init_parse_size(env, &v) < 0 || v == 0)
			v = UINT64_MAX; /* refused below */
	}
	if (!v)
		v = WIRE_MAX_PAYLOAD;
	if (v < WIRE_PAYLOAD_FLOOR || v > WIRE_PAYLOAD_CEIL) {
		rt_set_err(0,
		           "%s='%s' is not valid: expected a byte count "
		           "(suffix k, M or G) from %u to %u",
		           src, shown, WIRE_PAYLOAD_FLOOR, WIRE_PAYLOAD_CEIL);
		return DW_EINVAL;
	}
	conn_max_payload = (uint32_t)v;
	return DW_OK;
}

/* One flow-control bound: the field, else the variable, else 256 MiB;
 * at least 1 MiB (smaller bounds would throttle ordinary calls). */
static int
init_flow_one(size_t field, const char *fname, const char *var, uint64_t *out)
{
	uint64_t v = field;
	const char *src = fname, *env = getenv(var);
	char shown[64];
	snprintf(shown, sizeof shown, "%zu", field);
	if (!v && env && *env) {
		src = var;
		snprintf(shown, sizeof shown, "%.40s", env);
		if (init_parse_size(env, &v) < 0 || v == 0)
			v = 1; /* refused below */
	}
	if (!v)
		v = FLOW_DEFAULT;
	if (v < FLOW_FLOOR) {
		rt_set_err(0,
		           "%s='%s' is not valid: expected a byte count "
		           "(suffix k, M or G) of at least %llu",
		           src, shown, (unsigned long long)FLOW_FLOOR);
		return DW_EINVAL;
	}
	*out = v;
	return DW_OK;
}

static int
init_flow(void)
{
	int err =
	    init_flow_one(rt.opts.job_queue_bytes, "dw_options.job_queue_bytes",
	                  "DWORK_JOB_QUEUE", &conn_job_limit);
	if (err == DW_OK)
		err = init_flow_one(rt.opts.send_queue_bytes,
		                    "dw_options.send_queue_bytes",
		                    "DWORK_SEND_QUEUE", &conn_send_limit);
	return err;
}

/* DWORK_TLS=1 turns TLS on when the options do not. */
static int
init_tls(void)
{
	const char *env = getenv("DWORK_TLS");
	if (rt.opts.tls || !env || !*env || !strcmp(env, "0"))
		return DW_OK;
	if (strcmp(env, "1") != 0) {
		rt_set_err(0, "DWORK_TLS='%s' is not valid: expected 0 or 1",
		           env);
		return DW_EINVAL;
	}
	rt.opts.tls = 1;
	return DW_OK;
}

/* DWORK_HEARTBEAT_MS and DWORK_HEARTBEAT_TIMEOUT_MS override the
 * options, so a deployment can tune liveness without rebuilding. */
static int
init_env_ms(const char *name, int *out)
{
	const char *s = getenv(name);
	if (!s)
		return DW_OK;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || !isdigit((unsigned char)s[0]) ||
	    v < 10 || v > 3600000) {
		rt_set_err(0,
		           "%s='%s' is not valid: expected milliseconds from "
		           "10 to 3600000",
		           name, s);
		return DW_EINVAL;
	}
	*out = (int)v;
	return DW_OK;
}

static int
init_heartbeat(void)
{
	int err = init_env_ms("DWORK_HEARTBEAT_MS", &rt.opts.heartbeat_ms);
	if (err == DW_OK)
		err = init_env_ms("DWORK_HEARTBEAT_TIMEOUT_MS",
		                  &rt.opts.heartbeat_timeout_ms);
	if (err == DW_OK &&
	    rt.opts.heartbeat_timeout_ms <= rt.opts.heartbeat_ms) {
		rt_set_err(0,
		           "the heartbeat timeout (%d ms) must be longer than "
		           "the heartbeat period (%d ms)",
		           rt.opts.heartbeat_timeout_ms, rt.opts.heartbeat_ms);
		err = DW_EINVAL;
	}
	return err;
}

/* DWORK_ACCOUNT_SAMPLE_US is read as the library loads (acctbatch.c);
 * a value not valid is refused here rather than taken as another. */
static int
init_sample(void)
{
	const char *s = getenv("DWORK_ACCOUNT_SAMPLE_US");
	if (acct_sample_parse(s) >= 0)
		return DW_OK;
	rt_set_err(0,
	           "DWORK_ACCOUNT_SAMPLE_US='%.40s' is not valid: expected "
	           "whole microseconds from 0 to %u",
	           s, ACCT_SAMPLE_US_MAX);
	return DW_EINVAL;
}

/* Each local worker costs the master four descriptors (its link, stdin,
 * stdout, stderr): the soft limit goes up to the hard one so that
 * thousands of workers fit. */
static void
init_raise_nofile(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static void
init_atexit(void)
{
	dw_finalize();
}

static int
init_procs(int *argc, char ***argv, int *procs)
{
	const char *env = getenv("DWORK_PROCS");
	if (env && (*procs = init_parse_procs(env)) < 0) {
		rt_set_err(0,
		           "DWORK_PROCS='%s' is not valid: expected a count "
		           "from 0 to 4096 or 'auto'",
		           env);
		return DW_EINVAL;
	}
	/* A launcher (dwork run) that set DWORK_PROCS leaves the program's
	 * own arguments alone, -p included. */
	if (!env && argc && argv && *argv)
		return init_take_procs(argc, argv, procs);
	return DW_OK;
}

/* The machine file: DWORK_MACHINE_FILE, else --machine-file FILE or
 * --machine-file=FILE taken out of argv (unless a launcher set
 * DWORK_PROCS: then the program's arguments are left alone). */
static int
init_machine_file(int *argc, char ***argv, const char **path)
{
	*path = getenv("DWORK_MACHINE_FILE");
	if (*path || getenv("DWORK_PROCS") || !argc || !argv || !*argv)
		return DW_OK;
	char **v = *argv;
	int j = 1;
	for (int i = 1; i < *argc; i++) {
		if (!strcmp(v[i], "--machine-file")) {
			if (i + 1 >= *argc) {
				rt_set_err(0, "--machine-file needs a file");
				return DW_EINVAL;
			}
			*path = v[++i];
		} else if (!strncmp(v[i], "--machine-file=", 15)) {
			*path = v[i] + 15;
		} else {
			v[j++] = v[i];
		}
	}
	v[j] = NULL;
	*argc = j;
	return DW_OK;
}

DW_API int
dw_init_opts(int *argc, char ***argv, const dw_options *opts)
{
	tls_library_init();
	if (argc && argv && *argv && worker_is_worker(*argc, *argv))
		exit(worker_main(argc, argv));
	if (rt.role != RT_NONE)
		return rt_set_err(0, "dw_init was already called"), DW_ESTATE;
	if (opts && rt_opt_size("dw_options", opts->size, sizeof *opts)) {
		fprintf(stderr, "dwork: %s\n", dw_errmsg());
		return DW_EINVAL;
	}
	init_defaults(opts);
	int procs = rt.opts.procs;
	const char *mfile = NULL;
	int err = init_tls();
	if (err == DW_OK)
		err = init_sample();
	if (err == DW_OK)
		err = init_heartbeat();
	if (err == DW_OK)
		err = init_procs(argc, argv, &procs);
	if (err == DW_OK)
		err = init_machine_file(argc, argv, &mfile);
	if (err == DW_OK)
		err = init_payload_limit();
	if (err == DW_OK)
		err = init_flow();
	if (err != DW_OK) {
		fprintf(stderr, "dwork: %s\n", dw_errmsg());
		return err;
	}
	init_cookie();
	init_raise_nofile();
	if ((err = rtr_master_init(&rt.opts)) != DW_OK)
		return err;
	rt.role = RT_MASTER;
	rt.myid = 1;
	rt.next_id = 2;
	if (rtr_on)
		dwt_set_thread_name("master");
	RTR_WAITS(DWT_STATE_STARTUP_LATENCY); /* starting the runtime */
	rt_attach();
	if ((err = loop_start()) != DW_OK) {
		rt.role = RT_NONE;
		return err;
	}
	live_start(); /* dwork top's control socket */
	cl_catch_sigint();
	static int registered;
	if (!registered++)
		atexit(init_atexit);
	if (procs > 0 && dw_addprocs(procs, NULL, NULL) < 0) {
		fprintf(stderr, "dwork: starting %d workers failed: %s\n",
		        procs, dw_errmsg());
		return DW_EIO;
	}
	int r = mfile ? dw_addprocs_machinefile(mfile, NULL, NULL, 0) : 0;
	if (r < 0) {
		fprintf(stderr, "dwork: %s\n", dw_errmsg());
		return r;
	}
	return DW_OK;
}

void
rt_attach(void)
{
	disp_clear();
	loop_attach();
	flow_attach();
	call_attach();
	kept_attach();
	req_attach();
	exec_attach();
	worker_attach();
	/* dwork top's figures: STATS frames (conn.c counts the bytes) */
	disp_on_peek(live_on_frame);
	if (rt.role == RT_MASTER)
		cl_attach(); /* its heartbeat tick runs before the sync tick */
	rtr_sync_attach();
	rtr_gather_attach();
	/* the gone observers run in this order: peers (the master tells
	 * the workers; a worker closes its link and fails its calls), then
	 * channels, kept results, pools forget the process */
	peer_attach();
	disp_on_gone(chan_gone);
	disp_on_gone(call_refs_gone);
	disp_on_gone(pool_gone);
}

DW_API int
dw_init(int *argc, char ***argv)
{
	return dw_init_opts(argc, argv, NULL);
}

DW_API int
dw_finalize(void)
{
	if (rt.role != RT_MASTER)
		return DW_OK;
	{ /* closed before the tracer ends */
		RTR_WAITS(DWT_STATE_SYNCHRONIZATION);
		live_stop(); /* regions written, control socket closed */
		dw_listen_close();
		cl_shutdown();
	}
	rtr_master_finish();
	rt.role = RT_NONE;
	rt.myid = 0;
	return DW_OK;
}
