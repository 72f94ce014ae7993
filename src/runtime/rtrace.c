/*
 * The runtime's tracing, its low part (rtrace.h, docs/tracing.md): labels,
 * the runtime's records, its threads, the switch and the CONFIG that
 * deploys the tracer on workers.  The services that use it (clock sync,
 * gathering, the merge at the end) are rtsync.c, rtgather.c, rtmerge.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/safefile.h"
#include "runtime/rt.h"
#include "runtime/rtrace.h"
#include "runtime/work.h"

int rtr_on;
char rtr_dir[3800];
char rtr_token[33];
char rtr_local_dir_path[PATH_MAX];
int rtr_merge_on = 1;
uint64_t rtr_last_sync;
ACCT_TLS int rtr_user_based;

/* ---- labels ---- */

static const char *const msg_names[] = {
    [WIRE_HELLO] = "HELLO",
    [WIRE_HELLO_ACK] = "HELLO_ACK",
    [WIRE_CALL] = "CALL",
    [WIRE_RESULT] = "RESULT",
    [WIRE_DONE] = "DONE",
    [WIRE_FETCH] = "FETCH",
    [WIRE_FREE] = "FREE",
    [WIRE_PING] = "PING",
    [WIRE_PONG] = "PONG",
    [WIRE_EXIT] = "EXIT",
    [WIRE_CONFIG] = "CONFIG",
    [WIRE_CLOCK_PING] = "CLOCK_PING",
    [WIRE_CLOCK_PONG] = "CLOCK_PONG",
    [WIRE_SYNC] = "SYNC",
    [WIRE_FILE] = "FILE",
    [WIRE_REQ] = "REQ",
    [WIRE_ANSWER] = "ANSWER",
    [WIRE_CANCEL] = "CANCEL",
    [WIRE_CHALLENGE] = "CHALLENGE",
    [WIRE_CREDIT] = "CREDIT",
    [WIRE_INTERRUPT] = "INTERRUPT",
    [WIRE_STATS] = "STATS",
    [WIRE_GRANT] = "GRANT",
    [WIRE_ASK] = "ASK",
    [WIRE_RETURN] = "RETURN",
};

void
rtr_label_function(const char *name)
{
	if (call_is_carrier(name, strlen(name)))
		return; /* never a DW_EV_FUNCTION value (pmap.c) */
	uint32_t id = dw_function_id(name);
	dwt_define_value(DW_EV_FUNCTION, id, name);
	dwt_define_value(DW_EV_CALL, id, name);
}

/* The labels of the work parts' events (channels, pools, pmap, peers,
 * carriers). */
