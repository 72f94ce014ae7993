/*
 * The Paraver configurations in cfgs/ say what their descriptions
 * promise.  Each file is parsed and the settings that decide what Paraver
 * shows are checked for their meaning (not compared with a copy):
 *
 * - every window is a thread-level view of the whole trace of the one
 *   application, in nanoseconds, with the thread function the view is
 *   about and plain Adding/As Is elsewhere;
 * - a Last Evt Val view filters exactly one event type, one dwork or
 *   Extrae labels, so its values are that type's;
 * - a State Record Dur. view selects state 1 (Running);
 * - a view with communication lines draws logical ones, and a tag filter
 *   names only the tags the runtime writes (0..3);
 * - every histogram (Analyzer2D) takes its columns from a State As Is
 *   window in code colour (one column per state) over the whole trace,
 *   and its column range starts at 0: with Analyzer2D.ComputeYScale
 *   Paraver starts the range at the smallest non-zero state unless
 *   Analyzer2D.ComputeYScaleZero is set too, which drops Idle (state 0)
 *   and, for % Time, leaves Idle out of every row's total;
 *
 * and the checks themselves are shown to catch the Idle-dropping
 * histogram they exist for.  Then the known answer: tests/data holds a
 * trace of the mandelbrot demo and the figures a real paramedir computed
 * from it with states_profile.cfg, runtime_states.cfg and
 * useful_duration.cfg; `dwork stats` on the same trace must give the
 * same time and % per thread and state, and the same Running time as
 * the burst durations add up to.
 */
#include <dirent.h>
#include <math.h>
#include <sys/wait.h>

#include "testutil.h"

#define CF_MAXSEC 8
#define CF_MAXKV  96

typedef struct cf_kv {
	char key[64];
	char val[448];
} cf_kv;

typedef struct cf_sec {
	int analyzer; /* 0: a window, 1: an Analyzer2D */
	int nkv;
	cf_kv kv[CF_MAXKV];
} cf_sec;

typedef struct cf_file {
	char first[512];
	char version[512];
	int nwindows_declared;
	char desc[1024];
	int nsec;
	cf_sec sec[CF_MAXSEC];
} cf_file;

static void
cf_trim(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		s[--n] = 0;
}

/* A window line "key value..." (window_filter_module keeps its second
 * word in the key: "window_filter_module evt_type"); an analyzer line
 * "Analyzer2D.Key: value". */
static void
cf_add(cf_sec *s, const char *line)
{
	if (s->nkv == CF_MAXKV)
		return;
	cf_kv *kv = &s->kv[s->nkv++];
	size_t k = s->analyzer ? strcspn(line, ":") : strcspn(line, " ");
	if (!s->analyzer && !strncmp(line, "window_filter_module ", 21))
		k = 21 + strcspn(line + 21, " ");
	snprintf(kv->key, sizeof kv->key, "%.*s", (int)k, line);
	const char *v = line + k;
	while (*v == ':' || *v == ' ')
		v++;
	snprintf(kv->val, sizeof kv->val, "%s", v);
}

static void
cf_parse(const char *text, cf_file *f)
{
	memset(f, 0, sizeof *f);
	int in_desc = 0;
	cf_sec *cur = NULL;
	for (const char *p = text; *p;) {
		char line[512];
		size_t n = strcspn(p, "\n");
		snprintf(line, sizeof line, "%.*s", (int)n, p);
		p += n + (p[n] == '\n');
		cf_trim(line);
		if (!*f->first) {
			snprintf(f->first, sizeof f->first, "%s", line);
		} else if (!strcmp(line, "ConfigFile.BeginDescription")) {
			in_desc = 1;
		} else if (!strcmp(line, "ConfigFile.EndDescription")) {
			in_desc = 0;
		} else if (in_desc) {
			size_t l = strlen(f->desc);
			snprintf(f->desc + l, sizeof f->desc - l, "%s", line);
		} else if (!strncmp(line, "ConfigFile.Version: ", 20)) {
			snprintf(f->version, sizeof f->version, "%s",
			         line + 20);
		} else if (!strncmp(line, "ConfigFile.NumWindows: ", 23)) {
			f->nwindows_declared = atoi(line + 23);
		} else if (!strncmp(line, "< NEW DISPLAYING WINDOW", 23) ||
		           !strcmp(line, "< NEW ANALYZER2D >")) {
			REQUIRE(f->nsec < CF_MAXSEC);
			cur = &f->sec[f->nsec++];
			cur->analyzer = line[6] == 'A';
		} else if (cur && *line && *line != '#') {
			cf_add(cur, line);
		}
	}
}

