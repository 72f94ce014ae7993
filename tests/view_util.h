/*
 * Helpers of the view tests (the OTF2 and Chrome JSON writers): golden
 * traces with known regions, a merge into any formats, and the counts
 * that real readers — python's json module, otf2-print — find in what
 * we wrote, beside the counts read back from our own .prv.
 */
#ifndef DW_TESTS_VIEW_UTIL_H
#define DW_TESTS_VIEW_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "merge/merge.h"
#include "output/writers.h"
#include "merge_synth.h"
#include "testutil.h"

enum { VU_RECV = 1, VU_LOG = 2, VU_PHY = 4 };

/* ---- Golden traces ------------------------------------------------------- */

/*
 * Trace A: two tasks on one host.  Task 0 runs compute() with a Waiting
 * state and a nested call inside it, sends a message to task 1, labels
 * its events; task 1 enters compute() when its first state begins.
 * Merged (t0 = 1000 ns, duration 1000 ns):
 *   A0: Running [0,300) Waiting [300,400) Running [400,800) Idle [800,1000)
 *       compute [200,700), inner [500,600): 2 functions, 8 state pieces
 *   B0: Running [0,900) Idle [900,1000); compute [0,600): 1 + 3
 * so 14 regions (11 state pieces, 3 calls), Running 1600 ns, Waiting
 * 100 ns, Idle 300 ns, 2 events, 1 message.
 */
static inline void
vu_trace_a(const char *dir)
{
	ms_proc a, b;
	ms_thread t;

	ms_proc_init(&a, dir, 0xa1, 100, 0);
	ms_label_type(&a, 1000, "Phase");
	ms_label_value(&a, 1000, 5, "five \"5\"");
	ms_label_func(&a, 0x400100, "compute");
	ms_label_func(&a, 0x400200, "inner");
	ms_label_thread(&a, 0, "main");
	ms_proc_end(&a, 2000);
	ms_thread_open(&t, &a, 0);
	ms_push(&t, 1000, 1);
	ms_event(&t, 1100, 1000, 5);
	ms_enter(&t, 1200, 0x400100);
	ms_comm(&t, 1250, VU_LOG | VU_PHY, 1, 1, 16, 7);
	ms_push(&t, 1300, 3);
	ms_pop(&t, 1400);
	ms_enter(&t, 1500, 0x400200);
	ms_exit(&t, 1600, 0x400200);
	ms_exit(&t, 1700, 0x400100);
	ms_pop(&t, 1800);
	ms_event(&t, 1850, 1001, 7);
	ms_thread_close(&t);
	ms_proc_close(&a);

	ms_proc_init(&b, dir, 0xb2, 200, 1);
	ms_label_func(&b, 0x500100, "compute");
	ms_proc_end(&b, 2000);
	ms_thread_open(&t, &b, 0);
	ms_push(&t, 1000, 1);
	ms_enter(&t, 1000, 0x500100);
	ms_comm(&t, 1350, VU_RECV | VU_LOG | VU_PHY, 0, 1, 16, 7);
	ms_exit(&t, 1600, 0x500100);
	ms_pop(&t, 1900);
	ms_thread_close(&t);
	ms_proc_close(&b);
}

/*
 * Trace B: recursion, a task id that never traced, a killed process
 * still inside a function, a thread with events only, a function name
 * that is not UTF-8 and holds a quote.  t0 = 100, duration 600:
 *   T0: Running [0,500) Idle [500,600); f [100,400) and f [200,300)
 *       inside it: 2 calls, 6 pieces
 *   task 1: not traced
 *   task 2 thread 0 (killed at 300): state 5 [50,200); g [150,200)
 *       left open: 1 call, 2 pieces
 *   task 2 thread 1: one event, no state
 * so 11 regions (8 pieces, 3 calls), 2 events, no message.
 */