static void
rtr_work_labels(void)
{
	static const char *const ops[] = {"End",  "put",     "take", "fetch",
	                                  "wait", "isready", "close"};
	dwt_define_type(DW_EV_CHANNEL, "dwork: channel operation");
	for (unsigned i = 0; i < sizeof ops / sizeof ops[0]; i++)
		dwt_define_value(DW_EV_CHANNEL, i, ops[i]);
	dwt_define_type(DW_EV_POOL, "dwork: pool lent worker");
	dwt_define_value(DW_EV_POOL, 0, "End");
	dwt_define_type(DW_EV_PMAP, "dwork: pmap batch sent (items)");
	dwt_define_value(DW_EV_PMAP, 0, "End");
	dwt_define_type(DW_EV_PMAP_RETRY, "dwork: pmap items retried");
	dwt_define_type(DW_EV_PMAP_ITEM, "dwork: pmap item running (index+1)");
	dwt_define_value(DW_EV_PMAP_ITEM, 0, "End");
	dwt_define_type(DW_EV_PEER, "dwork: worker-to-worker link opened");
	static const char *const kinds[] = {"End", "pmap batch",
	                                    "distributed_for range",
	                                    "everywhere", "spawn"};
	dwt_define_type(DW_EV_BATCH, "dwork: user functions carried by");
	for (unsigned i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		dwt_define_value(DW_EV_BATCH, i, kinds[i]);
}

static void
rtr_labels(void)
{
	dwt_define_type(DW_EV_FUNCTION, "dwork: remote function running");
	dwt_define_value(DW_EV_FUNCTION, 0, "End");
	dwt_define_type(DW_EV_CALL, "dwork: remote call issued");
	dwt_define_type(DW_EV_MSG_SENT, "dwork: message sent");
	dwt_define_type(DW_EV_MSG_RECV, "dwork: message received");
	dwt_define_type(DW_EV_BYTES, "dwork: message payload bytes");
	dwt_define_type(DW_EV_WORKER_JOIN, "dwork: worker joined");
	dwt_define_type(DW_EV_WORKER_LEAVE, "dwork: worker left");
	for (unsigned t = 1; t <= WIRE_TYPE_MAX; t++) {
		dwt_define_value(DW_EV_MSG_SENT, t, msg_names[t]);
		dwt_define_value(DW_EV_MSG_RECV, t, msg_names[t]);
	}
	call_each_function(rtr_label_function);
	rtr_work_labels();
}

/* Frames that carry a call's or a request's message are told by its
 * communication record (tag and size), and flow-control credits tell
 * nothing of the program: neither gets per-frame events
 * (docs/tracing.md, "The records of one remote call"); conn.c skips
 * them before calling the hook. */
#define RTR_TOLD_FRAMES                                                        \
	(1u << WIRE_CALL | 1u << WIRE_RESULT | 1u << WIRE_DONE |               \
	 1u << WIRE_FETCH | 1u << WIRE_REQ | 1u << WIRE_ANSWER |               \
	 1u << WIRE_CREDIT)
_Static_assert(WIRE_TYPE_MAX < 32, "a frame type's bit in RTR_TOLD_FRAMES");

static void
rtr_hook_on(void)
{
	conn_frame_hook = rtr_frame; /* set before any type is marked */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (unsigned t = 0; t < sizeof conn_frame_tell; t++)
		conn_frame_tell[t] = t >= 32 || !(RTR_TOLD_FRAMES >> t & 1u);
}

/* ---- records ---- */

void
rtr_frame(int sent, unsigned type, size_t bytes)
{
	if (!rtr_on)
		return;
	uint32_t t[2] = {sent ? DW_EV_MSG_SENT : DW_EV_MSG_RECV, DW_EV_BYTES};
	uint64_t v[2] = {type, bytes};
	dwt_events(2, t, v);
}

void
rtr_thread_start(const char *name, uint32_t base_state)
{
	acct_thread(name);
	if (!RTR_TRACKING)
		return;
	/* an executor calling out keeps its own base state */
	rtr_user_based = 1;
	if (rtr_on)
		dwt_set_thread_name(name);
	rtr_push(base_state);
}

/* One runtime thread starts at a time: its creator waits until it has
 * its trace thread id, so ids follow the start order.  Both sides do so
 * whether tracing is on or not (it may end while a thread starts). */
static sem_t tr_started;
static pthread_once_t tr_started_once = PTHREAD_ONCE_INIT;

static void
rtr_started_init(void)
{
	sem_init(&tr_started, 0, 0);
}

void
rtr_thread_started(void)
{
	pthread_once(&tr_started_once, rtr_started_init);
	sem_post(&tr_started);
}

void
rtr_thread_wait_started(void)
{
	pthread_once(&tr_started_once, rtr_started_init);
	while (sem_wait(&tr_started) && errno == EINTR)
		;
}

void
rtr_user_thread_slow(void)
{
	if (!RTR_TRACKING || rtr_user_based)
		return;
	rtr_user_based = 1;
	acct_user_thread();
	rtr_push(DWT_STATE_RUNNING);
}

/* ---- master: the switch ---- */

static int
rtr_switch_off(const char *v)
{
	return !v || !*v || !strcmp(v, "0") || !strcasecmp(v, "off") ||
	       !strcasecmp(v, "no") || !strcasecmp(v, "false");
}

static int
rtr_switch_default(const char *v)
{
	return !strcmp(v, "1") || !strcasecmp(v, "on") ||
	       !strcasecmp(v, "yes") || !strcasecmp(v, "true");
}

static void
rtr_write_marker(void)
{
	unsigned char r[16];
	if (getrandom(r, sizeof r, 0) != sizeof r)
		memset(r, 0x5a, sizeof r);
	for (int i = 0; i < 16; i++)
		snprintf(rtr_token + 2 * i, 3, "%02x", r[i]);
	char path[sizeof rtr_dir + 64];
	snprintf(path, sizeof path, "%s/.dwork-shared-%s", rtr_dir, rtr_token);
	int fd = sf_create(path, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	if (f) {
		fputs(rtr_token, f);
		fclose(f);
	}
}

static int
rtr_pick_dir(const char *v, const dwt_config *c, char *out, size_t len)
{
	char prog[64] = "dwork";
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = 0;
		const char *b = strrchr(exe, '/');
		snprintf(prog, sizeof prog, "%.63s", b ? b + 1 : exe);
	}
	const char *want = rtr_switch_default(v) ? c->dir : v;
	char dflt[128];
	if (!want) {
		snprintf(dflt, sizeof dflt, "%s.trace",
		         c->program ? c->program : prog);
		want = dflt;
	}
	char why[600];
	int e = strlen(want) >= len - 1 ? ENAMETOOLONG
	                                : sf_private_dir(want, why, sizeof why);
	if (e == ENAMETOOLONG)
		snprintf(why, sizeof why, "the path '%.200s' is too long",
		         want);
	if (!e && !realpath(want, out))
		snprintf(why, sizeof why, "'%s': %s", want,
		         strerror(e = errno));
	if (e) {
		rt_log("cannot use the trace directory: %s", why);
		return e == EACCES ? DW_EACCES : DW_EIO;
	}
	return DW_OK;
}

#define RTR_SWITCHES "0, 1, yes, no, true, false, on, off"

/* DWORK_TRACE: a switch, dir:PATH, or a value that looks like a path
 * (holds a '/' or a '.': ./x, /x, prog.trace); a bare word is a mistake
 * to name, not a directory. */
static int
rtr_trace_value(const char *v, int from_env, const char **dir)
{
	*dir = v;
	if (!v || rtr_switch_off(v) || rtr_switch_default(v))
		return DW_OK;
	if (!strncmp(v, "dir:", 4) && v[4]) {
		*dir = v + 4;
		return DW_OK;
	}
	if (!from_env || strpbrk(v, "/."))
		return DW_OK;
	rt_set_err(0,
	           "DWORK_TRACE='%s' is not valid: expected one of "
	           "" RTR_SWITCHES ", a directory path holding a '/' or "
	           "a '.' (./%s, %s.trace), or dir:NAME",
	           v, v, v);
	rt_log("%s", dw_errmsg());
	return DW_EINVAL;
}

static int
rtr_no_merge(const dw_options *opts)
{
	const char *v = getenv("DWORK_TRACE_NO_MERGE");
	if (opts && opts->no_merge)
		return rtr_merge_on = 0, DW_OK;
	if (!v || rtr_switch_off(v) || rtr_switch_default(v)) {
		rtr_merge_on = rtr_switch_off(v);
		return DW_OK;
	}
	rt_set_err(0,
	           "DWORK_TRACE_NO_MERGE='%s' is not valid: expected one "
	           "of " RTR_SWITCHES,
	           v);
	rt_log("%s", dw_errmsg());
	return DW_EINVAL;
}

int
rtr_master_init(const dw_options *opts)
{
	int from_env = !(opts && opts->trace);
	const char *v = from_env ? getenv("DWORK_TRACE") : opts->trace;
	int e0 = rtr_trace_value(v, from_env, &v);
	if (e0 != DW_OK || (e0 = rtr_no_merge(opts)) != DW_OK)
		return e0;
	if (rtr_switch_off(v))
		return DW_OK;
	dwt_config c;
	char err[512];
	dwt_config_defaults(&c);
	if (dwt_config_from_env(&c, err, sizeof err) != DW_OK) {
		/* as docs/tracer.md says: tracing off, the program goes on */
		rt_log("%s; tracing is off, the program goes on", err);
		return DW_OK;
	}
	if (!c.enabled)
		return DW_OK;
	char dir[PATH_MAX];
	int e = rtr_pick_dir(v, &c, dir, sizeof rtr_dir);
	if (e != DW_OK)
		return e;
	snprintf(rtr_dir, sizeof rtr_dir, "%.3790s", dir);
	c.dir = rtr_dir;
	e = dwt_init(&c);
	if (e != DW_OK && e != DW_ESTATE)
		return e;
	if (dwt_dir())
		snprintf(rtr_dir, sizeof rtr_dir, "%s", dwt_dir());
	rtr_on = 1;
	dwt_set_task(0);
	dwt_set_ntasks(1);
	dwt_set_process_name("master");
	rtr_write_marker();
	rtr_labels();
	rtr_hook_on();
	return DW_OK;
}

/* ---- CONFIG ---- */

size_t
rtr_put_str(unsigned char *p, const char *s)
{
	size_t n = strlen(s);
	wire_put_u16(p, (uint16_t)n);
	memcpy(p + 2, s, n);
	return 2 + n;
}

size_t
rtr_config_payload(unsigned char *p, int id)
{
	memset(p, 0, 32);
	if (!rtr_on)
		return 32;
	const char *prog = dwt_program();
	p[0] = 1;
	wire_put_u32(p + 4, (uint32_t)(id - 1));
	wire_put_u32(p + 8, (uint32_t)id);
	dwt_config c;
	dwt_config_defaults(&c);
	dwt_config_from_env(&c, NULL, 0);
	p[1] = (unsigned char)c.circular;
	wire_put_u32(p + 12, (uint32_t)c.clock);
	wire_put_u64(p + 16, c.segment_size);
	wire_put_u64(p + 24, c.size_cap);
	size_t o = 32;
	o += rtr_put_str(p + o, rtr_dir);
	o += rtr_put_str(p + o, prog ? prog : "dwork");
	o += rtr_put_str(p + o, rtr_token);
	return o;
}

int
rtr_get_str(const unsigned char *p, size_t len, size_t *o, char *out,
            size_t cap)
{
	if (*o + 2 > len)
		return -1;
	size_t n = wire_get_u16(p + *o);
	if (*o + 2 + n > len || n >= cap)
		return -1;
	memcpy(out, p + *o + 2, n);
	out[n] = 0;
	*o += 2 + n;
	return 0;
}

/* The worker's files go straight into the master's directory when it
 * finds the marker the master wrote there (a shared filesystem). */
static int
rtr_shared(const char *dir, const char *token)
{
	if (getenv("DWORK_TEST_NO_SHARED_FS"))
		return 0;
	char path[sizeof rtr_dir + 64], got[40] = "";
	snprintf(path, sizeof path, "%s/.dwork-shared-%s", dir, token);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int ok = fgets(got, sizeof got, f) && !strcmp(got, token);
	fclose(f);
	return ok;
}

static int
rtr_local_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(rtr_local_dir_path, sizeof rtr_local_dir_path,
	         "%s/dwork-trace-%d-XXXXXX", tmp && *tmp ? tmp : "/tmp",
	         (int)getpid());
	return mkdtemp(rtr_local_dir_path) ? 0 : -1;
}