static const char *
cf_get(const cf_sec *s, const char *key)
{
	for (int i = 0; i < s->nkv; i++)
		if (!strcmp(s->kv[i].key, key))
			return s->kv[i].val;
	return NULL;
}

static int
cf_is(const cf_sec *s, const char *key, const char *want)
{
	const char *v = cf_get(s, key);
	return v && !strcmp(v, want);
}

static double
cf_num(const cf_sec *s, const char *key)
{
	const char *v = cf_get(s, key);
	return v ? strtod(v, NULL) : NAN;
}

/* The window with window_id id, or NULL. */
static const cf_sec *
cf_window(const cf_file *f, int id)
{
	for (int i = 0; i < f->nsec; i++)
		if (!f->sec[i].analyzer &&
		    cf_num(&f->sec[i], "window_id") == (double)id)
			return &f->sec[i];
	return NULL;
}

/* ---- checks: each returns the number of problems, named on stderr ---- */

static int cf_problems;
static const char *cf_name;

static void
cf_problem(const char *what)
{
	fprintf(stderr, "%s: %s\n", cf_name, what);
	cf_problems++;
}

#define CF_WANT(cond, what)                                                    \
	do {                                                                   \
		if (!(cond))                                                   \
			cf_problem(what);                                      \
	} while (0)

/* "{name, value}" of the thread level in window_selected_functions. */
static void
cf_function(const cf_sec *w, const char *level, char *out, size_t n)
{
	const char *v = cf_get(w, "window_selected_functions");
	char pat[32];
	snprintf(pat, sizeof pat, "{%s, ", level);
	const char *p = v ? strstr(v, pat) : NULL;
	*out = 0;
	if (p) {
		p += strlen(pat);
		snprintf(out, n, "%.*s", (int)strcspn(p, "}"), p);
	}
}

/* window_selected_functions holds 14 functions, Active Thd on CPUs and
 * Adding above the thread, so a row is exactly one thread's value. */
static void
check_functions(const cf_sec *w)
{
	const char *v = cf_get(w, "window_selected_functions");
	CF_WANT(v && !strncmp(v, "{ 14, {", 7),
	        "window_selected_functions does not hold 14 functions");
	static const char *adding[] = {"appl", "task", "node", "system",
	                               "workload"};
	char fn[64];
	for (size_t i = 0; i < sizeof adding / sizeof *adding; i++) {
		cf_function(w, adding[i], fn, sizeof fn);
		CF_WANT(!strcmp(fn, "Adding"), "a level above thread is not "
		                               "Adding");
	}
	cf_function(w, "cpu", fn, sizeof fn);
	CF_WANT(!strcmp(fn, "Active Thd"), "the cpu function is not Active "
	                                   "Thd");
	const char *c = cf_get(w, "window_compose_functions");
	CF_WANT(c && !strncmp(c, "{ 9, {", 6), "compose functions not 9");
	int as_is = 0;
	for (const char *p = c; p && (p = strstr(p, ", As Is}")); p++)
		as_is++;
	CF_WANT(as_is == 9, "a compose function is not As Is");
}

/* The event types a Last Evt Val view may show: dwork's remote function
 * and the user functions (Extrae's 60000019). */
static int
cf_known_type(unsigned long t)
{
	return t == 71000001ul || t == 60000019ul;
}

