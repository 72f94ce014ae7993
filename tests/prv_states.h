/*
 * Reads the state records of a merged .prv back, per thread: the time in
 * each state, and where the thread's life (states other than Not
 * created) begins and ends.  For the tests of thread begin and end.
 */
#ifndef DW_TESTS_PRV_STATES_H
#define DW_TESTS_PRV_STATES_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PS_MAX_THREADS 64
#define PS_MAX_STATES  32

typedef struct ps_thread {
	uint32_t task, thread; /* Paraver's, from 1 */
	uint64_t ns[PS_MAX_STATES];
	uint64_t born, died; /* first and last ns not in Not created */
	bool alive_seen;
} ps_thread;

typedef struct ps_trace {
	uint64_t ftime;
	ps_thread t[PS_MAX_THREADS];
	size_t n;
} ps_trace;

static inline ps_thread *
ps_get(ps_trace *p, uint32_t task, uint32_t thread)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].task == task && p->t[i].thread == thread)
			return &p->t[i];
	if (p->n == PS_MAX_THREADS)
		return NULL;
	p->t[p->n] = (ps_thread){.task = task, .thread = thread};
	return &p->t[p->n++];
}

/* Reads PREFIX.prv; returns 0, -1 when it cannot be read. */
static inline int
ps_load(const char *prefix, ps_trace *p)
{
	char path[1024], line[4096];
	FILE *f;

	memset(p, 0, sizeof *p);
	snprintf(path, sizeof path, "%s.prv", prefix);
	if (!(f = fopen(path, "r")))
		return -1;
	if (fgets(line, sizeof line, f)) {
		char *c = strchr(line, ')');
		if (c)
			p->ftime = strtoull(c + 2, NULL, 10);
	}
	while (fgets(line, sizeof line, f)) {
		unsigned cpu, appl, task, th, st;
		uint64_t b, e;
		ps_thread *t;

		if (sscanf(line, "1:%u:%u:%u:%u:%" SCNu64 ":%" SCNu64 ":%u",
		           &cpu, &appl, &task, &th, &b, &e, &st) != 7 ||
		    !(t = ps_get(p, task, th)))
			continue;
		if (st < PS_MAX_STATES)
			t->ns[st] += e - b;
		if (st == 2)
			continue;
		if (!t->alive_seen || b < t->born)
			t->born = b;
		if (e > t->died)
			t->died = e;
		t->alive_seen = true;
	}
	fclose(f);
	return 0;
}

/* The time of the first event type = value in PREFIX.prv; UINT64_MAX
 * when there is none. */
static inline uint64_t
ps_event_time(const char *prefix, uint64_t type, uint64_t value)
{
	char path[1024], line[8192];
	uint64_t found = UINT64_MAX;
	FILE *f;

	snprintf(path, sizeof path, "%s.prv", prefix);
	if (!(f = fopen(path, "r")))
		return found;
	while (found == UINT64_MAX && fgets(line, sizeof line, f)) {
		uint64_t v[5], t;
		char *s = line + 2;

		if (strncmp(line, "2:", 2))
			continue;
		for (int i = 0; i < 5; i++)
			v[i] = strtoull(s, &s, 10), s += *s == ':';
		t = v[4];
		while (*s && *s != '\n') {
			uint64_t ty = strtoull(s, &s, 10), va;

			s += *s == ':';
			va = strtoull(s, &s, 10);
			s += *s == ':';
			if (ty == type && va == value) {
				found = t;
				break;
			}
		}
	}
	fclose(f);
	return found;
}

/* |a - b| <= tol */
static inline bool
ps_near(uint64_t a, uint64_t b, uint64_t tol)
{
	return a > b ? a - b <= tol : b - a <= tol;
}

#endif