int
rtr_worker_config(const unsigned char *p, size_t len, int id, char *why,
                  size_t whylen)
{
	if (len < 32) {
		snprintf(why, whylen, "settings frame of %zu bytes", len);
		return -1;
	}
	if (!p[0])
		return 0;
	dwt_config c;
	dwt_config_defaults(&c);
	char prog[64];
	size_t o = 32;
	c.circular = p[1] != 0;
	c.clock = (int)wire_get_u32(p + 12);
	c.segment_size = wire_get_u64(p + 16);
	c.size_cap = wire_get_u64(p + 24);
	if (rtr_get_str(p, len, &o, rtr_dir, sizeof rtr_dir) ||
	    rtr_get_str(p, len, &o, prog, sizeof prog) ||
	    rtr_get_str(p, len, &o, rtr_token, sizeof rtr_token)) {
		snprintf(why, whylen, "malformed tracing settings");
		return -1;
	}
	if (!rtr_shared(rtr_dir, rtr_token) && rtr_local_dir() < 0) {
		snprintf(why, whylen, "cannot make a local trace directory");
		return -1;
	}
	c.dir = rtr_local_dir_path[0] ? rtr_local_dir_path : rtr_dir;
	c.program = prog;
	int e = dwt_init(&c);
	if (e != DW_OK && e != DW_ESTATE) {
		snprintf(why, whylen, "cannot start tracing: %s",
		         dw_strerror(e));
		return -1;
	}
	rtr_on = 1;
	dwt_set_task(wire_get_u32(p + 4));
	dwt_set_ntasks(wire_get_u32(p + 8));
	char pname[32];
	snprintf(pname, sizeof pname, "worker %d", id);
	dwt_set_process_name(pname);
	rtr_labels();
	rtr_hook_on();
	return 0;
}

void
rtr_end(void)
{
	memset(conn_frame_tell, 0, sizeof conn_frame_tell); /* hook kept */
	if (rtr_user_based)
		rtr_pop();
	rtr_user_based = 0;
	rtr_depth = 0;
	dwt_fini();
	rtr_on = 0;
}