static void
check_semantic(const cf_sec *w)
{
	char fn[64];
	cf_function(w, "thread", fn, sizeof fn);
	const char *et = cf_get(w, "window_filter_module evt_type");
	char evt[16];
	cf_function(w, "evt_type", evt, sizeof evt);
	if (!strcmp(fn, "Last Evt Val")) {
		unsigned long n = 0, t = 0;
		CF_WANT(!strcmp(evt, "="), "Last Evt Val without an "
		                           "evt_type = filter");
		CF_WANT(et && sscanf(et, "%lu %lu", &n, &t) == 2 && n == 1 &&
		            cf_known_type(t),
		        "Last Evt Val filters other than one known type");
	} else if (!strcmp(fn, "State Record Dur.")) {
		const char *m = cf_get(w, "window_semantic_module");
		unsigned np = 0, nv = 0;
		double s = -1;
		CF_WANT(m &&
		            sscanf(m, "thread State Record Dur. { %u, { %u %lf",
		                   &np, &nv, &s) == 3 &&
		            np == 1 && nv == 1 && s == 1.0,
		        "State Record Dur. does not select state 1 alone");
		CF_WANT(
		    cf_is(w, "window_color_mode", "window_in_gradient_mode"),
		    "a duration view not in gradient colours");
	} else {
		CF_WANT(!strcmp(fn, "State As Is"), "unknown thread function");
		CF_WANT(!et, "a state view filters event types");
	}
}

static void
check_comms(const cf_sec *w)
{
	if (!cf_is(w, "window_comm_lines_enabled", "true"))
		return;
	CF_WANT(cf_is(w, "window_logical_filtered", "true"),
	        "communication lines without logical communications");
	char tag[16];
	cf_function(w, "tag_msg", tag, sizeof tag);
	const char *f = cf_get(w, "window_filter_module tag_msg");
	if (!strcmp(tag, "All")) {
		CF_WANT(!f, "tag values listed but the tag function is All");
		return;
	}
	CF_WANT(!strcmp(tag, "="), "tag filter is neither All nor =");
	unsigned n = 0, a = 9, b = 9, c = 9;
	int got = f ? sscanf(f, "%u %u %u %u", &n, &a, &b, &c) : 0;
	CF_WANT(got == 1 + (int)n && n >= 1 && n <= 3 && a <= 5 &&
	            (n < 2 || b <= 5) && (n < 3 || c <= 5),
	        "tag filter names a tag the runtime never writes");
}

static void
check_window(const cf_sec *w)
{
	CF_WANT(cf_is(w, "window_type", "single"), "window is not single");
	CF_WANT(cf_is(w, "window_level", "thread"), "level is not thread");
	CF_WANT(cf_is(w, "window_object", "appl { 1, { All } }"),
	        "window does not show every thread of the application");
	CF_WANT(cf_num(w, "window_begin_time_relative") == 0.0 &&
	            cf_num(w, "window_end_time_relative") == 1.0,
	        "window does not span the whole trace");
	CF_WANT(cf_is(w, "window_units", "Nanoseconds"),
	        "units are not the trace's nanoseconds");
	CF_WANT(cf_get(w, "window_name") != NULL, "window without a name");
	check_functions(w);
	check_semantic(w);
	check_comms(w);
}

/* A histogram of states whose columns start at Idle and whose % are of
 * each thread's whole time. */
