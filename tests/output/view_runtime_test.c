/*
 * Every format on a real traced run: a master and two workers (remote
 * calls, a function of the master's own, an event of its own), traced
 * with the merge at the end left out; then `dwork merge --format
 * prv,json,otf2` on the directory, and `dwork convert` of the merged
 * .prv.  python's json module and otf2-print read what was written, and
 * the counts agree with our .prv: events, messages, time per state,
 * regions between the two formats; the converted trace has the same
 * counts as the merged one.
 */
#include <dwork/trace.h>

#include "rt_util.h"
#include "view_util.h"

#define CALLS 6

static char tool[1024];

static void
compute(int n)
{
	dwt_func_enter((const void *)compute);
	dwt_event(4242, (uint64_t)n);
	usleep(1000);
	dwt_func_exit((const void *)compute);
}

static void
traced_run(void)
{
	for (int i = 0; i < CALLS; i++) {
		void *res;
		size_t len;

		REQUIRE(dw_remotecall_fetch(2 + i % 2, "echo", &i, sizeof i,
		                            &res, &len) == DW_OK);
		free(res);
		compute(i);
	}
	CHECK(dw_finalize() == DW_OK);
}

/* The ns of each labelled state in prv also in js, under its name. */
static void
state_times_agree(const char *prefix, const vu_counts *js, const vu_counts *prv)
{
	char path[800], line[512], key[160];
	unsigned num;
	bool states = false;
	FILE *f;

	snprintf(path, sizeof path, "%s.pcf", prefix);
	f = fopen(path, "r");
	REQUIRE(f != NULL);
	while (fgets(line, sizeof line, f)) {
		char name[128];
		long long want;

		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, "STATES")) {
			states = true;
			continue;
		}
		if (!states || !line[0])
			states = states && line[0];
		if (!states || sscanf(line, "%u %127[^\n]", &num, name) != 2)
			continue;
		for (char *c = name; *c; c++)
			*c = *c == ' ' ? '_' : *c;
		snprintf(key, sizeof key, "state.%u", num);
		want = num == 2 ? 0 : vu_get(prv, key);
		snprintf(key, sizeof key, "state.%s", name);
		if (vu_get(js, key) != want) {
			fprintf(stderr,
			        "state %u: %lld ns in JSON, %lld in .prv\n",
			        num, vu_get(js, key), want);
			tu_failures++;
		}
	}
	fclose(f);
}

/* Calls and results as flows between named slices: each call's flow
 * leaves the master (pid 1) and ends where a run slice named "echo"
 * begins next on the executor (within 1 ms); each result's flow leaves
 * the executor after such a run ended (within 1 ms) and ends on the
 * master.  And the rows' names. */
static const char flows_py[] =
    "import json, sys, collections\n"
    "d = json.load(open(sys.argv[1], encoding='utf-8'))['traceEvents']\n"
    "runs = collections.defaultdict(list); fl = collections.defaultdict(dict)\n"
    "names = set(); c = collections.Counter()\n"
    "for e in d:\n"
    "    if e['ph'] == 'X' and e['cat'] == 'run':\n"
    "        runs[(e['pid'], e['tid'])].append((e['ts'], e['ts'] + e['dur'],"
    " e['name']))\n"
    "    if e['ph'] in 'sf': fl[e['id']][e['ph']] = e\n"
    "    if e['ph'] == 'M' and e['name'] == 'thread_name':"
    " names.add(e['args']['name'])\n"
    "for v in runs.values(): v.sort()\n"
    "for f in fl.values():\n"
    "    s, t = f['s'], f['f']; k = s['name']; c['flow.' + k] += 1\n"
    "    if k == 'call' and s['pid'] == 1:\n"
    "        nxt = [r for r in runs[(t['pid'], t['tid'])] if r[0] >= t['ts']]\n"
    "        if nxt and nxt[0][2] == 'echo' and nxt[0][0] - t['ts'] < 1000:"
    " c['call_to_run'] += 1\n"
    "    if k == 'result' and t['pid'] == 1:\n"
    "        prv = [r for r in runs[(s['pid'], s['tid'])] if r[1] <= s['ts']]\n"
    "        if prv and prv[-1][2] == 'echo' and s['ts'] - prv[-1][1] < 1000:"
    " c['result_from_run'] += 1\n"
    "for n in ('master', 'worker 2 executor 1', 'worker 3 executor 1',"
    " 'worker 2 I/O'):\n"
    "    c['named'] += n in names\n"
    "for k, v in sorted(c.items()): print(k.replace(' ', '_'), v)\n";

static void
check_flows(const char *json)
{
	char py[900], cmd[2000];
	vu_counts c;
	FILE *f;

	snprintf(py, sizeof py, "%s.flows.py", json);
	REQUIRE((f = fopen(py, "w")) != NULL);
	fputs(flows_py, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "python3 '%s' '%s'", py, json);
	vu_run(cmd, &c);
	unlink(py);
	CHECK(c.ok);
	CHECK_EQ_U64(vu_get(&c, "flow.call"), CALLS);
	CHECK_EQ_U64(vu_get(&c, "call_to_run"), CALLS);
	CHECK_EQ_U64(vu_get(&c, "flow.result"), CALLS);
	CHECK_EQ_U64(vu_get(&c, "result_from_run"), CALLS);
	CHECK_EQ_U64(vu_get(&c, "flow.message"), 0);
	CHECK_EQ_U64(vu_get(&c, "named"), 4);
}

