/* The runtime's tracing (see rtrace.h and docs/tracing.md). */
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
static char tr_dir[3800];
static char tr_token[33];
static char tr_local[PATH_MAX]; /* worker: its own directory to send */
static int tr_merge = 1;
static uint64_t tr_last_sync;
static __thread int user_based;

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
	work_labels();
}

static void
rtr_hook(int sent, unsigned type, size_t bytes)
{
	rtr_frame(sent, type, bytes);
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
rtr_comm(unsigned flags, int peer, uint64_t call_id, int k, size_t bytes)
{
	if (rtr_on)
		dwt_comm(flags, (uint32_t)(peer - 1), DWT_THREAD_ANY,
		         (uint32_t)k, bytes, call_id * 4 + (uint64_t)(k & 3));
}

void
rtr_thread_start(const char *name, uint32_t base_state)
{
	if (!rtr_on)
		return;
	user_based = 1; /* an executor calling out keeps its own base state */
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
rtr_user_thread(void)
{
	if (!rtr_on || user_based)
		return;
	user_based = 1;
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
		snprintf(tr_token + 2 * i, 3, "%02x", r[i]);
	char path[sizeof tr_dir + 64];
	snprintf(path, sizeof path, "%s/.dwork-shared-%s", tr_dir, tr_token);
	int fd = sf_create(path, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	if (f) {
		fputs(tr_token, f);
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
		return tr_merge = 0, DW_OK;
	if (!v || rtr_switch_off(v) || rtr_switch_default(v)) {
		tr_merge = rtr_switch_off(v);
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
	int e = rtr_pick_dir(v, &c, dir, sizeof tr_dir);
	if (e != DW_OK)
		return e;
	snprintf(tr_dir, sizeof tr_dir, "%.3790s", dir);
	c.dir = tr_dir;
	e = dwt_init(&c);
	if (e != DW_OK && e != DW_ESTATE)
		return e;
	if (dwt_dir())
		snprintf(tr_dir, sizeof tr_dir, "%s", dwt_dir());
	rtr_on = 1;
	dwt_set_task(0);
	dwt_set_ntasks(1);
	dwt_set_process_name("master");
	rtr_write_marker();
	rtr_labels();
	conn_frame_hook = rtr_hook;
	return DW_OK;
}

/* ---- CONFIG ---- */

static size_t
put_str(unsigned char *p, const char *s)
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
	o += put_str(p + o, tr_dir);
	o += put_str(p + o, prog ? prog : "dwork");
	o += put_str(p + o, tr_token);
	return o;
}

static int
get_str(const unsigned char *p, size_t len, size_t *o, char *out, size_t cap)
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
	char path[sizeof tr_dir + 64], got[40] = "";
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
	snprintf(tr_local, sizeof tr_local, "%s/dwork-trace-%d-XXXXXX",
	         tmp && *tmp ? tmp : "/tmp", (int)getpid());
	return mkdtemp(tr_local) ? 0 : -1;
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
	if (get_str(p, len, &o, tr_dir, sizeof tr_dir) ||
	    get_str(p, len, &o, prog, sizeof prog) ||
	    get_str(p, len, &o, tr_token, sizeof tr_token)) {
		snprintf(why, whylen, "malformed tracing settings");
		return -1;
	}
	if (!rtr_shared(tr_dir, tr_token) && rtr_local_dir() < 0) {
		snprintf(why, whylen, "cannot make a local trace directory");
		return -1;
	}
	c.dir = tr_local[0] ? tr_local : tr_dir;
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
	conn_frame_hook = rtr_hook;
	return 0;
}

/* ---- merging at the end (master) ---- */

static const char *
rtr_tool(void)
{
	const char *e = getenv("DWORK_TOOL");
	if (e && *e)
		return e;
#ifdef DW_TOOL_BUILD
	if (access(DW_TOOL_BUILD, X_OK) == 0)
		return DW_TOOL_BUILD;
#endif
#ifdef DW_TOOL_INSTALLED
	if (access(DW_TOOL_INSTALLED, X_OK) == 0)
		return DW_TOOL_INSTALLED;
#endif
	return "dwork";
}

/* Runs the dwork tool with one command on the trace directory. */
static int
rtr_tool_run(const char *cmd, const char *out)
{
	const char *tool = rtr_tool();
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		if (out)
			execlp(tool, tool, cmd, tr_dir, "-o", out,
			       (char *)NULL);
		else
			execlp(tool, tool, cmd, tr_dir, (char *)NULL);
		fprintf(stderr, "dwork: cannot run '%s %s': %s\n", tool, cmd,
		        strerror(errno));
		_exit(127);
	}
	int st = -1;
	if (pid > 0)
		waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void
rtr_merge(void)
{
	char out[sizeof tr_dir + 16];
	snprintf(out, sizeof out, "%s/trace", tr_dir);
	if (rtr_tool_run("merge", out) == 0) {
		printf("dwork: trace in %s.prv (.pcf, .row); per-process files "
		       "in %s/\n",
		       out, tr_dir);
		fflush(stdout);
		rtr_tool_run("summary", NULL);
	} else {
		printf("dwork: the trace files are in %s/ (merge them with "
		       "'dwork merge %s')\n",
		       tr_dir, tr_dir);
	}
	fflush(stdout);
}

void
rtr_master_finish(void)
{
	if (!rtr_on)
		return;
	conn_frame_hook = NULL;
	if (user_based)
		rtr_pop();
	user_based = 0;
	rtr_depth = 0;
	dwt_fini();
	rtr_on = 0;
	char path[sizeof tr_dir + 64];
	snprintf(path, sizeof path, "%s/.dwork-shared-%s", tr_dir, tr_token);
	unlink(path);
	if (tr_merge)
		rtr_merge();
}

/* ---- clock measurements ---- */

static void
rtr_send_ping(struct conn *c)
{
	unsigned char b[8];
	wire_put_u64(b, dwt_now_ns());
	conn_send_msg(c, WIRE_CLOCK_PING, 0, b, 8, NULL, 0);
}

void
rtr_sync_start(struct worker *w, int n)
{
	if (!rtr_on)
		return;
	pthread_mutex_lock(&rt.lock);
	int go = w->state != W_GONE && w->sync_left == 0;
	if (go) {
		w->sync_left = n;
		w->best_rtt = UINT64_MAX;
	}
	pthread_mutex_unlock(&rt.lock);
	if (go)
		rtr_send_ping(w->conn);
}

void
rtr_sync_wait(struct worker *w, int ms)
{
	if (!rtr_on)
		return;
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L)
		dl.tv_sec++, dl.tv_nsec -= 1000000000L;
	pthread_mutex_lock(&rt.lock);
	while (w->sync_left > 0 && w->state != W_GONE)
		if (rt_cond_wait(&rt.cv, &rt.lock, &dl,
		                 DWT_STATE_SYNCHRONIZATION) != 0)
			break;
	pthread_mutex_unlock(&rt.lock);
}

void
rtr_on_pong(struct conn *c, const unsigned char *p, size_t len)
{
	uint64_t t1 = dwt_now_ns();
	if (len < 16 || !rtr_on)
		return;
	uint64_t t0 = wire_get_u64(p), wns = wire_get_u64(p + 8);
	pthread_mutex_lock(&rt.lock);
	struct worker *w = cl_find(c->peer);
	int again = 0, done = 0;
	uint64_t local = 0, rtt = 0;
	int64_t off = 0;
	if (w && w->sync_left > 0 && t1 >= t0) {
		if (t1 - t0 < w->best_rtt) {
			w->best_rtt = t1 - t0;
			w->best_local = wns;
			w->best_off =
			    (int64_t)(t0 + (t1 - t0) / 2) - (int64_t)wns;
		}
		again = --w->sync_left > 0;
		done = !again;
		local = w->best_local, rtt = w->best_rtt, off = w->best_off;
		if (done) {
			w->sync_rounds++;
			pthread_cond_broadcast(&rt.cv);
		}
	}
	pthread_mutex_unlock(&rt.lock);
	if (again)
		rtr_send_ping(c);
	if (done) {
		unsigned char b[24];
		wire_put_u64(b, local);
		wire_put_u64(b + 8, (uint64_t)off);
		wire_put_u64(b + 16, rtt);
		conn_send_msg(c, WIRE_SYNC, 0, b, 24, NULL, 0);
	}
}

void
rtr_sync_tick(void)
{
	if (!rtr_on || rt.role != RT_MASTER)
		return;
	uint64_t now = rt_now_ms();
	if (now - tr_last_sync < (uint64_t)rt.opts.clock_sync_ms)
		return;
	tr_last_sync = now;
	/* every worker, however many (the I/O thread frees lost workers,
	 * so the pointers hold while it runs this) */
	size_t n = 0, max = 0;
	pthread_mutex_lock(&rt.lock);
	for (struct worker *w = rt.workers; w; w = w->next)
		max += w->state == W_ACTIVE;
	struct worker **ws = max ? malloc(max * sizeof *ws) : NULL;
	for (struct worker *w = rt.workers; ws && w; w = w->next)
		if (w->state == W_ACTIVE)
			ws[n++] = w;
	pthread_mutex_unlock(&rt.lock);
	for (size_t i = 0; i < n; i++)
		rtr_sync_start(ws[i], 4);
	free(ws);
}

void
rtr_on_clock_ping(struct conn *c, uint64_t ref, const unsigned char *p,
                  size_t len)
{
	unsigned char b[16];
	wire_put_u64(b, len >= 8 ? wire_get_u64(p) : 0);
	wire_put_u64(b + 8, dwt_now_ns());
	conn_send_msg(c, WIRE_CLOCK_PONG, ref, b, 16, NULL, 0);
}

void
rtr_on_sync(const unsigned char *p, size_t len)
{
	if (len >= 24 && rtr_on)
		dwt_sync(0, wire_get_u64(p), (int64_t)wire_get_u64(p + 8),
		         wire_get_u64(p + 16));
}

/* ---- gathering ---- */

enum { FILE_BEGIN = 1, FILE_DATA = 2, FILE_END = 3 };

static int
rtr_name_ok(const char *n)
{
	size_t l = strlen(n);
	if (l < 5 || n[0] == '.' ||
	    (strcmp(n + l - 4, ".dwt") && strcmp(n + l - 4, ".dwp")))
		return 0;
	for (size_t i = 0; i < l; i++)
		if (!strchr(
		        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		        "0123456789._-",
		        n[i]))
			return 0;
	return 1;
}

static void
rtr_file_begin(struct worker *w, const unsigned char *p, size_t len)
{
	char name[256];
	size_t o = 1;
	if (w->gather_fd >= 0)
		close(w->gather_fd);
	w->gather_fd = -1;
	if (get_str(p, len, &o, name, sizeof name) || !rtr_name_ok(name)) {
		rt_log("worker %d sent a trace file with a bad name; ignored",
		       w->id);
		return;
	}
	char path[sizeof tr_dir + 300];
	snprintf(path, sizeof path, "%s/%s", tr_dir, name);
	w->gather_fd = sf_create(path, 0644);
	if (w->gather_fd < 0)
		rt_log("cannot write %s: %s", path, strerror(errno));
}

static void rtr_file_op(struct worker *w, const unsigned char *p, size_t len);

void
rtr_on_file(struct conn *c, uint64_t ref, const unsigned char *p, size_t len)
{
	(void)ref;
	struct worker *w = cl_pin(c->peer);
	if (w && len >= 1 && tr_dir[0])
		rtr_file_op(w, p, len);
	if (w)
		cl_unpin(w);
}

static void
rtr_file_op(struct worker *w, const unsigned char *p, size_t len)
{
	if (p[0] == FILE_BEGIN) {
		rtr_file_begin(w, p, len);
	} else if (p[0] == FILE_DATA && w->gather_fd >= 0) {
		if (write(w->gather_fd, p + 1, len - 1) != (ssize_t)(len - 1))
			rt_log("writing a trace file of worker %d failed: %s",
			       w->id, strerror(errno));
	} else if (p[0] == FILE_END && w->gather_fd >= 0) {
		close(w->gather_fd);
		w->gather_fd = -1;
	}
}

static void rtr_drain(struct conn *c);

/* Worker: sends one file in 1 MiB frames, waiting for each to leave. */
static void
rtr_send_file(struct conn *c, const char *dir, const char *name)
{
	char path[PATH_MAX + 300];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	unsigned char head[260];
	head[0] = FILE_BEGIN;
	size_t hl = 1 + put_str(head + 1, name);
	conn_send_msg(c, WIRE_FILE, 0, head, hl, NULL, 0);
	/* chunks stay under the link's limit (at least 64 KiB) */
	size_t chunk =
	    c->max_payload - 1 < (1u << 20) ? c->max_payload - 1 : (1u << 20);
	unsigned char *buf = malloc(chunk);
	ssize_t r;
	unsigned char op = FILE_DATA;
	while (buf && (r = read(fd, buf, chunk)) > 0) {
		conn_send_msg(c, WIRE_FILE, 0, &op, 1, buf, (size_t)r);
		rtr_drain(c); /* one chunk in flight at a time */
	}
	free(buf);
	close(fd);
	head[0] = FILE_END;
	conn_send_msg(c, WIRE_FILE, 0, head, 1, NULL, 0);
	unlink(path);
}

static void
rtr_drain(struct conn *c)
{
	for (int i = 0; i < 60000; i++) {
		pthread_mutex_lock(&c->wlock);
		int empty = !c->wq || c->closed;
		pthread_mutex_unlock(&c->wlock);
		if (empty)
			return;
		usleep(1000);
	}
}

void
rtr_worker_exit(struct conn *master)
{
	if (!rtr_on)
		return;
	conn_frame_hook = NULL;
	dwt_fini();
	rtr_on = 0;
	if (!tr_local[0] || !master || master->closed)
		return;
	DIR *d = opendir(tr_local);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			rtr_send_file(master, tr_local, e->d_name);
	if (d)
		closedir(d);
	rtr_drain(master);
	rmdir(tr_local);
}

/* ---- the frames and the tick of clock sync and gathering ---- */

static void
rtr_on_frame(struct conn *c, const struct wire_hdr *h, unsigned char *p)
{
	if (h->type == WIRE_CLOCK_PING)
		rtr_on_clock_ping(c, h->ref, p, h->payload);
	else if (h->type == WIRE_CLOCK_PONG && rt.role == RT_MASTER)
		rtr_on_pong(c, p, h->payload);
	else if (h->type == WIRE_SYNC && rt.role == RT_WORKER && c == rt.master)
		rtr_on_sync(p, h->payload);
	else if (h->type == WIRE_FILE && rt.role == RT_MASTER)
		rtr_on_file(c, h->ref, p, h->payload);
	free(p);
}

static void
rtr_tick(uint64_t ticks)
{
	(void)ticks;
	rtr_sync_tick();
}

void
rtr_attach(void)
{
	static const unsigned types[] = {WIRE_CLOCK_PING, WIRE_CLOCK_PONG,
	                                 WIRE_SYNC, WIRE_FILE};
	for (size_t i = 0; i < sizeof types / sizeof *types; i++)
		disp_on_frame(types[i], rtr_on_frame);
	if (rt.role == RT_MASTER)
		disp_on_tick(rtr_tick);
}