static void
check_analyzer(const cf_file *f, const cf_sec *a)
{
	const cf_sec *ctl = cf_window(f, (int)cf_num(a, "Analyzer2D."
	                                                "ControlWindow"));
	const cf_sec *dat = cf_window(f, (int)cf_num(a, "Analyzer2D."
	                                                "DataWindow"));
	CF_WANT(ctl && dat, "histogram names a window the file lacks");
	if (!ctl || !dat)
		return;
	char fn[64];
	cf_function(ctl, "thread", fn, sizeof fn);
	CF_WANT(!strcmp(fn, "State As Is"),
	        "histogram columns are not states (State As Is)");
	/* code colour: Paraver's computed scale then has delta 1, one
	 * column per state value */
	CF_WANT(cf_is(ctl, "window_color_mode", "window_in_code_mode"),
	        "histogram control window not in code colour");
	CF_WANT(cf_is(a, "Analyzer2D.Accumulator", "Semantic"),
	        "histogram does not accumulate by semantic value");
	const char *st = cf_get(a, "Analyzer2D.Statistic");
	CF_WANT(st && (!strcmp(st, "Time") || !strcmp(st, "% Time")),
	        "histogram statistic is neither Time nor % Time");
	CF_WANT(cf_is(a, "Analyzer2D.AnalysisLimits", "Alltrace"),
	        "histogram does not cover the whole trace");
	CF_WANT(cf_num(a, "Analyzer2D.Minimum") == 0.0 &&
	            cf_num(a, "Analyzer2D.Delta") == 1.0,
	        "histogram range does not start at state 0 in steps of 1");
	if (cf_is(a, "Analyzer2D.ComputeYScale", "True"))
		CF_WANT(cf_is(a, "Analyzer2D.ComputeYScaleZero", "True"),
		        "ComputeYScale without ComputeYScaleZero drops Idle");
	else
		CF_WANT(cf_num(a, "Analyzer2D.Maximum") >= 32.0,
		        "fixed histogram range ends before the last state");
}

static int
check_file(const char *name, const char *text)
{
	cf_file *f = calloc(1, sizeof *f);
	REQUIRE(f);
	cf_parse(text, f);
	cf_name = name;
	int before = cf_problems, nwin = 0;
	CF_WANT(!strcmp(f->first, "#ParaverCFG"), "not a #ParaverCFG file");
	CF_WANT(!strcmp(f->version, "3.4"), "ConfigFile.Version is not 3.4");
	CF_WANT(!strncmp(f->desc, "dwork: ", 7), "no dwork description");
	for (int i = 0; i < f->nsec; i++)
		if (!f->sec[i].analyzer) {
			nwin++;
			CF_WANT(cf_num(&f->sec[i], "window_id") == (double)nwin,
			        "window ids are not 1..N in order");
			check_window(&f->sec[i]);
		}
	CF_WANT(nwin > 0 && nwin == f->nwindows_declared,
	        "ConfigFile.NumWindows does not count the windows");
	for (int i = 0; i < f->nsec; i++)
		if (f->sec[i].analyzer)
			check_analyzer(f, &f->sec[i]);
	free(f);
	return cf_problems - before;
}

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t n = 0, cap = 0, r;
	do {
		if (n + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 65536;
			buf = realloc(buf, cap);
			REQUIRE(buf);
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
	} while (r);
	fclose(f);
	buf[n] = 0;
	return buf;
}

/* Every .cfg file in dir; returns how many. */
static int
check_all(const char *dir)
{
	DIR *d = opendir(dir);
	REQUIRE(d);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 5 || strcmp(e->d_name + l - 4, ".cfg"))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		char *text = slurp(path);
		REQUIRE(text);
		int p = check_file(e->d_name, text);
		printf("%s: %s\n", e->d_name, p ? "PROBLEMS" : "ok");
		CHECK(p == 0);
		free(text);
		n++;
	}
	closedir(d);
	return n;
}

/* The checks catch what they are for: the histogram of before the fix
 * (ComputeYScale alone), and others. */