static inline void
vu_trace_b(const char *dir)
{
	ms_proc p0, p2;
	ms_thread t;

	ms_proc_init(&p0, dir, 0x10, 10, 0);
	ms_label_func(&p0, 0x600000, "f");
	ms_proc_end(&p0, 700);
	ms_thread_open(&t, &p0, 0);
	ms_push(&t, 100, 1);
	ms_enter(&t, 200, 0x600000);
	ms_enter(&t, 300, 0x600000);
	ms_exit(&t, 400, 0x600000);
	ms_exit(&t, 500, 0x600000);
	ms_pop(&t, 600);
	ms_thread_close(&t);
	ms_proc_close(&p0);

	ms_proc_init(&p2, dir, 0x12, 12, 2);
	ms_label_func(&p2, 0x700000, "g\"\xff\x01");
	ms_thread_open(&t, &p2, 0);
	ms_push(&t, 150, 5);
	ms_enter(&t, 250, 0x700000);
	ms_event(&t, 300, 1000, 1);
	ms_thread_close(&t);
	ms_thread_open(&t, &p2, 1);
	ms_event(&t, 400, 1002, 9);
	ms_thread_close(&t);
	ms_proc_close(&p2);
}

/*
 * A random trace (seeded): two processes of two threads, each a few
 * hundred records of state pushes and pops, function entries and exits,
 * events and messages, many at the same time as the one before, so
 * states and functions cross each other every way they can.
 */
static inline uint32_t
vu_rand(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

static inline void
vu_random_thread_n(ms_proc *p, uint32_t tid, uint64_t *seed, int n)
{
	ms_thread t;
	uint64_t now = 1000;
	int states = 0, funcs = 0;

	ms_thread_open(&t, p, tid);
	for (int i = 0; i < n; i++) {
		uint32_t r = vu_rand(seed) % 100;

		now += vu_rand(seed) % 3 ? vu_rand(seed) % 50 : 0;
		if (r < 25 && states < 6) {
			ms_push(&t, now, 1 + vu_rand(seed) % 6);
			states++;
		} else if (r < 40 && states) {
			ms_pop(&t, now);
			states--;
		} else if (r < 60 && funcs < 8) {
			ms_enter(&t, now, 0x1000 + (vu_rand(seed) % 5) * 16);
			funcs++;
		} else if (r < 80 && funcs) {
			ms_exit(&t, now, 0);
			funcs--;
		} else if (r < 92) {
			ms_event(&t, now, 500 + vu_rand(seed) % 3,
			         vu_rand(seed) % 4);
		} else {
			ms_comm(&t, now, (vu_rand(seed) & 1) | VU_LOG | VU_PHY,
			        1 - p->task, 0, 8, vu_rand(seed) % 16);
		}
	}
	ms_thread_close(&t);
}

static inline void
vu_random_thread(ms_proc *p, uint32_t tid, uint64_t *seed)
{
	vu_random_thread_n(p, tid, seed, 300);
}

/* Two tasks of two threads of n >= 300 random steps each (vu_trace_random's
 * 300: 1,200 records). */
static inline void
vu_trace_random_n(const char *dir, uint64_t seed, int n)
{
	for (uint32_t k = 0; k < 2; k++) {
		ms_proc p;

		ms_proc_init(&p, dir, 0x500 + k, 500 + k, k);
		for (int f = 0; f < 5; f++) {
			char name[16];

			snprintf(name, sizeof name, "fn%d", f);
			ms_label_func(&p, 0x1000 + (uint64_t)f * 16, name);
		}
		ms_proc_end(&p, 40000 + 50 * (uint64_t)(n - 300));
		vu_random_thread_n(&p, 0, &seed, n);
		vu_random_thread_n(&p, 1, &seed, n);
		ms_proc_close(&p);
	}
}

static inline void
vu_trace_random(const char *dir, uint64_t seed)
{
	vu_trace_random_n(dir, seed, 300);
}

/* ---- Merging ------------------------------------------------------------- */

/* Merges dir into prefix in the formats of list ("prv,json,otf2"). */
static inline dw_err
vu_merge(const char *dir, const char *prefix, const char *list, mg_report *rep,
         rd_errlist *errs)
{
	mg_opts o = {.dir = dir};
	const mg_format *f[8];
	char msg[512];
	size_t n = mg_formats_parse(list, f, 8, msg, sizeof msg);
	mg_writer *w;
	dw_err err;

	if (!n) {
		fprintf(stderr, "formats: %s\n", msg);
		return DW_EINVAL;
	}
	REQUIRE(mg_writers_new(f, n, prefix, &w) == DW_OK);
	err = mg_merge(&o, w, errs, rep);
	if (err != DW_OK && w->err[0])
		fprintf(stderr, "merge: %s\n", w->err);
	mg_writer_free(w);
	return err;
}

/* True when this build writes OTF2. */
static inline bool
vu_have_otf2(void)
{
	const mg_format *f = mg_format_find("otf2");

	return f && f->create;
}

/* True when the shell finds cmd. */
static inline bool
vu_have(const char *cmd)
{
	char buf[256];

	snprintf(buf, sizeof buf, "command -v %s >/dev/null 2>&1", cmd);
	return system(buf) == 0;
}

/* ---- Counts -------------------------------------------------------------- */

#define VU_MAXK 64

/* "key value" lines read from a checker's output. */
typedef struct vu_counts {
	char key[VU_MAXK][96];
	long long val[VU_MAXK];
	int n;
	bool ok; /* the checker ran and exited 0 */
} vu_counts;

static inline long long
vu_get(const vu_counts *c, const char *key)
{
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->key[i], key))
			return c->val[i];
	return 0;
}

