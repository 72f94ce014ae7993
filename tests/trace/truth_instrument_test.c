/*
 * Ground truth for -finstrument-functions: truth_instrument_prog runs a
 * call tree of known durations (truth_outer: 20 ms, truth_inner's 30 ms,
 * 10 ms; twice) with no tracing call in it, once started by the
 * tracer's API and once by the Extrae API.  From each merged trace:
 *
 * - both functions are named in the .pcf (type 60000019), each entered
 *   twice, truth_inner always inside truth_outer; with the Extrae API,
 *   whose automatic initialisation runs before main (EXTRAE_ON, docs/
 *   extrae-compat.md), main too: entered at the first record, still
 *   entered at the end, the two calls inside it;
 * - each run lasts what the program measured around the call, within
 *   a few ms (never less than nominal: a loaded machine only lengthens
 *   a sleep; the hooks' own time is inside the measured call);
 * - the thread's state between its first record and the end is what the
 *   docs say for the mode: Idle with the tracer's API (no state entered,
 *   docs/merge.md), Running with the Extrae API (docs/extrae-compat.md),
 *   never anything else, and its life holds both calls and fits in the
 *   child process's run (fork to exit, as this test measured it);
 * - the strict checker passes with every flag.
 */
#include <sys/wait.h>
#include <time.h>

#include "merge_util.h"
#include "prv_states.h"

#define MS   1000000ull
#define RUNS 2
#define TOL  (2 * MS) /* the hooks' share of a measured call, at most */

#define FN_TYPE 60000019ull

struct measured {
	uint64_t outer[RUNS], inner[RUNS], span;
};

struct fn_runs {
	uint64_t id;
	int n;
	uint64_t ns[8];
	int depth[8];
};

static uint64_t
mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Runs the program; returns the ns from fork to its exit. */
static uint64_t
run_prog(const char *mode, const char *dir, const char *facts)
{
	uint64_t t0 = mono_ns();
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		/* each mode by its own variables only */
		unsetenv("EXTRAE_CONFIG_FILE");
		unsetenv("EXTRAE_ON");
		if (!strcmp(mode, "dwt")) {
			setenv("DWT_DIR", dir, 1);
			setenv("DWT_PROGRAM", "tinstr", 1);
		} else {
			setenv("EXTRAE_DIR", dir, 1);
			setenv("EXTRAE_FINAL_DIR", dir, 1);
			setenv("EXTRAE_ON", "1", 1);
			setenv("EXTRAE_PROGRAM_NAME", "tinstr", 1);
		}
		execl(TRUTH_INSTRUMENT_PROG, "truth_instrument_prog", mode,
		      facts, (char *)NULL);
		_exit(127);
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	uint64_t ns = mono_ns() - t0;
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return ns;
}

static void
read_facts(const char *path, struct measured *m)
{
	FILE *f = fopen(path, "r");
	REQUIRE(f);
	for (int i = 0; i < RUNS; i++)
		REQUIRE(fscanf(f, "%" SCNu64 " %" SCNu64, &m->outer[i],
		               &m->inner[i]) == 2);
	REQUIRE(fscanf(f, "%" SCNu64, &m->span) == 1);
	fclose(f);
}

/* The id the .pcf gives name under type 60000019; 0 if none. */
static uint64_t
pcf_id(const char *prefix, const char *name)
{
	char path[1024];
	snprintf(path, sizeof path, "%s.pcf", prefix);
	char *s = mt_slurp(path);
	REQUIRE(s);
	const char *blk = strstr(s, " 60000019 ");
	const char *vals = blk ? strstr(blk, "VALUES\n") : NULL;
	uint64_t id = 0;
	for (const char *l = vals; l && *l && *l != '\n' && !id;) {
		l = strchr(l, '\n');
		if (!l || l[1] == '\n')
			break;
		l++;
		char *end;
		uint64_t v = strtoull(l, &end, 10);
		while (*end == ' ' || *end == '\t')
			end++;
		size_t n = strlen(name);
		if (!strncmp(end, name, n) && end[n] == '\n')
			id = v;
	}
	free(s);
	return id;
}

/* The runs of the two functions on task 1 thread 1, read back with the
 * merge's rule (docs/merge.md): a new id enters, the caller's id or 0
 * leaves the innermost.  *first: the first function event's time;
 * returns how many are still entered at the end (*bottom: the
 * outermost). */
static int
read_runs(const char *prefix, struct fn_runs *fr, int nfr, uint64_t *first,
          uint64_t *bottom)
{
	char path[1024], line[8192];
	snprintf(path, sizeof path, "%s.prv", prefix);
	FILE *f = fopen(path, "r");
	REQUIRE(f);
	uint64_t stk[16], at[16];
	int depth = 0;
	*first = UINT64_MAX;
	while (fgets(line, sizeof line, f)) {
		unsigned task, th;
		uint64_t t, ty, v;
		int off = 0;
		if (sscanf(line, "2:%*u:%*u:%u:%u:%" SCNu64 ":%n", &task, &th,
		           &t, &off) != 3 ||
		    task != 1 || th != 1)
			continue;
		for (char *s = line + off; *s && *s != '\n';) {
			ty = strtoull(s, &s, 10);
			s += *s == ':';
			v = strtoull(s, &s, 10);
			s += *s == ':';
			if (ty != FN_TYPE)
				continue;
			if (*first == UINT64_MAX)
				*first = t;
			if (v && (depth < 2 || v != stk[depth - 2])) {
				REQUIRE(depth < 16);
				stk[depth] = v, at[depth++] = t;
				continue;
			}
			REQUIRE(depth > 0);
			depth--;
			for (int k = 0; k < nfr; k++)
				if (fr[k].id == stk[depth] && fr[k].n < 8) {
					fr[k].depth[fr[k].n] = depth;
					fr[k].ns[fr[k].n++] = t - at[depth];
				}
		}
	}
	fclose(f);
	*bottom = depth ? stk[0] : 0;
	return depth;
}

