/*
 * Machine files and host specs: every form of a line, every malformed
 * line named by file and line, files that cannot be read, and the public
 * entry points refusing a bad file before anything is started.
 */
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "runtime/managers/mgr.h"
#include "testutil.h"

static struct mf_host
line_ok(const char *s)
{
	struct mf_host h;
	char why[256] = "";
	int r = mf_parse_line(s, strlen(s), &h, why, sizeof why);
	if (r != 1) {
		fprintf(stderr, "line '%s' refused (%d): %s\n", s, r, why);
		tu_failures++;
	}
	return h;
}

static void
line_bad(const char *s, const char *expect)
{
	struct mf_host h;
	char why[256] = "";
	int r = mf_parse_line(s, strlen(s), &h, why, sizeof why);
	if (r != -1 || !strstr(why, expect)) {
		fprintf(stderr,
		        "line '%s': got %d '%s', expected an error "
		        "with '%s'\n",
		        s, r, why, expect);
		tu_failures++;
	}
}

static void
test_lines(void)
{
	struct mf_host h = line_ok("node1");
	CHECK(h.count == 1 && !strcmp(h.host, "node1") && !h.user[0] &&
	      h.port == 0 && !h.bind[0] && h.bind_port == 0);
	h = line_ok("4*alice@node2.example.org:2222 10.0.0.2:9000");
	CHECK(h.count == 4 && !strcmp(h.user, "alice") &&
	      !strcmp(h.host, "node2.example.org") && h.port == 2222 &&
	      !strcmp(h.bind, "10.0.0.2") && h.bind_port == 9000);
	h = line_ok("auto*[::1]:22 [fe80::1%eth0]  # a comment");
	CHECK(h.count == DW_AUTO && !strcmp(h.host, "::1") && h.port == 22 &&
	      !strcmp(h.bind, "fe80::1%eth0") && h.bind_port == 0);
	h = line_ok("\t2*host_b\t0.0.0.0\r");
	CHECK(h.count == 2 && !strcmp(h.host, "host_b") &&
	      !strcmp(h.bind, "0.0.0.0"));
	h = line_ok("[::1]");
	CHECK(!strcmp(h.host, "::1") && h.port == 0);
	struct mf_host e;
	char why[64];
	CHECK(mf_parse_line("", 0, &e, why, sizeof why) == 0);
	CHECK(mf_parse_line("   # nothing", 12, &e, why, sizeof why) == 0);

	line_bad("0*node", "count");
	line_bad("x*node", "count");
	line_bad("5000*node", "count");
	line_bad("3*", "no host");
	line_bad("-oProxyCommand=evil", "cannot start with '-'");
	line_bad("@node", "user");
	line_bad("-x@node", "user");
	line_bad("us er@node", "bad character");
	line_bad("node:0", "port");
	line_bad("node:65536", "port");
	line_bad("node:", "empty port");
	line_bad("node:22x", "port");
	line_bad("fe80::1", "brackets");
	line_bad("[::1", "missing ']'");
	line_bad("[::1]x", "':port'");
	line_bad("[node]", "IPv6");
	line_bad("no/de", "bad character");
	line_bad("node bind extra", "unexpected text");
	line_bad("node 1.2.3.4:", "empty port");
	line_bad("node 1.2.3.4:99999", "bind port");
	line_bad("node\x01", "control character");
	char longl[5000];
	memset(longl, 'a', sizeof longl - 1);
	longl[sizeof longl - 1] = 0;
	line_bad(longl, "too long");
}

static void
test_files(void)
{
	const char *text = "# cluster\n"
	                   "node1\n"
	                   "\n"
	                   "2*bob@node2:2200 10.1.1.2\n"
	                   "auto*node3\n";
	struct mf_host *hs;
	int n;
	char why[300];
	REQUIRE(mf_parse(text, strlen(text), "m.txt", &hs, &n, why,
	                 sizeof why) == 0);
	CHECK(n == 3);
	CHECK(n == 3 && hs[1].count == 2 && hs[1].port == 2200 &&
	      !strcmp(hs[2].host, "node3") && hs[2].count == DW_AUTO);
	free(hs);
	const char *bad = "node1\n\n# c\nnode2 a b\nnode3\n";
	CHECK(mf_parse(bad, strlen(bad), "m.txt", &hs, &n, why, sizeof why) ==
	      -1);
	CHECK(strncmp(why, "m.txt:4: ", 9) == 0);
	CHECK(hs == NULL && n == 0);
	CHECK(mf_parse("# nothing\n", 10, "e.txt", &hs, &n, why, sizeof why) ==
	      -1);
	CHECK(strstr(why, "e.txt: lists no host") != NULL);
	/* no newline at the end, and a NUL byte in the middle */
	CHECK(mf_parse("a\nb", 3, "f", &hs, &n, why, sizeof why) == 0 &&
	      n == 2);
	free(hs);
	CHECK(mf_parse("a\nb\0c\n", 6, "f", &hs, &n, why, sizeof why) == -1);
	CHECK(strncmp(why, "f:2: ", 5) == 0);

	const char *dir = tu_tmpdir("mf");
	char path[600];
	snprintf(path, sizeof path, "%s/missing", dir);
	CHECK(mf_read(path, &hs, &n, why, sizeof why) == DW_ENOENT);
	CHECK(strstr(why, "cannot open machine file") && strstr(why, path) &&
	      strstr(why, "No such file"));
	snprintf(path, sizeof path, "%s/hosts", dir);
	FILE *f = fopen(path, "w");
	REQUIRE(f);
	fputs("nodeA\n3*nodeB:2022\n", f);
	fclose(f);
	CHECK(mf_read(path, &hs, &n, why, sizeof why) == DW_OK && n == 2);
	if (n == 2)
		CHECK(hs[1].count == 3 && hs[1].port == 2022);
	free(hs);
	tu_rmtree(dir);
}

/* A malformed file fails dw_addprocs_machinefile before any ssh runs. */
static void
test_public(void)
{
	const char *dir = tu_tmpdir("mfp");
	char path[600];
	snprintf(path, sizeof path, "%s/bad", dir);
	FILE *f = fopen(path, "w");
	REQUIRE(f);
	fputs("good-host\n2*also-good\nbad host line here\n", f);
	fclose(f);
	int ids[4];
	dw_ssh_options o = {.ssh = "/nonexistent/ssh"};
	CHECK(dw_addprocs_machinefile(path, &o, ids, 4) == DW_EFORMAT);
	char expect[700];
	snprintf(expect, sizeof expect, "%s:3: ", path);
	CHECK(strstr(dw_errmsg(), expect) != NULL);
	CHECK(dw_nworkers() == 1);
	snprintf(path, sizeof path, "%s/none", dir);
	CHECK(dw_addprocs_machinefile(path, &o, ids, 4) == DW_ENOENT);
	CHECK(strstr(dw_errmsg(), "cannot open machine file") != NULL);
	tu_rmtree(dir);
}

int
main(int argc, char **argv)
{
	REQUIRE(dw_init(&argc, &argv) == DW_OK);
	test_lines();
	test_files();
	test_public();
	dw_finalize();
	return tu_report("manager_machinefile");
}