static inline void
vu_add(vu_counts *c, const char *key, long long v)
{
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->key[i], key)) {
			c->val[i] += v;
			return;
		}
	if (c->n < VU_MAXK) {
		snprintf(c->key[c->n], sizeof c->key[0], "%s", key);
		c->val[c->n++] = v;
	}
}

/* Runs cmd and reads "key value" lines. */
static inline void
vu_run(const char *cmd, vu_counts *c)
{
	FILE *p = popen(cmd, "r");
	char line[512], key[96];
	long long v;

	memset(c, 0, sizeof *c);
	REQUIRE(p != NULL);
	while (fgets(line, sizeof line, p))
		if (sscanf(line, "%95s %lld", key, &v) == 2)
			vu_add(c, key, v);
		else
			fprintf(stderr, "%s", line);
	c->ok = pclose(p) == 0;
}

/*
 * The JSON file through python's json module (exact decimals): events by
 * phase and category, ns per state name, calls per function name, flows
 * with both ends, and "nested": 1 when, on every thread, complete events
 * taken as a viewer does (by start, then in file order) nest.
 */
static const char vu_json_py[] =
    "import json, sys, decimal, collections\n"
    "d = json.load(open(sys.argv[1], encoding='utf-8'),"
    " parse_float=decimal.Decimal)\n"
    "c = collections.Counter(); tracks = collections.defaultdict(list)\n"
    "flows = collections.defaultdict(set)\n"
    "ns = lambda x: int(decimal.Decimal(x) * 1000)\n"
    "for i, e in enumerate(d['traceEvents']):\n"
    "    ph = e['ph']; c['events'] += 1; c['ph.' + ph] += 1\n"
    "    if ph == 'X':\n"
    "        c['X.' + e['cat']] += 1\n"
    "        b, du = ns(e['ts']), ns(e['dur'])\n"
    "        if e['cat'] == 'state': c['state.' + e['name']] += du\n"
    "        else: c['func.' + e['name']] += 1\n"
    "        tracks[(e['pid'], e['tid'])].append((b, i, du))\n"
    "    if ph in 'sf': flows[e['id']].add(ph)\n"
    "    if ph == 'M': c['M.' + e['name']] += 1\n"
    "c['flows_paired'] = sum(1 for v in flows.values() if v == {'s','f'})\n"
    "nested = 1\n"
    "for v in tracks.values():\n"
    "    v.sort(); st = []\n"
    "    for b, i, du in v:\n"
    "        while st and st[-1] <= b: st.pop()\n"
    "        if st and b + du > st[-1]: nested = 0\n"
    "        st.append(b + du)\n"
    "c['nested'] = nested\n"
    "c['duration_ns'] = d['otherData']['duration_ns']\n"
    "for k, v in sorted(c.items()): print(k.replace(' ', '_'), v)\n";

