/*
 * Planted files, by a second local user for real: it creates a trace
 * directory first (mode 0777, owned by it) holding a valid trace and
 * trace.prv.tmp / .pcf.tmp / .row.tmp as symbolic links to a root-only
 * file, and a cookie file.  Root's traced program, tracer and merge must
 * refuse the directory or the links, saying why, and the root-only file
 * stays as it was; dw_write_cookie_file refuses the other user's file
 * and a link.  Needs root (to add the user with useradd, removed at the
 * end); otherwise it reports itself skipped (77) with the reason.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dwork/dwork.h>
#include <dwork/trace.h>

#include "testutil.h"

static char user[32], secret[200], rootdir[160];
static char tdir[128], cookie[128];
static uid_t other_uid;
static gid_t other_gid;
static const char secret_text[] = "root only\n";

static int
sh(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int
file_is(const char *path, const char *text)
{
	char buf[256] = "";
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	return n == (ssize_t)strlen(text) && !memcmp(buf, text, (size_t)n);
}

/* The other user's work: a valid trace moved into a 0777 directory of
 * its own, links to the secret, a cookie file. */
static int
plant(void)
{
	char sub[200], from[600], to[600];
	umask(0);
	if (mkdir(tdir, 0777) < 0 || chmod(tdir, 0777) < 0)
		return 10;
	snprintf(sub, sizeof sub, "%s/t", tdir);
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = sub;
	c.program = "plant";
	if (dwt_init(&c) != DW_OK)
		return 11;
	dwt_state_push(DWT_STATE_RUNNING);
	dwt_event(71999999, 7);
	dwt_state_pop();
	dwt_fini();
	DIR *d = opendir(sub);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(from, sizeof from, "%s/%s", sub, e->d_name);
			snprintf(to, sizeof to, "%s/%s", tdir, e->d_name);
			if (rename(from, to) < 0)
				return 12;
		}
	if (d)
		closedir(d);
	rmdir(sub);
	const char *links[] = {"trace.prv.tmp", "trace.pcf.tmp",
	                       "trace.row.tmp"};
	for (int i = 0; i < 3; i++) {
		snprintf(to, sizeof to, "%s/%s", tdir, links[i]);
		if (symlink(secret, to) < 0)
			return 13;
	}
	int fd = open(cookie, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return 14;
	close(fd);
	return 0;
}

/* Runs fn in a child (as uid when not 0) with stderr into err; returns
 * its exit status (a dw_err negated). */
