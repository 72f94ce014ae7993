/*
 * Ids out of range in real trace files: a child process traces into a
 * temporary directory, then header fields are overwritten (a thread
 * file's task id, another's thread id, the process file's task id) and a
 * COMM record names a task past the limit.  The reader refuses each with
 * a message naming the field, the value and the limit, and the real
 * `dwork summary`, `dwork stats` and `dwork merge` report them and end
 * normally (no signal), using what is valid.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>

#include <dwork/trace.h>

#include "tracefile/reader.h"
#include "testutil.h"

static char dir[160];
static char tdir[200], paths[4][480];
static int npaths;

static void *
second_thread(void *arg)
{
	(void)arg;
	dwt_state_push(DWT_STATE_RUNNING);
	dwt_event(71999999, 1);
	dwt_state_pop();
	return NULL;
}

/* Three threads' files and a process file; the third thread sends to a
 * task past the limit. */
static void
make_trace(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		dwt_config c;
		dwt_config_defaults(&c);
		c.dir = tdir;
		c.program = "ids";
		if (dwt_init(&c) != DW_OK)
			_exit(1);
		dwt_state_push(DWT_STATE_RUNNING);
		for (int i = 0; i < 2; i++) {
			pthread_t t;
			pthread_create(&t, NULL, second_thread, NULL);
			pthread_join(t, NULL);
		}
		dwt_comm(DWT_SEND | DWT_LOGICAL | DWT_PHYSICAL, 0xfffffff0u,
		         DWT_THREAD_ANY, 1, 64, 9);
		dwt_state_pop();
		dwt_fini();
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	DIR *d = opendir(tdir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && npaths < 4)
			snprintf(paths[npaths++], sizeof paths[0], "%s/%s",
			         tdir, e->d_name);
	closedir(d);
	REQUIRE(npaths == 4);
}

static const char *
find(const char *suffix)
{
	for (int i = 0; i < npaths; i++) {
		size_t n = strlen(paths[i]), m = strlen(suffix);
		if (n > m && !strcmp(paths[i] + n - m, suffix))
			return paths[i];
	}
	return NULL;
}

static void
poke(const char *path, long off, uint32_t v)
{
	unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8),
	                      (unsigned char)(v >> 16),
	                      (unsigned char)(v >> 24)};
	int fd = open(path, O_WRONLY);
	REQUIRE(fd >= 0 && pwrite(fd, b, 4, off) == 4);
	close(fd);
}

/* The reader's message for path, from rd_header_read. */
static int
refused(const char *path, const char *msg)
{
	rd_errlist errs;
	rd_header h;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	rd_errlist_init(&errs, f);
	dw_err err = rd_header_read(path, &errs, &h);
	rd_errlist_free(&errs);
	fclose(f);
	int ok = err == DW_EFORMAT && buf && strstr(buf, msg);
	if (!ok)
		fprintf(stderr, "%s: %s (expected '%s')\n", path, buf, msg);
	free(buf);
	return ok;
}

/* Runs `dwork CMD ARGS` with stderr in a file; 1 when it ended with
 * want and its stderr holds msg. */
static int
tool(const char *cmd, int want, const char *msg)
{
	char line[1200], err[4096] = "";
	snprintf(line, sizeof line, "'%s' %s >/dev/null 2>'%s/err'",
	         DWORK_TOOL_PATH, cmd, dir);
	int st = system(line);
	snprintf(line, sizeof line, "%s/err", dir);
	FILE *f = fopen(line, "r");
	size_t n = f ? fread(err, 1, sizeof err - 1, f) : 0;
	err[n] = 0;
	if (f)
		fclose(f);
	unlink(line);
	int ok = WIFEXITED(st) && WEXITSTATUS(st) == want && strstr(err, msg);
	if (!ok)
		fprintf(stderr, "dwork %s: status %#x, stderr:\n%s\n", cmd, st,
		        err);
	return ok;
}

int
main(void)
{
	REQUIRE(mkdtemp(tu_tmp_template(dir, sizeof dir, "dw-reader-ids")));
	snprintf(tdir, sizeof tdir, "%s/ids.trace", dir);
	make_trace();
	const char *t1 = find(".1.dwt"), *t2 = find(".2.dwt");
	REQUIRE(t1 && t2 && find(".dwp"));
	char cmd[600];
	/* the COMM record to task 4294967280 (thread 0): reported, the rest
	 * merged */
	snprintf(cmd, sizeof cmd, "merge '%s' -o '%s/m' -q", tdir, dir);
	CHECK(tool(cmd, 0,
	           "COMM record names task 4294967280, out of range (at most "
	           "1048575)"));
	/* header fields out of range: the file is refused */
	poke(t1, 40, 0xfffffff0u); /* task id */
	CHECK(refused(t1, "offset 40: task id 4294967280 is out of range (at "
	                  "most 1048575); file refused"));
	poke(t2, 48, 70000); /* thread id */
	CHECK(refused(t2, "offset 48: thread id 70000 is out of range (at "
	                  "most 65535)"));
	snprintf(cmd, sizeof cmd, "summary '%s'", tdir);
	CHECK(tool(cmd, 1, "task id 4294967280 is out of range"));
	snprintf(cmd, sizeof cmd, "stats '%s'", tdir);
	CHECK(tool(cmd, 1, "thread id 70000 is out of range"));
	/* the process file too: only the thread file with a valid header
	 * is left, and it has no process (reported) */
	poke(find(".dwp"), 44, 0xffffffffu); /* task count */
	CHECK(refused(find(".dwp"), "task count 4294967295 is out of range"));
	snprintf(cmd, sizeof cmd, "summary '%s'", tdir);
	CHECK(tool(cmd, 1, "no process file"));
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	system(cmd);
	return tu_report("reader_ids");
}
