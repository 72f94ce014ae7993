/* The tests' helper library (testutil.h). */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

int tu_failures;

static int
tu_rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	remove(p);
	return 0; /* one that cannot go must not keep the rest */
}

void
tu_rmtree(const char *dir)
{
	nftw(dir, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

unsigned long long
tu_queued_ns(void)
{
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &run, &wait) != 2)
		wait = 0;
	fclose(f);
	return wait;
}

int
tu_in_worker(void)
{
	char b[4096];
	FILE *f = fopen("/proc/self/cmdline", "r");
	if (!f)
		return 0;
	size_t n = fread(b, 1, sizeof b - 1, f);
	fclose(f);
	for (size_t i = 0; i < n; i += strlen(b + i) + 1) {
		b[n] = 0;
		if (!strcmp(b + i, "--dwork-worker") ||
		    !strcmp(b + i, "--dwork-dial"))
			return 1;
	}
	return 0;
}

const char *
tu_tmpdir(const char *tag)
{
	static char path[512];
	if (tu_in_worker()) { /* main runs again in workers: make nothing */
		snprintf(path, sizeof path, "/nonexistent/dwtest-%s-worker",
		         tag);
		return path;
	}
	char name[128];
	snprintf(name, sizeof name, "dwtest-%s", tag);
	REQUIRE(mkdtemp(tu_tmp_template(path, sizeof path, name)) != NULL);
	return path;
}

char *
tu_tmp_template(char *buf, size_t len, const char *name)
{
	const char *base = getenv("TMPDIR");
	if (!base || !base[0])
		base = "/tmp";
	int n = snprintf(buf, len, "%s/%s-XXXXXX", base, name);
	if (n < 0 || (size_t)n >= len) {
		fprintf(stderr,
		        "test: TMPDIR %s is too long for a %zu-byte "
		        "name\n",
		        base, len);
		exit(1);
	}
	return buf;
}

int
tu_report(const char *name)
{
	if (tu_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", name, tu_failures);
		return 1;
	}
	printf("%s: ok\n", name);
	return 0;
}
