/*
 * Crash safety and fork: a child killed with SIGKILL mid-stream leaves
 * every record it wrote readable and no end marker; one killed before
 * the tracer's helper renamed a new thread's file (a taken kit, still
 * PREFIX.kitN.dwt-spare) leaves that thread's records read and merged,
 * and its unused kit ignored without a message; a forked child gets its
 * own files and never writes into its parent's.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <dwork/trace.h>

#include "testutil.h"
#include "trace/tracer.h"
#include "tracefile/reader.h"

#define EV 5000

/* Reads all EV events of every thread file of every process of dir.
 * Calls fn(proc header, thread header, values, n) per thread file. */
typedef void (*visit_fn)(const rd_header *ph, const rd_header *th,
                         const uint64_t *v, size_t n, void *arg);

static void
visit(const char *dir, visit_fn fn, void *arg, size_t *nprocs)
{
	rd_errlist errs;
	rd_errlist_init(&errs, stderr);
	rd_dir *d;
	REQUIRE(rd_dir_open(dir, &errs, &d) == DW_OK);
	*nprocs = d->nprocs;
	size_t cap = 1 << 20;
	uint64_t *v = malloc(cap * sizeof *v);
	REQUIRE(v);
	for (size_t p = 0; p < d->nprocs; p++) {
		for (size_t i = 0; i < d->procs[p].nthreads; i++) {
			rd_thread *t;
			REQUIRE(rd_thread_open(d->procs[p].thread_paths[i],
			                       &errs, &t) == DW_OK);
			size_t n = 0;
			rd_rec r;
			while (rd_thread_next(t, &r))
				if (r.kind == FMT_R_EVENT &&
				    r.u.event.type == EV) {
					if (n == cap) {
						cap *= 2;
						v = realloc(v, cap * sizeof *v);
						REQUIRE(v);
					}
					v[n++] = r.u.event.value;
				}
			fn(&d->procs[p].hdr, rd_thread_header(t), v, n, arg);
			rd_thread_close(t);
		}
	}
	free(v);
	rd_dir_close(d);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	rd_errlist_free(&errs);
}

static void
init_in(const char *dir, const char *prog)
{
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = dir;
	c.program = prog;
	c.segment_size = 64 << 10;
	REQUIRE(dwt_init(&c) == DW_OK);
}

/* ---- SIGKILL ---- */

struct kill_arg {
	uint64_t written;
	int visited;
};

static void
kill_visit(const rd_header *ph, const rd_header *th, const uint64_t *v,
           size_t n, void *arg)
{
	struct kill_arg *k = arg;
	(void)ph;
	k->visited++;
	CHECK(!rd_header_ended(th));
	CHECK(n >= k->written);
	for (size_t i = 0; i < n; i++)
		if (v[i] != i) {
			CHECK(v[i] == i);
			break;
		}
}

static void
test_sigkill(void)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("kill"));
	/* The child publishes how many records it has completed. */
	volatile uint64_t *done = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	REQUIRE(done != MAP_FAILED);
	*done = 0;
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		init_in(dir, "killed");
		for (uint64_t i = 0;; i++) {
			dwt_event(EV, i);
			__atomic_store_n(done, i + 1, __ATOMIC_RELEASE);
		}
	}
	while (__atomic_load_n(done, __ATOMIC_ACQUIRE) < 300000)
		usleep(1000);
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	struct kill_arg k = {.written = *done};
	size_t np;
	visit(dir, kill_visit, &k, &np);
	CHECK_EQ_U64(np, 1);
	CHECK_EQ_U64(k.visited, 1);
	munmap((void *)done, 4096);
	tu_rmtree(dir);
}

/* ---- SIGKILL before a new thread's file is named ---- */

#define EV_SPARE 5001
#define NSPARE   500

static void *
spare_thread(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < NSPARE; i++)
		dwt_event(EV_SPARE, i);
	return NULL;
}

static int
count_suffix(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t s = strlen(suffix);
	int n = 0;
	REQUIRE(d != NULL);
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		n += l > s && strcmp(de->d_name + l - s, suffix) == 0;
	}
	closedir(d);
	return n;
}

/* The child: its main thread records (its file named), then, the
 * helper held, a second thread takes a kit and records NSPARE events;
 * the process is killed before the helper could rename that file. */
static void
spare_child(const char *dir)
{
	init_in(dir, "spare");
	dwt_event(EV, 0);
	if (!prep_test_wait_idle()) /* two kits ready, main's file named */
		_exit(2);
	prep_test_hold(0);
	if (!prep_test_wait_parked())
		_exit(3);
	pthread_t th;
	if (pthread_create(&th, NULL, spare_thread, NULL) ||
	    pthread_join(th, NULL))
		_exit(4);
	kill(getpid(), SIGKILL);
	_exit(5);
}

