/*
 * Hardware counters of the counted threads (live.h): the user-mode
 * cycles and instructions of each executor and master user thread, from
 * perf_event_open, for TALP's "cycles" and "instructions".  A thread
 * opens its own pair once, when it becomes counted (not on the hot
 * path); a blocked thread counts nothing, so the figures are the work a
 * process's counted threads did, the runtime's own instructions on them
 * included.  Where the kernel or the machine has no such counters (a VM
 * without a virtual PMU, perf_event_paranoid > 2) the process says so
 * with the reason, and nothing is made up.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/live.h"

#define HWC_THREADS 256

struct hwc_thr {
	int fd, fd2; /* the group: cycles (leader), instructions */
	int used;
};

static pthread_mutex_t hwc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hwc_thr thr[HWC_THREADS], none = {.fd = -1, .fd2 = -1};
static int nthr;
static int hwc_err;       /* why the counts are not whole, 0 they are */
static uint64_t ended[2]; /* counts of threads that ended */
static pthread_key_t hwc_key;
static pthread_once_t hwc_once = PTHREAD_ONCE_INIT;

static int
hwc_open(uint64_t config, int group)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.size = sizeof a;
	a.type = PERF_TYPE_HARDWARE;
	a.config = config;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.read_format = PERF_FORMAT_GROUP;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, group,
	                    PERF_FLAG_FD_CLOEXEC);
}

/* Reads a group: cycles then instructions; 0, or -1. */
static int
hwc_read(int fd, uint64_t v[2])
{
	uint64_t b[3];
	if (read(fd, b, sizeof b) != (ssize_t)sizeof b || b[0] != 2)
		return -1;
	v[0] = b[1];
	v[1] = b[2];
	return 0;
}

/* A counted thread ends: its counts stay in the process's totals. */
static void
hwc_thread_end(void *arg)
{
	struct hwc_thr *t = arg;
	uint64_t v[2];
	if (t == &none)
		return;
	pthread_mutex_lock(&hwc_lock);
	if (hwc_read(t->fd, v) == 0)
		ended[0] += v[0], ended[1] += v[1];
	close(t->fd2);
	close(t->fd);
	t->fd = t->fd2 = -1;
	t->used = 0;
	pthread_mutex_unlock(&hwc_lock);
}

static void
hwc_key_init(void)
{
	pthread_key_create(&hwc_key, hwc_thread_end);
}

static struct hwc_thr *
hwc_slot(void)
{
	for (int i = 0; i < nthr; i++)
		if (!thr[i].used)
			return &thr[i];
	return nthr < HWC_THREADS ? &thr[nthr++] : NULL;
}

void
hwc_thread_counted(void)
{
	pthread_once(&hwc_once, hwc_key_init);
	if (pthread_getspecific(hwc_key))
		return;
	struct hwc_thr *t = &none;
	pthread_mutex_lock(&hwc_lock);
	struct hwc_thr *s = hwc_err ? NULL : hwc_slot();
	if (!hwc_err && !s)
		hwc_err = ENOSPC; /* more counted threads than slots */
	if (s) {
		int lead = hwc_open(PERF_COUNT_HW_CPU_CYCLES, -1);
		int ins =
		    lead >= 0 ? hwc_open(PERF_COUNT_HW_INSTRUCTIONS, lead) : -1;
		if (ins < 0) {
			hwc_err = errno ? errno : EINVAL;
			if (lead >= 0)
				close(lead);
		} else {
			*s =
			    (struct hwc_thr){.fd = lead, .fd2 = ins, .used = 1};
			t = s;
		}
	}
	pthread_mutex_unlock(&hwc_lock);
	pthread_setspecific(hwc_key, t);
}

int
hwc_totals(uint64_t *cycles, uint64_t *instr)
{
	pthread_mutex_lock(&hwc_lock);
	int err = hwc_err;
	uint64_t v[2], c = ended[0], n = ended[1];
	for (int i = 0; i < nthr && !err; i++)
		if (thr[i].used && hwc_read(thr[i].fd, v) == 0)
			c += v[0], n += v[1];
	pthread_mutex_unlock(&hwc_lock);
	*cycles = c;
	*instr = n;
	return err;
}