static void
check_catches(const char *dir)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/runtime_states.cfg", dir);
	char *good = slurp(path);
	REQUIRE(good);
	CHECK(check_file("runtime_states.cfg (as shipped)", good) == 0);
	static const struct {
		const char *from, *to;
	} breaks[] = {
	    {"Analyzer2D.ComputeYScaleZero: True\n", ""},
	    {"Analyzer2D.ComputeYScaleZero: True",
	     "Analyzer2D.ComputeYScaleZero: "
	     "False"},
	    {"Analyzer2D.Minimum: 0.000000000000", "Analyzer2D.Minimum: 1"},
	    {"window_in_code_mode", "window_in_gradient_mode"},
	    {"{thread, State As Is}", "{thread, Last Evt Val}"},
	    {"ConfigFile.NumWindows: 1", "ConfigFile.NumWindows: 2"},
	    {"{task, Adding}", "{task, Maximum}"},
	};
	for (size_t i = 0; i < sizeof breaks / sizeof *breaks; i++) {
		const char *at = strstr(good, breaks[i].from);
		REQUIRE(at);
		size_t pre = (size_t)(at - good), fl = strlen(breaks[i].from);
		char *bad = malloc(strlen(good) + strlen(breaks[i].to) + 1);
		REQUIRE(bad);
		sprintf(bad, "%.*s%s%s", (int)pre, good, breaks[i].to, at + fl);
		char name[128];
		snprintf(name, sizeof name, "broken runtime_states.cfg #%zu",
		         i + 1);
		int p = check_file(name, bad);
		CHECK(p > 0);
		free(bad);
	}
	cf_problems = 0; /* the broken ones were meant to fail */
	free(good);
}

/* ---- the known answer: paramedir's figures for a stored trace ---- */

#define PM_MAXROW 32
#define PM_MAXCOL 32

/* A paramedir histogram: a header of column names, then one row a
 * thread, up to the first empty line (Paraver's totals follow). */
typedef struct pm_table {
	int nrow, ncol;
	char col[PM_MAXCOL][128];
	char row[PM_MAXROW][128];
	double v[PM_MAXROW][PM_MAXCOL];
} pm_table;

/* The tab-separated fields of line (modified in place). */
static int
pm_split(char *line, char **f, int max)
{
	int n = 0;
	for (char *p = line; n < max;) {
		f[n++] = p;
		p = strchr(p, '\t');
		if (!p)
			break;
		*p++ = 0;
	}
	while (n && !*f[n - 1]) /* the trailing tab */
		n--;
	return n;
}

static void
pm_read(const char *path, pm_table *t)
{
	char *text = slurp(path);
	REQUIRE(text);
	memset(t, 0, sizeof *t);
	char *save = NULL;
	char *line = strtok_r(text, "\n", &save);
	REQUIRE(line);
	char *f[PM_MAXCOL + 1];
	int n = pm_split(line, f, PM_MAXCOL + 1);
	REQUIRE(n >= 2 && !*f[0]);
	for (int i = 1; i < n; i++)
		snprintf(t->col[t->ncol++], sizeof t->col[0], "%s", f[i]);
	/* strtok_r skips empty lines, so stop at the first totals row */
	while ((line = strtok_r(NULL, "\n", &save)) &&
	       strncmp(line, "Total\t", 6)) {
		REQUIRE(t->nrow < PM_MAXROW);
		n = pm_split(line, f, PM_MAXCOL + 1);
		REQUIRE(n == t->ncol + 1);
		snprintf(t->row[t->nrow], sizeof t->row[0], "%s", f[0]);
		for (int i = 1; i < n; i++)
			t->v[t->nrow][i - 1] = strtod(f[i], NULL);
		t->nrow++;
	}
	free(text);
}

/* What `dwork stats` says: per thread (in trace order) ns per state
 * name, from --csv, and the % column of the report. */
typedef struct st_thread {
	char name[128];
	int nstate;
	char state[PM_MAXCOL][128];
	double ns[PM_MAXCOL], pct[PM_MAXCOL];
} st_thread;

typedef struct st_stats {
	int nthread;
	st_thread th[PM_MAXROW];
	double elapsed_ns;
} st_stats;

static char *
run_stats(const char *args)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "'%s' stats %s", DWORK_TOOL_PATH, args);
	FILE *p = popen(cmd, "r");
	REQUIRE(p);
	size_t n = 0, cap = 1 << 16;
	char *out = malloc(cap);
	REQUIRE(out);
	for (size_t r; (r = fread(out + n, 1, cap - n - 1, p)) > 0;) {
		n += r;
		if (cap - n < 4096) {
			cap *= 2;
			out = realloc(out, cap);
			REQUIRE(out);
		}
	}
	out[n] = 0;
	CHECK(pclose(p) == 0);
	return out;
}

