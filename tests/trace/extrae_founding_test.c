/*
 * The founding scenario: four separate processes of a program written
 * only against extrae_user_events.h, each with
 * EXTRAE_SKIP_AUTO_LIBRARY_INITIALIZE=1, its own EXTRAE_PROGRAM_NAME and
 * task callbacks returning its task id and 4, each calling Extrae_init by
 * hand, two of them started later.  They pass a token around a ring
 * (pipes), recording each hop as a user communication.  Their trace
 * directory must hold 4 tasks, each with its events, labels and the
 * sends and receives of the hops with matching ids, every receive after
 * its send on the host's clock; and `dwork merge` (the tool named by
 * DWORK_TOOL) must make of it one Paraver trace with 4 tasks, their
 * events and labels, and the 12 hops drawn as communications.
 */
#include <stdio.h>
#include <time.h>

#include "extrae_user_events.h"

#include "testutil.h"

#include "extrae_tu.h"

#define NTASKS  4
#define HOPS    3
#define T_PHASE 6000u
#define T_HOP   6001u

/* ---- a task: Extrae API only ---- */

static unsigned my_task;

static unsigned
taskid(void)
{
	return my_task;
}

static unsigned
numtasks(void)
{
	return NTASKS;
}

static void
define_labels(void)
{
	extrae_type_t t = T_PHASE;
	unsigned n = 3;
	extrae_value_t v[3] = {0, 1, 2};
	char *names[3] = {"End", "Compute", "Communicate"};
	Extrae_define_event_type(&t, "Phase", &n, v, names);
	t = T_HOP;
	n = 0;
	Extrae_define_event_type(&t, "Hop", &n, NULL, NULL);
}

/* One side of a hop, and the hop number as an event, at one time. */
static void
hop(extrae_user_communication_types_t dir, unsigned partner, int k)
{
	extrae_user_communication_t c;
	extrae_combined_events_t e;
	extrae_type_t t = T_HOP;
	extrae_value_t v = (extrae_value_t)k + 1;
	unsigned sender = dir == EXTRAE_USER_SEND ? my_task : partner;
	Extrae_init_UserCommunication(&c);
	c.type = dir;
	c.tag = 1;
	c.size = sizeof(int);
	c.partner = partner;
	c.id = sender * 1000 + k;
	Extrae_init_CombinedEvents(&e);
	e.nEvents = 1, e.Types = &t, e.Values = &v;
	e.nCommunications = 1, e.Communications = &c;
	Extrae_emit_CombinedEvents(&e);
}

static volatile double sink;

__attribute__((noinline)) static void
work(void)
{
	Extrae_user_function(1);
	for (int i = 0; i < 200000; i++)
		sink += i;
	Extrae_user_function(0);
}

static int
task_main(unsigned task, int to_next, int from_prev)
{
	unsigned next = (task + 1) % NTASKS,
	         prev = (task + NTASKS - 1) % NTASKS;
	my_task = task;
	Extrae_set_taskid_function(taskid);
	Extrae_set_numtasks_function(numtasks);
	if (Extrae_is_initialized() != EXTRAE_NOT_INITIALIZED)
		return 3; /* the skip variable was not honoured */
	Extrae_init();
	define_labels();
	for (int k = 0; k < HOPS; k++) {
		int token = k;
		Extrae_event(T_PHASE, 1);
		work();
		Extrae_event(T_PHASE, 2);
		hop(EXTRAE_USER_SEND, next, k);
		if (write(to_next, &token, sizeof token) != sizeof token)
			return 4;
		if (read(from_prev, &token, sizeof token) != sizeof token)
			return 5;
		hop(EXTRAE_USER_RECV, prev, k);
		Extrae_event(T_PHASE, 0);
	}
	Extrae_fini();
	return 0;
}

/* ---- the launcher and the checks ---- */

static char dir[600];

static pid_t
start(unsigned task, int pipes[NTASKS][2])
{
	char t[16], w[16], r[16], name[32], final[700];
	snprintf(t, sizeof t, "%u", task);
	snprintf(w, sizeof w, "%d", pipes[task][1]);
	snprintf(r, sizeof r, "%d", pipes[(task + NTASKS - 1) % NTASKS][0]);
	snprintf(name, sizeof name, "EXTRAE_PROGRAM_NAME=task%u", task);
	snprintf(final, sizeof final, "EXTRAE_FINAL_DIR=%s", dir);
	char *args[] = {"extrae_founding_test", "task", t, w, r, NULL};
	char *env[] = {"EXTRAE_SKIP_AUTO_LIBRARY_INITIALIZE=1", "EXTRAE_ON=1",
	               name, final, NULL};
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		execve("/proc/self/exe", args, env);
		_exit(127);
	}
	return pid;
}