/* Runs `dwork merge dir -o out -q`, its output into log; its status. */
static int
run_merge(const char *dir, const char *out, const char *log)
{
	const char *tool = getenv("DWORK_TOOL");
	REQUIRE(tool != NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execl(tool, tool, "merge", dir, "-o", out, "-q", (char *)NULL);
		_exit(127);
	}
	int st;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The values of EV_SPARE in the .prv at path, by Paraver thread
 * (records "2:cpu:appl:task:thread:time:type:value[:type:value...]"):
 * how many, all of thread want, in order from 0. */
static void
check_prv(const char *path, int want)
{
	FILE *f = fopen(path, "r");
	REQUIRE(f != NULL);
	char line[4096];
	uint64_t n = 0, elsewhere = 0, disorder = 0;
	while (fgets(line, sizeof line, f)) {
		char *save, *tok = strtok_r(line, ":\n", &save);
		if (!tok || strcmp(tok, "2"))
			continue;
		int thread = 0;
		for (int i = 1; i <= 5 && tok; i++) {
			tok = strtok_r(NULL, ":\n", &save);
			if (i == 4 && tok)
				thread = atoi(tok);
		}
		char *type, *value;
		while ((type = strtok_r(NULL, ":\n", &save)) &&
		       (value = strtok_r(NULL, ":\n", &save))) {
			if (strtoull(type, NULL, 10) != EV_SPARE)
				continue;
			elsewhere += thread != want;
			disorder += strtoull(value, NULL, 10) != n;
			n++;
		}
	}
	fclose(f);
	CHECK_EQ_U64(n, NSPARE);
	CHECK_EQ_U64(elsewhere, 0);
	CHECK_EQ_U64(disorder, 0);
}

static void
test_sigkill_spare(void)
{
	char dir[512], path[800], out[600], log[600];
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("killspare"));
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		spare_child(dir);
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* the taken kit and the one ready after it, both unnamed */
	CHECK_EQ_U64(count_suffix(dir, ".dwt-spare"), 2);
	CHECK_EQ_U64(count_suffix(dir, ".dwt"), 1);
	/* one more unused kit: a fallocated segment of zeros */
	snprintf(path, sizeof path, "%s/spare.kit99.dwt-spare", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	REQUIRE(fd >= 0);
	CHECK(ftruncate(fd, 64 << 10) == 0);
	close(fd);

	/* the reader: two threads, the second's file the taken kit's */
	rd_errlist errs;
	rd_errlist_init(&errs, stderr);
	rd_dir *d;
	REQUIRE(rd_dir_open(dir, &errs, &d) == DW_OK);
	REQUIRE(d->nprocs == 1);
	REQUIRE(d->procs[0].nthreads == 2);
	CHECK_EQ_U64(d->procs[0].thread_ids[0], 0);
	CHECK_EQ_U64(d->procs[0].thread_ids[1], 1);
	CHECK(strstr(d->procs[0].thread_paths[1], ".dwt-spare") != NULL);
	rd_thread *t;
	REQUIRE(rd_thread_open(d->procs[0].thread_paths[1], &errs, &t) ==
	        DW_OK);
	CHECK_EQ_U64(rd_thread_header(t)->thread, 1);
	uint64_t n = 0;
	rd_rec r;
	while (rd_thread_next(t, &r))
		if (r.kind == FMT_R_EVENT && r.u.event.type == EV_SPARE) {
			CHECK_EQ_U64(r.u.event.value, n);
			n++;
		}
	CHECK_EQ_U64(n, NSPARE);
	rd_thread_close(t);
	rd_dir_close(d);
	CHECK_EQ_U64(rd_errlist_count(&errs), 0);
	rd_errlist_free(&errs);

	/* the merge: that thread's records on its row (Paraver thread 2),
	 * no word about the unused kits */
	snprintf(out, sizeof out, "%s/merged", dir);
	snprintf(log, sizeof log, "%s/merge.log", dir);
	CHECK_EQ_U64(run_merge(dir, out, log), 0);
	snprintf(path, sizeof path, "%s.prv", out);
	check_prv(path, 2);
	FILE *f = fopen(log, "r");
	REQUIRE(f != NULL);
	char line[1024];
	while (fgets(line, sizeof line, f)) {
		CHECK(strstr(line, "spare") == NULL);
		if (strstr(line, "spare"))
			fprintf(stderr, "merge said: %s", line);
	}
	fclose(f);
	tu_rmtree(dir);
}

/* ---- fork ---- */

struct fork_arg {
	int parent_threads, child_threads;
	uint32_t parent_pid;
};

static void
fork_visit(const rd_header *ph, const rd_header *th, const uint64_t *v,
           size_t n, void *arg)
{
	struct fork_arg *f = arg;
	CHECK_EQ_U64(ph->pid, th->pid);
	CHECK_EQ_U64(ph->uid, th->uid);
	CHECK(rd_header_ended(th));
	if (th->pid == f->parent_pid) {
		f->parent_threads++;
		/* before fork 0..999, after it 2000..2999: never the child's */
		CHECK_EQ_U64(n, 2000);
		for (size_t i = 0; i < n; i++)
			CHECK(v[i] == (i < 1000 ? i : i + 1000));
	} else {
		f->child_threads++;
		CHECK_EQ_U64(n, 1000);
		for (size_t i = 0; i < n; i++)
			CHECK(v[i] == 1000 + i);
	}
}

static void
test_fork(void)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s", tu_tmpdir("fork"));
	init_in(dir, "forked");
	for (uint64_t i = 0; i < 1000; i++)
		dwt_event(EV, i);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		for (uint64_t i = 1000; i < 2000; i++)
			dwt_event(EV, i);
		exit(0); /* atexit finishes the child's trace */
	}
	for (uint64_t i = 2000; i < 3000; i++)
		dwt_event(EV, i);
	int st;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	dwt_fini();
	struct fork_arg f = {.parent_pid = (uint32_t)getpid()};
	size_t np;
	visit(dir, fork_visit, &f, &np);
	CHECK_EQ_U64(np, 2);
	CHECK_EQ_U64(f.parent_threads, 1);
	CHECK_EQ_U64(f.child_threads, 1);
	tu_rmtree(dir);
}

int
main(void)
{
	test_sigkill();
	test_sigkill_spare();
	test_fork();
	return tu_report("trace_crash");
}