/* --csv: "thread,T,H,,NAME,,," then "state,T,H,S,NAME,COUNT,NS,MAX". */
static void
st_read_csv(char *csv, st_stats *s)
{
	char *save = NULL;
	for (char *l = strtok_r(csv, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char name[128];
		double ns;
		if (!strncmp(l, "thread,", 7)) {
			REQUIRE(s->nthread < PM_MAXROW);
			st_thread *t = &s->th[s->nthread++];
			const char *p = l;
			for (int i = 0; i < 4 && p; i++)
				p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
			REQUIRE(p);
			snprintf(t->name, sizeof t->name, "%.*s",
			         (int)strcspn(p, ","), p);
		} else if (!strncmp(l, "state,", 6) && s->nthread) {
			st_thread *t = &s->th[s->nthread - 1];
			REQUIRE(sscanf(l, "state,%*u,%*u,%*u,%127[^,],%*u,%lf",
			               name, &ns) == 2 &&
			        t->nstate < PM_MAXCOL);
			snprintf(t->state[t->nstate], sizeof t->state[0], "%s",
			         name);
			t->ns[t->nstate++] = ns;
		} else if (!strncmp(l, "metric,,,elapsed_ns,", 20)) {
			REQUIRE(sscanf(l, "metric,,,elapsed_ns,elapsed,,%lf",
			               &s->elapsed_ns) == 1);
		}
	}
}

/* The report's "Time per state" lines end "TIME  %  BURSTS", one a
 * state, in the order --csv lists them. */
static void
st_read_report(char *rep, st_stats *s)
{
	char *save = NULL;
	int in = 0, th = 0, k = 0, total = 0;
	for (char *l = strtok_r(rep, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(l, "Time per state", 14)) {
			in = 1;
			continue;
		}
		if (!in || strstr(l, " bursts"))
			continue;
		if (*l != ' ')
			break; /* the next section */
		double pct;
		char *end = l + strlen(l), *p2 = NULL;
		for (int i = 0; i < 2; i++) { /* back over bursts, then % */
			while (end > l && end[-1] == ' ')
				end--;
			while (end > l && end[-1] != ' ')
				end--;
			p2 = end;
		}
		REQUIRE(sscanf(p2, "%lf", &pct) == 1);
		while (th < s->nthread && k >= s->th[th].nstate) {
			th++;
			k = 0;
		}
		REQUIRE(th < s->nthread);
		s->th[th].pct[k++] = pct;
		total++;
	}
	int want = 0;
	for (int i = 0; i < s->nthread; i++)
		want += s->th[i].nstate;
	CHECK(total == want);
}

static double
st_ns(const st_thread *t, const char *state, double *pct)
{
	for (int i = 0; i < t->nstate; i++)
		if (!strcmp(t->state[i], state)) {
			*pct = t->pct[i];
			return t->ns[i];
		}
	*pct = 0;
	return 0;
}

/* Threads per task of the stored trace, from its header
 * "...:NAPPL:NTASKS(NTH:NODE,...)"; returns the number of tasks. */
static int
prv_tasks(const char *prv, int *nth, int max)
{
	FILE *f = fopen(prv, "r");
	REQUIRE(f);
	char line[4096];
	REQUIRE(fgets(line, sizeof line, f));
	fclose(f);
	char *p = strrchr(line, '(');
	int n = 0;
	while (p && (*p == '(' || *p == ',') && n < max) {
		nth[n++] = (int)strtol(p + 1, &p, 10);
		p = strpbrk(p, ",)");
		if (p && *p == ')')
			break;
	}
	return n;
}

/* paramedir's useful_duration.cfg timeline (object, begin, duration,
 * value: a Running burst's length, else 0): per thread, the values add
 * up to the Running time dwork stats reports. */
static void
check_useful_duration(const st_stats *s)
{
	int nth[PM_MAXROW],
	    ntask = prv_tasks(DW_PARAMEDIR_DATA "/trace.prv", nth, PM_MAXROW);
	double sum[PM_MAXROW] = {0};
	FILE *f = fopen(DW_PARAMEDIR_DATA "/useful_duration.csv", "r");
	REQUIRE(f);
	char line[256];
	int rows = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned a, t, h;
		double b, d, v;
		REQUIRE(sscanf(line, "%u.%u.%u\t%lf\t%lf\t%lf", &a, &t, &h, &b,
		               &d, &v) == 6);
		REQUIRE(a == 1 && t >= 1 && (int)t <= ntask && h >= 1 &&
		        (int)h <= nth[t - 1]);
		CHECK(v == 0 || v == d); /* a burst's value is its length */
		int idx = (int)h - 1;
		for (unsigned i = 1; i < t; i++)
			idx += nth[i - 1];
		REQUIRE(idx < PM_MAXROW);
		sum[idx] += v;
		rows++;
	}
	fclose(f);
	CHECK(rows > 0);
	for (int i = 0; i < s->nthread; i++) {
		double pct, ns = st_ns(&s->th[i], "Running", &pct);
		CHECK(fabs(sum[i] - ns) < 0.5);
	}
}

