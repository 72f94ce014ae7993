/*
 * The tracing variables' values (issue 18): a bad DWT_* value turns
 * tracing off with a warning naming it and the program goes on; an
 * unknown word in DWORK_TRACE or DWORK_TRACE_NO_MERGE fails dw_init with
 * a message naming the accepted values; dir:NAME and a path holding a
 * '/' are directories.  Each case is this program run again as a child.
 */
#include <sys/stat.h>

#include <dwork/dwork.h>

#include "testutil.h"

static char out[4096];

/* Runs this test as a child under env; its stdout+stderr in out. */
static int
child(const char *self, const char *env)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "env %s %s --child 2>&1", env, self);
	FILE *p = popen(cmd, "r");
	REQUIRE(p);
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child")) {
		int e = dw_init(&argc, &argv);
		printf("init=%d msg=[%s]\n", e, dw_errmsg());
		if (e == DW_OK)
			dw_finalize();
		return e == DW_OK ? 0 : 3;
	}
	const char *dir = tu_tmpdir("tenv");
	char env[1200], p[800];
	CHECK(child(argv[0], "DWORK_TRACE=1 DWT_SEGMENT_SIZE=12") == 0);
	CHECK(strstr(out, "DWT_SEGMENT_SIZE='12' is not valid") != NULL);
	CHECK(strstr(out, "tracing is off, the program goes on") != NULL);
	CHECK(strstr(out, "init=0 msg=[]") != NULL);
	CHECK(child(argv[0], "DWORK_TRACE=maybe") == 3);
	CHECK(strstr(out, "msg=[DWORK_TRACE='maybe' is not valid: expected "
	                  "one of 0, 1, yes, no, true, false, on, off, a "
	                  "directory path holding a '/' or a '.' (./maybe, "
	                  "maybe.trace), or dir:NAME]") != NULL);
	struct stat st;
	CHECK(stat("maybe", &st) != 0); /* nothing was created */
	CHECK(child(argv[0], "DWORK_TRACE=0 DWORK_TRACE_NO_MERGE=maybe") == 3);
	CHECK(strstr(out, "DWORK_TRACE_NO_MERGE='maybe' is not valid: "
	                  "expected one of 0, 1, yes") != NULL);
	snprintf(env, sizeof env,
	         "DWORK_TRACE=dir:%s/a DWORK_TRACE_NO_MERGE=yes", dir);
	CHECK(child(argv[0], env) == 0);
	snprintf(p, sizeof p, "%s/a", dir);
	CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode));
	snprintf(env, sizeof env, "DWORK_TRACE=%s/b DWORK_TRACE_NO_MERGE=1",
	         dir);
	CHECK(child(argv[0], env) == 0);
	snprintf(p, sizeof p, "%s/b", dir);
	CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode));
	tu_rmtree(dir);
	return tu_report("trace_env");
}