static void
check_fn(const struct fn_runs *r, const char *name, int depth,
         uint64_t nominal_ms, const uint64_t *measured)
{
	printf("  %s (id %" PRIu64 "): %d runs\n", name, r->id, r->n);
	CHECK(r->id != 0);
	CHECK(r->n == RUNS);
	for (int i = 0; i < r->n && i < RUNS; i++) {
		printf("    run %d at depth %d: %.3f ms in the trace, %.3f ms "
		       "measured around the call (nominal %" PRIu64 ")\n",
		       i + 1, r->depth[i], r->ns[i] / 1e6, measured[i] / 1e6,
		       nominal_ms);
		CHECK(r->depth[i] == depth);
		CHECK(measured[i] >= nominal_ms * MS);
		CHECK(r->ns[i] >= nominal_ms * MS);
		CHECK(r->ns[i] <= measured[i] + MS / 20);
		CHECK(r->ns[i] + TOL >= measured[i]);
	}
}

static void
scenario(const char *base, const char *mode)
{
	char dir[700], facts[700], prefix[700];
	snprintf(dir, sizeof dir, "%s/%s", base, mode);
	snprintf(facts, sizeof facts, "%s/%s.facts", base, mode);
	snprintf(prefix, sizeof prefix, "%s/%s-trace", base, mode);
	printf("%s\n", mode);
	fflush(stdout);
	uint64_t wall = run_prog(mode, dir, facts);
	struct measured m;
	read_facts(facts, &m);
	rd_errlist errs;
	rd_errlist_init(&errs, stderr);
	mg_report rep;
	CHECK(mt_merge(dir, prefix, 0, &rep, &errs) == DW_OK);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	rd_errlist_free(&errs);
	mt_check(prefix, PC_ALL, NULL);

	int extrae = !strcmp(mode, "extrae");
	struct fn_runs fr[2] = {{.id = pcf_id(prefix, "truth_outer")},
	                        {.id = pcf_id(prefix, "truth_inner")}};
	uint64_t first, bottom, main_id = pcf_id(prefix, "main");
	int open = read_runs(prefix, fr, 2, &first, &bottom);
	/* main: entered before the session (not seen) or at its start
	 * (Extrae's automatic initialisation), left after it */
	printf("  main (id %" PRIu64 "): %s\n", main_id,
	       open ? "still entered at the end" : "not recorded");
	CHECK(open == extrae);
	CHECK(extrae ? main_id != 0 && bottom == main_id : main_id == 0);
	/* as Extrae: main is entered right after the init's own events
	 * (state 15 Others), before the first call */
	CHECK(!extrae || ps_event_time(prefix, FN_TYPE, main_id) <= first);
	check_fn(&fr[0], "truth_outer", extrae, 60, m.outer);
	check_fn(&fr[1], "truth_inner", extrae + 1, 30, m.inner);

	ps_trace p;
	REQUIRE(ps_load(prefix, &p) == 0);
	CHECK(p.n == 1);
	const ps_thread *t = &p.t[0];
	uint64_t life = t->died - t->born;
	printf("  thread: first record %.3f ms, first call %.3f ms, ends "
	       "%.3f ms of %.3f; Running %.3f ms, Idle %.3f ms; the "
	       "program measured %.3f ms around its init and fini calls (%.3f "
	       "ms from fork to exit)\n",
	       t->born / 1e6, first / 1e6, t->died / 1e6, p.ftime / 1e6,
	       t->ns[1] / 1e6, t->ns[0] / 1e6, m.span / 1e6, wall / 1e6);
	CHECK(t->born <= first);
	CHECK(t->died == p.ftime);
	CHECK(life >= fr[0].ns[0] + fr[0].ns[1]);
	CHECK(life <= wall);
	/* Extrae's mode: Running from init to fini, but for the init's and
	 * the flush's own bursts (15 Others, 12 I/O) as Extrae marks them */
	if (extrae)
		CHECK_EQ_U64(t->ns[1] + t->ns[15] + t->ns[12], life);
	else
		CHECK_EQ_U64(t->ns[0], life);
	CHECK_EQ_U64(t->ns[2], p.ftime - life);
}

int
main(void)
{
	char base[512];
	snprintf(base, sizeof base, "%s", tu_tmpdir("truth-instr"));
	scenario(base, "dwt");
	scenario(base, "extrae");
	if (!tu_failures)
		tu_rmtree(base);
	else
		fprintf(stderr, "traces kept in %s\n", base);
	return tu_report("truth_instrument");
}
