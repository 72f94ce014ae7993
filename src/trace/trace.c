/* Tracing sessions: init, fini, flush, fork, identity. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/safefile.h"
#include "trace/clock.h"
#include "trace/record.h"
#include "trace/tracer.h"

struct trc trc = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .active = 1,
    .pfd = -1,
    .ntasks = 1,
    .labels_tail = &trc.labels,
};
DW_API int dwt_recording_;
pthread_key_t trc_key;

__thread struct buf *trc_self __attribute__((tls_model("initial-exec")));

/* The thread's key destructor: its last record says where it ended (a
 * thread killed with its process has none; the merge ends it there).
 * Records after it (a later destructor's) are dropped: the end stays
 * the end. */
static void
trc_thread_exit(void *p)
{
	struct buf *b = p;
	if (b == trc_self && b->gen == trc.gen)
		rec_one(FMT_R_THREAD_END, 0, 0);
	if (b->gen == trc.gen)
		prep_release(b);
	__atomic_store_n(&b->exited, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&b->end, NULL, __ATOMIC_RELAXED);
}

void
trc_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("dwtrace: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void
trc_set_on(void)
{
	int on = trc.initialized && trc.active;
	__atomic_store_n(&clk_hot.on, on, __ATOMIC_RELEASE);
	__atomic_store_n(&trc_on, on, __ATOMIC_RELEASE);
}

static uint64_t
trc_new_uid(void)
{
	uint64_t u = 0;
	if (getrandom(&u, sizeof u, GRND_NONBLOCK) != sizeof u)
		u = clk_raw_ns() ^ ((uint64_t)getpid() << 32) ^
		    (uint64_t)(uintptr_t)&u;
	return u;
}

void
trc_default_program(char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = 0;
	const char *base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	size_t j = 0;
	for (size_t i = 0; base[i] && j + 1 < len; i++) {
		char ch = base[i];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		         (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
		         (ch == '.' && j > 0);
		out[j++] = ok ? ch : '_';
	}
	if (j == 0)
		out[j++] = 'a', out[j++] = 'p', out[j++] = 'p';
	out[j] = 0;
}

/* Checks settings given by argument with the same limits as the
 * environment's. */
static int
trc_check_config(const dwt_config *c)
{
	uint64_t s = c->segment_size;
	if (s < DWT_SEGMENT_MIN || s > DWT_SEGMENT_MAX || s % 4096) {
		trc_err("segment_size %" PRIu64 " is not valid: expected 64K "
		        "to 1G, a multiple of 4K",
		        s);
		return DW_EINVAL;
	}
	if (c->clock < DWT_CLOCK_AUTO || c->clock > DWT_CLOCK_MONOTONIC_RAW) {
		trc_err("clock %d is not valid: expected DWT_CLOCK_AUTO, "
		        "DWT_CLOCK_TSC or DWT_CLOCK_MONOTONIC_RAW",
		        c->clock);
		return DW_EINVAL;
	}
	if (c->program && (strlen(c->program) == 0 || strlen(c->program) > 63 ||
	                   strchr(c->program, '/'))) {
		trc_err("program name '%s' is not valid: expected 1 to 63 "
		        "characters without '/'",
		        c->program);
		return DW_EINVAL;
	}
	return DW_OK;
}

static void trc_atfork_prepare(void);
static void trc_atfork_parent(void);
static void trc_atfork_child(void);
static void trc_atexit(void);

static void
trc_once(void)
{
	pthread_key_create(&trc_key, trc_thread_exit);
	pthread_atfork(trc_atfork_prepare, trc_atfork_parent, trc_atfork_child);
	atexit(trc_atexit);
}

static int
trc_resolve_config(const dwt_config *cfg, dwt_config *c)
{
	char err[512];
	if (cfg && cfg->size != 0 && cfg->size != sizeof *cfg) {
		trc_err(
		    "dwt_config.size is %zu, but this libdwtrace's "
		    "dwt_config has %zu bytes: the program was built against "
		    "another dwork/trace.h (set .size = sizeof(dwt_config), "
		    "or 0)",
		    cfg->size, sizeof *cfg);
		return DW_EINVAL;
	}
	if (cfg) {
		*c = *cfg;
		return trc_check_config(c);
	}
	dwt_config_defaults(c);
	if (dwt_config_from_env(c, err, sizeof err) != DW_OK) {
		trc_err("%s", err);
		return DW_EINVAL;
	}
	return DW_OK;
}

/* The boot id tells two hosts of one name apart, and one host before and
 * after a reboot: processes share a clock only with the same boot. */
static void
trc_boot_id(char *out, size_t n)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

	out[0] = '\0';
	if (!f)
		return;
	if (!fgets(out, (int)n, f))
		out[0] = '\0';
	out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

static int
trc_setup_files(void)
{
	if (trc.cfg.program)
		snprintf(trc.program, sizeof trc.program, "%s",
		         trc.cfg.program);
	else
		trc_default_program(trc.program, sizeof trc.program);
	if (trc.cfg.dir)
		snprintf(trc.dir, sizeof trc.dir, "%s", trc.cfg.dir);
	else
		snprintf(trc.dir, sizeof trc.dir, "%s.trace", trc.program);
	char why[600];
	int e = sf_private_dir(trc.dir, why, sizeof why);
	if (e) {
		trc_err("cannot use the trace directory: %s", why);
		return dw_err_from_errno(e);
	}
	if (gethostname(trc.host, sizeof trc.host - 1))
		snprintf(trc.host, sizeof trc.host, "localhost");
	trc_boot_id(trc.boot_id, sizeof trc.boot_id);
	trc.pid = getpid();
	trc.uid = trc_new_uid();
	snprintf(trc.prefix, sizeof trc.prefix, "%s/%s.%d.%016" PRIx64, trc.dir,
	         trc.program, (int)trc.pid, trc.uid);
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	trc.init_real_ns =
	    (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	clk_pair(&trc.init_ticks, &trc.init_ns);
	if ((e = lbl_pfile_create()) != DW_OK)
		trc_err("cannot create the process file in '%s': %s", trc.dir,
		        dw_strerror(e));
	return e;
}

DW_API int
dwt_init(const dwt_config *cfg)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	dwt_config c;
	int err = trc_resolve_config(cfg, &c);
	if (err != DW_OK)
		return err;
	pthread_once(&once, trc_once);
	pthread_mutex_lock(&trc.lock);
	if (trc.initialized) {
		pthread_mutex_unlock(&trc.lock);
		return DW_ESTATE;
	}
	trc.cfg = c;
	if (!c.enabled)
		goto out;
	if (clk_setup(c.clock) != DW_OK) {
		if (c.clock == DWT_CLOCK_TSC)
			trc_err("DWT_CLOCK=tsc: this machine has no invariant "
			        "TSC that the kernel trusts");
		err = DW_EINVAL;
		goto out;
	}
	if ((err = trc_setup_files()) != DW_OK)
		goto out;
	ins_configure(&c, clk_ticks_per_s());
	trc.cfg.dir = trc.dir; /* the caller's strings were borrowed */
	trc.cfg.program = trc.program;
	trc.gen++;
	trc.next_thread = trc.nthreads = 0;
	trc.bytes = trc.segments = trc.segments_reused = 0;
	trc.base_state = 0;
	trc.initialized = 1;
	trc_refresh_identity();
	trc_set_on();
	prep_session(trc.gen);
out:
	pthread_mutex_unlock(&trc.lock);
	if (err == DW_OK && c.enabled)
		prep_wait_kit(); /* a thread's first record finds its file */
	return err;
}

static void
trc_write_end(uint64_t t, uint64_t ns)
{
	unsigned char pl[16];
	fmt_put_u64(pl, t);
	fmt_put_u64(pl + 8, ns);
	lbl_write(FMT_L_END, pl, sizeof pl);
	if (!trc.phdr)
		return;
	fmt_put_u64(trc.phdr + FMT_H_END_TICKS, t);
	fmt_put_u64(trc.phdr + FMT_H_END_NS, ns);
	fmt_put_u32(trc.phdr + FMT_H_NTHREADS, trc.nthreads);
	uint32_t fl = fmt_get_u32(trc.phdr + FMT_H_FLAGS) | FMT_FLAG_ENDED;
	fmt_put_u32(trc.phdr + FMT_H_FLAGS, fl);
}

DW_API void
dwt_fini(void)
{
	pthread_mutex_lock(&trc.lock);
	if (!trc.initialized) {
		pthread_mutex_unlock(&trc.lock);
		return;
	}
	__atomic_store_n(&clk_hot.on, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&trc_on, 0, __ATOMIC_RELEASE);
	trc_refresh_identity();
	uint64_t t, ns;
	clk_pair(&t, &ns);
	/* The files of threads that exited, and the caller's, cannot be
	 * stored into any more: their unused tails are cut. */
	prep_fini();
	for (struct buf *b = trc.bufs; b; b = b->next)
		if (b->gen == trc.gen)
			prep_release(b);
	for (struct buf *b = trc.bufs; b; b = b->next)
		if (b->gen == trc.gen)
			buf_finish(
			    b, t, ns,
			    b == trc_self ||
			        __atomic_load_n(&b->exited, __ATOMIC_ACQUIRE));
	fn_name_seen();
	lbl_write_modules();
	trc_write_end(t, ns);
	/* The mappings stay valid without their descriptors. */
	for (struct buf *b = trc.bufs; b; b = b->next)
		if (b->gen == trc.gen && b->fd >= 0) {
			close(b->fd);
			b->fd = -1;
		}
	/* Buffers stay mapped: a thread may be storing its last record. */
	if (trc.pfd >= 0)
		close(trc.pfd);
	trc.pfd = -1;
	trc.phdr = NULL;
	trc.initialized = 0;
	trc.need_pfile = 0;
	pthread_mutex_unlock(&trc.lock);
}

static void
trc_atexit(void)
{
	dwt_fini();
}

DW_API int
dwt_flush(void)
{
	pthread_mutex_lock(&trc.lock);
	int err = trc.initialized ? DW_OK : DW_ESTATE;
	if (err == DW_OK) {
		uint64_t t, ns;
		clk_pair(&t, &ns);
		unsigned char pl[16];
		fmt_put_u64(pl, t);
		fmt_put_u64(pl + 8, ns);
		err = lbl_write(FMT_L_CALIB, pl, sizeof pl);
		for (struct buf *b = trc.bufs; b; b = b->next) {
			if (b->gen != trc.gen)
				continue;
			buf_write_header_counts(b);
			if (b->seg)
				msync(b->seg, trc.cfg.segment_size, MS_ASYNC);
		}
	}
	pthread_mutex_unlock(&trc.lock);
	return err;
}

DW_API int
dwt_active(void)
{
	return __atomic_load_n(&trc_on, __ATOMIC_RELAXED);
}

DW_API void
dwt_set_active(int on)
{
	pthread_mutex_lock(&trc.lock);
	trc.active = on != 0;
	trc_set_on();
	pthread_mutex_unlock(&trc.lock);
}

DW_API const char *
dwt_dir(void)
{
	return trc_on ? trc.dir : NULL;
}

DW_API const char *
dwt_program(void)
{
	return trc_on ? trc.program : NULL;
}

/* ---- fork: the child gets its own files, made at its first record ---- */

static void
trc_atfork_prepare(void)
{
	pthread_mutex_lock(&trc.lock);
	prep_fork_prepare();
}

static void
trc_atfork_parent(void)
{
	prep_fork_parent();
	pthread_mutex_unlock(&trc.lock);
}

static void
trc_atfork_child(void)
{
	prep_fork_child();
	pthread_mutex_init(&trc.lock, NULL);
	if (!trc.initialized)
		return;
	pthread_setspecific(trc_key, NULL);
	buf_drop_all();
	if (trc.pfd >= 0) {
		munmap(trc.phdr, FMT_HEADER_PAGE);
		close(trc.pfd);
	}
	trc.pfd = -1;
	trc.phdr = NULL;
	trc.pid = getpid();
	trc.uid = trc_new_uid();
	snprintf(trc.prefix, sizeof trc.prefix, "%s/%s.%d.%016" PRIx64, trc.dir,
	         trc.program, (int)trc.pid, trc.uid);
	clk_pair(&trc.init_ticks, &trc.init_ns);
	trc.next_thread = trc.nthreads = 0;
	trc.bytes = trc.segments = trc.segments_reused = 0;
	trc.gen++;
	trc.need_pfile = 1;
}

/* ---- identity ---- */

/* Asks the callbacks and writes a changed identity (lock held). */
void
trc_refresh_identity(void)
{
	uint32_t task = trc.task_fn ? trc.task_fn() : trc.task;
	uint32_t nt = trc.ntasks_fn ? trc.ntasks_fn() : trc.ntasks;
	if (trc.nthreads_fn) {
		uint32_t n = trc.nthreads_fn();
		if (n > trc.nthreads)
			trc.nthreads = n;
	}
	if (task >= nt)
		nt = task + 1;
	int changed = task != trc.task || nt != trc.ntasks;
	trc.task = task;
	trc.ntasks = nt;
	if (trc.initialized)
		lbl_pfile_identity(changed);
}

static void
trc_identity_set(uint32_t *field, uint32_t v)
{
	pthread_mutex_lock(&trc.lock);
	*field = v;
	if (trc.task >= trc.ntasks)
		trc.ntasks = trc.task + 1;
	if (trc.initialized)
		lbl_pfile_identity(1);
	pthread_mutex_unlock(&trc.lock);
}

DW_API void
dwt_set_task(uint32_t task)
{
	trc_identity_set(&trc.task, task);
}

DW_API void
dwt_set_ntasks(uint32_t ntasks)
{
	trc_identity_set(&trc.ntasks, ntasks ? ntasks : 1);
}

DW_API void
dwt_set_task_fn(uint32_t (*fn)(void))
{
	pthread_mutex_lock(&trc.lock);
	trc.task_fn = fn;
	trc_refresh_identity();
	pthread_mutex_unlock(&trc.lock);
}

DW_API void
dwt_set_ntasks_fn(uint32_t (*fn)(void))
{
	pthread_mutex_lock(&trc.lock);
	trc.ntasks_fn = fn;
	trc_refresh_identity();
	pthread_mutex_unlock(&trc.lock);
}

DW_API void
dwt_set_thread_fn(uint32_t (*fn)(void))
{
	pthread_mutex_lock(&trc.lock);
	trc.thread_fn = fn;
	pthread_mutex_unlock(&trc.lock);
}

DW_API void
dwt_set_nthreads_fn(uint32_t (*fn)(void))
{
	pthread_mutex_lock(&trc.lock);
	trc.nthreads_fn = fn;
	pthread_mutex_unlock(&trc.lock);
}

DW_API uint32_t
dwt_task(void)
{
	pthread_mutex_lock(&trc.lock);
	uint32_t t = trc.task_fn ? trc.task_fn() : trc.task;
	pthread_mutex_unlock(&trc.lock);
	return t;
}

DW_API uint32_t
dwt_ntasks(void)
{
	pthread_mutex_lock(&trc.lock);
	uint32_t n = trc.ntasks_fn ? trc.ntasks_fn() : trc.ntasks;
	pthread_mutex_unlock(&trc.lock);
	return n;
}

DW_API void
dwt_get_stats(dwt_stats *st)
{
	memset(st, 0, sizeof *st);
	pthread_mutex_lock(&trc.lock);
	for (struct buf *b = trc.bufs; b; b = b->next) {
		if (b->gen != trc.gen)
			continue;
		st->records += __atomic_load_n(&b->nrec, __ATOMIC_RELAXED);
		st->lost_disk += b->lost_disk;
		st->lost_cap += b->lost_cap;
		st->threads++;
	}
	st->segments = trc.segments;
	st->segments_reused = trc.segments_reused;
	pthread_mutex_unlock(&trc.lock);
}