/* paramedir's Time (ns) and % Time against dwork stats, cell by cell;
 * a state paramedir shows as 0 is one stats may leave out.  paramedir
 * prints 2 decimals, the report 1. */
static void
check_known_answer(void)
{
	static pm_table time_t_, pct_t;
	static st_stats s;
	pm_read(DW_PARAMEDIR_DATA "/states_profile.txt", &time_t_);
	pm_read(DW_PARAMEDIR_DATA "/runtime_states.txt", &pct_t);
	char *csv = run_stats("--csv '" DW_PARAMEDIR_DATA "/trace.prv'");
	char *rep = run_stats("'" DW_PARAMEDIR_DATA "/trace.prv'");
	st_read_csv(csv, &s);
	st_read_report(rep, &s);
	free(csv);
	free(rep);
	REQUIRE(s.elapsed_ns > 0);
	CHECK(time_t_.nrow == s.nthread && pct_t.nrow == s.nthread);
	CHECK(!strcmp(time_t_.col[0], "Idle") && !strcmp(pct_t.col[0], "Idle"));
	int cells = 0;
	for (int r = 0; r < time_t_.nrow && r < s.nthread; r++) {
		const st_thread *t = &s.th[r];
		CHECK(!strcmp(time_t_.row[r], t->name));
		double row_pct = 0;
		for (int c = 0; c < time_t_.ncol; c++) {
			double pct, ns = st_ns(t, time_t_.col[c], &pct);
			double want_ns = time_t_.v[r][c],
			       want_pct = pct_t.v[r][c];
			CHECK(!strcmp(time_t_.col[c], pct_t.col[c]));
			CHECK(fabs(ns - want_ns) < 0.5);
			CHECK(fabs(100.0 * ns / s.elapsed_ns - want_pct) <=
			      0.0051);
			CHECK(fabs(pct - want_pct) <= 0.0501);
			if (fabs(ns - want_ns) >= 0.5 ||
			    fabs(pct - want_pct) > 0.0501)
				fprintf(stderr,
				        "%s, %s: stats %.0f ns %.1f %%, "
				        "paramedir %.0f ns %.2f %%\n",
				        t->name, time_t_.col[c], ns, pct,
				        want_ns, want_pct);
			row_pct += want_pct;
			cells++;
		}
		CHECK(fabs(row_pct - 100.0) < 0.05); /* Idle is in the total */
	}
	check_useful_duration(&s);
	printf("known answer: %d cells of paramedir's Time and %% Time "
	       "compared with dwork stats\n",
	       cells);
}

int
main(void)
{
	int n = check_all(DW_CFGS_DIR);
	printf("%d cfgs checked\n", n);
	CHECK(n >= 8);
	check_catches(DW_CFGS_DIR);
	check_known_answer();
	return tu_report("cfgs");
}