static int
child(int (*fn)(void), uid_t uid, char *err, size_t len)
{
	char path[200];
	snprintf(path, sizeof path, "%s/stderr", rootdir);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 2);
		if (uid && (setgroups(0, NULL) < 0 || setgid(other_gid) < 0 ||
		            setuid(uid) < 0))
			_exit(99);
		int r = fn(); /* an exit status is >= 0: a dw_err leaves as
		                 its magnitude (-DW_EACCES) */
		_exit(r < 0 ? -r : r);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	err[0] = 0;
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, err, len - 1) : 0;
	err[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	unlink(path);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *trace_dir;

static int
traced_master(void)
{
	dw_options o = {.trace = trace_dir};
	int argc = 1;
	char *args[] = {"files_plant_test", NULL}, **argv = args;
	return dw_init_opts(&argc, &argv, &o);
}

static int
tracer(void)
{
	dwt_config c;
	dwt_config_defaults(&c);
	c.dir = trace_dir;
	return dwt_init(&c);
}

static int
has(const char *err, const char *a, const char *b)
{
	int ok = strstr(err, a) && (!b || strstr(err, b));
	if (!ok)
		fprintf(stderr, "expected '%s' and '%s' in:\n%s\n", a,
		        b ? b : "", err);
	return ok;
}

static void
test_trace_dir(void)
{
	char err[4096], want[64];
	snprintf(want, sizeof want, "owned by uid %u", (unsigned)other_uid);
	trace_dir = tdir;
	CHECK(child(traced_master, 0, err, sizeof err) == -DW_EACCES);
	CHECK(has(err, want, "refused"));
	CHECK(child(tracer, 0, err, sizeof err) == -DW_EACCES);
	CHECK(has(err, want, "refused"));
	/* root's own directory that others can write */
	char open_dir[200];
	snprintf(open_dir, sizeof open_dir, "%s/open.trace", rootdir);
	REQUIRE(mkdir(open_dir, 0700) == 0 && chmod(open_dir, 0777) == 0);
	trace_dir = open_dir;
	CHECK(child(traced_master, 0, err, sizeof err) == -DW_EACCES);
	CHECK(has(err, "can be written by other users (mode 0777)", "refused"));
	rmdir(open_dir);
	/* a directory created for the run is the owner's alone */
	char fresh[200];
	snprintf(fresh, sizeof fresh, "%s/new.trace", rootdir);
	trace_dir = fresh;
	CHECK(child(tracer, 0, err, sizeof err) == 0);
	struct stat st;
	CHECK(stat(fresh, &st) == 0 && (st.st_mode & 0777) == 0700);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", fresh);
	sh(cmd);
	CHECK(file_is(secret, secret_text));
}

/* Root merges the other user's directory: the links are refused. */
static void
test_merge(void)
{
	char cmd[700];
	snprintf(cmd, sizeof cmd,
	         "'%s' merge '%s' -o '%s/trace' -q 2>'%s/merge.err'",
	         DWORK_TOOL_PATH, tdir, tdir, rootdir);
	CHECK(sh(cmd) != 0);
	snprintf(cmd, sizeof cmd,
	         "grep -q 'trace.prv.tmp.*File exists' '%s/merge.err'",
	         rootdir);
	CHECK(sh(cmd) == 0);
	snprintf(cmd, sizeof cmd, "%s/merge.err", rootdir);
	unlink(cmd);
	CHECK(file_is(secret, secret_text));
	struct stat st;
	snprintf(cmd, sizeof cmd, "%s/trace.prv", tdir);
	CHECK(lstat(cmd, &st) < 0 && errno == ENOENT);
}

static void
test_cookie(void)
{
	int argc = 1;
	char *args[] = {"files_plant_test", NULL}, **argv = args;
	REQUIRE(dw_init(&argc, &argv) == DW_OK);
	CHECK(dw_write_cookie_file(cookie) == DW_EACCES);
	CHECK(strstr(dw_errmsg(), "owned by another user") != NULL);
	struct stat st;
	CHECK(lstat(cookie, &st) == 0 && st.st_uid == other_uid &&
	      st.st_size == 0);
	char link[200], mine[200];
	snprintf(link, sizeof link, "%s/link.cookie", rootdir);
	REQUIRE(symlink(secret, link) == 0);
	CHECK(dw_write_cookie_file(link) == DW_EACCES);
	CHECK(strstr(dw_errmsg(), "not a regular file") != NULL);
	CHECK(file_is(secret, secret_text));
	unlink(link);
	snprintf(mine, sizeof mine, "%s/mine.cookie", rootdir);
	CHECK(dw_write_cookie_file(mine) == DW_OK);
	CHECK(stat(mine, &st) == 0 && (st.st_mode & 0777) == 0600 &&
	      st.st_size == 33);
	CHECK(dw_write_cookie_file(mine) == DW_OK); /* ours: replaced */
	unlink(mine);
	CHECK(dw_finalize() == DW_OK);
}

static void
cleanup(void)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s'", tdir, cookie,
	         rootdir);
	sh(cmd);
	snprintf(cmd, sizeof cmd, "userdel '%s' 2>/dev/null", user);
	if (other_uid)
		sh(cmd);
}

int
main(void)
{
	if (geteuid() != 0) {
		printf("files_plant: skipped: needs root to add a second "
		       "local user with useradd\n");
		return TEST_SKIP;
	}
	snprintf(user, sizeof user, "dwplant%d", (int)getpid() % 100000);
	char cmd[300];
	snprintf(cmd, sizeof cmd,
	         "useradd -M -N -r -s /usr/sbin/nologin '%s' 2>&1", user);
	if (sh(cmd) != 0) {
		printf("files_plant: skipped: useradd %s failed\n", user);
		return TEST_SKIP;
	}
	struct passwd *pw = getpwnam(user);
	REQUIRE(pw);
	other_uid = pw->pw_uid;
	other_gid = pw->pw_gid;
	REQUIRE(mkdtemp(tu_tmp_template(rootdir, sizeof rootdir, "dw-plant")));
	snprintf(secret, sizeof secret, "%s/secret", rootdir);
	int fd = open(secret, O_WRONLY | O_CREAT | O_EXCL, 0600);
	REQUIRE(fd >= 0 && write(fd, secret_text, strlen(secret_text)) ==
	                       (ssize_t)strlen(secret_text));
	close(fd);
	snprintf(tdir, sizeof tdir, "/tmp/dw-plant-%d.trace", (int)getpid());
	snprintf(cookie, sizeof cookie, "/tmp/dw-plant-%d.cookie",
	         (int)getpid());
	char err[4096];
	int rc = child(plant, other_uid, err, sizeof err);
	if (rc != 0)
		fprintf(stderr, "the other user's planting failed (%d):\n%s\n",
		        rc, err);
	CHECK(rc == 0);
	if (rc == 0) {
		test_trace_dir();
		test_merge();
		test_cookie();
	}
	cleanup();
	return tu_report("files_plant");
}
