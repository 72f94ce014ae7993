/*
 * What the flood tests share (flood, flood_defaults, flood_links): a
 * process's RSS, a monotonic clock, a worker's OS pid, and a sampler
 * thread that follows one process's peak RSS.  Include after rt_util.h
 * (its "whoami").
 */
#ifndef DW_TESTS_FLOOD_UTIL_H
#define DW_TESTS_FLOOD_UTIL_H

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <dwork/dwork.h>

#define MIB (1u << 20)

static inline long
proc_rss_kb(int pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static inline double
now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The OS pid of worker w (rt_util.h's whoami), -1 if it does not say. */
static inline int
pid_of(int w)
{
	void *res;
	size_t n;
	int pid = -1;
	if (dw_remotecall_fetch(w, "whoami", NULL, 0, &res, &n) == DW_OK) {
		pid = ((int *)res)[1];
		free(res);
	}
	return pid;
}

/* Stops pid (SIGSTOP) and waits until it really is stopped (state T in
 * /proc): kill returns before the signal has taken effect.  0, or -1. */
static inline int
stop_proc(int pid)
{
	if (kill(pid, SIGSTOP) != 0)
		return -1;
	for (int i = 0; i < 2000; i++) {
		char path[64], st = 0;
		snprintf(path, sizeof path, "/proc/%d/stat", pid);
		FILE *f = fopen(path, "r");
		int ok = f && fscanf(f, "%*d (%*[^)]) %c", &st) == 1;
		if (f)
			fclose(f);
		if (ok && (st == 'T' || st == 't'))
			return 0;
		usleep(1000);
	}
	return -1;
}

/* Peak RSS of pid, sampled every 2 ms until stop is set. */
struct sampler {
	int pid;
	long max;
	volatile int stop;
};

static inline void *
sample(void *p)
{
	struct sampler *s = p;
	while (!s->stop) {
		long kb = proc_rss_kb(s->pid);
		s->max = kb > s->max ? kb : s->max;
		usleep(2000);
	}
	return NULL;
}

#endif
