/*
 * dwork top --http: the live page of a running cluster (worker 2 runs
 * "solid" all the time, worker 3 is idle), served by the real tool on an
 * ephemeral port.  Checked: the snapshot URL answers JSON with both
 * workers, the page is self-contained (no external script, style or
 * image), headless Chromium's DOM after the script ran shows the table
 * with the workers' rows and functions and the cluster's efficiencies,
 * an unknown path is 404, and its screenshot is a picture of the window
 * (kept with LIVE_PAGE_SHOT=FILE, for the docs).  Skipped without
 * Chromium.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dwork/dwork.h>

#include "testutil.h"

static int
solid(const void *arg, size_t len, dw_reply *r)
{
	(void)arg, (void)len;
	usleep(200000);
	return dw_reply_set(r, "", 0);
}
DW_REGISTER(solid)

static int
exists(const char *dir, const char *name)
{
	char p[600];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static int
master_main(int argc, char **argv, const char *dir)
{
	if (dw_init(&argc, &argv) != DW_OK)
		return 1;
	int ids[2];
	if (dw_addprocs(2, NULL, ids) != 2)
		return 1;
	char p[600];
	snprintf(p, sizeof p, "%s/ready", dir);
	fclose(fopen(p, "w"));
	while (!exists(dir, "stop")) {
		void *res;
		size_t len;
		if (dw_remotecall_fetch(ids[0], "solid", NULL, 0, &res, &len))
			return 1;
		free(res);
	}
	dw_finalize();
	return 0;
}

static const char *
find_chromium(void)
{
	static char path[1024];
	const char *env = getenv("CHROMIUM"), *p = getenv("PATH");
	static const char *const names[] = {"chromium", "chromium-browser"};
	if (env && *env)
		return access(env, X_OK) == 0 ? env : NULL;
	for (size_t k = 0; k < 2; k++)
		for (const char *s = p ? p : "/usr/bin"; *s;) {
			size_t len = strcspn(s, ":");
			snprintf(path, sizeof path, "%.*s/%s", (int)len, s,
			         names[k]);
			if (len && access(path, X_OK) == 0)
				return path;
			s += len + (s[len] == ':');
		}
	return NULL;
}

/* GET path from 127.0.0.1:port: the whole answer, malloc'd. */
static char *
http_get(int port, const char *path)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
	                         .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	REQUIRE(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
	char req[256];
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n",
	                 path);
	REQUIRE(write(fd, req, (size_t)n) == n);
	size_t cap = 1 << 20, got = 0;
	char *s = malloc(cap);
	REQUIRE(s != NULL);
	for (ssize_t k; (k = read(fd, s + got, cap - 1 - got)) > 0;)
		got += (size_t)k;
	s[got] = 0;
	close(fd);
	return s;
}

