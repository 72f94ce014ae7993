/*
 * Crash safety and fork: a child killed with SIGKILL mid-stream leaves
 * every record it wrote readable and no end marker; a forked child gets
 * its own files and never writes into its parent's.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <dwork/trace.h>

#include "tracefile/reader.h"
#include "testutil.h"

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
	test_fork();
	return tu_report("trace_crash");
}