/* The JSON and OTF2 outputs at prefix against the merged trace's .prv
 * (its counts) and .pcf (at merged). */
static void
check_outputs(const char *prefix, const char *merged, const vu_counts *prv)
{
	char path[800];
	vu_counts js, o2;

	snprintf(path, sizeof path, "%s.json", prefix);
	REQUIRE(vu_json_counts(path, &js));
	CHECK(js.ok);
	CHECK_EQ_U64(vu_get(&js, "nested"), 1);
	CHECK_EQ_U64(vu_get(&js, "ph.i") + vu_get(prv, "run_pairs"),
	             vu_get(prv, "events"));
	/* every run of a remote function is a slice named after it */
	CHECK_EQ_U64(vu_get(&js, "X.run") + vu_get(&js, "X.batch"),
	             vu_get(prv, "run_starts"));
	CHECK_EQ_U64(vu_get(&js, "func.echo"), CALLS);
	CHECK_EQ_U64(vu_get(&js, "ph.s"), vu_get(prv, "comms"));
	CHECK_EQ_U64(vu_get(&js, "flows_paired"), vu_get(prv, "comms"));
	CHECK_EQ_U64(vu_get(&js, "func.compute"), CALLS);
	CHECK_EQ_U64(vu_get(&js, "M.process_name"), 3);
	state_times_agree(merged, &js, prv);
	check_flows(path);
	if (!vu_have_otf2() || !vu_have("otf2-print"))
		return;
	snprintf(path, sizeof path, "%s-otf2/traces.otf2", prefix);
	REQUIRE(vu_otf2_counts(path, &o2));
	CHECK(o2.ok);
	CHECK_EQ_U64(vu_get(&o2, "backwards"), 0);
	/* The JSON's state pieces are also split where a run begins or
	 * ends (its runs are slices; OTF2's are not regions): at least as
	 * many, at most two more per run. */
	CHECK(vu_get(&o2, "ENTER") <=
	      vu_get(&js, "X.state") + vu_get(&js, "X.function"));
	CHECK(vu_get(&o2, "ENTER") + 2 * vu_get(&js, "X.run") >=
	      vu_get(&js, "X.state") + vu_get(&js, "X.function"));
	CHECK_EQ_U64(vu_get(&o2, "LEAVE"), vu_get(&o2, "ENTER"));
	CHECK_EQ_U64(vu_get(&o2, "MPI_SEND"), vu_get(prv, "comms"));
	CHECK_EQ_U64(vu_get(&o2, "MPI_RECV"), vu_get(prv, "comms"));
	CHECK_EQ_U64(vu_get(&o2, "METRIC"), vu_get(prv, "events"));
}

static void
check_trace(const char *dir)
{
	const char *fmts = vu_have_otf2() ? "prv,json,otf2" : "prv,json";
	char prefix[700], conv[700], cmd[3000], out[800];
	vu_counts prv;

	snprintf(prefix, sizeof prefix, "%s/merged", dir);
	snprintf(conv, sizeof conv, "%s/converted", dir);
	snprintf(out, sizeof out, "%s/out.txt", dir);
	snprintf(cmd, sizeof cmd, "'%s' merge '%s' -o '%s' --format %s", tool,
	         dir, prefix, fmts);
	CHECK_EQ_U64(vu_sh(cmd, out), 0);
	CHECK(vu_file_has(out, "  json: "));
	vu_prv_counts(prefix, &prv);
	CHECK(vu_get(&prv, "comms") >= 2 * CALLS);
	CHECK(vu_get(&prv, "events") >= CALLS);
	CHECK_EQ_U64(vu_get(&prv, "funcs"), 2 * CALLS);
	check_outputs(prefix, prefix, &prv);
	/* The merged Paraver trace converted: the same counts. */
	snprintf(cmd, sizeof cmd, "'%s' convert '%s.prv' -o '%s' -f %s", tool,
	         prefix, conv, fmts + 4);
	CHECK_EQ_U64(vu_sh(cmd, out), 0);
	check_outputs(conv, prefix, &prv);
}

int
main(int argc, char **argv)
{
	const char *base = getenv("TMPDIR");
	char dir[600];
	dw_options o = {.procs = 2, .no_merge = 1};

	snprintf(dir, sizeof dir, "%s/dwtest-view-rt-%d", base ? base : "/tmp",
	         (int)getpid());
	o.trace = dir;
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	setenv("PYTHONIOENCODING", "utf-8", 1);
	if (!vu_tool(tool, sizeof tool) || !vu_have("python3")) {
		dw_finalize();
		tu_rmtree(dir);
		printf("view_runtime: no dwork tool or no python3; skipped\n");
		return TEST_SKIP;
	}
	dwt_define_type(4242, "Iteration");
	traced_run();
	check_trace(dir);
	if (!tu_failures)
		tu_rmtree(dir);
	else
		fprintf(stderr, "trace kept in %s\n", dir);
	return tu_report("view_runtime");
}