/* Starts `dwork top --http 127.0.0.1:0`; its pid, the port in *port. */
static pid_t
start_top(int *port)
{
	int p[2];
	REQUIRE(pipe(p) == 0);
	pid_t t = fork();
	REQUIRE(t >= 0);
	if (t == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execl(DWORK_TOOL_PATH, "dwork", "top", "--http", "127.0.0.1:0",
		      (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	FILE *f = fdopen(p[0], "r");
	char line[256] = "";
	REQUIRE(fgets(line, sizeof line, f) != NULL);
	fclose(f);
	REQUIRE(sscanf(line, "dwork top: serving http://127.0.0.1:%d/", port) ==
	        1);
	return t;
}

static int
run_chromium(const char *chromium, const char *dir, const char *what, int port)
{
	char cmd[4096];
	snprintf(
	    cmd, sizeof cmd,
	    "timeout 90 %s --headless --no-sandbox --disable-gpu "
	    "--disable-quic --no-first-run --disable-background-networking "
	    "--disable-component-update --disable-sync "
	    "--disable-dev-shm-usage --user-data-dir=%s/profile "
	    "--window-size=900,700 --virtual-time-budget=3000 %s "
	    "http://127.0.0.1:%d/ 2>%s/chromium.log",
	    chromium, dir, what, port, dir);
	int st = system(cmd);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static void
check_page(const char *chromium, const char *dir, int port)
{
	char *s = http_get(port, "/snapshot.json");
	CHECK(strstr(s, "HTTP/1.1 200 OK") == s);
	CHECK(strstr(s, "\"processes\":[") != NULL);
	CHECK(strstr(s, "{\"id\":3,") != NULL);
	free(s);
	s = http_get(port, "/nothing");
	CHECK(strstr(s, "HTTP/1.1 404") == s);
	free(s);
	s = http_get(port, "/");
	CHECK(strstr(s, "<table id=\"procs\">") != NULL);
	CHECK(strstr(s, "src=") == NULL && strstr(s, "href=") == NULL &&
	      strstr(s, "@import") == NULL); /* nothing fetched from outside */
	free(s);

	char cmd[1200], path[700];
	snprintf(path, sizeof path, "%s/dom.html", dir);
	snprintf(cmd, sizeof cmd, "--dump-dom >%s", path);
	REQUIRE(run_chromium(chromium, dir, cmd, port) == 0);
	snprintf(cmd, sizeof cmd, "cat %s", path);
	FILE *p = popen(cmd, "r");
	size_t cap = 1 << 20, n = 0;
	char *dom = malloc(cap);
	for (size_t k; (k = fread(dom + n, 1, cap - 1 - n, p)) > 0;)
		n += k;
	dom[n] = 0;
	pclose(p);
	const char *w2 = strstr(dom, "<tr id=\"p2\">");
	CHECK(strstr(dom, "<tr id=\"p1\">") != NULL);
	CHECK(w2 != NULL);
	CHECK(strstr(dom, "<tr id=\"p3\">") != NULL);
	CHECK(w2 && strstr(w2, "<td class=\"l\">solid</td>") != NULL);
	char host[256] = "", cell[300];
	gethostname(host, sizeof host - 1);
	snprintf(cell, sizeof cell, "<td class=\"l\">%s</td></tr>", host);
	CHECK(w2 && strstr(w2, cell) != NULL); /* the row ends with its host */
	CHECK(strstr(dom, "<td class=\"l\">parallel efficiency</td>") != NULL);
	/* refreshed from /snapshot.json, not failed */
	CHECK(strstr(dom, "id=\"head\">pid ") != NULL);
	free(dom);

	const char *keep = getenv("LIVE_PAGE_SHOT");
	char shot[700];
	snprintf(shot, sizeof shot, "%s", keep && *keep ? keep : "");
	if (!shot[0])
		snprintf(shot, sizeof shot, "%s/shot.png", dir);
	snprintf(cmd, sizeof cmd, "--screenshot=%s", shot);
	REQUIRE(run_chromium(chromium, dir, cmd, port) == 0);
	struct stat st;
	CHECK(stat(shot, &st) == 0 && st.st_size > 5000);
	FILE *f = fopen(shot, "rb");
	unsigned char sig[8] = {0};
	CHECK(f && fread(sig, 1, 8, f) == 8 && !memcmp(sig, "\x89PNG", 4));
	if (f)
		fclose(f);
}

int
main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "--master"))
		return master_main(argc, argv, argv[2]);
	if (tu_in_worker())
		return dw_init(&argc, &argv) == DW_OK ? 0 : 1;
	const char *chromium = find_chromium();
	if (!chromium) {
		printf("live_page: skipped: no chromium (apt-get install "
		       "chromium)\n");
		return TEST_SKIP;
	}
	signal(SIGPIPE, SIG_IGN);
	const char *dir = tu_tmpdir("page");
	char rt[600], p[700];
	snprintf(rt, sizeof rt, "%s/rt", dir);
	setenv("DWORK_RUNTIME_DIR", rt, 1);
	setenv("DWORK_HEARTBEAT_MS", "300", 1);
	setenv("DWORK_TRACE", "0", 1);
	pid_t m = fork();
	REQUIRE(m >= 0);
	if (m == 0) {
		execl("/proc/self/exe", argv[0], "--master", dir, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 3000 && !exists(dir, "ready"); i++)
		usleep(10000);
	REQUIRE(exists(dir, "ready"));
	usleep(1000000); /* a few heartbeats */
	int port;
	pid_t t = start_top(&port);
	check_page(chromium, dir, port);
	snprintf(p, sizeof p, "%s/stop", dir);
	fclose(fopen(p, "w"));
	int st;
	REQUIRE(waitpid(m, &st, 0) == m);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* the page's server ends with its master */
	int gone = 0;
	for (int i = 0; i < 500 && !gone; i++, usleep(10000))
		gone = waitpid(t, &st, WNOHANG) == t;
	CHECK(gone && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!gone) {
		kill(t, SIGKILL);
		waitpid(t, NULL, 0);
	}
	tu_rmtree(dir);
	return tu_report("live_page");
}
