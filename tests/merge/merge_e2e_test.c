/*
 * End to end: two real processes traced by libdwtrace (task 0 and task
 * 1, set with dwt_set_task), with nested states, events, user functions,
 * labels, a second thread, and messages through a pipe recorded with
 * dwt_comm on both sides; then merged.  The trace passes the strict
 * checker, every message is one communication, and the labels are in
 * the .pcf.
 */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dwork/trace.h>

#include "merge_util.h"

#define NMSG    50
#define T_PHASE 4000

static void *
helper(void *arg)
{
	(void)arg;
	dwt_set_thread_name("helper");
	dwt_state_push(DWT_STATE_RUNNING);
	for (int i = 0; i < 20; i++)
		dwt_event(T_PHASE, 100 + (uint64_t)i);
	dwt_state_pop();
	return NULL;
}

static void __attribute__((noinline)) work(int i)
{
	dwt_func_enter((const void *)work);
	dwt_event(T_PHASE, (uint64_t)i % 3);
	dwt_func_exit((const void *)work);
}

/* Task 0 sends NMSG messages to task 1 through fd. */
static int
sender(int fd)
{
	pthread_t th;

	dwt_state_push(DWT_STATE_RUNNING);
	if (pthread_create(&th, NULL, helper, NULL))
		return 1;
	for (int i = 0; i < NMSG; i++) {
		uint32_t v = (uint32_t)i;

		work(i);
		dwt_state_push(DWT_STATE_BLOCKING_SEND);
		dwt_comm(DWT_SEND | DWT_LOGICAL | DWT_PHYSICAL, 1, 0, 7,
		         sizeof v, (uint64_t)i);
		if (write(fd, &v, sizeof v) != (ssize_t)sizeof v)
			return 1;
		dwt_state_pop();
	}
	pthread_join(th, NULL);
	dwt_state_pop();
	return 0;
}

static int
receiver(int fd)
{
	uint32_t v;

	dwt_state_push(DWT_STATE_RUNNING);
	for (int i = 0; i < NMSG; i++) {
		dwt_state_push(DWT_STATE_WAITING_MESSAGE);
		if (read(fd, &v, sizeof v) != (ssize_t)sizeof v)
			return 1;
		dwt_comm(DWT_RECV | DWT_LOGICAL | DWT_PHYSICAL, 0, 0, 7,
		         sizeof v, v);
		dwt_state_pop();
		dwt_event(T_PHASE, 9);
	}
	dwt_state_pop();
	return 0;
}

static int
child(const char *dir, uint32_t task, int fd)
{
	dwt_config cfg;
	int rc;

	dwt_config_defaults(&cfg);
	cfg.dir = dir;
	cfg.program = "e2e";
	cfg.segment_size = 64u << 10;
	dwt_set_task(task);
	dwt_set_ntasks(2);
	dwt_define_type(T_PHASE, "Phase");
	dwt_define_value(T_PHASE, 9, "received");
	dwt_define_state(40, "Custom state", 0x336699);
	if (dwt_init(&cfg) != DW_OK)
		return 2;
	dwt_set_thread_name(task ? "receiver" : "sender");
	rc = task ? receiver(fd) : sender(fd);
	dwt_fini();
	return rc;
}

static pid_t
spawn(const char *dir, uint32_t task, int fd, int other)
{
	pid_t pid = fork();

	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(other);
		_exit(child(dir, task, fd));
	}
	return pid;
}

static int
waitfor(pid_t pid)
{
	int st;

	REQUIRE(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int
main(void)
{
	const char *dir = tu_tmpdir("merge-e2e");
	char prefix[600], path[700], *pcf, *row;
	int fds[2];
	pid_t a, b;
	rd_errlist errs;
	mg_report rep;
	pc_result res;

	REQUIRE(pipe(fds) == 0);
	a = spawn(dir, 0, fds[1], fds[0]);
	b = spawn(dir, 1, fds[0], fds[1]);
	close(fds[0]);
	close(fds[1]);
	CHECK(waitfor(a) == 0);
	CHECK(waitfor(b) == 0);

	snprintf(prefix, sizeof prefix, "%s/trace", dir);
	rd_errlist_init(&errs, stderr);
	CHECK(mt_merge(dir, prefix, 0, &rep, &errs) == DW_OK);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	mt_check(prefix, PC_ALL, &res);
	CHECK_EQ_U64(res.ntasks, 2);
	CHECK_EQ_U64(res.nthreads, 3);
	CHECK_EQ_U64(res.comms, NMSG);
	CHECK_EQ_U64(rep.unmatched_sends + rep.unmatched_recvs, 0);
	CHECK(res.state_used[0] & (1u << DWT_STATE_BLOCKING_SEND));
	CHECK(res.state_used[0] & (1u << DWT_STATE_WAITING_MESSAGE));

	snprintf(path, sizeof path, "%s.pcf", prefix);
	pcf = mt_slurp(path);
	CHECK(pcf && strstr(pcf, "Phase") && strstr(pcf, "received") &&
	      strstr(pcf, "40   Custom state") && strstr(pcf, "{51,102,153}") &&
	      strstr(pcf, "work") && strstr(pcf, "User function"));
	snprintf(path, sizeof path, "%s.row", prefix);
	row = mt_slurp(path);
	CHECK(row && strstr(row, "task 1 thread 1 (sender)") &&
	      strstr(row, "task 1 thread 2 (helper)") &&
	      strstr(row, "task 2 thread 1 (receiver)"));
	free(pcf);
	free(row);
	rd_errlist_free(&errs);
	tu_rmtree(dir);
	return tu_report("merge_e2e");
}