static void
run_tasks(void)
{
	int pipes[NTASKS][2];
	pid_t pid[NTASKS];
	for (int i = 0; i < NTASKS; i++)
		REQUIRE(pipe(pipes[i]) == 0);
	for (unsigned i = 0; i < NTASKS; i++) {
		if (i == 2) /* tasks 2 and 3 join later */
			nanosleep(&(struct timespec){0, 100000000}, NULL);
		pid[i] = start(i, pipes);
	}
	for (int i = 0; i < NTASKS; i++)
		close(pipes[i][0]), close(pipes[i][1]);
	for (int i = 0; i < NTASKS; i++) {
		int st;
		REQUIRE(waitpid(pid[i], &st, 0) == pid[i]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
}

/* The record of task's COMM with this direction and id, or -1. */
static long
find_comm(const struct xt_proc *p, int recv, uint64_t id)
{
	for (size_t i = 0; i < p->n; i++) {
		const rd_rec *r = &p->recs[i].r;
		if (r->kind == FMT_R_COMM && r->u.comm.id == id &&
		    !!(r->u.comm.flags & RD_COMM_RECV) == recv)
			return (long)i;
	}
	return -1;
}

static void
check_task(struct xt_proc *p, unsigned task)
{
	char name[16];
	snprintf(name, sizeof name, "task%u", task);
	CHECK_EQ_U64(p->hdr.task, task);
	CHECK_EQ_U64(p->hdr.ntasks, NTASKS);
	CHECK(xt_streq(p->hdr.program, name));
	CHECK(rd_header_ended(&p->hdr));
	CHECK_EQ_U64(xt_count_event(p, T_PHASE, 1), HOPS);
	CHECK_EQ_U64(xt_count_event(p, T_PHASE, 0), HOPS);
	CHECK_EQ_U64(xt_count_type(p, T_HOP), 2 * HOPS);
	CHECK(xt_streq(rd_proc_type_name(p->labels, T_PHASE), "Phase"));
	CHECK(
	    xt_streq(rd_proc_value_name(p->labels, T_PHASE, 2), "Communicate"));
	CHECK(xt_streq(rd_proc_type_name(p->labels, T_HOP), "Hop"));
	long f = xt_find_kind(p, FMT_R_FUNC_ENTER, 0);
	CHECK(f >= 0 &&
	      xt_streq(rd_proc_func_name(p->labels, p->recs[f].r.u.func.addr),
	               "work"));
}

/* Every send has its receive, in the right tasks, after it. */
static void
check_comms(struct xt_trace *tr)
{
	for (unsigned s = 0; s < NTASKS; s++) {
		unsigned d = (s + 1) % NTASKS;
		for (int k = 0; k < HOPS; k++) {
			uint64_t id = s * 1000 + (uint64_t)k;
			long i = find_comm(&tr->p[s], 0, id);
			long j = find_comm(&tr->p[d], 1, id);
			REQUIRE(i >= 0 && j >= 0);
			const rd_rec *snd = &tr->p[s].recs[i].r;
			const rd_rec *rcv = &tr->p[d].recs[j].r;
			CHECK_EQ_U64(snd->u.comm.partner_task, d);
			CHECK_EQ_U64(rcv->u.comm.partner_task, s);
			CHECK(xt_ns(&tr->p[s], snd) <= xt_ns(&tr->p[d], rcv));
		}
	}
}

static void
check(void)
{
	struct xt_trace tr = xt_load(dir);
	CHECK_EQ_U64(tr.errors, 0);
	REQUIRE(tr.n == NTASKS);
	for (unsigned t = 0; t < NTASKS; t++)
		check_task(&tr.p[t], t);
	/* the late ones started later */
	CHECK(tr.p[2].hdr.init_ns > tr.p[1].hdr.init_ns + 50000000);
	check_comms(&tr);
	xt_free(&tr);
}

/* ---- the merged trace ---- */

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	REQUIRE(f);
	REQUIRE(fseek(f, 0, SEEK_END) == 0);
	long n = ftell(f);
	rewind(f);
	char *s = calloc(1, (size_t)n + 1);
	REQUIRE(s && fread(s, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	return s;
}

/* A Paraver communication: 3:cpu:appl:task:thread:lsend:psend:cpu:appl:
 * task:thread:lrecv:precv:size:tag (tasks 1-based). */
static void
check_prv_comm(const char *line, unsigned *ncomm)
{
	unsigned long long f[15];
	if (sscanf(line,
	           "3:%llu:%llu:%llu:%llu:%llu:%llu:%llu:%llu:%llu:%llu:%llu:"
	           "%llu:%llu:%llu",
	           &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7],
	           &f[8], &f[9], &f[10], &f[11], &f[12], &f[13]) != 14) {
		fprintf(stderr, "bad communication line: %.80s\n", line);
		tu_failures++;
		return;
	}
	CHECK_EQ_U64(f[8], f[2] % NTASKS + 1); /* to the next task */
	CHECK(f[4] <= f[10] && f[5] <= f[11]); /* received after sent */
	CHECK_EQ_U64(f[12], sizeof(int));
	CHECK_EQ_U64(f[13], 1);
	(*ncomm)++;
}

/* Adds the (T_PHASE, 1) pairs of a Paraver event line to its task. */
static void
count_prv_phase(const char *line, unsigned phase1[NTASKS])
{
	unsigned cpu, appl, task, thread;
	unsigned long long t, type, value;
	int n;
	if (sscanf(line, "2:%u:%u:%u:%u:%llu%n", &cpu, &appl, &task, &thread,
	           &t, &n) != 5 ||
	    task < 1 || task > NTASKS)
		return;
	for (const char *p = line + n;
	     sscanf(p, ":%llu:%llu%n", &type, &value, &n) == 2; p += n)
		if (type == T_PHASE && value == 1)
			phase1[task - 1]++;
}

static void
check_prv(const char *prefix)
{
	char path[720];
	unsigned ncomm = 0, phase1[NTASKS] = {0};
	snprintf(path, sizeof path, "%s.prv", prefix);
	char *prv = slurp(path);
	CHECK(strncmp(prv, "#Paraver", 8) == 0);
	CHECK(strstr(prv, ":1:4(1:1,1:1,1:1,1:1),0\n") != NULL); /* 4 tasks */
	for (char *l = strtok(prv, "\n"); l; l = strtok(NULL, "\n")) {
		if (l[0] == '3')
			check_prv_comm(l, &ncomm);
		else if (l[0] == '2')
			count_prv_phase(l, phase1);
	}
	CHECK_EQ_U64(ncomm, NTASKS * HOPS);
	for (int t = 0; t < NTASKS; t++)
		CHECK_EQ_U64(phase1[t], HOPS);
	printf("extrae_founding: dwork merge: %u communications\n", ncomm);
	free(prv);
}

static void
check_pcf_row(const char *prefix)
{
	char path[720];
	snprintf(path, sizeof path, "%s.pcf", prefix);
	char *pcf = slurp(path);
	CHECK(strstr(pcf, "Phase") && strstr(pcf, "Communicate") &&
	      strstr(pcf, "Hop") && strstr(pcf, "work"));
	free(pcf);
	snprintf(path, sizeof path, "%s.row", prefix);
	char *row = slurp(path);
	CHECK(strstr(row, "LEVEL TASK SIZE 4"));
	free(row);
}

/* Runs the tool with args; its exit status (-1 if it did not exit). */
static int
run_tool(char *const args[], int quiet)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		if (quiet && !freopen("/dev/null", "w", stdout))
			_exit(126);
		if (quiet && !freopen("/dev/null", "w", stderr))
			_exit(126);
		execv(args[0], args);
		_exit(127);
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void
check_merged(void)
{
	char *tool = getenv("DWORK_TOOL"), prefix[700];
	char *probe[] = {tool, "merge", "--help", NULL};
	if (!tool || access(tool, X_OK) != 0 || run_tool(probe, 1) != 0) {
		printf(
		    "extrae_founding: no `dwork merge`: merge not checked\n");
		return;
	}
	snprintf(prefix, sizeof prefix, "%s/founding", dir);
	char *args[] = {tool, "merge", dir, "-o", prefix, "-q", NULL};
	CHECK_EQ_U64(run_tool(args, 0), 0);
	check_prv(prefix);
	check_pcf_row(prefix);
}

int
main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "task") == 0)
		return task_main((unsigned)atoi(argv[2]), atoi(argv[3]),
		                 atoi(argv[4]));
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("extrae-founding"));
	run_tasks();
	check();
	check_merged();
	tu_rmtree(dir);
	return tu_report("extrae_founding");
}