static inline bool
vu_json_counts(const char *json, vu_counts *c)
{
	char py[1100], cmd[2400];
	FILE *f;

	memset(c, 0, sizeof *c);
	if (!vu_have("python3"))
		return false;
	snprintf(py, sizeof py, "%s.check.py", json);
	f = fopen(py, "w");
	REQUIRE(f != NULL);
	fputs(vu_json_py, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s'", py, json);
	vu_run(cmd, c);
	unlink(py);
	return true;
}

/* otf2-print's records by kind (ENTER, LEAVE, MPI_SEND, MPI_RECV,
 * METRIC, ...) and "backwards": records whose time is before the one
 * before on their location (compared as strings of equal length: awk's
 * doubles cannot hold the ns); false when otf2-print is missing. */
static inline bool
vu_otf2_counts(const char *anchor, vu_counts *c)
{
	char cmd[1400];

	memset(c, 0, sizeof *c);
	if (!vu_have("otf2-print"))
		return false;
	snprintf(cmd, sizeof cmd,
	         "otf2-print '%s' | awk 'BEGIN { n[\"backwards\"] = 0 } "
	         "/^[A-Z_]+ +[0-9]+ +[0-9]+/ { n[$1]++; t = $3 \"\"; "
	         "p = last[$2] \"\"; if (length(t) < length(p) || "
	         "(length(t) == length(p) && t < p)) n[\"backwards\"]++; "
	         "last[$2] = t } END { for (k in n) print k, n[k] }'",
	         anchor);
	vu_run(cmd, c);
	return true;
}

/* Our own .prv: event pairs that are not user functions ("events"; of
 * them, "run_pairs" of types 71000001 and 71000016 and "run_starts"
 * with a value other than 0),
 * user function pairs ("funcs"), communications ("comms"), state
 * records other than Not created ("states") and ns per state number
 * ("state.N"). */
static inline void
vu_prv_counts(const char *prefix, vu_counts *c)
{
	char path[1100], line[8192], key[32];
	FILE *f;

	memset(c, 0, sizeof *c);
	snprintf(path, sizeof path, "%s.prv", prefix);
	f = fopen(path, "r");
	REQUIRE(f != NULL);
	while (fgets(line, sizeof line, f)) {
		unsigned long long v[64];
		int n = 0;
		char *s = line;

		if (line[0] == '#')
			continue;
		while (n < 64) {
			v[n++] = strtoull(s, &s, 10);
			if (*s != ':')
				break;
			s++;
		}
		if (v[0] == 1 && n == 8 && v[7] != 2) {
			vu_add(c, "states", 1);
			snprintf(key, sizeof key, "state.%llu", v[7]);
			vu_add(c, key, (long long)(v[6] - v[5]));
		} else if (v[0] == 2) {
			for (int i = 6; i + 1 < n; i += 2) {
				vu_add(c,
				       v[i] == 60000019   ? "funcs"
				       : v[i] == 60000119 ? "lines"
				                          : "events",
				       1);
				/* dwork's runs: slices in the JSON */
				if (v[i] == 71000001 || v[i] == 71000016)
					vu_add(c, "run_pairs", 1);
				if ((v[i] == 71000001 || v[i] == 71000016) &&
				    v[i + 1])
					vu_add(c, "run_starts", 1);
			}
		} else if (v[0] == 3) {
			vu_add(c, "comms", 1);
		}
	}
	c->ok = true;
	fclose(f);
}

/* True when path exists. */
static inline bool
vu_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* ---- The dwork tool ------------------------------------------------------ */

/* $DWORK_TOOL, else tools/dwork of this test's build tree; false if
 * neither is there. */
static inline bool
vu_tool(char *tool, size_t len)
{
	const char *e = getenv("DWORK_TOOL");
	char self[900];
	ssize_t n;

	if (e && access(e, X_OK) == 0) {
		snprintf(tool, len, "%s", e);
		return true;
	}
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return false;
	self[n] = '\0';
	*strrchr(self, '/') = '\0';
	snprintf(tool, len, "%s/../tools/dwork", self);
	return access(tool, X_OK) == 0;
}

/* Runs cmd (a shell command line) with stdout and stderr both into
 * out (a file path); returns its exit status. */
static inline int
vu_sh(const char *cmd, const char *out)
{
	char buf[4096];
	int st;

	snprintf(buf, sizeof buf, "%s >'%s' 2>&1", cmd, out);
	st = system(buf);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* True when the file at path contains s. */
static inline bool
vu_file_has(const char *path, const char *s)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;
	bool yes;

	if (!f)
		return false;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	REQUIRE(buf != NULL);
	n = (long)fread(buf, 1, (size_t)n, f);
	buf[n] = '\0';
	fclose(f);
	yes = memmem(buf, (size_t)n, s, strlen(s)) != NULL;
	if (!yes)
		fprintf(stderr, "%s: no '%s' in:\n%.2000s\n", path, s, buf);
	free(buf);
	return yes;
}

#endif
