/*
 * Threads of a traced runtime program, merged at dw_finalize: every task
 * numbers its threads alike (thread 1 the main thread, 2 the I/O thread,
 * then the executors in order), the .row names say which dwork process
 * each is ("worker 3 executor 2": dwork process 3, Paraver's task 3),
 * and a master thread that makes one call and exits
 * is Not created after its exit, Running for its own work, alive for its
 * real duration.
 */
#include <pthread.h>
#include <sys/wait.h>

#include <dwork/trace.h>

#include "output/html.h"
#include "merge/prvread.h"
#include "merge_util.h"
#include "prv_check.h"
#include "prv_states.h"
#include "rt_util.h"
#include "testutil.h"

#define MS      1000000ull
#define T_MARK  9000u
#define WORK_MS 20
#define NW      2 /* workers */
#define NEXEC   2 /* executors each */

static uint64_t t_mark, t_start, t_work, t_end;

/* One quick call, then 20 ms of its own work, then it exits. */
static void *
one_call(void *arg)
{
	int w = (int)(intptr_t)arg, v = 7;
	void *res = NULL;
	size_t len;
	t_start = dwt_now_ns();
	CHECK(dw_remotecall_fetch(w, "echo", &v, sizeof v, &res, &len) ==
	      DW_OK);
	free(res);
	t_work = dwt_now_ns();
	usleep(WORK_MS * 1000);
	t_end = dwt_now_ns();
	return NULL;
}

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	static char buf[1 << 16];
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	return buf;
}

/* The THREAD level of the .row, line by line, must be exactly this. */
static void
check_rows(const char *prefix)
{
	char path[800], want[4096] = "", line[128];
	snprintf(path, sizeof path, "%s.row", prefix);
	const char *row = slurp(path);
	const char *th = strstr(row, "LEVEL THREAD SIZE ");
	CHECK(th != NULL);
	if (!th)
		return;
	th = strchr(th, '\n') + 1;
	strcat(want, "master\nmaster I/O\nmaster thread 3\n");
	for (int w = 2; w < 2 + NW; w++) {
		snprintf(line, sizeof line, "worker %d main\nworker %d I/O\n",
		         w, w);
		strcat(want, line);
		for (int e = 1; e <= NEXEC; e++) {
			snprintf(line, sizeof line, "worker %d executor %d\n",
			         w, e);
			strcat(want, line);
		}
	}
	if (strncmp(th, want, strlen(want))) {
		fprintf(stderr, "row threads:\n%s\nwanted:\n%s\n", th, want);
		tu_failures++;
	}
	for (int w = 2; w < 2 + NW; w++) {
		snprintf(line, sizeof line, "\nworker %d (pid ", w);
		CHECK(strstr(row, line) != NULL);
	}
	CHECK(strstr(row, "\nmaster (pid ") != NULL);
	for (const unsigned char *p = (const unsigned char *)row; *p; p++)
		CHECK(*p < 0x80);
}

/* The master's one-call thread (task 1 thread 3). */
static void
check_life(const char *prefix)
{
	ps_trace p;
	REQUIRE(ps_load(prefix, &p) == 0);
	uint64_t mark = ps_event_time(prefix, T_MARK, 1);
	REQUIRE(mark != UINT64_MAX);
	const ps_thread *t = NULL;
	for (size_t i = 0; i < p.n; i++)
		if (p.t[i].task == 1 && p.t[i].thread == 3)
			t = &p.t[i];
	REQUIRE(t != NULL);
	uint64_t born = mark + (t_start - t_mark), len = t_end - t_start;
	fprintf(stderr,
	        "one-call thread: born %.3f ms (real %.3f), lived %.3f ms "
	        "(real %.3f), running %.3f ms, not created %.3f of %.3f ms\n",
	        t->born / 1e6, born / 1e6, (t->died - t->born) / 1e6, len / 1e6,
	        t->ns[1] / 1e6, t->ns[2] / 1e6, p.ftime / 1e6);
	CHECK(ps_near(t->born, born, MS));
	CHECK(ps_near(t->died - t->born, len, MS));
	/* Running: its own work, plus the moments around its call (the
	 * first record of a thread also pays for making its file) */
	CHECK(t->ns[1] >= t_end - t_work && t->ns[1] >= WORK_MS * MS);
	CHECK(t->ns[1] <= t->died - t->born);
	CHECK_EQ_U64(t->ns[2], p.ftime - (t->died - t->born));
	CHECK(p.ftime > t->died + 50 * MS); /* it really ended early */
}

/* The HTML view, drawn from the directory and from the .prv, labels
 * rows by dwork process ("worker 3 executor 2"), not by task number. */
static void
check_html(const char *dir, const char *prefix)
{
	const char *src[2] = {dir, NULL};
	char prv[800], path[800], want[64];
	snprintf(prv, sizeof prv, "%s.prv", prefix);
	src[1] = prv;
	for (int i = 0; i < 2; i++) {
		mg_writer *w;
		rd_errlist errs;
		html_opts o = {0};
		mg_opts mo = {.dir = dir};
		snprintf(path, sizeof path, "%s/view%d.html", dir, i);
		REQUIRE(html_writer_open(path, &o, &w) == DW_OK);
		rd_errlist_init(&errs, stderr);
		dw_err err = i ? prvread_run(src[i], w, &errs, NULL)
		               : mg_merge(&mo, w, &errs, NULL);
		CHECK(err == DW_OK);
		mg_writer_free(w);
		rd_errlist_free(&errs);
		char *h = mt_slurp(path);
		REQUIRE(h != NULL);
		CHECK(strstr(h, "</title>master</text>") != NULL);
		CHECK(strstr(h, "</title>master I/O</text>") != NULL);
		for (int k = 2; k < 2 + NW; k++) {
			/* an executor that ran nothing is labelled
			 * "worker 2 executor 2 (idle)" */
			snprintf(want, sizeof want,
			         "</title>worker %d executor %d", k, NEXEC);
			CHECK(strstr(h, want) != NULL);
			snprintf(want, sizeof want, "</title>worker %d main",
			         k);
			CHECK(strstr(h, want) != NULL);
		}
		CHECK(strstr(h, "</title>1.") == NULL); /* no task numbers */
		free(h);
	}
}

int
main(int argc, char **argv)
{
	char dir[600], prefix[700], err[1024];
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("threads"));
	dw_options o = {.trace = dir, .executors = NEXEC};
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	int ids[NW];
	REQUIRE(dw_addprocs(NW, NULL, ids) == NW);
	for (int i = 0; i < NW; i++) {
		int ms = 5;
		void *res;
		size_t len;
		REQUIRE(dw_remotecall_fetch(ids[i], "sleeper", &ms, sizeof ms,
		                            &res, &len) == DW_OK);
		free(res);
	}
	t_mark = dwt_now_ns();
	dwt_event(T_MARK, 1);
	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, one_call, (void *)(intptr_t)ids[0]) ==
	        0);
	pthread_join(th, NULL);
	usleep(100000);
	CHECK(dw_finalize() == DW_OK); /* merges into dir/trace.* */
	snprintf(prefix, sizeof prefix, "%s/trace", dir);
	if (prv_check(prefix, PC_ALL, NULL, err, sizeof err)) {
		fprintf(stderr, "strict checker: %s\n", err);
		tu_failures++;
	}
	check_rows(prefix);
	check_life(prefix);
	check_html(dir, prefix);
	if (!tu_failures)
		tu_rmtree(dir);
	else
		fprintf(stderr, "trace kept in %s\n", dir);
	return tu_report("trace_threads");
}
