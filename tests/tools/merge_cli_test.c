/*
 * The `dwork merge` command: options, exit codes, output names, one line
 * per problem.  Runs the real tool: $DWORK_TOOL, else tools/dwork of the
 * build tree this test belongs to (skipped when neither exists).
 */
#include <fcntl.h>
#include <libgen.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "merge_synth.h"
#include "merge_util.h"

static char tool[1024];
static char out_path[700], err_path[700];

static bool
find_tool(void)
{
	const char *e = getenv("DWORK_TOOL");
	char self[900];
	ssize_t n;

	if (e && access(e, X_OK) == 0) {
		snprintf(tool, sizeof tool, "%s", e);
		return true;
	}
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return false;
	self[n] = '\0';
	snprintf(tool, sizeof tool, "%s/../tools/dwork", dirname(self));
	return access(tool, X_OK) == 0;
}

/* Runs the tool with args (NULL-terminated); stdout and stderr go to
 * out_path and err_path.  Returns the exit status. */
static int
run(const char *const *args)
{
	pid_t pid = fork();
	int st;

	REQUIRE(pid >= 0);
	if (pid == 0) {
		int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(126);
		execv(tool, (char *const *)args);
		_exit(127);
	}
	REQUIRE(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool
output_has(const char *path, const char *s)
{
	char *text = mt_slurp(path);
	bool yes = text && strstr(text, s);

	free(text);
	return yes;
}

static size_t
output_lines(const char *path)
{
	char *text = mt_slurp(path);
	size_t n = 0;

	for (char *p = text; p && *p; p++)
		n += *p == '\n';
	free(text);
	return n;
}

static void
trace(const char *dir)
{
	ms_proc p;
	ms_thread t;

	ms_proc_init(&p, dir, 0x77, 7, 0);
	ms_proc_end(&p, 1000);
	ms_thread_open(&t, &p, 0);
	ms_push(&t, 100, 1);
	ms_pop(&t, 200);
	ms_thread_close(&t);
	ms_proc_close(&p);
}

static void
test_usage(const char *dir)
{
	const char *help[] = {tool, "merge", "--help", NULL};
	const char *none[] = {tool, "merge", NULL};
	const char *bogus[] = {tool, "merge", "--bogus", dir, NULL};
	const char *extra[] = {tool, "merge", dir, "extra", NULL};
	const char *noarg[] = {tool, "merge", dir, "-o", NULL};
	const char *list[] = {tool, "help", NULL};

	CHECK(run(help) == 0);
	CHECK(output_has(out_path, "usage: dwork merge TRACE_DIR"));
	CHECK(output_has(out_path, "exit:"));
	CHECK(run(none) == 2);
	CHECK(run(bogus) == 2);
	CHECK(output_has(err_path, "unknown option '--bogus'"));
	CHECK(run(extra) == 2);
	CHECK(output_has(err_path, "unexpected argument 'extra'"));
	CHECK(run(noarg) == 2);
	CHECK(run(list) == 0);
	CHECK(output_has(out_path, "merge"));
}

static void
test_merge(const char *base)
{
	char dir[600], prefix[700], path[720];
	const char *quiet[] = {tool, "merge", "-q", dir, "-o", prefix, NULL};
	const char *deflt[] = {tool, "merge", dir, NULL};

	snprintf(dir, sizeof dir, "%s/run.trace", base);
	REQUIRE(mkdir(dir, 0755) == 0);
	trace(dir);
	snprintf(prefix, sizeof prefix, "%s/named", base);
	CHECK(run(quiet) == 0);
	CHECK_EQ_U64(output_lines(out_path), 0);
	CHECK_EQ_U64(output_lines(err_path), 0);
	mt_check(prefix, PC_ALL, NULL);
	snprintf(path, sizeof path, "%s.prv.tmp", prefix);
	CHECK(access(path, F_OK) != 0);
	CHECK(run(deflt) == 0); /* run.trace -> run.prv beside it */
	CHECK(output_has(out_path, "run.prv: 1 task, 1 thread on 1 node"));
	snprintf(prefix, sizeof prefix, "%s/run", base);
	mt_check(prefix, PC_ALL, NULL);
}

static void
test_failures(const char *base)
{
	char dir[600], prefix[700];
	const char *args[] = {tool, "merge", dir, "-o", prefix, NULL};
	int fd;

	snprintf(dir, sizeof dir, "%s/missing", base);
	snprintf(prefix, sizeof prefix, "%s/out", base);
	CHECK(run(args) == 3);
	CHECK(output_has(err_path, "No such file or directory"));
	CHECK(output_has(err_path, "give a trace directory"));
	snprintf(dir, sizeof dir, "%s/empty", base);
	REQUIRE(mkdir(dir, 0755) == 0);
	CHECK(run(args) == 3);
	CHECK(output_has(err_path, "no trace files"));
	CHECK(output_has(err_path, "dwork run --trace="));
	CHECK_EQ_U64(output_lines(err_path), 2); /* the cause, what to do */
	/* damaged but mergeable: exit 0, one line per problem */
	snprintf(dir, sizeof dir, "%s/run.trace", base);
	fd = open(strcat(strcpy(prefix, dir), "/junk.dwt"), O_WRONLY | O_CREAT,
	          0644);
	REQUIRE(fd >= 0 && write(fd, "junk", 4) == 4);
	close(fd);
	snprintf(prefix, sizeof prefix, "%s/damaged", base);
	CHECK(run(args) == 0);
	CHECK_EQ_U64(output_lines(err_path), 1);
	CHECK(output_has(err_path, "junk.dwt"));
	/* the output cannot be written */
	snprintf(prefix, sizeof prefix, "%s/no/such/dir/out", base);
	CHECK(run(args) == 3);
	CHECK(output_has(err_path, "cannot create"));
}

int
main(void)
{
	const char *base;

	if (!find_tool()) {
		printf("merge_cli: no dwork tool; skipped\n");
		return TEST_SKIP;
	}
	base = tu_tmpdir("merge-cli");
	snprintf(out_path, sizeof out_path, "%s/stdout", base);
	snprintf(err_path, sizeof err_path, "%s/stderr", base);
	test_usage(base);
	test_merge(base);
	test_failures(base);
	tu_rmtree(base);
	return tu_report("merge_cli");
}
